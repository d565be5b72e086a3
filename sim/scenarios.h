// SPDX-License-Identifier: Apache-2.0
// Cases the model runs: the seed's six published points, uvnvme on this machine, the sweep, the latency
// curve. Each case runs every policy on the same load and the same seed.
#pragma once

#include <string>
#include <vector>

#include "sim/control.h"
#include "sim/host.h"

namespace nvmeadapt::sim {

struct Case {
  std::string name;
  HostCosts costs;
  HostLayout layout;
  DriveProfile drive;
  Workload load;
  GsimParams gsim = GsimSuggested();  // what the GSIM policy runs with
};

struct RunLength {
  Nanos warmup = 20'000'000;
  Nanos measure = 200'000'000;
};

struct CaseResult {
  RunStats stats;
  EngineCounts counts;
};

CaseResult RunCase(const Case& c, PolicyKind policy, const engine::Policy& engine_policy,
                   const AgentLatency& agent, const RunLength& length, uint64_t seed = 1);

// A run long enough for the engine: warm-up, then the measured interval covers `windows` windows of the
// slowest queue at the interrupt-mode rate (at least `floor`), so re-measurement shows in the average.
RunLength EngineRunLength(double interrupt_iops_per_queue, uint32_t window, double windows, Nanos floor);

struct SeedPoint {
  std::string name;
  Workload load;
  double published_gain;  // poll-capable in-driver over interrupt, as the cover letter says (+0.3156 = +31.56 %)
  double published_interrupt_iops;  // 0 where not published
  double published_adaptive_iops;
};
std::vector<SeedPoint> SeedPoints();

}  // namespace nvmeadapt::sim
