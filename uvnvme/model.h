// SPDX-License-Identifier: Apache-2.0
// The emulated controller's service-time models.
//   fixed: every command completes `latency` after its doorbell; no throughput limit.
//   media: a command enters the controller's shared pipeline at max(doorbell, pipeline free), occupies it
//          for max(1 / iops_cap, bytes / bandwidth), and completes a media latency (read or write, plus
//          uniform jitter) after it entered. Idle latency is the media latency; throughput saturates at the
//          cap, and beyond it queueing delay grows with queue depth (Little's law).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/result.h"

namespace nvmeadapt::uvnvme {

enum class ModelKind : uint8_t { kFixed, kMedia };

struct ModelConfig {
  ModelKind kind = ModelKind::kMedia;
  int64_t read_latency_ns = 20'000;   // fixed: the latency of every command
  int64_t write_latency_ns = 20'000;  // media only
  int64_t jitter_ns = 0;              // media only: uniform in [0, jitter)
  uint64_t iops_cap = 500'000;        // media only, per controller; 0 = none
  uint64_t bandwidth_bytes_per_s = 3'200'000'000;  // media only, per controller; 0 = none
};

Status ValidateModel(const ModelConfig& model);
std::string DescribeModel(const ModelConfig& model);  // one line, for summaries and logs

// One per emulated controller; its threads share the pipeline, hence the cap.
class ServiceScheduler {
 public:
  explicit ServiceScheduler(const ModelConfig& model) : model_(model) {}

  // When a command with this doorbell time completes. Thread-safe; `rng` is the caller thread's state.
  int64_t DueTime(int64_t doorbell_ns, bool write, uint32_t bytes, uint64_t& rng);

  // No command completes sooner than this after its doorbell: the host need not wake a controller that
  // will look at its doorbells before then anyway.
  int64_t MinServiceNs() const;

  const ModelConfig& model() const { return model_; }

 private:
  int64_t SlotNs(uint32_t bytes) const;

  const ModelConfig model_;
  std::atomic<int64_t> pipeline_free_ns_{0};
};

}  // namespace nvmeadapt::uvnvme
