// SPDX-License-Identifier: Apache-2.0
// AgentMetrics without HTTP: the cap on tracked queues, removal of a queue's series, the histogram
// conversion and the bounds on label values, read back from the text exposition.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <set>
#include <thread>

#include "agent/metrics/agent_metrics.h"
#include "agent/metrics/interval_histogram.h"
#include "tests/unit/metrics_text_parser.h"

namespace nvmeadapt::metrics {
namespace {

using testing::Exposition;
using testing::ParseExposition;

Exposition Scrape(const AgentMetrics& metrics) {
  std::string error;
  auto parsed = ParseExposition(metrics.Render(), &error);
  EXPECT_TRUE(parsed) << error;
  return parsed.value_or(Exposition{});
}

QueueLabels Queue(uint32_t qid) { return {"kernel", "nvme0", qid}; }

collect::QueueCounters Counters(uint64_t completions) {
  collect::QueueCounters counters;
  counters.completions = completions;
  counters.bytes = completions * 4096;
  counters.interval_histogram[12] = completions;
  return counters;
}

std::map<std::string, std::string> QueueMatch(uint32_t qid) {
  return {{"source", "kernel"}, {"controller", "nvme0"}, {"queue", std::to_string(qid)}};
}

// Every sample that carries the queue's three labels.
size_t SeriesOfQueue(const Exposition& exposition, uint32_t qid) {
  size_t count = 0;
  for (const auto& sample : exposition.samples) {
    if (sample.labels.count("queue") && sample.labels.at("queue") == std::to_string(qid) &&
        sample.labels.at("controller") == "nvme0") {
      ++count;
    }
  }
  return count;
}

TEST(AgentMetricsCap, QueuesOverTheCapAreCountedNotExported) {
  AgentMetrics metrics(2);
  std::vector<QueueId> ids;
  for (uint32_t q = 1; q <= 3; ++q) {
    ids.push_back(metrics.AddQueue(Queue(q), true));
    metrics.UpdateQueue(ids.back(), Counters(100 * q), ReapMode::kInterrupt);
    metrics.OnSwitch(ids.back(), engine::Reason::kWindowFast);
  }
  EXPECT_TRUE(metrics.IsTracked(ids[0]));
  EXPECT_TRUE(metrics.IsTracked(ids[1]));
  EXPECT_FALSE(metrics.IsTracked(ids[2]));

  const Exposition scrape = Scrape(metrics);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_tracked"), 2);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_untracked"), 1);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_tracked_limit"), 2);
  EXPECT_GT(SeriesOfQueue(scrape, 1), 0u);
  EXPECT_GT(SeriesOfQueue(scrape, 2), 0u);
  EXPECT_EQ(SeriesOfQueue(scrape, 3), 0u);
}

TEST(AgentMetricsCap, AFreedSlotGoesToTheOldestUntrackedQueueWithItsLatestState) {
  AgentMetrics metrics(1);
  const QueueId first = metrics.AddQueue(Queue(1), true);
  const QueueId second = metrics.AddQueue(Queue(2), true);
  const QueueId third = metrics.AddQueue(Queue(3), true);
  metrics.UpdateQueue(second, Counters(777), ReapMode::kPoll);
  metrics.OnSwitch(second, engine::Reason::kWindowFast);

  metrics.RemoveQueue(first);
  EXPECT_TRUE(metrics.IsTracked(second));
  EXPECT_FALSE(metrics.IsTracked(third));
  const Exposition scrape = Scrape(metrics);
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_completions_total", QueueMatch(2)), 777);
  auto switches = QueueMatch(2);
  switches["reason"] = "window_fast";
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_switches_total", switches), 1);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_untracked"), 1);
  EXPECT_EQ(SeriesOfQueue(scrape, 3), 0u);
}

TEST(AgentMetricsCap, RemovingAnUntrackedQueueOnlyLowersTheUntrackedCount) {
  AgentMetrics metrics(1);
  const QueueId tracked = metrics.AddQueue(Queue(1), true);
  metrics.RemoveQueue(metrics.AddQueue(Queue(2), true));
  EXPECT_TRUE(metrics.IsTracked(tracked));
  const Exposition scrape = Scrape(metrics);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_untracked"), 0);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_tracked"), 1);
}

TEST(AgentMetricsQueues, AddingAKnownQueueReturnsItsIdAndUpdatesEligibility) {
  AgentMetrics metrics(4);
  const QueueId id = metrics.AddQueue(Queue(1), false);
  EXPECT_EQ(metrics.AddQueue(Queue(1), true), id);
  const Exposition scrape = Scrape(metrics);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_tracked"), 1);
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_eligible", QueueMatch(1)), 1);
}

TEST(AgentMetricsQueues, RemovingAQueueRemovesEverySeriesOfItAndNoOther) {
  AgentMetrics metrics(8);
  std::vector<QueueId> ids;
  for (uint32_t q = 1; q <= 2; ++q) {
    const QueueId id = metrics.AddQueue(Queue(q), true);
    metrics.SetPollThreshold(id, 10'000);
    metrics.UpdateQueue(id, Counters(50), ReapMode::kPoll);
    metrics.OnWindow(id, 4'000);
    metrics.OnSwitch(id, engine::Reason::kWindowFast);
    metrics.OnPollTry(id, PollTryResult::kBehindPace);
    ids.push_back(id);
  }
  const size_t before = SeriesOfQueue(Scrape(metrics), 2);
  metrics.RemoveQueue(ids[0]);
  metrics.UpdateQueue(ids[0], Counters(60), ReapMode::kInterrupt);  // late update: ignored
  metrics.OnSwitch(ids[0], engine::Reason::kNotFaster);
  const Exposition scrape = Scrape(metrics);
  EXPECT_EQ(SeriesOfQueue(scrape, 1), 0u);
  EXPECT_EQ(SeriesOfQueue(scrape, 2), before);
  EXPECT_EQ(scrape.Value("nvme_adapt_queues_tracked"), 1);
}

TEST(AgentMetricsQueues, ModeIsOneGaugeWithOneForTheCurrentMode) {
  AgentMetrics metrics(4);
  const QueueId id = metrics.AddQueue(Queue(1), true);
  EXPECT_TRUE(Scrape(metrics).Find("nvme_adapt_queue_mode").empty()) << "mode unknown before the first update";
  metrics.UpdateQueue(id, Counters(1), ReapMode::kPoll);
  auto poll = QueueMatch(1), interrupt = QueueMatch(1);
  poll["mode"] = "poll";
  interrupt["mode"] = "interrupt";
  Exposition scrape = Scrape(metrics);
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_mode", poll), 1);
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_mode", interrupt), 0);
  metrics.UpdateQueue(id, Counters(2), ReapMode::kInterrupt);
  scrape = Scrape(metrics);
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_mode", poll), 0);
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_mode", interrupt), 1);
}

TEST(AgentMetricsQueues, TimesAreExportedInSeconds) {
  AgentMetrics metrics(4);
  const QueueId id = metrics.AddQueue(Queue(1), true);
  metrics.SetPollThreshold(id, 10'000);
  metrics.OnWindow(id, 2'500);
  const Exposition scrape = Scrape(metrics);
  EXPECT_DOUBLE_EQ(*scrape.Value("nvme_adapt_queue_poll_threshold_seconds", QueueMatch(1)), 10e-6);
  EXPECT_DOUBLE_EQ(*scrape.Value("nvme_adapt_queue_window_average_interval_seconds", QueueMatch(1)), 2.5e-6);
}

TEST(AgentMetricsThreads, CallsFromManyThreadsDuringScrapesLoseNothing) {
  AgentMetrics metrics(4);
  const QueueId id = metrics.AddQueue(Queue(1), true);
  constexpr int kThreads = 4, kCalls = 20000;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) EXPECT_FALSE(metrics.Render().empty());
  });
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        metrics.OnGrpcRequest("/nvmeadapt.v1.Agent/GetStatus", 0);
        metrics.OnSwitch(id, engine::Reason::kWindowFast);
      }
    });
  }
  for (auto& caller : callers) caller.join();
  done.store(true);
  scraper.join();
  const Exposition scrape = Scrape(metrics);
  EXPECT_EQ(scrape.Value("nvme_adapt_grpc_requests_total", {{"code", "OK"}}), kThreads * kCalls);
  auto switches = QueueMatch(1);
  switches["reason"] = "window_fast";
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_switches_total", switches), kThreads * kCalls);
}

TEST(IntervalHistogram, BucketBoundsAreThePowersOfTwoNanosecondsInSeconds) {
  const auto histogram = IntervalHistogram({});
  ASSERT_EQ(histogram.bucket.size(), collect::kHistBuckets);
  for (size_t i = 0; i < kFiniteIntervalBuckets; ++i) {
    EXPECT_DOUBLE_EQ(histogram.bucket[i].upper_bound, std::ldexp(1.0, static_cast<int>(i) + 1) * 1e-9) << i;
  }
  EXPECT_EQ(histogram.bucket.back().upper_bound, std::numeric_limits<double>::infinity());
}

TEST(IntervalHistogram, CountsAreCumulativeAndInfIsTheTotal) {
  std::array<uint64_t, collect::kHistBuckets> counts{};
  counts[3] = 2;   // [8, 16) ns
  counts[10] = 5;  // [1024, 2048) ns
  counts[31] = 1;  // 2^31 ns and longer
  const auto histogram = IntervalHistogram(counts);
  EXPECT_EQ(histogram.bucket[2].cumulative_count, 0u);   // le 8 ns
  EXPECT_EQ(histogram.bucket[3].cumulative_count, 2u);   // le 16 ns
  EXPECT_EQ(histogram.bucket[9].cumulative_count, 2u);   // le 1024 ns
  EXPECT_EQ(histogram.bucket[10].cumulative_count, 7u);  // le 2048 ns
  EXPECT_EQ(histogram.bucket[30].cumulative_count, 7u);  // le 2^31 ns
  EXPECT_EQ(histogram.bucket[31].cumulative_count, 8u);  // +Inf
  EXPECT_EQ(histogram.sample_count, 8u);
  for (size_t i = 1; i < histogram.bucket.size(); ++i) {
    EXPECT_GE(histogram.bucket[i].cumulative_count, histogram.bucket[i - 1].cumulative_count);
  }
}

TEST(IntervalHistogram, SumCountsEachIntervalAtTheMiddleOfItsBucket) {
  std::array<uint64_t, collect::kHistBuckets> counts{};
  counts[3] = 2;
  counts[10] = 5;
  const auto histogram = IntervalHistogram(counts);
  EXPECT_DOUBLE_EQ(histogram.sample_sum, (2 * 12.0 + 5 * 1536.0) * 1e-9);
}

TEST(IntervalHistogram, PerQueueTheExpositionHasOneInfBucketEqualToCount) {
  AgentMetrics metrics(4);
  metrics.ExportPerQueueIntervalHistogram(true);
  const QueueId id = metrics.AddQueue(Queue(1), true);
  collect::QueueCounters counters;
  counters.interval_histogram[5] = 3;
  counters.interval_histogram[31] = 4;
  metrics.UpdateQueue(id, counters, ReapMode::kInterrupt);
  const Exposition scrape = Scrape(metrics);
  auto inf = QueueMatch(1);
  inf["le"] = "+Inf";
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_completion_interval_seconds_bucket", inf), 7);
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_completion_interval_seconds_count", QueueMatch(1)), 7);
  EXPECT_EQ(scrape.Find("nvme_adapt_queue_completion_interval_seconds_bucket", QueueMatch(1)).size(),
            collect::kHistBuckets);
}

// By default the histogram is one per controller, the sum of its queues' buckets, and none per queue.
TEST(IntervalHistogram, ByDefaultOnlyPerControllerSummedOverItsQueues) {
  AgentMetrics metrics(8);
  for (uint32_t q = 1; q <= 3; ++q) {
    const QueueId id = metrics.AddQueue(Queue(q), true);
    collect::QueueCounters counters;
    counters.interval_histogram[5] = q;
    counters.interval_histogram[31] = 10;
    metrics.UpdateQueue(id, counters, ReapMode::kInterrupt);
  }
  metrics.UpdateQueue(metrics.AddQueue({"kernel", "nvme1", 1}, true), Counters(5), ReapMode::kInterrupt);
  const Exposition scrape = Scrape(metrics);
  EXPECT_TRUE(scrape.Find("nvme_adapt_queue_completion_interval_seconds_bucket", QueueMatch(1)).empty());
  const std::map<std::string, std::string> nvme0 = {{"source", "kernel"}, {"controller", "nvme0"}};
  EXPECT_EQ(scrape.Value("nvme_adapt_controller_completion_interval_seconds_count", nvme0), 1 + 2 + 3 + 30);
  auto le = nvme0;
  le["le"] = "6.4e-08";  // 2^6 ns: BPF bucket 5 and below
  EXPECT_EQ(scrape.Value("nvme_adapt_controller_completion_interval_seconds_bucket", le), 6);
  EXPECT_EQ(scrape.Value("nvme_adapt_controller_completion_interval_seconds_count",
                         {{"source", "kernel"}, {"controller", "nvme1"}}), 5);
  EXPECT_EQ(scrape.Find("nvme_adapt_controller_completion_interval_seconds_bucket", nvme0).size(),
            collect::kHistBuckets);
}

// Series that would be 0 on most queues of a fleet appear with their first count, as switch reasons do.
TEST(AgentMetricsQueues, PathsAndTryResultsAppearWithTheirFirstCount) {
  AgentMetrics metrics(4);
  const QueueId id = metrics.AddQueue(Queue(1), true);
  metrics.UpdateQueue(id, Counters(10), ReapMode::kInterrupt);
  Exposition scrape = Scrape(metrics);
  EXPECT_TRUE(scrape.Find("nvme_adapt_queue_completions_reaped_total", QueueMatch(1)).empty());
  EXPECT_TRUE(scrape.Find("nvme_adapt_queue_poll_tries_total", QueueMatch(1)).empty());
  collect::QueueCounters counters = Counters(10);
  counters.poll_completions = 10;
  metrics.UpdateQueue(id, counters, ReapMode::kPoll);
  metrics.OnPollTry(id, PollTryResult::kNotFaster);
  scrape = Scrape(metrics);
  auto poll = QueueMatch(1);
  poll["path"] = "poll";
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_completions_reaped_total", poll), 10);
  EXPECT_EQ(scrape.Find("nvme_adapt_queue_completions_reaped_total", QueueMatch(1)).size(), 1u);
  auto not_faster = QueueMatch(1);
  not_faster["result"] = "not_faster";
  EXPECT_EQ(scrape.Value("nvme_adapt_queue_poll_tries_total", not_faster), 1);
  EXPECT_EQ(scrape.Find("nvme_adapt_queue_poll_tries_total", QueueMatch(1)).size(), 1u);
}

TEST(LabelValues, FreeFormValuesAreCutToASafeCharacterSetAndLength) {
  EXPECT_EQ(SanitizeLabelValue("nvme0"), "nvme0");
  EXPECT_EQ(SanitizeLabelValue("/nvmeadapt.v1.Agent/GetStatus"), "/nvmeadapt.v1.Agent/GetStatus");
  EXPECT_EQ(SanitizeLabelValue("a b\"c\n"), "a_b_c_");
  EXPECT_EQ(SanitizeLabelValue(""), "none");
  EXPECT_EQ(SanitizeLabelValue(std::string(200, 'x')).size(), kMaxLabelValueLength);
}

TEST(LabelValues, BoundedValuesFoldIntoOtherPastTheLimit) {
  BoundedLabelValues values(2);
  EXPECT_EQ(values.Admit("a"), "a");
  EXPECT_EQ(values.Admit("b"), "b");
  EXPECT_EQ(values.Admit("c"), kOtherLabelValue);
  EXPECT_EQ(values.Admit("a"), "a");
  EXPECT_EQ(values.admitted(), 2u);
}

TEST(LabelValues, GrpcCodesHaveTheirCanonicalNames) {
  EXPECT_EQ(GrpcCodeName(0), "OK");
  EXPECT_EQ(GrpcCodeName(5), "NOT_FOUND");
  EXPECT_EQ(GrpcCodeName(16), "UNAUTHENTICATED");
  EXPECT_EQ(GrpcCodeName(17), "UNKNOWN");
  EXPECT_EQ(GrpcCodeName(-1), "UNKNOWN");
}

TEST(LabelValues, PollTryResultsComeFromTheDecisionsThatJudgeAPollingWindow) {
  engine::Decision decision;
  decision.reason = engine::Reason::kPollWindowFaster;
  EXPECT_EQ(PollTryResultOf(decision), PollTryResult::kSuccess);
  decision.reason = engine::Reason::kBehindPace;
  EXPECT_EQ(PollTryResultOf(decision), PollTryResult::kBehindPace);
  decision.reason = engine::Reason::kNotFaster;
  EXPECT_EQ(PollTryResultOf(decision), PollTryResult::kNotFaster);
  decision.reason = engine::Reason::kStalled;
  EXPECT_EQ(PollTryResultOf(decision), PollTryResult::kStalled);
  decision.reason = engine::Reason::kWindowFast;
  EXPECT_EQ(PollTryResultOf(decision), std::nullopt);
}

// Floods every label that takes outside input and checks the exposition's label values stay in bounds.
TEST(LabelValues, EveryLabelOfTheExpositionStaysWithinItsBound) {
  AgentMetrics metrics(4);
  const QueueId id = metrics.AddQueue(Queue(1), true);
  for (int i = 0; i < 100; ++i) {
    metrics.OnLeverError("lever" + std::to_string(i), static_cast<ErrorCode>(i % 9));
    metrics.OnGrpcRequest("/made.up/Method" + std::to_string(i), i);
    metrics.OnSwitch(id, static_cast<engine::Reason>(i % 14));
    metrics.OnPollTry(id, kAllPollTryResults[i % 4]);
  }
  collect::CollectorStats stats;
  for (int i = 0; i < 100; ++i) stats.programs.push_back({"prog" + std::to_string(i), 1, 1});
  metrics.SetCollector("bpf", stats);
  const Exposition scrape = Scrape(metrics);

  std::map<std::string, std::set<std::string>> values;
  for (const auto& sample : scrape.samples) {
    for (const auto& [name, value] : sample.labels) values[name].insert(value);
  }
  std::set<std::string> reasons, errors;
  for (int r = 0; r < 14; ++r) reasons.insert(std::string(engine::ReasonName(static_cast<engine::Reason>(r))));
  for (int e = 0; e < 9; ++e) errors.insert(std::string(ErrorCodeName(static_cast<ErrorCode>(e))));
  for (const auto& reason : values["reason"]) EXPECT_TRUE(reasons.count(reason)) << reason;
  for (const auto& error : values["error"]) EXPECT_TRUE(errors.count(error)) << error;
  EXPECT_EQ(values["result"], (std::set<std::string>{"success", "behind_pace", "not_faster", "stalled"}));
  EXPECT_EQ(values["lever"].size(), kMaxLeverNames + 1);
  EXPECT_TRUE(values["lever"].count("other"));
  EXPECT_EQ(values["method"].size(), kMaxGrpcMethods + 1);
  EXPECT_EQ(values["program"].size(), kMaxBpfPrograms + 1);
  EXPECT_LE(values["code"].size(), 17u);
  EXPECT_EQ(scrape.Value("nvme_adapt_bpf_runs_total", {{"program", "other"}}), 100 - kMaxBpfPrograms);
}

}  // namespace
}  // namespace nvmeadapt::metrics
