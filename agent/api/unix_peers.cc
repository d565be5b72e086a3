#include "agent/api/unix_peers.h"

#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "common/log.h"

namespace nvmeadapt::api {

UnixPeers::~UnixPeers() { Stop(); }

Status UnixPeers::Start(int listen_fd, grpc::Server* server) {
  listen_fd_ = listen_fd;
  server_ = server;
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return SysError("eventfd", "api unix socket acceptor", errno);
  thread_ = std::thread([this] { Accept(); });
  return OkStatus();
}

void UnixPeers::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(stop_fd_, &one, sizeof one) != sizeof one) NA_WARN("api: cannot stop the unix socket acceptor");
    thread_.join();
  }
  if (stop_fd_ >= 0) close(stop_fd_);
  if (listen_fd_ >= 0) close(listen_fd_);
  stop_fd_ = listen_fd_ = -1;
}

Result<UnixPeer> UnixPeers::Identify(int fd) const {
  ucred cred{};
  socklen_t size = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0) return SysError("SO_PEERCRED", "api peer", errno);
  UnixPeer peer{cred.pid, cred.uid, false};
  if (cred.uid == 0 || cred.uid == geteuid() || !admin_gid_) {
    peer.admin = true;
    return peer;
  }
  if (cred.gid == *admin_gid_) {
    peer.admin = true;
    return peer;
  }
  std::vector<gid_t> groups(64);
  for (;;) {
    socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
      groups.resize(bytes / sizeof(gid_t));
      break;
    }
    if (errno != ERANGE || groups.size() >= 65536) return SysError("SO_PEERGROUPS", "api peer", errno);
    groups.resize(bytes / sizeof(gid_t) + 1);
  }
  peer.admin = std::find(groups.begin(), groups.end(), *admin_gid_) != groups.end();
  return peer;
}

std::optional<UnixPeer> UnixPeers::PeerOf(std::string_view grpc_peer) const {
  constexpr std::string_view kPrefix = "fd:";
  if (!grpc_peer.starts_with(kPrefix)) return std::nullopt;
  int fd = -1;
  const std::string_view digits = grpc_peer.substr(kPrefix.size());
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fd);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  std::lock_guard lock(mutex_);
  const auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return std::nullopt;
  return it->second;
}

void UnixPeers::Accept() {
  pthread_setname_np(pthread_self(), "api-unix-accept");
  for (;;) {
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      NA_ERROR("api: unix socket acceptor: poll: " << std::strerror(errno));
      return;
    }
    if (fds[0].revents) return;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        NA_WARN("api: unix socket accept: " << std::strerror(errno));
        usleep(10'000);  // EMFILE and the like: do not spin
      }
      continue;
    }
    auto peer = Identify(fd);
    if (!peer) {
      NA_WARN("api: unix socket connection refused: " << peer.error().message);
      close(fd);
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      by_fd_[fd] = *peer;
    }
    grpc::AddInsecureChannelFromFd(server_, fd);  // gRPC owns the fd from here
  }
}

}  // namespace nvmeadapt::api
