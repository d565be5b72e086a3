// From the protobuf Policy (every field optional, inherited level by level) to the engine's plain struct.
#pragma once

#include <string_view>

#include "agent/config/proto_enums.h"
#include "agent/engine/policy.h"
#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"
#include "nvmeadapt/v1/policy.pb.h"

namespace nvmeadapt::config {

// Lays the fields set in `layer` over `base` and validates the result. `field_path` names `layer` in
// errors, e.g. "controllers[2].policy".
Result<engine::Policy> Overlay(const engine::Policy& base, const v1::Policy& layer, std::string_view field_path);

// The engine's policy as a fully populated protobuf Policy.
v1::Policy ToProto(const engine::Policy& policy);

// As FromProto(v1::ControllerMode) (proto_enums.h), refusing UNSPECIFIED and unknown numbers with the field named.
Result<engine::ControllerMode> FromProto(v1::ControllerMode mode, std::string_view field_path);

// The policy levels of a config.
v1::PolicySet PoliciesOf(const v1::Config& config);

// The effective policy of a queue: built-in defaults <- global <- its controller's <- its own.
Result<engine::Policy> EffectivePolicy(const v1::PolicySet& policies, std::string_view controller, uint32_t queue);
Result<engine::Policy> EffectivePolicy(const v1::Config& config, std::string_view controller, uint32_t queue);

// Checks every level (alone and as inherited). Errors carry the field path ("controllers[1].policy.mode").
Status ValidatePolicies(const v1::PolicySet& policies);
Status ValidatePolicies(const v1::Config& config);

}  // namespace nvmeadapt::config
