// The node layer on the loop (node_decider.h): deferred tries, runs it ends, the facts read when due.
#include "agent/config/node_config.h"
#include "agent/config/proto_enums.h"
#include "agent/daemon/agent.h"
#include "agent/engine/trace.h"
#include "common/log.h"

namespace nvmeadapt::daemon {

void Agent::DeferTry(ManagedQueue& queue, const engine::Decision& decision, engine::NodeReason reason) {
  // The engine started a try; nothing is applied, so it follows interrupt mode: it measures again with no
  // failure counted, and its next fast window asks again.
  const std::optional<engine::Decision> followed = engine_.OnLeverResult(queue.handle, ReapMode::kInterrupt, decision.at);
  CloseSwitch(queue, decision);  // a switch back to interrupt mode has this as its verdict
  v1::Decision proto = ToProto(decision);
  proto.set_applied(false);
  proto.set_node_reason(std::string(engine::NodeReasonName(reason)));
  proto.set_state(config::ToProto(engine_.View(queue.handle).state));
  ++queue.decision_seq;
  queue.last_decision = proto;
  NA_DEBUG("decision " << engine::FormatDecision(queue.name, decision) << " deferred=" << NodeReasonName(reason));
  listeners_.Tell(&AgentListener::NodeDeferred, queue, decision, proto, followed);
}

void Agent::EndNodeRuns(const std::vector<engine::NodeStop>& stops, engine::Nanos now) {
  for (const engine::NodeStop& stop : stops) {
    ManagedQueue* queue = queues_.ByHandle(stop.queue);
    if (queue == nullptr) continue;
    const std::optional<engine::Decision> ended = engine_.EndPolling(stop.queue, now);
    if (!ended) continue;  // no longer polling by the rules: nothing to end
    node_.CountEnded(stop.reason);
    HandleDecision(*queue, *ended, stop.reason);
  }
}

void Agent::RunNode(engine::Nanos now) {
  if (now < node_.NextFacts()) return;
  // Gains, CPUs and policies move: the layer sees each queue as it is at every reading. The reaper's CPU time
  // is read only for the queues the layer decides (a /proc walk per queue each interval).
  for (ManagedQueue* q : queues_.All()) {
    // An ineligible queue (an admin queue) never tries: the layer has nothing of it to decide.
    const bool decided = q->desc.eligible && engine_.View(q->handle).policy.node_layer;
    std::optional<engine::Nanos> reaper;
    if (decided) {
      if (Result<engine::Nanos> cpu = ReadPollerCpu(*q); cpu) reaper = *cpu;
    }
    node_.Describe(*q, decided, payoff_.Of(*q), reaper, now);
  }
  EndNodeRuns(node_.Tick(now), now);
  if (deps_.metrics) deps_.metrics->SetNode(node_.Series());
}

Status Agent::ReloadNode(const config::NodeLayerConfig& node) {
  return OnLoop([&]() -> Status {
    options_.node = node;
    node_.Configure(node);
    return OkStatus();
  });
}

v1::NodeStatus Agent::NodeStatusProto() const {
  const metrics::NodeSeries series = node_.Series();
  v1::NodeStatus out;
  *out.mutable_settings() = config::NodeLayerToProto(node_.config());
  out.set_decided_queues(static_cast<uint32_t>(series.decided_queues));
  out.set_polling_cores(series.polling_cores);
  out.set_budget_cores(series.budget_cores.value_or(0));
  for (const auto& row : engine::kNodeReasons) {
    const auto i = static_cast<size_t>(row.value);
    (*out.mutable_deferred_tries())[std::string(row.name)] = series.deferred[i];
    (*out.mutable_ended_runs())[std::string(row.name)] = series.ended[i];
  }
  if (series.pressure_some_avg10) out.set_pressure_some_avg10(*series.pressure_some_avg10);
  if (series.pressure_full_avg10) out.set_pressure_full_avg10(*series.pressure_full_avg10);
  out.set_facts_error(node_.facts_error());
  return out;
}

}  // namespace nvmeadapt::daemon
