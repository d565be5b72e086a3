// SPDX-License-Identifier: Apache-2.0
// nvme-adapt-metrics-fixture: serves AgentMetrics driven by a scripted load, so the Prometheus harness can
// be checked without the daemon. It stands in for "nvme-adaptd + uvnvme-load":
//   - serves /metrics at once and writes its port to --port-file;
//   - on the line "run" on stdin, plays the phases (--phase SECONDS:IOPS, total completions per second over
//     the I/O queues, spread evenly), then prints a JSON report on one line, like uvnvme-load's;
//   - keeps serving until stdin closes (or the line "quit").
// A queue whose completions come at most --poll-threshold-ns apart is switched to poll mode for the phase
// (reason window_fast) and back to interrupt mode after it (not_faster), as the engine would.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "agent/metrics/agent_metrics.h"
#include "common/clock.h"
#include "common/files.h"

namespace nvmeadapt {
namespace {

constexpr engine::Nanos kTick = 20'000'000;  // counters are updated every 20 ms
constexpr uint64_t kBlockBytes = 4096;
constexpr uint32_t kWindowCompletions = 8192;

struct Phase {
  double seconds = 0;
  double iops = 0;
};

struct Options {
  std::string listen = "127.0.0.1:0";
  std::string port_file;
  uint32_t queues = 2;
  engine::Nanos poll_threshold = 10'000;
  std::vector<Phase> phases;
};

struct FixtureQueue {
  metrics::QueueId id{};
  collect::QueueCounters counters;
  ReapMode mode = ReapMode::kInterrupt;
  uint64_t window_fill = 0;
};

[[noreturn]] void Usage(const std::string& problem) {
  std::cerr << "nvme-adapt-metrics-fixture: " << problem << "\n"
            << "usage: nvme-adapt-metrics-fixture [--listen HOST:PORT] [--port-file PATH] [--queues N]\n"
            << "         [--poll-threshold-ns NS] --phase SECONDS:IOPS [--phase ...]\n";
  std::exit(2);
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(flag + " needs a value");
    const std::string value = argv[++i];
    try {
      if (flag == "--listen") {
        options.listen = value;
      } else if (flag == "--port-file") {
        options.port_file = value;
      } else if (flag == "--queues") {
        options.queues = static_cast<uint32_t>(std::stoul(value));
      } else if (flag == "--poll-threshold-ns") {
        options.poll_threshold = std::stoll(value);
      } else if (flag == "--phase") {
        const size_t colon = value.find(':');
        if (colon == std::string::npos) Usage("--phase wants SECONDS:IOPS, got " + value);
        options.phases.push_back({std::stod(value.substr(0, colon)), std::stod(value.substr(colon + 1))});
      } else {
        Usage("unknown option " + flag);
      }
    } catch (const std::exception&) {
      Usage("bad value for " + flag + ": " + value);
    }
  }
  if (options.phases.empty() || options.queues == 0) Usage("needs at least one --phase and one queue");
  return options;
}

double UnixNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

class Scenario {
 public:
  Scenario(metrics::AgentMetrics& metrics, const Options& options) : metrics_(metrics), options_(options) {
    // The admin queue: observed, never eligible, idle.
    admin_ = metrics_.AddQueue({"uvnvme", "uvnvme:fixture:c0", 0}, false);
    metrics_.UpdateQueue(admin_, {}, ReapMode::kInterrupt);
    for (uint32_t q = 1; q <= options_.queues; ++q) {
      FixtureQueue queue;
      queue.id = metrics_.AddQueue({"uvnvme", "uvnvme:fixture:c0", q}, true);
      metrics_.SetPollThreshold(queue.id, options_.poll_threshold);
      metrics_.UpdateQueue(queue.id, queue.counters, queue.mode);
      io_.push_back(queue);
    }
    PublishCollector();
    metrics_.OnGrpcRequest("/nvmeadapt.v1.Agent/GetStatus", 0);
  }

  // Plays every phase; returns the report line.
  std::string Run() {
    const double run_start_unix = UnixNow();
    const engine::Nanos run_start = MonotonicNanos();
    std::string phases_json;
    for (const Phase& phase : options_.phases) {
      const double phase_start_unix = UnixNow();
      PlayPhase(phase);
      if (!phases_json.empty()) phases_json += ",";
      phases_json += "{\"start_unix\":" + std::to_string(phase_start_unix) +
                     ",\"end_unix\":" + std::to_string(UnixNow()) + ",\"iops\":" + std::to_string(phase.iops) + "}";
    }
    const double seconds = static_cast<double>(MonotonicNanos() - run_start) * 1e-9;
    uint64_t completions = 0;
    for (const FixtureQueue& queue : io_) completions += queue.counters.completions;
    return "{\"iops\":" + std::to_string(static_cast<double>(completions) / seconds) +
           ",\"completions\":" + std::to_string(completions) + ",\"duration_s\":" + std::to_string(seconds) +
           ",\"start_unix\":" + std::to_string(run_start_unix) + ",\"end_unix\":" + std::to_string(UnixNow()) +
           ",\"phases\":[" + phases_json + "]}";
  }

 private:
  void PlayPhase(const Phase& phase) {
    const double per_queue = phase.iops / static_cast<double>(io_.size());
    const auto interval = static_cast<engine::Nanos>(per_queue > 0 ? 1e9 / per_queue : 0);
    const bool poll = per_queue > 0 && interval <= options_.poll_threshold;
    for (FixtureQueue& queue : io_) SetMode(queue, poll ? ReapMode::kPoll : ReapMode::kInterrupt);

    std::vector<uint64_t> at_start;
    for (const FixtureQueue& queue : io_) at_start.push_back(queue.counters.completions);
    const engine::Nanos start = MonotonicNanos();
    const auto duration = static_cast<engine::Nanos>(phase.seconds * 1e9);
    for (engine::Nanos elapsed = 0; elapsed < duration;) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(kTick, duration - elapsed)));
      elapsed = std::min(MonotonicNanos() - start, duration);
      const auto due = static_cast<uint64_t>(per_queue * static_cast<double>(elapsed) * 1e-9);
      for (size_t i = 0; i < io_.size(); ++i) Complete(io_[i], at_start[i] + due - io_[i].counters.completions, interval);
      PublishCollector();
    }
  }

  void SetMode(FixtureQueue& queue, ReapMode mode) {
    if (queue.mode == mode) return;
    if (mode == ReapMode::kInterrupt) metrics_.OnPollTry(queue.id, metrics::PollTryResult::kNotFaster);
    queue.mode = mode;
    metrics_.OnSwitch(queue.id, mode == ReapMode::kPoll ? engine::Reason::kWindowFast
                                                                  : engine::Reason::kNotFaster);
    metrics_.UpdateQueue(queue.id, queue.counters, queue.mode);
  }

  void Complete(FixtureQueue& queue, uint64_t count, engine::Nanos interval) {
    if (count == 0) return;
    collect::QueueCounters& c = queue.counters;
    c.completions += count;
    c.bytes += count * kBlockBytes;
    (queue.mode == ReapMode::kPoll ? c.poll_completions : c.interrupt_completions) += count;
    const size_t bucket = std::min<size_t>(std::bit_width(static_cast<uint64_t>(std::max<engine::Nanos>(interval, 1))) - 1,
                                           collect::kHistBuckets - 1);
    c.interval_histogram[bucket] += count;
    queue.window_fill += count;
    for (; queue.window_fill >= kWindowCompletions; queue.window_fill -= kWindowCompletions) {
      ++records_;
      metrics_.OnWindow(queue.id, interval);
      if (queue.mode == ReapMode::kPoll) metrics_.OnPollTry(queue.id, metrics::PollTryResult::kSuccess);
    }
    metrics_.UpdateQueue(queue.id, c, queue.mode);
    bpf_runs_ += count;
  }

  void PublishCollector() {
    collect::CollectorStats stats;
    stats.records = records_;
    stats.programs.push_back({"usdt/uvnvme:complete", bpf_runs_, bpf_runs_ * 900});
    metrics_.SetCollector("bpf", stats);
  }

  metrics::AgentMetrics& metrics_;
  const Options& options_;
  metrics::QueueId admin_{};
  std::vector<FixtureQueue> io_;
  uint64_t records_ = 0;
  uint64_t bpf_runs_ = 0;
};

int Main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  metrics::AgentMetrics metrics;
  if (Status started = metrics.Start(options.listen); !started) {
    std::cerr << "nvme-adapt-metrics-fixture: " << started.error().message << "\n";
    return 1;
  }
  Scenario scenario(metrics, options);
  if (!options.port_file.empty()) {
    if (Status written = WriteFileAtomically(options.port_file, std::to_string(metrics.port()) + "\n", 0644);
        !written) {
      std::cerr << "nvme-adapt-metrics-fixture: " << written.error().message << "\n";
      return 1;
    }
  }
  for (std::string line; std::getline(std::cin, line) && line != "quit";) {
    if (line == "run") std::cout << scenario.Run() << std::endl;
  }
  return 0;
}

}  // namespace
}  // namespace nvmeadapt

int main(int argc, char** argv) { return nvmeadapt::Main(argc, argv); }
