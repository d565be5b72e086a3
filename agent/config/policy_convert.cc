#include "agent/config/policy_convert.h"

#include <string>

namespace nvmeadapt::config {

Result<engine::ControllerMode> FromProto(v1::ControllerMode mode, std::string_view field_path) {
  if (auto known = FromProto(mode)) return *known;
  return MakeError(ErrorCode::kInvalidArgument, std::string(field_path) + ".mode: unknown controller mode " +
                                                    std::to_string(static_cast<int>(mode)));
}

Result<engine::Policy> Overlay(const engine::Policy& base, const v1::Policy& layer, std::string_view field_path) {
  engine::Policy p = base;
  if (layer.has_window_completions()) p.window_completions = layer.window_completions();
  if (layer.has_poll_threshold_ns()) p.poll_threshold = layer.poll_threshold_ns();
  if (layer.has_pace_slack_ns()) p.pace_slack = layer.pace_slack_ns();
  if (layer.has_max_failures()) p.max_failures = layer.max_failures();
  if (layer.has_backoff_windows()) p.backoff_windows = layer.backoff_windows();
  if (layer.has_max_poll_windows()) p.max_poll_windows = layer.max_poll_windows();
  if (layer.has_timer_granularity_ns()) p.timer_granularity = layer.timer_granularity_ns();
  if (layer.has_batch_pace_allowance()) p.batch_pace_allowance = layer.batch_pace_allowance();
  if (layer.has_settle_windows()) p.settle_windows = layer.settle_windows();
  if (layer.has_pace_credit_ns()) p.pace_credit = layer.pace_credit_ns();
  if (layer.has_max_backoff_windows()) p.max_backoff_windows = layer.max_backoff_windows();
  if (layer.has_backoff_load_change_percent()) p.backoff_load_change_percent = layer.backoff_load_change_percent();
  if (layer.has_max_poll_run_windows()) p.max_poll_run_windows = layer.max_poll_run_windows();
  if (layer.has_stall_backoff()) p.stall_backoff = layer.stall_backoff();
  if (layer.has_mode() && layer.mode() != v1::CONTROLLER_MODE_UNSPECIFIED) {
    auto mode = FromProto(layer.mode(), field_path);
    if (!mode) return mode.error();
    p.mode = *mode;
  }
  const std::string prefix = std::string(field_path) + ".";
  if (Status status = engine::ValidatePolicy(p, prefix); !status) return status.error();
  return p;
}

v1::Policy ToProto(const engine::Policy& p) {
  v1::Policy out;
  out.set_window_completions(p.window_completions);
  out.set_poll_threshold_ns(p.poll_threshold);
  out.set_pace_slack_ns(p.pace_slack);
  out.set_max_failures(p.max_failures);
  out.set_backoff_windows(p.backoff_windows);
  out.set_max_poll_windows(p.max_poll_windows);
  out.set_timer_granularity_ns(p.timer_granularity);
  out.set_batch_pace_allowance(p.batch_pace_allowance);
  out.set_settle_windows(p.settle_windows);
  out.set_pace_credit_ns(p.pace_credit);
  out.set_max_backoff_windows(p.max_backoff_windows);
  out.set_backoff_load_change_percent(p.backoff_load_change_percent);
  out.set_max_poll_run_windows(p.max_poll_run_windows);
  out.set_stall_backoff(p.stall_backoff);
  out.set_mode(ToProto(p.mode));
  return out;
}

v1::PolicySet PoliciesOf(const v1::Config& config) {
  v1::PolicySet set;
  *set.mutable_policy() = config.policy();
  *set.mutable_controllers() = config.controllers();
  *set.mutable_queues() = config.queues();
  return set;
}

Result<engine::Policy> EffectivePolicy(const v1::PolicySet& set, std::string_view controller, uint32_t queue) {
  auto policy = Overlay(engine::Policy{}, set.policy(), "policy");
  if (!policy) return policy;
  for (int i = 0; i < set.controllers_size(); ++i) {
    const auto& c = set.controllers(i);
    if (c.controller() != controller) continue;
    policy = Overlay(*policy, c.policy(), "controllers[" + std::to_string(i) + "].policy");
    if (!policy) return policy;
  }
  for (int i = 0; i < set.queues_size(); ++i) {
    const auto& q = set.queues(i);
    if (q.controller() != controller || q.queue() != queue) continue;
    policy = Overlay(*policy, q.policy(), "queues[" + std::to_string(i) + "].policy");
    if (!policy) return policy;
  }
  return policy;
}

Result<engine::Policy> EffectivePolicy(const v1::Config& config, std::string_view controller, uint32_t queue) {
  return EffectivePolicy(PoliciesOf(config), controller, queue);
}

Status ValidatePolicies(const v1::PolicySet& set) {
  auto global = Overlay(engine::Policy{}, set.policy(), "policy");
  if (!global) return global.error();
  for (int i = 0; i < set.controllers_size(); ++i) {
    const std::string path = "controllers[" + std::to_string(i) + "]";
    if (set.controllers(i).controller().empty()) {
      return MakeError(ErrorCode::kInvalidArgument, path + ".controller: must name a controller");
    }
    auto merged = Overlay(*global, set.controllers(i).policy(), path + ".policy");
    if (!merged) return merged.error();
  }
  for (int i = 0; i < set.queues_size(); ++i) {
    const auto& q = set.queues(i);
    const std::string path = "queues[" + std::to_string(i) + "]";
    if (q.controller().empty()) {
      return MakeError(ErrorCode::kInvalidArgument, path + ".controller: must name a controller");
    }
    if (q.queue() == 0) {
      return MakeError(ErrorCode::kInvalidArgument, path + ".queue: must be an I/O queue id (>= 1)");
    }
    auto merged = EffectivePolicy(set, q.controller(), q.queue());
    if (!merged) return merged.error();
  }
  return OkStatus();
}

Status ValidatePolicies(const v1::Config& config) { return ValidatePolicies(PoliciesOf(config)); }

}  // namespace nvmeadapt::config
