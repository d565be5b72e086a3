// SPDX-License-Identifier: Apache-2.0
// Issue 37: SetPolicy's durable writes (policy.json and its note, each fsynced) run on the caller's thread, not
// the loop's. A state dir whose write blocks (a FIFO where the note's temporary file goes: its open waits for
// a reader) holds up that call only: the loop answers status meanwhile, the change is neither applied nor
// acknowledged until it is durable, a write that fails leaves the policy in force as it was, and changes are
// persisted in the order they apply.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "agent/state/state_store.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

using Clock = std::chrono::steady_clock;

class AgentPolicyOffLoop : public AgentLoop {
 protected:
  void TearDown() override {
    if (fifo_ >= 0) close(fifo_);
    if (loop_.joinable()) {
      agent_->Stop();
      loop_.join();
    }
  }
  void RunLoop() { loop_ = std::thread([this] { agent_->Run(); }); }
  // Where WriteFileAtomically puts the note before its rename.
  std::string NoteTemp() const { return state_dir_ + "/policy.note.json.tmp." + std::to_string(getpid()); }
  static v1::SetPolicyRequest Slack(int64_t ns) {
    v1::SetPolicyRequest request;
    request.mutable_policy()->set_pace_slack_ns(ns);
    request.set_caller("test");
    return request;
  }
  int64_t SlackInForce() { return agent_->api().GetPolicy().effective_global().pace_slack_ns(); }

  std::thread loop_;
  int fifo_ = -1;
};

TEST_F(AgentPolicyOffLoop, AStuckStateDiskHoldsTheCallNotTheLoop) {
  Start();
  RunLoop();
  const int64_t before = SlackInForce();
  ASSERT_EQ(mkfifo(NoteTemp().c_str(), 0600), 0) << NoteTemp();
  auto stuck = std::async(std::launch::async, [this] { return agent_->api().SetPolicy(Slack(7)); });
  // The writer waits in open() on the FIFO: the loop still answers, and nothing is applied yet.
  EXPECT_EQ(stuck.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  const auto asked = Clock::now();
  const v1::GetStatusResponse status = agent_->api().GetStatus();
  EXPECT_LT(Clock::now() - asked, std::chrono::milliseconds(500));
  for (const std::string& degraded : status.degraded()) EXPECT_EQ(degraded.find("agent loop"), std::string::npos) << degraded;
  EXPECT_EQ(SlackInForce(), before) << "not applied before it is durable";
  // A reader lets the write through; fsync of a FIFO fails (EINVAL): the call fails naming the file, and the
  // policy in force stays as it was.
  fifo_ = open(NoteTemp().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fifo_, 0);
  ASSERT_EQ(stuck.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto failed = stuck.get();
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("policy.note.json.tmp"), std::string::npos) << failed.error().message;
  EXPECT_EQ(SlackInForce(), before);
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_CONFIG_FILE);

  // With the disk back, the change is durable when acknowledged, and in force.
  unlink(NoteTemp().c_str());
  auto ok = agent_->api().SetPolicy(Slack(9));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(SlackInForce(), 9);
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_API);
  auto persisted = state::StateStore(state_dir_).LoadPolicy();
  ASSERT_TRUE(persisted && persisted->has_value());
  EXPECT_EQ((*persisted)->policy().pace_slack_ns(), 9);
}

TEST_F(AgentPolicyOffLoop, ConcurrentChangesArePersistedInTheOrderTheyApply) {
  Start();
  RunLoop();
  std::vector<std::thread> callers;
  for (int i = 1; i <= 8; ++i) {
    callers.emplace_back([this, i] {
      v1::SetPolicyRequest request = Slack(i);
      if (i % 2 == 0) {  // a field of its own: a lost update would drop it
        request.mutable_policy()->clear_pace_slack_ns();
        request.mutable_policy()->set_max_failures(static_cast<uint32_t>(i));
      }
      EXPECT_TRUE(agent_->api().SetPolicy(request));
    });
  }
  for (auto& caller : callers) caller.join();
  const v1::GetPolicyResponse in_force = agent_->api().GetPolicy();
  auto persisted = state::StateStore(state_dir_).LoadPolicy();
  ASSERT_TRUE(persisted && persisted->has_value());
  EXPECT_EQ((*persisted)->SerializeAsString(), in_force.policy().SerializeAsString())
      << "policy.json holds the book in force: the last change applied was the last written";
  EXPECT_TRUE(in_force.policy().policy().has_pace_slack_ns());
  EXPECT_TRUE(in_force.policy().policy().has_max_failures());
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
