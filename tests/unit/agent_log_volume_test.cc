// SPDX-License-Identifier: Apache-2.0
// Issue 45, item 6: the log gets a queue's state changes and errors, rate-limited per queue with a count of
// what was held back; decisions that change nothing (shadow's "would poll") stay out of it, on the event
// stream and the counters only.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agent/daemon/queue_log.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

std::vector<std::string> LinesWith(const std::string& log, const std::string& part) {
  std::vector<std::string> found;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(part) != std::string::npos) found.push_back(line);
  }
  return found;
}

class AgentLogVolume : public AgentLoop {
 protected:
  std::map<uint32_t, uint32_t> generations_;  // each queue's, from 1
  // A fast interrupt window (a try begins), then a polling window no faster (it fails): two switches.
  void FailOneTry(uint32_t qid) {
    uint32_t& generation = generations_.try_emplace(qid, 1).first->second;
    Window(qid, ReapMode::kInterrupt, 5 * kUs, generation++);
    Window(qid, ReapMode::kPoll, 6 * kUs, generation++);
  }
};

TEST_F(AgentLogVolume, shadow_log_volume_a_shadow_decision_is_no_log_line) {
  policies_.mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  Start();
  auto watch = agent_->api().WatchEvents({}, 512);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 200; ++i) Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(LinesWith(log, "decision"), std::vector<std::string>()) << log;
  int shadow_events = 0;
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    if (event->kind() == v1::EVENT_KIND_DECISION && event->decision().shadow()) ++shadow_events;
  }
  EXPECT_EQ(shadow_events, 200) << "the event stream keeps every shadow decision";
  EXPECT_EQ(Queue(1).last_decision().reason(), "window_fast");
}

TEST_F(AgentLogVolume, AQueueThatSwitchesOftenIsRateLimitedAndSaysWhatWasHeldBack) {
  policies_.mutable_policy()->set_max_failures(1000);  // every try fails, none starts a backoff
  policies_.mutable_policy()->set_settle_windows(0);
  Start();
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 20; ++i) FailOneTry(1);  // 40 switches within a second of the fake clock
  FailOneTry(2);                               // another queue has a budget of its own
  std::string log = ::testing::internal::GetCapturedStderr();
  const auto q1 = LinesWith(log, "decision uvnvme:7:0:q1 ");
  ASSERT_EQ(q1.size(), QueueLog::kBurst) << log;
  for (const std::string& line : q1) EXPECT_NE(line.find(" info "), std::string::npos) << line;
  EXPECT_EQ(LinesWith(log, "decision uvnvme:7:0:q2 ").size(), 2u) << log;
  EXPECT_EQ(LinesWith(log, "suppressed").size(), 0u) << log;

  // Once the period is over, the next look at the counters says what was held back, once.
  now_ += QueueLog::kPeriod;
  ::testing::internal::CaptureStderr();
  agent_->RunOnce();
  agent_->RunOnce();
  log = ::testing::internal::GetCapturedStderr();
  const auto said = LinesWith(log, "suppressed");
  ASSERT_EQ(said.size(), 1u) << log;
  EXPECT_NE(said[0].find("queue uvnvme:7:0:q1: state changes (35 similar lines suppressed in the last 61 s)"),
            std::string::npos)
      << said[0];
  // A new period lets lines out again.
  ::testing::internal::CaptureStderr();
  FailOneTry(1);
  log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(LinesWith(log, "decision uvnvme:7:0:q1 ").size(), 2u) << log;
}

TEST_F(AgentLogVolume, ARefusingLeverIsRateLimitedAndTheCountIsSaidWhenItsQueueLeaves) {
  policies_.mutable_policy()->set_max_failures(1000);
  policies_.mutable_policy()->set_settle_windows(0);
  levers_.refuse = 12;
  Start();
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 12; ++i) Window(1, ReapMode::kInterrupt, 5 * kUs, 1);  // each try refused by the lever
  discovery_.queues = {UvnvmeQueue(2)};
  now_ += 1'000'000'000'000;
  agent_->RunOnce();  // the scan (inline: no loop thread) drops q1
  const std::string log = ::testing::internal::GetCapturedStderr();
  const auto refusals = LinesWith(log, "could not put uvnvme:7:0:q1");
  EXPECT_EQ(refusals.size(), QueueLog::kBurst) << log;
  for (const std::string& line : refusals) EXPECT_NE(line.find(" warn "), std::string::npos) << line;
  EXPECT_EQ(LinesWith(log, "queue uvnvme:7:0:q1: errors (7 similar lines suppressed").size(), 1u) << log;
  EXPECT_EQ(LinesWith(log, "queue uvnvme:7:0:q1: state changes (7 similar lines suppressed").size(), 1u) << log;
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
