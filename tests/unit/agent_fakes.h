// Fakes of the agent's ports, for closed-loop tests without root, BPF or devices.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/daemon/ports.h"

namespace nvmeadapt::daemon::testing {

class FakeCollector : public collect::Collector {
 public:
  std::string Name() const override { return observe_only ? "procfs" : "fake"; }
  bool ObserveOnly() const override { return observe_only; }
  std::vector<std::string> Hooks() const override { return {"fake/hook"}; }
  Result<int> Poll(int, const std::function<void(const collect::WindowEvent&)>& sink) override {
    int n = 0;
    while (!pending.empty()) {
      collect::WindowEvent event = pending.front();
      pending.pop_front();
      sink(event);
      ++n;
    }
    return n;
  }
  Status SetQueueControl(const collect::QueueKey& key, const collect::QueueControl& control) override {
    if (refuse_control) return MakeError(ErrorCode::kUnavailable, "queue " + key.ToString() + ": queue table full");
    controls[key.ToString()] = control;
    return OkStatus();
  }
  Status ForgetQueue(const collect::QueueKey& key) override {
    forgotten.push_back(key.ToString());
    return OkStatus();
  }
  Result<collect::QueueCounters> ReadCounters(const collect::QueueKey& key) const override {
    auto it = counters.find(key.ToString());
    if (it == counters.end()) return MakeError(ErrorCode::kNotFound, "no counters");
    return it->second;
  }
  std::vector<collect::QueueKey> ObservedQueues() const override { return {}; }
  Status AttachProcess(pid_t pid, const std::string&) override {
    attached.push_back(pid);
    return OkStatus();
  }
  Status DetachProcess(pid_t pid) override {
    detached.push_back(pid);
    return OkStatus();
  }
  collect::CollectorStats Stats() const override { return {}; }

  bool observe_only = false;
  bool refuse_control = false;
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

// Keeps one value per target ("interrupt"/"poll"); can be told to refuse.
class FakeLevers : public Levers {
 public:
  std::string LeverFor(const DiscoveredQueue& q) const override {
    return q.controller.rfind("nolever", 0) == 0 ? "" : "fake";
  }
  bool Disruptive(const DiscoveredQueue&) const override { return disruptive; }
  Result<LeverPlan> Plan(const DiscoveredQueue& q, engine::ReapMode mode) override {
    const std::string target = QueueName(q.controller, q.qid);
    auto it = values.find(target);
    const std::string current = it == values.end() ? std::string(engine::ReapModeName(q.mode)) : it->second;
    LeverPlan plan{"fake", target, current, std::string(engine::ReapModeName(mode))};
    plan.dry_run = dry_run;
    plan.changes = !already_there.count(target);
    return plan;
  }
  Status Apply(const LeverPlan& plan) override {
    ++applies;
    if (on_apply) on_apply(plan);
    if (refuse > 0) {
      --refuse;
      return MakeError(refuse_code, refuse_code == ErrorCode::kRefused ? "Feature Not Changeable (0x410e)"
                                                                        : "controller busy");
    }
    values[plan.target] = plan.applied_value;
    log.push_back("apply " + plan.target + "=" + plan.applied_value);
    return OkStatus();
  }
  Status Restore(const v1::JournalEntry& entry) override {
    values[entry.target()] = entry.safe_value();
    log.push_back("restore " + entry.target() + "=" + entry.safe_value());
    return OkStatus();
  }
  std::map<std::string, std::string> values;
  std::vector<std::string> log;
  int refuse = 0;
  bool dry_run = false;  // plans say the lever writes nothing
  bool disruptive = false;  // every change resets the controller
  std::set<std::string> already_there;  // targets whose plans change nothing (a controller-wide lever moved them)
  ErrorCode refuse_code = ErrorCode::kRefused;
  std::function<void(const LeverPlan&)> on_apply;  // runs inside Apply, before it succeeds or refuses
  int applies = 0;
};

inline DiscoveredQueue UvnvmeQueue(uint32_t qid, const std::string& controller = "uvnvme:7:0") {
  DiscoveredQueue q;
  q.controller = controller;
  q.qid = qid;
  q.source = v1::SOURCE_UVNVME;
  q.key = collect::QueueKey{collect::Source::kUvnvme, 0, qid, 7};
  if (controller != "uvnvme:7:0") q.key.ctrl = 1;
  q.eligible = true;
  q.pid = 7;
  q.binary = "/usr/bin/uvnvme-load";
  return q;
}

}  // namespace nvmeadapt::daemon::testing
