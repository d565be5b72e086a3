// SPDX-License-Identifier: Apache-2.0
#include "sim/scenarios.h"

#include <algorithm>
#include <cmath>

namespace nvmeadapt::sim {

CaseResult RunCase(const Case& c, PolicyKind policy, const engine::Policy& engine_policy,
                   const AgentLatency& agent, const RunLength& length, uint64_t seed) {
  CaseResult result;
  switch (policy) {
    case PolicyKind::kInterrupt:
    case PolicyKind::kPoll:
    case PolicyKind::kGsim: {
      StaticController control(policy == PolicyKind::kPoll ? ReapMode::kPoll : ReapMode::kInterrupt);
      Host host(c.costs, c.layout, c.drive, c.load, control, seed);
      if (policy == PolicyKind::kGsim) host.EnableGsim(c.gsim);
      result.stats = host.Run(length.warmup, length.measure);
      break;
    }
    case PolicyKind::kInDriver:
    case PolicyKind::kAgent:
    case PolicyKind::kNode: {
      EngineController control = policy == PolicyKind::kInDriver ? EngineController::InDriver(engine_policy)
                                 : policy == PolicyKind::kNode   ? EngineController::Node(engine_policy, agent, NodeModel{})
                                                                 : EngineController::Agent(engine_policy, agent);
      Host host(c.costs, c.layout, c.drive, c.load, control, seed);
      result.stats = host.Run(length.warmup, length.measure);
      result.counts = control.Counts();
      break;
    }
  }
  return result;
}

RunLength EngineRunLength(double interrupt_iops_per_queue, uint32_t window, double windows, Nanos floor) {
  RunLength length;
  const double window_ns = interrupt_iops_per_queue > 0 ? window / interrupt_iops_per_queue * 1e9 : 0;
  length.warmup = 5'000'000;
  length.measure = std::max(floor, static_cast<Nanos>(std::ceil(window_ns * windows)));
  return length;
}

std::vector<SeedPoint> SeedPoints() {
  // The cover letter: one device at QD32/64/128 and 15 devices x 8 jobs at the same depths, 4 KiB randread.
  // It does not say how many jobs the one-device runs had: the model assumes one.
  std::vector<SeedPoint> points;
  const double one[] = {-0.0008, 0.3156, 0.3095};
  const double scale[] = {1.88, 2.36, 2.31};
  const uint32_t depths[] = {32, 64, 128};
  for (int i = 0; i < 3; ++i) {
    points.push_back({"1dev_qd" + std::to_string(depths[i]), Workload{1, 1, depths[i], 1.0, 4096}, one[i], 0, 0});
  }
  for (int i = 0; i < 3; ++i) {
    SeedPoint p{"15x8_qd" + std::to_string(depths[i]), Workload{15, 8, depths[i], 1.0, 4096}, scale[i], 0, 0};
    if (depths[i] == 64) {
      p.published_interrupt_iops = 13.48e6;
      p.published_adaptive_iops = 45.31e6;
    }
    points.push_back(p);
  }
  return points;
}

}  // namespace nvmeadapt::sim
