// SPDX-License-Identifier: Apache-2.0
// The config's `node` section (agent/config/node_config.h): defaults, values laid over them, durations, and
// bad values refused with the field named, directly and through the config file's parser.
#include <gtest/gtest.h>

#include "agent/config/config_file.h"
#include "agent/config/node_config.h"

namespace nvmeadapt::config {
namespace {

TEST(NodeConfig, AnEmptySectionIsTheDefaultsWithTheLayerOn) {
  auto node = NodeLayerFromConfig(v1::NodeConfig());
  ASSERT_TRUE(node) << node.error().message;
  engine::NodeSettings expected;
  expected.enabled = true;  // which queues it decides is each queue's policy (node_layer)
  EXPECT_EQ(node->settings, expected);
  EXPECT_EQ(node->facts_interval, 1'000'000'000);
}

TEST(NodeConfig, FieldsAreLaidOverTheDefaults) {
  auto config = ParseConfigJson(R"({"node": {"budgetCores": 2, "minHeadroom": 0.3, "staggerGapNs": "50ms",
                                              "factsIntervalNs": "200ms"}})");
  ASSERT_TRUE(config) << config.error().message;
  auto node = NodeLayerFromConfig(config->node());
  ASSERT_TRUE(node) << node.error().message;
  EXPECT_DOUBLE_EQ(node->settings.budget_cores, 2);
  EXPECT_DOUBLE_EQ(node->settings.min_headroom, 0.3);
  EXPECT_DOUBLE_EQ(node->settings.stop_headroom, engine::NodeSettings{}.stop_headroom);
  EXPECT_EQ(node->settings.stagger_gap, 50'000'000);
  EXPECT_EQ(node->facts_interval, 200'000'000);
  // What GetStatus shows is what is in force, every default filled in.
  const v1::NodeConfig shown = NodeLayerToProto(*node);
  EXPECT_DOUBLE_EQ(shown.budget_cores(), 2);
  EXPECT_DOUBLE_EQ(shown.pressure_some_limit(), 10);
  EXPECT_DOUBLE_EQ(shown.pressure_idle_share(), 0.5);
  EXPECT_DOUBLE_EQ(shown.pressure_some_rise(), 20);
  EXPECT_EQ(shown.facts_max_age_ns(), 5'000'000'000);
}

struct Bad {
  const char* json;
  const char* error;
};

class NodeConfigRefuses : public ::testing::TestWithParam<Bad> {};

TEST_P(NodeConfigRefuses, WithTheFieldNamed) {
  auto config = ParseConfigJson(GetParam().json);
  ASSERT_FALSE(config) << GetParam().json;
  EXPECT_NE(config.error().message.find(GetParam().error), std::string::npos) << config.error().message;
  EXPECT_EQ(config.error().message.rfind("config: ", 0), 0u) << config.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Values, NodeConfigRefuses,
    ::testing::Values(Bad{R"({"node": {"minHeadroom": 1.5}})", "node.min_headroom must be within"},
                      Bad{R"({"node": {"budgetShare": -0.1}})", "node.budget_share must be within"},
                      Bad{R"({"node": {"pressureSomeLimit": 101}})", "node.pressure_some_limit must be within"},
                      Bad{R"({"node": {"stopHeadroom": 0.5}})", "node.stop_headroom must not exceed"},
                      Bad{R"({"node": {"pressureIdleShare": 1.2}})", "node.pressure_idle_share must be within"},
                      Bad{R"({"node": {"pressureFullRise": 0}})", "node.pressure_full_rise must be positive"},
                      // The absolute stop levels are gone: a config that still sets one says so, not silently.
                      Bad{R"({"node": {"pressureSomeStop": 25}})", "pressureSomeStop"},
                      Bad{R"({"node": {"staggerGapNs": -1}})", "node.stagger_gap is negative"},
                      Bad{R"({"node": {"factsIntervalNs": "10ms"}})", "node.facts_interval_ns: must be in"},
                      Bad{R"({"node": {"factsIntervalNs": "2s", "factsMaxAgeNs": "1s"}})",
                          "node.facts_max_age_ns: must be at least node.facts_interval_ns"},
                      Bad{R"({"node": {"budget": 2}})", "budget"},
                      Bad{R"({"node": {"staggerGapNs": "soon"}})", "node.staggerGapNs: duration 'soon': expected a number"}));

}  // namespace
}  // namespace nvmeadapt::config
