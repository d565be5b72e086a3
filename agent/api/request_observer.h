// SPDX-License-Identifier: Apache-2.0
// A hook for counting API requests (the metrics module implements it): one call per finished
// AgentService request, including the refused and invalid ones.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string_view>

namespace nvmeadapt::api {

struct RequestRecord {
  std::string_view method;     // "GetStatus", "SetPolicy", ...
  grpc::StatusCode code;
  std::string_view code_name;  // "OK", "NOT_FOUND", ... (StatusCodeName)
  std::string_view transport;  // "unix" or "tcp"
  int64_t duration_ns;         // from arrival to the reply (to the stream's end for WatchEvents)
};

class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  // Called from gRPC threads, concurrently: must be thread-safe and must not block.
  virtual void OnRequest(const RequestRecord& record) = 0;
};

}  // namespace nvmeadapt::api
