// SPDX-License-Identifier: Apache-2.0
// The lever of an NVMe target's queues, our nvmet's polling-queue task (nvmet_poll_task_lever.h), on a fake
// configfs tree: a subsystem with a namespace on a disk that polls, one on a disk that does not and one on a
// file; what a switch writes, the votes of several queues and controllers, restore, the kernel's refusals and
// AUTO's choice.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "agent/actuate/nvmet_poll_task_lever.h"
#include "agent/actuate/resolver.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

using nvmeadapt::testing::ReadFile;
using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

constexpr char kNqn[] = "nqn.2026-12.io.nvme-adapt:bed";

class NvmetPollTask : public ::testing::Test {
 protected:
  NvmetPollTask() {
    Namespace(1, "/dev/nvme0n1");   // polls
    Namespace(2, "/dev/nvme1n1");   // an interrupt-only disk
    Namespace(3, "/tmp/file.img");  // a file
    WriteFile(tmp_ / "sys/block/nvme0n1/queue/io_poll", "1\n");
    WriteFile(tmp_ / "sys/block/nvme1n1/queue/io_poll", "0\n");
    WriteFile(tmp_ / "sys/module/nvmet/pqt/state", "none\n");
  }
  std::string Dir(int nsid) const {
    return tmp_ / ("sys/kernel/config/nvmet/subsystems/" + std::string(kNqn) + "/namespaces/" + std::to_string(nsid));
  }
  std::string Pqt(int nsid) const { return Dir(nsid) + "/pqt_enable"; }
  void Namespace(int nsid, const std::string& device) {
    WriteFile(Dir(nsid) + "/pqt_enable", "0\n");
    WriteFile(Dir(nsid) + "/enable", "1\n");
    WriteFile(Dir(nsid) + "/device_path", device + "\n");
  }
  NvmetPollTaskOptions Options() const { return {tmp_ / "sys", false, votes_}; }
  static LeverTarget Queue(uint32_t cntlid, uint32_t qid) {
    LeverTarget target;
    target.controller = NvmetControllerName(cntlid);
    target.qid = qid;
    target.subsysnqn = kNqn;
    return target;
  }

  TempDir tmp_;
  std::shared_ptr<NvmetPollVotes> votes_ = std::make_shared<NvmetPollVotes>();
};

TEST_F(NvmetPollTask, PollTurnsOnTheNamespacesTheTaskServesAndTheRestorePointKeepsWhatWasFound) {
  NvmetPollTaskLever lever(Options());
  EXPECT_EQ(lever.Kind(), LeverKind::kNvmetPollTask);
  EXPECT_EQ(lever.Scope(), LeverScope::kController);
  auto on = lever.Apply(Queue(1, 1), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(on->writes, (Writes{{Pqt(1), "1", true}}));
  EXPECT_EQ(ReadFile(Pqt(1)), "1\n");
  EXPECT_EQ(ReadFile(Pqt(2)), "0\n") << "a disk without a poll queue is left alone";
  EXPECT_EQ(ReadFile(Pqt(3)), "0\n") << "so is a file";
  EXPECT_EQ(on->restore.target.subsysnqn, kNqn);
  EXPECT_EQ(on->restore.steps, (Steps{{Pqt(1), "0"}}));

  ASSERT_TRUE(lever.Apply(Queue(1, 1), ReapMode::kInterrupt));
  EXPECT_EQ(ReadFile(Pqt(1)), "0\n");
  auto again = lever.Apply(Queue(1, 1), ReapMode::kPoll);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->restore.steps, (Steps{{Pqt(1), "0"}}));
  EXPECT_TRUE(lever.Apply(Queue(1, 1), ReapMode::kPoll)->writes.empty()) << "already polling";

  auto point = RestorePoint::FromJson(again->restore.ToJson());
  ASSERT_TRUE(point) << point.error().message;
  EXPECT_EQ(*point, again->restore) << "the subsystem travels with the journal's restore point";
  auto restored = NvmetPollTaskLever(Options()).Restore(*point);  // as a new process would
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(*restored, (Writes{{Pqt(1), "0", true}}));
  EXPECT_EQ(ReadFile(Pqt(1)), "0\n");
  EXPECT_TRUE(NvmetPollTaskLever(Options()).Restore(*point)->empty()) << "nothing written when already as found";
}

TEST_F(NvmetPollTask, ANamespaceFoundPollingIsPutBackPolling) {
  WriteFile(Pqt(1), "1\n");
  NvmetPollTaskLever lever(Options());
  auto off = lever.Apply(Queue(1, 1), ReapMode::kInterrupt);
  ASSERT_TRUE(off);
  EXPECT_EQ(off->writes, (Writes{{Pqt(1), "0", true}}));
  EXPECT_EQ(off->restore.steps, (Steps{{Pqt(1), "1"}}));
  ASSERT_TRUE(lever.Restore(off->restore));
  EXPECT_EQ(ReadFile(Pqt(1)), "1\n");
}

TEST_F(NvmetPollTask, ANamespacePollsWhileOneQueueOfAnyControllerOfItsSubsystemVotesPoll) {
  NvmetPollTaskLever first(Options()), second(Options());  // two hosts' controllers, as the daemon has them
  ASSERT_TRUE(first.Apply(Queue(1, 1), ReapMode::kPoll));
  EXPECT_TRUE(first.Apply(Queue(1, 2), ReapMode::kInterrupt)->writes.empty()) << "q1 still wants poll";
  auto other = second.Apply(Queue(2, 1), ReapMode::kPoll);
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->writes.empty());
  EXPECT_EQ(other->restore.steps, (Steps{{Pqt(1), "0"}})) << "the namespace's own value, not the first's poll";
  EXPECT_TRUE(first.Apply(Queue(1, 1), ReapMode::kInterrupt)->writes.empty()) << "nvmet:c2 q1 still wants poll";
  EXPECT_EQ(ReadFile(Pqt(1)), "1\n");
  EXPECT_EQ(second.Apply(Queue(2, 1), ReapMode::kInterrupt)->writes, (Writes{{Pqt(1), "0", true}}));
  EXPECT_EQ(ReadFile(Pqt(1)), "0\n");
}

TEST_F(NvmetPollTask, AWriteCarriesTheVotesAsTheyAreWhenItIsMade) {
  NvmetPollTaskLever first(Options()), second(Options());
  ASSERT_TRUE(first.Apply(Queue(1, 1), ReapMode::kPoll));
  auto off = first.Plan(Queue(1, 1), ReapMode::kInterrupt);  // planned: 0 ...
  ASSERT_TRUE(off);
  EXPECT_EQ(off->preview().writes, (Writes{{Pqt(1), "0", false}}));
  EXPECT_TRUE(second.Apply(Queue(2, 1), ReapMode::kPoll)->writes.empty());  // ... then another host votes poll
  ASSERT_TRUE(off->Execute());
  EXPECT_EQ(ReadFile(Pqt(1)), "1\n") << "the late write leaves what the votes say";
}

TEST_F(NvmetPollTask, TheKernelsRefusalIsUnsupportedNamingTheAttribute) {
  NvmetPollTaskOptions options = Options();
  options.write = [](const std::string&, const std::string& path, const std::string& value) -> Status {
    return SysError("write '" + value + "' to", path, EOPNOTSUPP);
  };
  NvmetPollTaskLever lever(options);
  auto refused = lever.Apply(Queue(1, 1), ReapMode::kPoll);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(LeverOf(refused.error()), LeverKind::kNvmetPollTask);
  EXPECT_EQ(refused.error().object, Pqt(1));
  EXPECT_EQ(refused.error().sys_errno, EOPNOTSUPP);
  EXPECT_NE(refused.error().message.find(Pqt(1) + ": polled submission refused (EOPNOTSUPP)"), std::string::npos)
      << refused.error().message;
  options.write = [](const std::string&, const std::string& path, const std::string&) -> Status {
    return SysError("write to", path, EINVAL);
  };
  auto not_enabled = NvmetPollTaskLever(options).Apply(Queue(1, 1), ReapMode::kPoll);
  ASSERT_FALSE(not_enabled);
  EXPECT_EQ(not_enabled.error().code, ErrorCode::kRefused);
  EXPECT_NE(not_enabled.error().message.find("not enabled"), std::string::npos);
}

TEST_F(NvmetPollTask, ASubsystemTheTaskCannotServeIsUnsupportedSayingWhy) {
  std::filesystem::remove_all(Dir(1));
  auto none = NvmetPollTaskLever(Options()).Apply(Queue(1, 1), ReapMode::kPoll);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(none.error().object, Dir(1).substr(0, Dir(1).rfind('/')));
  EXPECT_NE(none.error().message.find("2: nvme1n1 has no poll queue"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("3: file.img has no poll queue"), std::string::npos) << none.error().message;

  for (int nsid : {2, 3}) std::filesystem::remove(Pqt(nsid));
  auto stock = NvmetPollTaskLever(Options()).Apply(Queue(1, 1), ReapMode::kPoll);
  ASSERT_FALSE(stock);
  EXPECT_EQ(stock.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(stock.error().message.find("the stock nvmet"), std::string::npos) << stock.error().message;

  LeverTarget unknown = Queue(1, 1);
  unknown.subsysnqn.clear();
  auto which = NvmetPollTaskLever(Options()).Apply(unknown, ReapMode::kPoll);
  ASSERT_FALSE(which);
  EXPECT_EQ(which.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(which.error().object, "nvmet:c1");
  LeverTarget gone = Queue(1, 1);
  gone.subsysnqn = "nqn.gone";
  EXPECT_EQ(NvmetPollTaskLever(Options()).Apply(gone, ReapMode::kPoll).error().code, ErrorCode::kNotFound);
}

TEST_F(NvmetPollTask, ARestoreWritesOnlyItsSubsystemsAttributesAndDropsWhatWentAway) {
  NvmetPollTaskLever lever(Options());
  RestorePoint foreign{LeverKind::kNvmetPollTask, Queue(1, 1), {{tmp_ / "sys/class/nvme/nvme0/reset_controller", "1"}}};
  EXPECT_EQ(lever.Restore(foreign).error().code, ErrorCode::kIo);
  RestorePoint other_subsystem{LeverKind::kNvmetPollTask, Queue(1, 1), {{Pqt(1), "1"}}};
  other_subsystem.target.subsysnqn = "nqn.other";
  EXPECT_EQ(lever.Restore(other_subsystem).error().code, ErrorCode::kIo);

  RestorePoint found_polling{LeverKind::kNvmetPollTask, Queue(1, 1), {{Pqt(1), "1"}}};
  WriteFile(Dir(1) + "/enable", "0\n");
  EXPECT_TRUE(lever.Restore(found_polling)->empty()) << "disabling the namespace ended its polling for good";
  std::filesystem::remove_all(Dir(1));
  auto gone = lever.Restore(found_polling);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound) << "the journal drops it";
}

TEST_F(NvmetPollTask, AutoPicksItForATargetControllerWhoseSubsystemItServes) {
  LeverEnvironment environment{tmp_ / "sys", tmp_ / "proc", tmp_ / "dev", nullptr};
  const config::LeverSettings settings;
  discover::Controller controller;
  controller.name = "nvmet:c1";
  controller.source = Source::kNvmet;
  controller.subsysnqn = kNqn;
  LeverChoice chosen = ResolveLever(settings, controller, ProbeLeverFacts(settings, controller, environment));
  EXPECT_EQ(chosen.kind, LeverKind::kNvmetPollTask);
  EXPECT_FALSE(chosen.dry_run);
  EXPECT_FALSE(chosen.shadow_only);
  EXPECT_EQ(chosen.why, "nvmet default: our nvmet's polling-queue task serves a namespace of its subsystem");
  EXPECT_EQ(MakeLever(chosen.kind, false, settings, environment)->Kind(), LeverKind::kNvmetPollTask);

  controller.subsysnqn.clear();  // several exported subsystems' cntlid ranges hold it
  LeverChoice unknown = ResolveLever(settings, controller, ProbeLeverFacts(settings, controller, environment));
  EXPECT_TRUE(unknown.shadow_only);
  EXPECT_NE(unknown.why.find("which subsystem nvmet:c1 serves is not known"), std::string::npos) << unknown.why;

  controller.subsysnqn = kNqn;
  WriteFile(tmp_ / "sys/block/nvme0n1/queue/io_poll", "0\n");
  LeverChoice none = ResolveLever(settings, controller, ProbeLeverFacts(settings, controller, environment));
  EXPECT_EQ(none.kind, LeverKind::kDryRun);
  EXPECT_TRUE(none.shadow_only);
  EXPECT_NE(none.why.find("it serves no namespace of " + std::string(kNqn)), std::string::npos) << none.why;
}

}  // namespace
}  // namespace nvmeadapt::actuate
