// SPDX-License-Identifier: Apache-2.0
// The reconnect lever keeps every setting sysfs shows of a connection, refuses before disconnecting what
// libnvme cannot carry over, keeps secrets out of messages, gives libnvme each setting (ParseFabricsOptions),
// and journals an in-flight point that connects a host a crash left disconnected (issue #37). A fake connector,
// no root.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/actuate/reconnect_lever.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/reconnect_fixture.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

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
  WriteFile(dir + "/tls_keyring", ".nvme\n");  // the default: not recorded
}

const Argv kKept = {"--nr-io-queues=1", "--queue-size=32", "--keep-alive-tmo=15", "--fast_io_fail_tmo=4",
                    std::string("--dhchap-secret=") + kSecret, "--tls"};

Argv Keeping(Argv argv) {
  argv.insert(argv.end(), kKept.begin(), kKept.end());
  return argv;
}

TEST_F(Reconnect, AReconnectKeepsEverySettingSysfsShows) {
  Settings(tmp_ / "sys/class/nvme/nvme1");
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{{"nvme", "disconnect", "--device=nvme1"},
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
  ASSERT_EQ(cli_->calls.size(), 2u);
  EXPECT_EQ(cli_->calls[1], Keeping(kConnect)) << "restored without poll queues, every setting kept";
}

TEST_F(Reconnect, ASettingLibnvmeCannotCarryRefusesBeforeDisconnecting) {
  Settings(tmp_ / "sys/class/nvme/nvme1");
  WriteFile(tmp_ / "sys/class/nvme/nvme1/tls_keyring", "nvme-tenant\n");  // libnvme 1.3 names no keyring
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(on.error().message.find("nvme1 is connected with --keyring=nvme-tenant: libnvme 1.3 cannot name a keyring"),
            std::string::npos)
      << on.error().message;
  EXPECT_TRUE(cli_->calls.empty()) << "nothing disconnected";
  WriteFile(tmp_ / "sys/class/nvme/nvme1/tls_keyring", ".nvme\n");
  WriteFile(tmp_ / "sys/class/nvme/nvme1/tls_mode", "concat\n");
  auto concat = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(concat);
  EXPECT_NE(concat.error().message.find("--concat"), std::string::npos) << concat.error().message;
  EXPECT_TRUE(cli_->calls.empty());

  // Keep-alive off cannot be asked of the kernel's connect at all: refused at the plan.
  WriteFile(tmp_ / "sys/class/nvme/nvme1/kato", "0\n");
  auto plan = Lever().Plan(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(plan.error().message.find("keep-alive is off (kato 0)"), std::string::npos) << plan.error().message;
}

TEST_F(Reconnect, SecretsStayOutOfMessages) {
  Settings(tmp_ / "sys/class/nvme/nvme1");
  cli_->answer = [](const Argv& argv) -> Status {
    return argv[1] == "connect" ? MakeError(ErrorCode::kRefused, "invalid arguments/configuration") : OkStatus();
  };
  auto on = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().message.find(kSecret), std::string::npos) << on.error().message;
  EXPECT_EQ(on.error().message.find("dhchap"), std::string::npos) << "no option is quoted: " << on.error().message;
  auto bad = ParseFabricsOptions({"--transport=tcp", std::string("--dhchap-secret=") + kSecret, "--nr-io-queues=x"}, 0);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--nr-io-queues=x: not a number libnvme takes");
  auto named = ParseFabricsOptions({std::string("--dhchap-ctrl-secrets=") + kSecret}, 0);
  ASSERT_FALSE(named);
  EXPECT_EQ(named.error().message.find(kSecret), std::string::npos) << named.error().message;
  EXPECT_NE(named.error().message.find("--dhchap-ctrl-secrets=<secret>"), std::string::npos) << named.error().message;
}

// What libnvme is given (struct nvme_fabrics_config, the host and the controller): every recorded word, the
// poll queues apart, and nothing for what the lever leaves to the kernel's defaults.
TEST(FabricsOptions, EveryRecordedWordIsALibnvmeSetting) {
  auto all = ParseFabricsOptions(
      {"--transport=tcp", "--traddr=10.0.0.1", "--trsvcid=4420", "--nqn=nqn.x", "--hostnqn=nqn.h", "--hostid=h1",
       "--host-traddr=10.0.0.2", "--host-iface=eth1", "--reconnect-delay=1", "--ctrl-loss-tmo=-1",
       "--nr-io-queues=4", "--queue-size=32", "--keep-alive-tmo=15", "--fast_io_fail_tmo=4",
       "--dhchap-secret=DHHC-1:00:a:", "--dhchap-ctrl-secret=DHHC-1:00:b:", "--tls", "--hdr-digest", "--data-digest"},
      2);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->transport, "tcp");
  EXPECT_EQ(all->traddr, "10.0.0.1");
  EXPECT_EQ(all->trsvcid, "4420");
  EXPECT_EQ(all->subsysnqn, "nqn.x");
  EXPECT_EQ(all->hostnqn, "nqn.h");
  EXPECT_EQ(all->hostid, "h1");
  EXPECT_EQ(all->host_traddr, "10.0.0.2");
  EXPECT_EQ(all->host_iface, "eth1");
  EXPECT_EQ(all->reconnect_delay, 1);
  EXPECT_EQ(all->ctrl_loss_tmo, -1) << "retry forever";
  EXPECT_EQ(all->nr_io_queues, 4);
  EXPECT_EQ(all->nr_poll_queues, 2);
  EXPECT_EQ(all->queue_size, 32);
  EXPECT_EQ(all->keep_alive_tmo, 15);
  EXPECT_EQ(all->fast_io_fail_tmo, 4);
  EXPECT_EQ(all->dhchap_secret, "DHHC-1:00:a:");
  EXPECT_EQ(all->dhchap_ctrl_secret, "DHHC-1:00:b:");
  EXPECT_TRUE(all->tls && all->hdr_digest && all->data_digest);

  auto least = ParseFabricsOptions({"--transport=tcp", "--traddr=10.0.0.1", "--nqn=nqn.x"}, 0);
  ASSERT_TRUE(least) << least.error().message;
  EXPECT_EQ(least->nr_poll_queues, 0);
  EXPECT_EQ(least->ctrl_loss_tmo, 600) << "libnvme's default, which it always gives";
  EXPECT_FALSE(least->tls || least->hdr_digest || least->data_digest);
  EXPECT_EQ(least->queue_size, 0) << "0: left to the kernel";

  EXPECT_EQ(ParseFabricsOptions({"--transport=tcp"}, 0).error().code, ErrorCode::kInvalidArgument) << "no address";
  EXPECT_EQ(ParseFabricsOptions({"--transport=tcp", "--traddr=a", "--nqn=n", "--nr-poll-queues=1"}, 0).error().code,
            ErrorCode::kInvalidArgument)
      << "poll queues are the lever's to ask";
  EXPECT_EQ(ParseFabricsOptions({"--transport=tcp", "--traddr=a", "--nqn=n", "--fast_io_fail_tmo=0"}, 0).error().code,
            ErrorCode::kUnsupported);
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
