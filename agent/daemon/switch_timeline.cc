// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/switch_timeline.h"

#include <sstream>

#include "agent/config/proto_enums.h"

namespace nvmeadapt::daemon {
namespace {

// A step's time after the decision; steps that did not happen stay 0.
engine::Nanos After(engine::Nanos at, engine::Nanos decided) { return at == 0 ? 0 : at - decided; }

std::string_view VerdictName(const SwitchTimeline& t) {
  if (!t.verdict) return "none";
  return engine::ReasonName(t.verdict->reason);
}

}  // namespace

std::string FormatSwitchLine(std::string_view queue, const SwitchTimeline& t) {
  std::ostringstream out;
  out << "switch " << queue << ' ' << t.generation << ' ' << ReapModeName(t.from) << "->"
      << ReapModeName(t.to) << " reason=" << engine::ReasonName(t.reason)
      << " lever=" << (t.lever.empty() ? "none" : t.lever) << " evidence=" << t.evidence
      << " decided=" << t.decided << " journaled=+" << After(t.journaled, t.decided)
      << " published=+" << After(t.published, t.decided) << " requested=+" << After(t.requested, t.decided)
      << " acked=+" << After(t.acknowledged, t.decided) << " effect=+" << After(t.effect, t.decided)
      << " by=" << (t.effect_by_driver ? "driver" : "lever") << " first=+" << After(t.first_completion, t.decided)
      << " verdict=" << VerdictName(t);
  if (t.verdict) {
    const engine::Decision& v = *t.verdict;
    if (v.pace_index != 0) out << " k=" << v.pace_index;
    if (v.pace_batch != 0) out << " n=" << v.pace_batch;
    if (v.limit != 0) out << " measured=" << v.measured << " limit=" << v.limit;
    out << " at=+" << After(v.at, t.decided);
  }
  return out.str();
}

v1::SwitchTimeline ToProto(const SwitchTimeline& t, int64_t wall_minus_monotonic) {
  v1::SwitchTimeline out;
  out.set_generation(t.generation);
  out.set_from(config::ToProto(t.from));
  out.set_to(config::ToProto(t.to));
  out.set_reason(std::string(engine::ReasonName(t.reason)));
  out.set_lever(t.lever);
  out.set_decided_unix_ns(t.decided + wall_minus_monotonic);
  out.set_evidence_ns(After(t.evidence, t.decided));
  out.set_journaled_ns(After(t.journaled, t.decided));
  out.set_published_ns(After(t.published, t.decided));
  out.set_requested_ns(After(t.requested, t.decided));
  out.set_acknowledged_ns(After(t.acknowledged, t.decided));
  out.set_effect_ns(After(t.effect, t.decided));
  out.set_effect_source(t.effect_by_driver ? "driver" : "lever");
  out.set_first_completion_ns(After(t.first_completion, t.decided));
  out.set_verdict(std::string(VerdictName(t)));
  if (t.verdict) {
    out.set_verdict_index(t.verdict->pace_index);
    out.set_verdict_batch(t.verdict->pace_batch);
    out.set_verdict_measured_ns(t.verdict->measured);
    out.set_verdict_limit_ns(t.verdict->limit);
    out.set_verdict_ns(After(t.verdict->at, t.decided));
  }
  return out;
}

}  // namespace nvmeadapt::daemon
