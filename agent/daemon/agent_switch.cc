// The switch protocol's loop side (DESIGN.md section 3, when a try's clock starts). The mode switcher's
// worker plans and journals; the loop publishes the pending switch to the BPF side; the worker calls the
// lever; the loop learns when the mode took effect: the driver's own mode probe where it has one (the BPF
// side restarted the window at that instant), else the lever's return. The loop never waits for a lever.
#include <algorithm>

#include "agent/daemon/agent.h"
#include "agent/daemon/failpoint.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

}  // namespace

struct Agent::SwitchInFlight {
  std::string name;  // the queue's, with its serial: a later queue of the same name is not this one's
  uint64_t serial = 0;
  ReapMode mode = ReapMode::kInterrupt;
  engine::Reason why = engine::Reason::kModeChanged;
  SwitchTimeline timeline;
  bool published = false;
  SwitchThen then;
};

void Agent::ApplyMode(ManagedQueue& queue, ReapMode mode, engine::Reason why, engine::Nanos evidence,
                      SwitchThen then) {
  if (queue.lever.empty()) {
    FailSwitch(queue, mode, why, MakeError(ErrorCode::kUnsupported, "no lever"));
    then(queue, false);
    return;
  }
  auto sw = std::make_shared<SwitchInFlight>();
  sw->name = queue.name;
  sw->serial = queue.serial;
  sw->mode = mode;
  sw->why = why;
  sw->then = std::move(then);
  sw->timeline.to = mode;
  sw->timeline.reason = why;
  sw->timeline.lever = queue.lever;
  sw->timeline.evidence = evidence;
  sw->timeline.decided = deps_.monotonic();
  ++queue.switches_in_flight;
  SwitchSteps steps;
  steps.publish = [this, sw](engine::Nanos journaled) { return PublishSwitch(*sw, journaled); };
  steps.done = [this, sw](const SwitchOutcome& outcome) { EndSwitch(*sw, outcome); };
  steps.late = [this, sw](const SwitchOutcome& outcome) { LateSwitch(*sw, outcome); };
  switcher_.Submit(queue.desc, queue.lever, mode, std::move(steps));
}

ManagedQueue* Agent::QueueOf(const SwitchInFlight& sw) {
  ManagedQueue* queue = queues_.ByName(sw.name);
  return queue != nullptr && queue->serial == sw.serial ? queue : nullptr;
}

bool Agent::PublishSwitch(SwitchInFlight& sw, engine::Nanos journaled) {
  ManagedQueue* queue = QueueOf(sw);
  if (queue == nullptr) return false;  // it left: its journal entry stays for the restore, nothing was written
  sw.timeline.journaled = journaled;
  sw.timeline.generation = queue->generation + 1;
  sw.timeline.from = queue->mode;
  // Pending: the BPF side keeps counting the old window (and drops its records as stale from here on)
  // until the new mode takes effect; completions reaped in the new mode all count in the try's window.
  queue->generation = sw.timeline.generation;
  SendControl(*queue, ControlFor(*queue, sw.mode, queue->generation, 0));
  sw.timeline.published = deps_.monotonic();
  sw.published = true;
  Failpoint("after_publish");
  return true;
}

void Agent::EndSwitch(SwitchInFlight& sw, const SwitchOutcome& outcome) {
  ManagedQueue* found = QueueOf(sw);
  if (found == nullptr) {
    NA_INFO("switch of " << sw.name << " to " << ReapModeName(sw.mode) << " ended after the queue left: "
                         << (outcome.status ? "applied" : outcome.status.error().message));
    return;
  }
  ManagedQueue& queue = *found;
  --queue.switches_in_flight;
  if (!outcome.status) {
    if (sw.published && queue.generation == sw.timeline.generation) {
      // Nothing switched: the control goes back to what it was, and the window in flight (still the old
      // generation's: nothing restarted it while the switch was pending) goes on as if nothing happened.
      --queue.generation;
      PushControl(queue);
    }
    FailSwitch(queue, sw.mode, sw.why, outcome.status.error());
    Settled(queue);
    sw.then(queue, false);
    return;
  }
  SwitchTimeline& timeline = sw.timeline;
  timeline.requested = outcome.requested;
  timeline.acknowledged = outcome.acknowledged;
  queue.mode = sw.mode;
  TakeEffect(queue, timeline);
  // The timer's first look at the new mode is one period after it took effect, not the next loop turn.
  queue.next_timer = queue.mode_since + engine_.View(queue.handle).policy.timer_granularity;
  ++queue.switches;
  recovery_.Applied(queue);
  listeners_.Tell(&AgentListener::SwitchApplied, queue, sw.why, timeline);
  queue.open_switch = std::move(timeline);
  Settled(queue);
  sw.then(queue, true);
}

// The lever returned after its switch was given up. Its result is the device's real state: a failure
// changed nothing; a success moved the queue after all, and the agent follows it as it follows any lever
// result (the engine learns the real mode; a mode the agent wants is brought back by the retry).
void Agent::LateSwitch(SwitchInFlight& sw, const SwitchOutcome& outcome) {
  ManagedQueue* queue = QueueOf(sw);
  const std::string after = std::to_string((outcome.acknowledged - sw.timeline.decided) / 1'000'000) + " ms";
  if (!outcome.status) {
    NA_WARN("lever " << sw.timeline.lever << " for " << sw.name << " returned after its timeout (" << after
                     << " after the decision), refused: " << outcome.status.error().message);
    return;
  }
  if (queue == nullptr || queue->mode == sw.mode) return;
  const engine::Nanos now = deps_.monotonic();
  const std::string message = queue->lever + ": returned after its timeout (" + after + " after the decision): " +
                              queue->name + " is in " + std::string(ReapModeName(sw.mode)) + " after all";
  NA_WARN("lever " << message);
  listeners_.Tell(&AgentListener::QueueTrouble, *queue, message);
  queue->mode = sw.mode;
  ++queue->generation;
  queue->mode_since = outcome.acknowledged;
  queue->next_timer = queue->mode_since + engine_.View(queue->handle).policy.timer_granularity;
  PushControl(*queue);
  if (auto followed = engine_.OnLeverResult(queue->handle, sw.mode, now)) {
    node_.Follow(queue->handle, sw.mode, now);  // the node layer follows the real mode too
    listeners_.Tell(&AgentListener::LeverFollowed, *queue, now, sw.mode, *followed);
  }
  if (auto wanted = ModeWantedByAgent(*queue); wanted && *wanted != queue->mode) {
    SwitchRecovery::PlanRetry(*queue, *wanted, sw.why, now);
  }
}

void Agent::FailSwitch(ManagedQueue& queue, ReapMode mode, engine::Reason why, const Error& error) {
  const engine::Nanos now = deps_.monotonic();
  const bool transient = recovery_.Failed(queue, error);
  NA_WARN_FIELDS((LogFields{.controller = queue.desc.controller, .queue = queue.name, .reason = error.message}),
                 "lever " << queue.lever << " could not put " << queue.name << " in " << ReapModeName(mode) << " ("
                          << engine::ReasonName(why) << "): " << error.message
                          << (transient ? "" : " (not retried: it will not change by itself)"));
  listeners_.Tell(&AgentListener::LeverFailed, queue, error, queue.degraded_reason);
  // The engine follows the real mode: adaptive states decide again on the next window, and clearing an
  // override or changing the mode later starts from where the queue really is.
  if (auto followed = engine_.OnLeverResult(queue.handle, queue.mode, now)) {
    node_.Follow(queue.handle, queue.mode, now);  // a try the lever refused leaves the node layer's accounts too
    listeners_.Tell(&AgentListener::LeverFollowed, queue, now, queue.mode, *followed);
  }
  // While the engine, following the real mode, believes a try is still polling, the timer would fail it
  // again every period and ask the lever again: a driver that exited mid-try got a thousand requests a
  // second until discovery dropped it. The timer waits out the same backoff as a retry (only then: an
  // override's expiry stays on time).
  if (engine_.View(queue.handle).state == engine::QueueState::kPolling)
    queue.next_timer = std::max(queue.next_timer, now + queue.retry_delay);
  // A mode the agent itself must reach (forced, the safe mode of off/shadow, or interrupt mode for an
  // adaptive queue left polling without a baseline) has nothing that decides again: retry it with
  // backoff while it is still wanted, unless the refusal is permanent (a device's "do not retry").
  if (transient && ModeWantedByAgent(queue) == mode) {
    SwitchRecovery::PlanRetry(queue, mode, why, now + queue.retry_delay);
  } else {
    queue.retry_mode.reset();
  }
}

void Agent::Settled(ManagedQueue& queue) {
  if (queue.switches_in_flight > 0) return;
  for (const auto& waiter : queue.settle_waiters) waiter->Done();
  queue.settle_waiters.clear();
}

void Agent::TakeEffect(ManagedQueue& queue, SwitchTimeline& timeline) {
  auto driver_switched = [&]() -> std::optional<engine::Nanos> {
    auto counters = deps_.collector->ReadCounters(queue.desc.key);
    if (!counters || counters->generation != queue.generation) return std::nullopt;
    return counters->progress.start;
  };
  // A driver of the probe contract fires its mode probe before it acknowledges, so by now the BPF side
  // has restarted the window at the driver's instant, if it has one to give.
  std::optional<engine::Nanos> effect = driver_switched();
  if (!effect) {
    queue.mode_since = timeline.acknowledged;
    PushControl(queue);
    // A probe that fired between the read and the push won the restart: its instant stands.
    effect = driver_switched();
  }
  timeline.effect_by_driver = effect && *effect != timeline.acknowledged;
  timeline.effect = effect.value_or(timeline.acknowledged);
  queue.mode_since = timeline.effect;
}

}  // namespace nvmeadapt::daemon
