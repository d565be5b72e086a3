// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/load/app_work.h"

#include <ctime>

#include <algorithm>

namespace nvmeadapt::uvnvme::load {
int64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint64_t RunWorkLoops(uint64_t loops, uint64_t seed) {
  uint64_t x = seed | 1;
  for (uint64_t i = 0; i < loops; ++i) {
    x ^= x << 13;  // xorshift64: each step needs the last
    x ^= x >> 7;
    x ^= x << 17;
    asm volatile("" : "+r"(x));  // keeps the compiler from folding the loop
  }
  return x;
}

uint64_t CalibrateWorkLoops(int64_t ns) {
  if (ns <= 0) return 0;
  constexpr uint64_t kRoundLoops = 1u << 20;  // about a millisecond: well above the clock's resolution
  constexpr int kRounds = 5;
  int64_t best = INT64_MAX;
  for (int round = 0; round < kRounds; ++round) {
    const int64_t start = ThreadCpuNanos();
    (void)RunWorkLoops(kRoundLoops, static_cast<uint64_t>(round) + 1);
    best = std::min(best, ThreadCpuNanos() - start);
  }
  best = std::max<int64_t>(best, 1);
  const double loops = static_cast<double>(kRoundLoops) * static_cast<double>(ns) / static_cast<double>(best);
  return std::max<uint64_t>(1, static_cast<uint64_t>(loops));
}

}  // namespace nvmeadapt::uvnvme::load
