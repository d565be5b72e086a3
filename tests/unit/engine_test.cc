// SPDX-License-Identifier: Apache-2.0
// The rules of DESIGN.md section 3, one by one.
#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {
using EngineRules = EngineFixture;

TEST_F(EngineRules, NewAdaptiveQueueFoundPollingIsPutInInterruptToMeasure) {
  AddedQueue added = engine_.AddQueue(QueueSetup{true, Adaptive(), ReapMode::kPoll, ReapMode::kPoll}, now_);
  ASSERT_TRUE(added.decision);
  EXPECT_EQ(added.decision->to, ReapMode::kInterrupt);
  EXPECT_EQ(added.decision->reason, Reason::kModeChanged);
  EXPECT_EQ(engine_.View(added.handle).state, QueueState::kMeasuring);
}

TEST_F(EngineRules, NewQueueAlreadyWhereThePolicyWantsItNeedsNoSwitch) {
  AddedQueue added = engine_.AddQueue(QueueSetup{true, Adaptive(), ReapMode::kInterrupt}, now_);
  EXPECT_FALSE(added.decision);
}

TEST_F(EngineRules, FastMeasuredWindowTriesPolling) {
  QueueHandle q = Add();
  auto d = Interrupt(q, 5 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->from, ReapMode::kInterrupt);
  EXPECT_EQ(d->to, ReapMode::kPoll);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_EQ(d->state, QueueState::kPolling);
  EXPECT_EQ(d->measured, 5 * kUs * kWindow);
  EXPECT_EQ(d->limit, 10 * kUs * kWindow);
  EXPECT_EQ(engine_.View(q).baseline_span, 5 * kUs * kWindow);
}

TEST_F(EngineRules, SlowMeasuredWindowStaysInInterruptMode) {
  QueueHandle q = Add();
  auto d = Interrupt(q, 20 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
}

TEST_F(EngineRules, FasterPollingWindowKeepsPolling) {
  QueueHandle q = Add();
  StartTry(q);
  auto d = Poll(q, 4 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kPollWindowFaster);
  EXPECT_EQ(engine_.View(q).poll_windows, 1u);
  // Held to the same baseline, not to the last polling window.
  d = Poll(q, 4 * kUs * kWindow + 500 * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kPollWindowFaster);
}

TEST_F(EngineRules, SlowerPollingWindowFailsBackToInterrupt) {
  QueueHandle q = Add();
  StartTry(q);
  auto d = Poll(q, 6 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
  EXPECT_EQ(d->reason, Reason::kNotFaster);
  EXPECT_EQ(d->failures, 1u);
  EXPECT_EQ(d->state, QueueState::kMeasuring);
  EXPECT_FALSE(d->backoff_started);
}

TEST_F(EngineRules, AfterAFailureTheNextMeasurementMayTryAgain) {
  QueueHandle q = Add();
  StartTry(q);
  ASSERT_TRUE(Poll(q, 6 * kUs * kWindow)->Switches());
  StartTry(q);
  EXPECT_EQ(engine_.View(q).failures, 1u);
}

TEST_F(EngineRules, ThirdConsecutiveFailureStartsBackoffOf64Windows) {
  QueueHandle q = Add();
  for (uint32_t i = 1; i <= 2; ++i) {
    StartTry(q);
    auto d = Poll(q, 6 * kUs * kWindow);
    ASSERT_EQ(d->failures, i);
    ASSERT_FALSE(d->backoff_started);
  }
  StartTry(q);
  auto d = Poll(q, 6 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->backoff_started);
  EXPECT_EQ(d->failures, 3u);
  EXPECT_EQ(d->state, QueueState::kBackoff);
  EXPECT_EQ(engine_.View(q).backoff_left, 64u);
  // 63 fast windows are sat out in interrupt mode...
  for (int i = 1; i <= 63; ++i) {
    d = Interrupt(q, 1 * kUs * kWindow);
    ASSERT_TRUE(d);
    ASSERT_FALSE(d->Switches()) << "window " << i;
    ASSERT_EQ(d->reason, Reason::kBackingOff) << "window " << i;
  }
  // ...the 64th ends the backoff without measuring...
  d = Interrupt(q, 1 * kUs * kWindow);
  EXPECT_EQ(d->reason, Reason::kBackoffOver);
  EXPECT_FALSE(d->Switches());
  EXPECT_EQ(d->state, QueueState::kMeasuring);
  // ...and the 65th is a measurement again, with the failure count cleared.
  d = Interrupt(q, 1 * kUs * kWindow);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->failures, 0u);
}

TEST_F(EngineRules, SuccessResetsTheFailureCount) {
  QueueHandle q = Add();
  StartTry(q);
  Poll(q, 6 * kUs * kWindow);
  StartTry(q);
  Poll(q, 6 * kUs * kWindow);
  ASSERT_EQ(engine_.View(q).failures, 2u);
  StartTry(q);
  auto d = Poll(q, 4 * kUs * kWindow);
  EXPECT_EQ(d->reason, Reason::kPollWindowFaster);
  EXPECT_EQ(d->failures, 0u);
  // Two more failures now do not start a backoff: the count starts over.
  d = Poll(q, 6 * kUs * kWindow);
  EXPECT_EQ(d->failures, 1u);
  StartTry(q);
  d = Poll(q, 6 * kUs * kWindow);
  EXPECT_EQ(d->failures, 2u);
  EXPECT_FALSE(d->backoff_started);
}

TEST_F(EngineRules, The64thPollingWindowForcesARemeasure) {
  QueueHandle q = Add();
  StartTry(q);
  for (int i = 1; i <= 63; ++i) {
    auto d = Poll(q, 4 * kUs * kWindow);
    ASSERT_EQ(d->reason, Reason::kPollWindowFaster) << "window " << i;
    ASSERT_FALSE(d->Switches());
  }
  auto d = Poll(q, 4 * kUs * kWindow);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
  EXPECT_EQ(d->reason, Reason::kMaxPollWindows);
  EXPECT_EQ(d->failures, 0u);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
  // A fresh baseline is measured; the old one no longer counts.
  d = Interrupt(q, 8 * kUs * kWindow);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_EQ(engine_.View(q).baseline_span, 8 * kUs * kWindow);
}

TEST_F(EngineRules, BehindPaceAtKFailsAtOnce) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  // At k = 100 the pace allows 100 * 5 us + 20 us = 520 us.
  auto d = Miss(q, 100, 600 * kUs);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kBehindPace);
  EXPECT_EQ(d->pace_index, 100u);
  EXPECT_EQ(d->measured, 600 * kUs);
  EXPECT_EQ(d->limit, 520 * kUs);
}

TEST_F(EngineRules, APaceMissTheRuleDoesNotConfirmIsCountedAndIgnored) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  EXPECT_FALSE(Miss(q, 100, 500 * kUs));
  EXPECT_EQ(engine_.View(q).rejected_pace_misses, 1u);
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
}

TEST_F(EngineRules, CompletionsStoppingDuringATryFailOnTheTimer) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  ASSERT_TRUE(engine_.NeedsTimer(q));
  const Nanos start = now_;
  const Nanos period = engine_.View(q).policy.timer_granularity;
  // 10 completions in, the last at 50 us, then nothing. The 11th would be on pace until 11 * 5 + 20 = 75 us.
  const WindowProgress progress{start, 10, start + 50 * kUs};
  EXPECT_FALSE(engine_.OnTimer(q, start + 50 * kUs + period - 1, progress)) << "quiet for less than a period";
  auto d = engine_.OnTimer(q, start + 50 * kUs + period, progress);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kStalled);
  EXPECT_EQ(d->pace_index, 11u);
  EXPECT_EQ(d->measured, 50 * kUs + period);
  EXPECT_EQ(d->failures, 1u);
  EXPECT_FALSE(engine_.NeedsTimer(q));
  // A queue that never completed anything since the switch fails once a period has passed without any.
  StartTry(q, 5 * kUs);
  EXPECT_FALSE(engine_.OnTimer(q, now_ + period - 1, WindowProgress{now_, 0}));
  EXPECT_TRUE(engine_.OnTimer(q, now_ + period, WindowProgress{now_, 0}));
}

// Completions reaped in batches leave gaps longer than one completion's pace. The timer waits for the next
// batch, whose place the pace check judges; only a whole quiet period is a stall.
TEST_F(EngineRules, AGapBetweenBatchesShorterThanTheTimerPeriodIsNoStall) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  const Nanos start = now_;
  const Nanos period = engine_.View(q).policy.timer_granularity;
  // 40 completions by 180 us, then a 60 us gap: the 41st was due at 41 * 5 + 20 = 225 us.
  EXPECT_FALSE(engine_.OnTimer(q, start + 240 * kUs, WindowProgress{start, 40, start + 180 * kUs}));
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
  // The first batch after the switch is late by the same gap: still no stall within a period.
  EXPECT_FALSE(engine_.OnTimer(q, start + 60 * kUs, WindowProgress{start, 0}));
  EXPECT_FALSE(engine_.OnTimer(q, start + period - 1, WindowProgress{start, 0, 0}));
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
}

TEST_F(EngineRules, TimerOnANonPollingQueueDecidesNothing) {
  QueueHandle q = Add();
  EXPECT_FALSE(engine_.NeedsTimer(q));
  EXPECT_FALSE(engine_.OnTimer(q, now_ + 1'000'000'000, WindowProgress{now_, 0}));
}

TEST_F(EngineRules, PolicyChangeMidWindowJudgesTheWindowInFlightByTheNewPolicy) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);  // baseline: 5 us per completion over 8192
  Policy p = Adaptive();
  p.window_completions = 1024;
  p.pace_slack = 0;
  auto d = engine_.SetPolicy(q, p, now_);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kPolicyChanged);
  EXPECT_FALSE(d->Switches());
  // The window in flight now ends at 1024 completions and is compared per completion with the baseline.
  d = Poll(q, 4 * kUs * 1024, 1024);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kPollWindowFaster);
  d = Poll(q, 5 * kUs * 1024, 1024);
  EXPECT_EQ(d->reason, Reason::kNotFaster);
  // The new slack applies to the pace check: zero slack, 1 ns late at k = 10 fails.
  ASSERT_TRUE(Interrupt(q, 5 * kUs * 1024, 1024)->Switches());
  EXPECT_EQ(engine_.View(q).baseline_completions, 1024u);
  d = Miss(q, 10, 50 * kUs + 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
}

TEST_F(EngineRules, ShorterMaxPollWindowsEndsALongRunAtOnce) {
  QueueHandle q = Add();
  StartTry(q);
  for (int i = 0; i < 10; ++i) Poll(q, 4 * kUs * kWindow);
  Policy p = Adaptive();
  p.max_poll_windows = 5;
  auto d = engine_.SetPolicy(q, p, now_);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
}

TEST_F(EngineRules, TwoQueuesStayIndependent) {
  QueueHandle a = Add();
  QueueHandle b = Add();
  StartTry(a);
  auto d = Interrupt(b, 20 * kUs * kWindow);
  EXPECT_FALSE(d->Switches());
  Poll(a, 6 * kUs * kWindow);
  EXPECT_EQ(engine_.View(a).failures, 1u);
  EXPECT_EQ(engine_.View(b).failures, 0u);
  EXPECT_EQ(engine_.View(b).state, QueueState::kMeasuring);
  EXPECT_EQ(engine_.View(b).baseline_span, 20 * kUs * kWindow);
  // A's policy does not touch B.
  Policy p = Adaptive();
  p.poll_threshold = 30 * kUs;
  engine_.SetPolicy(a, p, now_);
  EXPECT_EQ(engine_.View(b).policy.poll_threshold, 10 * kUs);
}

TEST_F(EngineRules, IneligibleQueueIsObservedAndNeverSwitched) {
  Policy forced = Adaptive();
  forced.mode = ControllerMode::kPoll;
  AddedQueue added = engine_.AddQueue(QueueSetup{false, forced, ReapMode::kInterrupt}, now_);
  EXPECT_FALSE(added.decision);
  QueueHandle q = added.handle;
  EXPECT_EQ(engine_.View(q).state, QueueState::kObserving);
  EXPECT_FALSE(Interrupt(q, 1 * kUs * kWindow));
  EXPECT_FALSE(engine_.SetOverride(q, Override{ReapMode::kPoll, 0}, now_));
  EXPECT_FALSE(engine_.SetPolicy(q, Adaptive(), now_));
  EXPECT_EQ(engine_.View(q).mode, ReapMode::kInterrupt);
  EXPECT_EQ(engine_.View(q).windows, 1u);
}

TEST_F(EngineRules, ForcedModesSwitchOnceAndIgnoreWindows) {
  QueueHandle q = Add();
  Policy p = Adaptive();
  p.mode = ControllerMode::kPoll;
  auto d = engine_.SetPolicy(q, p, now_);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->to, ReapMode::kPoll);
  EXPECT_EQ(d->reason, Reason::kModeChanged);
  EXPECT_EQ(d->state, QueueState::kForced);
  EXPECT_FALSE(Poll(q, 50 * kUs * kWindow));
  p.mode = ControllerMode::kInterrupt;
  d = engine_.SetPolicy(q, p, now_);
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
  EXPECT_FALSE(Interrupt(q, 1 * kUs * kWindow));
}

TEST_F(EngineRules, OffPutsAChangedQueueBackToItsSafeModeAndObserves) {
  QueueHandle q = Add();
  StartTry(q);
  Policy p = Adaptive();
  p.mode = ControllerMode::kOff;
  auto d = engine_.SetPolicy(q, p, now_);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
  EXPECT_EQ(d->state, QueueState::kObserving);
  EXPECT_FALSE(Interrupt(q, 1 * kUs * kWindow));
  // A queue found polling on its own keeps polling under off.
  Policy off;
  QueueHandle found_polling = Add(off, true, ReapMode::kPoll, ReapMode::kPoll);
  EXPECT_EQ(engine_.View(found_polling).mode, ReapMode::kPoll);
}

TEST_F(EngineRules, ShadowReportsWhatItWouldDoAndChangesNothing) {
  Policy p = Adaptive();
  p.mode = ControllerMode::kShadow;
  QueueHandle q = Add(p);
  auto d = Interrupt(q, 5 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->shadow);
  EXPECT_FALSE(d->Switches());
  EXPECT_EQ(d->to, ReapMode::kPoll);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_EQ(engine_.View(q).mode, ReapMode::kInterrupt);
  EXPECT_EQ(engine_.View(q).state, QueueState::kShadow);
  d = Interrupt(q, 15 * kUs * kWindow);
  EXPECT_FALSE(d->shadow);
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
  EXPECT_EQ(engine_.View(q).shadow_would_poll, 1u);
}

TEST_F(EngineRules, OverrideRulesUntilItExpires) {
  QueueHandle q = Add();
  auto d = engine_.SetOverride(q, Override{ReapMode::kPoll, now_ + 5'000'000}, now_);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kOverride);
  EXPECT_EQ(d->state, QueueState::kForced);
  EXPECT_TRUE(engine_.NeedsTimer(q));
  // A mode change under an override is remembered, not applied.
  Policy p = Adaptive();
  p.mode = ControllerMode::kInterrupt;
  EXPECT_FALSE(engine_.SetPolicy(q, p, now_));
  EXPECT_FALSE(engine_.OnTimer(q, now_ + 4'999'999, WindowProgress{}));
  d = engine_.OnTimer(q, now_ + 5'000'000, WindowProgress{});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kOverrideExpired);
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
  EXPECT_EQ(d->state, QueueState::kForced);
  EXPECT_FALSE(engine_.View(q).override_mode);
}

TEST_F(EngineRules, ClearingAnOverrideReturnsToTheRules) {
  QueueHandle q = Add();
  engine_.SetOverride(q, Override{ReapMode::kPoll, 0}, now_);
  EXPECT_FALSE(engine_.NeedsTimer(q));
  auto d = engine_.SetOverride(q, std::nullopt, now_);
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
  EXPECT_EQ(d->state, QueueState::kMeasuring);
}

TEST_F(EngineRules, AFailedLeverLeavesTheEngineFollowingTheRealMode) {
  QueueHandle q = Add();
  StartTry(q);
  auto d = engine_.OnLeverResult(q, ReapMode::kInterrupt, now_);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kLeverFailed);
  EXPECT_FALSE(d->Switches());
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
  EXPECT_EQ(engine_.View(q).mode, ReapMode::kInterrupt);
  EXPECT_FALSE(engine_.OnLeverResult(q, ReapMode::kInterrupt, now_));
}

TEST_F(EngineRules, WindowsInTheOtherModeArePredatingASwitchAndIgnored) {
  QueueHandle q = Add();
  StartTry(q);
  EXPECT_FALSE(Interrupt(q, 50 * kUs * kWindow));
  EXPECT_EQ(engine_.View(q).ignored_windows, 1u);
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
}

TEST_F(EngineRules, RemovedQueueIsForgottenAndItsHandleReused) {
  QueueHandle a = Add();
  engine_.RemoveQueue(a);
  EXPECT_FALSE(engine_.Contains(a));
  EXPECT_FALSE(Interrupt(a, 1 * kUs * kWindow));
  EXPECT_EQ(engine_.Size(), 0u);
  QueueHandle b = Add();
  EXPECT_EQ(b, a);
  EXPECT_EQ(engine_.View(b).windows, 0u);
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
