#include "agent/daemon/agent_listener.h"

namespace nvmeadapt::daemon {

void AgentListeners::QueueAdded(const ManagedQueue& q, const engine::QueueSetup& setup) {
  for (AgentListener* l : listeners_) l->QueueAdded(q, setup);
}
void AgentListeners::QueueRemoved(const ManagedQueue& q, std::string_view why) {
  for (AgentListener* l : listeners_) l->QueueRemoved(q, why);
}
void AgentListeners::Window(const ManagedQueue& q, const engine::WindowRecord& record) {
  for (AgentListener* l : listeners_) l->Window(q, record);
}
void AgentListeners::Timer(const ManagedQueue& q, engine::Nanos now, const engine::WindowProgress& progress) {
  for (AgentListener* l : listeners_) l->Timer(q, now, progress);
}
void AgentListeners::PolicyChanged(const ManagedQueue& q, engine::Nanos now, const engine::Policy& policy) {
  for (AgentListener* l : listeners_) l->PolicyChanged(q, now, policy);
}
void AgentListeners::OverrideSet(const ManagedQueue& q, engine::Nanos now,
                                 const std::optional<engine::Override>& override_mode, const std::string& message) {
  for (AgentListener* l : listeners_) l->OverrideSet(q, now, override_mode, message);
}
void AgentListeners::PolicySet(const std::string& message) {
  for (AgentListener* l : listeners_) l->PolicySet(message);
}
void AgentListeners::Decided(const ManagedQueue& q, const engine::Decision& decision) {
  for (AgentListener* l : listeners_) l->Decided(q, decision);
}
void AgentListeners::DecisionDone(const ManagedQueue& q, const engine::Decision& decision, const v1::Decision& proto,
                                  bool notable) {
  for (AgentListener* l : listeners_) l->DecisionDone(q, decision, proto, notable);
}
void AgentListeners::SwitchApplied(const ManagedQueue& q, engine::Reason why, const SwitchTimeline& timeline) {
  for (AgentListener* l : listeners_) l->SwitchApplied(q, why, timeline);
}
void AgentListeners::SwitchClosed(const ManagedQueue& q, const SwitchTimeline& timeline) {
  for (AgentListener* l : listeners_) l->SwitchClosed(q, timeline);
}
void AgentListeners::LeverFailed(const ManagedQueue& q, const Error& error, const std::string& message) {
  for (AgentListener* l : listeners_) l->LeverFailed(q, error, message);
}
void AgentListeners::QueueTrouble(const ManagedQueue& q, const std::string& message) {
  for (AgentListener* l : listeners_) l->QueueTrouble(q, message);
}
void AgentListeners::LeverFollowed(const ManagedQueue& q, engine::Nanos now, engine::ReapMode actual,
                                   const engine::Decision& followed) {
  for (AgentListener* l : listeners_) l->LeverFollowed(q, now, actual, followed);
}
void AgentListeners::Counters(const ManagedQueue& q) {
  for (AgentListener* l : listeners_) l->Counters(q);
}
void AgentListeners::CollectorStats(std::string_view name, const collect::CollectorStats& stats) {
  for (AgentListener* l : listeners_) l->CollectorStats(name, stats);
}

}  // namespace nvmeadapt::daemon
