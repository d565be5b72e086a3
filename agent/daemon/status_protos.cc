// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/status_protos.h"

#include <sys/utsname.h>
#include <unistd.h>

#include "agent/config/node_config.h"
#include "agent/config/proto_enums.h"

namespace nvmeadapt::daemon {

v1::QueueInfo DescribeQueue(const ManagedQueue& q, const engine::QueueView& view, const QueuePayoffRecord* payoff,
                            int64_t wall_minus_monotonic) {
  v1::QueueInfo info;
  info.mutable_id()->set_controller(q.desc.controller);
  info.mutable_id()->set_queue(q.desc.qid);
  info.set_controller_id(q.desc.ControllerId());
  info.set_source(q.desc.source);
  info.set_mode(config::ToProto(q.mode));
  info.set_state(config::ToProto(view.state));
  info.set_eligible(q.desc.eligible);
  info.set_ineligible_reason(q.desc.ineligible_reason);
  info.set_controller_mode(config::ToProto(view.policy.mode));
  info.set_lever(q.lever);
  info.set_degraded(q.degraded());
  info.set_degraded_reason(q.degraded_reason);
  info.set_completions(q.counters.completions);
  info.set_bytes(q.counters.bytes);
  if (q.last_window) {
    const collect::WindowEvent& w = *q.last_window;
    auto* window = info.mutable_last_window();
    window->set_completions(w.completions);
    window->set_span_ns(w.end - w.start);
    if (w.completions > 0) window->set_average_interval_ns(static_cast<double>(w.end - w.start) / w.completions);
    window->set_mode(config::ToProto(w.mode));
    window->set_end_unix_ns(q.last_window_unix_ns);
  }
  if (q.last_decision) *info.mutable_last_decision() = *q.last_decision;
  if (view.override_mode) {
    info.mutable_override()->set_mode(config::ToProto(view.override_mode->mode));
    if (view.override_mode->expires_at != 0) {
      info.mutable_override()->set_expires_unix_ns(wall_minus_monotonic + view.override_mode->expires_at);
    }
  }
  info.set_failures(view.failures);
  info.set_poll_windows(view.poll_windows);
  info.set_backoff_windows_left(view.backoff_left);
  info.set_mode_switches(q.switches);
  for (uint32_t cpu : q.desc.cpus) info.add_cpus(cpu);
  info.set_irq(q.desc.irq);
  info.set_transport(q.desc.transport);
  info.set_layer(q.desc.layer);
  info.set_windows(q.windows);
  info.set_poll_threshold_ns(view.policy.poll_threshold);
  if (payoff != nullptr) PayoffToProto(*payoff, *info.mutable_payoff());
  return info;
}

v1::NodeStatus DescribeNode(const NodeDecider& node) {
  const metrics::NodeSeries series = node.Series();
  v1::NodeStatus out;
  *out.mutable_settings() = config::NodeLayerToProto(node.config());
  out.set_decided_queues(static_cast<uint32_t>(series.decided_queues));
  out.set_polling_cores(series.polling_cores);
  out.set_budget_cores(series.budget_cores.value_or(0));
  for (const auto& row : engine::kNodeReasons) {
    const auto i = static_cast<size_t>(row.value);
    (*out.mutable_deferred_tries())[std::string(row.name)] = series.deferred[i];
    (*out.mutable_ended_runs())[std::string(row.name)] = series.ended[i];
  }
  if (series.pressure_some_avg10) out.set_pressure_some_avg10(*series.pressure_some_avg10);
  if (series.pressure_full_avg10) out.set_pressure_full_avg10(*series.pressure_full_avg10);
  out.set_facts_error(node.facts_error());
  return out;
}

void DescribeKernel(v1::GetStatusResponse& status) {
  utsname name{};
  if (uname(&name) == 0) status.set_kernel_release(name.release);
  status.set_kernel_btf(access("/sys/kernel/btf/vmlinux", R_OK) == 0);
}

}  // namespace nvmeadapt::daemon
