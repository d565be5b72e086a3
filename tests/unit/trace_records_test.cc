// SPDX-License-Identifier: Apache-2.0
// Each record kind of the trace format on its own: what its decoder takes, what it refuses and in which
// order the replayer checks a line (the verb's queue, then its time, then the verb itself).
#include <gtest/gtest.h>

#include "agent/engine/trace.h"
#include "agent/engine/policy_fields.h"
#include "agent/engine/trace_words.h"

namespace nvmeadapt::engine {
namespace {

std::string FirstError(const char* text) {
  auto result = ReplayTrace(text);
  return result ? "(accepted)" : result.error().message;
}

TEST(TraceRecords, EachKindRefusesAShortLineWithItsUsage) {
  EXPECT_EQ(FirstError("queue\n"), "line 1: queue: expected 'queue NAME [eligible=0|1] [reap=MODE] [safe=MODE] [POLICY...]'");
  EXPECT_EQ(FirstError("remove\n"), "line 1: remove: expected 'remove NAME'");
  EXPECT_EQ(FirstError("queue q\nwindow q poll 1 2\n"),
            "line 2: window: expected 'window NAME MODE COMPLETIONS START END [miss=K:ELAPSED]'");
  EXPECT_EQ(FirstError("queue q\noverride q 1\n"), "line 2: override: expected 'override NAME NOW MODE|none [expires=NS]'");
  EXPECT_EQ(FirstError("queue q\nlever q 1\n"), "line 2: lever: expected 'lever NAME NOW MODE'");
}

TEST(TraceRecords, TheQueueIsLookedUpBeforeTheTimeAndTheTimeBeforeTheVerb) {
  EXPECT_EQ(FirstError("window\n"), "line 1: window: no queue");
  EXPECT_EQ(FirstError("lever nowhere 1 poll\n"), "line 1: unknown queue 'nowhere'");
  EXPECT_EQ(FirstError("queue q\nlever q\n"), "line 2: lever: no time");
  EXPECT_EQ(FirstError("queue q\npolicy q soon\n"), "line 2: now: not a number: 'soon'");
  EXPECT_EQ(FirstError("queue q\nfrobnicate q\n"), "line 2: frobnicate: no time");
  EXPECT_EQ(FirstError("queue q\nfrobnicate q 1\n"), "line 2: unknown verb 'frobnicate'");
}

TEST(TraceRecords, ASwitchLineIsARecordForPeopleAndNeedsNoQueue) {
  auto decisions = ReplayTrace("switch nowhere 3 interrupt->poll lever=socket\nswitch\n");
  ASSERT_TRUE(decisions) << decisions.error().message;
  EXPECT_TRUE(decisions->empty());
}

TEST(TraceRecords, QueueKeysAreCheckedAndTheReapModesTaken) {
  EXPECT_EQ(FirstError("queue q colour=blue\n"), "line 1: queue: unknown key 'colour'");
  EXPECT_EQ(FirstError("queue q reap=sideways\n"), "line 1: unknown reaping mode 'sideways' (interrupt, poll)");
  EXPECT_EQ(FirstError("queue q window\n"), "line 1: expected key=value, got 'window'");
  EXPECT_EQ(FirstError("queue q batch=2\n"), "line 1: batch: expected 0 or 1, got '2'");
  TraceReplayer replayer;
  ASSERT_TRUE(replayer.Apply("queue q eligible=1 reap=poll safe=poll mode=adaptive"));
  const QueueView view = replayer.engine().View(*replayer.Handle("q"));
  EXPECT_TRUE(view.eligible);
  EXPECT_EQ(view.policy.mode, ControllerMode::kAdaptive);
}

TEST(TraceRecords, AWindowsMissTakesItsBatchAndRefusesAnEmptyOne) {
  EXPECT_EQ(FirstError("queue q\nwindow q poll 8 0 9 miss=3\n"), "line 2: window: expected miss=K:ELAPSED[:N], got 'miss=3'");
  EXPECT_EQ(FirstError("queue q\nwindow q poll 8 0 9 miss=3:4:0\n"), "line 2: window: miss n must be >= 1");
  EXPECT_EQ(FirstError("queue q\nwindow q poll 8 0 9 miss=3:x\n"), "line 2: miss elapsed: not a number: 'x'");
  EXPECT_EQ(FirstError("queue q\nwindow q poll 8 0 9 miss=3:4:2\n"), "(accepted)");
}

TEST(TraceRecords, PolicyOverrideAndLeverRecordsCheckTheirWords) {
  EXPECT_EQ(FirstError("queue q\npolicy q 1 eligible=1\n"), "line 2: policy: unknown key 'eligible'");
  EXPECT_EQ(FirstError("queue q\npolicy q 1 window=0\n").substr(0, 26), "line 2: window_completions");
  EXPECT_EQ(FirstError("queue q\noverride q 1 poll until=5\n"), "line 2: override: expected expires=NS");
  EXPECT_EQ(FirstError("queue q\noverride q 1 poll expires=x\n"), "line 2: expires: not a number: 'x'");
  EXPECT_EQ(FirstError("queue q\nlever q 1 sideways\n"), "line 2: unknown reaping mode 'sideways' (interrupt, poll)");
  EXPECT_EQ(FirstError("queue q\ntimer q 1 2 3 later\n"), "line 2: last: not a number: 'later'");
  EXPECT_EQ(FirstError("queue q\nremove q\nremove q\n"), "line 3: unknown queue 'q'");
}

TEST(TraceRecords, CommentsAndBlankLinesAreSkipped) {
  auto decisions = ReplayTrace("# a trace\n\n   \t\nqueue q  # the only one\n");
  ASSERT_TRUE(decisions) << decisions.error().message;
  EXPECT_TRUE(decisions->empty());
}

TEST(TraceWords, ALineSplitsAtRunsOfBlanksAndTabs) {
  EXPECT_EQ(TraceWords("  window\tq1   poll 8\t\t"), (std::vector<std::string_view>{"window", "q1", "poll", "8"}));
  EXPECT_TRUE(TraceWords(" \t ").empty());
}

TEST(TraceWords, PolicyWordsSetTheirFieldsAndHandBackTheRestInOrder) {
  Policy policy;
  const std::vector<std::string_view> words = {"window=64", "eligible=1", "threshold=7", "reap=poll", "batch=1"};
  auto rest = ApplyPolicyWords(words, policy);
  ASSERT_TRUE(rest) << rest.error().message;
  EXPECT_EQ(policy.window_completions, 64u);
  EXPECT_EQ(policy.poll_threshold, 7);
  EXPECT_TRUE(policy.batch_pace_allowance);
  EXPECT_EQ(*rest, (TraceKeyValues{{"eligible", "1"}, {"reap", "poll"}}));
  const std::vector<std::string_view> bad = {"credit=lots"};
  EXPECT_EQ(ApplyPolicyWords(bad, policy).error().message, "credit: not a number: 'lots'");
  EXPECT_EQ(TraceNumber<uint32_t>("12x", "k").error().message, "k: not a number: '12x'");
}

TEST(TraceWords, APatchPresetProfileWordSetsThePatchsRulesUnderTheWordsAfterIt) {
  Policy policy;
  policy.mode = ControllerMode::kShadow;
  const std::vector<std::string_view> words = {"profile=patch", "window=64"};
  ASSERT_TRUE(ApplyPolicyWords(words, policy));
  Policy expected = PatchPreset();
  expected.window_completions = 64;
  expected.mode = ControllerMode::kShadow;
  EXPECT_EQ(policy, expected);
  const std::vector<std::string_view> bad = {"profile=fast"};
  EXPECT_EQ(ApplyPolicyWords(bad, policy).error().message, "unknown profile 'fast' (default, patch, observe, throughput, latency)");
}

}  // namespace
}  // namespace nvmeadapt::engine
