// SPDX-License-Identifier: Apache-2.0
// The policy entries that apply to a queue, in the one order of precedence (config.proto, SelectorPolicy):
// global < controller selectors < controller entries by name or ID < queue selectors < queue entries; among
// selectors of one scope, more criteria win. The effective policy, the selectors' checks and `policy explain`
// all walk the same list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/engine/policy.h"
#include "agent/engine/policy_fields.h"
#include "agent/engine/policy_selectors.h"
#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::config {

struct PolicyLayer {
  std::string entry;       // "global", "selector NAME", "controller C", "queue C:qN": unique within a set
  std::string field_path;  // "selectors[2].policy", for errors
  const v1::Policy* policy = nullptr;  // points into the set the layers were made from
};

// A selector entry's criteria through the selector table (policy_selectors.h); errors name `field_path`.field.
Result<engine::Selector> SelectorOf(const v1::Selector& match, std::string_view field_path);
// "model=SAMSUNG*, transport=pcie, queues=1-4", in the table's order.
std::string SelectorText(const v1::Selector& match);
// One "KEY=VALUE" criterion (the CLI's --match) into `match`; an unknown key names the known ones.
Status SetSelectorCriterion(v1::Selector& match, std::string_view key_value);

// Names, criteria and precedence: each entry named, unique, with a criterion; no two of one scope and
// specificity that may match one device (both named).
Status ValidateSelectors(const v1::PolicySet& set);

// The layers of the queue `qid` of the controller `facts` describes. The set must be valid: a selector that
// does not convert is skipped.
std::vector<PolicyLayer> LayersFor(const v1::PolicySet& set, const engine::DeviceFacts& facts, uint32_t qid);
Result<engine::Policy> EffectivePolicy(const v1::PolicySet& set, const engine::DeviceFacts& facts, uint32_t qid);

// The controller named `controller` with no other fact known (its stable ID taken to be its name).
engine::DeviceFacts NamedDevice(std::string_view controller);

struct FieldOrigin {
  const engine::PolicyField* field = nullptr;
  int64_t value = 0;   // the effective value, as the table holds it
  std::string entry;   // "default", or the layer's entry (with " (profile P)" when its profile set it)
  std::string layer;   // the layer's entry without the profile note; "" for a default
};
// Every field of the queue's effective policy with the layer that set it last.
Result<std::vector<FieldOrigin>> ExplainPolicy(const v1::PolicySet& set, const engine::DeviceFacts& facts,
                                               uint32_t qid);

// The policy of the entry named `entry` (PolicyLayer::entry) in `set`; nullptr when it has none.
const v1::Policy* FindEntry(const v1::PolicySet& set, std::string_view entry);

}  // namespace nvmeadapt::config
