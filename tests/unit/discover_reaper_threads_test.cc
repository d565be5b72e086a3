// SPDX-License-Identifier: Apache-2.0
// uvnvme's reaper threads in a fake /proc (agent/discover/reaper_threads.h): each reaper's CPUs by its name, the
// thread by name for the poller's CPU time, and what is left out or refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/discover/reaper_threads.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

class ReaperThreads : public ::testing::Test {
 protected:
  void Task(int tid, const std::string& comm, const std::string& cpus) {
    const std::string dir = tmp_ / ("123/task/" + std::to_string(tid));
    std::filesystem::create_directories(dir);
    WriteFile(dir + "/comm", comm + "\n");
    if (!cpus.empty()) WriteFile(dir + "/status", "Name:\t" + comm + "\nCpus_allowed_list:\t" + cpus + "\nMems:\t0\n");
  }
  TempDir tmp_;
};

TEST_F(ReaperThreads, EachReapersCpusByControllerAndQueue) {
  Task(123, "uvnvme-load", "0-3");
  Task(124, "uvnvme-c0q1", "2");
  Task(125, "uvnvme-c1q2", "0,2-3");
  Task(126, "uvnvme-ctl0", "3");    // the controller thread: no reaper
  Task(127, "uvnvme-c0q", "1");     // no queue id
  Task(128, "uvnvme-c0q2x", "1");   // not a number
  Task(129, "uvnvme-c0q3", "");     // gone while read: no status
  auto reapers = ReaperCpus(tmp_.path(), 123);
  ASSERT_TRUE(reapers) << reapers.error().message;
  ASSERT_EQ(reapers->size(), 2u);
  EXPECT_EQ(reapers->at({0, 1}), std::vector<uint32_t>({2}));
  EXPECT_EQ(reapers->at({1, 2}), std::vector<uint32_t>({0, 2, 3}));
}

TEST_F(ReaperThreads, FindsAThreadByNameAndSaysWhichWasMissing) {
  Task(124, ReaperThreadName(0, 1), "2");
  auto task = FindThread(tmp_.path(), 123, "uvnvme-c0q1");
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(*task, tmp_ / "123/task/124");
  auto missing = FindThread(tmp_.path(), 123, "uvnvme-c0q2");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("no reaper thread named uvnvme-c0q2"), std::string::npos);
}

TEST_F(ReaperThreads, AProcessThatIsGoneIsAnErrorNamingItsTaskDirectory) {
  auto reapers = ReaperCpus(tmp_.path(), 999);
  ASSERT_FALSE(reapers);
  EXPECT_NE(reapers.error().message.find("999/task"), std::string::npos) << reapers.error().message;
}

TEST(ReaperThreadName, IsCutToTheKernels15Characters) {
  EXPECT_EQ(ReaperThreadName(0, 1), "uvnvme-c0q1");
  EXPECT_EQ(ReaperThreadName(1234, 5678).size(), 15u);
}

}  // namespace
}  // namespace nvmeadapt::discover
