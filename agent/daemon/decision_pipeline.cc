// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/decision_pipeline.h"

#include "agent/daemon/poller_cpu.h"

namespace nvmeadapt::daemon {

DecisionPipeline::DecisionPipeline(const config::NodeLayerConfig& node, std::string node_facts_root,
                                   const AgentListeners& listeners)
    : listeners_(listeners), node_(node, std::move(node_facts_root)) {}

engine::AddedQueue DecisionPipeline::AddQueue(const engine::QueueSetup& setup, engine::Nanos now) {
  return engine_.AddQueue(setup, now);
}

void DecisionPipeline::RemoveQueue(engine::QueueHandle queue) {
  engine_.RemoveQueue(queue);
  node_.Forget(queue);
}

void DecisionPipeline::Describe(const ManagedQueue& queue, bool decided) {
  listeners_.Tell(&AgentListener::NodeQueueDescribed, queue, node_.Describe(queue, decided, nullptr));
}

std::vector<engine::GatedDecision> DecisionPipeline::Counted(std::vector<engine::GatedDecision> decisions) {
  for (const engine::GatedDecision& gated : decisions) node_.Count(gated);
  return decisions;
}

std::vector<engine::GatedDecision> DecisionPipeline::OnWindow(const engine::WindowRecord& record) {
  return Counted(node_.gate().OnWindow(engine_, record));
}

const engine::Decision& DecisionPipeline::Follow(const engine::Decision& decision) {
  node_.gate().Follow(decision);
  return decision;
}

std::optional<engine::Decision> DecisionPipeline::OnTimer(engine::QueueHandle queue, engine::Nanos now,
                                                          const engine::WindowProgress& progress) {
  std::optional<engine::Decision> decision = engine_.OnTimer(queue, now, progress);
  if (decision) Follow(*decision);
  return decision;
}

std::optional<engine::Decision> DecisionPipeline::SetPolicy(engine::QueueHandle queue, const engine::Policy& policy,
                                                            engine::Nanos now) {
  std::optional<engine::Decision> decision = engine_.SetPolicy(queue, policy, now);
  if (decision) Follow(*decision);
  return decision;
}

std::optional<engine::Decision> DecisionPipeline::SetOverride(engine::QueueHandle queue,
                                                              std::optional<engine::Override> override_mode,
                                                              engine::Nanos now) {
  std::optional<engine::Decision> decision = engine_.SetOverride(queue, override_mode, now);
  if (decision) Follow(*decision);
  return decision;
}

std::vector<engine::GatedDecision> DecisionPipeline::RunNode(const std::vector<ManagedQueue*>& queues,
                                                             const PayoffListener& payoff, engine::Nanos now) {
  if (now < node_.NextFacts()) return {};
  // Gains, CPUs and policies move: the layer sees each queue as it is at every reading. The reaper's CPU time
  // is read only for the queues the layer decides (a /proc walk per queue each interval).
  for (ManagedQueue* q : queues) {
    // An ineligible queue (an admin queue) never tries: the layer has nothing of it to decide.
    const bool decided = q->desc.eligible && engine_.View(q->handle).policy.node_layer;
    std::optional<engine::Nanos> reaper;
    if (decided) {
      if (Result<engine::Nanos> cpu = ReadPollerCpu(*q); cpu) reaper = *cpu;
    }
    listeners_.Tell(&AgentListener::NodeQueueDescribed, *q, node_.Describe(*q, decided, payoff.Of(*q), reaper, now));
  }
  const std::optional<engine::NodeFacts> facts = node_.ReadFacts(now);
  if (!facts) return {};
  listeners_.Tell(&AgentListener::NodeFactsRead, *facts);
  return Counted(node_.gate().OnFacts(engine_, *facts));
}

void DecisionPipeline::ConfigureNode(const config::NodeLayerConfig& node) {
  node_.Configure(node);
  AnnounceNode();
}

void DecisionPipeline::AnnounceNode() const {
  listeners_.Tell(&AgentListener::NodeSettingsSet, node_.config().settings);
}

void DecisionPipeline::FollowRealMode(ManagedQueue& queue, ReapMode actual, engine::Nanos now) {
  const std::optional<engine::Decision> followed = engine_.OnLeverResult(queue.handle, actual, now);
  if (!followed) return;  // the engine had not decided otherwise: nothing to follow
  node_.gate().FollowLever(queue.handle, actual, now);
  listeners_.Tell(&AgentListener::LeverFollowed, queue, now, actual, *followed);
}

}  // namespace nvmeadapt::daemon
