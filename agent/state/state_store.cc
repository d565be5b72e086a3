// SPDX-License-Identifier: Apache-2.0
#include "agent/state/state_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>

#include "agent/config/policy_convert.h"
#include "agent/state/state_json.h"
#include "common/failpoint.h"
#include "common/files.h"

namespace nvmeadapt::state {
namespace {

// Reads `path` into `message`. Returns false (and no error) when the file does not exist.
Result<bool> FromJsonFile(const std::string& path, google::protobuf::Message* message) {
  auto text = ReadWholeFile(path);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) return false;
    return text.error();
  }
  NA_RETURN_IF_ERROR(FromStateJson(*text, message, path));
  return true;
}

// One record of journal.log: "A <entry JSON>" or "D <entry JSON>". nullopt when the line is none; a record of a
// newer schema is an error of its own (`newer`), never a torn line to leave out.
std::optional<StateStore::JournalRecord> ParseRecord(std::string_view line, std::optional<Error>* newer = nullptr) {
  StateStore::JournalRecord record;
  if (line.size() <= 2 || (line[0] != 'A' && line[0] != 'D') || line[1] != ' ') return std::nullopt;
  Status parsed = FromStateJson(line.substr(2), &record.entry, "journal record");
  if (!parsed) {
    if (newer != nullptr && parsed.error().code == ErrorCode::kFailedPrecondition) *newer = parsed.error();
    return std::nullopt;
  }
  record.op = line[0];
  return record;
}

// What a failed append may leave: the beginning of a record ("", "A", "A ", "A {\"contr...").
bool LooksLikeFragment(std::string_view line) {
  if (line.empty()) return true;
  if (line[0] != 'A' && line[0] != 'D') return false;
  return line.size() == 1 || (line[1] == ' ' && (line.size() == 2 || line[2] == '{'));
}

// Versions before issue 45 appended after a fragment without a newline: "A {\"contrA {...whole...}". The
// whole record is the longest tail of the line that parses; only the few places a record may start are tried.
std::optional<StateStore::JournalRecord> RecordGluedToFragment(std::string_view line) {
  constexpr int kTries = 8;
  int tries = 0;
  for (size_t at = line.find(" {", 1); at != std::string_view::npos && tries < kTries; at = line.find(" {", at + 1)) {
    if (line[at - 1] != 'A' && line[at - 1] != 'D') continue;
    ++tries;
    if (auto record = ParseRecord(line.substr(at - 1))) return record;
  }
  return std::nullopt;
}

// The write(2) and ftruncate(2) calls of one append, and the failure NVME_ADAPT_WRITE_FAULT injects into them in
// test builds (common/failpoint.h): the crash-consistency campaign cannot fill a disk at every byte of a record.
class AppendCalls {
 public:
  AppendCalls() {
    static std::atomic<uint64_t> appends{0};
    fault_ = WriteFaultFor("journal_append", ++appends);
  }

  ssize_t Write(int fd, const char* data, size_t size) {
    if (pending_errno_ != 0) {
      errno = pending_errno_;
      return -1;
    }
    if (!fault_) return write(fd, data, size);
    const WriteFault fault = *std::exchange(fault_, std::nullopt);
    const uint64_t cut = static_cast<uint64_t>(fault.at < 0 ? -fault.at : fault.at);
    const size_t kept = fault.at >= 0 ? std::min<uint64_t>(cut, size) : size - std::min<uint64_t>(cut, size);
    const ssize_t n = kept > 0 ? write(fd, data, kept) : 0;
    if (n < 0 || fault.kind == WriteFault::Kind::kShort) return n;
    truncate_fails_ = fault.kind == WriteFault::Kind::kStuck;
    const int err = fault.kind == WriteFault::Kind::kNoSpace ? ENOSPC : EIO;
    if (n > 0) {
      pending_errno_ = err;  // as the kernel does: what fit is written, the next call fails
      return n;
    }
    errno = err;
    return -1;
  }

  int Truncate(int fd, off_t size) {
    if (truncate_fails_) {
      errno = EIO;
      return -1;
    }
    return ftruncate(fd, size);
  }

 private:
  std::optional<WriteFault> fault_;
  int pending_errno_ = 0;
  bool truncate_fails_ = false;
};

// Every byte of `bytes` appended, through short writes; the first error stops it.
Status AppendWhole(AppendCalls& calls, int fd, const std::string& path, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = calls.Write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError("append " + std::to_string(bytes.size() - done) + " more bytes to", path, errno);
    if (n == 0) return MakeError(ErrorCode::kIo, path + ": append wrote nothing");
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

// What a downgraded agent says of a newer policy.json it will not replace.
constexpr std::string_view kDropNewerPolicy =
    "`nvme-adaptctl policy reset` drops it (and its note) for this version's policy";
}  // namespace

Status StateStore::Open() const { return MakeDirectories(dir_, 0750); }

Result<std::optional<v1::PolicySet>> StateStore::LoadPolicy() const {
  v1::PolicySet policy;
  NA_ASSIGN_OR_RETURN(auto found, FromJsonFile(PolicyPath(), &policy));
  if (!found) return std::optional<v1::PolicySet>();
  if (Status valid = config::ValidatePolicies(policy); !valid) {
    return MakeError(ErrorCode::kInvalidArgument, PolicyPath() + ": " + valid.error().message);
  }
  return std::optional<v1::PolicySet>(std::move(policy));
}

Status StateStore::SavePolicy(const v1::PolicySet& policy) const {
  NA_RETURN_IF_ERROR(RefuseToReplaceNewer(PolicyPath(), kDropNewerPolicy));
  NA_ASSIGN_OR_RETURN(auto json, ToStateJson(policy, PolicyPath()));
  return WriteFileAtomically(PolicyPath(), json, 0640);
}

Result<v1::PolicyNote> StateStore::LoadPolicyNote() const {
  v1::PolicyNote note;
  NA_RETURN_IF_ERROR(FromJsonFile(PolicyNotePath(), &note));
  return note;
}

Status StateStore::SavePolicyNote(const v1::PolicyNote& note) const {
  // The policy's file decides: a note is written only with its policy.
  NA_RETURN_IF_ERROR(RefuseToReplaceNewer(PolicyPath(), kDropNewerPolicy));
  NA_RETURN_IF_ERROR(RefuseToReplaceNewer(PolicyNotePath(), kDropNewerPolicy));
  NA_ASSIGN_OR_RETURN(auto json, ToStateJson(note, PolicyNotePath()));
  return WriteFileAtomically(PolicyNotePath(), json, 0640);
}

Status StateStore::ClearPolicy() const {
  // The policy first: a note left without its policy is ignored, a policy without its note is not.
  for (const std::string& path : {PolicyPath(), PolicyNotePath()}) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return SysError("unlink", path, errno);
  }
  return OkStatus();
}

Result<std::optional<v1::Pause>> StateStore::LoadPause() const {
  v1::Pause pause;
  NA_ASSIGN_OR_RETURN(auto found, FromJsonFile(PausePath(), &pause));
  if (!found) return std::optional<v1::Pause>();
  if (pause.mode() != v1::CONTROLLER_MODE_INTERRUPT && pause.mode() != v1::CONTROLLER_MODE_OFF) {
    return MakeError(ErrorCode::kInvalidArgument,
                     PausePath() + ": mode: must be CONTROLLER_MODE_INTERRUPT or CONTROLLER_MODE_OFF, got " +
                         v1::ControllerMode_Name(pause.mode()));
  }
  return std::optional<v1::Pause>(std::move(pause));
}

Status StateStore::SavePause(const v1::Pause& pause) const {
  NA_RETURN_IF_ERROR(RefuseToReplaceNewer(PausePath(), "`nvme-adaptctl resume` drops it"));
  NA_ASSIGN_OR_RETURN(auto json, ToStateJson(pause, PausePath()));
  return WriteFileAtomically(PausePath(), json, 0640);
}

Status StateStore::ClearPause() const {
  if (unlink(PausePath().c_str()) != 0 && errno != ENOENT) return SysError("unlink", PausePath(), errno);
  return OkStatus();
}

Result<v1::Journal> StateStore::LoadJournal() const {
  v1::Journal journal;
  NA_RETURN_IF_ERROR(FromJsonFile(JournalPath(), &journal));
  return journal;
}

Status StateStore::SaveJournal(const v1::Journal& journal) const {
  NA_ASSIGN_OR_RETURN(auto json, ToStateJson(journal, JournalPath()));
  // The journal being replaced becomes the previous copy: link it first, then rename over the link, so
  // that journal.prev.json is never missing once it existed. The directory fsync of the write below makes
  // both durable.
  const std::string link_path = JournalPreviousPath() + ".link";
  (void)unlink(link_path.c_str());
  if (link(JournalPath().c_str(), link_path.c_str()) == 0) {
    if (rename(link_path.c_str(), JournalPreviousPath().c_str()) != 0) {
      const int err = errno;
      (void)unlink(link_path.c_str());
      return SysError("rename", link_path, err);
    }
  } else if (errno != ENOENT) {
    return SysError("link " + JournalPath() + " to", link_path, errno);
  }
  return WriteFileAtomically(JournalPath(), json, 0640);
}

Result<StateStore::LoadedJournal> StateStore::LoadJournalOrPrevious() const {
  auto current = LoadJournal();
  if (current) return LoadedJournal{std::move(*current), ""};
  if (current.error().code != ErrorCode::kInvalidArgument) return current.error();
  const std::string aside = JournalPath() + ".corrupt";
  if (rename(JournalPath().c_str(), aside.c_str()) != 0) {
    return MakeError(ErrorCode::kIo, current.error().message + "; and it cannot be set aside: " +
                                         SysError("rename", JournalPath(), errno).message);
  }
  v1::Journal previous;
  auto found = FromJsonFile(JournalPreviousPath(), &previous);
  if (!found) {
    return MakeError(ErrorCode::kInvalidArgument, current.error().message + " (set aside as " + aside +
                                                      "); its previous copy is unreadable too: " +
                                                      found.error().message);
  }
  std::string warning = current.error().message + ": set aside as " + aside + "; ";
  warning += *found ? "using its previous copy " + JournalPreviousPath() + " (" +
                          std::to_string(previous.entries_size()) +
                          " entries; a change recorded only in the corrupt copy cannot be restored)"
                    : "no previous copy: nothing to restore from it";
  // The previous copy becomes the journal again, so that the next save keeps a sound previous copy.
  auto json = ToStateJson(previous, JournalPath());
  Status saved = json ? WriteFileAtomically(JournalPath(), *json, 0640) : Status(json.error());
  if (!saved) warning += "; cannot write it back: " + saved.error().message;
  return LoadedJournal{std::move(previous), std::move(warning)};
}

Status StateStore::AppendJournalRecord(char op, const v1::JournalEntry& entry, bool sync) const {
  NA_ASSIGN_OR_RETURN(auto json, ToStateJson(entry, JournalLogPath(), false));
  std::string line = std::string(1, op) + " " + json + "\n";
  const std::string path = JournalLogPath();
  const int fd = open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return SysError("open", path, errno);
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return SysError("fstat", path, err);
  }
  const off_t size_before = st.st_size;
  // A fragment an earlier append could not take back (or a crash tore) ends without a newline: this record
  // starts a line of its own, so that it is read whole and the fragment is a line LoadJournalLog skips.
  // (A last byte that cannot be read gets the newline too: an empty line is skipped as well.)
  char last = '\n';
  if (size_before > 0 && pread(fd, &last, 1, size_before - 1) != 1) last = 0;
  if (last != '\n') line.insert(0, 1, '\n');
  AppendCalls calls;
  Status status = AppendWhole(calls, fd, path, line);
  if (!status) {
    // A partial record left in place would glue the next one to it, and the journal would be unreadable
    // after the next crash (issue 45): the file goes back to what it was.
    if (calls.Truncate(fd, size_before) != 0) {
      const Error untruncated = SysError("ftruncate", path, errno);
      status = MakeError(status.error().code, status.error().message + "; and the partial record cannot be taken back: " +
                                                  untruncated.message + " (the next record starts on a new line)");
    }
  } else if (sync && fdatasync(fd) != 0) {
    status = SysError("fdatasync", path, errno);
  }
  close(fd);
  if (status && sync && size_before == 0) {
    const int dir = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return SysError("open", dir_, errno);
    if (fsync(dir) != 0) status = SysError("fsync", dir_, errno);
    close(dir);
  }
  return status;
}

Result<StateStore::JournalLog> StateStore::LoadJournalLog() const {
  JournalLog log;
  auto text = ReadWholeFile(JournalLogPath(), size_t{1} << 30);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) return log;
    return text.error();
  }
  size_t start = 0, number = 0;
  std::vector<size_t> fragments;
  while (start < text->size()) {
    const size_t end = text->find('\n', start);
    const bool last = end == std::string::npos;
    const std::string_view line = std::string_view(*text).substr(start, last ? std::string::npos : end - start);
    start = last ? text->size() : end + 1;
    ++number;
    std::optional<Error> newer;
    if (auto record = ParseRecord(line, &newer)) {
      log.records.push_back(std::move(*record));
      continue;
    }
    const std::string where = JournalLogPath() + ":" + std::to_string(number);
    if (newer) return MakeError(ErrorCode::kFailedPrecondition, where + ": " + newer->message);
    if (last) {
      log.warning = where + ": a torn last record (a crash while it was written) left out";
      break;
    }
    if (!LooksLikeFragment(line)) return MakeError(ErrorCode::kInvalidArgument, where + ": not a journal record");
    // A record written by an older version right after a fragment it left shares the fragment's line.
    if (auto glued = RecordGluedToFragment(line)) log.records.push_back(std::move(*glued));
    fragments.push_back(number);
  }
  if (!fragments.empty()) {
    std::string lines;
    for (size_t n : fragments) lines += (lines.empty() ? "" : ", ") + std::to_string(n);
    const std::string said = JournalLogPath() + ": " + std::to_string(fragments.size()) +
                             " partial record(s) of appends that failed left out (line " + lines + ")";
    log.warning = log.warning.empty() ? said : said + "; " + log.warning;
  }
  return log;
}

Status StateStore::TruncateJournalLog() const {
  if (truncate(JournalLogPath().c_str(), 0) != 0 && errno != ENOENT) return SysError("truncate", JournalLogPath(), errno);
  return OkStatus();
}

}  // namespace nvmeadapt::state
