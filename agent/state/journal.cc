// SPDX-License-Identifier: Apache-2.0
#include "agent/state/journal.h"

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <thread>

#include "agent/actuate/lever_registry.h"

namespace nvmeadapt::state {
namespace {

// Records appended since the last compaction beyond which journal.json is rewritten and journal.log emptied:
// the log stays within a small multiple of the live entries, and a change costs one append.
bool DueForCompaction(size_t appended, int entries) {
  return appended > 64 && appended > 2 * static_cast<size_t>(entries);
}

// A userspace driver's entry (its device is a process): restored after the kernel's, whose restore depends
// on nobody's answer.
bool IsDriverEntry(const v1::JournalEntry& entry) {
  return entry.device_identity().rfind("pid=", 0) == 0 || entry.controller().rfind("uvnvme:", 0) == 0 ||
         entry.controller().rfind("spdk:", 0) == 0;
}

// Runs `restore` on a thread of its own and waits at most `box` for it. A restore still running then is
// left to finish on its own (its entry is kept, so the next restore tries again): it holds copies of all it
// needs, the callers' restore functions capture nothing of a frame that ends before the process.
Status TimeBoxed(const Journal::RestoreFn& restore, const v1::JournalEntry& entry, std::chrono::nanoseconds box) {
  if (box.count() <= 0) return restore(entry);
  struct Run {
    std::mutex mutex;
    std::condition_variable done_cv;
    std::optional<Status> status;
  };
  auto run = std::make_shared<Run>();
  std::thread([run, restore, entry] {
    Status status = restore(entry);
    std::lock_guard lock(run->mutex);
    run->status.emplace(std::move(status));
    run->done_cv.notify_all();
  }).detach();
  std::unique_lock lock(run->mutex);
  if (!run->done_cv.wait_for(lock, box, [&] { return run->status.has_value(); })) {
    return MakeError(ErrorCode::kUnavailable,
                     "not restored within " + std::to_string(box.count() / 1'000'000) + " ms (left running)");
  }
  return *run->status;
}

}  // namespace

std::string DescribeEntry(const v1::JournalEntry& entry) {
  return (entry.queue() ? QueueObjectName(entry.controller(), entry.queue()) : entry.controller()) + " (" + entry.lever() +
         " " + entry.target() + ")";
}

Status Journal::Load() {
  NA_ASSIGN_OR_RETURN(auto loaded, store_.LoadJournalOrPrevious());
  NA_ASSIGN_OR_RETURN(auto log, store_.LoadJournalLog());
  std::lock_guard lock(mutex_);
  journal_ = std::move(loaded.journal);
  for (StateStore::JournalRecord& record : log.records) {
    const int i = Find(record.entry.lever(), record.entry.target());
    if (record.op == 'A' && i < 0) *journal_.add_entries() = std::move(record.entry);
    if (record.op == 'D' && i >= 0) journal_.mutable_entries()->erase(journal_.mutable_entries()->begin() + i);
  }
  size_.store(journal_.entries_size());
  appended_ = log.records.size();
  load_warning_ = std::move(loaded.warning);
  if (!log.warning.empty()) load_warning_ += (load_warning_.empty() ? "" : "; ") + log.warning;
  return OkStatus();
}

Result<v1::Journal> Journal::ReadFrom(const StateStore& store) {
  Journal journal(store);
  NA_RETURN_IF_ERROR(journal.Load());
  return journal.entries();
}

v1::Journal Journal::entries() const {
  std::lock_guard lock(mutex_);
  return journal_;
}

int Journal::Find(const std::string& lever, const std::string& target) const {
  for (int i = 0; i < journal_.entries_size(); ++i) {
    if (journal_.entries(i).lever() == lever && journal_.entries(i).target() == target) return i;
  }
  return -1;
}

Status Journal::Append(char op, const v1::JournalEntry& entry, bool sync) {
  NA_RETURN_IF_ERROR(store_.AppendJournalRecord(op, entry, sync));
  ++appended_;
  return OkStatus();
}

void Journal::CompactIfDue(bool now) {
  if (appended_ == 0 || (!now && !DueForCompaction(appended_, journal_.entries_size()))) return;
  // journal.json first, then the log emptied: a crash between the two replays records journal.json already
  // holds, which changes nothing (an add of a held target is ignored, a drop was the last word on its target).
  if (!store_.SaveJournal(journal_) || !store_.TruncateJournalLog()) return;  // the log stays valid: next time
  appended_ = 0;
}

Status Journal::WillChange(const v1::JournalEntry& entry) {
  std::lock_guard lock(mutex_);
  if (const int i = Find(entry.lever(), entry.target()); i >= 0) {
    journal_.mutable_entries(i)->set_applied_value(entry.applied_value());
    journal_.mutable_entries(i)->set_time_unix_ns(entry.time_unix_ns());
    return OkStatus();
  }
  NA_RETURN_IF_ERROR(Append('A', entry, true));
  *journal_.add_entries() = entry;
  size_.store(journal_.entries_size());
  CompactIfDue();
  return OkStatus();
}

Status Journal::Restored(const std::string& lever, const std::string& target) {
  std::lock_guard lock(mutex_);
  const int i = Find(lever, target);
  if (i < 0) return OkStatus();
  // Not synced: a drop lost to a crash repeats a restore, which is harmless; the next synced add makes it
  // durable with itself.
  NA_RETURN_IF_ERROR(Append('D', journal_.entries(i), false));
  journal_.mutable_entries()->erase(journal_.mutable_entries()->begin() + i);
  size_.store(journal_.entries_size());
  unrestored_.erase({lever, target});
  unrestored_count_.store(static_cast<int>(unrestored_.size()));
  CompactIfDue();
  return OkStatus();
}

void Journal::MarkUnrestored() {
  std::lock_guard lock(mutex_);
  for (const v1::JournalEntry& entry : journal_.entries()) unrestored_.emplace(entry.lever(), entry.target());
  unrestored_count_.store(static_cast<int>(unrestored_.size()));
}

std::string Journal::DropReason(const v1::JournalEntry& entry, const RestoreRules& rules) {
  if (!rules.boot_id.empty() && !entry.boot_id().empty() && entry.boot_id() != rules.boot_id) {
    return "changed in boot " + entry.boot_id() + ", not this one: the setting did not survive the reboot";
  }
  if (!rules.identity_now || entry.device_identity().empty()) return "";
  const std::string now = rules.identity_now(entry);
  if (now.empty()) return "the device it changed (" + entry.device_identity() + ") is gone, and the setting with it";
  if (now != entry.device_identity()) {
    return entry.controller() + " now names another device (" + now + ", changed was " + entry.device_identity() +
           "): not replayed";
  }
  return "";
}

std::vector<std::string> Journal::DropGone(const RestoreRules& rules) {
  std::vector<std::string> lines;
  const v1::Journal journal = entries();  // a copy: each drop changes the journal
  for (const v1::JournalEntry& entry : journal.entries()) {
    // Processes only: a pid and start time never come back, while a kernel controller may be gone for the
    // moment of a reset or a reconnect (whose entry holds what brings it back).
    if (entry.device_identity().rfind("pid=", 0) != 0) continue;
    const std::string reason = DropReason(entry, rules);
    if (reason.empty()) continue;
    Status dropped = Restored(entry.lever(), entry.target());
    lines.push_back(dropped ? "dropped " + DescribeEntry(entry) + ": " + reason
                            : "cannot drop " + DescribeEntry(entry) + ": " + dropped.error().message);
  }
  return lines;
}

std::vector<v1::JournalEntry> Journal::RestoreOrder() const {
  const v1::Journal journal = entries();
  std::vector<v1::JournalEntry> order(journal.entries().begin(), journal.entries().end());
  std::stable_partition(order.begin(), order.end(), [](const auto& e) { return !IsDriverEntry(e); });
  return order;
}

Status Journal::RestoreAll(const RestoreFn& restore, const RestoreRules& rules, RestoreReport* report) {
  RestoreReport local;
  RestoreReport& out = report ? *report : local;
  Status first_error;
  auto keep_error = [&](const Status& status) {
    if (!status && first_error) first_error = status;
  };
  for (const v1::JournalEntry& entry : RestoreOrder()) {
    const std::string name = DescribeEntry(entry);
    std::string drop_reason = DropReason(entry, rules);
    if (drop_reason.empty()) {
      Status status = TimeBoxed(restore, entry, rules.entry_time_box);
      if (status) {
        ++out.restored;
        // A safe value that holds secrets (a reconnect's: DH-HMAC-CHAP among its arguments) is never logged.
        const bool secret = actuate::RestoreValueIsSecret(entry.lever());
        out.lines.push_back("restored " + name + " = " + (secret ? "(its connection arguments)" : entry.safe_value()));
      } else if (status.error().code == ErrorCode::kNotFound) {
        drop_reason = "its target is gone: " + status.error().message;
      } else {
        ++out.kept;
        out.lines.push_back("kept " + name + ": " + status.error().message);
        keep_error(status);
        std::lock_guard lock(mutex_);
        unrestored_.emplace(entry.lever(), entry.target());
        unrestored_count_.store(static_cast<int>(unrestored_.size()));
        continue;
      }
    }
    if (!drop_reason.empty()) {
      ++out.dropped;
      out.lines.push_back("dropped " + name + ": " + drop_reason);
    }
    if (Status dropped = Restored(entry.lever(), entry.target()); !dropped) {
      out.lines.push_back("cannot remove " + name + " from the journal: " + dropped.error().message);
      keep_error(dropped);
    }
  }
  // What is left (nothing, mostly) in journal.json alone: what an operator or a package script reads.
  std::lock_guard lock(mutex_);
  CompactIfDue(true);
  return first_error;
}

}  // namespace nvmeadapt::state
