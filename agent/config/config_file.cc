#include "agent/config/config_file.h"

#include <google/protobuf/util/json_util.h>

#include "agent/config/levers_config.h"
#include "agent/config/policy_convert.h"
#include "common/files.h"
#include "common/log.h"

namespace nvmeadapt::config {
namespace {
constexpr size_t kMaxConfigBytes = 1 << 20;
}

Status ValidateConfig(const v1::Config& config) {
  if (Status status = ValidatePolicies(config); !status) return status;
  if (Status status = ValidateLevers(config); !status) return status;
  if (auto level = ParseLogLevel(config.log_level()); !level) return level.error();
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
  v1::Config config;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &config, options);
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
  auto text = ReadWholeFile(path, kMaxConfigBytes);
  if (!text) return text.error();
  auto config = ParseConfigJson(*text);
  if (!config) return MakeError(config.error().code, path + ": " + config.error().message);
  return config;
}

}  // namespace nvmeadapt::config
