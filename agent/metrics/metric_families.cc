// SPDX-License-Identifier: Apache-2.0
// Formats a metrics snapshot into Prometheus metric families. docs/metrics.md describes each one; a test
// compares that table with what this produces.
#include <array>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/metrics/family_builder.h"
#include "agent/metrics/interval_histogram.h"
#include "agent/metrics/metrics_state.h"

namespace nvmeadapt::metrics {
namespace {

constexpr double kSecondsPerNano = 1e-9;

// A counter family with two labels, from counts keyed by their values.
void AddPairCounters(std::string name, std::string help, const std::pair<std::string, std::string>& label_names,
                     const std::map<std::pair<std::string, std::string>, uint64_t>& counts,
                     std::vector<MetricFamily>& out) {
  FamilyBuilder family(std::move(name), std::move(help), MetricType::Counter);
  for (const auto& [values, count] : counts) {
    family.Add({{label_names.first, values.first}, {label_names.second, values.second}}, static_cast<double>(count));
  }
  family.MoveTo(out);
}

// The interval histogram summed over each controller's tracked queues: a controller has up to 64 queues,
// and 34 series per queue were most of a per-queue exposition (docs/metrics.md, "Cardinality").
void AddControllerIntervalHistograms(const std::vector<QueueSeries>& queues, std::vector<MetricFamily>& out) {
  std::map<std::pair<std::string, std::string>, std::array<uint64_t, collect::kHistBuckets>> by_controller;
  for (const QueueSeries& queue : queues) {
    if (!queue.mode) continue;  // not updated yet: no counters
    auto& sum = by_controller[{queue.source, queue.controller}];
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += queue.interval_histogram[i];
  }
  FamilyBuilder intervals("nvme_adapt_controller_completion_interval_seconds",
                          "Intervals between consecutive completions on each queue of the controller, summed "
                          "over its tracked queues (log2 buckets; _sum estimated from bucket midpoints).",
                          MetricType::Histogram);
  for (const auto& [labels, counts] : by_controller) {
    intervals.AddHistogram({{"source", labels.first}, {"controller", labels.second}}, IntervalHistogram(counts));
  }
  intervals.MoveTo(out);
}

// What only some collectors count, each series appearing with its first count.
void AddCollectorCountFamilies(const std::vector<QueueSeries>& queues, std::vector<MetricFamily>& out) {
  FamilyBuilder interrupts("nvme_adapt_queue_interrupts_total",
                           "Interrupts of the queue's vector, where the collector sees no completions by path "
                           "(procfs).",
                           MetricType::Counter);
  FamilyBuilder abandoned("nvme_adapt_queue_abandoned_completions_total",
                          "Completions of windows restarted at a mode change before they filled: in no window "
                          "record.",
                          MetricType::Counter);
  FamilyBuilder retries("nvme_adapt_queue_pace_miss_retries_total",
                        "Pace misses the full ring buffer refused, sent again by a later completion.",
                        MetricType::Counter);
  FamilyBuilder wakeups("nvme_adapt_queue_wakeups_total",
                        "Userspace drivers: interrupt-mode reaper wakeups (with the collector's userspace_wakeups).",
                        MetricType::Counter);
  for (const QueueSeries& queue : queues) {
    if (!queue.mode) continue;  // counters are known once the daemon has updated the queue
    const Labels labels = QueueLabelsOf(queue);
    if (queue.interrupts) interrupts.Add(labels, static_cast<double>(queue.interrupts));
    if (queue.abandoned_completions) abandoned.Add(labels, static_cast<double>(queue.abandoned_completions));
    if (queue.pace_miss_retries) retries.Add(labels, static_cast<double>(queue.pace_miss_retries));
    if (queue.wakeups) wakeups.Add(labels, static_cast<double>(queue.wakeups));
  }
  for (FamilyBuilder* family : {&interrupts, &abandoned, &retries, &wakeups}) family->MoveTo(out);
}

void AddQueueFamilies(const std::vector<QueueSeries>& queues, bool per_queue_intervals,
                      std::vector<MetricFamily>& out) {
  FamilyBuilder completions("nvme_adapt_queue_completions_total", "Completions reaped on the queue.",
                            MetricType::Counter);
  FamilyBuilder bytes("nvme_adapt_queue_bytes_total", "Bytes transferred by the queue's completed requests.",
                      MetricType::Counter);
  FamilyBuilder reaped("nvme_adapt_queue_completions_reaped_total",
                       "Completions by the path that reaped them (interrupt handler or poll), where the "
                       "collector can tell.",
                       MetricType::Counter);
  FamilyBuilder mode("nvme_adapt_queue_mode", "1 for the queue's current reaping mode, 0 for the other.",
                     MetricType::Gauge);
  FamilyBuilder eligible("nvme_adapt_queue_eligible",
                         "1 if the agent may switch the queue's mode (I/O queue with its own MSI-X vector).",
                         MetricType::Gauge);
  FamilyBuilder info("nvme_adapt_queue_info",
                     "1 per queue, with its transport, its layer in an NVMe over Fabrics stack, its "
                     "controller's name now (kernel_name; the controller label is its stable ID), and the "
                     "drive's model and firmware.",
                     MetricType::Gauge);
  FamilyBuilder average("nvme_adapt_queue_window_average_interval_seconds",
                        "Average interval between completions in the queue's last full window.",
                        MetricType::Gauge);
  FamilyBuilder threshold("nvme_adapt_queue_poll_threshold_seconds",
                          "Policy: a window averaging at most this tries polling.", MetricType::Gauge);
  FamilyBuilder intervals("nvme_adapt_queue_completion_interval_seconds",
                          "Intervals between consecutive completions (log2 buckets; _sum estimated from "
                          "bucket midpoints).",
                          MetricType::Histogram);
  FamilyBuilder switches("nvme_adapt_queue_switches_total", "Reaping mode changes applied, by decision reason.",
                         MetricType::Counter);
  FamilyBuilder tries("nvme_adapt_queue_poll_tries_total", "Polling windows judged, by outcome.",
                      MetricType::Counter);

  for (const QueueSeries& queue : queues) {
    const Labels labels = QueueLabelsOf(queue);
    eligible.Add(labels, queue.eligible ? 1 : 0);
    const Labels placed = With(With(With(labels, "transport", queue.transport), "layer", queue.layer), "kernel_name",
                               queue.kernel_name);
    info.Add(With(With(placed, "model", queue.model), "firmware", queue.firmware), 1);
    if (queue.mode) {  // counters and mode are known once the daemon has updated the queue
      completions.Add(labels, static_cast<double>(queue.completions));
      bytes.Add(labels, static_cast<double>(queue.bytes));
      // A path appears with its first completion: most queues are never polled, and some collectors
      // cannot tell the path at all.
      if (queue.interrupt_completions) {
        reaped.Add(With(labels, "path", "interrupt"), static_cast<double>(queue.interrupt_completions));
      }
      if (queue.poll_completions) reaped.Add(With(labels, "path", "poll"), static_cast<double>(queue.poll_completions));
      for (ReapMode m : {ReapMode::kInterrupt, ReapMode::kPoll}) {
        mode.Add(With(labels, "mode", std::string(ReapModeName(m))), *queue.mode == m ? 1 : 0);
      }
      if (per_queue_intervals) intervals.AddHistogram(labels, IntervalHistogram(queue.interval_histogram));
    }
    if (queue.average_interval_seconds) average.Add(labels, *queue.average_interval_seconds);
    if (queue.poll_threshold_seconds) threshold.Add(labels, *queue.poll_threshold_seconds);
    for (const auto& [reason, count] : queue.switches) {
      switches.Add(With(labels, "reason", std::string(engine::ReasonName(reason))), static_cast<double>(count));
    }
    for (PollTryResult result : kAllPollTryResults) {  // like reasons: a result appears with its first try
      const uint64_t count = queue.poll_tries[static_cast<size_t>(result)];
      if (count) tries.Add(With(labels, "result", std::string(PollTryResultName(result))), static_cast<double>(count));
    }
  }
  for (FamilyBuilder* family : {&completions, &bytes, &reaped, &mode, &eligible, &info, &average, &threshold,
                                &intervals, &switches, &tries}) {
    family->MoveTo(out);
  }
  AddControllerIntervalHistograms(queues, out);
}

namespace {

// The collector's own series: which collector, its ring buffer, its BPF programs.
void AddCollectorFamilies(const AgentWideState& agent, std::vector<MetricFamily>& out) {
  if (agent.collector) {
    FamilyBuilder collector("nvme_adapt_collector_info",
                            "Always 1; the collector label names the one in use (bpf, or the procfs fallback).",
                            MetricType::Gauge);
    collector.Add({{"collector", *agent.collector}}, 1);
    collector.MoveTo(out);
    FamilyBuilder drops("nvme_adapt_ringbuf_drops_total", "Window records lost because the ring buffer was full.",
                        MetricType::Counter);
    drops.Add({}, static_cast<double>(agent.ringbuf_drops));
    drops.MoveTo(out);
    FamilyBuilder records("nvme_adapt_ringbuf_records_total", "Window records read from the ring buffer.",
                          MetricType::Counter);
    records.Add({}, static_cast<double>(agent.collector_records));
    records.MoveTo(out);
    FamilyBuilder attached("nvme_adapt_bpf_programs_attached", "BPF programs the collector has attached.",
                           MetricType::Gauge);
    attached.Add({}, static_cast<double>(agent.bpf_programs_attached));
    attached.MoveTo(out);
  }
  FamilyBuilder runs("nvme_adapt_bpf_runs_total",
                     "Runs of each BPF program (events it handled); needs kernel.bpf_stats_enabled=1.",
                     MetricType::Counter);
  FamilyBuilder run_seconds("nvme_adapt_bpf_run_seconds_total",
                            "CPU time spent in each BPF program; needs kernel.bpf_stats_enabled=1.",
                            MetricType::Counter);
  for (const auto& [program, totals] : agent.bpf_programs) {
    runs.Add({{"program", program}}, static_cast<double>(totals.runs));
    run_seconds.Add({{"program", program}}, static_cast<double>(totals.run_time_ns) * kSecondsPerNano);
  }
  runs.MoveTo(out);
  run_seconds.MoveTo(out);
}

}  // namespace

void AddPauseFamilies(const AgentWideState& agent, std::vector<MetricFamily>& out);

void AddAgentFamilies(const AgentWideState& agent, std::vector<MetricFamily>& out) {
  FamilyBuilder build("nvme_adapt_build_info", "Always 1; labels say which build of the agent runs.",
                      MetricType::Gauge);
  build.Add({{"version", agent.build.version}, {"commit", agent.build.commit}}, 1);
  build.MoveTo(out);

  FamilyBuilder tracked("nvme_adapt_queues_tracked", "Queues exported with per-queue series.", MetricType::Gauge);
  tracked.Add({}, static_cast<double>(agent.tracked));
  tracked.MoveTo(out);
  FamilyBuilder untracked("nvme_adapt_queues_untracked",
                          "Queues known to the agent but over the max_tracked_queues cap: no per-queue series.",
                          MetricType::Gauge);
  untracked.Add({}, static_cast<double>(agent.untracked));
  untracked.MoveTo(out);
  FamilyBuilder limit("nvme_adapt_queues_tracked_limit", "The max_tracked_queues cap.", MetricType::Gauge);
  limit.Add({}, static_cast<double>(agent.max_tracked));
  limit.MoveTo(out);

  AddPairCounters("nvme_adapt_lever_errors_total", "Failed mode changes, by lever and error code.", {"lever", "error"},
                  agent.lever_errors, out);

  FamilyBuilder switch_latency("nvme_adapt_switch_latency_seconds",
                               "Applied switches: from the agent's decision to the new mode taking effect in the "
                               "driver (its mode probe) or the lever's return, by lever.",
                               MetricType::Histogram);
  for (const auto& [lever, latency] : agent.switch_latency) {
    ClientMetric::Histogram histogram;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kSwitchLatencyBounds.size(); ++i) {
      cumulative += latency.buckets[i];
      histogram.bucket.push_back({cumulative, kSwitchLatencyBounds[i]});
    }
    histogram.bucket.push_back({latency.count, std::numeric_limits<double>::infinity()});
    histogram.sample_count = latency.count;
    histogram.sample_sum = latency.sum_seconds;
    switch_latency.AddHistogram({{"lever", lever}}, std::move(histogram));
  }
  switch_latency.MoveTo(out);

  AddCollectorFamilies(agent, out);

  AddPairCounters("nvme_adapt_grpc_requests_total", "Finished gRPC calls, by method and status code.", {"method", "code"},
                  agent.grpc_requests, out);

  FamilyBuilder reloads("nvme_adapt_config_reloads_total",
                        "Reloads of the config file (SIGHUP or a change on disk), applied or refused.",
                        MetricType::Counter);
  reloads.Add({{"outcome", "applied"}}, static_cast<double>(agent.config_reloads_applied));
  reloads.Add({{"outcome", "refused"}}, static_cast<double>(agent.config_reloads_refused));
  reloads.MoveTo(out);
  FamilyBuilder last_reload("nvme_adapt_config_last_reload_successful",
                            "0 when the last reload of the config file was refused (the running config was kept).",
                            MetricType::Gauge);
  last_reload.Add({}, agent.last_config_reload_ok ? 1.0 : 0.0);
  last_reload.MoveTo(out);
  if (agent.policy) {
    FamilyBuilder policy("nvme_adapt_policy_info",
                         "Always 1; where the policy in force comes from (config_file, or api when set over the "
                         "API) and a hash of it, equal on nodes with the same policy.",
                         MetricType::Gauge);
    policy.Add({{"source", agent.policy->first}, {"hash", agent.policy->second}}, 1);
    policy.MoveTo(out);
  }
  // Absent while the file's policy is in force: an alert on `time() - it` has nothing to fire on then.
  if (agent.policy_drift_since) {
    FamilyBuilder drift("nvme_adapt_policy_drift_timestamp_seconds",
                        "When the policy set over the API that is in force was set (Unix seconds; 0 when unknown); "
                        "absent while the config file's policy is in force.",
                        MetricType::Gauge);
    drift.Add({}, *agent.policy_drift_since);
    drift.MoveTo(out);
  }
  FamilyBuilder unrestored("nvme_adapt_journal_unrestored_entries",
                           "Journal entries a restore tried and could not put back, kept for the next try.",
                           MetricType::Gauge);
  unrestored.Add({}, static_cast<double>(agent.journal_unrestored));
  unrestored.MoveTo(out);
  AddPauseFamilies(agent, out);
}

void AddPauseFamilies(const AgentWideState& agent, std::vector<MetricFamily>& out) {
  // Always there, 0 or 1, so that an alert on a long pause and a panel of paused nodes need no absent().
  FamilyBuilder paused("nvme_adapt_paused",
                       "1 while the node is paused (nvme-adaptctl pause): every queue held in the mode the label "
                       "names until resumed or the pause ends; else 0.",
                       MetricType::Gauge);
  paused.Add({{"mode", agent.pause ? agent.pause->first : std::string("none")}}, agent.pause ? 1.0 : 0.0);
  paused.MoveTo(out);
  if (agent.pause && agent.pause->second > 0) {
    FamilyBuilder ends("nvme_adapt_pause_end_timestamp_seconds",
                       "When the node's timed pause ends (Unix seconds); absent when not paused or paused until "
                       "resumed.",
                       MetricType::Gauge);
    ends.Add({}, agent.pause->second);
    ends.MoveTo(out);
  }
}

void AddProcessFamilies(const ProcessStats& process, std::vector<MetricFamily>& out) {
  const std::pair<FamilyBuilder, double> families[] = {
      {{"process_cpu_seconds_total", "CPU time of the agent process, user plus system.", MetricType::Counter},
       process.cpu_seconds},
      {{"process_resident_memory_bytes", "Resident set size of the agent process.", MetricType::Gauge},
       static_cast<double>(process.resident_bytes)},
      {{"process_virtual_memory_bytes", "Virtual memory size of the agent process.", MetricType::Gauge},
       static_cast<double>(process.virtual_bytes)},
      {{"process_start_time_seconds", "When the agent process started, in seconds since the Unix epoch.", MetricType::Gauge},
       process.start_time_seconds},
      {{"process_open_fds", "File descriptors the agent process has open.", MetricType::Gauge},
       static_cast<double>(process.open_fds)},
      {{"process_max_fds", "The agent process's limit on open file descriptors.", MetricType::Gauge},
       static_cast<double>(process.max_fds)},
  };
  for (auto [family, value] : families) {
    family.Add({}, value);
    family.MoveTo(out);
  }
}

}  // namespace

std::vector<MetricFamily> BuildFamilies(const MetricsSnapshot& snapshot, const std::optional<ProcessStats>& process) {
  std::vector<MetricFamily> out;
  AddQueueFamilies(snapshot.queues, snapshot.agent.per_queue_interval_histogram, out);
  AddCollectorCountFamilies(snapshot.queues, out);
  AddPayoffFamilies(snapshot.queues, out);
  if (snapshot.agent.node) AddNodeFamilies(*snapshot.agent.node, out);
  AddAgentFamilies(snapshot.agent, out);
  if (process) AddProcessFamilies(*process, out);
  return out;
}

}  // namespace nvmeadapt::metrics
