// SPDX-License-Identifier: Apache-2.0
// The emulated NVMe controller: threads that fetch submissions from the queues' SQ rings, hold each for
// the model's service time, post completions in order of finish, and raise each queue's interrupt (an
// eventfd write) subject to the queue's mask bit and its interrupt coalescing (NVMe feature 08h).
//
// A controller thread waits for its earliest due completion or coalescing deadline, then posts everything
// due in one pass. How it waits is its clock (DeviceClock): the sleeping clock sleeps on a futex with an
// absolute deadline (cheap, but a timed wakeup lands late, so completions come in bursts); the faithful
// clock spins to the due time watching the doorbells (a CPU of its own, each completion on time). It
// publishes when it will next look at the doorbells, so a host ringing a doorbell wakes it only when the
// new command could be due before then (never while it spins).
//
// Interrupts: a queue's vector behaves as an MSI-X vector whose handler reaps everything pending. After a
// signal it is outstanding until the host's next CQ head doorbell write; completions posted meanwhile raise
// nothing (that handler reaps them), and entries the write leaves unconsumed raise the next interrupt.
// Watching the head doorbell needs a thread that is awake: before it sleeps, a thread stops holding
// completions back (the sleeping clock, sleeping after every pass, so signals for every pass that posts).
//
// Timing: per queue, the thread measures how late each completion was posted against its due time and
// the interval since the queue's previous completion (DeviceTiming), in numbered periods the load
// generator moves through (one per phase).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "uvnvme/latency_histogram.h"
#include "uvnvme/model.h"
#include "uvnvme/placement.h"
#include "uvnvme/queue_memory.h"

namespace nvmeadapt::uvnvme {

// NVMe feature 08h: an interrupt after `threshold` completions or `time_us` after the first pending one,
// whichever comes first. threshold 0 (or 1) interrupts for every completion.
struct Coalescing {
  uint32_t threshold = 0;
  uint32_t time_us = 0;
  bool operator==(const Coalescing&) const = default;
};
inline constexpr uint32_t kMaxCoalesceThreshold = 256;       // NVMe's THR is 8 bits (0's based)
inline constexpr uint32_t kMaxCoalesceTimeUs = 255 * 100;    // NVMe's TIME is 8 bits of 100 us

// How a controller thread waits for the next due completion.
//   sleeping: a timed futex sleep to the due time (today's machines wake it 10-40 us late).
//   faithful: spins to the due time (a short sleep first when it is far off), re-reading the doorbells
//             while it spins, so a completion is posted within a few us of its due time and a new command
//             is fetched as soon as it is rung. Idle for kFaithfulIdleSpinNs it sleeps until a doorbell.
//             It needs a CPU of its own: it keeps one busy while commands are in flight.
enum class DeviceClock : uint8_t { kSleeping, kFaithful };
std::string_view DeviceClockName(DeviceClock clock);
inline constexpr int64_t kFaithfulIdleSpinNs = 20'000'000;  // spin this long after the last command
inline constexpr int64_t kFaithfulSleepAheadNs = 300'000;   // sleep first when the due time is further
inline constexpr int64_t kFaithfulWakeMarginNs = 100'000;   // ... waking this long before it
// Then a breath (YieldToFairTasks): on kernels without the fair server (before 6.12), with the real-time
// budget lifted, nothing else lets a real-time spinner's CPU run its kernel workers. Once a second, the
// real-time throttle's own period. It never idles the CPU: a sleep did, and an idle virtual CPU here may
// not be given back by the hypervisor for a scheduling slice (~1.25 ms gaps, docs/uvnvme.md).
inline constexpr int64_t kFaithfulMaxSpinNs = 1'000'000'000;

// What one controller thread saw of one queue over one period: how late completions were posted against
// their due time (the model's finish time), and the intervals between posted completions while the queue
// was busy: each completion's interval is the time since the later of the queue's previous completion and
// the doorbell of the command that made an idle queue busy again (completions posted in one pass: 0).
struct DeviceTiming {
  static constexpr size_t kIntervalBuckets = 32;  // [0, 1) us, then [2^(k-1), 2^k) us; the last is open
  LatencyHistogram lateness;
  int64_t lateness_max_ns = 0;
  std::array<uint64_t, kIntervalBuckets> intervals{};
  int64_t interval_max_ns = 0;
  uint64_t posted = 0;
  // How long raising an interrupt (the eventfd write) held the controller thread: completions that fall
  // due meanwhile are posted after it, so it bounds interrupt mode's lateness from below.
  LatencyHistogram signal_write;

  void RecordPost(int64_t lateness_ns);
  void RecordInterval(int64_t interval_ns);
  void Merge(const DeviceTiming& other);
  static size_t IntervalBucket(int64_t interval_ns);
  static int64_t IntervalBucketLowUs(size_t bucket);  // [low, low * 2), bucket 0: [0, 1)
};

// Per queue, on the controller thread: when the queue last became busy or last completed a command.
class BusyClock {
 public:
  void Fetched(int64_t doorbell_ns) {  // a command the controller now holds
    if (held_++ == 0 && since_ns_ < 0) since_ns_ = doorbell_ns;
  }
  // A completion posted at now_ns: its interval, or -1 when the queue was idle (cannot happen after Fetched).
  int64_t Posted(int64_t now_ns) {
    const int64_t interval = since_ns_ < 0 ? -1 : std::max<int64_t>(now_ns - since_ns_, 0);
    since_ns_ = now_ns;
    if (held_ > 0) --held_;
    return interval;
  }
  void EndOfPass() {  // nothing held: the next interval starts at the next doorbell
    if (held_ == 0) since_ns_ = -1;
  }
  uint32_t held() const { return held_; }

 private:
  uint32_t held_ = 0;
  int64_t since_ns_ = -1;
};

// The host's side of one controller thread's doorbell: wakes the thread only when it is asleep past the
// time a new command could be due.
class DoorbellWaker {
 public:
  explicit DoorbellWaker(int64_t min_service_ns) : min_service_ns_(min_service_ns) {}
  void AfterDoorbell(int64_t doorbell_ns);  // call after the SQ tail store
  void WakeNow();                           // config changes, stop

  // Controller side.
  std::atomic<uint32_t> generation{0};  // futex word: bumped by every wake
  std::atomic<int64_t> next_look_ns{0};  // when the thread will look at the doorbells; 0 = awake now

 private:
  const int64_t min_service_ns_;
};

class EmulatedController {
 public:
  // timing_periods: how many periods DeviceTiming keeps per queue (EnterTimingPeriod numbers them).
  EmulatedController(uint32_t index, const ModelConfig& model, uint32_t threads,
                     DeviceClock clock = DeviceClock::kSleeping, uint32_t timing_periods = 1);
  ~EmulatedController();
  EmulatedController(const EmulatedController&) = delete;
  EmulatedController& operator=(const EmulatedController&) = delete;

  // Before any AttachQueue: this controller's queues are served by `host`'s threads instead of its own, as
  // one device thread per CPU serves several emulated controllers. Several spinning (or real-time) threads
  // on one CPU starve each other: one runs until its next due time while the others' completions wait.
  // `host` starts and accounts the shared threads; stopping either controller stops them.
  Status ServeOnThreadsOf(EmulatedController& host);
  // Before Start. Queue k attached goes to thread k % threads; irq_fd is the queue's eventfd.
  Status AttachQueue(uint32_t qid, QueueMemory& memory, int irq_fd);
  // A real-time placement (SCHED_FIFO) posts due completions on time even while host threads (a polling
  // reaper) keep every core busy, as a real device would.
  Status Start(const ThreadPlacement& placement = {});
  void Stop();  // posts nothing more; commands in flight stay unanswered

  uint32_t index() const { return index_; }
  DoorbellWaker& WakerFor(uint32_t qid);
  // Acknowledged once the controller thread serving the queue applies it.
  Status SetCoalescing(uint32_t qid, Coalescing coalescing, std::chrono::milliseconds timeout);
  Coalescing GetCoalescing(uint32_t qid) const;
  uint64_t InterruptsSent(uint32_t qid) const;
  double CpuSeconds() const;  // the controller threads' CPU (user + sys), live or final
  DeviceClock clock() const { return clock_; }

  // Completions posted from the threads' next pass on count in period `period` (< timing_periods;
  // a larger value stops the counting).
  void EnterTimingPeriod(uint32_t period);
  // Stops the counting and waits until every thread has, so Timing is complete and stable.
  Status CloseTiming(std::chrono::milliseconds timeout);
  // One entry per period; read after CloseTiming or Stop.
  std::vector<DeviceTiming> Timing(uint32_t qid) const;

 private:
  struct Worker;
  struct Slot;
  Slot* FindSlot(uint32_t qid) const;

  const uint32_t index_;
  const DeviceClock clock_;
  const uint32_t timing_periods_;
  ServiceScheduler scheduler_;
  std::vector<std::shared_ptr<Worker>> workers_;
  bool started_ = false;
};

}  // namespace nvmeadapt::uvnvme
