// The seed's kind of sweep: drives x read/write mix x depth x jobs x devices, each case under static
// interrupt, the in-driver engine and the agent; counted as the cover letter counts (more than 5 % either
// way), with the regressed cases named and the engine's verdicts that explain them.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "sim/report.h"

namespace nvmeadapt::sim {
namespace {

constexpr double kSignificant = 0.05;

struct Mix {
  const char* name;
  double read_fraction;
};

struct Tally {
  std::vector<double> better, worse;
  uint32_t cases = 0;
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

void WriteTally(Json& json, const Tally& t, FILE* log, const char* name) {
  const double best = t.better.empty() ? 0 : *std::max_element(t.better.begin(), t.better.end());
  const double worst = t.worse.empty() ? 0 : *std::min_element(t.worse.begin(), t.worse.end());
  std::fprintf(log, "  %-9s %u cases: %zu better (max %+.1f%%, median %+.1f%%), %zu worse (max %+.1f%%, median %+.1f%%)\n",
               name, t.cases, t.better.size(), 100 * best, 100 * Median(t.better), t.worse.size(), 100 * worst,
               100 * Median(t.worse));
  json.Open('{');
  json.Key("cases").Value(static_cast<double>(t.cases));
  json.Key("improved").Value(static_cast<double>(t.better.size()));
  json.Key("improved_max").Value(best);
  json.Key("improved_median").Value(Median(t.better));
  json.Key("regressed").Value(static_cast<double>(t.worse.size()));
  json.Key("regressed_max").Value(worst);
  json.Key("regressed_median").Value(Median(t.worse));
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

}  // namespace

void ReportSweep(Json& json, const ReportOptions& options) {
  const Mix mixes[] = {{"randread", 1.0}, {"randwrite", 0.0}, {"randrw", 0.7}};
  std::vector<uint32_t> depths{1, 32, 128}, jobs{1, 8}, devices{1, 4};
  if (!options.reduced) {
    depths = {1, 8, 32, 64, 128};
    jobs = {1, 4, 8};
    devices = {1, 4, 15};
  }
  Tally in_driver, agent;
  std::fprintf(options.log, "sweep (%s): drives x randread/randwrite/randrw x QD x jobs x devices\n",
               options.reduced ? "reduced" : "full");
  json.Key("sweep").Open('{');
  json.Key("reduced").Value(options.reduced);
  json.Key("significant").Value(kSignificant);
  json.Key("regressed_cases").Open('[');
  for (const DriveProfile& drive : SweepDrives()) {
    for (const Mix& mix : mixes) {
      for (uint32_t d : devices) {
        for (uint32_t j : jobs) {
          for (uint32_t qd : depths) {
            const std::string name = drive.name + " " + mix.name + " " + std::to_string(d) + "x" +
                                     std::to_string(j) + " QD" + std::to_string(qd);
            const Case c{name, SeedHostCosts(), SeedHostLayout(), drive, Workload{d, j, qd, mix.read_fraction, 4096}};
            const Comparison r = Compare(c, options, options.agent, false);
            const double gi = r.Gain(r.in_driver_iops), ga = r.Gain(r.agent_iops);
            in_driver.Add(gi);
            agent.Add(ga);
            using Row = std::tuple<const char*, double, const CaseResult*>;
            for (const auto& [policy, gain, result] : {Row{"in_driver", gi, &r.in_driver}, Row{"agent", ga, &r.agent}}) {
              if (gain >= -kSignificant) continue;
              std::fprintf(options.log, "  regressed: %-40s %-9s %+6.1f%%: %s\n", name.c_str(), policy, 100 * gain,
                           Why(*result).c_str());
              json.Open('{');
              json.Key("name").Value(name);
              json.Key("policy").Value(policy);
              json.Key("gain").Value(gain);
              json.Key("interrupt_iops").Value(r.interrupt_iops);
              json.Key("why").Value(Why(*result));
              json.Close('}');
            }
          }
        }
      }
    }
  }
  json.Close(']');
  json.Key("in_driver");
  WriteTally(json, in_driver, options.log, "in_driver");
  json.Key("agent");
  WriteTally(json, agent, options.log, "agent");
  json.Close('}');
}

}  // namespace nvmeadapt::sim
