// SPDX-License-Identifier: Apache-2.0
// The edges of each rule: exactly at a bound is on one side, one unit past it on the other. Then the four edge
// cases of issue 33: a try whose load ended, the BPF side's early record against the credit (its BPF half:
// tests/bpf/switch_window_test.cc), idle time, the bounded window counts and a failed counter read.
#include <gtest/gtest.h>

#include "agent/engine/policy.h"
#include "agent/engine/policy_fields.h"
#include "agent/engine/trace.h"
#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

using EngineEdges = EngineFixture;

TEST_F(EngineEdges, AWindowIsFullAtExactly8192Completions) {
  QueueHandle q = Add();
  EXPECT_FALSE(Interrupt(q, 5 * kUs * 8191, 8191));
  EXPECT_EQ(engine_.View(q).ignored_windows, 1u);
  auto d = Interrupt(q, 5 * kUs * 8192, 8192);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
}

TEST_F(EngineEdges, AverageOfExactly10usTries) {
  QueueHandle q = Add();
  auto d = Interrupt(q, 10 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kWindowFast);
}

TEST_F(EngineEdges, AverageOf10usPlus1nsDoesNotTry) {
  QueueHandle q = Add();
  auto d = Interrupt(q, (10 * kUs + 1) * kWindow);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
}

TEST_F(EngineEdges, OneNanosecondOverTheWholeWindowBudgetDoesNotTry) {
  // The average is 10 us + 1/8192 ns: still above the threshold, exact arithmetic must see it.
  QueueHandle q = Add();
  auto d = Interrupt(q, 10 * kUs * kWindow + 1);
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
}

TEST_F(EngineEdges, ElapsedExactlyAtTheSlackPasses) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  const Nanos at_limit = 100 * 5 * kUs + 20 * kUs;
  EXPECT_FALSE(Engine::BehindPace(100, at_limit, 5 * kUs * kWindow, kWindow, 20 * kUs));
  EXPECT_EQ(Engine::PaceLimit(100, 5 * kUs * kWindow, kWindow, 20 * kUs), at_limit);
  EXPECT_FALSE(Miss(q, 100, at_limit));
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
}

TEST_F(EngineEdges, Elapsed1nsOverTheSlackFails) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  const Nanos over = 100 * 5 * kUs + 20 * kUs + 1;
  EXPECT_TRUE(Engine::BehindPace(100, over, 5 * kUs * kWindow, kWindow, 20 * kUs));
  auto d = Miss(q, 100, over);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
}

TEST_F(EngineEdges, PaceWithAFractionalPerCompletionBaselineIsExact) {
  // Baseline 8192 completions in 8192 * 5 us + 1 ns: at k = 8192 the limit is the baseline + slack.
  const Nanos span = 5 * kUs * kWindow + 1;
  EXPECT_FALSE(Engine::BehindPace(kWindow, span + 20 * kUs, span, kWindow, 20 * kUs));
  EXPECT_TRUE(Engine::BehindPace(kWindow, span + 20 * kUs + 1, span, kWindow, 20 * kUs));
  // At k = 1 the exact limit is 5000 + 1/8192 ns + slack: 5000 + slack passes, 5001 + slack fails.
  EXPECT_FALSE(Engine::BehindPace(1, 5 * kUs + 20 * kUs, span, kWindow, 20 * kUs));
  EXPECT_TRUE(Engine::BehindPace(1, 5 * kUs + 1 + 20 * kUs, span, kWindow, 20 * kUs));
}

TEST_F(EngineEdges, TimerExactlyAtThePaceLimitWaits) {
  Policy p = Adaptive();
  p.timer_granularity = 10 * kUs;  // the smallest: the pace limit, not the quiet period, decides here
  QueueHandle q = Add(p);
  StartTry(q, 5 * kUs);
  const Nanos start = now_;
  EXPECT_FALSE(engine_.OnTimer(q, start + 20 * kUs + 5 * kUs, WindowProgress{start, 0}));
  EXPECT_TRUE(engine_.OnTimer(q, start + 20 * kUs + 5 * kUs + 1, WindowProgress{start, 0}));
}

TEST_F(EngineEdges, TimerExactlyOnePeriodAfterTheLastCompletionJudges) {
  Policy p = Adaptive();
  p.timer_granularity = 100 * kUs;
  QueueHandle q = Add(p);
  StartTry(q, 5 * kUs);
  const Nanos start = now_;
  // 3 completions, the last at 15 us; the 4th was due at 40 us. Quiet since 15 us.
  EXPECT_FALSE(engine_.OnTimer(q, start + 115 * kUs - 1, WindowProgress{start, 3, start + 15 * kUs}));
  EXPECT_TRUE(engine_.OnTimer(q, start + 115 * kUs, WindowProgress{start, 3, start + 15 * kUs}));
}

TEST_F(EngineEdges, PollSpanEqualToTheBaselineFails) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  auto d = Poll(q, 5 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kNotFaster);
  EXPECT_EQ(d->measured, d->limit);
}

TEST_F(EngineEdges, PollSpan1nsShorterThanTheBaselinePasses) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  auto d = Poll(q, 5 * kUs * kWindow - 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kPollWindowFaster);
}

TEST_F(EngineEdges, ZeroBackoffWindowsGoesStraightToMeasuring) {
  Policy p = Adaptive();
  p.max_failures = 1;
  p.backoff_windows = 0;
  QueueHandle q = Add(p);
  StartTry(q);
  auto d = Poll(q, 6 * kUs * kWindow);
  EXPECT_TRUE(d->backoff_started);
  EXPECT_EQ(d->state, QueueState::kMeasuring);
  StartTry(q);
}

TEST_F(EngineEdges, MaxPollWindowsOfOneRemeasuresAfterEverySuccess) {
  Policy p = Adaptive();
  p.max_poll_windows = 1;
  QueueHandle q = Add(p);
  StartTry(q);
  auto d = Poll(q, 4 * kUs * kWindow);
  EXPECT_EQ(d->reason, Reason::kMaxPollWindows);
  EXPECT_TRUE(d->Switches());
}

class EngineEdgeCases : public EngineFixture {
 protected:
  static Policy WithStallBackoff() {
    Policy p = Adaptive();
    p.stall_backoff = true;
    return p;
  }
  // The try in flight reaped 2 completions in 10 us, then none for 2 ms.
  std::optional<Decision> QuietFor2ms(QueueHandle q, std::optional<uint32_t> in_flight, bool known = true) {
    const Nanos start = now_;
    now_ += 2'000'000;
    WindowProgress progress{start, 2, start + 10 * kUs};
    progress.in_flight = in_flight;
    progress.known = known;
    return engine_.OnTimer(q, now_, progress);
  }
};

TEST_F(EngineEdgeCases, ATryWhoseQueueHasNothingInFlightEndsWithoutAFailure) {
  const QueueHandle q = Add(WithStallBackoff());
  StartTry(q);
  auto d = QuietFor2ms(q, 0u);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kDrained);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
  EXPECT_FALSE(d->backoff_started);
  EXPECT_EQ(engine_.View(q).failures, 0u);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
  StartTry(q);  // the next load is measured and tried as a new one
}

TEST_F(EngineEdgeCases, ATryWithWorkInFlightOrUnknownStillStalls) {
  const QueueHandle q = Add(WithStallBackoff());
  StartTry(q);
  auto d = QuietFor2ms(q, 3u);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kStalled);
  EXPECT_TRUE(d->backoff_started);
  const QueueHandle unknown = Add(WithStallBackoff());
  StartTry(unknown);
  d = QuietFor2ms(unknown, std::nullopt);  // the collector cannot tell: work is assumed in flight
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kStalled);
}

// The window's first early record was sent before the kept window's credit reached the BPF side: the
// engine forgives it. The BPF side sends another once the looser limit arrived, and the engine acts on it
// within the window instead of waiting for its end.
TEST_F(EngineEdgeCases, ACreditTheBpfSideDidNotKnowYetDoesNotBlindTheRestOfTheWindow) {
  Policy p = Adaptive();
  p.pace_credit = 100 * kUs;
  const QueueHandle q = Add(p);
  StartTry(q);
  Poll(q, 3 * kUs * kWindow);
  EXPECT_FALSE(Miss(q, 9, 105 * kUs)) << "within 45 + 20 + 100 us: forgiven";
  auto second = Miss(q, 40, 400 * kUs);  // the same window, far behind 200 + 20 + 100 us
  ASSERT_TRUE(second);
  EXPECT_EQ(second->reason, Reason::kBehindPace);
  EXPECT_EQ(second->pace_index, 40u);
  EXPECT_EQ(second->limit, 320 * kUs);
  EXPECT_EQ(engine_.View(q).rejected_pace_misses, 1u);
}

TEST_F(EngineEdgeCases, AFailedCounterReadDuringALongPollingRunIsNotAStall) {
  const QueueHandle q = Add();
  StartTry(q);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(Poll(q, 4 * kUs * kWindow)->reason, Reason::kPollWindowFaster);
  // The agent's fallback when the read fails: the window from the mode's start, nothing known of it.
  WindowProgress unread{now_ - 10 * 4 * kUs * kWindow, 0};
  unread.known = false;
  EXPECT_FALSE(engine_.OnTimer(q, now_ + 5'000'000, unread));
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
}

TEST_F(EngineEdgeCases, ATimerLineCarriesNothingInFlightAndAFailedReadToReplay) {
  const std::string trace = "queue q eligible=1 mode=adaptive window=16 stall_backoff=1\n"
                            "window q interrupt 16 0 80000\n";  // 5 us per completion: try
  WindowProgress drained{80000, 2, 90000};
  drained.in_flight = 0;
  WindowProgress unread{80000, 0};
  unread.known = false;
  const std::string drained_line = FormatTimerLine("q", 2'000'000, drained);
  const std::string unread_line = FormatTimerLine("q", 2'000'000, unread);
  EXPECT_EQ(drained_line, "timer q 2000000 80000 2 90000 inflight=0");
  EXPECT_EQ(unread_line, "timer q 2000000 80000 0 0 unread=1");
  auto replayed = ReplayTrace(trace + unread_line + "\n" + drained_line + "\n");
  ASSERT_TRUE(replayed) << replayed.error().message;
  ASSERT_EQ(replayed->size(), 2u);  // the try, then the drained end; the unread look decided nothing
  EXPECT_NE(replayed->back().find("reason=drained"), std::string::npos) << replayed->back();
  EXPECT_FALSE(ReplayTrace(trace + "timer q 2000000 80000 2 90000 inflight=x\n"));
}

TEST_F(EngineEdgeCases, TheTwoWindowCountsAreBounded) {
  for (const char* name : {"backoff_windows", "max_poll_windows"}) {
    const PolicyField* field = FindPolicyField(name);
    ASSERT_NE(field, nullptr) << name;
    Policy p = Adaptive();
    field->set(p, field->max);
    EXPECT_TRUE(ValidatePolicy(p)) << name;
    field->set(p, 4'000'000'000);  // a permanent backoff, a run never re-measured
    Status status = ValidatePolicy(p);
    ASSERT_FALSE(status) << name;
    EXPECT_NE(status.error().message.find(std::string("policy.") + name), std::string::npos) << status.error().message;
  }
}

TEST_F(EngineEdgeCases, LevelsDecayAfterIdleTime) {
  Policy p = Adaptive();
  p.max_backoff_windows = 1024;
  p.max_poll_run_windows = 1024;
  const QueueHandle q = Add(p);
  // Two backoffs in a row: the next would be 256 windows.
  for (int backoff = 0; backoff < 2; ++backoff) {
    for (int i = 0; i < 3; ++i) {
      StartTry(q);
      ASSERT_EQ(Poll(q, 5 * kUs * kWindow)->reason, Reason::kNotFaster);
    }
    while (engine_.View(q).state == QueueState::kBackoff) Interrupt(q, 5 * kUs * kWindow);
  }
  for (int i = 0; i < 3; ++i) {
    StartTry(q);
    ASSERT_EQ(Poll(q, 5 * kUs * kWindow)->reason, Reason::kNotFaster);
  }
  ASSERT_EQ(engine_.View(q).backoff_left, 256u);
  ASSERT_EQ(engine_.View(q).backoff_level, 3u);
  // A window just under 8 x its baseline's length is load, however slow: the backoff goes on.
  auto d = Interrupt(q, 8 * 5 * kUs * kWindow - 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBackingOff);
  // The queue idled: its next window took 8 x as long. The backoff ends and the levels start again.
  d = Interrupt(q, 8 * 5 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kLoadChanged);
  EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
  EXPECT_EQ(engine_.View(q).backoff_level, 0u);
  for (int i = 0; i < 3; ++i) {
    StartTry(q);
    ASSERT_EQ(Poll(q, 5 * kUs * kWindow)->reason, Reason::kNotFaster);
  }
  EXPECT_EQ(engine_.View(q).backoff_left, 64u);
}

TEST_F(EngineEdgeCases, IdleTimeAlsoStartsTheRunLengthAgain) {
  Policy p = Adaptive();
  p.max_poll_windows = 2;
  p.max_poll_run_windows = 16;
  const QueueHandle q = Add(p);
  StartTry(q, 1 * kUs);
  for (int run = 0; run < 2; ++run) {  // two re-measures that keep polling: the next run is 8 windows
    while (Poll(q, kUs / 2 * kWindow)->reason != Reason::kMaxPollWindows) {}
    ASSERT_EQ(Interrupt(q, 1 * kUs * kWindow)->reason, Reason::kWindowFast);
  }
  ASSERT_EQ(engine_.View(q).poll_run_level, 2u);
  while (Poll(q, kUs / 2 * kWindow)->reason != Reason::kMaxPollWindows) {}
  // The re-measure's window took 8 x its baseline's length (the queue idled), and is still fast enough to
  // try: a new try, its run max_poll_windows long, not a resumed run.
  auto d = Interrupt(q, 8 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_EQ(engine_.View(q).poll_run_level, 0u);
  EXPECT_EQ(engine_.View(q).pace_credit, 0);
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
