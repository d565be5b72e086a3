// SPDX-License-Identifier: Apache-2.0
// What the agent's loop tells those who follow it. Metrics, the event stream, the window trace and the
// decision log are listeners on one list (agent_listeners.h): the loop says once what happened, each
// listener turns it into its own record. All calls come on the loop thread, in the order things happen.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/collect/collector.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/switch_timeline.h"
#include "agent/engine/engine.h"
#include "agent/engine/node.h"
#include "agent/engine/types.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

class AgentListener {
 public:
  virtual ~AgentListener() = default;

  // The queue joined the loop with `setup` (its first policy and modes); it leaves for `why`.
  virtual void QueueAdded(const ManagedQueue&, const engine::QueueSetup& /*setup*/) {}
  virtual void QueueRemoved(const ManagedQueue&, std::string_view /*why*/) {}
  // Its fabrics layer (desc.layer) changed; the queue is kept.
  virtual void QueueRelayered(const ManagedQueue&) {}
  // Inputs of the engine: a window of the queue's current generation, a timer look at the window in flight.
  virtual void Window(const ManagedQueue&, const engine::WindowRecord&) {}
  virtual void Timer(const ManagedQueue&, engine::Nanos /*now*/, const engine::WindowProgress&) {}
  // The queue's effective policy changed; an operator set or cleared its override (`message` says which).
  virtual void PolicyChanged(const ManagedQueue&, engine::Nanos /*now*/, const engine::Policy&) {}
  virtual void OverrideSet(const ManagedQueue&, engine::Nanos /*now*/, const std::optional<engine::Override>&,
                           const std::string& /*message*/) {}
  // A policy level was set over the API (no one queue: `message` names the scope and the change).
  virtual void PolicySet(const std::string& /*message*/) {}

  // The engine decided (as it decided, before any switch); the decision is done once its switch ended,
  // `notable` unless it is one of the window-by-window outcomes that change nothing.
  virtual void Decided(const ManagedQueue&, const engine::Decision&) {}
  virtual void DecisionDone(const ManagedQueue&, const engine::Decision&, const v1::Decision& /*proto*/,
                            bool /*notable*/) {}

  // The node layer deferred the try `decision` asked for (Decision::deferred: nothing applied, the queue
  // measures on); `proto` is the decision as the stream shows it, with its node_reason.
  virtual void NodeDeferred(const ManagedQueue&, const engine::Decision& /*decision*/, const v1::Decision& /*proto*/) {}
  // The node layer's inputs, as it was told them: its settings, a queue's description, the node's facts.
  virtual void NodeSettingsSet(const engine::NodeSettings&) {}
  virtual void NodeQueueDescribed(const ManagedQueue&, const engine::NodeQueue&) {}
  virtual void NodeFactsRead(const engine::NodeFacts&) {}

  // A lever applied the queue's switch; the switch's timeline closed with the engine's first verdict.
  virtual void SwitchApplied(const ManagedQueue&, engine::Reason /*why*/, const SwitchTimeline&) {}
  virtual void SwitchClosed(const ManagedQueue&, const SwitchTimeline&) {}
  // A switch failed (`message`: the queue's degraded reason, naming the lever).
  virtual void LeverFailed(const ManagedQueue&, const Error&, const std::string& /*message*/) {}
  // Trouble of the queue that is no failed switch: a refused BPF control, a lever returning after its timeout.
  virtual void QueueTrouble(const ManagedQueue&, const std::string& /*message*/) {}
  // The engine followed a lever's result (the queue's real mode `actual`) with `followed`.
  virtual void LeverFollowed(const ManagedQueue&, engine::Nanos /*now*/, ReapMode /*actual*/,
                             const engine::Decision& /*followed*/) {}

  // The queue's counters were read (or its mode changed); the collector's own statistics may be read now
  // (a listener that wants them asks: reading them costs a syscall per BPF program).
  virtual void Counters(const ManagedQueue&) {}
  virtual void CollectorStats(const collect::Collector&) {}
};

// The fan-out: listeners.Tell(&AgentListener::Window, queue, record) tells each listener, in the order
// they were added.
class AgentListeners {
 public:
  void Add(AgentListener& listener) { listeners_.push_back(&listener); }

  template <class... Params, class... Args>
  void Tell(void (AgentListener::*hear)(Params...), const Args&... args) const {
    for (AgentListener* listener : listeners_) (listener->*hear)(args...);
  }

 private:
  std::vector<AgentListener*> listeners_;
};

}  // namespace nvmeadapt::daemon
