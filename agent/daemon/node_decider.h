// SPDX-License-Identifier: Apache-2.0
// The daemon's side of the node layer (agent/engine/node.h, issue 34): the layer behind its gate to the
// engine (agent/engine/node_gate.h), the node's facts read on the loop (procfs, collect/node_facts.h), each queue
// described to the layer (its reaping CPU from discovery, its measured gain, whether its policy has node_layer), and
// the counts the metrics and GetStatus show. Runs on the loop thread like the engine; no lock.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/collect/node_facts.h"
#include "agent/config/node_config.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/payoff_listener.h"
#include "agent/engine/node_gate.h"
#include "agent/metrics/node_series.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::daemon {

// The one CPU a queue's completions are reaped on, where discovery knows it: a queue whose submitters (kernel)
// or reaper thread (uvnvme: its affinity) are bound to a single CPU. nullopt otherwise: the CPU rules skip it.
std::optional<uint32_t> ReapingCpu(const DiscoveredQueue& queue);

// What polling a queue gained per CPU second, from its payoff record: completions gained over the CPU its
// poller spent where that is measured, else over the time it polled (a spinning reaper holds its CPU).
std::optional<double> GainPerCpuSecond(const QueuePayoffRecord& record);

class NodeDecider {
 public:
  // `facts_root`: where proc/ is ("/" but in tests).
  NodeDecider(config::NodeLayerConfig config, std::string facts_root);

  void Configure(const config::NodeLayerConfig& config);
  const config::NodeLayerConfig& config() const { return config_; }

  // The node layer's face to the engine: windows, facts and decisions go through it (node_gate.h).
  engine::NodeGate& gate() { return gate_; }

  // Tells the layer the queue as it should see it now (at its arrival and at every facts reading), and
  // returns what it told. `reaper_cpu`: its reaper thread's CPU time now (poller_cpu.h), where it can be
  // read: the share of its CPU it used since the last reading is its own work, not other work for its try
  // (NodeQueue.own_busy).
  engine::NodeQueue Describe(const ManagedQueue& queue, bool node_layer, const QueuePayoffRecord* payoff,
                             std::optional<engine::Nanos> reaper_cpu = std::nullopt, engine::Nanos now = 0);
  void Forget(engine::QueueHandle queue);

  // Counts what the gate handed on: a try it deferred, a run it ended.
  void Count(const engine::GatedDecision& gated);

  // The node's facts when a reading is due (then the next is due an interval later); nullopt when none is
  // due or the reading failed (facts_error says why; the layer keeps its last facts, which age out).
  std::optional<engine::NodeFacts> ReadFacts(engine::Nanos now);
  engine::Nanos NextFacts() const { return next_facts_; }

  metrics::NodeSeries Series() const;
  // The last reading's error, if the last reading failed (GetStatus shows it among the degraded parts).
  const std::string& facts_error() const { return facts_error_; }

 private:
  config::NodeLayerConfig config_;
  engine::NodeGate gate_;
  collect::NodeFactsReader reader_;
  engine::NodeFacts last_facts_;
  std::string facts_error_;
  engine::Nanos next_facts_ = 0;
  metrics::NodeSeries series_;
  std::vector<bool> decided_;  // by handle: whose policy has node_layer
  struct ReaperSample {
    engine::Nanos cpu = 0, at = 0;
  };
  std::vector<std::optional<ReaperSample>> reapers_;  // by handle: the last reading of its reaper's CPU time
};

}  // namespace nvmeadapt::daemon
