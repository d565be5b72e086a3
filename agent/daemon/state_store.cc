#include "agent/daemon/state_store.h"

#include <google/protobuf/util/json_util.h>

#include "agent/common/files.h"
#include "agent/config/policy_convert.h"

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

Result<v1::Journal> StateStore::LoadJournal() const {
  v1::Journal journal;
  auto found = FromJsonFile(JournalPath(), &journal);
  if (!found) return found.error();
  return journal;
}

Status StateStore::SaveJournal(const v1::Journal& journal) const {
  auto json = ToJson(journal, JournalPath());
  if (!json) return json.error();
  return WriteFileAtomically(JournalPath(), *json, 0640);
}

}  // namespace nvmeadapt::daemon
