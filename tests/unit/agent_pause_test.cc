// SPDX-License-Identifier: Apache-2.0
// The node's pause (issue 46): every queue to interrupt (or off) at once, persisted, holding over config reloads,
// SetPolicy and restarts until resumed or its time ends, erasing no policy entry and no override.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "common/files.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

using AgentPause = AgentLoop;

v1::SetPauseRequest Pause(int64_t duration_ns = 0, v1::ControllerMode mode = v1::CONTROLLER_MODE_INTERRUPT) {
  v1::SetPauseRequest request;
  request.set_mode(mode);
  request.set_duration_ns(duration_ns);
  request.set_caller("test");
  return request;
}

v1::SetPauseRequest Resume() {
  v1::SetPauseRequest request;
  request.set_resume(true);
  return request;
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

TEST_F(AgentPause, pause_survives_reload_set_policy_and_restart_until_resumed) {
  policies_.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  Start();
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  auto paused = agent_->api().SetPause(Pause());
  ASSERT_TRUE(paused) << paused.error().message;
  EXPECT_EQ(paused->queues_moved(), 2u);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(2).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(agent_->api().GetStatus().pause().set_by(), "test");
  EXPECT_NE(metrics_.Render().find("nvme_adapt_paused{mode=\"interrupt\"} 1"), std::string::npos);

  // A reload of the file, and a policy set over the API, change the policy, not the pause.
  policies_.mutable_policy()->set_pace_slack_ns(30'000);
  auto reload = agent_->ReloadConfigPolicies(policies_);
  ASSERT_TRUE(reload);
  EXPECT_TRUE(reload->policy_applied);
  EXPECT_EQ(collector_.controls[UvnvmeQueue(1).key.ToString()].pace_slack, 30'000) << "the reload was applied";
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT) << "a reload undid the pause";
  v1::SetPolicyRequest set;
  set.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  set.mutable_policy()->set_pace_slack_ns(40'000);
  ASSERT_TRUE(agent_->api().SetPolicy(set));
  EXPECT_EQ(Queue(2).mode(), v1::REAP_MODE_INTERRUPT) << "a SetPolicy undid the pause";
  EXPECT_EQ(agent_->api().GetPolicy().policy().policy().mode(), v1::CONTROLLER_MODE_POLL) << "the policy is kept";

  // A restart (after a crash or an upgrade) comes back paused, before any queue could poll.
  agent_.reset();
  levers_.log.clear();
  Start();
  EXPECT_TRUE(agent_->api().GetStatus().has_pause());
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  for (const std::string& line : levers_.log) EXPECT_EQ(line.find("=poll"), std::string::npos) << line;

  auto resumed = agent_->api().SetPause(Resume());
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_FALSE(resumed->has_pause());
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL) << "the policy set during the pause is in force";
  EXPECT_FALSE(FileExists(state_dir_ + "/pause.json"));
  EXPECT_NE(metrics_.Render().find("nvme_adapt_paused{mode=\"none\"} 0"), std::string::npos);
  agent_.reset();
  Start();
  EXPECT_FALSE(agent_->api().GetStatus().has_pause());
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
}

TEST_F(AgentPause, a_timed_pause_ends_by_itself_and_one_that_ended_while_stopped_is_dropped) {
  policies_.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  Start();
  ASSERT_TRUE(agent_->api().SetPause(Pause(60'000'000'000)));
  EXPECT_NE(metrics_.Render().find("nvme_adapt_pause_end_timestamp_seconds"), std::string::npos);
  now_ += 30'000'000'000;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT) << "ended early";
  now_ += 30'000'000'000;
  agent_->RunOnce();
  EXPECT_FALSE(agent_->api().GetStatus().has_pause());
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);

  ASSERT_TRUE(agent_->api().SetPause(Pause(10'000'000'000)));
  agent_.reset();
  now_ += 20'000'000'000;  // the agent was down when the pause ended
  Start();
  EXPECT_FALSE(agent_->api().GetStatus().has_pause());
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  EXPECT_FALSE(FileExists(state_dir_ + "/pause.json"));
}

TEST_F(AgentPause, pause_holds_an_override_and_gives_it_back_and_off_leaves_queues_alone) {
  Start();
  v1::SetQueueModeRequest override_request;
  override_request.mutable_queue()->set_controller("uvnvme:7:0");
  override_request.mutable_queue()->set_queue(1);
  override_request.set_mode(v1::REAP_MODE_POLL);
  ASSERT_TRUE(agent_->api().SetQueueMode(override_request));
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  ASSERT_TRUE(agent_->api().SetPause(Pause()));
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT) << "an override outranked the pause";
  auto refused = agent_->api().SetQueueMode(override_request);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("resume"), std::string::npos) << refused.error().message;
  ASSERT_TRUE(agent_->api().SetPause(Resume()));
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL) << "the override did not come back";
  EXPECT_EQ(Queue(1).override().mode(), v1::REAP_MODE_POLL);

  // Off: each queue to its safe value, observed and never switched.
  ASSERT_TRUE(agent_->api().SetPause(Pause(0, v1::CONTROLLER_MODE_OFF)));
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(2).state(), v1::QUEUE_STATE_OBSERVING);
  EXPECT_EQ(agent_->api().GetStatus().queues_managed(), 0u);
}

TEST_F(AgentPause, a_pause_that_cannot_be_persisted_changes_nothing_and_an_unreadable_one_pauses) {
  policies_.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  Start();
  // pause.json cannot be replaced by a file: a directory (not empty) stands there.
  ASSERT_EQ(mkdir((state_dir_ + "/pause.json").c_str(), 0700), 0);
  ASSERT_TRUE(WriteFileAtomically(state_dir_ + "/pause.json/x", "x"));
  auto refused = agent_->api().SetPause(Pause());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not paused"), std::string::npos) << refused.error().message;
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL) << "a pause not persisted was applied";
  EXPECT_FALSE(agent_->api().GetStatus().has_pause());
  ASSERT_EQ(system(("rm -rf '" + state_dir_ + "/pause.json'").c_str()), 0);

  // A pause.json the agent cannot read may be an operator's pause: the agent starts paused and says why.
  agent_.reset();
  ASSERT_TRUE(WriteFileAtomically(state_dir_ + "/pause.json", "{not json"));
  Start();
  const v1::GetStatusResponse status = agent_->api().GetStatus();
  EXPECT_TRUE(status.has_pause());
  ASSERT_GE(status.degraded_size(), 1);
  EXPECT_NE(status.degraded(0).find("pause.json"), std::string::npos) << status.degraded(0);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  ASSERT_TRUE(agent_->api().SetPause(Resume()));
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  const v1::GetStatusResponse resumed = agent_->api().GetStatus();
  for (const std::string& line : resumed.degraded()) EXPECT_EQ(line.find("pause"), std::string::npos) << line;
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
