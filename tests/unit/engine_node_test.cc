// SPDX-License-Identifier: Apache-2.0
// The node layer (agent/engine/node.h): the polling CPU budget, CPU pressure and staggering, each with its
// edges, and the off default that keeps the per-queue behaviour.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "agent/engine/node.h"

namespace nvmeadapt::engine {
namespace {

constexpr Nanos kMs = 1'000'000;

NodeSettings On() {
  NodeSettings s;
  s.enabled = true;
  return s;
}

// A node layer that is on, with a polling budget of `cores` (0: none) and `settings` otherwise.
NodeLayer Node(double cores = 0, NodeSettings settings = On()) {
  NodeLayer node;
  settings.budget_cores = cores;
  node.SetSettings(settings);
  return node;
}

NodeFacts Facts(Nanos at, std::vector<std::optional<double>> busy, std::optional<double> some = std::nullopt,
                std::optional<double> full = std::nullopt) {
  return NodeFacts{at, std::move(busy), some, full};
}

NodeQueue OnCpu(uint32_t cpu, std::optional<double> gain = std::nullopt, std::optional<double> cost = std::nullopt) {
  return NodeQueue{cpu, gain, cost};
}

TryVerdict Try(NodeLayer& node, QueueHandle q, Nanos at = 0) { return node.Try(TryRequest{q, at}); }

std::string Deferred(const TryVerdict& v) { return v.deferred ? std::string(NodeReasonName(*v.deferred)) : "admit"; }

TEST(NodeLayerWords, EveryDeferralReasonHasItsOwnWord) {
  std::set<std::string> words;
  for (const auto& row : kNodeReasons) {
    words.insert(std::string(row.name));
    EXPECT_EQ(kNodeReasons.Parse(row.name), row.value);
  }
  EXPECT_EQ(words, (std::set<std::string>{"cpu_budget", "cpu_busy", "cpu_pressure", "staggered"}));
}

TEST(NodeLayerSettings, OffByDefaultAndDefaultsValid) {
  EXPECT_FALSE(NodeSettings{}.enabled);
  EXPECT_TRUE(ValidateNodeSettings(NodeSettings{}).ok());
}

TEST(NodeLayerSettings, ErrorNamesTheBadField) {
  NodeSettings s = On();
  s.budget_share = 1.5;
  Status bad = ValidateNodeSettings(s, "config.node.");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("config.node.budget_share"), std::string::npos) << bad.error().message;
  s = On();
  s.min_headroom = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(ValidateNodeSettings(s).ok());
  s = On();
  s.stop_headroom = 0.3;  // above min_headroom 0.2: a try admitted at 0.25 would be ended at once
  EXPECT_FALSE(ValidateNodeSettings(s).ok());
  s = On();
  s.pressure_some_rise = 0;  // every run would end at the next reading
  EXPECT_FALSE(ValidateNodeSettings(s).ok());
  s = On();
  s.pressure_idle_share = 1.01;
  EXPECT_FALSE(ValidateNodeSettings(s).ok());
}

TEST(NodeLayerOff, AdmitsEveryTryAndEndsNoRunWhateverTheFacts) {
  NodeLayer node;  // default settings: off
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(0));
  EXPECT_TRUE(node.OnFacts(Facts(0, {1.0}, 90.0, 90.0)).empty());
  EXPECT_TRUE(Try(node, 0).Admitted());
  EXPECT_TRUE(Try(node, 1).Admitted());  // same CPU, hogged, under pressure: the per-queue behaviour
  EXPECT_TRUE(node.OnFacts(Facts(1, {1.0}, 90.0, 90.0)).empty());
  EXPECT_DOUBLE_EQ(node.PollingCores(), 2.0);  // still accounted
}

TEST(NodeLayerBudget, DefersATryThatWouldExceedTheBudgetUntilARunEnds) {
  NodeLayer node = Node(1);
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(1));
  EXPECT_EQ(Deferred(Try(node, 0)), "admit");
  EXPECT_EQ(Deferred(Try(node, 1)), "cpu_budget");
  node.TryEnded(0, /*kept_polling=*/true, kMs);
  EXPECT_EQ(Deferred(Try(node, 1, kMs)), "cpu_budget");  // a kept run still spends its core
  node.PollingEnded(0, 2 * kMs);
  EXPECT_EQ(Deferred(Try(node, 1, 2 * kMs)), "admit");
}

TEST(NodeLayerBudget, SharesThatAddUpToTheBudgetExactlyFit) {
  NodeLayer node = Node(0.3);
  node.SetQueue(0, OnCpu(0, std::nullopt, 0.1));
  node.SetQueue(1, OnCpu(1, std::nullopt, 0.2));
  node.SetQueue(2, OnCpu(2, std::nullopt, 0.01));
  EXPECT_TRUE(Try(node, 0).Admitted());
  EXPECT_TRUE(Try(node, 1).Admitted());
  EXPECT_EQ(Deferred(Try(node, 2)), "cpu_budget");
}

TEST(NodeLayerBudget, SpentOnTheBestGainPerCpuSecondFirst) {
  NodeLayer node = Node(1);
  node.SetQueue(0, OnCpu(0, 2.0));
  node.SetQueue(1, OnCpu(1, 5.0));
  node.SetQueue(2, OnCpu(2));       // gain not measured yet
  node.SetQueue(3, OnCpu(3, 5.0));  // pays as much as queue 1: no reason to end its run
  ASSERT_TRUE(Try(node, 0).Admitted());
  const TryVerdict better = Try(node, 1);
  ASSERT_TRUE(better.Admitted());
  ASSERT_EQ(better.ended.size(), 1u);
  EXPECT_EQ(better.ended[0].queue, 0u);
  EXPECT_EQ(NodeReasonName(better.ended[0].reason), "cpu_budget");
  EXPECT_FALSE(node.Polling(0));
  EXPECT_EQ(Deferred(Try(node, 2)), "cpu_budget");  // unmeasured never takes a measured queue's room
  EXPECT_EQ(Deferred(Try(node, 3)), "cpu_budget");
  EXPECT_DOUBLE_EQ(node.PollingCores(), 1.0);
}

TEST(NodeLayerBudget, AShareOfTheCpusNeedsTheFactsCpuCountAndTheSmallerLimitWins) {
  NodeLayer node;
  NodeSettings s = On();
  s.budget_share = 0.5;
  node.SetSettings(s);
  EXPECT_FALSE(node.BudgetCores());  // no facts yet: no CPU count to take a share of
  (void)node.OnFacts(Facts(0, {0.0, 0.0, 0.0, 0.0}));
  EXPECT_DOUBLE_EQ(*node.BudgetCores(), 2.0);
  s.budget_cores = 1.5;
  node.SetSettings(s);
  EXPECT_DOUBLE_EQ(*node.BudgetCores(), 1.5);
}

TEST(NodeLayerBudget, ALoweredBudgetEndsTheWorstPayingRuns) {
  NodeLayer node;
  NodeSettings s = On();
  node.SetSettings(s);  // no budget
  for (QueueHandle q = 0; q < 3; ++q) node.SetQueue(q, OnCpu(q, 1.0 + q));
  for (QueueHandle q = 0; q < 3; ++q) ASSERT_TRUE(Try(node, q).Admitted());
  s.budget_cores = 1;
  node.SetSettings(s);
  const std::vector<NodeStop> stops = node.OnFacts(Facts(kMs, {0.0, 0.0, 0.0}));
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0].queue, 0u);
  EXPECT_EQ(stops[1].queue, 1u);
  EXPECT_EQ(stops[0].reason, NodeReason::kCpuBudget);
  EXPECT_TRUE(node.Polling(2));
}

TEST(NodeLayerPressure, NoTryOnACpuWithoutHeadroomAndTheEdgeIsAdmitted) {
  NodeLayer node = Node();  // min_headroom 0.2
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(1));
  node.SetQueue(2, NodeQueue{});  // CPU unknown: the CPU rules cannot judge it
  (void)node.OnFacts(Facts(0, {0.81, 0.8, std::nullopt}));
  EXPECT_EQ(Deferred(Try(node, 0)), "cpu_busy");
  EXPECT_EQ(Deferred(Try(node, 1)), "admit");
  EXPECT_EQ(Deferred(Try(node, 2)), "admit");
}

TEST(NodeLayerPressure, TheNodesOwnPollingIsNotOtherWork) {
  NodeLayer node = Node();
  node.SetQueue(0, OnCpu(0, std::nullopt, 0.5));
  node.SetQueue(1, OnCpu(0, std::nullopt, 0.3));
  ASSERT_TRUE(Try(node, 0).Admitted());
  node.TryEnded(0, true, kMs);
  EXPECT_TRUE(node.OnFacts(Facts(kMs, {1.0})).empty());  // 1.0 - 0.5 of its own: headroom 0.5
  EXPECT_EQ(Deferred(Try(node, 1, kMs)), "admit");
}

TEST(NodeLayerPressure, AQueuesOwnReaperIsNotOtherWorkForItsTryButIsForItsNeighbours) {
  NodeLayer node = Node();  // min_headroom 0.2
  NodeQueue reaping = OnCpu(0);
  reaping.own_busy = 0.7;  // its interrupt-mode reaper: the work polling would replace
  node.SetQueue(0, reaping);
  node.SetQueue(1, OnCpu(0));
  (void)node.OnFacts(Facts(0, {0.9}));
  EXPECT_EQ(Deferred(Try(node, 1)), "cpu_busy") << "queue 0's reaper is other work for queue 1";
  EXPECT_EQ(Deferred(Try(node, 0)), "admit") << "0.9 - 0.7 of its own leaves 0.8 idle";
}

TEST(NodeLayerPressure, PsiAboveTheLimitDefersAndMissingPsiIsSkipped) {
  NodeLayer node = Node();  // pressure_some_limit 10, pressure_idle_share 0.5
  node.SetQueue(0, OnCpu(0));
  (void)node.OnFacts(Facts(0, {0.6}, 10.0));
  EXPECT_EQ(Deferred(Try(node, 0)), "cpu_pressure");
  (void)node.OnFacts(Facts(kMs, {0.6}, 9.99));
  EXPECT_EQ(Deferred(Try(node, 0, kMs)), "admit");
  node.PollingEnded(0, kMs);
  (void)node.OnFacts(Facts(2 * kMs, {0.6}));  // a kernel without PSI
  EXPECT_EQ(Deferred(Try(node, 0, 2 * kMs)), "admit");
}

// PSI is the node's: work waiting on another CPU (pinned there, or behind a real-time thread) is no reason to
// leave an idle reaping CPU idle. The edge is idle exactly pressure_idle_share.
TEST(NodeLayerPressure, PsiDefersOnlyWhereTheReapingCpuIsNotIdle) {
  NodeLayer node = Node();
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(1));
  node.SetQueue(2, OnCpu(2));
  node.SetQueue(3, NodeQueue{});  // CPU unknown: it may be where the work waits
  (void)node.OnFacts(Facts(0, {0.5, 0.51, std::nullopt}, 40.0));
  EXPECT_EQ(Deferred(Try(node, 0)), "admit");
  EXPECT_EQ(Deferred(Try(node, 1)), "cpu_pressure");
  EXPECT_EQ(Deferred(Try(node, 2)), "cpu_pressure") << "no busy figure for CPU 2";
  EXPECT_EQ(Deferred(Try(node, 3)), "cpu_pressure");
  NodeSettings everywhere = On();
  everywhere.pressure_idle_share = 1.0;
  node.SetSettings(everywhere);
  node.PollingEnded(0, kMs);
  EXPECT_EQ(Deferred(Try(node, 0, kMs)), "cpu_pressure") << "idle share 1: PSI defers every try";
}

// Right after a polling run the last interval has the CPU full of the queue's own spinning reaper: that is not
// work PSI's waiters do there.
TEST(NodeLayerPressure, TheQueuesOwnReaperDoesNotMakeItsCpuLookPressed) {
  NodeLayer node = Node();
  NodeQueue after_a_run = OnCpu(0);
  after_a_run.own_busy = 0.95;
  node.SetQueue(0, after_a_run);
  node.SetQueue(1, OnCpu(0));
  (void)node.OnFacts(Facts(0, {1.0}, 40.0));
  EXPECT_EQ(Deferred(Try(node, 1)), "cpu_pressure") << "queue 0's reaper is other work for queue 1";
  EXPECT_EQ(Deferred(Try(node, 0)), "admit");
}

TEST(NodeLayerPressure, StaleFactsSayNothing) {
  NodeLayer node;
  NodeSettings s = On();
  s.facts_max_age = 10 * kMs;
  node.SetSettings(s);
  node.SetQueue(0, OnCpu(0));
  (void)node.OnFacts(Facts(0, {1.0}, 50.0));
  EXPECT_EQ(Deferred(Try(node, 0, 10 * kMs)), "cpu_pressure");  // exactly max age: still fresh
  EXPECT_EQ(Deferred(Try(node, 0, 10 * kMs + 1)), "admit");
}

TEST(NodeLayerPressure, PressureRisingDuringARunEndsItAndTheLevelItBeganAtDoesNot) {
  NodeLayer node = Node();  // rise: some 20, full 5
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(1));
  (void)node.OnFacts(Facts(0, {0.0, 0.0}, 30.0, 0.0));  // background pressure from work elsewhere
  ASSERT_TRUE(Try(node, 0).Admitted());
  EXPECT_TRUE(node.OnFacts(Facts(kMs, {1.0, 0.0}, 45.0, 0.0)).empty()) << "15 points: under the rise";
  ASSERT_TRUE(Try(node, 1, kMs).Admitted());  // its floor: 45
  EXPECT_TRUE(node.OnFacts(Facts(2 * kMs, {1.0, 1.0}, 25.0, 0.0)).empty()) << "a fall lowers both floors to 25";
  const std::vector<NodeStop> stops = node.OnFacts(Facts(3 * kMs, {1.0, 1.0}, 45.0, 4.9));
  ASSERT_EQ(stops.size(), 2u) << "20 points above the lowest reading since each run began";
  EXPECT_EQ(stops[0].reason, NodeReason::kCpuPressure);
  EXPECT_EQ(stops[1].reason, NodeReason::kCpuPressure);
  EXPECT_FALSE(node.Polling(0));
  EXPECT_FALSE(node.Polling(1));
  EXPECT_EQ(Deferred(Try(node, 0, 3 * kMs)), "cpu_pressure") << "still pressed, on a CPU busy with other work";
  (void)node.OnFacts(Facts(4 * kMs, {0.0, 0.0}, 0.0, 0.0));
  ASSERT_TRUE(Try(node, 0, 4 * kMs).Admitted());
  const std::vector<NodeStop> full = node.OnFacts(Facts(5 * kMs, {1.0, 0.0}, 0.0, 5.0));
  ASSERT_EQ(full.size(), 1u);
  EXPECT_EQ(full[0].reason, NodeReason::kCpuPressure);
}

TEST(NodeLayerPressure, ARunAdmittedWithoutFactsMeasuresItsRiseFromTheFirstReading) {
  NodeLayer node = Node();
  node.SetQueue(0, OnCpu(0));
  ASSERT_TRUE(Try(node, 0).Admitted());
  EXPECT_TRUE(node.OnFacts(Facts(kMs, {1.0}, 35.0)).empty());
  EXPECT_TRUE(node.OnFacts(Facts(2 * kMs, {1.0}, 54.9)).empty());
  EXPECT_EQ(node.OnFacts(Facts(3 * kMs, {1.0}, 55.0)).size(), 1u);
}

TEST(NodeLayerPressure, OtherWorkOnTheReapingCpuEndsOnlyTheRunsOnIt) {
  NodeLayer node = Node();  // stop_headroom 0.05
  node.SetQueue(0, OnCpu(0, std::nullopt, 0.01));  // a cheap poller: its CPU's figure is mostly other work
  node.SetQueue(1, OnCpu(1, std::nullopt, 0.01));
  ASSERT_TRUE(Try(node, 0).Admitted());
  ASSERT_TRUE(Try(node, 1).Admitted());
  // CPU 0: 0.01 of its own polling + 0.96 other work (headroom 0.04); CPU 1: headroom exactly 0.05.
  const std::vector<NodeStop> stops = node.OnFacts(Facts(kMs, {0.97, 0.96}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].queue, 0u);
  EXPECT_EQ(NodeReasonName(stops[0].reason), "cpu_busy");
  EXPECT_TRUE(node.Polling(1));
}

TEST(NodeLayerPressure, ASpinningReaperAloneOnItsCpuIsNotOtherWorkOnlyPressureEndsIt) {
  NodeLayer node = Node();
  node.SetQueue(0, OnCpu(0));  // default cost: the whole CPU
  (void)node.OnFacts(Facts(0, {0.3}, 5.0));
  ASSERT_TRUE(Try(node, 0).Admitted());
  EXPECT_TRUE(node.OnFacts(Facts(kMs, {1.0}, 5.0)).empty());
  const std::vector<NodeStop> stops = node.OnFacts(Facts(2 * kMs, {1.0}, 30.0));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason, NodeReason::kCpuPressure);
}

TEST(NodeLayerStagger, QueuesSharingACpuTryOneAfterAnother) {
  NodeLayer node = Node();
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(0));
  node.SetQueue(2, OnCpu(1));
  EXPECT_EQ(Deferred(Try(node, 0)), "admit");
  EXPECT_EQ(Deferred(Try(node, 1)), "staggered");
  EXPECT_EQ(Deferred(Try(node, 2)), "admit");  // another CPU: together is fine
  EXPECT_TRUE(node.Trying(0));
  node.TryEnded(0, /*kept_polling=*/false, kMs);
  EXPECT_EQ(Deferred(Try(node, 1, kMs)), "admit");
}

TEST(NodeLayerStagger, TheGapAfterATryHoldsTheNextOneToTheEdge) {
  NodeLayer node;
  NodeSettings s = On();
  s.stagger_gap = 3 * kMs;
  node.SetSettings(s);
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(0));
  ASSERT_TRUE(Try(node, 0).Admitted());
  node.TryEnded(0, true, 10 * kMs);
  EXPECT_EQ(Deferred(Try(node, 1, 13 * kMs - 1)), "staggered");
  EXPECT_EQ(Deferred(Try(node, 1, 13 * kMs)), "admit");
}

TEST(NodeLayerStagger, AStaggeredTryEndsNoOtherRun) {
  NodeLayer node = Node(1);
  node.SetQueue(0, OnCpu(0, 1.0));
  node.SetQueue(1, OnCpu(0, 9.0));
  ASSERT_TRUE(Try(node, 0).Admitted());  // trying on CPU 0
  const TryVerdict v = Try(node, 1);
  EXPECT_EQ(Deferred(v), "staggered");
  EXPECT_TRUE(v.ended.empty());
  EXPECT_TRUE(node.Polling(0));
}

TEST(NodeLayerQueues, PollingTheLayerDidNotAdmitIsCountedButNeverEnded) {
  NodeLayer node = Node(1);
  node.SetQueue(0, OnCpu(0, 0.5));
  node.SetQueue(1, OnCpu(1, 9.0));
  node.PollingStarted(0);  // forced by the operator
  EXPECT_DOUBLE_EQ(node.PollingCores(), 1.0);
  const TryVerdict v = Try(node, 1);  // pays more, but a forced run is not the node layer's to end
  EXPECT_EQ(Deferred(v), "cpu_budget");
  EXPECT_TRUE(v.ended.empty());
  EXPECT_TRUE(node.OnFacts(Facts(kMs, {1.0, 0.6}, 90.0, 90.0)).empty());
  EXPECT_TRUE(node.Polling(0));
  node.PollingEnded(0, 2 * kMs);
  EXPECT_TRUE(Try(node, 1, 2 * kMs).Admitted() == false);  // still pressed at 90, CPU 1 idling only 0.4
  (void)node.OnFacts(Facts(3 * kMs, {0.0, 0.0}, 0.0, 0.0));
  EXPECT_TRUE(Try(node, 1, 3 * kMs).Admitted());
}

TEST(NodeLayerQueues, ARemovedQueueFreesItsBudgetAndItsCpu) {
  NodeLayer node = Node(1);
  node.SetQueue(0, OnCpu(0));
  node.SetQueue(1, OnCpu(0));
  ASSERT_TRUE(Try(node, 0).Admitted());
  node.RemoveQueue(0);
  EXPECT_DOUBLE_EQ(node.PollingCores(), 0.0);
  EXPECT_TRUE(Try(node, 1).Admitted());
}

}  // namespace
}  // namespace nvmeadapt::engine
