// SPDX-License-Identifier: Apache-2.0
// The host side of one uvnvme queue pair: submits commands (SQ entries + tail doorbell) and reaps
// completions (phase bit + head doorbell) in interrupt mode (block on the queue's eventfd, then drain) or
// poll mode (check the phase bit, no syscall). One reaper thread calls Submit/RingDoorbell/Reap; any
// thread may call SetMode, Kick and the counters.
//
// Mode switches happen on the reaper thread, between two reaps, so no completion is lost or reaped twice:
//   to poll:      mask the vector, then poll (an interrupt already in flight only leaves a stale count).
//   to interrupt: unmask, then drain once before the next block. A completion posted before the controller
//                 could see the unmask is in that drain; one posted after is signalled (the controller
//                 fences between posting and reading the mask, the host between unmasking and draining),
//                 and an eventfd keeps its count until read, so the next block returns at once.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/vocabulary.h"
#include "uvnvme/controller.h"
#include "uvnvme/queue_memory.h"

namespace nvmeadapt::uvnvme {

struct IoCommand {
  bool write = false;
  uint64_t lba = 0;
  uint32_t blocks = 8;  // logical blocks of kLbaBytes
};

struct Completion {
  uint16_t cid = 0;
  uint32_t tag = 0;  // the submission's tag: unique per queue until 2^32 submissions
  bool write = false;
  int64_t latency_ns = 0;  // doorbell to the reap that found it
};

struct QueueCounters {
  uint64_t submitted = 0;
  uint64_t completed = 0;
  uint64_t poll_completed = 0;   // of `completed`, those reaped while the queue was in poll mode
  uint64_t reaps = 0;            // drains that reaped at least one completion (the `complete` probe's fires)
  uint64_t wakeups = 0;          // interrupt-mode reaper wakeups (eventfd reads that carried an interrupt)
  uint64_t mode_switches = 0;
  uint64_t protocol_errors = 0;  // completions of a cid not in flight or with the wrong tag: must stay 0
};

class HostQueue {
 public:
  // Before the controller starts; `initial` is the mode the reaper starts in (not a switch).
  static Result<std::unique_ptr<HostQueue>> Create(EmulatedController& controller, uint32_t qid,
                                                   uint32_t entries, ReapMode initial);
  ~HostQueue();
  HostQueue(const HostQueue&) = delete;
  HostQueue& operator=(const HostQueue&) = delete;

  uint32_t ctrl() const { return ctrl_; }
  uint32_t qid() const { return qid_; }
  uint32_t Capacity() const { return memory_->entries() - 1; }  // commands in flight at most

  // Reaper thread.
  uint32_t Inflight() const { return inflight_; }
  bool Submit(const IoCommand& command, int64_t now_ns);  // false when Capacity() are in flight
  // After one or more Submit; now_ns is the doorbell time the new entries carry (their service starts then).
  void RingDoorbell(int64_t now_ns);
  // One reaping step in the current mode, after applying a requested mode change. Interrupt mode blocks
  // until an interrupt or a Kick. `out` must hold Capacity() entries. Returns the completions reaped.
  // The `complete` probe of a batch fires when the reaper comes back for more (here, before anything
  // else), so after it handled the batch (resubmitted): observing it costs the reaper CPU but adds nothing
  // to the I/O round trip that the batch's completions start.
  size_t Reap(std::span<Completion> out);
  // Fires the `complete` probe of the last batch Reap returned, if not yet, and the `tally` probe of every
  // completion not yet tallied: for a reaper that stops.
  void ReportReaped();

  // A tally (the `tally` probe) closes at the first reap that brings it to kTallyCompletions (polling) or
  // kInterruptTallyCompletions (interrupt mode), or at the first reap (or, polling, empty poll) that finds
  // its first reap kTallyNanos (polling) or kInterruptTallyNanos old: windows and pace checks see a queue's
  // completions that late at most while its reaper runs (docs/probes.md). Polling, the time bound is under
  // the engine's stall timer and the count bound keeps the pace checks (one per tally) close together.
  // In interrupt mode nothing is timed between completions (no stall timer, no pace check): both bounds
  // only limit how late a window closes and by how much it overshoots its size, and every fire is a trap
  // on a reaper whose caches went cold while it slept (about 2.5 us a fire in situ at QD8 against 0.9 us
  // in a loop, bench/probe_cost.py). So they are longer: at QD1, whose every completion is a reap, 2 ms
  // instead of 200 us; at QD8 and up, 256 completions instead of 64 cut the fires per I/O by four.
  // An interrupt-mode reaper blocked with a tally open reports it at its next wakeup, switch or stop.
  static constexpr uint32_t kTallyCompletions = 64;
  static constexpr int64_t kTallyNanos = 200'000;
  static constexpr uint32_t kInterruptTallyCompletions = 256;
  static constexpr int64_t kInterruptTallyNanos = 2'000'000;

  // Any thread.
  ReapMode mode() const { return mode_.load(std::memory_order_acquire); }
  // Returns once the reaper runs in `mode`; withdraws the request and fails if it did not take it in time.
  Status SetMode(ReapMode mode, std::chrono::milliseconds timeout);
  void Kick();  // wakes a reaper blocked in interrupt mode (it then returns 0 unless an interrupt came too)
  QueueCounters Counters() const;

 private:
  struct Command {
    uint32_t tag = 0;
    bool write = false;
    bool in_flight = false;
    int64_t submit_ns = 0;
  };

  HostQueue(EmulatedController& controller, uint32_t qid, std::unique_ptr<QueueMemory> memory, int irq_fd,
            ReapMode initial);
  void ApplyModeRequest(uint32_t request);
  size_t Drain(std::span<Completion> out);
  void AddToTally(uint32_t reaped, int64_t now);
  void CheckTallyAge();  // poll mode, an empty poll: closes an open tally grown old
  void FireTally();      // fires the open tally, if any, and starts the next one

  // The tally in progress (reaper thread; kept only while the `tally` probe is attached).
  struct Tally {
    uint32_t completions = 0;
    uint32_t reaps = 0;
    uint32_t last_reap = 0;
    ReapMode mode = ReapMode::kInterrupt;
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    bool due = false;           // closed: fires when the reaper comes back for more
    uint32_t empty_polls = 0;   // since the last age check
  };

  const uint32_t ctrl_;
  const uint32_t qid_;
  std::unique_ptr<QueueMemory> memory_;
  const int irq_fd_;
  DoorbellWaker* waker_;

  // Reaper-thread state.
  std::vector<Command> commands_;  // by cid
  std::vector<uint16_t> free_cids_;
  uint32_t inflight_ = 0;
  uint32_t sq_tail_ = 0;
  uint32_t cq_head_ = 0;
  uint32_t expected_phase_ = kPhaseBit;
  uint32_t next_tag_ = 0;
  uint64_t unrung_ = 0;  // submitted since the last doorbell
  uint32_t unreported_ = 0;  // completions of the last batch whose `complete` probe has not fired yet
  ReapMode unreported_mode_ = ReapMode::kInterrupt;  // the mode that batch was reaped in
  Tally tally_;

  std::atomic<ReapMode> mode_{ReapMode::kInterrupt};
  std::atomic<uint32_t> mode_request_{0};  // 0 none, else ReapMode + 1
  std::atomic<uint64_t> submitted_{0}, completed_{0}, poll_completed_{0}, reaps_{0}, wakeups_{0}, mode_switches_{0},
      protocol_errors_{0};

  std::mutex set_mode_mutex_;  // one SetMode at a time
  std::mutex ack_mutex_;
  std::condition_variable ack_cv_;
  uint64_t requests_taken_ = 0;  // guarded by ack_mutex_
};

}  // namespace nvmeadapt::uvnvme
