// SPDX-License-Identifier: Apache-2.0
// The closed loop with fake collector, discovery and levers: windows in, levers out, journal, policy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/engine/trace.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

TEST_F(AgentLoop, AFastWindowSwitchesTheQueueThroughItsLeverAndTheBpfControl) {
  Start();
  auto watch = agent_->api().WatchEvents({}, 64);
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  EXPECT_EQ(levers_.values["uvnvme:7:0:q1"], "poll");
  const v1::QueueInfo q1 = Queue(1);
  EXPECT_EQ(q1.mode(), v1::REAP_MODE_POLL);
  EXPECT_EQ(q1.state(), v1::QUEUE_STATE_POLLING);
  EXPECT_EQ(q1.last_decision().reason(), "window_fast");
  EXPECT_TRUE(q1.last_decision().applied());
  EXPECT_EQ(q1.mode_switches(), 1u);
  const collect::QueueControl& control = collector_.controls[UvnvmeQueue(1).key.ToString()];
  EXPECT_EQ(control.mode, ReapMode::kPoll);
  EXPECT_EQ(control.generation, 2u);
  EXPECT_EQ(control.baseline_span, 5 * kUs * kWindow);
  EXPECT_EQ(control.baseline_completions, kWindow);
  EXPECT_EQ(control.window_completions, kWindow);
  EXPECT_EQ(Queue(2).mode(), v1::REAP_MODE_INTERRUPT);
  // The decision reached the event stream after the two queue arrivals.
  bool saw_decision = false;
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    if (event->kind() == v1::EVENT_KIND_DECISION) {
      saw_decision = true;
      EXPECT_EQ(event->queue().queue(), 1u);
      EXPECT_EQ(event->decision().to(), v1::REAP_MODE_POLL);
    }
  }
  EXPECT_TRUE(saw_decision);
  const std::string exposition = metrics_.Render();
  EXPECT_NE(exposition.find("nvme_adapt_queue_switches_total{source=\"uvnvme\",controller=\"uvnvme:7:0\",queue=\"1\","
                            "reason=\"window_fast\"} 1"),
            std::string::npos)
      << exposition;
  EXPECT_NE(exposition.find("nvme_adapt_queue_mode{source=\"uvnvme\",controller=\"uvnvme:7:0\",queue=\"1\","
                            "mode=\"poll\"} 1"),
            std::string::npos);
}

TEST_F(AgentLoop, AKeptPollingWindowSendsTheBpfSideTheRunsCreditWithTheSlack) {
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  const std::string key = UvnvmeQueue(1).key.ToString();
  EXPECT_EQ(collector_.controls[key].pace_slack, 20'000) << "a try's first window: the slack alone";
  Window(1, ReapMode::kPoll, 3 * kUs, 2);  // kept, 2 us per completion ahead (under the 1 ms cap)
  EXPECT_EQ(Queue(1).last_decision().reason(), "poll_window_faster");
  EXPECT_EQ(collector_.controls[key].pace_slack, 20'000 + 2 * kUs * kWindow);
  Window(1, ReapMode::kPoll, 50 * kUs, 2);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
}

TEST_F(AgentLoop, WindowsOfAnOlderGenerationAreStale) {
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  // Still generation 1: recorded before the switch took effect. It must not fail the try.
  Window(1, ReapMode::kPoll, 1, 1);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  Window(1, ReapMode::kPoll, 50 * kUs, 2);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(1).last_decision().reason(), "not_faster");
}

TEST_F(AgentLoop, ARefusingLeverDegradesTheQueueAndTheEngineFollowsTheRealMode) {
  Start();
  auto watch = agent_->api().WatchEvents({}, 64);
  levers_.refuse = 1;
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  v1::QueueInfo q1 = Queue(1);
  EXPECT_EQ(q1.mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(q1.state(), v1::QUEUE_STATE_MEASURING);
  EXPECT_TRUE(q1.degraded());
  EXPECT_NE(q1.degraded_reason().find("0x410e"), std::string::npos);
  EXPECT_FALSE(q1.last_decision().applied());
  bool saw_lever_error = false;
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    saw_lever_error |= event->kind() == v1::EVENT_KIND_LEVER_ERROR;
  }
  EXPECT_TRUE(saw_lever_error);
  EXPECT_EQ(agent_->api().GetStatus().levers(0).errors(), 1u);
  EXPECT_NE(metrics_.Render().find("nvme_adapt_lever_errors_total{lever=\"fake\",error=\"refused\"} 1"),
            std::string::npos);
  // The next fast window tries again, and this time the lever works.
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  q1 = Queue(1);
  EXPECT_EQ(q1.mode(), v1::REAP_MODE_POLL);
  EXPECT_FALSE(q1.degraded());
}

TEST_F(AgentLoop, AForcedModeThatFailsTransientlyIsRetriedWithBackoff) {
  policies_.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  levers_.refuse = 2;
  levers_.refuse_code = ErrorCode::kUnavailable;
  Start();
  EXPECT_EQ(levers_.applies, 2);  // both queues tried at discovery
  EXPECT_TRUE(Queue(1).degraded());
  now_ += 999'000'000;
  agent_->RunOnce();
  EXPECT_EQ(levers_.applies, 2);  // not yet: first retry after 1 s
  now_ += 1'000'000;
  agent_->RunOnce();
  EXPECT_EQ(levers_.applies, 4);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  EXPECT_FALSE(Queue(1).degraded());
}

TEST_F(AgentLoop, ARefusedOverrideIsNotRetriedAndClearingItWritesNothing) {
  Start();
  levers_.refuse = 1;  // "Feature Not Changeable": permanent
  v1::SetQueueModeRequest request;
  request.mutable_queue()->set_controller("uvnvme:7:0");
  request.mutable_queue()->set_queue(1);
  request.set_mode(v1::REAP_MODE_POLL);
  auto set = agent_->api().SetQueueMode(request);
  ASSERT_TRUE(set);
  EXPECT_EQ(set->queue().mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_TRUE(set->queue().degraded());
  EXPECT_EQ(set->queue().degraded_reason(), "fake: Feature Not Changeable (0x410e)");
  now_ += 120'000'000'000;
  agent_->RunOnce();
  EXPECT_EQ(levers_.applies, 1) << "a permanent refusal was retried";
  request.set_mode(v1::REAP_MODE_UNSPECIFIED);
  ASSERT_TRUE(agent_->api().SetQueueMode(request));
  EXPECT_EQ(levers_.applies, 1) << "clearing the override touched a queue that never left interrupt mode";
  EXPECT_EQ(Queue(1).state(), v1::QUEUE_STATE_MEASURING);
}

TEST_F(AgentLoop, ShutdownPutsEveryChangedQueueBack) {
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  Window(2, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(levers_.values["uvnvme:7:0:q2"], "poll");
  ASSERT_TRUE(agent_->Shutdown());
  EXPECT_EQ(levers_.values["uvnvme:7:0:q1"], "interrupt");
  EXPECT_EQ(levers_.values["uvnvme:7:0:q2"], "interrupt");
  state::StateStore store(state_dir_);
  EXPECT_EQ(state::Journal::ReadFrom(store)->entries_size(), 0);
}

TEST_F(AgentLoop, AfterACrashTheJournalRestoresBeforeAnythingElse) {
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(levers_.values["uvnvme:7:0:q1"], "poll");
  agent_.reset();  // a crash: no Shutdown
  levers_.log.clear();
  discovery_.on_scan = [&] { levers_.log.push_back("scan"); };
  Start();
  ASSERT_GE(levers_.log.size(), 2u);
  EXPECT_EQ(levers_.log[0], "restore uvnvme:7:0:q1=interrupt");
  EXPECT_EQ(levers_.log[1], "scan");
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
}


TEST_F(AgentLoop, ADryRunLeverJournalsNothingSoAJournalHoldsRealChangesOnly) {
  levers_.dry_run = true;
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  state::StateStore store(state_dir_);
  EXPECT_EQ(state::Journal::ReadFrom(store)->entries_size(), 0);
}

TEST_F(AgentLoop, StatusListsEveryLeverServingAQueueAndSaysWhenOneIsLacking) {
  Start();
  v1::GetStatusResponse status = agent_->api().GetStatus();
  ASSERT_EQ(status.levers_size(), 1) << status.ShortDebugString();
  EXPECT_EQ(status.levers(0).name(), "fake");
  EXPECT_TRUE(status.levers(0).available());
  EXPECT_EQ(status.levers(0).errors(), 0u);
  levers_.refuse = 1;
  levers_.refuse_code = ErrorCode::kUnsupported;
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  status = agent_->api().GetStatus();
  ASSERT_EQ(status.levers_size(), 1);
  EXPECT_FALSE(status.levers(0).available()) << "a lever this machine lacks said it was available";
  EXPECT_EQ(status.levers(0).errors(), 1u);
  Window(2, ReapMode::kInterrupt, 5 * kUs, 1);  // a switch that works
  EXPECT_TRUE(agent_->api().GetStatus().levers(0).available());
}

TEST_F(AgentLoop, JournalEntriesCarryTheBoot) {
  AgentOptions options;
  options.state_dir = state_dir_;
  options.config_policies = policies_;
  options.discovery_interval = 1'000'000'000'000;
  options.restore_rules.boot_id = "this-boot";
  AgentDeps deps{&collector_, &discovery_, &levers_, [this] { return now_.load(); }, [this] { return now_.load() + 1; },
                 &metrics_};
  agent_ = std::make_unique<Agent>(options, deps);
  ASSERT_TRUE(agent_->Start());
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  auto journal = state::Journal::ReadFrom(state::StateStore(state_dir_));
  ASSERT_EQ(journal->entries_size(), 1);
  EXPECT_EQ(journal->entries(0).boot_id(), "this-boot");
}


// Issue 15, finding 3 (the RPC half) and the shutdown race: whatever holds the loop (levers no longer do:
// agent_offloop_test.cc; here the collector), an RPC is answered within its deadline instead of waiting for
// it, and once the loop exited no call runs (inline or otherwise).
TEST_F(AgentLoop, AnRpcWaitsForTheLoopAtMostItsDeadlineAndNoneRunsAfterTheLoopExits) {
  rpc_wait_ = 100'000'000;
  Start();
  std::atomic<bool> in_poll{false}, release{false};
  collector_.on_poll = [&] {
    in_poll = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  QueueWindow(1, ReapMode::kInterrupt, 5 * kUs, 1);
  std::thread loop([&] { agent_->Run(); });
  while (!in_poll) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto before = std::chrono::steady_clock::now();
  v1::GetStatusResponse status = agent_->api().GetStatus();
  auto listed = agent_->api().ListQueues(v1::ListQueuesRequest());
  const auto waited = std::chrono::steady_clock::now() - before;
  EXPECT_LT(waited, std::chrono::milliseconds(1000));
  ASSERT_EQ(status.degraded_size(), 1);
  EXPECT_NE(status.degraded(0).find("agent loop: the agent's loop did not take the call within 100 ms"),
            std::string::npos) << status.degraded(0);
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code, ErrorCode::kUnavailable);
  release = true;
  // The switch the window decided now runs on its controller's worker: its end reaches the loop soon after.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (Queue(1).mode() != v1::REAP_MODE_POLL && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL) << "the loop answers again once the collector returned";
  agent_->Stop();
  loop.join();
  auto after = agent_->api().ListQueues(v1::ListQueuesRequest());
  ASSERT_FALSE(after);
  EXPECT_NE(after.error().message.find("stopping"), std::string::npos);
  ASSERT_TRUE(agent_->Shutdown());
}


// Issue 15, finding 7: each flip of a poll_queues controller is a reset; they are spaced per controller and a
// change asked for sooner is refused with the time left.
TEST_F(AgentLoop, DisruptiveChangesOfAControllerAreSpacedAndARefusalSaysHowLongToWait) {
  levers_.disruptive = true;
  Start();
  v1::SetQueueModeRequest poll;
  poll.mutable_queue()->set_controller("uvnvme:7:0");
  poll.mutable_queue()->set_queue(1);
  poll.set_mode(v1::REAP_MODE_POLL);
  auto first = agent_->api().SetQueueMode(poll);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->queue().mode(), v1::REAP_MODE_POLL);
  now_ += 5'000'000'000;
  poll.mutable_queue()->set_queue(2);
  auto second = agent_->api().SetQueueMode(poll);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->queue().mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_NE(second->queue().degraded_reason().find("the next reset is allowed in 25000 ms"), std::string::npos)
      << second->queue().degraded_reason();
  EXPECT_EQ(levers_.applies, 1);
  now_ += 25'000'000'000;
  agent_->RunOnce();  // the forced mode is retried once allowed
  now_ += 60'000'000'000;
  agent_->RunOnce();
  EXPECT_EQ(levers_.values["uvnvme:7:0:q2"], "poll");
}

// A controller-wide lever's reset moved every queue: the next queue's switch writes nothing and resets
// nothing, so the spacing does not hold it back (the VM test's poll_queues lever switches q1 then q2).
TEST_F(AgentLoop, ASwitchThatChangesNothingIsNotHeldToTheResetSpacing) {
  levers_.disruptive = true;
  levers_.already_there.insert("uvnvme:7:0:q2");
  Start();
  v1::SetQueueModeRequest poll;
  poll.mutable_queue()->set_controller("uvnvme:7:0");
  poll.mutable_queue()->set_queue(1);
  poll.set_mode(v1::REAP_MODE_POLL);
  ASSERT_TRUE(agent_->api().SetQueueMode(poll));
  now_ += 5'000'000;
  poll.mutable_queue()->set_queue(2);
  auto second = agent_->api().SetQueueMode(poll);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->queue().mode(), v1::REAP_MODE_POLL) << second->queue().degraded_reason();
  EXPECT_FALSE(second->queue().degraded());
}

// The nvmet subsystem exporting a controller is removed: its queues go from backing to local, kept.
TEST_F(AgentLoop, AQueueWhoseLayerMovesIsKeptWithItsListAndMetricsFollowing) {
  for (auto& q : discovery_.queues) q.layer = "backing";
  Start();
  EXPECT_EQ(Queue(1).layer(), "backing");
  auto watch = agent_->api().WatchEvents({}, 64);
  for (auto& q : discovery_.queues) q.layer = "local";
  now_ += 1'000'000'000'000;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).layer(), "local");
  EXPECT_EQ(Queue(2).layer(), "local");
  const std::string exposition = metrics_.Render();
  int local_info = 0;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("nvme_adapt_queue_info{", 0) == 0 && line.find("layer=\"local\"") != std::string::npos) ++local_info;
  }
  EXPECT_EQ(local_info, 2) << exposition;
  EXPECT_EQ(exposition.find("layer=\"backing\""), std::string::npos) << exposition;
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    EXPECT_NE(event->kind(), v1::EVENT_KIND_QUEUE_REMOVED) << "a queue whose layer moved is the same queue";
  }
}

TEST_F(AgentLoop, AVanishedQueueIsDroppedCleanly) {
  Start();
  auto watch = agent_->api().WatchEvents({}, 64);
  discovery_.queues.pop_back();
  now_ += 1'000'000'000'000;
  agent_->RunOnce();
  v1::ListQueuesRequest list;
  EXPECT_EQ(agent_->api().ListQueues(list)->queues_size(), 1);
  EXPECT_EQ(collector_.forgotten, std::vector<std::string>{UvnvmeQueue(2).key.ToString()});
  EXPECT_EQ(metrics_.Render().find("queue=\"2\""), std::string::npos) << "series of a vanished queue remain";
  bool removed = false;
  while (auto event = watch->Next(std::chrono::milliseconds(1))) {
    removed |= event->kind() == v1::EVENT_KIND_QUEUE_REMOVED && event->queue().queue() == 2;
  }
  EXPECT_TRUE(removed);
  // A window for it afterwards is ignored, not a crash.
  collect::WindowEvent late;
  late.key = UvnvmeQueue(2).key;
  late.completions = kWindow;
  collector_.pending.push_back(late);
  agent_->RunOnce();
}

TEST_F(AgentLoop, AnObserveOnlyCollectorManagesNothing) {
  collector_.observe_only = true;
  Start();
  EXPECT_FALSE(Queue(1).eligible());
  EXPECT_NE(Queue(1).ineligible_reason().find("observe-only"), std::string::npos);
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  EXPECT_EQ(levers_.applies, 0);
  EXPECT_TRUE(agent_->api().GetStatus().observe_only());
}

TEST_F(AgentLoop, TheRecordedTraceReplaysToTheSameDecisions) {
  policies_.mutable_policy()->set_settle_windows(0);  // each failure's next window measures: three in a row
  Start();
  for (int i = 0; i < 3; ++i) {
    Window(1, ReapMode::kInterrupt, 5 * kUs, 2 * i + 1);
    Window(1, ReapMode::kPoll, 6 * kUs, 2 * i + 2);
  }
  Window(2, ReapMode::kInterrupt, 20 * kUs, 1);
  agent_.reset();
  std::ifstream trace(state_dir_ + ".trace"), decisions(state_dir_ + ".trace.decisions");
  std::stringstream trace_text, decision_text;
  trace_text << trace.rdbuf();
  decision_text << decisions.rdbuf();
  auto replayed = engine::ReplayTrace(trace_text.str());
  ASSERT_TRUE(replayed) << replayed.error().message;
  std::string joined;
  for (const auto& line : *replayed) joined += line + "\n";
  EXPECT_EQ(joined, decision_text.str());
  EXPECT_NE(joined.find("backoff"), std::string::npos);  // three failures: the backoff started
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
