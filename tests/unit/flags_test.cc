// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <sched.h>

#include <thread>

#include "agent/daemon/cpu_scheduling.h"
#include "agent/daemon/flags.h"

namespace nvmeadapt::daemon {
namespace {

TEST(DaemonFlags, DefaultsAndValues) {
  auto flags = ParseDaemonFlags({});
  ASSERT_TRUE(flags);
  EXPECT_EQ(flags->config_path, "/etc/nvme-adapt/config.json");
  EXPECT_FALSE(flags->config_explicit);
  flags = ParseDaemonFlags({"--config", "/x.json", "--state-dir=/s", "--default-mode", "adaptive", "--dry-run",
                            "--exit-after", "2.5", "--record-windows", "/t"});
  ASSERT_TRUE(flags) << flags.error().message;
  EXPECT_EQ(flags->config_path, "/x.json");
  EXPECT_TRUE(flags->config_explicit);
  EXPECT_EQ(*flags->state_dir, "/s");
  EXPECT_EQ(*flags->default_mode, engine::ControllerMode::kAdaptive);
  EXPECT_TRUE(flags->dry_run);
  EXPECT_DOUBLE_EQ(*flags->exit_after_seconds, 2.5);
  EXPECT_EQ(flags->record_windows, "/t");
  EXPECT_FALSE(flags->restore_only);
  flags = ParseDaemonFlags({"--restore-only", "--min-disruptive-interval", "0.5", "--target-idle", "20"});
  ASSERT_TRUE(flags) << flags.error().message;
  EXPECT_TRUE(flags->restore_only);
  EXPECT_DOUBLE_EQ(*flags->min_disruptive_interval_seconds, 0.5);
  EXPECT_DOUBLE_EQ(*flags->target_idle_seconds, 20);
  // The one duration grammar (issues 32 and 46: common/duration.h, days included) beside the bare seconds.
  flags = ParseDaemonFlags({"--min-disruptive-interval", "500ms", "--target-idle=1m30s", "--exit-after", "0.001d"});
  ASSERT_TRUE(flags) << flags.error().message;
  EXPECT_DOUBLE_EQ(*flags->min_disruptive_interval_seconds, 0.5);
  EXPECT_DOUBLE_EQ(*flags->target_idle_seconds, 90);
  EXPECT_DOUBLE_EQ(*flags->exit_after_seconds, 86.4);
  // A flag given twice takes its last value, as the hand-written parser did.
  flags = ParseDaemonFlags({"--state-dir", "/a", "--state-dir=/b", "--check-config", "/c.json"});
  ASSERT_TRUE(flags) << flags.error().message;
  EXPECT_EQ(*flags->state_dir, "/b");
  EXPECT_EQ(*flags->check_config, "/c.json");
  EXPECT_FALSE(ParseDaemonFlags({"--target-idle", "20 parsecs"}));
}

TEST(DaemonFlags, BadFlagsAreOneLineNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"--frobnicate"}, "unknown argument '--frobnicate' (see --help)"},
      {{"--state-dir"}, "--state-dir: needs a value"},
      {{"--state-dir="}, "--state-dir: needs a value"},
      {{"--state-dir", ""}, "--state-dir: must not be empty"},
      {{"--default-mode", "sometimes"}, "--default-mode: unknown mode 'sometimes' (off, adaptive, interrupt, poll, shadow)"},
      {{"--exit-after", "-1"}, "--exit-after: not a positive duration or number of seconds: '-1'"},
      {{"--min-disruptive-interval", "-3"},
       "--min-disruptive-interval: not a duration (30s, 500ms, 1m30s) or number of seconds in [0, 86400]: '-3'"},
      {{"--target-idle", "0.5"},
       "--target-idle: not a duration (30s, 500ms, 1m30s) or number of seconds in [1, 86400]: '0.5'"},
      {{"--target-idle", "soon"},
       "--target-idle: not a duration (30s, 500ms, 1m30s) or number of seconds in [1, 86400]: 'soon'"},
      {{"--target-idle", "2d"},
       "--target-idle: not a duration (30s, 500ms, 1m30s) or number of seconds in [1, 86400]: '2d'"},
      {{"--check-config"}, "--check-config: needs a value"},
      {{"--dry-run", "stray"}, "unknown argument 'stray' (see --help)"},
  };
  for (const Case& c : cases) {
    auto flags = ParseDaemonFlags(c.args);
    ASSERT_FALSE(flags) << c.args[0];
    EXPECT_EQ(flags.error().message, c.message);
  }
}

TEST(DaemonFlags, UsageMentionsEveryFlag) {
  const std::string usage = DaemonUsage();
  for (const char* flag : {"--config", "--state-dir", "--runtime-dir", "--log-level", "--default-mode", "--dry-run",
                           "--record-windows", "--api-socket", "--metrics-listen", "--sources", "--exit-after",
                           "--cpu-scheduling", "--restore-only", "--min-disruptive-interval", "--target-idle", "--help", "--check-config",
                           "--version"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

// The policy a thread asks for is the one it gets, and threads it starts afterwards inherit it.
TEST(CpuScheduling, BatchAndNormalAreAppliedAndInheritedAndOthersRefused) {
  ASSERT_TRUE(ApplyCpuScheduling("batch"));
  EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
  int in_thread = -1;
  std::thread([&] { in_thread = sched_getscheduler(0); }).join();
  EXPECT_EQ(in_thread, SCHED_BATCH);
  ASSERT_TRUE(ApplyCpuScheduling("normal"));
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  Status bad = ApplyCpuScheduling("fifo");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "cpu scheduling: expected batch or normal, got 'fifo'");
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
}

}  // namespace
}  // namespace nvmeadapt::daemon
