// SPDX-License-Identifier: Apache-2.0
#include "agent/metrics/metrics_state.h"

#include <atomic>

#include "common/log.h"

namespace nvmeadapt::metrics {

MetricsState::MetricsState(size_t max_tracked_queues, BuildInfo build) {
  agent.build = std::move(build);
  agent.max_tracked = max_tracked_queues;
}

QueueSeries* MetricsState::Find(uint64_t id) {
  auto it = queues.find(id);
  return it == queues.end() ? nullptr : &it->second;
}

std::vector<prometheus::MetricFamily> MetricsState::Collect() const {
  MetricsSnapshot snapshot;
  {
    std::lock_guard lock(mutex);
    snapshot.agent = agent;
    snapshot.queues.reserve(agent.tracked);
    for (const auto& [id, series] : queues) {
      if (series.tracked) snapshot.queues.push_back(series);
    }
  }
  std::optional<ProcessStats> process;
  if (auto stats = ReadProcessStats(); stats) {
    process = *stats;
  } else {
    // Said once: a scrape every few seconds must not fill the log with the same line.
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true)) {
      NA_WARN("metrics: process_* metrics left out: " << stats.error().message);
    }
  }
  return BuildFamilies(snapshot, process);
}

}  // namespace nvmeadapt::metrics
