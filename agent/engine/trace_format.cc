// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/trace_format.h"

#include <sstream>

#include "agent/engine/policy_fields.h"

namespace nvmeadapt::engine {

std::string FormatPolicy(const Policy& p) {
  std::ostringstream out;
  for (const PolicyField& field : PolicyFields()) {
    if (&field != PolicyFields().data()) out << ' ';
    out << field.trace_key << '=';
    if (field.kind == PolicyFieldKind::kMode) {
      out << ControllerModeName(p.mode);
    } else {
      out << field.get(p);
    }
  }
  return out.str();
}

std::string FormatQueueLine(std::string_view name, const QueueSetup& setup) {
  std::ostringstream out;
  out << "queue " << name << " eligible=" << (setup.eligible ? 1 : 0) << " reap=" << ReapModeName(setup.current)
      << " safe=" << ReapModeName(setup.safe) << ' ' << FormatPolicy(setup.policy);
  return out.str();
}

std::string FormatWindowLine(std::string_view name, const WindowRecord& r) {
  std::ostringstream out;
  out << "window " << name << ' ' << ReapModeName(r.mode) << ' ' << r.completions << ' ' << r.start << ' '
      << r.end;
  if (r.pace_miss) {
    out << " miss=" << r.pace_miss->completion_index << ':' << r.pace_miss->elapsed;
    if (r.pace_miss->batch != 1) out << ':' << r.pace_miss->batch;
  }
  return out.str();
}

std::string FormatTimerLine(std::string_view name, Nanos now, const WindowProgress& progress) {
  std::ostringstream out;
  out << "timer " << name << ' ' << now << ' ' << progress.start << ' ' << progress.completions << ' '
      << progress.last;
  if (progress.in_flight) out << " inflight=" << *progress.in_flight;
  if (!progress.known) out << " unread=1";
  return out.str();
}

std::string FormatPolicyLine(std::string_view name, Nanos now, const Policy& policy) {
  std::ostringstream out;
  out << "policy " << name << ' ' << now << ' ' << FormatPolicy(policy);
  return out.str();
}

std::string FormatOverrideLine(std::string_view name, Nanos now, const std::optional<Override>& o) {
  std::ostringstream out;
  out << "override " << name << ' ' << now << ' ' << (o ? ReapModeName(o->mode) : "none");
  if (o && o->expires_at != 0) out << " expires=" << o->expires_at;
  return out.str();
}

std::string FormatLeverLine(std::string_view name, Nanos now, ReapMode actual) {
  std::ostringstream out;
  out << "lever " << name << ' ' << now << ' ' << ReapModeName(actual);
  return out.str();
}

std::string FormatDecision(std::string_view name, const Decision& d) {
  std::ostringstream out;
  out << name << " at=" << d.at << ' ' << ReapModeName(d.from) << "->" << ReapModeName(d.to)
      << " reason=" << ReasonName(d.reason) << " state=" << QueueStateName(d.state) << " failures=" << d.failures;
  if (d.pace_index != 0) out << " k=" << d.pace_index;
  if (d.pace_batch > 1) out << " n=" << d.pace_batch;
  if (d.limit != 0) out << " measured=" << d.measured << " limit=" << d.limit;
  if (d.backoff_started) out << " backoff";
  if (d.shadow) out << " shadow";
  if (d.deferred) out << " deferred=" << NodeReasonName(*d.deferred);
  return out.str();
}

}  // namespace nvmeadapt::engine
