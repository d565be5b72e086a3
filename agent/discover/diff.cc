// SPDX-License-Identifier: Apache-2.0
#include "agent/discover/diff.h"

#include <map>

namespace nvmeadapt::discover {
namespace {

std::vector<std::string> WhatChanged(const Queue& a, const Queue& b) {
  std::vector<std::string> what;
  if (a.key != b.key) what.emplace_back("key");
  if (a.cpus != b.cpus) what.emplace_back("cpus");
  if (a.vector != b.vector) what.emplace_back("vector");
  if (a.eligible != b.eligible || a.reason != b.reason || a.reason_text != b.reason_text) {
    what.emplace_back("eligibility");
  }
  if (a.mode != b.mode) what.emplace_back("mode");
  return what;
}

}  // namespace

SnapshotDiff DiffSnapshots(const Snapshot& before, const Snapshot& after) {
  SnapshotDiff diff;
  std::map<std::string, const Controller*> old_by_name;
  for (const auto& c : before.controllers) old_by_name[c.name] = &c;
  std::map<std::string, const Controller*> new_by_name;
  for (const auto& c : after.controllers) new_by_name[c.name] = &c;

  const auto same_device = [](const Controller* a, const Controller* b) { return a->Identity() == b->Identity(); };

  for (const auto& old : before.controllers) {
    const auto it = new_by_name.find(old.name);
    if (it != new_by_name.end() && same_device(&old, it->second)) continue;
    diff.controllers_removed.push_back(old.name);
    for (const auto& q : old.queues) diff.queues_removed.push_back({old.name, q});
  }
  for (const auto& now : after.controllers) {
    const auto it = old_by_name.find(now.name);
    if (it == old_by_name.end() || !same_device(it->second, &now)) {
      diff.controllers_added.push_back(now.name);
      for (const auto& q : now.queues) diff.queues_added.push_back({now.name, q});
      continue;
    }
    const Controller& old = *it->second;
    std::map<uint32_t, const Queue*> old_queues;
    for (const auto& q : old.queues) old_queues[q.qid] = &q;
    for (const auto& q : now.queues) {
      const auto prior = old_queues.find(q.qid);
      if (prior == old_queues.end()) {
        diff.queues_added.push_back({now.name, q});
        continue;
      }
      if (auto what = WhatChanged(*prior->second, q); !what.empty()) {
        diff.queues_changed.push_back({now.name, *prior->second, q, std::move(what)});
      }
      old_queues.erase(prior);
    }
    for (const auto& [qid, q] : old_queues) diff.queues_removed.push_back({now.name, *q});
  }
  return diff;
}

Snapshot SettleSnapshot(const Snapshot& before, Snapshot now) {
  for (auto it = now.controllers.begin(); it != now.controllers.end();) {
    if (it->settled) {
      ++it;
      continue;
    }
    const Controller* prior = before.Find(it->name);
    if (prior != nullptr && prior->Identity() == it->Identity()) {
      *it = *prior;
      ++it;
      continue;
    }
    now.skipped.push_back(Skipped{it->name, MakeError(ErrorCode::kUnavailable,
                                                      "controller " + it->state + ", not settled (in a reset or reconnect, or its "
                                                      "namespaces not scanned yet): read again at the next scan")});
    it = now.controllers.erase(it);
  }
  return now;
}

}  // namespace nvmeadapt::discover
