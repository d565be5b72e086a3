// SPDX-License-Identifier: Apache-2.0
// The policy levels in force (global, per controller, per queue) and the rules for changing them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/engine/policy.h"
#include "agent/engine/policy_selectors.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::daemon {

class PolicyBook {
 public:
  // Validates every level; the error names the field.
  static Result<PolicyBook> Create(v1::PolicySet policies);

  const v1::PolicySet& policies() const { return policies_; }  // as set (profiles by name)
  // The effective policy of a queue (config/policy_layers.h: the entries by precedence). Never fails: the book
  // only ever holds validated levels.
  engine::Policy Effective(const engine::DeviceFacts& device, uint32_t queue) const;
  // A controller known by name only: no selector on another fact matches it.
  engine::Policy Effective(std::string_view controller, uint32_t queue) const;
  engine::Policy EffectiveGlobal() const { return Effective("", 0); }
  // 16 hex digits identifying the policy in force: equal on nodes whose levels are equal once the global
  // level's defaults are filled in (nvme_adapt_policy_info's hash label).
  std::string Hash() const;

  // The book as it would be after `request` (merge of the fields set, or replace). The book itself is
  // unchanged. Errors name the request's field ("policy.pace_slack_ns: must be ...", "queue: ...").
  // With `selector`, the selector entry of that name is changed, added (with `match`) or removed (`remove`).
  // A global `off` is the node's off switch: it also clears every controller's and queue's own mode, so
  // that every queue goes back to its safe mode; `cleared`, when given, names the levels that lost theirs.
  Result<PolicyBook> With(const v1::SetPolicyRequest& request, std::vector<std::string>* cleared = nullptr) const;

 private:
  PolicyBook(v1::PolicySet policies, v1::PolicySet expanded)
      : policies_(std::move(policies)), expanded_(std::move(expanded)) {}
  v1::PolicySet policies_;  // as set: a level's profile by name
  v1::PolicySet expanded_;  // each profile's fields under its level's own: what the queues run on
};

}  // namespace nvmeadapt::daemon
