// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>

#include "agent/state/state_store.h"
#include "agent/state/state_store_lock.h"
#include "common/files.h"

namespace nvmeadapt::state {
namespace {

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/state_store_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0);
  }
  std::string dir_;
};

TEST_F(StateStoreTest, NothingPersistedYetIsNotAnError) {
  StateStore store(dir_);
  ASSERT_TRUE(store.Open());
  auto policy = store.LoadPolicy();
  ASSERT_TRUE(policy);
  EXPECT_FALSE(policy->has_value());
  auto journal = store.LoadJournal();
  ASSERT_TRUE(journal);
  EXPECT_EQ(journal->entries_size(), 0);
}

TEST_F(StateStoreTest, PolicyAndJournalRoundTrip) {
  StateStore store(dir_);
  ASSERT_TRUE(store.Open());
  v1::PolicySet policy;
  policy.mutable_policy()->set_pace_slack_ns(1234);
  policy.mutable_policy()->set_mode(v1::CONTROLLER_MODE_ADAPTIVE);
  auto* controller = policy.add_controllers();
  controller->set_controller("nvme0");
  controller->mutable_policy()->set_window_completions(64);
  ASSERT_TRUE(store.SavePolicy(policy));
  v1::Journal journal;
  auto* entry = journal.add_entries();
  entry->set_controller("uvnvme:42:0");
  entry->set_queue(1);
  entry->set_lever("uvnvme_socket");
  entry->set_safe_value("interrupt");
  ASSERT_TRUE(store.SaveJournal(journal));

  StateStore reopened(dir_);
  auto loaded = reopened.LoadPolicy();
  ASSERT_TRUE(loaded);
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->SerializeAsString(), policy.SerializeAsString());
  auto journal_back = reopened.LoadJournal();
  ASSERT_TRUE(journal_back);
  EXPECT_EQ(journal_back->SerializeAsString(), journal.SerializeAsString());
}

TEST_F(StateStoreTest, ACorruptOrInvalidPolicyFileIsReportedWithItsPath) {
  StateStore store(dir_);
  ASSERT_TRUE(store.Open());
  ASSERT_TRUE(WriteFileAtomically(store.PolicyPath(), "{\"policy\": {\"paceSlackNs\": -3}}"));
  auto loaded = store.LoadPolicy();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find(store.PolicyPath()), std::string::npos);
  EXPECT_NE(loaded.error().message.find("pace_slack_ns"), std::string::npos);
  ASSERT_TRUE(WriteFileAtomically(store.JournalPath(), "{not json"));
  auto journal = store.LoadJournal();
  ASSERT_FALSE(journal);
  EXPECT_NE(journal.error().message.find(store.JournalPath()), std::string::npos);
}

// One daemon per state dir (issue #37): the second taker is refused with the holder's pid; the lock goes
// with its holder.
TEST_F(StateStoreTest, TheStateDirLockRefusesASecondHolderWithThePidOfTheFirst) {
  std::optional<StateDirLock> first;
  {
    auto taken = StateDirLock::Acquire(dir_);
    ASSERT_TRUE(taken) << taken.error().message;
    first.emplace(std::move(*taken));
  }
  auto second = StateDirLock::Acquire(dir_);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(second.error().message.find("(pid " + std::to_string(getpid()) + ")"), std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find(StateDirLockPath(dir_)), std::string::npos) << second.error().message;
  first.reset();
  EXPECT_TRUE(StateDirLock::Acquire(dir_)) << "the lock outlived its holder";
}

}  // namespace
}  // namespace nvmeadapt::state
