// SPDX-License-Identifier: Apache-2.0
// uvnvme's device timing (intervals, lateness per period, the two device clocks) and controllers sharing
// device threads, driven directly (no load generator).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/uvnvme_driver_helpers.h"
#include "tests/unit/uvnvme_reaper.h"
#include "uvnvme/model.h"

namespace nvmeadapt::uvnvme {
namespace {

using std::chrono::milliseconds;
using testing::FixedModel;
using testing::ReapCount;
using testing::Started;

// /proc/self/task/TID/stat of the thread named `name`, or "" if there is none.
std::string ThreadStatFile(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    if (std::getline(comm, got) && got == name) return (task.path() / "stat").string();
  }
  return "";
}

// The state letter of /proc/.../stat (after the parenthesized name), or '?' if unreadable.
char ThreadState(const std::string& stat_file) {
  std::ifstream stat(stat_file);
  std::string line;
  if (!std::getline(stat, line)) return '?';
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
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
  // Idle until either clock has gone to sleep (the faithful one spins kFaithfulIdleSpinNs after its start),
  // then 6 ms more: its last look at the doorbells is older than the stamp below, so it takes the stamp.
  // Seen asleep twice, 1 ms apart, not after a fixed time: on a loaded machine the spin ends late.
  const int64_t give_up = MonotonicNanos() + 10'000'000'000;
  std::string state_file;  // the thread names itself once it runs
  while (state_file.empty() && MonotonicNanos() < give_up) {
    state_file = ThreadStatFile("uvnvme-c0t0");
    if (state_file.empty()) std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_FALSE(state_file.empty()) << "no thread named uvnvme-c0t0 in /proc/self/task after 10 s";
  int asleep_looks = 0;
  while (asleep_looks < 2 && MonotonicNanos() < give_up) {
    asleep_looks = ThreadState(state_file) == 'S' ? asleep_looks + 1 : 0;
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_EQ(asleep_looks, 2) << "the device thread never went to sleep in 10 s";
  std::this_thread::sleep_for(milliseconds(6));
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

// A host thread preempted between stamping the doorbell's time and storing the tail leaves an old stamp:
// the device, which looked at the doorbells since then and saw nothing, starts the service when it could
// have seen the command, so neither the lateness nor the interval charges the host's delay to the device.
TEST(UvnvmeTiming, AStampOlderThanTheDevicesLastLookIsNotChargedToTheDevice) {
  DriverConfig config = FixedModel(100'000);  // 100 us
  config.device_clock = DeviceClock::kFaithful;
  auto driver = Started(config);
  HostQueue& queue = *driver->FindQueue(0, 1);
  ASSERT_EQ(SubmitOneAndReap(queue), 1u);  // busy a moment ago: the faithful clock spins, looking
  const int64_t preempted = MonotonicNanos() - 50'000'000;
  ASSERT_TRUE(queue.Submit(IoCommand{}, preempted));
  queue.RingDoorbell(preempted);
  ASSERT_EQ(ReapCount(queue, 1).size(), 1u);
  ASSERT_TRUE(driver->CloseTiming());
  const DeviceTiming& timing = driver->Timing(0, 1).at(0);
  EXPECT_EQ(timing.posted, 2u);
  EXPECT_LT(timing.lateness_max_ns, 25'000'000);
  EXPECT_LT(timing.interval_max_ns, 25'000'000);
  EXPECT_GE(timing.interval_max_ns, 100'000);  // the service time still counts
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
  // Its scheduler state, not its CPU time: on a loaded machine a spinning thread may be runnable and
  // waiting for a CPU (state R) but never asleep (state S); CPU time would depend on the other load.
  // Only looks taken inside the spin time count: on a loaded machine this thread's own 500 us sleeps can
  // stretch past it, and a device asleep then is right. A round with too few such looks is run again.
  static_assert(kFaithfulIdleSpinNs > 10'000'000);
  const int64_t look_until_ns = kFaithfulIdleSpinNs - 5'000'000;
  constexpr int kLooksNeeded = 10;
  int asleep = 0;
  int counted = 0;
  for (int round = 0; round < 10 && counted < kLooksNeeded; ++round) {
    ASSERT_EQ(SubmitOneAndReap(queue), 1u);
    const int64_t reaped_ns = MonotonicNanos();
    const std::string state_file = ThreadStatFile("uvnvme-c0t0");
    ASSERT_FALSE(state_file.empty()) << "no thread named uvnvme-c0t0 in /proc/self/task";
    asleep = 0;
    counted = 0;
    for (int i = 0; i < 20; ++i) {
      const char state = ThreadState(state_file);
      if (MonotonicNanos() - reaped_ns >= look_until_ns) break;
      ++counted;
      asleep += state == 'S' ? 1 : 0;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
  ASSERT_GE(counted, kLooksNeeded) << "this machine never let the test look " << kLooksNeeded
                                   << " times within the device's spin time";
  EXPECT_LE(asleep, 2) << "the device slept between commands in " << asleep << " of " << counted << " looks";
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
