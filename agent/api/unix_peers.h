// The API's Unix socket connections, accepted here rather than by gRPC so that each one's peer is known:
// the kernel's SO_PEERCRED (uid, pid) and SO_PEERGROUPS decide the caller's role, and audit lines name them.
// Each accepted connection is handed to the gRPC server as a channel of its own, whose calls report the peer
// "fd:N"; PeerOf finds the credentials recorded for it.
#pragma once

#include <grpcpp/server.h>
#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "agent/api/auth.h"
#include "common/result.h"

namespace nvmeadapt::api {

class UnixPeers {
 public:
  // `admin_gid`: members are admin (with root and the agent's own user); nullopt: every peer is.
  explicit UnixPeers(std::optional<gid_t> admin_gid) : admin_gid_(admin_gid) {}
  ~UnixPeers();  // Stop()
  UnixPeers(const UnixPeers&) = delete;
  UnixPeers& operator=(const UnixPeers&) = delete;

  // Accepts on `listen_fd` (a listening Unix stream socket; taken over) and gives each connection to
  // `server`, which must outlive Stop().
  Status Start(int listen_fd, grpc::Server* server);
  // Stops accepting; connections already handed over stay with gRPC.
  void Stop();

  // The peer of a call whose ServerContext::peer() is `grpc_peer`; nullopt when unknown.
  std::optional<UnixPeer> PeerOf(std::string_view grpc_peer) const;
  // What the kernel says of the peer of a connected socket.
  Result<UnixPeer> Identify(int fd) const;

 private:
  void Accept();

  const std::optional<gid_t> admin_gid_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<int, UnixPeer> by_fd_;  // a closed connection's number is reused by the next: bounded by open fds
};

}  // namespace nvmeadapt::api
