// SPDX-License-Identifier: Apache-2.0
// A failed append never costs the journal (issue 45, torn_journal): a write cut short is taken back, a
// fragment that stays is a line of its own that the loader skips, and a record an older version glued to a
// fragment is still read.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "agent/state/journal.h"
#include "common/files.h"

namespace nvmeadapt::state {
namespace {

v1::JournalEntry Entry(const std::string& target) {
  v1::JournalEntry e;
  e.set_controller("uvnvme:1:0");
  e.set_queue(1);
  e.set_lever("uvnvme_socket");
  e.set_target(target);
  e.set_safe_value("interrupt");
  e.set_applied_value("poll");
  return e;
}

class TornJournal : public ::testing::Test {
 protected:
  static std::string FreshDir() {
    std::string dir = ::testing::TempDir() + "/torn_journal_" + std::to_string(getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name();
    EXPECT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
    return dir;
  }
  void SetUp() override { ASSERT_TRUE(store_.Open()); }

  off_t LogSize() const {
    struct stat st{};
    EXPECT_EQ(stat(store_.JournalLogPath().c_str(), &st), 0);
    return st.st_size;
  }
  void AppendRaw(const std::string& bytes) const {
    std::FILE* f = std::fopen(store_.JournalLogPath().c_str(), "a");
    ASSERT_NE(f, nullptr);
    std::fputs(bytes.c_str(), f);
    std::fclose(f);
  }
  std::vector<std::string> Targets() const {
    Journal journal(store_);
    EXPECT_TRUE(journal.Load());
    const v1::Journal entries = journal.entries();  // a copy
    std::vector<std::string> targets;
    for (const auto& e : entries.entries()) targets.push_back(e.target());
    return targets;
  }

  StateStore store_{FreshDir()};
};

// The file size limit cuts a write short as a full disk does (the bytes that fit, then EFBIG), without root.
TEST_F(TornJournal, AnAppendCutShortIsTakenBackAndTheNextOneIsRead) {
  Journal journal(store_);
  ASSERT_TRUE(journal.Load());
  ASSERT_TRUE(journal.WillChange(Entry("q1")));
  const off_t before = LogSize();
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit cut = old;
  cut.rlim_cur = static_cast<rlim_t>(before + 20);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &cut), 0);
  Status refused = journal.WillChange(Entry("q2"));
  const off_t after_failure = LogSize();
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(store_.JournalLogPath()), std::string::npos) << refused.error().message;
  EXPECT_EQ(after_failure, before) << "the 20 bytes that fitted were left in journal.log";

  ASSERT_TRUE(journal.WillChange(Entry("q3")));
  EXPECT_EQ(Targets(), (std::vector<std::string>{"q1", "q3"}));
  Journal reloaded(store_);
  ASSERT_TRUE(reloaded.Load());
  EXPECT_EQ(reloaded.load_warning(), "");
}

TEST_F(TornJournal, AFragmentLeftInPlaceIsALineOfItsOwnAndIsSkipped) {
  {
    Journal journal(store_);
    ASSERT_TRUE(journal.WillChange(Entry("q1")));
  }
  AppendRaw("A {\"controller\":\"uvn");  // an append that failed and could not be taken back
  {
    Journal journal(store_);
    ASSERT_TRUE(journal.Load());
    ASSERT_TRUE(journal.WillChange(Entry("q2")));
    ASSERT_TRUE(journal.WillChange(Entry("q3")));
  }
  auto text = ReadWholeFile(store_.JournalLogPath());
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("\"uvn\nA {"), std::string::npos) << "the next record was glued to the fragment:\n" << *text;
  Journal journal(store_);
  ASSERT_TRUE(journal.Load());
  EXPECT_EQ(Targets(), (std::vector<std::string>{"q1", "q2", "q3"}));
  EXPECT_NE(journal.load_warning().find("1 partial record(s) of appends that failed left out (line 2)"),
            std::string::npos)
      << journal.load_warning();
}

TEST_F(TornJournal, ARecordAnOlderVersionGluedToAFragmentIsRead) {
  StateStore other(store_.dir() + "/other");
  ASSERT_TRUE(other.Open());
  for (const char* target : {"q1", "q2", "q3"}) ASSERT_TRUE(other.AppendJournalRecord('A', Entry(target), false));
  auto records = ReadWholeFile(other.JournalLogPath());
  ASSERT_TRUE(records);
  const size_t second = records->find('\n') + 1;
  // What main wrote after a short append: the fragment, then the next record on the same line.
  AppendRaw(records->substr(0, second) + "A {\"controller\":\"uvnvme:1:0\",\"qu" + records->substr(second));
  EXPECT_EQ(Targets(), (std::vector<std::string>{"q1", "q2", "q3"}));
}

TEST_F(TornJournal, ALineThatIsNoRecordAndNoFragmentIsStillAnError) {
  {
    Journal journal(store_);
    ASSERT_TRUE(journal.WillChange(Entry("q1")));
  }
  AppendRaw("written by someone else\n");
  ASSERT_TRUE(store_.AppendJournalRecord('A', Entry("q2"), false));
  Journal journal(store_);
  Status loaded = journal.Load();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("journal.log:2: not a journal record"), std::string::npos)
      << loaded.error().message;
}

}  // namespace
}  // namespace nvmeadapt::state
