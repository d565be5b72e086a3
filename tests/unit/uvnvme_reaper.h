// SPDX-License-Identifier: Apache-2.0
// A test's reaper thread for one uvnvme HostQueue: keeps `depth` commands in flight, reaps in whatever
// mode the queue is in, and checks independently of the driver that every submitted tag completes exactly
// once. Stop() stops submitting, drains what is in flight and joins.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "uvnvme/host_queue.h"
#include "uvnvme/sync.h"

namespace nvmeadapt::uvnvme::testing {

class TestReaper {
 public:
  TestReaper(HostQueue& queue, uint32_t depth) : queue_(queue), depth_(depth) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~TestReaper() { Stop(); }

  void SetDepth(uint32_t depth) {
    depth_.store(depth);
    queue_.Kick();
  }
  void Stop() {
    if (!thread_.joinable()) return;
    stopping_.store(true);
    queue_.Kick();
    thread_.join();
  }
  bool finished() const { return finished_.load(); }

  // Valid after Stop().
  uint64_t submitted() const { return submitted_; }
  uint64_t completed() const { return completed_; }
  uint64_t completed_twice() const { return completed_twice_; }
  uint64_t never_completed() const {
    uint64_t missing = 0;
    for (uint64_t tag = 0; tag < submitted_; ++tag) missing += seen_[tag] == 0 ? 1 : 0;
    return missing;
  }
  uint64_t unknown_tags() const { return unknown_tags_; }

 private:
  void Loop() {
    std::vector<Completion> done(queue_.Capacity());
    while (true) {
      const bool stopping = stopping_.load();
      const uint32_t target = stopping ? 0 : depth_.load();
      if (queue_.Inflight() < target) {
        const int64_t now = MonotonicNanos();
        while (queue_.Inflight() < target && queue_.Submit(IoCommand{}, now)) {
          ++submitted_;
          seen_.push_back(0);
        }
        queue_.RingDoorbell(now);
      }
      if (stopping && queue_.Inflight() == 0) break;
      const size_t reaped = queue_.Reap(done);
      for (size_t i = 0; i < reaped; ++i) {
        // Tags are handed out 0, 1, 2, ... by the queue, one per Submit.
        const uint32_t tag = done[i].tag;
        if (tag >= seen_.size()) {
          ++unknown_tags_;
          continue;
        }
        if (seen_[tag]++ > 0) ++completed_twice_;
      }
      completed_ += reaped;
      if (reaped == 0 && queue_.mode() == ReapMode::kPoll) CpuRelax();
    }
    finished_.store(true);
  }

  HostQueue& queue_;
  std::atomic<uint32_t> depth_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};
  std::thread thread_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  uint64_t completed_twice_ = 0;
  uint64_t unknown_tags_ = 0;
  std::vector<uint8_t> seen_;
};

}  // namespace nvmeadapt::uvnvme::testing
