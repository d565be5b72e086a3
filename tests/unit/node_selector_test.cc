// SPDX-License-Identifier: Apache-2.0
// Node selectors (issue 46): a selector may match the node's hostname, kernel release and labels (from a file in
// the downward API's format), so that one config serves a fleet of several pools; two pools' entries of equal
// specificity do not clash; a labels file the agent cannot take is refused with its path and line.
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <string>

#include "agent/config/config_file.h"
#include "agent/config/node_identity.h"
#include "agent/config/policy_convert.h"
#include "agent/config/policy_layers.h"
#include "agent/engine/policy_selectors.h"
#include "common/files.h"

namespace nvmeadapt::config {
namespace {

engine::DeviceFacts OnNode(const engine::NodeIdentity& node) {
  return {.controller = "nvme0", .id = "nvme-00000000000000aa", .model = "SAMSUNG MZWLO3T8HCLS-00A07",
          .transport = "pcie", .layer = "local", .hostname = node.hostname, .kernel_release = node.kernel_release,
          .node_labels = node.labels};
}

engine::Selector Parsed(const std::string& json_match) {
  auto config = ParseConfigJson(R"({"selectors": [{"name": "s", "match": )" + json_match + "}]}");
  EXPECT_TRUE(config) << config.error().message;
  if (!config) return {};
  auto selector = SelectorOf(config->selectors(0).match(), "match");
  EXPECT_TRUE(selector) << selector.error().message;
  return selector ? *selector : engine::Selector{};
}

TEST(NodeSelector, node_selector_labels_file_in_the_downward_api_format_sorted_and_bad_lines_named) {
  auto labels = ParseLabelsFile("zone=\"eu-west-1a\"\npool=\"fast\"\napp.kubernetes.io/name=\"nvme-adapt\"\n"
                                "quoted=\"a\\\"b\"\n",
                                "/etc/labels");
  ASSERT_TRUE(labels) << labels.error().message;
  EXPECT_EQ(*labels, "app.kubernetes.io/name=nvme-adapt\npool=fast\nquoted=a\"b\nzone=eu-west-1a");
  EXPECT_EQ(*ParseLabelsFile("", "/etc/labels"), "");
  for (const auto& [text, why] : std::initializer_list<std::pair<std::string, std::string>>{
           {"pool=\"fast\"\npool=\"slow\"\n", "/etc/labels:2: pool is given twice"},
           {"pool=fast\n", "/etc/labels:1: the value of pool is not one quoted string"},
           {"\n=\"x\"\n", "/etc/labels:2: not a label"},
           {"pool=\"a,b\"\n", "/etc/labels:1: the value of pool holds a character no label value has"},
           {"pool=\"a\\nb\"\n", "/etc/labels:1: the value of pool is not one quoted string"}}) {
    auto bad = ParseLabelsFile(text, "/etc/labels");
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(bad.error().message.find(why), std::string::npos) << bad.error().message;
  }
}

TEST(NodeSelector, node_selector_reads_uname_and_the_labels_file_and_names_a_missing_one) {
  const std::string path = ::testing::TempDir() + "/node_labels_" + std::to_string(getpid());
  ASSERT_TRUE(WriteFileAtomically(path, "pool=\"fast\"\n"));
  auto node = ReadNodeIdentity(path);
  ASSERT_TRUE(node) << node.error().message;
  struct utsname name {};
  ASSERT_EQ(uname(&name), 0);
  EXPECT_EQ(node->hostname, name.nodename);
  EXPECT_EQ(node->kernel_release, name.release);
  EXPECT_EQ(node->labels, "pool=fast");
  EXPECT_EQ(ReadNodeIdentity("")->labels, "");
  auto missing = ReadNodeIdentity(path + ".gone");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find(path + ".gone"), std::string::npos) << missing.error().message;
  unlink(path.c_str());
}

TEST(NodeSelector, node_selector_matches_hostname_kernel_and_every_label_given) {
  const engine::NodeIdentity fast{"db-17", "6.1.0-28-amd64", "pool=fast\nzone=eu-west-1a"};
  const engine::NodeIdentity bare{"web-3", "6.12.9-amd64", ""};
  EXPECT_TRUE(engine::Matches(Parsed(R"({"hostname": "db-*"})"), OnNode(fast), 1));
  EXPECT_FALSE(engine::Matches(Parsed(R"({"hostname": "db-*"})"), OnNode(bare), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"kernelRelease": "6.1.*"})"), OnNode(fast), 1));
  EXPECT_FALSE(engine::Matches(Parsed(R"({"kernel_release": "6.1.*"})"), OnNode(bare), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"nodeLabels": "pool=fast"})"), OnNode(fast), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"nodeLabels": "zone=eu-*,pool=fast"})"), OnNode(fast), 1));
  EXPECT_FALSE(engine::Matches(Parsed(R"({"nodeLabels": "pool=fast,rack=r1"})"), OnNode(fast), 1))
      << "a label the node lacks";
  EXPECT_FALSE(engine::Matches(Parsed(R"({"nodeLabels": "pool=slow"})"), OnNode(fast), 1));
  EXPECT_FALSE(engine::Matches(Parsed(R"({"nodeLabels": "pool=*"})"), OnNode(bare), 1)) << "no labels, no match";
  EXPECT_FALSE(engine::Matches(Parsed(R"({"nodeLabels": "zone=eu"})"), OnNode(fast), 1)) << "a prefix is no value";
}

// One ConfigMap for two pools: their entries are as specific as each other and still load, since no node is in
// both; the same pool twice is refused as before.
TEST(NodeSelector, node_selector_entries_of_two_pools_load_and_each_node_takes_its_own) {
  auto config = ParseConfigJson(R"({"selectors": [
      {"name": "fast-pool", "match": {"nodeLabels": "pool=fast"}, "policy": {"pace_slack_ns": 1000}},
      {"name": "slow-pool", "match": {"nodeLabels": "pool=slow,zone=eu-*"}, "policy": {"pace_slack_ns": 2000}}]})");
  ASSERT_TRUE(config) << config.error().message;
  const v1::PolicySet set = PoliciesOf(*config);
  const engine::NodeIdentity fast{"a", "6.1", "pool=fast"}, slow{"b", "6.1", "pool=slow\nzone=eu-1"};
  EXPECT_EQ(EffectivePolicy(set, OnNode(fast), 1)->pace_slack, 1000);
  EXPECT_EQ(EffectivePolicy(set, OnNode(slow), 1)->pace_slack, 2000);

  auto clash = ParseConfigJson(R"({"selectors": [
      {"name": "one", "match": {"nodeLabels": "pool=fast"}, "policy": {"pace_slack_ns": 1000}},
      {"name": "two", "match": {"nodeLabels": "pool=f*"}, "policy": {"pace_slack_ns": 2000}}]})");
  ASSERT_FALSE(clash);
  EXPECT_NE(clash.error().message.find("as specific as each other"), std::string::npos) << clash.error().message;
  auto bad = ParseConfigJson(R"({"selectors": [{"name": "x", "match": {"nodeLabels": "pool"}, "policy": {}}]})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("node_labels"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("key=value"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace nvmeadapt::config
