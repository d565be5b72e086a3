// SPDX-License-Identifier: Apache-2.0
// The steps of one applied switch, from the decision to the first verdict on the new mode, so that a
// try's result can be told apart from the time it took to start it (issue: the closed loop that pays).
// Written to the window trace as a `switch` line, sent on the event stream, and the decision-to-effect
// latency goes to nvme_adapt_switch_latency_seconds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/engine/types.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

struct SwitchTimeline {
  uint32_t generation = 0;
  ReapMode from = ReapMode::kInterrupt;
  ReapMode to = ReapMode::kInterrupt;
  engine::Reason reason = engine::Reason::kModeChanged;
  std::string lever;
  // CLOCK_MONOTONIC nanoseconds; 0 where the step did not happen.
  engine::Nanos evidence = 0;      // the window end or timer tick the decision rests on
  engine::Nanos decided = 0;       // the agent had the decision in hand
  engine::Nanos journaled = 0;     // the restore point is on disk
  engine::Nanos published = 0;     // the pending switch is in the BPF control, before the lever acts
  engine::Nanos requested = 0;     // the lever is called
  engine::Nanos acknowledged = 0;  // the lever returned
  engine::Nanos effect = 0;        // the mode took effect: the new window starts here
  bool effect_by_driver = false;   // the driver's mode probe gave `effect` (else the lever's return)
  engine::Nanos first_completion = 0;
  std::optional<engine::Decision> verdict;  // the engine's first decision on the new mode

  // Decision to effect: what an in-driver switch does not pay.
  engine::Nanos Latency() const { return effect > decided ? effect - decided : 0; }
};

// switch NAME GEN FROM->TO reason=R lever=L evidence=T decided=T journaled=+D published=+D requested=+D
//   acked=+D effect=+D by=driver|lever first=+D verdict=V [k=K n=N measured=M limit=L at=+D]
// Absolute times for evidence and decided; the later steps as +nanoseconds after decided.
std::string FormatSwitchLine(std::string_view queue, const SwitchTimeline& timeline);

// For the event stream; `wall_minus_monotonic` converts the decided instant to wall-clock time.
v1::SwitchTimeline ToProto(const SwitchTimeline& timeline, int64_t wall_minus_monotonic);

}  // namespace nvmeadapt::daemon
