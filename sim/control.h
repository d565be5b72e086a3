// SPDX-License-Identifier: Apache-2.0
// The policies the model compares on the same load: static interrupt, static poll, and the project's
// engine (agent/engine) either in the driver (the patch: every completion seen at once, switches at once)
// or behind an agent (window records through a ring buffer with a delay, a decision-to-effect latency per
// switch, a loop that waits for each lever, and the BPF side's per-completion pace check).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "agent/engine/engine.h"
#include "agent/engine/node_gate.h"
#include "sim/host.h"

namespace nvmeadapt::sim {

class StaticController : public Controller {
 public:
  explicit StaticController(ReapMode mode) : mode_(mode) {}
  void Attach(Host& host) override;
  void OnReaped(uint32_t, ReapMode, uint32_t, Nanos) override {}
  void OnModeEffective(uint32_t, ReapMode, Nanos) override {}
  void OnControl(uint32_t, uint64_t, Nanos) override {}

 private:
  ReapMode mode_;
};

struct EngineCounts {
  uint64_t decisions = 0;
  uint64_t to_poll = 0;
  uint64_t to_interrupt = 0;
  uint64_t behind_pace = 0;
  uint64_t behind_pace_first = 0;  // of those, at the try's first completion (k = 1)
  uint64_t not_faster = 0;
  uint64_t stalled = 0;
  uint64_t backoffs = 0;
  uint64_t records = 0;
  uint64_t node_deferred = 0;  // tries the node layer deferred
  uint64_t node_ended = 0;     // polling runs it ended
};

// The node layer in the model: the daemon's default settings, its facts (each CPU's busy share, as /proc/stat
// would give it; the model has no PSI) read every `facts_interval` of model time. The daemon reads every
// second; the model's runs last a few hundred milliseconds, so it reads more often.
struct NodeModel {
  engine::NodeSettings settings = Enabled();
  Nanos facts_interval = 10'000'000;
  static engine::NodeSettings Enabled() {
    engine::NodeSettings s;
    s.enabled = true;
    return s;
  }
};

class EngineController : public Controller {
 public:
  // In the driver: no delay anywhere, the patch's pace rule (no batch allowance).
  static EngineController InDriver(const engine::Policy& policy);
  static EngineController Agent(const engine::Policy& policy, const AgentLatency& latency);
  // The agent with the node layer deciding every queue's tries (the daemon's node_layer policy).
  static EngineController Node(const engine::Policy& policy, const AgentLatency& latency, const NodeModel& node);

  void Attach(Host& host) override;
  void OnReaped(uint32_t queue, ReapMode mode, uint32_t entries, Nanos now) override;
  void OnModeEffective(uint32_t queue, ReapMode mode, Nanos now) override;
  void OnControl(uint32_t a, uint64_t b, Nanos now) override;
  const EngineCounts& Counts() const { return counts_; }

 private:
  EngineController(const engine::Policy& policy, std::optional<AgentLatency> latency);

  // What the BPF side keeps per queue: the window in progress and the baseline it checks pace against.
  struct Collector {
    engine::QueueHandle handle = 0;
    ReapMode mode = ReapMode::kInterrupt;
    Nanos start = 0;
    Nanos last = 0;
    uint32_t count = 0;
    bool miss_sent = false;
    Nanos baseline_span = 0;
    uint32_t baseline_completions = 0;
    bool awaiting_first = false;  // the try's clock starts at the next completion
  };
  void Restart(Collector& c, ReapMode mode, Nanos now);
  void Send(const engine::WindowRecord& record, Nanos now);
  void Decide(const engine::WindowRecord& record, Nanos now);
  void Apply(uint32_t queue, const engine::Decision& decision, Nanos now);
  void Count(const engine::Decision& decision);
  void ScheduleTimer(Nanos now);
  // The decisions as the node gate hands them on (each counted, then applied if it switches).
  void Handle(const std::vector<engine::GatedDecision>& decisions, Nanos now);
  void ReadFacts(Nanos now);

  engine::Policy policy_;
  std::optional<AgentLatency> latency_;
  Host* host_ = nullptr;
  engine::Engine engine_;
  std::vector<Collector> queues_;
  std::deque<engine::WindowRecord> ring_;  // records on their way to the agent, in order
  Nanos loop_free_ = 0;                    // the agent's loop is waiting for a lever until then
  EngineCounts counts_;
  std::optional<NodeModel> node_model_;
  // The daemon's path: every window through the node gate. Its layer decides only with node_model_ (off
  // otherwise: the per-queue agent, every try admitted).
  engine::NodeGate gate_;
  std::vector<Nanos> busy_before_;  // each CPU's busy time at the last facts
  std::vector<Nanos> reap_before_;  // each queue's reaping time at the last facts
  Nanos facts_before_ = 0;
};

// kGsim: interrupt mode with GSIM moderating the host's interrupts (sim/gsim.h); kNode: the agent with the node
// layer (NodeModel).
enum class PolicyKind { kInterrupt, kPoll, kInDriver, kAgent, kGsim, kNode };
std::string PolicyName(PolicyKind kind);

}  // namespace nvmeadapt::sim
