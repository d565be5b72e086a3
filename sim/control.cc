// SPDX-License-Identifier: Apache-2.0
#include "sim/control.h"

#include <algorithm>

#include "agent/engine/policy_fields.h"
#include "bpf/na_pace.h"

namespace nvmeadapt::sim {
namespace {

constexpr uint32_t kRingDelivery = 0;
constexpr uint32_t kAgentTimer = 1;
constexpr uint32_t kNodeFacts = 2;

}  // namespace

std::string PolicyName(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kInterrupt: return "interrupt";
    case PolicyKind::kPoll: return "poll";
    case PolicyKind::kInDriver: return "in_driver";
    case PolicyKind::kAgent: return "agent";
    case PolicyKind::kGsim: return "gsim";
    case PolicyKind::kNode: return "node";
  }
  return "unknown";
}

void StaticController::Attach(Host& host) {
  for (uint32_t q = 0; q < host.Queues(); ++q) host.RequestMode(q, mode_, 0);
}

EngineController::EngineController(const engine::Policy& policy, std::optional<AgentLatency> latency)
    : policy_(policy), latency_(latency) {
  policy_.mode = engine::ControllerMode::kAdaptive;
}

EngineController EngineController::InDriver(const engine::Policy& policy) {
  // The patch's rules whatever the case's policy (among them: every completion held to its own index).
  engine::Policy patch = policy;
  engine::ApplyPolicyProfile(*engine::FindPolicyProfile(engine::kPatchProfile), patch);
  return EngineController(patch, std::nullopt);
}

EngineController EngineController::Agent(const engine::Policy& policy, const AgentLatency& latency) {
  return EngineController(policy, latency);
}

EngineController EngineController::Node(const engine::Policy& policy, const AgentLatency& latency,
                                        const NodeModel& node) {
  EngineController out(policy, latency);
  out.node_model_ = node;
  out.gate_.layer().SetSettings(node.settings);
  return out;
}

void EngineController::Attach(Host& host) {
  host_ = &host;
  queues_.assign(host.Queues(), Collector{});
  engine::QueueSetup setup;
  setup.eligible = true;
  setup.policy = policy_;
  for (Collector& c : queues_) c.handle = engine_.AddQueue(setup, 0).handle;
  ScheduleTimer(0);
  if (!node_model_) return;
  for (uint32_t q = 0; q < queues_.size(); ++q) {
    gate_.layer().SetQueue(queues_[q].handle, engine::NodeQueue{host.QueueCpu(q), std::nullopt, std::nullopt});
  }
  busy_before_.assign(host.Cpus(), 0);
  reap_before_.assign(queues_.size(), 0);
  host_->Events().Schedule(node_model_->facts_interval, EventKind::kControl, kNodeFacts);
}

void EngineController::ReadFacts(Nanos now) {
  engine::NodeFacts facts;
  facts.at = now;
  facts.cpu_busy.resize(busy_before_.size());
  const Nanos interval = now - facts_before_;
  for (uint32_t cpu = 0; cpu < busy_before_.size(); ++cpu) {
    const Nanos busy = host_->CpuBusy(cpu);
    if (interval > 0) facts.cpu_busy[cpu] = std::clamp(static_cast<double>(busy - busy_before_[cpu]) / interval, 0.0, 1.0);
    busy_before_[cpu] = busy;
  }
  // Each queue's own reaping is no other work for its own try (NodeQueue.own_busy), as the daemon reads its
  // reaper thread's CPU time.
  for (uint32_t q = 0; q < queues_.size(); ++q) {
    const Nanos reap = host_->QueueReapBusy(q);
    engine::NodeQueue described{host_->QueueCpu(q), std::nullopt, std::nullopt};
    if (interval > 0) described.own_busy = std::min(1.0, static_cast<double>(reap - reap_before_[q]) / interval);
    gate_.layer().SetQueue(queues_[q].handle, described);
    reap_before_[q] = reap;
  }
  facts_before_ = now;
  Handle(gate_.OnFacts(engine_, facts), now);
  host_->Events().Schedule(now + node_model_->facts_interval, EventKind::kControl, kNodeFacts);
}

void EngineController::Handle(const std::vector<engine::GatedDecision>& decisions, Nanos now) {
  for (const engine::GatedDecision& gated : decisions) {
    const engine::Decision& d = gated.decision;
    if (d.deferred) {
      ++counts_.node_deferred;
      continue;
    }
    if (gated.node_ended) ++counts_.node_ended;
    Count(d);
    // Handles are dense from 0 in the order queues were added, so the handle is the host's queue index.
    if (d.Switches()) Apply(d.queue, d, now);
  }
}

void EngineController::ScheduleTimer(Nanos now) {
  host_->Events().Schedule(now + policy_.timer_granularity, EventKind::kControl, kAgentTimer);
}

void EngineController::OnReaped(uint32_t queue, ReapMode mode, uint32_t entries, Nanos now) {
  Collector& c = queues_[queue];
  if (mode != c.mode) return;  // the driver switched and the collector has not restarted yet: not counted
  if (c.awaiting_first) {
    c.start = now;
    c.awaiting_first = false;
  }
  for (uint32_t i = 0; i < entries; ++i) {
    ++c.count;
    c.last = now;
    // The kernel's tracepoint fires per entry: n = 1 for each, as the BPF side checks it.
    if (c.mode == ReapMode::kPoll && c.baseline_completions > 0 && !c.miss_sent &&
        na_behind_pace(static_cast<__u64>(now - c.start), na_pace_index(c.count, 1, policy_.batch_pace_allowance),
                       static_cast<__u64>(c.baseline_span), c.baseline_completions,
                       static_cast<__u64>(policy_.pace_slack))) {
      c.miss_sent = true;
      engine::WindowRecord miss{c.handle, c.mode, c.count, c.start, now, engine::PaceMiss{c.count, now - c.start, 1}};
      Send(miss, now);
    }
    if (c.count >= policy_.window_completions) {
      Send(engine::WindowRecord{c.handle, c.mode, c.count, c.start, now, std::nullopt}, now);
      c.start = now;
      c.count = 0;
      c.miss_sent = false;
    }
  }
}

void EngineController::OnModeEffective(uint32_t queue, ReapMode mode, Nanos now) {
  Collector& c = queues_[queue];
  if (c.mode != mode) Restart(c, mode, now);  // in the driver it restarted at the decision already
}

void EngineController::Restart(Collector& c, ReapMode mode, Nanos now) {
  c.mode = mode;  // a new control generation: the try's window starts where the driver switched
  c.start = now;
  c.last = 0;
  c.count = 0;
  c.miss_sent = false;
  // The agent's BPF side under the policy's first-completion clock (bpf/na_queue.bpf.h); the in-driver
  // rule keeps the patch's clock.
  c.awaiting_first = latency_ && policy_.try_clock_first_completion && mode == ReapMode::kPoll;
}

void EngineController::Send(const engine::WindowRecord& record, Nanos now) {
  ++counts_.records;
  if (!latency_) {
    Decide(record, now);
    return;
  }
  ring_.push_back(record);
  host_->Events().Schedule(now + latency_->ring_delay, EventKind::kControl, kRingDelivery);
}

void EngineController::OnControl(uint32_t a, uint64_t, Nanos now) {
  if (now < loop_free_) {  // the loop is still waiting for a lever: everything waits behind it, in order
    host_->Events().Schedule(loop_free_, EventKind::kControl, a);
    return;
  }
  if (a == kRingDelivery) {
    const engine::WindowRecord record = ring_.front();
    ring_.pop_front();
    Decide(record, now);
    return;
  }
  if (a == kNodeFacts) {
    ReadFacts(now);
    return;
  }
  for (uint32_t q = 0; q < queues_.size(); ++q) {
    const Collector& c = queues_[q];
    if (!engine_.NeedsTimer(c.handle)) continue;
    const auto decision = engine_.OnTimer(c.handle, now, engine::WindowProgress{c.start, c.count, c.last});
    if (!decision) continue;
    gate_.Follow(*decision);
    Handle({{*decision, std::nullopt}}, now);
  }
  ScheduleTimer(std::max(now, loop_free_));
}

void EngineController::Decide(const engine::WindowRecord& record, Nanos now) {
  Handle(gate_.OnWindow(engine_, record), now);
}

void EngineController::Count(const engine::Decision& d) {
  ++counts_.decisions;
  if (d.reason == engine::Reason::kBehindPace) ++counts_.behind_pace;
  if (d.reason == engine::Reason::kBehindPace && d.pace_index == 1) ++counts_.behind_pace_first;
  if (d.reason == engine::Reason::kNotFaster) ++counts_.not_faster;
  if (d.reason == engine::Reason::kStalled) ++counts_.stalled;
  if (d.backoff_started) ++counts_.backoffs;
}

void EngineController::Apply(uint32_t queue, const engine::Decision& d, Nanos now) {
  Collector& c = queues_[queue];
  const engine::QueueView view = engine_.View(c.handle);
  c.baseline_span = view.baseline_span;  // published to the BPF side before the lever acts
  c.baseline_completions = view.baseline_completions;
  const bool to_poll = d.to == ReapMode::kPoll;
  ++(to_poll ? counts_.to_poll : counts_.to_interrupt);
  if (!latency_) {
    // In the driver the switch happens inside the pass that closed the window: the rest of that pass is
    // reaped in the new mode and counts in the try's window, as every completion reaped from then on does.
    host_->RequestMode(queue, d.to, now);
    Restart(c, d.to, now);
    return;
  }
  host_->RequestMode(queue, d.to, now + (to_poll ? latency_->to_poll_effect : latency_->to_interrupt_effect));
  loop_free_ = std::max(loop_free_, now + (to_poll ? latency_->to_poll_blocking : latency_->to_interrupt_blocking));
}

}  // namespace nvmeadapt::sim
