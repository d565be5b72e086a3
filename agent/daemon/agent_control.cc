// AgentControl: what gRPC callers see and change. Every call runs on the loop thread (OnLoop); SetPolicy's
// durable writes run on its caller's thread between two such calls.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>

#include "agent/config/policy_convert.h"
#include "agent/config/proto_enums.h"
#include "agent/daemon/agent.h"
#include "common/log.h"

namespace nvmeadapt::daemon {

namespace {


Error NotFound(std::string message) { return MakeError(ErrorCode::kNotFound, std::move(message)); }

// The set has an entry of the request's level under the very name the request gives.
bool HasEntryNamed(const v1::PolicySet& set, const v1::SetPolicyRequest& request) {
  if (request.queue() == 0) {
    return std::any_of(set.controllers().begin(), set.controllers().end(),
                       [&](const v1::ControllerPolicy& c) { return c.controller() == request.controller(); });
  }
  return std::any_of(set.queues().begin(), set.queues().end(), [&](const v1::QueuePolicy& q) {
    return q.controller() == request.controller() && q.queue() == request.queue();
  });
}

// The node's kernel release and whether it has BTF (what the BPF collector's programs need), for reports.
void DescribeKernel(v1::GetStatusResponse& status) {
  utsname name{};
  if (uname(&name) == 0) status.set_kernel_release(name.release);
  status.set_kernel_btf(access("/sys/kernel/btf/vmlinux", R_OK) == 0);
}

// A switch in flight longer than this is listed in GetStatus.degraded.
constexpr engine::Nanos kSlowSwitch = 100'000'000;

}  // namespace

v1::QueueInfo Agent::Describe(ManagedQueue& q) const {
  const engine::QueueView view = engine_.View(q.handle);
  v1::QueueInfo info;
  info.mutable_id()->set_controller(q.desc.controller);
  info.mutable_id()->set_queue(q.desc.qid);
  info.set_controller_id(q.desc.ControllerId());
  info.set_source(q.desc.source);
  info.set_mode(config::ToProto(q.mode));
  info.set_state(config::ToProto(view.state));
  info.set_eligible(q.desc.eligible);
  info.set_ineligible_reason(q.desc.ineligible_reason);
  info.set_controller_mode(config::ToProto(view.policy.mode));
  info.set_lever(q.lever);
  info.set_degraded(q.degraded);
  info.set_degraded_reason(q.degraded_reason);
  info.set_completions(q.counters.completions);
  info.set_bytes(q.counters.bytes);
  if (q.last_window) {
    const collect::WindowEvent& w = *q.last_window;
    auto* window = info.mutable_last_window();
    window->set_completions(w.completions);
    window->set_span_ns(w.end - w.start);
    if (w.completions > 0) window->set_average_interval_ns(static_cast<double>(w.end - w.start) / w.completions);
    window->set_mode(config::ToProto(w.mode));
    window->set_end_unix_ns(q.last_window_unix_ns);
  }
  if (q.last_decision) *info.mutable_last_decision() = *q.last_decision;
  if (view.override_mode) {
    info.mutable_override()->set_mode(config::ToProto(view.override_mode->mode));
    if (view.override_mode->expires_at != 0) {
      info.mutable_override()->set_expires_unix_ns(deps_.wall() +
                                                   (view.override_mode->expires_at - deps_.monotonic()));
    }
  }
  info.set_failures(view.failures);
  info.set_poll_windows(view.poll_windows);
  info.set_backoff_windows_left(view.backoff_left);
  info.set_mode_switches(q.switches);
  for (uint32_t cpu : q.desc.cpus) info.add_cpus(cpu);
  info.set_irq(q.desc.irq);
  info.set_transport(q.desc.transport);
  info.set_layer(q.desc.layer);
  info.set_windows(q.windows);
  info.set_poll_threshold_ns(view.policy.poll_threshold);
  if (const QueuePayoffRecord* payoff = payoff_.Of(q)) PayoffToProto(*payoff, *info.mutable_payoff());
  return info;
}

v1::GetStatusResponse Agent::GetStatus() {
  return OnLoop([&] {
    v1::GetStatusResponse status;
    status.set_version(options_.version);
    status.set_uptime_ns(deps_.monotonic() - started_at_);
    status.set_collector(deps_.collector->Name());
    status.set_observe_only(deps_.collector->ObserveOnly());
    for (const std::string& hook : deps_.collector->Hooks()) status.add_hooks(hook);
    recovery_.DescribeLevers(queues_.All(), status);
    uint32_t managed = 0, polling = 0;
    for (ManagedQueue* q : queues_.All()) {
      const engine::QueueView view = engine_.View(q->handle);
      if (q->desc.eligible && view.policy.mode != engine::ControllerMode::kOff) ++managed;
      if (q->mode == ReapMode::kPoll) ++polling;
      if (q->degraded) status.add_degraded("queue " + q->name + ": " + q->degraded_reason);
    }
    if (!collector_error_.empty()) status.add_degraded("collector: " + collector_error_);
    if (!journal_warning_.empty()) status.add_degraded("journal: " + journal_warning_);
    if (!journal_.empty()) {
      status.add_degraded("journal: " + std::to_string(journal_.size()) + " changed setting(s) to restore on shutdown");
    }
    for (const std::string& line : switcher_.Slow(deps_.monotonic(), kSlowSwitch)) status.add_degraded(line);
    if (queues_over_cap_ > 0) {
      status.add_degraded(std::to_string(queues_over_cap_) + " queue(s) over the tracking cap");
    }
    status.set_queues(static_cast<uint32_t>(queues_.size()));
    status.set_queues_managed(managed);
    status.set_queues_polling(polling);
    status.set_ringbuf_drops(deps_.collector->Stats().ringbuf_drops);
    for (const std::string& choice : deps_.collector->Choices()) status.add_collector_choices(choice);
    DescribeKernel(status);
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) status.set_node(host);
    *status.mutable_policy_origin() = policy_source_.Origin(policy_.book());
    *status.mutable_node_layer() = NodeStatusProto();
    if (!node_.facts_error().empty()) status.add_degraded("node facts: " + node_.facts_error());
    return status;
  }, [&](const Error& error) {
    // Status must answer even when the loop cannot: what is known without it, and why the rest is missing.
    v1::GetStatusResponse status;
    status.set_version(options_.version);
    status.add_degraded("agent loop: " + error.message);
    return status;
  });
}

Result<v1::ListQueuesResponse> Agent::ListQueues(const v1::ListQueuesRequest& request) {
  return OnLoop([&]() -> Result<v1::ListQueuesResponse> {
    if (!request.controller().empty() && !queues_.HasController(request.controller())) {
      return NotFound("controller " + request.controller() + ": no such controller");
    }
    v1::ListQueuesResponse response;
    for (ManagedQueue* q : queues_.All()) {
      if (request.source() != v1::SOURCE_UNSPECIFIED && request.source() != q->desc.source) continue;
      if (!request.controller().empty() && request.controller() != q->desc.controller) continue;
      *response.add_queues() = Describe(*q);
    }
    return response;
  });
}

void Agent::NotePolicyOrigin() {
  if (deps_.metrics == nullptr) return;
  const v1::PolicyOrigin origin = policy_source_.Origin(policy_.book());
  deps_.metrics->SetPolicyInfo(PolicySourceLabel(origin.source()), origin.hash());
}

v1::GetPolicyResponse Agent::GetPolicy() {
  return OnLoop([&] {
    v1::GetPolicyResponse response;
    *response.mutable_policy() = policy_.book().policies();
    *response.mutable_effective_global() = config::ToProto(policy_.book().EffectiveGlobal());
    *response.mutable_origin() = policy_source_.Origin(policy_.book());
    return response;
  }, [](const Error&) { return v1::GetPolicyResponse(); });
}

ManagedQueue* Agent::AnyQueueOf(const std::string& controller) {
  for (ManagedQueue* q : queues_.All()) {
    if (q->desc.controller == controller || q->desc.ControllerId() == controller) return q;
  }
  return nullptr;
}

bool Agent::WaitForSwitches(const std::shared_ptr<SwitchesSettled>& waiter) {
  bool any = false;
  for (ManagedQueue* q : queues_.All()) {
    if (q->switches_in_flight == 0) continue;
    waiter->Add();
    q->settle_waiters.push_back(waiter);
    any = true;
  }
  return any;
}

Result<v1::SetPolicyResponse> Agent::SetPolicy(const v1::SetPolicyRequest& request) {
  // Durable before it applies, as before, but the writes (fsync of policy.json and its note) run here, on the
  // caller's thread: a slow or stuck state disk holds up this call, never the loop (issue 37). One change at
  // a time from its reading of the book to its application, so that policy.json follows the order of the
  // changes; a config reload between the two halves makes the change read the book again.
  std::lock_guard changing(policy_change_mutex_);
  v1::PolicyNote note;
  note.set_set_by(request.caller());
  for (;;) {
    struct Next {
      PolicyBook book;
      std::vector<std::string> cleared;
      uint64_t generation;
      std::string controller;  // as the book keeps it: the stable ID, or the name an entry already has
    };
    auto next = OnLoop([&]() -> Result<Next> {
      // A controller named by its kernel name is kept by its stable ID: its policy stays with the device when
      // a reboot renumbers it (the request may name either). An entry the file already keys by that name is
      // changed where it is, so that `replace` leaves nothing of it behind.
      v1::SetPolicyRequest keyed = request;
      if (!request.controller().empty()) {
        const ManagedQueue* any = AnyQueueOf(request.controller());
        if (any == nullptr) return NotFound("controller " + request.controller() + ": no such controller");
        if (request.queue() != 0 && queues_.ByName(QueueName(any->desc.controller, request.queue())) == nullptr) {
          return NotFound("queue " + QueueName(request.controller(), request.queue()) + ": no such queue");
        }
        if (!HasEntryNamed(policy_.book().policies(), request)) keyed.set_controller(any->desc.ControllerId());
      }
      std::vector<std::string> cleared;
      NA_ASSIGN_OR_RETURN(PolicyBook book, request.reset() ? PolicyBook::Create(options_.config_policies)
                                                           : policy_.book().With(keyed, &cleared));
      note.set_set_unix_ns(deps_.wall());
      return Next{std::move(book), std::move(cleared), policy_changes_, keyed.controller()};
    });
    if (!next) return next.error();
    if (Status saved = request.reset() ? policy_source_.Forget() : policy_source_.Persist(next->book, note); !saved) {
      return saved.error();
    }
    auto waiter = std::make_shared<SwitchesSettled>();
    bool switching = false, stale = false;
    auto answer = OnLoop([&]() -> Result<v1::SetPolicyResponse> {
      if (next->generation != policy_changes_) {
        stale = true;  // a reload applied meanwhile: read the book again
        return v1::SetPolicyResponse();
      }
      ++policy_changes_;
      policy_source_.InForce(request.reset() ? std::nullopt : std::optional<v1::PolicyNote>(note));
      policy_.Apply(std::move(next->book), queues_, deps_.monotonic());
      NotePolicyOrigin();
      const std::string scope = !request.selector().empty()  ? "selector " + request.selector()
                                : request.controller().empty() ? "global"
                                : request.queue() == 0         ? next->controller
                                                               : QueueName(next->controller, request.queue());
      const std::string what = request.reset()  ? "policy reset: the config file's policy is in force again"
                               : request.remove() ? "policy " + scope + ": removed"
                                                  : "policy " + scope + ": " + request.policy().ShortDebugString();
      NA_INFO(what << (request.caller().empty() ? "" : " (by " + request.caller() + ")"));
      for (const std::string& level : next->cleared) NA_INFO("policy: " << level << ": its own mode cleared (global off)");
      listeners_.Tell(&AgentListener::PolicySet, what);
      v1::SetPolicyResponse response;
      *response.mutable_policy() = policy_.book().policies();
      switching = WaitForSwitches(waiter);
      return response;
    });
    if (stale) continue;
    // The answer comes once the switches the policy started ended (or after rpc_wait), as it did when they
    // ran on the loop: a caller that sets a mode finds its queues in it.
    if (answer && switching) waiter->WaitFor(options_.rpc_wait);
    return answer;
  }
}

Result<v1::SetQueueModeResponse> Agent::SetQueueMode(const v1::SetQueueModeRequest& request) {
  const std::string name = QueueName(request.queue().controller(), request.queue().queue());
  auto waiter = std::make_shared<SwitchesSettled>();
  bool switching = false;
  auto answer = OnLoop([&]() -> Result<v1::SetQueueModeResponse> {
    ManagedQueue* q = queues_.ByName(name);
    if (q == nullptr) return NotFound("queue " + name + ": no such queue");
    if (!q->desc.eligible) {
      return MakeError(ErrorCode::kFailedPrecondition, "queue " + name + ": not eligible: " + q->desc.ineligible_reason);
    }
    if (request.duration_ns() < 0) {
      return MakeError(ErrorCode::kInvalidArgument, "duration_ns: must be >= 0");
    }
    const engine::Nanos now = deps_.monotonic();
    std::optional<engine::Override> override_mode;
    if (std::optional<ReapMode> mode = config::FromProto(request.mode())) {
      override_mode = engine::Override{*mode, request.duration_ns() > 0 ? now + request.duration_ns() : 0};
    } else if (request.mode() != v1::REAP_MODE_UNSPECIFIED) {
      return MakeError(ErrorCode::kInvalidArgument, "mode: unknown reaping mode " + std::to_string(request.mode()));
    }
    const std::string what = override_mode ? std::string(ReapModeName(override_mode->mode)) : "cleared";
    NA_INFO("override: " << name << " " << what
                         << (request.duration_ns() > 0 ? " for " + std::to_string(request.duration_ns() / 1'000'000) + " ms"
                                                       : ""));
    listeners_.Tell(&AgentListener::OverrideSet, *q, now, override_mode,
                    std::string("override " + name + " " + what));
    q->next_timer = std::min(q->next_timer, now + engine_.View(q->handle).policy.timer_granularity);  // its expiry
    if (auto decision = engine_.SetOverride(q->handle, override_mode, now)) HandleDecision(*q, *decision);
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
  waiter->WaitFor(options_.rpc_wait);
  auto after = OnLoop([&]() -> Result<v1::SetQueueModeResponse> {
    ManagedQueue* q = queues_.ByName(name);
    if (q == nullptr) return NotFound("queue " + name + ": no such queue (it left during its switch)");
    v1::SetQueueModeResponse response;
    *response.mutable_queue() = Describe(*q);
    return response;
  });
  return after ? after : answer;
}

std::shared_ptr<api::Subscription> Agent::WatchEvents(const v1::WatchEventsRequest& request, size_t capacity) {
  return bus_.Subscribe(request, capacity);
}

Result<Agent::ReloadOutcome> Agent::ReloadConfigPolicies(const v1::PolicySet& policies) {
  return OnLoop([&]() -> Result<ReloadOutcome> {
    options_.config_policies = policies;
    std::string why_not;
    NA_ASSIGN_OR_RETURN(auto book, policy_source_.Reload(policies, &why_not));
    if (!book.has_value()) return ReloadOutcome{false, why_not};
    ++policy_changes_;
    policy_.Apply(std::move(*book), queues_, deps_.monotonic());
    NotePolicyOrigin();
    return ReloadOutcome{true, ""};
  });
}

}  // namespace nvmeadapt::daemon
