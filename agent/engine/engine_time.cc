// SPDX-License-Identifier: Apache-2.0
// The engine's view of time between windows: the agent timer (a polling window whose completions stopped)
// and idle time (a window that took far longer than its baseline).
#include <algorithm>

#include "agent/engine/engine.h"
#include "agent/engine/rules.h"

namespace nvmeadapt::engine {

std::optional<Decision> Engine::OnTimer(QueueHandle queue, Nanos now, const WindowProgress& progress) {
  Queue* q = Find(queue);
  if (q == nullptr) return std::nullopt;
  if (q->override_mode && q->override_mode->expires_at != 0 && now >= q->override_mode->expires_at) {
    q->override_mode.reset();
    return Reset(*q, queue, now, Reason::kOverrideExpired);
  }
  if (q->state != QueueState::kPolling) return std::nullopt;
  // Counters that could not be read say nothing about the window: judging it from the mode's start alone
  // would fail a long kept run as stalled. The next readable look judges it.
  if (!progress.known) return std::nullopt;
  // The timer is for completions that stop. Completions reaped in batches leave gaps between batches,
  // and the next batch is judged by the pace check where it lands, at k + its size; so the timer judges
  // only a window that has had no completion for a whole timer period.
  if (now - std::max(progress.start, progress.last) < q->policy.timer_granularity) return std::nullopt;
  // With k completions in and none since, the (k+1)th can only arrive later than now: once now is past
  // its pace limit, the window has failed even though no completion shows it.
  const uint32_t next = progress.completions + 1;
  const Nanos elapsed = now - progress.start;
  const Nanos slack = Slack(*q);
  if (!BehindPace(next, elapsed, q->baseline_span, q->baseline_completions, slack)) {
    return std::nullopt;
  }
  // Nothing in flight: no completion is due, the load stopped. The reaper has nothing to reap, so the queue
  // goes back to interrupt mode, but polling lost nothing: no failure, and the next measurement decides.
  if (progress.in_flight && *progress.in_flight == 0) {
    Decision d = Drain(*q, queue, now);
    d.pace_index = next;
    d.measured = elapsed;
    return d;
  }
  // A try that reaped and then stopped, before it kept a window and not a run resumed after a re-measure:
  // its reaper lost the CPU it polls on. (No completion at all since the switch: the switch itself was
  // slow to take effect in the reaper, which says nothing about that CPU.)
  const bool back_off_now = q->policy.stall_backoff && progress.completions > 0 && q->poll_windows == 0 &&
                            q->poll_run_level == 0;
  Decision d = Fail(*q, queue, now, Reason::kStalled, back_off_now);
  d.pace_index = next;
  d.measured = elapsed;
  d.limit = PaceLimit(next, q->baseline_span, q->baseline_completions, slack);
  return d;
}

Decision Engine::Drain(Queue& q, QueueHandle handle, Nanos at) {
  const ReapMode from = q.mode;
  q.state = QueueState::kMeasuring;
  q.mode = ReapMode::kInterrupt;
  q.poll_windows = 0;
  q.remeasuring = false;
  LeavePolling(q);
  return Make(q, handle, at, from, Reason::kDrained);
}

std::optional<Decision> Engine::EndPolling(QueueHandle queue, Nanos now) {
  Queue* q = Find(queue);
  if (q == nullptr || q->state != QueueState::kPolling) return std::nullopt;
  Decision d = Drain(*q, queue, now);  // the same way back as a drained try: no failure, measure again
  d.reason = Reason::kNodeEnded;
  return d;
}

bool Engine::Idled(const Queue& q, const WindowRecord& record) {
  if (q.baseline_completions == 0) return false;
  const Nanos span = record.end - record.start;
  return span / kIdleFactor >= Scaled(q.baseline_span, record.completions, q.baseline_completions);
}

std::optional<Decision> Engine::AfterIdle(Queue& q, QueueHandle handle, const WindowRecord& record) {
  q.backoff_level = 0;
  q.poll_run_level = 0;
  q.remeasuring = false;  // a load after idle time is a new one: its try is no resumed run
  // Backoffs of a fixed length (max_backoff_windows 0, the patch's rule) run to their end.
  if (q.state != QueueState::kBackoff || q.policy.max_backoff_windows == 0) return std::nullopt;
  q.backoff_left = 0;
  q.state = QueueState::kMeasuring;
  Decision d = Make(q, handle, record.end, q.mode, Reason::kLoadChanged);
  d.measured = record.end - record.start;
  d.limit = Scaled(q.baseline_span, record.completions, q.baseline_completions);
  return d;
}

}  // namespace nvmeadapt::engine
