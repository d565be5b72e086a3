#include "agent/daemon/journal.h"

namespace nvmeadapt::daemon {

Status Journal::Load() {
  auto loaded = store_.LoadJournal();
  if (!loaded) return loaded.error();
  journal_ = std::move(*loaded);
  return OkStatus();
}

int Journal::Find(const std::string& lever, const std::string& target) const {
  for (int i = 0; i < journal_.entries_size(); ++i) {
    if (journal_.entries(i).lever() == lever && journal_.entries(i).target() == target) return i;
  }
  return -1;
}

Status Journal::WillChange(const v1::JournalEntry& entry) {
  if (const int i = Find(entry.lever(), entry.target()); i >= 0) {
    journal_.mutable_entries(i)->set_applied_value(entry.applied_value());
    journal_.mutable_entries(i)->set_time_unix_ns(entry.time_unix_ns());
    return OkStatus();
  }
  v1::Journal next = journal_;
  *next.add_entries() = entry;
  if (Status saved = store_.SaveJournal(next); !saved) return saved;
  journal_ = std::move(next);
  return OkStatus();
}

Status Journal::Restored(const std::string& lever, const std::string& target) {
  const int i = Find(lever, target);
  if (i < 0) return OkStatus();
  v1::Journal next = journal_;
  next.mutable_entries()->erase(next.mutable_entries()->begin() + i);
  if (Status saved = store_.SaveJournal(next); !saved) return saved;
  journal_ = std::move(next);
  return OkStatus();
}

Status Journal::RestoreAll(const RestoreFn& restore) {
  Status first_error;
  for (int i = journal_.entries_size() - 1; i >= 0; --i) {
    const v1::JournalEntry entry = journal_.entries(i);
    Status status = restore(entry);
    if (status || status.error().code == ErrorCode::kNotFound) {
      if (Status dropped = Restored(entry.lever(), entry.target()); !dropped && first_error) {
        first_error = dropped;
      }
    } else if (first_error) {
      first_error = status;
    }
  }
  return first_error;
}

}  // namespace nvmeadapt::daemon
