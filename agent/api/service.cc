// SPDX-License-Identifier: Apache-2.0
#include "agent/api/service.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "agent/api/status_map.h"
#include "agent/api/validate.h"
#include "common/clock.h"
#include "common/log.h"

namespace nvmeadapt::api {
namespace {

// How often a stream loop looks whether its client went away while no event arrives.
constexpr std::chrono::milliseconds kStreamPollInterval(100);
constexpr size_t kAuditRequestChars = 240;

// Refusals are logged at most once a second, with how many were not, so that a caller hammering the
// TCP port cannot flood the log.
class RefusalLog {
 public:
  void Note(std::string_view method, std::string_view peer, std::string_view reason) {
    const int64_t now = MonotonicNanos();
    int64_t last = last_ns_.load();
    if (now - last < 1'000'000'000 || !last_ns_.compare_exchange_strong(last, now)) {
      suppressed_.fetch_add(1);
      return;
    }
    const uint64_t suppressed = suppressed_.exchange(0);
    NA_WARN("api: refused " << method << " from " << peer << ": " << reason
                            << (suppressed ? " (" + std::to_string(suppressed) + " more refused before)" : ""));
  }

 private:
  std::atomic<int64_t> last_ns_{-2'000'000'000};
  std::atomic<uint64_t> suppressed_{0};
};

RefusalLog& Refusals() {
  static RefusalLog log;
  return log;
}

}  // namespace

void LogRefusal(std::string_view method, std::string_view peer, std::string_view reason) {
  Refusals().Note(method, peer, reason);
}

namespace {

// The deadline SetPolicy works to: the client's (at most kSetPolicyLongest), less a tenth of the time left (at
// most 250 ms) for the answer's way back, so that the client hears how the change ended rather than its own
// DEADLINE_EXCEEDED while the change is taken back.
AgentControl::Deadline DeadlineOf(const grpc::ServerContext& context) {
  using std::chrono::nanoseconds;
  const auto client_left = context.deadline() - std::chrono::system_clock::now();
  nanoseconds left = client_left > AgentControl::kSetPolicyLongest
                         ? nanoseconds(AgentControl::kSetPolicyLongest)
                         : std::chrono::duration_cast<nanoseconds>(client_left);
  left -= std::min<nanoseconds>(left / 10, std::chrono::milliseconds(250));
  return std::chrono::steady_clock::now() + std::max(left, nanoseconds(0));
}

std::string Abbreviated(const google::protobuf::Message* request) {
  std::string text = request->ShortDebugString();
  if (text.size() > kAuditRequestChars) text = text.substr(0, kAuditRequestChars) + "...";
  return text;
}

}  // namespace

bool ServiceCore::AcquireStream(bool anonymous) {
  if (anonymous) {
    size_t open = open_anonymous_streams_.load();
    do {
      if (open >= anonymous_stream_limit()) return false;
    } while (!open_anonymous_streams_.compare_exchange_weak(open, open + 1));
  }
  size_t open = open_streams_.load();
  do {
    if (open >= settings_.max_watch_streams) {
      if (anonymous) open_anonymous_streams_.fetch_sub(1);
      return false;
    }
  } while (!open_streams_.compare_exchange_weak(open, open + 1));
  return true;
}

void ServiceCore::ReleaseStream(bool anonymous) {
  open_streams_.fetch_sub(1);
  if (anonymous) open_anonymous_streams_.fetch_sub(1);
}

void ServiceCore::Track(const std::shared_ptr<Subscription>& subscription) {
  std::lock_guard lock(mutex_);
  subscriptions_.insert(subscription);
  // A stream that started while shutdown began must not miss the cancellation.
  if (shutting_down_.load()) subscription->Cancel();
}

void ServiceCore::Forget(const std::shared_ptr<Subscription>& subscription) {
  std::lock_guard lock(mutex_);
  subscriptions_.erase(subscription);
}

void ServiceCore::BeginShutdown() {
  std::lock_guard lock(mutex_);
  shutting_down_.store(true);
  for (const auto& subscription : subscriptions_) subscription->Cancel();
}

template <class Body>
grpc::Status AgentServiceImpl::Serve(std::string_view method, grpc::ServerContext* context, Access access,
                                     const google::protobuf::Message* request, Body&& body) {
  const int64_t start = MonotonicNanos();
  std::string identity;
  const std::optional<UnixPeer> unix_peer = peers_ ? peers_->PeerOf(context->peer()) : std::nullopt;
  grpc::Status status = authorizer_->Check(*context, access, unix_peer, &identity);
  if (!status.ok()) {
    Refusals().Note(method, identity.empty() ? context->peer() : identity + " (" + context->peer() + ")",
                    status.error_message());
  } else {
    try {
      status = body(identity);
    } catch (const std::exception& e) {
      NA_ERROR("api: " << method << " failed with an exception: " << e.what());
      status = grpc::Status(grpc::StatusCode::INTERNAL, std::string(method) + ": internal error");
    }
    if (access == Access::kMutate) {
      NA_INFO("api: " << method << " by " << identity << " (" << context->peer() << ") {" << Abbreviated(request)
                      << "}: " << StatusCodeName(status.error_code())
                      << (status.ok() ? "" : ": " + status.error_message()));
    }
  }
  if (RequestObserver* observer = core_.observer()) {
    observer->OnRequest(RequestRecord{method, status.error_code(), StatusCodeName(status.error_code()),
                                      transport_ == Transport::kUnixSocket ? "unix" : "tcp",
                                      MonotonicNanos() - start});
  }
  return status;
}

grpc::Status AgentServiceImpl::GetStatus(grpc::ServerContext* context, const v1::GetStatusRequest* request,
                                         v1::GetStatusResponse* response) {
  return Serve("GetStatus", context, Access::kRead, request, [&](const std::string&) {
    *response = core_.agent().GetStatus();
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::ListQueues(grpc::ServerContext* context, const v1::ListQueuesRequest* request,
                                          v1::ListQueuesResponse* response) {
  return Serve("ListQueues", context, Access::kRead, request, [&](const std::string&) {
    if (Status valid = ValidateListQueuesRequest(*request); !valid) return ToGrpcStatus(valid.error());
    auto result = core_.agent().ListQueues(*request);
    if (!result) return ToGrpcStatus(result.error());
    *response = std::move(result).value();
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::GetPolicy(grpc::ServerContext* context, const v1::GetPolicyRequest* request,
                                         v1::GetPolicyResponse* response) {
  return Serve("GetPolicy", context, Access::kRead, request, [&](const std::string&) {
    *response = core_.agent().GetPolicy();
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::ExplainPolicy(grpc::ServerContext* context, const v1::ExplainPolicyRequest* request,
                                             v1::ExplainPolicyResponse* response) {
  return Serve("ExplainPolicy", context, Access::kRead, request, [&](const std::string&) {
    if (Status valid = ValidateExplainPolicyRequest(*request); !valid) return ToGrpcStatus(valid.error());
    auto result = core_.agent().ExplainPolicy(*request);
    if (!result) return ToGrpcStatus(result.error());
    *response = std::move(result).value();
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::SetPolicy(grpc::ServerContext* context, const v1::SetPolicyRequest* request,
                                         v1::SetPolicyResponse* response) {
  return Serve("SetPolicy", context, Access::kMutate, request, [&](const std::string& identity) {
    if (Status valid = ValidateSetPolicyRequest(*request); !valid) return ToGrpcStatus(valid.error());
    v1::SetPolicyRequest stamped = *request;  // who set it, for GetPolicy's origin; never the client's word
    stamped.set_caller(identity + " (" + context->peer() + ")");
    auto result = core_.agent().SetPolicy(stamped, DeadlineOf(*context));
    if (!result) return ToGrpcStatus(result.error());
    *response = std::move(result).value();
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::SetQueueMode(grpc::ServerContext* context, const v1::SetQueueModeRequest* request,
                                            v1::SetQueueModeResponse* response) {
  return Serve("SetQueueMode", context, Access::kMutate, request, [&](const std::string&) {
    if (Status valid = ValidateSetQueueModeRequest(*request); !valid) return ToGrpcStatus(valid.error());
    auto result = core_.agent().SetQueueMode(*request);
    if (!result) return ToGrpcStatus(result.error());
    *response = std::move(result).value();
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::SetPause(grpc::ServerContext* context, const v1::SetPauseRequest* request,
                                        v1::SetPauseResponse* response) {
  return Serve("SetPause", context, Access::kMutate, request, [&](const std::string& identity) {
    if (Status valid = ValidateSetPauseRequest(*request); !valid) return ToGrpcStatus(valid.error());
    v1::SetPauseRequest stamped = *request;  // who paused, for GetStatus: never the client's word
    stamped.set_caller(identity + " (" + context->peer() + ")");
    auto result = core_.agent().SetPause(stamped);
    if (!result) return ToGrpcStatus(result.error());
    *response = std::move(result).value();
    return grpc::Status::OK;
  });
}

grpc::Status AgentServiceImpl::WatchEvents(grpc::ServerContext* context, const v1::WatchEventsRequest* request,
                                           grpc::ServerWriter<v1::Event>* writer) {
  return Serve("WatchEvents", context, Access::kRead, request, [&](const std::string& identity) {
    return StreamEvents(context, *request, writer, identity == "anonymous");
  });
}

grpc::Status AgentServiceImpl::StreamEvents(grpc::ServerContext* context, const v1::WatchEventsRequest& request,
                                            grpc::ServerWriter<v1::Event>* writer, bool anonymous) {
  if (Status valid = ValidateWatchEventsRequest(request); !valid) return ToGrpcStatus(valid.error());
  if (core_.shutting_down()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is shutting down");
  if (!core_.AcquireStream(anonymous)) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        anonymous ? "too many anonymous WatchEvents streams (" +
                                        std::to_string(core_.anonymous_stream_limit()) +
                                        ", a quarter of api.max_watch_streams); authenticate for more"
                                  : "too many WatchEvents streams (api.max_watch_streams = " +
                                        std::to_string(core_.settings().max_watch_streams) + ")");
  }
  auto subscription = core_.agent().WatchEvents(request, core_.settings().watch_queue_events);
  if (!subscription) {
    core_.ReleaseStream(anonymous);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the agent offers no event stream now");
  }
  core_.Track(subscription);
  // The subscription exists before the client sees the stream open: whatever it does next is watched.
  writer->SendInitialMetadata();
  bool client_gone = false;
  while (!context->IsCancelled()) {
    auto event = subscription->Next(kStreamPollInterval);
    if (!event) {
      if (subscription->cancelled()) break;
      continue;
    }
    // Blocks while the client does not read; the agent's publisher never waits for it (the
    // subscription drops the oldest events and counts them in `missed`).
    if (!writer->Write(*event)) {
      client_gone = true;
      break;
    }
  }
  subscription->Cancel();
  core_.Forget(subscription);
  core_.ReleaseStream(anonymous);
  if (client_gone || context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  if (core_.shutting_down()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is shutting down");
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the agent ended the event stream");
}

}  // namespace nvmeadapt::api
