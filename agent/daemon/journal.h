// Write-ahead record of every device setting the agent changed, so that SIGTERM and a start after a crash
// can put each back. An entry is persisted BEFORE the change is made and dropped only after the safe
// value is back; a crash in between leaves an entry whose restore is harmless to repeat.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/common/result.h"
#include "agent/daemon/state_store.h"

namespace nvmeadapt::daemon {

class Journal {
 public:
  explicit Journal(const StateStore& store) : store_(store) {}

  Status Load();
  const v1::Journal& entries() const { return journal_; }
  bool empty() const { return journal_.entries_size() == 0; }

  // Records the change about to be made. The first entry for a (lever, target) keeps its safe value and
  // is on disk before this returns. A later change of the same target only updates applied_value in
  // memory: the safe value a restore needs is already durable, so a switch costs no fsync.
  Status WillChange(const v1::JournalEntry& entry);
  // The target is back at its safe value: forget it.
  Status Restored(const std::string& lever, const std::string& target);

  // Calls `restore` for every entry, newest first; entries restored (or whose target is gone:
  // kNotFound) are dropped, others are kept for the next attempt. Returns the first error, if any,
  // after trying them all.
  using RestoreFn = std::function<Status(const v1::JournalEntry&)>;
  Status RestoreAll(const RestoreFn& restore);

 private:
  int Find(const std::string& lever, const std::string& target) const;

  const StateStore& store_;
  v1::Journal journal_;
};

}  // namespace nvmeadapt::daemon
