// SPDX-License-Identifier: Apache-2.0
// A test double of the agent behind the API: two controllers with a few queues, the policy levels with
// the real validation (agent/config), operator overrides, and events on a real EventBus. Thread-safe,
// like the daemon's AgentControl. Used by the API tests and by the nvme-adapt-fake-agent server.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/api/agent_control.h"
#include "agent/api/event_bus.h"

namespace nvmeadapt::testing {

class FakeAgent final : public api::AgentControl {
 public:
  // With a state file, SetPolicy persists the policy there (atomically) before it answers.
  explicit FakeAgent(std::optional<std::string> state_file = std::nullopt);

  v1::GetStatusResponse GetStatus() override;
  Result<v1::ListQueuesResponse> ListQueues(const v1::ListQueuesRequest& request) override;
  v1::GetPolicyResponse GetPolicy() override;
  using api::AgentControl::SetPolicy;
  Result<v1::SetPolicyResponse> SetPolicy(const v1::SetPolicyRequest& request, Deadline deadline) override;
  Result<v1::SetQueueModeResponse> SetQueueMode(const v1::SetQueueModeRequest& request) override;
  // Keeps the pause (GetStatus shows it); no queue moves.
  Result<v1::SetPauseResponse> SetPause(const v1::SetPauseRequest& request) override;
  std::shared_ptr<api::Subscription> WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) override;
  // The policy's layers for the queue, its controller known by name only; every entry from the API.
  Result<v1::ExplainPolicyResponse> ExplainPolicy(const v1::ExplainPolicyRequest& request) override;

  // A decision event for the n-th queue (round robin), as the engine loop would publish it.
  void PublishDecision(uint64_t n);
  api::EventBus& bus() { return bus_; }
  v1::PolicySet policy() const;
  // The deadline the last SetPolicy was given (the API's, from its client's).
  Deadline last_set_policy_deadline() const;
  std::optional<v1::QueueInfo> queue(const std::string& controller, uint32_t queue) const;

 private:
  v1::QueueInfo* FindQueue(const std::string& controller, uint32_t queue);
  bool HasController(const std::string& controller) const;
  void Publish(v1::EventKind kind, const v1::QueueInfo* queue, std::string message);

  const std::optional<std::string> state_file_;
  const int64_t started_ns_;
  // Fixed at construction, read without the lock: the decision publisher must not wait for SetPolicy.
  std::vector<std::pair<v1::QueueId, v1::Source>> queue_ids_;
  mutable std::mutex mutex_;
  std::vector<v1::QueueInfo> queues_;
  v1::PolicySet policy_;
  std::optional<v1::Pause> pause_;
  Deadline last_deadline_{};
  api::EventBus bus_;
};

// "nvme0:q1", the CLI's way of naming a queue.
std::string QueueName(const std::string& controller, uint32_t queue);

}  // namespace nvmeadapt::testing
