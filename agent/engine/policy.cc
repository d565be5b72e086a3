#include "agent/engine/policy.h"

#include <string>

namespace nvmeadapt::engine {
namespace {

Error Bad(std::string_view prefix, std::string_view field, const std::string& rule, int64_t got) {
  return MakeError(ErrorCode::kInvalidArgument, std::string(prefix) + std::string(field) + ": " +
                                                    std::string(rule) + " (got " + std::to_string(got) + ")");
}

}  // namespace

Status ValidatePolicy(const Policy& p, std::string_view prefix) {
  if (p.window_completions < 1 || p.window_completions > kMaxWindowCompletions) {
    return Bad(prefix, "window_completions", "must be in [1, " + std::to_string(kMaxWindowCompletions) + "]",
               p.window_completions);
  }
  if (p.poll_threshold <= 0 || p.poll_threshold > kMaxPollThreshold) {
    return Bad(prefix, "poll_threshold_ns", "must be in (0, 1000000000]", p.poll_threshold);
  }
  if (p.pace_slack < 0 || p.pace_slack > kMaxPaceSlack) {
    return Bad(prefix, "pace_slack_ns", "must be in [0, 10000000000]", p.pace_slack);
  }
  if (p.max_failures < 1) return Bad(prefix, "max_failures", "must be >= 1", p.max_failures);
  if (p.max_poll_windows < 1) return Bad(prefix, "max_poll_windows", "must be >= 1", p.max_poll_windows);
  if (p.settle_windows > kMaxSettleWindows) {
    return Bad(prefix, "settle_windows", "must be in [0, " + std::to_string(kMaxSettleWindows) + "]",
               p.settle_windows);
  }
  if (p.pace_credit < 0 || p.pace_credit > kMaxPaceCredit) {
    return Bad(prefix, "pace_credit_ns", "must be in [0, 10000000000]", p.pace_credit);
  }
  if (p.max_backoff_windows != 0 &&
      (p.max_backoff_windows < p.backoff_windows || p.max_backoff_windows > kMaxBackoffWindows)) {
    return Bad(prefix, "max_backoff_windows",
               "must be 0 (no doubling) or in [backoff_windows, " + std::to_string(kMaxBackoffWindows) + "]",
               p.max_backoff_windows);
  }
  if (p.max_poll_run_windows != 0 &&
      (p.max_poll_run_windows < p.max_poll_windows || p.max_poll_run_windows > kMaxPollRunWindows)) {
    return Bad(prefix, "max_poll_run_windows",
               "must be 0 (no growth) or in [max_poll_windows, " + std::to_string(kMaxPollRunWindows) + "]",
               p.max_poll_run_windows);
  }
  if (p.backoff_load_change_percent > kMaxLoadChangePercent) {
    return Bad(prefix, "backoff_load_change_percent", "must be in [0, " + std::to_string(kMaxLoadChangePercent) + "]",
               p.backoff_load_change_percent);
  }
  if (p.timer_granularity < kMinTimerGranularity || p.timer_granularity > kMaxTimerGranularity) {
    return Bad(prefix, "timer_granularity_ns", "must be in [10000, 1000000000]", p.timer_granularity);
  }
  switch (p.mode) {
    case ControllerMode::kOff:
    case ControllerMode::kAdaptive:
    case ControllerMode::kInterrupt:
    case ControllerMode::kPoll:
    case ControllerMode::kShadow:
      return OkStatus();
  }
  return Bad(prefix, "mode", "unknown controller mode", static_cast<int64_t>(p.mode));
}

}  // namespace nvmeadapt::engine
