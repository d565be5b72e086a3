// SPDX-License-Identifier: Apache-2.0
// Issue 45, item 10: policy.json's writes on a thread of their own, each waited for until its caller's deadline. A
// write its caller gave up on is never left on disk: not run if it had not begun, undone if it succeeded late; an undo
// goes on whether or not anyone still waits.
#include "agent/daemon/policy_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/agent_fakes.h"

namespace nvmeadapt::daemon::testing {
namespace {

using Clock = PolicyWriter::Clock;
using std::chrono::milliseconds;

class Disk {
 public:
  void Set(std::string value) {
    std::lock_guard lock(mutex_);
    value_ = std::move(value);
    ++writes_;
  }
  std::string value() {
    std::lock_guard lock(mutex_);
    return value_;
  }
  int writes() {
    std::lock_guard lock(mutex_);
    return writes_;
  }

 private:
  std::mutex mutex_;
  std::string value_ = "old";
  int writes_ = 0;
};

TEST(PolicyWriter, AWriteInTimeIsKeptAndNeverUndone) {
  PolicyWriter writer;
  Disk disk;
  Status saved = writer.Run(
      [&] {
        disk.Set("new");
        return OkStatus();
      },
      [&] {
        disk.Set("old");
        return OkStatus();
      },
      Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(saved) << saved.error().message;
  ASSERT_TRUE(writer.Must([] { return OkStatus(); }, "sync", Clock::now() + std::chrono::seconds(5)));
  EXPECT_EQ(disk.value(), "new");
  EXPECT_EQ(disk.writes(), 1);
}

TEST(PolicyWriter, AWriteThatLandsAfterItsDeadlineIsUndoneAndOneQueuedBehindItNeverRuns) {
  PolicyWriter writer;
  Disk disk;
  Latch stuck;  // the state disk that does not answer
  const auto asked = Clock::now();
  Status late = writer.Run(
      [&] {
        stuck.Wait();
        disk.Set("new");
        return OkStatus();
      },
      [&] {
        disk.Set("old");
        return OkStatus();
      },
      asked + milliseconds(100));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::kUnavailable);
  EXPECT_LT(Clock::now() - asked, milliseconds(1000)) << "answered by its deadline";
  // An admin's retry waits for its own deadline behind the stuck write, and is given up unrun.
  Status behind = writer.Run(
      [&] {
        disk.Set("retry");
        return OkStatus();
      },
      [&] {
        disk.Set("old");
        return OkStatus();
      },
      Clock::now() + milliseconds(100));
  ASSERT_FALSE(behind);
  EXPECT_NE(behind.error().message.find("earlier write"), std::string::npos) << behind.error().message;
  stuck.Open();
  ASSERT_TRUE(writer.Must([] { return OkStatus(); }, "sync", Clock::now() + std::chrono::seconds(5)));
  EXPECT_EQ(disk.value(), "old") << "the late write was taken back";
  EXPECT_EQ(disk.writes(), 2) << "the late write and its undo; the retry given up never ran";
}

TEST(PolicyWriter, AnUndoGoesOnAfterItsCallerStoppedWaiting) {
  PolicyWriter writer;
  Disk disk;
  Latch stuck;
  disk.Set("refused change");
  Status waited = writer.Must(
      [&] {
        stuck.Wait();
        disk.Set("old");
        return OkStatus();
      },
      "putting back", Clock::now() + milliseconds(50));
  ASSERT_FALSE(waited);
  stuck.Open();
  ASSERT_TRUE(writer.Must([] { return OkStatus(); }, "sync", Clock::now() + std::chrono::seconds(5)));
  EXPECT_EQ(disk.value(), "old");
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
