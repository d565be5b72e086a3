// SPDX-License-Identifier: Apache-2.0
#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace nvmeadapt::sim {
namespace {

constexpr Nanos kMs = 1'000'000;

double Residual(double model_ratio, double published_ratio) { return model_ratio / published_ratio - 1; }

void WriteCounts(Json& json, const EngineCounts& c) {
  json.Open('{');
  json.Key("to_poll").Value(static_cast<double>(c.to_poll));
  json.Key("to_interrupt").Value(static_cast<double>(c.to_interrupt));
  json.Key("behind_pace").Value(static_cast<double>(c.behind_pace));
  json.Key("behind_pace_first").Value(static_cast<double>(c.behind_pace_first));
  json.Key("not_faster").Value(static_cast<double>(c.not_faster));
  json.Key("stalled").Value(static_cast<double>(c.stalled));
  json.Key("backoffs").Value(static_cast<double>(c.backoffs));
  json.Key("node_deferred").Value(static_cast<double>(c.node_deferred));
  json.Key("node_ended").Value(static_cast<double>(c.node_ended));
  json.Close('}');
}

void WriteParams(Json& json, const std::vector<NamedValue>& values) {
  json.Open('[');
  for (const NamedValue& v : values) {
    json.Open('{');
    json.Key("name").Value(v.name);
    json.Key("value").Value(v.value);
    json.Key("unit").Value(v.unit);
    json.Key("source").Value(v.source);
    json.Close('}');
  }
  json.Close(']');
}

// Runs one policy and adds the CPU seconds it took to `seconds`.
CaseResult Timed(double& seconds, const Case& c, PolicyKind policy, const ReportOptions& options,
                 const AgentLatency& agent, const RunLength& length) {
  const std::clock_t start = std::clock();
  CaseResult r = RunCase(c, policy, options.policy, agent, length);
  seconds += static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  return r;
}

AgentLatency WithEffectLatency(const AgentLatency& measured, Nanos latency) {
  AgentLatency a = measured;
  a.to_poll_effect = a.to_interrupt_effect = latency;
  a.to_poll_blocking = a.to_interrupt_blocking = latency;  // a synchronous lever: the loop waits for the effect
  return a;
}

}  // namespace

Case SeedCase(const std::string& name, const Workload& load, ScaleMechanism mechanism) {
  return Case{name, SeedHostCosts(mechanism), SeedHostLayout(), SeedDrive(), load};
}

Case GsimCase(const GsimPoint& point, ScaleMechanism mechanism) {
  Case c = SeedCase(point.name, point.load, mechanism);
  if (mechanism == ScaleMechanism::kCeiling) c.costs.irq_host_ceiling = point.host_ceiling;
  c.drive.read_iops_cap = point.read_iops_cap;
  return c;
}

Comparison Compare(const Case& c, const ReportOptions& options, const AgentLatency& agent, bool with_poll,
                   const Comparison* baseline) {
  Comparison out;
  // A pilot in interrupt mode sizes the runs: enough completions for the static modes, and for the engine
  // a warm-up over its first measurement and tries, then whole windows at the interrupt-mode rate.
  if (baseline) {
    out = *baseline;
    out.agent_seconds = 0;
    out.agent = Timed(out.agent_seconds, c, PolicyKind::kAgent, options, agent, baseline->adaptive);
    out.agent_iops = out.agent.stats.Iops();
    return out;
  }
  const RunStats pilot =
      Timed(out.interrupt_seconds, c, PolicyKind::kInterrupt, options, agent, RunLength{5 * kMs, 20 * kMs}).stats;
  const double rate = std::max(pilot.Iops(), 1.0);
  const double per_queue = rate / std::max(1u, c.load.devices * c.load.jobs_per_device);
  const double window_ns = options.policy.window_completions / per_queue * 1e9;
  const RunLength fixed{5 * kMs, std::max<Nanos>((options.reduced ? 30 : 100) * kMs,
                                                 static_cast<Nanos>((options.reduced ? 30'000 : 100'000) / rate * 1e9))};
  // The agent's loop waits for each lever: switching every queue once takes queues x that wait (the
  // measured agent's, whatever latency this run sweeps), so the warm-up covers it too.
  const Nanos backlog = static_cast<Nanos>(c.load.devices) * c.load.jobs_per_device * options.agent.to_poll_blocking;
  const RunLength adaptive{5 * kMs + static_cast<Nanos>(2.5 * window_ns) + backlog,
                           std::max(fixed.measure, static_cast<Nanos>((options.reduced ? 1.0 : 3.0) * window_ns))};
  out.adaptive = adaptive;
  out.interrupt_iops = Timed(out.interrupt_seconds, c, PolicyKind::kInterrupt, options, agent, fixed).stats.Iops();
  if (with_poll) out.poll_iops = RunCase(c, PolicyKind::kPoll, options.policy, agent, fixed).stats.Iops();
  // GSIM's delay grows from nothing by one factor per update: the warm-up covers its climb to delay_max.
  const RunLength gsim_length{fixed.warmup + static_cast<Nanos>(std::ceil(std::log2(
                                                 static_cast<double>(c.gsim.delay_max) / c.gsim.delay_step) + 2)) *
                                                 c.gsim.update,
                              fixed.measure};
  out.gsim = Timed(out.gsim_seconds, c, PolicyKind::kGsim, options, agent, gsim_length);
  out.gsim_iops = out.gsim.stats.Iops();
  out.in_driver = Timed(out.in_driver_seconds, c, PolicyKind::kInDriver, options, agent, adaptive);
  out.in_driver_iops = out.in_driver.stats.Iops();
  out.agent = Timed(out.agent_seconds, c, PolicyKind::kAgent, options, agent, adaptive);
  out.agent_iops = out.agent.stats.Iops();
  out.node = Timed(out.node_seconds, c, PolicyKind::kNode, options, agent, adaptive);
  out.node_iops = out.node.stats.Iops();
  return out;
}

std::vector<Comparison> CompareSeedPoints(const ReportOptions& options) {
  std::vector<Comparison> out;
  for (const SeedPoint& p : SeedPoints()) {
    out.push_back(Compare(SeedCase(p.name, p.load, options.mechanism), options, options.agent, true));
  }
  out.push_back(Compare(GsimCase(GsimPoint{}, options.mechanism), options, options.agent, true));
  return out;
}

namespace {

// One calibration point: the policy's gain over static interrupt against the published one.
bool WritePoint(Json& json, const ReportOptions& options, const std::string& name, const char* policy,
                double published, const Comparison& c) {
  const double model = c.Gain(policy == std::string("gsim") ? c.gsim_iops : c.in_driver_iops);
  const double residual = Residual(1 + model, 1 + published);
  const bool within = std::fabs(residual) <= kTolerance;
  std::fprintf(options.log, "  %-12s %-9s %+9.2f%% %+9.2f%% %+9.2f%% %9.3gM %8.3gM %8.3gM %8.3gM %8.3gM\n",
               name.c_str(), policy, 100 * published, 100 * model, 100 * residual, c.interrupt_iops / 1e6,
               c.poll_iops / 1e6, c.in_driver_iops / 1e6, c.gsim_iops / 1e6, c.agent_iops / 1e6);
  json.Open('{');
  json.Key("name").Value(name);
  json.Key("policy").Value(policy);
  json.Key("published").Value(published);
  json.Key("model").Value(model);
  json.Key("residual").Value(residual);
  json.Key("within").Value(within);
  json.Key("interrupt_iops").Value(c.interrupt_iops);
  json.Key("poll_iops").Value(c.poll_iops);
  json.Key("in_driver_iops").Value(c.in_driver_iops);
  json.Key("gsim_iops").Value(c.gsim_iops);
  json.Key("agent_iops").Value(c.agent_iops);
  json.Key("node_iops").Value(c.node_iops);
  json.Key("node_gain").Value(c.Gain(c.node_iops));
  json.Key("node_deferred").Value(static_cast<double>(c.node.counts.node_deferred));
  json.Key("node_tries").Value(static_cast<double>(c.node.counts.to_poll));
  json.Key("in_driver_poll_share").Value(c.in_driver.stats.PollShare());
  return within;
}

// Intel's posted-MSI series (Sapphire Rapids, Gen5 drives, 4 KiB randread, per-disk IOPS): 2 disks
// 1.991 M, 8 disks 0.834 M, 8 disks with posted MSI 1.943 M. Run on GSIM's platform's ceiling, not refitted
// (jobs and depth are not published: 8 jobs of QD64 per disk assumed); posted MSI as no host ceiling and
// the CPU's coalesced 8.99 M interrupts/s. Returns false when a point is outside the tolerance.
bool WritePostedMsi(Json& json, const ReportOptions& options) {
  struct Row {
    const char* name;
    uint32_t disks;
    bool posted;
    double published;
  };
  const Row rows[] = {{"posted_msi_2disks", 2, false, 1.991e6}, {"posted_msi_8disks", 8, false, 0.834e6},
                      {"posted_msi_8disks_posted", 8, true, 1.943e6}};
  bool within = true;
  json.Key("posted_msi").Open('[');
  for (const Row& row : rows) {
    GsimPoint platform;
    platform.load = Workload{row.disks, 8, 64, 1.0, 4096};
    platform.read_iops_cap = 2.0e6;  // a Gen5 drive: the 2-disk figure is at its limit
    Case c = GsimCase(platform, options.mechanism);
    if (row.posted && options.mechanism == ScaleMechanism::kCeiling) {
      c.costs.irq_host_ceiling = 0;
      c.costs.irq_cpu_ceiling = 8.99e6;
    }
    const double per_disk =
        RunCase(c, PolicyKind::kInterrupt, options.policy, options.agent, RunLength{10 * kMs, 40 * kMs}).stats.Iops() /
        row.disks;
    const double residual = per_disk / row.published - 1;
    within = within && std::fabs(residual) <= kTolerance;
    std::fprintf(options.log, "  %-26s per disk published %.3g M, model %.3g M, residual %+.1f%%\n", row.name,
                 row.published / 1e6, per_disk / 1e6, 100 * residual);
    json.Open('{');
    json.Key("name").Value(row.name);
    json.Key("published_iops_per_disk").Value(row.published);
    json.Key("model_iops_per_disk").Value(per_disk);
    json.Key("residual").Value(residual);
    json.Key("within").Value(std::fabs(residual) <= kTolerance);
    json.Close('}');
  }
  json.Close(']');
  return within;
}

}  // namespace

bool ReportCalibration(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed) {
  std::fprintf(options.log, "calibration (%s): the in-driver engine against the patch's published points and GSIM "
                            "against its own (model, not measurement; residual = model IOPS ratio / published ratio "
                            "- 1)\n", MechanismName(options.mechanism).c_str());
  std::fprintf(options.log, "  %-12s %-9s %10s %10s %10s %9s %8s %8s %8s %8s\n", "point", "policy", "published",
               "model", "residual", "interrupt", "poll", "in-drv", "gsim", "agent");
  bool within = true;
  json.Key("calibration").Open('{');
  json.Key("tolerance").Value(kTolerance);
  json.Key("residual").Value("model (1 + gain) / published (1 + gain) - 1");
  json.Key("points").Open('[');
  const std::vector<SeedPoint> points = SeedPoints();
  for (size_t i = 0; i < points.size(); ++i) {
    const SeedPoint& p = points[i];
    within = WritePoint(json, options, p.name, "in_driver", p.published_gain, seed[i]) && within;
    if (p.published_interrupt_iops > 0) {
      json.Key("published_interrupt_iops").Value(p.published_interrupt_iops);
      json.Key("published_adaptive_iops").Value(p.published_adaptive_iops);
    }
    json.Key("in_driver_engine");
    WriteCounts(json, seed[i].in_driver.counts);
    json.Close('}');
  }
  const GsimPoint g;
  const Comparison& gc = seed[points.size()];
  within = WritePoint(json, options, g.name, "gsim", g.published_gsim_iops / g.published_interrupt_iops - 1, gc) &&
           within;
  json.Key("published_interrupt_iops").Value(g.published_interrupt_iops);
  json.Key("published_gsim_iops").Value(g.published_gsim_iops);
  json.Key("gsim_masks").Value(static_cast<double>(gc.gsim.stats.gsim_masks));
  json.Key("interrupt_rate").Value(gc.gsim.stats.measured > 0 ? gc.gsim.stats.interrupts * 1e9 / gc.gsim.stats.measured : 0);
  json.Close('}');
  json.Close(']');
  within = WritePostedMsi(json, options) && within;
  json.Key("fitted").Open('{');
  json.Key("mechanism").Value(MechanismName(options.mechanism));
  json.Key("parameters");
  WriteParams(json, FittedSeedParameters(options.mechanism));
  json.Close('}');
  json.Key("all_within").Value(within);
  json.Close('}');
  std::fprintf(options.log, "  fitted by hand (%s; every parameter and its source: nvme-adapt-sim params):",
               MechanismName(options.mechanism).c_str());
  for (const NamedValue& v : FittedSeedParameters(options.mechanism)) {
    std::fprintf(options.log, " %s %.6g", v.name.c_str(), v.value);
  }
  std::fprintf(options.log, "\n");
  return within;
}

bool ReportValidation(Json& json, const ReportOptions& options, const UvnvmeMeasured& measured) {
  json.Key("validation").Open('{');
  if (!measured.present) {
    std::fprintf(options.log, "validation: no uvnvme measurement given\n");
    json.Key("error").Value("no uvnvme measurement given (bench/sim_bench.py reads build/bench-results/uvnvme.json)");
    json.Close('}');
    return false;
  }
  std::fprintf(options.log, "validation: uvnvme on this machine, poll/interrupt IOPS (model with parameters from "
                            "the same bench run)\n");
  json.Key("tolerance").Value(kTolerance);
  json.Key("points").Open('[');
  bool within = true;
  const uint32_t depths[] = {1, 8, 32};
  for (int i = 0; i < 3; ++i) {
    Case c{"uvnvme_qd" + std::to_string(depths[i]), measured.costs, HostLayout{1, 1}, measured.drive,
           Workload{1, 1, depths[i], 1.0, 4096}};
    const RunLength length{5 * kMs, (options.reduced ? 100 : 400) * kMs};
    const double irq = RunCase(c, PolicyKind::kInterrupt, options.policy, options.agent, length).stats.Iops();
    const double poll = RunCase(c, PolicyKind::kPoll, options.policy, options.agent, length).stats.Iops();
    const double model = poll / irq;
    const double residual = model / measured.ratio[i] - 1;
    within = within && std::fabs(residual) <= kTolerance;
    std::fprintf(options.log, "  QD%-3u measured x%.3f model x%.3f (interrupt %.4g, poll %.4g IOPS) residual %+.1f%%\n",
                 depths[i], measured.ratio[i], model, irq, poll, 100 * residual);
    json.Open('{');
    json.Key("name").Value("qd" + std::to_string(depths[i]));
    json.Key("measured").Value(measured.ratio[i]);
    json.Key("model").Value(model);
    json.Key("residual").Value(residual);
    json.Key("within").Value(std::fabs(residual) <= kTolerance);
    json.Key("model_interrupt_iops").Value(irq);
    json.Key("model_poll_iops").Value(poll);
    json.Close('}');
  }
  json.Close(']');
  json.Key("all_within").Value(within);
  json.Close('}');
  return within;
}

void ReportAgentKeeps(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed) {
  std::fprintf(options.log, "agent_keeps: agent gain / in-driver gain at the measured decision-to-effect latency "
                            "(%.0f us to poll, %.0f us to interrupt)\n",
               options.agent.to_poll_effect / 1e3, options.agent.to_interrupt_effect / 1e3);
  json.Key("agent_keeps").Open('[');
  const std::vector<SeedPoint> points = SeedPoints();
  for (size_t i = 0; i < points.size(); ++i) {
    const SeedPoint& p = points[i];
    const Comparison& c = seed[i];
    const double in_driver = c.Gain(c.in_driver_iops), agent = c.Gain(c.agent_iops);
    // A gain within 1 % of nothing has nothing to keep: the ratio of gains would be noise.
    const bool meaningful = std::fabs(in_driver) >= 0.01;
    std::fprintf(options.log, "  %-12s in-driver %+7.2f%% agent %+7.2f%% ratio %s (IOPS agent/in-driver %.3f)\n",
                 p.name.c_str(), 100 * in_driver, 100 * agent,
                 meaningful ? std::to_string(agent / in_driver).substr(0, 5).c_str() : "n/a",
                 c.agent_iops / c.in_driver_iops);
    json.Open('{');
    json.Key("name").Value(p.name);
    json.Key("latency_to_poll_ns").Value(static_cast<double>(options.agent.to_poll_effect));
    json.Key("latency_to_interrupt_ns").Value(static_cast<double>(options.agent.to_interrupt_effect));
    json.Key("in_driver_gain").Value(in_driver);
    json.Key("agent_gain").Value(agent);
    if (meaningful) {
      json.Key("ratio").Value(agent / in_driver);
    } else {
      json.Key("ratio").Raw("null");
      json.Key("ratio_note").Value("in-driver gain within 1 %: nothing to keep; see iops_ratio");
    }
    json.Key("iops_ratio").Value(c.agent_iops / c.in_driver_iops);
    // The same agent with levers that do not hold its loop (the acknowledgement awaited off the loop).
    AgentLatency async = options.agent;
    async.to_poll_blocking = async.to_interrupt_blocking = 0;
    const Comparison a = Compare(SeedCase(p.name, p.load, options.mechanism), options, async, false, &c);
    const double async_gain = a.Gain(a.agent_iops);
    std::fprintf(options.log, "  %-12s with levers off the loop: agent %+7.2f%% ratio %s\n", "", 100 * async_gain,
                 meaningful ? std::to_string(async_gain / in_driver).substr(0, 5).c_str() : "n/a");
    json.Key("agent_gain_levers_off_loop").Value(async_gain);
    if (meaningful) json.Key("ratio_levers_off_loop").Value(async_gain / in_driver);
    json.Key("agent_engine");
    WriteCounts(json, c.agent.counts);
    json.Close('}');
  }
  json.Close(']');
}

void ReportLatencyCurve(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed) {
  const SeedPoint point = SeedPoints()[4];  // 15 x 8 QD64
  const Comparison& baseline = seed[4];
  const Case c = SeedCase(point.name, point.load, options.mechanism);
  std::vector<Nanos> latencies{10'000, 100'000, 1'000'000, 10'000'000, 100'000'000};
  if (!options.reduced) latencies = {10'000, 30'000, 100'000, 300'000, 1'000'000, 3'000'000, 10'000'000, 30'000'000, 100'000'000};
  std::fprintf(options.log, "latency_curve: %s, agent gain against decision-to-effect latency (the loop waits "
                            "for each switch; ring delay %.0f us)\n", point.name.c_str(), options.agent.ring_delay / 1e3);
  json.Key("latency_curve").Open('[');
  for (Nanos latency : latencies) {
    const Comparison r = Compare(c, options, WithEffectLatency(options.agent, latency), false, &baseline);
    std::fprintf(options.log, "  %9.3f ms: agent %+7.2f%%, in-driver %+7.2f%% (agent polled %.0f%% of completions)\n",
                 latency / 1e6, 100 * r.Gain(r.agent_iops), 100 * r.Gain(r.in_driver_iops),
                 100 * r.agent.stats.PollShare());
    json.Open('{');
    json.Key("latency_ns").Value(static_cast<double>(latency));
    json.Key("agent_gain").Value(r.Gain(r.agent_iops));
    json.Key("in_driver_gain").Value(r.Gain(r.in_driver_iops));
    json.Key("agent_poll_share").Value(r.agent.stats.PollShare());
    json.Key("agent_engine");
    WriteCounts(json, r.agent.counts);
    json.Close('}');
  }
  json.Close(']');
  json.Key("latency_curve_point").Value(point.name);
}

void ReportParameters(Json& json, const ReportOptions& options, const UvnvmeMeasured& measured) {
  json.Key("parameters").Open('{');
  json.Key("seed_host_costs");
  WriteParams(json, DescribeSeedCosts(options.mechanism));
  json.Key("seed_host_layout");
  WriteParams(json, DescribeLayout(SeedHostLayout(), "fit by hand: the cover letter does not give the machine (60 CPUs: two jobs of two devices on each at 15 x 8)"));
  json.Key("drives").Open('{');
  for (const DriveProfile& d : SweepDrives()) {
    json.Key(d.name);
    WriteParams(json, DescribeDrive(d));
  }
  json.Close('}');
  json.Key("agent");
  WriteParams(json, DescribeAgent(options.agent));
  if (measured.present) {
    json.Key("uvnvme_host_costs");
    WriteParams(json, DescribeCosts(measured.costs, "measured: derived from build/bench-results/uvnvme.json of this run"));
    json.Key("uvnvme_drive");
    WriteParams(json, DescribeDrive(measured.drive));
  }
  json.Close('}');
}

}  // namespace nvmeadapt::sim
