#include "agent/discover/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/common/clock.h"

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

}  // namespace

Result<ControlClient> ControlClient::Connect(const std::string& path, int timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return MakeError(ErrorCode::kInvalidArgument, path + ": too long for a Unix socket path");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SysError("socket", path, errno);
  ControlClient client(fd, path, timeout_ms);
  const int64_t deadline = MonotonicNanos() + int64_t{timeout_ms} * kNanosPerMilli;
  for (;;) {
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return client;
    const int err = errno;
    if (err == EINTR) continue;
    if (err == ECONNREFUSED) {
      Error error = MakeError(ErrorCode::kUnavailable,
                              "connect " + path + ": connection refused (stale socket: no process listens)");
      error.sys_errno = err;
      return error;
    }
    if (err != EAGAIN && err != EINPROGRESS) return SysError("connect", path, err);
    // The listener's backlog is full: it may drain soon.
    if (RemainingMillis(deadline) == 0) return Timeout(path, timeout_ms, "not accepting connections");
    usleep(5000);
  }
}

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), timeout_ms_(other.timeout_ms_),
      pending_(std::move(other.pending_)) {
  other.fd_ = -1;
}

ControlClient& ControlClient::operator=(ControlClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
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
    auto ready = WaitFor(fd_, POLLOUT, deadline, path_);
    if (!ready) return ready.error();
    if (!*ready) return Timeout(path_, timeout_ms_, "request not taken");
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
    auto ready = WaitFor(fd_, POLLIN, deadline, path_);
    if (!ready) return ready.error();
    if (!*ready) return Timeout(path_, timeout_ms_, "no reply");
  }
}

Result<nlohmann::json> ControlClient::Call(const nlohmann::json& request) {
  const int64_t deadline = MonotonicNanos() + int64_t{timeout_ms_} * kNanosPerMilli;
  if (Status sent = SendAll(request.dump() + "\n", deadline); !sent) return sent.error();
  auto line = ReadLine(deadline);
  if (!line) return line.error();
  nlohmann::json reply = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded() || !reply.is_object()) {
    std::string shown = line->substr(0, 80);
    for (char& c : shown) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    return MakeError(ErrorCode::kIo, path_ + ": reply is not a JSON object: '" + shown + "'");
  }
  const auto ok = reply.find("ok");
  if (ok == reply.end() || !ok->is_boolean()) {
    return MakeError(ErrorCode::kIo, path_ + ": reply without a boolean \"ok\"");
  }
  if (!ok->get<bool>()) {
    const auto error = reply.find("error");
    const std::string message = error != reply.end() && error->is_string() ? error->get<std::string>()
                                                                           : std::string("(no error message)");
    return MakeError(ErrorCode::kRefused, path_ + ": driver refused: " + message);
  }
  return reply;
}

}  // namespace nvmeadapt::discover
