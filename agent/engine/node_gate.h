// SPDX-License-Identifier: Apache-2.0
// Where the engine's decisions meet the node layer (node.h): the engine decides each queue alone; the gate is
// the node layer's face to it. A window goes through the engine with the gate as its try admission, so a try
// the node layer defers is never committed (Decision::deferred: the queue stays measuring, no failure); every
// later decision of the queue tells the node layer how the try went and when the queue left polling. Pure,
// like both: the daemon, replay and the simulator run their windows, facts and decisions through one gate.
#pragma once

#include <optional>
#include <vector>

#include "agent/engine/engine.h"
#include "agent/engine/node.h"
#include "agent/engine/types.h"

namespace nvmeadapt::engine {

// A decision of the engine as the gate hands it on: `node_ended` says the node layer ended the queue's run.
struct GatedDecision {
  Decision decision;
  std::optional<NodeReason> node_ended;
};

class NodeGate final : public TryAdmission {
 public:
  NodeLayer& layer() { return layer_; }
  const NodeLayer& layer() const { return layer_; }

  // A window through the engine, its try put to the node layer before the engine commits it. The decisions
  // in the order they are to be applied: the runs an admitted try takes the budget of (each ended), then the
  // window's own (a deferred try among them).
  std::vector<GatedDecision> OnWindow(Engine& engine, const WindowRecord& record);
  // New facts: the runs the node layer ends now, each ended in the engine.
  std::vector<GatedDecision> OnFacts(Engine& engine, const NodeFacts& facts);
  // Any other decision of the engine (a timer, a policy, an override, a new queue), before it is applied.
  void Follow(const Decision& decision);
  // The engine followed a lever's result: the queue is really in `actual` (a refused try left it in interrupt
  // mode; a lever that left it polling counts as polling the layer did not admit).
  void FollowLever(QueueHandle queue, ReapMode actual, Nanos at);

  // True for a decision that starts a try: window_fast, interrupt to poll, not shadow (admitted or deferred).
  static bool StartsTry(const Decision& decision);

 private:
  std::optional<NodeReason> Admit(QueueHandle queue, Nanos at) override;
  std::vector<GatedDecision> EndRuns(Engine& engine, const std::vector<NodeStop>& stops, Nanos at);

  NodeLayer layer_;
  std::vector<NodeStop> room_;  // runs the try just admitted takes the budget of: ended once the engine returns
};

}  // namespace nvmeadapt::engine
