// SPDX-License-Identifier: Apache-2.0
// The device threads' loop: fetch commands at their doorbells, post each completion at its due time,
// raise interrupts as the queue's vector and coalescing allow, and wait by the device clock.
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "uvnvme/controller_parts.h"
#include "uvnvme/placement.h"
#include "uvnvme/sync.h"

namespace nvmeadapt::uvnvme {

using detail::InFlight;
using detail::LaterFirst;
using detail::ObserveHead;
using detail::Unconsumed;
using detail::Unpack;

void EmulatedController::Worker::Run(size_t index) {
  // Timed sleeps are the model's clock: no slack beyond the kernel's own wakeup latency.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  std::string name = "uvnvme-c" + std::to_string(owner->index_) + "t" + std::to_string(index);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  ApplyCoalescing();
  awake_since_ns = last_busy_ns = MonotonicNanos();
  while (running.load(std::memory_order_relaxed)) {
    const uint32_t generation = waker.generation.load(std::memory_order_seq_cst);
    if (config_requested.load(std::memory_order_relaxed) != config_applied) ApplyCoalescing();
    if (timing_requested.load(std::memory_order_acquire) != timing_period) TakeTimingPeriod();
    const int64_t fetched_before_ns = last_fetch_ns;
    last_fetch_ns = MonotonicNanos();
    Fetch(fetched_before_ns);
    int64_t now = MonotonicNanos();
    const bool posted = PostDue(now);
    // Completions are visible before the mask bits are read: pairs with the host's unmask-then-drain.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    int64_t deadline = Interrupts(now);
    if (!heap.empty()) deadline = std::min(deadline, heap.front().due_ns);
    if (!deferred_full.empty()) deadline = std::min(deadline, now + 100'000);
    int64_t look = deadline;  // when this thread looks at the doorbells next, if nothing wakes it
    if (clock == DeviceClock::kFaithful) {
      if (posted || !heap.empty()) last_busy_ns = now;
      // Nothing held but busy a moment ago (a QD1 host about to submit again): keep spinning a while.
      // Spinning, a doorbell is seen within a loop pass; asleep, it costs the host a futex wake and the
      // command its wake-up latency (tens of us here): a QD1 command arrives just after a completion.
      int64_t wake = deadline;
      const bool idle_spin = heap.empty() && now - last_busy_ns < kFaithfulIdleSpinNs;
      if (idle_spin) wake = std::min(wake, last_busy_ns + kFaithfulIdleSpinNs);
      if (wake != INT64_MAX && (idle_spin || wake - now <= kFaithfulSleepAheadNs)) {
        if (now - awake_since_ns < kFaithfulMaxSpinNs) SpinUntil(wake, generation);
        else Breathe(name);
        continue;
      }
      // Far off: sleep, then spin for the last stretch. Idle (no wake): sleep until a doorbell.
      if (wake != INT64_MAX) look = wake - kFaithfulWakeMarginNs;
    }
    if (StopWatchingHeads()) continue;
    waker.next_look_ns.store(look, std::memory_order_seq_cst);
    if (AnyDoorbellAhead() || look <= MonotonicNanos()) {
      waker.next_look_ns.store(0, std::memory_order_relaxed);
      continue;
    }
    FutexWait(waker.generation, generation, look == INT64_MAX ? 0 : look);
    waker.next_look_ns.store(0, std::memory_order_seq_cst);
    awake_since_ns = MonotonicNanos();
  }
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  final_cpu_ns.store(int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec);
}

void EmulatedController::Worker::Breathe(const std::string& name) {
  // A real-time spinner would starve this CPU's kernel workers (kernels without the fair server).
  if (Status status = YieldToFairTasks(pthread_self(), name); !status.ok()) {
    // Still spinning, now in the fair class: lateness shows it. Say so once, not once a second.
    if (!breath_failed) NA_WARN("uvnvme: " << status.error().message);
    breath_failed = true;
  }
  awake_since_ns = MonotonicNanos();
}

void EmulatedController::Worker::SpinUntil(int64_t until, uint32_t generation) {
  // next_look_ns stays 0 (awake): a doorbell costs the host no wake-up.
  while (true) {
    if (AnyDoorbellAhead() || AnyHeadDoorbell()) return;
    if (waker.generation.load(std::memory_order_relaxed) != generation) return;
    if (MonotonicNanos() >= until) return;
    CpuRelax();
  }
}

void EmulatedController::Worker::TakeTimingPeriod() {
  timing_period = timing_requested.load(std::memory_order_acquire);
  std::lock_guard lock(ack_mutex);
  timing_taken.store(timing_period, std::memory_order_release);
  ack_cv.notify_all();
}

void EmulatedController::Worker::ApplyCoalescing() {
  const uint64_t ticket = config_requested.load();
  for (Slot* slot : slots) slot->applied = Unpack(slot->requested.load());
  // A stricter rule than before may already be met by what is pending: Interrupts() checks on this pass.
  std::lock_guard lock(ack_mutex);
  config_applied = ticket;
  ack_cv.notify_all();
}

void EmulatedController::Worker::Fetch(int64_t previous_fetch_ns) {
  for (uint32_t s = 0; s < slots.size(); ++s) {
    Slot& slot = *slots[s];
    const uint32_t entries = slot.memory->entries();
    const uint32_t tail = slot.memory->registers().sq_tail.load(std::memory_order_acquire);
    if (tail >= entries) continue;  // a host bug; a real controller would raise an asynchronous event
    const SubmissionEntry* ring = slot.memory->submissions();
    while (slot.sq_head != tail) {
      const SubmissionEntry& sqe = ring[slot.sq_head];
      // The host stamps the doorbell's time just before it stores the tail; a host thread preempted between
      // the two (eight polling reapers on one CPU: for tens of ms) leaves an old stamp. The tail was not there
      // at the previous fetch, so it was rung after it: service cannot start before the device could see it.
      const int64_t stamped = static_cast<int64_t>((uint64_t{sqe.submit_ns_hi} << 32) | sqe.submit_ns_lo);
      const int64_t doorbell = std::max(stamped, previous_fetch_ns);
      const uint32_t bytes = ((sqe.cdw12 & 0xffffu) + 1) * kLbaBytes;
      const int64_t due = slot.scheduler->DueTime(doorbell, sqe.opcode == kOpcodeWrite, bytes, rng);
      heap.push_back(InFlight{due, order++, s, sqe.cid, sqe.tag});
      slot.busy.Fetched(doorbell);
      std::push_heap(heap.begin(), heap.end(), LaterFirst{});
      slot.sq_head = slot.sq_head + 1 == entries ? 0 : slot.sq_head + 1;
    }
  }
}

bool EmulatedController::Worker::PostDue(int64_t now) {
  for (Slot* slot : slots) slot->posted_in_pass = 0;
  deferred_full.clear();
  bool posted = false;
  std::vector<InFlight> blocked;
  while (!heap.empty() && heap.front().due_ns <= now) {
    std::pop_heap(heap.begin(), heap.end(), LaterFirst{});
    InFlight done = heap.back();
    heap.pop_back();
    Slot& slot = *slots[done.slot];
    const uint32_t entries = slot.memory->entries();
    const uint32_t next = slot.cq_tail + 1 == entries ? 0 : slot.cq_tail + 1;
    const uint32_t head = slot.memory->registers().cq_head.load(std::memory_order_acquire);
    ObserveHead(head, slot.irq_outstanding, slot.head_at_signal);
    if (next == head) {
      blocked.push_back(done);  // CQ full: retry on a later pass
      deferred_full.push_back(&slot);
      continue;
    }
    CompletionEntry& cqe = slot.memory->completions()[slot.cq_tail];
    cqe.result = done.tag;
    cqe.reserved = 0;
    cqe.sq_head = static_cast<uint16_t>(slot.sq_head);
    cqe.sq_id = static_cast<uint16_t>(slot.qid);
    std::atomic_ref<uint32_t>(cqe.cid_status).store(done.cid | slot.phase, std::memory_order_release);
    slot.cq_tail = next;
    if (next == 0) slot.phase ^= kPhaseBit;
    ++slot.posted_in_pass;
    posted = true;
    const int64_t interval = slot.busy.Posted(now);
    if (timing_period < slot.timing.size()) {
      DeviceTiming& timing = slot.timing[timing_period];
      timing.RecordPost(now - done.due_ns);
      if (interval >= 0) timing.RecordInterval(interval);
    }
  }
  for (Slot* slot : slots) slot->busy.EndOfPass();
  for (const InFlight& again : blocked) {
    heap.push_back(again);
    std::push_heap(heap.begin(), heap.end(), LaterFirst{});
  }
  return posted;
}

void EmulatedController::Worker::Signal(Slot& slot, uint32_t head) {
  slot.pending = 0;
  slot.irq_outstanding = true;
  slot.head_at_signal = head;
  const uint64_t one = 1;
  // Counted before the write, so whoever the interrupt wakes already sees it counted. The eventfd is
  // blocking and its counter far from overflow: the write cannot fail short of a bug.
  slot.interrupts.fetch_add(1, std::memory_order_relaxed);
  const int64_t before = MonotonicNanos();
  if (write(slot.irq_fd, &one, sizeof one) != sizeof one) slot.interrupts.fetch_sub(1, std::memory_order_relaxed);
  if (timing_period < slot.timing.size()) slot.timing[timing_period].signal_write.Record(MonotonicNanos() - before);
}

int64_t EmulatedController::Worker::Interrupts(int64_t now) {
  int64_t earliest = INT64_MAX;
  for (Slot* slot_ptr : slots) {
    Slot& slot = *slot_ptr;
    if (!slot.irq_outstanding && slot.posted_in_pass == 0 && slot.pending == 0) continue;
    QueueRegisters& registers = slot.memory->registers();
    const uint32_t head = registers.cq_head.load(std::memory_order_seq_cst);
    ObserveHead(head, slot.irq_outstanding, slot.head_at_signal);
    if (registers.irq_masked.load(std::memory_order_seq_cst)) {
      slot.pending = 0;  // masked: the poller reaps these, and drains again after it unmasks
      continue;
    }
    if (slot.pending == 0) slot.first_pending_ns = now;
    slot.pending += slot.posted_in_pass;
    if (slot.irq_outstanding) continue;  // the host's handler has not run yet: it reaps these too
    // Of those posted since the last signal, the ones the host has not consumed (a drain under way may
    // have taken them all: nothing to raise).
    const uint32_t waiting = std::min(slot.pending, Unconsumed(slot.cq_tail, head, slot.memory->entries()));
    if (waiting == 0) {
      slot.pending = 0;
      continue;
    }
    const Coalescing rule = slot.applied;
    const int64_t due = slot.first_pending_ns + int64_t{rule.time_us} * 1000;
    if (rule.threshold <= 1 || waiting >= rule.threshold || now >= due) {
      Signal(slot, head);
    } else {
      earliest = std::min(earliest, due);
    }
  }
  return earliest;
}

bool EmulatedController::Worker::StopWatchingHeads() {
  bool any = false;
  for (Slot* slot : slots) {
    if (slot->irq_outstanding && slot->pending > 0) {
      slot->irq_outstanding = false;
      any = true;
    }
  }
  return any;
}

bool EmulatedController::Worker::AnyHeadDoorbell() const {
  for (const Slot* slot : slots) {
    if (slot->irq_outstanding &&
        slot->memory->registers().cq_head.load(std::memory_order_relaxed) != slot->head_at_signal) {
      return true;
    }
  }
  return false;
}

bool EmulatedController::Worker::AnyDoorbellAhead() const {
  for (const Slot* slot : slots) {
    if (slot->memory->registers().sq_tail.load(std::memory_order_seq_cst) != slot->sq_head) return true;
  }
  return false;
}

}  // namespace nvmeadapt::uvnvme
