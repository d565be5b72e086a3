// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "agent/engine/trace.h"

namespace nvmeadapt::engine {
namespace {

TEST(Trace, ReplayProducesTheEngineDecisions) {
  auto decisions = ReplayTrace(
      "queue q1 eligible=1 mode=adaptive\n"
      "window q1 interrupt 8192 0 40960000  # 5 us average\n"
      "window q1 poll 8192 40960000 73728000\n");
  ASSERT_TRUE(decisions) << decisions.error().message;
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0],
            "q1 at=40960000 interrupt->poll reason=window_fast state=polling failures=0 measured=40960000 "
            "limit=81920000");
  EXPECT_EQ((*decisions)[1],
            "q1 at=73728000 poll->poll reason=poll_window_faster state=polling failures=0 measured=32768000 "
            "limit=40960000");
}

TEST(Trace, FormattedLinesParseBack) {
  QueueSetup setup{true, Policy{}, ReapMode::kPoll, ReapMode::kInterrupt};
  setup.policy.mode = ControllerMode::kAdaptive;
  setup.policy.pace_slack = 7;
  TraceReplayer replayer;
  ASSERT_TRUE(replayer.Apply(FormatQueueLine("a", setup)));
  const QueueView view = replayer.engine().View(*replayer.Handle("a"));
  EXPECT_EQ(view.policy, setup.policy);
  EXPECT_TRUE(view.eligible);
  ASSERT_TRUE(replayer.Apply(FormatWindowLine("a", WindowRecord{0, ReapMode::kInterrupt, 10, 1, 2, PaceMiss{3, 4}})));
  ASSERT_TRUE(replayer.Apply(FormatTimerLine("a", 5, WindowProgress{1, 2})));
  ASSERT_TRUE(replayer.Apply(FormatPolicyLine("a", 6, setup.policy)));
  ASSERT_TRUE(replayer.Apply(FormatOverrideLine("a", 7, Override{ReapMode::kPoll, 99})));
  ASSERT_TRUE(replayer.Apply(FormatOverrideLine("a", 8, std::nullopt)));
  ASSERT_TRUE(replayer.Apply(FormatLeverLine("a", 9, ReapMode::kPoll)));
  ASSERT_TRUE(replayer.Apply("remove a"));
  EXPECT_FALSE(replayer.Handle("a"));
}

TEST(Trace, RulesATraceDoesNotNameReplayAsTheyRanBeforeThem) {
  QueueSetup setup{true, Policy{}, ReapMode::kInterrupt, ReapMode::kInterrupt};
  setup.policy.pace_credit = 300'000;
  setup.policy.max_backoff_windows = 512;
  setup.policy.backoff_load_change_percent = 40;
  setup.policy.max_poll_run_windows = 256;
  setup.policy.stall_backoff = false;
  TraceReplayer now;
  ASSERT_TRUE(now.Apply(FormatQueueLine("a", setup)));
  EXPECT_EQ(now.engine().View(*now.Handle("a")).policy, setup.policy);

  TraceReplayer old;
  ASSERT_TRUE(old.Apply("queue a eligible=1 window=8192 slack=20000 backoff=64 mode=adaptive"));
  const Policy replayed = old.engine().View(*old.Handle("a")).policy;
  EXPECT_EQ(replayed.settle_windows, 0u);
  EXPECT_EQ(replayed.pace_credit, 0);
  EXPECT_EQ(replayed.max_backoff_windows, 0u);
  EXPECT_EQ(replayed.backoff_load_change_percent, 0u);
  EXPECT_EQ(replayed.max_poll_run_windows, 0u);
  EXPECT_FALSE(replayed.stall_backoff);
}

TEST(Trace, BadLinesAreRefusedWithTheLineNumberAndTheProblem) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"queue q\nwindow q sideways 1 2 3\n", "line 2: unknown reaping mode 'sideways' (interrupt, poll)"},
      {"window nowhere interrupt 1 2 3\n", "line 1: unknown queue 'nowhere'"},
      {"queue q\nwindow q poll x 2 3\n", "line 2: completions: not a number: 'x'"},
      {"queue q mode=sometimes\n", "line 1: unknown controller mode 'sometimes'"},
      {"queue q slack=-5\n", "line 1: pace_slack_ns: must be in [0, 10000000000] (got -5)"},
      {"queue q\nqueue q\n", "line 2: queue 'q' exists"},
      {"queue q\ntimer q 1\n", "line 2: timer: expected 'timer NAME NOW START COMPLETIONS [LAST]'"},
      {"frobnicate q 1\n", "line 1: unknown queue 'q'"},
      {"queue q\nfrobnicate q 1\n", "line 2: unknown verb 'frobnicate'"},
  };
  for (const Case& c : cases) {
    auto result = ReplayTrace(c.text);
    ASSERT_FALSE(result) << c.text;
    EXPECT_EQ(result.error().message, c.message) << c.text;
  }
}

}  // namespace
}  // namespace nvmeadapt::engine
