// SPDX-License-Identifier: Apache-2.0
// The `patch` profile (agent/engine/policy_fields.h) runs the adaptive-polling patch's cover letter's rules:
// 8192-completion windows, try at <= 10 us per completion, 20 us of pace slack, polling strictly faster than
// the baseline, a backoff of 64 windows after 3 failures, re-measure after 64 polling windows; and none of
// nvme-adapt's additions (pace credit, settling, batch allowance, run growth, stall backoff, doubling). At the
// end, the one other profile whose rule a goal depends on: `latency` tries at QD1's pace.
#include <gtest/gtest.h>

#include "agent/engine/policy_fields.h"
#include "tests/unit/engine_fixture.h"

namespace nvmeadapt::engine::testing {
namespace {

class PatchPreset : public EngineFixture {
 protected:
  static Policy Deciding() {
    Policy p = engine::PatchPreset();
    p.mode = ControllerMode::kAdaptive;
    return p;
  }
  // Fails the try in flight with a polling window no faster than its 5 us baseline.
  void FailTry(QueueHandle q) {
    StartTry(q);
    auto d = Poll(q, 5 * kUs * kWindow);
    ASSERT_TRUE(d);
    ASSERT_EQ(d->reason, Reason::kNotFaster);
  }
};

TEST_F(PatchPreset, IsEveryRowsPatchValueAndTheProfileNamedPatch) {
  const Policy p = engine::PatchPreset();
  for (const PolicyField& field : PolicyFields()) EXPECT_EQ(field.get(p), field.patch) << field.name;
  const PolicyProfile* named = FindPolicyProfile("patch");
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->policy, p);
  EXPECT_EQ(FindPolicyProfile("default")->policy, Policy{});
  EXPECT_TRUE(ValidatePolicy(p));
}

TEST_F(PatchPreset, WindowsOf8192CompletionsTryAtTenMicrosecondsPerCompletion) {
  const QueueHandle q = Add(Deciding());
  // One completion short of a window measures nothing.
  EXPECT_FALSE(Interrupt(q, 10 * kUs * 8191, 8191));
  auto d = Interrupt(q, 10 * kUs * 8192 + 1, 8192);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
  EXPECT_EQ(d->limit, 10 * kUs * 8192);
  d = Interrupt(q, 10 * kUs * 8192, 8192);  // at most the threshold: try
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_EQ(d->to, ReapMode::kPoll);
}

TEST_F(PatchPreset, APollingWindowMayFallTwentyMicrosecondsBehindNoMore) {
  const QueueHandle q = Add(Deciding());
  StartTry(q);
  EXPECT_FALSE(Miss(q, 100, 100 * 5 * kUs + 20 * kUs));  // at the limit: forgiven
  auto d = Miss(q, 100, 100 * 5 * kUs + 20 * kUs + 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
  EXPECT_EQ(d->limit, 100 * 5 * kUs + 20 * kUs);
}

TEST_F(PatchPreset, ABatchIsHeldToItsOwnIndexWithoutAllowance) {
  const QueueHandle q = Add(Deciding());
  StartTry(q);
  // 8 completions reaped at once bringing the window to k = 100: held to k, not to k + 7.
  auto d = Miss(q, 100, 100 * 5 * kUs + 20 * kUs + 1, 8);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
  EXPECT_EQ(d->limit, 100 * 5 * kUs + 20 * kUs);
}

TEST_F(PatchPreset, PollingMustBeStrictlyFaster) {
  const QueueHandle q = Add(Deciding());
  StartTry(q);
  auto d = Poll(q, 5 * kUs * kWindow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kNotFaster);
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
}

TEST_F(PatchPreset, ThreeFailuresBackOff64WindowsEveryTime) {
  const QueueHandle q = Add(Deciding());
  for (int round = 0; round < 2; ++round) {  // the second backoff is as long: no doubling
    FailTry(q);
    FailTry(q);
    EXPECT_EQ(engine_.View(q).state, QueueState::kMeasuring);
    StartTry(q);
    auto d = Poll(q, 5 * kUs * kWindow);
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->backoff_started);
    EXPECT_EQ(engine_.View(q).backoff_left, 64u);
    for (int i = 0; i < 63; ++i) ASSERT_EQ(Interrupt(q, 5 * kUs * kWindow)->reason, Reason::kBackingOff);
    EXPECT_EQ(Interrupt(q, 5 * kUs * kWindow)->reason, Reason::kBackoffOver);
  }
}

TEST_F(PatchPreset, The64thPollingWindowReMeasuresEveryRunAndTheNextWindowIsTheBaseline) {
  const QueueHandle q = Add(Deciding());
  StartTry(q);
  for (int run = 0; run < 2; ++run) {  // the second run is as long: no growth
    for (int i = 0; i < 63; ++i) ASSERT_EQ(Poll(q, 4 * kUs * kWindow)->reason, Reason::kPollWindowFaster);
    auto d = Poll(q, 4 * kUs * kWindow);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->reason, Reason::kMaxPollWindows);
    // No settling: the first interrupt-mode window after polling is the baseline and decides.
    d = Interrupt(q, 5 * kUs * kWindow);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->reason, Reason::kWindowFast);
  }
}

TEST_F(PatchPreset, AKeptWindowLendsTheNextNoCredit) {
  const QueueHandle q = Add(Deciding());
  StartTry(q);
  ASSERT_EQ(Poll(q, 2 * kUs * kWindow)->reason, Reason::kPollWindowFaster);  // far ahead of its limit
  EXPECT_EQ(engine_.View(q).pace_credit, 0);
  auto d = Miss(q, 10, 10 * 5 * kUs + 20 * kUs + 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kBehindPace);
}

TEST_F(PatchPreset, AStalledTryIsOneFailureNotABackoff) {
  const QueueHandle q = Add(Deciding());
  StartTry(q);
  const Nanos start = now_;
  now_ += 2'000'000;
  auto d = engine_.OnTimer(q, now_, WindowProgress{start, 2, start + 10 * kUs});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kStalled);
  EXPECT_FALSE(d->backoff_started);
  EXPECT_EQ(engine_.View(q).failures, 1u);
}

// The `latency` profile tries polling at QD1's pace (a completion every 31 us on uvnvme, 47 us on the issue's
// machine), which the default profile leaves in interrupt mode, and turns the node layer on so the node's
// CPU budget decides whether the queue may poll.
TEST_F(PatchPreset, TheLatencyProfileTriesAtQd1PaceUnderTheNodeLayerAndTheDefaultDoesNot) {
  const PolicyProfile* named = FindPolicyProfile("latency");
  ASSERT_NE(named, nullptr);
  Policy latency = named->policy;
  latency.mode = ControllerMode::kAdaptive;
  EXPECT_TRUE(latency.node_layer);
  EXPECT_TRUE(ValidatePolicy(latency));
  const uint32_t window = latency.window_completions;
  const QueueHandle q = Add(latency);
  auto d = Interrupt(q, 47 * kUs * window, window);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowFast);
  EXPECT_EQ(d->to, ReapMode::kPoll);

  Policy by_default;
  by_default.mode = ControllerMode::kAdaptive;
  const QueueHandle other = Add(by_default);
  d = Interrupt(other, 47 * kUs * by_default.window_completions, by_default.window_completions);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Reason::kWindowSlow);
  EXPECT_EQ(d->to, ReapMode::kInterrupt);
}

}  // namespace
}  // namespace nvmeadapt::engine::testing
