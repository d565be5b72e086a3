// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/model.h"

#include <algorithm>
#include <sstream>

namespace nvmeadapt::uvnvme {
namespace {

uint64_t NextRandom(uint64_t& state) {  // xorshift64*: cheap, good enough for jitter
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

constexpr int64_t kMaxLatencyNs = 10'000'000'000;  // 10 s: beyond that a test would look hung

}  // namespace

Status ValidateModel(const ModelConfig& model) {
  auto in_range = [](int64_t ns) { return ns >= 0 && ns <= kMaxLatencyNs; };
  if (!in_range(model.read_latency_ns)) return MakeError(ErrorCode::kInvalidArgument, "latency outside [0, 10 s]");
  if (!in_range(model.write_latency_ns)) {
    return MakeError(ErrorCode::kInvalidArgument, "write latency outside [0, 10 s]");
  }
  if (!in_range(model.jitter_ns)) return MakeError(ErrorCode::kInvalidArgument, "jitter outside [0, 10 s]");
  return OkStatus();
}

std::string DescribeModel(const ModelConfig& model) {
  std::ostringstream out;
  if (model.kind == ModelKind::kFixed) {
    out << "fixed " << model.read_latency_ns / 1000.0 << " us";
    return out.str();
  }
  out << "media read " << model.read_latency_ns / 1000.0 << " us, write " << model.write_latency_ns / 1000.0
      << " us";
  if (model.jitter_ns > 0) out << " + jitter < " << model.jitter_ns / 1000.0 << " us";
  out << ", cap " << (model.iops_cap ? std::to_string(model.iops_cap) + " IOPS" : std::string("none"));
  if (model.bandwidth_bytes_per_s) out << ", " << model.bandwidth_bytes_per_s / 1'000'000 << " MB/s";
  out << " per controller";
  return out.str();
}

int64_t ServiceScheduler::SlotNs(uint32_t bytes) const {
  int64_t slot = 0;
  if (model_.iops_cap) slot = static_cast<int64_t>(1'000'000'000 / model_.iops_cap);
  if (model_.bandwidth_bytes_per_s) {
    slot = std::max(slot, static_cast<int64_t>(uint64_t{bytes} * 1'000'000'000 / model_.bandwidth_bytes_per_s));
  }
  return slot;
}

int64_t ServiceScheduler::DueTime(int64_t doorbell_ns, bool write, uint32_t bytes, uint64_t& rng) {
  if (model_.kind == ModelKind::kFixed) return doorbell_ns + model_.read_latency_ns;
  int64_t start = doorbell_ns;
  const int64_t slot = SlotNs(bytes);
  if (slot > 0) {
    int64_t free = pipeline_free_ns_.load(std::memory_order_relaxed);
    do {
      start = std::max(doorbell_ns, free);
    } while (!pipeline_free_ns_.compare_exchange_weak(free, start + slot, std::memory_order_relaxed));
  }
  int64_t latency = write ? model_.write_latency_ns : model_.read_latency_ns;
  if (model_.jitter_ns > 0) latency += static_cast<int64_t>(NextRandom(rng) % uint64_t(model_.jitter_ns));
  return start + latency;
}

int64_t ServiceScheduler::MinServiceNs() const {
  if (model_.kind == ModelKind::kFixed) return model_.read_latency_ns;
  return std::min(model_.read_latency_ns, model_.write_latency_ns);
}

}  // namespace nvmeadapt::uvnvme
