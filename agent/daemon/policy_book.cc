#include "agent/daemon/policy_book.h"

#include "agent/config/policy_convert.h"

namespace nvmeadapt::daemon {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

void Apply(v1::Policy& layer, const v1::Policy& change, bool replace) {
  if (replace) {
    layer = change;
  } else {
    layer.MergeFrom(change);  // proto3 optional: only fields set in `change` are copied
  }
}

}  // namespace

// The daemon's floors over what the engine accepts: a window of a few completions makes the BPF side send a
// ring-buffer record for nearly every completion of a busy queue (issue 15, finding 7).
static Status AboveFloors(const v1::Policy& policy, const std::string& where) {
  if (policy.has_window_completions() && policy.window_completions() < kMinWindowCompletions) {
    return MakeError(ErrorCode::kInvalidArgument,
                     where + "window_completions: must be >= " + std::to_string(kMinWindowCompletions) +
                         " (the agent's floor: smaller windows flood the ring buffer) (got " +
                         std::to_string(policy.window_completions()) + ")");
  }
  return OkStatus();
}

Result<PolicyBook> PolicyBook::Create(v1::PolicySet policies) {
  if (Status valid = config::ValidatePolicies(policies); !valid) return valid.error();
  if (Status floor = AboveFloors(policies.policy(), "policy."); !floor) return floor.error();
  for (const auto& controller : policies.controllers()) {
    if (Status floor = AboveFloors(controller.policy(), "controllers[" + controller.controller() + "].policy."); !floor)
      return floor.error();
  }
  for (const auto& queue : policies.queues()) {
    if (Status floor = AboveFloors(queue.policy(), "queues[" + QueueName(queue.controller(), queue.queue()) +
                                                       "].policy.");
        !floor)
      return floor.error();
  }
  return PolicyBook(std::move(policies));
}

engine::Policy PolicyBook::Effective(std::string_view controller, uint32_t queue) const {
  auto policy = config::EffectivePolicy(policies_, controller, queue);
  return policy ? *policy : engine::Policy{};
}

// The off switch: the levels below the global one lose their mode (their other fields stay).
static void ClearModesBelowGlobal(v1::PolicySet& set, std::vector<std::string>* cleared) {
  for (auto& c : *set.mutable_controllers()) {
    if (!c.policy().has_mode()) continue;
    c.mutable_policy()->clear_mode();
    if (cleared != nullptr) cleared->push_back(c.controller());
  }
  for (auto& q : *set.mutable_queues()) {
    if (!q.policy().has_mode()) continue;
    q.mutable_policy()->clear_mode();
    if (cleared != nullptr) cleared->push_back(QueueName(q.controller(), q.queue()));
  }
}

Result<PolicyBook> PolicyBook::With(const v1::SetPolicyRequest& request, std::vector<std::string>* cleared) const {
  if (request.queue() != 0 && request.controller().empty()) {
    return Invalid("controller: must be set when queue is set");
  }
  // The requested layer over the level it inherits from, checked with the request's own field path.
  const engine::Policy parent =
      request.controller().empty() ? engine::Policy{}
      : request.queue() == 0       ? EffectiveGlobal()
                                   : Effective(request.controller(), 0);
  v1::PolicySet next = policies_;
  v1::Policy* layer = nullptr;
  if (request.controller().empty()) {
    layer = next.mutable_policy();
  } else if (request.queue() == 0) {
    for (auto& c : *next.mutable_controllers()) {
      if (c.controller() == request.controller()) layer = c.mutable_policy();
    }
    if (layer == nullptr) {
      auto* added = next.add_controllers();
      added->set_controller(request.controller());
      layer = added->mutable_policy();
    }
  } else {
    for (auto& q : *next.mutable_queues()) {
      if (q.controller() == request.controller() && q.queue() == request.queue()) layer = q.mutable_policy();
    }
    if (layer == nullptr) {
      auto* added = next.add_queues();
      added->set_controller(request.controller());
      added->set_queue(request.queue());
      layer = added->mutable_policy();
    }
  }
  Apply(*layer, request.policy(), request.replace());
  if (auto checked = config::Overlay(parent, *layer, "policy"); !checked) return checked.error();
  if (request.controller().empty() && request.policy().has_mode() &&
      request.policy().mode() == v1::CONTROLLER_MODE_OFF) {
    ClearModesBelowGlobal(next, cleared);
  }
  return Create(std::move(next));
}

}  // namespace nvmeadapt::daemon
