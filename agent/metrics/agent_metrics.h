// SPDX-License-Identifier: Apache-2.0
// The agent's Prometheus metrics (docs/metrics.md lists every one). The daemon's loop thread feeds queue
// and collector state, gRPC threads report requests, the exposer's threads read a copy at each scrape.
// Every method is thread-safe: one mutex guards the state; a scrape copies it and formats outside the lock.
//
// Per-queue series exist for at most `max_tracked_queues` queues. Queues added beyond the cap still get an
// id and take every update, but export nothing except their count in nvme_adapt_queues_untracked; when a
// tracked queue is removed, the oldest untracked one takes its place.
#pragma once

#include <prometheus/metric_family.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/collect/collector.h"
#include "agent/engine/payoff.h"
#include "agent/engine/types.h"
#include "agent/metrics/build_info.h"
#include "agent/metrics/label_values.h"
#include "agent/metrics/metrics_options.h"
#include "agent/metrics/node_series.h"
#include "common/result.h"

namespace prometheus {
class Exposer;
}

namespace nvmeadapt::metrics {

enum class QueueId : uint64_t {};

struct QueueLabels {
  std::string source;      // SourceName(): "kernel", "block", "uvnvme", "spdk", "nvmet"
  // The controller's stable ID ("nvme-5f0c...", QueueInfo.controller_id): the same series after a reboot that
  // renumbers; uvnvme's and nvmet's names ("uvnvme:1234:0", "nvmet:c1"), which are their IDs.
  std::string controller;
  uint32_t queue = 0;      // the NVMe queue id
  std::string transport;   // "pcie", "tcp", "loop", ... (nvme_adapt_queue_info only)
  std::string layer;       // "local", "host", "target", "backing" (nvme_adapt_queue_info only)
  std::string kernel_name; // the name now, "nvme0" (nvme_adapt_queue_info only)
  // The drive's model number and firmware revision, where known (nvme_adapt_queue_info only): the fleet's
  // recording rules aggregate the payoff by them.
  std::string model;
  std::string firmware;
};

class MetricsState;

class AgentMetrics {
 public:
  explicit AgentMetrics(size_t max_tracked_queues = kDefaultMaxTrackedQueues,
                        BuildInfo build = CurrentBuildInfo());
  ~AgentMetrics();
  AgentMetrics(const AgentMetrics&) = delete;
  AgentMetrics& operator=(const AgentMetrics&) = delete;

  // Serves /metrics on `listen_address` (IPv4:port; port 0 picks a free one, see port()). Once only.
  Status Start(const std::string& listen_address);
  // The port /metrics is served on; 0 before Start.
  int port() const { return port_; }

  // A queue the daemon discovered. Adding a queue that is already there returns its id (and updates its
  // eligibility).
  QueueId AddQueue(const QueueLabels& labels, bool eligible);
  // The queue vanished: every series of it goes. Calls with its id afterwards are ignored.
  void RemoveQueue(QueueId id);
  bool IsTracked(QueueId id) const;

  // Also export the interval histogram per queue (34 series each); by default it is exported per controller
  // only (MetricsOptions::per_queue_interval_histogram).
  void ExportPerQueueIntervalHistogram(bool on);

  void SetPollThreshold(QueueId id, engine::Nanos poll_threshold);
  // The collector's absolute counters of the queue and the mode it is reaped in now. Call it after every
  // mode change and at least once per scrape interval: counters are exported as last given.
  void UpdateQueue(QueueId id, const collect::QueueCounters& counters, ReapMode mode);
  // A full window ended; `average_interval` is its span / completions.
  void OnWindow(QueueId id, engine::Nanos average_interval);
  // The queue's mode changed (the lever applied it) for `reason`.
  void OnSwitch(QueueId id, engine::Reason reason);
  // A polling try ended (see PollTryResultOf).
  void OnPollTry(QueueId id, PollTryResult result);

  // What polling gained and cost on the queue (engine/payoff.h), and the CPU its poller spent polling where
  // it is measured.
  void SetPayoff(QueueId id, const engine::QueuePayoff& payoff, std::optional<double> polling_cpu_seconds);

  // `lever` is the lever's name; at most 16 distinct names are kept, later ones count as "other".
  void OnLeverError(std::string_view lever, ErrorCode error);
  // An applied switch took `latency` from the agent's decision to the new mode taking effect.
  void OnSwitchLatency(std::string_view lever, engine::Nanos latency);
  // The collector in use ("bpf" or "procfs") and its absolute statistics.
  void SetCollector(std::string_view name, const collect::CollectorStats& stats);
  // A finished gRPC call: full method name ("/nvmeadapt.v1.Agent/GetStatus") and status code (0..16).
  // At most 32 distinct methods are kept (unknown methods a client makes up count as "other").
  void OnGrpcRequest(std::string_view method, int code);
  // A reload of the config file (SIGHUP or a change on disk): applied, or refused and the old one kept.
  void OnConfigReload(bool applied);
  // The policy in force: where it comes from ("config_file" or "api") and its hash (PolicyBook::Hash), and,
  // for a policy set over the API, since when the node runs it instead of its config file's (Unix seconds).
  void SetPolicyInfo(std::string_view source, std::string_view hash, std::optional<double> drift_since = std::nullopt);
  // Journal entries a restore tried and could not put back, kept for the next try.
  void SetJournalUnrestored(uint64_t entries);
  // The node's pause: nullopt when not paused, else its mode ("interrupt" or "off") and when it ends (Unix
  // seconds; 0 until resumed).
  void SetPause(std::optional<std::pair<std::string, double>> pause);

  // The node layer's counts and figures, as of now (absolute).
  void SetNode(const NodeSeries& node);

  // What a scrape returns, as metric families and in the text exposition format.
  std::vector<prometheus::MetricFamily> Collect() const;
  std::string Render() const;

 private:
  std::shared_ptr<MetricsState> state_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // declared after state_: stops serving before it goes
  int port_ = 0;
  std::string listen_address_;
};

}  // namespace nvmeadapt::metrics
