// SPDX-License-Identifier: Apache-2.0
// The API's Unix socket connections, accepted here rather than by gRPC so that each one's peer is known:
// the kernel's SO_PEERCRED (uid, pid) and SO_PEERGROUPS decide the caller's role, and audit lines name them.
// Each accepted connection is handed to the gRPC server as a channel of its own, whose calls report the peer
// "fd:N"; PeerOf finds the credentials recorded for it.
#pragma once

#include <grpcpp/server.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "agent/api/auth.h"
#include "common/result.h"

namespace nvmeadapt::api {

// Connections the Unix socket holds at once, in all and per peer uid. Each is a file descriptor of the
// daemon, which shares its limit with discovery, the BPF maps and the levers: a flood of idle connections
// must meet a clear refusal, not make every other open() fail. A connection over a cap is still handed to
// gRPC, so that its calls get RESOURCE_EXHAUSTED with the reason, and shut down after kRefusedLinger; at
// most kMaxRefusedConnections of those at once, past which a connection is closed at once.
inline constexpr size_t kMaxUnixConnections = 256;
inline constexpr size_t kMaxUnixConnectionsPerPeer = 64;
inline constexpr size_t kMaxRefusedConnections = 32;
inline constexpr std::chrono::milliseconds kRefusedLinger{2000};

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
  struct Connection {
    UnixPeer peer;
    ino_t socket = 0;  // the socket's inode: once gRPC has closed the fd, its number may name another file
    std::chrono::steady_clock::time_point shut_at{};  // refused ones: when they are shut down
  };
  void Accept();
  // A connection over the caps: handed over to be refused call by call, or closed when too many are.
  void Refuse(int fd, UnixPeer peer, ino_t socket, const std::string& refusal);
  // Shuts down the refused connections past their time; the poll timeout until the next one (-1: none).
  int ShutRefused();
  // Why `peer` may not have one more connection, or "" when it may. Forgets connections gRPC closed.
  std::string OverCap(const UnixPeer& peer);

  const std::optional<gid_t> admin_gid_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<int, Connection> by_fd_;  // at most kMaxUnixConnections
  std::map<int, Connection> refused_by_fd_;  // at most kMaxRefusedConnections
  size_t refused_ = 0;               // connections refused since the last log line about it
  std::chrono::steady_clock::time_point refusal_logged_{};
};

}  // namespace nvmeadapt::api
