// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <memory>
#include <mutex>

#include "agent/state/device_identity.h"
#include "agent/state/journal.h"

namespace nvmeadapt::state {
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
  ASSERT_EQ(stat(store_.JournalLogPath().c_str(), &before), 0);
  ASSERT_TRUE(journal.WillChange(Entry("q1", "poll", "interrupt")));
  ASSERT_EQ(stat(store_.JournalLogPath().c_str(), &after), 0);
  EXPECT_EQ(before.st_size, after.st_size) << "a record was written for a target the journal already holds";
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
  EXPECT_EQ(order, (std::vector<std::string>{"restorable", "vanished", "refusing"})) << "oldest first";
  ASSERT_EQ(journal.entries().entries_size(), 1);
  EXPECT_EQ(journal.entries().entries(0).target(), "refusing");
  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  EXPECT_EQ(reloaded.entries().entries_size(), 1);
}

// The nvme_adapt_journal_unrestored_entries gauge's count: entries a restore kept, or a restore run before this
// journal was loaded left (MarkUnrestored), until their target is back to its safe value; a change of this
// run is not one of them.
TEST_F(JournalTest, journal_unrestored_entries_counts_what_a_restore_kept_until_it_is_put_back) {
  Journal journal(store_);
  ASSERT_TRUE(journal.WillChange(Entry("restorable", "interrupt", "poll")));
  ASSERT_TRUE(journal.WillChange(Entry("refusing", "interrupt", "poll")));
  EXPECT_EQ(journal.unrestored(), 0) << "a change not yet restored is no failed restore";
  (void)journal.RestoreAll([&](const v1::JournalEntry& e) -> Status {
    return e.target() == "refusing" ? Status(MakeError(ErrorCode::kRefused, "driver said no")) : OkStatus();
  });
  EXPECT_EQ(journal.unrestored(), 1);
  ASSERT_TRUE(journal.WillChange(Entry("later", "interrupt", "poll")));
  EXPECT_EQ(journal.unrestored(), 1);
  ASSERT_TRUE(journal.Restored("uvnvme_socket", "refusing"));
  EXPECT_EQ(journal.unrestored(), 0);

  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  EXPECT_EQ(reloaded.unrestored(), 0);
  reloaded.MarkUnrestored();  // the daemon's restore at start ran on a Journal of its own
  EXPECT_EQ(reloaded.unrestored(), 1) << "the entry left: later";
}

TEST_F(JournalTest, AnEntryOfAnotherBootOrAnotherDeviceIsReportedAndDroppedNotReplayed) {
  Journal journal(store_);
  v1::JournalEntry old_boot = Entry("old-boot", "interrupt", "poll");
  old_boot.set_boot_id("boot-a");
  v1::JournalEntry reused_name = Entry("reused", "interrupt", "poll");
  reused_name.set_boot_id("boot-b");
  reused_name.set_device_identity("pid=1 start=100");
  v1::JournalEntry same = Entry("same", "interrupt", "poll");
  same.set_boot_id("boot-b");
  same.set_device_identity("pid=1 start=200");
  v1::JournalEntry legacy = Entry("legacy", "interrupt", "poll");  // written before entries were stamped
  for (const auto& e : {old_boot, reused_name, same, legacy}) ASSERT_TRUE(journal.WillChange(e));
  RestoreRules rules;
  rules.boot_id = "boot-b";
  rules.identity_now = [](const v1::JournalEntry&) { return std::string("pid=1 start=200"); };
  std::vector<std::string> replayed;
  RestoreReport report;
  ASSERT_TRUE(journal.RestoreAll(
      [&](const v1::JournalEntry& e) {
        replayed.push_back(e.target());
        return OkStatus();
      },
      rules, &report));
  EXPECT_EQ(replayed, (std::vector<std::string>{"same", "legacy"}));
  EXPECT_EQ(report.restored, 2);
  EXPECT_EQ(report.dropped, 2);
  EXPECT_TRUE(journal.empty());
  std::string text;
  for (const auto& line : report.lines) text += line + "\n";
  EXPECT_NE(text.find("dropped uvnvme:1:0 q1 (uvnvme_socket old-boot): changed in boot boot-a"), std::string::npos)
      << text;
  EXPECT_NE(text.find("now names another device (pid=1 start=200, changed was pid=1 start=100)"), std::string::npos)
      << text;
}

TEST_F(JournalTest, AnEntryWhoseDeviceIsGoneIsDroppedAndAFailureIsKept) {
  Journal journal(store_);
  v1::JournalEntry gone = Entry("gone", "interrupt", "poll");
  gone.set_device_identity("pid=9 start=1");
  ASSERT_TRUE(journal.WillChange(gone));
  ASSERT_TRUE(journal.WillChange(Entry("refusing", "interrupt", "poll")));
  RestoreRules rules;
  rules.identity_now = [](const v1::JournalEntry& e) { return e.target() == "gone" ? "" : "pid=9 start=1"; };
  RestoreReport report;
  Status status = journal.RestoreAll(
      [](const v1::JournalEntry&) -> Status { return MakeError(ErrorCode::kUnavailable, "driver not answering"); },
      rules, &report);
  ASSERT_FALSE(status);
  EXPECT_EQ(report.dropped, 1);
  EXPECT_EQ(report.kept, 1);
  ASSERT_EQ(journal.entries().entries_size(), 1);
  EXPECT_EQ(journal.entries().entries(0).target(), "refusing");
}

TEST_F(JournalTest, ACorruptJournalIsSetAsideAndItsPreviousCopyUsed) {
  {
    v1::Journal saved;
    *saved.add_entries() = Entry("q1", "interrupt", "poll");
    ASSERT_TRUE(store_.SaveJournal(saved));
    *saved.add_entries() = Entry("q2", "interrupt", "poll");
    ASSERT_TRUE(store_.SaveJournal(saved));  // the compaction that keeps {q1} as previous
  }
  {
    std::FILE* f = std::fopen(store_.JournalPath().c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"entries\": [{\"controller\": ", f);  // torn by a disk, an editor
    std::fclose(f);
  }
  Journal journal(store_);
  ASSERT_TRUE(journal.Load());
  EXPECT_NE(journal.load_warning().find("journal.json.corrupt"), std::string::npos) << journal.load_warning();
  EXPECT_NE(journal.load_warning().find("previous copy"), std::string::npos) << journal.load_warning();
  ASSERT_EQ(journal.entries().entries_size(), 1);
  EXPECT_EQ(journal.entries().entries(0).target(), "q1");
  struct stat st{};
  EXPECT_EQ(stat((store_.JournalPath() + ".corrupt").c_str(), &st), 0) << "the corrupt copy was not kept";
  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  EXPECT_TRUE(reloaded.load_warning().empty()) << "the previous copy was not made the journal again";
  EXPECT_EQ(reloaded.entries().entries_size(), 1);
}

TEST_F(JournalTest, AChangeAppendsARecordAndTheLogIsFoldedBackBeforeItOutgrowsTheEntries) {
  Journal journal(store_);
  ASSERT_TRUE(journal.Load());
  ASSERT_TRUE(journal.WillChange(Entry("kept", "interrupt", "poll")));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(journal.WillChange(Entry("q" + std::to_string(i), "interrupt", "poll")));
    ASSERT_TRUE(journal.Restored("uvnvme_socket", "q" + std::to_string(i)));
  }
  struct stat log{};
  ASSERT_EQ(stat(store_.JournalLogPath().c_str(), &log), 0);
  EXPECT_LT(log.st_size, 200 * 130) << "2000 records and the log was never folded into journal.json";
  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  ASSERT_EQ(reloaded.entries().entries_size(), 1);
  EXPECT_EQ(reloaded.entries().entries(0).target(), "kept");
}

TEST_F(JournalTest, ATornLastRecordIsLeftOutAndSaid) {
  {
    Journal journal(store_);
    ASSERT_TRUE(journal.WillChange(Entry("q1", "interrupt", "poll")));
  }
  std::FILE* f = std::fopen(store_.JournalLogPath().c_str(), "a");
  ASSERT_NE(f, nullptr);
  std::fputs("A {\"controller\": \"uvn", f);  // the crash came in the middle of the append
  std::fclose(f);
  Journal journal(store_);
  ASSERT_TRUE(journal.Load());
  EXPECT_EQ(journal.entries().entries_size(), 1);
  EXPECT_NE(journal.load_warning().find("journal.log:2: a torn last record"), std::string::npos)
      << journal.load_warning();
}

TEST_F(JournalTest, KernelEntriesAreRestoredFirstOldestFirstAndAStuckRestoreIsTimeBoxed) {
  Journal journal(store_);
  v1::JournalEntry kernel_old = Entry("k1", "1", "0"), kernel_new = Entry("k2", "1", "0");
  for (v1::JournalEntry* e : {&kernel_old, &kernel_new}) {
    e->set_controller("nvme0");
    e->set_lever("sysfs_io_poll");
  }
  ASSERT_TRUE(journal.WillChange(Entry("stuck", "interrupt", "poll")));
  ASSERT_TRUE(journal.WillChange(kernel_old));
  ASSERT_TRUE(journal.WillChange(Entry("driver", "interrupt", "poll")));
  ASSERT_TRUE(journal.WillChange(kernel_new));
  struct Order {
    std::mutex mutex;
    std::vector<std::string> targets;
  };
  auto order = std::make_shared<Order>();
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  RestoreRules rules;
  rules.entry_time_box = std::chrono::milliseconds(200);
  RestoreReport report;
  Status status = journal.RestoreAll(
      [order, released](const v1::JournalEntry& e) -> Status {
        {
          std::lock_guard lock(order->mutex);
          order->targets.push_back(e.target());
        }
        if (e.target() == "stuck") released.wait();  // a driver that never answers
        return OkStatus();
      },
      rules, &report);
  release->set_value();
  ASSERT_FALSE(status);
  {
    std::lock_guard lock(order->mutex);
    EXPECT_EQ(order->targets, (std::vector<std::string>{"k1", "k2", "stuck", "driver"}));
  }
  EXPECT_EQ(report.restored, 3);
  EXPECT_EQ(report.kept, 1);
  ASSERT_EQ(journal.entries().entries_size(), 1);
  EXPECT_EQ(journal.entries().entries(0).target(), "stuck");
}

TEST_F(JournalTest, WhileRunningTheEntriesOfProcessesThatAreGoneAreDroppedAndDevicesKept) {
  Journal journal(store_);
  v1::JournalEntry dead = Entry("dead", "interrupt", "poll"), alive = Entry("alive", "interrupt", "poll");
  v1::JournalEntry device = Entry("device", "1", "0");
  dead.set_device_identity("pid=9 start=1");
  alive.set_device_identity("pid=10 start=1");
  device.set_controller("nvme0");
  device.set_device_identity("pci=0000:00:04.0 serial=S");
  for (const auto& e : {dead, alive, device}) ASSERT_TRUE(journal.WillChange(e));
  RestoreRules rules;
  rules.identity_now = [](const v1::JournalEntry& e) { return e.target() == "alive" ? e.device_identity() : ""; };
  const std::vector<std::string> lines = journal.DropGone(rules);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("dropped uvnvme:1:0 q1 (uvnvme_socket dead): the device it changed"), std::string::npos)
      << lines[0];
  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  ASSERT_EQ(reloaded.entries().entries_size(), 2);
  EXPECT_EQ(reloaded.entries().entries(0).target(), "alive");
  EXPECT_EQ(reloaded.entries().entries(1).target(), "device") << "a controller may be back after its reset";
}

TEST(DeviceIdentity, AProcessIsItsPidAndStartTimeAndAControllerItsAddressAndSerial) {
  const std::string self = ProcessIdentity("/proc", getpid());
  EXPECT_EQ(self.rfind("pid=" + std::to_string(getpid()) + " start=", 0), 0u) << self;
  EXPECT_EQ(CurrentIdentity("uvnvme:" + std::to_string(getpid()) + ":0", IdentityRoots{}), self);
  EXPECT_EQ(ProcessIdentity("/proc", 0), "");
  const std::string root = ::testing::TempDir() + "/identity_" + std::to_string(getpid());
  ASSERT_EQ(system(("rm -rf '" + root + "' && mkdir -p '" + root + "/proc/42' '" + root +
                    "/sys/class/nvme/nvme0'").c_str()), 0);
  auto write = [](const std::string& path, const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr) << path;
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  // A command name with spaces and a parenthesis: fields are counted after the last ')'.
  write(root + "/proc/42/stat", "42 (uv) nvme) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3\n");
  EXPECT_EQ(ProcessIdentity(root + "/proc", 42), "pid=42 start=987654");
  write(root + "/sys/class/nvme/nvme0/address", "0000:00:05.0\n");
  write(root + "/sys/class/nvme/nvme0/serial", "SN 123   \n");
  IdentityRoots roots{root + "/sys", root + "/proc"};
  EXPECT_EQ(CurrentIdentity("nvme0", roots), "pci=0000:00:05.0 serial=SN 123");
  EXPECT_EQ(CurrentIdentity("nvme1", roots), "");
}

}  // namespace
}  // namespace nvmeadapt::state
