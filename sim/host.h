// SPDX-License-Identifier: Apache-2.0
// The discrete-event model of one host: CPUs, closed-loop jobs bound to them, devices with one completion
// queue per CPU (or CPU group) and the vector's affinity, interrupt and poll reaping that preempt job work
// on their CPU. A model, not a measurement: every cost is a parameter (sim/params.h).
#pragma once

#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

#include "agent/engine/types.h"
#include "sim/event_queue.h"
#include "sim/gsim.h"
#include "sim/params.h"

namespace nvmeadapt::sim {


struct RunStats {
  Nanos measured = 0;           // length of the measured interval
  uint64_t completions = 0;     // consumed by jobs in the measured interval
  uint64_t reaped = 0;          // completion entries reaped in the measured interval
  uint64_t polled = 0;          // of those, reaped in poll mode
  uint64_t interrupts = 0;
  uint64_t poll_runs = 0;
  uint64_t wakeups = 0;
  uint64_t switches = 0;        // queue mode changes over the whole run
  Nanos reap_cpu = 0;           // CPU time of interrupt and poll work in the measured interval
  Nanos job_cpu = 0;            // CPU time of job work in the measured interval
  double latency_sum_ns = 0;    // submit to consumed, over the completions counted
  uint64_t events = 0;
  uint64_t gsim_masks = 0;      // handler ends after which GSIM kept the source disabled

  double Iops() const { return measured > 0 ? completions * 1e9 / measured : 0; }
  double PollShare() const { return reaped ? static_cast<double>(polled) / reaped : 0; }
  double MeanLatencyUs() const { return completions ? latency_sum_ns / completions / 1e3 : 0; }
};

class Host;

// A policy: what decides each queue's mode. It sees every reaping pass as the BPF side would.
class Controller {
 public:
  virtual ~Controller() = default;
  virtual void Attach(Host& host) = 0;
  virtual void OnReaped(uint32_t queue, ReapMode mode, uint32_t entries, Nanos now) = 0;
  virtual void OnModeEffective(uint32_t queue, ReapMode mode, Nanos now) = 0;
  virtual void OnControl(uint32_t a, uint64_t b, Nanos now) = 0;
};

class Host {
 public:
  Host(const HostCosts& costs, const HostLayout& layout, const DriveProfile& drive, const Workload& load,
       Controller& controller, uint64_t seed);

  // Runs until warmup + measure; counts what happens after warmup.
  RunStats Run(Nanos warmup, Nanos measure);

  Nanos Now() const { return now_; }
  EventQueue& Events() { return events_; }
  uint32_t Queues() const { return static_cast<uint32_t>(queues_.size()); }
  ReapMode Mode(uint32_t queue) const { return queues_[queue].mode; }
  // The CPU a queue's completions are reaped on, the CPUs, and the time a CPU was busy (jobs, interrupt and
  // poll passes, the one in progress included) since the run began: what /proc/stat tells the node layer.
  uint32_t QueueCpu(uint32_t queue) const { return queues_[queue].cpu; }
  uint32_t Cpus() const { return static_cast<uint32_t>(cpus_.size()); }
  Nanos CpuBusy(uint32_t cpu) const;
  // The time the queue's ended interrupt and poll passes took, from the run's start: its own reaping work.
  Nanos QueueReapBusy(uint32_t queue) const { return queues_[queue].reap_busy; }
  // The queue switches to `mode` at `at`; a later request replaces one not yet in effect.
  void RequestMode(uint32_t queue, ReapMode mode, Nanos at);
  // GSIM moderates this host's interrupts (before Run).
  void EnableGsim(const GsimParams& params) { gsim_ = params; }

 private:
  enum class JobState : uint8_t { kSleeping, kWaking, kRunnable, kRunning, kSpinning };
  enum class Segment : uint8_t { kInitialSubmit, kConsume };
  struct Job {
    uint32_t cpu = 0, device = 0, queue = 0;
    uint32_t initial = 0;            // first submissions still to make
    std::deque<uint32_t> ready;      // I/O slots completed, not yet consumed
    JobState state = JobState::kRunnable;
    Segment segment = Segment::kInitialSubmit;
    uint32_t slot = 0;               // the slot of the segment in progress
    Nanos remaining = -1;            // >= 0: a preempted segment's rest
  };
  struct Queue {
    uint32_t device = 0, cpu = 0;
    ReapMode mode = ReapMode::kInterrupt;
    std::vector<uint32_t> posted;    // completion entries not yet reaped
    std::vector<uint32_t> jobs;
    bool irq_active = false;         // an interrupt pass is queued or running
    bool poll_queued = false;
    uint64_t poll_gen = 0, mode_gen = 0;
    Nanos last_fire = 0;
    Nanos reap_busy = 0;             // ended interrupt and poll passes of this queue, from the run's start
  };
  enum class Running : uint8_t { kIdle, kIrq, kPoll, kJob };
  struct Cpu {
    std::deque<uint64_t> reap;       // queue << 1 | poll
    std::deque<uint32_t> runnable;
    Running running = Running::kIdle;
    uint32_t id = 0;                 // queue or job running
    Nanos start = 0, end = 0;
    uint64_t gen = 0;
    uint32_t last_queue = UINT32_MAX;  // the vector of the last interrupt taken here
    std::vector<uint32_t> pass;      // entries the running pass reaps
    std::vector<uint32_t> to_wake;   // jobs the running pass wakes
    Nanos irq_gate = 0;              // the interrupt ceiling: when this CPU accepts its next message
    uint64_t period_irqs = 0;        // GSIM: interrupts and hardirq time in the current update period
    Nanos period_hardirq = 0;
    Nanos gsim_delay = 0;
    bool gsim_timer = false;
    std::vector<uint32_t> masked;    // queues GSIM keeps disabled until the timer
    Nanos busy = 0;                  // time not idle, from the run's start (ended passes and segments)
  };
  struct Device {
    Nanos gate_free = 0;
    std::priority_queue<Nanos, std::vector<Nanos>, std::greater<Nanos>> units;  // media units' free times
    bool unlimited = true;
    Nanos blocked_until = 0;         // completions post only after the device's last interrupt message
    std::deque<uint32_t> held;
    bool release_scheduled = false;
  };
  struct Io {
    uint32_t job = 0;
    Nanos submitted = 0;
  };

  void Dispatch(Cpu& cpu);
  void StartReapPass(Cpu& cpu, uint32_t queue, Running kind, bool continuation);
  void EndReapPass(Cpu& cpu);
  void StartJobSegment(Cpu& cpu, uint32_t job);
  void EndJobSegment(Cpu& cpu);
  void QueueReap(uint32_t queue, bool poll);
  void RaiseIrq(uint32_t queue);       // host_irq.cc: through the ceiling, if any
  void PostCompletion(uint32_t slot);
  void ReleaseDevice(uint32_t device);
  void GsimUpdate();
  void GsimUnmask(uint32_t cpu);
  bool GsimHolds(Cpu& cpu, uint32_t queue);  // after the handler: keeps the source disabled, if moderating
  void Submit(uint32_t slot);
  void OnDeviceDone(uint32_t slot);
  void MakeRunnable(uint32_t job);
  void SetModeNow(uint32_t queue, ReapMode mode);
  void Account(Cpu& cpu, Running kind, Nanos start, Nanos end);
  bool Measuring() const { return now_ >= measure_from_; }
  double Uniform();

  HostCosts costs_;
  DriveProfile drive_;
  Workload load_;
  Controller& controller_;
  EventQueue events_;
  std::vector<Cpu> cpus_;
  std::vector<Job> jobs_;
  std::vector<Queue> queues_;
  std::vector<Device> devices_;
  std::vector<Io> ios_;
  Nanos now_ = 0;
  Nanos measure_from_ = 0;
  uint64_t rng_;
  RunStats stats_;
  GsimParams gsim_;
  Nanos host_irq_gate_ = 0;
};

}  // namespace nvmeadapt::sim
