// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/payoff_listener.h"

namespace nvmeadapt::daemon {

void PayoffListener::QueueAdded(const ManagedQueue& q, const engine::QueueSetup&) {
  QueuePayoffRecord& record = records_[q.serial];
  // Whether its poller's CPU can be measured is known before it ever polls (a uvnvme reaper is there already).
  Result<engine::Nanos> cpu = poller_cpu_(q);
  record.cpu_measured = cpu.ok();
  if (!cpu) record.cpu_unmeasured_reason = cpu.error().message;
}

void PayoffListener::QueueRemoved(const ManagedQueue& q, std::string_view) { records_.erase(q.serial); }

void PayoffListener::Window(const ManagedQueue& q, const engine::WindowRecord& record) {
  if (auto it = records_.find(q.serial); it != records_.end()) it->second.pending_completions = record.completions;
}

void PayoffListener::Timer(const ManagedQueue& q, engine::Nanos, const engine::WindowProgress& progress) {
  if (auto it = records_.find(q.serial); it != records_.end()) it->second.pending_completions = progress.completions;
}

void PayoffListener::Decided(const ManagedQueue& q, const engine::Decision& decision) {
  auto it = records_.find(q.serial);
  if (it == records_.end()) return;
  (void)it->second.payoff.Account(decision, it->second.pending_completions);
  it->second.pending_completions = 0;
}

void PayoffListener::Counters(const ManagedQueue& q) { Sample(q); }

void PayoffListener::SwitchApplied(const ManagedQueue& q, engine::Reason, const SwitchTimeline&) { Sample(q); }

void PayoffListener::Sample(const ManagedQueue& q) {
  auto it = records_.find(q.serial);
  if (it == records_.end()) return;
  QueuePayoffRecord& record = it->second;
  if (q.mode != ReapMode::kPoll && !record.last_cpu) return;  // neither polling nor just back from it
  Result<engine::Nanos> cpu = poller_cpu_(q);
  if (!cpu) {
    record.cpu_measured = false;
    record.cpu_unmeasured_reason = cpu.error().message;
    record.last_cpu.reset();
    return;
  }
  record.cpu_measured = true;
  record.cpu_unmeasured_reason.clear();
  // The last reading was taken in poll mode: the poller's time since was polling, up to this reading or to
  // the switch that ended the run (a switch's reading comes once the new mode took effect).
  if (record.last_cpu && *cpu >= *record.last_cpu) record.polling_cpu += *cpu - *record.last_cpu;
  record.last_cpu = q.mode == ReapMode::kPoll ? std::optional<engine::Nanos>(*cpu) : std::nullopt;
}

const QueuePayoffRecord* PayoffListener::Of(const ManagedQueue& q) const {
  auto it = records_.find(q.serial);
  return it == records_.end() ? nullptr : &it->second;
}

void PayoffToProto(const QueuePayoffRecord& record, v1::Payoff& out) {
  const engine::QueuePayoff& p = record.payoff;
  out.set_judged_windows(p.judged_windows);
  out.set_kept_windows(p.kept_windows);
  out.set_last_kept_speedup(p.last_kept_speedup);
  out.set_last_speedup(p.last_speedup);
  out.set_polled_completions(p.polled_completions);
  out.set_completions_gained(p.completions_gained);
  out.set_polling_ns(p.polling_time);
  out.set_failed_polling_ns(p.failed_polling_time);
  out.set_cpu_measured(record.cpu_measured);
  out.set_polling_cpu_ns(record.polling_cpu);
  out.set_cpu_unmeasured_reason(record.cpu_unmeasured_reason);
  const size_t fast = *engine::MeasureReasonIndex(engine::Reason::kWindowFast);
  out.set_shadow_windows(p.ShadowWindows());
  out.set_shadow_would_poll_windows(p.shadow_windows[fast]);
  out.set_shadow_completions(p.shadow_completions[0] + p.shadow_completions[1]);
  out.set_shadow_would_poll_completions(p.shadow_completions[fast]);
  out.set_measured_windows(p.measured_windows[0] + p.measured_windows[1]);
  out.set_tries(p.measured_windows[fast]);
}

}  // namespace nvmeadapt::daemon
