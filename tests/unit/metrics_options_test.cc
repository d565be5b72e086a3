// SPDX-License-Identifier: Apache-2.0
// The metrics config section and the process_* readings from /proc.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "agent/config/config_file.h"
#include "agent/metrics/metrics_options.h"
#include "agent/metrics/process_stats.h"

namespace nvmeadapt::metrics {
namespace {

TEST(MetricsOptions, AnEmptySectionGivesTheDefaults) {
  auto options = MetricsOptionsFromConfig(v1::MetricsConfig());
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->listen_address, "127.0.0.1:9464");
  EXPECT_EQ(options->max_tracked_queues, kDefaultMaxTrackedQueues);
  EXPECT_FALSE(options->per_queue_interval_histogram);
}

TEST(MetricsOptions, TheConfigFileCarriesTheSection) {
  auto config = config::ParseConfigJson(R"({"metrics": {"listenAddress": "0.0.0.0:9100", "maxTrackedQueues": 8,
                                                         "perQueueIntervalHistogram": true}})");
  ASSERT_TRUE(config) << config.error().message;
  auto options = MetricsOptionsFromConfig(config->metrics());
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->listen_address, "0.0.0.0:9100");
  EXPECT_EQ(options->max_tracked_queues, 8u);
  EXPECT_TRUE(options->per_queue_interval_histogram);
}

TEST(MetricsOptions, BadAddressesAreRefusedWithTheFieldNamed) {
  for (const char* address : {"9464", ":9464", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000", "[::1]:9464",
                              "localhost:9464", "127.0.0.256:9464"}) {
    v1::MetricsConfig config;
    config.set_listen_address(address);
    auto options = MetricsOptionsFromConfig(config);
    ASSERT_FALSE(options) << address;
    EXPECT_EQ(options.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(options.error().message.find("metrics.listen_address"), std::string::npos) << options.error().message;
  }
  for (const char* address : {"127.0.0.1:0", "0.0.0.0:9464", "10.1.2.3:65535"}) {
    EXPECT_TRUE(ValidateListenAddress(address)) << address;
  }
}

TEST(MetricsOptions, ACapAboveTheLimitIsRefused) {
  v1::MetricsConfig config;
  config.set_max_tracked_queues(kMaxMaxTrackedQueues + 1);
  auto options = MetricsOptionsFromConfig(config);
  ASSERT_FALSE(options);
  EXPECT_NE(options.error().message.find("metrics.max_tracked_queues"), std::string::npos);
}

TEST(ProcessStats, ReadsThisProcess) {
  auto before = ReadProcessStats();
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_GT(before->resident_bytes, 0u);
  EXPECT_GE(before->virtual_bytes, before->resident_bytes);
  EXPECT_GE(before->max_fds, before->open_fds);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(before->start_time_seconds, now + 1);  // the boot time has one-second resolution

  const int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto after = ReadProcessStats();
  close(fd);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->open_fds, before->open_fds + 1);
  EXPECT_GE(after->cpu_seconds, before->cpu_seconds);
  EXPECT_EQ(after->start_time_seconds, before->start_time_seconds);
}

TEST(ProcessStats, ACommandNameWithSpacesAndParenthesesParses) {
  const auto dir = std::filesystem::temp_directory_path() / ("metrics-proc-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "fd");
  std::ofstream(dir / "fd" / "0") << "";
  std::ofstream(dir / "stat") << "42 (a b) c) S 1 42 42 0 -1 4194304 100 0 0 0 300 200 0 0 20 0 1 0 500 "
                                 "8192000 25 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
  auto stats = ReadProcessStats(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(stats) << stats.error().message;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 500 / ticks);
  EXPECT_EQ(stats->virtual_bytes, 8192000u);
  EXPECT_EQ(stats->resident_bytes, 25u * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(stats->open_fds, 1u);
}

TEST(ProcessStats, AMissingDirectoryIsAnErrorNamingThePath) {
  auto stats = ReadProcessStats("/nonexistent/proc");
  ASSERT_FALSE(stats);
  EXPECT_NE(stats.error().message.find("/nonexistent/proc/stat"), std::string::npos) << stats.error().message;
}

}  // namespace
}  // namespace nvmeadapt::metrics
