// SPDX-License-Identifier: Apache-2.0
// Node selectors in the daemon (issue 46): the node's labels decide which pool entry reaches its queues, and a
// reload that reads new labels moves them, under the file's policy and under one set over the API alike.
#include <gtest/gtest.h>

#include <string>

#include "agent/config/config_file.h"
#include "agent/daemon/config_watch.h"
#include "common/files.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

using NodeSelectorLoop = AgentLoop;

v1::SelectorPolicy Pool(const std::string& labels, int64_t pace_slack_ns) {
  v1::SelectorPolicy entry;
  entry.set_name("pool " + labels);
  entry.mutable_match()->set_node_labels(labels);
  entry.mutable_policy()->set_pace_slack_ns(pace_slack_ns);
  return entry;
}

TEST_F(NodeSelectorLoop, node_selector_a_reload_with_new_labels_moves_the_queues_under_the_file_and_the_api) {
  policies_.mutable_policy()->set_pace_slack_ns(30'000);
  *policies_.add_selectors() = Pool("pool=fast", 1'000);
  *policies_.add_selectors() = Pool("pool=slow", 2'000);
  node_identity_ = {"db-1", "6.1.0", "pool=fast"};
  Start();
  const std::string q1 = UvnvmeQueue(1).key.ToString();
  EXPECT_EQ(collector_.controls[q1].pace_slack, 1'000);
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_CONFIG_FILE);

  auto reload = agent_->ReloadConfigPolicies(policies_, engine::NodeIdentity{"db-1", "6.1.0", "pool=slow"});
  ASSERT_TRUE(reload);
  EXPECT_TRUE(reload->policy_applied);
  EXPECT_EQ(collector_.controls[q1].pace_slack, 2'000);
  reload = agent_->ReloadConfigPolicies(policies_, engine::NodeIdentity{"db-1", "6.1.0", ""});
  ASSERT_TRUE(reload);
  EXPECT_EQ(collector_.controls[q1].pace_slack, 30'000) << "no labels: no pool entry";

  // A policy set over the API stays in force over a reload, and its node selectors see the new labels.
  v1::SetPolicyRequest set;  // the global level; the file's pool entries stay in the API's book
  set.mutable_policy()->set_pace_slack_ns(40'000);
  ASSERT_TRUE(agent_->api().SetPolicy(set));
  EXPECT_EQ(collector_.controls[q1].pace_slack, 40'000);
  reload = agent_->ReloadConfigPolicies(policies_, engine::NodeIdentity{"db-1", "6.1.0", "pool=fast"});
  ASSERT_TRUE(reload);
  EXPECT_FALSE(reload->policy_applied);
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_API);
  EXPECT_EQ(collector_.controls[q1].pace_slack, 1'000);
}

// The reload reads the labels file the config names: a relabelled pod's file moves its queues; a file that is
// no labels file refuses the reload, naming its line, and the running policy stays.
TEST_F(NodeSelectorLoop, node_selector_a_reload_reads_the_labels_file_and_refuses_a_bad_one) {
  policies_.mutable_policy()->set_pace_slack_ns(30'000);
  *policies_.add_selectors() = Pool("pool=fast", 1'000);
  Start();
  const std::string q1 = UvnvmeQueue(1).key.ToString();
  EXPECT_EQ(collector_.controls[q1].pace_slack, 30'000);
  const std::string labels = state_dir_ + ".labels";
  ConfigReloader reloader("config.json", [&] {
    return config::ParseConfigJson(R"({"policy": {"pace_slack_ns": 30000}, "node_labels_file": ")" + labels +
                                   R"(", "selectors": [{"name": "pool pool=fast", "match": {"node_labels": "pool=fast"},
                                   "policy": {"pace_slack_ns": 1000}}]})");
  }, *agent_, &metrics_);
  ASSERT_TRUE(WriteFileAtomically(labels, "pool=\"fast\"\n"));
  ASSERT_TRUE(reloader.Reload("test"));
  EXPECT_EQ(collector_.controls[q1].pace_slack, 1'000);
  ASSERT_TRUE(WriteFileAtomically(labels, "pool=\"slow\"\npool=fast\n"));
  auto refused = reloader.Reload("test");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(labels + ":2:"), std::string::npos) << refused.error().message;
  EXPECT_EQ(collector_.controls[q1].pace_slack, 1'000) << "a refused reload changed the policy";
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
