// SPDX-License-Identifier: Apache-2.0
// deploy/config/config.json is installed as /etc/nvme-adapt/config.json (a conffile) and is the
// Kubernetes ConfigMap: a field the daemon refuses would stop the agent at start with exit status 2.
#include <gtest/gtest.h>

#include "agent/config/config_file.h"

namespace nvmeadapt::config {
namespace {

TEST(DefaultConfig, ParsesAndValidates) {
  auto config = LoadConfigFile(NVME_ADAPT_DEFAULT_CONFIG);
  ASSERT_TRUE(config) << config.error().message;
}

TEST(DefaultConfig, ObservesOnlyUntilAnOperatorChoosesAMode) {
  auto config = LoadConfigFile(NVME_ADAPT_DEFAULT_CONFIG);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->policy().mode(), v1::CONTROLLER_MODE_OFF);
  EXPECT_TRUE(config->controllers().empty());
  EXPECT_TRUE(config->queues().empty());
}

TEST(DefaultConfig, LeavesPathsToTheServiceFlags) {
  // The systemd unit and the DaemonSet pass --state-dir and --runtime-dir; a path in the file would be
  // overridden there and only mislead.
  auto config = LoadConfigFile(NVME_ADAPT_DEFAULT_CONFIG);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->state_dir().empty());
  EXPECT_TRUE(config->runtime_dir().empty());
}

}  // namespace
}  // namespace nvmeadapt::config
