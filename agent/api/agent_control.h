// What the gRPC layer needs from the agent. The daemon implements it; API tests fake it. The API layer
// owns transport, authentication, request-shape validation and status codes; the agent owns semantics
// (policy validation with field paths, unknown queues and controllers).
//
// Every method is called from gRPC threads, several at once: implementations must be thread-safe. A
// request reaches them only after it passed the api::Validate*Request checks (agent/api/validate.h).
// Errors map to gRPC codes in one place (agent/api/status_map.h); their messages reach the operator
// as they are, so they name the object ("queue nvme0:q9: no such queue").
#pragma once

#include <memory>

#include "agent/api/event_bus.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::api {

class AgentControl {
 public:
  virtual ~AgentControl() = default;

  virtual v1::GetStatusResponse GetStatus() = 0;
  // kNotFound when the controller filter names no known controller.
  virtual Result<v1::ListQueuesResponse> ListQueues(const v1::ListQueuesRequest& request) = 0;
  virtual v1::GetPolicyResponse GetPolicy() = 0;
  // kInvalidArgument naming the field ("policy.pace_slack_ns: ..."), kNotFound for an unknown controller
  // or queue. Applied to every affected queue atomically and persisted before it returns.
  virtual Result<v1::SetPolicyResponse> SetPolicy(const v1::SetPolicyRequest& request) = 0;
  // kNotFound for an unknown queue, kFailedPrecondition for a queue that is not eligible.
  virtual Result<v1::SetQueueModeResponse> SetQueueMode(const v1::SetQueueModeRequest& request) = 0;
  // The queue's effective policy field by field, with the entry and source of each. kNotFound for an unknown
  // queue.
  virtual Result<v1::ExplainPolicyResponse> ExplainPolicy(const v1::ExplainPolicyRequest& request) = 0;
  // A subscription to the agent's events; `capacity` bounds its queue (oldest dropped first).
  virtual std::shared_ptr<Subscription> WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) = 0;
};

}  // namespace nvmeadapt::api
