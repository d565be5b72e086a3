// The model's clock: events in order of time, and events due at the same time in the order they were
// scheduled, so that a run is a pure function of its inputs and its seed.
#pragma once

#include <cstdint>
#include <queue>
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

class EventQueue {
 public:
  void Schedule(Nanos at, EventKind kind, uint32_t a = 0, uint64_t b = 0) {
    heap_.push(Event{at, next_seq_++, kind, a, b});
  }
  bool Empty() const { return heap_.empty(); }
  Nanos NextAt() const { return heap_.top().at; }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  uint64_t Scheduled() const { return next_seq_; }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.at != y.at ? x.at > y.at : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace nvmeadapt::sim
