// SPDX-License-Identifier: Apache-2.0
// probe_fire_bench: what one fire of a userspace driver's probe costs the thread that fires it, with the
// collector's program behind it, apart from any driver: a tight loop fires one probe, in blocks, with the
// collector attached to this very process (OpenCollector + AttachProcess, as the agent does) and without,
// alternating which comes first. The figure per probe is the median over the rounds of (attached - not
// attached) thread CPU per fire, so it holds the argument moves the semaphore guards, the trap or the
// optimised call, and the BPF program; a block's preemption by other work is not in thread CPU time.
// kernel.bpf_stats_enabled=1 while it runs gives the BPF programs' own share.
//
// Built three times (bench/CMakeLists.txt): probe_fire_bench fires uvnvme's probes at 5-byte-nop sites,
// probe_fire_bench_nop1 the same at sys/sdt.h's 1-byte nops, probe_fire_bench_spdk calls an
// spdk_nvme_qpair_process_completions of its own (the collector's uprobe and return uprobe on it).
//   probe_fire_bench [--probes P,P...] [--fires N] [--rounds R] [--out FILE]   (JSON to FILE, default stdout)
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "agent/collect/collector.h"
#include "bench/bpf_stats_sysctl.h"
#include "common/clock.h"
#if !defined(PROBE_FIRE_SPDK)
#include "uvnvme/probes.h"
#endif

using namespace nvmeadapt;
using namespace nvmeadapt::collect;
using namespace nvmeadapt::bench;

#if defined(PROBE_FIRE_SPDK)
struct spdk_nvme_qpair {
  uint64_t reaped = 0;
};

// SPDK's signature; the collector finds it by name.
extern "C" __attribute__((noinline, used)) int32_t spdk_nvme_qpair_process_completions(spdk_nvme_qpair* qpair,
                                                                                      uint32_t max_completions) {
  asm volatile("" ::: "memory");
  qpair->reaped += max_completions;
  return static_cast<int32_t>(max_completions);
}
#endif

namespace {

constexpr const char* kSpdkProbe = "spdk_nvme_qpair_process_completions";

#if defined(PROBE_FIRE_SPDK)
const std::vector<std::string> kProbes = {kSpdkProbe};
const char* const kSite = "function entry and return";
#elif defined(UVNVME_PROBE_SITE_NOP1)
const std::vector<std::string> kProbes = {"tally", "mode", "complete", "irq"};
const char* const kSite = "1-byte nop";
#else
const std::vector<std::string> kProbes = {"tally", "mode", "complete", "irq"};
const char* const kSite = "5-byte nop";
#endif

int64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Thread CPU per fire of `fires` fires of `probe`, in ns. The arguments are what a reaper passes: a tally
// of 8 single-completion reaps closed now, a batch of one, a switch to the other mode.
double FireBlock(const std::string& probe, uint64_t fires) {
  const int64_t start = ThreadCpuNanos();
#if defined(PROBE_FIRE_SPDK)
  static spdk_nvme_qpair qpair;
  for (uint64_t i = 0; i < fires; ++i) spdk_nvme_qpair_process_completions(&qpair, 1);
  (void)probe;
#else
  namespace probes = uvnvme::probes;
  if (probe == "tally") {
    for (uint64_t i = 0; i < fires; ++i) {
      const auto now = static_cast<uint64_t>(MonotonicNanos());
      probes::Tally(0, 1, 8, 8, 0, 1, now - 175'000, now);
    }
  } else if (probe == "complete") {
    for (uint64_t i = 0; i < fires; ++i) probes::Complete(0, 1, 1, 0);
  } else if (probe == "irq") {
    for (uint64_t i = 0; i < fires; ++i) probes::Irq(0, 1);
  } else {
    for (uint64_t i = 0; i < fires; ++i) probes::Mode(0, 1, static_cast<uint32_t>(i & 1));
  }
#endif
  return static_cast<double>(ThreadCpuNanos() - start) / static_cast<double>(fires);
}

// The collector as the agent opens it for a userspace driver, with the option that attaches `probe`.
Result<std::unique_ptr<Collector>> OpenFor(const std::string& probe) {
  CollectorOptions options;
  options.kernel_nvme = options.block = options.irqs = false;
  options.userspace_per_reap = probe == "complete";
  options.userspace_wakeups = probe == "irq";
  auto collector = OpenCollector(options);
  if (collector.ok() && (*collector)->Name() != "bpf")
    return MakeError(ErrorCode::kUnavailable, "the BPF collector did not open (fell back to procfs)");
  return collector;
}

bool TrampolineMapped() {  // the kernel's uprobe trampoline page, where it optimised a 5-byte-nop site
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("[uprobes-trampoline]") != std::string::npos) return true;
  }
  return false;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Options {
  std::vector<std::string> probes = kProbes;
  uint64_t fires = 20'000;
  int rounds = 9;
  std::string out = "-";
};

// One probe: rounds of a detached and an attached block, the order alternating; the attach is made anew
// each round (its first fires, where the kernel optimises the site, are not timed).
Result<nlohmann::json> MeasureProbe(const std::string& probe, const Options& options) {
  auto opened = OpenFor(probe);
  if (!opened.ok()) return std::move(opened).take_error();
  Collector& collector = **opened;
  std::vector<double> detached, attached, paired;
  std::vector<std::string> hooks;
  const auto drain = [&] { return collector.Poll(0, [](const WindowEvent&) {}); };
  for (int round = 0; round < options.rounds; ++round) {
    double off = 0, on = 0;
    for (const bool attach : {round % 2 == 1, round % 2 == 0}) {
      if (!attach) {
        off = FireBlock(probe, options.fires);
        continue;
      }
      if (Status status = collector.AttachProcess(getpid(), ""); !status.ok()) return std::move(status).take_error();
      hooks = collector.Hooks();
      FireBlock(probe, options.fires / 10 + 1);
      on = FireBlock(probe, options.fires);
      if (Status status = collector.DetachProcess(getpid()); !status.ok()) return std::move(status).take_error();
      if (auto drained = drain(); !drained.ok()) return std::move(drained).take_error();
    }
    detached.push_back(off);
    attached.push_back(on);
    paired.push_back(on - off);
  }
  nlohmann::json bpf = nlohmann::json::object();
  for (const ProgramStats& program : collector.Stats().programs) {
    if (program.run_count > 0)  // only this probe's programs are attached: no kernel hooks
      bpf[program.name] = {{"runs", program.run_count},
                           {"ns_per_run", static_cast<double>(program.run_time_ns) / program.run_count}};
  }
  return nlohmann::json{{"ns_per_fire", Median(paired)},     {"paired_ns", paired},
                        {"detached_ns", Median(detached)},    {"attached_ns", Median(attached)},
                        {"hooks_attached", hooks},            {"bpf_programs", bpf},
                        {"uprobe_trampoline_mapped", TrampolineMapped()}};
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

bool ParseOptions(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--probes") {
      options.probes = SplitCommas(value);
    } else if (arg == "--fires") {
      options.fires = std::strtoull(value.c_str(), nullptr, 10);
    } else if (arg == "--rounds") {
      options.rounds = std::atoi(value.c_str());
    } else if (arg == "--out") {
      options.out = value;
    } else {
      return false;
    }
  }
  for (const std::string& probe : options.probes) {
    if (std::find(kProbes.begin(), kProbes.end(), probe) == kProbes.end()) {
      std::cerr << "probe_fire_bench: this build fires no probe named " << probe << "\n";
      return false;
    }
  }
  return options.fires > 0 && options.rounds > 0;
}


}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options)) {
    std::cerr << "usage: " << argv[0] << " [--probes P,P...] [--fires N] [--rounds R] [--out FILE]\n";
    return 2;
  }
  if (geteuid() != 0) {
    std::cerr << "probe_fire_bench: needs root (loads BPF programs, sets kernel.bpf_stats_enabled)\n";
    return 1;
  }
  utsname host{};
  uname(&host);
  nlohmann::json result{{"site", kSite},           {"kernel", host.release}, {"fires_per_block", options.fires},
                        {"rounds", options.rounds}, {"probes", nlohmann::json::object()}};
  const std::string stats_before = ReadSysctl();
  if (!WriteSysctl("1")) std::cerr << "probe_fire_bench: could not set kernel.bpf_stats_enabled=1 (no BPF times)\n";
  int status = 0;
  for (const std::string& probe : options.probes) {
    auto measured = MeasureProbe(probe, options);
    if (!measured.ok()) {
      std::cerr << "probe_fire_bench: " << probe << ": " << measured.error().message << "\n";
      status = 1;
      break;
    }
    std::cerr << "probe_fire_bench: " << probe << " (" << kSite << ") " << (*measured)["ns_per_fire"].get<double>()
              << " ns per fire\n";
    result["probes"][probe] = std::move(*measured);
  }
  if (!WriteSysctl(stats_before)) {
    std::cerr << "probe_fire_bench: could not restore kernel.bpf_stats_enabled=" << stats_before << "\n";
    status = 1;
  }
  if (status != 0) return status;
  if (options.out == "-") {
    std::cout << result.dump(1) << "\n";
    return 0;
  }
  std::ofstream out(options.out);
  out << result.dump(1) << "\n";
  out.flush();
  if (!out) std::cerr << "probe_fire_bench: cannot write " << options.out << ": " << std::strerror(errno) << "\n";
  return out ? 0 : 1;
}
