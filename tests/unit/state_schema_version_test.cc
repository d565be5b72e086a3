// SPDX-License-Identifier: Apache-2.0
// The state schema version (issue 46), both ways: an agent reads the files of older versions (which carry no
// version) and writes its own so that they still can; a file or journal record of a newer schema is refused
// with an error of its own, naming it, and kept byte for byte: not read halfway, replaced, or set aside.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "agent/state/journal.h"
#include "agent/state/state_json.h"
#include "agent/state/state_store.h"
#include "common/files.h"

namespace nvmeadapt::state {
namespace {

constexpr uint32_t kNewer = kStateSchemaVersion + 1;

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

std::string Read(const std::string& path) {
  auto text = ReadWholeFile(path);
  return text ? *text : "<" + text.error().message + ">";
}

v1::JournalEntry Entry(uint32_t queue) {
  v1::JournalEntry entry;
  entry.set_controller("uvnvme:42:0");
  entry.set_queue(queue);
  entry.set_lever("uvnvme_socket");
  entry.set_target("uvnvme:42:0:q" + std::to_string(queue));
  entry.set_safe_value("interrupt");
  return entry;
}

class StateSchemaVersion : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/state_schema_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(system(("rm -rf '" + dir_ + "'").c_str()), 0);
    store_ = StateStore(dir_);
    ASSERT_TRUE(store_.Open());
  }
  // `message` as a later version writes it.
  std::string Newer(const google::protobuf::Message& message, bool lines = true) {
    auto json = ToStateJson(message, "test", lines, kNewer);
    EXPECT_TRUE(json) << json.error().message;
    return json ? *json : "";
  }
  std::string dir_;
  StateStore store_{""};  // in dir_, from SetUp
};

TEST_F(StateSchemaVersion, state_schema_version_files_of_older_versions_read_and_this_one_writes_what_they_read) {
  // As 0.1.0 wrote them: no version.
  ASSERT_TRUE(WriteFileAtomically(store_.PolicyPath(), "{\n \"policy\": {\n  \"pace_slack_ns\": \"1234\"\n }\n}\n"));
  ASSERT_TRUE(WriteFileAtomically(store_.JournalLogPath(),
                                  "A {\"controller\":\"uvnvme:42:0\",\"queue\":1,\"lever\":\"uvnvme_socket\"}\n"));
  auto policy = store_.LoadPolicy();
  ASSERT_TRUE(policy) << policy.error().message;
  ASSERT_TRUE(policy->has_value());
  EXPECT_EQ((*policy)->policy().pace_slack_ns(), 1234);
  auto log = store_.LoadJournalLog();
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->records.size(), 1u);
  // Schema 1 is written without the field: 0.1.0 rejects unknown fields, and a rollback to it must read these.
  ASSERT_TRUE(store_.SavePolicy(**policy));
  ASSERT_TRUE(store_.AppendJournalRecord('A', Entry(2), false));
  v1::Journal journal;
  *journal.add_entries() = Entry(3);
  ASSERT_TRUE(store_.SaveJournal(journal));
  for (const std::string& path : {store_.PolicyPath(), store_.JournalPath(), store_.JournalLogPath()}) {
    EXPECT_EQ(Read(path).find(kSchemaVersionKey), std::string::npos) << path << ": " << Read(path);
  }
  // A version that states schema 1 is read as well.
  ASSERT_TRUE(WriteFileAtomically(store_.PolicyPath(), "{\"schema_version\": 1, \"policy\": {\"pace_slack_ns\": 7}}"));
  policy = store_.LoadPolicy();
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_EQ((*policy)->policy().pace_slack_ns(), 7);
  // A version that is no number is bad input, said as such.
  ASSERT_TRUE(WriteFileAtomically(store_.PolicyPath(), "{\"schema_version\": \"2\", \"policy\": {}}"));
  policy = store_.LoadPolicy();
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(policy.error().message.find("schema_version is not a whole number"), std::string::npos);
}

TEST_F(StateSchemaVersion, state_schema_version_a_newer_policy_is_refused_kept_and_not_replaced) {
  v1::PolicySet policy;
  policy.mutable_policy()->set_pace_slack_ns(99);
  v1::PolicyNote note;
  note.set_set_by("uid 0");
  const std::string policy_text = Newer(policy), note_text = Newer(note);
  ASSERT_NE(policy_text.find("\"schema_version\": " + std::to_string(kNewer)), std::string::npos) << policy_text;
  ASSERT_TRUE(WriteFileAtomically(store_.PolicyPath(), policy_text));
  ASSERT_TRUE(WriteFileAtomically(store_.PolicyNotePath(), note_text));

  auto loaded = store_.LoadPolicy();
  ASSERT_FALSE(loaded) << "a newer policy was read";
  EXPECT_EQ(loaded.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(loaded.error().message.find(store_.PolicyPath()), std::string::npos) << loaded.error().message;
  EXPECT_NE(loaded.error().message.find("state schema " + std::to_string(kNewer)), std::string::npos)
      << loaded.error().message;
  EXPECT_EQ(store_.LoadPolicyNote().error().code, ErrorCode::kFailedPrecondition);

  v1::PolicySet mine;
  mine.mutable_policy()->set_pace_slack_ns(1);
  Status saved = store_.SavePolicy(mine);
  ASSERT_FALSE(saved) << "a newer policy was replaced";
  EXPECT_EQ(saved.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(saved.error().message.find("policy reset"), std::string::npos) << saved.error().message;
  EXPECT_FALSE(store_.SavePolicyNote(v1::PolicyNote()));
  EXPECT_EQ(Read(store_.PolicyPath()), policy_text);
  EXPECT_EQ(Read(store_.PolicyNotePath()), note_text);

  // `policy reset` is the one way to drop it; then this version's policy is written.
  ASSERT_TRUE(store_.ClearPolicy());
  EXPECT_TRUE(store_.SavePolicy(mine));
}

TEST_F(StateSchemaVersion, state_schema_version_a_newer_journal_is_kept_not_set_aside_as_corrupt) {
  v1::Journal journal;
  *journal.add_entries() = Entry(1);
  const std::string text = Newer(journal);
  ASSERT_TRUE(WriteFileAtomically(store_.JournalPath(), text));

  Journal loaded(store_);
  Status status = loaded.Load();
  ASSERT_FALSE(status) << "a newer journal was read";
  EXPECT_EQ(status.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(status.error().message.find(store_.JournalPath()), std::string::npos) << status.error().message;
  EXPECT_EQ(Read(store_.JournalPath()), text);
  EXPECT_FALSE(Exists(store_.JournalPath() + ".corrupt"));
}

// A newer record is whole JSON, not a torn append: neither left out (its change would never be put back) nor
// a reason to drop the file, wherever it stands in the log.
TEST_F(StateSchemaVersion, state_schema_version_a_newer_journal_record_is_an_error_naming_its_line) {
  for (const bool last : {false, true}) {
    SCOPED_TRACE(last ? "the last line" : "a middle line");
    const std::string mine = "A " + *ToStateJson(Entry(1), "test", false) + "\n";
    const std::string newer = "A " + Newer(Entry(2), false) + (last ? "" : "\n");
    const std::string text = mine + newer + (last ? "" : "D " + *ToStateJson(Entry(1), "test", false) + "\n");
    ASSERT_TRUE(WriteFileAtomically(store_.JournalLogPath(), text));
    auto log = store_.LoadJournalLog();
    ASSERT_FALSE(log) << "a newer record was " << (log->records.size() == 2 ? "read" : "left out");
    EXPECT_EQ(log.error().code, ErrorCode::kFailedPrecondition);
    EXPECT_NE(log.error().message.find(store_.JournalLogPath() + ":2"), std::string::npos) << log.error().message;
    Journal journal(store_);
    EXPECT_FALSE(journal.Load());
    EXPECT_EQ(Read(store_.JournalLogPath()), text);
  }
}

}  // namespace
}  // namespace nvmeadapt::state
