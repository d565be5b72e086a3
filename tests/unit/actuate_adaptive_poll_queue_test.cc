// SPDX-License-Identifier: Apache-2.0
// The per-queue lever of our nvme-pci module (kmod/README.md) against a temporary sysfs tree shaped as the
// module makes it: /sys/class/nvme/nvme0/adaptive/q<qid>/mode. Built through the registry only, as the daemon
// builds it (the lever has no header).
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/actuate/lever_registry.h"
#include "agent/actuate/resolver.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/qemu_poll_target.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

using namespace nvmeadapt::testing;  // the temporary trees of test_fs.h

constexpr char kController[] = "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0";

class AdaptivePollQueueLever : public ::testing::Test {
 protected:
  AdaptivePollQueueLever() {
    CopyTree(SysfsCase("qemu-poll"), tmp_.path());
    for (const char* q : {"q1", "q2"}) WriteFile(Mode(q), "auto\n");
    environment_.sysfs_root = tmp_ / "sys";
  }
  std::string Mode(const std::string& queue) const {
    return tmp_ / (std::string(kController) + "/adaptive/" + queue + "/mode");
  }
  std::string ModeUnderClass(uint32_t qid) const {
    return tmp_ / ("sys/class/nvme/nvme0/adaptive/q" + std::to_string(qid) + "/mode");
  }
  std::unique_ptr<PlannedLever> Lever(bool dry_run = false) const {
    return MakeLever(LeverKind::kAdaptivePollQueue, dry_run, config::LeverSettings{}, environment_);
  }

  TempDir tmp_;
  LeverEnvironment environment_;
};

TEST_F(AdaptivePollQueueLever, WritesTheQueuesModeAndRestoresWhatItFound) {
  auto lever = Lever();
  ASSERT_EQ(lever->Kind(), LeverKind::kAdaptivePollQueue);
  EXPECT_EQ(lever->Scope(), LeverScope::kQueue);

  auto poll = lever->Apply(Nvme0(2), ReapMode::kPoll);
  ASSERT_TRUE(poll) << poll.error().ToString();
  EXPECT_EQ(ReadFile(Mode("q2")), "poll\n");
  EXPECT_EQ(ReadFile(Mode("q1")), "auto\n") << "queue scope: the other queue keeps its mode";
  EXPECT_EQ(poll->writes, (Writes{{ModeUnderClass(2), "poll", true}}));
  EXPECT_EQ(poll->restore.steps, (Steps{{ModeUnderClass(2), "auto"}}));

  auto again = lever->Apply(Nvme0(2), ReapMode::kPoll);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->writes.empty());

  ASSERT_TRUE(lever->Apply(Nvme0(2), ReapMode::kInterrupt));
  EXPECT_EQ(ReadFile(Mode("q2")), "interrupt\n");
  // However often it switched, the restore point is the mode found before the first switch.
  auto restored = lever->Restore(poll->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(ReadFile(Mode("q2")), "auto\n");
}

TEST_F(AdaptivePollQueueLever, DryRunRecordsAndWritesNothing) {
  auto lever = Lever(/*dry_run=*/true);
  auto poll = lever->Apply(Nvme0(1), ReapMode::kPoll);
  ASSERT_TRUE(poll) << poll.error().ToString();
  EXPECT_EQ(ReadFile(Mode("q1")), "auto\n");
  EXPECT_EQ(lever->Recorded(), (Writes{{ModeUnderClass(1), "poll", false}}));
}

TEST_F(AdaptivePollQueueLever, AQueueWithoutAFileIsUnsupportedAndAGoneControllerNotFound) {
  std::filesystem::create_directories(tmp_ / (std::string(kController) + "/adaptive/q3"));  // no mode file
  auto lever = Lever();
  auto missing = lever->Apply(Nvme0(3), ReapMode::kPoll);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(missing.error().message.find("kmod/README.md"), std::string::npos) << missing.error().message;

  auto gone = lever->Apply(LeverTarget{.controller = "nvme7", .qid = 1}, ReapMode::kPoll);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
}

TEST_F(AdaptivePollQueueLever, ARestorePointNamingAnotherFileIsRefused) {
  RestorePoint forged{LeverKind::kAdaptivePollQueue, Nvme0(1), {{tmp_ / "sys/class/nvme/nvme0/adaptive_poll", "1"}}};
  auto restored = Lever()->Restore(forged);
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error().code, ErrorCode::kIo);
  EXPECT_EQ(ReadFile(Mode("q1")), "auto\n");
}

// AUTO: where the module's files are, before the adaptive-poll attribute the module has too; elsewhere not
// offered, and the stock kernel's choice stands.
TEST_F(AdaptivePollQueueLever, AutoTakesItWhereTheModulesFilesAreAndOnlyThere) {
  discover::Controller nvme0;
  nvme0.name = "nvme0";
  nvme0.source = Source::kKernelNvme;
  nvme0.transport = "pcie";
  WriteFile(tmp_ / (std::string(kController) + "/adaptive_poll"), "0\n");
  const config::LeverSettings settings;
  const LeverFacts facts = ProbeLeverFacts(settings, nvme0, environment_);
  const LeverChoice choice = ResolveLever(settings, nvme0, facts);
  EXPECT_EQ(choice.kind, LeverKind::kAdaptivePollQueue) << choice.why;
  EXPECT_NE(choice.why.find("nvme-pci module"), std::string::npos) << choice.why;

  std::filesystem::remove_all(tmp_ / (std::string(kController) + "/adaptive"));
  EXPECT_EQ(ResolveLever(settings, nvme0, ProbeLeverFacts(settings, nvme0, environment_)).kind,
            LeverKind::kAdaptivePollSysfs);
  EXPECT_EQ(LeverRiskOf("adaptive_poll_queue"), LeverRisk::kNothingElse);
}

}  // namespace
}  // namespace nvmeadapt::actuate
