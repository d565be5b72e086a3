// SPDX-License-Identifier: Apache-2.0
// The nvme disks the block program is told about, read from a sysfs tree built in a temporary directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/collect/nvme_disks.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::collect {
namespace {

namespace fs = std::filesystem;

void AddDisk(const testing::TempDir& root, const std::string& name, const std::string& dev, const std::string& parent) {
  const fs::path dir = fs::path(root.path()) / "sys/block" / name;
  fs::create_directories(dir);
  std::ofstream(dir / "dev") << dev << "\n";
  if (!parent.empty()) fs::create_directory_symlink("../../" + parent, dir / "device");
}

const NvmeDisk* Find(const std::vector<NvmeDisk>& disks, const std::string& name) {
  for (const NvmeDisk& disk : disks)
    if (disk.name == name) return &disk;
  return nullptr;
}

TEST(NvmeDisks, EachDiskGetsItsDevAndTheControllerItsDeviceLinkNames) {
  testing::TempDir root;
  AddDisk(root, "nvme0n1", "259:0", "nvme0");
  AddDisk(root, "nvme0n2", "259:3", "nvme0");
  AddDisk(root, "nvme1c12n1", "259:1", "nvme12");     // a multipath path: its parent is the controller
  AddDisk(root, "nvme1n1", "259:2", "nvme-subsys1");  // the multipath head: its parent is the subsystem
  AddDisk(root, "sda", "8:0", "0:0:0:0");

  const auto disks = ListNvmeDisks(root.path());
  ASSERT_EQ(disks.size(), 4u);
  const NvmeDisk* first = Find(disks, "nvme0n1");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->dev, (259u << 20) | 0u);
  EXPECT_EQ(first->controller, 0u);
  ASSERT_NE(Find(disks, "nvme0n2"), nullptr);
  EXPECT_EQ(Find(disks, "nvme0n2")->controller, 0u);
  ASSERT_NE(Find(disks, "nvme1c12n1"), nullptr);
  EXPECT_EQ(Find(disks, "nvme1c12n1")->controller, 12u);
  ASSERT_NE(Find(disks, "nvme1n1"), nullptr);
  EXPECT_EQ(Find(disks, "nvme1n1")->controller, std::nullopt);
  EXPECT_EQ(Find(disks, "sda"), nullptr);
}

TEST(NvmeDisks, ADiskWithoutAReadableDevIsLeftOutAndOneWithoutParentHasNoController) {
  testing::TempDir root;
  AddDisk(root, "nvme0n1", "not-a-dev", "nvme0");
  AddDisk(root, "nvme3n1", "259:7", "");
  AddDisk(root, "nvme4n1", "259:8", "nvme4x");  // not nvme<N>

  const auto disks = ListNvmeDisks(root.path());
  ASSERT_EQ(disks.size(), 2u);
  EXPECT_EQ(Find(disks, "nvme0n1"), nullptr);
  ASSERT_NE(Find(disks, "nvme3n1"), nullptr);
  EXPECT_EQ(Find(disks, "nvme3n1")->controller, std::nullopt);
  ASSERT_NE(Find(disks, "nvme4n1"), nullptr);
  EXPECT_EQ(Find(disks, "nvme4n1")->controller, std::nullopt);
}

TEST(NvmeDisks, NoSysBlockIsNoDisks) {
  testing::TempDir root;
  EXPECT_TRUE(ListNvmeDisks(root.path()).empty());
  EXPECT_EQ(ReadDevNumber(fs::path(root.path()) / "absent"), std::nullopt);
}

}  // namespace
}  // namespace nvmeadapt::collect
