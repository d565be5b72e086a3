// SPDX-License-Identifier: Apache-2.0
// uvnvme-load's application work per completion (--io-work-us): the option and the calibrated loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "uvnvme/load/app_work.h"
#include "uvnvme/load/options.h"

namespace nvmeadapt::uvnvme::load {
namespace {

// The thread CPU a run of `loops` takes, the least of a few runs (the CPU is shared: caches, frequency).
int64_t LeastCpuOf(uint64_t loops) {
  int64_t least = INT64_MAX;
  for (int round = 0; round < 5; ++round) {
    const int64_t start = ThreadCpuNanos();
    (void)RunWorkLoops(loops, 7);
    least = std::min(least, ThreadCpuNanos() - start);
  }
  return least;
}

TEST(UvnvmeAppWork, OptionTakesMicrosecondsAndDefaultsToNone) {
  std::vector<std::string_view> none;
  auto defaults = ParseLoadOptions(none);
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->io_work_ns, 0);
  std::vector<std::string_view> args = {"--io-work-us", "2.5"};
  auto options = ParseLoadOptions(args);
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(options->io_work_ns, 2'500);
  std::vector<std::string_view> bad = {"--io-work-us=-1"};
  auto refused = ParseLoadOptions(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message.rfind("--io-work-us", 0), 0u) << refused.error().message;
}

TEST(UvnvmeAppWork, CalibratedLoopsTakeTheAskedCpuTime) {
  EXPECT_EQ(CalibrateWorkLoops(0), 0u);
  constexpr int64_t kAsked = 2'000'000;
  const uint64_t loops = CalibrateWorkLoops(kAsked);
  ASSERT_GT(loops, 0u);
  const int64_t took = LeastCpuOf(loops);
  // Thread CPU time leaves out time other tasks had the CPU, so only the core's own variation remains.
  EXPECT_GT(took, kAsked / 2) << loops << " loops";
  EXPECT_LT(took, kAsked * 2) << loops << " loops";
  const uint64_t twice = CalibrateWorkLoops(2 * kAsked);
  EXPECT_GT(twice, loops * 3 / 2);
  EXPECT_LT(twice, loops * 5 / 2);
}

TEST(UvnvmeAppWork, TheLoopIsDoneNotFoldedAway) {
  // A chain the compiler kept: more loops take more time, and the value depends on the count.
  EXPECT_NE(RunWorkLoops(1000, 1), RunWorkLoops(1001, 1));
  EXPECT_GT(LeastCpuOf(1u << 22), 4 * LeastCpuOf(1u << 18));
}

}  // namespace
}  // namespace nvmeadapt::uvnvme::load
