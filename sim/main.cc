// SPDX-License-Identifier: Apache-2.0
// nvme-adapt-sim: a discrete-event model of a host and its NVMe devices with the project's engine in the
// loop (docs/scale.md). A model: its figures are what its parameters imply, never measurements.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/report.h"

using namespace nvmeadapt::sim;

namespace {

constexpr const char* kUsage =
    "usage: nvme-adapt-sim report [--full] [--out FILE] [--sections LIST] [--mechanism NAME] [--sweep-sample N]\n"
    "                             [--try-clock switch|first_completion]\n"
    "                             [--uvnvme-ratios QD1,QD8,QD32 --uvnvme-set NAME=VALUE...]\n"
    "       nvme-adapt-sim point [--devices N] [--jobs N] [--qd N] [--read FRACTION] [--drive NAME] [--ms N]\n"
    "                            [--policy interrupt|poll|in_driver|agent|gsim|node] [--effect-us N] [--mechanism NAME]\n"
    "                            [--try-clock switch|first_completion]\n"
    "                            [--set NAME=VALUE...]\n"
    "       nvme-adapt-sim params\n"
    "report: calibration against the patch's six published points, validation against uvnvme (needs\n"
    "  --uvnvme-ratios and the parameters from the same bench run, bench/sim_bench.py passes them), what the\n"
    "  agent keeps, the node layer, the latency curve and the sweep; reduced unless --full; writes JSON to --out.\n"
    "  LIST: comma-separated of calibration,validation,keeps,node,curve,sweep (default: all).\n"
    "  --sweep-sample N: run every N-th sweep case only and estimate the whole sweep's run time from them.\n"
    "--try-clock switch|first_completion: where the agent's try starts its clock, the policy field\n"
    "  try_clock_first_completion (default switch, the patch's rule; the in-driver arm always keeps it).\n"
    "NAME (--mechanism): what slows interrupt mode at 15 devices, interrupt_ceiling (default) or\n"
    "  per_entry_penalty (the older fit).\n"
    "point: one case under one policy (default all five), for exploring; NAME=VALUE sets a model parameter\n"
    "  (names as `params` prints them); --effect-us: the agent's decision-to-effect latency (its loop waits\n"
    "  as long), instead of the measured one.\n";

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "nvme-adapt-sim: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

double Number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') Fail(flag + ": not a number: '" + text + "'");
  return v;
}

void SetNamed(HostCosts& costs, HostLayout& layout, DriveProfile& drive, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) Fail("expected NAME=VALUE, got '" + assignment + "'");
  const std::string name = assignment.substr(0, eq);
  if (!SetParameter(costs, layout, drive, name, Number(name, assignment.substr(eq + 1)))) {
    Fail("no model parameter named '" + name + "'");
  }
}

void PrintParams(const std::vector<NamedValue>& values) {
  for (const NamedValue& v : values) {
    std::printf("  %-26s %14.6g %-9s %s\n", v.name.c_str(), v.value, v.unit.c_str(), v.source.c_str());
  }
}

int Params() {
  std::printf("seed host costs:\n");
  PrintParams(DescribeSeedCosts());
  std::printf("GSIM (the gsim policy):\n");
  PrintParams(DescribeGsim(GsimSuggested()));
  std::printf("seed host layout:\n");
  PrintParams(DescribeLayout(SeedHostLayout(), "fit by hand: the cover letter does not give the machine (60 CPUs: two jobs of two devices on each at 15 x 8)"));
  for (const DriveProfile& d : SweepDrives()) {
    std::printf("drive %s:\n", d.name.c_str());
    PrintParams(DescribeDrive(d));
  }
  std::printf("agent:\n");
  PrintParams(DescribeAgent(MeasuredAgentLatency()));
  return 0;
}

bool TryClockFirstCompletion(const std::string& value) {
  if (value != "switch" && value != "first_completion") Fail("--try-clock: switch or first_completion, not '" + value + "'");
  return value == "first_completion";
}

int Point(const std::vector<std::string>& args) {
  ScaleMechanism mechanism = ScaleMechanism::kCeiling;
  Case c = SeedCase("point", Workload{}, mechanism);
  Nanos ms = 100;
  std::string only;
  std::vector<std::string> sets;
  AgentLatency agent = MeasuredAgentLatency();
  nvmeadapt::engine::Policy policy = PatchPolicy();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) Fail(flag + " needs a value");
    const std::string& value = args[++i];
    if (flag == "--devices") c.load.devices = static_cast<uint32_t>(Number(flag, value));
    else if (flag == "--jobs") c.load.jobs_per_device = static_cast<uint32_t>(Number(flag, value));
    else if (flag == "--qd") c.load.qd = static_cast<uint32_t>(Number(flag, value));
    else if (flag == "--read") c.load.read_fraction = Number(flag, value);
    else if (flag == "--ms") ms = static_cast<Nanos>(Number(flag, value));
    else if (flag == "--policy") only = value;
    else if (flag == "--effect-us") {  // the agent's decision-to-effect latency, its loop waiting as long
      agent.to_poll_effect = agent.to_interrupt_effect = static_cast<Nanos>(Number(flag, value) * 1e3);
      agent.to_poll_blocking = agent.to_interrupt_blocking = agent.to_poll_effect;
    }
    else if (flag == "--set") sets.push_back(value);
    else if (flag == "--try-clock") policy.try_clock_first_completion = TryClockFirstCompletion(value);
    else if (flag == "--mechanism") {
      if (!ParseMechanism(value, mechanism)) Fail("--mechanism: no mechanism named '" + value + "'");
      c.costs = SeedHostCosts(mechanism);
    } else if (flag == "--drive") {
      bool found = false;
      for (const DriveProfile& d : SweepDrives()) {
        if (d.name == value) c.drive = d, found = true;
      }
      if (!found) Fail("no drive named '" + value + "'");
    } else {
      Fail("unknown flag " + flag);
    }
  }
  if (!only.empty() && only != "interrupt" && only != "poll" && only != "in_driver" && only != "agent" && only != "gsim" &&
      only != "node") {
    Fail("--policy: no policy named '" + only + "'");
  }
  for (const std::string& assignment : sets) SetNamed(c.costs, c.layout, c.drive, assignment);
  if (c.load.devices < 1 || c.load.jobs_per_device < 1 || c.load.qd < 1 || ms < 1) {
    Fail("--devices, --jobs, --qd and --ms must be at least 1");
  }
  for (PolicyKind k : {PolicyKind::kInterrupt, PolicyKind::kPoll, PolicyKind::kInDriver, PolicyKind::kAgent,
                       PolicyKind::kGsim, PolicyKind::kNode}) {
    if (!only.empty() && PolicyName(k) != only) continue;
    const CaseResult r = RunCase(c, k, policy, agent, RunLength{5'000'000, ms * 1'000'000});
    std::printf("%-9s %12.0f IOPS (model)  mean latency %8.1f us  polled %5.1f%%  interrupts %lu  poll runs %lu  "
                "gsim masks %lu  switches %lu  tries %lu (behind pace %lu, %lu of them at k = 1; not faster %lu, stalled %lu)\n",
                PolicyName(k).c_str(), r.stats.Iops(), r.stats.MeanLatencyUs(), 100 * r.stats.PollShare(),
                static_cast<unsigned long>(r.stats.interrupts), static_cast<unsigned long>(r.stats.poll_runs),
                static_cast<unsigned long>(r.stats.gsim_masks), static_cast<unsigned long>(r.stats.switches), static_cast<unsigned long>(r.counts.to_poll),
                static_cast<unsigned long>(r.counts.behind_pace), static_cast<unsigned long>(r.counts.behind_pace_first),
                static_cast<unsigned long>(r.counts.not_faster),
                static_cast<unsigned long>(r.counts.stalled));
  }
  return 0;
}

bool Wants(const std::string& sections, const std::string& name) {
  return sections.empty() || ("," + sections + ",").find("," + name + ",") != std::string::npos;
}

int Report(const std::vector<std::string>& args) {
  ReportOptions options;
  std::string out, sections;
  UvnvmeMeasured uvnvme;
  uvnvme.costs.poll_style = PollStyle::kSpin;  // uvnvme's reaper spins on its own queue when polling
  uvnvme.drive.name = "uvnvme";
  HostLayout unused_layout;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--full") {
      options.reduced = false;
      continue;
    }
    if (i + 1 >= args.size()) Fail(flag + " needs a value");
    const std::string& value = args[++i];
    if (flag == "--out") out = value;
    else if (flag == "--sections") sections = value;
    else if (flag == "--try-clock") options.policy.try_clock_first_completion = TryClockFirstCompletion(value);
    else if (flag == "--mechanism") {
      if (!ParseMechanism(value, options.mechanism)) Fail("--mechanism: no mechanism named '" + value + "'");
    } else if (flag == "--sweep-sample") {
      const double n = Number(flag, value);
      if (n < 1) Fail("--sweep-sample must be at least 1");
      options.sweep_sample = static_cast<uint32_t>(n);
    }
    else if (flag == "--uvnvme-set") SetNamed(uvnvme.costs, unused_layout, uvnvme.drive, value);
    else if (flag == "--uvnvme-ratios") {
      std::stringstream list(value);
      std::string item;
      int n = 0;
      while (std::getline(list, item, ',')) {
        if (n == 3) Fail("--uvnvme-ratios takes three ratios (QD1, QD8, QD32)");
        uvnvme.ratio[n++] = Number(flag, item);
      }
      if (n != 3) Fail("--uvnvme-ratios takes three ratios (QD1, QD8, QD32)");
      uvnvme.present = true;
    } else {
      Fail("unknown flag " + flag);
    }
  }
  uvnvme.drive.source = "measured: uvnvme's device model as build/bench-results/uvnvme.json reports it";
  Json json;
  json.Open('{');
  json.Key("tool").Value("nvme-adapt-sim");
  json.Key("note").Value("a discrete-event model with the project's engine in the loop: figures are what the "
                         "parameters imply, not measurements (docs/scale.md)");
  json.Key("reduced").Value(options.reduced);
  bool within = true;
  if (Wants(sections, "validation")) within = ReportValidation(json, options, uvnvme) && within;
  if (Wants(sections, "calibration") || Wants(sections, "keeps") || Wants(sections, "curve") ||
      Wants(sections, "node")) {
    const std::vector<Comparison> seed = CompareSeedPoints(options);
    if (Wants(sections, "calibration")) within = ReportCalibration(json, options, seed) && within;
    if (Wants(sections, "keeps")) ReportAgentKeeps(json, options, seed);
    if (Wants(sections, "node")) ReportNode(json, options, seed);
    if (Wants(sections, "curve")) ReportLatencyCurve(json, options, seed);
  }
  if (Wants(sections, "sweep")) ReportSweep(json, options);
  ReportParameters(json, options, uvnvme);
  json.Key("all_within_tolerance").Value(within);
  json.Close('}');
  if (!out.empty()) {
    std::ofstream file(out);
    file << json.Text() << "\n";
    if (!file.flush()) {
      std::fprintf(stderr, "nvme-adapt-sim: cannot write %s\n", out.c_str());
      return 1;
    }
    std::printf("nvme-adapt-sim: wrote %s\n", out.c_str());
  }
  if (!within) {
    std::fprintf(stderr, "nvme-adapt-sim: a calibration or validation point is outside 15 %%, or the validation "
                         "had no uvnvme measurement\n");
  }
  return within ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the tables show as they are computed, also through a pipe
  if (argc < 2) Fail("no command");
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "report") return Report(args);
  if (command == "point") return Point(args);
  if (command == "params") return Params();
  if (command == "--help" || command == "-h" || command == "help") {
    std::printf("%s", kUsage);
    return 0;
  }
  Fail("unknown command '" + command + "'");
}
