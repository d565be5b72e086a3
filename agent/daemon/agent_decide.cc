// Decisions into actions (the switch itself: agent_switch.cc), BPF pace control, policy changes, events.
#include <algorithm>

#include "agent/config/proto_enums.h"
#include "agent/daemon/agent.h"
#include "agent/engine/trace.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

constexpr std::string_view kControlErrorPrefix = "collector: cannot set the queue's BPF control: ";

// Window-by-window outcomes that change nothing are not events: they would flood the stream and the log.
bool Notable(const engine::Decision& d) {
  if (d.Switches() || d.shadow || d.backoff_started) return true;
  switch (d.reason) {
    case engine::Reason::kWindowSlow:
    case engine::Reason::kPollWindowFaster:
    case engine::Reason::kBackingOff:
    case engine::Reason::kSettling:
    case engine::Reason::kPolicyChanged:
    case engine::Reason::kModeChanged:
      return false;
    default:
      return true;
  }
}

}  // namespace


v1::Decision Agent::ToProto(const engine::Decision& d) const {
  v1::Decision out;
  out.set_time_unix_ns(deps_.wall() - (deps_.monotonic() - d.at));
  out.set_from(config::ToProto(d.from));
  out.set_to(config::ToProto(d.to));
  out.set_reason(std::string(engine::ReasonName(d.reason)));
  out.set_state(config::ToProto(d.state));
  out.set_shadow(d.shadow);
  out.set_backoff_started(d.backoff_started);
  out.set_failures(d.failures);
  out.set_pace_index(d.pace_index);
  out.set_pace_batch(d.pace_batch);
  out.set_measured_ns(d.measured);
  out.set_limit_ns(d.limit);
  return out;
}

void Agent::HandleDecision(ManagedQueue& queue, const engine::Decision& decision,
                           std::optional<engine::NodeReason> node_ended) {
  const engine::GateOutcome gate = node_.OnDecision(decision);
  if (gate.deferred) {
    DeferTry(queue, decision, *gate.deferred);
    return;
  }
  EndNodeRuns(gate.ended, decision.at);  // the runs this try takes the budget of
  listeners_.Tell(&AgentListener::Decided, queue, decision);
  // Whatever the engine decides first after a switch is that switch's verdict (or supersedes it).
  CloseSwitch(queue, decision);
  v1::Decision proto = ToProto(decision);
  if (node_ended) proto.set_node_reason(std::string(engine::NodeReasonName(*node_ended)));
  const uint64_t seq = ++queue.decision_seq;
  if (decision.Switches()) {
    // Until the switch ended its decision stands as not applied; what follows it waits for its end.
    proto.set_applied(false);
    queue.last_decision = proto;
    ApplyMode(queue, decision.to, decision.reason, decision.at,
              [this, decision, proto, seq](ManagedQueue& switched, bool applied) mutable {
                proto.set_applied(applied);
                if (!applied) proto.set_lever_error(switched.degraded_reason);
                FinishDecision(switched, decision, std::move(proto), seq);
              });
    return;
  }
  if (decision.reason != engine::Reason::kLeverFailed) PushControl(queue);  // a new baseline or window size
  FinishDecision(queue, decision, std::move(proto), seq);
}

void Agent::FinishDecision(ManagedQueue& queue, const engine::Decision& decision, v1::Decision proto, uint64_t seq) {
  if (queue.decision_seq == seq) queue.last_decision = proto;  // else a later decision is the last one
  const bool notable = Notable(decision);
  if (notable) {
    NA_INFO("decision " << engine::FormatDecision(queue.name, decision)
                        << (proto.lever_error().empty() ? "" : " lever_error=" + proto.lever_error()));
  }
  listeners_.Tell(&AgentListener::DecisionDone, queue, decision, proto, notable);
}

void Agent::CloseSwitch(ManagedQueue& queue, std::optional<engine::Decision> verdict) {
  if (!queue.open_switch) return;
  SwitchTimeline timeline = std::move(*queue.open_switch);
  queue.open_switch.reset();
  timeline.verdict = verdict;
  listeners_.Tell(&AgentListener::SwitchClosed, queue, timeline);
}

std::optional<ReapMode> Agent::ModeWantedByAgent(const ManagedQueue& queue) const {
  const engine::QueueView view = engine_.View(queue.handle);
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

void Agent::RetryLevers(engine::Nanos now) {
  for (ManagedQueue* q : queues_.All()) {
    if (!q->retry_mode || now < q->retry_at || q->switches_in_flight > 0) continue;
    const ReapMode wanted = *q->retry_mode;
    if (ModeWantedByAgent(*q) != wanted || q->mode == wanted) {
      q->retry_mode.reset();  // no longer wanted, or already there
      continue;
    }
    ApplyMode(*q, wanted, q->retry_reason, now, [this, wanted](ManagedQueue& retried, bool applied) {
      if (!applied) return;
      const engine::Nanos now = deps_.monotonic();
      if (auto followed = engine_.OnLeverResult(retried.handle, wanted, now)) {  // the engine had followed the failure
        node_.Follow(retried.handle, wanted, now);  // the node layer follows the real mode too
        listeners_.Tell(&AgentListener::LeverFollowed, retried, now, wanted, *followed);
      }
    });
  }
}

collect::QueueControl Agent::ControlFor(const ManagedQueue& queue, ReapMode mode, uint32_t generation,
                                        engine::Nanos mode_since) const {
  const engine::QueueView view = engine_.View(queue.handle);
  collect::QueueControl control;
  control.mode = mode;
  control.generation = generation;
  control.mode_since = mode_since;
  if (mode == ReapMode::kPoll && view.state == engine::QueueState::kPolling) {
    control.baseline_span = view.baseline_span;
    control.baseline_completions = view.baseline_completions;
  }
  control.window_completions = view.policy.window_completions;
  // The run's credit too, so that the BPF side reports only misses the engine's rule can confirm: it sends
  // one early record per window.
  control.pace_slack = view.policy.pace_slack + view.pace_credit;
  control.batch_pace_allowance = view.policy.batch_pace_allowance;
  control.try_clock_first_completion = view.policy.try_clock_first_completion;
  return control;
}

void Agent::PushControl(ManagedQueue& queue) {
  SendControl(queue, ControlFor(queue, queue.mode, queue.generation, queue.mode_since));
}

void Agent::SendControl(ManagedQueue& queue, const collect::QueueControl& control) {
  Status set = deps_.collector->SetQueueControl(queue.desc.key, control);
  if (set) {
    if (queue.control_error) {
      queue.control_error = false;
      if (queue.degraded_reason.rfind(kControlErrorPrefix, 0) == 0) {
        queue.degraded = false;
        queue.degraded_reason.clear();
      }
    }
    return;
  }
  // Without its control the BPF side neither restarts windows at switches nor checks the pace: the
  // queue's windows would be judged wrongly or never come. Said once per episode, shown in status.
  const std::string reason = std::string(kControlErrorPrefix) + set.error().message;
  if (!queue.control_error || queue.degraded_reason != reason) {
    NA_WARN("queue " << queue.name << ": " << reason);
    listeners_.Tell(&AgentListener::QueueTrouble, queue, reason);
  }
  queue.control_error = true;
  queue.degraded = true;
  queue.degraded_reason = reason;
}

Status Agent::Shutdown() {
  // A lever still running could write after the restore: every one returns first.
  switcher_.Quiesce();
  switcher_.Join();
  scanner_.Join();
  bus_.CancelAll();
  if (journal_.empty()) return OkStatus();
  NA_INFO("shutdown: putting " << journal_.size() << " changed setting(s) back");
  RestoreReport report;
  Status restored = journal_.RestoreAll([&](const v1::JournalEntry& entry) { return deps_.levers->Restore(entry); },
                                        options_.restore_rules, &report);
  for (const std::string& line : report.lines) NA_INFO("shutdown: " << line);
  return restored;
}

}  // namespace nvmeadapt::daemon
