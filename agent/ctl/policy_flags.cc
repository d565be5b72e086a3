// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/policy_flags.h"

#include <vector>

#include "agent/config/policy_convert.h"
#include "agent/ctl/values.h"

namespace nvmeadapt::ctl {
namespace {

using engine::PolicyFieldKind;

std::string_view ValueWord(PolicyFieldKind kind) {
  switch (kind) {
    case PolicyFieldKind::kPercent: return "PERCENT";
    case PolicyFieldKind::kNanos: return "DURATION";
    case PolicyFieldKind::kFlag: return "on|off";
    default: return "N";
  }
}

const std::string& ProfileWord() {
  static const std::string word = [] {
    std::string names;
    for (const engine::PolicyProfile& p : engine::PolicyProfiles()) names += (names.empty() ? "" : "|") + std::string(p.name);
    return names;
  }();
  return word;
}

const std::vector<PolicyFlag>& Flags() {
  static const std::vector<PolicyFlag> flags = [] {
    std::vector<PolicyFlag> out;
    for (const engine::PolicyField& field : engine::PolicyFields()) {
      if (!field.option.empty()) out.push_back({field.option, ValueWord(field.kind), field.column, &field});
    }
    out.push_back({"profile", ProfileWord(), "PROFILE", nullptr});
    return out;
  }();
  return flags;
}

Error Usage(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

Status ApplyOne(const PolicyFlag& flag, const std::string& text, v1::Policy* policy) {
  const std::string option = "--" + std::string(flag.option);
  if (flag.field == nullptr) {
    if (engine::FindPolicyProfile(text) == nullptr) {
      return Usage(option + ": expected " + engine::PolicyProfileNames() + ", got '" + text + "'");
    }
    policy->set_profile(text);
    return OkStatus();
  }
  int64_t value = 0;
  if (flag.field->kind == PolicyFieldKind::kNanos) {
    auto nanos = ParseDuration(text);
    if (!nanos) return Usage(option + ": " + nanos.error().message);
    value = *nanos;
  } else if (flag.field->kind == PolicyFieldKind::kFlag) {
    if (text != "on" && text != "off") return Usage(option + ": expected on or off, got '" + text + "'");
    value = text == "on";
  } else {
    auto number = ParseUint32(text);
    if (!number) return Usage(option + ": " + number.error().message);
    value = *number;
  }
  config::SetProtoPolicyValue(policy, *flag.field, value);
  return OkStatus();
}

}  // namespace

std::span<const PolicyFlag> PolicyFlags() { return Flags(); }

Status ApplyPolicyFlags(const Args& args, v1::Policy* policy) {
  for (const PolicyFlag& flag : Flags()) {
    if (const std::string* text = args.value(flag.option)) NA_RETURN_IF_ERROR(ApplyOne(flag, *text, policy));
  }
  return OkStatus();
}

std::string PolicyFlagText(const PolicyFlag& flag, const v1::Policy& policy) {
  if (flag.field == nullptr) return policy.has_profile() ? policy.profile() : "-";
  auto value = config::ProtoPolicyValue(policy, *flag.field, "policy");
  if (!value || !*value) return "-";
  switch (flag.field->kind) {
    case PolicyFieldKind::kPercent: return std::to_string(**value) + "%";
    case PolicyFieldKind::kNanos: return FormatDuration(**value);
    case PolicyFieldKind::kFlag: return **value != 0 ? "on" : "off";
    default: return std::to_string(**value);
  }
}

}  // namespace nvmeadapt::ctl
