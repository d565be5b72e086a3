// SPDX-License-Identifier: Apache-2.0
#include "agent/config/node_config.h"

#include <string>

namespace nvmeadapt::config {

Result<NodeLayerConfig> NodeLayerFromConfig(const v1::NodeConfig& node) {
  NodeLayerConfig out;
  engine::NodeSettings& s = out.settings;
  s.enabled = true;
  if (node.has_budget_cores()) s.budget_cores = node.budget_cores();
  if (node.has_budget_share()) s.budget_share = node.budget_share();
  if (node.has_min_headroom()) s.min_headroom = node.min_headroom();
  if (node.has_stop_headroom()) s.stop_headroom = node.stop_headroom();
  if (node.has_pressure_some_limit()) s.pressure_some_limit = node.pressure_some_limit();
  if (node.has_pressure_idle_share()) s.pressure_idle_share = node.pressure_idle_share();
  if (node.has_pressure_some_rise()) s.pressure_some_rise = node.pressure_some_rise();
  if (node.has_pressure_full_rise()) s.pressure_full_rise = node.pressure_full_rise();
  if (node.has_stagger_gap_ns()) s.stagger_gap = node.stagger_gap_ns();
  if (node.has_facts_max_age_ns()) s.facts_max_age = node.facts_max_age_ns();
  if (node.has_facts_interval_ns()) out.facts_interval = node.facts_interval_ns();
  NA_RETURN_IF_ERROR(engine::ValidateNodeSettings(s, "node."));
  if (out.facts_interval < kMinFactsInterval || out.facts_interval > kMaxFactsInterval) {
    return MakeError(ErrorCode::kInvalidArgument, "node.facts_interval_ns: must be in [100ms, 60s] (got " +
                                                      std::to_string(out.facts_interval) + " ns)");
  }
  if (s.facts_max_age < out.facts_interval) {
    // Else every reading would be too old by the time the next one comes: the CPU rules would never hold.
    return MakeError(ErrorCode::kInvalidArgument, "node.facts_max_age_ns: must be at least node.facts_interval_ns");
  }
  return out;
}

v1::NodeConfig NodeLayerToProto(const NodeLayerConfig& node) {
  const engine::NodeSettings& s = node.settings;
  v1::NodeConfig out;
  out.set_budget_cores(s.budget_cores);
  out.set_budget_share(s.budget_share);
  out.set_min_headroom(s.min_headroom);
  out.set_stop_headroom(s.stop_headroom);
  out.set_pressure_some_limit(s.pressure_some_limit);
  out.set_pressure_idle_share(s.pressure_idle_share);
  out.set_pressure_some_rise(s.pressure_some_rise);
  out.set_pressure_full_rise(s.pressure_full_rise);
  out.set_stagger_gap_ns(s.stagger_gap);
  out.set_facts_interval_ns(node.facts_interval);
  out.set_facts_max_age_ns(s.facts_max_age);
  return out;
}

}  // namespace nvmeadapt::config
