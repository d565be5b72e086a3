// SPDX-License-Identifier: Apache-2.0
// The cost of metrics to the agent: an update from the loop thread, a scrape (snapshot, formatting, text)
// for 64, 1024 and 2048 tracked queues (64 per controller) with the default series and with the per-queue
// interval histogram, and stopping the HTTP exposer, against a bare prometheus-cpp Exposer measured in the
// same run. exposition_bytes_per_queue is the scrape's size over its queues.
#include <benchmark/benchmark.h>
#include <prometheus/exposer.h>

#include <chrono>
#include <memory>

#include "agent/metrics/agent_metrics.h"

namespace nvmeadapt::metrics {
namespace {

std::unique_ptr<AgentMetrics> Populated(int queues, bool per_queue_intervals = false) {
  auto metrics = std::make_unique<AgentMetrics>(static_cast<size_t>(queues));
  metrics->ExportPerQueueIntervalHistogram(per_queue_intervals);
  collect::QueueCounters counters;
  counters.completions = 1'000'000;
  counters.bytes = 4096ull * counters.completions;
  for (size_t i = 8; i < 20; ++i) counters.interval_histogram[i] = 1000 * i;
  for (int q = 0; q < queues; ++q) {
    const QueueId id = metrics->AddQueue({"kernel", "nvme" + std::to_string(q / 64), static_cast<uint32_t>(q % 64)}, true);
    metrics->SetPollThreshold(id, 10'000);
    metrics->UpdateQueue(id, counters, ReapMode::kPoll);
    metrics->OnWindow(id, 5'000);
    metrics->OnSwitch(id, engine::Reason::kWindowFast);
    metrics->OnSwitch(id, engine::Reason::kNotFaster);
  }
  return metrics;
}

void BM_UpdateQueue(benchmark::State& state) {
  auto metrics = Populated(1024);
  const QueueId id = metrics->AddQueue({"kernel", "nvme0", 5}, true);
  collect::QueueCounters counters;
  for (auto _ : state) {
    ++counters.completions;
    metrics->UpdateQueue(id, counters, ReapMode::kPoll);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UpdateQueue);

void Scrape(benchmark::State& state, bool per_queue_intervals) {
  const int queues = static_cast<int>(state.range(0));
  auto metrics = Populated(queues, per_queue_intervals);
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = metrics->Render();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
  state.counters["exposition_bytes_per_queue"] = static_cast<double>(bytes) / queues;
  state.SetItemsProcessed(state.iterations());
}

void BM_Scrape(benchmark::State& state) { Scrape(state, false); }
BENCHMARK(BM_Scrape)->Arg(64)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);

// metrics.per_queue_interval_histogram: 34 more series per queue.
void BM_ScrapePerQueueIntervalHistogram(benchmark::State& state) { Scrape(state, true); }
BENCHMARK(BM_ScrapePerQueueIntervalHistogram)->Arg(2048)->Unit(benchmark::kMillisecond);

// Stopping: what a daemon shutdown (and every test process) waits for.
void BM_StopAgentMetrics(benchmark::State& state) {
  for (auto _ : state) {
    auto metrics = std::make_unique<AgentMetrics>();
    if (!metrics->Start("127.0.0.1:0")) {
      state.SkipWithError("cannot listen on 127.0.0.1");
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    metrics.reset();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}
BENCHMARK(BM_StopAgentMetrics)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_StopBarePrometheusExposer(benchmark::State& state) {
  for (auto _ : state) {
    auto exposer = std::make_unique<prometheus::Exposer>("127.0.0.1:0");
    const auto start = std::chrono::steady_clock::now();
    exposer.reset();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}
BENCHMARK(BM_StopBarePrometheusExposer)->UseManualTime()->Iterations(2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nvmeadapt::metrics

BENCHMARK_MAIN();
