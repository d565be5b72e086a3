// SPDX-License-Identifier: Apache-2.0
// The NVMe target's own queues (agent/discover/target_queues.h): found from the collector's counts, their
// transport from the nvmet ports in configfs, and dropped once idle.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/discover/target_queues.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

constexpr engine::Nanos kSecond = 1'000'000'000;
constexpr char kPorts[] = "sys/kernel/config/nvmet/ports/";

// A port of `trtype`, exporting one subsystem (a link in its subsystems/) or none.
void Port(TempDir& tmp, const std::string& id, const std::string& trtype, bool exporting) {
  WriteFile(tmp / (kPorts + id + "/addr_trtype"), trtype + "\n");
  std::filesystem::create_directories(tmp / (kPorts + id + "/subsystems"));
  if (exporting) {
    std::filesystem::create_directories(tmp / "sys/kernel/config/nvmet/subsystems/nqn.bed");
    std::filesystem::create_directory_symlink(tmp / "sys/kernel/config/nvmet/subsystems/nqn.bed",
                                              tmp / (kPorts + id + "/subsystems/nqn.bed"));
  }
}

TEST(TargetQueues, OneControllerPerCntlidItsAdminQueueNotDecidedOn) {
  TempDir tmp;
  Port(tmp, "1", "tcp", true);
  const auto controllers =
      DiscoverTargets(DiscoveryOptions::UnderRoot(tmp.path()), {{2, 1, 10}, {1, 0, 5}, {2, 0, 3}, {1, 2, 7}, {1, 1, 9}});
  ASSERT_EQ(controllers.size(), 2u);
  const Controller& first = controllers[0];
  EXPECT_EQ(first.name, "nvmet:c1");
  EXPECT_EQ(first.source, Source::kNvmet);
  EXPECT_EQ(first.instance, 1u);
  EXPECT_EQ(first.layer, "target");
  EXPECT_EQ(first.transport, "tcp");
  ASSERT_EQ(first.queues.size(), 3u);
  EXPECT_EQ(first.queues[0].qid, 0u);
  EXPECT_FALSE(first.queues[0].eligible);
  EXPECT_EQ(first.queues[0].reason, Ineligibility::kAdminQueue);
  EXPECT_EQ(first.queues[2].qid, 2u);
  EXPECT_TRUE(first.queues[2].eligible);
  EXPECT_EQ(first.queues[2].key.ToString(), "nvmet:c1:q2");
  EXPECT_FALSE(first.queues[2].vector.has_value());
  EXPECT_EQ(controllers[1].name, "nvmet:c2");
  EXPECT_EQ(controllers[1].queues.size(), 2u);
}

TEST(TargetQueues, TheTransportIsTheOneTheExportingPortsUse) {
  TempDir tmp;
  Port(tmp, "1", "tcp", true);
  Port(tmp, "2", "rdma", false);  // set up, exporting nothing: no controller reaches the target through it
  const DiscoveryOptions options = DiscoveryOptions::UnderRoot(tmp.path());
  EXPECT_EQ(NvmetExportTransports(options), (std::set<std::string>{"tcp"}));
  EXPECT_EQ(DiscoverTargets(options, {{1, 1, 1}})[0].transport, "tcp");
  Port(tmp, "3", "loop", true);
  EXPECT_EQ(DiscoverTargets(options, {{1, 1, 1}})[0].transport, "unknown")
      << "two transports: no file of a stock kernel says which a controller came over";
}

TEST(TargetQueues, WithoutNvmetOrWithoutCountsThereAreNone) {
  TempDir tmp;
  const DiscoveryOptions options = DiscoveryOptions::UnderRoot(tmp.path());
  EXPECT_TRUE(NvmetExportTransports(options).empty());
  EXPECT_TRUE(DiscoverTargets(options, {}).empty());
  EXPECT_EQ(DiscoverTargets(options, {{4, 1, 1}})[0].transport, "unknown");
}

// A subsystem `nqn` exported through port `port` (made if need be), with a cntlid range when given.
void Exported(TempDir& tmp, const std::string& port, const std::string& nqn, int min = 0, int max = 0) {
  const std::string subsystem = tmp / ("sys/kernel/config/nvmet/subsystems/" + nqn);
  std::filesystem::create_directories(subsystem);
  if (min > 0) {
    WriteFile(subsystem + "/attr_cntlid_min", std::to_string(min) + "\n");
    WriteFile(subsystem + "/attr_cntlid_max", std::to_string(max) + "\n");
  }
  WriteFile(tmp / (kPorts + port + "/addr_trtype"), "tcp\n");
  std::filesystem::create_directories(tmp / (kPorts + port + "/subsystems"));
  std::filesystem::create_directory_symlink(subsystem, tmp / (kPorts + port + "/subsystems/" + nqn));
}

TEST(TargetQueues, AControllersSubsystemIsTheOneExportedSubsystemWhoseCntlidRangeHoldsIt) {
  TempDir tmp;
  const DiscoveryOptions options = DiscoveryOptions::UnderRoot(tmp.path());
  EXPECT_EQ(NvmetSubsystemOf(options, 1), "") << "no nvmet";
  Exported(tmp, "1", "nqn.a");  // no range set: nvmet's default, 1..0xffef
  std::filesystem::create_directories(tmp / "sys/kernel/config/nvmet/subsystems/nqn.unexported");
  EXPECT_EQ(NvmetSubsystemOf(options, 1), "nqn.a") << "a subsystem no port exports has no controller";
  EXPECT_EQ(DiscoverTargets(options, {{1, 1, 1}})[0].subsysnqn, "nqn.a");
  Exported(tmp, "2", "nqn.b");
  EXPECT_EQ(NvmetSubsystemOf(options, 1), "") << "two default ranges: either may have given cntlid 1";
  EXPECT_EQ(DiscoverTargets(options, {{1, 1, 1}})[0].subsysnqn, "");

  TempDir ranged;
  const DiscoveryOptions ranges = DiscoveryOptions::UnderRoot(ranged.path());
  Exported(ranged, "1", "nqn.a", 1, 99);
  Exported(ranged, "1", "nqn.b", 100, 199);
  EXPECT_EQ(NvmetSubsystemOf(ranges, 1), "nqn.a");
  EXPECT_EQ(NvmetSubsystemOf(ranges, 100), "nqn.b");
  EXPECT_EQ(NvmetSubsystemOf(ranges, 200), "") << "outside every range: not a controller of theirs";
  const auto controllers = DiscoverTargets(ranges, {{7, 1, 1}, {150, 1, 1}});
  EXPECT_EQ(controllers[0].subsysnqn, "nqn.a");
  EXPECT_EQ(controllers[1].subsysnqn, "nqn.b");
}

TEST(TargetQueueActivity, AQueueIsActiveUntilItsCountStandsStillForTheIdleTime) {
  TargetQueueActivity activity;
  const engine::Nanos idle = 60 * kSecond;
  EXPECT_EQ(activity.Active({{1, 1, 100}}, 0, idle).size(), 1u) << "first seen: it completed to be counted";
  EXPECT_EQ(activity.Active({{1, 1, 100}}, 60 * kSecond, idle).size(), 1u) << "idle for exactly the limit";
  EXPECT_TRUE(activity.Active({{1, 1, 100}}, 60 * kSecond + 1, idle).empty());
  EXPECT_EQ(activity.Active({{1, 1, 101}}, 61 * kSecond, idle).size(), 1u) << "it completed again";
  EXPECT_EQ(activity.Active({{1, 1, 101}}, 120 * kSecond, idle).size(), 1u);
  EXPECT_TRUE(activity.Active({{1, 1, 101}}, 122 * kSecond, idle).empty());
}

TEST(TargetQueueActivity, AQueueCountedAgainAfterItWasForgottenIsActive) {
  TargetQueueActivity activity;
  const engine::Nanos idle = 10 * kSecond;
  (void)activity.Active({{1, 1, 5}, {1, 2, 5}}, 0, idle);
  EXPECT_EQ(activity.Active({{1, 2, 5}}, 30 * kSecond, idle).size(), 0u) << "q1 forgotten, q2 idle";
  // The agent dropped q2 and the collector forgot it; its next completion makes a new count of 1.
  const auto again = activity.Active({{1, 1, 5}, {1, 2, 1}}, 31 * kSecond, idle);
  ASSERT_EQ(again.size(), 2u) << "a count that went back (a new slot) moved";
}

}  // namespace
}  // namespace nvmeadapt::discover
