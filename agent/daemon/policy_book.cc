// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/policy_book.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdio>

#include "agent/config/policy_convert.h"
#include "agent/config/policy_layers.h"
#include "agent/config/profiles.h"

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

// The agent's floors over what the engine accepts, each stated in its row of the policy table (level_min): a
// window of a few completions, say, makes the BPF side send a ring-buffer record for nearly every completion
// of a busy queue (issue 15, finding 7).
static Status AboveFloors(const v1::Policy& policy, const std::string& where) {
  for (const engine::PolicyField& field : engine::PolicyFields()) {
    if (field.level_min <= field.min) continue;
    NA_ASSIGN_OR_RETURN(const std::optional<int64_t> value, config::ProtoPolicyValue(policy, field, where));
    if (!value || *value >= field.level_min) continue;
    return Invalid(where + std::string(field.name) + ": must be >= " + std::to_string(field.level_min) +
                   " (the agent's floor: " + std::string(field.level_min_why) + ") (got " + std::to_string(*value) +
                   ")");
  }
  return OkStatus();
}

// Every level's profile expanded into its fields (profiles.h); errors name the level.
static Result<v1::PolicySet> Expanded(v1::PolicySet set) {
  NA_ASSIGN_OR_RETURN(auto global, config::ExpandProfile(set.policy(), "policy.profile"));
  *set.mutable_policy() = global;
  for (auto& c : *set.mutable_controllers()) {
    NA_ASSIGN_OR_RETURN(auto level,
                        config::ExpandProfile(c.policy(), "controllers[" + c.controller() + "].policy.profile"));
    *c.mutable_policy() = level;
  }
  for (auto& q : *set.mutable_queues()) {
    NA_ASSIGN_OR_RETURN(auto level, config::ExpandProfile(q.policy(), "queues[" + QueueName(q.controller(), q.queue()) +
                                                                          "].policy.profile"));
    *q.mutable_policy() = level;
  }
  for (auto& s : *set.mutable_selectors()) {
    NA_ASSIGN_OR_RETURN(auto level, config::ExpandProfile(s.policy(), "selectors[" + s.name() + "].policy.profile"));
    *s.mutable_policy() = level;
  }
  return set;
}

Result<PolicyBook> PolicyBook::Create(v1::PolicySet policies) {
  NA_ASSIGN_OR_RETURN(auto expanded, Expanded(policies));
  NA_RETURN_IF_ERROR(config::ValidatePolicies(expanded));
  NA_RETURN_IF_ERROR(AboveFloors(expanded.policy(), "policy."));
  for (const auto& controller : expanded.controllers()) {
    if (Status floor = AboveFloors(controller.policy(), "controllers[" + controller.controller() + "].policy."); !floor)
      return floor.error();
  }
  for (const auto& selector : expanded.selectors()) {
    if (Status floor = AboveFloors(selector.policy(), "selectors[" + selector.name() + "].policy."); !floor)
      return floor.error();
  }
  for (const auto& queue : expanded.queues()) {
    if (Status floor = AboveFloors(queue.policy(), "queues[" + QueueName(queue.controller(), queue.queue()) +
                                                       "].policy.");
        !floor)
      return floor.error();
  }
  return PolicyBook(std::move(policies), std::move(expanded));
}

engine::Policy PolicyBook::Effective(const engine::DeviceFacts& device, uint32_t queue) const {
  auto policy = config::EffectivePolicy(expanded_, device, queue);
  return policy ? *policy : engine::Policy{};
}

engine::Policy PolicyBook::Effective(std::string_view controller, uint32_t queue) const {
  return Effective(config::NamedDevice(controller), queue);
}

std::string PolicyBook::Hash() const {
  v1::PolicySet filled = expanded_;
  *filled.mutable_policy() = config::ToProto(EffectiveGlobal());
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    filled.SerializeToCodedStream(&coded);
  }
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// The off switch: the levels below the global one lose their mode (their other fields stay).
static void ClearModesBelowGlobal(v1::PolicySet& set, std::vector<std::string>* cleared) {
  for (auto& c : *set.mutable_controllers()) {
    if (!c.policy().has_mode()) continue;
    c.mutable_policy()->clear_mode();
    if (cleared != nullptr) cleared->push_back(c.controller());
  }
  for (auto& s : *set.mutable_selectors()) {
    if (!s.policy().has_mode()) continue;
    s.mutable_policy()->clear_mode();
    if (cleared != nullptr) cleared->push_back("selector " + s.name());
  }
  for (auto& q : *set.mutable_queues()) {
    if (!q.policy().has_mode()) continue;
    q.mutable_policy()->clear_mode();
    if (cleared != nullptr) cleared->push_back(QueueName(q.controller(), q.queue()));
  }
}

// The selector entry `request.selector()` changed, added or removed; checked as a whole by Create.
static Result<v1::PolicySet> WithSelector(v1::PolicySet next, const v1::SetPolicyRequest& request) {
  auto& entries = *next.mutable_selectors();
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const v1::SelectorPolicy& s) { return s.name() == request.selector(); });
  if (request.remove()) {
    if (it == entries.end()) {
      return MakeError(ErrorCode::kNotFound, "selector " + request.selector() + ": no such selector entry");
    }
    entries.erase(it);
    return next;
  }
  if (it == entries.end()) {
    if (!request.has_match()) {
      return Invalid("match: a new selector entry (" + request.selector() + ") needs its criteria");
    }
    auto* added = next.add_selectors();
    added->set_name(request.selector());
    it = entries.end() - 1;
  }
  if (request.has_match()) *it->mutable_match() = request.match();
  Apply(*it->mutable_policy(), request.policy(), request.replace());
  return next;
}

Result<PolicyBook> PolicyBook::With(const v1::SetPolicyRequest& request, std::vector<std::string>* cleared) const {
  if (!request.selector().empty()) {
    if (!request.controller().empty() || request.queue() != 0) {
      return Invalid("selector: names an entry of its own; controller and queue must not be set with it");
    }
    NA_ASSIGN_OR_RETURN(auto next, WithSelector(policies_, request));
    NA_RETURN_IF_ERROR(config::Overlay(EffectiveGlobal(), request.policy(), "policy"));
    return Create(std::move(next));
  }
  if (request.remove()) return Invalid("remove: only a selector entry can be removed (set selector)");
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
  NA_RETURN_IF_ERROR(config::Overlay(parent, *layer, "policy"));
  if (request.controller().empty() && request.policy().has_mode() &&
      request.policy().mode() == v1::CONTROLLER_MODE_OFF) {
    ClearModesBelowGlobal(next, cleared);
  }
  return Create(std::move(next));
}

}  // namespace nvmeadapt::daemon
