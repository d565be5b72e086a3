#include "agent/daemon/state_store.h"

#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "agent/config/policy_convert.h"
#include "common/files.h"

namespace nvmeadapt::daemon {
namespace {

Result<std::string> ToJson(const google::protobuf::Message& message, const std::string& path) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
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
  auto found = FromJsonFile(PolicyPath(), &policy);
  if (!found) return found.error();
  if (!*found) return std::optional<v1::PolicySet>();
  if (Status valid = config::ValidatePolicies(policy); !valid) {
    return MakeError(ErrorCode::kInvalidArgument, PolicyPath() + ": " + valid.error().message);
  }
  return std::optional<v1::PolicySet>(std::move(policy));
}

Status StateStore::SavePolicy(const v1::PolicySet& policy) const {
  auto json = ToJson(policy, PolicyPath());
  if (!json) return json.error();
  return WriteFileAtomically(PolicyPath(), *json, 0640);
}

Result<v1::PolicyNote> StateStore::LoadPolicyNote() const {
  v1::PolicyNote note;
  auto found = FromJsonFile(PolicyNotePath(), &note);
  if (!found) return found.error();
  return note;
}

Status StateStore::SavePolicyNote(const v1::PolicyNote& note) const {
  auto json = ToJson(note, PolicyNotePath());
  if (!json) return json.error();
  return WriteFileAtomically(PolicyNotePath(), *json, 0640);
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
  auto found = FromJsonFile(JournalPath(), &journal);
  if (!found) return found.error();
  return journal;
}

Status StateStore::SaveJournal(const v1::Journal& journal) const {
  auto json = ToJson(journal, JournalPath());
  if (!json) return json.error();
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
  return WriteFileAtomically(JournalPath(), *json, 0640);
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

}  // namespace nvmeadapt::daemon
