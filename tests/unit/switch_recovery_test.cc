// SPDX-License-Identifier: Apache-2.0
// The switch recovery's seam (issue 19): what a failed switch leaves on its queue and its lever, and what
// a switch that applied clears.
#include "agent/daemon/switch_recovery.h"

#include <gtest/gtest.h>

namespace nvmeadapt::daemon {
namespace {

ManagedQueue Queue(const std::string& lever) {
  ManagedQueue q;
  q.name = "nvme0:q1";
  q.lever = lever;
  return q;
}

const v1::LeverStatus* Lever(const v1::GetStatusResponse& status, const std::string& name) {
  for (const auto& lever : status.levers()) {
    if (lever.name() == name) return &lever;
  }
  return nullptr;
}

TEST(SwitchRecovery, AFailureDegradesTheQueueNamingItsLeverAndBacksOffUpToAMinute) {
  SwitchRecovery recovery;
  ManagedQueue q = Queue("sysfs");
  EXPECT_TRUE(recovery.Failed(q, MakeError(ErrorCode::kUnavailable, "controller busy")));
  EXPECT_TRUE(q.degraded());
  EXPECT_EQ(q.degraded_reason, "sysfs: controller busy");
  EXPECT_EQ(q.retry_delay, 1'000'000'000);
  EXPECT_TRUE(recovery.Failed(q, MakeError(ErrorCode::kIo, "sysfs: write failed")));
  EXPECT_EQ(q.degraded_reason, "sysfs: write failed") << "a lever's own error already names it";
  EXPECT_EQ(q.retry_delay, 2'000'000'000);
  for (int i = 0; i < 10; ++i) recovery.Failed(q, MakeError(ErrorCode::kIo, "again"));
  EXPECT_EQ(q.retry_delay, 60'000'000'000);
}

TEST(SwitchRecovery, OnlyTransientFailuresAreWorthRetrying) {
  SwitchRecovery recovery;
  ManagedQueue q = Queue("admin");
  EXPECT_FALSE(recovery.Failed(q, MakeError(ErrorCode::kRefused, "Feature Not Changeable (0x410e)")));
  EXPECT_FALSE(recovery.Failed(q, MakeError(ErrorCode::kPermissionDenied, "EPERM")));
  EXPECT_FALSE(recovery.Failed(q, MakeError(ErrorCode::kUnsupported, "no lever")));
  EXPECT_TRUE(recovery.Failed(q, MakeError(ErrorCode::kInternal, "bug")));
}

TEST(SwitchRecovery, AnAppliedSwitchMakesTheQueueWholeAndTheLeverAvailableAgain) {
  SwitchRecovery recovery;
  ManagedQueue q = Queue("uvnvme");
  recovery.Failed(q, MakeError(ErrorCode::kPermissionDenied, "uvnvme: socket: EACCES"));
  SwitchRecovery::PlanRetry(q, ReapMode::kPoll, engine::Reason::kOverride, 5);
  v1::GetStatusResponse before;
  recovery.DescribeLevers({&q}, before);
  ASSERT_NE(Lever(before, "uvnvme"), nullptr);
  EXPECT_FALSE(Lever(before, "uvnvme")->available()) << "a missing permission says the machine forbids it";
  EXPECT_EQ(Lever(before, "uvnvme")->errors(), 1u);
  EXPECT_EQ(q.retry_mode, ReapMode::kPoll);
  recovery.Applied(q);
  EXPECT_FALSE(q.degraded());
  EXPECT_TRUE(q.degraded_reason.empty());
  EXPECT_FALSE(q.retry_mode);
  EXPECT_EQ(q.retry_delay, 0);
  v1::GetStatusResponse after;
  recovery.DescribeLevers({&q}, after);
  EXPECT_TRUE(Lever(after, "uvnvme")->available());
  EXPECT_EQ(Lever(after, "uvnvme")->errors(), 1u) << "the count stays";
}

TEST(SwitchRecovery, StatusListsEveryLeverServingAQueueAndAQueueWithoutOneAsNone) {
  SwitchRecovery recovery;
  ManagedQueue served = Queue("sysfs");
  ManagedQueue unserved = Queue("");
  recovery.Failed(unserved, MakeError(ErrorCode::kUnsupported, "no lever"));
  v1::GetStatusResponse status;
  recovery.DescribeLevers({&served, &unserved}, status);
  ASSERT_EQ(status.levers_size(), 2);
  EXPECT_TRUE(Lever(status, "sysfs")->available());
  EXPECT_EQ(Lever(status, "sysfs")->errors(), 0u);
  EXPECT_FALSE(Lever(status, "none")->available());
}

}  // namespace
}  // namespace nvmeadapt::daemon
