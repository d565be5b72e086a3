// SPDX-License-Identifier: Apache-2.0
// What the daemon needs from a collector: window records, per-queue counters, the pace-check control the
// BPF side needs, and the collector's own cost. Implemented by the BPF collector and the procfs fallback;
// tests fake it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/engine/types.h"
#include "common/result.h"
#include "common/vocabulary.h"

namespace nvmeadapt::collect {

inline constexpr size_t kHistBuckets = 32;  // == NA_HIST_BUCKETS: bucket i counts intervals in [2^i, 2^(i+1)) ns

struct WindowEvent {
  QueueKey key;
  ReapMode mode = ReapMode::kInterrupt;
  bool mode_known = true;   // false: an unmanaged queue whose hook cannot tell (block layer, SPDK, procfs)
  uint32_t completions = 0;
  engine::Nanos start = 0;
  engine::Nanos end = 0;
  uint64_t bytes = 0;
  uint64_t interrupts = 0;  // procfs: interrupts of the queue's vector in [start, end]; BPF windows: 0
  uint32_t generation = 0;  // QueueControl generation the window ran under (0: queue not managed)
  engine::Nanos first = 0;  // the window's first completion (the reap that opened it)
  std::optional<engine::PaceMiss> pace_miss;
};

// What the agent tells the BPF side about a managed queue, so it can restart windows at mode changes and
// check the pace of polling windows per completion. A switch is published before the lever acts, with
// mode_since 0 (pending): the window of the new generation then starts when the driver reports the switch
// (a mode probe), or at the mode_since the agent sets once the lever's write returned, whichever is first.
struct QueueControl {
  ReapMode mode = ReapMode::kInterrupt;
  uint32_t generation = 1;  // must change at each mode change; 0 is reserved for "not managed"
  engine::Nanos mode_since = 0;  // 0: pending, see above
  engine::Nanos baseline_span = 0;
  uint32_t baseline_completions = 0;  // 0: no pace check
  uint32_t window_completions = 8192;
  engine::Nanos pace_slack = 20'000;
  bool batch_pace_allowance = true;  // engine::Policy::batch_pace_allowance
  bool try_clock_first_completion = false;  // engine::Policy::try_clock_first_completion
};

struct QueueCounters {
  uint64_t completions = 0;
  uint64_t bytes = 0;
  // Completions by the path that reaped them, where the collector can tell (kernel: fentry on nvme_irq and
  // nvme_poll; userspace drivers: the mode each batch was reaped in).
  uint64_t interrupt_completions = 0;
  uint64_t poll_completions = 0;
  uint64_t interrupts = 0;        // procfs: interrupts of the queue's vector (it sees no completions by path)
  uint64_t batches = 0;           // userspace drivers: reaped batches (probe fires)
  uint64_t wakeups = 0;           // uvnvme: interrupt-mode reaper wakeups (with userspace_wakeups)
  uint64_t mode_switches = 0;     // uvnvme: mode() probe fires
  uint64_t abandoned_completions = 0;  // in windows restarted at a mode change: in no window record
  uint64_t pace_miss_retries = 0;  // pace misses a full ring buffer refused, sent again by a later completion
  uint32_t generation = 0;        // control generation the window in flight runs under
  engine::WindowProgress progress;  // the window in flight
  engine::Nanos window_first = 0;  // its first completion (0: none yet)
  engine::Nanos last_completion = 0;
  std::array<uint64_t, kHistBuckets> interval_histogram{};
};

struct ProgramStats {
  std::string name;       // e.g. "tp_btf/block_rq_complete"
  uint64_t run_count = 0;
  uint64_t run_time_ns = 0;  // needs kernel.bpf_stats_enabled=1, else 0
};

struct CollectorStats {
  uint64_t ringbuf_drops = 0;
  uint64_t records = 0;
  uint64_t slots_exhausted = 0;  // completions of queues beyond the queue table's capacity, not counted
  std::vector<ProgramStats> programs;
};

class Collector {
 public:
  virtual ~Collector() = default;

  virtual std::string Name() const = 0;             // "bpf" or "procfs"
  virtual bool ObserveOnly() const = 0;             // true: windows are too coarse to decide on
  virtual std::vector<std::string> Hooks() const = 0;  // what is attached, e.g. "tp_btf/nvme_sq"

  // Waits at most timeout_ms for records and hands each to `sink`. Returns how many were handed over.
  virtual Result<int> Poll(int timeout_ms, const std::function<void(const WindowEvent&)>& sink) = 0;
  // Ends the Poll under way, or the next one, at once. Any thread may call it: this is how work handed to
  // the agent's loop (a lever's answer, an RPC) is taken without the loop waking to look for it.
  virtual void Wake() = 0;

  virtual Status SetQueueControl(const QueueKey& key, const QueueControl& control) = 0;
  virtual Status ForgetQueue(const QueueKey& key) = 0;
  virtual Result<QueueCounters> ReadCounters(const QueueKey& key) const = 0;
  virtual std::vector<QueueKey> ObservedQueues() const = 0;

  // Userspace drivers: attach the uvnvme USDT probes (or the SPDK uprobes) to a running process.
  virtual Status AttachProcess(pid_t pid, const std::string& binary_path) = 0;
  virtual Status DetachProcess(pid_t pid) = 0;

  virtual CollectorStats Stats() const = 0;

  // How it was chosen (OpenCollector): each hook with its reason, or why BPF is not used. For reports.
  const std::vector<std::string>& Choices() const { return choices_; }
  void SetChoices(std::vector<std::string> choices) { choices_ = std::move(choices); }

 private:
  std::vector<std::string> choices_;
};

struct CollectorOptions {
  uint32_t default_window = 8192;  // window of queues without a QueueControl (at most 1048575)
  bool kernel_nvme = true;         // the nvme programs where they can attach (docs/collectors.md)
  // Kernel nvme per reap (fentry/fexit on nvme_irq, fexit on nvme_poll, the batch read from the CQ head)
  // where the nvme module's BTF allows it; false, or where it does not: the nvme_sq tracepoint per completion.
  bool kernel_nvme_per_batch = true;
  // The interval histogram on the per-completion hooks (block, and the nvme_sq fallback) needs a clock
  // read per completion, their largest single cost (bench/bpf_cost). Off, they read the clock only where
  // a rule needs it (a window's first completion and close, polling windows under a pace check), and
  // their queues' histograms stay empty. Per-batch hooks (kernel nvme per batch, uvnvme, SPDK) always fill it.
  bool completion_intervals = false;
  bool block = true;               // block_rq_complete for every blk-mq device
  // irq_handler_entry/exit per interrupt line (BpfCollector::ReadIrq). Off by default: they fire on every
  // interrupt of the machine, and no decision or metric reads what they count; only the interrupt
  // accounting check (tests/bpf/irq_test.cc) asks for them.
  bool irqs = false;
  // Also attach uvnvme's irq probe, for QueueCounters::wakeups. Off by default: nothing the agent decides
  // or exports reads it, and it is one more uprobe trap per interrupt on the driver's reaping path
  // (bench/probe_cost.py).
  bool userspace_wakeups = false;
  // uvnvme drivers: count every reap through the `complete` probe (one uprobe trap per reap) instead of
  // the `tally` probe (one per tally of up to 64 completions or 200 us polling, 256 or 2 ms in interrupt
  // mode, docs/probes.md). Off by default: the per-reap trap costs the driver ~+50 % CPU per I/O at QD32
  // (bench/probe_cost.py). A driver without the tally probe is observed through `complete` either way.
  bool userspace_per_reap = false;
  bool force_procfs = false;       // skip BPF altogether
  std::string root = "/";          // the procfs collector reads <root>/proc and <root>/sys (tests: a captured tree)
  int procfs_interval_ms = 1000;   // the procfs collector samples at most this often
};

class FeatureProbe;

// The BPF collector with the best hooks this kernel has; where BPF cannot load at all (no kernel BTF, no
// permission) it logs one line naming the cause and returns the procfs collector (ObserveOnly() true).
Result<std::unique_ptr<Collector>> OpenCollector(const CollectorOptions& options);
Result<std::unique_ptr<Collector>> OpenCollector(const CollectorOptions& options, std::shared_ptr<FeatureProbe> probe);

}  // namespace nvmeadapt::collect
