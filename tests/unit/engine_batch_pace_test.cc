// SPDX-License-Identifier: Apache-2.0
// The batch-aware pace of DESIGN.md section 3 (amended): a reap of n completions that brings a polling
// window to completion k is behind iff elapsed x N > (k + n - 1) x S + slack x N; with the allowance off
// (and for n = 1 either way) the index is k, the patch's rule. Boundaries to the nanosecond.
#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

constexpr Nanos kAvg = 5 * kUs;  // the baseline: 8192 completions 5 us apart
constexpr Nanos kSpan = kAvg * kWindow;
constexpr Nanos kSlack = 20 * kUs;

Policy WithAllowance(bool allowance) {
  Policy p = Adaptive();
  p.batch_pace_allowance = allowance;
  return p;
}

class BatchPace : public EngineFixture, public ::testing::WithParamInterface<bool> {};

TEST_P(BatchPace, OneCompletionAtATimeIsThePatchsRuleWhateverTheSetting) {
  QueueHandle q = Add(WithAllowance(GetParam()));
  StartTry(q, kAvg);
  EXPECT_EQ(Engine::PaceIndex(100, 1, GetParam()), 100u);
  const Nanos limit = Engine::PaceLimit(100, kSpan, kWindow, kSlack);
  EXPECT_EQ(limit, 100 * kAvg + kSlack);
  EXPECT_FALSE(Miss(q, 100, limit, 1));
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
  auto d = Miss(q, 100, limit + 1, 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
  EXPECT_EQ(d->limit, limit);
  EXPECT_EQ(d->pace_batch, 1u);
}

INSTANTIATE_TEST_SUITE_P(AllowanceOnAndOff, BatchPace, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "On" : "Off"; });

TEST_F(EngineFixture, ABatchOfSixteenIsForgivenFifteenCompletionsOfPace) {
  QueueHandle q = Add(WithAllowance(true));
  StartTry(q, kAvg);
  const uint32_t k = 16, n = 16;  // the first reap brought 16 at once
  const Nanos limit = Engine::PaceLimit(k + n - 1, kSpan, kWindow, kSlack);
  EXPECT_EQ(limit, 31 * kAvg + kSlack);
  EXPECT_FALSE(Miss(q, k, limit, n)) << "exactly at the limit of k + n - 1 is on pace";
  EXPECT_EQ(engine_.View(q).state, QueueState::kPolling);
  auto d = Miss(q, k, limit + 1, n);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
  EXPECT_EQ(d->pace_index, k);
  EXPECT_EQ(d->pace_batch, n);
  EXPECT_EQ(d->limit, limit);
}

TEST_F(EngineFixture, WithoutTheAllowanceABatchIsHeldToItsLastCompletionsIndex) {
  QueueHandle q = Add(WithAllowance(false));
  StartTry(q, kAvg);
  const uint32_t k = 16, n = 16;
  const Nanos limit = Engine::PaceLimit(k, kSpan, kWindow, kSlack);
  EXPECT_EQ(limit, 16 * kAvg + kSlack);
  EXPECT_FALSE(Miss(q, k, limit, n));
  auto d = Miss(q, k, limit + 1, n);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
  EXPECT_EQ(d->limit, limit);
}

TEST_F(EngineFixture, TheAllowanceWorksOnAFractionalBaselineToTheNanosecond) {
  // 8192 completions in 8192 x 5 us + 1 ns: the limit at index 23 (k = 16, n = 8) is
  // floor(23 x span / 8192) + slack = 23 x 5 us + 0 + slack.
  const Nanos span = kSpan + 1;
  const uint32_t index = Engine::PaceIndex(16, 8, true);
  ASSERT_EQ(index, 23u);
  EXPECT_FALSE(Engine::BehindPace(index, 23 * kAvg + kSlack, span, kWindow, kSlack));
  EXPECT_TRUE(Engine::BehindPace(index, 23 * kAvg + kSlack + 1, span, kWindow, kSlack));
}

TEST(PolicyLimits, AWindowTheBpfSideCannotCountIsRefusedWithTheFieldNamed) {
  Policy p = Adaptive();
  p.window_completions = 1u << 20;  // one more than the BPF side's 20-bit window count
  Status status = ValidatePolicy(p);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, "policy.window_completions: must be in [1, 1048575] (got 1048576)");
  p.window_completions = (1u << 20) - 1;
  EXPECT_TRUE(ValidatePolicy(p));
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
