// SPDX-License-Identifier: Apache-2.0
// The switch protocol's loop side (DESIGN.md section 3, when a try's clock starts): it carries each decision
// to its queue and owns the switch fields of a managed queue (generation, mode_since, the open switch, the
// retry, the degraded mark) and its BPF control. The mode switcher's worker plans and journals; the loop
// publishes the pending switch to the BPF side; the worker calls the lever; the loop learns when the mode
// took effect: the driver's own mode probe where it has one (the BPF side restarted the window at that
// instant), else the lever's return. The loop never waits for a lever. A switch that fails leaves the queue
// in its mode, degraded, the engine following the real mode, and a retry planned for a mode the agent itself
// wants (switch_recovery.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "agent/collect/collector.h"
#include "agent/daemon/agent_listener.h"
#include "agent/daemon/decision_pipeline.h"
#include "agent/state/journal.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/mode_switcher.h"
#include "agent/daemon/ports.h"
#include "agent/daemon/queue_log.h"
#include "agent/daemon/switch_recovery.h"
#include "agent/engine/node_gate.h"

namespace nvmeadapt::daemon {

class SwitchProtocol {
 public:
  // What the protocol works on and with. `post` runs a switch's step on the loop thread.
  struct Parts {
    ManagedQueues& queues;
    DecisionPipeline& pipeline;
    collect::Collector& collector;
    const AgentListeners& listeners;
    QueueLog& log;  // a queue's state changes and errors, rate-limited
  };
  SwitchProtocol(Parts parts, Levers& levers, state::Journal& journal, SwitchOptions options, ModeSwitcher::PostToLoop post);

  // A decision of the engine to its queue: its switch (a decision is done once its switch ended), or the
  // control it leaves the BPF side; then the queue's last decision, the log and the listeners. A try the node
  // layer deferred changes nothing but the record.
  // Runs on the loop when a switch ended (inline before Switch returns when no loop runs), with its queue
  // unless the queue left meanwhile: OK when the mode was applied, else the lever's error.
  using SwitchThen = std::function<void(ManagedQueue& queue, const Status& outcome)>;
  // `ended`, when given, hears how the decision's switch ended (SetPolicy's verdict: policy_change.cc).
  void Carry(ManagedQueue& queue, const engine::Decision& decision,
             std::optional<engine::NodeReason> node_ended = std::nullopt, SwitchThen ended = {});
  // Each under its queue (a run the node layer ended may be another queue's), in order.
  void Carry(const std::vector<engine::GatedDecision>& decisions);

  // Retries, once their backoff is over, the modes the agent itself wants that a lever refused.
  void RetryLevers(engine::Nanos now);
  // The queue's control as it is now, to the BPF side.
  void PushControl(ManagedQueue& queue);
  // The queue leaves: its open switch closes unjudged, and whoever waits for its switches is told.
  void Forget(ManagedQueue& queue);
  // GetStatus's levers (switch_recovery.h).
  void DescribeLevers(v1::GetStatusResponse& status) { recovery_.DescribeLevers(queues_.All(), status); }

  ModeSwitcher& switcher() { return switcher_; }

 private:
  struct SwitchInFlight;

  // `evidence`: the window end or timer tick the decision rests on (for the switch timeline).
  void Switch(ManagedQueue& queue, ReapMode mode, engine::Reason why, engine::Nanos evidence, SwitchThen then);
  ManagedQueue* QueueOf(const SwitchInFlight& sw);  // nullptr when its queue left
  bool Publish(SwitchInFlight& sw, engine::Nanos journaled);
  void End(SwitchInFlight& sw, const SwitchOutcome& outcome);
  void Late(SwitchInFlight& sw, const SwitchOutcome& outcome);
  // The queue keeps its mode: degraded and counted (recovery_), told, the engine following the real mode, a
  // retry planned.
  void Fail(ManagedQueue& queue, ReapMode mode, engine::Reason why, const Error& error);
  // No switch of the queue is in flight any more: whoever waits for that is told.
  void Settled(ManagedQueue& queue);
  // After the lever returned: when the mode took effect (the driver's probe, or the lever's return).
  void TakeEffect(ManagedQueue& queue, SwitchTimeline& timeline);
  // Ends the queue's open switch timeline with the first decision on its new mode (or none).
  void CloseSwitch(ManagedQueue& queue, std::optional<engine::Decision> verdict);
  // The mode the agent itself must bring the queue to and retry (a forced mode, the safe mode of off or
  // shadow, interrupt mode for a measuring queue left polling); nullopt when the engine decides.
  std::optional<ReapMode> ModeWantedByAgent(const ManagedQueue& queue) const;
  // Marks the queue degraded (and says so once) when the collector refuses the control.
  void SendControl(ManagedQueue& queue, const collect::QueueControl& control);
  // The rest of a decision once its switch (if any) ended: last decision, log, listeners.
  void Record(ManagedQueue& queue, const engine::Decision& decision, v1::Decision proto, uint64_t seq);
  void Defer(ManagedQueue& queue, const engine::Decision& decision);
  v1::Decision ProtoOf(const engine::Decision& decision) const;

  ManagedQueues& queues_;
  DecisionPipeline& pipeline_;
  collect::Collector& collector_;
  const AgentListeners& listeners_;
  QueueLog& log_;
  const std::function<engine::Nanos()> monotonic_;
  const std::function<int64_t()> wall_;
  SwitchRecovery recovery_;
  ModeSwitcher switcher_;  // last: its workers are joined before anything they use goes
};

}  // namespace nvmeadapt::daemon
