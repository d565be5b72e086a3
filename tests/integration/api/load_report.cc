// SPDX-License-Identifier: Apache-2.0
#include "tests/integration/api/load_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace nvmeadapt::testing {
namespace {

int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())))];
}

// The fewest events any reading stream got in any full window of kFlowWindowSeconds (the first second,
// while streams connect, and the last partial window are left out).
uint64_t FewestEventsPerWindow(const LoadResult& result, size_t run_seconds) {
  uint64_t fewest = UINT64_MAX;
  for (const auto& seconds : result.reader_events_per_second) {
    for (size_t start = 1; start + kFlowWindowSeconds <= run_seconds; start += kFlowWindowSeconds) {
      uint64_t events = 0;
      for (size_t s = start; s < start + kFlowWindowSeconds && s < seconds.size(); ++s) events += seconds[s];
      fewest = std::min(fewest, events);
    }
  }
  return fewest == UINT64_MAX ? 0 : fewest;
}

}  // namespace

int ReportLoad(const LoadOptions& o, LoadResult& r, std::ostream& out) {
  std::sort(r.unary_latencies_ns.begin(), r.unary_latencies_ns.end());
  const auto run_seconds = static_cast<size_t>(std::chrono::duration_cast<std::chrono::seconds>(o.duration).count());
  uint64_t reader_events = 0;
  for (const auto& seconds : r.reader_events_per_second) {
    for (uint32_t n : seconds) reader_events += n;
  }
  const uint64_t fewest_window = FewestEventsPerWindow(r, run_seconds);
  const uint64_t stalled_missed_min =
      r.stalled_missed.empty() ? 0 : *std::min_element(r.stalled_missed.begin(), r.stalled_missed.end());
  const double calls_per_s = static_cast<double>(r.unary_latencies_ns.size()) / std::max(r.elapsed_s, 1e-9);

  char json[1024];
  std::snprintf(
      json, sizeof json,
      "{\"summary\": {\"duration_s\": %.1f, \"streams\": %u, \"stalled_streams\": %u, \"clients\": %u, "
      "\"unary_calls\": %zu, \"unary_calls_per_s\": %.0f, \"unary_failed\": %llu, \"unary_p50_us\": %.0f, "
      "\"unary_p99_us\": %.0f, \"unary_max_us\": %.0f, \"stream_failures\": %llu, \"reader_events\": %llu, "
      "\"reader_events_per_stream_per_s\": %.1f, \"fewest_events_per_%ds_window\": %llu, "
      "\"reader_missed\": %llu, \"stalled_missed_min\": %llu, \"server_rss_start_mib\": %.1f, "
      "\"server_rss_max_mib\": %.1f}}",
      r.elapsed_s, o.streams, o.stalled, o.clients, r.unary_latencies_ns.size(), calls_per_s,
      static_cast<unsigned long long>(r.unary_failed), Percentile(r.unary_latencies_ns, 0.5) / 1e3,
      Percentile(r.unary_latencies_ns, 0.99) / 1e3, (r.unary_latencies_ns.empty() ? 0 : r.unary_latencies_ns.back()) / 1e3,
      static_cast<unsigned long long>(r.stream_failures), static_cast<unsigned long long>(reader_events),
      r.reader_events_per_second.empty() ? 0.0
                                         : static_cast<double>(reader_events) /
                                               static_cast<double>(r.reader_events_per_second.size()) / r.elapsed_s,
      kFlowWindowSeconds, static_cast<unsigned long long>(fewest_window),
      static_cast<unsigned long long>(r.reader_missed), static_cast<unsigned long long>(stalled_missed_min), static_cast<double>(r.rss_first_kib) / 1024,
      static_cast<double>(r.rss_max_kib) / 1024);
  out << "api load: " << json << std::endl;
  if (!o.json_out.empty()) std::ofstream(o.json_out) << json << "\n";

  std::vector<std::string> failures = r.problems;
  if (r.unary_failed > 0) failures.push_back(std::to_string(r.unary_failed) + " unary calls failed");
  if (r.unary_latencies_ns.empty()) failures.push_back("no unary call was made");
  if (!r.reader_events_per_second.empty() && fewest_window == 0) {
    failures.push_back("a reading stream went " + std::to_string(kFlowWindowSeconds) + " s without an event");
  }
  if (o.check_stalled_missed && stalled_missed_min == 0 && !r.stalled_missed.empty()) {
    failures.push_back("a stream that did not read was not told that it missed events");
  }
  if (o.server_pid > 0 && r.rss_max_kib == 0) failures.push_back("could not read the server's RSS");
  if (o.rss_limit_mib > 0 && r.rss_max_kib > uint64_t{o.rss_limit_mib} * 1024) {
    failures.push_back("server RSS " + std::to_string(r.rss_max_kib / 1024) + " MiB > bound " +
                       std::to_string(o.rss_limit_mib) + " MiB");
  }
  for (const auto& failure : failures) out << "api load: FAIL: " << failure << "\n";
  return failures.empty() ? 0 : 1;
}

}  // namespace nvmeadapt::testing
