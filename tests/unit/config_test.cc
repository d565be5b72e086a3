// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fstream>

#include "agent/config/config_file.h"
#include "agent/config/policy_convert.h"

namespace nvmeadapt::config {
namespace {

TEST(ConfigJson, AFullConfigParses) {
  auto config = ParseConfigJson(R"({
    "policy": {"windowCompletions": 4096, "pollThresholdNs": "12000", "mode": "CONTROLLER_MODE_ADAPTIVE"},
    "controllers": [{"controller": "nvme0", "policy": {"paceSlackNs": 5000, "mode": "CONTROLLER_MODE_SHADOW"}}],
    "queues": [{"controller": "nvme0", "queue": 3, "policy": {"maxPollWindows": 8}}],
    "stateDir": "/var/lib/nvme-adapt", "logLevel": "debug"})");
  ASSERT_TRUE(config) << config.error().message;
  auto q3 = EffectivePolicy(*config, "nvme0", 3);
  ASSERT_TRUE(q3);
  EXPECT_EQ(q3->window_completions, 4096u);
  EXPECT_EQ(q3->poll_threshold, 12000);
  EXPECT_EQ(q3->pace_slack, 5000);
  EXPECT_EQ(q3->max_poll_windows, 8u);
  EXPECT_EQ(q3->mode, engine::ControllerMode::kShadow);
  auto q1 = EffectivePolicy(*config, "nvme0", 1);
  EXPECT_EQ(q1->max_poll_windows, 64u);
  auto other = EffectivePolicy(*config, "nvme1", 1);
  EXPECT_EQ(other->mode, engine::ControllerMode::kAdaptive);
  EXPECT_EQ(other->pace_slack, 20000);
}

TEST(ConfigJson, SnakeCaseFieldNamesAreAcceptedToo) {
  auto config = ParseConfigJson(R"({"policy": {"window_completions": 16, "pace_slack_ns": 0}})");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->policy().window_completions(), 16u);
}

TEST(ConfigJson, AnEmptyObjectIsTheDefaults) {
  auto config = ParseConfigJson("{}");
  ASSERT_TRUE(config);
  auto p = EffectivePolicy(*config, "nvme0", 1);
  EXPECT_EQ(*p, engine::Policy{});
}

// One duration grammar (issues 32 and 46, common/duration.h): "10us" beside integer nanoseconds in every *Ns field,
// at any level, with the days the CLI takes ("0.0000001d" is 8.64 ms).
TEST(ConfigJson, DurationStringsBesideIntegerNanoseconds) {
  auto config = ParseConfigJson(R"({"policy": {"paceSlackNs": "10us", "pollThresholdNs": 12000, "paceCreditNs": "0.0000001d"},
      "controllers": [{"controller": "nvme0", "policy": {"pace_slack_ns": "1.5ms", "pollThresholdNs": "9000"}}]})");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->policy().pace_slack_ns(), 10'000);
  EXPECT_EQ(config->policy().poll_threshold_ns(), 12'000);
  EXPECT_EQ(config->policy().pace_credit_ns(), 8'640'000);
  EXPECT_EQ(config->controllers(0).policy().pace_slack_ns(), 1'500'000);
  EXPECT_EQ(config->controllers(0).policy().poll_threshold_ns(), 9'000);
  auto bad = ParseConfigJson(R"({"controllers": [{"controller": "nvme0", "policy": {"paceSlackNs": "10 parsecs"}}]})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("controllers[0].policy.paceSlackNs: duration '10 parsecs': each number needs a unit"),
            std::string::npos)
      << bad.error().message;
}

struct Refusal {
  const char* name;
  const char* json;
  const char* expected;  // must appear in the message
};

class ConfigRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(ConfigRefusal, OneLineNamingTheProblem) {
  auto config = ParseConfigJson(GetParam().json);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(config.error().message.find(GetParam().expected), std::string::npos) << config.error().message;
  EXPECT_EQ(config.error().message.find('\n'), std::string::npos) << config.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConfigRefusal,
    ::testing::Values(
        Refusal{"UnknownField", R"({"polcy": {}})", "polcy"},
        Refusal{"ZeroWindow", R"({"policy": {"windowCompletions": 0}})", "policy.window_completions"},
        Refusal{"NegativeSlack", R"({"policy": {"paceSlackNs": -1}})", "policy.pace_slack_ns"},
        Refusal{"UnknownModeName", R"({"policy": {"mode": "CONTROLLER_MODE_SOMETIMES"}})", "CONTROLLER_MODE_SOMETIMES"},
        Refusal{"UnknownModeNumber", R"({"policy": {"mode": 42}})", "policy.mode: unknown controller mode 42"},
        Refusal{"ControllerMaxFailures", R"({"controllers": [{"controller": "nvme0", "policy": {"maxFailures": 0}}]})",
                "controllers[0].policy.max_failures"},
        Refusal{"ControllerWithoutName", R"({"controllers": [{"policy": {}}]})", "controllers[0].controller"},
        Refusal{"QueueZero", R"({"queues": [{"controller": "nvme0", "queue": 0}]})", "queues[0].queue"},
        Refusal{"RelativeStateDir", R"({"stateDir": "relative/path"})", "state_dir"},
        Refusal{"UnknownLogLevel", R"({"logLevel": "loud"})", "log_level"},
        Refusal{"UnknownCpuScheduling", R"({"cpuScheduling": "fifo"})", "cpu_scheduling: must be batch or normal"},
        Refusal{"WindowBeyondTheBpfCount", R"({"policy": {"windowCompletions": 1048576}})",
                "policy.window_completions: must be in [1, 1048575]"},
        Refusal{"TruncatedJson", R"({"policy": )", "config:"},
        Refusal{"NotAnObject", R"([1, 2])", "config:"}));

TEST(ConfigFile, MissingFileNamesThePath) {
  auto config = LoadConfigFile("/nonexistent/nvme-adapt.json");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::kNotFound);
  EXPECT_NE(config.error().message.find("/nonexistent/nvme-adapt.json"), std::string::npos);
}

TEST(ConfigFile, ErrorsInsideTheFileNameThePathAndTheField) {
  const std::string path = ::testing::TempDir() + "/bad-config.json";
  std::ofstream(path) << R"({"policy": {"paceSlackNs": -5}})";
  auto config = LoadConfigFile(path);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find(path), std::string::npos);
  EXPECT_NE(config.error().message.find("policy.pace_slack_ns"), std::string::npos);
}

TEST(PolicyConvert, RoundTripsThroughProto) {
  engine::Policy p;
  p.window_completions = 100;
  p.pace_slack = 3;
  p.batch_pace_allowance = false;
  p.mode = engine::ControllerMode::kPoll;
  auto back = Overlay(engine::Policy{}, ToProto(p), "policy");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, p);
}

}  // namespace
}  // namespace nvmeadapt::config
