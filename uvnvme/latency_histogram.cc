// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace nvmeadapt::uvnvme {
namespace {

constexpr uint64_t kSub = 64;

size_t IndexOf(uint64_t v, size_t buckets) {
  if (v < 2 * kSub) return v;
  const int msb = 63 - __builtin_clzll(v);
  const int shift = msb - 6;  // v >> shift lies in [64, 128)
  const size_t index = 2 * kSub + size_t(shift - 1) * kSub + ((v >> shift) - kSub);
  return std::min(index, buckets - 1);
}

double MidpointOf(size_t index) {
  if (index < 2 * kSub) return static_cast<double>(index);
  const size_t k = index - 2 * kSub;
  const int shift = static_cast<int>(k / kSub) + 1;
  const uint64_t sub = k % kSub + kSub;
  return (static_cast<double>(sub << shift) + static_cast<double>((sub + 1) << shift)) / 2.0;
}

}  // namespace

void LatencyHistogram::Record(int64_t ns) {
  ++buckets_[IndexOf(ns > 0 ? static_cast<uint64_t>(ns) : 0, kBuckets)];
  ++count_;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
}

double LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * count_)));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return MidpointOf(i);
  }
  return MidpointOf(kBuckets - 1);
}

}  // namespace nvmeadapt::uvnvme
