// SPDX-License-Identifier: Apache-2.0
// Hot add and removal: DiffSnapshots between discoveries of the captured trees and of edited copies.
#include <gtest/gtest.h>

#include "agent/discover/diff.h"
#include "agent/discover/discovery.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::SysfsCase;
using Names = std::vector<std::string>;

Snapshot Tree(const std::string& name) {
  DiscoveryOptions options = DiscoveryOptions::UnderRoot(SysfsCase(name));
  options.uvnvme = false;
  Snapshot snapshot = Discover(options);
  EXPECT_EQ(snapshot.controllers.size(), 1u) << name;
  return snapshot;
}

std::vector<uint32_t> Qids(const std::vector<QueueRef>& refs) {
  std::vector<uint32_t> qids;
  for (const auto& r : refs) qids.push_back(r.queue.qid);
  return qids;
}

TEST(SnapshotDiff, NothingChanged) {
  EXPECT_TRUE(DiffSnapshots(Tree("qemu-poll"), Tree("qemu-poll")).empty());
}

TEST(SnapshotDiff, ControllerAppears) {
  const SnapshotDiff diff = DiffSnapshots(Snapshot{}, Tree("qemu-poll"));
  EXPECT_EQ(diff.controllers_added, Names{"nvme0"});
  EXPECT_TRUE(diff.controllers_removed.empty());
  EXPECT_EQ(Qids(diff.queues_added), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(diff.queues_added[1].controller, "nvme0");
  EXPECT_TRUE(diff.queues_changed.empty());
}

TEST(SnapshotDiff, ControllerVanishes) {
  const SnapshotDiff diff = DiffSnapshots(Tree("qemu-poll"), Snapshot{});
  EXPECT_EQ(diff.controllers_removed, Names{"nvme0"});
  EXPECT_EQ(Qids(diff.queues_removed), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(diff.queues_added.empty());
}

TEST(SnapshotDiff, ThreadedAfterReloadChangesEligibility) {
  const SnapshotDiff diff = DiffSnapshots(Tree("qemu-poll"), Tree("threaded"));
  EXPECT_TRUE(diff.controllers_added.empty());
  EXPECT_TRUE(diff.controllers_removed.empty());
  ASSERT_EQ(diff.queues_changed.size(), 2u);
  EXPECT_EQ(diff.queues_changed[0].after.qid, 1u);
  EXPECT_EQ(diff.queues_changed[1].after.qid, 2u);
  EXPECT_EQ(diff.queues_changed[0].what, Names{"eligibility"});
  EXPECT_TRUE(diff.queues_changed[0].before.eligible);
  EXPECT_FALSE(diff.queues_changed[0].after.eligible);
}

TEST(SnapshotDiff, ResetWithoutPollQueueDropsIt) {
  Snapshot before = Tree("qemu-poll");
  Snapshot after = before;
  after.controllers[0].queues.pop_back();  // poll_queues=0 + reset_controller: q3 is gone
  const SnapshotDiff diff = DiffSnapshots(before, after);
  EXPECT_TRUE(diff.controllers_removed.empty());
  EXPECT_EQ(Qids(diff.queues_removed), std::vector<uint32_t>{3});
  EXPECT_EQ(diff.queues_removed[0].controller, "nvme0");
}

TEST(SnapshotDiff, NewVectorAndCpusAreChanges) {
  Snapshot before = Tree("qemu-poll");
  Snapshot after = before;
  after.controllers[0].queues[1].vector->irq = 41;  // a reset re-allocated the vectors
  after.controllers[0].queues[2].cpus = {0, 1};     // a CPU went offline
  const SnapshotDiff diff = DiffSnapshots(before, after);
  ASSERT_EQ(diff.queues_changed.size(), 2u);
  EXPECT_EQ(diff.queues_changed[0].what, Names{"vector"});
  EXPECT_EQ(diff.queues_changed[1].what, Names{"cpus"});
}

TEST(SnapshotDiff, ANewCollectorKeyIsAChange) {
  Snapshot before = Tree("qemu-poll");
  Snapshot after = before;
  after.controllers[0].queues[1].key.ctrl += 1;  // the collectors name the queue otherwise now
  const SnapshotDiff diff = DiffSnapshots(before, after);
  ASSERT_EQ(diff.queues_changed.size(), 1u);
  EXPECT_EQ(diff.queues_changed[0].what, Names{"key"});
}

TEST(SnapshotDiff, SameNameOtherDeviceIsRemoveAndAdd) {
  Snapshot before = Tree("qemu-poll");
  Snapshot after = before;
  after.controllers[0].serial = "cafef00d";  // nvme0 was unplugged and another drive took the name
  const SnapshotDiff diff = DiffSnapshots(before, after);
  EXPECT_EQ(diff.controllers_removed, Names{"nvme0"});
  EXPECT_EQ(diff.controllers_added, Names{"nvme0"});
  EXPECT_EQ(diff.queues_removed.size(), 4u);
  EXPECT_EQ(diff.queues_added.size(), 4u);
  EXPECT_TRUE(diff.queues_changed.empty());
}

// A reset frees the vectors before it re-requests them: read then, q1 and q2 look like poll queues.
Snapshot MidReset(const Snapshot& live) {
  Snapshot caught = live;
  caught.controllers[0].state = "resetting";
  caught.controllers[0].settled = false;
  for (auto& q : caught.controllers[0].queues) {
    if (q.qid != 0) q.vector.reset();
  }
  return caught;
}

TEST(SettleSnapshot, ControllerInResetKeepsItsLastView) {
  const Snapshot live = Tree("qemu-poll");
  const Snapshot settled = SettleSnapshot(live, MidReset(live));
  ASSERT_EQ(settled.controllers.size(), 1u);
  EXPECT_EQ(settled.controllers[0], live.controllers[0]);
  EXPECT_TRUE(settled.skipped.empty());
  EXPECT_TRUE(DiffSnapshots(live, settled).empty());
}

TEST(SettleSnapshot, ControllerFirstSeenInResetWaitsUntilLive) {
  const Snapshot settled = SettleSnapshot(Snapshot{}, MidReset(Tree("qemu-poll")));
  EXPECT_TRUE(settled.controllers.empty());
  ASSERT_EQ(settled.skipped.size(), 1u);
  EXPECT_EQ(settled.skipped[0].object, "nvme0");
  EXPECT_EQ(settled.skipped[0].error.code, ErrorCode::kUnavailable);
  EXPECT_NE(settled.skipped[0].error.message.find("resetting"), std::string::npos) << settled.skipped[0].error.message;
}

TEST(SettleSnapshot, OtherDeviceUnderTheNameIsNotTheLastView) {
  const Snapshot live = Tree("qemu-poll");
  Snapshot caught = MidReset(live);
  caught.controllers[0].serial = "cafef00d";
  EXPECT_TRUE(SettleSnapshot(live, caught).controllers.empty());
}

TEST(SettleSnapshot, SettledChangesPassThrough) {
  const Snapshot live = Tree("qemu-poll");
  Snapshot after = live;
  after.controllers[0].queues.pop_back();  // the poll_queues lever's reset, over: q3 is gone
  const SnapshotDiff diff = DiffSnapshots(live, SettleSnapshot(live, after));
  EXPECT_EQ(Qids(diff.queues_removed), std::vector<uint32_t>{3});
}

}  // namespace
}  // namespace nvmeadapt::discover
