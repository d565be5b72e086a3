// Client side of the uvnvme control socket (docs/uvnvme-control.md): a Unix stream socket carrying one JSON
// object per line each way. Shared by discovery ("list") and the socket lever ("set_mode"). Every exchange is
// bounded by the timeout given at connect; nothing blocks longer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agent/common/result.h"

namespace nvmeadapt::discover {

class ControlClient {
 public:
  // Errors: kNotFound (no socket file), kUnavailable (stale socket with nobody listening, or timeout),
  // kPermissionDenied, kInvalidArgument (path too long for a Unix socket).
  static Result<ControlClient> Connect(const std::string& path, int timeout_ms);

  ControlClient(ControlClient&& other) noexcept;
  ControlClient& operator=(ControlClient&& other) noexcept;
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;
  ~ControlClient();

  // Sends `request` and returns the reply object, whose "ok" is true. Errors name the socket:
  // kRefused with the driver's own message for {"ok": false, "error": ...}; kIo for a reply that is not a JSON
  // object with a boolean "ok" or a line over kMaxReplyBytes; kUnavailable when no full reply comes within the
  // timeout or the peer closes the connection.
  Result<nlohmann::json> Call(const nlohmann::json& request);

  const std::string& path() const { return path_; }

  static constexpr size_t kMaxReplyBytes = 64 * 1024;  // the protocol's 4096 with room for long queue lists

 private:
  ControlClient(int fd, std::string path, int timeout_ms) : fd_(fd), path_(std::move(path)), timeout_ms_(timeout_ms) {}
  Status SendAll(const std::string& bytes, int64_t deadline);
  Result<std::string> ReadLine(int64_t deadline);

  int fd_ = -1;
  std::string path_;
  int timeout_ms_ = 0;
  std::string pending_;  // bytes read past the last reply line
};

}  // namespace nvmeadapt::discover
