// SPDX-License-Identifier: Apache-2.0
// The policy table (agent/engine/policy_fields.h) against the proto's Policy, and the profiles through the config.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "agent/config/config_file.h"
#include "agent/config/policy_convert.h"
#include "agent/engine/policy_fields.h"

namespace nvmeadapt::config {
namespace {

using engine::PolicyField;
using engine::PolicyFieldKind;
using google::protobuf::FieldDescriptor;

FieldDescriptor::CppType ProtoTypeOf(PolicyFieldKind kind) {
  switch (kind) {
    case PolicyFieldKind::kNanos: return FieldDescriptor::CPPTYPE_INT64;
    case PolicyFieldKind::kFlag: return FieldDescriptor::CPPTYPE_BOOL;
    case PolicyFieldKind::kMode: return FieldDescriptor::CPPTYPE_ENUM;
    default: return FieldDescriptor::CPPTYPE_UINT32;
  }
}

TEST(PolicyFieldsCoverTheProto, EveryProtoFieldHasARowAndEveryRowAProtoFieldOfItsKind) {
  const google::protobuf::Descriptor* policy = v1::Policy::descriptor();
  ASSERT_NE(policy, nullptr);
  for (int i = 0; i < policy->field_count(); ++i) {
    const std::string name(policy->field(i)->name());
    if (name == kProfileProtoField) continue;
    EXPECT_NE(engine::FindPolicyField(name), nullptr) << "proto field '" << name << "' has no row in the table";
  }
  ASSERT_NE(policy->FindFieldByName(std::string(kProfileProtoField)), nullptr) << "the proto lost 'profile'";
  std::set<std::string_view> keys, options;
  for (const PolicyField& field : engine::PolicyFields()) {
    const FieldDescriptor* proto = ProtoPolicyField(field);
    ASSERT_NE(proto, nullptr) << "row '" << field.name << "' has no proto field";
    EXPECT_EQ(proto->cpp_type(), ProtoTypeOf(field.kind)) << field.name;
    EXPECT_TRUE(keys.insert(field.trace_key).second) << "trace key '" << field.trace_key << "' twice";
    if (!field.option.empty()) {
      EXPECT_TRUE(options.insert(field.option).second) << field.option;
    }
    if (!field.zero_or_at_least.empty()) {
      EXPECT_NE(engine::FindPolicyField(field.zero_or_at_least), nullptr);
    }
  }
}

TEST(PolicyFieldsCoverTheProto, EachRowsBoundsHoldThroughTheConfig) {
  for (const PolicyField& field : engine::PolicyFields()) {
    if (field.kind == PolicyFieldKind::kFlag || field.kind == PolicyFieldKind::kMode) continue;
    v1::Policy layer;
    layer.set_profile("patch");  // no doubling nor growth: backoff_windows and max_poll_windows reach their maxima
    SetProtoPolicyValue(&layer, field, field.max);
    // A floor field below the value keeps the "0 or at least" rows within their rule.
    if (!field.zero_or_at_least.empty()) SetProtoPolicyValue(&layer, *engine::FindPolicyField(field.zero_or_at_least), 1);
    EXPECT_TRUE(Overlay(engine::Policy{}, layer, "policy")) << field.name << " at its maximum";
    SetProtoPolicyValue(&layer, field, field.max + 1);
    auto over = Overlay(engine::Policy{}, layer, "policy");
    ASSERT_FALSE(over) << field.name << " above its maximum";
    EXPECT_NE(over.error().message.find("policy." + std::string(field.name)), std::string::npos)
        << over.error().message;
    if (field.min > 0) {
      SetProtoPolicyValue(&layer, field, field.min - 1);
      EXPECT_FALSE(Overlay(engine::Policy{}, layer, "policy")) << field.name << " below its minimum";
    }
  }
}

TEST(PolicyFieldsCoverTheProto, EveryFieldRoundTripsThroughTheProto) {
  engine::Policy p;
  for (const PolicyField& field : engine::PolicyFields()) {
    if (field.kind != PolicyFieldKind::kMode) field.set(p, field.get(p) == field.min ? field.min + 1 : field.min);
  }
  p.max_backoff_windows = 0;
  p.max_poll_run_windows = 0;
  p.mode = engine::ControllerMode::kShadow;
  ASSERT_TRUE(engine::ValidatePolicy(p)) << engine::ValidatePolicy(p).error().message;
  auto back = Overlay(engine::Policy{}, ToProto(p), "policy");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, p);
}

TEST(PatchPresetConfig, AProfileLaysThePatchsRulesUnderTheLevelsOwnFields) {
  auto config = ParseConfigJson(R"({
    "policy": {"mode": "CONTROLLER_MODE_ADAPTIVE", "settleWindows": 3},
    "controllers": [{"controller": "nvme0", "policy": {"profile": "patch", "windowCompletions": 4096}}]})");
  ASSERT_TRUE(config) << config.error().message;
  auto q = EffectivePolicy(*config, "nvme0", 1);
  ASSERT_TRUE(q) << q.error().message;
  engine::Policy expected = engine::PatchPreset();
  expected.window_completions = 4096;
  expected.mode = engine::ControllerMode::kAdaptive;  // a profile leaves the mode alone
  EXPECT_EQ(*q, expected);
  auto other = EffectivePolicy(*config, "nvme1", 1);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->settle_windows, 3u);
}

TEST(PatchPresetConfig, AnUnknownProfileIsRefusedWithTheNames) {
  auto config = ParseConfigJson(R"({"queues": [{"controller": "nvme0", "queue": 2, "policy": {"profile": "fast"}}]})");
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("queues[0].policy.profile: unknown profile 'fast' (default, patch, observe, throughput, latency)"),
            std::string::npos)
      << config.error().message;
}

}  // namespace
}  // namespace nvmeadapt::config
