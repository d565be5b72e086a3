// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/node_decider.h"

#include <algorithm>

#include "common/log.h"

namespace nvmeadapt::daemon {

std::optional<uint32_t> ReapingCpu(const DiscoveredQueue& queue) {
  if (queue.cpus.size() == 1) return queue.cpus.front();
  return std::nullopt;
}

std::optional<double> GainPerCpuSecond(const QueuePayoffRecord& record) {
  const engine::Nanos spent = record.cpu_measured ? record.polling_cpu : record.payoff.polling_time;
  if (record.payoff.judged_windows == 0 || spent <= 0) return std::nullopt;
  return record.payoff.completions_gained / (static_cast<double>(spent) * 1e-9);
}

NodeDecider::NodeDecider(config::NodeLayerConfig config, std::string facts_root)
    : config_(config), reader_(std::move(facts_root)) {
  gate_.layer().SetSettings(config_.settings);
}

void NodeDecider::Configure(const config::NodeLayerConfig& config) {
  config_ = config;
  gate_.layer().SetSettings(config_.settings);
}

engine::NodeQueue NodeDecider::Describe(const ManagedQueue& queue, bool node_layer, const QueuePayoffRecord* payoff,
                           std::optional<engine::Nanos> reaper_cpu, engine::Nanos now) {
  engine::NodeQueue facts;
  facts.cpu = ReapingCpu(queue.desc);
  if (payoff) facts.gain_per_cpu_second = GainPerCpuSecond(*payoff);
  facts.decided = node_layer;
  if (queue.handle >= reapers_.size()) reapers_.resize(queue.handle + 1);
  std::optional<ReaperSample>& last = reapers_[queue.handle];
  if (reaper_cpu && last && now > last->at && *reaper_cpu >= last->cpu) {
    facts.own_busy = std::min(1.0, static_cast<double>(*reaper_cpu - last->cpu) / static_cast<double>(now - last->at));
  }
  last = reaper_cpu ? std::optional(ReaperSample{*reaper_cpu, now}) : std::nullopt;
  gate_.layer().SetQueue(queue.handle, facts);
  if (queue.handle >= decided_.size()) decided_.resize(queue.handle + 1);
  decided_[queue.handle] = node_layer;
  return facts;
}

void NodeDecider::Forget(engine::QueueHandle queue) {
  gate_.layer().RemoveQueue(queue);
  if (queue < decided_.size()) decided_[queue] = false;
  if (queue < reapers_.size()) reapers_[queue].reset();  // a later queue may get the handle
}

void NodeDecider::Count(const engine::GatedDecision& gated) {
  if (gated.decision.deferred) ++series_.deferred[static_cast<size_t>(*gated.decision.deferred)];
  if (gated.node_ended) ++series_.ended[static_cast<size_t>(*gated.node_ended)];
}

std::optional<engine::NodeFacts> NodeDecider::ReadFacts(engine::Nanos now) {
  if (now < next_facts_) return std::nullopt;
  next_facts_ = now + config_.facts_interval;
  Result<engine::NodeFacts> facts = reader_.Read(now);
  if (!facts) {
    // The layer keeps its last facts, which age out (facts_max_age): the CPU rules then let tries through.
    if (facts_error_ != facts.error().message) NA_WARN("node facts: " << facts.error().message);
    facts_error_ = facts.error().message;
    return std::nullopt;
  }
  facts_error_.clear();
  last_facts_ = *facts;
  return last_facts_;
}

metrics::NodeSeries NodeDecider::Series() const {
  metrics::NodeSeries out = series_;
  out.polling_cores = gate_.layer().PollingCores();
  out.budget_cores = gate_.layer().BudgetCores();
  out.pressure_some_avg10 = last_facts_.pressure_some_avg10;
  out.pressure_full_avg10 = last_facts_.pressure_full_avg10;
  out.decided_queues = static_cast<size_t>(std::count(decided_.begin(), decided_.end(), true));
  return out;
}

}  // namespace nvmeadapt::daemon
