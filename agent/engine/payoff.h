// SPDX-License-Identifier: Apache-2.0
// What polling gained and cost on one queue, read from the engine's own comparisons: each judged polling
// window was held to the interrupt baseline it was measured against (Decision.measured against
// Decision.limit), and each shadow window to the poll threshold. Pure accounting outside the rules: it
// sees decisions after the engine made them and changes nothing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "agent/engine/types.h"

namespace nvmeadapt::engine {

// One judged window, as accounted.
struct JudgedWindow {
  bool shadow = false;     // a shadow-mode interrupt window (would it have polled?), not a real polling one
  bool kept = false;       // polling: the window beat its baseline; shadow: it would have started a try
  double speedup = 0;      // polling: its completion rate over the baseline's (limit / measured); 0 in shadow
  Nanos span = 0;          // time the window lasted (to the failure, for one that failed inside the window)
  uint32_t completions = 0;
};

// The verdicts on an interrupt-mode (measuring) window: window_fast (try polling, or in shadow: would have),
// window_slow (stay in interrupt mode).
inline constexpr std::array<Reason, 2> kMeasureReasons = {Reason::kWindowFast, Reason::kWindowSlow};

struct QueuePayoff {
  uint64_t judged_windows = 0;        // real polling windows judged, kept or not
  uint64_t kept_windows = 0;
  double last_speedup = 0;            // the last judged window's rate over its baseline's; 0: none judged
  double last_kept_speedup = 0;       // the last kept window's; 0: none kept
  uint64_t polled_completions = 0;    // completions reaped in judged polling windows
  double completions_gained = 0;      // sum over kept windows of completions x (1 - baseline rate / polling rate)
  Nanos polling_time = 0;             // time in judged polling windows
  Nanos failed_polling_time = 0;      // of which in windows that failed their try
  // Measuring windows judged outside shadow mode, by kMeasureReasons (window_fast ones started a try).
  std::array<uint64_t, kMeasureReasons.size()> measured_windows{};
  // Shadow mode: interrupt windows judged, and those that would have started a try.
  std::array<uint64_t, kMeasureReasons.size()> shadow_windows{};      // by kMeasureReasons
  std::array<uint64_t, kMeasureReasons.size()> shadow_completions{};  // by kMeasureReasons

  // The decision the engine made on this queue; `completions`: those of the window it judged (for a timer's
  // decision, of the window in flight). Returns the window when the decision judged a polling or shadow one.
  std::optional<JudgedWindow> Account(const Decision& decision, uint32_t completions);

  uint64_t ShadowWindows() const { return shadow_windows[0] + shadow_windows[1]; }
  // The share of shadow-judged completions in windows that would have polled; nullopt before any.
  std::optional<double> ShadowWouldPollShare() const;
};

// The reasons that close a judged polling window: kept, or the try failed at (or after) it. Inline: the CLI
// reads it too (a decision's judged speedup) without the payoff library.
constexpr bool JudgesPollingReason(Reason reason) {
  switch (reason) {
    case Reason::kPollWindowFaster:
    case Reason::kMaxPollWindows:
    case Reason::kNotFaster:
    case Reason::kBehindPace:
    case Reason::kStalled:
      return true;
    default:
      return false;
  }
}

// The index of a measuring window's verdict in kMeasureReasons, if it is one.
std::optional<size_t> MeasureReasonIndex(Reason reason);

}  // namespace nvmeadapt::engine
