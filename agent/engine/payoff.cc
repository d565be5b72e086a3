// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/payoff.h"

namespace nvmeadapt::engine {
namespace {

bool JudgesPolling(const Decision& d) {
  return JudgesPollingReason(d.reason) && d.from == ReapMode::kPoll && !d.shadow && d.measured > 0 && d.limit > 0;
}

bool Kept(Reason reason) { return reason == Reason::kPollWindowFaster || reason == Reason::kMaxPollWindows; }

}  // namespace

std::optional<size_t> MeasureReasonIndex(Reason reason) {
  for (size_t i = 0; i < kMeasureReasons.size(); ++i) {
    if (kMeasureReasons[i] == reason) return i;
  }
  return std::nullopt;
}

std::optional<JudgedWindow> QueuePayoff::Account(const Decision& decision, uint32_t completions) {
  if (decision.state == QueueState::kShadow) {
    const std::optional<size_t> index = MeasureReasonIndex(decision.reason);
    if (!index) return std::nullopt;
    ++shadow_windows[*index];
    shadow_completions[*index] += completions;
    return JudgedWindow{true, decision.reason == Reason::kWindowFast, 0, decision.measured, completions};
  }
  if (decision.from == ReapMode::kInterrupt && !decision.shadow && decision.limit > 0) {
    // A measuring window (a settling one has no limit: it judged nothing).
    if (const std::optional<size_t> index = MeasureReasonIndex(decision.reason)) ++measured_windows[*index];
    return std::nullopt;
  }
  if (!JudgesPolling(decision)) return std::nullopt;
  // Rates over the same completions: the polling window's is completions / measured, the baseline's
  // completions / limit (the baseline span scaled to them, or the pace limit where the try failed inside).
  JudgedWindow window{false, Kept(decision.reason),
                      static_cast<double>(decision.limit) / static_cast<double>(decision.measured),
                      decision.measured, completions};
  ++judged_windows;
  last_speedup = window.speedup;
  polled_completions += completions;
  polling_time += window.span;
  if (window.kept) {
    ++kept_windows;
    last_kept_speedup = window.speedup;
    completions_gained += static_cast<double>(completions) * (1.0 - 1.0 / window.speedup);
  } else {
    failed_polling_time += window.span;
  }
  return window;
}

std::optional<double> QueuePayoff::ShadowWouldPollShare() const {
  const uint64_t all = shadow_completions[0] + shadow_completions[1];
  if (all == 0) return std::nullopt;
  return static_cast<double>(shadow_completions[0]) / static_cast<double>(all);
}

}  // namespace nvmeadapt::engine
