// SPDX-License-Identifier: Apache-2.0
// From the protobuf Policy (every field optional, inherited level by level) to the engine's plain struct and
// back, field by field through the policy table (agent/engine/policy_fields.h) and the proto's descriptor.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "agent/config/proto_enums.h"
#include "agent/engine/policy.h"
#include "agent/engine/policy_fields.h"
#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"
#include "nvmeadapt/v1/policy.pb.h"

namespace nvmeadapt::config {

// The proto Policy's field that is not a table row: a named profile (engine::PolicyProfiles()) whose values the
// level's own fields lay over.
inline constexpr std::string_view kProfileProtoField = "profile";

// The proto field of a table row; nullptr when the proto has none (PolicyFieldsCoverTheProto fails then).
const google::protobuf::FieldDescriptor* ProtoPolicyField(const engine::PolicyField& field);
// The row's value as the table holds it (the mode as the engine's number); nullopt when `policy` leaves it
// unset (the mode: also UNSPECIFIED). An unknown mode number is an error naming `field_path`.mode.
Result<std::optional<int64_t>> ProtoPolicyValue(const v1::Policy& policy, const engine::PolicyField& field,
                                                std::string_view field_path);
void SetProtoPolicyValue(v1::Policy* policy, const engine::PolicyField& field, int64_t value);

// Lays the profile, then the fields set in `layer` over `base` and validates the result. `field_path` names `layer` in
// errors, e.g. "controllers[2].policy".
Result<engine::Policy> Overlay(const engine::Policy& base, const v1::Policy& layer, std::string_view field_path);

// The engine's policy as a protobuf Policy with every row's field set (no profile).
v1::Policy ToProto(const engine::Policy& policy);

// As FromProto(v1::ControllerMode) (proto_enums.h), refusing UNSPECIFIED and unknown numbers with the field named.
Result<engine::ControllerMode> FromProto(v1::ControllerMode mode, std::string_view field_path);

// The policy levels of a config.
v1::PolicySet PoliciesOf(const v1::Config& config);

// The effective policy of a queue known by its name only: built-in defaults <- global <- selectors and entries
// in their precedence (policy_layers.h).
Result<engine::Policy> EffectivePolicy(const v1::PolicySet& policies, std::string_view controller, uint32_t queue);
Result<engine::Policy> EffectivePolicy(const v1::Config& config, std::string_view controller, uint32_t queue);

// Checks every level (alone and as inherited). Errors carry the field path ("controllers[1].policy.mode").
Status ValidatePolicies(const v1::PolicySet& policies);
Status ValidatePolicies(const v1::Config& config);

}  // namespace nvmeadapt::config
