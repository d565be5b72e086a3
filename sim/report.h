// SPDX-License-Identifier: Apache-2.0
// The model's report, section by section: calibration against the seed's published points, validation
// against uvnvme measured on this machine, the sweep, the latency curve and what the agent keeps. Each
// section prints a table and adds its JSON to the report (build/bench-results/sim.json).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "sim/json.h"
#include "sim/scenarios.h"

namespace nvmeadapt::sim {

struct ReportOptions {
  bool reduced = true;          // make bench: fewer cases, shorter runs
  AgentLatency agent = MeasuredAgentLatency();
  engine::Policy policy = PatchPolicy();
  ScaleMechanism mechanism = ScaleMechanism::kCeiling;
  uint32_t sweep_sample = 1;    // run every n-th sweep case and extrapolate the run time (1: all)
  FILE* log = stdout;
};

// One case under every policy, and the gains over static interrupt.
struct Comparison {
  double interrupt_iops = 0, poll_iops = 0, in_driver_iops = 0, agent_iops = 0, gsim_iops = 0, node_iops = 0;
  CaseResult in_driver, agent, gsim, node;  // node: the agent with the node layer (issue 34)
  // CPU seconds each policy's runs took (interrupt: with the pilot); the sweep reports them per policy.
  double interrupt_seconds = 0, in_driver_seconds = 0, agent_seconds = 0, gsim_seconds = 0, node_seconds = 0;
  RunLength adaptive;  // the engine runs' length, the same for the in-driver engine and the agent
  double Gain(double iops) const { return interrupt_iops > 0 ? iops / interrupt_iops - 1 : 0; }
};
// With `baseline`, only the agent runs and the other figures are the baseline's (same case, same seed).
Comparison Compare(const Case& c, const ReportOptions& options, const AgentLatency& agent, bool with_poll,
                   const Comparison* baseline = nullptr);
std::vector<Comparison> CompareSeedPoints(const ReportOptions& options);
Case SeedCase(const std::string& name, const Workload& load, ScaleMechanism mechanism);

// GSIM's published point: 12 SSDs, 96 queues, 4 KiB randread, 6 M IOPS without it and 20.5 M with it.
struct GsimPoint {
  std::string name = "gsim_12x8";
  Workload load{12, 8, 64, 1.0, 4096};
  double published_interrupt_iops = 6e6;
  double published_gsim_iops = 20.5e6;
  // Another platform and other drives than the patch's: its own ceiling, fitted to its interrupt-mode
  // figure, and a read IOPS cap per SSD fitted so that GSIM's figure is reachable (docs/scale.md).
  double host_ceiling = 5.2e6;
  double read_iops_cap = 1.75e6;
};
Case GsimCase(const GsimPoint& point, ScaleMechanism mechanism);

// uvnvme on this machine: the measured poll/interrupt IOPS ratios and the parameters derived from the
// same bench run (bench/sim_bench.py reads build/bench-results/uvnvme.json).
struct UvnvmeMeasured {
  double ratio[3] = {0, 0, 0};  // QD1, QD8, QD32
  HostCosts costs;
  DriveProfile drive;
  bool present = false;
};

// Each returns false when a point is outside its tolerance (the section still completes).
bool ReportCalibration(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed);
bool ReportValidation(Json& json, const ReportOptions& options, const UvnvmeMeasured& measured);
void ReportAgentKeeps(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed);
void ReportLatencyCurve(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed);
void ReportSweep(Json& json, const ReportOptions& options);
// The node layer (issue 34) at the seed's six points beside the per-queue agent and the in-driver engine,
// counted as the cover letter counts (better or worse than static interrupt by more than 5 %).
void ReportNode(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed);
void ReportParameters(Json& json, const ReportOptions& options, const UvnvmeMeasured& measured);

inline constexpr double kTolerance = 0.15;

}  // namespace nvmeadapt::sim
