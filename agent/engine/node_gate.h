// Where the engine's decisions meet the node layer (node.h): the engine decides each queue alone; the gate
// puts each try it starts (window_fast to poll) to the node layer and follows every later decision of the
// queue to tell the node layer how the try went and when the queue left polling. Pure, like both: the
// daemon, replay and the simulator put their decisions through the same gate.
//
// A deferred try is not applied: the caller keeps the queue in interrupt mode and has the engine follow
// that (Engine::OnLeverResult(queue, kInterrupt, at): the queue measures again, no failure counted), and
// reports the deferral with its reason instead of the switch.
#pragma once

#include <optional>
#include <vector>

#include "agent/engine/node.h"
#include "agent/engine/types.h"

namespace nvmeadapt::engine {

struct GateOutcome {
  std::optional<NodeReason> deferred;  // the decision is a try the node layer deferred: do not apply it
  std::vector<NodeStop> ended;         // polling runs of other queues to end now (to make room for this try)
};

class NodeGate {
 public:
  explicit NodeGate(NodeLayer& node) : node_(node) {}

  // Every decision of the engine, before it is applied, in the order the engine made them.
  GateOutcome OnDecision(const Decision& decision);

  // True for a decision that starts a try: window_fast, interrupt to poll, to be applied.
  static bool StartsTry(const Decision& decision);

 private:
  NodeLayer& node_;
};

}  // namespace nvmeadapt::engine
