// SPDX-License-Identifier: Apache-2.0
// The agent's view of discovery and levers: small interfaces the closed loop is written against, with
// adapters over agent/discover and agent/actuate, and fakes in tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/actuate/lever_target.h"
#include "agent/collect/collector.h"
#include "agent/engine/types.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"
#include "nvmeadapt/v1/state.pb.h"

namespace nvmeadapt::daemon {

struct DiscoveredQueue {
  std::string controller;  // "nvme0", "uvnvme:1234:0"
  uint32_t qid = 0;
  v1::Source source = v1::SOURCE_UNSPECIFIED;
  QueueKey key;   // how the collectors name it
  bool eligible = false;
  std::string ineligible_reason;
  ReapMode mode = ReapMode::kInterrupt;  // as found
  std::vector<uint32_t> cpus;
  int irq = -1;
  std::string transport;   // "pcie", "tcp", "loop", ..., "uvnvme" (QueueInfo.transport)
  std::string layer;       // "local", "host", "target", "backing" (QueueInfo.layer, docs/fabrics.md)
  // The controller's stable ID (StableControllerId, device_identity.h); empty: its name is its ID.
  std::string controller_id;
  // The ID versions before issue 45 gave it (LegacyStableControllerId): entries written with it still match.
  std::string legacy_controller_id;
  // What policy selectors match besides the above (engine/policy_selectors.h); empty where unknown.
  std::string model, serial, firmware, subsysnqn, pci_address;
  pid_t pid = 0;           // userspace driver process, for USDT attachment
  std::string binary;      // its executable
  actuate::LeverTarget lever_target;  // what its lever needs to act for it (vector, IRQ, control socket)

  // The controller's stable ID, its name where it has none.
  const std::string& ControllerId() const { return controller_id.empty() ? controller : controller_id; }
};

class Discovery {
 public:
  virtual ~Discovery() = default;
  // Every queue present now. Errors are for a scan that could not run at all; a controller that vanished
  // mid-scan is simply absent.
  virtual Result<std::vector<DiscoveredQueue>> Scan() = 0;
};

// A change a lever is about to make: enough to journal it, undo it, and make it (once, with Execute).
struct LeverPlan {
  std::string lever;          // the lever's name
  std::string target;         // what it writes (path, socket + queue, device + vector)
  std::string safe_value;     // the value there now (what a restore puts back)
  std::string applied_value;  // the value that gives the requested mode
  bool dry_run = false;       // the lever records and writes nothing: there is nothing to journal
  std::string device_identity;  // the device as the journal names it (device_identity.h)
  bool changes = true;          // false: the target already is in the mode (a controller-wide lever that
                                // another queue's switch already moved): nothing is written, nothing reset
  // A second journal entry for the time the change is under way, for a lever whose target does not exist
  // between two of its steps (the reconnect lever, from its disconnect to its connect: the entry above would
  // then be dropped as "device gone"). Journaled after the entry above, dropped once Execute left the target
  // in place; its restore connects the target again if it is missing.
  struct InFlight {
    std::string controller;  // the connection's name: no device answers to it, so no device rule drops it
    std::string target;
    std::string safe_value;
  };
  std::optional<InFlight> in_flight;
  // Makes the change as planned, without reading again: set by the lever that planned it.
  std::function<Status()> execute;

  Status Execute() const {
    return execute ? execute() : MakeError(ErrorCode::kInternal, target + ": applied without a plan");
  }
};

class Levers {
 public:
  virtual ~Levers() = default;
  // The name of the lever serving this queue (the journal's, the metrics' and the API's word for it);
  // nullopt when none can: the queue is then observed only.
  virtual std::optional<std::string> LeverNameFor(const DiscoveredQueue& queue) const = 0;
  // The controller mode the engine runs for this queue. A lever that acts on a whole controller cannot follow
  // per-queue decisions: it maps `adaptive` to what it can do for the controller (see docs/levers.md). A
  // controller no lever serves decides in shadow in every mode but off.
  virtual engine::ControllerMode ModeFor(const DiscoveredQueue&, engine::ControllerMode mode) const { return mode; }
  // True when a change by this queue's lever disrupts the controller's I/O (a controller reset): such
  // changes are spaced by AgentOptions::min_disruptive_interval per controller.
  virtual bool Disruptive(const DiscoveredQueue&) const { return false; }
  // Reads the current value once and says what would be written to put the queue in `mode`; the plan's
  // Execute writes it.
  virtual Result<LeverPlan> Plan(const DiscoveredQueue& queue, ReapMode mode) = 0;
  // Writes a journal entry's safe value back, always for real (also in a dry-run daemon: the entry records a
  // real change of an earlier run). kNotFound when the target is gone.
  virtual Status Restore(const v1::JournalEntry& entry) = 0;
};

}  // namespace nvmeadapt::daemon
