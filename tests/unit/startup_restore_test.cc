// SPDX-License-Identifier: Apache-2.0
// The journal's restore after a crash of an agent that had switched a TCP host with the reconnect lever: the
// host is matched by its connection, not by the controller name it had (it may be back under another one),
// against a temporary sysfs tree and a fake nvme-cli. No root.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "agent/actuate/reconnect_lever.h"
#include "agent/state/device_identity.h"
#include "agent/state/journal.h"
#include "agent/state/startup_restore.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::state {
namespace {

using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;
using Argv = std::vector<std::string>;

constexpr char kNqn[] = "nqn.2026-12.io.nvme-adapt:fabrics";

// The reconnect lever's libnvme calls, recorded in nvme-cli's words.
class FakeCli final : public actuate::FabricsConnector {
 public:
  Status Connect(const Argv& options, uint32_t poll_queues) override {
    Argv argv{"nvme", "connect"};
    argv.insert(argv.end(), options.begin(), options.end());
    if (poll_queues > 0) argv.push_back("--nr-poll-queues=" + std::to_string(poll_queues));
    calls.push_back(argv);
    return OkStatus();
  }
  Status Disconnect(const std::string& controller) override {
    calls.push_back({"nvme", "disconnect", "--device=" + controller});
    return OkStatus();
  }
  std::vector<Argv> calls;
};

class CrashRestore : public ::testing::Test {
 protected:
  CrashRestore() { WriteFile(tmp_ / "sys/devices/system/cpu/online", "0-1\n"); }
  // A TCP host controller of our connection with `polls` poll queues after two default ones (one per CPU).
  void Host(const std::string& name, uint32_t polls, const std::string& traddr = "127.0.0.1") {
    const std::string dir = tmp_ / ("sys/class/nvme/" + name);
    WriteFile(dir + "/transport", "tcp\n");
    WriteFile(dir + "/subsysnqn", std::string(kNqn) + "\n");
    // src_addr is the local end the kernel picked for this connect: another one after a reconnect.
    WriteFile(dir + "/address", "traddr=" + traddr + ",trsvcid=4420,src_addr=127.0.0." + name.substr(4) + "\n");
    WriteFile(dir + "/serial", "a1b2c3\n");
    WriteFile(dir + "/hostnqn", "nqn.2014-08.org.nvmexpress:uuid:h1\n");
    WriteFile(dir + "/hostid", "h1\n");
    WriteFile(dir + "/queue_count", std::to_string(3 + polls) + "\n");
    WriteFile(dir + "/" + name + "c1n1/queue/io_poll", polls > 0 ? "1\n" : "0\n");
  }
  IdentityRoots Roots() const { return {tmp_ / "sys", tmp_ / "proc"}; }
  // What the agent journals before it switches nvme1 to poll: the lever's restore point and nvme1's identity.
  v1::JournalEntry Journaled() {
    actuate::ReconnectOptions options{tmp_ / "sys", 1, false, cli_};
    // The kernel shows no digests: the operator declares them (off), as the reconnect lever requires.
    options.nvme_cli_config = tmp_ / "etc/nvme/config.json";
    options.declared_digests["nvme1"] = actuate::ConnectionDigests{false, false, std::nullopt, "levers.controllers (nvme1)"};
    actuate::ReconnectLever lever(std::move(options));
    auto plan = lever.Plan(actuate::LeverTarget{"nvme1", 1}, ReapMode::kPoll);
    EXPECT_TRUE(plan) << plan.error().ToString();
    v1::JournalEntry entry;
    entry.set_controller("nvme1");
    entry.set_lever(std::string(LeverKindName(LeverKind::kTcpReconnect)));
    entry.set_target("nvme1");
    entry.set_safe_value(plan->restore().ToJson());
    entry.set_applied_value("poll");
    entry.set_device_identity(CurrentIdentity("nvme1", Roots()));
    StateStore store(tmp_ / "state");
    EXPECT_TRUE(store.Open());
    Journal journal(store);
    EXPECT_TRUE(journal.Load());
    EXPECT_TRUE(journal.WillChange(entry));
    return entry;
  }
  StartupRestore RestoreAtStart() {
    actuate::LeverEnvironment environment;
    environment.sysfs_root = tmp_ / "sys";
    environment.procfs_root = tmp_ / "proc";
    environment.fabrics = cli_;
    return RestoreBeforeAnything(tmp_ / "state", config::LeverSettings{}, environment, SystemRestoreRules(Roots()));
  }
  static std::string Lines(const RestoreReport& report) {
    std::string text;
    for (const auto& line : report.lines) text += line + "\n";
    return text;
  }

  TempDir tmp_;
  std::shared_ptr<FakeCli> cli_ = std::make_shared<FakeCli>();
};

TEST(DeviceIdentity, AFabricsHostIsItsConnectionAndAPcieControllerAsJournalsAlwaysHadIt) {
  EXPECT_EQ(KernelControllerIdentity("pcie", "0000:00:05.0", "nqn.x", "S1"), "pci=0000:00:05.0 serial=S1");
  EXPECT_EQ(KernelControllerIdentity("", "0000:00:05.0", "", "S1"), "pci=0000:00:05.0 serial=S1");
  EXPECT_EQ(KernelControllerIdentity("tcp", "traddr=10.0.0.2,trsvcid=4420,src_addr=10.0.0.9", "nqn.x", "S1"),
            "tcp=traddr=10.0.0.2,trsvcid=4420 subsysnqn=nqn.x serial=S1");
  EXPECT_EQ(KernelControllerIdentity("tcp", "traddr=10.0.0.2,trsvcid=4420,host_iface=eth1", "nqn.x", "S1"),
            "tcp=traddr=10.0.0.2,trsvcid=4420,host_iface=eth1 subsysnqn=nqn.x serial=S1");
  EXPECT_EQ(KernelControllerIdentity("loop", "", "nqn.x", "S1"), "loop= subsysnqn=nqn.x serial=S1");
}

TEST_F(CrashRestore, ATcpHostIdentityNamesItsTransportAndIsFoundUnderAnotherName) {
  Host("nvme1", 0);
  const std::string identity = CurrentIdentity("nvme1", Roots());
  EXPECT_EQ(identity, std::string("tcp=traddr=127.0.0.1,trsvcid=4420 subsysnqn=") + kNqn + " serial=a1b2c3");
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");
  EXPECT_EQ(IdentityNow("nvme1", identity, Roots()), "") << "no controller over that connection";
  Host("nvme2", 1);
  EXPECT_EQ(IdentityNow("nvme1", identity, Roots()), identity) << "the same connection, now nvme2";
  // The restore acts on the connection, wherever it is now: a name reused by another target does not hide it.
  Host("nvme3", 0, "10.0.0.2");
  EXPECT_EQ(IdentityNow("nvme3", identity, Roots()), identity);
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme2");
  EXPECT_EQ(IdentityNow("nvme3", identity, Roots()), CurrentIdentity("nvme3", Roots())) << "only another target";
  // What an older version journaled for a TCP host still names the controller it was written for.
  Host("nvme2", 1);
  const std::string legacy = "pci=traddr=127.0.0.1,trsvcid=4420,src_addr=127.0.0.2 serial=a1b2c3";
  EXPECT_EQ(IdentityNow("nvme2", legacy, Roots()), legacy);
  EXPECT_EQ(IdentityNow("nvme3", legacy, Roots()), CurrentIdentity("nvme3", Roots()));
}

TEST_F(CrashRestore, ATcpHostBackUnderAnotherNameAfterACrashIsRestoredByItsConnection) {
  Host("nvme1", 0);
  Journaled();
  // The agent switched nvme1 to poll and was killed; the host came back (reconnected) as nvme2, still polled.
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");
  Host("nvme2", 1);
  cli_->calls.clear();
  StartupRestore restored = RestoreAtStart();
  ASSERT_TRUE(restored.status) << restored.status.error().ToString() << "\n" << Lines(restored.report);
  EXPECT_EQ(restored.report.restored, 1) << Lines(restored.report);
  EXPECT_EQ(restored.report.dropped, 0) << Lines(restored.report);
  ASSERT_EQ(cli_->calls.size(), 2u) << Lines(restored.report);
  EXPECT_EQ(cli_->calls[0], (Argv{"nvme", "disconnect", "--device=nvme2"}));
  EXPECT_EQ(std::count(cli_->calls[1].begin(), cli_->calls[1].end(), "--nr-poll-queues=1"), 0)
      << "connected again as found: no poll queues";
  StateStore store(tmp_ / "state");
  Journal journal(store);
  ASSERT_TRUE(journal.Load());
  EXPECT_TRUE(journal.empty());
}

TEST_F(CrashRestore, ATcpHostWhoseTargetIsGoneIsDroppedWithWhyAndConnectsNothing) {
  Host("nvme1", 0);
  Journaled();
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");
  Host("nvme2", 1, "10.0.0.2");  // another connection under the old name's neighbour: not ours
  cli_->calls.clear();
  StartupRestore restored = RestoreAtStart();
  EXPECT_TRUE(restored.status) << restored.status.error().ToString();
  EXPECT_EQ(restored.report.dropped, 1) << Lines(restored.report);
  EXPECT_NE(Lines(restored.report).find("dropped nvme1 (tcp_reconnect nvme1): the device it changed (tcp=traddr="),
            std::string::npos)
      << Lines(restored.report);
  EXPECT_TRUE(cli_->calls.empty());
}

}  // namespace
}  // namespace nvmeadapt::state
