// SPDX-License-Identifier: Apache-2.0
// Replay of a trace the daemon recorded with the node layer on gives the decisions the daemon made: the trace
// carries the node layer's inputs (its settings, each queue's description, every reading of the node's facts),
// and replay runs them through a node gate of its own, as the daemon does. A try the node layer deferred was
// never committed: it is in the decision log with its reason, and the trace has no lever result undoing it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "agent/engine/trace.h"
#include "tests/unit/agent_loop_fixture.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::daemon::testing {
namespace {

constexpr engine::Nanos kFactsInterval = 100'000'000;

class AgentNodeReplay : public AgentLoop {
 protected:
  void SetUp() override {
    AgentLoop::SetUp();
    policies_.mutable_policy()->set_node_layer(true);
    // A polling queue whose window waits for the next facts is not stalled: the timer looks once a second.
    policies_.mutable_policy()->set_timer_granularity_ns(1'000'000'000);
    node_.settings.enabled = true;
    node_.facts_interval = kFactsInterval;
    node_facts_root_ = facts_.path();
    discovery_.queues[0].cpus = {0};  // q1 is reaped on CPU 0, which other work keeps busy
    discovery_.queues[1].cpus = {2};  // q2 on CPU 2, idle
    WriteFacts(0, 0.0);
  }

  // /proc as it is `ticks` clock ticks after boot: CPU 0 busy all along, CPUs 1 and 2 idle; PSI cpu some avg10
  // at `some`.
  void WriteFacts(uint64_t ticks, double some) {
    const std::string t = std::to_string(ticks);
    nvmeadapt::testing::WriteFile(facts_ / "proc/stat", "cpu  " + t + " 0 0 " + std::to_string(2 * ticks) +
                                                            " 0 0 0 0 0 0\n"
                                                            "cpu0 " + t + " 0 0 0 0 0 0 0 0 0\n"
                                                            "cpu1 0 0 0 " + t + " 0 0 0 0 0 0\n"
                                                            "cpu2 0 0 0 " + t + " 0 0 0 0 0 0\n");
    nvmeadapt::testing::WriteFile(facts_ / "proc/pressure/cpu",
                                  "some avg10=" + std::to_string(some) + " avg60=0.00 avg300=0.00 total=0\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  }

  // The next reading of the facts, read by the loop when it is due.
  void ReadFacts(uint64_t ticks, double some) {
    WriteFacts(ticks, some);
    now_ += kFactsInterval;
    agent_->RunOnce();
  }

  static std::string Text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  nvmeadapt::testing::TempDir facts_;
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(AgentNodeReplay, ReplayWithTheNodeLayerOnGivesTheDaemonsDecisions) {
  Start();
  agent_->RunOnce();  // the first reading: the baseline of the busy shares
  ReadFacts(100, 12.5);  // CPU 0 busy, and runnable work waits
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);  // fast, on the busy CPU: deferred
  ASSERT_EQ(Queue(1).last_decision().node_reason(), "cpu_pressure");
  Window(2, ReapMode::kInterrupt, 5 * kUs, 1);  // fast, on the idle CPU: admitted
  ASSERT_EQ(Queue(2).mode(), v1::REAP_MODE_POLL);
  Window(2, ReapMode::kPoll, 4 * kUs, 2);  // its try keeps polling
  ReadFacts(200, 40.0);  // the pressure rose by more than 20 points: the run ends
  EXPECT_EQ(Queue(2).mode(), v1::REAP_MODE_INTERRUPT);
  EXPECT_EQ(Queue(2).last_decision().node_reason(), "cpu_pressure");
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);  // still busy: deferred again
  agent_.reset();

  const std::string trace = Text(state_dir_ + ".trace");
  const std::string decisions = Text(state_dir_ + ".trace.decisions");
  auto replayed = engine::ReplayTrace(trace);
  ASSERT_TRUE(replayed) << replayed.error().message;
  std::string joined;
  for (const auto& line : *replayed) joined += line + "\n";
  EXPECT_EQ(joined, decisions) << trace;
  EXPECT_EQ(Count(decisions, "uvnvme:7:0:q1 at="), 2u) << decisions;
  EXPECT_EQ(Count(decisions, "reason=window_fast state=measuring"), 2u) << "a deferred try leaves its queue measuring";
  EXPECT_EQ(Count(decisions, " deferred=cpu_pressure\n"), 2u) << decisions;
  EXPECT_EQ(Count(decisions, "reason=node_ended"), 1u) << decisions;
  EXPECT_EQ(Count(trace, "\nlever "), 0u) << "a deferred try needs no lever result to undo it:\n" << trace;
  EXPECT_EQ(Count(trace, "\nfacts "), 3u) << trace;
}

TEST_F(AgentNodeReplay, TheNodeLinesReplayAsTheLayerWasTold) {
  Start();
  agent_->RunOnce();
  ReadFacts(100, 12.5);
  agent_.reset();
  const std::string trace = Text(state_dir_ + ".trace");
  EXPECT_EQ(trace.rfind("node enabled=1 ", 0), 0u) << "the settings come before any queue:\n" << trace;
  EXPECT_NE(trace.find("nodequeue uvnvme:7:0:q1 decided=1 cpu=0"), std::string::npos) << trace;
  EXPECT_NE(trace.find("busy=1,0,0 some=12.5"), std::string::npos) << trace;
  EXPECT_TRUE(engine::ReplayTrace(trace)) << trace;
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
