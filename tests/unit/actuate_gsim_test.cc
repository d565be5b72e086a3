// SPDX-License-Identifier: Apache-2.0
// The GSIM lever against fake procfs trees of each published layout (tests/data/sysfs/gsim-*, over qemu-poll):
// the probe, moderating a vector and setting the delay, stopping, restoring, and the errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/actuate/gsim_lever.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/qemu_poll_target.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

using namespace nvmeadapt::testing;  // the temporary trees of test_fs.h

// One layout's tree and the files and values its lever must use.
struct LayoutCase {
  const char* tree;
  GsimLayout layout;
  const char* irq_file;  // under the root
  const char* delay_file;
  const char* on;
  const char* off;
  const char* delay_100;  // what sets the delay to 100 us
  const char* delay_0;    // the delay found, as a restore value
};

const LayoutCase kLayouts[] = {
    {"gsim-v3", GsimLayout::kGlobalFile, "proc/irq/29/soft_moderation", "proc/irq/soft_moderation", "on", "off",
     "delay_us=100", "delay_us=0"},
    {"gsim-v4", GsimLayout::kModerationDir, "proc/irq/29/soft_moderation", "proc/irq/soft_moderation/delay_us",
     "on", "off", "100", "0"},
    {"gsim-sw", GsimLayout::kSwModerationDir, "proc/irq/29/allow_sw_moderation", "proc/irq/sw_moderation/delay_us",
     "1", "0", "100", "0"},
};

class GsimLayouts : public ::testing::TestWithParam<LayoutCase> {
 protected:
  GsimLayouts() {
    CopyTree(SysfsCase("qemu-poll"), tmp_.path());
    CopyTree(SysfsCase(GetParam().tree), tmp_.path());
    // procfs lists each handler of an IRQ as a directory of /proc/irq/N, as /proc/interrupts names them.
    for (const auto& [irq, handler] : {std::pair{28, "nvme0q0"}, {29, "nvme0q1"}, {30, "nvme0q2"}}) {
      std::filesystem::create_directories(tmp_ / ("proc/irq/" + std::to_string(irq) + "/" + handler));
    }
  }
  GsimOptions Options() const { return {tmp_ / "proc", 100}; }
  std::string Irq() const { return tmp_ / GetParam().irq_file; }
  std::string Delay() const { return tmp_ / GetParam().delay_file; }

  TempDir tmp_;
};

TEST_P(GsimLayouts, ProbeFindsTheLayout) {
  EXPECT_EQ(ProbeGsimLayout(tmp_ / "proc"), GetParam().layout);
  GsimLever lever(Options());
  EXPECT_EQ(lever.Layout(), GetParam().layout);
  EXPECT_EQ(lever.IrqPath(lever.Layout(), 29), Irq());
  EXPECT_EQ(lever.DelayPath(lever.Layout()), Delay());
}

TEST_P(GsimLayouts, ModeratesTheVectorSetsTheDelayAndRestoresBoth) {
  const LayoutCase& c = GetParam();
  GsimLever lever(Options());
  EXPECT_EQ(lever.Scope(), LeverScope::kVector);
  auto on = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(on->writes, (Writes{{Delay(), c.delay_100, true}, {Irq(), c.on, true}}));
  EXPECT_EQ(ReadFile(Irq()), std::string(c.on) + "\n");
  EXPECT_EQ(ReadFile(Delay()), std::string(c.delay_100) + "\n");
  EXPECT_EQ(on->restore.steps, (Steps{{Irq(), c.off}, {Delay(), c.delay_0}}));

  // The v1-v3 file shows statistics again after a write; a parameter file shows its value.
  if (c.layout == GsimLayout::kGlobalFile) WriteFile(Delay(), "enabled              yes\ndelay_us             100\n");
  auto again = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_TRUE(again->writes.empty()) << "already moderated with the delay asked for";

  auto off = lever.Apply(Nvme0(), ReapMode::kInterrupt);  // stops moderating this vector only
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_EQ(off->writes, (Writes{{Irq(), c.off, true}}));
  EXPECT_EQ(off->restore.steps, (Steps{{Irq(), c.off}, {Delay(), c.delay_0}})) << "the values first found";

  auto restored = lever.Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(*restored, (Writes{{Irq(), c.off, true}, {Delay(), c.delay_0, true}}));
  EXPECT_EQ(ReadFile(Irq()), std::string(c.off) + "\n");
  EXPECT_EQ(ReadFile(Delay()), std::string(c.delay_0) + "\n");
}

TEST_P(GsimLayouts, RestorePointFromARestartedAgentNeedsNoPlan) {
  const LayoutCase& c = GetParam();
  WriteFile(Irq(), std::string(c.on) + "\n");
  GsimLever lever(Options());  // a new process after a crash: nothing planned before
  RestorePoint point{LeverKind::kGsim, Nvme0(), {{Irq(), c.off}, {Delay(), c.delay_0}}};
  auto restored = lever.Restore(point);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(ReadFile(Irq()), std::string(c.off) + "\n");
}

// A journaled IRQ number the kernel has since given to another handler (a controller reset renumbers its
// vectors) is not the queue's: its switch is left alone, the global delay is still put back.
TEST_P(GsimLayouts, RestoreChecksTheJournaledIrqStillNamesTheQueue) {
  const LayoutCase& c = GetParam();
  WriteFile(Irq(), std::string(c.on) + "\n");
  WriteFile(Delay(), std::string(c.delay_100) + "\n");
  std::filesystem::rename(tmp_ / "proc/irq/29/nvme0q1", tmp_ / "proc/irq/29/eth0-rx-0");
  GsimLever lever(Options());
  RestorePoint point{LeverKind::kGsim, Nvme0(), {{Irq(), c.off}, {Delay(), c.delay_0}}};
  auto restored = lever.Restore(point);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(*restored, (Writes{{Delay(), c.delay_0, true}}));
  EXPECT_EQ(ReadFile(Irq()), std::string(c.on) + "\n") << "another device's IRQ was written";

  RestorePoint switch_only{LeverKind::kGsim, Nvme0(), {{Irq(), c.off}}};
  auto refused = lever.Restore(switch_only);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
  EXPECT_NE(refused.error().message.find("no longer names nvme0q1"), std::string::npos) << refused.error().message;
  EXPECT_EQ(ReadFile(Irq()), std::string(c.on) + "\n");
}

TEST_P(GsimLayouts, WithoutDelayTheGlobalSettingIsLeftAlone) {
  GsimOptions options = Options();
  options.delay_us = 0;
  GsimLever lever(options);
  const std::string delay_before = ReadFile(Delay());
  auto on = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(on->writes, (Writes{{Irq(), GetParam().on, true}}));
  EXPECT_EQ(on->restore.steps, (Steps{{Irq(), GetParam().off}}));
  EXPECT_EQ(ReadFile(Delay()), delay_before);
}

TEST_P(GsimLayouts, Errors) {
  GsimLever lever(Options());
  LeverTarget poll_queue = Nvme0(3);
  poll_queue.irq.reset();
  poll_queue.vector.reset();
  auto no_vector = lever.Apply(poll_queue, ReapMode::kPoll);
  ASSERT_FALSE(no_vector);
  EXPECT_EQ(no_vector.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(no_vector.error().object, "nvme0 q3");

  auto no_switch = lever.Apply(Nvme0(2), ReapMode::kPoll);  // /proc/irq/30 exists, its switch does not
  ASSERT_FALSE(no_switch);
  EXPECT_EQ(no_switch.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(no_switch.error().object, lever.IrqPath(GetParam().layout, 30));
  EXPECT_NE(no_switch.error().message.find(GsimLayoutName(GetParam().layout)), std::string::npos)
      << no_switch.error().message;

  LeverTarget vanished = Nvme0();
  vanished.irq = 77;
  auto gone = lever.Apply(vanished, ReapMode::kPoll);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);

  WriteFile(Irq(), "maybe\n");
  auto garbage = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, ErrorCode::kIo);
  EXPECT_NE(garbage.error().message.find("maybe"), std::string::npos);
  WriteFile(Irq(), std::string(GetParam().off) + "\n");

  WriteFile(Delay(), "soon\n");
  auto bad_delay = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_FALSE(bad_delay);
  EXPECT_EQ(bad_delay.error().code, ErrorCode::kIo);
  EXPECT_EQ(bad_delay.error().object, Delay());
  EXPECT_EQ(ReadFile(Irq()), std::string(GetParam().off) + "\n") << "nothing written after a bad read";
}

INSTANTIATE_TEST_SUITE_P(EveryPublishedLayout, GsimLayouts, ::testing::ValuesIn(kLayouts),
                         [](const auto& info) {
                           std::string name = info.param.tree;
                           name.erase(0, name.find('-') + 1);
                           return name;
                         });

TEST(GsimLayout, AbsentWithoutAnyGsimFile) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  EXPECT_EQ(ProbeGsimLayout(tmp / "proc"), GsimLayout::kAbsent);
  GsimLever lever({tmp / "proc", 100});
  auto result = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(result.error().object, tmp / "proc/irq/29/soft_moderation");
  EXPECT_NE(result.error().message.find("lacks GSIM"), std::string::npos) << result.error().message;
}

TEST(GsimLayout, TheNewestLayoutWinsAndARestorePointOfAnotherLayoutIsRefused) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  CopyTree(SysfsCase("gsim-sw"), tmp.path());
  std::filesystem::create_directories(tmp / "proc/irq/soft_moderation");
  EXPECT_EQ(ProbeGsimLayout(tmp / "proc"), GsimLayout::kSwModerationDir);

  GsimLever lever({tmp / "proc", 100});
  RestorePoint v3_point{LeverKind::kGsim, Nvme0(), {{tmp / "proc/irq/29/soft_moderation", "off"}}};
  auto restored = lever.Restore(v3_point);
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error().code, ErrorCode::kIo);
  EXPECT_FALSE(std::filesystem::exists(tmp / "proc/irq/29/soft_moderation"));
}

}  // namespace
}  // namespace nvmeadapt::actuate
