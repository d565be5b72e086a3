// SPDX-License-Identifier: Apache-2.0
// A try that stalls before it kept a window backs off at once (policy.h, stall_backoff).
#include <gtest/gtest.h>

#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

class EngineStallBackoff : public EngineFixture {
 protected:
  static Policy WithStallBackoff(bool on) {
    Policy p = Adaptive();
    p.stall_backoff = on;
    p.max_poll_windows = 2;
    return p;
  }

  // The polling window in flight reaps `reaped` completions in 10 us, then none for 2 ms: the timer fails
  // it as stalled.
  Decision Stall(QueueHandle q, uint32_t reaped = 2) {
    const Nanos start = now_;
    now_ += 2'000'000;
    auto d = engine_.OnTimer(q, now_, WindowProgress{start, reaped, reaped > 0 ? start + 10 * kUs : start});
    EXPECT_TRUE(d);
    if (!d) return Decision{};
    EXPECT_EQ(d->reason, Reason::kStalled);
    return *d;
  }
};

TEST_F(EngineStallBackoff, IsOnByDefault) { EXPECT_TRUE(Policy{}.stall_backoff); }

TEST_F(EngineStallBackoff, AStallInATrysFirstWindowBacksOffAtOnce) {
  const QueueHandle q = Add(WithStallBackoff(true));
  StartTry(q);
  const Decision d = Stall(q);
  EXPECT_TRUE(d.backoff_started);
  EXPECT_EQ(d.failures, 1u);  // the count stays true: one failure started this backoff
  EXPECT_EQ(engine_.View(q).state, QueueState::kBackoff);
  EXPECT_EQ(engine_.View(q).backoff_left, 64u);
}

TEST_F(EngineStallBackoff, AStallBeforeTheTryReapedAnythingIsOneFailure) {
  const QueueHandle q = Add(WithStallBackoff(true));
  StartTry(q);
  const Decision d = Stall(q, 0);  // the switch had not taken effect in the reaper
  EXPECT_FALSE(d.backoff_started);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
}

TEST_F(EngineStallBackoff, OffATrysStallCountsAsOneFailureAsInThePatch) {
  const QueueHandle q = Add(WithStallBackoff(false));
  StartTry(q);
  const Decision d = Stall(q);
  EXPECT_FALSE(d.backoff_started);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
  EXPECT_EQ(engine_.View(q).failures, 1u);
}

TEST_F(EngineStallBackoff, APaceFailureInTheFirstWindowIsStillOneFailure) {
  const QueueHandle q = Add(WithStallBackoff(true));
  StartTry(q);
  auto d = Miss(q, 4, 200 * kUs);  // 5 us per completion baseline, 20 us slack: far behind at k = 4
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
  EXPECT_FALSE(d->backoff_started);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
}

TEST_F(EngineStallBackoff, AStallAfterAKeptWindowIsOneFailure) {
  const QueueHandle q = Add(WithStallBackoff(true));
  StartTry(q);
  auto kept = Poll(q, 3 * kUs * kWindow);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->reason, Reason::kPollWindowFaster);
  const Decision d = Stall(q);
  EXPECT_FALSE(d.backoff_started);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
}

TEST_F(EngineStallBackoff, AStallInTheFirstWindowOfARunResumedAfterAReMeasureIsOneFailure) {
  const QueueHandle q = Add(WithStallBackoff(true));
  StartTry(q);
  ASSERT_TRUE(Poll(q, 3 * kUs * kWindow));
  auto end = Poll(q, 3 * kUs * kWindow);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->reason, Reason::kMaxPollWindows);
  StartTry(q);  // the re-measure keeps polling: the run goes on, its first window has kept nothing yet
  const Decision d = Stall(q);
  EXPECT_FALSE(d.backoff_started);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
