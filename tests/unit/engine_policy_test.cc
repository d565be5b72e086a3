// SPDX-License-Identifier: Apache-2.0
// The policy's defaults and its validation: every refusal names its field.
#include <gtest/gtest.h>

#include "agent/engine/policy.h"

namespace nvmeadapt::engine {
namespace {

TEST(PolicyValidation, DefaultsAreThePatchDefaults) {
  Policy p;
  EXPECT_EQ(p.window_completions, 8192u);
  EXPECT_EQ(p.poll_threshold, 10'000);
  EXPECT_EQ(p.pace_slack, 20'000);
  EXPECT_EQ(p.max_failures, 3u);
  EXPECT_EQ(p.backoff_windows, 64u);
  EXPECT_EQ(p.max_poll_windows, 64u);
  EXPECT_EQ(p.timer_granularity, 1'000'000);
  EXPECT_EQ(p.mode, ControllerMode::kOff);
  EXPECT_TRUE(ValidatePolicy(p));
}

struct BadPolicyCase {
  const char* name;
  const char* field;
  void (*spoil)(Policy&);
};

class PolicyRefusal : public ::testing::TestWithParam<BadPolicyCase> {};

TEST_P(PolicyRefusal, NamesTheField) {
  Policy p;
  GetParam().spoil(p);
  Status status = ValidatePolicy(p);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(status.error().message.find(std::string("policy.") + GetParam().field), std::string::npos)
      << status.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, PolicyRefusal,
    ::testing::Values(
        BadPolicyCase{"ZeroWindow", "window_completions", [](Policy& p) { p.window_completions = 0; }},
        BadPolicyCase{"HugeWindow", "window_completions", [](Policy& p) { p.window_completions = kMaxWindowCompletions + 1; }},
        BadPolicyCase{"ZeroThreshold", "poll_threshold_ns", [](Policy& p) { p.poll_threshold = 0; }},
        BadPolicyCase{"NegativeSlack", "pace_slack_ns", [](Policy& p) { p.pace_slack = -1; }},
        BadPolicyCase{"ZeroMaxFailures", "max_failures", [](Policy& p) { p.max_failures = 0; }},
        BadPolicyCase{"ZeroMaxPollWindows", "max_poll_windows", [](Policy& p) { p.max_poll_windows = 0; }},
        BadPolicyCase{"TinyTimer", "timer_granularity_ns", [](Policy& p) { p.timer_granularity = 9'999; }},
        BadPolicyCase{"UnknownMode", "mode", [](Policy& p) { p.mode = static_cast<ControllerMode>(42); }}),
    [](const ::testing::TestParamInfo<BadPolicyCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nvmeadapt::engine
