// SPDX-License-Identifier: Apache-2.0
// The nvmet namespaces' polled submission (pqt_enable, kmod/nvmet) as the levers of every target controller
// share it. A namespace's polling-queue task serves its backing disk, which every controller of the
// subsystem (one per host connection) reaches, while the engine decides per target queue: so each target
// queue votes, and a namespace polls while at least one queue's vote for poll stands. Its own file, below
// the levers, so that the lever registry's environment can hold one (as PollQueuesModule).
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace nvmeadapt::actuate {

// Thread-safe: the levers of different controllers run on different threads.
class NvmetPollVotes {
 public:
  // `queue` ("nvmet:c1 q1") wants the namespaces at `paths` (their pqt_enable files) polled, or no longer: its
  // vote stands until its next one, or a restore of the namespace.
  void Vote(const std::string& queue, const std::vector<std::string>& paths, bool poll);
  // Whether a queue's vote for poll stands for the namespace at `path`.
  bool WantsPoll(const std::string& path) const;
  // "1" while a queue wants it polled, else "0": what pqt_enable should read.
  std::string WantedValue(const std::string& path) const { return WantsPoll(path) ? "1" : "0"; }

  // The value to record as safe, given the value read now: the one found before any lever changed it (so
  // that a second controller of the subsystem records the namespace's own value, not the first one's poll).
  std::string SafeValue(const std::string& path, const std::string& current) const;

  // Writes `path` with WantedValue as it is when the write is made, not when it was planned: two controllers'
  // switches planned in one order and made in the other leave what the votes say. `current` (read at the
  // plan) is kept as the original if none is yet. `write` makes the write; the votes are locked meanwhile.
  template <class Write>
  auto WriteWanted(const std::string& path, const std::string& current, Write write) {
    std::lock_guard lock(mutex_);
    originals_.emplace(path, current);
    return write(WantedLocked(path));
  }

  // A restore puts the namespace back as found: every vote for it ends, and its original is forgotten (the
  // next change records anew).
  void Restored(const std::string& path);

 private:
  std::string WantedLocked(const std::string& path) const;

  mutable std::mutex mutex_;
  std::map<std::string, std::set<std::string>> polling_;  // pqt_enable path -> the queues voting poll
  std::map<std::string, std::string> originals_;           // pqt_enable path -> value before the first change
};

}  // namespace nvmeadapt::actuate
