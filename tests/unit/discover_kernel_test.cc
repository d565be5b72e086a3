// SPDX-License-Identifier: Apache-2.0
// Kernel discovery against the captured trees of tests/data/sysfs/ (see its README for each case).
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/discover/discovery.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::CopyTree;
using nvmeadapt::testing::SysfsCase;
using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;
using Cpus = std::vector<uint32_t>;

Snapshot DiscoverTree(const std::string& root) {
  DiscoveryOptions options = DiscoveryOptions::UnderRoot(root);
  options.uvnvme = false;
  return Discover(options);
}

const Queue& QueueOf(const Controller& c, uint32_t qid) {
  for (const auto& q : c.queues) {
    if (q.qid == qid) return q;
  }
  throw std::runtime_error(c.name + " has no queue " + std::to_string(qid));
}

Controller OnlyController(const Snapshot& snapshot) {
  EXPECT_TRUE(snapshot.skipped.empty()) << snapshot.skipped.front().error.message;
  if (snapshot.controllers.size() != 1) throw std::runtime_error("expected one controller");
  return snapshot.controllers.front();
}

TEST(DiscoverKernel, QemuWithAPollQueue) {
  const Snapshot snapshot = DiscoverTree(SysfsCase("qemu-poll"));
  const Controller c = OnlyController(snapshot);
  EXPECT_EQ(c.name, "nvme0");
  EXPECT_EQ(c.source, Source::kKernelNvme);
  EXPECT_EQ(c.instance, 0u);
  EXPECT_EQ(c.model, "QEMU NVMe Ctrl");
  EXPECT_EQ(c.serial, "deadbeef");
  EXPECT_EQ(c.firmware, "1.0");
  EXPECT_EQ(c.transport, "pcie");
  EXPECT_EQ(c.address, "0000:00:05.0");
  EXPECT_EQ(c.state, "live");
  EXPECT_TRUE(c.settled);
  ASSERT_EQ(c.namespaces.size(), 1u);
  EXPECT_EQ(c.namespaces[0].name, "nvme0n1");
  EXPECT_EQ(c.namespaces[0].nsid, 1u);
  ASSERT_EQ(c.queues.size(), 4u);

  const Queue& admin = QueueOf(c, 0);
  EXPECT_FALSE(admin.eligible);
  EXPECT_EQ(admin.reason, Ineligibility::kAdminQueue);
  EXPECT_EQ(admin.reason_text, "admin queue");
  ASSERT_TRUE(admin.vector);
  EXPECT_EQ(admin.vector->irq, 28u);
  EXPECT_EQ(admin.vector->index, 0u);
  EXPECT_EQ(admin.vector->affinity, (Cpus{0, 1}));
  EXPECT_TRUE(admin.cpus.empty());

  for (uint32_t qid : {1u, 2u}) {
    SCOPED_TRACE("qid " + std::to_string(qid));
    const Queue& q = QueueOf(c, qid);
    EXPECT_TRUE(q.eligible) << q.reason_text;
    EXPECT_EQ(q.reason, Ineligibility::kNone);
    EXPECT_EQ(q.reason_text, "");
    EXPECT_EQ(q.mode, ReapMode::kInterrupt);
    EXPECT_EQ(q.cpus, (Cpus{qid - 1}));
    EXPECT_EQ(q.key, (QueueKey{Source::kKernelNvme, 0, qid, 0}));
    ASSERT_TRUE(q.vector);
    EXPECT_EQ(q.vector->irq, 28u + qid);
    EXPECT_EQ(q.vector->index, qid);
    EXPECT_EQ(q.vector->kind, VectorKind::kMsix);
    EXPECT_EQ(q.vector->chip, "PCI-MSI");
    EXPECT_EQ(q.vector->handlers, std::vector<std::string>{"nvme0q" + std::to_string(qid)});
    EXPECT_EQ(q.vector->affinity, (Cpus{qid - 1}));
  }

  const Queue& poll = QueueOf(c, 3);
  EXPECT_FALSE(poll.eligible);
  EXPECT_EQ(poll.reason, Ineligibility::kPollQueue);
  EXPECT_EQ(poll.reason_text, "poll queue (no vector)");
  EXPECT_FALSE(poll.vector);
  EXPECT_EQ(poll.mode, ReapMode::kPoll);
  EXPECT_EQ(poll.cpus, (Cpus{0, 1}));
}

TEST(DiscoverKernel, OneVectorForEverything) {
  const Controller c = OnlyController(DiscoverTree(SysfsCase("shared-vector")));
  ASSERT_EQ(c.queues.size(), 2u);
  const Queue& q1 = QueueOf(c, 1);
  EXPECT_FALSE(q1.eligible);
  EXPECT_EQ(q1.reason, Ineligibility::kSharedVector);
  EXPECT_EQ(q1.reason_text, "shared vector with nvme0q0");
  ASSERT_TRUE(q1.vector);
  EXPECT_EQ(q1.vector->irq, 28u);
  EXPECT_EQ(q1.vector->index, 0u) << "a single vector device puts every CQ on vector 0";
  EXPECT_EQ(q1.vector->handlers, (std::vector<std::string>{"nvme0q0", "nvme0q1"}));
  EXPECT_EQ(q1.cpus, (Cpus{0, 1}));
  EXPECT_EQ(QueueOf(c, 0).reason, Ineligibility::kAdminQueue);
}

TEST(DiscoverKernel, ThreadedInterruptsFromTheModuleParameter) {
  const Controller c = OnlyController(DiscoverTree(SysfsCase("threaded")));
  for (uint32_t qid : {1u, 2u}) {
    const Queue& q = QueueOf(c, qid);
    EXPECT_FALSE(q.eligible);
    EXPECT_EQ(q.reason, Ineligibility::kThreaded);
    EXPECT_EQ(q.reason_text, "threaded interrupts (nvme use_threaded_interrupts=1)");
  }
  EXPECT_EQ(QueueOf(c, 3).reason, Ineligibility::kPollQueue);
  EXPECT_EQ(QueueOf(c, 0).reason, Ineligibility::kAdminQueue);
}

TEST(DiscoverKernel, ThreadedInterruptsFromTheBootOption) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  WriteFile(tmp / "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/vda1 nothreadirqs=0 threadirqs quiet\n");
  const Controller c = OnlyController(DiscoverTree(tmp.path()));
  EXPECT_EQ(QueueOf(c, 1).reason, Ineligibility::kThreaded);
  EXPECT_EQ(QueueOf(c, 1).reason_text, "threaded interrupts (threadirqs boot option)");
}

// A reset under way (nvme_reset_work, or a fabrics reconnect) is not a layout to act on; a dead controller's is.
TEST(DiscoverKernel, ControllerInResetIsNotSettled) {
  for (const char* state : {"resetting", "connecting", "new"}) {
    TempDir tmp;
    CopyTree(SysfsCase("qemu-poll"), tmp.path());
    WriteFile(tmp / "sys/class/nvme/nvme0/state", std::string(state) + "\n");
    const Controller c = OnlyController(DiscoverTree(tmp.path()));
    EXPECT_EQ(c.state, state);
    EXPECT_FALSE(c.settled) << state;
  }
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  WriteFile(tmp / "sys/class/nvme/nvme0/state", "dead\n");
  EXPECT_TRUE(OnlyController(DiscoverTree(tmp.path())).settled);
}

TEST(DiscoverKernel, PreemptRtThreadsEveryHandler) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  WriteFile(tmp / "sys/kernel/realtime", "1\n");
  const Controller c = OnlyController(DiscoverTree(tmp.path()));
  EXPECT_EQ(QueueOf(c, 2).reason_text, "threaded interrupts (PREEMPT_RT kernel)");
}

TEST(DiscoverKernel, MsiIsNotMsix) {
  const Controller c = OnlyController(DiscoverTree(SysfsCase("msi")));
  const Queue& q1 = QueueOf(c, 1);
  EXPECT_FALSE(q1.eligible);
  EXPECT_EQ(q1.reason, Ineligibility::kNotMsix);
  EXPECT_EQ(q1.reason_text, "MSI, not MSI-X");
  ASSERT_TRUE(q1.vector);
  EXPECT_EQ(q1.vector->kind, VectorKind::kMsi);
}

TEST(DiscoverKernel, LegacyInterruptIsNotMsix) {
  const Controller c = OnlyController(DiscoverTree(SysfsCase("intx")));
  const Queue& q1 = QueueOf(c, 1);
  EXPECT_EQ(q1.reason, Ineligibility::kNotMsix);
  EXPECT_EQ(q1.reason_text, "INTx, not MSI-X");
  ASSERT_TRUE(q1.vector);
  EXPECT_EQ(q1.vector->irq, 11u);
  EXPECT_EQ(q1.vector->kind, VectorKind::kIntx);
  EXPECT_EQ(q1.vector->chip, "IO-APIC");
}

TEST(DiscoverKernel, WithoutNamespacesTheVectorGivesTheCpus) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  std::filesystem::remove_all(tmp / "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1");
  std::filesystem::remove(tmp / "sys/block/nvme0n1");
  const Controller c = OnlyController(DiscoverTree(tmp.path()));
  EXPECT_TRUE(c.namespaces.empty());
  ASSERT_EQ(c.queues.size(), 4u) << "queue_count still says 4";
  EXPECT_EQ(QueueOf(c, 1).cpus, (Cpus{0}));
  EXPECT_EQ(QueueOf(c, 2).cpus, (Cpus{1}));
  EXPECT_EQ(QueueOf(c, 3).reason, Ineligibility::kPollQueue);
}

TEST(DiscoverKernel, TcpHostQueuesAreEligibleAndItsLastQidsArePollQueues) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  const std::string dir = tmp / "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0";
  WriteFile(dir + "/transport", "tcp\n");
  WriteFile(tmp / "sys/devices/system/cpu/online", "0-1\n");
  const Controller c = OnlyController(DiscoverTree(tmp.path()));
  EXPECT_TRUE(QueueOf(c, 1).eligible) << "switched by the reconnect lever, for the whole connection";
  EXPECT_EQ(QueueOf(c, 1).mode, ReapMode::kInterrupt);
  EXPECT_EQ(QueueOf(c, 3).reason, Ineligibility::kPollQueue) << "queue_count 4, two CPUs, io_poll 1: one poll queue";
  EXPECT_EQ(QueueOf(c, 3).reason_text, "poll queue (nr_poll_queues at connect)");
  EXPECT_EQ(QueueOf(c, 3).mode, ReapMode::kPoll);
  EXPECT_EQ(c.layer, "host");
  WriteFile(dir + "/nvme0n1/queue/io_poll", "0\n");
  EXPECT_TRUE(QueueOf(OnlyController(DiscoverTree(tmp.path())), 3).eligible) << "no poll queues";
  EXPECT_TRUE(OnlyController(DiscoverTree(tmp.path())).settled);
  std::filesystem::remove(dir + "/nvme0n1/queue/io_poll");
  EXPECT_FALSE(OnlyController(DiscoverTree(tmp.path())).settled)
      << "just connected, its namespace not scanned: which queues poll is known at the next scan";
}

TEST(DiscoverKernel, OtherFabricsQueuesHaveNoLever) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  WriteFile(tmp / "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0/transport", "loop\n");
  const Controller c = OnlyController(DiscoverTree(tmp.path()));
  EXPECT_EQ(QueueOf(c, 1).reason, Ineligibility::kNoInterrupts);
  EXPECT_EQ(QueueOf(c, 1).reason_text,
            "loop host queue: no MSI-X vector and no lever (the reconnect lever serves tcp only)");
  EXPECT_EQ(c.layer, "host");
}

TEST(DiscoverKernel, NoNvmeModuleMeansNoControllers) {
  TempDir tmp;
  WriteFile(tmp / "proc/interrupts", "           CPU0\n  0:  1  IO-APIC  2-edge  timer\n");
  const Snapshot snapshot = DiscoverTree(tmp.path());
  EXPECT_TRUE(snapshot.controllers.empty());
  EXPECT_TRUE(snapshot.skipped.empty());
}

TEST(DiscoverKernel, UnreadableInterruptsIsReportedNotGuessed) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  std::filesystem::remove(tmp / "proc/interrupts");
  const Snapshot snapshot = DiscoverTree(tmp.path());
  EXPECT_TRUE(snapshot.controllers.empty());
  ASSERT_EQ(snapshot.skipped.size(), 1u);
  EXPECT_EQ(snapshot.skipped[0].error.code, ErrorCode::kNotFound);
  EXPECT_NE(snapshot.skipped[0].error.message.find(tmp / "proc/interrupts"), std::string::npos);
}

TEST(DiscoverKernel, AVanishedControllerIsSkippedAndTheOthersStay) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  // nvme1's device directory went away between listing and reading: only the class link is left.
  std::filesystem::create_directory_symlink("../../devices/pci0000:00/0000:00:06.0/nvme/nvme1",
                                            tmp / "sys/class/nvme/nvme1");
  const Snapshot snapshot = DiscoverTree(tmp.path());
  ASSERT_EQ(snapshot.controllers.size(), 1u);
  EXPECT_EQ(snapshot.controllers[0].name, "nvme0");
  ASSERT_EQ(snapshot.skipped.size(), 1u);
  EXPECT_EQ(snapshot.skipped[0].object, tmp / "sys/class/nvme/nvme1");
  EXPECT_EQ(snapshot.skipped[0].error.code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace nvmeadapt::discover
