// SPDX-License-Identifier: Apache-2.0
// The entry point the daemon calls: start the control plane on the configured listeners, stop it.
//
//   auto server = api::StartApiServer(config.api(), agent, &metrics);   // errors name the config field
//   ...
//   (*server)->Shutdown();   // ends streams at once, lets unary calls finish (1 s at most)
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "agent/api/agent_control.h"
#include "agent/api/request_observer.h"
#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::api {

class ApiServer {
 public:
  virtual ~ApiServer() = default;
  // Idempotent. Ends every WatchEvents stream, stops both listeners (calls in flight get up to one
  // second), removes the Unix socket. The destructor calls it.
  virtual void Shutdown() = 0;
  // The Unix socket's path, if there is one.
  virtual std::optional<std::string> unix_socket() const = 0;
  // The TCP port actually bound (useful with port 0), 0 without TCP.
  virtual int tcp_port() const = 0;
  virtual size_t open_streams() const = 0;
  // Reads the bearer token files again (SIGHUP); certificates are watched by themselves
  // (api.tls.reload_interval_seconds). A bad file is an error naming it, and the previous tokens stay.
  virtual Status Reload() = 0;
};

// `agent` and `observer` (may be null) must outlive the server.
Result<std::unique_ptr<ApiServer>> StartApiServer(const v1::ApiConfig& config, AgentControl& agent,
                                                  RequestObserver* observer);

}  // namespace nvmeadapt::api
