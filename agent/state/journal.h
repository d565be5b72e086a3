// SPDX-License-Identifier: Apache-2.0
// Write-ahead record of every device setting the agent changed, so that SIGTERM and a start after a crash
// can put each back. An entry is persisted BEFORE the change is made and dropped only after the safe
// value is back (or a rule proves the changed setting no longer exists); a crash in between leaves an entry
// whose restore is harmless to repeat. On disk: journal.json as of the last compaction and journal.log, the
// records appended since (state_store.h); a change costs one append, and the log is folded into journal.json
// once it outgrows twice the live entries, so neither grows with the number of changes ever made.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/state/state_store.h"
#include "common/result.h"

namespace nvmeadapt::state {

// What is known now to judge an entry by (docs/operations.md, "Restore"). Empty fields switch their rule off.
struct RestoreRules {
  std::string boot_id;  // this boot's
  // The identity the entry's controller name has now ("" when no device answers to it).
  std::function<std::string(const v1::JournalEntry&)> identity_now;
  // How long one entry's restore may take before it is kept and the next one tried (0: no bound, inline).
  std::chrono::nanoseconds entry_time_box{0};
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
  // What the journal on disk holds now (journal.json with journal.log over it), for a reader beside the
  // journal in use (tests, tools).
  static Result<v1::Journal> ReadFrom(const StateStore& store);
  const std::string& load_warning() const { return load_warning_; }
  v1::Journal entries() const;  // a copy
  // Never waits for a save in progress: the loop asks while a worker may be in fsync.
  int size() const { return size_.load(); }
  bool empty() const { return size() == 0; }
  // Entries a restore tried and could not put back (RestoreAll kept them, or MarkUnrestored said so), and
  // still in the journal: the nvme_adapt_journal_unrestored_entries gauge. Never waits, as size().
  int unrestored() const { return unrestored_count_.load(); }
  // Every entry in the journal now is one a restore before this one left (the daemon's restore at start runs
  // on a Journal of its own, and the agent's then loads what it kept).
  void MarkUnrestored();

  // Records the change about to be made. The first entry for a (lever, target) keeps its safe value and
  // is on disk before this returns. A later change of the same target only updates applied_value in
  // memory: the safe value a restore needs is already durable, so a switch costs no fsync.
  Status WillChange(const v1::JournalEntry& entry);
  // The target is back at its safe value: forget it.
  Status Restored(const std::string& lever, const std::string& target);

  // Drops, while the agent runs, the userspace drivers' entries the rules say are gone (the process ended,
  // or its pid now names another): a short-lived driver's entries would otherwise stay until the next
  // start. One line per entry dropped, for the log.
  std::vector<std::string> DropGone(const RestoreRules& rules);

  // Handles every entry, oldest first, the kernel's before userspace drivers' (whose restore waits on a
  // process that may not answer), each within rules.entry_time_box: an entry of another boot, or whose controller name now belongs to
  // another device or to none, is reported and dropped without a write; the others are passed to `restore`
  // and dropped once it succeeded (kNotFound: the lever found the target gone). Anything else keeps the
  // entry. Returns the first error, if any, after trying them all.
  using RestoreFn = std::function<Status(const v1::JournalEntry&)>;
  Status RestoreAll(const RestoreFn& restore, const RestoreRules& rules = {}, RestoreReport* report = nullptr);

 private:
  int Find(const std::string& lever, const std::string& target) const;  // mutex_ held
  Status Append(char op, const v1::JournalEntry& entry, bool sync);       // mutex_ held
  void CompactIfDue(bool now = false);                                   // mutex_ held
  std::vector<v1::JournalEntry> RestoreOrder() const;
  // Why the rules drop `entry` without replaying it, or "".
  static std::string DropReason(const v1::JournalEntry& entry, const RestoreRules& rules);

  const StateStore& store_;
  mutable std::mutex mutex_;  // held across an append: two workers' entries are written one after the other
  v1::Journal journal_;
  std::atomic<int> size_{0};
  std::set<std::pair<std::string, std::string>> unrestored_;  // (lever, target)
  std::atomic<int> unrestored_count_{0};
  size_t appended_ = 0;  // records in journal.log
  std::string load_warning_;
};

// "uvnvme:1:0 q2 uvnvme_socket uvnvme:1:0 q2": how an entry is named in reports.
std::string DescribeEntry(const v1::JournalEntry& entry);

}  // namespace nvmeadapt::state
