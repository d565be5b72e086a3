// SPDX-License-Identifier: Apache-2.0
// The agent's persisted state under --state-dir: the policy set over gRPC (policy.json), the node's pause
// (pause.json) and the journal of device changes: journal.json, the journal as of its last compaction, and
// journal.log, the changes since, one record a line, appended. Every write of a whole file is atomic (write, fsync, rename, fsync dir).
// Every file and record is read with its state schema version (state_json.h): one of a newer schema is an error
// of its own (kFailedPrecondition), never read halfway, replaced or set aside as corrupt.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"
#include "nvmeadapt/v1/state.pb.h"

namespace nvmeadapt::state {

class StateStore {
 public:
  explicit StateStore(std::string dir) : dir_(std::move(dir)) {}

  // Creates the directory (mode 0750) if needed.
  Status Open() const;
  const std::string& dir() const { return dir_; }

  // nullopt when no policy was ever persisted.
  Result<std::optional<v1::PolicySet>> LoadPolicy() const;
  // Refused (kFailedPrecondition) over a policy.json of a newer schema: a downgraded agent keeps it.
  Status SavePolicy(const v1::PolicySet& policy) const;
  // Who set it and when (an empty note when policy.json was written by an older version).
  Result<v1::PolicyNote> LoadPolicyNote() const;
  Status SavePolicyNote(const v1::PolicyNote& note) const;
  // Forgets the persisted policy and its note (`policy reset`); none there is no error.
  Status ClearPolicy() const;

  // The node's pause (pause.json): nullopt when it is not paused. A pause whose end has passed is the caller's
  // to drop (it knows the time).
  Result<std::optional<v1::Pause>> LoadPause() const;
  Status SavePause(const v1::Pause& pause) const;
  // `resume`: none there is no error.
  Status ClearPause() const;

  // An empty journal when none exists.
  Result<v1::Journal> LoadJournal() const;
  // Every save keeps the journal it replaces as JournalPreviousPath() (a hard link: no copy, no extra fsync).
  Status SaveJournal(const v1::Journal& journal) const;
  // A journal that cannot be parsed is renamed to JournalPath() + ".corrupt" and the previous copy is used
  // instead, with a warning naming both. An error only when neither can be read.
  struct LoadedJournal {
    v1::Journal journal;
    std::string warning;  // empty when journal.json was read as it is
  };
  Result<LoadedJournal> LoadJournalOrPrevious() const;

  // journal.log: "A <entry JSON>" (a target about to change) or "D <entry JSON>" (lever and target back to
  // their safe value). `sync`: durable before this returns (fdatasync; the first record also syncs the dir).
  // An append that fails part way (ENOSPC, EIO) truncates the file back to where it began; where even that
  // fails, the next record starts on a new line, so the fragment stays a line of its own.
  Status AppendJournalRecord(char op, const v1::JournalEntry& entry, bool sync) const;
  struct JournalRecord {
    char op = 0;  // 'A' or 'D'
    v1::JournalEntry entry;
  };
  // Every record, oldest first. A torn last line (a crash in the middle of an append, before the change it
  // announced was made) is left out and said in `warning`, and so is a line that is the beginning of a
  // record (a failed append that could not be taken back: its change was refused); a record an older version
  // glued to such a fragment is read. Any other unreadable line is an error.
  struct JournalLog {
    std::vector<JournalRecord> records;
    std::string warning;
  };
  Result<JournalLog> LoadJournalLog() const;
  // Empties journal.log: after a SaveJournal() that holds every record in it.
  Status TruncateJournalLog() const;

  std::string PolicyPath() const { return dir_ + "/policy.json"; }
  std::string PolicyNotePath() const { return dir_ + "/policy.note.json"; }
  std::string PausePath() const { return dir_ + "/pause.json"; }
  std::string JournalPath() const { return dir_ + "/journal.json"; }
  std::string JournalPreviousPath() const { return dir_ + "/journal.prev.json"; }
  std::string JournalLogPath() const { return dir_ + "/journal.log"; }

 private:
  std::string dir_;
};

}  // namespace nvmeadapt::state
