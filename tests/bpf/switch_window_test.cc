// SPDX-License-Identifier: Apache-2.0
// When a try's clock starts (DESIGN.md section 3), as the BPF side does it: a switch is published pending
// before the lever acts; the driver's mode probe (or the agent's mode_since once the lever returned) starts
// the new window; every completion after that counts in it and nothing before is charged to it. Records
// carry their own window's generation; a pace miss a full ring buffer refused is sent again, and so is one
// once the window's limit loosened; a batch is held to k + n - 1 when the policy allows it. Root only; nothing is attached.
#include "tests/bpf/window_fixture.h"

namespace nvmeadapt::collect {
namespace {

class SwitchWindowTest : public WindowLogicTest {
 protected:
  // Generation 1, interrupt mode, settled at t = 1000: a measuring queue the agent manages.
  void Manage() {
    control_.generation = 1;
    control_.mode = ReapMode::kInterrupt;
    control_.mode_since = 1'000;
    control_.window_completions = 16;
    Publish();
  }
  void Publish() { ASSERT_TRUE(collector_->SetQueueControl(key_, control_).ok()); }
  // What the switch protocol publishes before the lever acts: generation 2, polling against a baseline, pending.
  void PublishPendingPoll() {
    control_.generation = 2;
    control_.mode = ReapMode::kPoll;
    control_.mode_since = 0;
    control_.baseline_span = 16'000;  // 1 us per completion
    control_.baseline_completions = 16;
    control_.pace_slack = 2'000;
    Publish();
  }

  QueueControl control_;
};

TEST_F(SwitchWindowTest, APendingSwitchStartsAtTheDriversModeProbeAndCountsEveryCompletionAfterIt) {
  Manage();
  for (uint32_t i = 0; i < 5; ++i) Complete(key_, 2'000 + i * 100, 1, 0, NA_MODE_INTERRUPT);
  PublishPendingPoll();
  // Reaped in the old mode while the lever's request travels: the old window, no pace check (these are
  // 10 us apart, far behind a 1 us pace).
  for (uint32_t i = 0; i < 3; ++i) Complete(key_, 10'000 + i * 10'000, 1, 0, NA_MODE_INTERRUPT);
  EXPECT_EQ(Counters(key_).generation, 1u);
  DriverSwitched(key_, 50'000, ReapMode::kPoll);
  QueueCounters counters = Counters(key_);
  EXPECT_EQ(counters.generation, 2u);
  EXPECT_EQ(counters.progress.start, 50'000);
  EXPECT_EQ(counters.progress.completions, 0u);
  EXPECT_EQ(counters.abandoned_completions, 8u);
  // Polling at the baseline's pace from the probe on: 16 completions 1 us apart close the window.
  for (uint32_t i = 1; i <= 16; ++i) Complete(key_, 50'000 + i * 1'000 - 1, 1, 0, NA_MODE_POLL);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u) << "no pace miss: every completion after the switch is counted";
  EXPECT_FALSE(events[0].pace_miss.has_value());
  EXPECT_EQ(events[0].generation, 2u);
  EXPECT_EQ(events[0].mode, ReapMode::kPoll);
  EXPECT_EQ(events[0].completions, 16u);
  EXPECT_EQ(events[0].start, 50'000);
  EXPECT_EQ(events[0].first, 50'999);
  EXPECT_EQ(Counters(key_).completions, 24u);
}

// engine::Policy::try_clock_first_completion: the try's first completion comes a device round trip (30 us)
// after the switch, then the queue polls at the baseline's pace. With the clock at the switch, k = 1 is
// 29 us behind a 1 us pace and the BPF side sends a pace miss; with the clock at the first completion the
// try's window starts there (0 meanwhile: no start yet, no pace check), and nothing is behind.
TEST_F(SwitchWindowTest, TryClockAtTheFirstCompletionStartsTheTrysWindowThere) {
  Manage();
  uint32_t generation = 1;
  engine::Nanos t = 0;
  for (bool first_clock : {false, true}) {
    SCOPED_TRACE(first_clock ? "clock at the first completion" : "clock at the switch");
    PublishPendingPoll();
    control_.generation = ++generation;
    control_.try_clock_first_completion = first_clock;
    Publish();
    t += 100'000;
    DriverSwitched(key_, t, ReapMode::kPoll);
    EXPECT_EQ(Counters(key_).progress.start, first_clock ? 0 : t);
    for (uint32_t i = 0; i < 16; ++i) Complete(key_, t + 30'000 + i * 1'000, 1, 0, NA_MODE_POLL);
    const auto events = Drain();
    ASSERT_FALSE(events.empty());
    const auto& window = events.back();
    EXPECT_FALSE(window.pace_miss.has_value());
    EXPECT_EQ(window.completions, 16u);
    EXPECT_EQ(window.start, first_clock ? t + 30'000 : t);
    EXPECT_EQ(window.first, t + 30'000);
    if (first_clock) {
      EXPECT_EQ(events.size(), 1u) << "no pace miss: the clock started at the first completion";
    } else {
      ASSERT_EQ(events.size(), 2u);
      ASSERT_TRUE(events[0].pace_miss.has_value()) << "k = 1 a round trip after the switch is behind pace";
      EXPECT_EQ(events[0].pace_miss->completion_index, 1u);
    }
    // The next window of the run starts where this one ended, whichever the clock.
    EXPECT_EQ(Counters(key_).progress.start, t + 45'000);
    t += 100'000;
  }
}

TEST_F(SwitchWindowTest, WithoutAProbeTheWindowStartsWhereTheAgentSaysTheLeverReturned) {
  Manage();
  Complete(key_, 2'000, 1, 0, NA_MODE_UNKNOWN);
  PublishPendingPoll();
  Complete(key_, 5'000, 1, 0, NA_MODE_UNKNOWN);  // still pending: old window
  EXPECT_EQ(Counters(key_).generation, 1u);
  control_.mode_since = 7'000;  // the lever's write returned at 7 us
  Publish();
  Complete(key_, 7'500, 1, 0, NA_MODE_UNKNOWN);
  const QueueCounters counters = Counters(key_);
  EXPECT_EQ(counters.generation, 2u);
  EXPECT_EQ(counters.progress.start, 7'000);
  EXPECT_EQ(counters.progress.completions, 1u);
  EXPECT_EQ(counters.window_first, 7'500);
  // A driver probe for the same generation after that is a switch of its own: a fresh window.
  DriverSwitched(key_, 9'000, ReapMode::kPoll);
  EXPECT_EQ(Counters(key_).progress.start, 9'000);
  EXPECT_EQ(Counters(key_).generation, 2u);
}

// While a switch is pending no completion closes a window or checks pace (they cannot tell which mode
// they were reaped in); when the lever refuses, the agent puts the control back and the old window goes
// on and closes as what it was: interrupt mode, generation 1.
TEST_F(SwitchWindowTest, APendingSwitchNeitherClosesNorJudgesAndARefusedOneLeavesTheOldWindowAsItWas) {
  Manage();
  for (uint32_t i = 0; i < 10; ++i) Complete(key_, 2'000 + i * 100, 1, 0, NA_MODE_INTERRUPT);
  PublishPendingPoll();
  for (uint32_t i = 0; i < 7; ++i) Complete(key_, 40'000 + i * 10'000, 1, 0, NA_MODE_INTERRUPT);
  EXPECT_TRUE(Drain().empty()) << "the over-full window waits, and 10 us gaps are no pace miss while pending";
  control_.generation = 1;  // the lever refused: the control as it was
  control_.mode = ReapMode::kInterrupt;
  control_.mode_since = 1'000;
  control_.baseline_completions = 0;
  Publish();
  Complete(key_, 200'000, 1, 0, NA_MODE_INTERRUPT);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].generation, 1u);
  EXPECT_EQ(events[0].mode, ReapMode::kInterrupt);
  EXPECT_EQ(events[0].completions, 18u);
  EXPECT_EQ(events[0].start, 1'000);
  EXPECT_FALSE(events[0].pace_miss.has_value());
}

// One nanosecond either side of the batch-aware limit, with and without the allowance; the BPF side
// agrees with Engine::PaceIndex / PaceLimit.
TEST_F(SwitchWindowTest, ABatchIsHeldToKPlusNMinusOneWithTheAllowanceAndToKWithout) {
  Manage();
  for (bool allowance : {true, false}) {
    SCOPED_TRACE(allowance ? "allowance on" : "allowance off");
    control_.batch_pace_allowance = allowance;
    control_.window_completions = 64;
    PublishPendingPoll();
    control_.generation = allowance ? 2 : 4;
    control_.mode_since = 100'000;
    Publish();
    const uint32_t n = 8, k = 16;  // two reaps of 8: the second brings the window to k = 16
    const uint32_t index = engine::Engine::PaceIndex(k, n, allowance);
    EXPECT_EQ(index, allowance ? k + n - 1 : k);
    const engine::Nanos limit =
        engine::Engine::PaceLimit(index, control_.baseline_span, control_.baseline_completions, control_.pace_slack);
    Complete(key_, 100'000 + 1'000, n, 0, NA_MODE_POLL);
    Complete(key_, 100'000 + limit, n, 0, NA_MODE_POLL);  // exactly at the limit: on pace
    EXPECT_TRUE(Drain().empty());
    // The same reap one nanosecond later, in a fresh window of the next generation.
    control_.generation += 1;
    control_.mode_since = 200'000;
    Publish();
    Complete(key_, 200'000 + 1'000, n, 0, NA_MODE_POLL);
    Complete(key_, 200'000 + limit + 1, n, 0, NA_MODE_POLL);
    const auto events = Drain();
    ASSERT_EQ(events.size(), 1u);
    ASSERT_TRUE(events[0].pace_miss.has_value());
    EXPECT_EQ(events[0].pace_miss->completion_index, k);
    EXPECT_EQ(events[0].pace_miss->batch, n);
    EXPECT_EQ(events[0].pace_miss->elapsed, limit + 1);
  }
}

// Issue 33, behaviour 2: the engine's credit reaches the BPF side only once the agent handled the kept
// window before, so the window's first early record may be one the engine forgives. Once the agent has
// pushed the looser limit, a completion behind it sends another record; one per limit, as before.
TEST_F(SwitchWindowTest, ACreditTheBpfSideDidNotKnowYetDoesNotBlindTheRestOfTheWindow) {
  Manage();
  control_.window_completions = 64;
  PublishPendingPoll();  // 1 us per completion, 2 us of slack
  control_.mode_since = 100'000;
  Publish();
  Complete(key_, 100'000 + 4'000, 1, 0, NA_MODE_POLL);  // k = 1: behind the 3 us limit without the credit
  control_.pace_slack = 2'000 + 50'000;                  // the kept window's credit arrives: same generation
  Publish();
  Complete(key_, 100'000 + 10'000, 1, 0, NA_MODE_POLL);   // k = 2: within 54 us
  Complete(key_, 100'000 + 60'000, 1, 0, NA_MODE_POLL);   // k = 3: behind 55 us: the engine confirms this one
  Complete(key_, 100'000 + 100'000, 1, 0, NA_MODE_POLL);  // further behind the same limit: no third record
  const auto events = Drain();
  ASSERT_EQ(events.size(), 2u);
  ASSERT_TRUE(events[0].pace_miss.has_value());
  EXPECT_EQ(events[0].pace_miss->completion_index, 1u);
  ASSERT_TRUE(events[1].pace_miss.has_value());
  EXPECT_EQ(events[1].pace_miss->completion_index, 3u);
  EXPECT_EQ(events[1].pace_miss->elapsed, 60'000);
  EXPECT_EQ(events[1].generation, 2u);
  ASSERT_TRUE(engine::Engine::BehindPace(3, 60'000, control_.baseline_span, control_.baseline_completions,
                                         control_.pace_slack));
}

TEST_F(SwitchWindowTest, APaceMissTheFullRingBufferRefusedIsSentByTheNextCompletionBehind) {
  // Fill the ring buffer with one-completion windows of another queue, without reading it.
  const QueueKey flood{Source::kUvnvme, 9, 9, 424242};
  QueueControl tiny;
  tiny.generation = 1;
  tiny.mode_since = 1;
  tiny.window_completions = 1;
  ASSERT_TRUE(collector_->SetQueueControl(flood, tiny).ok());
  uint64_t t = 10;
  while (collector_->Stats().ringbuf_drops == 0 && t < 100'000) Complete(flood, t++, 1, 0, NA_MODE_INTERRUPT);
  ASSERT_GT(collector_->Stats().ringbuf_drops, 0u) << "the ring buffer never filled";
  Manage();
  PublishPendingPoll();
  control_.mode_since = 1'000'000;
  Publish();
  Complete(key_, 1'000'000 + 10'000, 1, 0, NA_MODE_POLL);  // 10 us for the first: behind a 3 us limit
  EXPECT_EQ(Counters(key_).pace_miss_retries, 1u);
  Drain();  // the ring buffer has room again
  Complete(key_, 1'000'000 + 11'000, 1, 0, NA_MODE_POLL);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].pace_miss.has_value());
  EXPECT_EQ(events[0].pace_miss->completion_index, 2u);
  EXPECT_EQ(events[0].generation, 2u);
}

}  // namespace
}  // namespace nvmeadapt::collect
