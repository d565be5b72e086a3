// SPDX-License-Identifier: Apache-2.0
#include "tests/integration/api/fake_agent.h"

#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <chrono>

#include "agent/config/policy_convert.h"
#include "agent/config/policy_layers.h"
#include "common/clock.h"
#include "common/files.h"

namespace nvmeadapt::testing {
namespace {

int64_t UnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

v1::QueueInfo MakeQueue(const std::string& controller, uint32_t id, v1::Source source, std::string ineligible) {
  v1::QueueInfo q;
  q.mutable_id()->set_controller(controller);
  q.mutable_id()->set_queue(id);
  q.set_source(source);
  q.set_mode(v1::REAP_MODE_INTERRUPT);
  q.set_state(v1::QUEUE_STATE_OBSERVING);
  q.set_eligible(ineligible.empty());
  q.set_ineligible_reason(std::move(ineligible));
  q.set_controller_mode(v1::CONTROLLER_MODE_OFF);
  q.set_lever(source == v1::SOURCE_UVNVME ? "uvnvme_socket" : "dry_run");
  q.set_irq(id == 0 ? -1 : 40 + static_cast<int32_t>(id));
  q.add_cpus(id % 2);
  return q;
}

Error NoSuchQueue(const std::string& controller, uint32_t queue) {
  return MakeError(ErrorCode::kNotFound, "queue " + QueueName(controller, queue) + ": no such queue");
}

Error NoSuchController(const std::string& controller) {
  return MakeError(ErrorCode::kNotFound, "controller " + controller + ": no such controller");
}

}  // namespace

std::string QueueName(const std::string& controller, uint32_t queue) {
  return controller + ":q" + std::to_string(queue);
}

FakeAgent::FakeAgent(std::optional<std::string> state_file)
    : state_file_(std::move(state_file)), started_ns_(MonotonicNanos()) {
  queues_.push_back(MakeQueue("nvme0", 0, v1::SOURCE_KERNEL, "admin queue"));
  queues_.push_back(MakeQueue("nvme0", 1, v1::SOURCE_KERNEL, ""));
  queues_.push_back(MakeQueue("nvme0", 2, v1::SOURCE_KERNEL, ""));
  queues_.push_back(MakeQueue("nvme0", 3, v1::SOURCE_KERNEL, "threaded interrupt handler"));
  queues_.push_back(MakeQueue("uvnvme:1234:0", 1, v1::SOURCE_UVNVME, ""));
  queues_.push_back(MakeQueue("uvnvme:1234:0", 2, v1::SOURCE_UVNVME, ""));
  for (const auto& q : queues_) {
    if (q.eligible()) queue_ids_.emplace_back(q.id(), q.source());
  }
}

v1::QueueInfo* FakeAgent::FindQueue(const std::string& controller, uint32_t queue) {
  for (auto& q : queues_) {
    if (q.id().controller() == controller && q.id().queue() == queue) return &q;
  }
  return nullptr;
}

bool FakeAgent::HasController(const std::string& controller) const {
  for (const auto& q : queues_) {
    if (q.id().controller() == controller) return true;
  }
  return false;
}

void FakeAgent::Publish(v1::EventKind kind, const v1::QueueInfo* queue, std::string message) {
  v1::Event event;
  event.set_time_unix_ns(UnixNanos());
  event.set_kind(kind);
  if (queue) {
    *event.mutable_queue() = queue->id();
    event.set_source(queue->source());
  }
  event.set_message(std::move(message));
  bus_.Publish(std::move(event));
}

v1::GetStatusResponse FakeAgent::GetStatus() {
  std::lock_guard lock(mutex_);
  v1::GetStatusResponse status;
  status.set_version("fake-agent");
  status.set_uptime_ns(MonotonicNanos() - started_ns_);
  status.set_collector("fake");
  status.set_queues(static_cast<uint32_t>(queues_.size()));
  for (const auto& q : queues_) {
    if (q.eligible() && q.controller_mode() != v1::CONTROLLER_MODE_OFF) status.set_queues_managed(status.queues_managed() + 1);
    if (q.mode() == v1::REAP_MODE_POLL) status.set_queues_polling(status.queues_polling() + 1);
  }
  auto* lever = status.add_levers();
  lever->set_name("uvnvme_socket");
  lever->set_available(true);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  status.set_node(host);
  if (pause_) *status.mutable_pause() = *pause_;
  return status;
}

Result<v1::ListQueuesResponse> FakeAgent::ListQueues(const v1::ListQueuesRequest& request) {
  std::lock_guard lock(mutex_);
  if (!request.controller().empty() && !HasController(request.controller())) {
    return NoSuchController(request.controller());
  }
  v1::ListQueuesResponse response;
  for (const auto& q : queues_) {
    if (!request.controller().empty() && q.id().controller() != request.controller()) continue;
    if (request.source() != v1::SOURCE_UNSPECIFIED && q.source() != request.source()) continue;
    *response.add_queues() = q;
  }
  return response;
}

v1::GetPolicyResponse FakeAgent::GetPolicy() {
  std::lock_guard lock(mutex_);
  v1::GetPolicyResponse response;
  *response.mutable_policy() = policy_;
  auto global = config::Overlay(engine::Policy{}, policy_.policy(), "policy");
  *response.mutable_effective_global() = config::ToProto(global ? *global : engine::Policy{});
  return response;
}

FakeAgent::Deadline FakeAgent::last_set_policy_deadline() const {
  std::lock_guard lock(mutex_);
  return last_deadline_;
}

Result<v1::SetPolicyResponse> FakeAgent::SetPolicy(const v1::SetPolicyRequest& request, Deadline deadline) {
  std::lock_guard lock(mutex_);
  last_deadline_ = deadline;
  const std::string& controller = request.controller();
  if (!controller.empty() && !HasController(controller)) return NoSuchController(controller);
  if (request.queue() != 0 && !FindQueue(controller, request.queue())) return NoSuchQueue(controller, request.queue());

  v1::PolicySet candidate = policy_;
  v1::Policy* level = candidate.mutable_policy();
  std::string level_name = "global";
  if (request.queue() != 0) {
    level = nullptr;
    for (auto& q : *candidate.mutable_queues()) {
      if (q.controller() == controller && q.queue() == request.queue()) level = q.mutable_policy();
    }
    if (!level) {
      auto* added = candidate.add_queues();
      added->set_controller(controller);
      added->set_queue(request.queue());
      level = added->mutable_policy();
    }
    level_name = "queue " + QueueName(controller, request.queue());
  } else if (!controller.empty()) {
    level = nullptr;
    for (auto& c : *candidate.mutable_controllers()) {
      if (c.controller() == controller) level = c.mutable_policy();
    }
    if (!level) {
      auto* added = candidate.add_controllers();
      added->set_controller(controller);
      level = added->mutable_policy();
    }
    level_name = "controller " + controller;
  }
  if (request.replace()) {
    *level = request.policy();
  } else {
    level->MergeFrom(request.policy());
  }
  // The whole set is judged as the agent would load it: each level alone and as inherited.
  v1::Config as_config;
  *as_config.mutable_policy() = candidate.policy();
  *as_config.mutable_controllers() = candidate.controllers();
  *as_config.mutable_queues() = candidate.queues();
  if (Status valid = config::ValidatePolicies(as_config); !valid) return valid.error();
  if (state_file_) {
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(candidate, &json);
    if (Status saved = WriteFileAtomically(*state_file_, json); !saved) return saved.error();
  }
  policy_ = std::move(candidate);
  Publish(v1::EVENT_KIND_POLICY, nullptr, "policy of " + level_name + " changed");
  v1::SetPolicyResponse response;
  *response.mutable_policy() = policy_;
  return response;
}

Result<v1::ExplainPolicyResponse> FakeAgent::ExplainPolicy(const v1::ExplainPolicyRequest& request) {
  std::lock_guard lock(mutex_);
  const std::string& controller = request.queue().controller();
  if (!FindQueue(controller, request.queue().queue())) return NoSuchQueue(controller, request.queue().queue());
  const engine::DeviceFacts facts = config::NamedDevice(controller);
  auto origins = config::ExplainPolicy(policy_, facts, request.queue().queue());
  if (!origins) return origins.error();
  v1::ExplainPolicyResponse response;
  *response.mutable_queue() = request.queue();
  response.set_controller_id(controller);
  for (const auto& layer : config::LayersFor(policy_, facts, request.queue().queue())) response.add_matched(layer.entry);
  engine::Policy effective;
  for (const config::FieldOrigin& origin : *origins) {
    origin.field->set(effective, origin.value);
    auto* field = response.add_fields();
    field->set_field(std::string(origin.field->name));
    config::SetProtoPolicyValue(field->mutable_value(), *origin.field, origin.value);
    field->set_entry(origin.entry);
    field->set_source(origin.layer.empty() ? v1::POLICY_SOURCE_DEFAULT : v1::POLICY_SOURCE_API);
  }
  *response.mutable_effective() = config::ToProto(effective);
  return response;
}

Result<v1::SetQueueModeResponse> FakeAgent::SetQueueMode(const v1::SetQueueModeRequest& request) {
  std::lock_guard lock(mutex_);
  const std::string& controller = request.queue().controller();
  v1::QueueInfo* q = FindQueue(controller, request.queue().queue());
  if (!q) return NoSuchQueue(controller, request.queue().queue());
  const std::string name = QueueName(controller, request.queue().queue());
  if (!q->eligible()) {
    return MakeError(ErrorCode::kFailedPrecondition, "queue " + name + ": not eligible: " + q->ineligible_reason());
  }
  std::string message;
  if (request.mode() == v1::REAP_MODE_UNSPECIFIED) {
    q->clear_override();
    q->set_state(v1::QUEUE_STATE_OBSERVING);
    message = "override of " + name + " cleared";
  } else {
    q->mutable_override()->set_mode(request.mode());
    q->mutable_override()->set_expires_unix_ns(request.duration_ns() ? UnixNanos() + request.duration_ns() : 0);
    q->set_mode(request.mode());
    q->set_state(v1::QUEUE_STATE_FORCED);
    q->set_mode_switches(q->mode_switches() + 1);
    message = "override of " + name + ": " + v1::ReapMode_Name(request.mode());
  }
  Publish(v1::EVENT_KIND_OVERRIDE, q, std::move(message));
  v1::SetQueueModeResponse response;
  *response.mutable_queue() = *q;
  return response;
}

Result<v1::SetPauseResponse> FakeAgent::SetPause(const v1::SetPauseRequest& request) {
  std::lock_guard lock(mutex_);
  v1::SetPauseResponse response;
  if (request.resume()) {
    pause_.reset();
    Publish(v1::EVENT_KIND_POLICY, nullptr, "resumed");
    return response;
  }
  v1::Pause pause;
  pause.set_mode(request.mode() == v1::CONTROLLER_MODE_OFF ? v1::CONTROLLER_MODE_OFF : v1::CONTROLLER_MODE_INTERRUPT);
  pause.set_set_unix_ns(UnixNanos());
  pause.set_set_by(request.caller());
  if (request.duration_ns() > 0) pause.set_ends_unix_ns(pause.set_unix_ns() + request.duration_ns());
  pause_ = pause;
  Publish(v1::EVENT_KIND_POLICY, nullptr, "paused");
  *response.mutable_pause() = pause;
  return response;
}

std::shared_ptr<api::Subscription> FakeAgent::WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) {
  return bus_.Subscribe(request, capacity);
}

void FakeAgent::PublishDecision(uint64_t n) {
  v1::Event event;
  const auto& [id, source] = queue_ids_[n % queue_ids_.size()];
  *event.mutable_queue() = id;
  event.set_source(source);
  event.set_time_unix_ns(UnixNanos());
  event.set_kind(v1::EVENT_KIND_DECISION);
  auto* decision = event.mutable_decision();
  decision->set_time_unix_ns(event.time_unix_ns());
  decision->set_from(n % 2 ? v1::REAP_MODE_POLL : v1::REAP_MODE_INTERRUPT);
  decision->set_to(n % 2 ? v1::REAP_MODE_INTERRUPT : v1::REAP_MODE_POLL);
  decision->set_reason(n % 2 ? "behind_pace" : "window_fast");
  decision->set_state(n % 2 ? v1::QUEUE_STATE_MEASURING : v1::QUEUE_STATE_POLLING);
  decision->set_measured_ns(81'000'000);
  decision->set_limit_ns(81'920'000);
  decision->set_applied(true);
  event.set_message(std::string(decision->reason()) + ": " + v1::ReapMode_Name(decision->from()) + " -> " +
                    v1::ReapMode_Name(decision->to()));
  bus_.Publish(std::move(event));
}

v1::PolicySet FakeAgent::policy() const {
  std::lock_guard lock(mutex_);
  return policy_;
}

std::optional<v1::QueueInfo> FakeAgent::queue(const std::string& controller, uint32_t queue) const {
  std::lock_guard lock(mutex_);
  for (const auto& q : queues_) {
    if (q.id().controller() == controller && q.id().queue() == queue) return q;
  }
  return std::nullopt;
}

}  // namespace nvmeadapt::testing
