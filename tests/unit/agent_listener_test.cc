// SPDX-License-Identifier: Apache-2.0
// The agent's one listener list (issue 19): metrics, the event stream, the trace and the decision log hear of
// the loop through it, and so does any listener added before the start.
#include "agent/daemon/agent_listener.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

// Counts what it hears, by kind and queue name; with a shared log, it writes there too, under its label.
class Recorder final : public AgentListener {
 public:
  Recorder() = default;
  Recorder(std::string label, std::vector<std::string>* shared) : label_(std::move(label)), shared_(shared) {}

  void QueueAdded(const ManagedQueue& q, const engine::QueueSetup&) override { Heard("added", q); }
  void QueueRemoved(const ManagedQueue& q, std::string_view why) override { Heard("removed " + std::string(why), q); }
  void Window(const ManagedQueue& q, const engine::WindowRecord&) override { Heard("window", q); }
  void Timer(const ManagedQueue& q, engine::Nanos, const engine::WindowProgress&) override { Heard("timer", q); }
  void PolicyChanged(const ManagedQueue& q, engine::Nanos, const engine::Policy&) override { Heard("policy", q); }
  void OverrideSet(const ManagedQueue& q, engine::Nanos, const std::optional<engine::Override>&,
                   const std::string&) override {
    Heard("override", q);
  }
  void PolicySet(const std::string& message) override {
    ++heard["policy set: " + message];
    if (shared_) shared_->push_back(label_ + ": policy set");
  }
  void Decided(const ManagedQueue& q, const engine::Decision&) override { Heard("decided", q); }
  void DecisionDone(const ManagedQueue& q, const engine::Decision&, const v1::Decision&, bool) override {
    Heard("done", q);
  }
  void SwitchApplied(const ManagedQueue& q, engine::Reason, const SwitchTimeline&) override { Heard("applied", q); }
  void SwitchClosed(const ManagedQueue& q, const SwitchTimeline&) override { Heard("closed", q); }
  void LeverFailed(const ManagedQueue& q, const Error&, const std::string&) override { Heard("lever failed", q); }
  void QueueTrouble(const ManagedQueue& q, const std::string&) override { Heard("trouble", q); }
  void LeverFollowed(const ManagedQueue& q, engine::Nanos, ReapMode, const engine::Decision&) override {
    Heard("followed", q);
  }
  void Counters(const ManagedQueue& q) override { Heard("counters", q); }
  void CollectorStats(const collect::Collector& collector) override { ++heard["collector " + collector.Name()]; }

  int Of(const std::string& kind, uint32_t qid = 1) { return heard[kind + " uvnvme:7:0:q" + std::to_string(qid)]; }
  std::map<std::string, int> heard;
  std::vector<std::string> order;

 private:
  void Heard(const std::string& kind, const ManagedQueue& q) {
    ++heard[kind + " " + q.name];
    order.push_back(kind + " " + q.name);
    if (shared_) shared_->push_back(label_ + ": " + kind);
  }

  std::string label_;
  std::vector<std::string>* shared_ = nullptr;
};

class AgentListening : public AgentLoop {
 protected:
  void StartHeard() {
    agent_ = MakeAgent();
    agent_->AddListener(recorder_);
    Status started = agent_->Start();
    ASSERT_TRUE(started) << started.error().message;
  }
  Recorder recorder_;
};

TEST_F(AgentListening, AListenerHearsQueuesWindowsDecisionsAndSwitches) {
  StartHeard();
  EXPECT_EQ(recorder_.Of("added", 1), 1);
  EXPECT_EQ(recorder_.Of("added", 2), 1);
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);  // fast: switches to polling
  EXPECT_EQ(recorder_.Of("window"), 1);
  EXPECT_EQ(recorder_.Of("decided"), 1);
  EXPECT_EQ(recorder_.Of("applied"), 1);
  EXPECT_EQ(recorder_.Of("done"), 1);
  EXPECT_EQ(recorder_.Of("closed"), 0) << "the switch's timeline closes with the first verdict on the new mode";
  Window(1, ReapMode::kPoll, 5 * kUs, 2);
  EXPECT_EQ(recorder_.Of("closed"), 1);
  // The decision is heard before its switch, the switch before the decision is done.
  std::vector<std::string> first;
  for (const std::string& kind : recorder_.order) {
    if (kind.ends_with(":q1") && !kind.starts_with("added") && !kind.starts_with("counters")) first.push_back(kind);
  }
  ASSERT_GE(first.size(), 4u);
  EXPECT_EQ((std::vector<std::string>(first.begin(), first.begin() + 4)),
            (std::vector<std::string>{"window uvnvme:7:0:q1", "decided uvnvme:7:0:q1", "applied uvnvme:7:0:q1",
                                      "done uvnvme:7:0:q1"}));
}

TEST_F(AgentListening, AListenerHearsPolicyOverridesAndTheQueuesDeparture) {
  StartHeard();
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_poll_threshold_ns(30'000);
  ASSERT_TRUE(agent_->api().SetPolicy(request));
  EXPECT_EQ(recorder_.Of("policy", 1), 1);
  EXPECT_EQ(recorder_.Of("policy", 2), 1);
  EXPECT_EQ(recorder_.heard["policy set: policy global: poll_threshold_ns: 30000"], 1);
  v1::SetQueueModeRequest mode;
  mode.mutable_queue()->set_controller("uvnvme:7:0");
  mode.mutable_queue()->set_queue(2);
  mode.set_mode(v1::REAP_MODE_POLL);
  ASSERT_TRUE(agent_->api().SetQueueMode(mode));
  EXPECT_EQ(recorder_.Of("override", 2), 1);
  EXPECT_EQ(recorder_.Of("applied", 2), 1);
  now_ += 1'000'000'000'000;  // discovery and the counters are due
  discovery_.queues.pop_back();
  agent_->RunOnce();
  EXPECT_EQ(recorder_.Of("removed vanished", 2), 1);
  EXPECT_EQ(recorder_.Of("counters", 1), 1);
  EXPECT_EQ(recorder_.heard["collector fake"], 1);
}

TEST_F(AgentListening, AListenerHearsLeverFailuresAndRefusedControls) {
  StartHeard();
  levers_.refuse = 1;
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  EXPECT_EQ(recorder_.Of("lever failed"), 1);
  EXPECT_EQ(recorder_.Of("applied"), 0);
  collector_.refuse_control = true;
  Window(1, ReapMode::kInterrupt, 50 * kUs, 1);  // slow: a new baseline goes to the BPF side, refused
  EXPECT_GE(recorder_.Of("trouble"), 1);
}

TEST_F(AgentListening, AListenerHearsTheTimerAndTheEngineFollowingALever) {
  policies_.mutable_policy()->set_timer_granularity_ns(10 * kUs);
  StartHeard();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
  // Completions stop: the timer fails the try; the lever refuses the way back and the engine follows it.
  collector_.counters[UvnvmeQueue(1).key.ToString()].progress = {now_ - 100 * kUs, 3};
  levers_.refuse = 1;
  now_ += 35 * kUs;
  agent_->RunOnce();
  EXPECT_EQ(recorder_.Of("timer"), 1);
  EXPECT_EQ(recorder_.Of("lever failed"), 1);
  EXPECT_EQ(recorder_.Of("followed"), 1);
}

// The fan-out itself: every listener, in the order added.
TEST(AgentListenersFanOut, TellsEveryListenerInTheOrderAdded) {
  std::vector<std::string> heard;  // what both heard, in the order they heard it
  Recorder first("first", &heard), second("second", &heard);
  AgentListeners listeners;
  listeners.Add(first);
  listeners.Add(second);
  ManagedQueue q;
  q.name = "uvnvme:7:0:q1";
  listeners.Tell(&AgentListener::QueueAdded, q, engine::QueueSetup{});
  listeners.Tell(&AgentListener::SwitchClosed, q, SwitchTimeline{});
  listeners.Tell(&AgentListener::PolicySet, std::string("policy global: mode: POLL"));
  for (Recorder* r : {&first, &second}) {
    EXPECT_EQ(r->order, (std::vector<std::string>{"added uvnvme:7:0:q1", "closed uvnvme:7:0:q1"}));
    EXPECT_EQ(r->heard["policy set: policy global: mode: POLL"], 1);
  }
  EXPECT_EQ(heard, (std::vector<std::string>{"first: added", "second: added", "first: closed", "second: closed",
                                             "first: policy set", "second: policy set"}))
      << "each call reaches the listeners in the order they were added";
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
