// The node gate (agent/engine/node_gate.h) between the real engine and the node layer: a deferred try leaves
// the queue measuring with no failure counted and is deferred again at its next fast window; an admitted
// try's verdict and the end of its run reach the node layer.
#include <gtest/gtest.h>

#include "agent/engine/node_gate.h"
#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

class NodeGateTest : public EngineFixture {
 protected:
  NodeGateTest() {
    NodeSettings settings;
    settings.enabled = true;
    node_.SetSettings(settings);
  }

  // The engine's decision on a fast measuring window, put to the gate; a deferral is followed as the
  // daemon does: the engine told the queue stayed in interrupt mode.
  GateOutcome FastWindow(QueueHandle q) {
    const std::optional<Decision> d = Interrupt(q, 5 * kUs * kWindow);
    EXPECT_TRUE(d && NodeGate::StartsTry(*d));
    if (!d) return {};
    GateOutcome outcome = gate_.OnDecision(*d);
    if (outcome.deferred) (void)engine_.OnLeverResult(q, ReapMode::kInterrupt, now_);
    return outcome;
  }

  NodeLayer node_;
  NodeGate gate_{node_};
};

TEST_F(NodeGateTest, AHogOnTheReapingCpuDefersEveryTryWithNoFailureCounted) {
  const QueueHandle q = Add();
  node_.SetQueue(q, NodeQueue{0, std::nullopt, std::nullopt});
  for (int i = 0; i < 5; ++i) {
    (void)node_.OnFacts(NodeFacts{now_, {1.0}, std::nullopt, std::nullopt});
    const GateOutcome outcome = FastWindow(q);
    ASSERT_TRUE(outcome.deferred) << "try " << i;
    EXPECT_EQ(NodeReasonName(*outcome.deferred), "cpu_busy");
    const QueueView view = engine_.View(q);
    EXPECT_EQ(view.state, QueueState::kMeasuring);
    EXPECT_EQ(view.mode, ReapMode::kInterrupt);
    EXPECT_EQ(view.failures, 0u);
    EXPECT_FALSE(node_.Polling(q));
  }
  (void)node_.OnFacts(NodeFacts{now_, {0.1}, std::nullopt, std::nullopt});  // the hog ended
  EXPECT_FALSE(FastWindow(q).deferred);
  EXPECT_TRUE(node_.Trying(q));
}

TEST_F(NodeGateTest, TheTrysVerdictAndTheRunsEndReachTheNodeLayer) {
  const QueueHandle a = Add();
  const QueueHandle b = Add();
  node_.SetQueue(a, NodeQueue{0, std::nullopt, std::nullopt});
  node_.SetQueue(b, NodeQueue{0, std::nullopt, std::nullopt});
  ASSERT_FALSE(FastWindow(a).deferred);
  EXPECT_EQ(NodeReasonName(*FastWindow(b).deferred), "staggered");  // a's try holds CPU 0
  const std::optional<Decision> kept = Poll(a, 4 * kUs * kWindow);
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->reason, Reason::kPollWindowFaster);
  (void)gate_.OnDecision(*kept);
  EXPECT_FALSE(node_.Trying(a));
  EXPECT_TRUE(node_.Polling(a));
  const std::optional<Decision> lost = Poll(a, 6 * kUs * kWindow);  // slower than its baseline
  ASSERT_TRUE(lost);
  ASSERT_EQ(lost->to, ReapMode::kInterrupt);
  (void)gate_.OnDecision(*lost);
  EXPECT_FALSE(node_.Polling(a));
}

TEST_F(NodeGateTest, ShadowDecisionsAndForcedPollingAreNeverDeferred) {
  Policy shadow = Adaptive();
  shadow.mode = ControllerMode::kShadow;
  const QueueHandle s = Add(shadow);
  node_.SetQueue(s, NodeQueue{0, std::nullopt, std::nullopt});
  (void)node_.OnFacts(NodeFacts{now_, {1.0}, std::nullopt, std::nullopt});
  const std::optional<Decision> would = Interrupt(s, 5 * kUs * kWindow);
  ASSERT_TRUE(would && would->shadow);
  EXPECT_FALSE(gate_.OnDecision(*would).deferred);
  EXPECT_FALSE(node_.Polling(s));

  Decision forced;
  forced.queue = 7;
  forced.from = ReapMode::kInterrupt;
  forced.to = ReapMode::kPoll;
  forced.reason = Reason::kModeChanged;
  EXPECT_FALSE(gate_.OnDecision(forced).deferred);
  EXPECT_TRUE(node_.Polling(7));  // counted in the budget all the same
}

TEST_F(NodeGateTest, EndPollingTakesARunBackToMeasuringWithNoFailure) {
  const QueueHandle q = Add();
  node_.SetQueue(q, NodeQueue{0, std::nullopt, std::nullopt});
  ASSERT_FALSE(FastWindow(q).deferred);
  const std::optional<Decision> kept = Poll(q, 4 * kUs * kWindow);
  ASSERT_TRUE(kept && kept->reason == Reason::kPollWindowFaster);
  (void)gate_.OnDecision(*kept);
  const std::optional<Decision> ended = engine_.EndPolling(q, now_);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->reason, Reason::kNodeEnded);
  EXPECT_EQ(ReasonName(ended->reason), "node_ended");
  EXPECT_EQ(ended->from, ReapMode::kPoll);
  EXPECT_EQ(ended->to, ReapMode::kInterrupt);
  EXPECT_TRUE(ended->Switches());
  const QueueView view = engine_.View(q);
  EXPECT_EQ(view.state, QueueState::kMeasuring);
  EXPECT_EQ(view.failures, 0u);
  (void)gate_.OnDecision(*ended);
  EXPECT_FALSE(node_.Polling(q));
  EXPECT_FALSE(engine_.EndPolling(q, now_)) << "a measuring queue has no run to end";
}

TEST_F(NodeGateTest, AQueueTheLayerDoesNotDecideIsAdmittedButCounted) {
  const QueueHandle q = Add();
  NodeQueue facts{0, std::nullopt, std::nullopt};
  facts.decided = false;  // its policy has node_layer off
  node_.SetQueue(q, facts);
  (void)node_.OnFacts(NodeFacts{now_, {1.0}, 50.0, 50.0});  // busy and pressed: would defer any decided try
  EXPECT_FALSE(FastWindow(q).deferred);
  EXPECT_TRUE(node_.Polling(q));
  EXPECT_DOUBLE_EQ(node_.PollingCores(), 1.0);
  EXPECT_TRUE(node_.OnFacts(NodeFacts{now_, {1.0}, 50.0, 50.0}).empty()) << "its run is never ended";
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
