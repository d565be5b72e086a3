// Write-ahead record of every device setting the agent changed, so that SIGTERM and a start after a crash
// can put each back. An entry is persisted BEFORE the change is made and dropped only after the safe
// value is back (or a rule proves the changed setting no longer exists); a crash in between leaves an entry
// whose restore is harmless to repeat.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "agent/daemon/state_store.h"
#include "common/result.h"

namespace nvmeadapt::daemon {

// What is known now to judge an entry by (docs/operations.md, "Restore"). Empty fields switch their rule off.
struct RestoreRules {
  std::string boot_id;  // this boot's
  // The identity the entry's controller name has now ("" when no device answers to it).
  std::function<std::string(const v1::JournalEntry&)> identity_now;
};

// One line per entry handled, for the log, --restore-only and GetStatus.
struct RestoreReport {
  int restored = 0;
  int dropped = 0;  // by rule: another boot, another device, the device gone
  int kept = 0;     // could not be restored: still in the journal, retried at the next start and at shutdown
  std::vector<std::string> lines;
  bool Complete() const { return kept == 0; }
};

// Thread-safe: switches journal on their controller's worker (mode_switcher.h) while the loop reads the size.
class Journal {
 public:
  explicit Journal(const StateStore& store) : store_(store) {}

  // A corrupt journal is set aside and its previous copy used (the warning says so); only when neither
  // can be read is it an error.
  Status Load();
  const std::string& load_warning() const { return load_warning_; }
  v1::Journal entries() const;  // a copy
  // Never waits for a save in progress: the loop asks while a worker may be in fsync.
  int size() const { return size_.load(); }
  bool empty() const { return size() == 0; }

  // Records the change about to be made. The first entry for a (lever, target) keeps its safe value and
  // is on disk before this returns. A later change of the same target only updates applied_value in
  // memory: the safe value a restore needs is already durable, so a switch costs no fsync.
  Status WillChange(const v1::JournalEntry& entry);
  // The target is back at its safe value: forget it.
  Status Restored(const std::string& lever, const std::string& target);

  // Handles every entry, newest first: an entry of another boot, or whose controller name now belongs to
  // another device or to none, is reported and dropped without a write; the others are passed to `restore`
  // and dropped once it succeeded (kNotFound: the lever found the target gone). Anything else keeps the
  // entry. Returns the first error, if any, after trying them all.
  using RestoreFn = std::function<Status(const v1::JournalEntry&)>;
  Status RestoreAll(const RestoreFn& restore, const RestoreRules& rules = {}, RestoreReport* report = nullptr);

 private:
  int Find(const std::string& lever, const std::string& target) const;  // mutex_ held
  void Replace(v1::Journal next);                                        // mutex_ held

  const StateStore& store_;
  mutable std::mutex mutex_;  // held across a save: two workers' entries are written one after the other
  v1::Journal journal_;
  std::atomic<int> size_{0};
  std::string load_warning_;
};

// "uvnvme:1:0 q2 uvnvme_socket uvnvme:1:0 q2": how an entry is named in reports.
std::string DescribeEntry(const v1::JournalEntry& entry);

}  // namespace nvmeadapt::daemon
