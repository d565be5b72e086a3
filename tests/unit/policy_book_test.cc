// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "agent/config/profiles.h"
#include "agent/daemon/policy_book.h"
#include "agent/engine/policy_fields.h"

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
  const int64_t floor = engine::FindPolicyField("window_completions")->level_min;  // the table's, stated once
  ASSERT_EQ(floor, 16);
  request.mutable_policy()->set_window_completions(static_cast<uint32_t>(floor));
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

// Profiles (issue 32): an entry names one, its own fields over the profile's; `patch` is the kernel
// patch's rules exactly.
TEST(PolicyBook, policy_profile_fields_under_the_entrys_own) {
  v1::PolicySet set;
  set.mutable_policy()->set_mode(v1::CONTROLLER_MODE_ADAPTIVE);
  auto* c = set.add_controllers();
  c->set_controller("nvme0");
  c->mutable_policy()->set_profile("patch");
  c->mutable_policy()->set_pace_slack_ns(30'000);
  auto book = PolicyBook::Create(set);
  ASSERT_TRUE(book) << book.error().message;
  const engine::Policy p = book->Effective("nvme0", 1);
  EXPECT_FALSE(p.batch_pace_allowance);
  EXPECT_EQ(p.settle_windows, 0u);
  EXPECT_EQ(p.pace_credit, 0);
  EXPECT_EQ(p.max_backoff_windows, 0u);
  EXPECT_EQ(p.max_poll_run_windows, 0u);
  EXPECT_FALSE(p.stall_backoff);
  EXPECT_EQ(p.pace_slack, 30'000) << "the entry's own field wins over its profile's";
  EXPECT_EQ(p.mode, engine::ControllerMode::kAdaptive) << "patch sets no mode: the global one reaches it";
  EXPECT_EQ(book->Effective("nvme1", 1), engine::Policy{.mode = engine::ControllerMode::kAdaptive});
  EXPECT_EQ(book->policies().controllers(0).policy().profile(), "patch") << "the book keeps the name as set";

  // observe sets the mode (shadow); an unknown profile is refused naming the entry.
  set.mutable_policy()->set_profile("observe");
  set.mutable_policy()->clear_mode();
  auto observe = PolicyBook::Create(set);
  ASSERT_TRUE(observe) << observe.error().message;
  EXPECT_EQ(observe->EffectiveGlobal().mode, engine::ControllerMode::kShadow);
  c->mutable_policy()->set_profile("fastest");
  auto unknown = PolicyBook::Create(set);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("controllers[nvme0].policy.profile: unknown profile 'fastest' (default, "
                                         "patch, observe, throughput, latency)"),
            std::string::npos)
      << unknown.error().message;
}

TEST(PolicyBook, policy_profile_every_one_is_a_valid_policy) {
  for (const config::Profile& profile : config::Profiles()) {
    v1::PolicySet set;
    set.mutable_policy()->set_profile(std::string(profile.name));
    auto book = PolicyBook::Create(set);
    EXPECT_TRUE(book) << profile.name << ": " << book.error().message;
    EXPECT_FALSE(profile.about.empty()) << profile.name;
  }
}

}  // namespace
}  // namespace nvmeadapt::daemon
