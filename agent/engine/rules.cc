// SPDX-License-Identifier: Apache-2.0
// The engine's arithmetic: exact comparisons of spans and counts, the pace rule, backoff lengths.
#include "agent/engine/rules.h"

#include <algorithm>
#include <limits>

#include "agent/engine/engine.h"

namespace nvmeadapt::engine {
namespace {

using Wide = __int128;  // products of spans and counts exceed 64 bits only in absurd policies; be exact

}  // namespace

bool AverageAtMost(Nanos span, uint32_t completions, Nanos threshold) {
  return static_cast<Wide>(span) <= static_cast<Wide>(threshold) * completions;
}

bool StrictlyFaster(Nanos span_a, uint32_t n_a, Nanos span_b, uint32_t n_b) {
  return static_cast<Wide>(span_a) * n_b < static_cast<Wide>(span_b) * n_a;
}

Nanos Scaled(Nanos span, uint32_t n, uint32_t of) {
  return static_cast<Nanos>(static_cast<Wide>(span) * n / of);
}

Nanos PaceSlack(const Policy& p, Nanos baseline_span, Nanos credit) {
  return std::max(p.pace_slack, Scaled(baseline_span, p.pace_slack_percent, 100)) + credit;
}

uint32_t LongestBackoff(const Policy& p) {
  return p.max_backoff_windows == 0 || p.backoff_windows == 0 ? p.backoff_windows : p.max_backoff_windows;
}

uint32_t BackoffLength(const Policy& p, uint32_t level) {
  const uint64_t doubled = static_cast<uint64_t>(p.backoff_windows) << std::min<uint32_t>(level, 32);
  return static_cast<uint32_t>(std::min<uint64_t>(doubled, LongestBackoff(p)));
}

uint32_t PollRunLength(const Policy& p, uint32_t level) {
  if (p.max_poll_run_windows == 0) return p.max_poll_windows;
  const uint64_t doubled = static_cast<uint64_t>(p.max_poll_windows) << std::min<uint32_t>(level, 32);
  return static_cast<uint32_t>(std::min<uint64_t>(doubled, std::max(p.max_poll_run_windows, p.max_poll_windows)));
}

bool RateMoved(Nanos span_a, uint32_t n_a, Nanos span_b, uint32_t n_b, uint32_t percent) {
  const Wide a = static_cast<Wide>(n_a) * span_b, b = static_cast<Wide>(n_b) * span_a;  // rate_a : rate_b
  const Wide factor = 100 + static_cast<Wide>(percent);
  return 100 * a >= factor * b || 100 * b >= factor * a;
}

bool Engine::BehindPace(uint32_t k, Nanos elapsed, Nanos baseline_span, uint32_t baseline_completions,
                        Nanos slack) {
  if (baseline_completions == 0) return false;
  return static_cast<Wide>(elapsed) * baseline_completions >
         static_cast<Wide>(k) * baseline_span + static_cast<Wide>(slack) * baseline_completions;
}

uint32_t Engine::PaceIndex(uint32_t k, uint32_t n, bool batch_allowance) {
  return batch_allowance && n > 1 ? k + (n - 1) : k;
}

Nanos Engine::PaceLimit(uint32_t k, Nanos baseline_span, uint32_t baseline_completions, Nanos slack) {
  if (baseline_completions == 0) return 0;
  return Scaled(baseline_span, k, baseline_completions) + slack;
}

Nanos Engine::NextTimer(QueueHandle queue, Nanos now, const WindowProgress& progress) const {
  const Queue* q = Find(queue);
  const Nanos soonest = now + (q != nullptr ? q->policy.timer_granularity : kMinTimerGranularity);
  if (q == nullptr) return soonest;
  Nanos next = std::numeric_limits<Nanos>::max();
  if (q->override_mode && q->override_mode->expires_at != 0) next = q->override_mode->expires_at;
  if (q->state == QueueState::kPolling) {
    if (q->baseline_completions == 0) return soonest;  // nothing to be behind: keep looking
    // OnTimer fails the window once it has been quiet a whole period and its next completion is late.
    const Nanos quiet_from = std::max(progress.start, progress.last) + q->policy.timer_granularity;
    const Nanos late_from = progress.start +
                            PaceLimit(progress.completions + 1, q->baseline_span, q->baseline_completions, Slack(*q)) + 1;
    next = std::min(next, std::max(quiet_from, late_from));
  }
  return std::max(next, soonest);
}

}  // namespace nvmeadapt::engine
