#include <gtest/gtest.h>

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
}

TEST(DaemonFlags, BadFlagsAreOneLineNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"--frobnicate"}, "unknown argument '--frobnicate' (see --help)"},
      {{"--state-dir"}, "--state-dir: needs a value"},
      {{"--state-dir="}, "--state-dir: must not be empty"},
      {{"--default-mode", "sometimes"}, "--default-mode: unknown mode 'sometimes' (off, adaptive, interrupt, poll, shadow)"},
      {{"--exit-after", "-1"}, "--exit-after: not a positive number of seconds: '-1'"},
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
                           "--help", "--version"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace nvmeadapt::daemon
