// SPDX-License-Identifier: Apache-2.0
// The agent as the gRPC service sees it (api::AgentControl): what callers see and change. Every call runs on
// the loop thread (LoopCommands::OnLoop); SetPolicy's durable writes run on the policy writer's thread
// between two such calls. SetQueueMode answers once the switches it started ended, or after rpc_wait with the
// queue as it is then; SetPolicy once its switches ended or at its deadline (policy_change.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/api/agent_control.h"
#include "agent/api/event_bus.h"
#include "agent/collect/collector.h"
#include "agent/daemon/decision_pipeline.h"
#include "agent/state/journal.h"
#include "agent/daemon/loop_commands.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/payoff_listener.h"
#include "agent/daemon/policy_applier.h"
#include "agent/daemon/switch_protocol.h"

namespace nvmeadapt::daemon {

class PolicyChange;

// What the loop knows of itself that GetStatus shows; the loop's, read on the loop.
struct LoopHealth {
  engine::Nanos started_at = 0;
  std::string collector_error;  // the collector's last error, until it polls again
  std::string journal_warning;  // a corrupt journal set aside at start, until the next start
  uint64_t queues_over_cap = 0;
};

class ApiAdapter final : public api::AgentControl {
 public:
  struct Parts {
    LoopCommands& loop;
    ManagedQueues& queues;
    DecisionPipeline& pipeline;
    SwitchProtocol& switches;
    PolicyApplier& policy;
    const state::Journal& journal;
    collect::Collector& collector;
    api::EventBus& bus;
    const PayoffListener& payoff;
    const AgentListeners& listeners;
    const LoopHealth& health;
  };
  struct Settings {
    std::string version;
    engine::Nanos rpc_wait = 0;
    std::function<engine::Nanos()> monotonic;
    std::function<int64_t()> wall;
  };
  ApiAdapter(Parts parts, Settings settings) : parts_(parts), settings_(std::move(settings)) {}

  v1::GetStatusResponse GetStatus() override;
  Result<v1::ListQueuesResponse> ListQueues(const v1::ListQueuesRequest& request) override;
  v1::GetPolicyResponse GetPolicy() override;
  using api::AgentControl::SetPolicy;
  // policy_change.cc: the change as one, all or nothing, within `deadline` (issue 45, item 10).
  Result<v1::SetPolicyResponse> SetPolicy(const v1::SetPolicyRequest& request, Deadline deadline) override;
  Result<v1::SetQueueModeResponse> SetQueueMode(const v1::SetQueueModeRequest& request) override;
  // pause_change.cc: persisted, then in force on the loop; all or nothing within rpc_wait.
  Result<v1::SetPauseResponse> SetPause(const v1::SetPauseRequest& request) override;
  std::shared_ptr<api::Subscription> WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) override;
  Result<v1::ExplainPolicyResponse> ExplainPolicy(const v1::ExplainPolicyRequest& request) override;

 private:
  friend class PolicyChange;  // SetPolicy's steps (policy_change.cc)
  v1::GetStatusResponse StatusOnLoop();
  v1::QueueInfo Describe(const ManagedQueue& queue) const;
  // A queue of the controller named `controller` by its name or stable ID; nullptr when none is managed.
  ManagedQueue* AnyQueueOf(const std::string& controller);
  // Registers `waiter` with every queue whose switch is in flight (on the loop); false when there is none.
  bool WaitForSwitches(const std::shared_ptr<SwitchesSettled>& waiter);
  int64_t WallMinusMonotonic() const { return settings_.wall() - settings_.monotonic(); }

  Parts parts_;
  Settings settings_;
};

}  // namespace nvmeadapt::daemon
