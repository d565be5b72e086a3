// SPDX-License-Identifier: Apache-2.0
// A device whose completion times vary (issue 48): the pace slack that scales with the baseline window's span
// (pace_slack_percent) and the kept run's window judged together with the one before it (run_pair_verdict).
#include <gtest/gtest.h>

#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

class EngineSpread : public EngineFixture {
 protected:
  static Policy With(uint32_t slack_percent, bool pair) {
    Policy p = Adaptive();  // the patch's rules: 20 us slack, no credit
    p.pace_slack_percent = slack_percent;
    p.run_pair_verdict = pair;
    return p;
  }
  // A try on a 5 us baseline whose first window is kept, 20 % ahead, then a window of `span`: its verdict.
  Reason AfterAKeptWindow(QueueHandle q, Nanos span) {
    StartTry(q);
    auto kept = Poll(q, 4 * kUs * kWindow);
    EXPECT_TRUE(kept && kept->reason == Reason::kPollWindowFaster);
    auto second = Poll(q, span);
    EXPECT_TRUE(second);
    return second ? second->reason : Reason::kModeChanged;
  }
};

TEST_F(EngineSpread, TheDefaultsScaleTheSlackAndJudgeKeptWindowsInPairs) {
  const Policy p;
  EXPECT_EQ(p.pace_slack_percent, 5u);
  EXPECT_TRUE(p.run_pair_verdict);
  const Policy patch = PatchPreset();
  EXPECT_EQ(patch.pace_slack_percent, 0u);
  EXPECT_FALSE(patch.run_pair_verdict);
}

// The baseline: 8,192 completions in 40.96 ms (5 us each). 5 % of it is 2,048 us; the fixed slack is 20 us.
TEST_F(EngineSpread, ATrysSlackIsTheLargerOfTheFixedSlackAndItsShareOfTheBaselineWindow) {
  EXPECT_EQ(PaceSlack(With(5, false), 5 * kUs * kWindow, 0), 2'048 * kUs);
  EXPECT_EQ(PaceSlack(With(5, false), 100 * kUs, 0), 20 * kUs) << "a short baseline: the fixed slack";
  EXPECT_EQ(PaceSlack(With(0, false), 5 * kUs * kWindow, 7), 20 * kUs + 7) << "0: the patch's rule, plus credit";

  // 64 completions 0.5 ms into the try (64 x 5 + 20 = 340 us allowed by the fixed slack alone).
  const QueueHandle patch = Add(With(0, false));
  StartTry(patch);
  auto failed = Miss(patch, 64, 500 * kUs);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->reason, Reason::kBehindPace);

  const QueueHandle scaled = Add(With(5, false));
  StartTry(scaled);
  EXPECT_FALSE(Miss(scaled, 64, 500 * kUs)) << "within 64 x 5 us + 2,048 us: the try goes on";
  EXPECT_EQ(engine_.View(scaled).state, QueueState::kPolling);
  auto late = Miss(scaled, 64, 2'400 * kUs);  // a try that truly loses still fails early
  ASSERT_TRUE(late);
  EXPECT_EQ(late->reason, Reason::kBehindPace);
  EXPECT_EQ(late->limit, 64 * 5 * kUs + 2'048 * kUs);
}

TEST_F(EngineSpread, AKeptRunSurvivesOneSlowWindowAndEndsOnTheSecond) {
  const QueueHandle q = Add(With(0, true));
  EXPECT_EQ(AfterAKeptWindow(q, 5'500 * kWindow), Reason::kPollWindowFaster);  // 10 % behind: the pair is ahead
  EXPECT_EQ(engine_.View(q).mode, ReapMode::kPoll);
  auto again = Poll(q, 5'500 * kWindow);  // two slow windows in a row: the load
  ASSERT_TRUE(again);
  EXPECT_EQ(again->reason, Reason::kNotFaster);
  EXPECT_EQ(engine_.View(q).mode, ReapMode::kInterrupt);
}

TEST_F(EngineSpread, ATrysFirstWindowIsJudgedAlone) {
  const QueueHandle q = Add(With(0, true));
  StartTry(q);
  auto first = Poll(q, 5'100 * kWindow);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->reason, Reason::kNotFaster);
  // A new try after the failure starts from nothing too: its first window is not paired with the old run's.
  ASSERT_EQ(Interrupt(q, 5 * kUs * kWindow)->reason, Reason::kWindowFast);
  auto second = Poll(q, 5'100 * kWindow);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->reason, Reason::kNotFaster);
}

TEST_F(EngineSpread, AWindowFarBehindEndsTheRunEvenAfterAFastOne) {
  const QueueHandle q = Add(With(0, true));
  EXPECT_EQ(AfterAKeptWindow(q, 7 * kUs * kWindow), Reason::kNotFaster);  // 40 % behind: 4 + 7 > 2 x 5
}

TEST_F(EngineSpread, WithoutThePairVerdictOneSlowWindowEndsTheRun) {
  const QueueHandle q = Add(With(0, false));
  EXPECT_EQ(AfterAKeptWindow(q, 5'500 * kWindow), Reason::kNotFaster);
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
