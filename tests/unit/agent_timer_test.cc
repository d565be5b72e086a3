// SPDX-License-Identifier: Apache-2.0
// The closed loop with fakes: the poll timer (stalled tries, a lever failing mid-try, its first look).
#include <gtest/gtest.h>

#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

TEST_F(AgentLoop, CompletionsStoppingWhilePollingFailTheTryOnTheTimer) {
  policies_.mutable_policy()->set_timer_granularity_ns(10 * kUs);
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  // No completion since the switch; the counters still show the old window.
  collector_.counters[UvnvmeQueue(1).key.ToString()].progress = {now_ - 100 * kUs, 3};
  now_ += 24 * kUs;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  now_ += 2 * kUs;  // past 1 x 5 us + 20 us slack, but the timer is not due yet
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  now_ += 9 * kUs;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(1).last_decision().reason(), "stalled");
}

TEST_F(AgentLoop, ALeverThatFailsDuringATryIsNotAskedAgainEveryTimerPeriod) {
  policies_.mutable_policy()->set_timer_granularity_ns(10 * kUs);
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  const int applies = levers_.applies;
  // The driver exits mid-try: no completion comes, and every request to its socket fails.
  levers_.refuse = 1000;
  levers_.refuse_code = ErrorCode::kUnavailable;
  now_ += 50 * kUs;
  agent_->RunOnce();
  EXPECT_EQ(levers_.applies, applies + 1);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  EXPECT_TRUE(Queue(1).degraded());
  for (int i = 0; i < 100; ++i) {  // 100 timer periods
    now_ += 10 * kUs;
    agent_->RunOnce();
  }
  EXPECT_EQ(levers_.applies, applies + 1) << "the timer asked the failing lever again every period";
  now_ += 1'000'000'000;  // the first backoff
  agent_->RunOnce();
  EXPECT_EQ(levers_.applies, applies + 2);
  levers_.refuse = 0;
  now_ += 2'000'000'000;  // the second, doubled
  agent_->RunOnce();
  EXPECT_EQ(levers_.applies, applies + 3);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_FALSE(Queue(1).degraded());
}

TEST_F(AgentLoop, TheTimerFirstLooksAtANewModeOnePeriodAfterTheSwitch) {
  Start();  // default granularity: 1 ms
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  // 40 us without a completion is past the first completion's pace (5 + 20 us), but the timer is not due.
  now_ += 40 * kUs;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  now_ += 1'000'000;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(1).last_decision().reason(), "stalled");
}

// Polling at 1 us per completion against a 5 us baseline: 4,000 completions in the first 4 ms put the window
// 16 ms ahead of its pace. The timer does not look again until that lead is used up (it shares the CPU the
// reaper polls on), and a window that went quiet fails the moment its next completion is late.
TEST_F(AgentLoop, TheTimerLooksAtAPollingWindowAheadOfItsPaceOnceItsLeadIsUsedUp) {
  counters_interval_ = 1'000'000'000'000;  // only the timer reads the counters here
  Start();  // default granularity: 1 ms
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  const std::string q1 = UvnvmeQueue(1).key.ToString();
  collect::QueueCounters& counters = collector_.counters[q1];
  counters.generation = collector_.controls[q1].generation;
  const engine::Nanos start = now_;
  now_ += 4'000 * kUs;
  counters.progress = {start, 4'000, now_};
  agent_->RunOnce();
  const int reads = collector_.counter_reads;
  EXPECT_GT(reads, 0) << "the timer did not look one period after the switch";
  // Quiet from here on: the 4,001st completion is late from 4,001 x 5 + 20 us = 20,025 us after the start.
  while (now_ + 1'000 * kUs <= start + 20'025 * kUs) {
    now_ += 1'000 * kUs;
    agent_->RunOnce();
  }
  EXPECT_EQ(collector_.counter_reads, reads) << "the timer looked at a window still ahead of its pace";
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  now_ = start + 20'025 * kUs + 1;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(1).last_decision().reason(), "stalled");
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
