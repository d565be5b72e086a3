// SPDX-License-Identifier: Apache-2.0
// The closed loop with fakes: SetPolicy (validated, persisted, where a new default reaches), overrides, and
// the one policy applier behind SetPolicy and the config reload (issue 19): whichever path changes a
// queue's policy, the engine, the trace, the BPF control and the metrics all hear of it alike.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

// The queue's nvme_adapt_queue_poll_threshold_seconds line of a scrape ("" when there is none).
std::string ThresholdLine(const std::string& scrape, uint32_t qid) {
  const std::string family = "nvme_adapt_queue_poll_threshold_seconds{";
  const std::string queue = "queue=\"" + std::to_string(qid) + "\"";
  for (size_t at = scrape.find(family); at != std::string::npos; at = scrape.find(family, at + 1)) {
    const std::string line = scrape.substr(at, scrape.find('\n', at) - at);
    if (line.find(queue) != std::string::npos) return line;
  }
  return "";
}

using AgentPolicy = AgentLoop;

TEST_F(AgentLoop, SetPolicyIsValidatedPersistedAndWinsOnRestart) {
  Start();
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_pace_slack_ns(-1);
  auto bad = agent_->api().SetPolicy(request);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("policy.pace_slack_ns"), std::string::npos);
  request.set_controller("nvme9");
  request.mutable_policy()->set_pace_slack_ns(7);
  auto unknown = agent_->api().SetPolicy(request);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  request.set_controller("uvnvme:7:0");
  request.set_queue(9);
  EXPECT_EQ(agent_->api().SetPolicy(request).error().code, ErrorCode::kNotFound);
  request.set_queue(2);
  auto ok = agent_->api().SetPolicy(request);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(collector_.controls[UvnvmeQueue(2).key.ToString()].pace_slack, 7);
  EXPECT_EQ(collector_.controls[UvnvmeQueue(1).key.ToString()].pace_slack, 20000);
  agent_.reset();
  Start();
  auto policy = agent_->api().GetPolicy();
  ASSERT_EQ(policy.policy().queues_size(), 1);
  EXPECT_EQ(policy.policy().queues(0).policy().pace_slack_ns(), 7);
}

// The global mode is the mode of every controller that has none of its own, present or discovered later
// (issue 32: a global mode once reached only controllers discovered after it was set).
TEST_F(AgentPolicy, global_mode_reaches_existing_controllers_from_the_api) {
  Start();
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  ASSERT_TRUE(agent_->api().SetPolicy(request));
  EXPECT_EQ(Queue(1).controller_mode(), v1::CONTROLLER_MODE_POLL);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  discovery_.queues.push_back(UvnvmeQueue(1, "uvnvme:7:1"));
  now_ += 1'000'000'000'000;
  agent_->RunOnce();
  v1::ListQueuesRequest list;
  list.set_controller("uvnvme:7:1");
  auto queues = agent_->api().ListQueues(list);
  ASSERT_TRUE(queues);
  ASSERT_EQ(queues->queues_size(), 1);
  EXPECT_EQ(queues->queues(0).controller_mode(), v1::CONTROLLER_MODE_POLL);
  // A controller's own mode wins over the global one.
  v1::SetPolicyRequest controller;
  controller.set_controller("uvnvme:7:0");
  controller.mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  ASSERT_TRUE(agent_->api().SetPolicy(controller));
  request.mutable_policy()->set_mode(v1::CONTROLLER_MODE_INTERRUPT);
  ASSERT_TRUE(agent_->api().SetPolicy(request));
  EXPECT_EQ(Queue(1).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
}

// `policy set --mode off` is the node's off switch: every queue, own mode or not, back to its safe mode.
TEST_F(AgentPolicy, global_mode_reaches_existing_controllers_off_is_the_node_switch) {
  Start();
  v1::SetPolicyRequest controller;
  controller.set_controller("uvnvme:7:0");
  controller.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  ASSERT_TRUE(agent_->api().SetPolicy(controller));
  ASSERT_EQ(Queue(2).mode(), v1::REAP_MODE_POLL);
  v1::SetPolicyRequest off;
  off.mutable_policy()->set_mode(v1::CONTROLLER_MODE_OFF);
  auto set = agent_->api().SetPolicy(off);
  ASSERT_TRUE(set) << set.error().message;
  for (uint32_t qid : {1u, 2u}) {
    EXPECT_EQ(Queue(qid).controller_mode(), v1::CONTROLLER_MODE_OFF) << qid;
    EXPECT_EQ(Queue(qid).mode(), v1::REAP_MODE_INTERRUPT) << qid;
  }
  ASSERT_EQ(set->policy().controllers_size(), 1);
  EXPECT_FALSE(set->policy().controllers(0).policy().has_mode());
}

TEST_F(AgentPolicy, global_mode_reaches_existing_controllers_from_the_config) {
  Start();
  ASSERT_EQ(Queue(1).controller_mode(), v1::CONTROLLER_MODE_ADAPTIVE);
  v1::PolicySet reloaded = policies_;
  reloaded.mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  auto outcome = agent_->ReloadConfigPolicies(reloaded);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_TRUE(outcome->policy_applied) << outcome->why_not;
  EXPECT_EQ(Queue(1).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
  EXPECT_EQ(Queue(2).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
}

TEST_F(AgentLoop, OverridesAreCheckedAndExpire) {
  discovery_.queues.push_back(UvnvmeQueue(3));
  discovery_.queues.back().eligible = false;
  discovery_.queues.back().ineligible_reason = "admin queue";
  Start();
  v1::SetQueueModeRequest request;
  request.mutable_queue()->set_controller("uvnvme:7:0");
  request.mutable_queue()->set_queue(9);
  request.set_mode(v1::REAP_MODE_POLL);
  EXPECT_EQ(agent_->api().SetQueueMode(request).error().code, ErrorCode::kNotFound);
  request.mutable_queue()->set_queue(3);
  auto ineligible = agent_->api().SetQueueMode(request);
  EXPECT_EQ(ineligible.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(ineligible.error().message.find("admin queue"), std::string::npos);
  request.mutable_queue()->set_queue(1);
  request.set_duration_ns(5'000'000'000);
  auto set = agent_->api().SetQueueMode(request);
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->queue().mode(), v1::REAP_MODE_POLL);
  EXPECT_EQ(set->queue().state(), v1::QUEUE_STATE_FORCED);
  EXPECT_NE(set->queue().override().expires_unix_ns(), 0);
  now_ += 5'000'000'000;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(1).last_decision().reason(), "override_expired");
}

TEST_F(AgentPolicy, AConfigReloadMovesThePollThresholdGaugeAsSetPolicyDoes) {
  policies_.mutable_policy()->set_poll_threshold_ns(10'000);
  Start();
  EXPECT_NE(ThresholdLine(metrics_.Render(), 1).find(" 1e-05"), std::string::npos) << metrics_.Render();

  v1::PolicySet reloaded = policies_;
  reloaded.mutable_policy()->set_poll_threshold_ns(30'000);
  auto outcome = agent_->ReloadConfigPolicies(reloaded);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_TRUE(outcome->policy_applied) << outcome->why_not;
  const std::string after_reload = ThresholdLine(metrics_.Render(), 1);
  EXPECT_NE(after_reload.find(" 3e-05"), std::string::npos) << "the gauge after a reload: " << after_reload;

  v1::SetPolicyRequest request;
  request.mutable_policy()->set_poll_threshold_ns(20'000);
  ASSERT_TRUE(agent_->api().SetPolicy(request));
  const std::string after_set = ThresholdLine(metrics_.Render(), 1);
  EXPECT_NE(after_set.find(" 2e-05"), std::string::npos) << "the gauge after SetPolicy: " << after_set;
}


}  // namespace
}  // namespace nvmeadapt::daemon::testing
