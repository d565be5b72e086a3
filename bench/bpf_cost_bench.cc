// SPDX-License-Identifier: Apache-2.0
// bpf_cost_bench: per-event cost of the completion program (the real collector on
// tp_btf/block_rq_complete) against a bare tp_btf counter on the same tracepoint. Both are attached at
// the same time under one fio load, so they see the same events, and the kernel's BPF run-time
// statistics (kernel.bpf_stats_enabled=1) time each. Two halves swap the attach order (a tracepoint runs
// its programs in attach order), so neither always runs first. Writes the JSON bench/run-all collects.
//   bpf_cost_bench --device /dev/loopN --out FILE [--io-mib N]
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "agent/collect/collector.h"
#include "bare_counter.skel.h"
#include "bench/bpf_stats_sysctl.h"

using namespace nvmeadapt;
using namespace nvmeadapt::collect;
using namespace nvmeadapt::bench;

namespace {


struct RunStats {
  uint64_t count = 0;
  uint64_t time_ns = 0;
  RunStats operator-(const RunStats& o) const { return {count - o.count, time_ns - o.time_ns}; }
  RunStats& operator+=(const RunStats& o) {
    count += o.count;
    time_ns += o.time_ns;
    return *this;
  }
  double PerEvent() const { return count ? static_cast<double>(time_ns) / static_cast<double>(count) : 0; }
};

RunStats ProgramRunStats(int fd) {
  bpf_prog_info info{};
  uint32_t length = sizeof info;
  if (bpf_obj_get_info_by_fd(fd, &info, &length) != 0) return {};
  return {info.run_cnt, info.run_time_ns};
}

RunStats CompletionRunStats(const Collector& collector) {
  for (const ProgramStats& program : collector.Stats().programs) {
    if (program.name == "tp_btf/block_rq_complete") return {program.run_count, program.run_time_ns};
  }
  return {};
}


// kernel.bpf_stats_enabled=1 while it lives, the previous value back after (bench/bpf_cost restores it
// too, should this process be killed).
class StatsEnabled {
 public:
  StatsEnabled() : before_(ReadSysctl()) { ok_ = WriteSysctl("1") && ReadSysctl() == "1"; }
  ~StatsEnabled() { WriteSysctl(before_); }
  bool ok() const { return ok_; }
  const std::string& before() const { return before_; }

 private:
  std::string before_;
  bool ok_ = false;
};

bool RunFio(const std::string& device, int mib) {
  const std::string command = "fio --name=bpf_cost --filename=" + device +
                              " --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=16 --io_size=" +
                              std::to_string(mib) + "M --randrepeat=0 --norandommap --output-format=terse > /dev/null";
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::unique_ptr<Collector> OpenBlockCollector() {
  CollectorOptions options;  // production defaults (window 8192), block program only
  options.irqs = false;
  options.kernel_nvme = false;
  auto collector = OpenCollector(options);
  if (!collector.ok() || (*collector)->Name() != "bpf") {
    std::cerr << "bpf_cost_bench: the BPF collector did not open: "
              << (collector.ok() ? "fell back to " + (*collector)->Name() : collector.error().message) << "\n";
    return nullptr;
  }
  return std::move(*collector);
}

struct Half {
  RunStats bare, completion;
};

// One fio pass with both programs attached, in the given order.
std::optional<Half> MeasureHalf(bare_counter* bare, bool bare_first, const std::string& device, int mib) {
  std::unique_ptr<Collector> collector;
  if (!bare_first && !(collector = OpenBlockCollector())) return std::nullopt;
  bpf_link* link = bpf_program__attach(bare->progs.na_bare_block_rq_complete);
  if (link == nullptr) {
    std::cerr << "bpf_cost_bench: attaching the bare counter failed: " << strerror(errno) << "\n";
    return std::nullopt;
  }
  if (bare_first && !(collector = OpenBlockCollector())) {
    bpf_link__destroy(link);
    return std::nullopt;
  }
  const int bare_fd = bpf_program__fd(bare->progs.na_bare_block_rq_complete);
  const RunStats bare0 = ProgramRunStats(bare_fd), completion0 = CompletionRunStats(*collector);
  const bool ran = RunFio(device, mib);
  const Half half{ProgramRunStats(bare_fd) - bare0, CompletionRunStats(*collector) - completion0};
  bpf_link__destroy(link);
  if (!ran) {
    std::cerr << "bpf_cost_bench: fio failed on " << device << "\n";
    return std::nullopt;
  }
  return half;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device, out;
  int mib = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--device") {
      device = argv[i + 1];
    } else if (arg == "--out") {
      out = argv[i + 1];
    } else if (arg == "--io-mib") {
      mib = std::atoi(argv[i + 1]);
    }
  }
  if (device.empty() || out.empty() || mib <= 0) {
    std::cerr << "usage: bpf_cost_bench --device /dev/loopN --out FILE [--io-mib N]\n";
    return 2;
  }
  if (geteuid() != 0) {
    std::cerr << "bpf_cost_bench: needs root (loads BPF programs, sets kernel.bpf_stats_enabled)\n";
    return 1;
  }
  bare_counter* bare = bare_counter__open_and_load();
  if (bare == nullptr) {
    std::cerr << "bpf_cost_bench: loading the bare counter failed: " << strerror(errno) << "\n";
    return 1;
  }

  Half total;
  std::string halves, before, during;
  bool ok = true;
  {
    StatsEnabled stats;
    before = stats.before();
    during = ReadSysctl();
    ok = stats.ok();
    if (!ok) std::cerr << "bpf_cost_bench: could not set kernel.bpf_stats_enabled=1\n";
    for (bool bare_first : {false, true}) {
      if (!ok) break;
      const auto half = MeasureHalf(bare, bare_first, device, mib);
      if (!(ok = half.has_value())) break;
      total.bare += half->bare;
      total.completion += half->completion;
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s{\"first\": \"%s\", \"bare_ns\": %.1f, \"completion_ns\": %.1f, \"bare_events\": %llu, "
                    "\"completion_events\": %llu}",
                    bare_first ? ", " : "", bare_first ? "bare" : "completion", half->bare.PerEvent(),
                    half->completion.PerEvent(), static_cast<unsigned long long>(half->bare.count),
                    static_cast<unsigned long long>(half->completion.count));
      halves += line;
    }
  }
  const std::string after = ReadSysctl();
  bare_counter__destroy(bare);
  if (!ok) return 1;

  const double bare_ns = total.bare.PerEvent(), completion_ns = total.completion.PerEvent();
  const double ratio = bare_ns > 0 ? completion_ns / bare_ns : 0;
  std::ofstream json(out);
  json << "{\n  \"summary\": {\"bare_counter_ns_per_event\": " << bare_ns << ", \"completion_ns_per_event\": "
       << completion_ns << ", \"ratio\": " << ratio << ", \"bare_counter_events\": " << total.bare.count
       << ", \"completion_events\": " << total.completion.count << "},\n"
       << "  \"bare_counter_ns_per_event\": " << bare_ns << ",\n  \"completion_ns_per_event\": " << completion_ns
       << ",\n  \"ratio\": " << ratio << ",\n  \"bare_counter_events\": " << total.bare.count
       << ",\n  \"completion_events\": " << total.completion.count << ",\n  \"halves\": [" << halves << "],\n"
       << "  \"method\": \"both programs attached to tp_btf/block_rq_complete at the same time, attach order "
          "swapped between two halves; fio randread 4 KiB direct libaio iodepth 16, "
       << mib << " MiB per half on " << device
       << "; run_time_ns / run_cnt deltas from bpf_obj_get_info_by_fd\",\n"
       << "  \"bpf_stats_enabled\": {\"before\": \"" << before << "\", \"during\": \"" << during
       << "\", \"after\": \"" << after << "\"}\n}\n";
  std::cout << "bpf_cost: bare " << bare_ns << " ns/event (" << total.bare.count << " events), completion "
            << completion_ns << " ns/event (" << total.completion.count << " events), ratio " << ratio << "\n";
  if (after != before) {
    std::cerr << "bpf_cost_bench: kernel.bpf_stats_enabled is " << after << ", was " << before << "\n";
    return 1;
  }
  return json ? 0 : 1;
}
