// SPDX-License-Identifier: Apache-2.0
// The layer of a kernel controller in an NVMe over Fabrics stack (agent/discover/fabrics_layer.h), against the
// captured qemu-poll tree with an nvmet configfs tree written beside it.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/discover/discovery.h"
#include "agent/discover/fabrics_layer.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::CopyTree;
using nvmeadapt::testing::SysfsCase;
using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

constexpr char kSubsystem[] = "sys/kernel/config/nvmet/subsystems/nqn.2026-12.io.nvme-adapt:bed/namespaces/";

Controller Discovered(const std::string& root) {
  DiscoveryOptions options = DiscoveryOptions::UnderRoot(root);
  options.uvnvme = false;
  const Snapshot snapshot = Discover(options);
  if (snapshot.controllers.size() != 1) throw std::runtime_error("expected one controller");
  return snapshot.controllers.front();
}

TEST(FabricsLayer, APcieControllerNoTargetExportsIsLocal) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  EXPECT_EQ(Discovered(tmp.path()).layer, "local");
}

TEST(FabricsLayer, ANamespaceAnEnabledNvmetNamespaceExportsMakesItsControllerBacking) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  WriteFile(tmp / (std::string(kSubsystem) + "1/device_path"), "/dev/nvme0n1\n");
  WriteFile(tmp / (std::string(kSubsystem) + "1/enable"), "1\n");
  EXPECT_EQ(NvmetExportedDisks(DiscoveryOptions::UnderRoot(tmp.path())), (std::set<std::string>{"nvme0n1"}));
  EXPECT_EQ(Discovered(tmp.path()).layer, "backing");
}

TEST(FabricsLayer, ADisabledNvmetNamespaceExportsNothing) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  WriteFile(tmp / (std::string(kSubsystem) + "1/device_path"), "/dev/nvme0n1\n");
  WriteFile(tmp / (std::string(kSubsystem) + "1/enable"), "0\n");
  EXPECT_EQ(Discovered(tmp.path()).layer, "local");
}

TEST(FabricsLayer, AnUnreadableNamespaceIsLeftOutAndTheRestRead) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  std::filesystem::create_directories(tmp / (std::string(kSubsystem) + "2"));  // mid-teardown: no attributes
  WriteFile(tmp / (std::string(kSubsystem) + "1/device_path"), "/dev/nvme0n1\n");
  WriteFile(tmp / (std::string(kSubsystem) + "1/enable"), "1\n");
  EXPECT_EQ(Discovered(tmp.path()).layer, "backing");
}

TEST(FabricsLayer, AMultipathPathDiskMatchesTheHeadTheTargetExports) {
  Controller c;
  c.transport = "pcie";
  c.namespaces.push_back(Namespace{"nvme3c3n1", 1});
  EXPECT_EQ(ControllerLayer(c, {"nvme3n1"}), "backing");
  EXPECT_EQ(ControllerLayer(c, {"nvme3n2"}), "local");
}

TEST(FabricsLayer, EveryFabricsTransportIsAHost) {
  for (const char* transport : {"tcp", "rdma", "fc", "loop"}) {
    Controller c;
    c.transport = transport;
    EXPECT_EQ(ControllerLayer(c, {}), "host") << transport;
  }
}

}  // namespace
}  // namespace nvmeadapt::discover
