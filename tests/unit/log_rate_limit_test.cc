// SPDX-License-Identifier: Apache-2.0
// common/log_rate_limit.h: a subject's lines beyond its burst are held back and their count said once.
#include "common/log_rate_limit.h"

#include <gtest/gtest.h>

namespace nvmeadapt {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(LogRateLimit, LinesBeyondTheBurstAreCountedAndSaidWithTheNextLineLetOut) {
  LogRateLimit limit({.burst = 3, .period_ns = 10 * kSecond});
  std::string note;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limit.Admit("q1", i * kSecond, &note));
    EXPECT_EQ(note, "");
  }
  for (int i = 3; i < 10; ++i) EXPECT_FALSE(limit.Admit("q1", i * kSecond, &note));
  // Another subject has a burst of its own.
  EXPECT_TRUE(limit.Admit("q2", 9 * kSecond, &note));
  // A new period: the line goes out with what was held back, from the first held line (3 s) to now (10 s).
  EXPECT_TRUE(limit.Admit("q1", 10 * kSecond, &note));
  EXPECT_EQ(note, " (7 similar lines suppressed in the last 7 s)");
  EXPECT_TRUE(limit.Admit("q1", 11 * kSecond, &note));
  EXPECT_EQ(note, "");
}

TEST(LogRateLimit, AFlushSaysWhatAPeriodHeldBackOnceAndForgetsQuietSubjects) {
  LogRateLimit limit({.burst = 1, .period_ns = 10 * kSecond});
  std::string note;
  EXPECT_TRUE(limit.Admit("q1", 0, &note));
  EXPECT_FALSE(limit.Admit("q1", 1 * kSecond, &note));
  EXPECT_FALSE(limit.Admit("q1", 2 * kSecond, &note));
  EXPECT_TRUE(limit.Admit("q2", 0, &note));
  EXPECT_TRUE(limit.Flush(9 * kSecond).empty()) << "the period is not over";
  const auto said = limit.Flush(12 * kSecond);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].subject, "q1");
  EXPECT_EQ(said[0].lines, 2u);
  EXPECT_EQ(LogRateLimit::Note(said[0].lines, said[0].over_ns), " (2 similar lines suppressed in the last 11 s)");
  EXPECT_EQ(limit.subjects(), 1u) << "q2, quiet for a period, is forgotten";
  EXPECT_TRUE(limit.Flush(30 * kSecond).empty()) << "said once";
  EXPECT_EQ(limit.subjects(), 0u);
}

TEST(LogRateLimit, ASubjectForgottenSaysWhatWasHeldBack) {
  LogRateLimit limit({.burst = 1, .period_ns = 10 * kSecond});
  std::string note;
  EXPECT_TRUE(limit.Admit("q1", 0, &note));
  EXPECT_FALSE(limit.Admit("q1", 500'000'000, &note));
  const auto said = limit.Forget("q1", 600'000'000);
  ASSERT_TRUE(said.has_value());
  EXPECT_EQ(LogRateLimit::Note(said->lines, said->over_ns), " (1 similar line suppressed in the last 1 s)");
  EXPECT_FALSE(limit.Forget("q1", kSecond).has_value());
  EXPECT_EQ(limit.subjects(), 0u);
}

}  // namespace
}  // namespace nvmeadapt
