// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/bpf_queue_slots.h"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "agent/collect/records.h"
#include "common/clock.h"

namespace nvmeadapt::collect {
namespace {

// What BPF's na_slot_create does to a claimed slot, so a slot made here is indistinguishable from one
// made there: everything but the key's source, which stays NA_SOURCE_CLAIMED until the index is published.
void FillClaimedSlot(na_queue_slot& slot, const na_queue_key& key) {
  std::memset(&slot.control, 0, sizeof slot.control);
  std::memset(&slot.counters, 0, sizeof slot.counters);
  slot.counters.window_start_ns = static_cast<__u64>(MonotonicNanos());
  slot.counters.observed_mode = NA_MODE_UNKNOWN;
  slot.key.ctrl = key.ctrl;
  slot.key.qid = key.qid;
  slot.key.pid = key.pid;
}

}  // namespace

Result<std::unique_ptr<BpfQueueSlots>> BpfQueueSlots::Map(int index_fd, int slots_fd) {
  const long page = sysconf(_SC_PAGESIZE);
  const size_t bytes = (sizeof(na_queue_slot) * NA_MAX_QUEUES + page - 1) / page * page;
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, slots_fd, 0);
  if (mapped == MAP_FAILED) return SysError("mmap", "BPF map na_queues", errno);
  return std::unique_ptr<BpfQueueSlots>(
      new BpfQueueSlots(index_fd, static_cast<na_queue_slot*>(mapped), bytes));
}

BpfQueueSlots::BpfQueueSlots(int index_fd, na_queue_slot* slots, size_t mapped_bytes)
    : index_fd_(index_fd), slots_(slots), mapped_bytes_(mapped_bytes) {}

BpfQueueSlots::~BpfQueueSlots() {
  if (slots_ != nullptr) munmap(slots_, mapped_bytes_);
}

Result<uint32_t> BpfQueueSlots::Lookup(const QueueKey& key) const {
  const na_queue_key bpf_key = ToBpfKey(key);
  uint32_t index = 0;
  if (bpf_map_lookup_elem(index_fd_, &bpf_key, &index) != 0) {
    if (errno == ENOENT) return MakeError(ErrorCode::kNotFound, "queue " + key.ToString() + ": not observed");
    return SysError("lookup in BPF map na_queue_index, queue", key.ToString(), errno);
  }
  if (index >= NA_MAX_QUEUES) return MakeError(ErrorCode::kInternal, "queue " + key.ToString() + ": bad slot");
  return index;
}

// Same protocol as BPF's na_slot_create (bpf/nvme_adapt.h, struct na_queue_slot): claim the first free
// slot from the key's home slot on, fill it, publish it with BPF_NOEXIST, then write the key's source; the
// loser of a race frees its slot and takes the winner's.
Result<uint32_t> BpfQueueSlots::LookupOrCreate(const QueueKey& key) {
  if (auto found = Lookup(key); found.ok() || found.error().code != ErrorCode::kNotFound) return found;
  const na_queue_key bpf_key = ToBpfKey(key);
  const uint32_t home = na_home_slot(&bpf_key);
  std::optional<uint32_t> claimed;
  // Within the key's half of the table (na_region_base): a peer's flood leaves the kernel's half free.
  for (uint32_t i = 0; i < NA_REGION_SLOTS && !claimed; ++i) {
    const uint32_t index = na_slot_index(home, i);
    uint32_t free_source = 0;
    if (__atomic_load_n(&slots_[index].key.source, __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(&slots_[index].key.source, &free_source, NA_SOURCE_CLAIMED, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      claimed = index;
    }
  }
  if (!claimed) {
    return MakeError(ErrorCode::kUnavailable,
                     "queue " + key.ToString() + ": queue table full (the " + std::to_string(NA_REGION_SLOTS) +
                         " slots of its source's half: " +
                         (na_region_base(bpf_key.source) == 0 ? "kernel nvme and block" : "uvnvme, SPDK and nvmet") +
                         ")");
  }
  const uint32_t index = *claimed;
  FillClaimedSlot(slots_[index], bpf_key);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  if (bpf_map_update_elem(index_fd_, &bpf_key, &index, BPF_NOEXIST) == 0) {
    __atomic_store_n(&slots_[index].key.source, bpf_key.source, __ATOMIC_RELEASE);
    return index;
  }
  const int err = errno;
  __atomic_store_n(&slots_[index].key.source, 0u, __ATOMIC_RELEASE);
  if (err == EEXIST) return Lookup(key);
  return SysError("insert into BPF map na_queue_index, queue", key.ToString(), err);
}

Status BpfQueueSlots::SetControl(const QueueKey& key, const QueueControl& control) {
  NA_RETURN_IF_ERROR(ValidateControl(control));
  std::lock_guard lock(mutex_);
  auto index = LookupOrCreate(key);
  if (!index.ok()) return std::move(index).take_error();
  na_queue_control& target = slots_[*index].control;
  const na_queue_control wanted = ToBpfControl(control);
  // BPF reads generation first: every other field is in place before the new generation shows. Setting
  // mode_since of a pending generation (same generation, 0 -> the lever's return) needs no other order:
  // a completion that reads 0 waits for the next one.
  __atomic_store_n(&target.mode, wanted.mode, __ATOMIC_RELAXED);
  __atomic_store_n(&target.mode_since_ns, wanted.mode_since_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&target.baseline_span_ns, wanted.baseline_span_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&target.baseline_completions, wanted.baseline_completions, __ATOMIC_RELAXED);
  __atomic_store_n(&target.window_completions, wanted.window_completions, __ATOMIC_RELAXED);
  __atomic_store_n(&target.pace_slack_ns, wanted.pace_slack_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&target.flags, wanted.flags, __ATOMIC_RELAXED);
  __atomic_store_n(&target.generation, wanted.generation, __ATOMIC_RELEASE);
  return OkStatus();
}

Status BpfQueueSlots::Forget(const QueueKey& key) {
  std::lock_guard lock(mutex_);
  auto index = Lookup(key);
  if (!index.ok()) return std::move(index).take_error();
  const na_queue_key bpf_key = ToBpfKey(key);
  if (bpf_map_delete_elem(index_fd_, &bpf_key) != 0)
    return SysError("delete from BPF map na_queue_index, queue", key.ToString(), errno);
  // Source 0: the slot is free, and no completion's key matches it. A completion that looked the slot up
  // just before may still write to it; whoever claims it next refills it first, so at worst that
  // straggler lands in the new queue's first window.
  __atomic_store_n(&slots_[*index].key.source, 0u, __ATOMIC_RELEASE);
  return OkStatus();
}

Result<QueueCounters> BpfQueueSlots::Counters(const QueueKey& key) const {
  auto index = Lookup(key);
  if (!index.ok()) return std::move(index).take_error();
  na_queue_counters copy;
  std::memcpy(&copy, const_cast<const na_queue_counters*>(&slots_[*index].counters), sizeof copy);
  return FromBpfCounters(copy);
}

std::vector<QueueKey> BpfQueueSlots::Keys() const {
  std::vector<QueueKey> keys;
  na_queue_key key{}, next{};
  const void* previous = nullptr;
  while (bpf_map_get_next_key(index_fd_, previous, &next) == 0) {
    keys.push_back(FromBpfKey(next));
    key = next;
    previous = &key;
  }
  return keys;
}

}  // namespace nvmeadapt::collect
