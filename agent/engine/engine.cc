// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/engine.h"

#include <algorithm>

#include "agent/engine/rules.h"

namespace nvmeadapt::engine {

AddedQueue Engine::AddQueue(const QueueSetup& setup, Nanos now) {
  QueueHandle handle;
  if (!free_.empty()) {
    handle = free_.back();
    free_.pop_back();
  } else {
    handle = static_cast<QueueHandle>(queues_.size());
    queues_.emplace_back();
  }
  Queue& q = queues_[handle];
  q = Queue{};
  q.live = true;
  q.eligible = setup.eligible;
  q.safe = setup.safe;
  q.policy = setup.policy;
  q.mode = setup.current;
  ++live_count_;
  Decision decision = Reset(q, handle, now, Reason::kModeChanged);
  AddedQueue added{handle, std::nullopt};
  if (decision.Switches()) added.decision = decision;
  return added;
}

void Engine::RemoveQueue(QueueHandle queue) {
  if (Queue* q = Find(queue)) {
    q->live = false;
    free_.push_back(queue);
    --live_count_;
  }
}

bool Engine::Contains(QueueHandle queue) const { return Find(queue) != nullptr; }

Engine::Queue* Engine::Find(QueueHandle queue) {
  if (queue >= queues_.size() || !queues_[queue].live) return nullptr;
  return &queues_[queue];
}

const Engine::Queue* Engine::Find(QueueHandle queue) const {
  if (queue >= queues_.size() || !queues_[queue].live) return nullptr;
  return &queues_[queue];
}

Decision Engine::Make(const Queue& q, QueueHandle handle, Nanos at, ReapMode from, Reason reason) const {
  Decision d;
  d.queue = handle;
  d.at = at;
  d.from = from;
  d.to = q.mode;
  d.reason = reason;
  d.state = q.state;
  d.failures = q.failures;
  return d;
}

Decision Engine::Reset(Queue& q, QueueHandle handle, Nanos at, Reason reason) {
  const ReapMode from = q.mode;
  q.failures = 0;
  q.poll_windows = 0;
  q.backoff_left = 0;
  q.baseline_span = 0;
  q.baseline_completions = 0;
  if (!q.eligible) {
    q.state = QueueState::kObserving;  // never switched: keeps whatever mode it is in
  } else if (q.override_mode) {
    q.state = QueueState::kForced;
    q.mode = q.override_mode->mode;
  } else {
    switch (q.policy.mode) {
      case ControllerMode::kOff:
        q.state = QueueState::kObserving;
        q.mode = q.safe;
        break;
      case ControllerMode::kAdaptive:
        q.state = QueueState::kMeasuring;
        q.mode = ReapMode::kInterrupt;
        break;
      case ControllerMode::kInterrupt:
        q.state = QueueState::kForced;
        q.mode = ReapMode::kInterrupt;
        break;
      case ControllerMode::kPoll:
        q.state = QueueState::kForced;
        q.mode = ReapMode::kPoll;
        break;
      case ControllerMode::kShadow:
        q.state = QueueState::kShadow;
        q.mode = q.safe;
        break;
    }
  }
  q.settle_left = 0;
  q.pace_credit = 0;
  q.backoff_level = 0;
  q.poll_run_level = 0;
  q.remeasuring = false;
  if (from == ReapMode::kPoll && q.state == QueueState::kMeasuring) LeavePolling(q);
  return Make(q, handle, at, from, reason);
}

void Engine::Remeasure(Queue& q) {
  q.state = QueueState::kMeasuring;
  q.mode = ReapMode::kInterrupt;
  q.poll_windows = 0;
  q.remeasuring = true;
  LeavePolling(q);
}

void Engine::LeavePolling(Queue& q) {
  q.settle_left = q.policy.settle_windows;
  q.resume_credit = q.pace_credit;  // what the run had, should a re-measure resume it
  q.pace_credit = 0;
}

Decision Engine::Fail(Queue& q, QueueHandle handle, Nanos at, Reason reason, bool back_off_now) {
  const ReapMode from = q.mode;
  q.mode = ReapMode::kInterrupt;
  q.poll_windows = 0;
  q.pace_credit = 0;
  q.poll_run_level = 0;
  q.remeasuring = false;
  if (from == ReapMode::kPoll) LeavePolling(q);
  ++q.failures;
  bool backoff_started = false;
  if (q.failures >= q.policy.max_failures || back_off_now) {
    backoff_started = true;
    q.backoff_left = BackoffLength(q.policy, q.backoff_level);
    if (q.backoff_left > 0 && q.backoff_level < 32) ++q.backoff_level;
    q.state = q.backoff_left > 0 ? QueueState::kBackoff : QueueState::kMeasuring;
  } else {
    q.state = QueueState::kMeasuring;
  }
  Decision d = Make(q, handle, at, from, reason);
  d.backoff_started = backoff_started;
  if (backoff_started) q.failures = 0;  // the decision reports the count that started the backoff
  return d;
}

Decision Engine::OnMeasured(Queue& q, QueueHandle handle, const WindowRecord& record, TryAdmission* admission) {
  const Nanos span = record.end - record.start;
  const Nanos limit = q.policy.poll_threshold * record.completions;
  const bool fast = AverageAtMost(span, record.completions, q.policy.poll_threshold);
  if (q.state == QueueState::kShadow) {
    Decision d = Make(q, handle, record.end, q.mode, fast ? Reason::kWindowFast : Reason::kWindowSlow);
    if (fast) {
      d.to = ReapMode::kPoll;
      d.shadow = true;
      ++q.shadow_would_poll;
    }
    d.measured = span;
    d.limit = limit;
    return d;
  }
  const ReapMode from = q.mode;
  if (q.settle_left > 0) {
    --q.settle_left;
    Decision d = Make(q, handle, record.end, from, Reason::kSettling);
    d.measured = span;
    return d;
  }
  q.baseline_span = span;
  q.baseline_completions = record.completions;
  const bool resumed = q.remeasuring && fast;
  if (q.remeasuring) q.poll_run_level = fast ? std::min<uint32_t>(q.poll_run_level + 1, 32) : 0;
  q.remeasuring = false;
  std::optional<NodeReason> deferred;
  if (fast) {
    q.poll_windows = 0;
    // A try's first window is held to the slack alone; a run that a re-measure resumes keeps its credit.
    q.pace_credit = resumed ? std::min(q.policy.pace_credit, q.resume_credit) : 0;
    if (admission != nullptr) deferred = admission->Admit(handle, record.end);
    if (!deferred) {
      q.state = QueueState::kPolling;
      q.mode = ReapMode::kPoll;
    }
  }
  Decision d = Make(q, handle, record.end, from, fast ? Reason::kWindowFast : Reason::kWindowSlow);
  d.measured = span;
  d.limit = limit;
  if (deferred) {
    d.to = ReapMode::kPoll;  // what the window asked for, and the node layer did not let through
    d.deferred = deferred;
  }
  return d;
}

Decision Engine::OnPolled(Queue& q, QueueHandle handle, const WindowRecord& record) {
  const Nanos span = record.end - record.start;
  const Nanos limit = Scaled(q.baseline_span, record.completions, q.baseline_completions);
  const bool pair_faster =
      q.policy.run_pair_verdict && q.poll_windows > 0 &&
      StrictlyFaster(span + q.last_poll_span, record.completions + q.last_poll_completions, q.baseline_span,
                     q.baseline_completions);
  if (!pair_faster && !StrictlyFaster(span, record.completions, q.baseline_span, q.baseline_completions)) {
    Decision d = Fail(q, handle, record.end, Reason::kNotFaster);
    d.measured = span;
    d.limit = limit;
    return d;
  }
  const ReapMode from = q.mode;
  q.failures = 0;
  q.backoff_level = 0;
  ++q.poll_windows;
  q.pace_credit = std::min(q.policy.pace_credit, std::max<Nanos>(0, limit - span));
  q.last_poll_span = span;
  q.last_poll_completions = record.completions;
  Reason reason = Reason::kPollWindowFaster;
  if (q.poll_windows >= PollRunLength(q.policy, q.poll_run_level)) {
    Remeasure(q);
    reason = Reason::kMaxPollWindows;
  }
  Decision d = Make(q, handle, record.end, from, reason);
  d.measured = span;
  d.limit = limit;
  return d;
}

Decision Engine::OnBackoffWindow(Queue& q, QueueHandle handle, const WindowRecord& record) {
  const Nanos span = record.end - record.start;
  // A settling window is the transient right after polling, not the load: it cannot say the load moved.
  if (q.settle_left == 0 && q.policy.backoff_load_change_percent > 0 && q.baseline_completions > 0 &&
      RateMoved(span, record.completions, q.baseline_span, q.baseline_completions,
                q.policy.backoff_load_change_percent)) {
    q.backoff_left = 0;
    q.backoff_level = 0;
    q.state = QueueState::kMeasuring;
    Decision d = Make(q, handle, record.end, q.mode, Reason::kLoadChanged);
    d.measured = span;
    d.limit = Scaled(q.baseline_span, record.completions, q.baseline_completions);
    return d;
  }
  if (q.backoff_left > 0) --q.backoff_left;
  if (q.settle_left > 0) --q.settle_left;  // a backoff window is an interrupt-mode window: it settles too
  if (q.backoff_left == 0) {
    q.state = QueueState::kMeasuring;
    return Make(q, handle, record.end, q.mode, Reason::kBackoffOver);
  }
  return Make(q, handle, record.end, q.mode, Reason::kBackingOff);
}

std::optional<Decision> Engine::OnWindow(const WindowRecord& record, TryAdmission* admission) {
  Queue* q = Find(record.queue);
  if (q == nullptr) return std::nullopt;
  ++q->windows;
  if (q->state == QueueState::kObserving || q->state == QueueState::kForced) return std::nullopt;
  // A window in another mode than the engine's predates (or straddles) a switch: it measures nothing.
  if (record.mode != q->mode) {
    ++q->ignored_windows;
    return std::nullopt;
  }
  if (record.pace_miss && q->state == QueueState::kPolling) {
    const PaceMiss& miss = *record.pace_miss;
    const uint32_t index = PaceIndex(miss.completion_index, miss.batch, q->policy.batch_pace_allowance);
    const Nanos slack = Slack(*q);  // before Fail, which ends the run's credit
    if (BehindPace(index, miss.elapsed, q->baseline_span, q->baseline_completions, slack)) {
      Decision d = Fail(*q, record.queue, record.end, Reason::kBehindPace);
      d.pace_index = miss.completion_index;
      d.pace_batch = miss.batch;
      d.measured = miss.elapsed;
      d.limit = PaceLimit(index, q->baseline_span, q->baseline_completions, slack);
      return d;
    }
    ++q->rejected_pace_misses;
  }
  if (record.completions < q->policy.window_completions || record.end < record.start) {
    ++q->ignored_windows;
    return std::nullopt;
  }
  if (Idled(*q, record)) {
    if (auto d = AfterIdle(*q, record.queue, record)) return d;
  }
  switch (q->state) {
    case QueueState::kMeasuring:
    case QueueState::kShadow:
      if (record.mode != ReapMode::kInterrupt) break;
      return OnMeasured(*q, record.queue, record, admission);
    case QueueState::kPolling:
      return OnPolled(*q, record.queue, record);
    case QueueState::kBackoff:
      return OnBackoffWindow(*q, record.queue, record);
    case QueueState::kObserving:
    case QueueState::kForced:
      break;
  }
  ++q->ignored_windows;
  return std::nullopt;
}

bool Engine::NeedsTimer(QueueHandle queue) const {
  const Queue* q = Find(queue);
  if (q == nullptr) return false;
  return q->state == QueueState::kPolling || (q->override_mode && q->override_mode->expires_at != 0);
}

std::optional<Decision> Engine::SetPolicy(QueueHandle queue, const Policy& policy, Nanos now) {
  Queue* q = Find(queue);
  if (q == nullptr || q->policy == policy) return std::nullopt;
  const Policy old = q->policy;
  q->policy = policy;
  if (policy.mode != old.mode) {
    if (q->override_mode || !q->eligible) return std::nullopt;  // the override rules until it ends
    return Reset(*q, queue, now, Reason::kModeChanged);
  }
  const ReapMode from = q->mode;
  q->settle_left = std::min(q->settle_left, policy.settle_windows);
  q->pace_credit = std::min(q->pace_credit, policy.pace_credit);
  const uint32_t longest_backoff = LongestBackoff(policy);
  if (q->state == QueueState::kBackoff && q->backoff_left > longest_backoff) {
    q->backoff_left = longest_backoff;
    if (q->backoff_left == 0) q->state = QueueState::kMeasuring;
  }
  if (q->state == QueueState::kPolling && q->poll_windows >= PollRunLength(policy, q->poll_run_level)) Remeasure(*q);
  return Make(*q, queue, now, from, Reason::kPolicyChanged);
}

std::optional<Decision> Engine::SetOverride(QueueHandle queue, std::optional<Override> override_mode,
                                            Nanos now) {
  Queue* q = Find(queue);
  if (q == nullptr || !q->eligible) return std::nullopt;
  q->override_mode = override_mode;
  return Reset(*q, queue, now, Reason::kOverride);
}

std::optional<Decision> Engine::OnLeverResult(QueueHandle queue, ReapMode actual, Nanos now) {
  Queue* q = Find(queue);
  if (q == nullptr || q->mode == actual) return std::nullopt;
  q->mode = actual;
  switch (q->state) {
    case QueueState::kMeasuring:
    case QueueState::kPolling:
    case QueueState::kBackoff:
      if (actual == ReapMode::kInterrupt) {
        if (q->state == QueueState::kPolling) q->state = QueueState::kMeasuring;
      } else if (q->baseline_completions > 0) {
        q->state = QueueState::kPolling;  // stuck polling: hold it to the baseline until it fails
        q->poll_windows = 0;
        q->pace_credit = 0;
      }
      break;
    case QueueState::kObserving:
    case QueueState::kForced:
    case QueueState::kShadow:
      break;
  }
  return Make(*q, queue, now, actual, Reason::kLeverFailed);
}

QueueView Engine::View(QueueHandle queue) const {
  const Queue* q = Find(queue);
  if (q == nullptr) return QueueView{};
  return static_cast<const QueueView&>(*q);  // the view part only: live, safe and resume_credit stay inside
}

}  // namespace nvmeadapt::engine
