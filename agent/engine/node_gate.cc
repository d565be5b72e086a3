// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/node_gate.h"

#include <utility>

namespace nvmeadapt::engine {

bool NodeGate::StartsTry(const Decision& d) {
  return d.reason == Reason::kWindowFast && d.from == ReapMode::kInterrupt && d.to == ReapMode::kPoll && !d.shadow;
}

std::optional<NodeReason> NodeGate::Admit(QueueHandle queue, Nanos at) {
  TryVerdict verdict = layer_.Try(TryRequest{queue, at});
  if (verdict.Admitted()) room_ = std::move(verdict.ended);
  return verdict.deferred;
}

std::vector<GatedDecision> NodeGate::EndRuns(Engine& engine, const std::vector<NodeStop>& stops, Nanos at) {
  std::vector<GatedDecision> ended;
  for (const NodeStop& stop : stops) {
    std::optional<Decision> decision = engine.EndPolling(stop.queue, at);
    if (!decision) continue;  // no longer polling by the rules: nothing to end
    Follow(*decision);
    ended.push_back({*decision, stop.reason});
  }
  return ended;
}

std::vector<GatedDecision> NodeGate::OnWindow(Engine& engine, const WindowRecord& record) {
  room_.clear();
  const std::optional<Decision> decision = engine.OnWindow(record, this);
  if (!decision) return {};
  std::vector<GatedDecision> out = EndRuns(engine, std::exchange(room_, {}), decision->at);
  // A try was put to the layer as the engine made it (Admit): only the other decisions are followed here.
  if (!StartsTry(*decision)) Follow(*decision);
  out.push_back({*decision, std::nullopt});
  return out;
}

std::vector<GatedDecision> NodeGate::OnFacts(Engine& engine, const NodeFacts& facts) {
  return EndRuns(engine, layer_.OnFacts(facts), facts.at);
}

void NodeGate::Follow(const Decision& d) {
  if (d.shadow || d.deferred) return;  // nothing is applied: nothing polls
  if (d.to == ReapMode::kPoll && d.reason == Reason::kPollWindowFaster) {
    // The try's first kept window (later kept windows find the try already ended: no-op).
    if (layer_.Trying(d.queue)) layer_.TryEnded(d.queue, /*kept_polling=*/true, d.at);
    return;
  }
  if (d.from == ReapMode::kPoll && d.to != ReapMode::kPoll) {
    // Failed, re-measuring, a mode change or override, a lever that did not hold: the queue left polling.
    layer_.PollingEnded(d.queue, d.at);
  } else if (d.to == ReapMode::kPoll && d.from != ReapMode::kPoll) {
    layer_.PollingStarted(d.queue);  // polling the node layer did not admit (forced, override, lever)
  }
}

void NodeGate::FollowLever(QueueHandle queue, ReapMode actual, Nanos at) {
  if (actual != ReapMode::kPoll) {
    layer_.PollingEnded(queue, at);
  } else if (!layer_.Polling(queue)) {
    layer_.PollingStarted(queue);
  }
}

}  // namespace nvmeadapt::engine
