// The edges of each rule: exactly at a bound is on one side, one unit past it on the other.
#include "agent/engine/policy.h"
#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

using EngineEdges = EngineFixture;

TEST_F(EngineEdges, AWindowIsFullAtExactly8192Completions) {
  QueueHandle q = Add();
  EXPECT_FALSE(Interrupt(q, 5 * kUs * 8191, 8191));
  EXPECT_EQ(engine_.View(q).ignored_windows, 1u);
  auto d = Interrupt(q, 5 * kUs * 8192, 8192);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
}

TEST_F(EngineEdges, AverageOfExactly10usTries) {
  QueueHandle q = Add();
  auto d = Interrupt(q, 10 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kWindowFast);
}

TEST_F(EngineEdges, AverageOf10usPlus1nsDoesNotTry) {
  QueueHandle q = Add();
  auto d = Interrupt(q, (10 * kUs + 1) * kWindow);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->Switches());
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
}

TEST_F(EngineEdges, OneNanosecondOverTheWholeWindowBudgetDoesNotTry) {
  // The average is 10 us + 1/8192 ns: still above the threshold, exact arithmetic must see it.
  QueueHandle q = Add();
  auto d = Interrupt(q, 10 * kUs * kWindow + 1);
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
}

TEST_F(EngineEdges, ElapsedExactlyAtTheSlackPasses) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  const Nanos at_limit = 100 * 5 * kUs + 20 * kUs;
  EXPECT_FALSE(Engine::BehindPace(100, at_limit, 5 * kUs * kWindow, kWindow, 20 * kUs));
  EXPECT_EQ(Engine::PaceLimit(100, 5 * kUs * kWindow, kWindow, 20 * kUs), at_limit);
  EXPECT_FALSE(Miss(q, 100, at_limit));
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
}

TEST_F(EngineEdges, Elapsed1nsOverTheSlackFails) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  const Nanos over = 100 * 5 * kUs + 20 * kUs + 1;
  EXPECT_TRUE(Engine::BehindPace(100, over, 5 * kUs * kWindow, kWindow, 20 * kUs));
  auto d = Miss(q, 100, over);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
}

TEST_F(EngineEdges, PaceWithAFractionalPerCompletionBaselineIsExact) {
  // Baseline 8192 completions in 8192 * 5 us + 1 ns: at k = 8192 the limit is the baseline + slack.
  const Nanos span = 5 * kUs * kWindow + 1;
  EXPECT_FALSE(Engine::BehindPace(kWindow, span + 20 * kUs, span, kWindow, 20 * kUs));
  EXPECT_TRUE(Engine::BehindPace(kWindow, span + 20 * kUs + 1, span, kWindow, 20 * kUs));
  // At k = 1 the exact limit is 5000 + 1/8192 ns + slack: 5000 + slack passes, 5001 + slack fails.
  EXPECT_FALSE(Engine::BehindPace(1, 5 * kUs + 20 * kUs, span, kWindow, 20 * kUs));
  EXPECT_TRUE(Engine::BehindPace(1, 5 * kUs + 1 + 20 * kUs, span, kWindow, 20 * kUs));
}

TEST_F(EngineEdges, TimerExactlyAtThePaceLimitWaits) {
  Policy p = Adaptive();
  p.timer_granularity = 10 * kUs;  // the smallest: the pace limit, not the quiet period, decides here
  QueueHandle q = Add(p);
  StartTry(q, 5 * kUs);
  const Nanos start = now_;
  EXPECT_FALSE(engine_.OnTimer(q, start + 20 * kUs + 5 * kUs, WindowProgress{start, 0}));
  EXPECT_TRUE(engine_.OnTimer(q, start + 20 * kUs + 5 * kUs + 1, WindowProgress{start, 0}));
}

TEST_F(EngineEdges, TimerExactlyOnePeriodAfterTheLastCompletionJudges) {
  Policy p = Adaptive();
  p.timer_granularity = 100 * kUs;
  QueueHandle q = Add(p);
  StartTry(q, 5 * kUs);
  const Nanos start = now_;
  // 3 completions, the last at 15 us; the 4th was due at 40 us. Quiet since 15 us.
  EXPECT_FALSE(engine_.OnTimer(q, start + 115 * kUs - 1, WindowProgress{start, 3, start + 15 * kUs}));
  EXPECT_TRUE(engine_.OnTimer(q, start + 115 * kUs, WindowProgress{start, 3, start + 15 * kUs}));
}

TEST_F(EngineEdges, PollSpanEqualToTheBaselineFails) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  auto d = Poll(q, 5 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kNotFaster);
  EXPECT_EQ(d->measured, d->limit);
}

TEST_F(EngineEdges, PollSpan1nsShorterThanTheBaselinePasses) {
  QueueHandle q = Add();
  StartTry(q, 5 * kUs);
  auto d = Poll(q, 5 * kUs * kWindow - 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kPollWindowFaster);
}

TEST_F(EngineEdges, ZeroBackoffWindowsGoesStraightToMeasuring) {
  Policy p = Adaptive();
  p.max_failures = 1;
  p.backoff_windows = 0;
  QueueHandle q = Add(p);
  StartTry(q);
  auto d = Poll(q, 6 * kUs * kWindow);
  EXPECT_TRUE(d->backoff_started);
  EXPECT_EQ(d->state, QueueState::kMeasuring);
  StartTry(q);
}

TEST_F(EngineEdges, MaxPollWindowsOfOneRemeasuresAfterEverySuccess) {
  Policy p = Adaptive();
  p.max_poll_windows = 1;
  QueueHandle q = Add(p);
  StartTry(q);
  auto d = Poll(q, 4 * kUs * kWindow);
  EXPECT_EQ(d->reason, Reason::kMaxPollWindows);
  EXPECT_TRUE(d->Switches());
}

TEST(PolicyValidation, DefaultsAreThePatchDefaults) {
  Policy p;
  EXPECT_EQ(p.window_completions, 8192u);
  EXPECT_EQ(p.poll_threshold, 10'000);
  EXPECT_EQ(p.pace_slack, 20'000);
  EXPECT_EQ(p.max_failures, 3u);
  EXPECT_EQ(p.backoff_windows, 64u);
  EXPECT_EQ(p.max_poll_windows, 64u);
  EXPECT_EQ(p.timer_granularity, 1'000'000);
  EXPECT_EQ(p.mode, ControllerMode::kOff);
  EXPECT_TRUE(ValidatePolicy(p));
}

struct BadPolicyCase {
  const char* name;
  const char* field;
  void (*spoil)(Policy&);
};

class PolicyRefusal : public ::testing::TestWithParam<BadPolicyCase> {};

TEST_P(PolicyRefusal, NamesTheField) {
  Policy p;
  GetParam().spoil(p);
  Status status = ValidatePolicy(p);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(status.error().message.find(std::string("policy.") + GetParam().field), std::string::npos)
      << status.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, PolicyRefusal,
    ::testing::Values(
        BadPolicyCase{"ZeroWindow", "window_completions", [](Policy& p) { p.window_completions = 0; }},
        BadPolicyCase{"HugeWindow", "window_completions", [](Policy& p) { p.window_completions = kMaxWindowCompletions + 1; }},
        BadPolicyCase{"ZeroThreshold", "poll_threshold_ns", [](Policy& p) { p.poll_threshold = 0; }},
        BadPolicyCase{"NegativeSlack", "pace_slack_ns", [](Policy& p) { p.pace_slack = -1; }},
        BadPolicyCase{"ZeroMaxFailures", "max_failures", [](Policy& p) { p.max_failures = 0; }},
        BadPolicyCase{"ZeroMaxPollWindows", "max_poll_windows", [](Policy& p) { p.max_poll_windows = 0; }},
        BadPolicyCase{"TinyTimer", "timer_granularity_ns", [](Policy& p) { p.timer_granularity = 9'999; }},
        BadPolicyCase{"UnknownMode", "mode", [](Policy& p) { p.mode = static_cast<ControllerMode>(42); }}),
    [](const ::testing::TestParamInfo<BadPolicyCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nvmeadapt::engine::testing
