// SPDX-License-Identifier: Apache-2.0
// The per-queue accounting of bpf/na_queue.bpf.h run through BPF_PROG_TEST_RUN with a chosen clock
// (na_test_account): windows, restarts at a control generation change, the pace check at its exact
// boundary, batches, driver tallies, the histogram, home slots and slot reuse. Root only; nothing is attached.
#include <chrono>
#include <thread>

#include "agent/collect/records.h"
#include "tests/bpf/window_fixture.h"

namespace nvmeadapt::collect {
namespace {

TEST_F(WindowLogicTest, WindowsCloseEveryWindowCompletionsAndChainTheirSpans) {
  const uint64_t t0 = 1'000'000, step = 100;
  const uint32_t total = 3 * kWindow + 5;
  for (uint32_t i = 0; i < total; ++i) Complete(key_, t0 + i * step);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 3u);
  for (size_t w = 0; w < events.size(); ++w) {
    EXPECT_EQ(events[w].completions, kWindow);
    EXPECT_FALSE(events[w].pace_miss.has_value());
    EXPECT_EQ(events[w].bytes, 4096u * kWindow);
    EXPECT_EQ(events[w].generation, 0u);
    EXPECT_FALSE(events[w].mode_known);
    // The first window opens at the first completion; each later one where the previous ended.
    const uint64_t start = w == 0 ? t0 : t0 + (w * kWindow - 1) * step;
    EXPECT_EQ(static_cast<uint64_t>(events[w].start), start) << "window " << w;
    EXPECT_EQ(static_cast<uint64_t>(events[w].end), t0 + ((w + 1) * kWindow - 1) * step) << "window " << w;
  }
  const QueueCounters counters = Counters(key_);
  EXPECT_EQ(counters.completions, total);
  EXPECT_EQ(counters.progress.completions, 5u);
  EXPECT_EQ(counters.bytes, 4096u * total);
  // 100 ns intervals are in bucket 6 = [64, 128); the first completion has no predecessor.
  EXPECT_EQ(counters.interval_histogram[6], total - 1);
  uint64_t histogram_total = 0;
  for (uint64_t bucket : counters.interval_histogram) histogram_total += bucket;
  EXPECT_EQ(histogram_total, total - 1);
}

TEST_F(WindowLogicTest, GenerationChangeRestartsTheWindowAtModeSince) {
  for (uint32_t i = 0; i < 10; ++i) Complete(key_, 5'000 + i);
  QueueControl control;
  control.generation = 1;
  control.mode = ReapMode::kInterrupt;
  control.mode_since = 20'000;
  control.window_completions = 8;
  ASSERT_TRUE(collector_->SetQueueControl(key_, control).ok());
  for (uint32_t i = 0; i < 8; ++i) Complete(key_, 30'000 + i * 10);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].completions, 8u);
  EXPECT_EQ(events[0].start, 20'000);
  EXPECT_EQ(events[0].end, 30'070);
  EXPECT_EQ(events[0].generation, 1u);
  EXPECT_TRUE(events[0].mode_known);
  EXPECT_EQ(events[0].mode, ReapMode::kInterrupt);
  // The 10 completions of the abandoned window stay in the totals.
  EXPECT_EQ(Counters(key_).completions, 18u);
  EXPECT_EQ(Counters(key_).generation, 1u);
}

// The BPF pace check must agree with Engine::BehindPace at the boundary: elapsed == limit passes,
// limit + 1 fails, and only the first miss of a window is sent.
TEST_F(WindowLogicTest, PaceMissAtTheEngineBoundaryOncePerWindow) {
  QueueControl control;
  control.generation = 2;
  control.mode = ReapMode::kPoll;
  control.mode_since = 100'000;
  control.baseline_span = 333'333;  // not a multiple of n: exercises the remainder term
  control.baseline_completions = 100;
  control.pace_slack = 5'000;
  control.window_completions = 100;
  ASSERT_TRUE(collector_->SetQueueControl(key_, control).ok());
  auto limit = [&](uint32_t k) {
    return engine::Engine::PaceLimit(k, control.baseline_span, control.baseline_completions, control.pace_slack);
  };
  for (uint32_t k = 1; k <= 10; ++k) {
    ASSERT_FALSE(engine::Engine::BehindPace(k, limit(k), control.baseline_span, control.baseline_completions,
                                            control.pace_slack));
    Complete(key_, control.mode_since + limit(k));
  }
  EXPECT_TRUE(Drain().empty()) << "exactly at the limit is on pace";
  const uint32_t k = 11;
  const engine::Nanos late = limit(k) + 1;
  ASSERT_TRUE(engine::Engine::BehindPace(k, late, control.baseline_span, control.baseline_completions,
                                         control.pace_slack));
  Complete(key_, control.mode_since + late);
  Complete(key_, control.mode_since + late + 1'000'000);  // further behind: no second record
  auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].pace_miss.has_value());
  EXPECT_EQ(events[0].pace_miss->completion_index, k);
  EXPECT_EQ(events[0].pace_miss->elapsed, late);
  EXPECT_EQ(events[0].completions, k);
  EXPECT_EQ(events[0].generation, 2u);
  EXPECT_EQ(events[0].mode, ReapMode::kPoll);

  // The window goes on to its end; the next window may report again.
  uint64_t now = control.mode_since + late + 1'000'000;
  for (uint32_t i = 13; i <= 100; ++i) Complete(key_, ++now);
  events = Drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].pace_miss.has_value());
  EXPECT_EQ(events[0].completions, 100u);
  Complete(key_, now + 10'000'000);
  events = Drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].pace_miss.has_value());
  EXPECT_EQ(events[0].pace_miss->completion_index, 1u);
}

TEST_F(WindowLogicTest, BatchesCrossTheBoundaryWhole) {
  for (uint32_t call = 1; call <= 3; ++call) Complete(key_, 1'000 * call, 24, 0, NA_MODE_POLL);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].completions, 72u);
  EXPECT_TRUE(events[0].mode_known) << "an unmanaged queue reports the mode its hook observed";
  EXPECT_EQ(events[0].mode, ReapMode::kPoll);
  const QueueCounters counters = Counters(key_);
  EXPECT_EQ(counters.poll_completions, 72u);
  EXPECT_EQ(counters.progress.completions, 0u);
  // Gaps of 1000 ns over 24 completions each: 24 intervals of 41 ns, bucket 5 = [32, 64).
  EXPECT_EQ(counters.interval_histogram[5], 48u);
}

TEST_F(WindowLogicTest, ShrinkingTheWindowClosesTheOverfullWindowAtTheNextCompletion) {
  QueueControl control;
  control.generation = 1;
  control.mode_since = 500;
  control.window_completions = 50;
  ASSERT_TRUE(collector_->SetQueueControl(key_, control).ok());
  for (uint32_t i = 0; i < 30; ++i) Complete(key_, 1'000 + i);
  control.window_completions = 20;  // same generation: the window in flight is judged by the new size
  ASSERT_TRUE(collector_->SetQueueControl(key_, control).ok());
  Complete(key_, 2'000);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].completions, 31u);
}

TEST_F(WindowLogicTest, ForgottenSlotsAreReusedClean) {
  for (uint32_t i = 0; i < 10; ++i) Complete(key_, 1'000 + i);
  ASSERT_TRUE(collector_->ForgetQueue(key_).ok());
  EXPECT_FALSE(collector_->ReadCounters(key_).ok());
  const QueueKey other{Source::kSpdk, 1, 2, 99};
  Complete(other, 50'000);
  const QueueCounters counters = Counters(other);
  EXPECT_EQ(counters.completions, 1u);
  EXPECT_EQ(counters.progress.start, 50'000);
  const auto keys = collector_->ObservedQueues();
  EXPECT_EQ(std::count(keys.begin(), keys.end(), key_), 0);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), other), 1);
}

// A tally is one reap of n at its last time: a window closes at the tally that reaches its size, with the
// whole tally in it, and takes the tally's first reap as its first completion.
TEST_F(WindowLogicTest, TalliesCloseWindowsWholeAndOpenThemAtTheirFirstReap) {
  Tally(key_, 10'000, 2'000, 40, 3);
  Tally(key_, 20'000, 12'000, 40, 5);
  Tally(key_, 30'000, 22'000, 10, 10);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].completions, 80u);
  EXPECT_EQ(events[0].first, 2'000);
  EXPECT_EQ(events[0].end, 20'000);
  const QueueCounters counters = Counters(key_);
  EXPECT_EQ(counters.completions, 90u);
  EXPECT_EQ(counters.poll_completions, 90u);
  EXPECT_EQ(counters.progress.completions, 10u);
  EXPECT_EQ(counters.window_first, 22'000) << "the window the third tally opened";
}

// The pace check of a tally is the per-reap check of its last reap: index k + last_reap - 1, not k + n - 1.
TEST_F(WindowLogicTest, ATallyIsHeldToThePaceOfItsLastReap) {
  QueueControl control;
  control.generation = 1;
  control.mode = ReapMode::kPoll;
  control.mode_since = 100'000;
  control.baseline_span = 100'000;
  control.baseline_completions = 100;  // 1000 ns per completion
  control.pace_slack = 0;
  control.window_completions = 1000;
  ASSERT_TRUE(collector_->SetQueueControl(key_, control).ok());
  // k = 20 after a last reap of 1: limit 20,000 ns. A batch allowance of the whole tally would be 39,000.
  Tally(key_, control.mode_since + 25'000, control.mode_since + 1'000, 20, 1);
  const auto events = Drain();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].pace_miss.has_value());
  EXPECT_EQ(events[0].pace_miss->completion_index, 20u);
  EXPECT_EQ(events[0].pace_miss->batch, 1u);
}

// Slots live at their key's home slot where it is free (bpf/nvme_adapt.h): a second queue of the same
// home takes the next one, a forgotten home slot is claimed again, and every queue keeps its own counts,
// whichever side (agent or BPF) allocated it.
TEST_F(WindowLogicTest, QueuesOfOneHomeSlotShareNothing) {
  std::vector<QueueKey> same_home;
  const na_queue_key own = ToBpfKey(key_);
  const uint32_t home = na_home_slot(&own);
  for (uint32_t qid = 1; same_home.size() < 2 && qid < 1'000'000; ++qid) {
    const QueueKey candidate{Source::kUvnvme, 7, qid, 5151};
    const na_queue_key bpf_key = ToBpfKey(candidate);
    if (na_home_slot(&bpf_key) == home) same_home.push_back(candidate);
  }
  ASSERT_EQ(same_home.size(), 2u) << "no keys of the same home slot found";
  QueueControl control;
  control.generation = 1;
  control.mode_since = 1;
  ASSERT_TRUE(collector_->SetQueueControl(key_, control).ok());  // the agent allocates: home
  for (uint32_t i = 0; i < 5; ++i) Complete(same_home[0], 1'000 + i);  // BPF allocates: next
  for (uint32_t i = 0; i < 3; ++i) Complete(key_, 2'000 + i);
  EXPECT_EQ(Counters(key_).completions, 3u);
  EXPECT_EQ(Counters(same_home[0]).completions, 5u);
  ASSERT_TRUE(collector_->ForgetQueue(key_).ok());
  for (uint32_t i = 0; i < 7; ++i) Complete(same_home[1], 3'000 + i);  // reclaims home
  Complete(same_home[0], 4'000);
  EXPECT_EQ(Counters(same_home[1]).completions, 7u);
  EXPECT_EQ(Counters(same_home[1]).progress.start, 3'000);
  EXPECT_EQ(Counters(same_home[0]).completions, 6u);
  EXPECT_FALSE(collector_->ReadCounters(key_).ok());
}

// The agent's loop waits in Poll; work handed to it from another thread (a lever's answer, an RPC) ends that
// wait through Wake, and a window that closed meanwhile is handed over by the same Poll.
TEST_F(WindowLogicTest, AWakeEndsTheWaitAndTheWindowsWaitingAreHandedOver) {
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    collector_->Wake();
  });
  auto before = std::chrono::steady_clock::now();
  int handed = -1;
  auto polled = collector_->Poll(30'000, [&](const WindowEvent&) { ++handed; });
  waker.join();
  ASSERT_TRUE(polled.ok()) << polled.error().message;
  EXPECT_EQ(*polled, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(10)) << "the wake did not end a 30 s wait";

  for (uint32_t i = 0; i < kWindow; ++i) Complete(key_, 1'000 + i);
  collector_->Wake();
  before = std::chrono::steady_clock::now();
  std::vector<WindowEvent> events;
  polled = collector_->Poll(30'000, [&](const WindowEvent& e) { events.push_back(e); });
  ASSERT_TRUE(polled.ok()) << polled.error().message;
  EXPECT_EQ(events.size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(10));
}

}  // namespace
}  // namespace nvmeadapt::collect
