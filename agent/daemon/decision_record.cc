// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/decision_record.h"

#include "agent/config/proto_enums.h"

namespace nvmeadapt::daemon {

v1::Decision DecisionProto(const engine::Decision& d, int64_t wall_minus_monotonic) {
  v1::Decision out;
  out.set_time_unix_ns(wall_minus_monotonic + d.at);
  out.set_from(config::ToProto(d.from));
  out.set_to(config::ToProto(d.to));
  out.set_reason(std::string(engine::ReasonName(d.reason)));
  out.set_state(config::ToProto(d.state));
  out.set_shadow(d.shadow);
  out.set_backoff_started(d.backoff_started);
  out.set_failures(d.failures);
  out.set_pace_index(d.pace_index);
  out.set_pace_batch(d.pace_batch);
  out.set_measured_ns(d.measured);
  out.set_limit_ns(d.limit);
  return out;
}

bool Notable(const engine::Decision& d) {
  if (d.Switches() || d.shadow || d.backoff_started) return true;
  switch (d.reason) {
    case engine::Reason::kWindowSlow:
    case engine::Reason::kPollWindowFaster:
    case engine::Reason::kBackingOff:
    case engine::Reason::kSettling:
    case engine::Reason::kPolicyChanged:
    case engine::Reason::kModeChanged:
      return false;
    default:
      return true;
  }
}

bool ChangesState(const engine::Decision& d) {
  if (d.shadow || d.deferred) return false;
  if (d.Switches() || d.backoff_started) return true;
  switch (d.reason) {
    case engine::Reason::kBackoffOver:
    case engine::Reason::kLoadChanged:
    case engine::Reason::kOverride:
    case engine::Reason::kOverrideExpired:
      return true;
    default:
      return false;
  }
}

}  // namespace nvmeadapt::daemon
