// SPDX-License-Identifier: Apache-2.0
// na-collect: opens the collector the way the daemon will (OpenCollector) and reports what it sees.
// Used by tests (the unprivileged fallback run) and by hand:
//   na-collect [--seconds N | --until-eof] [--window N] [--interval-ms N] [--root DIR] [--procfs]
//              [--userspace-only] [--attach-binary PATH] [--wakeups] [--per-reap] [--nvme-per-completion]
//              [--completion-intervals]
//              [--counters]
// --until-eof: run until standard input is closed (tests end the run when their load is done).
// --attach-binary: attach the userspace probes to every process of PATH, now and later (pid 0);
// --wakeups: with them uvnvme's irq probe; --per-reap: uvnvme's complete probe instead of its tally;
// --userspace-only: no kernel hooks.
// --nvme-per-completion: the kernel nvme tracepoint per completion even where the per-batch hooks load;
// --completion-intervals: the per-completion hooks stamp every completion (CollectorOptions).
// Prints "collector NAME observe_only=0|1", the hooks, one line per event, with --counters one
// "queue KEY completions=N ..." line per observed queue at the end, then program statistics.
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "agent/collect/collector.h"
#include "common/clock.h"

using namespace nvmeadapt;
using namespace nvmeadapt::collect;

int main(int argc, char** argv) {
  CollectorOptions options;
  double seconds = 1;
  bool until_eof = false;
  bool counters = false;  // print every observed queue's counters at the end
  std::string attach_binary;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "na-collect: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--seconds") {
      seconds = std::atof(next().c_str());
    } else if (arg == "--until-eof") {
      until_eof = true;
    } else if (arg == "--window") {
      options.default_window = static_cast<uint32_t>(std::atoi(next().c_str()));
    } else if (arg == "--interval-ms") {
      options.procfs_interval_ms = std::atoi(next().c_str());
    } else if (arg == "--root") {
      options.root = next();
    } else if (arg == "--procfs") {
      options.force_procfs = true;
    } else if (arg == "--userspace-only") {
      options.kernel_nvme = options.block = false;
    } else if (arg == "--attach-binary") {
      attach_binary = next();
    } else if (arg == "--wakeups") {
      options.userspace_wakeups = true;
    } else if (arg == "--per-reap") {
      options.userspace_per_reap = true;
    } else if (arg == "--completion-intervals") {
      options.completion_intervals = true;
    } else if (arg == "--nvme-per-completion") {
      options.kernel_nvme_per_batch = false;
    } else if (arg == "--counters") {
      counters = true;
    } else {
      std::cerr << "na-collect: unknown argument " << arg << "\n";
      return 2;
    }
  }
  auto opened = OpenCollector(options);
  if (!opened.ok()) {
    std::cerr << "na-collect: " << opened.error().message << "\n";
    return 1;
  }
  Collector& collector = **opened;
  if (!attach_binary.empty()) {
    if (Status attached = collector.AttachProcess(0, attach_binary); !attached.ok()) {
      std::cerr << "na-collect: " << attached.error().message << "\n";
      return 1;
    }
  }
  std::cout << "collector " << collector.Name() << " observe_only=" << collector.ObserveOnly() << "\n";
  for (const std::string& hook : collector.Hooks()) std::cout << "hook " << hook << "\n";
  std::cout << std::flush;  // a reader waits for the hooks before it starts its load
  const int64_t end = MonotonicNanos() + static_cast<int64_t>(seconds * 1e9);
  auto running = [&] {
    if (!until_eof) return MonotonicNanos() < end;
    pollfd input{0, POLLIN, 0};
    char byte;
    return !(poll(&input, 1, 0) == 1 && read(0, &byte, 1) <= 0);
  };
  while (running()) {
    auto polled = collector.Poll(100, [](const WindowEvent& e) {
      std::cout << "event " << e.key.ToString() << " completions=" << e.completions << " bytes=" << e.bytes
                << " interrupts=" << e.interrupts << " span_ns=" << (e.end - e.start)
                << (e.pace_miss ? " pace_miss" : "") << "\n";
    });
    if (!polled.ok()) {
      std::cerr << "na-collect: " << polled.error().message << "\n";
      return 1;
    }
  }
  for (const QueueKey& key : counters ? collector.ObservedQueues() : std::vector<QueueKey>{}) {
    auto read = collector.ReadCounters(key);
    if (!read.ok()) {
      std::cerr << "na-collect: " << read.error().message << "\n";
      return 1;
    }
    std::cout << "queue " << key.ToString() << " completions=" << read->completions << " bytes=" << read->bytes
              << " interrupt_completions=" << read->interrupt_completions << " poll_completions=" << read->poll_completions << "\n";
  }
  const CollectorStats stats = collector.Stats();
  std::cout << "stats records=" << stats.records << " ringbuf_drops=" << stats.ringbuf_drops << "\n";
  for (const ProgramStats& program : stats.programs) {
    std::cout << "program " << program.name << " run_count=" << program.run_count
              << " run_time_ns=" << program.run_time_ns << "\n";
  }
  return 0;
}
