// SPDX-License-Identifier: Apache-2.0
// Inside AgentMetrics: the state its methods update under one mutex, and the copy a scrape formats.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/collect/collector.h"
#include "agent/engine/payoff.h"
#include "agent/engine/types.h"
#include "agent/metrics/build_info.h"
#include "agent/metrics/label_values.h"
#include "agent/metrics/node_series.h"
#include "agent/metrics/process_stats.h"

namespace nvmeadapt::metrics {

struct QueueSeries {
  std::string source;
  std::string controller;
  std::string queue;
  std::string transport;
  std::string layer;
  std::string kernel_name;
  std::string model;
  std::string firmware;
  bool tracked = false;
  bool eligible = false;
  std::optional<ReapMode> mode;  // unknown until the first UpdateQueue
  uint64_t completions = 0;
  uint64_t bytes = 0;
  uint64_t interrupt_completions = 0;
  uint64_t poll_completions = 0;
  uint64_t interrupts = 0;
  uint64_t abandoned_completions = 0;
  uint64_t pace_miss_retries = 0;
  uint64_t wakeups = 0;
  std::array<uint64_t, collect::kHistBuckets> interval_histogram{};
  std::optional<double> average_interval_seconds;
  std::optional<double> poll_threshold_seconds;
  std::map<engine::Reason, uint64_t> switches;
  std::array<uint64_t, std::size(kAllPollTryResults)> poll_tries{};
  std::optional<engine::QueuePayoff> payoff;       // absent until the agent's first decision on the queue
  std::optional<double> polling_cpu_seconds;        // absent where the poller's CPU cannot be measured
};

// Decision-to-effect latency of applied switches, per lever: fixed buckets from 10 us to 10 s (a socket
// round trip is tens of microseconds, a controller reset about a second).
inline constexpr std::array<double, 13> kSwitchLatencyBounds = {10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3,
                                                                2.5e-3, 5e-3, 10e-3, 100e-3, 1.0, 10.0};
struct SwitchLatency {
  std::array<uint64_t, kSwitchLatencyBounds.size()> buckets{};  // not cumulative: [bound i-1, bound i)
  uint64_t count = 0;
  double sum_seconds = 0;
};

struct BpfProgramTotals {
  uint64_t runs = 0;
  uint64_t run_time_ns = 0;
};

// Everything but the per-queue series: what a scrape copies besides the tracked queues.
struct AgentWideState {
  BuildInfo build;
  size_t max_tracked = 0;
  bool per_queue_interval_histogram = false;  // MetricsOptions::per_queue_interval_histogram
  size_t tracked = 0;
  size_t untracked = 0;
  std::map<std::pair<std::string, std::string>, uint64_t> lever_errors;  // (lever, error)
  std::map<std::string, SwitchLatency> switch_latency;                     // by lever
  std::optional<std::string> collector;
  uint64_t ringbuf_drops = 0;
  uint64_t collector_records = 0;
  size_t bpf_programs_attached = 0;
  std::map<std::string, BpfProgramTotals> bpf_programs;
  std::map<std::pair<std::string, std::string>, uint64_t> grpc_requests;  // (method, code)
  uint64_t config_reloads_applied = 0;
  uint64_t config_reloads_refused = 0;
  bool last_config_reload_ok = true;  // the config at start was good, or the daemon would not run
  std::optional<std::pair<std::string, std::string>> policy;  // (source, hash) of the policy in force
  std::optional<double> policy_drift_since;  // Unix seconds: when the API's policy in force was set
  uint64_t journal_unrestored = 0;
  std::optional<std::pair<std::string, double>> pause;  // (mode, end in Unix seconds or 0) while paused
  std::optional<NodeSeries> node;  // absent until the daemon reports its node layer
};

struct MetricsSnapshot {
  AgentWideState agent;
  std::vector<QueueSeries> queues;  // tracked ones, oldest first
};

// The payoff families (payoff_families.cc): what polling gained and cost, and what shadow mode would have done.
void AddPayoffFamilies(const std::vector<QueueSeries>& queues, std::vector<prometheus::MetricFamily>& out);

// The node layer's series (node_families.cc).
void AddNodeFamilies(const NodeSeries& node, std::vector<prometheus::MetricFamily>& out);

// The formatting of a snapshot into metric families; `process` is absent when /proc could not be read.
std::vector<prometheus::MetricFamily> BuildFamilies(const MetricsSnapshot& snapshot,
                                                    const std::optional<ProcessStats>& process);

class MetricsState : public prometheus::Collectable {
 public:
  MetricsState(size_t max_tracked_queues, BuildInfo build);

  std::vector<prometheus::MetricFamily> Collect() const override;

  // Everything below is guarded by `mutex`.
  mutable std::mutex mutex;
  AgentWideState agent;
  uint64_t next_id = 1;
  std::map<uint64_t, QueueSeries> queues;  // by id: ids grow, so this is oldest first
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> ids_by_labels;  // (source, controller, queue)
  BoundedLabelValues lever_names{kMaxLeverNames};
  BoundedLabelValues grpc_methods{kMaxGrpcMethods};
  BoundedLabelValues bpf_program_names{kMaxBpfPrograms};

  QueueSeries* Find(uint64_t id);
};

}  // namespace nvmeadapt::metrics
