// SPDX-License-Identifier: Apache-2.0
// The engine's arithmetic, exact in integers (no division where a comparison will do): used by engine.cc,
// kept apart so that the rules read as rules there.
#pragma once

#include <cstdint>

#include "agent/engine/policy.h"
#include "agent/engine/types.h"

namespace nvmeadapt::engine {

// span / completions <= threshold.
bool AverageAtMost(Nanos span, uint32_t completions, Nanos threshold);
// span_a / n_a < span_b / n_b: a polling window must be strictly faster than its baseline.
bool StrictlyFaster(Nanos span_a, uint32_t n_a, Nanos span_b, uint32_t n_b);
// span * n / of, rounded down: the baseline's time for n completions.
Nanos Scaled(Nanos span, uint32_t n, uint32_t of);
// The pace slack of a polling window held to a baseline of `baseline_span`: pace_slack, or pace_slack_percent
// of the baseline's span where that is larger, plus the run's credit. The BPF side is told the same figure.
Nanos PaceSlack(const Policy& p, Nanos baseline_span, Nanos credit);
// The length of a backoff that follows `level` backoffs without a kept polling window: backoff_windows,
// doubled per level up to max_backoff_windows (0: never doubled).
uint32_t BackoffLength(const Policy& p, uint32_t level);
// The longest backoff the policy allows.
uint32_t LongestBackoff(const Policy& p);
// The length of a polling run that follows `level` re-measures which each kept polling: max_poll_windows,
// doubled per level up to max_poll_run_windows (0: never doubled).
uint32_t PollRunLength(const Policy& p, uint32_t level);
// The rate of (span_a, n_a) differs from the rate of (span_b, n_b) by a factor of at least 1 + percent/100,
// either way.
bool RateMoved(Nanos span_a, uint32_t n_a, Nanos span_b, uint32_t n_b, uint32_t percent);

}  // namespace nvmeadapt::engine
