// SPDX-License-Identifier: Apache-2.0
// Heavy uvnvme tests (RUN_SERIAL): mode switches racing completions at queue depth 32, and interrupt
// coalescing under load. A watchdog ends the process, naming what hung, instead of letting CTest time out.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "tests/unit/uvnvme_reaper.h"
#include "uvnvme/driver.h"
#include "uvnvme/load/runner.h"

namespace nvmeadapt::uvnvme {
namespace {

using std::chrono::milliseconds;
using testing::TestReaper;

class Watchdog {
 public:
  Watchdog(std::chrono::seconds limit, std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this, limit] {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
        std::fprintf(stderr, "watchdog: %s did not finish in %lld s: a reaper or a switch hung\n", what_.c_str(),
                     static_cast<long long>(limit.count()));
        std::_Exit(1);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Switches every queue's mode `switches` times at random intervals while a reaper keeps `depth` commands
// in flight, then checks every command completed exactly once and nothing is left in flight.
void SwitchManyTimes(int switches, uint32_t depth, Coalescing coalescing, DeviceClock clock = DeviceClock::kSleeping) {
  DriverConfig config;
  config.device_clock = clock;
  config.queues_per_controller = 2;
  config.queue_entries = 64;
  config.coalescing = coalescing;
  config.model.read_latency_ns = 20'000;
  config.model.jitter_ns = 20'000;
  auto created = Driver::Create(config);
  ASSERT_TRUE(created) << created.error().message;
  Driver& driver = **created;
  ASSERT_TRUE(driver.Start());
  Watchdog watchdog(std::chrono::seconds(switches / 40), std::to_string(switches) + " mode switches per queue at depth " +
                                                  std::to_string(depth));

  std::vector<std::unique_ptr<TestReaper>> reapers;
  for (const auto& queue : driver.queues()) reapers.push_back(std::make_unique<TestReaper>(*queue, depth));
  std::vector<std::thread> switchers;
  std::vector<int> failures(driver.queues().size(), 0);
  for (size_t q = 0; q < driver.queues().size(); ++q) {
    switchers.emplace_back([&, q] {
      HostQueue& queue = *driver.queues()[q];
      std::mt19937 random(static_cast<unsigned>(q + 1));
      std::uniform_int_distribution<int> pause_us(0, 200);
      for (int i = 0; i < switches; ++i) {
        const ReapMode next = queue.mode() == ReapMode::kPoll ? ReapMode::kInterrupt : ReapMode::kPoll;
        if (!queue.SetMode(next, milliseconds(5000)) || queue.mode() != next) ++failures[q];
        if (const int us = pause_us(random); us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
      }
    });
  }
  for (auto& switcher : switchers) switcher.join();
  for (size_t q = 0; q < reapers.size(); ++q) {
    reapers[q]->Stop();
    const QueueCounters counters = driver.queues()[q]->Counters();
    SCOPED_TRACE("queue " + std::to_string(q + 1));
    EXPECT_EQ(failures[q], 0);
    EXPECT_EQ(counters.mode_switches, static_cast<uint64_t>(switches));
    EXPECT_GT(reapers[q]->submitted(), 0u);
    EXPECT_EQ(reapers[q]->submitted(), reapers[q]->completed());
    EXPECT_EQ(counters.submitted, counters.completed);
    EXPECT_EQ(counters.submitted, reapers[q]->submitted());
    EXPECT_EQ(reapers[q]->completed_twice(), 0u);
    EXPECT_EQ(reapers[q]->never_completed(), 0u);
    EXPECT_EQ(reapers[q]->unknown_tags(), 0u);
    EXPECT_EQ(counters.protocol_errors, 0u);
    EXPECT_EQ(driver.queues()[q]->Inflight(), 0u);
  }
}

TEST(UvnvmeStress, TenThousandModeSwitchesPerQueueAtDepth32LoseAndDuplicateNothing) {
  SwitchManyTimes(10'000, 32, Coalescing{});
}

TEST(UvnvmeStress, TenThousandModeSwitchesWithCoalescingLoseAndDuplicateNothing) {
  SwitchManyTimes(10'000, 32, Coalescing{8, 100});
}

// At depth 1 no later completion rescues one stranded by a switch: a missed completion hangs the final drain.
TEST(UvnvmeStress, ModeSwitchesAtDepthOneStrandNothing) { SwitchManyTimes(2'000, 1, Coalescing{}); }

// The faithful clock holds completions back behind an outstanding interrupt until the CQ head doorbell:
// switches racing that hand-over must strand nothing either.
TEST(UvnvmeStress, ModeSwitchesWithTheFaithfulClockStrandNothing) {
  SwitchManyTimes(2'000, 1, Coalescing{}, DeviceClock::kFaithful);
  SwitchManyTimes(2'000, 32, Coalescing{}, DeviceClock::kFaithful);
}

TEST(UvnvmeStress, CoalescingThresholdBoundsTheWakeups) {
  load::LoadOptions options;
  options.driver.queues_per_controller = 2;
  options.driver.coalescing = Coalescing{8, kMaxCoalesceTimeUs};
  options.jobs = 2;
  options.phases = {load::Phase{"run", 1'000'000'000, 32, std::nullopt}};
  auto created = Driver::Create(options.driver);
  ASSERT_TRUE(created) << created.error().message;
  ASSERT_TRUE((*created)->Start());
  Watchdog watchdog(std::chrono::seconds(60), "the coalescing run");
  auto result = load::RunLoad(options, **created, nullptr);
  ASSERT_TRUE(result) << result.error().message;
  uint64_t completed = 0, wakeups = 0;
  for (const load::QueueResult& queue : result->queues) {
    SCOPED_TRACE("queue " + std::to_string(queue.qid));
    EXPECT_GT(queue.counters.completed, 1000u);
    EXPECT_EQ(queue.counters.completed, queue.counters.submitted);
    // Every interrupt but a time-triggered one at the final drain carries at least 8 completions.
    EXPECT_LE(queue.interrupts, queue.counters.completed / 8 + 1);
    EXPECT_LE(queue.counters.wakeups, queue.interrupts);
    completed += queue.counters.completed;
    wakeups += queue.counters.wakeups;
  }
  EXPECT_LE(wakeups, completed / 8 + result->queues.size());
}

}  // namespace
}  // namespace nvmeadapt::uvnvme
