// SPDX-License-Identifier: Apache-2.0
// Runs a LoadOptions load on a started Driver: one reaper thread per queue that keeps its jobs' commands
// in flight (closed loop: every completion is replaced by a new command while the phase wants it) and
// reaps in the queue's current mode; the calling thread walks the phases, switches modes where a phase
// says so, samples CPU at each boundary, and at the end stops submitting and drains every queue.
#pragma once

#include <csignal>
#include <string>
#include <vector>

#include "common/result.h"
#include "uvnvme/driver.h"
#include "uvnvme/latency_histogram.h"
#include "uvnvme/load/options.h"

namespace nvmeadapt::uvnvme::load {

struct CpuSample {
  double process = 0;     // every thread of the process (user + sys)
  double host = 0;        // the reaper threads: submission and completion work of the host driver
  double controller = 0;  // the emulated controller threads: the device, free on real hardware
};

struct QueuePhaseResult {
  uint64_t completed = 0;
  uint64_t poll_completed = 0;  // of `completed`, reaped in poll mode
  uint64_t worked = 0;          // completions whose application work (--io-work-us) was done
  LatencyHistogram latency;
  DeviceTiming device;  // the controller's side: lateness of its posts, intervals between them
};

struct QueueResult {
  uint32_t ctrl = 0;
  uint32_t qid = 0;
  ReapMode final_mode = ReapMode::kInterrupt;
  QueueCounters counters;
  uint64_t interrupts = 0;  // raised by the controller (a wakeup can carry several)
  double host_cpu = 0;      // this queue's reaper thread
  std::vector<QueuePhaseResult> phases;
};

struct PhaseResult {
  Phase phase;
  double seconds = 0;  // measured
  CpuSample cpu;       // used during the phase
  // CLOCK_MONOTONIC bounds, so a harness that changes the machine between phases (attaches probes, say)
  // can check its change fell outside every phase it measures
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t wakeups = 0;
  uint64_t mode_switches = 0;
};

struct LoadResult {
  double seconds = 0;  // start to the end of the drain
  bool interrupted = false;  // a signal ended the run early
  DeviceClock device_clock = DeviceClock::kSleeping;
  uint32_t device_threads = 0;  // the emulated device's threads (controllers may share them)
  bool device_timing = false;  // QueuePhaseResult::device is filled in (the controllers closed their timing)
  uint64_t work_loops_per_io = 0;  // --io-work-us as calibrated (app_work.h); 0: no application work
  CpuSample cpu;             // process: getrusage user + sys of the whole run
  std::vector<QueueResult> queues;
  std::vector<PhaseResult> phases;
};

// The CPUs of every thread that is not an emulated device thread (the main thread, the control server, the
// reapers): --host-cpus when --controller-cpus is given as well, so nothing ordinary runs on the device's CPUs
// (on kernels with the fair server an ordinary task runnable there stops the real-time device thread for up
// to 50 ms); else empty (placed as asked, or wherever the scheduler likes).
std::vector<int> NonDeviceCpus(const LoadOptions& options);

// Pins the calling thread to NonDeviceCpus (nothing if empty), early, so the threads it creates inherit it;
// `what` names the thread in the error, e.g. "main thread".
Status PinToNonDeviceCpus(const LoadOptions& options, const std::string& what);

// `stop_signals`: signals (blocked in every thread by the caller) that end the run early.
Result<LoadResult> RunLoad(const LoadOptions& options, Driver& driver, const sigset_t* stop_signals);

}  // namespace nvmeadapt::uvnvme::load
