// SPDX-License-Identifier: Apache-2.0
// The node facts' reader on a fake /proc (tests/data/node: two readings of a 4-CPU node), its parsers' edges
// and its typed errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/collect/node_facts.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::collect {
namespace {

namespace fs = std::filesystem;
using nvmeadapt::testing::DataDir;
using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

constexpr engine::Nanos kSecond = 1'000'000'000;

void CopyReading(const std::string& which, const TempDir& root) {
  fs::copy(DataDir() + "/node/" + which, root.path(),
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

TEST(NodeFactsReader, BusySharesFromStatDeltasAndThePressure) {
  TempDir root;
  CopyReading("before", root);
  NodeFactsReader reader(root.path());
  Result<engine::NodeFacts> first = reader.Read(kSecond);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_EQ(first->cpu_busy.size(), 4u);
  for (const auto& share : first->cpu_busy) EXPECT_FALSE(share) << "the first reading is only the baseline";
  EXPECT_DOUBLE_EQ(*first->pressure_some_avg10, 0.0);

  CopyReading("after", root);
  Result<engine::NodeFacts> second = reader.Read(2 * kSecond);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_EQ(second->at, 2 * kSecond);
  ASSERT_EQ(second->cpu_busy.size(), 3u);  // CPU 3 went offline
  EXPECT_DOUBLE_EQ(*second->cpu_busy[0], 1.0);
  EXPECT_DOUBLE_EQ(*second->cpu_busy[1], 0.4);  // iowait is not busy
  EXPECT_DOUBLE_EQ(*second->cpu_busy[2], 0.02);
  EXPECT_DOUBLE_EQ(*second->pressure_some_avg10, 12.5);
  EXPECT_DOUBLE_EQ(*second->pressure_full_avg10, 1.25);
}

TEST(NodeFactsReader, NoPsiFileLeavesThePressureUnknown) {
  TempDir root;
  CopyReading("before", root);
  fs::remove_all(root / "proc/pressure");
  NodeFactsReader reader(root.path());
  Result<engine::NodeFacts> facts = reader.Read(kSecond);
  ASSERT_TRUE(facts.ok()) << facts.error().ToString();
  EXPECT_FALSE(facts->pressure_some_avg10);
  EXPECT_FALSE(facts->pressure_full_avg10);
}

TEST(NodeFactsReader, MissingStatIsNotFoundNamingThePath) {
  TempDir root;
  NodeFactsReader reader(root.path());
  Result<engine::NodeFacts> facts = reader.Read(kSecond);
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.error().code, ErrorCode::kNotFound);
  EXPECT_NE(facts.error().message.find(root / "proc/stat"), std::string::npos) << facts.error().message;
}

TEST(NodeFactsReader, BadTextIsAnErrorNamingThePathAndLineAndKeepsTheBaseline) {
  TempDir root;
  CopyReading("before", root);
  NodeFactsReader reader(root.path());
  ASSERT_TRUE(reader.Read(kSecond).ok());
  WriteFile(root / "proc/stat", "cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 x 4 5 6 7 8\n");
  Result<engine::NodeFacts> bad = reader.Read(2 * kSecond);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find(root / "proc/stat"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;

  CopyReading("after", root);
  WriteFile(root / "proc/pressure/cpu", "some avg10=abc avg60=0 avg300=0 total=0\n");
  bad = reader.Read(3 * kSecond);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(root / "proc/pressure/cpu"), std::string::npos) << bad.error().message;

  CopyReading("after", root);  // the failed readings left the baseline at "before"
  Result<engine::NodeFacts> good = reader.Read(4 * kSecond);
  ASSERT_TRUE(good.ok()) << good.error().ToString();
  EXPECT_DOUBLE_EQ(*good->cpu_busy[0], 1.0);
}

TEST(NodeFactsParse, ProcStatEdges) {
  EXPECT_FALSE(ParseProcStat("cpu  1 2 3 4 5 6 7 8\nintr 1\n").ok());        // no CPU line at all
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4 5 6 7\n").ok());                   // fewer than 8 times
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n").ok());  // twice
  EXPECT_FALSE(ParseProcStat("cpu99999999 1 2 3 4 5 6 7 8\n").ok());
  Result<std::vector<std::optional<CpuTicks>>> gap = ParseProcStat("cpu2 1 0 1 5 1 1 1 1 9 9");
  ASSERT_TRUE(gap.ok()) << gap.error().ToString();
  ASSERT_EQ(gap->size(), 3u);
  EXPECT_FALSE((*gap)[0]);
  EXPECT_EQ((*gap)[2]->busy, 5u);   // user nice system irq softirq steal; guest columns not added again
  EXPECT_EQ((*gap)[2]->total, 11u);  // + idle + iowait
}

TEST(NodeFactsParse, PressureEdges) {
  Result<CpuPressure> old_kernel = ParseCpuPressure("some avg10=3.50 avg60=1.00 avg300=0.20 total=99\n");
  ASSERT_TRUE(old_kernel.ok()) << old_kernel.error().ToString();
  EXPECT_DOUBLE_EQ(old_kernel->some_avg10, 3.5);
  EXPECT_FALSE(old_kernel->full_avg10);
  EXPECT_FALSE(ParseCpuPressure("full avg10=1.00 avg60=0 avg300=0 total=0\n").ok());  // no some line
  EXPECT_FALSE(ParseCpuPressure("some avg10=100.01 avg60=0 avg300=0 total=0\n").ok());
  EXPECT_FALSE(ParseCpuPressure("most avg10=1.00\n").ok());
}

TEST(NodeFactsParse, BusySharesSkipCpusWithoutAnIntervalOrWithCountersGoneBack) {
  const std::vector<std::optional<CpuTicks>> before = {CpuTicks{10, 100}, CpuTicks{50, 100}, std::nullopt,
                                                       CpuTicks{5, 10}};
  const std::vector<std::optional<CpuTicks>> after = {CpuTicks{10, 100}, CpuTicks{40, 200}, CpuTicks{1, 2},
                                                      CpuTicks{15, 30}};
  const std::vector<std::optional<double>> shares = BusyShares(before, after);
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_FALSE(shares[0]);  // no tick passed
  EXPECT_FALSE(shares[1]);  // busy went back: the CPU was reset
  EXPECT_FALSE(shares[2]);  // no line before
  EXPECT_DOUBLE_EQ(*shares[3], 0.5);
}

}  // namespace
}  // namespace nvmeadapt::collect
