// SPDX-License-Identifier: Apache-2.0
// The decision pipeline: the engine behind the node gate (agent/engine/node_gate.h). Every engine input of the
// loop goes in here (a window, a timer look, a policy or override, the node's facts) and comes out as the
// decisions to carry out, in order, each already seen by the node layer; and the one way the engine and the
// node layer follow a queue's real mode after a lever's result. Pure but for the node's facts it reads when
// due; on the loop thread, like the engine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/config/node_config.h"
#include "agent/daemon/agent_listener.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/node_decider.h"
#include "agent/daemon/payoff_listener.h"
#include "agent/engine/engine.h"
#include "agent/engine/node_gate.h"

namespace nvmeadapt::daemon {

class DecisionPipeline {
 public:
  // `listeners` hear of the node layer's inputs (the trace records them for replay) and of the engine
  // following a lever.
  DecisionPipeline(const config::NodeLayerConfig& node, std::string node_facts_root, const AgentListeners& listeners);

  const engine::Engine& engine() const { return engine_; }
  engine::QueueView View(engine::QueueHandle queue) const { return engine_.View(queue); }
  const NodeDecider& node() const { return node_; }

  // A queue joins the engine; its node description follows once the roster holds it (Describe).
  engine::AddedQueue AddQueue(const engine::QueueSetup& setup, engine::Nanos now);
  void RemoveQueue(engine::QueueHandle queue);
  // Tells the node layer of the queue as it is now (`decided`: the layer decides its tries).
  void Describe(const ManagedQueue& queue, bool decided);

  // The inputs. A window's decisions come in the order to carry them out: the runs an admitted try takes
  // the budget of, then the window's own (a try the node layer deferred among them: Decision::deferred).
  std::vector<engine::GatedDecision> OnWindow(const engine::WindowRecord& record);
  std::optional<engine::Decision> OnTimer(engine::QueueHandle queue, engine::Nanos now,
                                          const engine::WindowProgress& progress);
  std::optional<engine::Decision> SetPolicy(engine::QueueHandle queue, const engine::Policy& policy, engine::Nanos now);
  std::optional<engine::Decision> SetOverride(engine::QueueHandle queue, std::optional<engine::Override> override_mode,
                                              engine::Nanos now);
  // A decision of the engine not made here (a new queue's first): the node layer follows it.
  const engine::Decision& Follow(const engine::Decision& decision);

  // When the node's facts are due: every queue described anew, the facts read, and the runs they end.
  std::vector<engine::GatedDecision> RunNode(const std::vector<ManagedQueue*>& queues, const PayoffListener& payoff,
                                             engine::Nanos now);
  engine::Nanos NextNodeFacts() const { return node_.NextFacts(); }
  void ConfigureNode(const config::NodeLayerConfig& node);
  // Tells the listeners the node layer's settings (the trace's first node line).
  void AnnounceNode() const;

  // The queue is really in `actual` (a lever refused, returned late, or a retry got there): the engine
  // follows, the node layer follows, and the listeners hear the engine's decision.
  void FollowRealMode(ManagedQueue& queue, ReapMode actual, engine::Nanos now);

 private:
  // Counts what the gate deferred and ended, as the node layer's metrics show them.
  std::vector<engine::GatedDecision> Counted(std::vector<engine::GatedDecision> decisions);

  const AgentListeners& listeners_;
  engine::Engine engine_;
  NodeDecider node_;
};

}  // namespace nvmeadapt::daemon
