// SPDX-License-Identifier: Apache-2.0
// The daemon's ports over the real discovery and levers, on a captured tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "agent/config/policy_layers.h"
#include "agent/daemon/real_ports.h"
#include "agent/state/device_identity.h"
#include "agent/state/startup_restore.h"
#include "tests/unit/fake_admin_device.h"
#include "tests/unit/fake_uvnvme.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::daemon {
namespace {

using nvmeadapt::testing::CopyTree;
using nvmeadapt::testing::FakeController;
using nvmeadapt::testing::FakeOpener;
using nvmeadapt::testing::FakeUvnvmeServer;
using nvmeadapt::testing::ReadFile;
using nvmeadapt::testing::SysfsCase;
using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

constexpr char kAttribute[] = "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0/adaptive_poll";

class RealPorts : public ::testing::Test {
 protected:
  RealPorts() {
    CopyTree(SysfsCase("qemu-poll"), tmp_.path());
    WriteFile(tmp_ / kAttribute, "0\n");
    settings_.kernel_lever = LeverKind::kAdaptivePollSysfs;
    environment_.sysfs_root = tmp_ / "sys";
    environment_.procfs_root = tmp_ / "proc";
  }
  // Discovery of the captured tree's kernel controllers, or of the userspace drivers under it only.
  discover::DiscoveryOptions Only(bool kernel) {
    discover::DiscoveryOptions options = discover::DiscoveryOptions::UnderRoot(tmp_.path());
    options.kernel = kernel;
    options.uvnvme = !kernel;
    return options;
  }
  DiscoveredQueue Find(const std::vector<DiscoveredQueue>& queues, uint32_t qid) {
    for (const auto& q : queues) {
      if (q.qid == qid) return q;
    }
    ADD_FAILURE() << "no queue " << qid;
    return {};
  }

  TempDir tmp_;
  config::LeverSettings settings_;
  actuate::LeverEnvironment environment_;
};

TEST_F(RealPorts, DiscoveryReportsEveryQueueWithItsEligibility) {
  RealDiscovery discovery(Only(/*kernel=*/true));
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues) << queues.error().message;
  ASSERT_EQ(queues->size(), 4u);
  EXPECT_FALSE(Find(*queues, 0).eligible);
  EXPECT_EQ(Find(*queues, 0).ineligible_reason, "admin queue");
  EXPECT_TRUE(Find(*queues, 1).eligible);
  EXPECT_EQ(Find(*queues, 1).source, v1::SOURCE_KERNEL);
  EXPECT_GE(Find(*queues, 1).irq, 0);
  EXPECT_FALSE(Find(*queues, 3).eligible);
  EXPECT_EQ(Find(*queues, 3).irq, -1);
}

// The stable ID is the drive's serial, subsystem NQN and controller ID (PCIe: another slot keeps it) or a
// fabrics host's connection; discovery gives it with the facts selectors match.
TEST_F(RealPorts, stable_identity_is_serial_nqn_and_cntlid_for_pcie_and_the_connection_for_fabrics) {
  const std::string nqn = "nqn.2019-08.org.qemu:deadbeef";
  const std::string pcie = state::StableControllerId("pcie", "0000:00:05.0", nqn, "deadbeef", "0");
  EXPECT_EQ(pcie.size(), 21u);
  EXPECT_EQ(pcie.rfind("nvme-", 0), 0u);
  EXPECT_EQ(state::StableControllerId("pcie", "0000:3b:00.0", nqn, "deadbeef", "0"), pcie);
  EXPECT_NE(state::StableControllerId("pcie", "0000:00:05.0", nqn, "cafe", "0"), pcie);
  const std::string tcp = "traddr=10.0.0.2,trsvcid=4420";
  EXPECT_EQ(state::StableControllerId("tcp", tcp + ",src_addr=10.0.0.9", "nqn.x", "S1", "1"),
            state::StableControllerId("tcp", tcp, "nqn.x", "S1", "1"));
  EXPECT_EQ(state::StableControllerId("tcp", tcp, "nqn.x", "S1", "1"), state::StableControllerId("tcp", tcp, "nqn.x", "S1", "2"))
      << "a fabrics controller's cntlid is handed out anew at each connect";
  EXPECT_NE(state::StableControllerId("tcp", "traddr=10.0.0.3,trsvcid=4420", "nqn.x", "S1", "1"),
            state::StableControllerId("tcp", tcp, "nqn.x", "S1", "1"));
  EXPECT_EQ(state::StableControllerId("pcie", "0000:00:05.0", "", "", "1"), "");

  RealDiscovery discovery(Only(/*kernel=*/true));
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues) << queues.error().message;
  const DiscoveredQueue q1 = Find(*queues, 1);
  EXPECT_EQ(q1.controller_id, pcie);
  EXPECT_EQ(q1.ControllerId(), pcie);
  EXPECT_EQ(q1.legacy_controller_id, state::LegacyStableControllerId("pcie", "0000:00:05.0", nqn, "deadbeef"));
  EXPECT_EQ(q1.serial, "deadbeef");
  EXPECT_EQ(q1.model, "QEMU NVMe Ctrl");
  EXPECT_EQ(q1.subsysnqn, nqn);
  EXPECT_EQ(q1.pci_address, "0000:00:05.0");
  EXPECT_EQ(q1.firmware, "1.0");
}

// Issue 45: the controllers of one NVM subsystem (a dual-port drive's ports, SR-IOV functions) share serial
// and NQN; each has its own ID. And no serial, NQN and cntlid run into another set's.
TEST_F(RealPorts, stable_id_cntlid_two_controllers_of_one_subsystem_get_two_ids_and_fields_never_collide) {
  const std::string nqn = "nqn.2014-08.org.nvmexpress:uuid:dual", serial = "S6CRNA0T100001";
  const std::string port_a = state::StableControllerId("pcie", "0000:3b:00.0", nqn, serial, "1");
  EXPECT_NE(state::StableControllerId("pcie", "0000:3c:00.0", nqn, serial, "2"), port_a);
  EXPECT_EQ(state::StableControllerId("pcie", "0000:5e:00.0", nqn, serial, "1"), port_a) << "moved to another slot";
  // Serial "A subsysnqn=B" with NQN "C", and serial "A" with NQN "B subsysnqn=C": one string before.
  EXPECT_NE(state::StableControllerId("pcie", "", "C", "A subsysnqn=B", "1"), state::StableControllerId("pcie", "", "B subsysnqn=C", "A", "1"));
  EXPECT_NE(state::StableControllerId("pcie", "", "B", "A", "12"), state::StableControllerId("pcie", "", "B1", "A", "2"));
  EXPECT_NE(state::StableControllerId("pcie", "", "", "AB", "1"), state::StableControllerId("pcie", "", "B", "A", "1"));

  WriteFile(tmp_ / "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0/cntlid", "7\n");
  RealDiscovery discovery(Only(/*kernel=*/true));
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues) << queues.error().message;
  EXPECT_EQ(Find(*queues, 1).controller_id,
            state::StableControllerId("pcie", "0000:00:05.0", "nqn.2019-08.org.qemu:deadbeef", "deadbeef", "7"));
}

// Entries keyed by an ID of before issue 45 (policy.json, a config file, an `id` selector) still reach the
// controllers that ID named, until rewritten with the new IDs.
TEST_F(RealPorts, stable_id_cntlid_entries_written_with_the_id_of_before_still_match) {
  engine::DeviceFacts facts{.controller = "nvme0", .id = "nvme-00000000000000aa", .model = "M", .serial = "S"};
  facts.legacy_id = "nvme-00000000000000bb";
  v1::PolicySet set;
  auto* by_old_id = set.add_controllers();
  by_old_id->set_controller(facts.legacy_id);
  by_old_id->mutable_policy()->set_pace_slack_ns(31'000);
  auto* selector = set.add_selectors();
  selector->set_name("old-id");
  selector->mutable_match()->set_id(facts.legacy_id);
  selector->mutable_match()->set_queues("2");
  selector->mutable_policy()->set_pace_slack_ns(42'000);
  auto q1 = config::EffectivePolicy(set, facts, 1);
  auto q2 = config::EffectivePolicy(set, facts, 2);
  ASSERT_TRUE(q1 && q2);
  EXPECT_EQ(q1->pace_slack, 31'000);
  EXPECT_EQ(q2->pace_slack, 42'000);
  facts.legacy_id.clear();
  EXPECT_NE(config::EffectivePolicy(set, facts, 1)->pace_slack, 31'000);
}

TEST_F(RealPorts, TheTargetsQueuesAreListedFromTheCollectorsCountsAndLeaveOnceIdle) {
  discover::DiscoveryOptions options = Only(/*kernel=*/true);
  options.target_idle = 10'000'000'000;
  WriteFile(tmp_ / "sys/kernel/config/nvmet/ports/1/addr_trtype", "tcp\n");
  std::filesystem::create_directories(tmp_ / "sys/kernel/config/nvmet/ports/1/subsystems/nqn.bed");
  std::vector<discover::ObservedTargetQueue> counted = {{3, 0, 4}, {3, 1, 100}};
  engine::Nanos now = 1'000'000'000;
  RealDiscovery discovery(options, [&] { return counted; }, [&] { return now; });
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues) << queues.error().message;
  ASSERT_EQ(queues->size(), 6u) << "nvme0's four and the target controller's two";
  const DiscoveredQueue& target = queues->back();
  EXPECT_EQ(target.controller, "nvmet:c3");
  EXPECT_EQ(target.qid, 1u);
  EXPECT_EQ(target.source, v1::SOURCE_NVMET);
  EXPECT_EQ(target.key.ToString(), "nvmet:c3:q1");
  EXPECT_EQ(target.layer, "target");
  EXPECT_EQ(target.transport, "tcp");
  EXPECT_TRUE(target.eligible);
  EXPECT_EQ(target.irq, -1);
  ASSERT_NE(discovery.snapshot()->Find("nvmet:c3"), nullptr) << "levers resolve the target from the snapshot";

  RealLevers levers(settings_, environment_, discovery);
  EXPECT_EQ(levers.LeverNameFor(target), "dry_run") << "no lever switches a target queue on a stock kernel";
  for (engine::ControllerMode asked : {engine::ControllerMode::kAdaptive, engine::ControllerMode::kPoll,
                                       engine::ControllerMode::kInterrupt, engine::ControllerMode::kShadow}) {
    EXPECT_EQ(levers.ModeFor(target, asked), engine::ControllerMode::kShadow)
        << "no pretended switch: " << engine::ControllerModeName(asked) << " decides in shadow";
  }
  EXPECT_EQ(levers.ModeFor(target, engine::ControllerMode::kOff), engine::ControllerMode::kOff);

  now += 11'000'000'000;  // q0 answered a keep-alive meanwhile; q1 did nothing
  counted = {{3, 0, 5}, {3, 1, 100}};
  queues = discovery.Scan();
  ASSERT_TRUE(queues);
  ASSERT_EQ(queues->size(), 5u);
  EXPECT_EQ(queues->back().key.ToString(), "nvmet:c3:q0");
  counted.clear();  // the controller went and the agent forgot its keys
  queues = discovery.Scan();
  ASSERT_TRUE(queues);
  EXPECT_EQ(queues->size(), 4u);
}

TEST_F(RealPorts, AControllerWideLeverIsPlannedJournaledAppliedAndRestoredOncePerController) {
  RealDiscovery discovery(Only(/*kernel=*/true));
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues);
  RealLevers levers(settings_, environment_, discovery);
  const DiscoveredQueue q1 = Find(*queues, 1), q2 = Find(*queues, 2);
  EXPECT_EQ(levers.LeverNameFor(q1), "adaptive_poll_sysfs");
  // Adaptive on a controller-wide attribute: the kernel adapts, so the attribute is turned on.
  EXPECT_EQ(levers.ModeFor(q1, engine::ControllerMode::kAdaptive), engine::ControllerMode::kPoll);
  EXPECT_EQ(levers.ModeFor(q1, engine::ControllerMode::kShadow), engine::ControllerMode::kShadow);

  auto plan = levers.Plan(q1, ReapMode::kPoll);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->target, "nvme0");
  EXPECT_EQ(ReadFile(tmp_ / kAttribute), "0\n") << "planning wrote";
  ASSERT_TRUE(plan->Execute());
  EXPECT_EQ(ReadFile(tmp_ / kAttribute), "1\n");
  auto second = levers.Plan(q2, ReapMode::kPoll);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->target, "nvme0");
  EXPECT_EQ(actuate::RestorePoint::FromJson(second->safe_value)->steps,
            actuate::RestorePoint::FromJson(plan->safe_value)->steps)
      << "the original value, not the current one";
  ASSERT_TRUE(second->Execute());

  // A new daemon (after a crash) restores from the journal entry alone.
  RealLevers after_crash(settings_, environment_, discovery);
  v1::JournalEntry entry;
  entry.set_controller("nvme0");
  entry.set_lever(plan->lever);
  entry.set_target(plan->target);
  entry.set_safe_value(plan->safe_value);
  ASSERT_TRUE(after_crash.Restore(entry));
  EXPECT_EQ(ReadFile(tmp_ / kAttribute), "0\n");
  entry.set_safe_value("{not json");
  auto bad = after_crash.Restore(entry);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("nvme0"), std::string::npos);
}

// With our nvmet's polling-queue task (kmod/nvmet) AUTO gives the target's controller its lever, the engine's
// decisions per queue reach it (adaptive stays adaptive), and a controller's entry restores the namespace.
TEST_F(RealPorts, TheTargetsQueuesGoToThePollingQueueTaskWhereOurNvmetHasIt) {
  const std::string subsystem = tmp_ / "sys/kernel/config/nvmet/subsystems/nqn.bed";
  WriteFile(subsystem + "/namespaces/1/enable", "1\n");
  WriteFile(subsystem + "/namespaces/1/device_path", "/dev/nvme0n1\n");
  WriteFile(subsystem + "/namespaces/1/pqt_enable", "0\n");
  WriteFile(tmp_ / "sys/block/nvme0n1/queue/io_poll", "1\n");
  WriteFile(tmp_ / "sys/module/nvmet/pqt/state", "none\n");
  WriteFile(tmp_ / "sys/kernel/config/nvmet/ports/1/addr_trtype", "tcp\n");
  std::filesystem::create_directories(tmp_ / "sys/kernel/config/nvmet/ports/1/subsystems");
  std::filesystem::create_directory_symlink(subsystem, tmp_ / "sys/kernel/config/nvmet/ports/1/subsystems/nqn.bed");
  RealDiscovery discovery(Only(/*kernel=*/true), [] { return std::vector<discover::ObservedTargetQueue>{{3, 1, 9}}; },
                          [] { return engine::Nanos{1}; });
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues) << queues.error().message;
  const DiscoveredQueue target = queues->back();
  EXPECT_EQ(target.lever_target.subsysnqn, "nqn.bed");
  RealLevers levers(settings_, environment_, discovery);
  EXPECT_EQ(levers.LeverNameFor(target), "nvmet_poll_task");
  EXPECT_EQ(levers.ModeFor(target, engine::ControllerMode::kAdaptive), engine::ControllerMode::kAdaptive);
  EXPECT_FALSE(levers.Disruptive(target));
  auto plan = levers.Plan(target, ReapMode::kPoll);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->target, "nvmet:c3") << "one journal entry per target controller";
  ASSERT_TRUE(plan->Execute());
  EXPECT_EQ(ReadFile(subsystem + "/namespaces/1/pqt_enable"), "1\n");
  v1::JournalEntry entry;
  entry.set_controller("nvmet:c3");
  entry.set_lever(plan->lever);
  entry.set_target(plan->target);
  entry.set_safe_value(plan->safe_value);
  ASSERT_TRUE(state::RestoreWithFreshLever(entry, settings_, actuate::LeverEnvironment{environment_.sysfs_root}));
  EXPECT_EQ(ReadFile(subsystem + "/namespaces/1/pqt_enable"), "0\n");
}

// Finding 1 of issue 15: a dry-run daemon once "restored" a crash's journal in dry run, dropped every entry and
// left the devices changed. A restore is always real, and a dry-run lever journals nothing.
TEST_F(RealPorts, ADryRunDaemonRestoresForRealAndJournalsNothingOfItsOwn) {
  RealDiscovery discovery(Only(/*kernel=*/true));
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues);
  RealLevers crashed(settings_, environment_, discovery);
  auto plan = crashed.Plan(Find(*queues, 1), ReapMode::kPoll);
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->dry_run);
  EXPECT_EQ(plan->device_identity.rfind("pci=0000:00:05.0 serial=", 0), 0u) << plan->device_identity;
  ASSERT_TRUE(plan->Execute());
  ASSERT_EQ(ReadFile(tmp_ / kAttribute), "1\n");

  config::LeverSettings dry = settings_;
  dry.dry_run = true;
  RealLevers dry_run(dry, environment_, discovery);
  auto dry_plan = dry_run.Plan(Find(*queues, 1), ReapMode::kPoll);
  ASSERT_TRUE(dry_plan);
  EXPECT_TRUE(dry_plan->dry_run) << "the agent would journal a change nobody made";
  v1::JournalEntry entry;
  entry.set_controller("nvme0");
  entry.set_lever(plan->lever);
  entry.set_target(plan->target);
  entry.set_safe_value(plan->safe_value);
  ASSERT_TRUE(dry_run.Restore(entry));
  EXPECT_EQ(ReadFile(tmp_ / kAttribute), "0\n") << "a dry-run daemon restored in dry run";

  ASSERT_TRUE(crashed.Plan(Find(*queues, 1), ReapMode::kPoll)->Execute());
  ASSERT_TRUE(state::RestoreWithFreshLever(entry, dry, environment_));
  EXPECT_EQ(ReadFile(tmp_ / kAttribute), "0\n");
}

TEST_F(RealPorts, ApplyWithoutPlanAndVanishedQueuesAreErrors) {
  RealDiscovery discovery(Only(/*kernel=*/true));
  ASSERT_TRUE(discovery.Scan());
  RealLevers levers(settings_, environment_, discovery);
  const LeverPlan unplanned{"adaptive_poll_sysfs", "nvme0", "", "poll"};
  EXPECT_EQ(unplanned.Execute().error().code, ErrorCode::kInternal);
  DiscoveredQueue gone;
  gone.controller = "nvme7";
  gone.qid = 1;
  EXPECT_EQ(levers.Plan(gone, ReapMode::kPoll).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(levers.LeverNameFor(gone), std::nullopt);
}

// One switch reads its device once: the plan that gives the journal its restore point is the one executed
// (issue 19: Plan and Apply each read the device, two opens and four Get Features per coalescing switch).
TEST_F(RealPorts, ASwitchOpensItsAdminDeviceOnce) {
  auto controller = std::make_shared<FakeController>();
  controller->disabled[1] = true;  // q1's vector does not coalesce yet: poll mode sets 08h and 09h
  auto opener = std::make_shared<FakeOpener>(controller);
  settings_.kernel_lever = LeverKind::kCoalescing;
  environment_.admin = opener;
  RealDiscovery discovery(Only(/*kernel=*/true));
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues);
  RealLevers levers(settings_, environment_, discovery);
  auto plan = levers.Plan(Find(*queues, 1), ReapMode::kPoll);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->changes);
  ASSERT_TRUE(plan->Execute());
  EXPECT_EQ(opener->opened.size(), 1u);
  const auto gets = std::count_if(controller->commands.begin(), controller->commands.end(), [](const auto& cmd) {
    return cmd.opcode == actuate::kOpcodeGetFeatures;
  });
  EXPECT_EQ(gets, 2) << "08h and 09h, read once";
  EXPECT_EQ(controller->commands.size(), 4u) << "two reads, two writes";
  EXPECT_FALSE(controller->disabled[1]);
  EXPECT_EQ(plan->Execute().error().code, ErrorCode::kInternal) << "a plan executes once";
}

// The same for a userspace driver: one connection to its control socket per switch (it was two, each with its
// own "list").
TEST_F(RealPorts, ASwitchConnectsToTheControlSocketOnce) {
  const uint32_t pid = static_cast<uint32_t>(getpid());
  std::filesystem::create_directories(tmp_ / "run/uvnvme");
  FakeUvnvmeServer server(tmp_ / ("run/uvnvme/" + std::to_string(pid) + ".sock"), pid, {{0, 1, "interrupt"}});
  RealDiscovery discovery(Only(/*kernel=*/false));
  auto queues = discovery.Scan();
  ASSERT_TRUE(queues);
  ASSERT_EQ(queues->size(), 1u);
  RealLevers levers(settings_, environment_, discovery);
  ASSERT_EQ(levers.LeverNameFor(queues->front()), "uvnvme_socket");
  const int connections = server.Connections();
  const size_t requests = server.Requests().size();
  auto plan = levers.Plan(queues->front(), ReapMode::kPoll);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_TRUE(plan->Execute());
  EXPECT_EQ(server.Connections() - connections, 1);
  const std::vector<std::string> all = server.Requests();
  const std::vector<std::string> asked(all.begin() + static_cast<std::ptrdiff_t>(requests), all.end());
  ASSERT_EQ(asked.size(), 2u) << "one list, one set_mode";
  EXPECT_NE(asked[0].find("\"list\""), std::string::npos) << asked[0];
  EXPECT_NE(asked[1].find("\"set_mode\""), std::string::npos) << asked[1];
  EXPECT_EQ(server.Queue(0, 1).mode, "poll");
}

}  // namespace
}  // namespace nvmeadapt::daemon
