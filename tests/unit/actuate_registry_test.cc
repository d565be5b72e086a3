// SPDX-License-Identifier: Apache-2.0
// The registry of levers (lever_registry.h): every lever of the vocabulary registered once, with what it states
// of itself, and built from the settings.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/actuate/lever_registry.h"
#include "tests/unit/lever_printers.h"

namespace nvmeadapt::actuate {
namespace {

// Every lever of the vocabulary registered itself once (the library is linked whole), and builds its kind.
TEST(LeverRegistry, EveryLeverKindButAutoIsRegisteredAndBuildsItsKind) {
  const config::LeverSettings settings;
  const LeverEnvironment environment;
  std::vector<LeverKind> expected;
  for (const auto& row : kLeverKinds) {
    if (row.value != LeverKind::kAuto) expected.push_back(row.value);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(RegisteredLevers(), expected);
  EXPECT_EQ(FindLever(LeverKind::kAuto), nullptr);
  for (LeverKind kind : expected) {
    SCOPED_TRACE(LeverKindName(kind));
    ASSERT_NE(FindLever(kind), nullptr);
    EXPECT_EQ(FindLever(kind)->traits.kind, kind);
    for (bool dry_run : {false, true}) {
      auto lever = MakeLever(kind, dry_run, settings, environment);
      ASSERT_NE(lever, nullptr);
      EXPECT_EQ(lever->Kind(), kind);
      EXPECT_EQ(lever->DryRun(), dry_run || kind == LeverKind::kDryRun);
    }
  }
  EXPECT_EQ(MakeLever(LeverKind::kAuto, false, settings, environment)->Kind(), LeverKind::kDryRun);
}

// What each lever states of itself: what a switch disturbs, what adaptive means for it, whether it is spaced.
TEST(LeverRegistry, EachLeverStatesItsRiskItsAdaptiveModeAndWhetherItDisrupts) {
  struct Expected {
    LeverKind kind;
    LeverRisk risk;
    engine::ControllerMode adaptive_as;
    bool disruptive;
  };
  using M = engine::ControllerMode;
  for (const Expected& e : {Expected{LeverKind::kAdaptivePollSysfs, LeverRisk::kDriverSpecific, M::kPoll, false},
                            Expected{LeverKind::kGsim, LeverRisk::kDriverSpecific, M::kAdaptive, false},
                            Expected{LeverKind::kCoalescing, LeverRisk::kNothingElse, M::kAdaptive, false},
                            Expected{LeverKind::kPollQueuesReset, LeverRisk::kResetsController, M::kOff, true},
                            Expected{LeverKind::kUvnvmeSocket, LeverRisk::kNothingElse, M::kAdaptive, false},
                            Expected{LeverKind::kDryRun, LeverRisk::kNothingElse, M::kAdaptive, false},
                            Expected{LeverKind::kTcpReconnect, LeverRisk::kReconnectsHost, M::kOff, true},
                            Expected{LeverKind::kNvmetPollTask, LeverRisk::kNothingElse, M::kAdaptive, false}}) {
    SCOPED_TRACE(LeverKindName(e.kind));
    const LeverTraits& traits = FindLever(e.kind)->traits;
    EXPECT_EQ(traits.risk, e.risk);
    EXPECT_EQ(traits.adaptive_as, e.adaptive_as);
    EXPECT_EQ(traits.disruptive, e.disruptive);
    EXPECT_EQ(LeverRiskOf(LeverKindName(e.kind)), e.risk);
  }
  EXPECT_EQ(LeverRiskOf("no_such_lever"), LeverRisk::kDriverSpecific);
}

TEST(DryRunLever, RecordsTheModeAndTouchesNothing) {
  // No header: the registry builds it, as it builds every lever.
  const std::unique_ptr<PlannedLever> made = MakeLever(LeverKind::kDryRun, false, {}, {});
  PlannedLever& lever = *made;
  LeverTarget target;
  target.controller = "nvme0";
  target.qid = 2;
  auto applied = lever.Apply(target, ReapMode::kPoll);
  ASSERT_TRUE(applied);
  EXPECT_EQ(applied->writes, (std::vector<WriteRecord>{{"nvme0 q2", "poll", false}}));
  EXPECT_TRUE(applied->restore.steps.empty());
  EXPECT_EQ(lever.Recorded(), applied->writes);
}

}  // namespace
}  // namespace nvmeadapt::actuate
