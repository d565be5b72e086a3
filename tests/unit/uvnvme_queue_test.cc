// uvnvme's queue pair, emulated controller and service model, driven directly (no load generator).
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tests/unit/uvnvme_reaper.h"
#include "uvnvme/driver.h"
#include "uvnvme/model.h"

namespace nvmeadapt::uvnvme {
namespace {

using std::chrono::milliseconds;

DriverConfig FixedModel(int64_t latency_ns, uint32_t entries = 64) {
  DriverConfig config;
  config.queue_entries = entries;
  config.model.kind = ModelKind::kFixed;
  config.model.read_latency_ns = latency_ns;
  return config;
}

std::unique_ptr<Driver> Started(const DriverConfig& config) {
  auto driver = Driver::Create(config);
  EXPECT_TRUE(driver) << driver.error().message;
  if (!driver) return nullptr;
  EXPECT_TRUE((*driver)->Start());
  return std::move(*driver);
}

// Reaps until `count` completions arrived (each Reap in interrupt mode blocks for an interrupt).
std::vector<Completion> ReapCount(HostQueue& queue, size_t count) {
  std::vector<Completion> all;
  std::vector<Completion> batch(queue.Capacity());
  while (all.size() < count) {
    const size_t n = queue.Reap(batch);
    all.insert(all.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return all;
}

// Submits one command to a polling queue and reaps until it completes (at most 5 s); returns how many came.
size_t SubmitOneAndReap(HostQueue& queue) {
  if (!queue.Submit(IoCommand{}, MonotonicNanos())) return 0;
  queue.RingDoorbell(MonotonicNanos());
  std::vector<Completion> batch(queue.Capacity());
  size_t reaped = 0;
  const int64_t give_up = MonotonicNanos() + 5'000'000'000;
  while (reaped == 0 && MonotonicNanos() < give_up) reaped = queue.Reap(batch);
  return reaped;
}

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

TEST(UvnvmeTiming, IntervalBucketsArePowersOfTwoMicroseconds) {
  EXPECT_EQ(DeviceTiming::IntervalBucket(0), 0u);
  EXPECT_EQ(DeviceTiming::IntervalBucket(999), 0u);
  EXPECT_EQ(DeviceTiming::IntervalBucket(1000), 1u);   // [1, 2) us
  EXPECT_EQ(DeviceTiming::IntervalBucket(1999), 1u);
  EXPECT_EQ(DeviceTiming::IntervalBucket(2000), 2u);   // [2, 4) us
  EXPECT_EQ(DeviceTiming::IntervalBucket(35'000), 6u);  // [32, 64) us
  EXPECT_EQ(DeviceTiming::IntervalBucket(40'000'000), 16u);  // 40 ms: [32768, 65536) us
  EXPECT_EQ(DeviceTiming::IntervalBucket(INT64_MAX), DeviceTiming::kIntervalBuckets - 1);
  EXPECT_EQ(DeviceTiming::IntervalBucketLowUs(0), 0);
  EXPECT_EQ(DeviceTiming::IntervalBucketLowUs(1), 1);
  EXPECT_EQ(DeviceTiming::IntervalBucketLowUs(6), 32);
  DeviceTiming a, b;
  a.RecordInterval(35'000);
  a.RecordPost(2'000);
  b.RecordInterval(500);
  b.RecordPost(7'000);
  a.Merge(b);
  EXPECT_EQ(a.intervals[6], 1u);
  EXPECT_EQ(a.intervals[0], 1u);
  EXPECT_EQ(a.interval_max_ns, 35'000);
  EXPECT_EQ(a.lateness_max_ns, 7'000);
  EXPECT_EQ(a.posted, 2u);
  EXPECT_EQ(a.lateness.Count(), 2u);
}

TEST(UvnvmeTiming, AnIntervalRunsFromTheDoorbellOfAnIdleQueueElseFromThePreviousCompletion) {
  BusyClock busy;
  busy.Fetched(100);  // an idle queue becomes busy at its doorbell
  busy.Fetched(150);
  EXPECT_EQ(busy.Posted(1'000), 900);  // from the first doorbell
  EXPECT_EQ(busy.Posted(1'000), 0);    // the same pass
  busy.EndOfPass();
  EXPECT_EQ(busy.held(), 0u);
  busy.Fetched(5'000);                 // idle from 1,000 to 5,000: not an interval
  busy.Fetched(5'100);
  EXPECT_EQ(busy.Posted(6'000), 1'000);
  busy.EndOfPass();                    // one still held: the next interval runs from 6,000
  EXPECT_EQ(busy.Posted(9'000), 3'000);
  busy.EndOfPass();
  EXPECT_EQ(busy.Posted(10'000), -1);  // nothing held (cannot happen): no interval
}

class UvnvmeClockTiming : public ::testing::TestWithParam<DeviceClock> {};

TEST_P(UvnvmeClockTiming, LatenessAndIntervalsAreCountedPerPeriod) {
  DriverConfig config = FixedModel(1'000'000);  // 1 ms
  config.device_clock = GetParam();
  config.timing_periods = 2;
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  // Four commands rung 5 ms ago: due 4 ms ago, so all four are posted at once, at least 4 ms late.
  const int64_t past = MonotonicNanos() - 5'000'000;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(queue.Submit(IoCommand{}, past));
  queue.RingDoorbell(past);
  ASSERT_EQ(ReapCount(queue, 4).size(), 4u);
  driver->EnterTimingPeriod(1);
  ASSERT_TRUE(queue.Submit(IoCommand{}, MonotonicNanos()));  // on time: 1 ms from now
  queue.RingDoorbell(MonotonicNanos());
  ASSERT_EQ(ReapCount(queue, 1).size(), 1u);
  ASSERT_TRUE(driver->CloseTiming());
  const std::vector<DeviceTiming> timing = driver->Timing(0, 1);
  ASSERT_EQ(timing.size(), 2u);
  const DeviceTiming& late = timing[0];
  EXPECT_EQ(late.posted, 4u);
  EXPECT_GE(late.lateness_max_ns, 4'000'000);
  EXPECT_GE(late.lateness.Quantile(0.5), 4'000'000 * 127.0 / 128);
  EXPECT_EQ(late.intervals[0], 3u);  // three posted in the same pass as the first
  EXPECT_GE(late.interval_max_ns, 5'000'000);  // the first: from the doorbell
  EXPECT_EQ(late.intervals[DeviceTiming::IntervalBucket(late.interval_max_ns)], 1u);
  const DeviceTiming& on_time = timing[1];
  EXPECT_EQ(on_time.posted, 1u);
  EXPECT_GE(on_time.interval_max_ns, 1'000'000);  // doorbell to post: at least the service time
  EXPECT_LT(on_time.lateness_max_ns, 4'000'000);
  EXPECT_EQ(driver->config().device_clock, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Clocks, UvnvmeClockTiming,
                         ::testing::Values(DeviceClock::kSleeping, DeviceClock::kFaithful),
                         [](const auto& info) { return std::string(DeviceClockName(info.param)); });

TEST(UvnvmeTiming, TheFaithfulClockKeepsUpAtDepthAndSleepsOnceIdle) {
  DriverConfig config = FixedModel(20'000, 64);
  config.device_clock = DeviceClock::kFaithful;
  config.initial_mode = ReapMode::kPoll;
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  {
    testing::TestReaper reaper(queue, 16);
    while (queue.Counters().completed < 20'000) std::this_thread::sleep_for(milliseconds(1));
    reaper.Stop();
    EXPECT_EQ(reaper.submitted(), reaper.completed());
    EXPECT_EQ(reaper.completed_twice(), 0u);
    EXPECT_EQ(reaper.never_completed(), 0u);
  }
  EXPECT_EQ(queue.Counters().protocol_errors, 0u);
  ASSERT_TRUE(driver->CloseTiming());
  EXPECT_EQ(driver->Timing(0, 1)[0].posted, queue.Counters().completed);
  // Idle past its spin time, the thread sleeps: it spinning would take most of 300 ms of CPU.
  std::this_thread::sleep_for(std::chrono::nanoseconds(kFaithfulIdleSpinNs) + milliseconds(30));
  const double before = driver->ControllerCpuSeconds();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_LT(driver->ControllerCpuSeconds() - before, 0.05);
  // And a doorbell still wakes it.
  EXPECT_EQ(SubmitOneAndReap(queue), 1u);
}

// Between commands, a device that was busy a moment ago spins (it does not sleep): a QD1 host submits its
// next command a wake-up after the previous completion, and a sleeping device would post that one late
// by its own wake-up latency. So for the idle-spin time after a completion it keeps using its CPU.
TEST(UvnvmeTiming, TheFaithfulClockSpinsBetweenCommandsWhileRecentlyBusy) {
  DriverConfig config = FixedModel(20'000, 64);
  config.device_clock = DeviceClock::kFaithful;
  config.initial_mode = ReapMode::kPoll;
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  ASSERT_EQ(SubmitOneAndReap(queue), 1u);
  const double before = driver->ControllerCpuSeconds();
  const int64_t started = MonotonicNanos();
  std::this_thread::sleep_for(milliseconds(10));  // well inside kFaithfulIdleSpinNs
  const double spun = driver->ControllerCpuSeconds() - before;
  const double elapsed = static_cast<double>(MonotonicNanos() - started) / 1e9;
  static_assert(kFaithfulIdleSpinNs > 10'000'000);
  EXPECT_GT(spun, 0.5 * elapsed) << "the device slept between commands";
}

// Four controllers on one device thread (one CPU's worth of device): every queue is served, nothing is lost
// or duplicated, each keeps its own model and timing, and the thread's CPU is counted once, at its host.
TEST(UvnvmeSharedThreads, FourControllersOnOneThreadServeEveryQueue) {
  DriverConfig config = FixedModel(20'000, 64);
  config.controllers = 4;
  config.queues_per_controller = 2;
  config.device_threads = 1;
  config.device_clock = DeviceClock::kFaithful;
  config.initial_mode = ReapMode::kInterrupt;  // eight polling reapers would crowd a 2-CPU test machine
  auto driver = Started(config);
  ASSERT_TRUE(driver);
  EXPECT_EQ(DeviceThreads(driver->config()), 1u);
  std::vector<std::unique_ptr<testing::TestReaper>> reapers;
  for (const auto& queue : driver->queues()) reapers.push_back(std::make_unique<testing::TestReaper>(*queue, 4));
  auto all_reached = [&] {
    for (const auto& queue : driver->queues()) {
      if (queue->Counters().completed < 1'000) return false;
    }
    return true;
  };
  const int64_t give_up = MonotonicNanos() + 60'000'000'000;
  while (!all_reached() && MonotonicNanos() < give_up) std::this_thread::sleep_for(milliseconds(2));
  for (auto& reaper : reapers) reaper->Stop();
  ASSERT_TRUE(all_reached()) << "a queue of a guest controller was not served";
  for (size_t i = 0; i < reapers.size(); ++i) {
    EXPECT_EQ(reapers[i]->submitted(), reapers[i]->completed()) << "queue " << i;
    EXPECT_EQ(reapers[i]->completed_twice(), 0u) << "queue " << i;
    EXPECT_EQ(reapers[i]->never_completed(), 0u) << "queue " << i;
    EXPECT_EQ(driver->queues()[i]->Counters().protocol_errors, 0u) << "queue " << i;
  }
  ASSERT_TRUE(driver->CloseTiming());
  for (uint32_t c = 0; c < 4; ++c) {
    for (uint32_t qid = 1; qid <= 2; ++qid) {
      EXPECT_EQ(driver->Timing(c, qid)[0].posted, driver->FindQueue(c, qid)->Counters().completed) << c << ":" << qid;
    }
  }
  EXPECT_GT(driver->ControllerCpuSeconds(), 0.0);
}

TEST(UvnvmeSharedThreads, SharingIsRefusedOnceQueuesAreAttachedOrClocksDiffer) {
  EmulatedController host(0, ModelConfig{}, 1, DeviceClock::kFaithful);
  EmulatedController other_clock(1, ModelConfig{}, 1, DeviceClock::kSleeping);
  EXPECT_FALSE(other_clock.ServeOnThreadsOf(host));
  DriverConfig config = FixedModel(1000);
  config.controllers = 2;
  config.queues_per_controller = 2;
  config.controller_threads = 2;
  config.device_threads = 1;  // sharing needs one thread per controller
  auto refused = Driver::Create(config);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("one controller thread each"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace nvmeadapt::uvnvme
