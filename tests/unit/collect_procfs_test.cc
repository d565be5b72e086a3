// SPDX-License-Identifier: Apache-2.0
// The procfs fallback on a captured /proc + /sys tree (two snapshots), and on this machine's own tree.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "agent/collect/procfs_collector.h"

namespace nvmeadapt::collect {
namespace {

namespace fs = std::filesystem;

class CapturedTree {
 public:
  CapturedTree() : root_(fs::path(::testing::TempDir()) / ("na-procfs-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc");
  }
  ~CapturedTree() { fs::remove_all(root_); }

  void Write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  // A block device: dev "MAJOR:MINOR", hardware queue dirs, and the 17 stat fields.
  void Disk(const std::string& name, const std::string& dev, int hardware_queues, uint64_t reads, uint64_t read_sectors,
            uint64_t writes, uint64_t write_sectors, uint64_t discards = 0, uint64_t flushes = 0) {
    Write("sys/block/" + name + "/dev", dev + "\n");
    for (int q = 0; q < hardware_queues; ++q) fs::create_directories(root_ / "sys/block" / name / "mq" / std::to_string(q));
    Write("sys/block/" + name + "/stat", std::to_string(reads) + " 0 " + std::to_string(read_sectors) + " 0 " +
                                             std::to_string(writes) + " 0 " + std::to_string(write_sectors) +
                                             " 0 0 0 0 " + std::to_string(discards) + " 0 0 0 " +
                                             std::to_string(flushes) + " 0\n");
  }
  void Interrupts(uint64_t q0_cpu0, uint64_t q1_cpu0, uint64_t q1_cpu1, uint64_t q2_cpu1) {
    Write("proc/interrupts",
          "           CPU0       CPU1       \n"
          " 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n"
          " 40:   " + std::to_string(q0_cpu0) + "          0  PCI-MSIX-0000:00:04.0   0-edge      nvme0q0\n"
          " 41:   " + std::to_string(q1_cpu0) + "   " + std::to_string(q1_cpu1) +
          "  PCI-MSIX-0000:00:04.0   1-edge      nvme0q1\n"
          " 42:          0   " + std::to_string(q2_cpu1) + "  PCI-MSIX-0000:00:04.0   2-edge      nvme0q2\n"
          "NMI:          0          0   Non-maskable interrupts\n"
          "ERR:          0\n");
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

std::map<QueueKey, WindowEvent> PollAll(ProcfsCollector& collector) {
  std::map<QueueKey, WindowEvent> events;
  auto polled = collector.Poll(0, [&](const WindowEvent& e) { events[e.key] = e; });
  EXPECT_TRUE(polled.ok()) << polled.error().message;
  return events;
}

TEST(ProcfsCollector, TwoSnapshotsGivePerQueueDeltas) {
  CapturedTree tree;
  tree.Interrupts(5, 100, 50, 7);
  tree.Disk("loop0", "7:0", 1, 1000, 8000, 200, 1600);
  tree.Disk("nvme0n1", "259:0", 2, 5000, 40000, 0, 0);
  ProcfsCollector collector(tree.root(), 0);
  EXPECT_TRUE(PollAll(collector).empty()) << "the first reading is the baseline";

  tree.Interrupts(5, 130, 80, 7);
  tree.Disk("loop0", "7:0", 1, 1500, 12000, 260, 2080, 0, 4);
  tree.Disk("nvme0n1", "259:0", 2, 5900, 47200, 0, 0);
  const auto events = PollAll(collector);

  const QueueKey loop{Source::kBlock, (7u << 20) | 0u, 1, 0};  // one hardware queue: hctx 0 = qid 1
  const QueueKey nvme_disk{Source::kBlock, (259u << 20) | 0u, 0, 0};  // two: the whole device
  const QueueKey q1{Source::kKernelNvme, 0, 1, 0};
  ASSERT_EQ(events.size(), 3u) << "nvme0q0 and nvme0q2 did not move";
  ASSERT_TRUE(events.contains(loop));
  EXPECT_EQ(events.at(loop).completions, 500u + 60u + 4u);
  EXPECT_EQ(events.at(loop).bytes, (4000u + 480u) * 512u);
  EXPECT_FALSE(events.at(loop).mode_known);
  EXPECT_LE(events.at(loop).start, events.at(loop).end);
  ASSERT_TRUE(events.contains(nvme_disk));
  EXPECT_EQ(events.at(nvme_disk).completions, 900u);
  ASSERT_TRUE(events.contains(q1));
  EXPECT_EQ(events.at(q1).interrupts, 60u);
  EXPECT_EQ(events.at(q1).completions, 0u) << "interrupts are not completions";

  auto counters = collector.ReadCounters(q1);
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ(counters->interrupts, 210u);
  EXPECT_EQ(collector.ObservedQueues().size(), 5u);  // nvme0q0..q2, loop0, nvme0n1
  EXPECT_EQ(collector.Stats().records, 3u);
}

TEST(ProcfsCollector, CountersGoingBackwardsGiveNoDelta) {
  CapturedTree tree;
  tree.Interrupts(0, 10, 0, 0);
  tree.Disk("loop1", "7:1", 1, 100, 800, 0, 0);
  ProcfsCollector collector(tree.root(), 0);
  PollAll(collector);
  tree.Disk("loop1", "7:1", 1, 3, 24, 0, 0);  // the device was detached and set up again
  EXPECT_TRUE(PollAll(collector).empty());
}

TEST(ProcfsCollector, MissingProcInterruptsIsAnErrorNamingThePath) {
  CapturedTree tree;
  ProcfsCollector collector(tree.root(), 0);
  auto polled = collector.Poll(0, [](const WindowEvent&) {});
  ASSERT_FALSE(polled.ok());
  EXPECT_NE(polled.error().message.find("proc/interrupts"), std::string::npos) << polled.error().message;
}

TEST(ProcfsCollector, ObserveOnlyAndUnsupportedControls) {
  ProcfsCollector collector("/", 1000);
  EXPECT_TRUE(collector.ObserveOnly());
  EXPECT_EQ(collector.SetQueueControl(QueueKey{}, QueueControl{}).error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(collector.AttachProcess(1, "").error().code, ErrorCode::kUnsupported);
}

TEST(ProcfsCollector, AWakeEndsTheWaitForTheNextSample) {
  CapturedTree tree;
  tree.Interrupts(1, 1, 1, 1);
  ProcfsCollector collector(tree.root(), 60'000);  // the next sample is a minute away
  auto baseline = collector.Poll(0, [](const WindowEvent&) {});
  ASSERT_TRUE(baseline.ok()) << baseline.error().message;
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    collector.Wake();
  });
  const auto before = std::chrono::steady_clock::now();
  auto polled = collector.Poll(30'000, [](const WindowEvent&) {});
  const auto waited = std::chrono::steady_clock::now() - before;
  waker.join();
  ASSERT_TRUE(polled.ok()) << polled.error().message;
  EXPECT_EQ(*polled, 0);
  EXPECT_LT(waited, std::chrono::seconds(10)) << "the wake did not end a 30 s wait";
}

TEST(ProcfsCollector, AWakeBeforeTheWaitEndsItToo) {
  CapturedTree tree;
  tree.Interrupts(1, 1, 1, 1);
  ProcfsCollector collector(tree.root(), 60'000);
  ASSERT_TRUE(collector.Poll(0, [](const WindowEvent&) {}).ok());
  collector.Wake();  // handed over while the loop was busy elsewhere
  const auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(collector.Poll(30'000, [](const WindowEvent&) {}).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(10));
}

TEST(ProcfsCollector, ReadsThisMachinesTree) {
  ProcfsCollector collector("/", 0);
  auto snapshot = collector.Read();
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  bool block = false;
  for (const auto& [key, sample] : *snapshot) block |= key.source == Source::kBlock;
  EXPECT_TRUE(block) << "no block device found under /sys/block";
}

}  // namespace
}  // namespace nvmeadapt::collect
