// SPDX-License-Identifier: Apache-2.0
// Client side of the uvnvme control socket (docs/uvnvme-control.md): a Unix stream socket carrying one JSON
// object per line each way. Shared by discovery ("list") and the socket lever ("set_mode"). Every exchange is
// bounded by the timeout given at connect; nothing blocks longer.
//
// Trust: a driver socket is believed only for what the kernel vouches for. Connect opens the path without
// following links and refuses anything but a socket file; the process that listens on it (SO_PEERCRED) must own
// the file, and when the file is named PID.sock (the protocol's convention) that process must be PID. Text a
// driver sends back is kept only to a short, printable bound.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace nvmeadapt::discover {

class ControlClient {
 public:
  // Errors: kNotFound (no socket file), kUnavailable (stale socket with nobody listening, or timeout),
  // kPermissionDenied (a symlink, not a socket, a file owned by someone else than its listener, a PID.sock
  // served by another pid; the message says which). The path may be of any length: the connection goes
  // through /proc/self/fd.
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
  // The listening process as the kernel reports it (SO_PEERCRED), in this process's pid namespace.
  pid_t peer_pid() const { return peer_pid_; }

  static constexpr size_t kMaxReplyBytes = 64 * 1024;  // the protocol's 4096 with room for long queue lists
  static constexpr size_t kMaxKeptTextBytes = 200;     // of a driver's error message, in errors we keep

 private:
  ControlClient(int fd, std::string path, int timeout_ms) : fd_(fd), path_(std::move(path)), timeout_ms_(timeout_ms) {}
  Status CheckPeer(const struct stat& file);
  Status SendAll(const std::string& bytes, int64_t deadline);
  Result<std::string> ReadLine(int64_t deadline);

  int fd_ = -1;
  pid_t peer_pid_ = 0;
  std::string path_;
  int timeout_ms_ = 0;
  std::string pending_;  // bytes read past the last reply line
};

}  // namespace nvmeadapt::discover
