// SPDX-License-Identifier: Apache-2.0
// uvnvme's queue pair, emulated controller and service model, driven directly (no load generator).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/unit/uvnvme_driver_helpers.h"
#include "tests/unit/uvnvme_reaper.h"
#include "uvnvme/driver.h"
#include "uvnvme/model.h"

namespace nvmeadapt::uvnvme {
namespace {

using std::chrono::milliseconds;
using testing::FixedModel;
using testing::ReapCount;
using testing::Started;

TEST(UvnvmeLayout, EntriesHaveTheNvmeSizes) {
  EXPECT_EQ(sizeof(SubmissionEntry), 64u);
  EXPECT_EQ(sizeof(CompletionEntry), 16u);
  QueueLayout layout = QueueLayout::For(8);
  EXPECT_EQ(layout.cq_offset - layout.sq_offset, 8 * 64u);
  EXPECT_EQ(layout.bytes - layout.cq_offset, 8 * 16u);
}

TEST(UvnvmeQueue, ACommandCompletesOnceWithItsTagInInterruptMode) {
  auto driver = Started(FixedModel(1000));
  HostQueue& queue = *driver->FindQueue(0, 1);
  ASSERT_TRUE(queue.Submit(IoCommand{}, MonotonicNanos()));
  queue.RingDoorbell(MonotonicNanos());
  auto done = ReapCount(queue, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, 0u);
  EXPECT_GE(done[0].latency_ns, 1000);
  QueueCounters counters = queue.Counters();
  EXPECT_EQ(counters.submitted, 1u);
  EXPECT_EQ(counters.completed, 1u);
  EXPECT_EQ(counters.wakeups, 1u);
  EXPECT_EQ(counters.poll_completed, 0u);
  EXPECT_EQ(counters.protocol_errors, 0u);
  EXPECT_EQ(queue.Inflight(), 0u);
}

TEST(UvnvmeQueue, PollModeReapsWithoutWakeupsOrInterrupts) {
  DriverConfig config = FixedModel(1000);
  config.initial_mode = ReapMode::kPoll;
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  EXPECT_EQ(queue.mode(), ReapMode::kPoll);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.Submit(IoCommand{}, MonotonicNanos()));
  queue.RingDoorbell(MonotonicNanos());
  auto done = ReapCount(queue, 5);
  EXPECT_EQ(done.size(), 5u);
  EXPECT_EQ(queue.Counters().poll_completed, 5u);
  EXPECT_EQ(queue.Counters().wakeups, 0u);
  EXPECT_EQ(queue.Counters().mode_switches, 0u);  // the initial mode is not a switch
  EXPECT_EQ(driver->InterruptsSent(0, 1), 0u);   // masked vector
}

TEST(UvnvmeQueue, ThePhaseBitCarriesTheRingAcrossManyWraps) {
  auto driver = Started(FixedModel(0, 4));  // 3 commands in flight at most
  HostQueue& queue = *driver->FindQueue(0, 1);
  EXPECT_EQ(queue.Capacity(), 3u);
  {
    testing::TestReaper reaper(queue, 3);
    while (queue.Counters().completed < 1000) std::this_thread::sleep_for(milliseconds(1));
    reaper.Stop();
    EXPECT_EQ(reaper.submitted(), reaper.completed());
    EXPECT_EQ(reaper.completed_twice(), 0u);
    EXPECT_EQ(reaper.never_completed(), 0u);
  }
  EXPECT_EQ(queue.Counters().protocol_errors, 0u);
}

TEST(UvnvmeQueue, ASubmissionBeyondCapacityIsRefused) {
  auto driver = Started(FixedModel(0, 4));
  HostQueue& queue = *driver->FindQueue(0, 1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(queue.Submit(IoCommand{}, MonotonicNanos()));
  EXPECT_FALSE(queue.Submit(IoCommand{}, MonotonicNanos()));
  queue.RingDoorbell(MonotonicNanos());
  EXPECT_EQ(ReapCount(queue, 3).size(), 3u);
}

TEST(UvnvmeQueue, CompletionsArriveInOrderOfFinishNotOfSubmission) {
  DriverConfig config;
  config.model.read_latency_ns = 200'000'000;  // a read that takes 200 ms
  config.model.write_latency_ns = 0;           // and a write that takes nothing, submitted after it
  config.model.iops_cap = 0;
  config.model.bandwidth_bytes_per_s = 0;
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  ASSERT_TRUE(queue.Submit(IoCommand{false, 0, 8}, MonotonicNanos()));
  ASSERT_TRUE(queue.Submit(IoCommand{true, 8, 8}, MonotonicNanos()));
  queue.RingDoorbell(MonotonicNanos());
  auto done = ReapCount(queue, 2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(done[0].write);
  EXPECT_FALSE(done[1].write);
}

TEST(UvnvmeQueue, AKickWakesAnInterruptReaperWithoutCountingAWakeup) {
  auto driver = Started(FixedModel(0));
  HostQueue& queue = *driver->FindQueue(0, 1);
  queue.Kick();
  std::vector<Completion> batch(queue.Capacity());
  EXPECT_EQ(queue.Reap(batch), 0u);
  EXPECT_EQ(queue.Counters().wakeups, 0u);
}

TEST(UvnvmeQueue, SetModeIsAcknowledgedOnceTheReaperRunsInIt) {
  auto driver = Started(FixedModel(10'000));
  HostQueue& queue = *driver->FindQueue(0, 1);
  testing::TestReaper reaper(queue, 4);
  ASSERT_TRUE(queue.SetMode(ReapMode::kPoll, milliseconds(5000)));
  EXPECT_EQ(queue.mode(), ReapMode::kPoll);
  ASSERT_TRUE(queue.SetMode(ReapMode::kPoll, milliseconds(5000)));  // already there: no switch
  ASSERT_TRUE(queue.SetMode(ReapMode::kInterrupt, milliseconds(5000)));
  EXPECT_EQ(queue.mode(), ReapMode::kInterrupt);
  EXPECT_EQ(queue.Counters().mode_switches, 2u);
  reaper.Stop();
  EXPECT_EQ(reaper.submitted(), reaper.completed());
  EXPECT_EQ(reaper.never_completed(), 0u);
}

TEST(UvnvmeQueue, SetModeWithoutARunningReaperFailsAndChangesNothing) {
  auto driver = Started(FixedModel(0));
  HostQueue& queue = *driver->FindQueue(0, 1);
  Status set = queue.SetMode(ReapMode::kPoll, milliseconds(20));
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().code, ErrorCode::kUnavailable);
  std::vector<Completion> batch(queue.Capacity());
  queue.Kick();
  EXPECT_EQ(queue.Reap(batch), 0u);  // the withdrawn request is not applied later
  EXPECT_EQ(queue.mode(), ReapMode::kInterrupt);
  EXPECT_EQ(queue.Counters().mode_switches, 0u);
}

TEST(UvnvmeCoalescing, ThresholdAggregatesCompletionsIntoOneInterrupt) {
  DriverConfig config = FixedModel(0);
  config.coalescing = Coalescing{4, kMaxCoalesceTimeUs};
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  const int64_t now = MonotonicNanos();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(queue.Submit(IoCommand{}, now));
  queue.RingDoorbell(now);
  std::vector<Completion> batch(queue.Capacity());
  EXPECT_EQ(queue.Reap(batch), 4u);
  EXPECT_EQ(queue.Counters().wakeups, 1u);
  EXPECT_EQ(driver->InterruptsSent(0, 1), 1u);
}

TEST(UvnvmeCoalescing, TheTimeLimitDeliversFewerThanTheThreshold) {
  DriverConfig config = FixedModel(0);
  config.coalescing = Coalescing{8, 1000};
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  ASSERT_TRUE(queue.Submit(IoCommand{}, MonotonicNanos()));
  queue.RingDoorbell(MonotonicNanos());
  EXPECT_EQ(ReapCount(queue, 1).size(), 1u);  // would block forever without the time limit
  EXPECT_EQ(driver->InterruptsSent(0, 1), 1u);
}

TEST(UvnvmeCoalescing, SettingItIsAcknowledgedAndListed) {
  auto driver = Started(FixedModel(0));
  ASSERT_TRUE(driver->SetCoalescing(0, 1, Coalescing{8, 200}));
  EXPECT_EQ(driver->ListQueues().at(0).coalescing, (Coalescing{8, 200}));
  EXPECT_FALSE(driver->SetCoalescing(0, 1, Coalescing{257, 0}));
  EXPECT_FALSE(driver->SetCoalescing(0, 2, Coalescing{1, 0}));
  EXPECT_EQ(driver->ListQueues().at(0).coalescing, (Coalescing{8, 200}));
}

TEST(UvnvmeModel, MediaLatencyStartsWhenThePipelineAdmitsTheCommand) {
  ModelConfig model;
  model.read_latency_ns = 20'000;
  model.iops_cap = 1000;  // one command per millisecond
  model.bandwidth_bytes_per_s = 0;
  ServiceScheduler scheduler(model);
  uint64_t rng = 1;
  EXPECT_EQ(scheduler.DueTime(0, false, 4096, rng), 20'000);
  EXPECT_EQ(scheduler.DueTime(0, false, 4096, rng), 1'020'000);  // waited for the pipeline
  EXPECT_EQ(scheduler.DueTime(5'000'000, false, 4096, rng), 5'020'000);  // pipeline idle again
  EXPECT_EQ(scheduler.MinServiceNs(), 20'000);
}

TEST(UvnvmeModel, BandwidthLimitsLargeBlocks) {
  ModelConfig model;
  model.read_latency_ns = 0;
  model.iops_cap = 0;
  model.bandwidth_bytes_per_s = 1'000'000'000;  // 1 byte per ns
  ServiceScheduler scheduler(model);
  uint64_t rng = 1;
  EXPECT_EQ(scheduler.DueTime(0, false, 1'000'000, rng), 0);
  EXPECT_EQ(scheduler.DueTime(0, false, 1'000'000, rng), 1'000'000);
}

TEST(UvnvmeModel, FixedIgnoresKindAndSize) {
  ModelConfig model;
  model.kind = ModelKind::kFixed;
  model.read_latency_ns = 7'000;
  ServiceScheduler scheduler(model);
  uint64_t rng = 1;
  EXPECT_EQ(scheduler.DueTime(100, true, 1 << 20, rng), 7'100);
  EXPECT_EQ(scheduler.DueTime(100, false, 512, rng), 7'100);
}

TEST(UvnvmeModel, JitterStaysBelowItsBound) {
  ModelConfig model;
  model.read_latency_ns = 10'000;
  model.jitter_ns = 5'000;
  model.iops_cap = 0;
  model.bandwidth_bytes_per_s = 0;
  ServiceScheduler scheduler(model);
  uint64_t rng = 42;
  for (int i = 0; i < 1000; ++i) {
    const int64_t due = scheduler.DueTime(0, false, 4096, rng);
    EXPECT_GE(due, 10'000);
    EXPECT_LT(due, 15'000);
  }
}

TEST(UvnvmeDriver, BadConfigurationsAreRefusedWithTheirReason) {
  DriverConfig config;
  config.controllers = 0;
  auto driver = Driver::Create(config);
  ASSERT_FALSE(driver);
  EXPECT_NE(driver.error().message.find("controllers"), std::string::npos);
  config = DriverConfig{};
  config.queue_entries = 1;
  EXPECT_FALSE(Driver::Create(config));
  config = DriverConfig{};
  config.controller_threads = 2;  // more threads than queues
  EXPECT_FALSE(Driver::Create(config));
}

}  // namespace
}  // namespace nvmeadapt::uvnvme
