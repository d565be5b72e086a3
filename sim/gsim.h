// SPDX-License-Identifier: Apache-2.0
// GSIM (global software interrupt moderation, genirq, v1-v4 2025-26, not merged) as the model runs it:
// every update period each CPU folds its interrupt count into a global rate; a CPU moderates while the
// global rate is over the target and its own share is high, or while its hardirq time is over its limit.
// The delay grows and decays multiplicatively up to delay_max; moderation acts once it reaches
// delay_active (10 us): the CPU's sources stay disabled after their handler until a per-CPU timer fires.
#pragma once

#include <cstdint>

#include "sim/params.h"

namespace nvmeadapt::sim {

struct GsimParams {
  bool enabled = false;
  Nanos update = 5'000'000;        // update_ms (5)
  double target_rate = 1e6;        // target_intr_rate, interrupts/s over the whole host
  double hardirq_percent = 70;     // hardirq_percent
  Nanos delay_max = 100'000;       // delay_us (100 suggested)
  Nanos delay_active = 10'000;     // moderation starts at this delay
  Nanos delay_step = 1'000;        // the first delay when growth starts from nothing
  double factor = 2;               // growth and decay per update
};

// What one CPU saw in one update period.
struct GsimSample {
  double global_rate = 0;   // interrupts/s over every CPU
  double cpu_rate = 0;      // this CPU's interrupts/s
  uint32_t active_cpus = 0; // CPUs that took interrupts in the period
  double hardirq_share = 0; // this CPU's hardirq time / the period
};

GsimParams GsimSuggested();

// Whether the CPU should moderate: the global rate over target while this CPU takes more than its equal
// share of the target (target / CPUs taking interrupts), or hardirq time over its percentage.
bool GsimOverTarget(const GsimParams& params, const GsimSample& sample);

// The CPU's next delay: multiplied by `factor` (from `delay_step` when 0) up to delay_max while over
// target, divided by it otherwise, and 0 once it falls under delay_step.
Nanos GsimNextDelay(const GsimParams& params, Nanos delay, bool over);

inline bool GsimModerates(const GsimParams& params, Nanos delay) {
  return params.enabled && delay >= params.delay_active;
}

std::vector<NamedValue> DescribeGsim(const GsimParams& params);

}  // namespace nvmeadapt::sim
