// SPDX-License-Identifier: Apache-2.0
// settle_windows: interrupt-mode windows right after polling are not taken as the baseline.
#include <gtest/gtest.h>

#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

class EngineSettle : public EngineFixture {
 protected:
  static Policy Settling(uint32_t windows) {
    Policy p = Adaptive();
    p.settle_windows = windows;
    return p;
  }
  // A try that fails at its window's end: polling was not faster than the 5 us baseline.
  void FailATry(QueueHandle q) {
    StartTry(q);
    auto d = Poll(q, 6 * kUs * kWindow);
    ASSERT_TRUE(d);
    ASSERT_EQ(d->reason, Reason::kNotFaster);
  }
};

TEST_F(EngineSettle, TheDefaultSettlesOneWindow) { EXPECT_EQ(Policy{}.settle_windows, 1u); }

TEST_F(EngineSettle, TheWindowsAfterAFailedTryAreNotTheBaseline) {
  const QueueHandle q = Add(Settling(2));
  FailATry(q);
  EXPECT_EQ(engine_.View(q).settle_left, 2u);
  // The transient: faster than the next try will be. Neither window may start a try or become the baseline.
  for (int i = 0; i < 2; ++i) {
    auto d = Interrupt(q, 2 * kUs * kWindow);
    ASSERT_TRUE(d) << "window " << i;
    EXPECT_EQ(d->reason, Reason::kSettling) << "window " << i;
    EXPECT_FALSE(d->Switches()) << "window " << i;
    EXPECT_EQ(d->measured, 2 * kUs * kWindow);
  }
  EXPECT_EQ(engine_.View(q).settle_left, 0u);
  auto measured = Interrupt(q, 4 * kUs * kWindow);
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->reason, Reason::kWindowFast);
  EXPECT_EQ(engine_.View(q).baseline_span, 4 * kUs * kWindow);
}

TEST_F(EngineSettle, ZeroIsThePatchRule) {
  const QueueHandle q = Add(Settling(0));
  FailATry(q);
  auto d = Interrupt(q, 2 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_EQ(engine_.View(q).baseline_span, 2 * kUs * kWindow);
}

TEST_F(EngineSettle, AFirstMeasurementThatNeverPolledDoesNotSettle) {
  const QueueHandle q = Add(Settling(3));
  EXPECT_EQ(engine_.View(q).settle_left, 0u);
  StartTry(q);
}

TEST_F(EngineSettle, AQueueFoundPollingSettlesBeforeItsFirstBaseline) {
  const QueueHandle q = Add(Settling(1), true, ReapMode::kPoll);
  EXPECT_EQ(engine_.View(q).settle_left, 1u);
  auto d = Interrupt(q, 2 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kSettling);
  StartTry(q);
}

TEST_F(EngineSettle, AReMeasureAfterMaxPollWindowsSettles) {
  Policy p = Settling(1);
  p.max_poll_windows = 1;
  const QueueHandle q = Add(p);
  StartTry(q);
  auto kept = Poll(q, 4 * kUs * kWindow);
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->reason, Reason::kMaxPollWindows);
  auto d = Interrupt(q, 2 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kSettling);
}

TEST_F(EngineSettle, BackoffWindowsCountAsSettling) {
  Policy p = Settling(2);
  p.max_failures = 1;
  p.backoff_windows = 3;
  const QueueHandle q = Add(p);
  FailATry(q);
  ASSERT_EQ(engine_.View(q).state, QueueState::kBackoff);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Interrupt(q, 5 * kUs * kWindow));
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
  EXPECT_EQ(engine_.View(q).settle_left, 0u);
  StartTry(q);  // the first window after the backoff measures at once
}

TEST_F(EngineSettle, APolicyWithFewerSettleWindowsShortensTheSettling) {
  const QueueHandle q = Add(Settling(5));
  FailATry(q);
  ASSERT_EQ(engine_.View(q).settle_left, 5u);
  engine_.SetPolicy(q, Settling(1), now_);
  EXPECT_EQ(engine_.View(q).settle_left, 1u);
}

TEST_F(EngineSettle, MoreThan64IsRefusedWithTheFieldNamed) {
  Policy p = Settling(65);
  Status status = ValidatePolicy(p);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("policy.settle_windows"), std::string::npos) << status.error().message;
  EXPECT_TRUE(ValidatePolicy(Settling(64)));
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
