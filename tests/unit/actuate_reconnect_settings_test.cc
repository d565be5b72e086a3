// The reconnect lever keeps every setting sysfs shows of a connection, refuses before disconnecting what it
// cannot carry over, keeps secrets out of messages, says when nvme-cli is missing, and journals an in-flight
// point that connects a host a crash left disconnected (issue #37). A fake nvme-cli, no root.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/actuate/reconnect_lever.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/reconnect_fixture.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

// What `nvme connect --help` of an nvme-cli 2.x lists (the options the lever may carry).
constexpr char kHelp[] =
    "Usage: nvme connect <device> [OPTIONS]\n  --transport=<STR>\n  --nqn=<STR>\n  --traddr=<STR>\n"
    "  --trsvcid=<STR>\n  --hostnqn=<STR>\n  --hostid=<STR>\n  --nr-io-queues=<NUM>\n  --nr-poll-queues=<NUM>\n"
    "  --queue-size=<NUM>\n  --keep-alive-tmo=<NUM>\n  --reconnect-delay=<NUM>\n  --ctrl-loss-tmo=<NUM>\n"
    "  --fast_io_fail_tmo=<NUM>\n  --dhchap-secret=<STR>\n  --dhchap-ctrl-secret=<STR>\n  --hdr-digest\n"
    "  --data-digest\n  --tls\n  --concat\n  --keyring=<STR>\n  --tls-key=<STR>\n";
constexpr char kSecret[] = "DHHC-1:00:c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXM=:";

// Every setting of the connection that sysfs shows, as the kernel shows it.
void Settings(const std::string& dir) {
  WriteFile(dir + "/queue_count", "2\n");  // one I/O queue on a two-CPU host: --nr-io-queues=1 was asked
  WriteFile(dir + "/sqsize", "31\n");      // 0's based: queue size 32
  WriteFile(dir + "/kato", "15\n");
  WriteFile(dir + "/fast_io_fail_tmo", "4\n");
  WriteFile(dir + "/dhchap_secret", std::string(kSecret) + "\n");
  WriteFile(dir + "/dhchap_ctrl_secret", "none\n");
  WriteFile(dir + "/tls_mode", "tls\n");
  WriteFile(dir + "/tls_key", "1a2b3c4d\n");
  WriteFile(dir + "/tls_keyring", "nvme-tenant\n");
}

const Argv kKept = {"--nr-io-queues=1", "--queue-size=32", "--keep-alive-tmo=15", "--fast_io_fail_tmo=4",
                    std::string("--dhchap-secret=") + kSecret, "--tls", "--keyring=nvme-tenant"};

Argv Keeping(Argv argv) {
  argv.insert(argv.end(), kKept.begin(), kKept.end());
  return argv;
}

TEST_F(Reconnect, AReconnectKeepsEverySettingSysfsShows) {
  Settings(tmp_ / "sys/class/nvme/nvme1");
  cli_->answer = [](const Argv& argv) -> Result<CommandOutcome> {
    return argv.back() == "--help" ? CommandOutcome{0, kHelp} : CommandOutcome{};
  };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{{"nvme", "connect", "--help"},
                                            {"nvme", "disconnect", "--device=nvme1"},
                                            With(Keeping(kConnect), "--nr-poll-queues=1")}));
  // The restore point carries them (a restart's restore connects with them) and is one this lever accepts.
  for (const std::string& kept : kKept) {
    EXPECT_NE(on->restore.steps[0].value.find("\"" + kept + "\""), std::string::npos) << kept;
  }
  // The kernel after that connect: one I/O queue and one poll queue.
  WriteFile(tmp_ / "sys/class/nvme/nvme1/queue_count", "3\n");
  WriteFile(tmp_ / "sys/class/nvme/nvme1/nvme1c1n1/queue/io_poll", "1\n");
  cli_->calls.clear();
  auto restored = Lever().Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  ASSERT_EQ(cli_->calls.size(), 3u);
  EXPECT_EQ(cli_->calls[2], Keeping(kConnect)) << "restored without poll queues, every setting kept";
}

TEST_F(Reconnect, ASettingThisNvmeCliCannotCarryRefusesBeforeDisconnecting) {
  Settings(tmp_ / "sys/class/nvme/nvme1");
  cli_->answer = [](const Argv& argv) -> Result<CommandOutcome> {
    if (argv.back() != "--help") return CommandOutcome{};
    std::string old_cli = kHelp;
    old_cli.erase(old_cli.find("  --tls\n"), 8);  // an nvme-cli from before TLS
    return CommandOutcome{0, old_cli};
  };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(on.error().message.find("connected with --tls, which this nvme-cli does not take"), std::string::npos)
      << on.error().message;
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{{"nvme", "connect", "--help"}})) << "nothing disconnected";

  // Keep-alive off cannot be asked of nvme connect at all: refused at the plan.
  WriteFile(tmp_ / "sys/class/nvme/nvme1/kato", "0\n");
  auto plan = Lever().Plan(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(plan.error().message.find("keep-alive is off (kato 0)"), std::string::npos) << plan.error().message;
}

TEST_F(Reconnect, SecretsStayOutOfMessages) {
  Settings(tmp_ / "sys/class/nvme/nvme1");
  cli_->answer = [](const Argv& argv) -> Result<CommandOutcome> {
    if (argv.back() == "--help") return CommandOutcome{0, kHelp};
    return CommandOutcome{argv[1] == "connect" ? 1 : 0, "refused"};
  };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().message.find(kSecret), std::string::npos) << on.error().message;
  EXPECT_NE(on.error().message.find("--dhchap-secret=<secret>"), std::string::npos) << on.error().message;
  EXPECT_EQ(CommandLine({"nvme", "connect", "--dhchap-ctrl-secret=x", "--tls-key=y"}),
            "nvme connect --dhchap-ctrl-secret=<secret> --tls-key=<secret>");
}

TEST_F(Reconnect, AMissingNvmeCliIsSaidClearly) {
  cli_->answer = [](const Argv&) -> Result<CommandOutcome> {
    return MakeError(ErrorCode::kNotFound, "cannot run nvme disconnect --device=nvme1: nvme not found in PATH");
  };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(on.error().message.find("nvme-cli is missing"), std::string::npos) << on.error().message;
  EXPECT_NE(on.error().message.find("install the nvme-cli package"), std::string::npos) << on.error().message;
  EXPECT_EQ(cli_->calls.size(), 1u);
}

// The plan's in-flight point is journaled for the time between the disconnect and the connect: a restore after
// a crash in between connects the host with the journaled options; once the host is back it runs nothing.
TEST_F(Reconnect, AnInFlightPointConnectsAHostLeftDisconnectedByACrash) {
  auto plan = Lever().Plan(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(plan) << plan.error().ToString();
  ASSERT_TRUE(plan->preview().in_flight);
  const RestorePoint in_flight = *plan->preview().in_flight;
  auto reread = RestorePoint::FromJson(in_flight.ToJson());
  ASSERT_TRUE(reread) << reread.error().ToString();
  ASSERT_EQ(reread->steps.size(), 3u);
  EXPECT_EQ(reread->steps[2].object, std::string(kName) + " connecting");

  auto present = Lever().Restore(*reread);
  ASSERT_TRUE(present) << present.error().ToString();
  EXPECT_TRUE(cli_->calls.empty()) << "the host is connected: nothing to do";

  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");  // the disconnect ran, the daemon died
  ConnectsLikeTheKernel();
  auto connected = Lever().Restore(*reread);
  ASSERT_TRUE(connected) << connected.error().ToString();
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{kConnect}));
  EXPECT_TRUE(std::filesystem::exists(tmp_ / "sys/class/nvme/nvme1/transport"));

  // The switch's own restore point still refuses to connect a host someone else disconnected.
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");
  auto main_point = Lever().Restore(plan->restore());
  ASSERT_FALSE(main_point);
  EXPECT_EQ(main_point.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace nvmeadapt::actuate
