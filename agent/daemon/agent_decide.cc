// Decisions into actions: levers (journaled first), BPF pace control, policy changes, events.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "agent/common/log.h"
#include "agent/daemon/agent.h"
#include "agent/daemon/proto_views.h"
#include "agent/engine/trace.h"

namespace nvmeadapt::daemon {
namespace {

// A crash at a named point of the switch protocol, for the fault campaign; nothing in builds without tests.
void Failpoint([[maybe_unused]] const char* name) {
#ifdef NVME_ADAPT_FAILPOINTS
  static const char* wanted = std::getenv("NVME_ADAPT_FAILPOINT");
  if (wanted != nullptr && std::strcmp(wanted, name) == 0) raise(SIGKILL);
#endif
}

constexpr engine::Nanos kFirstRetryDelay = 1'000'000'000;
constexpr engine::Nanos kMaxRetryDelay = 60'000'000'000;
constexpr std::string_view kControlErrorPrefix = "collector: cannot set the queue's BPF control: ";

// Transient failures are retried; a refusal (a device's "do not retry", an EINVAL from the kernel), a
// missing lever or a missing permission will not change by itself.
bool RetryWorthwhile(ErrorCode code) {
  return code == ErrorCode::kUnavailable || code == ErrorCode::kIo || code == ErrorCode::kInternal;
}


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
  out.set_from(daemon::ToProto(d.from));
  out.set_to(daemon::ToProto(d.to));
  out.set_reason(std::string(engine::ReasonName(d.reason)));
  out.set_state(daemon::ToProto(d.state));
  out.set_shadow(d.shadow);
  out.set_backoff_started(d.backoff_started);
  out.set_failures(d.failures);
  out.set_pace_index(d.pace_index);
  out.set_pace_batch(d.pace_batch);
  out.set_measured_ns(d.measured);
  out.set_limit_ns(d.limit);
  return out;
}

void Agent::HandleDecision(ManagedQueue& queue, const engine::Decision& decision) {
  const std::string line = engine::FormatDecision(queue.name, decision);
  if (decision_log_.is_open()) decision_log_ << line << '\n' << std::flush;
  // Whatever the engine decides first after a switch is that switch's verdict (or supersedes it).
  CloseSwitch(queue, decision);
  v1::Decision proto = ToProto(decision);
  if (decision.Switches()) {
    const bool applied = ApplyMode(queue, decision.to, decision.reason, decision.at);
    proto.set_applied(applied);
    if (!applied) proto.set_lever_error(queue.degraded_reason);
  } else if (decision.reason != engine::Reason::kLeverFailed) {
    PushControl(queue);  // a new baseline or window size for the BPF pace check
  }
  queue.last_decision = proto;
  if (deps_.metrics && queue.metrics_id) {
    if (auto result = metrics::PollTryResultOf(decision)) deps_.metrics->OnPollTry(*queue.metrics_id, *result);
  }
  if (!Notable(decision)) return;
  NA_INFO("decision " << line << (proto.lever_error().empty() ? "" : " lever_error=" + proto.lever_error()));
  Publish(v1::EVENT_KIND_DECISION, &queue, line.substr(queue.name.size() + 1), &proto);  // the event names the queue
}

void Agent::CloseSwitch(ManagedQueue& queue, std::optional<engine::Decision> verdict) {
  if (!queue.open_switch) return;
  SwitchTimeline timeline = std::move(*queue.open_switch);
  queue.open_switch.reset();
  timeline.verdict = verdict;
  const std::string line = FormatSwitchLine(queue.name, timeline);
  Record(line);
  v1::Event event = QueueEvent(v1::EVENT_KIND_SWITCH, &queue, line.substr(std::string_view("switch ").size()));
  *event.mutable_switch_timeline() = daemon::ToProto(timeline, deps_.wall() - deps_.monotonic());
  bus_.Publish(std::move(event));
}

// The switch protocol (DESIGN.md section 3, when a try's clock starts): journal, publish the pending
// switch to the BPF side, call the lever, then learn when the mode took effect: the driver's own mode
// probe where it has one (the BPF side restarted the window at that instant), else the lever's return.
bool Agent::ApplyMode(ManagedQueue& queue, engine::ReapMode mode, engine::Reason why, engine::Nanos evidence) {
  SwitchTimeline timeline;
  timeline.generation = queue.generation + 1;
  timeline.from = queue.mode;
  timeline.to = mode;
  timeline.reason = why;
  timeline.lever = queue.lever;
  timeline.evidence = evidence;
  timeline.decided = deps_.monotonic();
  const engine::Nanos now = timeline.decided;
  auto fail = [&](const Error& error) {
    queue.degraded = true;
    // Lever errors already name their lever; others (no plan, no journal) get it here.
    queue.degraded_reason =
        error.message.rfind(queue.lever + ":", 0) == 0 ? error.message : queue.lever + ": " + error.message;
    ++lever_errors_[queue.lever].count;
    lever_errors_[queue.lever].last = error.message;
    lever_errors_[queue.lever].last_code = error.code;
    lever_errors_[queue.lever].worked_since = false;
    const bool transient = RetryWorthwhile(error.code);
    NA_WARN("lever " << queue.lever << " could not put " << queue.name << " in " << engine::ReapModeName(mode)
                     << " (" << engine::ReasonName(why) << "): " << error.message
                     << (transient ? "" : " (not retried: it will not change by itself)"));
    if (deps_.metrics) deps_.metrics->OnLeverError(queue.lever.empty() ? "none" : queue.lever, error.code);
    Publish(v1::EVENT_KIND_LEVER_ERROR, &queue, queue.degraded_reason);
    // The engine follows the real mode: adaptive states decide again on the next window, and clearing an
    // override or changing the mode later starts from where the queue really is.
    if (auto followed = engine_.OnLeverResult(queue.handle, queue.mode, now)) {
      Record(engine::FormatLeverLine(queue.name, now, queue.mode));
      if (decision_log_.is_open()) decision_log_ << engine::FormatDecision(queue.name, *followed) << '\n';
    }
    queue.retry_delay = std::min(queue.retry_delay ? queue.retry_delay * 2 : kFirstRetryDelay, kMaxRetryDelay);
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
      queue.retry_mode = mode;
      queue.retry_reason = why;
      queue.retry_at = now + queue.retry_delay;
    } else {
      queue.retry_mode.reset();
    }
    return false;
  };
  if (queue.lever.empty()) return fail(MakeError(ErrorCode::kUnsupported, "no lever"));
  auto plan = deps_.levers->Plan(queue.desc, mode);
  if (!plan) return fail(plan.error());
  // One reset of a controller-wide lever moves every queue of the controller: the other queues' switches
  // then change nothing and are not held to the reset spacing.
  const bool disruptive = plan->changes && deps_.levers->Disruptive(queue.desc);
  if (disruptive) {
    const auto last = last_disruptive_.find(queue.desc.controller);
    if (last != last_disruptive_.end() && now - last->second < options_.min_disruptive_interval) {
      const engine::Nanos wait = options_.min_disruptive_interval - (now - last->second);
      return fail(MakeError(ErrorCode::kUnavailable,
                            "not changed: " + queue.desc.controller + " was reset " +
                                std::to_string((now - last->second) / 1'000'000) + " ms ago; the next reset is allowed in " +
                                std::to_string((wait + 999'999) / 1'000'000) + " ms (--min-disruptive-interval " +
                                std::to_string(options_.min_disruptive_interval / 1'000'000'000) + " s)"));
    }
  }
  v1::JournalEntry entry;
  entry.set_controller(queue.desc.controller);
  entry.set_queue(queue.desc.qid);
  entry.set_lever(plan->lever);
  entry.set_target(plan->target);
  entry.set_safe_value(plan->safe_value);
  entry.set_applied_value(plan->applied_value);
  entry.set_time_unix_ns(deps_.wall());
  entry.set_boot_id(options_.restore_rules.boot_id);
  entry.set_device_identity(plan->device_identity);
  // A dry-run lever changes nothing, so there is nothing a restore could owe: the journal holds real changes
  // only, and a restore is always real (finding 1 of issue 15).
  if (!plan->dry_run) {
    if (Status journaled = journal_.WillChange(entry); !journaled) {
      return fail(MakeError(journaled.error().code, "not changed: cannot journal it: " + journaled.error().message));
    }
  }
  Failpoint("after_journal");
  timeline.journaled = deps_.monotonic();
  // Pending: the BPF side keeps counting the old window (and drops its records as stale from here on)
  // until the new mode takes effect; completions reaped in the new mode all count in the try's window.
  queue.generation = timeline.generation;
  SendControl(queue, ControlFor(queue, mode, queue.generation, 0));
  // The lever is called right after the publish: one instant for both steps.
  timeline.published = timeline.requested = deps_.monotonic();
  Failpoint("after_publish");
  Status applied = deps_.levers->Apply(*plan);
  Failpoint("after_lever");
  timeline.acknowledged = deps_.monotonic();
  if (disruptive) last_disruptive_[queue.desc.controller] = timeline.acknowledged;  // a failed reset counts too
  if (!applied) {
    // Nothing switched: the control goes back to what it was, and the window in flight (still the old
    // generation's: nothing restarted it while the switch was pending) goes on as if nothing happened.
    --queue.generation;
    PushControl(queue);
    return fail(applied.error());
  }
  queue.mode = mode;
  if (auto errors = lever_errors_.find(queue.lever); errors != lever_errors_.end()) errors->second.worked_since = true;
  TakeEffect(queue, timeline);
  // The timer's first look at the new mode is one period after it took effect, not the next loop turn.
  queue.next_timer = queue.mode_since + engine_.View(queue.handle).policy.timer_granularity;
  ++queue.switches;
  queue.degraded = false;
  queue.degraded_reason.clear();
  queue.retry_mode.reset();
  queue.retry_delay = 0;
  if (deps_.metrics && queue.metrics_id) {
    deps_.metrics->OnSwitch(*queue.metrics_id, why);
    deps_.metrics->OnSwitchLatency(queue.lever, timeline.Latency());
    deps_.metrics->UpdateQueue(*queue.metrics_id, queue.counters, queue.mode);
  }
  queue.open_switch = std::move(timeline);
  return true;
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

std::optional<engine::ReapMode> Agent::ModeWantedByAgent(const ManagedQueue& queue) const {
  const engine::QueueView view = engine_.View(queue.handle);
  switch (view.state) {
    case engine::QueueState::kMeasuring:
    case engine::QueueState::kBackoff:
      // Measuring needs interrupt mode; a queue the lever left polling (found polling, its first switch
      // refused) has no baseline to be held to and would never decide again.
      if (view.mode == engine::ReapMode::kPoll) return engine::ReapMode::kInterrupt;
      return std::nullopt;
    case engine::QueueState::kForced:
      if (view.override_mode) return view.override_mode->mode;
      return view.policy.mode == engine::ControllerMode::kPoll ? engine::ReapMode::kPoll : engine::ReapMode::kInterrupt;
    case engine::QueueState::kObserving:
    case engine::QueueState::kShadow:
      return queue.desc.eligible ? std::optional(queue.desc.mode) : std::nullopt;  // the mode it was found in
    default:
      return std::nullopt;  // the engine decides again on the next window
  }
}

void Agent::RetryLevers(engine::Nanos now) {
  for (ManagedQueue* q : queues_.All()) {
    if (!q->retry_mode || now < q->retry_at) continue;
    const engine::ReapMode wanted = *q->retry_mode;
    if (ModeWantedByAgent(*q) != wanted || q->mode == wanted) {
      q->retry_mode.reset();  // no longer wanted, or already there
      continue;
    }
    if (ApplyMode(*q, wanted, q->retry_reason, now)) {
      if (auto followed = engine_.OnLeverResult(q->handle, wanted, now)) {  // the engine had followed the failure
        Record(engine::FormatLeverLine(q->name, now, wanted));
        if (decision_log_.is_open()) decision_log_ << engine::FormatDecision(q->name, *followed) << '\n';
      }
    }
  }
}

collect::QueueControl Agent::ControlFor(const ManagedQueue& queue, engine::ReapMode mode, uint32_t generation,
                                        engine::Nanos mode_since) const {
  const engine::QueueView view = engine_.View(queue.handle);
  collect::QueueControl control;
  control.mode = mode;
  control.generation = generation;
  control.mode_since = mode_since;
  if (mode == engine::ReapMode::kPoll && view.state == engine::QueueState::kPolling) {
    control.baseline_span = view.baseline_span;
    control.baseline_completions = view.baseline_completions;
  }
  control.window_completions = view.policy.window_completions;
  // The run's credit too, so that the BPF side reports only misses the engine's rule can confirm: it sends
  // one early record per window.
  control.pace_slack = view.policy.pace_slack + view.pace_credit;
  control.batch_pace_allowance = view.policy.batch_pace_allowance;
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
    Publish(v1::EVENT_KIND_LEVER_ERROR, &queue, reason);
  }
  queue.control_error = true;
  queue.degraded = true;
  queue.degraded_reason = reason;
}

engine::Policy Agent::PolicyFor(const DiscoveredQueue& queue) const {
  engine::Policy policy = policy_->Effective(queue.controller, queue.qid);
  if (!policy_->ModeSetBelowGlobal(queue.controller, queue.qid)) {
    if (auto pinned = controller_modes_.find(queue.controller); pinned != controller_modes_.end()) {
      policy.mode = pinned->second;
    }
  }
  policy.mode = deps_.levers->ModeFor(queue, policy.mode);
  return policy;
}

Status Agent::ApplyPolicyBook(PolicyBook book, engine::Nanos now) {
  if (Status saved = store_.SavePolicy(book.policies()); !saved) return saved;
  policy_ = std::move(book);
  for (ManagedQueue* q : queues_.All()) {
    const engine::Policy policy = PolicyFor(q->desc);
    if (engine_.View(q->handle).policy == policy) continue;
    Record(engine::FormatPolicyLine(q->name, now, policy));
    if (deps_.metrics && q->metrics_id) deps_.metrics->SetPollThreshold(*q->metrics_id, policy.poll_threshold);
    auto decision = engine_.SetPolicy(q->handle, policy, now);
    if (decision) {
      HandleDecision(*q, *decision);
    } else {
      PushControl(*q);
    }
  }
  return OkStatus();
}

v1::Event Agent::QueueEvent(v1::EventKind kind, const ManagedQueue* queue, std::string message) const {
  v1::Event event;
  event.set_time_unix_ns(deps_.wall());
  event.set_kind(kind);
  if (queue != nullptr) {
    event.mutable_queue()->set_controller(queue->desc.controller);
    event.mutable_queue()->set_queue(queue->desc.qid);
    event.set_source(queue->desc.source);
  }
  event.set_message(std::move(message));
  return event;
}

void Agent::Publish(v1::EventKind kind, const ManagedQueue* queue, std::string message,
                    const v1::Decision* decision) {
  v1::Event event = QueueEvent(kind, queue, std::move(message));
  if (decision != nullptr) *event.mutable_decision() = *decision;
  bus_.Publish(std::move(event));
}

Status Agent::Shutdown() {
  bus_.CancelAll();
  if (journal_.empty()) return OkStatus();
  NA_INFO("shutdown: putting " << journal_.entries().entries_size() << " changed setting(s) back");
  RestoreReport report;
  Status restored = journal_.RestoreAll([&](const v1::JournalEntry& entry) { return deps_.levers->Restore(entry); },
                                        options_.restore_rules, &report);
  for (const std::string& line : report.lines) NA_INFO("shutdown: " << line);
  return restored;
}

}  // namespace nvmeadapt::daemon
