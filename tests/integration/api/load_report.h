// SPDX-License-Identifier: Apache-2.0
// The API load test's options, what it measured, and its verdict: figures printed, JSON written, the
// exit code 1 if any bound was not met.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "agent/ctl/client.h"

namespace nvmeadapt::testing {

struct LoadOptions {
  ctl::ClientOptions client;
  std::chrono::nanoseconds duration = std::chrono::seconds(30);
  std::chrono::nanoseconds client_interval = std::chrono::milliseconds(10);
  uint32_t streams = 100;
  uint32_t stalled = 20;
  uint32_t clients = 20;
  int server_pid = 0;
  uint32_t rss_limit_mib = 0;  // 0: not checked
  bool check_stalled_missed = false;
  std::string json_out;
};

struct LoadResult {
  double elapsed_s = 0;
  std::vector<int64_t> unary_latencies_ns;
  uint64_t unary_failed = 0;
  uint64_t stream_failures = 0;
  std::vector<std::vector<uint32_t>> reader_events_per_second;  // [reading stream][second of the run]
  uint64_t reader_missed = 0;                                    // events the reading streams were told they missed
  std::vector<uint64_t> stalled_missed;                          // per stalled stream: missed events it was told of
  uint64_t rss_first_kib = 0;
  uint64_t rss_max_kib = 0;
  std::vector<std::string> problems;
};

// A reading stream must see an event in every window of this many seconds.
inline constexpr int kFlowWindowSeconds = 5;

int ReportLoad(const LoadOptions& options, LoadResult& result, std::ostream& out);

}  // namespace nvmeadapt::testing
