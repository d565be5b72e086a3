// SPDX-License-Identifier: Apache-2.0
// Issue 15, finding 3: levers run off the loop thread. A driver that stops answering its control socket (a
// fake lever waiting on a latch) holds only its own controller: status answers at once, other controllers
// decide and switch, the hung switch ends as a timed-out lever error with its restore point journaled,
// no second switch of that controller queues behind it, and once the lever returns the agent follows it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

using Clock = std::chrono::steady_clock;

class AgentOffLoop : public AgentLoop {
 protected:
  const DiscoveredQueue hung_q1_ = UvnvmeQueue(1);
  const DiscoveredQueue hung_q2_ = UvnvmeQueue(2);
  const DiscoveredQueue other_q1_ = UvnvmeQueue(1, "uvnvme:7:1");

  void SetUp() override {
    AgentLoop::SetUp();
    discovery_.queues = {hung_q1_, hung_q2_, other_q1_};
    levers_.hang_controller = "uvnvme:7:0";
    lever_timeout_ = 1'000'000'000;  // on the fake clock: the test says when it has passed
  }

  void TearDown() override {
    levers_.hang.Open();  // a failed assertion must not leave a worker waiting forever
    if (loop_.joinable()) {
      agent_->Stop();
      loop_.join();
    }
  }

  void RunLoop() {
    loop_ = std::thread([this] { agent_->Run(); });
  }

  // A fast interrupt-mode window of `queue` under `generation`: the engine decides to poll.
  void FastWindow(const DiscoveredQueue& queue, uint32_t generation) {
    collect::WindowEvent event;
    event.key = queue.key;
    event.mode = ReapMode::kInterrupt;
    event.completions = kWindow;
    event.start = now_.load();
    event.end = now_.load() + 5 * kUs * kWindow;
    event.generation = generation;
    collector_.Push(event, event.end);
  }

  // Waits (at most 5 s of real time) until `done`; fails with `what` otherwise.
  void WaitUntil(const std::function<bool()>& done, const std::string& what) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (Clock::now() > deadline) {
        ADD_FAILURE() << "not within 5 s: " << what;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  v1::QueueInfo Of(const DiscoveredQueue& queue) {
    v1::ListQueuesRequest request;
    request.set_controller(queue.controller);
    auto list = agent_->api().ListQueues(request);
    if (list) {
      for (const auto& q : list->queues()) {
        if (q.id().queue() == queue.qid) return q;
      }
    }
    return {};
  }

  bool StatusSays(const std::string& text) {
    const v1::GetStatusResponse status = agent_->api().GetStatus();
    for (const std::string& line : status.degraded()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  std::thread loop_;
};

TEST_F(AgentOffLoop, AHungLeverHoldsOnlyItsControllerAndEndsAsATimedOutLeverError) {
  // The other controller's switch keeps the protocol's order on the workers too: journaled, then the pending
  // switch published, then the lever.
  std::atomic<bool> journaled_and_published_before_lever{false};
  levers_.on_apply = [&](const LeverPlan& plan) {
    if (plan.target != "uvnvme:7:1:q1") return;
    auto control = collector_.ControlOf(other_q1_.key);
    auto journal = state::Journal::ReadFrom(state::StateStore(state_dir_));
    bool journaled = false;
    if (journal) {
      for (const auto& entry : journal->entries()) journaled |= entry.target() == plan.target;
    }
    journaled_and_published_before_lever = journaled && control && control->mode_since == 0 && control->generation == 2;
  };
  Start();
  auto watch = agent_->api().WatchEvents({}, 256);
  RunLoop();

  FastWindow(hung_q1_, 1);
  WaitUntil([&] { return levers_.Hung() == 1; }, "the lever of uvnvme:7:0 is called");

  // Status answers at once while the lever hangs, and names the switch in flight.
  now_ += 200'000'000;
  std::vector<double> latencies_ms;
  for (int i = 0; i < 20; ++i) {
    const auto before = Clock::now();
    const v1::GetStatusResponse status = agent_->api().GetStatus();
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - before).count());
    for (const std::string& line : status.degraded()) EXPECT_EQ(line.find("agent loop"), std::string::npos) << line;
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::printf("GetStatus while a lever hangs: median %.2f ms, max %.2f ms (20 calls)\n", latencies_ms[10],
              latencies_ms.back());
  EXPECT_LT(latencies_ms.back(), 1000.0) << "GetStatus waited for the hung lever";
  EXPECT_TRUE(StatusSays("queue uvnvme:7:0:q1: switch to poll in flight for 200 ms (lever fake, in the lever)"));

  // Another controller decides and switches meanwhile.
  FastWindow(other_q1_, 1);
  WaitUntil([&] { return Of(other_q1_).mode() == v1::REAP_MODE_POLL; }, "uvnvme:7:1:q1 switched to poll");
  EXPECT_EQ(levers_.Value("uvnvme:7:1:q1"), "poll");
  EXPECT_TRUE(journaled_and_published_before_lever) << "journal, pending publish, lever: in that order";

  // The hung controller's other queue decides too: its switch waits behind the hung one.
  FastWindow(hung_q2_, 1);
  WaitUntil([&] { return Of(hung_q2_).last_decision().reason() == "window_fast"; }, "uvnvme:7:0:q2 decided");
  now_ += 200'000'000;
  EXPECT_TRUE(StatusSays("queue uvnvme:7:0:q2: switch to poll in flight for 200 ms (lever fake, queued behind "
                         "another switch of uvnvme:7:0)"));

  // The other controller keeps deciding: 200 ms without a completion fail its try on the timer.
  WaitUntil([&] { return Of(other_q1_).mode() == v1::REAP_MODE_INTERRUPT; }, "uvnvme:7:1:q1 stalled and went back");
  EXPECT_EQ(Of(other_q1_).last_decision().reason(), "stalled");
  EXPECT_TRUE(Of(other_q1_).last_decision().applied());

  // Past the timeout: the hung switch ends as a lever error, and the one queued behind it with it.
  now_ += lever_timeout_;
  WaitUntil([&] { return Of(hung_q1_).degraded(); }, "uvnvme:7:0:q1 timed out");
  const v1::QueueInfo q1 = Of(hung_q1_);
  EXPECT_EQ(q1.mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(q1.state(), v1::QUEUE_STATE_MEASURING) << "the engine follows the real mode";
  EXPECT_EQ(q1.degraded_reason(), "fake: timed out: the lever did not return within 1000 ms; no other switch of "
                                  "uvnvme:7:0 is made until it does");
  EXPECT_FALSE(q1.last_decision().applied());
  EXPECT_EQ(q1.last_decision().lever_error(), q1.degraded_reason());
  WaitUntil([&] { return Of(hung_q2_).degraded(); }, "uvnvme:7:0:q2 given up");
  EXPECT_NE(Of(hung_q2_).degraded_reason().find("not changed: queued behind a switch of uvnvme:7:0"), std::string::npos)
      << Of(hung_q2_).degraded_reason();
  EXPECT_EQ(Of(hung_q2_).mode(), v1::REAP_MODE_INTERRUPT);
  bool told = false;
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    told |= event->kind() == v1::EVENT_KIND_LEVER_ERROR && event->message().find("timed out") != std::string::npos;
  }
  EXPECT_TRUE(told) << "no LEVER_ERROR event for the timeout";

  // A new switch of that controller is refused at once: nothing queues behind a hung lever.
  v1::SetQueueModeRequest poll_q2;
  poll_q2.mutable_queue()->set_controller(hung_q2_.controller);
  poll_q2.mutable_queue()->set_queue(hung_q2_.qid);
  poll_q2.set_mode(v1::REAP_MODE_POLL);
  const auto before = Clock::now();
  auto refused = agent_->api().SetQueueMode(poll_q2);
  EXPECT_LT(Clock::now() - before, std::chrono::milliseconds(1000));
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_EQ(refused->queue().mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_NE(refused->queue().degraded_reason().find("still in its lever past the timeout of 1000 ms"),
            std::string::npos)
      << refused->queue().degraded_reason();
  EXPECT_EQ(levers_.Hung(), 1) << "a second switch of the hung controller reached its lever";

  // The journal holds the hung switch's restore point: whatever the lever does when it returns, a restore
  // puts the queue back.
  auto journal = state::Journal::ReadFrom(state::StateStore(state_dir_));
  ASSERT_TRUE(journal);
  int hung_entries = 0;
  for (const auto& entry : journal->entries()) {
    if (entry.target() == "uvnvme:7:0:q1") {
      ++hung_entries;
      EXPECT_EQ(entry.safe_value(), "interrupt");
    }
  }
  EXPECT_EQ(hung_entries, 1);

  // The lever returns after all, having switched: the agent follows the device (polling, held to the try's
  // baseline, which the timer then fails); the override of q2 is retried once its backoff is over.
  levers_.hang.Open();
  WaitUntil([&] { return Of(hung_q1_).mode() == v1::REAP_MODE_POLL; }, "the late switch of uvnvme:7:0:q1 followed");
  bool late_told = false;
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    late_told |= event->kind() == v1::EVENT_KIND_LEVER_ERROR &&
                 event->message().find("returned after its timeout") != std::string::npos;
  }
  EXPECT_TRUE(late_told) << "no event for the lever's late return";
  now_ += 2'000'000'000;
  WaitUntil([&] { return Of(hung_q2_).mode() == v1::REAP_MODE_POLL; }, "uvnvme:7:0:q2 switched once the lever returned");
  EXPECT_FALSE(Of(hung_q2_).degraded());
  WaitUntil([&] { return Of(hung_q1_).mode() == v1::REAP_MODE_INTERRUPT; }, "uvnvme:7:0:q1's try failed on the timer");
  EXPECT_EQ(levers_.Value("uvnvme:7:0:q1"), "interrupt");

  agent_->Stop();
  loop_.join();
  ASSERT_TRUE(agent_->Shutdown());
  for (const char* target : {"uvnvme:7:0:q1", "uvnvme:7:0:q2", "uvnvme:7:1:q1"}) {
    EXPECT_EQ(levers_.Value(target), "interrupt") << target;
  }
  EXPECT_EQ(state::Journal::ReadFrom(state::StateStore(state_dir_))->entries_size(), 0);
}

// A scan that hangs (a driver's socket, a sysfs read) holds no decision: the loop goes on deciding and
// answering while discovery waits, and takes the snapshot when it comes.
TEST_F(AgentOffLoop, AHungScanHoldsNoDecision) {
  levers_.hang_controller.clear();
  Start();
  Latch scan;
  std::atomic<bool> scanning{false};
  discovery_.on_scan = [&] {
    scanning = true;
    scan.Wait();
  };
  discovery_.queues.push_back(UvnvmeQueue(3));
  RunLoop();
  now_ += 1'000'000'000'000;  // discovery due
  WaitUntil([&] { return scanning.load(); }, "the scan started");
  FastWindow(hung_q1_, 1);
  WaitUntil([&] { return Of(hung_q1_).mode() == v1::REAP_MODE_POLL; }, "uvnvme:7:0:q1 switched while the scan hangs");
  EXPECT_EQ(agent_->api().GetStatus().queues(), 3u);
  scan.Open();
  WaitUntil([&] { return agent_->api().GetStatus().queues() == 4u; }, "the scan's new queue is taken");
  discovery_.on_scan = nullptr;
}

// Work handed to the loop from another thread wakes its wait: the collector no longer needs short waits
// while a switch is in flight (the loop woke every 1 ms for it before).
TEST_F(AgentOffLoop, WorkHandedToTheLoopWakesItsWait) {
  levers_.hang_controller.clear();
  Start();
  std::atomic<bool> polling{false};
  collector_.on_poll = [&] { polling = true; };
  RunLoop();
  WaitUntil([&] { return polling.load(); }, "the loop runs");  // before it, a call runs inline
  auto wakes = [&] {
    std::lock_guard lock(collector_.mutex);
    return collector_.wakes;
  };
  const int at_start = wakes();
  (void)agent_->api().GetStatus();  // an RPC: posted to the loop
  EXPECT_GT(wakes(), at_start) << "an RPC posted to the loop did not wake it";
  const int before_switch = wakes();
  FastWindow(hung_q1_, 1);
  WaitUntil([&] { return Of(hung_q1_).mode() == v1::REAP_MODE_POLL; }, "uvnvme:7:0:q1 switched");
  // The lever's worker hands its steps back (published, applied): each wakes the loop. Of() is an RPC too,
  // so count at least the switch's own two beyond the RPCs made.
  EXPECT_GE(wakes() - before_switch, 2) << "the switch's steps did not wake the loop";
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
