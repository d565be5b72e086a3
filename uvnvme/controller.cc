#include "uvnvme/controller.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <ctime>
#include <string>

#include "agent/common/clock.h"
#include "uvnvme/sync.h"

namespace nvmeadapt::uvnvme {
namespace {

uint64_t Pack(Coalescing c) { return uint64_t{c.threshold} | (uint64_t{c.time_us} << 32); }
Coalescing Unpack(uint64_t v) { return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}; }

struct InFlight {
  int64_t due_ns;
  uint64_t order;  // fetch order: ties complete in submission order
  uint32_t slot;
  uint32_t cid;
  uint32_t tag;
};
uint32_t Unconsumed(uint32_t tail, uint32_t head, uint32_t entries) { return (tail + entries - head) % entries; }

// An outstanding interrupt ends at the host's CQ head doorbell write. The controller compares values, not
// writes: between two of its reads the host consumes fewer than `entries` (the controller reads the head
// before every post and on every pass), so a write never brings the head back to the same value unseen.
void ObserveHead(uint32_t head, bool& outstanding, uint32_t head_at_signal) {
  if (outstanding && head != head_at_signal) outstanding = false;
}

struct LaterFirst {
  bool operator()(const InFlight& a, const InFlight& b) const {
    return a.due_ns != b.due_ns ? a.due_ns > b.due_ns : a.order > b.order;
  }
};

}  // namespace

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
  void Fetch();
  bool PostDue(int64_t now);  // true if it posted anything
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
  std::vector<InFlight> heap;
  DeviceClock clock = DeviceClock::kSleeping;
  std::atomic<uint32_t> timing_requested{0};
  std::atomic<uint32_t> timing_taken{0};  // the period this thread counts in now (acknowledges requests)
  uint32_t timing_period = 0;             // controller thread's copy
  int64_t awake_since_ns = 0;             // faithful: when it last slept (the spin budget)
  int64_t last_busy_ns = 0;               // faithful: when it last held or posted a command
  uint64_t order = 0;
  uint64_t rng = 0x9E3779B97F4A7C15ULL;
  std::thread thread;
  pthread_t handle{};  // for its CPU clock while it runs
  std::atomic<int64_t> final_cpu_ns{-1};
  std::vector<Slot*> deferred_full;  // completions of a full CQ (cannot happen with depth < entries)
};

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
    Fetch();
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
        if (now - awake_since_ns < kFaithfulMaxSpinNs) {
          SpinUntil(wake, generation);
          continue;
        }
        look = now + 1000;  // the breather: a real-time spinner would starve this CPU's kernel workers
      } else if (wake != INT64_MAX) {
        look = wake - kFaithfulWakeMarginNs;  // far off: sleep, then spin for the last stretch
      }  // else idle: sleep until a doorbell
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

void EmulatedController::Worker::Fetch() {
  for (uint32_t s = 0; s < slots.size(); ++s) {
    Slot& slot = *slots[s];
    const uint32_t entries = slot.memory->entries();
    const uint32_t tail = slot.memory->registers().sq_tail.load(std::memory_order_acquire);
    if (tail >= entries) continue;  // a host bug; a real controller would raise an asynchronous event
    const SubmissionEntry* ring = slot.memory->submissions();
    while (slot.sq_head != tail) {
      const SubmissionEntry& sqe = ring[slot.sq_head];
      const int64_t doorbell = static_cast<int64_t>((uint64_t{sqe.submit_ns_hi} << 32) | sqe.submit_ns_lo);
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
  if (write(slot.irq_fd, &one, sizeof one) != sizeof one) slot.interrupts.fetch_sub(1, std::memory_order_relaxed);
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
