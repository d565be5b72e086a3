// The emulated NVMe controller: threads that fetch submissions from the queues' SQ rings, hold each for
// the model's service time, post completions in order of finish, and raise each queue's interrupt (an
// eventfd write) subject to the queue's mask bit and its interrupt coalescing (NVMe feature 08h).
//
// A controller thread sleeps (futex with an absolute deadline) until its earliest due completion or
// coalescing deadline, then posts everything due in one pass. It publishes when it will next look at the
// doorbells, so a host ringing a doorbell wakes it only when the new command could be due before then.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/common/result.h"
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
  EmulatedController(uint32_t index, const ModelConfig& model, uint32_t threads);
  ~EmulatedController();
  EmulatedController(const EmulatedController&) = delete;
  EmulatedController& operator=(const EmulatedController&) = delete;

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

 private:
  struct Worker;
  struct Slot;
  Slot* FindSlot(uint32_t qid) const;

  const uint32_t index_;
  ServiceScheduler scheduler_;
  std::vector<std::unique_ptr<Worker>> workers_;
  bool started_ = false;
};

}  // namespace nvmeadapt::uvnvme
