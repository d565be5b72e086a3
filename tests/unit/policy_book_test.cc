#include <gtest/gtest.h>

#include "agent/daemon/policy_book.h"

namespace nvmeadapt::daemon {
namespace {

PolicyBook Book() {
  v1::PolicySet set;
  set.mutable_policy()->set_mode(v1::CONTROLLER_MODE_ADAPTIVE);
  auto book = PolicyBook::Create(set);
  EXPECT_TRUE(book);
  return *book;
}

// Issue 15, finding 7: window_completions = 1 is valid for the engine but floods the ring buffer.
TEST(PolicyBook, AWindowBelowTheFloorIsRefusedAtEveryLevel) {
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_window_completions(1);
  auto global = Book().With(request);
  ASSERT_FALSE(global);
  EXPECT_EQ(global.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(global.error().message.find("window_completions: must be >= 16"), std::string::npos) << global.error().message;
  request.set_controller("nvme0");
  request.set_queue(2);
  auto queue = Book().With(request);
  ASSERT_FALSE(queue);
  EXPECT_NE(queue.error().message.find("nvme0:q2"), std::string::npos) << queue.error().message;
  request.mutable_policy()->set_window_completions(kMinWindowCompletions);
  EXPECT_TRUE(Book().With(request));
}

TEST(PolicyBook, MergeChangesOnlyTheFieldsSet) {
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_pace_slack_ns(5000);
  auto next = Book().With(request);
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(next->EffectiveGlobal().pace_slack, 5000);
  EXPECT_EQ(next->EffectiveGlobal().mode, engine::ControllerMode::kAdaptive);
}

TEST(PolicyBook, ReplaceMakesTheLevelExactlyTheRequest) {
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_pace_slack_ns(5000);
  request.set_replace(true);
  auto next = Book().With(request);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->EffectiveGlobal().mode, engine::ControllerMode::kOff);
}

TEST(PolicyBook, ControllerAndQueueLevelsInherit) {
  v1::SetPolicyRequest controller;
  controller.set_controller("nvme0");
  controller.mutable_policy()->set_window_completions(64);
  auto book = Book().With(controller);
  ASSERT_TRUE(book);
  v1::SetPolicyRequest queue;
  queue.set_controller("nvme0");
  queue.set_queue(2);
  queue.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  book = book->With(queue);
  ASSERT_TRUE(book);
  EXPECT_EQ(book->Effective("nvme0", 2).window_completions, 64u);
  EXPECT_EQ(book->Effective("nvme0", 2).mode, engine::ControllerMode::kPoll);
  EXPECT_EQ(book->Effective("nvme0", 1).mode, engine::ControllerMode::kAdaptive);
  EXPECT_EQ(book->Effective("nvme1", 1).window_completions, 8192u);
  // Changing the controller level again edits the same entry.
  controller.mutable_policy()->set_window_completions(128);
  book = book->With(controller);
  ASSERT_TRUE(book);
  EXPECT_EQ(book->policies().controllers_size(), 1);
  EXPECT_EQ(book->Effective("nvme0", 2).window_completions, 128u);
}

TEST(PolicyBook, ErrorsNameTheRequestFieldAndLeaveTheBookAlone) {
  PolicyBook book = Book();
  v1::SetPolicyRequest bad;
  bad.set_controller("nvme0");
  bad.mutable_policy()->set_pace_slack_ns(-1);
  auto next = book.With(bad);
  ASSERT_FALSE(next);
  EXPECT_EQ(next.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(next.error().message.rfind("policy.pace_slack_ns:", 0), 0u) << next.error().message;
  EXPECT_EQ(book.policies().controllers_size(), 0);
  v1::SetPolicyRequest queue_without_controller;
  queue_without_controller.set_queue(3);
  next = book.With(queue_without_controller);
  ASSERT_FALSE(next);
  EXPECT_EQ(next.error().message.rfind("controller:", 0), 0u);
  v1::SetPolicyRequest unknown_mode;
  unknown_mode.mutable_policy()->set_mode(static_cast<v1::ControllerMode>(99));
  next = book.With(unknown_mode);
  ASSERT_FALSE(next);
  EXPECT_NE(next.error().message.find("policy.mode"), std::string::npos);
}

}  // namespace
}  // namespace nvmeadapt::daemon
