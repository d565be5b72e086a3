// bpf_cost_bench: per-event cost of the completion program (the real collector, tp_btf/block_rq_complete)
// against a bare tp_btf counter on the same tracepoint, both attached at the same time under one fio load,
// measured by the kernel's BPF run-time statistics. Two halves swap the attach order (a tracepoint runs
// its programs in attach order), so neither program always runs first. Writes the JSON bench/run-all expects.
//   bpf_cost_bench --device /dev/loopN --out FILE [--io-mib N]
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "agent/collect/collector.h"
#include "bare_counter.skel.h"

using namespace nvmeadapt;
using namespace nvmeadapt::collect;

namespace {

struct RunStats {
  uint64_t count = 0;
  uint64_t time_ns = 0;
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

std::string ReadSysctl() {
  std::ifstream in("/proc/sys/kernel/bpf_stats_enabled");
  std::string value;
  in >> value;
  return value;
}

bool RunFio(const std::string& device, int mib) {
  const std::string command = "fio --name=bpf_cost --filename=" + device +
                              " --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=16 --io_size=" +
                              std::to_string(mib) + "M --randrepeat=0 --norandommap --output-format=terse > /dev/null";
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

double PerEvent(const RunStats& s) { return s.count ? static_cast<double>(s.time_ns) / static_cast<double>(s.count) : 0; }

}  // namespace

int main(int argc, char** argv) {
  std::string device, out;
  int mib = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--device") device = argv[i + 1];
    else if (arg == "--out") out = argv[i + 1];
    else if (arg == "--io-mib") mib = std::atoi(argv[i + 1]);
  }
  if (device.empty() || out.empty()) {
    std::cerr << "usage: bpf_cost_bench --device /dev/loopN --out FILE [--io-mib N]\n";
    return 2;
  }
  if (geteuid() != 0) {
    std::cerr << "bpf_cost_bench: needs root (loads BPF programs, enables BPF run-time statistics)\n";
    return 1;
  }

  CollectorOptions options;  // production defaults: window 8192
  options.irqs = false;
  options.kernel_nvme = false;
  auto collector = OpenCollector(options);
  if (!collector.ok() || (*collector)->Name() != "bpf") {
    std::cerr << "bpf_cost_bench: the BPF collector did not open: "
              << (collector.ok() ? (*collector)->Name() : collector.error().message) << "\n";
    return 1;
  }
  bare_counter* bare = bare_counter__open_and_load();
  if (bare == nullptr) {
    std::cerr << "bpf_cost_bench: loading the bare counter failed: " << strerror(errno) << "\n";
    return 1;
  }
  const int bare_fd = bpf_program__fd(bare->progs.na_bare_block_rq_complete);

  // BPF_ENABLE_STATS holds kernel.bpf_stats_enabled at 1 while the fd is open; the kernel restores the
  // previous state when it closes, even if this process dies.
  const std::string sysctl_before = ReadSysctl();
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (stats_fd < 0) {
    std::cerr << "bpf_cost_bench: BPF_ENABLE_STATS failed: " << strerror(errno) << "\n";
    return 1;
  }
  const std::string sysctl_during = ReadSysctl();

  RunStats bare_total, completion_total;
  std::string halves;
  bool ok = true;
  for (int half = 0; half < 2 && ok; ++half) {
    // Half 0: the completion program is attached first (it was, at open); half 1: the bare one first.
    bpf_link* link = nullptr;
    if (half == 1) (*collector).reset();
    if (half == 0) link = bpf_program__attach(bare->progs.na_bare_block_rq_complete);
    if (half == 1) {
      link = bpf_program__attach(bare->progs.na_bare_block_rq_complete);
      auto reopened = OpenCollector(options);
      if (!reopened.ok()) {
        std::cerr << "bpf_cost_bench: reopening the collector failed: " << reopened.error().message << "\n";
        ok = false;
        bpf_link__destroy(link);
        break;
      }
      collector = std::move(reopened);
    }
    if (link == nullptr) {
      std::cerr << "bpf_cost_bench: attaching the bare counter failed: " << strerror(errno) << "\n";
      ok = false;
      break;
    }
    const RunStats bare0 = ProgramRunStats(bare_fd), done0 = CompletionRunStats(**collector);
    ok = RunFio(device, mib);
    const RunStats bare1 = ProgramRunStats(bare_fd), done1 = CompletionRunStats(**collector);
    bpf_link__destroy(link);
    const RunStats b{bare1.count - bare0.count, bare1.time_ns - bare0.time_ns};
    const RunStats c{done1.count - done0.count, done1.time_ns - done0.time_ns};
    bare_total.count += b.count;
    bare_total.time_ns += b.time_ns;
    completion_total.count += c.count;
    completion_total.time_ns += c.time_ns;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s{\"first\": \"%s\", \"bare_ns\": %.1f, \"completion_ns\": %.1f, \"bare_events\": %llu, "
                  "\"completion_events\": %llu}",
                  half ? ", " : "", half ? "bare" : "completion", PerEvent(b), PerEvent(c),
                  static_cast<unsigned long long>(b.count), static_cast<unsigned long long>(c.count));
    halves += line;
  }
  close(stats_fd);
  const std::string sysctl_after = ReadSysctl();
  bare_counter__destroy(bare);
  if (!ok) {
    std::cerr << "bpf_cost_bench: fio failed on " << device << "\n";
    return 1;
  }

  const double bare_ns = PerEvent(bare_total), completion_ns = PerEvent(completion_total);
  const double ratio = bare_ns > 0 ? completion_ns / bare_ns : 0;
  std::ofstream json(out);
  json << "{\n  \"summary\": {\"bare_counter_ns_per_event\": " << bare_ns << ", \"completion_ns_per_event\": "
       << completion_ns << ", \"ratio\": " << ratio << ", \"bare_counter_events\": " << bare_total.count
       << ", \"completion_events\": " << completion_total.count << "},\n"
       << "  \"bare_counter_ns_per_event\": " << bare_ns << ",\n  \"completion_ns_per_event\": " << completion_ns
       << ",\n  \"ratio\": " << ratio << ",\n  \"bare_counter_events\": " << bare_total.count
       << ",\n  \"completion_events\": " << completion_total.count << ",\n  \"halves\": [" << halves << "],\n"
       << "  \"method\": \"both programs attached to tp_btf/block_rq_complete at once, attach order swapped between "
          "two halves; fio randread 4 KiB direct libaio iodepth 16, " << mib << " MiB per half on " << device
       << "; run_time_ns / run_cnt deltas from bpf_obj_get_info_by_fd\",\n"
       << "  \"bpf_stats_enabled\": {\"before\": \"" << sysctl_before << "\", \"during\": \"" << sysctl_during
       << "\", \"after\": \"" << sysctl_after << "\"}\n}\n";
  std::cout << "bpf_cost: bare " << bare_ns << " ns/event (" << bare_total.count << " events), completion "
            << completion_ns << " ns/event (" << completion_total.count << " events), ratio " << ratio << "\n";
  return sysctl_after == sysctl_before ? 0 : 1;
}
