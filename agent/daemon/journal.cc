#include "agent/daemon/journal.h"

#include "common/vocabulary.h"

namespace nvmeadapt::daemon {

std::string DescribeEntry(const v1::JournalEntry& entry) {
  return (entry.queue() ? QueueObjectName(entry.controller(), entry.queue()) : entry.controller()) + " (" + entry.lever() +
         " " + entry.target() + ")";
}

Status Journal::Load() {
  auto loaded = store_.LoadJournalOrPrevious();
  if (!loaded) return loaded.error();
  std::lock_guard lock(mutex_);
  Replace(std::move(loaded->journal));
  load_warning_ = std::move(loaded->warning);
  return OkStatus();
}

v1::Journal Journal::entries() const {
  std::lock_guard lock(mutex_);
  return journal_;
}

void Journal::Replace(v1::Journal next) {
  journal_ = std::move(next);
  size_.store(journal_.entries_size());
}

int Journal::Find(const std::string& lever, const std::string& target) const {
  for (int i = 0; i < journal_.entries_size(); ++i) {
    if (journal_.entries(i).lever() == lever && journal_.entries(i).target() == target) return i;
  }
  return -1;
}

Status Journal::WillChange(const v1::JournalEntry& entry) {
  std::lock_guard lock(mutex_);
  if (const int i = Find(entry.lever(), entry.target()); i >= 0) {
    journal_.mutable_entries(i)->set_applied_value(entry.applied_value());
    journal_.mutable_entries(i)->set_time_unix_ns(entry.time_unix_ns());
    return OkStatus();
  }
  v1::Journal next = journal_;
  *next.add_entries() = entry;
  if (Status saved = store_.SaveJournal(next); !saved) return saved;
  Replace(std::move(next));
  return OkStatus();
}

Status Journal::Restored(const std::string& lever, const std::string& target) {
  std::lock_guard lock(mutex_);
  const int i = Find(lever, target);
  if (i < 0) return OkStatus();
  v1::Journal next = journal_;
  next.mutable_entries()->erase(next.mutable_entries()->begin() + i);
  if (Status saved = store_.SaveJournal(next); !saved) return saved;
  Replace(std::move(next));
  return OkStatus();
}

Status Journal::RestoreAll(const RestoreFn& restore, const RestoreRules& rules, RestoreReport* report) {
  RestoreReport local;
  RestoreReport& out = report ? *report : local;
  Status first_error;
  auto keep_error = [&](const Status& status) {
    if (!status && first_error) first_error = status;
  };
  // A copy: each restore drops its entry from the journal as it goes.
  const v1::Journal journal = entries();
  for (int i = journal.entries_size() - 1; i >= 0; --i) {
    const v1::JournalEntry& entry = journal.entries(i);
    const std::string name = DescribeEntry(entry);
    std::string drop_reason;
    if (!rules.boot_id.empty() && !entry.boot_id().empty() && entry.boot_id() != rules.boot_id) {
      drop_reason = "changed in boot " + entry.boot_id() + ", not this one: the setting did not survive the reboot";
    } else if (rules.identity_now && !entry.device_identity().empty()) {
      const std::string now = rules.identity_now(entry);
      if (now.empty()) {
        drop_reason = "the device it changed (" + entry.device_identity() + ") is gone, and the setting with it";
      } else if (now != entry.device_identity()) {
        drop_reason = entry.controller() + " now names another device (" + now + ", changed was " +
                      entry.device_identity() + "): not replayed";
      }
    }
    if (drop_reason.empty()) {
      Status status = restore(entry);
      if (status) {
        ++out.restored;
        out.lines.push_back("restored " + name + " = " + entry.safe_value());
      } else if (status.error().code == ErrorCode::kNotFound) {
        drop_reason = "its target is gone: " + status.error().message;
      } else {
        ++out.kept;
        out.lines.push_back("kept " + name + ": " + status.error().message);
        keep_error(status);
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
  return first_error;
}

}  // namespace nvmeadapt::daemon
