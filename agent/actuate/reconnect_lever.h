// SPDX-License-Identifier: Apache-2.0
// The reconnect lever of an NVMe/TCP host controller (docs/fabrics.md): a fabrics host has no interrupt vector
// per queue; how many of its queues are poll queues is the `nr_poll_queues` option of its connection, fixed at
// connect. A switch disconnects the controller and connects it again with nvme-cli, with `poll_queues` poll
// queues for poll mode and none for interrupt mode. Disruptive: the controller's I/O stops for the reconnect
// (its requests are failed over or retried by the block layer's requeue), its queues are recreated and it may
// come back under another name. Controller scope; refused (kUnsupported) for a controller whose transport is
// not tcp. The connecting is libnvme's (fabrics_connector.h): no command line carries the connection's secrets.
//
// The restore point names the connection (transport address, service, subsystem NQN, host NQN and ID, and
// every other setting sysfs shows: queues, queue size, keep-alive, fast_io_fail_tmo, DH-HMAC-CHAP secrets,
// TLS; and the header and data digests, which sysfs does not show, from nvme-cli's config or the agent's
// declaration: connection_digests.h) and the poll queue count found, in nvme-cli's option words, so that a
// restore after a restart finds the connection whatever its controller is called by then. A setting that
// cannot be carried over (libnvme 1.3 lacks it) refuses the switch before anything is disconnected. A restore never connects a connection that is not there: a host disconnected meanwhile is gone
// (kNotFound), and the journal drops its entry. The one exception is the plan's in-flight point (Applied::
// in_flight), journaled for the time between the disconnect and the connect: its restore connects the host
// with the journaled options if it is not connected.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/actuate/connection_digests.h"
#include "agent/actuate/fabrics_connector.h"
#include "agent/actuate/lever.h"

namespace nvmeadapt::actuate {

struct ReconnectOptions {
  std::string sysfs_root = "/sys";
  uint32_t poll_queues = 1;            // asked for in poll mode; interrupt mode asks for none
  bool dry_run = false;
  std::shared_ptr<FabricsConnector> fabrics;  // LibnvmeFabricsConnector() when empty
  // Where a connection's digests come from (connection_digests.h): nvme-cli's JSON config, and the
  // operator's declarations by controller name (levers.controllers[].hdr_digest/data_digest).
  std::string nvme_cli_config = "/etc/nvme/config.json";
  std::map<std::string, ConnectionDigests> declared_digests;
};

// A fabrics connection as sysfs tells it, in nvme-cli's option words (the restore points' format).
struct TcpConnection {
  std::string controller;         // nvmeN now
  std::vector<std::string> args;  // "--transport=tcp", "--traddr=...", ...: without --nr-poll-queues
  std::string name;               // "tcp:127.0.0.1:4420/nqn...": the connection whatever its controller's name
};

class ReconnectLever final : public PlannedLever {
 public:
  explicit ReconnectLever(ReconnectOptions options);

  // The connection of `controller` from {sysfs}/class/nvme/<controller>: kNotFound when it is gone,
  // kUnsupported when its transport is not tcp, kIo when an attribute a connect needs is missing.
  Result<TcpConnection> ReadConnection(const std::string& controller) const;

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;

  // The poll queues the connection of `controller` runs now; nullopt when nothing says (no namespace yet).
  std::optional<uint32_t> PollQueuesNow(const TcpConnection& connection) const;
  // The controller connected now over the connection named `name` (`hint` first); nullopt when none is.
  std::optional<TcpConnection> FindConnection(const std::string& name, const std::string& hint) const;
  Step ReconnectStep(const TcpConnection& connection, uint32_t poll_queues, std::optional<uint32_t> before);
  Status Reconnect(const TcpConnection& connection, uint32_t poll_queues, std::optional<uint32_t> before);
  Status ReadSessionSettings(const std::string& dir, TcpConnection& connection) const;
  // Whether libnvme can connect with every setting of the connection; checked before a disconnect.
  Status CheckConnectable(const TcpConnection& connection) const;
  // Adds --hdr-digest/--data-digest as the sources say (the kernel shows neither), or refuses the switch.
  Status AddDigests(TcpConnection& connection) const;
  Status Connect(const TcpConnection& connection, uint32_t poll_queues) const;
  // Connects a connection that is down (a switch stopped between its disconnect and its connect).
  Step ConnectStep(const TcpConnection& connection, uint32_t poll_queues);

  ReconnectOptions options_;
  std::map<std::string, uint32_t> connected_with_;  // connection name -> the poll queues this lever asked for
};

}  // namespace nvmeadapt::actuate
