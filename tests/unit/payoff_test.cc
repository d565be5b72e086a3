// SPDX-License-Identifier: Apache-2.0
// The payoff accounting over decisions of the real engine: kept windows' speedup and gain, failed tries'
// time, shadow windows by what they would have done.
#include "agent/engine/payoff.h"

#include <gtest/gtest.h>

#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

class PayoffTest : public EngineFixture {
 protected:
  // Feeds the decision of one window (of `n` completions) to the book, as the listener does.
  std::optional<JudgedWindow> Account(const std::optional<Decision>& d, uint32_t n = kWindow) {
    EXPECT_TRUE(d);
    return d ? payoff_.Account(*d, n) : std::nullopt;
  }
  QueuePayoff payoff_;
};

TEST_F(PayoffTest, KeptWindowSpeedupAndGainComeFromItsBaseline) {
  const QueueHandle q = Add();
  StartTry(q, 5 * kUs);  // baseline: 5 us per completion
  auto w = Account(Poll(q, 4 * kUs * kWindow));  // 4 us per completion: 1.25 times the rate
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->kept);
  EXPECT_DOUBLE_EQ(w->speedup, 1.25);
  EXPECT_EQ(payoff_.kept_windows, 1u);
  EXPECT_DOUBLE_EQ(payoff_.last_kept_speedup, 1.25);
  EXPECT_EQ(payoff_.polled_completions, kWindow);
  EXPECT_DOUBLE_EQ(payoff_.completions_gained, kWindow * (1 - 1 / 1.25));
  EXPECT_EQ(payoff_.polling_time, 4 * kUs * kWindow);
  EXPECT_EQ(payoff_.failed_polling_time, 0);
}

TEST_F(PayoffTest, FailedWindowCountsItsTimeAndNoGain) {
  const QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  ASSERT_TRUE(Account(Poll(q, 4 * kUs * kWindow)));
  auto w = Account(Poll(q, 6 * kUs * kWindow));  // slower than the baseline: not_faster
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->kept);
  EXPECT_LT(w->speedup, 1.0);
  EXPECT_EQ(payoff_.judged_windows, 2u);
  EXPECT_EQ(payoff_.kept_windows, 1u);
  EXPECT_DOUBLE_EQ(payoff_.last_kept_speedup, 1.25);  // the failed window leaves the kept one's figure
  EXPECT_DOUBLE_EQ(payoff_.last_speedup, w->speedup);
  EXPECT_EQ(payoff_.failed_polling_time, 6 * kUs * kWindow);
  EXPECT_EQ(payoff_.polling_time, 10 * kUs * kWindow);
  EXPECT_DOUBLE_EQ(payoff_.completions_gained, kWindow * (1 - 1 / 1.25));
}

TEST_F(PayoffTest, PaceMissCountsTheTimeToTheMiss) {
  const QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  auto w = Account(Miss(q, 100, 100 * 9 * kUs), 100);  // 9 us per completion at k = 100
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->kept);
  EXPECT_EQ(payoff_.failed_polling_time, 100 * 9 * kUs);
  EXPECT_EQ(payoff_.polled_completions, 100u);
  EXPECT_EQ(payoff_.kept_windows, 0u);
  EXPECT_DOUBLE_EQ(payoff_.completions_gained, 0);
}

TEST_F(PayoffTest, InterruptWindowsOutsideShadowAreNotJudgedPolling) {
  const QueueHandle q = Add();
  EXPECT_FALSE(Account(Interrupt(q, 50 * kUs * kWindow)));  // window_slow: no polling judged
  EXPECT_EQ(payoff_.judged_windows, 0u);
  EXPECT_EQ(payoff_.ShadowWindows(), 0u);
  EXPECT_EQ(payoff_.measured_windows[*MeasureReasonIndex(Reason::kWindowSlow)], 1u);
  auto fast = Interrupt(q, 5 * kUs * kWindow);  // window_fast: a try starts, counted as a measured window
  ASSERT_TRUE(fast);
  EXPECT_FALSE(payoff_.Account(*fast, kWindow));
  EXPECT_EQ(payoff_.measured_windows[*MeasureReasonIndex(Reason::kWindowFast)], 1u);
}

TEST_F(PayoffTest, ShadowWindowsCountByWhatTheyWouldHaveDone) {
  Policy shadow = Adaptive();
  shadow.mode = ControllerMode::kShadow;
  const QueueHandle q = Add(shadow);
  auto fast = Account(Interrupt(q, 5 * kUs * kWindow));
  ASSERT_TRUE(fast);
  EXPECT_TRUE(fast->shadow);
  EXPECT_TRUE(fast->kept);
  auto slow = Account(Interrupt(q, 50 * kUs * kWindow, kWindow * 3), kWindow * 3);
  ASSERT_TRUE(slow);
  EXPECT_FALSE(slow->kept);
  EXPECT_EQ(payoff_.ShadowWindows(), 2u);
  EXPECT_EQ(payoff_.shadow_windows[*MeasureReasonIndex(Reason::kWindowFast)], 1u);
  EXPECT_EQ(payoff_.shadow_windows[*MeasureReasonIndex(Reason::kWindowSlow)], 1u);
  ASSERT_TRUE(payoff_.ShadowWouldPollShare());
  EXPECT_DOUBLE_EQ(*payoff_.ShadowWouldPollShare(), 0.25);
  EXPECT_EQ(payoff_.judged_windows, 0u);  // shadow never polls
}

TEST(PayoffShare, NoneBeforeAnyShadowWindow) { EXPECT_FALSE(QueuePayoff{}.ShadowWouldPollShare()); }

}  // namespace
}  // namespace nvmeadapt::engine::testing
