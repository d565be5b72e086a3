// SPDX-License-Identifier: Apache-2.0
// The agent's side of the per-queue state shared with BPF: the na_queue_index hash (key -> slot) and the
// na_queues array mapped into this process. See bpf/nvme_adapt.h (struct na_queue_slot) for who writes
// what and how a slot is allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/collect/collector.h"
#include "bpf/nvme_adapt.h"

namespace nvmeadapt::collect {

class BpfQueueSlots {
 public:
  // index_fd, slots_fd: the two maps.
  static Result<std::unique_ptr<BpfQueueSlots>> Map(int index_fd, int slots_fd);
  BpfQueueSlots(const BpfQueueSlots&) = delete;
  BpfQueueSlots& operator=(const BpfQueueSlots&) = delete;
  ~BpfQueueSlots();

  Status SetControl(const QueueKey& key, const QueueControl& control);
  Status Forget(const QueueKey& key);
  Result<QueueCounters> Counters(const QueueKey& key) const;
  std::vector<QueueKey> Keys() const;

 private:
  BpfQueueSlots(int index_fd, na_queue_slot* slots, size_t mapped_bytes);
  Result<uint32_t> Lookup(const QueueKey& key) const;
  Result<uint32_t> LookupOrCreate(const QueueKey& key);

  int index_fd_;
  na_queue_slot* slots_;
  size_t mapped_bytes_;
  std::mutex mutex_;  // agent-side slot allocation and control writes
};

}  // namespace nvmeadapt::collect
