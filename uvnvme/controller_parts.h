// SPDX-License-Identifier: Apache-2.0
// The emulated controller's insides, shared by controller.cc (the controller: queues, configuration,
// timing periods) and controller_worker.cc (the device threads' loop). Not for use outside uvnvme/.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "uvnvme/controller.h"

namespace nvmeadapt::uvnvme::detail {

inline uint64_t Pack(Coalescing c) { return uint64_t{c.threshold} | (uint64_t{c.time_us} << 32); }
inline Coalescing Unpack(uint64_t v) { return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}; }

struct InFlight {
  int64_t due_ns;
  uint64_t order;  // fetch order: ties complete in submission order
  uint32_t slot;
  uint32_t cid;
  uint32_t tag;
};
inline uint32_t Unconsumed(uint32_t tail, uint32_t head, uint32_t entries) { return (tail + entries - head) % entries; }

// An outstanding interrupt ends at the host's CQ head doorbell write. The controller compares values, not
// writes: between two of its reads the host consumes fewer than `entries` (the controller reads the head
// before every post and on every pass), so a write never brings the head back to the same value unseen.
inline void ObserveHead(uint32_t head, bool& outstanding, uint32_t head_at_signal) {
  if (outstanding && head != head_at_signal) outstanding = false;
}

struct LaterFirst {
  bool operator()(const InFlight& a, const InFlight& b) const {
    return a.due_ns != b.due_ns ? a.due_ns > b.due_ns : a.order > b.order;
  }
};

}  // namespace nvmeadapt::uvnvme::detail

namespace nvmeadapt::uvnvme {

struct EmulatedController::Slot {
  uint32_t qid = 0;
  QueueMemory* memory = nullptr;
  int irq_fd = -1;
  size_t worker = 0;
  const EmulatedController* controller = nullptr;  // the controller the queue belongs to
  ServiceScheduler* scheduler = nullptr;           // its model (a shared thread serves several)
  // Controller-thread state.
  uint32_t sq_head = 0;
  uint32_t cq_tail = 0;
  uint32_t phase = kPhaseBit;  // the phase the controller writes on this pass over the ring
  uint32_t posted_in_pass = 0;
  uint32_t pending = 0;  // completions posted since the last signal (coalescing)
  int64_t first_pending_ns = 0;
  // The queue's interrupt vector, as an MSI-X vector with the host's handler: outstanding from a signal
  // until the host's next CQ head doorbell write (the handler reaps everything pending, then writes it).
  // Completions posted meanwhile raise nothing; entries that write leaves unconsumed raise the next one.
  bool irq_outstanding = false;
  uint32_t head_at_signal = 0;  // the CQ head the signal was raised against
  Coalescing applied;
  BusyClock busy;
  std::vector<DeviceTiming> timing;  // per period; read by others after CloseTiming or Stop
  // Shared with the host.
  std::atomic<uint64_t> requested{0};
  std::atomic<uint64_t> interrupts{0};
};

struct EmulatedController::Worker {
  Worker(const EmulatedController* owner, int64_t min_service_ns) : owner(owner), waker(min_service_ns) {}
  void Run(size_t index);
  void TakeTimingPeriod();
  // Faithful clock: returns at `until`, at a doorbell or at a wake (config, stop, timing).
  void SpinUntil(int64_t until, uint32_t generation);
  void ApplyCoalescing();
  void Fetch(int64_t previous_fetch_ns);  // the time read before the previous pass's doorbell loads
  bool PostDue(int64_t now);  // true if it posted anything
  void Breathe(const std::string& name);  // once per kFaithfulMaxSpinNs of spinning
  void Signal(Slot& slot, uint32_t head);
  int64_t Interrupts(int64_t now);  // returns the earliest coalescing deadline, or INT64_MAX
  // Before sleeping: asleep it cannot watch the CQ head doorbells, so completions held back behind an
  // outstanding interrupt are judged as if none were outstanding, on one more pass. True if there were any.
  bool StopWatchingHeads();
  bool AnyDoorbellAhead() const;
  bool AnyHeadDoorbell() const;  // an outstanding interrupt's CQ head doorbell was written

  const EmulatedController* owner;  // starts it and counts its CPU
  std::vector<Slot*> slots;          // of every controller it serves
  DoorbellWaker waker;
  std::atomic<bool> running{false};
  std::atomic<uint64_t> config_requested{0};
  std::mutex ack_mutex;
  std::condition_variable ack_cv;
  uint64_t config_applied = 0;  // guarded by ack_mutex
  std::vector<detail::InFlight> heap;
  DeviceClock clock = DeviceClock::kSleeping;
  std::atomic<uint32_t> timing_requested{0};
  std::atomic<uint32_t> timing_taken{0};  // the period this thread counts in now (acknowledges requests)
  uint32_t timing_period = 0;             // controller thread's copy
  int64_t awake_since_ns = 0;             // faithful: when it last slept or breathed (the spin budget)
  bool breath_failed = false;             // faithful: the real-time class could not be taken back
  int64_t last_busy_ns = 0;               // faithful: when it last held or posted a command
  int64_t last_fetch_ns = 0;              // read just before the last pass's doorbell loads
  uint64_t order = 0;
  uint64_t rng = 0x9E3779B97F4A7C15ULL;
  std::thread thread;
  pthread_t handle{};  // for its CPU clock while it runs
  std::atomic<int64_t> final_cpu_ns{-1};
  std::vector<Slot*> deferred_full;  // completions of a full CQ (cannot happen with depth < entries)
};

}  // namespace nvmeadapt::uvnvme
