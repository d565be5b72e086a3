// SPDX-License-Identifier: Apache-2.0
// The seed's kind of sweep: drives x read/write mix x depth x jobs x devices, each case under static
// interrupt, the in-driver engine, GSIM, the agent and the agent with the node layer; counted as the cover letter counts (more than 5 %
// either way), with the regressed cases named and the engine's verdicts that explain them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "sim/report.h"

namespace nvmeadapt::sim {
namespace {

constexpr double kSignificant = 0.05;

struct Mix {
  const char* name;
  double read_fraction;
};

struct Tally {
  const char* name;
  std::vector<double> better, worse;
  uint32_t cases = 0;
  double run_seconds = 0;  // CPU seconds of this policy's runs
  void Add(double gain) {
    ++cases;
    if (gain > kSignificant) better.push_back(gain);
    if (gain < -kSignificant) worse.push_back(gain);
  }
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void WriteTally(Json& json, const Tally& t, FILE* log) {
  const char* name = t.name;
  const double best = t.better.empty() ? 0 : *std::max_element(t.better.begin(), t.better.end());
  const double worst = t.worse.empty() ? 0 : *std::min_element(t.worse.begin(), t.worse.end());
  std::fprintf(log, "  %-9s %u cases: %zu better (max %+.1f%%, median %+.1f%%), %zu worse (max %+.1f%%, median %+.1f%%)\n",
               name, t.cases, t.better.size(), 100 * best, 100 * Median(t.better), t.worse.size(), 100 * worst,
               100 * Median(t.worse));
  json.Key(name).Open('{');
  json.Key("cases").Value(static_cast<double>(t.cases));
  json.Key("better").Value(static_cast<double>(t.better.size()));
  json.Key("better_max").Value(best);
  json.Key("better_median").Value(Median(t.better));
  json.Key("worse").Value(static_cast<double>(t.worse.size()));
  json.Key("worse_max").Value(worst);
  json.Key("worse_median").Value(Median(t.worse));
  json.Key("run_seconds").Value(t.run_seconds);
  json.Close('}');
}

// Why a case lost against static interrupt, from the engine's own verdicts in that run.
std::string Why(const CaseResult& r) {
  const EngineCounts& c = r.counts;
  const uint64_t failed = c.behind_pace + c.not_faster + c.stalled;
  if (c.to_poll == 0) return "never polled: the loss is the run's noise, not the policy";
  if (failed > 0) {
    return std::to_string(c.to_poll) + " tries, " + std::to_string(failed) + " failed (" +
           std::to_string(c.behind_pace) + " behind pace, " + std::to_string(c.not_faster) + " not faster, " +
           std::to_string(c.stalled) + " stalled): each failed try polled at a loss until its verdict";
  }
  return "polled and every window beat its baseline, yet the run is slower: the baseline window was measured "
         "while neighbouring queues polled (or the switch's latency cost more than the windows gained)";
}


void WriteRegressed(Json& json, const ReportOptions& options, const std::string& name, const char* policy,
                   double gain, const Comparison& r, const CaseResult* engine) {
  const std::string why = engine ? Why(*engine) : "GSIM's delay held completions longer than the interrupts it saved";
  std::fprintf(options.log, "  regressed: %-40s %-9s %+6.1f%%: %s\n", name.c_str(), policy, 100 * gain, why.c_str());
  json.Open('{');
  json.Key("name").Value(name);
  json.Key("policy").Value(policy);
  json.Key("gain").Value(gain);
  json.Key("interrupt_iops").Value(r.interrupt_iops);
  json.Key("why").Value(why);
  json.Close('}');
}

}  // namespace

void ReportSweep(Json& json, const ReportOptions& options) {
  const Mix mixes[] = {{"randread", 1.0}, {"randwrite", 0.0}, {"randrw", 0.7}};
  std::vector<uint32_t> depths{1, 32, 128}, jobs{1, 8}, devices{1, 4};
  if (!options.reduced) {
    depths = {1, 8, 32, 64, 128};
    jobs = {1, 4, 8};
    devices = {1, 4, 15};
  }
  Tally in_driver{"in_driver"}, gsim{"gsim"}, agent{"agent"}, node{"node"};
  double baseline_seconds = 0;
  uint32_t total = 0;
  // Per device count: cases in the sweep, cases run and their CPU seconds (the estimate is per stratum:
  // a 15-device case costs far more than a one-device one).
  std::vector<double> stratum_total(devices.size()), stratum_run(devices.size()), stratum_seconds(devices.size());
  const auto wall_start = std::chrono::steady_clock::now();
  std::fprintf(options.log, "sweep (%s%s): drives x randread/randwrite/randrw x QD x jobs x devices\n",
               options.reduced ? "reduced" : "full",
               options.sweep_sample > 1 ? (", every " + std::to_string(options.sweep_sample) + "th case").c_str() : "");
  json.Key("sweep").Open('{');
  json.Key("reduced").Value(options.reduced);
  json.Key("significant").Value(kSignificant);
  json.Key("regressed_cases").Open('[');
  for (const DriveProfile& drive : SweepDrives()) {
    for (const Mix& mix : mixes) {
      for (size_t di = 0; di < devices.size(); ++di) {
        const uint32_t d = devices[di];
        for (uint32_t j : jobs) {
          for (uint32_t qd : depths) {
            ++stratum_total[di];
            if (total++ % options.sweep_sample != 0) continue;
            const std::string name = drive.name + " " + mix.name + " " + std::to_string(d) + "x" +
                                     std::to_string(j) + " QD" + std::to_string(qd);
            const Case c{name, SeedHostCosts(options.mechanism), SeedHostLayout(), drive,
                         Workload{d, j, qd, mix.read_fraction, 4096}};
            const Comparison r = Compare(c, options, options.agent, false);
            baseline_seconds += r.interrupt_seconds;
            ++stratum_run[di];
            stratum_seconds[di] +=
                r.interrupt_seconds + r.in_driver_seconds + r.gsim_seconds + r.agent_seconds + r.node_seconds;
            in_driver.run_seconds += r.in_driver_seconds;
            gsim.run_seconds += r.gsim_seconds;
            agent.run_seconds += r.agent_seconds;
            node.run_seconds += r.node_seconds;
            const double gi = r.Gain(r.in_driver_iops), gg = r.Gain(r.gsim_iops), ga = r.Gain(r.agent_iops);
            const double gn = r.Gain(r.node_iops);
            in_driver.Add(gi);
            gsim.Add(gg);
            agent.Add(ga);
            node.Add(gn);
            if (gi < -kSignificant) WriteRegressed(json, options, name, "in_driver", gi, r, &r.in_driver);
            if (gg < -kSignificant) WriteRegressed(json, options, name, "gsim", gg, r, nullptr);
            if (ga < -kSignificant) WriteRegressed(json, options, name, "agent", ga, r, &r.agent);
            if (gn < -kSignificant) WriteRegressed(json, options, name, "node", gn, r, &r.node);
          }
        }
      }
    }
  }
  json.Close(']');
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double cpu =
      baseline_seconds + in_driver.run_seconds + gsim.run_seconds + agent.run_seconds + node.run_seconds;
  const uint32_t sampled = in_driver.cases;
  json.Key("cases_in_sweep").Value(static_cast<double>(total));
  json.Key("cases_run").Value(static_cast<double>(sampled));
  json.Key("baseline_run_seconds").Value(baseline_seconds);
  json.Key("run_seconds").Value(cpu);
  json.Key("wall_seconds").Value(wall);
  double estimate = 0;
  for (size_t di = 0; di < devices.size(); ++di) {
    if (stratum_run[di] > 0) estimate += stratum_seconds[di] * stratum_total[di] / stratum_run[di];
  }
  json.Key("estimated_full_run_seconds").Value(estimate);
  std::fprintf(options.log, "  %u of %u cases, %.0f s CPU (%.0f s wall); the whole sweep: about %.0f s CPU\n", sampled,
               total, cpu, wall, estimate);
  json.Key("policies").Open('{');
  for (const Tally* t : {&in_driver, &gsim, &agent, &node}) WriteTally(json, *t, options.log);
  json.Close('}');
  json.Close('}');
}

}  // namespace nvmeadapt::sim
