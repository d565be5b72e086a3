#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/daemon/journal.h"

namespace nvmeadapt::daemon {
namespace {

v1::JournalEntry Entry(const std::string& target, const std::string& safe, const std::string& applied) {
  v1::JournalEntry e;
  e.set_controller("uvnvme:1:0");
  e.set_queue(1);
  e.set_lever("uvnvme_socket");
  e.set_target(target);
  e.set_safe_value(safe);
  e.set_applied_value(applied);
  return e;
}

class JournalTest : public ::testing::Test {
 protected:
  static std::string FreshDir() {
    std::string dir = ::testing::TempDir() + "/journal_" + std::to_string(getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name();
    EXPECT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
    return dir;
  }
  void SetUp() override { ASSERT_TRUE(store_.Open()); }
  StateStore store_{FreshDir()};
};

TEST_F(JournalTest, AChangeIsOnDiskBeforeWillChangeReturns) {
  Journal journal(store_);
  ASSERT_TRUE(journal.Load());
  ASSERT_TRUE(journal.WillChange(Entry("q1", "interrupt", "poll")));
  Journal after_crash(store_);
  ASSERT_TRUE(after_crash.Load());
  ASSERT_EQ(after_crash.entries().entries_size(), 1);
  EXPECT_EQ(after_crash.entries().entries(0).safe_value(), "interrupt");
}

TEST_F(JournalTest, TheFirstSafeValueIsKeptAndALaterChangeWritesNothing) {
  Journal journal(store_);
  ASSERT_TRUE(journal.WillChange(Entry("q1", "interrupt", "poll")));
  struct stat before{}, after{};
  ASSERT_EQ(stat(store_.JournalPath().c_str(), &before), 0);
  ASSERT_TRUE(journal.WillChange(Entry("q1", "poll", "interrupt")));
  ASSERT_EQ(stat(store_.JournalPath().c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the journal was rewritten for a target it already holds";
  ASSERT_EQ(journal.entries().entries_size(), 1);
  EXPECT_EQ(journal.entries().entries(0).safe_value(), "interrupt");
  EXPECT_EQ(journal.entries().entries(0).applied_value(), "interrupt");
  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  EXPECT_EQ(reloaded.entries().entries(0).safe_value(), "interrupt");
}

TEST_F(JournalTest, RestoreAllDropsWhatWasRestoredOrIsGoneAndKeepsFailures) {
  Journal journal(store_);
  ASSERT_TRUE(journal.WillChange(Entry("restorable", "interrupt", "poll")));
  ASSERT_TRUE(journal.WillChange(Entry("vanished", "interrupt", "poll")));
  ASSERT_TRUE(journal.WillChange(Entry("refusing", "interrupt", "poll")));
  std::vector<std::string> order;
  Status status = journal.RestoreAll([&](const v1::JournalEntry& e) -> Status {
    order.push_back(e.target());
    if (e.target() == "vanished") return MakeError(ErrorCode::kNotFound, "process gone");
    if (e.target() == "refusing") return MakeError(ErrorCode::kRefused, "driver said no");
    return OkStatus();
  });
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, ErrorCode::kRefused);
  EXPECT_EQ(order, (std::vector<std::string>{"refusing", "vanished", "restorable"}));
  ASSERT_EQ(journal.entries().entries_size(), 1);
  EXPECT_EQ(journal.entries().entries(0).target(), "refusing");
  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  EXPECT_EQ(reloaded.entries().entries_size(), 1);
}

}  // namespace
}  // namespace nvmeadapt::daemon
