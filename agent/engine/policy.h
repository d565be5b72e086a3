// The policy numbers the engine runs on, as a plain struct, and their validation.
#pragma once

#include <cstdint>

#include "agent/common/result.h"
#include "agent/engine/types.h"

namespace nvmeadapt::engine {

struct Policy {
  uint32_t window_completions = 8192;
  Nanos poll_threshold = 10'000;
  Nanos pace_slack = 20'000;
  uint32_t max_failures = 3;
  uint32_t backoff_windows = 64;
  uint32_t max_poll_windows = 64;
  Nanos timer_granularity = 1'000'000;
  // Pace of a batch (DESIGN.md section 3): a reap of n completions bringing the window to k is held to
  // k + n - 1. Off: held to k, the patch's rule for every n. Identical for n = 1 (every kernel event).
  bool batch_pace_allowance = true;
  // Interrupt-mode windows that follow polling and are not taken as the baseline: right after polling, a
  // host's interrupt path runs faster than it will in steady state (idle states and wake-ups still warm),
  // and a try held to that transient fails although polling beats the steady state. 0: the patch's rule
  // (the first window after polling is the baseline).
  uint32_t settle_windows = 1;
  ControllerMode mode = ControllerMode::kOff;

  bool operator==(const Policy&) const = default;
};

// The BPF side counts a window in 20 bits (NA_MAX_WINDOW in the shared BPF header; agent/collect asserts the two
// agree): a larger window could never close there.
inline constexpr uint32_t kMaxWindowCompletions = (1u << 20) - 1;
inline constexpr Nanos kMinTimerGranularity = 10'000;
inline constexpr Nanos kMaxTimerGranularity = 1'000'000'000;
inline constexpr Nanos kMaxPollThreshold = 1'000'000'000;  // 1 s per completion: beyond any device
inline constexpr Nanos kMaxPaceSlack = 10'000'000'000;
inline constexpr uint32_t kMaxSettleWindows = 64;

// Checks every field; the error names the first bad one, prefixed by `field_prefix` ("policy.").
Status ValidatePolicy(const Policy& policy, std::string_view field_prefix = "policy.");

}  // namespace nvmeadapt::engine
