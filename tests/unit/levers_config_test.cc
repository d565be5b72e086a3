// SPDX-License-Identifier: Apache-2.0
// The `levers` section of the config: parsing from JSON, defaults, and refusals that name the field (which
// lever may serve which controller is the levers' to refuse: actuate_resolver_test.cc).
#include <gtest/gtest.h>

#include "agent/config/config_file.h"
#include "agent/config/levers_config.h"

namespace nvmeadapt::config {
namespace {

TEST(LeversConfig, AFullSectionParses) {
  auto config = ParseConfigJson(R"({"levers": {
      "kernelLever": "LEVER_KIND_GSIM", "uvnvmeLever": "LEVER_KIND_DRY_RUN",
      "controllers": [{"controller": "nvme1", "lever": "LEVER_KIND_POLL_QUEUES_RESET"},
                      {"controller": "uvnvme:4242:0", "lever": "LEVER_KIND_UVNVME_SOCKET"}],
      "adaptivePollPathTemplate": "{sysfs}/block/{ctrl}n1/queue/adaptive_poll",
      "adaptivePollOnValue": "on", "adaptivePollOffValue": "off",
      "gsimDelayUs": 50, "coalescingThreshold": 16, "coalescingTimeUs": 200, "pollQueues": 2,
      "adminTimeoutMs": 1000, "socketTimeoutMs": 500, "dryRun": true}})");
  ASSERT_TRUE(config) << config.error().message;
  auto settings = LeverSettingsFromConfig(*config);
  ASSERT_TRUE(settings) << settings.error().message;
  EXPECT_EQ(settings->kernel_lever, LeverKind::kGsim);
  EXPECT_EQ(settings->uvnvme_lever, LeverKind::kDryRun);
  ASSERT_EQ(settings->controllers.size(), 2u);
  EXPECT_EQ(settings->controllers[0].controller, "nvme1");
  EXPECT_EQ(settings->controllers[0].lever, LeverKind::kPollQueuesReset);
  EXPECT_EQ(settings->controllers[1].lever, LeverKind::kUvnvmeSocket);
  EXPECT_EQ(settings->adaptive_poll_path_template, "{sysfs}/block/{ctrl}n1/queue/adaptive_poll");
  EXPECT_EQ(settings->adaptive_poll_on_value, "on");
  EXPECT_EQ(settings->adaptive_poll_off_value, "off");
  EXPECT_EQ(settings->gsim_delay_us, 50u);
  EXPECT_EQ(settings->coalescing_threshold, 16u);
  EXPECT_EQ(settings->coalescing_time_us, 200u);
  EXPECT_EQ(settings->poll_queues, 2u);
  EXPECT_EQ(settings->admin_timeout_ms, 1000u);
  EXPECT_EQ(settings->socket_timeout_ms, 500u);
  EXPECT_TRUE(settings->dry_run);
}

TEST(LeversConfig, DefaultsWithoutASection) {
  auto config = ParseConfigJson("{}");
  ASSERT_TRUE(config);
  auto settings = LeverSettingsFromConfig(*config);
  ASSERT_TRUE(settings);
  const LeverSettings defaults;
  EXPECT_EQ(settings->kernel_lever, std::nullopt) << "AUTO";
  EXPECT_EQ(settings->uvnvme_lever, std::nullopt) << "AUTO";
  EXPECT_EQ(settings->adaptive_poll_path_template, defaults.adaptive_poll_path_template);
  EXPECT_EQ(settings->adaptive_poll_on_value, "1");
  EXPECT_EQ(settings->adaptive_poll_off_value, "0");
  EXPECT_EQ(settings->gsim_delay_us, defaults.gsim_delay_us);
  EXPECT_EQ(settings->coalescing_threshold, defaults.coalescing_threshold);
  EXPECT_EQ(settings->coalescing_time_us, defaults.coalescing_time_us);
  EXPECT_EQ(settings->poll_queues, defaults.poll_queues);
  EXPECT_FALSE(settings->dry_run);
}

TEST(LeversConfig, ZeroGsimDelayIsAllowed) {
  auto config = ParseConfigJson(R"({"levers": {"gsimDelayUs": 0}})");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(LeverSettingsFromConfig(*config)->gsim_delay_us, 0u);
}

// The reconnect lever's digest sources: a declaration per controller and nvme-cli's config path (issue 37).
TEST(LeversConfig, DigestDeclarationsAndNvmeCliConfig) {
  auto config = ParseConfigJson(R"({"levers": {"nvmeCliConfig": "/tmp/nvme.json", "controllers": [
      {"controller": "nvme1", "lever": "LEVER_KIND_TCP_RECONNECT", "hdrDigest": true, "dataDigest": false},
      {"controller": "nvme2", "lever": "LEVER_KIND_TCP_RECONNECT"}]}})");
  ASSERT_TRUE(config) << config.error().message;
  auto settings = LeverSettingsFromConfig(*config);
  ASSERT_TRUE(settings) << settings.error().message;
  EXPECT_EQ(settings->nvme_cli_config, "/tmp/nvme.json");
  ASSERT_EQ(settings->controllers.size(), 2u);
  EXPECT_EQ(settings->controllers[0].hdr_digest, true);
  EXPECT_EQ(settings->controllers[0].data_digest, false);
  EXPECT_FALSE(settings->controllers[1].hdr_digest.has_value()) << "undeclared: nvme-cli's config must say";
  EXPECT_EQ(LeverSettingsFromConfig(*ParseConfigJson("{}"))->nvme_cli_config, "/etc/nvme/config.json");
}

struct Refusal {
  const char* name;
  const char* json;
  const char* expected;
};

class LeversRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(LeversRefusal, NamesTheField) {
  auto config = ParseConfigJson(GetParam().json);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(config.error().message.find(GetParam().expected), std::string::npos) << config.error().message;
  EXPECT_EQ(config.error().message.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LeversRefusal,
    ::testing::Values(
        Refusal{"UnknownLeverName", R"({"levers": {"kernelLever": "LEVER_KIND_MAGIC"}})", "LEVER_KIND_MAGIC"},
        Refusal{"UnknownLeverNumber", R"({"levers": {"kernelLever": 42}})", "levers.kernel_lever: unknown lever 42"},
        Refusal{"BadControllerName", R"({"levers": {"controllers": [{"controller": "sda", "lever": 2}]}})",
                "levers.controllers[0].controller"},
        Refusal{"TwiceTheSameController",
                R"({"levers": {"controllers": [{"controller": "nvme0"}, {"controller": "nvme0"}]}})",
                "levers.controllers[1].controller"},
        Refusal{"TemplateWithoutController", R"({"levers": {"adaptivePollPathTemplate": "{sysfs}/x"}})",
                "levers.adaptive_poll_path_template: '{sysfs}/x' is not an attribute the adaptive-poll lever owns"},
        Refusal{"TemplateUnknownPlaceholder",
                R"({"levers": {"adaptivePollPathTemplate": "{sysfs}/{ctrl}/{queue}"}})", "{queue}"},
        // Finding 5 of issue 15: a template reaching out of the lever's attributes is a root write anywhere.
        Refusal{"TemplateWithDotDot",
                R"({"levers": {"adaptivePollPathTemplate": "{sysfs}/class/nvme/{ctrl}/../../../kernel/x"}})",
                "levers.adaptive_poll_path_template: must not contain '..'"},
        Refusal{"TemplateAbsoluteElsewhere",
                R"({"levers": {"adaptivePollPathTemplate": "/etc/{ctrl}/shadow"}})", "is not an attribute"},
        Refusal{"TemplateOtherSysfsFamily",
                R"({"levers": {"adaptivePollPathTemplate": "{sysfs}/kernel/mm/{ctrl}"}})", "is not an attribute"},
        Refusal{"TemplateNestedUnderController",
                R"({"levers": {"adaptivePollPathTemplate": "{sysfs}/class/nvme/{ctrl}/device/remove"}})",
                "is not an attribute"},
        Refusal{"RelativeTemplate", R"({"levers": {"adaptivePollPathTemplate": "class/{ctrl}"}})",
                "levers.adaptive_poll_path_template"},
        Refusal{"SameOnAndOff", R"({"levers": {"adaptivePollOnValue": "0"}})", "levers.adaptive_poll_off_value"},
        Refusal{"MultilineValue", R"({"levers": {"adaptivePollOnValue": "1\n2"}})", "levers.adaptive_poll_on_value"},
        Refusal{"GsimDelayTooLong", R"({"levers": {"gsimDelayUs": 501}})", "levers.gsim_delay_us"},
        Refusal{"ThresholdOne", R"({"levers": {"coalescingThreshold": 1}})", "levers.coalescing_threshold"},
        Refusal{"ThresholdTooHigh", R"({"levers": {"coalescingThreshold": 257}})", "levers.coalescing_threshold"},
        Refusal{"TimeNotAMultiple", R"({"levers": {"coalescingTimeUs": 150}})",
                "levers.coalescing_time_us: 150 is not a multiple of 100"},
        Refusal{"TimeZero", R"({"levers": {"coalescingTimeUs": 0}})", "levers.coalescing_time_us"},
        Refusal{"NoPollQueues", R"({"levers": {"pollQueues": 0}})", "levers.poll_queues"},
        Refusal{"AdminTimeoutZero", R"({"levers": {"adminTimeoutMs": 0}})", "levers.admin_timeout_ms"},
        Refusal{"SocketTimeoutTooLong", R"({"levers": {"socketTimeoutMs": 60001}})", "levers.socket_timeout_ms"},
        Refusal{"OneDigestDeclared",
                R"({"levers": {"controllers": [{"controller": "nvme1", "lever": "LEVER_KIND_TCP_RECONNECT", "hdrDigest": true}]}})",
                "levers.controllers[0].hdr_digest: hdr_digest and data_digest are declared together"},
        Refusal{"RelativeNvmeCliConfig", R"({"levers": {"nvmeCliConfig": "nvme.json"}})", "levers.nvme_cli_config"},
        Refusal{"UnknownField", R"({"levers": {"dryRunn": true}})", "dryRunn"}));

}  // namespace
}  // namespace nvmeadapt::config
