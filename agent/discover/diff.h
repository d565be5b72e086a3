// SPDX-License-Identifier: Apache-2.0
// Hot add and removal: what changed between two discovery snapshots. Pure.
//
// The daemon's queue roster (agent/daemon/queue_roster.h) drops every removed queue (its lever target is gone:
// nothing to put back), adds every added queue (a queue of an added controller gets the global default mode,
// DESIGN.md section 3), and drops and adds anew every one whose collector key, vector or eligibility changed.
// A controller name that now belongs to another device (its Identity() changed, e.g. "nvme0" after a hot
// swap) counts as removed and added.
#pragma once

#include <string>
#include <vector>

#include "agent/discover/types.h"

namespace nvmeadapt::discover {

struct QueueRef {
  std::string controller;
  Queue queue;
};

struct QueueChange {
  std::string controller;
  Queue before;
  Queue after;
  std::vector<std::string> what;  // of "key", "cpus", "vector", "eligibility", "mode"
};

struct SnapshotDiff {
  std::vector<std::string> controllers_added;    // names, in the order of the new snapshot
  std::vector<std::string> controllers_removed;  // names, in the order of the old snapshot
  std::vector<QueueRef> queues_added;
  std::vector<QueueRef> queues_removed;
  std::vector<QueueChange> queues_changed;

  bool empty() const {
    return controllers_added.empty() && controllers_removed.empty() && queues_added.empty() &&
           queues_removed.empty() && queues_changed.empty();
  }
};

SnapshotDiff DiffSnapshots(const Snapshot& before, const Snapshot& after);

// `now` with every unsettled controller (Controller::settled) replaced by its view in `before` (the same
// device), so that a reset under way does not show as queues changed or gone; one that `before` does not have
// is left out and listed in `skipped` (kUnavailable) until it is settled. A reset that changed the queues (the
// poll_queues lever) shows in the first settled scan after it.
Snapshot SettleSnapshot(const Snapshot& before, Snapshot now);

}  // namespace nvmeadapt::discover
