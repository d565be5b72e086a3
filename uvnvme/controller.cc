// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/controller.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <ctime>
#include <string>

#include "common/clock.h"
#include "uvnvme/controller_parts.h"
#include "uvnvme/sync.h"

namespace nvmeadapt::uvnvme {

using detail::Pack;
using detail::Unpack;

std::string_view DeviceClockName(DeviceClock clock) {
  return clock == DeviceClock::kFaithful ? "faithful" : "sleeping";
}

void DeviceTiming::RecordPost(int64_t lateness_ns) {
  lateness.Record(lateness_ns);
  lateness_max_ns = std::max(lateness_max_ns, lateness_ns);
  ++posted;
}

size_t DeviceTiming::IntervalBucket(int64_t interval_ns) {
  const uint64_t us = interval_ns > 0 ? static_cast<uint64_t>(interval_ns) / 1000 : 0;
  if (us == 0) return 0;
  const size_t bucket = static_cast<size_t>(64 - __builtin_clzll(us));  // us in [2^(b-1), 2^b)
  return std::min(bucket, kIntervalBuckets - 1);
}

int64_t DeviceTiming::IntervalBucketLowUs(size_t bucket) { return bucket == 0 ? 0 : int64_t{1} << (bucket - 1); }

void DeviceTiming::RecordInterval(int64_t interval_ns) {
  ++intervals[IntervalBucket(interval_ns)];
  interval_max_ns = std::max(interval_max_ns, interval_ns);
}

void DeviceTiming::Merge(const DeviceTiming& other) {
  lateness.Merge(other.lateness);
  lateness_max_ns = std::max(lateness_max_ns, other.lateness_max_ns);
  for (size_t i = 0; i < kIntervalBuckets; ++i) intervals[i] += other.intervals[i];
  interval_max_ns = std::max(interval_max_ns, other.interval_max_ns);
  posted += other.posted;
  signal_write.Merge(other.signal_write);
}

void DoorbellWaker::AfterDoorbell(int64_t doorbell_ns) {
  // Pairs with the controller's store of next_look_ns and its re-read of the tails: either it sees the
  // new tail, or this sees its deadline and wakes it when the command could be due sooner.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (next_look_ns.load(std::memory_order_seq_cst) > doorbell_ns + min_service_ns_) WakeNow();
}

void DoorbellWaker::WakeNow() {
  generation.fetch_add(1, std::memory_order_seq_cst);
  FutexWakeAll(generation);
}

EmulatedController::EmulatedController(uint32_t index, const ModelConfig& model, uint32_t threads,
                                       DeviceClock clock, uint32_t timing_periods)
    : index_(index), clock_(clock), timing_periods_(std::max(timing_periods, 1u)), scheduler_(model) {
  for (uint32_t i = 0; i < std::max(threads, 1u); ++i) {
    workers_.push_back(std::make_shared<Worker>(this, scheduler_.MinServiceNs()));
    workers_.back()->rng ^= (uint64_t{index} << 32) | i;
    workers_.back()->clock = clock;
  }
}

EmulatedController::~EmulatedController() {
  Stop();
  for (auto& worker : workers_) {  // a shared thread keeps the other controllers' queues
    std::erase_if(worker->slots, [this](Slot* slot) {
      if (slot->controller != this) return false;
      delete slot;
      return true;
    });
  }
}

Status EmulatedController::ServeOnThreadsOf(EmulatedController& host) {
  if (&host == this) return OkStatus();
  if (started_ || host.started_) return MakeError(ErrorCode::kFailedPrecondition, "controller already started");
  for (auto& worker : workers_) {
    if (!worker->slots.empty()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "controller " + std::to_string(index_) + " has queues on its own threads already");
    }
  }
  if (host.clock_ != clock_) {
    return MakeError(ErrorCode::kInvalidArgument, "controllers " + std::to_string(index_) + " and " +
                                                      std::to_string(host.index_) + " run different device clocks");
  }
  workers_ = host.workers_;
  return OkStatus();
}

Status EmulatedController::AttachQueue(uint32_t qid, QueueMemory& memory, int irq_fd) {
  if (started_) return MakeError(ErrorCode::kFailedPrecondition, "controller already started");
  if (FindSlot(qid)) {
    return MakeError(ErrorCode::kInvalidArgument, "queue " + std::to_string(qid) + " attached twice");
  }
  size_t queues = 0;
  for (auto& worker : workers_) queues += worker->slots.size();
  auto* slot = new Slot();
  slot->controller = this;
  slot->scheduler = &scheduler_;
  slot->qid = qid;
  slot->memory = &memory;
  slot->irq_fd = irq_fd;
  slot->worker = queues % workers_.size();
  slot->timing.resize(timing_periods_);
  workers_[slot->worker]->slots.push_back(slot);
  return OkStatus();
}

Status EmulatedController::Start(const ThreadPlacement& placement) {
  if (started_) return OkStatus();
  started_ = true;
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& worker = *workers_[i];
    if (worker.owner != this) continue;  // a shared thread: its host starts it
    size_t capacity = 0;
    for (Slot* slot : worker.slots) capacity += slot->memory->entries();
    worker.heap.reserve(capacity);
    worker.running.store(true);
    worker.thread = std::thread([&worker, i] { worker.Run(i); });
    worker.handle = worker.thread.native_handle();
    const std::string what = "controller " + std::to_string(index_) + " thread " + std::to_string(i);
    if (Status placed = ApplyPlacement(worker.handle, placement, what); !placed) return placed;
  }
  return OkStatus();
}

void EmulatedController::Stop() {
  for (auto& worker : workers_) {
    if (!worker->thread.joinable()) continue;
    worker->running.store(false);
    worker->waker.WakeNow();
    worker->thread.join();
  }
}

EmulatedController::Slot* EmulatedController::FindSlot(uint32_t qid) const {
  for (auto& worker : workers_) {
    for (Slot* slot : worker->slots) {
      if (slot->qid == qid && slot->controller == this) return slot;
    }
  }
  return nullptr;
}

DoorbellWaker& EmulatedController::WakerFor(uint32_t qid) {
  Slot* slot = FindSlot(qid);
  return workers_[slot ? slot->worker : 0]->waker;
}

Coalescing EmulatedController::GetCoalescing(uint32_t qid) const {
  Slot* slot = FindSlot(qid);
  return slot ? Unpack(slot->requested.load()) : Coalescing{};
}

uint64_t EmulatedController::InterruptsSent(uint32_t qid) const {
  Slot* slot = FindSlot(qid);
  return slot ? slot->interrupts.load(std::memory_order_relaxed) : 0;
}

Status EmulatedController::SetCoalescing(uint32_t qid, Coalescing coalescing, std::chrono::milliseconds timeout) {
  Slot* slot = FindSlot(qid);
  if (!slot) return MakeError(ErrorCode::kNotFound, "no queue " + std::to_string(qid));
  if (coalescing.threshold > kMaxCoalesceThreshold || coalescing.time_us > kMaxCoalesceTimeUs) {
    return MakeError(ErrorCode::kInvalidArgument, "coalescing outside threshold <= 256, time_us <= 25500");
  }
  Worker& worker = *workers_[slot->worker];
  slot->requested.store(Pack(coalescing));
  uint64_t ticket = worker.config_requested.fetch_add(1) + 1;
  if (!worker.running.load()) {  // not started or stopped: read at start, nothing to wait for
    return OkStatus();
  }
  worker.waker.WakeNow();
  std::unique_lock lock(worker.ack_mutex);
  if (!worker.ack_cv.wait_for(lock, timeout, [&] { return worker.config_applied >= ticket; })) {
    return MakeError(ErrorCode::kUnavailable, "controller " + std::to_string(index_) +
                                                  " did not apply the coalescing in time (starved?)");
  }
  return OkStatus();
}

void EmulatedController::EnterTimingPeriod(uint32_t period) {
  for (auto& worker : workers_) worker->timing_requested.store(period, std::memory_order_release);
}

Status EmulatedController::CloseTiming(std::chrono::milliseconds timeout) {
  EnterTimingPeriod(timing_periods_);
  for (auto& worker : workers_) {
    if (!worker->running.load()) continue;  // not started or stopped: nothing writes
    worker->waker.WakeNow();
    std::unique_lock lock(worker->ack_mutex);
    if (!worker->ack_cv.wait_for(lock, timeout, [&] {
          return worker->timing_taken.load(std::memory_order_acquire) >= timing_periods_;
        })) {
      return MakeError(ErrorCode::kUnavailable, "controller " + std::to_string(index_) +
                                                    " did not close its timing in time (starved?)");
    }
  }
  return OkStatus();
}

std::vector<DeviceTiming> EmulatedController::Timing(uint32_t qid) const {
  Slot* slot = FindSlot(qid);
  return slot ? slot->timing : std::vector<DeviceTiming>{};
}

double EmulatedController::CpuSeconds() const {
  int64_t total = 0;
  for (auto& worker : workers_) {
    if (worker->owner != this) continue;  // a shared thread counts once, at its host
    int64_t final_ns = worker->final_cpu_ns.load();
    if (final_ns >= 0 || !worker->thread.joinable()) {
      total += std::max<int64_t>(final_ns, 0);
      continue;
    }
    clockid_t clock;
    timespec ts{};
    if (pthread_getcpuclockid(worker->handle, &clock) == 0 &&
        clock_gettime(clock, &ts) == 0) {
      total += int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
    } else {
      total += std::max<int64_t>(worker->final_cpu_ns.load(), 0);  // it exited meanwhile
    }
  }
  return static_cast<double>(total) / 1e9;
}

}  // namespace nvmeadapt::uvnvme
