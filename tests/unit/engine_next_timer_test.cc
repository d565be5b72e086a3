// SPDX-License-Identifier: Apache-2.0
// When the agent's timer next needs to look at a queue (Engine::NextTimer): never before OnTimer could
// decide something, and for a polling window ahead of its pace not before its lead is used up.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

class EngineNextTimer : public EngineFixture {};

// Baseline 5 us per completion, slack 20 us. 1,000 completions in 1 ms, the last just now: the 1,001st is
// behind its pace from 1,001 x 5 + 20 us = 5,025 us after the window's start, not before.
TEST_F(EngineNextTimer, APollingWindowAheadOfItsPaceIsLookedAtWhenItsLeadIsUsedUp) {
  const QueueHandle q = Add();
  StartTry(q);
  const Nanos start = now_;
  const WindowProgress progress{start, 1000, start + 1'000 * kUs};
  const Nanos next = engine_.NextTimer(q, start + 1'000 * kUs, progress);
  EXPECT_EQ(next, start + 5'025 * kUs + 1);
  EXPECT_FALSE(engine_.OnTimer(q, next - 1, progress));
  auto stalled = engine_.OnTimer(q, next, progress);
  ASSERT_TRUE(stalled);
  EXPECT_EQ(stalled->reason, Reason::kStalled);
}

TEST_F(EngineNextTimer, NeverSoonerThanOneTimerPeriod) {
  const QueueHandle q = Add();
  StartTry(q);
  const Nanos start = now_;
  // Far behind already, and quiet for long: the next look is still a period away.
  const Nanos now = start + 100'000 * kUs;
  EXPECT_EQ(engine_.NextTimer(q, now, WindowProgress{start, 10, start + 50 * kUs}), now + Policy{}.timer_granularity);
}

TEST_F(EngineNextTimer, AWindowWhoseCompletionsJustCameWaitsAWholeQuietPeriod) {
  Policy p = Adaptive();
  p.timer_granularity = 2'000 * kUs;
  const QueueHandle q = Add(p);
  StartTry(q);
  const Nanos start = now_;
  // 10 completions, the last at 60 us: behind from 75 us on, but OnTimer waits for 2 ms of quiet.
  const Nanos now = start + 70 * kUs;
  EXPECT_EQ(engine_.NextTimer(q, now, WindowProgress{start, 10, start + 60 * kUs}), now + 2'000 * kUs);
  EXPECT_EQ(engine_.NextTimer(q, start + 60 * kUs, WindowProgress{start, 10, start + 60 * kUs}),
            start + 2'060 * kUs);
}

TEST_F(EngineNextTimer, AnOverridesExpiryIsWhenItsQueueIsLookedAt) {
  const QueueHandle q = Add();
  ASSERT_TRUE(engine_.SetOverride(q, Override{ReapMode::kPoll, now_ + 50'000 * kUs}, now_));
  EXPECT_EQ(engine_.NextTimer(q, now_, WindowProgress{now_, 0}), now_ + 50'000 * kUs);
}

TEST_F(EngineNextTimer, AQueueThatNeedsNoTimerIsNeverDue) {
  const QueueHandle q = Add();  // measuring in interrupt mode
  EXPECT_FALSE(engine_.NeedsTimer(q));
  EXPECT_EQ(engine_.NextTimer(q, now_, WindowProgress{now_, 0}), std::numeric_limits<Nanos>::max());
}

// The property the agent relies on: for any progress, OnTimer decides nothing at any instant before
// NextTimer (later completions only move the failure later), and a window that stays quiet fails at it.
TEST_F(EngineNextTimer, OnTimerDecidesNothingBeforeItAndFailsAQuietWindowAtIt) {
  std::mt19937_64 rng(7);
  int judged = 0;
  for (int round = 0; round < 500; ++round) {
    Policy p = Adaptive();
    p.pace_slack = static_cast<Nanos>(rng() % 200) * kUs;
    p.timer_granularity = (10 + static_cast<Nanos>(rng() % 2'000)) * kUs;
    const QueueHandle q = Add(p);
    StartTry(q, (1 + static_cast<Nanos>(rng() % 10)) * kUs);  // at most the 10 us threshold
    const Nanos start = now_;
    const auto k = static_cast<uint32_t>(rng() % 8000);
    const Nanos last = k == 0 ? start : start + static_cast<Nanos>(rng() % (k * 10 + 1)) * kUs;
    const Nanos now = std::max(last, start + static_cast<Nanos>(rng() % 1'000) * kUs);
    const WindowProgress progress{start, k, last};
    const Nanos next = engine_.NextTimer(q, now, progress);
    const Nanos soonest = now + p.timer_granularity;
    ASSERT_GE(next, soonest);
    if (next == soonest) {  // the period alone holds the next look off; OnTimer may be due sooner
      engine_.RemoveQueue(q);
      continue;
    }
    ++judged;
    for (Nanos t : {now, (now + next) / 2, next - 1}) {
      auto early = engine_.OnTimer(q, t, progress);
      ASSERT_FALSE(early) << "round " << round << ": decided " << ReasonName(early->reason) << " at " << t - start
                          << " ns, before " << next - start << " (now " << now - start << ", k " << k << ", last "
                          << last - start << ", granularity " << p.timer_granularity << ")";
    }
    auto at_next = engine_.OnTimer(q, next, progress);
    ASSERT_TRUE(at_next) << "round " << round << ": a quiet window was not failed at its next look";
    EXPECT_EQ(at_next->reason, Reason::kStalled);
    engine_.RemoveQueue(q);
  }
  EXPECT_GT(judged, 100) << "too few rounds where the pace, not the period, set the next look";
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
