// SPDX-License-Identifier: Apache-2.0
// `nvme-adaptd --check-config` (daemon/config_load.h): the shipped configs pass, and each kind of refusal a start
// would meet, up to the policy book's floors, is found offline with the field named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/daemon/config_load.h"

namespace nvmeadapt::daemon {
namespace {

namespace fs = std::filesystem;
const fs::path kSourceDir = NVME_ADAPT_SOURCE_DIR;

class CheckConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("check-config-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& json) {
    const fs::path path = dir_ / ("config-" + std::to_string(++files_) + ".json");
    std::ofstream(path) << json;
    return path.string();
  }

  fs::path dir_;
  int files_ = 0;
};

TEST_F(CheckConfig, EveryShippedConfigPasses) {
  std::vector<fs::path> shipped = {kSourceDir / "deploy/kubernetes/base/config.json"};
  for (const auto& entry : fs::directory_iterator(kSourceDir / "deploy/config")) {
    if (entry.path().extension() == ".json") shipped.push_back(entry.path());
  }
  ASSERT_GE(shipped.size(), 2u);
  for (const fs::path& path : shipped) {
    Status checked = CheckConfigFile(path.string());
    EXPECT_TRUE(checked) << path << ": " << checked.error().message;
  }
}

TEST_F(CheckConfig, EachRefusalNamesTheFileAndTheField) {
  struct Case {
    std::string json;
    std::string field;
  } cases[] = {
      {R"({"polcy": {}})", "polcy"},
      {R"({"policy": {"paceSlackNs": "soon"}})", "paceSlackNs"},
      // The agent's floor (the policy book), which ParseConfigJson alone lets through.
      {R"({"policy": {"windowCompletions": 8}})", "policy.window_completions: must be >= 16"},
      {R"({"selectors": [{"name": "s", "match": {"model": "A*"}, "policy": {"profile": "fastest"}}]})",
       "selectors[0].policy.profile"},
      {R"({"levers": {"kernelLever": "LEVER_KIND_UVNVME_SOCKET"}})", "levers.kernel_lever"},
      {R"({"metrics": {"maxTrackedQueues": 100000}})", "max_tracked_queues"},
      {R"({"api": {"tcpAddress": "0.0.0.0:7443", "insecureLoopbackTcp": true}})", "api.tcp_address"},
      {R"({"node": {"factsIntervalNs": "1ms"}})", "node.facts_interval_ns"},
  };
  for (const Case& c : cases) {
    const std::string path = Write(c.json);
    Status checked = CheckConfigFile(path);
    ASSERT_FALSE(checked) << c.json;
    EXPECT_EQ(checked.error().code, ErrorCode::kInvalidArgument) << c.json;
    EXPECT_NE(checked.error().message.find(path), std::string::npos) << checked.error().message;
    EXPECT_NE(checked.error().message.find(c.field), std::string::npos) << checked.error().message;
    EXPECT_EQ(checked.error().message.find('\n'), std::string::npos) << checked.error().message;
  }
}

TEST_F(CheckConfig, AMissingFileIsNamed) {
  Status checked = CheckConfigFile((dir_ / "absent.json").string());
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message.find("absent.json"), std::string::npos) << checked.error().message;
}

// A start refuses what the check refuses: the floors were found only once the journal was restored and the
// collector open (exit 1), now with the rest of the file's checks (exit 2).
TEST_F(CheckConfig, AStartLoadsWithTheSameChecks) {
  DaemonFlags flags;
  flags.config_path = Write(R"({"policy": {"windowCompletions": 8}})");
  flags.config_explicit = true;
  auto loaded = LoadDaemonConfig(flags);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("window_completions"), std::string::npos) << loaded.error().message;
  flags.config_path = Write(R"({"policy": {"mode": "CONTROLLER_MODE_SHADOW"}})");
  flags.state_dir = "/nonexistent/state";
  loaded = LoadDaemonConfig(flags);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->state_dir(), "/nonexistent/state");
}

}  // namespace
}  // namespace nvmeadapt::daemon
