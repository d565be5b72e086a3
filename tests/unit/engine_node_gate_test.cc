// SPDX-License-Identifier: Apache-2.0
// The node gate (agent/engine/node_gate.h) between the real engine and the node layer: a deferred try is never
// committed, the queue measuring on with no failure counted and deferred again at its next fast window; an
// admitted try's verdict and the end of its run reach the node layer.
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

  // A fast measuring window through the gate: the try it starts, admitted or deferred (the window's own
  // decision, the last the gate hands on).
  Decision FastWindow(QueueHandle q) {
    const WindowRecord record{q, ReapMode::kInterrupt, kWindow, now_, now_ + 5 * kUs * kWindow, std::nullopt};
    now_ = record.end;
    const std::vector<GatedDecision> decisions = gate_.OnWindow(engine_, record);
    EXPECT_FALSE(decisions.empty());
    if (decisions.empty()) return {};
    EXPECT_TRUE(NodeGate::StartsTry(decisions.back().decision));
    return decisions.back().decision;
  }

  NodeGate gate_;
  NodeLayer& node_ = gate_.layer();
};

TEST_F(NodeGateTest, AHogOnTheReapingCpuDefersEveryTryWithNoFailureCounted) {
  const QueueHandle q = Add();
  node_.SetQueue(q, NodeQueue{0, std::nullopt, std::nullopt});
  for (int i = 0; i < 5; ++i) {
    (void)node_.OnFacts(NodeFacts{now_, {1.0}, std::nullopt, std::nullopt});
    const Decision outcome = FastWindow(q);
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
  gate_.Follow(*kept);
  EXPECT_FALSE(node_.Trying(a));
  EXPECT_TRUE(node_.Polling(a));
  const std::optional<Decision> lost = Poll(a, 6 * kUs * kWindow);  // slower than its baseline
  ASSERT_TRUE(lost);
  ASSERT_EQ(lost->to, ReapMode::kInterrupt);
  gate_.Follow(*lost);
  EXPECT_FALSE(node_.Polling(a));
}

TEST_F(NodeGateTest, ShadowDecisionsAndForcedPollingAreNeverDeferred) {
  Policy shadow = Adaptive();
  shadow.mode = ControllerMode::kShadow;
  const QueueHandle s = Add(shadow);
  node_.SetQueue(s, NodeQueue{0, std::nullopt, std::nullopt});
  (void)node_.OnFacts(NodeFacts{now_, {1.0}, std::nullopt, std::nullopt});
  const WindowRecord fast{s, ReapMode::kInterrupt, kWindow, now_, now_ + 5 * kUs * kWindow, std::nullopt};
  const std::vector<GatedDecision> would = gate_.OnWindow(engine_, fast);
  ASSERT_EQ(would.size(), 1u);
  ASSERT_TRUE(would[0].decision.shadow);
  EXPECT_FALSE(would[0].decision.deferred);
  EXPECT_FALSE(node_.Polling(s));

  // A forced mode is no try: the gate follows it (it is never put to the layer) and counts its polling.
  Decision forced;
  forced.queue = 7;
  forced.from = ReapMode::kInterrupt;
  forced.to = ReapMode::kPoll;
  forced.reason = Reason::kModeChanged;
  gate_.Follow(forced);
  EXPECT_TRUE(node_.Polling(7));  // counted in the budget all the same
}

TEST_F(NodeGateTest, EndPollingTakesARunBackToMeasuringWithNoFailure) {
  const QueueHandle q = Add();
  node_.SetQueue(q, NodeQueue{0, std::nullopt, std::nullopt});
  ASSERT_FALSE(FastWindow(q).deferred);
  const std::optional<Decision> kept = Poll(q, 4 * kUs * kWindow);
  ASSERT_TRUE(kept && kept->reason == Reason::kPollWindowFaster);
  gate_.Follow(*kept);
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
  gate_.Follow(*ended);
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
