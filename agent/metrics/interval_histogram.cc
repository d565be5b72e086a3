// SPDX-License-Identifier: Apache-2.0
#include "agent/metrics/interval_histogram.h"

#include <cmath>
#include <limits>

namespace nvmeadapt::metrics {
namespace {
constexpr double kNanosPerSecond = 1e9;
}

double IntervalBucketUpperBoundSeconds(size_t bucket) {
  // Divided, not multiplied by 1e-9 (inexact): the quotient is the double nearest to 2^(i+1) / 10^9.
  return std::ldexp(1.0, static_cast<int>(bucket) + 1) / kNanosPerSecond;
}

double IntervalBucketMidpointSeconds(size_t bucket) {
  return 1.5 * std::ldexp(1.0, static_cast<int>(bucket)) / kNanosPerSecond;
}

prometheus::ClientMetric::Histogram IntervalHistogram(
    const std::array<uint64_t, collect::kHistBuckets>& counts) {
  prometheus::ClientMetric::Histogram histogram;
  histogram.bucket.reserve(collect::kHistBuckets);
  uint64_t cumulative = 0;
  double sum = 0;
  for (size_t i = 0; i < collect::kHistBuckets; ++i) {
    cumulative += counts[i];
    sum += static_cast<double>(counts[i]) * IntervalBucketMidpointSeconds(i);
    const bool open_ended = i == kFiniteIntervalBuckets;
    histogram.bucket.push_back(
        {cumulative, open_ended ? std::numeric_limits<double>::infinity() : IntervalBucketUpperBoundSeconds(i)});
  }
  histogram.sample_count = cumulative;
  histogram.sample_sum = sum;
  return histogram;
}

}  // namespace nvmeadapt::metrics
