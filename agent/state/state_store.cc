#include "agent/state/state_store.h"

#include <google/protobuf/util/json_util.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "agent/config/policy_convert.h"
#include "common/files.h"

namespace nvmeadapt::state {
namespace {

Result<std::string> ToJson(const google::protobuf::Message& message, const std::string& path, bool lines = true) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = lines;
  options.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return MakeError(ErrorCode::kInternal, path + ": cannot encode: " + std::string(status.message()));
  }
  return json;
}

// Reads `path` into `message`. Returns false (and no error) when the file does not exist.
Result<bool> FromJsonFile(const std::string& path, google::protobuf::Message* message) {
  auto text = ReadWholeFile(path);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) return false;
    return text.error();
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(*text, message, options);
  if (!status.ok()) {
    std::string reason(status.message());
    reason = reason.substr(0, reason.find('\n'));
    return MakeError(ErrorCode::kInvalidArgument, path + ": " + reason);
  }
  return true;
}

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
  NA_ASSIGN_OR_RETURN(auto json, ToJson(policy, PolicyPath()));
  return WriteFileAtomically(PolicyPath(), json, 0640);
}

Result<v1::PolicyNote> StateStore::LoadPolicyNote() const {
  v1::PolicyNote note;
  NA_RETURN_IF_ERROR(FromJsonFile(PolicyNotePath(), &note));
  return note;
}

Status StateStore::SavePolicyNote(const v1::PolicyNote& note) const {
  NA_ASSIGN_OR_RETURN(auto json, ToJson(note, PolicyNotePath()));
  return WriteFileAtomically(PolicyNotePath(), json, 0640);
}

Status StateStore::ClearPolicy() const {
  // The policy first: a note left without its policy is ignored, a policy without its note is not.
  for (const std::string& path : {PolicyPath(), PolicyNotePath()}) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return SysError("unlink", path, errno);
  }
  return OkStatus();
}

Result<v1::Journal> StateStore::LoadJournal() const {
  v1::Journal journal;
  NA_RETURN_IF_ERROR(FromJsonFile(JournalPath(), &journal));
  return journal;
}

Status StateStore::SaveJournal(const v1::Journal& journal) const {
  NA_ASSIGN_OR_RETURN(auto json, ToJson(journal, JournalPath()));
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
  auto json = ToJson(previous, JournalPath());
  Status saved = json ? WriteFileAtomically(JournalPath(), *json, 0640) : Status(json.error());
  if (!saved) warning += "; cannot write it back: " + saved.error().message;
  return LoadedJournal{std::move(previous), std::move(warning)};
}

Status StateStore::AppendJournalRecord(char op, const v1::JournalEntry& entry, bool sync) const {
  NA_ASSIGN_OR_RETURN(auto json, ToJson(entry, JournalLogPath(), false));
  const std::string line = std::string(1, op) + " " + json + "\n";
  const std::string path = JournalLogPath();
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return SysError("open", path, errno);
  struct stat st{};
  const bool first = fstat(fd, &st) == 0 && st.st_size == 0;
  // One write(2) of the whole line: O_APPEND puts it at the end in one piece (a crash may tear it, which
  // LoadJournalLog tells).
  const ssize_t n = write(fd, line.data(), line.size());
  const int write_err = errno;
  Status status;
  if (n != static_cast<ssize_t>(line.size())) {
    status = n < 0 ? SysError("append to", path, write_err) : MakeError(ErrorCode::kIo, path + ": short append");
  } else if (sync && fdatasync(fd) != 0) {
    status = SysError("fdatasync", path, errno);
  }
  close(fd);
  if (status && sync && first) {
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
  while (start < text->size()) {
    const size_t end = text->find('\n', start);
    const bool last = end == std::string::npos;
    const std::string line = text->substr(start, last ? std::string::npos : end - start);
    start = last ? text->size() : end + 1;
    ++number;
    JournalRecord record;
    google::protobuf::util::JsonParseOptions options;
    const bool ok = line.size() > 2 && (line[0] == 'A' || line[0] == 'D') && line[1] == ' ' &&
                    google::protobuf::util::JsonStringToMessage(line.substr(2), &record.entry, options).ok();
    if (!ok) {
      const std::string where = JournalLogPath() + ":" + std::to_string(number);
      if (last) {
        log.warning = where + ": a torn last record (a crash while it was written) left out";
        break;
      }
      return MakeError(ErrorCode::kInvalidArgument, where + ": not a journal record");
    }
    record.op = line[0];
    log.records.push_back(std::move(record));
  }
  return log;
}

Status StateStore::TruncateJournalLog() const {
  if (truncate(JournalLogPath().c_str(), 0) != 0 && errno != ENOENT) return SysError("truncate", JournalLogPath(), errno);
  return OkStatus();
}

}  // namespace nvmeadapt::state
