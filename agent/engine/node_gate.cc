#include "agent/engine/node_gate.h"

namespace nvmeadapt::engine {

bool NodeGate::StartsTry(const Decision& d) {
  return d.reason == Reason::kWindowFast && d.from == ReapMode::kInterrupt && d.to == ReapMode::kPoll && !d.shadow;
}

GateOutcome NodeGate::OnDecision(const Decision& d) {
  GateOutcome outcome;
  if (d.shadow) return outcome;  // nothing is applied: nothing polls
  if (StartsTry(d)) {
    TryVerdict verdict = node_.Try(TryRequest{d.queue, d.at});
    outcome.deferred = verdict.deferred;
    outcome.ended = std::move(verdict.ended);
    return outcome;
  }
  if (d.to == ReapMode::kPoll && d.reason == Reason::kPollWindowFaster) {
    // The try's first kept window (later kept windows find the try already ended: no-op).
    if (node_.Trying(d.queue)) node_.TryEnded(d.queue, /*kept_polling=*/true, d.at);
    return outcome;
  }
  if (d.from == ReapMode::kPoll && d.to != ReapMode::kPoll) {
    // Failed, re-measuring, a mode change or override, a lever that did not hold: the queue left polling.
    node_.PollingEnded(d.queue, d.at);
  } else if (d.to == ReapMode::kPoll && d.from != ReapMode::kPoll) {
    node_.PollingStarted(d.queue);  // polling the node layer did not admit (forced, override, lever)
  }
  return outcome;
}

}  // namespace nvmeadapt::engine
