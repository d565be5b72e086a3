// SPDX-License-Identifier: Apache-2.0
// The agent's own cost, read from /proc/self like every Prometheus client library does, so dashboards and
// alerts can use the standard process_* names.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace nvmeadapt::metrics {

struct ProcessStats {
  double cpu_seconds = 0;         // user + system time
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
  uint64_t open_fds = 0;          // includes the one used to count them
  uint64_t max_fds = 0;           // RLIMIT_NOFILE soft limit
};

// Reads `proc_dir`/stat and `proc_dir`/fd (another directory only in tests); the boot time comes from
// /proc/stat and max_fds from this process's getrlimit.
Result<ProcessStats> ReadProcessStats(const std::string& proc_dir = "/proc/self");

}  // namespace nvmeadapt::metrics
