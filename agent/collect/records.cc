// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/records.h"

#include <algorithm>
#include <cstddef>

#include "agent/engine/policy.h"

namespace nvmeadapt::collect {

static_assert(kHistBuckets == NA_HIST_BUCKETS);
static_assert(static_cast<uint32_t>(Source::kKernelNvme) == NA_SOURCE_KERNEL_NVME);
static_assert(static_cast<uint32_t>(Source::kBlock) == NA_SOURCE_BLOCK);
static_assert(static_cast<uint32_t>(Source::kUvnvme) == NA_SOURCE_UVNVME);
static_assert(static_cast<uint32_t>(Source::kSpdk) == NA_SOURCE_SPDK);
static_assert(static_cast<uint32_t>(Source::kNvmet) == NA_SOURCE_NVMET);
static_assert(static_cast<uint32_t>(ReapMode::kInterrupt) == NA_MODE_INTERRUPT);
static_assert(static_cast<uint32_t>(ReapMode::kPoll) == NA_MODE_POLL);
static_assert(sizeof(na_queue_slot) % 64 == 0, "slots are padded to whole cache lines");
static_assert(offsetof(na_queue_slot, counters) == 64, "key and control share the slot's first line");
static_assert(offsetof(na_queue_counters, window_first_ns) == 64, "what every completion touches is one line");
static_assert(engine::kMaxWindowCompletions == NA_MAX_WINDOW,
              "the engine accepts no window the BPF side cannot count (one limit, bpf/nvme_adapt.h)");

na_queue_key ToBpfKey(const QueueKey& key) {
  return na_queue_key{static_cast<__u32>(key.source), key.ctrl, key.qid, key.pid};
}

QueueKey FromBpfKey(const na_queue_key& key) {
  return QueueKey{static_cast<Source>(key.source), key.ctrl, key.qid, key.pid};
}

Result<WindowEvent> FromBpfRecord(const na_window_record& record) {
  if (record.key.source < NA_SOURCE_KERNEL_NVME || record.key.source > NA_SOURCE_NVMET)
    return MakeError(ErrorCode::kInvalidArgument, "window record: unknown source " + std::to_string(record.key.source));
  if (record.kind != NA_RECORD_WINDOW && record.kind != NA_RECORD_PACE_MISS)
    return MakeError(ErrorCode::kInvalidArgument, "window record: unknown kind " + std::to_string(record.kind));
  WindowEvent event;
  event.key = FromBpfKey(record.key);
  event.mode_known = record.mode == NA_MODE_INTERRUPT || record.mode == NA_MODE_POLL;
  event.mode = record.mode == NA_MODE_POLL ? ReapMode::kPoll : ReapMode::kInterrupt;
  event.completions = record.completions;
  event.start = static_cast<engine::Nanos>(record.start_ns);
  event.end = static_cast<engine::Nanos>(record.end_ns);
  event.bytes = record.bytes;
  event.generation = record.generation;
  event.first = static_cast<engine::Nanos>(record.first_ns);
  if (record.kind == NA_RECORD_PACE_MISS) {
    event.pace_miss = engine::PaceMiss{record.completions,
                                       static_cast<engine::Nanos>(record.end_ns - std::min(record.start_ns, record.end_ns)),
                                       std::max<uint32_t>(record.batch, 1)};
  }
  return event;
}

QueueCounters FromBpfCounters(const na_queue_counters& counters) {
  QueueCounters out;
  out.completions = counters.done_completions + NA_WINDOW_COUNT(counters.window);
  out.bytes = counters.done_bytes + NA_WINDOW_BYTES(counters.window);
  out.abandoned_completions = counters.abandoned_completions;
  out.pace_miss_retries = counters.pace_miss_retries;
  out.window_first = static_cast<engine::Nanos>(counters.window_first_ns);
  out.interrupt_completions = counters.irq_completions;
  out.poll_completions = counters.poll_completions;
  out.batches = counters.batches;
  out.wakeups = counters.wakeups;
  out.mode_switches = counters.mode_switches;
  out.generation = counters.generation;
  out.progress.start = static_cast<engine::Nanos>(counters.window_start_ns);
  out.progress.completions = NA_WINDOW_COUNT(counters.window);
  out.last_completion = static_cast<engine::Nanos>(counters.last_ns);
  std::copy(std::begin(counters.hist), std::end(counters.hist), out.interval_histogram.begin());
  return out;
}

Status ValidateControl(const QueueControl& control) {
  if (control.generation == 0)
    return MakeError(ErrorCode::kInvalidArgument, "queue control: generation 0 is reserved for unmanaged queues");
  if (control.window_completions == 0 || control.window_completions > NA_MAX_WINDOW)
    return MakeError(ErrorCode::kInvalidArgument, "queue control: window_completions must be in [1, " +
                                                      std::to_string(NA_MAX_WINDOW) + "]");
  if (control.mode_since < 0 || control.baseline_span < 0 || control.pace_slack < 0)
    return MakeError(ErrorCode::kInvalidArgument, "queue control: times must not be negative");
  return OkStatus();
}

na_queue_control ToBpfControl(const QueueControl& control) {
  na_queue_control out{};
  out.mode = static_cast<__u32>(control.mode);
  out.generation = control.generation;
  out.mode_since_ns = static_cast<__u64>(control.mode_since);
  out.baseline_span_ns = static_cast<__u64>(control.baseline_span);
  out.baseline_completions = control.baseline_completions;
  out.window_completions = control.window_completions;
  out.pace_slack_ns = static_cast<__u64>(control.pace_slack);
  out.flags = (control.batch_pace_allowance ? NA_CONTROL_BATCH_ALLOWANCE : 0) |
              (control.try_clock_first_completion ? NA_CONTROL_TRY_CLOCK_FIRST : 0);
  return out;
}

}  // namespace nvmeadapt::collect
