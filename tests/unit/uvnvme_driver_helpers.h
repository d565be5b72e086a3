// SPDX-License-Identifier: Apache-2.0
// Helpers of the uvnvme unit tests that drive a Driver directly (no load generator).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "uvnvme/driver.h"

namespace nvmeadapt::uvnvme::testing {

inline DriverConfig FixedModel(int64_t latency_ns, uint32_t entries = 64) {
  DriverConfig config;
  config.queue_entries = entries;
  config.model.kind = ModelKind::kFixed;
  config.model.read_latency_ns = latency_ns;
  return config;
}

inline std::unique_ptr<Driver> Started(const DriverConfig& config) {
  auto driver = Driver::Create(config);
  EXPECT_TRUE(driver) << driver.error().message;
  if (!driver) return nullptr;
  EXPECT_TRUE((*driver)->Start());
  return std::move(*driver);
}

// Reaps until `count` completions arrived (each Reap in interrupt mode blocks for an interrupt).
inline std::vector<Completion> ReapCount(HostQueue& queue, size_t count) {
  std::vector<Completion> all;
  std::vector<Completion> batch(queue.Capacity());
  while (all.size() < count) {
    const size_t n = queue.Reap(batch);
    all.insert(all.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return all;
}

}  // namespace nvmeadapt::uvnvme::testing
