// SPDX-License-Identifier: Apache-2.0
// Finding 5 of issue 15: the file levers' writes stay inside their root. A link on the way out of the root, an
// attribute that is itself a link and a '..' component are refused with the reason, and the file they point
// at keeps its content.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "agent/actuate/adaptive_poll_lever.h"
#include "common/files.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

using nvmeadapt::testing::ReadFile;
using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

class ConfinedWrite : public ::testing::Test {
 protected:
  ConfinedWrite() {
    std::filesystem::create_directories(tmp_ / "sys/devices/pci0/nvme/nvme0");
    std::filesystem::create_directories(tmp_ / "sys/class/nvme");
    // As in sysfs: the class entry is a relative link to the device, inside the root.
    std::filesystem::create_directory_symlink("../../devices/pci0/nvme/nvme0", tmp_ / "sys/class/nvme/nvme0");
    WriteFile(tmp_ / "sys/devices/pci0/nvme/nvme0/adaptive_poll", "0\n");
    WriteFile(tmp_ / "outside/secret", "untouched\n");
  }
  AdaptivePollLever Lever() const {
    return AdaptivePollLever({tmp_ / "sys", "{sysfs}/class/nvme/{ctrl}/adaptive_poll", "1", "0"});
  }
  LeverTarget Nvme(const std::string& name) const {
    LeverTarget target;
    target.controller = name;
    target.qid = 1;
    return target;
  }

  TempDir tmp_;
};

TEST_F(ConfinedWrite, LinksInsideTheRootAreFollowedLikeSysfsClassLinks) {
  AdaptivePollLever lever = Lever();
  auto applied = lever.Apply(Nvme("nvme0"), ReapMode::kPoll);
  ASSERT_TRUE(applied) << applied.error().ToString();
  EXPECT_EQ(ReadFile(tmp_ / "sys/devices/pci0/nvme/nvme0/adaptive_poll"), "1\n");
}

TEST_F(ConfinedWrite, AnAttributeThatIsALinkIsRefused) {
  std::filesystem::create_directories(tmp_ / "sys/class/nvme/nvme1");
  std::filesystem::create_symlink(tmp_ / "outside/secret", tmp_ / "sys/class/nvme/nvme1/adaptive_poll");
  AdaptivePollLever lever = Lever();
  auto applied = lever.Apply(Nvme("nvme1"), ReapMode::kPoll);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().code, ErrorCode::kPermissionDenied) << applied.error().ToString();
  EXPECT_NE(applied.error().message.find("the file is a symlink"), std::string::npos) << applied.error().message;
  EXPECT_EQ(ReadFile(tmp_ / "outside/secret"), "untouched\n");
}

TEST_F(ConfinedWrite, ALinkLeadingOutOfTheRootIsRefused) {
  WriteFile(tmp_ / "outside/nvme2/adaptive_poll", "0\n");
  std::filesystem::create_directory_symlink(tmp_ / "outside/nvme2", tmp_ / "sys/class/nvme/nvme2");
  AdaptivePollLever lever = Lever();
  auto applied = lever.Apply(Nvme("nvme2"), ReapMode::kPoll);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().code, ErrorCode::kPermissionDenied) << applied.error().ToString();
  EXPECT_NE(applied.error().message.find("leads out of"), std::string::npos) << applied.error().message;
  EXPECT_EQ(ReadFile(tmp_ / "outside/nvme2/adaptive_poll"), "0\n");
}

TEST_F(ConfinedWrite, DotDotAndPathsOutsideTheRootAreRefused) {
  for (const std::string& path : {tmp_ / "sys/class/../../outside/secret", tmp_ / "outside/secret",
                                  tmp_ / "sys/./class/nvme/nvme0/adaptive_poll", tmp_ / "sysx/a"}) {
    const Status written = WriteAttribute(tmp_ / "sys", path, "1");
    ASSERT_FALSE(written) << path;
    EXPECT_EQ(written.error().code, ErrorCode::kPermissionDenied) << written.error().message;
    EXPECT_NE(written.error().message.find("refused"), std::string::npos) << written.error().message;
  }
  EXPECT_EQ(ReadFile(tmp_ / "outside/secret"), "untouched\n");
}

TEST_F(ConfinedWrite, OpenBeneathReturnsAReadableDescriptor) {
  auto fd = OpenBeneath(tmp_ / "sys", tmp_ / "sys/class/nvme/nvme0/adaptive_poll", O_RDONLY);
  ASSERT_TRUE(fd) << fd.error().message;
  char buffer[4] = {};
  EXPECT_EQ(read(*fd, buffer, sizeof buffer), 2);
  EXPECT_EQ(std::string(buffer, 2), "0\n");
  close(*fd);
  auto missing = OpenBeneath(tmp_ / "sys", tmp_ / "sys/class/nvme/nvme9/adaptive_poll", O_RDONLY);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound) << missing.error().message;
}

}  // namespace
}  // namespace nvmeadapt::actuate
