// SPDX-License-Identifier: Apache-2.0
#include "agent/config/policy_layers.h"

#include <algorithm>

#include "agent/config/policy_convert.h"
#include "agent/config/profiles.h"
#include "common/vocabulary.h"

namespace nvmeadapt::config {
namespace {

using google::protobuf::FieldDescriptor;

Error Invalid(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

const FieldDescriptor* SelectorProtoField(std::string_view name) {
  return v1::Selector::descriptor()->FindFieldByName(std::string(name));
}

std::string SelectorEntry(const v1::SelectorPolicy& s) { return "selector " + s.name(); }

struct ScopedSelector {
  engine::Selector selector;
  int index = 0;
};

std::string ScopeWord(const engine::Selector& s) { return s.QueueScoped() ? "queue" : "controller"; }

}  // namespace

Result<engine::Selector> SelectorOf(const v1::Selector& match, std::string_view field_path) {
  const auto* reflection = match.GetReflection();
  engine::Selector selector;
  for (const engine::SelectorField& field : engine::SelectorFields()) {
    const FieldDescriptor* proto = SelectorProtoField(field.name);
    if (proto == nullptr) continue;  // SelectorFieldsCoverTheProto fails on such a row
    std::string pattern = reflection->GetString(match, proto);
    if (pattern.empty()) continue;
    if (Status ok = engine::CheckSelectorPattern(field, pattern); !ok) {
      return Invalid(std::string(field_path) + "." + std::string(field.name) + ": " + ok.error().message);
    }
    selector.criteria.push_back({&field, std::move(pattern)});
  }
  if (!match.queues().empty()) {
    if (match.queues().size() > engine::kMaxSelectorValueLength) {
      return Invalid(std::string(field_path) + ".queues: longer than " +
                     std::to_string(engine::kMaxSelectorValueLength) + " characters");
    }
    auto ranges = engine::ParseQueueRanges(match.queues());
    if (!ranges) return Invalid(std::string(field_path) + ".queues: " + ranges.error().message);
    selector.queues = std::move(*ranges);
  }
  return selector;
}

std::string SelectorText(const v1::Selector& match) {
  std::string text;
  auto add = [&](std::string_view name, const std::string& value) {
    if (!value.empty()) text += (text.empty() ? "" : ", ") + std::string(name) + "=" + value;
  };
  for (const engine::SelectorField& field : engine::SelectorFields()) {
    if (const FieldDescriptor* proto = SelectorProtoField(field.name)) {
      add(field.name, match.GetReflection()->GetString(match, proto));
    }
  }
  add(engine::kSelectorQueuesField, match.queues());
  return text;
}

Status SetSelectorCriterion(v1::Selector& match, std::string_view key_value) {
  const size_t equals = key_value.find('=');
  const std::string key(key_value.substr(0, equals));
  if (equals == std::string_view::npos || key.empty()) {
    return Invalid("'" + std::string(key_value) + "': expected KEY=VALUE (" + engine::SelectorFieldNames() + ")");
  }
  const FieldDescriptor* proto = SelectorProtoField(key);
  if (proto == nullptr || (engine::FindSelectorField(key) == nullptr && key != engine::kSelectorQueuesField)) {
    return Invalid("'" + key + "': not a selector criterion (" + engine::SelectorFieldNames() + ")");
  }
  match.GetReflection()->SetString(&match, proto, std::string(key_value.substr(equals + 1)));
  return OkStatus();
}

Status ValidateSelectors(const v1::PolicySet& set) {
  if (set.selectors_size() > engine::kMaxSelectors) {
    return Invalid("selectors: " + std::to_string(set.selectors_size()) + " entries, more than the " +
                   std::to_string(engine::kMaxSelectors) + " allowed");
  }
  std::vector<ScopedSelector> checked;
  for (int i = 0; i < set.selectors_size(); ++i) {
    const v1::SelectorPolicy& entry = set.selectors(i);
    const std::string path = "selectors[" + std::to_string(i) + "]";
    if (entry.name().empty()) return Invalid(path + ".name: must name the entry");
    if (entry.name().size() > engine::kMaxSelectorValueLength) {
      return Invalid(path + ".name: longer than " + std::to_string(engine::kMaxSelectorValueLength) + " characters");
    }
    for (int j = 0; j < i; ++j) {
      if (set.selectors(j).name() == entry.name()) {
        return Invalid(path + ".name: '" + entry.name() + "' is also selectors[" + std::to_string(j) + "]'s name");
      }
    }
    NA_ASSIGN_OR_RETURN(auto selector, SelectorOf(entry.match(), path + ".match"));
    if (selector.criteria.empty() && !selector.QueueScoped()) {
      return Invalid(path + ".match: sets no criterion (" + engine::SelectorFieldNames() +
                     "); the global policy already covers every queue");
    }
    for (const ScopedSelector& other : checked) {
      const engine::Selector& o = other.selector;
      if (o.QueueScoped() != selector.QueueScoped() || o.Specificity() != selector.Specificity()) continue;
      if (!engine::MayOverlap(o, selector)) continue;
      const v1::SelectorPolicy& before = set.selectors(other.index);
      return Invalid(path + ": selectors '" + before.name() + "' (" + SelectorText(before.match()) + ") and '" +
                     entry.name() + "' (" + SelectorText(entry.match()) + ") are as specific as each other (" +
                     std::to_string(selector.Specificity()) + " criteria, " + ScopeWord(selector) +
                     " scope) and may match the same device: neither would win. Add a criterion to the one "
                     "that should win, or make them disjoint");
    }
    checked.push_back({std::move(selector), i});
  }
  return OkStatus();
}

engine::DeviceFacts NamedDevice(std::string_view controller) {
  engine::DeviceFacts facts;
  facts.controller = std::string(controller);
  facts.id = facts.controller;
  return facts;
}

std::vector<PolicyLayer> LayersFor(const v1::PolicySet& set, const engine::DeviceFacts& facts, uint32_t qid) {
  std::vector<PolicyLayer> layers{{"global", "policy", &set.policy()}};
  std::vector<std::pair<engine::Selector, int>> controller_scope, queue_scope;
  engine::DeviceFacts by_legacy_id = facts;
  by_legacy_id.id = facts.legacy_id;
  for (int i = 0; i < set.selectors_size(); ++i) {
    auto selector = SelectorOf(set.selectors(i).match(), "");
    if (!selector) continue;
    if (!engine::Matches(*selector, facts, qid) &&
        (facts.legacy_id.empty() || !engine::Matches(*selector, by_legacy_id, qid))) {
      continue;
    }
    (selector->QueueScoped() ? queue_scope : controller_scope).emplace_back(std::move(*selector), i);
  }
  auto add_selectors = [&](std::vector<std::pair<engine::Selector, int>>& matched) {
    std::stable_sort(matched.begin(), matched.end(),
                     [](const auto& a, const auto& b) { return a.first.Specificity() < b.first.Specificity(); });
    for (const auto& [selector, i] : matched) {
      layers.push_back({SelectorEntry(set.selectors(i)), "selectors[" + std::to_string(i) + "].policy",
                        &set.selectors(i).policy()});
    }
  };
  auto names = [&](const std::string& controller) {
    return !controller.empty() &&
           (controller == facts.controller || controller == facts.id || controller == facts.legacy_id);
  };
  add_selectors(controller_scope);
  for (int i = 0; i < set.controllers_size(); ++i) {
    const auto& c = set.controllers(i);
    if (names(c.controller())) {
      layers.push_back({"controller " + c.controller(), "controllers[" + std::to_string(i) + "].policy", &c.policy()});
    }
  }
  add_selectors(queue_scope);
  for (int i = 0; i < set.queues_size(); ++i) {
    const auto& q = set.queues(i);
    if (names(q.controller()) && q.queue() == qid) {
      layers.push_back({"queue " + QueueName(q.controller(), q.queue()), "queues[" + std::to_string(i) + "].policy",
                        &q.policy()});
    }
  }
  return layers;
}

Result<engine::Policy> EffectivePolicy(const v1::PolicySet& set, const engine::DeviceFacts& facts, uint32_t qid) {
  engine::Policy policy;
  for (const PolicyLayer& layer : LayersFor(set, facts, qid)) {
    NA_ASSIGN_OR_RETURN(auto next, Overlay(policy, *layer.policy, layer.field_path));
    policy = next;
  }
  return policy;
}

Result<std::vector<FieldOrigin>> ExplainPolicy(const v1::PolicySet& set, const engine::DeviceFacts& facts,
                                               uint32_t qid) {
  NA_ASSIGN_OR_RETURN(auto effective, EffectivePolicy(set, facts, qid));
  std::vector<FieldOrigin> origins;
  for (const engine::PolicyField& field : engine::PolicyFields()) {
    origins.push_back({&field, field.get(effective), "default", ""});
  }
  for (const PolicyLayer& layer : LayersFor(set, facts, qid)) {
    const engine::PolicyProfile* profile =
        layer.policy->has_profile() ? engine::FindPolicyProfile(layer.policy->profile()) : nullptr;
    for (FieldOrigin& origin : origins) {
      auto own = ProtoPolicyValue(*layer.policy, *origin.field, layer.field_path);
      if (own && *own) {
        origin.entry = origin.layer = layer.entry;
      } else if (profile != nullptr && (origin.field->kind != engine::PolicyFieldKind::kMode || profile->sets_mode)) {
        origin.entry = layer.entry + " (profile " + std::string(profile->name) + ")";
        origin.layer = layer.entry;
      }
    }
  }
  return origins;
}

const v1::Policy* FindEntry(const v1::PolicySet& set, std::string_view entry) {
  if (entry == "global") return &set.policy();
  for (const auto& s : set.selectors()) {
    if (SelectorEntry(s) == entry) return &s.policy();
  }
  for (const auto& c : set.controllers()) {
    if ("controller " + c.controller() == entry) return &c.policy();
  }
  for (const auto& q : set.queues()) {
    if ("queue " + QueueName(q.controller(), q.queue()) == entry) return &q.policy();
  }
  return nullptr;
}

}  // namespace nvmeadapt::config
