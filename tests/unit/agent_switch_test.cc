// SPDX-License-Identifier: Apache-2.0
// The switch protocol of the closed loop: the pending switch is published before the lever acts, the try's
// clock starts at the driver's instant (or the lever's return), every switch leaves a timeline in the
// trace, the event stream and the latency histogram; and the failure paths: a queue left polling by a
// refusing lever is retried, a control the collector refuses degrades the queue visibly.
#include <fstream>
#include <sstream>

#include "agent/engine/trace.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

constexpr engine::Nanos kDriverLag = 300 * kUs;   // lever request to the driver's switch
constexpr engine::Nanos kRoundTrip = 2'000 * kUs;  // lever request to its acknowledgement

class AgentSwitch : public AgentLoop {
 protected:
  const std::string q1_ = UvnvmeQueue(1).key.ToString();

  // The lever as uvnvme's socket behaves: the reaper switches (its mode probe restarts the BPF window of
  // the pending generation at that instant), then the acknowledgement comes back.
  void DriverTellsWhenItSwitched() {
    levers_.on_apply = [this](const LeverPlan&) {
      const collect::QueueControl& pending = collector_.controls[q1_];
      published_before_lever_ = pending.mode_since == 0;
      now_ += kDriverLag;
      driver_switched_at_ = now_;
      collect::QueueCounters& counters = collector_.counters[q1_];
      counters.generation = pending.generation;
      counters.progress = {now_, 0};
      now_ += kRoundTrip - kDriverLag;
    };
  }

  std::string Trace() {
    std::ifstream in(state_dir_ + ".trace");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  bool published_before_lever_ = false;
  engine::Nanos driver_switched_at_ = 0;
};

TEST_F(AgentSwitch, TheTryStartsAtTheDriversSwitchNotAtTheLeversAcknowledgement) {
  DriverTellsWhenItSwitched();
  Start();
  auto watch = agent_->api().WatchEvents({}, 64);
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  EXPECT_TRUE(published_before_lever_) << "the pending switch reaches the BPF side before the lever acts";
  const collect::QueueControl& control = collector_.controls[q1_];
  EXPECT_EQ(control.generation, 2u);
  EXPECT_EQ(control.mode, ReapMode::kPoll);
  EXPECT_EQ(control.mode_since, 0) << "the driver's probe started the window: nothing to add";
  // The first polling window starts at the driver's switch; it is on pace from there and is kept.
  collect::WindowEvent event;
  event.key = UvnvmeQueue(1).key;
  event.mode = ReapMode::kPoll;
  event.completions = kWindow;
  event.start = driver_switched_at_;
  event.first = driver_switched_at_ + 4 * kUs;
  event.end = driver_switched_at_ + 4 * kUs * kWindow;
  event.generation = 2;
  now_ = event.end;
  collector_.pending.push_back(event);
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).last_decision().reason(), "poll_window_faster");
  std::optional<v1::Event> timeline;
  while (auto e = watch->Next(std::chrono::milliseconds(1))) {
    if (e->kind() == v1::EVENT_KIND_SWITCH) timeline = *e;
  }
  ASSERT_TRUE(timeline) << "no switch timeline on the event stream";
  const v1::SwitchTimeline& t = timeline->switch_timeline();
  EXPECT_EQ(t.generation(), 2u);
  EXPECT_EQ(t.to(), v1::REAP_MODE_POLL);
  EXPECT_EQ(t.effect_source(), "driver");
  EXPECT_EQ(t.effect_ns(), kDriverLag);
  EXPECT_EQ(t.acknowledged_ns(), kRoundTrip);
  EXPECT_GE(t.requested_ns(), t.published_ns());
  EXPECT_EQ(t.first_completion_ns(), kDriverLag + 4 * kUs);
  EXPECT_EQ(t.verdict(), "poll_window_faster");
  EXPECT_EQ(t.evidence_ns(), 0) << "the window's end and the decision share the fake clock";
  EXPECT_NE(Trace().find("switch uvnvme:7:0:q1 2 interrupt->poll reason=window_fast lever=fake"), std::string::npos)
      << Trace();
  EXPECT_NE(Trace().find("by=driver"), std::string::npos);
  const std::string exposition = metrics_.Render();
  EXPECT_NE(exposition.find("nvme_adapt_switch_latency_seconds_count{lever=\"fake\"} 1"), std::string::npos)
      << exposition;
  // 300 us falls in the bucket le=0.0005, not in le=0.00025.
  EXPECT_NE(exposition.find("nvme_adapt_switch_latency_seconds_bucket{lever=\"fake\",le=\"0.00025\"} 0"),
            std::string::npos);
  EXPECT_NE(exposition.find("nvme_adapt_switch_latency_seconds_bucket{lever=\"fake\",le=\"0.0005\"} 1"),
            std::string::npos);
  // The trace still replays: the timeline line is no engine input.
  EXPECT_TRUE(engine::ReplayTrace(Trace()).ok());
}

TEST_F(AgentSwitch, ALeverThatCannotTellStartsTheTryWhenItsWriteReturned) {
  levers_.on_apply = [this](const LeverPlan&) { now_ += kRoundTrip; };
  Start();
  const engine::Nanos before = now_ + 5 * kUs * kWindow;
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  const collect::QueueControl& control = collector_.controls[q1_];
  EXPECT_EQ(control.generation, 2u);
  EXPECT_EQ(control.mode_since, before + kRoundTrip) << "the window starts when the lever's write returned";
  // The timer holds the try from that instant: with no completion, the first look is one period after
  // the lever returned, and it measures the stall from there.
  now_ = before + kRoundTrip + 1'000'000 - 1;
  agent_->RunOnce();
  EXPECT_EQ(Queue(1).state(), v1::QUEUE_STATE_POLLING);
  now_ += 1;
  agent_->RunOnce();
  const v1::Decision stalled = Queue(1).last_decision();
  EXPECT_EQ(stalled.reason(), "stalled");
  EXPECT_EQ(stalled.measured_ns(), 1'000'000);
  EXPECT_NE(Trace().find("by=lever"), std::string::npos) << Trace();
  EXPECT_NE(Trace().find("verdict=stalled k=1"), std::string::npos) << Trace();
}

TEST_F(AgentSwitch, AQueueFoundPollingWhoseFirstSwitchFailsIsRetriedUntilItMeasures) {
  DiscoveredQueue polling = UvnvmeQueue(1);
  polling.mode = ReapMode::kPoll;
  discovery_.queues = {polling};
  levers_.refuse = 1;
  levers_.refuse_code = ErrorCode::kUnavailable;
  Start();
  EXPECT_EQ(levers_.applies, 1);
  v1::QueueInfo q = Queue(1);
  EXPECT_EQ(q.mode(), v1::REAP_MODE_POLL);
  EXPECT_TRUE(q.degraded());
  EXPECT_NE(q.degraded_reason().find("controller busy"), std::string::npos);
  // Polling windows without a baseline decide nothing; the retry does, once its backoff is over.
  Window(1, ReapMode::kPoll, 5 * kUs, 1);
  EXPECT_EQ(levers_.applies, 1);
  now_ += 1'000'000'000;
  agent_->RunOnce();
  EXPECT_EQ(levers_.applies, 2);
  q = Queue(1);
  EXPECT_EQ(q.mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(q.state(), v1::QUEUE_STATE_MEASURING);
  EXPECT_FALSE(q.degraded());
  // Measuring works again: the queue came from polling, so its first window settles (settle_windows 1)
  // and the next fast one starts a try.
  Window(1, ReapMode::kInterrupt, 5 * kUs, collector_.controls[q1_].generation);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(1).last_decision().reason(), "settling");
  Window(1, ReapMode::kInterrupt, 5 * kUs, collector_.controls[q1_].generation);
  EXPECT_EQ(Queue(1).mode(), v1::REAP_MODE_POLL);
}

TEST_F(AgentSwitch, AControlTheCollectorRefusesDegradesTheQueueVisibly) {
  collector_.refuse_control = true;
  Start();
  const v1::QueueInfo q = Queue(1);
  EXPECT_TRUE(q.degraded());
  EXPECT_NE(q.degraded_reason().find("collector: cannot set the queue's BPF control"), std::string::npos)
      << q.degraded_reason();
  const v1::GetStatusResponse status = agent_->api().GetStatus();
  bool listed = false;
  for (const std::string& line : status.degraded()) listed |= line.find("queue table full") != std::string::npos;
  EXPECT_TRUE(listed);
  // Once the collector takes it again the queue is whole.
  collector_.refuse_control = false;
  Window(1, ReapMode::kInterrupt, 50 * kUs, 1);
  EXPECT_FALSE(Queue(1).degraded());
}

TEST_F(AgentSwitch, APolicyWindowTheBpfSideCannotCountIsRefusedWithTheFieldNamed) {
  Start();
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_window_completions(1u << 20);
  auto set = agent_->api().SetPolicy(request);
  ASSERT_FALSE(set);
  EXPECT_NE(set.error().message.find("window_completions: must be in [1, 1048575] (got 1048576)"), std::string::npos)
      << set.error().message;
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
