#include "agent/config/config_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <google/protobuf/util/json_util.h>

#include "agent/common/log.h"
#include "agent/config/levers_config.h"
#include "agent/config/policy_convert.h"

namespace nvmeadapt::config {
namespace {
constexpr size_t kMaxConfigBytes = 1 << 20;
}

Status ValidateConfig(const v1::Config& config) {
  if (Status status = ValidatePolicies(config); !status) return status;
  if (Status status = ValidateLevers(config); !status) return status;
  if (auto level = ParseLogLevel(config.log_level()); !level) return level.error();
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
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysError("open", path, errno);
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return SysError("read", path, err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) {
      close(fd);
      return MakeError(ErrorCode::kInvalidArgument, path + ": larger than 1 MiB");
    }
  }
  close(fd);
  auto config = ParseConfigJson(text);
  if (!config) return MakeError(config.error().code, path + ": " + config.error().message);
  return config;
}

}  // namespace nvmeadapt::config
