// SPDX-License-Identifier: Apache-2.0
// Latency percentiles without storing samples: log-linear buckets (exact below 128 ns, then 64 buckets per
// power of two, so any reported percentile is within 1/128 of the true sample value). Single writer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace nvmeadapt::uvnvme {

class LatencyHistogram {
 public:
  void Record(int64_t ns);
  void Merge(const LatencyHistogram& other);
  uint64_t Count() const { return count_; }
  // The value at quantile q in [0, 1] (the midpoint of its bucket), in nanoseconds; 0 when empty.
  double Quantile(double q) const;

 private:
  static constexpr int kSubBits = 6;
  static constexpr int kMaxShift = 34;  // up to 2^41 ns (about 36 minutes); longer is clamped
  static constexpr size_t kBuckets = 128 + kMaxShift * 64;

  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
};

}  // namespace nvmeadapt::uvnvme
