// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/agent_listeners.h"

#include <algorithm>

#include "agent/engine/trace.h"

namespace nvmeadapt::daemon {

const metrics::QueueId* MetricsListener::IdOf(const ManagedQueue& q) const {
  auto it = ids_.find(q.serial);
  return it == ids_.end() ? nullptr : &it->second;
}

metrics::QueueId MetricsListener::Describe(const ManagedQueue& q) {
  return metrics_.AddQueue(metrics::QueueLabels{std::string(SourceName(q.desc.key.source)), q.desc.ControllerId(),
                                                q.desc.qid, q.desc.transport, q.desc.layer, q.desc.controller,
                                                q.desc.model, q.desc.firmware},
                           q.desc.eligible);
}

void MetricsListener::QueueAdded(const ManagedQueue& q, const engine::QueueSetup& setup) {
  const metrics::QueueId id = Describe(q);
  metrics_.SetPollThreshold(id, setup.policy.poll_threshold);
  ids_[q.serial] = id;
}

void MetricsListener::QueueRelayered(const ManagedQueue& q) {
  // Known labels: the series is updated in place (nvme_adapt_queue_info's layer), its counters kept.
  if (IdOf(q) != nullptr) Describe(q);
}

void MetricsListener::QueueRemoved(const ManagedQueue& q, std::string_view) {
  const metrics::QueueId* id = IdOf(q);
  // A renumbered controller's queue is taken under its new name before the old one goes: both have the same
  // series (the controller label is the stable ID), which stay for the one that remains.
  const bool shared = id != nullptr && std::any_of(ids_.begin(), ids_.end(), [&](const auto& other) {
    return other.first != q.serial && other.second == *id;
  });
  if (id != nullptr && !shared) metrics_.RemoveQueue(*id);
  ids_.erase(q.serial);
}

void MetricsListener::Window(const ManagedQueue& q, const engine::WindowRecord& record) {
  const metrics::QueueId* id = IdOf(q);
  if (id && record.completions > 0) metrics_.OnWindow(*id, (record.end - record.start) / record.completions);
}

void MetricsListener::PolicyChanged(const ManagedQueue& q, engine::Nanos, const engine::Policy& policy) {
  if (const metrics::QueueId* id = IdOf(q)) metrics_.SetPollThreshold(*id, policy.poll_threshold);
}

void MetricsListener::DecisionDone(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision&,
                                   bool) {
  const metrics::QueueId* id = IdOf(q);
  if (!id) return;
  if (auto result = metrics::PollTryResultOf(decision)) metrics_.OnPollTry(*id, *result);
  UpdatePayoff(q, *id);
}

void MetricsListener::UpdatePayoff(const ManagedQueue& q, metrics::QueueId id) {
  const QueuePayoffRecord* record = payoff_.Of(q);
  if (record == nullptr) return;
  std::optional<double> cpu;
  if (record->cpu_measured) cpu = static_cast<double>(record->polling_cpu) * 1e-9;
  metrics_.SetPayoff(id, record->payoff, cpu);
}

void MetricsListener::SwitchApplied(const ManagedQueue& q, engine::Reason why, const SwitchTimeline& timeline) {
  const metrics::QueueId* id = IdOf(q);
  if (!id) return;
  metrics_.OnSwitch(*id, why);
  metrics_.OnSwitchLatency(q.lever, timeline.Latency());
  metrics_.UpdateQueue(*id, q.counters, q.mode);
}

void MetricsListener::LeverFailed(const ManagedQueue& q, const Error& error, const std::string&) {
  metrics_.OnLeverError(q.lever.empty() ? "none" : q.lever, error.code);
}

void MetricsListener::Counters(const ManagedQueue& q) {
  const metrics::QueueId* id = IdOf(q);
  if (id == nullptr) return;
  metrics_.UpdateQueue(*id, q.counters, q.mode);
  UpdatePayoff(q, *id);  // the poller's CPU was read just now
}

void MetricsListener::CollectorStats(const collect::Collector& collector) {
  metrics_.SetCollector(collector.Name(), collector.Stats());
}

v1::Event EventListener::QueueEvent(v1::EventKind kind, const ManagedQueue* queue, std::string message) const {
  v1::Event event;
  event.set_time_unix_ns(wall_());
  event.set_kind(kind);
  if (queue != nullptr) {
    event.mutable_queue()->set_controller(queue->desc.controller);
    event.mutable_queue()->set_queue(queue->desc.qid);
    event.set_source(queue->desc.source);
  }
  event.set_message(std::move(message));
  return event;
}

void EventListener::Publish(v1::EventKind kind, const ManagedQueue* queue, std::string message,
                            const v1::Decision* decision) {
  v1::Event event = QueueEvent(kind, queue, std::move(message));
  if (decision != nullptr) *event.mutable_decision() = *decision;
  bus_.Publish(std::move(event));
}

void EventListener::QueueAdded(const ManagedQueue& q, const engine::QueueSetup&) {
  Publish(v1::EVENT_KIND_QUEUE_ADDED, &q, "queue " + q.name + " added");
}

void EventListener::QueueRemoved(const ManagedQueue& q, std::string_view why) {
  Publish(v1::EVENT_KIND_QUEUE_REMOVED, &q, "queue " + q.name + " " + std::string(why));
}

void EventListener::OverrideSet(const ManagedQueue& q, engine::Nanos, const std::optional<engine::Override>&,
                                const std::string& message) {
  Publish(v1::EVENT_KIND_OVERRIDE, &q, message);
}

void EventListener::PolicySet(const std::string& message) { Publish(v1::EVENT_KIND_POLICY, nullptr, message); }

void EventListener::DecisionDone(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision& proto,
                                 bool notable) {
  if (!notable) return;  // window-by-window outcomes would flood the stream
  const std::string line = engine::FormatDecision(q.name, decision);
  Publish(v1::EVENT_KIND_DECISION, &q, line.substr(q.name.size() + 1), &proto);  // the event names the queue
}

void EventListener::NodeDeferred(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision& proto) {
  engine::Decision asked = decision;
  asked.deferred.reset();  // the line says it in words of its own
  const std::string line = engine::FormatDecision(q.name, asked) + " deferred: " + proto.node_reason();
  Publish(v1::EVENT_KIND_DECISION, &q, line.substr(q.name.size() + 1), &proto);
}

void EventListener::SwitchClosed(const ManagedQueue& q, const SwitchTimeline& timeline) {
  const std::string line = FormatSwitchLine(q.name, timeline);
  v1::Event event = QueueEvent(v1::EVENT_KIND_SWITCH, &q, line.substr(std::string_view("switch ").size()));
  *event.mutable_switch_timeline() = ToProto(timeline, wall_() - monotonic_());
  bus_.Publish(std::move(event));
}

void EventListener::LeverFailed(const ManagedQueue& q, const Error&, const std::string& message) {
  Publish(v1::EVENT_KIND_LEVER_ERROR, &q, message);
}

void EventListener::QueueTrouble(const ManagedQueue& q, const std::string& message) {
  Publish(v1::EVENT_KIND_LEVER_ERROR, &q, message);
}

Status TraceListener::Open(const std::string& path) {
  trace_.open(path, std::ios::trunc);
  decision_log_.open(path + ".decisions", std::ios::trunc);
  if (!trace_ || !decision_log_) return MakeError(ErrorCode::kIo, "cannot write window trace " + path);
  return OkStatus();
}

void TraceListener::Record(const std::string& line) {
  if (trace_.is_open()) trace_ << line << '\n' << std::flush;
}

void TraceListener::QueueAdded(const ManagedQueue& q, const engine::QueueSetup& setup) {
  Record(engine::FormatQueueLine(q.name, setup));
}

void TraceListener::QueueRemoved(const ManagedQueue& q, std::string_view) { Record("remove " + q.name); }

void TraceListener::Window(const ManagedQueue& q, const engine::WindowRecord& record) {
  Record(engine::FormatWindowLine(q.name, record));
}

void TraceListener::Timer(const ManagedQueue& q, engine::Nanos now, const engine::WindowProgress& progress) {
  Record(engine::FormatTimerLine(q.name, now, progress));
}

void TraceListener::PolicyChanged(const ManagedQueue& q, engine::Nanos now, const engine::Policy& policy) {
  Record(engine::FormatPolicyLine(q.name, now, policy));
}

void TraceListener::OverrideSet(const ManagedQueue& q, engine::Nanos now,
                                const std::optional<engine::Override>& override_mode, const std::string&) {
  Record(engine::FormatOverrideLine(q.name, now, override_mode));
}

void TraceListener::Log(const ManagedQueue& q, const engine::Decision& decision) {
  if (decision_log_.is_open()) decision_log_ << engine::FormatDecision(q.name, decision) << '\n' << std::flush;
}

void TraceListener::Decided(const ManagedQueue& q, const engine::Decision& decision) { Log(q, decision); }

// The try the node layer deferred was never committed: the trace needs no line for it (replay's node gate
// defers it from the node lines), and the log's line says deferred=, so that counts of tries leave it out.
void TraceListener::NodeDeferred(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision&) {
  Log(q, decision);
}

void TraceListener::NodeSettingsSet(const engine::NodeSettings& settings) { Record(engine::FormatNodeLine(settings)); }

void TraceListener::NodeQueueDescribed(const ManagedQueue& q, const engine::NodeQueue& described) {
  Record(engine::FormatNodeQueueLine(q.name, described));
}

void TraceListener::NodeFactsRead(const engine::NodeFacts& facts) { Record(engine::FormatFactsLine(facts)); }

void TraceListener::SwitchClosed(const ManagedQueue& q, const SwitchTimeline& timeline) {
  Record(FormatSwitchLine(q.name, timeline));
}

void TraceListener::LeverFollowed(const ManagedQueue& q, engine::Nanos now, ReapMode actual,
                                  const engine::Decision& followed) {
  Record(engine::FormatLeverLine(q.name, now, actual));
  Log(q, followed);
}

}  // namespace nvmeadapt::daemon
