// SPDX-License-Identifier: Apache-2.0
// What the gRPC layer needs from the agent. The daemon implements it; API tests fake it. The API layer
// owns transport, authentication, request-shape validation and status codes; the agent owns semantics
// (policy validation with field paths, unknown queues and controllers).
//
// Every method is called from gRPC threads, several at once: implementations must be thread-safe. A
// request reaches them only after it passed the api::Validate*Request checks (agent/api/validate.h).
// Errors map to gRPC codes in one place (agent/api/status_map.h); their messages reach the operator
// as they are, so they name the object ("queue nvme0:q9: no such queue").
#pragma once

#include <chrono>
#include <memory>

#include "agent/api/event_bus.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::api {

class AgentControl {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // The longest a SetPolicy takes when its caller set no deadline (or a later one).
  static constexpr std::chrono::seconds kSetPolicyLongest{30};

  virtual ~AgentControl() = default;

  virtual v1::GetStatusResponse GetStatus() = 0;
  // kNotFound when the controller filter names no known controller.
  virtual Result<v1::ListQueuesResponse> ListQueues(const v1::ListQueuesRequest& request) = 0;
  virtual v1::GetPolicyResponse GetPolicy() = 0;
  // kInvalidArgument naming the field ("policy.pace_slack_ns: ..."), kNotFound for an unknown controller
  // or queue. All or nothing, answered by `deadline`: an OK means the change is persisted and in force, and
  // no switch it started was refused (one still in its lever at the deadline goes on); an error means the
  // policy in force, policy.json and the queues' modes are as they were (kRefused: a lever refused a queue
  // its new mode; kUnavailable: the state disk or the loop had not done its part by the deadline).
  virtual Result<v1::SetPolicyResponse> SetPolicy(const v1::SetPolicyRequest& request, Deadline deadline) = 0;
  Result<v1::SetPolicyResponse> SetPolicy(const v1::SetPolicyRequest& request) {
    return SetPolicy(request, std::chrono::steady_clock::now() + kSetPolicyLongest);
  }
  // kNotFound for an unknown queue, kFailedPrecondition for a queue that is not eligible.
  virtual Result<v1::SetQueueModeResponse> SetQueueMode(const v1::SetQueueModeRequest& request) = 0;
  // Pauses the node or resumes it: persisted before the answer, then in force on every queue. kUnavailable when
  // the state disk or the loop had not done its part in time (then nothing changed).
  virtual Result<v1::SetPauseResponse> SetPause(const v1::SetPauseRequest& request) = 0;
  // The queue's effective policy field by field, with the entry and source of each. kNotFound for an unknown
  // queue.
  virtual Result<v1::ExplainPolicyResponse> ExplainPolicy(const v1::ExplainPolicyRequest& request) = 0;
  // A subscription to the agent's events; `capacity` bounds its queue (oldest dropped first).
  virtual std::shared_ptr<Subscription> WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) = 0;
};

}  // namespace nvmeadapt::api
