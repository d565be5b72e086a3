// SPDX-License-Identifier: Apache-2.0
// The BPF side counts inter-completion intervals per queue in log2 buckets of nanoseconds (bucket i holds
// [2^i, 2^(i+1)) ns, absolute counts since the queue was first seen). This turns them into a Prometheus
// histogram in seconds:
//   - bucket i < 31 becomes the cumulative bucket le = 2^(i+1) ns; the last BPF bucket (from 2^31 ns, about
//     2.1 s) gets no finite upper bound and only counts in +Inf, so intervals the BPF side clamps into it
//     (longer than 2^32 ns) are still counted right;
//   - +Inf = _count = the sum of all BPF buckets;
//   - _sum is an estimate (the BPF side keeps no exact sum): every interval counts as 1.5 x 2^i ns, the
//     middle of its bucket, so _sum / _count is within a factor of 4/3 of the true mean.
#pragma once

#include <prometheus/client_metric.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "agent/collect/collector.h"

namespace nvmeadapt::metrics {

inline constexpr size_t kFiniteIntervalBuckets = collect::kHistBuckets - 1;

// le of finite bucket i (i < kFiniteIntervalBuckets), in seconds: 2^(i+1) ns.
double IntervalBucketUpperBoundSeconds(size_t bucket);
// What _sum counts for one interval of BPF bucket i, in seconds: 1.5 x 2^i ns.
double IntervalBucketMidpointSeconds(size_t bucket);

prometheus::ClientMetric::Histogram IntervalHistogram(
    const std::array<uint64_t, collect::kHistBuckets>& counts);

}  // namespace nvmeadapt::metrics
