// The closed loop: collectors' windows into the engine, the engine's decisions out through the levers,
// with discovery, timers, the journal and the persisted policy around it. One loop thread owns the engine,
// the managed queues and the BPF controls; gRPC threads reach it through AgentControl, whose calls run as
// commands on the loop thread. What may block runs off the loop and posts its result back as a command:
// a switch's plan, journal write and lever on its controller's worker (mode_switcher.h), discovery's scans
// on the scan worker.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/api/agent_control.h"
#include "agent/collect/collector.h"
#include "agent/daemon/agent_listeners.h"
#include "agent/daemon/poller_cpu.h"
#include "agent/daemon/journal.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/mode_switcher.h"
#include "agent/daemon/node_decider.h"
#include "agent/daemon/policy_applier.h"
#include "agent/daemon/policy_source.h"
#include "agent/daemon/policy_book.h"
#include "agent/daemon/ports.h"
#include "agent/daemon/queue_roster.h"
#include "agent/daemon/serial_workers.h"
#include "agent/daemon/state_store.h"
#include "agent/daemon/switch_recovery.h"
#include "agent/engine/engine.h"
#include "agent/metrics/agent_metrics.h"

namespace nvmeadapt::daemon {

struct AgentOptions {
  std::string state_dir = "/var/lib/nvme-adapt";
  v1::PolicySet config_policies;  // from the config file; a persisted policy wins over it
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
  std::string record_windows_path;       // trace of the engine's inputs (replayable) and decisions
  size_t max_queues = 4096;
  std::string version;
  // Journal entries are stamped with restore_rules.boot_id and judged by these rules when restored.
  RestoreRules restore_rules;
  // False when the daemon already restored the journal before anything else (main.cc): Start then only
  // loads what is left, which shutdown retries.
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

class Agent : public api::AgentControl {
 public:
  Agent(AgentOptions options, AgentDeps deps);
  ~Agent() override;

  // Restores what the journal says was changed (before anything else), loads the policy, discovers.
  Status Start();
  // One turn of the loop: commands, windows (waiting at most until the next timer), timers, discovery.
  void RunOnce();
  // Runs turns until Stop(); marks the loop thread so that AgentControl calls become commands.
  void Run();
  void Stop();
  // Puts every changed queue back to its safe value. Call after Run() returned.
  Status Shutdown();
  // SIGHUP: the config file's policy levels. Used only while no policy was persisted over gRPC.
  struct ReloadOutcome {
    bool policy_applied = false;
    std::string why_not;  // when not applied: what stays in force instead and how to change that
  };
  Result<ReloadOutcome> ReloadConfigPolicies(const v1::PolicySet& policies);
  // SIGHUP: the config file's node settings (validated by the caller).
  Status ReloadNode(const config::NodeLayerConfig& node);

  // Hears what the loop does, after the metrics, the event stream and the trace. Before Start().
  void AddListener(AgentListener& listener) { listeners_.Add(listener); }

  api::EventBus& events() { return bus_; }
  const engine::Engine& engine() const { return engine_; }

  // AgentControl (thread-safe: each runs on the loop thread). SetQueueMode and SetPolicy answer once the
  // switches they started ended, or after rpc_wait with the queues as they are then.
  v1::GetStatusResponse GetStatus() override;
  Result<v1::ListQueuesResponse> ListQueues(const v1::ListQueuesRequest& request) override;
  v1::GetPolicyResponse GetPolicy() override;
  Result<v1::SetPolicyResponse> SetPolicy(const v1::SetPolicyRequest& request) override;
  Result<v1::SetQueueModeResponse> SetQueueMode(const v1::SetQueueModeRequest& request) override;
  std::shared_ptr<api::Subscription> WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) override;
  Result<v1::ExplainPolicyResponse> ExplainPolicy(const v1::ExplainPolicyRequest& request) override;

 private:
  // Runs `fn` on the loop thread (inline when no loop runs) and returns its result.
  template <class Fn>
  auto OnLoop(Fn fn) -> decltype(fn());
  // The same for a call whose answer has no error: `unanswered(error)` makes the answer given instead.
  template <class Fn, class Unanswered>
  auto OnLoop(Fn fn, Unanswered unanswered) -> decltype(fn());

  // agent.cc: the loop.
  void RunCommands();
  void PollWindows(int timeout_ms);
  void OnWindowEvent(const collect::WindowEvent& event);
  void RunTimers(engine::Nanos now);
  // Starts a scan on the scan worker (unless one still runs); Reconcile hands its snapshot to the roster
  // on the loop.
  void Rediscover(engine::Nanos now);
  void Reconcile(const Result<std::vector<DiscoveredQueue>>& scan, engine::Nanos now);
  // Runs `step` on the loop thread: queued as a command while the loop runs, inline before it runs, dropped
  // once it stopped (the worker that posted it is told by ModeSwitcher::Quiesce).
  void ToLoop(std::function<void()> step);
  void AddQueue(const DiscoveredQueue& found, engine::Nanos now);
  void RemoveQueue(ManagedQueue& queue, const char* why);
  void RefreshCounters();
  int NextWaitMs(engine::Nanos now);

  // agent_decide.cc: decisions, policy. `node_ended`: the node layer's reason for a node_ended decision.
  void HandleDecision(ManagedQueue& queue, const engine::Decision& decision,
                      std::optional<engine::NodeReason> node_ended = std::nullopt);

  // agent_node.cc: the node layer on the loop.
  // A try the node layer deferred: not applied, the engine told the queue stayed in interrupt mode.
  void DeferTry(ManagedQueue& queue, const engine::Decision& decision, engine::NodeReason reason);
  // Ends the polling runs the node layer gave up (each back to interrupt mode, reason node_ended).
  void EndNodeRuns(const std::vector<engine::NodeStop>& stops, engine::Nanos now);
  // Describes every queue to the layer, reads the node's facts when due and ends the runs they rule out.
  void RunNode(engine::Nanos now);
  v1::NodeStatus NodeStatusProto() const;
  // The rest of a decision once its switch (if any) ended: last decision, metrics, the event.
  void FinishDecision(ManagedQueue& queue, const engine::Decision& decision, v1::Decision proto, uint64_t seq);

  // agent_switch.cc: the switch protocol's loop side.
  struct SwitchInFlight;
  // Runs on the loop when the switch ended (inline before ApplyMode returns when no loop runs), with its
  // queue unless the queue left meanwhile: whether the mode was applied.
  using SwitchThen = std::function<void(ManagedQueue& queue, bool applied)>;
  // `evidence`: the window end or timer tick the decision rests on (for the switch timeline).
  void ApplyMode(ManagedQueue& queue, ReapMode mode, engine::Reason why, engine::Nanos evidence,
                 SwitchThen then);
  ManagedQueue* QueueOf(const SwitchInFlight& sw);  // nullptr when its queue left
  bool PublishSwitch(SwitchInFlight& sw, engine::Nanos journaled);
  void EndSwitch(SwitchInFlight& sw, const SwitchOutcome& outcome);
  void LateSwitch(SwitchInFlight& sw, const SwitchOutcome& outcome);
  // The queue keeps its mode: degraded and counted (recovery_), told, the engine following the real mode, a
  // retry planned.
  void FailSwitch(ManagedQueue& queue, ReapMode mode, engine::Reason why, const Error& error);
  // No switch of the queue is in flight any more: whoever waits for that is told.
  void Settled(ManagedQueue& queue);
  // After the lever returned: when the mode took effect (the driver's probe, or the lever's return).
  void TakeEffect(ManagedQueue& queue, SwitchTimeline& timeline);
  // Ends the queue's open switch timeline with the first decision on its new mode (or none).
  void CloseSwitch(ManagedQueue& queue, std::optional<engine::Decision> verdict);
  void RetryLevers(engine::Nanos now);
  // The mode the agent itself must bring the queue to and retry (a forced mode, the safe mode of off or
  // shadow, interrupt mode for a measuring queue left polling); nullopt when the engine decides.
  std::optional<ReapMode> ModeWantedByAgent(const ManagedQueue& queue) const;
  collect::QueueControl ControlFor(const ManagedQueue& queue, ReapMode mode, uint32_t generation,
                                   engine::Nanos mode_since) const;
  void PushControl(ManagedQueue& queue);  // the control of the queue as it is now
  // Marks the queue degraded (and says so once) when the collector refuses the control.
  void SendControl(ManagedQueue& queue, const collect::QueueControl& control);
  v1::Decision ToProto(const engine::Decision& decision) const;

  // agent_control.cc: proto views.
  // The metric of the policy in force (its source and hash), after every change of it.
  void NotePolicyOrigin();
  v1::QueueInfo Describe(ManagedQueue& queue) const;
  // A queue of the controller named `controller` by its name or stable ID; nullptr when none is managed.
  ManagedQueue* AnyQueueOf(const std::string& controller);
  // agent_explain.cc: where each field of the queue's policy comes from.
  v1::ExplainPolicyResponse Explain(ManagedQueue& queue);
  // Registers `waiter` with every queue whose switch is in flight (on the loop); false when there is none.
  bool WaitForSwitches(const std::shared_ptr<SwitchesSettled>& waiter);

  AgentOptions options_;
  AgentDeps deps_;
  StateStore store_;
  PolicySource policy_source_;
  // SetPolicy persists on its caller's thread, between reading the book on the loop and applying it there:
  // one change at a time, so that policy.json is written in the order the changes apply (agent_control.cc).
  std::mutex policy_change_mutex_;
  uint64_t policy_changes_ = 0;  // on the loop: every applied change of the book (a reload's too)
  Journal journal_;
  engine::Engine engine_;
  ManagedQueues queues_;
  api::EventBus bus_;
  // Who hears of the loop: the trace, the metrics (when there are any), the event stream, then any added.
  TraceListener trace_;
  // Before the metrics listener, which exports its records.
  PayoffListener payoff_{[](const ManagedQueue& q) { return ReadPollerCpu(q); }};
  std::optional<MetricsListener> metrics_listener_;
  EventListener event_listener_;
  AgentListeners listeners_;
  PolicyApplier policy_;
  NodeDecider node_{options_.node, options_.node_facts_root};
  QueueRoster roster_;
  engine::Nanos started_at_ = 0;
  engine::Nanos next_discovery_ = 0;
  engine::Nanos next_counters_ = 0;
  bool scan_running_ = false;  // a scan runs on the scan worker: the next waits for its snapshot
  uint64_t next_queue_serial_ = 1;
  SwitchRecovery recovery_;
  uint64_t unknown_windows_ = 0;
  uint64_t queues_over_cap_ = 0;
  std::string collector_error_;
  std::string journal_warning_;  // a corrupt journal set aside at start, until the next start

  std::mutex commands_mutex_;
  std::deque<std::function<void()>> commands_;
  enum class LoopState { kNotStarted, kRunning, kStopped };
  LoopState loop_state_ = LoopState::kNotStarted;  // guarded by commands_mutex_
  std::recursive_mutex inline_mutex_;             // serializes calls made before the loop runs
  std::atomic<bool> stop_{false};
  std::thread::id loop_thread_;

  // Last: their threads are joined before anything they use goes.
  SerialWorkers scanner_{"nvme-adapt-scan"};
  ModeSwitcher switcher_;
};

template <class Fn, class Unanswered>
auto Agent::OnLoop(Fn fn, Unanswered unanswered) -> decltype(fn()) {
  using T = decltype(fn());
  struct Call {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool started = false, cancelled = false;
    std::optional<T> result;
  };
  auto call = std::make_shared<Call>();
  {
    // Held by Run() while it hands the agent to the loop: an inline call never overlaps the loop.
    std::unique_lock inline_lock(inline_mutex_);
    std::unique_lock lock(commands_mutex_);
    if (loop_state_ == LoopState::kStopped) {
      return unanswered(MakeError(ErrorCode::kUnavailable, "the agent is stopping: it takes no more calls"));
    }
    if (loop_state_ == LoopState::kNotStarted || std::this_thread::get_id() == loop_thread_) {
      lock.unlock();
      return fn();
    }
    inline_lock.unlock();
    // `fn` refers to the caller's frame: it runs only while the caller still waits (not cancelled).
    commands_.push_back([call, fn = std::move(fn)]() mutable {
      {
        std::lock_guard guard(call->mutex);
        if (call->cancelled) return;
        call->started = true;
      }
      T result = fn();
      std::lock_guard guard(call->mutex);
      call->result.emplace(std::move(result));
      call->done_cv.notify_all();
    });
  }
  deps_.collector->Wake();  // the loop takes the call now, not when its wait ends
  std::unique_lock lock(call->mutex);
  if (!call->done_cv.wait_for(lock, std::chrono::nanoseconds(options_.rpc_wait), [&] { return call->result.has_value(); })) {
    if (!call->started) {
      call->cancelled = true;
      return unanswered(MakeError(ErrorCode::kUnavailable,
                                  "the agent's loop did not take the call within " +
                                      std::to_string(options_.rpc_wait / 1'000'000) +
                                      " ms (the loop is held up); try again"));
    }
    call->done_cv.wait(lock, [&] { return call->result.has_value(); });  // running now: its answer is near
  }
  return std::move(*call->result);
}

template <class Fn>
auto Agent::OnLoop(Fn fn) -> decltype(fn()) {
  return OnLoop(std::move(fn), [](const Error& error) -> decltype(fn()) { return error; });
}

}  // namespace nvmeadapt::daemon
