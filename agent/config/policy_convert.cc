// SPDX-License-Identifier: Apache-2.0
#include "agent/config/policy_convert.h"

#include <string>

#include "agent/config/policy_layers.h"
#include "agent/config/profiles.h"

namespace nvmeadapt::config {

Result<engine::ControllerMode> FromProto(v1::ControllerMode mode, std::string_view field_path) {
  if (auto known = FromProto(mode)) return *known;
  return MakeError(ErrorCode::kInvalidArgument, std::string(field_path) + ".mode: unknown controller mode " +
                                                    std::to_string(static_cast<int>(mode)));
}

const google::protobuf::FieldDescriptor* ProtoPolicyField(const engine::PolicyField& field) {
  return v1::Policy::descriptor()->FindFieldByName(std::string(field.name));
}

Result<std::optional<int64_t>> ProtoPolicyValue(const v1::Policy& policy, const engine::PolicyField& field,
                                                std::string_view field_path) {
  using google::protobuf::FieldDescriptor;
  const FieldDescriptor* proto = ProtoPolicyField(field);
  const google::protobuf::Reflection* reflection = policy.GetReflection();
  if (proto == nullptr || !reflection->HasField(policy, proto)) return std::optional<int64_t>();
  switch (proto->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32: return std::optional<int64_t>(reflection->GetUInt32(policy, proto));
    case FieldDescriptor::CPPTYPE_INT64: return std::optional<int64_t>(reflection->GetInt64(policy, proto));
    case FieldDescriptor::CPPTYPE_BOOL: return std::optional<int64_t>(reflection->GetBool(policy, proto));
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto mode = static_cast<v1::ControllerMode>(reflection->GetEnumValue(policy, proto));
      if (mode == v1::CONTROLLER_MODE_UNSPECIFIED) return std::optional<int64_t>();  // inherit
      auto known = FromProto(mode, field_path);
      if (!known) return known.error();
      return std::optional<int64_t>(static_cast<int64_t>(*known));
    }
    default:
      return MakeError(ErrorCode::kInternal, std::string(field_path) + "." + proto->name() +
                                                 ": a proto type the policy table does not convert");
  }
}

void SetProtoPolicyValue(v1::Policy* policy, const engine::PolicyField& field, int64_t value) {
  using google::protobuf::FieldDescriptor;
  const FieldDescriptor* proto = ProtoPolicyField(field);
  if (proto == nullptr) return;  // PolicyFieldsCoverTheProto fails on such a row
  const google::protobuf::Reflection* reflection = policy->GetReflection();
  switch (proto->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32: reflection->SetUInt32(policy, proto, static_cast<uint32_t>(value)); break;
    case FieldDescriptor::CPPTYPE_INT64: reflection->SetInt64(policy, proto, value); break;
    case FieldDescriptor::CPPTYPE_BOOL: reflection->SetBool(policy, proto, value != 0); break;
    case FieldDescriptor::CPPTYPE_ENUM:
      reflection->SetEnumValue(policy, proto, ToProto(static_cast<engine::ControllerMode>(value)));
      break;
    default: break;
  }
}

Result<engine::Policy> Overlay(const engine::Policy& base, const v1::Policy& layer, std::string_view field_path) {
  engine::Policy p = base;
  if (layer.has_profile()) {
    NA_ASSIGN_OR_RETURN(auto profile, FindProfile(layer.profile(), std::string(field_path) + ".profile"));
    engine::ApplyPolicyProfile(*profile, p);
  }
  for (const engine::PolicyField& field : engine::PolicyFields()) {
    NA_ASSIGN_OR_RETURN(auto value, ProtoPolicyValue(layer, field, field_path));
    if (value) field.set(p, *value);
  }
  const std::string prefix = std::string(field_path) + ".";
  NA_RETURN_IF_ERROR(engine::ValidatePolicy(p, prefix));
  return p;
}

v1::Policy ToProto(const engine::Policy& p) {
  v1::Policy out;
  for (const engine::PolicyField& field : engine::PolicyFields()) SetProtoPolicyValue(&out, field, field.get(p));
  return out;
}

v1::PolicySet PoliciesOf(const v1::Config& config) {
  v1::PolicySet set;
  *set.mutable_policy() = config.policy();
  *set.mutable_controllers() = config.controllers();
  *set.mutable_queues() = config.queues();
  *set.mutable_selectors() = config.selectors();
  return set;
}

Result<engine::Policy> EffectivePolicy(const v1::PolicySet& set, std::string_view controller, uint32_t queue) {
  return EffectivePolicy(set, NamedDevice(controller), queue);
}

Result<engine::Policy> EffectivePolicy(const v1::Config& config, std::string_view controller, uint32_t queue) {
  return EffectivePolicy(PoliciesOf(config), controller, queue);
}

Status ValidatePolicies(const v1::PolicySet& set) {
  NA_ASSIGN_OR_RETURN(auto global, Overlay(engine::Policy{}, set.policy(), "policy"));
  for (int i = 0; i < set.controllers_size(); ++i) {
    const std::string path = "controllers[" + std::to_string(i) + "]";
    if (set.controllers(i).controller().empty()) {
      return MakeError(ErrorCode::kInvalidArgument, path + ".controller: must name a controller");
    }
    NA_RETURN_IF_ERROR(Overlay(global, set.controllers(i).policy(), path + ".policy"));
  }
  NA_RETURN_IF_ERROR(ValidateSelectors(set));
  for (int i = 0; i < set.selectors_size(); ++i) {
    NA_RETURN_IF_ERROR(Overlay(global, set.selectors(i).policy(), "selectors[" + std::to_string(i) + "].policy"));
  }
  for (int i = 0; i < set.queues_size(); ++i) {
    const auto& q = set.queues(i);
    const std::string path = "queues[" + std::to_string(i) + "]";
    if (q.controller().empty()) {
      return MakeError(ErrorCode::kInvalidArgument, path + ".controller: must name a controller");
    }
    if (q.queue() == 0) {
      return MakeError(ErrorCode::kInvalidArgument, path + ".queue: must be an I/O queue id (>= 1)");
    }
    NA_RETURN_IF_ERROR(EffectivePolicy(set, q.controller(), q.queue()));
  }
  return OkStatus();
}

Status ValidatePolicies(const v1::Config& config) { return ValidatePolicies(PoliciesOf(config)); }

}  // namespace nvmeadapt::config
