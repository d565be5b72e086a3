// SPDX-License-Identifier: Apache-2.0
// How the reconnect lever connects and disconnects an NVMe over Fabrics host controller: libnvme's fabrics
// calls (nvmf_add_ctrl, nvme_disconnect_ctrl) in the agent's own process. No program is run, so no setting of
// the connection, DH-HMAC-CHAP secrets included, is ever on a command line (/proc/PID/cmdline is readable by
// every local user): libnvme writes the options to /dev/nvme-fabrics, as nvme-cli itself does through it.
// An interface, so that tests record the calls and answer as told.
//
// A connection is given as the lever records it in its restore points (reconnect_lever.h): nvme-cli's option
// words ("--traddr=10.0.0.1", "--hdr-digest"), a stable journal format whatever does the connecting.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::actuate {

// A connection's settings as libnvme 1.3 takes them (struct nvme_fabrics_config and the host and controller
// objects). Numbers left at 0 are the kernel's defaults, as libnvme leaves them out; ctrl_loss_tmo is always
// given (-1: retry forever).
struct FabricsSettings {
  std::string transport, traddr, trsvcid, subsysnqn, hostnqn, hostid, host_traddr, host_iface;
  std::string dhchap_secret, dhchap_ctrl_secret;
  int nr_io_queues = 0;
  int nr_poll_queues = 0;
  int queue_size = 0;
  int keep_alive_tmo = 0;
  int reconnect_delay = 0;
  int ctrl_loss_tmo = 600;  // libnvme's and the kernel's default
  int fast_io_fail_tmo = 0;
  bool tls = false;
  bool hdr_digest = false;
  bool data_digest = false;
};

// `options` (the recorded words) with `poll_queues` poll queues as libnvme's settings. kUnsupported names a
// setting libnvme 1.3 cannot give (TLS concatenation, a keyring other than the default, fast_io_fail_tmo 0),
// kInvalidArgument a word that is no connect option or a number that is not one. Secrets never appear in the
// message.
Result<FabricsSettings> ParseFabricsOptions(const std::vector<std::string>& options, uint32_t poll_queues);

class FabricsConnector {
 public:
  virtual ~FabricsConnector() = default;
  // Connects the host with `options` and `poll_queues` poll queues (none: the kernel's default of none).
  // Errors say what the kernel or libnvme said, never a secret.
  virtual Status Connect(const std::vector<std::string>& options, uint32_t poll_queues) = 0;
  // Disconnects controller `controller` ("nvme1"): its delete_controller attribute, as libnvme writes it.
  // kNotFound when it is not there.
  virtual Status Disconnect(const std::string& controller) = 0;
};

// libnvme on the machine's /sys and /dev/nvme-fabrics. Needs root (CAP_SYS_ADMIN for the fabrics device).
std::shared_ptr<FabricsConnector> LibnvmeFabricsConnector();

}  // namespace nvmeadapt::actuate
