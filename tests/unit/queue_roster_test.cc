// SPDX-License-Identifier: Apache-2.0
// The queue roster's seam (issue 19): what a scan makes the agent take, drop and take anew.
#include "agent/daemon/queue_roster.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

class Roster : public ::testing::Test {
 protected:
  // Takes like the agent: under `cap`, and describing the queue its own way (as for an observe-only collector).
  QueueRoster::Hands Hands() {
    return {[this](const DiscoveredQueue& found, engine::Nanos) {
              calls.push_back("take " + QueueName(found.controller, found.qid));
              if (queues.size() >= cap) return;
              ManagedQueue q;
              q.desc = found;
              q.name = QueueName(found.controller, found.qid);
              q.handle = next_handle++;
              if (redescribe) {
                q.desc.eligible = false;
                q.desc.ineligible_reason = "observe-only collector (procfs)";
              }
              queues.Insert(std::move(q));
            },
            [this](ManagedQueue& q, const char* why) {
              calls.push_back("drop " + q.name + " " + why);
              queues.Erase(q.name);
            },
            [this](ManagedQueue& q, const std::string& was) {
              calls.push_back("relayer " + q.name + " " + was + "->" + q.desc.layer);
            }};
  }

  std::vector<std::string> Reconcile(const std::vector<DiscoveredQueue>& scan) {
    calls.clear();
    controllers = roster.Reconcile(scan, 0);
    return calls;
  }

  ManagedQueues queues;
  FakeCollector collector;
  size_t cap = 100;
  bool redescribe = false;
  engine::QueueHandle next_handle = 1;
  std::vector<std::string> calls;
  std::set<std::string> controllers;
  QueueRoster roster{queues, collector, Hands()};
};

using Calls = std::vector<std::string>;

TEST_F(Roster, TheFirstScanTakesEveryQueueInItsOrderAndAttachesEachProcessOnce) {
  EXPECT_EQ(Reconcile({UvnvmeQueue(2), UvnvmeQueue(1), UvnvmeQueue(1, "uvnvme:7:1")}),
            (Calls{"take uvnvme:7:0:q2", "take uvnvme:7:0:q1", "take uvnvme:7:1:q1"}));
  EXPECT_EQ(collector.attached, std::vector<pid_t>{7});
  EXPECT_EQ(controllers, (std::set<std::string>{"uvnvme:7:0", "uvnvme:7:1"}));
  EXPECT_EQ(Reconcile({UvnvmeQueue(2), UvnvmeQueue(1), UvnvmeQueue(1, "uvnvme:7:1")}), Calls{});
  EXPECT_EQ(collector.attached, std::vector<pid_t>{7});
}

// Issue #37: a scan naming one queue 1,700 times took it 1,700 times at every scan.
TEST_F(Roster, AQueueListedManyTimesIsTakenOnce) {
  std::vector<DiscoveredQueue> scan(1700, UvnvmeQueue(1));
  scan.push_back(UvnvmeQueue(2));
  EXPECT_EQ(Reconcile(scan), (Calls{"take uvnvme:7:0:q1", "take uvnvme:7:0:q2"}));
  EXPECT_EQ(Reconcile(scan), Calls{});
  EXPECT_EQ(queues.size(), 2u);
}

// Issue #37: reading a driver's binary may never end (a FIFO, a FUSE file). Once the loop runs, attaches go
// to their own thread: the scan that starts one returns at once, and the next ones say it is late.
class HangingAttach : public FakeCollector {
 public:
  Status AttachProcess(pid_t pid, const std::string& binary) override {
    released.wait();
    return FakeCollector::AttachProcess(pid, binary);
  }
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
};

TEST(RosterAttach, AnAttachThatNeverEndsHoldsNeitherTheScanNorTheRoster) {
  ManagedQueues queues;
  HangingAttach collector;
  QueueRoster roster(queues, collector,
                     QueueRoster::Hands{[&](const DiscoveredQueue& found, engine::Nanos) {
                                          ManagedQueue q;
                                          q.desc = found;
                                          q.name = QueueName(found.controller, found.qid);
                                          queues.Insert(std::move(q));
                                        },
                                        [&](ManagedQueue& q, const char*) { queues.Erase(q.name); }, nullptr});
  roster.StartAttaching();
  const auto start = std::chrono::steady_clock::now();
  roster.Reconcile({UvnvmeQueue(1)}, 0);
  roster.Reconcile({UvnvmeQueue(1)}, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500)) << "a scan waited";
  EXPECT_EQ(queues.size(), 1u) << "the queue is taken while its process is not attached yet";
  collector.release.set_value();
}

TEST_F(Roster, ANewVectorKeyOrEligibilityRetakesTheQueueWhileNewCpusOrModeDoNot) {
  Reconcile({UvnvmeQueue(1), UvnvmeQueue(2), UvnvmeQueue(3), UvnvmeQueue(4), UvnvmeQueue(5)});
  std::vector<DiscoveredQueue> scan = {UvnvmeQueue(1), UvnvmeQueue(2), UvnvmeQueue(3), UvnvmeQueue(4),
                                       UvnvmeQueue(5)};
  scan[0].irq = 41;                       // a reset moved it to another vector
  scan[1].key.ctrl = 9;                   // the collectors name it otherwise
  scan[2].ineligible_reason = "threaded";  // now ineligible
  scan[2].eligible = false;
  scan[3].cpus = {0, 1};                  // a CPU went offline
  scan[4].mode = ReapMode::kPoll;  // the agent's own switch
  EXPECT_EQ(Reconcile(scan), (Calls{"drop uvnvme:7:0:q1 changed", "take uvnvme:7:0:q1", "drop uvnvme:7:0:q2 changed",
                                    "take uvnvme:7:0:q2", "drop uvnvme:7:0:q3 changed", "take uvnvme:7:0:q3"}));
  EXPECT_EQ(queues.ByName("uvnvme:7:0:q1")->desc.irq, 41);
  EXPECT_EQ(Reconcile(scan), Calls{});
}

// An nvmet subsystem that stops exporting a controller's namespace makes it local: the same queues, kept
// with their windows, their description and metrics following.
TEST_F(Roster, ALayerThatMovesIsFollowedAndTheQueueKept) {
  std::vector<DiscoveredQueue> scan = {UvnvmeQueue(1), UvnvmeQueue(2)};
  for (auto& q : scan) q.layer = "backing";
  Reconcile(scan);
  const engine::QueueHandle handle = queues.ByName("uvnvme:7:0:q1")->handle;
  for (auto& q : scan) q.layer = "local";
  EXPECT_EQ(Reconcile(scan), (Calls{"relayer uvnvme:7:0:q1 backing->local", "relayer uvnvme:7:0:q2 backing->local"}));
  EXPECT_EQ(queues.ByName("uvnvme:7:0:q1")->desc.layer, "local");
  EXPECT_EQ(queues.ByName("uvnvme:7:0:q1")->handle, handle) << "the same queue, not taken anew";
  EXPECT_EQ(Reconcile(scan), Calls{});
}

TEST_F(Roster, VanishedQueuesAreDroppedAfterTheScansTakesAndTheirProcessDetached) {
  Reconcile({UvnvmeQueue(1), UvnvmeQueue(2)});
  DiscoveredQueue other = UvnvmeQueue(1, "uvnvme:8:0");
  other.pid = 8;
  EXPECT_EQ(Reconcile({other}),
            (Calls{"take uvnvme:8:0:q1", "drop uvnvme:7:0:q1 vanished", "drop uvnvme:7:0:q2 vanished"}));
  EXPECT_EQ(collector.attached, (std::vector<pid_t>{7, 8}));
  EXPECT_EQ(collector.detached, std::vector<pid_t>{7});
  EXPECT_EQ(controllers, std::set<std::string>{"uvnvme:8:0"});
}

TEST_F(Roster, TheAgentsOwnDescriptionOfAQueueIsNotAChangeOfIt) {
  redescribe = true;  // an observe-only collector: the agent marks every queue ineligible
  Reconcile({UvnvmeQueue(1)});
  EXPECT_EQ(Reconcile({UvnvmeQueue(1)}), Calls{}) << "retaken at every scan";
}

TEST_F(Roster, AQueueTheAgentDidNotTakeIsOfferedAgainAtTheNextScan) {
  cap = 1;
  EXPECT_EQ(Reconcile({UvnvmeQueue(1), UvnvmeQueue(2)}), (Calls{"take uvnvme:7:0:q1", "take uvnvme:7:0:q2"}));
  EXPECT_EQ(Reconcile({UvnvmeQueue(1), UvnvmeQueue(2)}), Calls{"take uvnvme:7:0:q2"});
}

using AgentRoster = AgentLoop;

// With the procfs collector every queue is ineligible to the agent though discovery finds it eligible: a
// rescan keeps it (it once dropped and re-added every such queue at every scan, events and series too).
TEST_F(AgentRoster, AnObserveOnlyAgentKeepsItsQueuesAcrossScans) {
  collector_.observe_only = true;
  Start();
  auto watch = agent_->api().WatchEvents({}, 64);
  now_ += 1'000'000'000'000;
  agent_->RunOnce();
  EXPECT_GE(discovery_.scans, 2);
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    EXPECT_NE(event->kind(), v1::EVENT_KIND_QUEUE_REMOVED) << event->message();
  }
  EXPECT_TRUE(collector_.forgotten.empty());
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
