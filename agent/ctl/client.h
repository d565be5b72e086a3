// SPDX-License-Identifier: Apache-2.0
// How nvme-adaptctl (and the API tests and load driver) reach an agent: a Unix socket path, or host:port
// over TLS (with a client certificate and/or a bearer token), or plain TCP on loopback when asked by name.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::ctl {

inline constexpr const char* kDefaultAddress = "/run/nvme-adapt/agent.sock";

struct ClientOptions {
  std::string address = kDefaultAddress;  // "/path", "unix:/path" or "host:port"
  std::string ca_file;                    // PEM roots to verify the agent; empty: the system's
  std::string cert_file;                  // client certificate (PEM), with key_file
  std::string key_file;
  std::string token_file;                 // bearer token, sent as "authorization: Bearer ..."
  std::string server_name;                // expected name in the agent's certificate, if not the host
  bool insecure_loopback_tcp = false;     // plain TCP, loopback addresses only
  std::chrono::milliseconds timeout{10'000};
  // Extra gRPC channel arguments (e.g. the load test's small receive window for its stalled streams).
  std::vector<std::pair<std::string, int>> channel_arguments;
};

class AgentClient {
 public:
  // Checks the options and reads the files; no connection is made before the first call.
  static Result<AgentClient> Create(const ClientOptions& options);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // A context with the token (if any) and, unless `streaming`, the call deadline.
  std::unique_ptr<grpc::ClientContext> NewContext(bool streaming = false) const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::optional<std::string> token_;
  std::chrono::milliseconds timeout_{0};
};

}  // namespace nvmeadapt::ctl
