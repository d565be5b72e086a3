// SPDX-License-Identifier: Apache-2.0
#include "agent/discover/control_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"

namespace nvmeadapt::discover {
namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;

int RemainingMillis(int64_t deadline) {
  const int64_t left = deadline - MonotonicNanos();
  if (left <= 0) return 0;
  return static_cast<int>((left + kNanosPerMilli - 1) / kNanosPerMilli);
}

// Waits for `events` on fd until the deadline. Returns false on timeout.
Result<bool> WaitFor(int fd, short events, int64_t deadline, const std::string& path) {
  for (;;) {
    const int wait_ms = RemainingMillis(deadline);
    if (wait_ms == 0) return false;
    pollfd pfd{fd, events, 0};
    const int ready = poll(&pfd, 1, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return SysError("poll", path, errno);
    }
    if (ready > 0) return true;
  }
}

Error Timeout(const std::string& path, int timeout_ms, const char* what) {
  Error error = MakeError(ErrorCode::kUnavailable,
                          path + ": " + what + " within " + std::to_string(timeout_ms) + " ms");
  error.sys_errno = ETIMEDOUT;
  return error;
}

Error Untrusted(const std::string& path, const std::string& why) {
  return MakeError(ErrorCode::kPermissionDenied, path + ": refused: " + why);
}

// The pid in a "PID.sock" file name, or 0 for another name.
pid_t PidOfSocketName(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  constexpr std::string_view kSuffix = ".sock";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return 0;
  const std::string digits = name.substr(0, name.size() - kSuffix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::stol(digits));
}

// Opens the path itself (a symlink is opened as the link, never followed) and checks it is a socket file.
Result<int> OpenSocketFile(const std::string& path, struct stat* st) {
  const int fd = open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return SysError("open", path, errno);
  if (fstat(fd, st) != 0) {
    const int err = errno;
    close(fd);
    return SysError("fstat", path, err);
  }
  if (!S_ISSOCK(st->st_mode)) {
    close(fd);
    return Untrusted(path, S_ISLNK(st->st_mode) ? "a symlink (driver sockets are not followed)"
                                                 : "not a socket file");
  }
  return fd;
}

// Printable ASCII only, at most `limit` bytes: what a peer says may end up in logs and kept errors.
std::string Bounded(std::string_view text, size_t limit) {
  std::string shown(text.substr(0, limit));
  for (char& c : shown) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  if (text.size() > limit) shown += "... (" + std::to_string(text.size()) + " bytes)";
  return shown;
}

}  // namespace

Result<ControlClient> ControlClient::Connect(const std::string& path, int timeout_ms) {
  struct stat st{};
  NA_ASSIGN_OR_RETURN(auto path_fd, OpenSocketFile(path, &st));
  // Connecting through the opened file, not the name, so that the checked file is the one connected to.
  const std::string via = "/proc/self/fd/" + std::to_string(path_fd);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, via.c_str(), via.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    const int err = errno;
    close(path_fd);
    return SysError("socket", path, err);
  }
  ControlClient client(fd, path, timeout_ms);
  const int64_t deadline = MonotonicNanos() + int64_t{timeout_ms} * kNanosPerMilli;
  for (;;) {
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      close(path_fd);
      NA_RETURN_IF_ERROR(client.CheckPeer(st));
      return client;
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EINPROGRESS) close(path_fd);
    if (err == ECONNREFUSED) {
      Error error = MakeError(ErrorCode::kUnavailable,
                              "connect " + path + ": connection refused (stale socket: no process listens)");
      error.sys_errno = err;
      return error;
    }
    if (err != EAGAIN && err != EINPROGRESS) return SysError("connect", path, err);
    // The listener's backlog is full: it may drain soon.
    if (RemainingMillis(deadline) == 0) {
      close(path_fd);
      return Timeout(path, timeout_ms, "not accepting connections");
    }
    usleep(5000);
  }
}

Status ControlClient::CheckPeer(const struct stat& file) {
  ucred peer{};
  socklen_t size = sizeof peer;
  if (getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) return SysError("SO_PEERCRED of", path_, errno);
  peer_pid_ = peer.pid;
  if (file.st_uid != peer.uid) {
    return Untrusted(path_, "the socket file is owned by uid " + std::to_string(file.st_uid) +
                                " but served by uid " + std::to_string(peer.uid) + " (pid " +
                                std::to_string(peer.pid) + ")");
  }
  const pid_t named = PidOfSocketName(path_);
  if (named != 0 && named != peer.pid) {
    return Untrusted(path_, "named for pid " + std::to_string(named) + " but served by pid " +
                                std::to_string(peer.pid));
  }
  return OkStatus();
}

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(other.fd_), peer_pid_(other.peer_pid_), path_(std::move(other.path_)),
      timeout_ms_(other.timeout_ms_),
      pending_(std::move(other.pending_)) {
  other.fd_ = -1;
}

ControlClient& ControlClient::operator=(ControlClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    peer_pid_ = other.peer_pid_;
    path_ = std::move(other.path_);
    timeout_ms_ = other.timeout_ms_;
    pending_ = std::move(other.pending_);
    other.fd_ = -1;
  }
  return *this;
}

ControlClient::~ControlClient() {
  if (fd_ >= 0) close(fd_);
}

Status ControlClient::SendAll(const std::string& bytes, int64_t deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      Error error = SysError("send", path_, errno);
      if (errno == EPIPE || errno == ECONNRESET) error.code = ErrorCode::kUnavailable;
      return error;
    }
    NA_ASSIGN_OR_RETURN(auto ready, WaitFor(fd_, POLLOUT, deadline, path_));
    if (!ready) return Timeout(path_, timeout_ms_, "request not taken");
  }
  return OkStatus();
}

Result<std::string> ControlClient::ReadLine(int64_t deadline) {
  for (;;) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    if (pending_.size() > kMaxReplyBytes) {
      return MakeError(ErrorCode::kIo, path_ + ": reply longer than " + std::to_string(kMaxReplyBytes) + " bytes");
    }
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      Error error = MakeError(ErrorCode::kUnavailable, path_ + ": connection closed before a full reply");
      error.sys_errno = ECONNRESET;
      return error;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      Error error = SysError("recv", path_, errno);
      if (errno == ECONNRESET) error.code = ErrorCode::kUnavailable;
      return error;
    }
    NA_ASSIGN_OR_RETURN(auto ready, WaitFor(fd_, POLLIN, deadline, path_));
    if (!ready) return Timeout(path_, timeout_ms_, "no reply");
  }
}

Result<nlohmann::json> ControlClient::Call(const nlohmann::json& request) {
  const int64_t deadline = MonotonicNanos() + int64_t{timeout_ms_} * kNanosPerMilli;
  NA_RETURN_IF_ERROR(SendAll(request.dump() + "\n", deadline));
  NA_ASSIGN_OR_RETURN(auto line, ReadLine(deadline));
  nlohmann::json reply = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded() || !reply.is_object()) {
    return MakeError(ErrorCode::kIo, path_ + ": reply is not a JSON object: '" + Bounded(line, 80) + "'");
  }
  const auto ok = reply.find("ok");
  if (ok == reply.end() || !ok->is_boolean()) {
    return MakeError(ErrorCode::kIo, path_ + ": reply without a boolean \"ok\"");
  }
  if (!ok->get<bool>()) {
    const auto error = reply.find("error");
    const std::string message = error != reply.end() && error->is_string()
                                    ? Bounded(error->get<std::string>(), kMaxKeptTextBytes)
                                    : std::string("(no error message)");
    return MakeError(ErrorCode::kRefused, path_ + ": driver refused: " + message);
  }
  return reply;
}

}  // namespace nvmeadapt::discover
