// SPDX-License-Identifier: Apache-2.0
#include "sim/gsim.h"

#include <algorithm>
#include <cmath>

namespace nvmeadapt::sim {

GsimParams GsimSuggested() {
  GsimParams p;
  p.enabled = true;
  return p;
}

bool GsimOverTarget(const GsimParams& params, const GsimSample& sample) {
  if (sample.hardirq_share * 100 > params.hardirq_percent) return true;
  if (sample.global_rate <= params.target_rate || sample.active_cpus == 0) return false;
  return sample.cpu_rate > params.target_rate / sample.active_cpus;
}

Nanos GsimNextDelay(const GsimParams& params, Nanos delay, bool over) {
  if (over) {
    const double grown = delay > 0 ? static_cast<double>(delay) * params.factor : static_cast<double>(params.delay_step);
    return std::min(params.delay_max, static_cast<Nanos>(std::llround(grown)));
  }
  const auto decayed = static_cast<Nanos>(std::llround(static_cast<double>(delay) / params.factor));
  return decayed < params.delay_step ? 0 : decayed;
}

std::vector<NamedValue> DescribeGsim(const GsimParams& p) {
  const std::string published = "published: GSIM's cover letter (suggested start; ../shared/notes/anchors.md)";
  const std::string assumed = "assumed: the cover letter says multiplicative, not by how much";
  return {{"gsim_update_ns", static_cast<double>(p.update), "ns", "published: update_ms 5"},
          {"gsim_target_rate", p.target_rate, "interrupts/s", published},
          {"gsim_hardirq_percent", p.hardirq_percent, "%", published},
          {"gsim_delay_max_ns", static_cast<double>(p.delay_max), "ns", published},
          {"gsim_delay_active_ns", static_cast<double>(p.delay_active), "ns", "published: moderation starts at 10 us"},
          {"gsim_delay_step_ns", static_cast<double>(p.delay_step), "ns", assumed},
          {"gsim_factor", p.factor, "x", assumed}};
}

}  // namespace nvmeadapt::sim
