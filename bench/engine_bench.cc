// SPDX-License-Identifier: Apache-2.0
// Windows decided per second by the engine on one core, for 1 and for 10,000 queues.
// Each queue cycles through a fixed script that the engine accepts window by window (a try that fails,
// a try that succeeds, 64 polling windows and the forced re-measure), so every window takes a real
// decision path and the state after a cycle equals the state before it.
#include <benchmark/benchmark.h>

#include <vector>

#include "agent/engine/engine.h"

namespace nvmeadapt::engine {
namespace {

constexpr uint32_t kWindow = 8192;
constexpr Nanos kBaseline = 5'000 * kWindow;

std::vector<WindowRecord> CycleFor(QueueHandle q) {
  std::vector<WindowRecord> cycle;
  auto add = [&](ReapMode mode, Nanos span) { cycle.push_back({q, mode, kWindow, 0, span, std::nullopt}); };
  add(ReapMode::kInterrupt, kBaseline);       // fast: try
  add(ReapMode::kPoll, kBaseline + 1000);     // slower: fail (failures = 1)
  add(ReapMode::kInterrupt, kBaseline);       // try again
  for (int i = 0; i < 64; ++i) add(ReapMode::kPoll, kBaseline - 1000);  // 63 kept, the 64th re-measures
  return cycle;
}

void BM_EngineWindows(benchmark::State& state) {
  const auto queues = static_cast<uint32_t>(state.range(0));
  Engine engine;
  Policy policy;
  policy.mode = ControllerMode::kAdaptive;
  std::vector<std::vector<WindowRecord>> cycles;
  for (uint32_t i = 0; i < queues; ++i) {
    cycles.push_back(CycleFor(engine.AddQueue(QueueSetup{true, policy}, 0).handle));
  }
  // Interleave the queues' windows, as completions of many queues arrive interleaved.
  std::vector<WindowRecord> records;
  records.reserve(queues * cycles[0].size());
  for (size_t step = 0; step < cycles[0].size(); ++step) {
    for (const auto& cycle : cycles) records.push_back(cycle[step]);
  }
  uint64_t switches = 0;
  for (auto _ : state) {
    for (const WindowRecord& record : records) {
      auto decision = engine.OnWindow(record);
      switches += decision && decision->Switches();
    }
  }
  benchmark::DoNotOptimize(switches);
  const auto windows = static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(records.size());
  state.SetItemsProcessed(windows);
  state.counters["windows_per_second"] = benchmark::Counter(static_cast<double>(windows), benchmark::Counter::kIsRate);
  state.counters["switch_fraction"] = static_cast<double>(switches) / static_cast<double>(windows);
  state.counters["queues"] = queues;
}

BENCHMARK(BM_EngineWindows)->Arg(1)->Arg(10'000)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace
}  // namespace nvmeadapt::engine

BENCHMARK_MAIN();
