// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <ctime>

namespace nvmeadapt {

// CLOCK_MONOTONIC in nanoseconds: the same clock as bpf_ktime_get_ns(), so agent and BPF times compare.
inline int64_t MonotonicNanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace nvmeadapt
