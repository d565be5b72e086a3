// SPDX-License-Identifier: Apache-2.0
// The agent's listeners: the metrics, the event stream (WatchEvents), and the window trace with its
// decision log. Each turns what the loop tells (agent_listener.h) into its own record.
#pragma once

#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "agent/api/event_bus.h"
#include "agent/daemon/agent_listener.h"
#include "agent/daemon/payoff_listener.h"
#include "agent/metrics/agent_metrics.h"

namespace nvmeadapt::daemon {

// Prometheus: per-queue series from the queue's arrival to its departure. The payoff series are the payoff
// listener's records (told before this one).
class MetricsListener final : public AgentListener {
 public:
  MetricsListener(metrics::AgentMetrics& metrics, const PayoffListener& payoff) : metrics_(metrics), payoff_(payoff) {}

  void QueueAdded(const ManagedQueue& q, const engine::QueueSetup& setup) override;
  void QueueRelayered(const ManagedQueue& q) override;
  void QueueRemoved(const ManagedQueue& q, std::string_view why) override;
  void Window(const ManagedQueue& q, const engine::WindowRecord& record) override;
  void PolicyChanged(const ManagedQueue& q, engine::Nanos now, const engine::Policy& policy) override;
  void DecisionDone(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision& proto,
                    bool notable) override;
  void SwitchApplied(const ManagedQueue& q, engine::Reason why, const SwitchTimeline& timeline) override;
  void LeverFailed(const ManagedQueue& q, const Error& error, const std::string& message) override;
  void Counters(const ManagedQueue& q) override;
  void CollectorStats(const collect::Collector& collector) override;

 private:
  const metrics::QueueId* IdOf(const ManagedQueue& q) const;
  // The queue's labels to the metrics: a new series, or the known one with the labels it has now.
  metrics::QueueId Describe(const ManagedQueue& q);
  void UpdatePayoff(const ManagedQueue& q, metrics::QueueId id);

  metrics::AgentMetrics& metrics_;
  const PayoffListener& payoff_;
  std::map<uint64_t, metrics::QueueId> ids_;  // by the queue's serial
};

// The event stream: queues coming and going, notable decisions, switch timelines, lever trouble,
// overrides and policy changes.
class EventListener final : public AgentListener {
 public:
  EventListener(api::EventBus& bus, std::function<engine::Nanos()> monotonic, std::function<int64_t()> wall)
      : bus_(bus), monotonic_(std::move(monotonic)), wall_(std::move(wall)) {}

  void QueueAdded(const ManagedQueue& q, const engine::QueueSetup& setup) override;
  void QueueRemoved(const ManagedQueue& q, std::string_view why) override;
  void OverrideSet(const ManagedQueue& q, engine::Nanos now, const std::optional<engine::Override>& override_mode,
                   const std::string& message) override;
  void PolicySet(const std::string& message) override;
  void DecisionDone(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision& proto,
                    bool notable) override;
  void SwitchClosed(const ManagedQueue& q, const SwitchTimeline& timeline) override;
  void NodeDeferred(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision& proto) override;
  void LeverFailed(const ManagedQueue& q, const Error& error, const std::string& message) override;
  void QueueTrouble(const ManagedQueue& q, const std::string& message) override;

 private:
  v1::Event QueueEvent(v1::EventKind kind, const ManagedQueue* queue, std::string message) const;
  void Publish(v1::EventKind kind, const ManagedQueue* queue, std::string message,
               const v1::Decision* decision = nullptr);

  api::EventBus& bus_;
  std::function<engine::Nanos()> monotonic_;
  std::function<int64_t()> wall_;
};

// The window trace (the engine's and the node layer's inputs, replayable by nvme-adapt-replay) and its
// decision log (PATH.decisions): what replay prints of the trace is that log, line for line. Records nothing
// until opened.
class TraceListener final : public AgentListener {
 public:
  Status Open(const std::string& path);

  void QueueAdded(const ManagedQueue& q, const engine::QueueSetup& setup) override;
  void QueueRemoved(const ManagedQueue& q, std::string_view why) override;
  void Window(const ManagedQueue& q, const engine::WindowRecord& record) override;
  void Timer(const ManagedQueue& q, engine::Nanos now, const engine::WindowProgress& progress) override;
  void PolicyChanged(const ManagedQueue& q, engine::Nanos now, const engine::Policy& policy) override;
  void OverrideSet(const ManagedQueue& q, engine::Nanos now, const std::optional<engine::Override>& override_mode,
                   const std::string& message) override;
  void Decided(const ManagedQueue& q, const engine::Decision& decision) override;
  void NodeDeferred(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision& proto) override;
  void NodeSettingsSet(const engine::NodeSettings& settings) override;
  void NodeQueueDescribed(const ManagedQueue& q, const engine::NodeQueue& described) override;
  void NodeFactsRead(const engine::NodeFacts& facts) override;
  void SwitchClosed(const ManagedQueue& q, const SwitchTimeline& timeline) override;
  void LeverFollowed(const ManagedQueue& q, engine::Nanos now, ReapMode actual,
                     const engine::Decision& followed) override;

 private:
  void Record(const std::string& line);
  void Log(const ManagedQueue& q, const engine::Decision& decision);

  std::ofstream trace_;
  std::ofstream decision_log_;
};

}  // namespace nvmeadapt::daemon
