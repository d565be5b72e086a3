// SPDX-License-Identifier: Apache-2.0
// The AgentService handlers: authorize, validate the request's shape, call AgentControl, map the result.
// One instance per listener (its transport decides how callers are trusted); they share a ServiceCore.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>

#include "agent/api/agent_control.h"
#include "agent/api/api_config.h"
#include "agent/api/auth.h"
#include "agent/api/request_observer.h"
#include "agent/api/unix_peers.h"
#include "nvmeadapt/v1/agent.grpc.pb.h"

namespace nvmeadapt::api {

// Logs a refused call at most once a second (with how many were not logged), so that a caller hammering
// the TCP port cannot flood the log.
void LogRefusal(std::string_view method, std::string_view peer, std::string_view reason);

// What the services of every listener share: the agent, the stream bound and the open subscriptions.
class ServiceCore {
 public:
  ServiceCore(AgentControl& agent, RequestObserver* observer, const ApiSettings& settings)
      : agent_(agent), observer_(observer), settings_(settings) {}

  AgentControl& agent() { return agent_; }
  RequestObserver* observer() { return observer_; }
  const ApiSettings& settings() const { return settings_; }

  // A WatchEvents slot, or false past max_watch_streams. Anonymous callers (READ_ACCESS_OPEN) share a
  // quarter of them, so they cannot take the slots of authenticated ones.
  bool AcquireStream(bool anonymous);
  void ReleaseStream(bool anonymous);
  size_t anonymous_stream_limit() const { return std::max<size_t>(1, settings_.max_watch_streams / 4); }
  size_t open_streams() const { return open_streams_.load(); }

  void Track(const std::shared_ptr<Subscription>& subscription);
  void Forget(const std::shared_ptr<Subscription>& subscription);
  // Ends every stream now and refuses new ones.
  void BeginShutdown();
  bool shutting_down() const { return shutting_down_.load(); }

 private:
  AgentControl& agent_;
  RequestObserver* observer_;
  const ApiSettings settings_;
  std::atomic<size_t> open_streams_{0};
  std::atomic<size_t> open_anonymous_streams_{0};
  std::atomic<bool> shutting_down_{false};
  std::mutex mutex_;
  std::set<std::shared_ptr<Subscription>> subscriptions_;
};

class AgentServiceImpl final : public v1::AgentService::Service {
 public:
  // `peers` (Unix socket only, may be null) tells who each connection is.
  AgentServiceImpl(ServiceCore& core, Transport transport, std::shared_ptr<const Authorizer> authorizer,
                   const UnixPeers* peers)
      : core_(core), transport_(transport), authorizer_(std::move(authorizer)), peers_(peers) {}

  grpc::Status GetStatus(grpc::ServerContext* context, const v1::GetStatusRequest* request,
                         v1::GetStatusResponse* response) override;
  grpc::Status ListQueues(grpc::ServerContext* context, const v1::ListQueuesRequest* request,
                          v1::ListQueuesResponse* response) override;
  grpc::Status GetPolicy(grpc::ServerContext* context, const v1::GetPolicyRequest* request,
                         v1::GetPolicyResponse* response) override;
  grpc::Status SetPolicy(grpc::ServerContext* context, const v1::SetPolicyRequest* request,
                         v1::SetPolicyResponse* response) override;
  grpc::Status SetQueueMode(grpc::ServerContext* context, const v1::SetQueueModeRequest* request,
                            v1::SetQueueModeResponse* response) override;
  grpc::Status SetPause(grpc::ServerContext* context, const v1::SetPauseRequest* request,
                        v1::SetPauseResponse* response) override;
  grpc::Status WatchEvents(grpc::ServerContext* context, const v1::WatchEventsRequest* request,
                           grpc::ServerWriter<v1::Event>* writer) override;
  grpc::Status ExplainPolicy(grpc::ServerContext* context, const v1::ExplainPolicyRequest* request,
                             v1::ExplainPolicyResponse* response) override;

 private:
  // Times the call, authorizes it, runs `body(identity)` (exceptions become INTERNAL), reports to the
  // observer and writes the audit line of a mutating call, naming the peer.
  template <class Body>
  grpc::Status Serve(std::string_view method, grpc::ServerContext* context, Access access,
                     const google::protobuf::Message* request, Body&& body);
  grpc::Status StreamEvents(grpc::ServerContext* context, const v1::WatchEventsRequest& request,
                            grpc::ServerWriter<v1::Event>* writer, bool anonymous);

  ServiceCore& core_;
  const Transport transport_;
  const std::shared_ptr<const Authorizer> authorizer_;
  const UnixPeers* peers_;
};

}  // namespace nvmeadapt::api
