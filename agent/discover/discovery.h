// SPDX-License-Identifier: Apache-2.0
// Discovery: the kernel's NVMe controllers (sysfs, /proc/interrupts, module parameters, the kernel command line)
// and the uvnvme driver processes (their control sockets, docs/uvnvme-control.md), as one Snapshot. Every path
// is under a configurable root so that tests run against captured trees (tests/data/sysfs/).
//
// Hot add and removal: call Discover again and compare the snapshots with DiffSnapshots (diff.h).
#pragma once

#include <string>

#include "agent/discover/types.h"
#include "common/result.h"

namespace nvmeadapt::discover {

struct DiscoveryOptions {
  std::string sysfs_root = "/sys";
  std::string procfs_root = "/proc";
  std::string runtime_dir = "/run";  // uvnvme sockets are $runtime_dir/uvnvme/*.sock
  int socket_timeout_ms = 1000;      // per uvnvme process: connect, "list", reply
  bool kernel = true;
  bool uvnvme = true;
  // The NVMe target's queues (target_queues.h) leave the list after this long without a completion.
  engine::Nanos target_idle = 60'000'000'000;

  // sysfs, procfs and the runtime dir under `root` (a captured tree has sys/, proc/ and run/).
  static DiscoveryOptions UnderRoot(const std::string& root);
};

// The kernel's controllers: /sys/class/nvme/nvmeN with their namespaces and queues. A machine without the
// nvme module (no /sys/class/nvme) has none. A controller that cannot be read goes to `skipped`.
Result<std::vector<Controller>> DiscoverKernel(const DiscoveryOptions& options, std::vector<Skipped>* skipped);

// The uvnvme processes listening under runtime_dir/uvnvme. A stale socket (no process behind it), a process that
// does not answer in time or answers garbage goes to `skipped`, with the error why.
std::vector<Controller> DiscoverUvnvme(const DiscoveryOptions& options, std::vector<Skipped>* skipped);

// Both, sorted by controller name. Only an unreadable /proc/interrupts with kernel controllers present fails
// the kernel part: it goes to `skipped` like the rest.
Snapshot Discover(const DiscoveryOptions& options);

}  // namespace nvmeadapt::discover
