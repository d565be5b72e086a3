// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/load/runner.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "common/clock.h"
#include "uvnvme/load/app_work.h"
#include "uvnvme/sync.h"

namespace nvmeadapt::uvnvme::load {
namespace {

constexpr uint64_t kNamespaceBlocks = uint64_t{1} << 31;  // 1 TiB of 512-byte blocks
constexpr int64_t kDrainTimeoutNs = 10'000'000'000;

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

int64_t ThreadCpuNs(pthread_t thread) {
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &ts) != 0) return 0;
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint64_t NextRandom(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct Reaper {
  HostQueue* queue = nullptr;
  uint32_t jobs = 0;
  uint64_t rng = 0;
  std::vector<QueuePhaseResult> phases;
  std::thread thread;
  std::atomic<bool> done{false};
  int64_t final_cpu_ns = 0;  // written before `done`
};

class Run {
 public:
  Run(const LoadOptions& options, Driver& driver) : options_(options), driver_(driver) {}
  Result<LoadResult> Execute(const sigset_t* stop_signals);

 private:
  void ReaperLoop(Reaper& reaper);
  IoCommand NextCommand(Reaper& reaper) const;
  CpuSample Sample() const;
  void EnterPhase(size_t index);
  bool WaitUntil(int64_t deadline_ns, const sigset_t* stop_signals) const;  // false: a stop signal came
  void DrainReapers(int64_t since);
  void CollectQueues(LoadResult& result);

  const LoadOptions& options_;
  Driver& driver_;
  std::vector<std::unique_ptr<Reaper>> reapers_;
  std::atomic<size_t> phase_{0};  // == phases.size(): stop submitting and drain
  std::atomic<size_t> last_phase_{0};  // the last phase started: the drain's completions count in it
  uint64_t work_loops_ = 0;  // per completion, set before the reapers start
};

IoCommand Run::NextCommand(Reaper& reaper) const {
  const uint64_t random = NextRandom(reaper.rng);
  const uint32_t blocks = options_.block_bytes / kLbaBytes;
  IoCommand command;
  command.write = (random % 100) >= options_.read_percent;
  command.blocks = blocks;
  command.lba = ((random >> 8) % (kNamespaceBlocks / blocks)) * blocks;
  return command;
}

void Run::ReaperLoop(Reaper& reaper) {
  HostQueue& queue = *reaper.queue;
  std::string name = "uvnvme-c" + std::to_string(queue.ctrl()) + "q" + std::to_string(queue.qid());
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  std::vector<Completion> done(queue.Capacity());
  const size_t stopping = options_.phases.size();
  size_t seen = SIZE_MAX;
  uint32_t target = 0;
  while (true) {
    const size_t phase = phase_.load(std::memory_order_acquire);
    if (phase != seen) {
      seen = phase;
      target = phase < stopping ? options_.phases[phase].queue_depth * reaper.jobs : 0;
    }
    if (queue.Inflight() < target) {
      const int64_t now = MonotonicNanos();
      while (queue.Inflight() < target && queue.Submit(NextCommand(reaper), now)) {}
      queue.RingDoorbell(MonotonicNanos());  // the device's clock starts here, the reaper's latency at `now`
    }
    if (phase >= stopping && queue.Inflight() == 0) {
      queue.ReportReaped();
      break;
    }
    const size_t reaped = queue.Reap(done);
    QueuePhaseResult& stats = reaper.phases[phase < stopping ? phase : last_phase_.load(std::memory_order_relaxed)];
    for (size_t i = 0; i < reaped; ++i) stats.latency.Record(done[i].latency_ns);
    stats.completed += reaped;
    if (queue.mode() == ReapMode::kPoll) stats.poll_completed += reaped;  // the mode the drain ran in
    if (work_loops_ > 0) {
      for (size_t i = 0; i < reaped; ++i) (void)RunWorkLoops(work_loops_, static_cast<uint64_t>(done[i].latency_ns));
      stats.worked += reaped;
    }
    if (reaped == 0 && queue.mode() == ReapMode::kPoll) CpuRelax();
  }
  reaper.final_cpu_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  reaper.done.store(true, std::memory_order_release);
}

CpuSample Run::Sample() const {
  CpuSample sample;
  sample.process = Seconds(ClockNs(CLOCK_PROCESS_CPUTIME_ID));
  for (const auto& reaper : reapers_) {
    sample.host += Seconds(reaper->done.load(std::memory_order_acquire)
                               ? reaper->final_cpu_ns
                               : ThreadCpuNs(reaper->thread.native_handle()));
  }
  sample.controller = driver_.ControllerCpuSeconds();
  return sample;
}

void Run::EnterPhase(size_t index) {
  if (index < options_.phases.size()) {
    last_phase_.store(index, std::memory_order_relaxed);
    driver_.EnterTimingPeriod(static_cast<uint32_t>(index));  // the drain's posts count in the last phase
  }
  phase_.store(index, std::memory_order_release);
  for (const auto& reaper : reapers_) reaper->queue->Kick();  // a reaper blocked with nothing in flight
}

bool Run::WaitUntil(int64_t deadline_ns, const sigset_t* stop_signals) const {
  while (true) {
    const int64_t left = deadline_ns - MonotonicNanos();
    if (left <= 0) return true;
    timespec wait{left / 1'000'000'000, left % 1'000'000'000};
    if (!stop_signals) {
      nanosleep(&wait, nullptr);
      continue;
    }
    if (sigtimedwait(stop_signals, nullptr, &wait) > 0) return false;
  }
}

// Waits for every reaper to finish what it has in flight (the last phase ended at `since`) and joins it.
void Run::DrainReapers(int64_t since) {
  for (const auto& reaper : reapers_) {
    while (!reaper->done.load(std::memory_order_acquire)) {
      if (MonotonicNanos() - since > kDrainTimeoutNs) {
        // A reaper that cannot drain is a driver bug; its thread cannot be joined, so end the process here
        // with the queue named rather than hang or unwind under running threads.
        std::fprintf(stderr, "uvnvme-load: queue c%uq%u did not drain within %lld s (%u in flight)\n",
                     reaper->queue->ctrl(), reaper->queue->qid(),
                     static_cast<long long>(kDrainTimeoutNs / 1'000'000'000), reaper->queue->Inflight());
        std::_Exit(1);
      }
      usleep(1000);
    }
    reaper->thread.join();
  }
}

// Each queue's counters, CPU and per-phase results once its reaper is joined.
void Run::CollectQueues(LoadResult& result) {
  for (const auto& reaper : reapers_) {
    QueueResult queue;
    queue.ctrl = reaper->queue->ctrl();
    queue.qid = reaper->queue->qid();
    queue.final_mode = reaper->queue->mode();
    queue.counters = reaper->queue->Counters();
    queue.interrupts = driver_.InterruptsSent(queue.ctrl, queue.qid);
    queue.host_cpu = Seconds(reaper->final_cpu_ns);
    queue.phases = std::move(reaper->phases);
    if (result.device_timing) {
      const std::vector<DeviceTiming> timing = driver_.Timing(queue.ctrl, queue.qid);
      for (size_t i = 0; i < queue.phases.size() && i < timing.size(); ++i) queue.phases[i].device = timing[i];
    }
    result.cpu.host += queue.host_cpu;
    result.queues.push_back(std::move(queue));
  }
}

Result<LoadResult> Run::Execute(const sigset_t* stop_signals) {
  const auto& queues = driver_.queues();
  for (size_t q = 0; q < queues.size(); ++q) {
    auto reaper = std::make_unique<Reaper>();
    reaper->queue = queues[q].get();
    for (uint32_t job = 0; job < options_.jobs; ++job) reaper->jobs += job % queues.size() == q ? 1 : 0;
    reaper->rng = options_.seed * 0x100000001B3ULL + q;
    reaper->phases.resize(options_.phases.size());
    reapers_.push_back(std::move(reaper));
  }
  LoadResult result;
  work_loops_ = CalibrateWorkLoops(options_.io_work_ns);
  result.work_loops_per_io = work_loops_;
  Status placement_error = OkStatus();  // reported after the run: the threads are up and must be joined
  const int64_t start = MonotonicNanos();
  for (auto& reaper : reapers_) {
    reaper->thread = std::thread([this, raw = reaper.get()] { ReaperLoop(*raw); });
    const std::string what = "reaper of c" + std::to_string(reaper->queue->ctrl()) + "q" + std::to_string(reaper->queue->qid());
    if (Status placed = ApplyPlacement(reaper->thread.native_handle(), ThreadPlacement{false, options_.host_cpus}, what);
        !placed && placement_error) {
      placement_error = placed;
    }
  }

  int64_t phase_start = start;
  CpuSample before = Sample();
  std::vector<QueueCounters> counters_before;
  for (const auto& queue : queues) counters_before.push_back(queue->Counters());
  Status mode_error = OkStatus();
  for (size_t i = 0; i < options_.phases.size() && !result.interrupted; ++i) {
    const Phase& phase = options_.phases[i];
    if (i > 0) EnterPhase(i);
    if (i > 0 && phase.mode) {
      for (const auto& queue : queues) {
        if (Status set = driver_.SetMode(queue->ctrl(), queue->qid(), *phase.mode); !set && mode_error) mode_error = set;
      }
    }
    result.interrupted = !WaitUntil(phase_start + phase.duration_ns, stop_signals);
    const int64_t phase_end = MonotonicNanos();
    const CpuSample after = Sample();
    PhaseResult summary{phase, Seconds(phase_end - phase_start),
                        {after.process - before.process, after.host - before.host, after.controller - before.controller},
                        phase_start, phase_end};
    for (size_t q = 0; q < queues.size(); ++q) {
      const QueueCounters now = queues[q]->Counters();
      summary.wakeups += now.wakeups - counters_before[q].wakeups;
      summary.mode_switches += now.mode_switches - counters_before[q].mode_switches;
      counters_before[q] = now;
    }
    result.phases.push_back(std::move(summary));
    phase_start = phase_end;
    before = after;
  }
  EnterPhase(options_.phases.size());
  DrainReapers(phase_start);
  result.seconds = Seconds(MonotonicNanos() - start);
  result.device_clock = driver_.config().device_clock;
  result.device_threads = static_cast<uint32_t>(DeviceThreads(driver_.config()));
  const Status timing_closed = driver_.CloseTiming();
  result.device_timing = static_cast<bool>(timing_closed);
  if (!timing_closed) std::fprintf(stderr, "uvnvme-load: %s: no device timing\n", timing_closed.error().message.c_str());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  result.cpu.process = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  result.cpu.controller = driver_.ControllerCpuSeconds();
  CollectQueues(result);
  if (!placement_error) return std::move(placement_error).take_error();
  if (!mode_error) return std::move(mode_error).take_error();
  return result;
}

}  // namespace

std::vector<int> NonDeviceCpus(const LoadOptions& options) {
  if (options.driver.controller_placement.cpus.empty()) return {};
  return options.host_cpus;
}

Status PinToNonDeviceCpus(const LoadOptions& options, const std::string& what) {
  const std::vector<int> cpus = NonDeviceCpus(options);
  if (cpus.empty()) return OkStatus();
  return ApplyPlacement(pthread_self(), ThreadPlacement{false, cpus}, what);
}

Result<LoadResult> RunLoad(const LoadOptions& options, Driver& driver, const sigset_t* stop_signals) {
  Run run(options, driver);
  return run.Execute(stop_signals);
}

}  // namespace nvmeadapt::uvnvme::load
