// SPDX-License-Identifier: Apache-2.0
// The reconnect lever of an NVMe/TCP host against a temporary sysfs tree and a fake libnvme connector: its plan, its
// refusals (not tcp, gone, a disconnect or connect that fails), its restore point and restores. No root.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "agent/actuate/reconnect_lever.h"
#include "agent/actuate/resolver.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/reconnect_fixture.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

TEST_F(Reconnect, PlanReadsOnlyAndItsRestorePointNamesTheConnection) {
  ReconnectLever lever = Lever();
  EXPECT_EQ(lever.Kind(), LeverKind::kTcpReconnect);
  EXPECT_EQ(lever.Scope(), LeverScope::kController);
  auto plan = lever.Plan(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(plan->changes());
  EXPECT_TRUE(cli_->calls.empty()) << "a plan runs nothing: the journal gets its restore point first";
  EXPECT_EQ(plan->restore().lever, LeverKind::kTcpReconnect);
  EXPECT_EQ(plan->restore().steps, Found("0"));
  EXPECT_EQ(plan->preview().writes, (std::vector<WriteRecord>{{std::string(kName) + " nr_poll_queues", "1", false}}));
  auto point = RestorePoint::FromJson(plan->restore().ToJson());
  ASSERT_TRUE(point) << point.error().ToString();
  EXPECT_EQ(*point, plan->restore());
}

TEST_F(Reconnect, PollDisconnectsAndConnectsWithPollQueuesThenInterruptWithout) {
  ConnectsLikeTheKernel();
  ReconnectLever lever = Lever();
  auto on = lever.Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{{"nvme", "disconnect", "--device=nvme1"}, With(kConnect, "--nr-poll-queues=1")}));
  auto again = lever.Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->writes.empty()) << "already polled: no second reconnect";
  EXPECT_EQ(again->restore.steps, Found("0")) << "the restore point keeps the first value found";
  auto off = lever.Apply(Nvme1(), ReapMode::kInterrupt);
  ASSERT_TRUE(off) << off.error().ToString();
  ASSERT_EQ(cli_->calls.size(), 4u);
  EXPECT_EQ(cli_->calls[3], kConnect) << "no --nr-poll-queues: nvme-cli and the kernel take none as the default";
}

// A host set to give up on a lost target in seconds stays so after a switch (and its restore point says so):
// with the connect defaults it would retry a vanished target for ten minutes.
TEST_F(Reconnect, AReconnectKeepsHowLongTheHostRetriesALostConnection) {
  ConnectsLikeTheKernel();
  const std::string dir = tmp_ / "sys/class/nvme/nvme1";
  WriteFile(dir + "/reconnect_delay", "1\n");
  WriteFile(dir + "/ctrl_loss_tmo", "3\n");
  ReconnectLever lever = Lever();
  auto on = lever.Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  const Argv kept = With(With(kConnect, "--reconnect-delay=1"), "--ctrl-loss-tmo=3");
  ASSERT_EQ(cli_->calls.size(), 2u);
  EXPECT_EQ(cli_->calls[1], With(kept, "--nr-poll-queues=1"));
  EXPECT_NE(on->restore.steps[0].value.find(R"("--reconnect-delay=1","--ctrl-loss-tmo=3")"), std::string::npos)
      << on->restore.steps[0].value;
  // Retrying forever is "off" in sysfs and -1 for nvme-cli.
  WriteFile(dir + "/ctrl_loss_tmo", "off\n");
  WriteFile(dir + "/reconnect_delay", "1\n");
  auto off = lever.Apply(Nvme1(), ReapMode::kInterrupt);
  ASSERT_TRUE(off) << off.error().ToString();
  ASSERT_EQ(cli_->calls.size(), 4u);
  EXPECT_EQ(cli_->calls[3], With(With(kConnect, "--reconnect-delay=1"), "--ctrl-loss-tmo=-1"));
  // And a restore point that carries them is one this lever recorded.
  auto restored = Lever().Restore(on->restore);
  EXPECT_TRUE(restored) << restored.error().ToString();
}

TEST_F(Reconnect, RefusesAControllerThatIsNotTcpOrIsGone) {
  Controller("nvme0", "pcie", 0);
  auto pcie = Lever().Plan(LeverTarget{"nvme0", 1}, ReapMode::kPoll);
  ASSERT_FALSE(pcie);
  EXPECT_EQ(pcie.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(pcie.error().message.find("transport pcie, not tcp"), std::string::npos) << pcie.error().message;
  auto gone = Lever().Plan(LeverTarget{"nvme7", 1}, ReapMode::kPoll);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
  WriteFile(tmp_ / "sys/class/nvme/nvme1/address", "trsvcid=4420\n");
  auto no_address = Lever().Plan(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(no_address);
  EXPECT_EQ(no_address.error().code, ErrorCode::kIo);
  EXPECT_TRUE(cli_->calls.empty());
}

TEST_F(Reconnect, AFailedConnectConnectsAsItWasAndRefuses) {
  cli_->answer = [](const Argv& argv) -> Status {
    if (argv.back() == "--nr-poll-queues=1") {
      return MakeError(ErrorCode::kRefused, "invalid arguments/configuration (Failed to write to /dev/nvme-fabrics: Invalid argument)");
    }
    return OkStatus();
  };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().code, ErrorCode::kRefused);
  EXPECT_NE(on.error().message.find("Invalid argument"), std::string::npos) << on.error().message;
  EXPECT_NE(on.error().message.find("connected again as it was (nr_poll_queues 0)"), std::string::npos);
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{{"nvme", "disconnect", "--device=nvme1"}, With(kConnect, "--nr-poll-queues=1"), kConnect}));
}

TEST_F(Reconnect, AConnectBackThatFailsSaysTheHostIsDisconnected) {
  cli_->answer = [](const Argv& argv) -> Status {
    if (argv[1] == "connect") return MakeError(ErrorCode::kUnavailable, "connection refused");
    return OkStatus();
  };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().code, ErrorCode::kIo);
  EXPECT_NE(on.error().message.find(std::string(kName) + " is disconnected"), std::string::npos) << on.error().message;
}

TEST_F(Reconnect, AFailedDisconnectLeavesTheControllerAsItWas) {
  cli_->answer = [](const Argv&) -> Status { return MakeError(ErrorCode::kRefused, "disconnect nvme1: Permission denied"); };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().code, ErrorCode::kRefused);
  EXPECT_NE(on.error().message.find("nvme1 left as it was"), std::string::npos) << on.error().message;
  EXPECT_EQ(cli_->calls.size(), 1u) << "no connect after a refused disconnect";
  // Gone between the plan and the disconnect: not found, nothing connected.
  cli_->calls.clear();
  cli_->answer = [](const Argv&) -> Status { return MakeError(ErrorCode::kNotFound, "disconnect nvme1: no such controller"); };
  auto gone = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(cli_->calls.size(), 1u);
}

TEST_F(Reconnect, RestoreReconnectsAsFoundWhateverTheControllerIsCalledNow) {
  ConnectsLikeTheKernel();
  ReconnectLever lever = Lever();
  auto on = lever.Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  const RestorePoint point = on->restore;
  // A fresh lever (after a restart) with the host now called nvme2, still polled.
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");
  Controller("nvme2", "tcp", 1);
  cli_->calls.clear();
  cli_->answer = nullptr;
  auto restored = Lever().Restore(point);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{{"nvme", "disconnect", "--device=nvme2"}, kConnect}));
  // Already as found: nothing run.
  Controller("nvme2", "tcp", 0);
  cli_->calls.clear();
  auto nothing = Lever().Restore(point);
  ASSERT_TRUE(nothing);
  EXPECT_TRUE(nothing->empty());
  EXPECT_TRUE(cli_->calls.empty());
}

TEST_F(Reconnect, RestoreOfAConnectionNoLongerThereIsNotFoundAndConnectsNothing) {
  auto plan = Lever().Plan(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(plan);
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");
  auto restored = Lever().Restore(plan->restore());
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(cli_->calls.empty());
}

TEST_F(Reconnect, RestoreRefusesAPointWithOptionsItDoesNotRecord) {
  Controller("nvme1", "tcp", 1);
  RestorePoint point{LeverKind::kTcpReconnect, Nvme1(), Found("0")};
  point.steps[0].value = R"(["--transport=tcp","--dump-config=x"])";
  auto restored = Lever().Restore(point);
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error().code, ErrorCode::kIo);
  point.steps = {{std::string(kName) + " nr_poll_queues", "0"}};
  EXPECT_FALSE(Lever().Restore(point));
  EXPECT_TRUE(cli_->calls.empty());
}

TEST_F(Reconnect, DryRunRecordsAndRunsNothing) {
  ReconnectLever lever = Lever(/*dry_run=*/true);
  auto on = lever.Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_TRUE(on->dry_run);
  EXPECT_EQ(lever.Recorded(), (std::vector<WriteRecord>{{std::string(kName) + " nr_poll_queues", "1", false}}));
  EXPECT_TRUE(cli_->calls.empty());
}

discover::Controller Tcp(const std::string& name) {
  discover::Controller c;
  c.name = name;
  c.source = Source::kKernelNvme;
  c.transport = "tcp";
  return c;
}

TEST(ReconnectResolver, ATcpHostGetsTheReconnectLeverOnlyWhenNamed) {
  config::LeverSettings settings;
  const LeverChoice automatic = ResolveLever(settings, Tcp("nvme1"), {});
  EXPECT_EQ(automatic.kind, LeverKind::kDryRun);
  EXPECT_TRUE(automatic.dry_run);
  EXPECT_NE(automatic.why.find("tcp_reconnect"), std::string::npos) << automatic.why;
  settings.kernel_lever = LeverKind::kPollQueuesReset;
  EXPECT_EQ(ResolveLever(settings, Tcp("nvme1"), {}).kind, LeverKind::kDryRun) << "kernel_lever is for PCIe";
  settings.controllers.push_back({"nvme1", LeverKind::kTcpReconnect});
  const LeverChoice named = ResolveLever(settings, Tcp("nvme1"), {});
  EXPECT_EQ(named.kind, LeverKind::kTcpReconnect);
  EXPECT_FALSE(named.dry_run);
  EXPECT_EQ(MakeLever(named.kind, false, settings, {})->Kind(), LeverKind::kTcpReconnect);
}

}  // namespace
}  // namespace nvmeadapt::actuate
