// SPDX-License-Identifier: Apache-2.0
// Fakes of the agent's ports, for closed-loop tests without root, BPF or devices. Safe for the loop and the
// agent's workers to call while a test thread watches (Push, the locked accessors); tests that drive the
// agent without its loop thread read the fields directly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/daemon/ports.h"

namespace nvmeadapt::daemon::testing {

class FakeCollector : public collect::Collector {
 public:
  std::string Name() const override { return observe_only ? "procfs" : "fake"; }
  bool ObserveOnly() const override { return observe_only; }
  std::vector<std::string> Hooks() const override { return {"fake/hook"}; }
  Result<int> Poll(int timeout_ms, const std::function<void(const collect::WindowEvent&)>& sink) override {
    if (on_poll) on_poll();
    int n = 0;
    for (;;) {
      collect::WindowEvent event;
      {
        std::lock_guard lock(mutex);
        if (pending.empty()) break;
        event = pending.front();
        pending.pop_front();
      }
      sink(event);
      ++n;
    }
    // A loop on its own thread waits as on the ring buffer (at most 1 ms here), not spinning.
    if (n == 0 && timeout_ms > 0 && waits) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return n;
  }
  void Wake() override {
    std::lock_guard lock(mutex);
    ++wakes;
  }
  // A window for the loop to take, from a test thread while the loop runs.
  void Push(const collect::WindowEvent& event, engine::Nanos next_window_start) {
    std::lock_guard lock(mutex);
    pending.push_back(event);
    counters[event.key.ToString()].progress = {next_window_start, 0};
  }
  std::optional<collect::QueueControl> ControlOf(const QueueKey& key) {
    std::lock_guard lock(mutex);
    auto it = controls.find(key.ToString());
    if (it == controls.end()) return std::nullopt;
    return it->second;
  }
  Status SetQueueControl(const QueueKey& key, const collect::QueueControl& control) override {
    std::lock_guard lock(mutex);
    if (refuse_control) return MakeError(ErrorCode::kUnavailable, "queue " + key.ToString() + ": queue table full");
    controls[key.ToString()] = control;
    return OkStatus();
  }
  Status ForgetQueue(const QueueKey& key) override {
    forgotten.push_back(key.ToString());
    return OkStatus();
  }
  Result<collect::QueueCounters> ReadCounters(const QueueKey& key) const override {
    std::lock_guard lock(mutex);
    ++counter_reads;
    auto it = counters.find(key.ToString());
    if (it == counters.end()) return MakeError(ErrorCode::kNotFound, "no counters");
    return it->second;
  }
  std::vector<QueueKey> ObservedQueues() const override { return {}; }
  Status AttachProcess(pid_t pid, const std::string&) override {
    attached.push_back(pid);
    return OkStatus();
  }
  Status DetachProcess(pid_t pid) override {
    detached.push_back(pid);
    return OkStatus();
  }
  collect::CollectorStats Stats() const override { return {}; }

  mutable std::mutex mutex;  // pending, controls and counters, when the loop runs on its thread
  bool observe_only = false;
  bool refuse_control = false;
  bool waits = true;                // Poll with nothing to hand waits 1 ms
  int wakes = 0;                    // Wake calls: work handed to the loop from another thread
  mutable int counter_reads = 0;    // ReadCounters calls: the agent's timer looking at a queue
  std::function<void()> on_poll;    // runs at each Poll, on the loop thread
  std::deque<collect::WindowEvent> pending;
  std::map<std::string, collect::QueueControl> controls;
  std::map<std::string, collect::QueueCounters> counters;
  std::vector<std::string> forgotten;
  std::vector<pid_t> attached, detached;
};

class FakeDiscovery : public Discovery {
 public:
  Result<std::vector<DiscoveredQueue>> Scan() override {
    ++scans;
    if (on_scan) on_scan();
    return queues;
  }
  std::vector<DiscoveredQueue> queues;
  int scans = 0;
  std::function<void()> on_scan;
};

// Opened once: whoever waits on it goes on.
class Latch {
 public:
  void Open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Keeps one value per target ("interrupt"/"poll"); can be told to refuse, or to hang a controller's
// switches on a latch (a driver that stopped answering its control socket).
class FakeLevers : public Levers {
 public:
  std::optional<std::string> LeverNameFor(const DiscoveredQueue& q) const override {
    if (q.controller.rfind("nolever", 0) == 0) return std::nullopt;
    return "fake";
  }
  bool Disruptive(const DiscoveredQueue&) const override { return disruptive; }
  Result<LeverPlan> Plan(const DiscoveredQueue& q, ReapMode mode) override {
    std::lock_guard lock(mutex);
    const std::string target = QueueName(q.controller, q.qid);
    auto it = values.find(target);
    const std::string current = it == values.end() ? std::string(ReapModeName(q.mode)) : it->second;
    LeverPlan plan{"fake", target, current, std::string(ReapModeName(mode))};
    plan.dry_run = dry_run;
    plan.changes = !already_there.count(target);
    plan.in_flight = in_flight;
    plan.execute = [this, plan] { return Apply(plan); };
    return plan;
  }
  Status Apply(const LeverPlan& plan) {
    if (!hang_controller.empty() && plan.target.rfind(hang_controller + ":q", 0) == 0) {
      {
        std::lock_guard lock(mutex);
        ++hung;
      }
      hang.Wait();
    }
    {
      std::lock_guard lock(mutex);
      ++applies;
    }
    if (on_apply) on_apply(plan);
    std::lock_guard lock(mutex);
    if (refuse > 0 || refuse_targets.count(plan.target) > 0) {
      if (refuse > 0) --refuse;
      return MakeError(refuse_code, refuse_code == ErrorCode::kRefused ? "Feature Not Changeable (0x410e)"
                                                                        : "controller busy");
    }
    values[plan.target] = plan.applied_value;
    log.push_back("apply " + plan.target + "=" + plan.applied_value);
    return OkStatus();
  }
  Status Restore(const v1::JournalEntry& entry) override {
    std::lock_guard lock(mutex);
    if (refuse_restores > 0) {
      --refuse_restores;
      return MakeError(ErrorCode::kIo, "controller busy");
    }
    values[entry.target()] = entry.safe_value();
    log.push_back("restore " + entry.target() + "=" + entry.safe_value());
    return OkStatus();
  }
  std::string Value(const std::string& target) {
    std::lock_guard lock(mutex);
    return values[target];
  }
  int Hung() {
    std::lock_guard lock(mutex);
    return hung;
  }
  std::mutex mutex;  // guards the fields below while workers call the lever
  std::map<std::string, std::string> values;
  std::vector<std::string> log;
  int refuse = 0;
  int refuse_restores = 0;  // the next restores fail (kIo): their entries are kept
  std::set<std::string> refuse_targets;  // refused every time, whatever `refuse` says
  bool dry_run = false;  // plans say the lever writes nothing
  bool disruptive = false;  // every change resets the controller
  std::set<std::string> already_there;  // targets whose plans change nothing (a controller-wide lever moved them)
  ErrorCode refuse_code = ErrorCode::kRefused;
  std::function<void(const LeverPlan&)> on_apply;  // runs inside a plan's Execute, before it succeeds or refuses
  std::optional<LeverPlan::InFlight> in_flight;    // every plan's second journal entry (the reconnect lever's)
  int applies = 0;
  std::string hang_controller;  // Execute for a queue of this controller waits on `hang` first
  Latch hang;
  int hung = 0;  // Applies that waited (or wait) on `hang`
};

inline DiscoveredQueue UvnvmeQueue(uint32_t qid, const std::string& controller = "uvnvme:7:0") {
  DiscoveredQueue q;
  q.controller = controller;
  q.qid = qid;
  q.source = v1::SOURCE_UVNVME;
  q.key = QueueKey{Source::kUvnvme, 0, qid, 7};
  if (controller != "uvnvme:7:0") q.key.ctrl = 1;
  q.eligible = true;
  q.pid = 7;
  q.binary = "/usr/bin/uvnvme-load";
  return q;
}

}  // namespace nvmeadapt::daemon::testing
