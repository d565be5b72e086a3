// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/switch_protocol.h"

#include <algorithm>

#include "agent/collect/queue_control.h"
#include "agent/daemon/decision_record.h"
#include "agent/daemon/failpoint.h"
#include "agent/engine/trace.h"
#include "common/log.h"

namespace nvmeadapt::daemon {

struct SwitchProtocol::SwitchInFlight {
  std::string name;  // the queue's, with its serial: a later queue of the same name is not this one's
  uint64_t serial = 0;
  ReapMode mode = ReapMode::kInterrupt;
  engine::Reason why = engine::Reason::kModeChanged;
  SwitchTimeline timeline;
  bool published = false;
  SwitchThen then;
};

SwitchProtocol::SwitchProtocol(Parts parts, Levers& levers, state::Journal& journal, SwitchOptions options,
                               ModeSwitcher::PostToLoop post)
    : queues_(parts.queues),
      pipeline_(parts.pipeline),
      collector_(parts.collector),
      listeners_(parts.listeners),
      log_(parts.log),
      monotonic_(options.monotonic),
      wall_(options.wall),
      switcher_(levers, journal, std::move(options), std::move(post)) {}

v1::Decision SwitchProtocol::ProtoOf(const engine::Decision& decision) const {
  return DecisionProto(decision, wall_() - monotonic_());
}

void SwitchProtocol::Carry(const std::vector<engine::GatedDecision>& decisions) {
  for (const engine::GatedDecision& gated : decisions) {
    if (ManagedQueue* queue = queues_.ByHandle(gated.decision.queue)) Carry(*queue, gated.decision, gated.node_ended);
  }
}

void SwitchProtocol::Carry(ManagedQueue& queue, const engine::Decision& decision,
                           std::optional<engine::NodeReason> node_ended, SwitchThen ended) {
  if (decision.deferred) {
    Defer(queue, decision);
    return;
  }
  listeners_.Tell(&AgentListener::Decided, queue, decision);
  // Whatever the engine decides first after a switch is that switch's verdict (or supersedes it).
  CloseSwitch(queue, decision);
  v1::Decision proto = ProtoOf(decision);
  if (node_ended) proto.set_node_reason(std::string(engine::NodeReasonName(*node_ended)));
  const uint64_t seq = ++queue.decision_seq;
  if (decision.Switches()) {
    // Until the switch ended its decision stands as not applied; what follows it waits for its end.
    proto.set_applied(false);
    queue.last_decision = proto;
    Switch(queue, decision.to, decision.reason, decision.at,
           [this, decision, proto, seq, ended](ManagedQueue& switched, const Status& outcome) mutable {
             proto.set_applied(outcome.ok());
             if (!outcome) proto.set_lever_error(switched.degraded_reason);
             Record(switched, decision, std::move(proto), seq);
             if (ended) ended(switched, outcome);
           });
    return;
  }
  if (decision.reason != engine::Reason::kLeverFailed) PushControl(queue);  // a new baseline or window size
  Record(queue, decision, std::move(proto), seq);
}

void SwitchProtocol::Defer(ManagedQueue& queue, const engine::Decision& decision) {
  CloseSwitch(queue, decision);  // a switch back to interrupt mode has this as its verdict
  v1::Decision proto = ProtoOf(decision);
  proto.set_applied(false);
  proto.set_node_reason(std::string(engine::NodeReasonName(*decision.deferred)));
  ++queue.decision_seq;
  queue.last_decision = proto;
  NA_DEBUG("decision " << engine::FormatDecision(queue.name, decision));
  listeners_.Tell(&AgentListener::NodeDeferred, queue, decision, proto);
}

void SwitchProtocol::Record(ManagedQueue& queue, const engine::Decision& decision, v1::Decision proto, uint64_t seq) {
  if (queue.decision_seq == seq) queue.last_decision = proto;  // else a later decision is the last one
  const bool notable = Notable(decision);
  if (ChangesState(decision)) {
    log_.Change(queue, engine::ReasonName(decision.reason),
                "decision " + engine::FormatDecision(queue.name, decision) +
                    (proto.lever_error().empty() ? "" : " lever_error=" + proto.lever_error()));
  } else {
    NA_DEBUG("decision " << engine::FormatDecision(queue.name, decision));
  }
  listeners_.Tell(&AgentListener::DecisionDone, queue, decision, proto, notable);
}

void SwitchProtocol::CloseSwitch(ManagedQueue& queue, std::optional<engine::Decision> verdict) {
  if (!queue.open_switch) return;
  SwitchTimeline timeline = std::move(*queue.open_switch);
  queue.open_switch.reset();
  timeline.verdict = verdict;
  listeners_.Tell(&AgentListener::SwitchClosed, queue, timeline);
}

void SwitchProtocol::Forget(ManagedQueue& queue) {
  CloseSwitch(queue, std::nullopt);
  queue.switches_in_flight = 0;  // their ends find no queue: whoever waits for them is told now
  Settled(queue);
}

std::optional<ReapMode> SwitchProtocol::ModeWantedByAgent(const ManagedQueue& queue) const {
  const engine::QueueView view = pipeline_.View(queue.handle);
  switch (view.state) {
    case engine::QueueState::kMeasuring:
    case engine::QueueState::kBackoff:
      // Measuring needs interrupt mode; a queue the lever left polling (found polling, its first switch
      // refused) has no baseline to be held to and would never decide again.
      if (view.mode == ReapMode::kPoll) return ReapMode::kInterrupt;
      return std::nullopt;
    case engine::QueueState::kForced:
      if (view.override_mode) return view.override_mode->mode;
      return view.policy.mode == engine::ControllerMode::kPoll ? ReapMode::kPoll : ReapMode::kInterrupt;
    case engine::QueueState::kObserving:
    case engine::QueueState::kShadow:
      return queue.desc.eligible ? std::optional(queue.desc.mode) : std::nullopt;  // the mode it was found in
    default:
      return std::nullopt;  // the engine decides again on the next window
  }
}

void SwitchProtocol::RetryLevers(engine::Nanos now) {
  for (ManagedQueue* q : queues_.All()) {
    if (!q->retry_mode || now < q->retry_at || q->switches_in_flight > 0) continue;
    const ReapMode wanted = *q->retry_mode;
    if (ModeWantedByAgent(*q) != wanted || q->mode == wanted) {
      q->retry_mode.reset();  // no longer wanted, or already there
      continue;
    }
    Switch(*q, wanted, q->retry_reason, now, [this, wanted](ManagedQueue& retried, const Status& outcome) {
      if (outcome) pipeline_.FollowRealMode(retried, wanted, monotonic_());  // the engine had followed the failure
    });
  }
}

void SwitchProtocol::PushControl(ManagedQueue& queue) {
  SendControl(queue, collect::ControlFor(pipeline_.View(queue.handle), queue.mode, queue.generation, queue.mode_since));
}

void SwitchProtocol::SendControl(ManagedQueue& queue, const collect::QueueControl& control) {
  Status set = collector_.SetQueueControl(queue.desc.key, control);
  if (set) {
    if (queue.control_refused) {
      queue.control_refused = false;
      if (queue.degraded_by == ManagedQueue::DegradedBy::kControl) {
        queue.degraded_by = ManagedQueue::DegradedBy::kNone;
        queue.degraded_reason.clear();
      }
    }
    return;
  }
  // Without its control the BPF side neither restarts windows at switches nor checks the pace: the
  // queue's windows would be judged wrongly or never come. Said once per episode, shown in status.
  const std::string reason = "collector: cannot set the queue's BPF control: " + set.error().message;
  if (!queue.control_refused || queue.degraded_reason != reason) {
    log_.Error(queue, set.error().message, "queue " + queue.name + ": " + reason);
    listeners_.Tell(&AgentListener::QueueTrouble, queue, reason);
  }
  queue.control_refused = true;
  queue.degraded_by = ManagedQueue::DegradedBy::kControl;
  queue.degraded_reason = reason;
}

void SwitchProtocol::Switch(ManagedQueue& queue, ReapMode mode, engine::Reason why, engine::Nanos evidence,
                            SwitchThen then) {
  if (queue.lever.empty()) {
    const Error none = MakeError(ErrorCode::kUnsupported, "no lever");
    Fail(queue, mode, why, none);
    then(queue, none);
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
  sw->timeline.decided = monotonic_();
  ++queue.switches_in_flight;
  SwitchSteps steps;
  steps.publish = [this, sw](engine::Nanos journaled) { return Publish(*sw, journaled); };
  steps.done = [this, sw](const SwitchOutcome& outcome) { End(*sw, outcome); };
  steps.late = [this, sw](const SwitchOutcome& outcome) { Late(*sw, outcome); };
  switcher_.Submit(queue.desc, queue.lever, mode, std::move(steps));
}

ManagedQueue* SwitchProtocol::QueueOf(const SwitchInFlight& sw) {
  ManagedQueue* queue = queues_.ByName(sw.name);
  return queue != nullptr && queue->serial == sw.serial ? queue : nullptr;
}

bool SwitchProtocol::Publish(SwitchInFlight& sw, engine::Nanos journaled) {
  ManagedQueue* queue = QueueOf(sw);
  if (queue == nullptr) return false;  // it left: its journal entry stays for the restore, nothing was written
  sw.timeline.journaled = journaled;
  sw.timeline.generation = queue->generation + 1;
  sw.timeline.from = queue->mode;
  // Pending: the BPF side keeps counting the old window (and drops its records as stale from here on)
  // until the new mode takes effect; completions reaped in the new mode all count in the try's window.
  queue->generation = sw.timeline.generation;
  SendControl(*queue, collect::ControlFor(pipeline_.View(queue->handle), sw.mode, queue->generation, 0));
  sw.timeline.published = monotonic_();
  sw.published = true;
  Failpoint("after_publish");
  return true;
}

void SwitchProtocol::End(SwitchInFlight& sw, const SwitchOutcome& outcome) {
  ManagedQueue* found = QueueOf(sw);
  if (found == nullptr) {
    // Once per switch of a queue that left: nothing to rate-limit it by.
    const std::string ended = outcome.status ? "applied" : outcome.status.error().message;
    NA_INFO_FIELDS((LogFields{.queue = sw.name, .reason = ended}),
                   "switch of " << sw.name << " to " << ReapModeName(sw.mode) << " ended after the queue left: " << ended);
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
    Fail(queue, sw.mode, sw.why, outcome.status.error());
    Settled(queue);
    sw.then(queue, outcome.status);
    return;
  }
  SwitchTimeline& timeline = sw.timeline;
  timeline.requested = outcome.requested;
  timeline.acknowledged = outcome.acknowledged;
  queue.mode = sw.mode;
  TakeEffect(queue, timeline);
  // The timer's first look at the new mode is one period after it took effect, not the next loop turn.
  queue.next_timer = queue.mode_since + pipeline_.View(queue.handle).policy.timer_granularity;
  ++queue.switches;
  recovery_.Applied(queue);
  listeners_.Tell(&AgentListener::SwitchApplied, queue, sw.why, timeline);
  queue.open_switch = std::move(timeline);
  Settled(queue);
  sw.then(queue, OkStatus());
}

// The lever returned after its switch was given up. Its result is the device's real state: a failure
// changed nothing; a success moved the queue after all, and the agent follows it as it follows any lever
// result (the engine learns the real mode; a mode the agent wants is brought back by the retry).
void SwitchProtocol::Late(SwitchInFlight& sw, const SwitchOutcome& outcome) {
  ManagedQueue* queue = QueueOf(sw);
  const std::string after = std::to_string((outcome.acknowledged - sw.timeline.decided) / 1'000'000) + " ms";
  if (!outcome.status) {
    const std::string message = "lever " + sw.timeline.lever + " for " + sw.name + " returned after its timeout (" +
                                after + " after the decision), refused: " + outcome.status.error().message;
    if (queue != nullptr) {
      log_.Error(*queue, outcome.status.error().message, message);
    } else {
      NA_WARN_FIELDS((LogFields{.queue = sw.name, .reason = outcome.status.error().message}), message);
    }
    return;
  }
  if (queue == nullptr || queue->mode == sw.mode) return;
  const engine::Nanos now = monotonic_();
  const std::string message = queue->lever + ": returned after its timeout (" + after + " after the decision): " +
                              queue->name + " is in " + std::string(ReapModeName(sw.mode)) + " after all";
  log_.Error(*queue, "returned after its timeout", "lever " + message);
  listeners_.Tell(&AgentListener::QueueTrouble, *queue, message);
  queue->mode = sw.mode;
  ++queue->generation;
  queue->mode_since = outcome.acknowledged;
  queue->next_timer = queue->mode_since + pipeline_.View(queue->handle).policy.timer_granularity;
  PushControl(*queue);
  pipeline_.FollowRealMode(*queue, sw.mode, now);
  if (auto wanted = ModeWantedByAgent(*queue); wanted && *wanted != queue->mode) {
    SwitchRecovery::PlanRetry(*queue, *wanted, sw.why, now);
  }
}

void SwitchProtocol::Fail(ManagedQueue& queue, ReapMode mode, engine::Reason why, const Error& error) {
  const engine::Nanos now = monotonic_();
  const bool transient = recovery_.Failed(queue, error);
  log_.Error(queue, error.message,
             "lever " + queue.lever + " could not put " + queue.name + " in " + std::string(ReapModeName(mode)) +
                 " (" + std::string(engine::ReasonName(why)) + "): " + error.message +
                 (transient ? "" : " (not retried: it will not change by itself)"));
  listeners_.Tell(&AgentListener::LeverFailed, queue, error, queue.degraded_reason);
  // The engine follows the real mode: adaptive states decide again on the next window, and clearing an
  // override or changing the mode later starts from where the queue really is; a try the lever refused
  // leaves the node layer's accounts too.
  pipeline_.FollowRealMode(queue, queue.mode, now);
  // While the engine, following the real mode, believes a try is still polling, the timer would fail it
  // again every period and ask the lever again: a driver that exited mid-try got a thousand requests a
  // second until discovery dropped it. The timer waits out the same backoff as a retry (only then: an
  // override's expiry stays on time).
  if (pipeline_.View(queue.handle).state == engine::QueueState::kPolling)
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

void SwitchProtocol::Settled(ManagedQueue& queue) {
  if (queue.switches_in_flight > 0) return;
  for (const auto& waiter : queue.settle_waiters) waiter->Done();
  queue.settle_waiters.clear();
}

void SwitchProtocol::TakeEffect(ManagedQueue& queue, SwitchTimeline& timeline) {
  auto driver_switched = [&]() -> std::optional<engine::Nanos> {
    auto counters = collector_.ReadCounters(queue.desc.key);
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
