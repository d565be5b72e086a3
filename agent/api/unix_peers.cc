// SPDX-License-Identifier: Apache-2.0
#include "agent/api/unix_peers.h"

#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
  if (const auto it = by_fd_.find(fd); it != by_fd_.end()) return it->second.peer;
  if (const auto it = refused_by_fd_.find(fd); it != refused_by_fd_.end()) return it->second.peer;
  return std::nullopt;
}

void UnixPeers::Refuse(int fd, UnixPeer peer, ino_t socket, const std::string& refusal) {
  const auto now = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  ++refused_;
  if (now - refusal_logged_ >= std::chrono::seconds(10)) {
    NA_WARN("api: refused " << refused_ << " unix socket connection(s) in the last 10 s; latest from uid " << peer.uid
                            << " pid " << peer.pid << ": " << refusal);
    refused_ = 0;
    refusal_logged_ = now;
  }
  if (refused_by_fd_.size() >= kMaxRefusedConnections) {
    lock.unlock();
    close(fd);  // too many at once to tell each why
    return;
  }
  peer.admin = false;
  peer.refusal = refusal;
  refused_by_fd_[fd] = {peer, socket, now + kRefusedLinger};
  lock.unlock();
  grpc::AddInsecureChannelFromFd(server_, fd);
}

int UnixPeers::ShutRefused() {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  std::optional<std::chrono::steady_clock::time_point> next;
  for (auto it = refused_by_fd_.begin(); it != refused_by_fd_.end();) {
    if (it->second.shut_at > now) {
      next = next ? std::min(*next, it->second.shut_at) : it->second.shut_at;
      ++it;
      continue;
    }
    // gRPC owns the fd: shutting the socket down makes it see the end and close it; an fd it closed already,
    // or whose number now names another file, is left alone.
    struct stat st {};
    if (fstat(it->first, &st) == 0 && st.st_ino == it->second.socket) shutdown(it->first, SHUT_RDWR);
    it = refused_by_fd_.erase(it);
  }
  if (!next) return -1;
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count()) + 1;
}

std::string UnixPeers::OverCap(const UnixPeer& peer) {
  const auto count_of = [&] {
    return std::count_if(by_fd_.begin(), by_fd_.end(), [&](const auto& entry) { return entry.second.peer.uid == peer.uid; });
  };
  if (by_fd_.size() < kMaxUnixConnections && static_cast<size_t>(count_of()) < kMaxUnixConnectionsPerPeer) return "";
  // gRPC closes a connection's fd without telling: an fd that is closed, or now names another file, is gone.
  std::erase_if(by_fd_, [](const auto& entry) {
    struct stat st {};
    return fstat(entry.first, &st) != 0 || st.st_ino != entry.second.socket;
  });
  if (by_fd_.size() >= kMaxUnixConnections) {
    return "nvme-adaptd: too many API connections (" + std::to_string(kMaxUnixConnections) +
           " open on the unix socket); close idle ones and retry";
  }
  if (static_cast<size_t>(count_of()) >= kMaxUnixConnectionsPerPeer) {
    return "nvme-adaptd: too many API connections from uid " + std::to_string(peer.uid) + " (" +
           std::to_string(kMaxUnixConnectionsPerPeer) + " open); close idle ones and retry";
  }
  return "";
}


void UnixPeers::Accept() {
  pthread_setname_np(pthread_self(), "api-unix-accept");
  for (;;) {
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (poll(fds, 2, ShutRefused()) < 0) {
      if (errno == EINTR) continue;
      NA_ERROR("api: unix socket acceptor: poll: " << std::strerror(errno));
      return;
    }
    if (fds[0].revents) return;
    if (!fds[1].revents) continue;
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
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      NA_WARN("api: unix socket connection: fstat: " << std::strerror(errno));
      close(fd);
      continue;
    }
    std::unique_lock lock(mutex_);
    if (const std::string refusal = OverCap(*peer); !refusal.empty()) {
      lock.unlock();
      Refuse(fd, *peer, st.st_ino, refusal);
      continue;
    }
    by_fd_[fd] = {*peer, st.st_ino, {}};
    lock.unlock();
    grpc::AddInsecureChannelFromFd(server_, fd);  // gRPC owns the fd from here
  }
}

}  // namespace nvmeadapt::api
