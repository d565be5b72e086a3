// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/api_adapter.h"

#include <unistd.h>

#include <algorithm>

#include "agent/config/policy_convert.h"
#include "agent/config/proto_enums.h"
#include "agent/daemon/policy_explain.h"
#include "agent/daemon/status_protos.h"
#include "common/log.h"

namespace nvmeadapt::daemon {

namespace {

Error NotFound(std::string message) { return MakeError(ErrorCode::kNotFound, std::move(message)); }

// A switch in flight longer than this is listed in GetStatus.degraded.
constexpr engine::Nanos kSlowSwitch = 100'000'000;

}  // namespace

v1::QueueInfo ApiAdapter::Describe(const ManagedQueue& q) const {
  return DescribeQueue(q, parts_.pipeline.View(q.handle), parts_.payoff.Of(q), WallMinusMonotonic());
}

v1::GetStatusResponse ApiAdapter::StatusOnLoop() {
  v1::GetStatusResponse status;
  status.set_version(settings_.version);
  status.set_uptime_ns(settings_.monotonic() - parts_.health.started_at);
  status.set_collector(parts_.collector.Name());
  status.set_observe_only(parts_.collector.ObserveOnly());
  for (const std::string& hook : parts_.collector.Hooks()) status.add_hooks(hook);
  parts_.switches.DescribeLevers(status);
  uint32_t managed = 0, polling = 0;
  for (ManagedQueue* q : parts_.queues.All()) {
    const engine::QueueView view = parts_.pipeline.View(q->handle);
    if (q->desc.eligible && view.policy.mode != engine::ControllerMode::kOff) ++managed;
    if (q->mode == ReapMode::kPoll) ++polling;
    if (q->degraded()) status.add_degraded("queue " + q->name + ": " + q->degraded_reason);
  }
  if (!parts_.health.collector_error.empty()) status.add_degraded("collector: " + parts_.health.collector_error);
  if (!parts_.health.journal_warning.empty()) status.add_degraded("journal: " + parts_.health.journal_warning);
  const std::string& kept_newer = parts_.policy.source().kept_newer();
  if (!kept_newer.empty()) status.add_degraded("policy: " + kept_newer);
  if (!parts_.journal.empty()) {
    status.add_degraded("journal: " + std::to_string(parts_.journal.size()) +
                        " changed setting(s) to restore on shutdown");
  }
  for (const std::string& line : parts_.switches.switcher().Slow(settings_.monotonic(), kSlowSwitch))
    status.add_degraded(line);
  if (parts_.health.queues_over_cap > 0) {
    status.add_degraded(std::to_string(parts_.health.queues_over_cap) + " queue(s) over the tracking cap");
  }
  status.set_queues(static_cast<uint32_t>(parts_.queues.size()));
  status.set_queues_managed(managed);
  status.set_queues_polling(polling);
  status.set_ringbuf_drops(parts_.collector.Stats().ringbuf_drops);
  for (const std::string& choice : parts_.collector.Choices()) status.add_collector_choices(choice);
  DescribeKernel(status);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) status.set_node(host);
  *status.mutable_policy_origin() = parts_.policy.source().Origin(parts_.policy.book());
  *status.mutable_node_layer() = DescribeNode(parts_.pipeline.node());
  if (parts_.policy.pause()) *status.mutable_pause() = *parts_.policy.pause();
  if (!parts_.policy.pause_error().empty()) status.add_degraded("pause: " + parts_.policy.pause_error());
  if (!parts_.pipeline.node().facts_error().empty())
    status.add_degraded("node facts: " + parts_.pipeline.node().facts_error());
  return status;
}

v1::GetStatusResponse ApiAdapter::GetStatus() {
  return parts_.loop.OnLoop([&] { return StatusOnLoop(); },
                            [&](const Error& error) {
                              // Status must answer even when the loop cannot: what is known without it, and why the
                              // rest is missing.
                              v1::GetStatusResponse status;
                              status.set_version(settings_.version);
                              status.add_degraded("agent loop: " + error.message);
                              return status;
                            });
}

Result<v1::ListQueuesResponse> ApiAdapter::ListQueues(const v1::ListQueuesRequest& request) {
  return parts_.loop.OnLoop([&]() -> Result<v1::ListQueuesResponse> {
    if (!request.controller().empty() && !parts_.queues.HasController(request.controller())) {
      return NotFound("controller " + request.controller() + ": no such controller");
    }
    v1::ListQueuesResponse response;
    for (ManagedQueue* q : parts_.queues.All()) {
      if (request.source() != v1::SOURCE_UNSPECIFIED && request.source() != q->desc.source) continue;
      if (!request.controller().empty() && request.controller() != q->desc.controller) continue;
      *response.add_queues() = Describe(*q);
    }
    return response;
  });
}

v1::GetPolicyResponse ApiAdapter::GetPolicy() {
  return parts_.loop.OnLoop(
      [&] {
        v1::GetPolicyResponse response;
        *response.mutable_policy() = parts_.policy.book().policies();
        *response.mutable_effective_global() = config::ToProto(parts_.policy.book().EffectiveGlobal());
        *response.mutable_origin() = parts_.policy.source().Origin(parts_.policy.book());
        return response;
      },
      [](const Error&) { return v1::GetPolicyResponse(); });
}

ManagedQueue* ApiAdapter::AnyQueueOf(const std::string& controller) {
  for (ManagedQueue* q : parts_.queues.All()) {
    if (q->desc.controller == controller || q->desc.ControllerId() == controller) return q;
  }
  return nullptr;
}

bool ApiAdapter::WaitForSwitches(const std::shared_ptr<SwitchesSettled>& waiter) {
  bool any = false;
  for (ManagedQueue* q : parts_.queues.All()) {
    if (q->switches_in_flight == 0) continue;
    waiter->Add();
    q->settle_waiters.push_back(waiter);
    any = true;
  }
  return any;
}

Result<v1::SetQueueModeResponse> ApiAdapter::SetQueueMode(const v1::SetQueueModeRequest& request) {
  const std::string name = QueueName(request.queue().controller(), request.queue().queue());
  auto waiter = std::make_shared<SwitchesSettled>();
  bool switching = false;
  auto answer = parts_.loop.OnLoop([&]() -> Result<v1::SetQueueModeResponse> {
    ManagedQueue* q = parts_.queues.ByName(name);
    if (q == nullptr) return NotFound("queue " + name + ": no such queue");
    if (!q->desc.eligible) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "queue " + name + ": not eligible: " + q->desc.ineligible_reason);
    }
    if (request.duration_ns() < 0) {
      return MakeError(ErrorCode::kInvalidArgument, "duration_ns: must be >= 0");
    }
    if (parts_.policy.pause()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "queue " + name + ": the node is paused (every queue in " +
                           std::string(PauseModeName(*parts_.policy.pause())) +
                           " mode): `nvme-adaptctl resume` first; overrides set before the pause come back with it");
    }
    const engine::Nanos now = settings_.monotonic();
    std::optional<engine::Override> override_mode;
    if (std::optional<ReapMode> mode = config::FromProto(request.mode())) {
      override_mode = engine::Override{*mode, request.duration_ns() > 0 ? now + request.duration_ns() : 0};
    } else if (request.mode() != v1::REAP_MODE_UNSPECIFIED) {
      return MakeError(ErrorCode::kInvalidArgument, "mode: unknown reaping mode " + std::to_string(request.mode()));
    }
    const std::string what = override_mode ? std::string(ReapModeName(override_mode->mode)) : "cleared";
    NA_INFO_FIELDS((LogFields{.controller = q->desc.controller, .queue = q->name, .reason = "override"}),
                   "override: " << name << " " << what
                                << (request.duration_ns() > 0
                                        ? " for " + std::to_string(request.duration_ns() / 1'000'000) + " ms"
                                        : ""));
    parts_.listeners.Tell(&AgentListener::OverrideSet, *q, now, override_mode,
                          std::string("override " + name + " " + what));
    q->next_timer =
        std::min(q->next_timer, now + parts_.pipeline.View(q->handle).policy.timer_granularity);  // its expiry
    if (auto decision = parts_.pipeline.SetOverride(q->handle, override_mode, now))
      parts_.switches.Carry(*q, *decision);
    v1::SetQueueModeResponse response;
    *response.mutable_queue() = Describe(*q);
    if (q->switches_in_flight > 0) {
      waiter->Add();
      q->settle_waiters.push_back(waiter);
      switching = true;
    }
    return response;
  });
  if (!answer || !switching) return answer;
  // The queue as its switch left it (or as it is after rpc_wait: the switch goes on, GetStatus lists it).
  waiter->WaitFor(settings_.rpc_wait);
  auto after = parts_.loop.OnLoop([&]() -> Result<v1::SetQueueModeResponse> {
    ManagedQueue* q = parts_.queues.ByName(name);
    if (q == nullptr) return NotFound("queue " + name + ": no such queue (it left during its switch)");
    v1::SetQueueModeResponse response;
    *response.mutable_queue() = Describe(*q);
    return response;
  });
  return after ? after : answer;
}

std::shared_ptr<api::Subscription> ApiAdapter::WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) {
  return parts_.bus.Subscribe(request, capacity);
}

Result<v1::ExplainPolicyResponse> ApiAdapter::ExplainPolicy(const v1::ExplainPolicyRequest& request) {
  return parts_.loop.OnLoop([&]() -> Result<v1::ExplainPolicyResponse> {
    const std::string& controller = request.queue().controller();
    const ManagedQueue* any = AnyQueueOf(controller);
    ManagedQueue* q =
        any == nullptr ? nullptr : parts_.queues.ByName(QueueName(any->desc.controller, request.queue().queue()));
    if (q == nullptr) {
      return NotFound("queue " + QueueName(controller, request.queue().queue()) + ": no such queue");
    }
    return ExplainQueuePolicy(*q, parts_.policy);
  });
}

}  // namespace nvmeadapt::daemon
