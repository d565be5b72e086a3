// SPDX-License-Identifier: Apache-2.0
// Issue 45, item 10: SetPolicy is all or nothing, within its deadline. A policy that fails validation or a lever that
// refuses one queue its new mode leaves the policy in force, policy.json and every queue's mode as they were, and says
// so. A state disk that does not answer gets each call its answer by its deadline, so that an admin's retries cannot
// pile up on the API's threads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/state/state_store.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class SetPolicyAtomic : public AgentLoop {
 protected:
  void TearDown() override {
    levers_.hang.Open();  // a failed assertion must not leave a worker waiting forever
    if (fifo_ >= 0) close(fifo_);
    if (loop_.joinable()) {
      agent_->Stop();
      loop_.join();
    }
  }
  void RunLoop() {
    loop_ = std::thread([this] { agent_->Run(); });
  }
  std::string NoteTemp() const { return state_dir_ + "/policy.note.json.tmp." + std::to_string(getpid()); }
  std::string Read(const std::string& name) const {
    std::ifstream in(state_dir_ + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return in ? text.str() : "(none)";
  }
  static v1::SetPolicyRequest Global(v1::ControllerMode mode) {
    v1::SetPolicyRequest request;
    request.mutable_policy()->set_mode(mode);
    request.set_caller("test");
    return request;
  }
  static v1::SetPolicyRequest Slack(int64_t ns) {
    v1::SetPolicyRequest request;
    request.mutable_policy()->set_pace_slack_ns(ns);
    request.set_caller("test");
    return request;
  }
  v1::GetPolicyResponse Policy() { return agent_->api().GetPolicy(); }
  void WaitUntil(const std::function<bool()>& done, const std::string& what) {
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (!done()) {
      ASSERT_LT(Clock::now(), until) << "waited 5 s for " << what;
      std::this_thread::sleep_for(milliseconds(5));
    }
  }

  std::thread loop_;
  int fifo_ = -1;
};

TEST_F(SetPolicyAtomic, APolicyThatFailsValidationChangesNothing) {
  Start();
  RunLoop();
  ASSERT_TRUE(agent_->api().SetPolicy(Slack(7)));
  const std::string policy_json = Read("policy.json"), note_json = Read("policy.note.json");
  const std::string before = Policy().SerializeAsString();
  v1::SetPolicyRequest bad = Slack(9);
  bad.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  bad.mutable_policy()->set_max_failures(0);  // no tries at all: refused, and with it the mode and slack
  auto refused = agent_->api().SetPolicy(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument) << refused.error().message;
  EXPECT_EQ(Policy().SerializeAsString(), before);
  EXPECT_EQ(Read("policy.json"), policy_json);
  EXPECT_EQ(Read("policy.note.json"), note_json);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(2).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_TRUE(levers_.log.empty());
}

TEST_F(SetPolicyAtomic, ALeverThatRefusesOneQueueTakesTheWholeChangeBack) {
  Start();
  RunLoop();
  ASSERT_TRUE(agent_->api().SetPolicy(Slack(7)));  // the policy before: set over the API, in policy.json
  const std::string policy_json = Read("policy.json"), note_json = Read("policy.note.json");
  const v1::GetPolicyResponse before = Policy();
  levers_.refuse_targets = {"uvnvme:7:0:q2"};
  auto refused = agent_->api().SetPolicy(Global(v1::CONTROLLER_MODE_POLL));
  ASSERT_FALSE(refused) << "queue 1 polls, queue 2 does not: reported as done";
  EXPECT_EQ(refused.error().code, ErrorCode::kRefused);
  EXPECT_NE(refused.error().message.find("queue uvnvme:7:0:q2: "), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("Feature Not Changeable"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("the policy before it is in force again"), std::string::npos)
      << refused.error().message;
  // None of it: the policy, its origin, policy.json and its note, and the queue that had switched.
  EXPECT_EQ(Policy().SerializeAsString(), before.SerializeAsString());
  EXPECT_EQ(Policy().effective_global().mode(), v1::CONTROLLER_MODE_ADAPTIVE);
  WaitUntil([&] { return Read("policy.json") == policy_json; }, "policy.json put back");
  EXPECT_EQ(Read("policy.note.json"), note_json);
  WaitUntil([&] { return levers_.Value("uvnvme:7:0:q1") == "interrupt"; }, "queue 1 switched back");
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(2).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(1).controller_mode(), v1::CONTROLLER_MODE_ADAPTIVE);
  // The same change with the lever willing is whole.
  levers_.refuse_targets.clear();
  auto ok = agent_->api().SetPolicy(Global(v1::CONTROLLER_MODE_POLL));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  EXPECT_EQ(Queue(2).mode(), v1::REAP_MODE_POLL);
  auto persisted = state::StateStore(state_dir_).LoadPolicy();
  ASSERT_TRUE(persisted && persisted->has_value());
  EXPECT_EQ((*persisted)->policy().mode(), v1::CONTROLLER_MODE_POLL);
}

// A queue whose device went away between two discoveries (a uvnvme process that exited, a controller removed) cannot
// switch: its lever says kNotFound. That is no refusal of the policy: the change holds for the queues that remain
// (the evaluation's global mode change after each of its runs failed this way while the last run's queue was listed).
TEST_F(SetPolicyAtomic, AQueueWhoseDeviceIsGoneDoesNotTakeTheChangeBack) {
  Start();
  RunLoop();
  levers_.refuse_targets = {"uvnvme:7:0:q2"};
  levers_.refuse_code = ErrorCode::kNotFound;
  auto set = agent_->api().SetPolicy(Global(v1::CONTROLLER_MODE_POLL));
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(Policy().effective_global().mode(), v1::CONTROLLER_MODE_POLL);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  EXPECT_EQ(levers_.Value("uvnvme:7:0:q1"), "poll");
  auto persisted = state::StateStore(state_dir_).LoadPolicy();
  ASSERT_TRUE(persisted && persisted->has_value());
  EXPECT_EQ((*persisted)->policy().mode(), v1::CONTROLLER_MODE_POLL);
}

// A switch still in its lever at the deadline (a controller reset, a fabrics reconnect) is no refusal: the change
// stands, answered in time, and the switch goes on; taking it back would disrupt the device twice.
TEST_F(SetPolicyAtomic, ASwitchStillInItsLeverAtTheDeadlineIsAnsweredInTimeAndGoesOn) {
  levers_.hang_controller = "uvnvme:7:0";  // the driver stops answering its control socket
  Start();
  RunLoop();
  const auto asked = Clock::now();
  auto answered = agent_->api().SetPolicy(Global(v1::CONTROLLER_MODE_POLL), asked + milliseconds(300));
  const auto took = Clock::now() - asked;
  ASSERT_TRUE(answered) << answered.error().message;
  EXPECT_GE(took, milliseconds(250)) << "it waited for the switches until its deadline";
  EXPECT_LT(took, milliseconds(1500)) << "the deadline was 300 ms";
  EXPECT_EQ(Policy().effective_global().mode(), v1::CONTROLLER_MODE_POLL);
  auto persisted = state::StateStore(state_dir_).LoadPolicy();
  ASSERT_TRUE(persisted && persisted->has_value());
  EXPECT_EQ((*persisted)->policy().mode(), v1::CONTROLLER_MODE_POLL);
  levers_.hang.Open();
  WaitUntil([&] { return Queue(1).mode() == v1::REAP_MODE_POLL && Queue(2).mode() == v1::REAP_MODE_POLL; },
            "both queues polling once the driver answers");
}

TEST_F(SetPolicyAtomic, AStuckStateDiskAnswersEveryCallByItsDeadline) {
  Start();
  RunLoop();
  const int64_t before = Policy().effective_global().pace_slack_ns();
  ASSERT_EQ(mkfifo(NoteTemp().c_str(), 0600), 0) << NoteTemp();  // the note's write waits in open()
  for (int call = 0; call < 4; ++call) {                         // the first call and an admin's retries
    const auto asked = Clock::now();
    auto stuck = agent_->api().SetPolicy(Slack(100 + call), asked + milliseconds(200));
    const auto took = Clock::now() - asked;
    ASSERT_FALSE(stuck) << "call " << call;
    EXPECT_EQ(stuck.error().code, ErrorCode::kUnavailable);
    EXPECT_NE(stuck.error().message.find("nothing changed"), std::string::npos) << stuck.error().message;
    EXPECT_LT(took, milliseconds(1200)) << "call " << call << ": the deadline was 200 ms";
  }
  EXPECT_EQ(Policy().effective_global().pace_slack_ns(), before);
  // The disk answers (the write fails: fsync of a FIFO); the calls given up write nothing.
  fifo_ = open(NoteTemp().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fifo_, 0);
  WaitUntil(
      [&] {
        struct stat st {};
        return stat((state_dir_ + "/policy.json").c_str(), &st) != 0;
      },
      "nothing written");
  unlink(NoteTemp().c_str());
  auto ok = agent_->api().SetPolicy(Slack(9));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(Policy().effective_global().pace_slack_ns(), 9);
  auto persisted = state::StateStore(state_dir_).LoadPolicy();
  ASSERT_TRUE(persisted && persisted->has_value());
  EXPECT_EQ((*persisted)->policy().pace_slack_ns(), 9) << "no retry given up was written after it";
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
