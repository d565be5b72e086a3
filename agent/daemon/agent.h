// SPDX-License-Identifier: Apache-2.0
// The closed loop: one thread that owns the managed queues (the roster) and hands each event to the object
// whose job it is. Windows, timer looks and the node's facts go to the decision pipeline (the engine behind
// the node gate), its decisions to the switch protocol, which carries them to the queues; discovery's scans
// reconcile the roster; gRPC callers reach the loop through the API adapter, whose calls run as commands on
// the loop thread. What may block runs off the loop and posts its result back as a command: a switch's plan,
// journal write and lever on its controller's worker (mode_switcher.h), discovery's scans on the scan worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/api/agent_control.h"
#include "agent/api/event_bus.h"
#include "agent/collect/collector.h"
#include "agent/collect/queue_control.h"
#include "agent/config/node_config.h"
#include "agent/daemon/agent_listeners.h"
#include "agent/daemon/api_adapter.h"
#include "agent/daemon/decision_pipeline.h"
#include "agent/state/journal.h"
#include "agent/daemon/loop_commands.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/payoff_listener.h"
#include "agent/daemon/policy_applier.h"
#include "agent/daemon/ports.h"
#include "agent/daemon/poller_cpu.h"
#include "agent/daemon/queue_log.h"
#include "agent/daemon/queue_roster.h"
#include "agent/daemon/serial_workers.h"
#include "agent/state/state_store.h"
#include "agent/daemon/switch_protocol.h"
#include "agent/metrics/agent_metrics.h"

namespace nvmeadapt::daemon {

struct AgentOptions {
  std::string state_dir = "/var/lib/nvme-adapt";
  v1::PolicySet config_policies;  // from the config file; a persisted policy wins over it
  engine::NodeIdentity node_identity;  // what node selectors match: hostname, kernel, labels (node_identity.h)
  // The config's policy_file_authoritative: a policy set over the API is not persisted and lasts until the
  // next reload (policy_source.h).
  bool policy_file_authoritative = false;
  engine::Nanos discovery_interval = 2'000'000'000;
  engine::Nanos counters_interval = 1'000'000'000;
  engine::Nanos idle_wait = 50'000'000;  // longest loop wait when nothing is due
  // Longest an RPC waits for the loop to take its call; then it is answered kUnavailable and the call is
  // dropped unrun (callers retry). Levers and scans run off the loop; only the loop's own work can hold it.
  engine::Nanos rpc_wait = 2'000'000'000;
  // Least time between two disruptive changes (a controller reset) of one controller; a change asked for
  // sooner is refused with the time left to wait (issue 15, finding 7).
  engine::Nanos min_disruptive_interval = 30'000'000'000;
  // Longest a switch's lever may take before the switch is given up as a timed-out lever error (the queue
  // degraded, retried with backoff when the agent wants the mode); no other switch of that controller is
  // queued behind it until the lever returns.
  engine::Nanos lever_timeout = 10'000'000'000;
  std::string record_windows_path;  // trace of the engine's and node layer's inputs (replayable) and decisions
  // Queues tracked: the BPF queue table's, half for the machine's kernel queues and half for the sources a
  // peer can multiply, as the table is split (collect/queue_control.h).
  size_t max_queues = collect::kQueueTableSlots;
  std::string version;
  // Journal entries are stamped with restore_rules.boot_id and judged by these rules when restored.
  state::RestoreRules restore_rules;
  // False when the daemon already restored the journal before anything else (main.cc): Start then only
  // loads what is left, which shutdown retries, and counts it as unrestored (the metric).
  bool restore_at_start = true;
  std::string journal_warning;  // what that restore said about a corrupt journal (shown in GetStatus)
  // The node layer's settings (config `node`); it decides the queues whose policy has node_layer.
  config::NodeLayerConfig node;
  std::string node_facts_root = "/";  // where proc/stat and proc/pressure/cpu are read (a fake tree in tests)
};

struct AgentDeps {
  collect::Collector* collector = nullptr;
  Discovery* discovery = nullptr;
  Levers* levers = nullptr;
  std::function<engine::Nanos()> monotonic;  // defaults to CLOCK_MONOTONIC
  std::function<int64_t()> wall;             // defaults to CLOCK_REALTIME ns
  metrics::AgentMetrics* metrics = nullptr;  // optional
};

class Agent {
 public:
  Agent(AgentOptions options, AgentDeps deps);
  ~Agent();

  // Restores what the journal says was changed (before anything else), loads the policy, discovers.
  Status Start();
  // One turn of the loop: commands, windows (waiting at most until the next timer), timers, discovery.
  void RunOnce();
  // Runs turns until Stop(); marks the loop thread so that API calls become commands.
  void Run();
  void Stop();
  // Puts every changed queue back to its safe value. Call after Run() returned.
  Status Shutdown();
  // SIGHUP: the config file's policy levels. Used only while no policy was persisted over gRPC.
  // `node`: the node as node selectors see it now (its labels file re-read); nullopt: as it was.
  Result<ReloadOutcome> ReloadConfigPolicies(const v1::PolicySet& policies,
                                             const std::optional<engine::NodeIdentity>& node = std::nullopt);
  // SIGHUP: the config file's node settings (validated by the caller).
  Status ReloadNode(const config::NodeLayerConfig& node);

  // Hears what the loop does, after the metrics, the event stream and the trace. Before Start().
  void AddListener(AgentListener& listener) { listeners_.Add(listener); }

  // What gRPC callers see and change (thread-safe: each call runs on the loop thread).
  api::AgentControl& api() { return api_; }
  api::EventBus& events() { return bus_; }
  const engine::Engine& engine() const { return pipeline_.engine(); }

 private:
  void PollWindows(int timeout_ms);
  void OnWindowEvent(const collect::WindowEvent& event);
  void RunTimers(engine::Nanos now);
  void RunNode(engine::Nanos now);
  // A timed pause reached its end: the policy in force again, pause.json removed.
  void EndPause(engine::Nanos now);
  // Starts a scan on the scan worker (unless one still runs); Reconcile hands its snapshot to the roster
  // on the loop.
  void Rediscover(engine::Nanos now);
  void Reconcile(const Result<std::vector<DiscoveredQueue>>& scan, engine::Nanos now);
  void AddQueue(const DiscoveredQueue& found, engine::Nanos now);
  void RemoveQueue(ManagedQueue& queue, const char* why);
  void RefreshCounters();
  int NextWaitMs(engine::Nanos now);

  AgentOptions options_;
  AgentDeps deps_;
  state::StateStore store_;
  state::Journal journal_;
  ManagedQueues queues_;
  api::EventBus bus_;
  // Who hears of the loop: the trace, the metrics (when there are any), the event stream, then any added.
  TraceListener trace_;
  // Before the metrics listener, which exports its records.
  PayoffListener payoff_{[](const ManagedQueue& q) { return ReadPollerCpu(q); }};
  std::optional<MetricsListener> metrics_listener_;
  EventListener event_listener_;
  AgentListeners listeners_;
  LoopHealth health_;
  LoopCommands loop_;
  QueueLog queue_log_;
  DecisionPipeline pipeline_;
  SwitchProtocol switches_;
  PolicyApplier policy_;
  ApiAdapter api_;
  QueueRoster roster_;
  engine::Nanos next_discovery_ = 0;
  engine::Nanos next_counters_ = 0;
  bool scan_running_ = false;  // a scan runs on the scan worker: the next waits for its snapshot
  uint64_t next_queue_serial_ = 1;
  uint64_t unknown_windows_ = 0;
  std::atomic<bool> stop_{false};
  SerialWorkers scanner_{"nvme-adapt-scan"};  // last: joined before anything it uses goes
};

}  // namespace nvmeadapt::daemon
