// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/sync.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace nvmeadapt::uvnvme {

// Not FUTEX_PRIVATE: the words may live in memory shared with another process.
void FutexWait(std::atomic<uint32_t>& word, uint32_t expected, int64_t deadline_ns) {
  timespec deadline{};
  timespec* timeout = nullptr;
  if (deadline_ns > 0) {
    deadline.tv_sec = deadline_ns / 1'000'000'000;
    deadline.tv_nsec = deadline_ns % 1'000'000'000;
    timeout = &deadline;
  }
  // FUTEX_WAIT_BITSET takes an absolute timeout on CLOCK_MONOTONIC. EAGAIN (word changed), EINTR and
  // ETIMEDOUT all mean "look again", which every caller does.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_BITSET, expected, timeout, nullptr,
          FUTEX_BITSET_MATCH_ANY);
}

void FutexWakeAll(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace nvmeadapt::uvnvme
