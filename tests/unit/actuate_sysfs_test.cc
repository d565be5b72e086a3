// SPDX-License-Identifier: Apache-2.0
// The file levers against temporary trees: the adaptive-poll attribute and poll_queues + reset (GSIM:
// actuate_gsim_test.cc), and a dry run of every file lever.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/actuate/gsim_lever.h"
#include "agent/actuate/adaptive_poll_lever.h"
#include "agent/actuate/poll_queues_lever.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/qemu_poll_target.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

using namespace nvmeadapt::testing;  // the temporary trees of test_fs.h

constexpr char kController[] = "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0";

class FileLevers : public ::testing::Test {
 protected:
  FileLevers() {
    CopyTree(SysfsCase("qemu-poll"), tmp_.path());
    attribute_ = tmp_ / (std::string(kController) + "/adaptive_poll");
    WriteFile(attribute_, "0\n");
    CopyTree(SysfsCase("gsim-v3"), tmp_.path());  // for the dry run of every file lever
    // procfs's directory per handler of an IRQ: a GSIM restore checks the IRQ still names its queue.
    std::filesystem::create_directories(tmp_ / "proc/irq/29/nvme0q1");
  }
  AdaptivePollOptions Adaptive() const { return {tmp_ / "sys", "{sysfs}/class/nvme/{ctrl}/adaptive_poll", "1", "0"}; }
  GsimOptions Gsim() const { return {tmp_ / "proc", 100}; }
  PollQueuesOptions PollQueues() const { return {tmp_ / "sys", 1}; }

  TempDir tmp_;
  std::string attribute_;
};

TEST_F(FileLevers, AdaptivePollWritesAndKeepsTheFirstValueToRestore) {
  AdaptivePollLever lever(Adaptive());
  EXPECT_EQ(lever.Kind(), LeverKind::kAdaptivePollSysfs);
  EXPECT_EQ(lever.Scope(), LeverScope::kController);
  EXPECT_EQ(lever.PathFor("nvme0"), tmp_ / "sys/class/nvme/nvme0/adaptive_poll");

  auto on = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(ReadFile(attribute_), "1\n");
  EXPECT_EQ(on->writes, (Writes{{lever.PathFor("nvme0"), "1", true}}));
  EXPECT_EQ(on->restore.lever, LeverKind::kAdaptivePollSysfs);
  EXPECT_EQ(on->restore.target, Nvme0());
  EXPECT_EQ(on->restore.steps, (Steps{{lever.PathFor("nvme0"), "0"}}));
  EXPECT_FALSE(on->dry_run);

  auto again = lever.Apply(Nvme0(2), ReapMode::kPoll);  // controller scope: already on
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->writes.empty());
  EXPECT_EQ(again->restore.steps, (Steps{{lever.PathFor("nvme0"), "0"}}));

  ASSERT_TRUE(lever.Apply(Nvme0(), ReapMode::kInterrupt));
  EXPECT_EQ(ReadFile(attribute_), "0\n");
  auto back_on = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(back_on);
  EXPECT_EQ(back_on->restore.steps, (Steps{{lever.PathFor("nvme0"), "0"}})) << "the original, not the last value";

  auto restored = lever.Restore(back_on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(*restored, (Writes{{lever.PathFor("nvme0"), "0", true}}));
  EXPECT_EQ(ReadFile(attribute_), "0\n");
}

TEST_F(FileLevers, AdaptivePollValuesAndPathAreConfigurable) {
  WriteFile(tmp_ / "sys/block/nvme0n1/queue/adaptive_poll", "disabled\n");
  AdaptivePollOptions options = Adaptive();
  options.path_template = "{sysfs}/block/{ctrl}n1/queue/adaptive_poll";
  options.on_value = "enabled";
  options.off_value = "disabled";
  AdaptivePollLever lever(options);
  ASSERT_TRUE(lever.Apply(Nvme0(), ReapMode::kPoll));
  EXPECT_EQ(ReadFile(tmp_ / "sys/block/nvme0n1/queue/adaptive_poll"), "enabled\n");
}

TEST_F(FileLevers, AdaptivePollMissingAttributeIsUnsupported) {
  std::filesystem::remove(attribute_);
  AdaptivePollLever lever(Adaptive());
  auto result = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(LeverOf(result.error()), LeverKind::kAdaptivePollSysfs);
  EXPECT_EQ(result.error().object, lever.PathFor("nvme0"));
  EXPECT_NE(result.error().message.find(lever.PathFor("nvme0")), std::string::npos);
  EXPECT_NE(result.error().message.find("adaptive polling patch"), std::string::npos) << result.error().message;
}

TEST_F(FileLevers, AdaptivePollMissingControllerIsNotFound) {
  AdaptivePollLever lever(Adaptive());
  LeverTarget gone = Nvme0();
  gone.controller = "nvme7";
  auto result = lever.Apply(gone, ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(result.error().object, lever.PathFor("nvme7"));
}

TEST_F(FileLevers, ReadOnlySysfsAttributeIsPermissionDenied) {
  // Real sysfs refuses to open a 0444 attribute for writing, root included: kernfs checks the mode itself.
  ASSERT_TRUE(std::filesystem::exists("/sys/devices/system/cpu/online")) << "needs Linux sysfs mounted at /sys";
  AdaptivePollLever lever({"/sys", "{sysfs}/devices/system/cpu/online{ctrl}", "1", "0"});
  LeverTarget target = Nvme0();
  target.controller = "";
  auto result = lever.Apply(target, ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kPermissionDenied) << result.error().ToString();
  EXPECT_EQ(result.error().object, "/sys/devices/system/cpu/online");
  EXPECT_EQ(result.error().sys_errno, EACCES);
}

TEST_F(FileLevers, PathThroughARegularFileIsAnIoError) {
  // "model" is a file: nothing can be under it (ENOTDIR), whoever runs the test.
  AdaptivePollLever lever({tmp_ / "sys", "{sysfs}/class/nvme/{ctrl}/model/adaptive_poll", "1", "0"});
  auto result = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kIo);
  EXPECT_EQ(result.error().sys_errno, ENOTDIR);
  EXPECT_NE(result.error().message.find("model/adaptive_poll: Not a directory"), std::string::npos)
      << result.error().message;
}

TEST_F(FileLevers, RestorePointOfAnotherFileIsRefused) {
  AdaptivePollLever lever(Adaptive());
  RestorePoint point{LeverKind::kAdaptivePollSysfs, Nvme0(), {{tmp_ / "etc/passwd", "x"}}};
  auto result = lever.Restore(point);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kIo);
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "etc/passwd"));
  point.lever = LeverKind::kGsim;
  EXPECT_FALSE(lever.Restore(point));
}

TEST_F(FileLevers, PollQueuesWritesTheParameterThenResets) {
  WriteFile(tmp_ / "sys/module/nvme/parameters/poll_queues", "0\n");
  PollQueuesLever lever(PollQueues());
  EXPECT_EQ(lever.Scope(), LeverScope::kController);
  const std::string parameter = lever.ParameterPath();
  const std::string reset = lever.ResetPath("nvme0");
  EXPECT_EQ(parameter, tmp_ / "sys/module/nvme/parameters/poll_queues");
  EXPECT_EQ(reset, tmp_ / "sys/class/nvme/nvme0/reset_controller");

  auto on = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(on->writes, (Writes{{parameter, "1", true}, {reset, "1", true}}));
  EXPECT_EQ(ReadFile(parameter), "1\n");
  EXPECT_EQ(ReadFile(reset), "1\n");
  EXPECT_EQ(on->restore.steps, (Steps{{parameter, "0"}}));

  WriteFile(reset, "");
  auto again = lever.Apply(Nvme0(2), ReapMode::kPoll);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->writes.empty()) << "nvme0 was already reset with poll_queues=1";
  EXPECT_EQ(ReadFile(reset), "");

  auto off = lever.Apply(Nvme0(), ReapMode::kInterrupt);
  ASSERT_TRUE(off);
  EXPECT_EQ(off->writes, (Writes{{parameter, "0", true}, {reset, "1", true}}));

  ASSERT_TRUE(lever.Apply(Nvme0(), ReapMode::kPoll));
  WriteFile(reset, "");
  auto restored = lever.Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(*restored, (Writes{{parameter, "0", true}, {reset, "1", true}}));
  EXPECT_EQ(ReadFile(parameter), "0\n");
  EXPECT_EQ(ReadFile(reset), "1\n");
}

TEST_F(FileLevers, PollQueuesResetsAControllerThatKeptTheOldValue) {
  // The parameter is global: nvme1 still runs without poll queues although the parameter already says 1.
  PollQueuesLever lever(PollQueues());
  WriteFile(tmp_ / "sys/class/nvme/nvme1/reset_controller", "");
  LeverTarget nvme1 = Nvme0();
  nvme1.controller = "nvme1";
  auto on = lever.Apply(nvme1, ReapMode::kPoll);
  ASSERT_TRUE(on);
  EXPECT_EQ(on->writes, (Writes{{lever.ResetPath("nvme1"), "1", true}}));
}


TEST_F(FileLevers, GsimRestoreOfAVanishedIrqStillRestoresTheGlobalDelay) {
  GsimLever lever(Gsim());
  auto on = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(on);
  std::filesystem::remove_all(tmp_ / "proc/irq/29");  // the controller was reset: its vectors are gone
  GsimLever after_crash(Gsim());
  auto restored = after_crash.Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(*restored, (Writes{{tmp_ / "proc/irq/soft_moderation", "delay_us=0", true}}));
  EXPECT_EQ(ReadFile(tmp_ / "proc/irq/soft_moderation"), "delay_us=0\n");

  GsimOptions without_delay = Gsim();
  without_delay.delay_us = 0;
  RestorePoint irq_only{LeverKind::kGsim, Nvme0(), {{tmp_ / "proc/irq/29/soft_moderation", "off"}}};
  auto gone = GsimLever(without_delay).Restore(irq_only);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
}

TEST_F(FileLevers, PollQueuesRestoreResetsOnlyWhenTheControllerRunsAnotherValue) {
  const std::string parameter = tmp_ / "sys/module/nvme/parameters/poll_queues";
  const std::string io_poll = tmp_ / (std::string(kController) + "/nvme0n1/queue/io_poll");
  WriteFile(parameter, "0\n");
  PollQueuesLever crashed(PollQueues());
  const std::string reset = crashed.ResetPath("nvme0");
  RestorePoint point{LeverKind::kPollQueuesReset, Nvme0(), {{parameter, "0"}}};

  // Killed between the parameter write and the reset: the controller still runs without poll queues.
  WriteFile(parameter, "1\n");
  WriteFile(io_poll, "0\n");
  WriteFile(reset, "");
  auto unreset = PollQueuesLever(PollQueues()).Restore(point);
  ASSERT_TRUE(unreset) << unreset.error().ToString();
  EXPECT_EQ(*unreset, (Writes{{parameter, "0", true}}));
  EXPECT_EQ(ReadFile(reset), "") << "a reset for nothing";

  // Nothing changed at all: nothing written.
  auto nothing = PollQueuesLever(PollQueues()).Restore(point);
  ASSERT_TRUE(nothing);
  EXPECT_TRUE(nothing->empty());

  // Killed after the reset: the controller runs poll queues, so the restore resets it.
  WriteFile(parameter, "1\n");
  WriteFile(io_poll, "1\n");
  auto after_reset = PollQueuesLever(PollQueues()).Restore(point);
  ASSERT_TRUE(after_reset);
  EXPECT_EQ(*after_reset, (Writes{{parameter, "0", true}, {reset, "1", true}}));

  // The controller vanished: the global parameter is still put back, no reset is attempted.
  WriteFile(parameter, "1\n");
  LeverTarget gone = Nvme0();
  gone.controller = "nvme9";
  auto vanished = PollQueuesLever(PollQueues()).Restore(RestorePoint{LeverKind::kPollQueuesReset, gone, {{parameter, "0"}}});
  ASSERT_TRUE(vanished) << vanished.error().ToString();
  EXPECT_EQ(*vanished, (Writes{{parameter, "0", true}}));
}

// poll_queues is the module's: two controllers' levers share one restore point for it, so that restoring
// both leaves neither polling and the parameter at the module's own value, whatever the order (issue #37:
// each lever recorded the value the other had applied as its safe value, and the second stayed polling).
TEST_F(FileLevers, PollQueuesModuleWideRestoreWithTwoControllers) {
  const std::string parameter = tmp_ / "sys/module/nvme/parameters/poll_queues";
  for (const bool b_first : {false, true}) {
    SCOPED_TRACE(b_first ? "nvme1 restored first" : "nvme0 restored first");
    WriteFile(parameter, "0\n");
    WriteFile(tmp_ / "sys/class/nvme/nvme1/reset_controller", "");
    PollQueuesOptions options = PollQueues();
    options.module = std::make_shared<PollQueuesModule>();
    PollQueuesLever nvme0_lever(options), nvme1_lever(options);  // one per controller, as the daemon has
    LeverTarget nvme1 = Nvme0();
    nvme1.controller = "nvme1";
    const std::string reset0 = nvme0_lever.ResetPath("nvme0"), reset1 = nvme1_lever.ResetPath("nvme1");

    auto on0 = nvme0_lever.Apply(Nvme0(), ReapMode::kPoll);
    ASSERT_TRUE(on0) << on0.error().ToString();
    auto on1 = nvme1_lever.Apply(nvme1, ReapMode::kPoll);
    ASSERT_TRUE(on1) << on1.error().ToString();
    EXPECT_EQ(on1->writes, (Writes{{reset1, "1", true}}));
    EXPECT_EQ(on1->restore.steps, (Steps{{parameter, "0"}})) << "nvme0's applied value taken as the safe one";

    PollQueuesLever& first = b_first ? nvme1_lever : nvme0_lever;
    PollQueuesLever& second = b_first ? nvme0_lever : nvme1_lever;
    const auto& first_point = b_first ? on1->restore : on0->restore;
    const auto& second_point = b_first ? on0->restore : on1->restore;
    const std::string first_reset = b_first ? reset1 : reset0, second_reset = b_first ? reset0 : reset1;

    auto restored_first = first.Restore(first_point);
    ASSERT_TRUE(restored_first) << restored_first.error().ToString();
    EXPECT_EQ(*restored_first, (Writes{{parameter, "0", true}, {first_reset, "1", true}, {parameter, "1", true}}))
        << "reset without poll queues while the other controller keeps its value";
    EXPECT_EQ(ReadFile(parameter), "1\n");

    auto restored_second = second.Restore(second_point);
    ASSERT_TRUE(restored_second) << restored_second.error().ToString();
    EXPECT_EQ(*restored_second, (Writes{{parameter, "0", true}, {second_reset, "1", true}}));
    EXPECT_EQ(ReadFile(parameter), "0\n") << "the module's value is put back once, by the last";
  }
}

TEST_F(FileLevers, PollQueuesErrors) {
  PollQueuesLever lever(PollQueues());
  LeverTarget gone = Nvme0();
  gone.controller = "nvme9";
  auto missing = lever.Apply(gone, ReapMode::kPoll);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("nvme9"), std::string::npos);

  std::filesystem::remove(tmp_ / "sys/module/nvme/parameters/poll_queues");
  auto no_parameter = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_FALSE(no_parameter);
  EXPECT_EQ(no_parameter.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(no_parameter.error().object, lever.ParameterPath());
}

TEST_F(FileLevers, DryRunWritesNothing) {
  WriteFile(tmp_ / "sys/module/nvme/parameters/poll_queues", "0\n");
  const auto before = nvmeadapt::testing::TreeState(tmp_.path());

  AdaptivePollOptions adaptive_options = Adaptive();
  adaptive_options.dry_run = true;
  AdaptivePollLever adaptive(adaptive_options);
  GsimOptions gsim_options = Gsim();
  gsim_options.dry_run = true;
  GsimLever gsim(gsim_options);
  PollQueuesOptions poll_options = PollQueues();
  poll_options.dry_run = true;
  PollQueuesLever poll_queues(poll_options);

  for (PlannedLever* lever : std::initializer_list<PlannedLever*>{&adaptive, &gsim, &poll_queues}) {
    SCOPED_TRACE(std::string(LeverKindName(lever->Kind())));
    EXPECT_TRUE(lever->DryRun());
    auto applied = lever->Apply(Nvme0(), ReapMode::kPoll);
    ASSERT_TRUE(applied) << applied.error().ToString();
    EXPECT_TRUE(applied->dry_run);
    ASSERT_FALSE(applied->writes.empty());
    for (const auto& write : applied->writes) EXPECT_FALSE(write.performed);
    EXPECT_EQ(lever->Recorded(), applied->writes);
    auto restored = lever->Restore(applied->restore);
    ASSERT_TRUE(restored) << restored.error().ToString();
  }
  EXPECT_EQ(adaptive.Recorded().front(), (WriteRecord{adaptive.PathFor("nvme0"), "1", false}));
  EXPECT_EQ(gsim.Recorded().size(), 4u);  // delay and "on", then the restore's "off" and "delay_us=0"
  EXPECT_EQ(poll_queues.Recorded()[1], (WriteRecord{poll_queues.ResetPath("nvme0"), "1", false}));

  EXPECT_EQ(nvmeadapt::testing::TreeState(tmp_.path()), before) << "a dry run changed a file";
}

TEST_F(FileLevers, PreviewWritesNothingAndGivesTheRestorePointApplyWillUse) {
  AdaptivePollLever lever(Adaptive());
  const auto before = nvmeadapt::testing::TreeState(tmp_.path());
  auto preview = lever.Preview(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(preview) << preview.error().ToString();
  EXPECT_EQ(nvmeadapt::testing::TreeState(tmp_.path()), before) << "a preview changed a file";
  EXPECT_EQ(preview->writes, (Writes{{lever.PathFor("nvme0"), "1", false}}));
  EXPECT_TRUE(lever.Recorded().empty());
  auto applied = lever.Apply(Nvme0(), ReapMode::kPoll);
  ASSERT_TRUE(applied);
  EXPECT_EQ(applied->restore, preview->restore);
  // After a change the preview of the way back still names the original value.
  auto back = lever.Preview(Nvme0(), ReapMode::kInterrupt);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->restore.steps, (Steps{{lever.PathFor("nvme0"), "0"}}));
  EXPECT_EQ(ReadFile(attribute_), "1\n");
}

TEST(LeverErrno, KernelRefusalsAndMissingSupport) {
  EXPECT_EQ(LeverCodeForErrno(EINVAL), ErrorCode::kRefused);
  EXPECT_EQ(LeverCodeForErrno(ERANGE), ErrorCode::kRefused);
  EXPECT_EQ(LeverCodeForErrno(EOPNOTSUPP), ErrorCode::kUnsupported);
  EXPECT_EQ(LeverCodeForErrno(ENOTTY), ErrorCode::kUnsupported);
  EXPECT_EQ(LeverCodeForErrno(EACCES), ErrorCode::kPermissionDenied);
  EXPECT_EQ(LeverCodeForErrno(ENOENT), ErrorCode::kNotFound);
  EXPECT_EQ(LeverCodeForErrno(EBUSY), ErrorCode::kUnavailable);
  EXPECT_EQ(LeverCodeForErrno(ENOTDIR), ErrorCode::kIo);
}

TEST(LeverFailure, NamesItsLeverAndObjectAndClassesItsRetryByTheLeverCode) {
  const Error refused = LeverFailure(LeverKind::kGsim, ErrorCode::kRefused, "/proc/irq/29/soft_moderation", "no");
  EXPECT_EQ(LeverOf(refused), LeverKind::kGsim);
  EXPECT_EQ(refused.object, "/proc/irq/29/soft_moderation");
  EXPECT_EQ(refused.ToString(), "gsim: refused: no");
  EXPECT_EQ(refused.retry, RetryClass::kPermanent);
  // A code outside the lever codes is kIo, and so is its class (transient).
  const Error bad = LeverFailure(LeverKind::kGsim, ErrorCode::kInvalidArgument, "x", "bad");
  EXPECT_EQ(bad.code, ErrorCode::kIo);
  EXPECT_EQ(bad.retry, RetryClass::kTransient);
  // An errno decides the code of a wrapped error.
  const Error wrapped = LeverFailure(LeverKind::kAdaptivePollSysfs, "/sys/x", SysError("write", "/sys/x", EINVAL));
  EXPECT_EQ(wrapped.code, ErrorCode::kRefused);
  EXPECT_EQ(wrapped.sys_errno, EINVAL);
  EXPECT_EQ(LeverOf(MakeError(ErrorCode::kIo, "not a lever's")), std::nullopt);
}

}  // namespace
}  // namespace nvmeadapt::actuate
