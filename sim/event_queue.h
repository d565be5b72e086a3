// SPDX-License-Identifier: Apache-2.0
// The model's clock: events in order of time, and events due at the same time in the order they were
// scheduled, so that a run is a pure function of its inputs and its seed.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/params.h"

namespace nvmeadapt::sim {

enum class EventKind : uint8_t {
  kDeviceDone,   // a = I/O slot
  kSegmentEnd,   // a = CPU, b = that CPU's generation when the segment started
  kPollTimer,    // a = queue, b = the queue's poll generation
  kJobWake,      // a = job
  kModeEffect,   // a = queue, b = mode (0 interrupt, 1 poll) | generation << 1
  kControl,      // a, b: the controller's own
  kIrqDeliver,   // a = queue: its interrupt message got through the platform's ceiling
  kDeviceRelease,  // a = device: completions held behind its interrupt messages may post
  kGsimUpdate,   // GSIM's per-CPU measurement
  kGsimUnmask,   // a = CPU: GSIM re-enables the sources it disabled there
};

struct Event {
  Nanos at = 0;
  uint64_t seq = 0;
  EventKind kind = EventKind::kControl;
  uint32_t a = 0;
  uint64_t b = 0;
};

// A 4-ary heap: the simulator spends most of its time here (callgrind, docs/scale.md), and four children
// per node halve the levels a pop walks down against a binary heap, each level's children on one or two
// cache lines.
class EventQueue {
 public:
  void Schedule(Nanos at, EventKind kind, uint32_t a = 0, uint64_t b = 0) {
    heap_.push_back(Event{at, next_seq_++, kind, a, b});
    SiftUp(heap_.size() - 1);
  }
  bool Empty() const { return heap_.empty(); }
  Nanos NextAt() const { return heap_.front().at; }
  Event Pop() {
    Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) SiftDown(last);
    return top;
  }
  uint64_t Scheduled() const { return next_seq_; }

 private:
  static bool Before(const Event& x, const Event& y) { return x.at != y.at ? x.at < y.at : x.seq < y.seq; }
  void SiftUp(size_t i) {
    const Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!Before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  // Places `e` from the root down, into the hole the popped top left.
  void SiftDown(const Event& e) {
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < end; ++c) {
        if (Before(heap_[c], heap_[best])) best = c;
      }
      if (!Before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace nvmeadapt::sim
