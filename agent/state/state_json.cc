// SPDX-License-Identifier: Apache-2.0
#include "agent/state/state_json.h"

#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include "common/files.h"

namespace nvmeadapt::state {
namespace {

using OrderedJson = nlohmann::ordered_json;  // the fields stay in the message's order, the version first

std::string NewerSchema(const std::string& where, uint32_t version) {
  return where + ": written by a newer nvme-adaptd (state schema " + std::to_string(version) +
         "; this one reads up to " + std::to_string(kStateSchemaVersion) + ")";
}

// Without exceptions: protobuf's strings are UTF-8, but a byte that is not would throw.
std::string Dump(const OrderedJson& tree, int indent) {
  return tree.dump(indent, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace

Result<std::string> ToStateJson(const google::protobuf::Message& message, const std::string& path, bool lines,
                                uint32_t version) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = lines && version < kFirstStampedSchema;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return MakeError(ErrorCode::kInternal, path + ": cannot encode: " + std::string(status.message()));
  }
  if (version < kFirstStampedSchema) return json;
  // protobuf prints an object, "{...}" or "{}": the version goes in as its first member.
  const std::string stamp = "\"" + std::string(kSchemaVersionKey) + "\":" + std::to_string(version);
  const std::string stamped = "{" + stamp + (json.size() > 2 ? "," : "") + json.substr(1);
  if (!lines) return stamped;
  const OrderedJson tree = OrderedJson::parse(stamped, nullptr, false);
  if (tree.is_discarded()) return MakeError(ErrorCode::kInternal, path + ": cannot encode: not JSON: " + stamped);
  return Dump(tree, 2) + "\n";
}

std::optional<uint32_t> SchemaVersionOf(std::string_view text) {
  const OrderedJson tree = OrderedJson::parse(text, nullptr, false);
  if (tree.is_discarded() || !tree.is_object()) return std::nullopt;
  const auto it = tree.find(kSchemaVersionKey);
  if (it == tree.end()) return 1;
  if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) return std::nullopt;
  return it->get<uint32_t>();
}

Status FromStateJson(std::string_view text, google::protobuf::Message* message, const std::string& where) {
  std::string body(text);
  OrderedJson tree = OrderedJson::parse(text, nullptr, false);
  // Malformed JSON is left to protobuf's parser below, whose message names the spot.
  if (!tree.is_discarded() && tree.is_object() && tree.contains(kSchemaVersionKey)) {
    const std::optional<uint32_t> version = SchemaVersionOf(text);
    if (!version) {
      return MakeError(ErrorCode::kInvalidArgument,
                       where + ": " + std::string(kSchemaVersionKey) + " is not a whole number");
    }
    if (*version > kStateSchemaVersion) return MakeError(ErrorCode::kFailedPrecondition, NewerSchema(where, *version));
    tree.erase(std::string(kSchemaVersionKey));
    body = Dump(tree, -1);
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(body, message, options);
  if (!status.ok()) {
    std::string reason(status.message());
    return MakeError(ErrorCode::kInvalidArgument, where + ": " + reason.substr(0, reason.find('\n')));
  }
  return OkStatus();
}

Status RefuseToReplaceNewer(const std::string& path, std::string_view how_to_drop) {
  auto text = ReadWholeFile(path);
  if (!text) return OkStatus();  // nothing there (or nothing readable) to keep
  const std::optional<uint32_t> version = SchemaVersionOf(*text);
  if (!version || *version <= kStateSchemaVersion) return OkStatus();
  return MakeError(ErrorCode::kFailedPrecondition,
                   NewerSchema(path, *version) + ": not replaced, so that the newer version finds it again; " +
                       std::string(how_to_drop));
}

}  // namespace nvmeadapt::state
