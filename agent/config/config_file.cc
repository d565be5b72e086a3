// SPDX-License-Identifier: Apache-2.0
#include "agent/config/config_file.h"

#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include "agent/config/levers_config.h"
#include "agent/config/node_config.h"
#include "agent/config/policy_convert.h"
#include "common/duration.h"
#include "common/files.h"
#include "common/log.h"

namespace nvmeadapt::config {
namespace {
constexpr size_t kMaxConfigBytes = 1 << 20;

bool IsDurationField(const std::string& key) { return key.ends_with("Ns") || key.ends_with("_ns"); }

bool IsInteger(const std::string& text) {
  const size_t digits = text.starts_with('-') ? 1 : 0;
  return text.size() > digits && text.find_first_not_of("0123456789", digits) == std::string::npos;
}

// A nanosecond field may be a duration string ("10us", "1.5ms", "2m", "1d"; the one grammar of common/duration.h,
// as the CLI, the daemon's flags and uvnvme-load take them) beside integer nanoseconds: rewritten to nanoseconds
// here.
Status DurationsToNanos(nlohmann::json& value, const std::string& path) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      NA_RETURN_IF_ERROR(DurationsToNanos(value[i], path + "[" + std::to_string(i) + "]"));
    }
  }
  if (!value.is_object()) return OkStatus();
  for (auto& [key, member] : value.items()) {
    const std::string where = path.empty() ? key : path + "." + key;
    if (IsDurationField(key) && member.is_string() && !IsInteger(member.get<std::string>())) {
      auto nanos = ParseDuration(member.get<std::string>());
      if (!nanos) {
        return MakeError(ErrorCode::kInvalidArgument, where + ": " + nanos.error().message + ", or integer nanoseconds");
      }
      member = std::to_string(*nanos);
    } else if (Status st = DurationsToNanos(member, where); !st) {
      return st;
    }
  }
  return OkStatus();
}
}  // namespace

Status ValidateConfig(const v1::Config& config) {
  NA_RETURN_IF_ERROR(ValidatePolicies(config));
  NA_RETURN_IF_ERROR(ValidateLevers(config));
  NA_RETURN_IF_ERROR(NodeLayerFromConfig(config.node()));
  NA_RETURN_IF_ERROR(ParseLogLevel(config.log_level()));
  if (const std::string& s = config.cpu_scheduling(); !s.empty() && s != "batch" && s != "normal") {
    return MakeError(ErrorCode::kInvalidArgument, "cpu_scheduling: must be batch or normal (got '" + s + "')");
  }
  for (const auto* dir : {&config.state_dir(), &config.runtime_dir()}) {
    if (!dir->empty() && dir->front() != '/') {
      const char* name = dir == &config.state_dir() ? "state_dir" : "runtime_dir";
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + ": must be an absolute path (got '" + *dir + "')");
    }
  }
  return OkStatus();
}

Result<v1::Config> ParseConfigJson(std::string_view json) {
  std::string text(json);
  // Malformed JSON is left to protobuf's parser, whose message names the spot.
  if (nlohmann::json tree = nlohmann::json::parse(text, nullptr, false); !tree.is_discarded()) {
    if (Status st = DurationsToNanos(tree, ""); !st) return MakeError(ErrorCode::kInvalidArgument, "config: " + st.error().message);
    text = tree.dump();
  }
  v1::Config config;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &config, options);
  if (!status.ok()) {
    // protobuf's parser may answer on several lines (with a caret under the spot): keep one.
    std::string message(status.message());
    message = message.substr(0, message.find('\n'));
    return MakeError(ErrorCode::kInvalidArgument, "config: " + message);
  }
  if (Status valid = ValidateConfig(config); !valid) {
    return MakeError(ErrorCode::kInvalidArgument, "config: " + valid.error().message);
  }
  return config;
}

Result<v1::Config> LoadConfigFile(const std::string& path) {
  NA_ASSIGN_OR_RETURN(auto text, ReadWholeFile(path, kMaxConfigBytes));
  auto config = ParseConfigJson(text);
  if (!config) return MakeError(config.error().code, path + ": " + config.error().message);
  return config;
}

}  // namespace nvmeadapt::config
