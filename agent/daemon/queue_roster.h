// SPDX-License-Identifier: Apache-2.0
// The queue roster: brings the managed queues to what a discovery scan found. The scan and the queues
// as they were found are compared with discover::DiffSnapshots; a queue new to the roster is taken, one
// whose collector key, vector or eligibility changed (a controller reset moved it to another vector) is
// dropped and taken anew, one gone is dropped. A change of CPUs or of the mode it is reaped in (the
// agent's own switches) leaves the queue as it is; a change of its layer (backing <-> local) is followed
// in its description, the queue kept. Userspace drivers' processes are attached once each
// and detached when they are gone, off the loop (queue_roster_attach.h).
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/collect/collector.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/ports.h"
#include "agent/daemon/queue_roster_attach.h"

namespace nvmeadapt::daemon {

class QueueRoster {
 public:
  // How the agent takes a queue into its loop (it may refuse one: the tracking cap) and lets one go.
  struct Hands {
    std::function<void(const DiscoveredQueue& found, engine::Nanos now)> take;
    std::function<void(ManagedQueue& queue, const char* why)> drop;  // why: "changed", "vanished"
    // A kept queue whose fabrics layer moved (an nvmet subsystem began or stopped exporting its controller):
    // its description has the new layer already, `was` is the old one. May be empty.
    std::function<void(ManagedQueue& queue, const std::string& was)> relayered;
  };

  QueueRoster(ManagedQueues& queues, collect::Collector& collector, Hands hands);

  // Takes, drops and retakes queues in the scan's order, then drops those that vanished (by controller and
  // queue id). Returns the controllers the scan found.
  std::set<std::string> Reconcile(const std::vector<DiscoveredQueue>& scan, engine::Nanos now);
  // Attaches run on their own thread from now on (the loop runs).
  void StartAttaching() { attacher_.Start(); }

  static constexpr int64_t kAttachDeadlineNs = 5'000'000'000;

 private:
  void AttachProcesses(const std::vector<DiscoveredQueue>& scan);

  ManagedQueues& queues_;
  Hands hands_;
  // Every managed queue as the scan that last saw it found it: the agent changes its description (an
  // observe-only collector, no lever) and must not take that for a change of the queue.
  std::map<std::string, DiscoveredQueue> as_found_;
  std::map<pid_t, std::string> attached_processes_;  // pid -> binary: tried once per process
  ProcessAttacher attacher_;  // last: destroyed first, while the rest is still there
};

}  // namespace nvmeadapt::daemon
