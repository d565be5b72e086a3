// SPDX-License-Identifier: Apache-2.0
// uvnvme-load's argument parsing and the latency histogram behind its percentiles.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <random>
#include <thread>
#include <vector>

#include "uvnvme/latency_histogram.h"
#include "uvnvme/load/options.h"
#include "uvnvme/placement.h"

namespace nvmeadapt::uvnvme::load {
namespace {

Result<LoadOptions> Parse(std::vector<std::string_view> args) { return ParseLoadOptions(args); }

TEST(UvnvmeLoadOptions, DefaultsAreOneQueueAtDepthOneForFiveSeconds) {
  auto options = Parse({});
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->jobs, 1u);
  ASSERT_EQ(options->phases.size(), 1u);
  EXPECT_EQ(options->phases[0].queue_depth, 1u);
  EXPECT_EQ(options->phases[0].duration_ns, 5'000'000'000);
  EXPECT_EQ(options->driver.initial_mode, ReapMode::kInterrupt);
  EXPECT_FALSE(options->external);
  EXPECT_EQ(options->driver.model.kind, ModelKind::kMedia);
}

TEST(UvnvmeLoadOptions, EveryOptionIsTakenInBothSpellings) {
  auto options = Parse({"--controllers", "2", "--queues=3", "--jobs", "4", "--qd", "16", "--bs=8k", "--rwmixread",
                        "70", "--runtime", "1500ms", "--model", "media", "--latency-us", "80", "--write-latency-us",
                        "15", "--jitter-us", "5", "--iops-cap", "800k", "--bandwidth-mbps", "2000", "--mode", "poll",
                        "--coalesce", "8,100", "--queue-entries", "256", "--controller-threads", "3", "--seed", "7",
                        "--runtime-dir", "/tmp/x", "--json", "--no-socket", "--controller-rt",
                        "--controller-cpus", "0", "--host-cpus=0"});
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->driver.controllers, 2u);
  EXPECT_EQ(options->driver.queues_per_controller, 3u);
  EXPECT_EQ(options->jobs, 4u);
  EXPECT_EQ(options->phases[0].queue_depth, 16u);
  EXPECT_EQ(options->phases[0].duration_ns, 1'500'000'000);
  EXPECT_EQ(options->block_bytes, 8192u);
  EXPECT_EQ(options->read_percent, 70u);
  EXPECT_EQ(options->driver.model.read_latency_ns, 80'000);
  EXPECT_EQ(options->driver.model.write_latency_ns, 15'000);
  EXPECT_EQ(options->driver.model.jitter_ns, 5'000);
  EXPECT_EQ(options->driver.model.iops_cap, 800'000u);
  EXPECT_EQ(options->driver.model.bandwidth_bytes_per_s, 2'000'000'000u);
  EXPECT_EQ(options->driver.initial_mode, ReapMode::kPoll);
  EXPECT_EQ(options->driver.coalescing, (Coalescing{8, 100}));
  EXPECT_EQ(options->driver.queue_entries, 256u);
  EXPECT_EQ(options->driver.controller_threads, 3u);
  EXPECT_EQ(options->seed, 7u);
  EXPECT_EQ(options->runtime_dir, "/tmp/x");
  EXPECT_TRUE(options->json);
  EXPECT_FALSE(options->socket);
  EXPECT_TRUE(options->driver.controller_placement.realtime);
  EXPECT_EQ(options->driver.controller_placement.cpus, std::vector<int>{0});
  EXPECT_EQ(options->host_cpus, std::vector<int>{0});
  EXPECT_EQ(options->driver.device_clock, DeviceClock::kSleeping);  // auto: the host shares CPU 0
  EXPECT_EQ(options->driver.timing_periods, 1u);
}

TEST(UvnvmeLoadOptions, TheDeviceClockIsChosenOrFollowsThePlacement) {
  auto faithful = Parse({"--device-clock", "faithful", "--phases", "1s:qd1,1s:idle"});
  ASSERT_TRUE(faithful) << faithful.error().message;
  EXPECT_EQ(faithful->driver.device_clock, DeviceClock::kFaithful);
  EXPECT_EQ(faithful->device_clock_requested, "faithful");
  EXPECT_EQ(faithful->driver.timing_periods, 2u);  // one per phase
  auto sleeping = Parse({"--device-clock=sleeping"});
  ASSERT_TRUE(sleeping);
  EXPECT_EQ(sleeping->driver.device_clock, DeviceClock::kSleeping);
  auto automatic = Parse({});
  ASSERT_TRUE(automatic);
  EXPECT_EQ(automatic->device_clock_requested, "auto");
  EXPECT_EQ(automatic->driver.device_clock, DeviceClock::kSleeping);  // nothing pinned

  DriverConfig driver;
  driver.controller_placement.cpus = {1};
  EXPECT_EQ(AutoDeviceClock(driver, {0}), DeviceClock::kFaithful);   // a CPU of its own
  EXPECT_EQ(AutoDeviceClock(driver, {}), DeviceClock::kSleeping);   // reapers may run on it
  EXPECT_EQ(AutoDeviceClock(driver, {0, 1}), DeviceClock::kSleeping);  // shared with the reapers
  driver.controllers = 2;                                            // two spinners, one CPU
  EXPECT_EQ(AutoDeviceClock(driver, {0}), DeviceClock::kSleeping);
  driver.controller_placement.cpus = {1, 2};
  EXPECT_EQ(AutoDeviceClock(driver, {0}), DeviceClock::kFaithful);
  driver.controller_placement.cpus = {};
  EXPECT_EQ(AutoDeviceClock(driver, {0}), DeviceClock::kSleeping);
  driver.controller_placement.cpus = {1};
  driver.controllers = 4;
  driver.device_threads = 1;  // the four share one device thread: it has the CPU to itself
  EXPECT_EQ(AutoDeviceClock(driver, {0}), DeviceClock::kFaithful);
}

TEST(UvnvmeLoadOptions, ControllersOutnumberingTheirCpusShareOneDeviceThreadPerCpu) {
  auto shared = Parse({"--controllers", "4", "--queues", "2", "--controller-cpus", "0"});
  ASSERT_TRUE(shared) << shared.error().message;
  EXPECT_EQ(shared->driver.device_threads, 1u);
  EXPECT_EQ(DeviceThreads(shared->driver), 1u);
  auto own = Parse({"--controllers", "1", "--controller-cpus", "0"});
  ASSERT_TRUE(own);
  EXPECT_EQ(own->driver.device_threads, 0u);
  EXPECT_EQ(DeviceThreads(own->driver), 1u);
  // Several threads per controller cannot be shared: faithful is refused as before.
  auto threads = Parse({"--controllers", "2", "--queues", "2", "--controller-threads", "2", "--controller-cpus", "0",
                        "--device-clock", "faithful"});
  ASSERT_FALSE(threads);
  EXPECT_NE(threads.error().message.find("a CPU per device thread"), std::string::npos) << threads.error().message;
}

TEST(UvnvmeLoadOptions, CpuListsTakeSinglesRangesAndCommas) {
  // CPU 0 is the one CPU every test machine has.
  EXPECT_EQ(*ParseCpuList("0"), std::vector<int>{0});
  EXPECT_EQ(*ParseCpuList("0-0,0"), (std::vector<int>{0, 0}));
  EXPECT_FALSE(ParseCpuList(""));
  EXPECT_FALSE(ParseCpuList("1-0"));
  EXPECT_FALSE(ParseCpuList("0,"));
  EXPECT_FALSE(ParseCpuList("-1"));
  auto beyond = ParseCpuList("1023");
  ASSERT_FALSE(beyond);
  EXPECT_NE(beyond.error().message.find("not available"), std::string::npos);
}

TEST(UvnvmeLoadOptions, APhaseProfileSetsDepthsIdleAndModes) {
  auto options = Parse({"--phases", "2s:qd1,4s:qd64:poll,500ms:idle:interrupt"});
  ASSERT_TRUE(options) << options.error().message;
  ASSERT_EQ(options->phases.size(), 3u);
  EXPECT_EQ(options->phases[0].label, "2s:qd1");
  EXPECT_FALSE(options->phases[0].mode);
  EXPECT_EQ(options->phases[1].queue_depth, 64u);
  EXPECT_EQ(options->phases[1].mode, ReapMode::kPoll);
  EXPECT_EQ(options->phases[2].queue_depth, 0u);
  EXPECT_EQ(options->phases[2].duration_ns, 500'000'000);
}

TEST(UvnvmeLoadOptions, TheFirstPhasesModeIsTheInitialMode) {
  auto options = Parse({"--phases", "1s:qd1:poll,1s:qd1:interrupt"});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->driver.initial_mode, ReapMode::kPoll);
}

TEST(UvnvmeLoadOptions, ExternalStartsInInterruptMode) {
  auto options = Parse({"--mode", "external"});
  ASSERT_TRUE(options);
  EXPECT_TRUE(options->external);
  EXPECT_EQ(options->driver.initial_mode, ReapMode::kInterrupt);
}

struct BadArgs {
  std::vector<std::string_view> args;
  const char* names;
};

class UvnvmeLoadBadArgs : public ::testing::TestWithParam<BadArgs> {};

TEST_P(UvnvmeLoadBadArgs, TheErrorNamesTheArgument) {
  auto options = Parse(GetParam().args);
  ASSERT_FALSE(options);
  const std::string& message = options.error().message;
  EXPECT_EQ(message.rfind(GetParam().names, 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Args, UvnvmeLoadBadArgs,
    ::testing::Values(BadArgs{{"--qd", "0"}, "--qd"}, BadArgs{{"--qd", "x"}, "--qd"}, BadArgs{{"--qd"}, "--qd"},
                      BadArgs{{"--bs", "1000"}, "--bs"}, BadArgs{{"--rwmixread", "101"}, "--rwmixread"},
                      BadArgs{{"--runtime", "fast"}, "--runtime"}, BadArgs{{"--runtime", "0s"}, "--runtime"},
                      BadArgs{{"--mode", "hybrid"}, "--mode"}, BadArgs{{"--model", "ssd"}, "--model"},
                      BadArgs{{"--coalesce", "8"}, "--coalesce"}, BadArgs{{"--coalesce", "300,1"}, "--coalesce"},
                      BadArgs{{"--phases", "2s"}, "--phases"}, BadArgs{{"--phases", "2s:qd1,"}, "--phases"},
                      BadArgs{{"--phases", "x:qd1"}, "--phases"}, BadArgs{{"--phases", "1s:qd4:spin"}, "--phases"},
                      BadArgs{{"--mode", "external", "--phases", "1s:qd1:poll"}, "--phases"},
                      BadArgs{{"--qd", "64", "--queue-entries", "32"}, "--qd"},
                      BadArgs{{"--jobs", "4", "--qd", "300", "--queue-entries", "1024"}, "--qd"},
                      BadArgs{{"--controllers", "0"}, "--controllers"}, BadArgs{{"--frobnicate"}, "--frobnicate"},
                      BadArgs{{"--latency-us", "-3"}, "--latency-us"},
                      BadArgs{{"--model", "fixed", "--jitter-us", "3"}, "--model"},
                      BadArgs{{"--runtime-dir", "relative"}, "--runtime-dir"},
                      BadArgs{{"--host-cpus", "x"}, "--host-cpus"}, BadArgs{{"--controller-cpus", "0-"}, "--controller-cpus"},
                      BadArgs{{"--queues", "2", "--controller-threads", "3"}, "--controller-threads"},
                      BadArgs{{"--device-clock", "fast"}, "--device-clock"},
                      // Two spinning real-time threads on one CPU would starve each other (two controllers
                      // of one thread each share one instead).
                      BadArgs{{"--queues", "2", "--controller-threads", "2", "--controller-cpus", "0",
                               "--device-clock", "faithful"},
                              "--device-clock"}));

TEST(UvnvmeLoadOptions, DurationsCountsAndSizesTakeTheirUnits) {
  EXPECT_EQ(*ParseDurationNs("2s"), 2'000'000'000);
  EXPECT_EQ(*ParseDurationNs("250ms"), 250'000'000);
  EXPECT_EQ(*ParseDurationNs("100us"), 100'000);
  EXPECT_EQ(*ParseDurationNs("1.5"), 1'500'000'000);
  EXPECT_EQ(*ParseDurationNs("2m"), 120'000'000'000);
  EXPECT_EQ(*ParseDurationNs("1m30s"), 90'000'000'000) << "the one grammar, as the agent's";
  EXPECT_EQ(*ParseDurationNs("0.0001d"), 8'640'000'000) << "days, as nvme-adaptctl's";
  EXPECT_FALSE(ParseDurationNs("2 fortnights"));
  EXPECT_FALSE(ParseDurationNs("-2s"));
  EXPECT_EQ(*ParseCount("500k"), 500'000u);
  EXPECT_EQ(*ParseCount("1.5m"), 1'500'000u);
  EXPECT_FALSE(ParseCount("1.5"));
  EXPECT_EQ(*ParseBytes("4k"), 4096u);
  EXPECT_EQ(*ParseBytes("1m"), 1u << 20);
}

// --help is made from the option table: every option it lists is one the parser takes (with a value when
// --help shows one), and its help starts in one column.
TEST(UvnvmeLoadOptions, EveryOptionInTheHelpIsParsedAndItsHelpLinesUp) {
  const std::string usage = LoadUsage();
  size_t listed = 0;
  for (size_t start = 0, end; start < usage.size(); start = end + 1) {
    end = usage.find('\n', start);
    const std::string line = usage.substr(start, end - start);
    if (!line.starts_with("  --")) continue;
    ++listed;
    ASSERT_GT(line.size(), 27u) << line;
    EXPECT_EQ(line[26], ' ') << line;
    EXPECT_NE(line[27], ' ') << line;
    const std::string name = line.substr(2, line.find(' ', 2) - 2);
    const bool takes_value = line.find_first_not_of(' ', 2 + name.size()) < 27;
    if (name == "--help") continue;  // main answers it before parsing
    auto alone = Parse({name});
    if (takes_value) {
      ASSERT_FALSE(alone) << name;
      EXPECT_EQ(alone.error().message, name + ": needs a value");
    } else {
      EXPECT_TRUE(alone) << name << ": " << alone.error().message;
    }
  }
  EXPECT_EQ(listed, 28u);
}

TEST(UvnvmeLatencyHistogram, QuantilesAreWithinOnePartIn128) {
  std::mt19937_64 random(1);
  std::vector<int64_t> samples;
  LatencyHistogram histogram;
  for (int i = 0; i < 100000; ++i) {
    const int64_t ns = 1000 + static_cast<int64_t>(random() % 5'000'000);
    samples.push_back(ns);
    histogram.Record(ns);
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = static_cast<double>(samples[static_cast<size_t>(std::ceil(q * samples.size())) - 1]);
    EXPECT_NEAR(histogram.Quantile(q), exact, exact / 128) << q;
  }
  EXPECT_EQ(histogram.Count(), 100000u);
}

TEST(UvnvmeLatencyHistogram, SmallValuesAreExactAndMergingAdds) {
  LatencyHistogram a, b;
  a.Record(5);
  b.Record(100);
  b.Record(100);
  a.Merge(b);
  EXPECT_EQ(a.Count(), 3u);
  EXPECT_EQ(a.Quantile(0.0), 5);
  EXPECT_EQ(a.Quantile(0.5), 100);
  EXPECT_EQ(LatencyHistogram().Quantile(0.5), 0);
}

TEST(UvnvmePlacement, ABreathKeepsTheRealTimeClassAndLeavesFairThreadsAlone) {
  std::thread realtime_thread([] {
    const Status placed = ApplyPlacement(pthread_self(), ThreadPlacement{.realtime = true}, "test thread");
    ASSERT_TRUE(placed.ok()) << "needs CAP_SYS_NICE (run as root): " << placed.error().message;
    ASSERT_TRUE(YieldToFairTasks(pthread_self(), "test thread").ok());
    int policy = 0;
    sched_param param{};
    ASSERT_EQ(pthread_getschedparam(pthread_self(), &policy, &param), 0);
    EXPECT_EQ(policy, SCHED_FIFO);
    EXPECT_EQ(param.sched_priority, 1);
  });
  realtime_thread.join();
  std::thread fair_thread([] {
    ASSERT_TRUE(YieldToFairTasks(pthread_self(), "test thread").ok());
    int policy = -1;
    sched_param param{};
    ASSERT_EQ(pthread_getschedparam(pthread_self(), &policy, &param), 0);
    EXPECT_EQ(policy, SCHED_OTHER);
  });
  fair_thread.join();
}

}  // namespace
}  // namespace nvmeadapt::uvnvme::load
