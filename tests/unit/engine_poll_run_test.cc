// SPDX-License-Identifier: Apache-2.0
// Polling runs that grow between re-measures (policy.h, max_poll_run_windows).
#include <gtest/gtest.h>

#include "agent/engine/rules.h"
#include "tests/unit/engine_fixture.h"
#include "agent/engine/policy_fields.h"

namespace nvmeadapt::engine::testing {
namespace {

class EnginePollRun : public EngineFixture {
 protected:
  static Policy Growing(uint32_t max_poll, uint32_t longest) {
    Policy p = Adaptive();
    p.max_poll_windows = max_poll;
    p.max_poll_run_windows = longest;
    return p;
  }

  // Kept polling windows (3 us per completion against a 5 us baseline) until the run ends in a re-measure;
  // returns how many windows the run kept. Fails the test if the run outlasts `at_most`.
  uint32_t RunUntilRemeasure(QueueHandle q, uint32_t at_most) {
    for (uint32_t kept = 1; kept <= at_most; ++kept) {
      auto d = Poll(q, 3 * kUs * kWindow);
      EXPECT_TRUE(d);
      if (!d) return kept;
      if (d->reason == Reason::kMaxPollWindows) return kept;
      EXPECT_EQ(d->reason, Reason::kPollWindowFaster);
    }
    ADD_FAILURE() << "no re-measure within " << at_most << " windows";
    return at_most;
  }
};

TEST_F(EnginePollRun, TheDefaultLetsRunsGrowTo1024Windows) {
  EXPECT_EQ(Policy{}.max_poll_run_windows, 1024u);
  EXPECT_EQ(PollRunLength(Growing(64, 1024), 0), 64u);
  EXPECT_EQ(PollRunLength(Growing(64, 1024), 2), 256u);
  EXPECT_EQ(PollRunLength(Growing(64, 1024), 5), 1024u);
  EXPECT_EQ(PollRunLength(Growing(64, 1024), 40), 1024u);
  EXPECT_EQ(PollRunLength(Growing(64, 0), 7), 64u);
}

TEST_F(EnginePollRun, EachReMeasureThatKeepsPollingDoublesTheNextRunUpToTheLongest) {
  const QueueHandle q = Add(Growing(4, 16));
  StartTry(q);
  const uint32_t expected[] = {4, 8, 16, 16};
  for (uint32_t run : expected) {
    EXPECT_EQ(RunUntilRemeasure(q, 64), run);
    EXPECT_TRUE(engine_.View(q).remeasuring);
    StartTry(q);  // the re-measure finds interrupts as fast as before: polling again
  }
  EXPECT_EQ(engine_.View(q).poll_run_level, 4u);
}

TEST_F(EnginePollRun, AReMeasureThatKeepsInterruptsStartsAgainAtMaxPollWindows) {
  const QueueHandle q = Add(Growing(4, 64));
  StartTry(q);
  EXPECT_EQ(RunUntilRemeasure(q, 64), 4u);
  StartTry(q);
  EXPECT_EQ(RunUntilRemeasure(q, 64), 8u);
  auto slow = Interrupt(q, 50 * kUs * kWindow);  // the load changed: interrupts now
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->reason, Reason::kWindowSlow);
  EXPECT_EQ(engine_.View(q).poll_run_level, 0u);
  EXPECT_FALSE(engine_.View(q).remeasuring);
  StartTry(q);
  EXPECT_EQ(RunUntilRemeasure(q, 64), 4u);
}

TEST_F(EnginePollRun, AFailedTryStartsAgainAtMaxPollWindows) {
  const QueueHandle q = Add(Growing(4, 64));
  StartTry(q);
  RunUntilRemeasure(q, 64);
  StartTry(q);
  RunUntilRemeasure(q, 64);
  StartTry(q);
  auto lost = Poll(q, 9 * kUs * kWindow);  // slower than its 5 us baseline
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->reason, Reason::kNotFaster);
  EXPECT_EQ(engine_.View(q).poll_run_level, 0u);
  StartTry(q);
  EXPECT_EQ(RunUntilRemeasure(q, 64), 4u);
}

TEST_F(EnginePollRun, ZeroIsThePatchRuleEveryRunMaxPollWindows) {
  const QueueHandle q = Add(Growing(4, 0));
  StartTry(q);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(RunUntilRemeasure(q, 64), 4u);
    StartTry(q);
  }
}

TEST_F(EnginePollRun, ALowerLongestRunInANewPolicyEndsALongRunAtOnce) {
  const QueueHandle q = Add(Growing(4, 64));
  StartTry(q);
  RunUntilRemeasure(q, 64);
  StartTry(q);
  RunUntilRemeasure(q, 64);
  StartTry(q);  // a run of 16
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Poll(q, 3 * kUs * kWindow));
  auto changed = engine_.SetPolicy(q, Growing(4, 8), now_);
  ASSERT_TRUE(changed);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
  EXPECT_EQ(engine_.View(q).mode, ReapMode::kInterrupt);
}

TEST_F(EnginePollRun, TheLongestRunIsValidated) {
  Policy p = Growing(64, 32);
  EXPECT_FALSE(ValidatePolicy(p, "policy").ok());
  p.max_poll_run_windows = static_cast<uint32_t>(FindPolicyField("max_poll_run_windows")->max + 1);
  EXPECT_FALSE(ValidatePolicy(p, "policy").ok());
  p.max_poll_run_windows = 0;
  EXPECT_TRUE(ValidatePolicy(p, "policy").ok());
  p.max_poll_run_windows = 64;
  EXPECT_TRUE(ValidatePolicy(p, "policy").ok());
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
