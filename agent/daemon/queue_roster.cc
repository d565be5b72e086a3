// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/queue_roster.h"

#include <algorithm>
#include <utility>

#include "agent/discover/diff.h"
#include "common/clock.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

// What DiffSnapshots compares of a discovered queue, grouped by controller in the order first seen. The
// controllers carry only their names: one name is one controller to the agent.
discover::Snapshot Project(const std::vector<const DiscoveredQueue*>& queues) {
  discover::Snapshot snapshot;
  std::map<std::string, size_t> index;
  for (const DiscoveredQueue* q : queues) {
    auto [it, fresh] = index.try_emplace(q->controller, snapshot.controllers.size());
    if (fresh) snapshot.controllers.emplace_back().name = q->controller;
    discover::Queue& out = snapshot.controllers[it->second].queues.emplace_back();
    out.qid = q->qid;
    out.key = q->key;
    out.cpus = q->cpus;
    out.mode = q->mode;
    out.eligible = q->eligible;
    out.reason_text = q->ineligible_reason;
    if (q->irq >= 0) out.vector = discover::Vector{.irq = static_cast<uint32_t>(q->irq)};
  }
  return snapshot;
}

// A queue whose collector key, vector or eligibility changed is another queue to the loop: its windows,
// counters and BPF control start over. CPUs and mode are followed without that.
bool TakenAnew(const discover::QueueChange& change) {
  return std::any_of(change.what.begin(), change.what.end(), [](const std::string& what) {
    return what == "key" || what == "vector" || what == "eligibility";
  });
}

// One queue per (controller, qid), the first listed: a scan naming a queue twice (a driver's listing, two
// sources) must not take it twice, each take replacing the last (issue #37: memory grew every scan).
std::vector<DiscoveredQueue> Deduplicated(const std::vector<DiscoveredQueue>& scan) {
  std::vector<DiscoveredQueue> unique;
  unique.reserve(scan.size());
  std::set<std::pair<std::string, uint32_t>> seen;
  for (const DiscoveredQueue& q : scan) {
    if (seen.insert({q.controller, q.qid}).second) unique.push_back(q);
  }
  return unique;
}

}  // namespace

QueueRoster::QueueRoster(ManagedQueues& queues, collect::Collector& collector, Hands hands)
    : queues_(queues), hands_(std::move(hands)), attacher_(collector) {}

std::set<std::string> QueueRoster::Reconcile(const std::vector<DiscoveredQueue>& listed, engine::Nanos now) {
  const std::vector<DiscoveredQueue> scan = Deduplicated(listed);
  std::vector<const DiscoveredQueue*> managed, found;
  for (ManagedQueue* q : queues_.All()) {
    const auto seen = as_found_.find(q->name);
    managed.push_back(seen != as_found_.end() ? &seen->second : &q->desc);
  }
  for (const DiscoveredQueue& q : scan) found.push_back(&q);
  const discover::SnapshotDiff diff = discover::DiffSnapshots(Project(managed), Project(found));
  std::set<std::string> added, retaken, removed;
  for (const discover::QueueRef& ref : diff.queues_added) added.insert(QueueName(ref.controller, ref.queue.qid));
  for (const discover::QueueChange& change : diff.queues_changed) {
    if (TakenAnew(change)) retaken.insert(QueueName(change.controller, change.after.qid));
  }
  for (const discover::QueueRef& ref : diff.queues_removed) removed.insert(QueueName(ref.controller, ref.queue.qid));

  for (const DiscoveredQueue& q : scan) {
    const std::string name = QueueName(q.controller, q.qid);
    if (retaken.count(name)) {
      if (ManagedQueue* known = queues_.ByName(name)) hands_.drop(*known, "changed");
      hands_.take(q, now);
    } else if (added.count(name)) {
      hands_.take(q, now);
    } else if (ManagedQueue* known = queues_.ByName(name); known != nullptr) {
      // CPUs move without the queue changing (a reaper pinned after its driver listed it, an affinity
      // changed): kept in place, the node layer reads them at its next facts.
      known->desc.cpus = q.cpus;
      if (known->desc.layer != q.layer) {
        const std::string was = std::exchange(known->desc.layer, q.layer);
        if (hands_.relayered) hands_.relayered(*known, was);
      }
    }
  }
  const std::vector<ManagedQueue*> known = queues_.All();  // a copy: dropping changes the table
  for (ManagedQueue* q : known) {
    if (removed.count(q->name)) hands_.drop(*q, "vanished");
  }
  as_found_.clear();
  for (const DiscoveredQueue& q : scan) {
    std::string name = QueueName(q.controller, q.qid);
    if (queues_.ByName(name) != nullptr) as_found_.insert_or_assign(std::move(name), q);
  }
  AttachProcesses(scan);
  std::set<std::string> controllers;
  for (const DiscoveredQueue& q : scan) controllers.insert(q.controller);
  return controllers;
}

void QueueRoster::AttachProcesses(const std::vector<DiscoveredQueue>& scan) {
  if (const auto late = attacher_.Overdue(MonotonicNanos(), kAttachDeadlineNs)) {
    NA_WARN("collector: pid " << *late << "'s binary was not read within " << kAttachDeadlineNs / 1'000'000'000
                              << " s: its queues are observed without USDT probes");
  }
  for (const DiscoveredQueue& q : scan) {
    if (q.pid == 0 || attached_processes_.count(q.pid)) continue;
    attacher_.Attach(q.pid, q.binary);
    attached_processes_[q.pid] = q.binary;  // tried once per process
  }
  for (auto it = attached_processes_.begin(); it != attached_processes_.end();) {
    const bool alive = std::any_of(scan.begin(), scan.end(), [&](const auto& q) { return q.pid == it->first; });
    if (alive) {
      ++it;
      continue;
    }
    attacher_.Detach(it->first);
    it = attached_processes_.erase(it);
  }
}

}  // namespace nvmeadapt::daemon
