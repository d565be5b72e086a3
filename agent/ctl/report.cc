// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "agent/ctl/commands.h"
#include "agent/ctl/format.h"
#include "agent/ctl/output.h"
#include "agent/ctl/payoff_text.h"
#include "agent/ctl/values.h"
#include "common/vocabulary.h"
#include "nvmeadapt/v1/agent.grpc.pb.h"

namespace nvmeadapt::ctl {
namespace {

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string Micros(double nanos) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", nanos / 1000.0);
  return text;
}

std::string RiskWords(LeverRisk risk) {
  switch (risk) {
    case LeverRisk::kNothingElse: return "no reset needed";
    case LeverRisk::kResetsController: return "each switch resets the controller (its I/O pauses)";
    case LeverRisk::kReconnectsHost: return "each switch reconnects the host (its I/O pauses)";
    case LeverRisk::kDriverSpecific: return "through the driver's own interface";
    case LeverRisk::kNoLever: break;
  }
  return "no lever";
}

// Adds one queue to its controller's report.
void AddQueue(const v1::QueueInfo& q, v1::ControllerReport& c) {
  if (c.controller().empty()) {
    c.set_controller(q.id().controller());
    c.set_source(q.source());
    c.set_transport(q.transport());
    c.set_layer(q.layer());
  }
  if (q.eligible()) {
    c.add_eligible_queues(q.id().queue());
    if (c.mode() == v1::CONTROLLER_MODE_UNSPECIFIED) c.set_mode(q.controller_mode());
    if (c.lever().empty()) c.set_lever(q.lever());
    const double average = q.last_window().average_interval_ns();
    if (average > 0 && (c.fastest_average_interval_ns() == 0 || average < c.fastest_average_interval_ns())) {
      c.set_fastest_average_interval_ns(average);
    }
    c.set_poll_threshold_ns(q.poll_threshold_ns());
  } else {
    c.add_ineligible_queues("q" + std::to_string(q.id().queue()) + ": " + q.ineligible_reason());
  }
  const v1::Payoff& p = q.payoff();
  c.set_windows(c.windows() + q.windows());
  c.set_measured_windows(c.measured_windows() + p.measured_windows());
  c.set_tries(c.tries() + p.tries());
  c.set_judged_windows(c.judged_windows() + p.judged_windows());
  c.set_kept_windows(c.kept_windows() + p.kept_windows());
  c.set_completions(c.completions() + q.completions());
  c.set_polled_completions(c.polled_completions() + p.polled_completions());
  c.set_shadow_windows(c.shadow_windows() + p.shadow_windows());
  c.set_shadow_would_poll_windows(c.shadow_would_poll_windows() + p.shadow_would_poll_windows());
  // Shares are summed as counts in the fields they come from, divided once every queue is in (Finish).
  c.set_shadow_would_poll_share(c.shadow_would_poll_share() + static_cast<double>(p.shadow_would_poll_completions()));
  c.set_polled_share(c.polled_share() + static_cast<double>(p.shadow_completions()));
  c.set_speedup(std::max(c.speedup(), p.last_kept_speedup()));
  c.set_completions_gained(c.completions_gained() + p.completions_gained());
  if (p.cpu_measured()) {
    c.set_cpu_measured(true);
    c.set_polling_cpu_ns(c.polling_cpu_ns() + p.polling_cpu_ns());
  } else if (q.eligible() && c.cpu_unmeasured_reason().empty()) {
    c.set_cpu_unmeasured_reason(p.cpu_unmeasured_reason());
  }
}

void Finish(v1::ControllerReport& c, bool observe_only) {
  const double shadow_completions = c.polled_share();
  c.set_shadow_would_poll_share(shadow_completions > 0 ? c.shadow_would_poll_share() / shadow_completions : 0);
  c.set_polled_share(Share(c.polled_completions(), c.completions()));
  if (c.cpu_measured()) c.clear_cpu_unmeasured_reason();
  c.set_lever_risk(std::string(kLeverRisks.Name(c.lever().empty() ? LeverRisk::kNoLever : LeverRiskOf(c.lever()))));
  c.set_verdict(Verdict(c, observe_only));
}

std::string NeverFast(const v1::ControllerReport& c) {
  std::string text = "never fast enough to try";
  if (c.fastest_average_interval_ns() > 0) {
    text += ": average " + Micros(c.fastest_average_interval_ns()) + " between completions against the " +
            Micros(static_cast<double>(c.poll_threshold_ns())) + " threshold";
  }
  return text;
}

std::string SharePercent(double share) { return std::to_string(std::lround(share * 100)) + " %"; }

}  // namespace

std::string Verdict(const v1::ControllerReport& c, bool observe_only) {
  if (c.eligible_queues_size() == 0) {
    return "nothing to switch: no eligible queue" +
           (c.ineligible_queues().empty() ? std::string() : " (" + c.ineligible_queues(0) + ")");
  }
  if (c.lever().empty()) return "observed only: no lever can switch this controller here";
  if (observe_only) return "observed only: the procfs collector cannot time windows (BPF unavailable)";
  const std::string risk = RiskWords(LeverRiskOf(c.lever()));
  switch (c.mode()) {
    case v1::CONTROLLER_MODE_SHADOW:
      if (c.shadow_windows() == 0) return "shadow mode has judged no window yet (too little I/O)";
      if (c.shadow_would_poll_windows() == 0) return NeverFast(c);
      return "would poll about " + SharePercent(c.shadow_would_poll_share()) + " of the time with " + c.lever() +
             "; " + risk;
    case v1::CONTROLLER_MODE_ADAPTIVE:
      if (c.kept_windows() > 0) {
        return "polls " + SharePercent(c.polled_share()) + " of completions, " + Ratio(c.speedup()) +
               " the rate of interrupt mode when it does; " + risk;
      }
      if (c.tries() > 0) {
        return "tried polling " + std::to_string(c.tries()) +
               " times, never faster than interrupt mode: stays in interrupt";
      }
      if (c.measured_windows() == 0) return "no window judged yet (too little I/O)";
      return NeverFast(c);
    default:
      return "mode " + ShortName(c.mode()) + ": the agent does not decide; set shadow to see what it would do";
  }
}

v1::Report BuildReport(const v1::GetStatusResponse& status, const v1::ListQueuesResponse& queues) {
  v1::Report report;
  report.set_node(status.node());
  report.set_version(status.version());
  report.set_kernel_release(status.kernel_release());
  report.set_kernel_btf(status.kernel_btf());
  report.set_collector(status.collector());
  report.set_observe_only(status.observe_only());
  *report.mutable_hooks() = status.hooks();
  *report.mutable_collector_choices() = status.collector_choices();
  report.set_uptime_ns(status.uptime_ns());
  std::map<std::string, v1::ControllerReport> by_name;
  for (const v1::QueueInfo& q : queues.queues()) AddQueue(q, by_name[q.id().controller()]);
  for (auto& [name, controller] : by_name) {
    Finish(controller, status.observe_only());
    *report.add_controllers() = std::move(controller);
  }
  return report;
}

namespace {

std::string Joined(const google::protobuf::RepeatedPtrField<std::string>& lines, const char* separator) {
  std::string text;
  for (const std::string& line : lines) text += (text.empty() ? "" : separator) + line;
  return text.empty() ? "-" : text;
}

std::string RecordText(const v1::ControllerReport& c) {
  std::string text = std::to_string(c.windows()) + " windows";
  if (c.shadow_windows() > 0) {
    text += "; shadow: " + std::to_string(c.shadow_windows()) + " judged, " +
            std::to_string(c.shadow_would_poll_windows()) + " fast enough to try, would poll " +
            SharePercent(c.shadow_would_poll_share()) + " of their completions";
  }
  if (c.measured_windows() > 0 || c.judged_windows() > 0) {
    text += "; " + std::to_string(c.measured_windows()) + " measured, " + std::to_string(c.tries()) +
            " fast enough to try, " + std::to_string(c.judged_windows()) + " polling windows judged, " +
            std::to_string(c.kept_windows()) + " kept, " + SharePercent(c.polled_share()) + " of completions polled";
  }
  return text;
}

std::string CpuText(const v1::ControllerReport& c) {
  if (!c.cpu_measured()) {
    return "not measured: " + (c.cpu_unmeasured_reason().empty() ? "-" : c.cpu_unmeasured_reason());
  }
  char text[48];
  std::snprintf(text, sizeof text, "%.2f s spent polling", static_cast<double>(c.polling_cpu_ns()) / 1e9);
  return text;
}

}  // namespace

void PrintReport(const v1::Report& r, std::ostream& out) {
  Table node({"node", r.node().empty() ? "-" : r.node()});
  node.Add({"kernel",
            (r.kernel_release().empty() ? "-" : r.kernel_release()) + (r.kernel_btf() ? " (BTF)" : " (no BTF)")});
  node.Add({"collector", r.collector() + (r.observe_only() ? " (observe only)" : "")});
  node.Add({"hooks", Joined(r.hooks(), ", ")});
  for (const std::string& choice : r.collector_choices()) node.Add({"choice", choice});
  const int64_t uptime_s = r.uptime_ns() / 1'000'000'000;
  node.Add({"record", "since the agent started, " + FormatDuration(uptime_s * 1'000'000'000) + " ago"});
  node.Print(out);
  for (const v1::ControllerReport& c : r.controllers()) {
    out << "\ncontroller " << c.controller() << " (" << ShortName(c.source()) << ", "
        << (c.transport().empty() ? "-" : c.transport()) << ")\n";
    Table t({"  mode", ShortName(c.mode())});
    t.Add({"  lever", (c.lever().empty() ? "none" : c.lever()) + " (" + c.lever_risk() + ")"});
    std::string eligible;
    for (uint32_t q : c.eligible_queues()) eligible += (eligible.empty() ? "q" : " q") + std::to_string(q);
    t.Add({"  eligible", eligible.empty() ? "none" : eligible});
    for (const std::string& why : c.ineligible_queues()) t.Add({"  not eligible", why});
    t.Add({"  record", RecordText(c)});
    t.Add({"  speedup", c.kept_windows() > 0 ? Ratio(c.speedup()) + " (last kept window of the best queue), +" +
                                                  std::to_string(std::llround(c.completions_gained())) + " completions"
                                            : "-"});
    t.Add({"  cpu", CpuText(c)});
    t.Add({"  verdict", c.verdict()});
    t.Print(out);
  }
}

int RunReport(const Args& args, const AgentClient& client, std::ostream& out) {
  if (args.positional.size() != 1) return UsageError("report: takes no arguments");
  auto stub = v1::AgentService::NewStub(client.channel());
  v1::GetStatusResponse status;
  if (const grpc::Status s = stub->GetStatus(client.NewContext().get(), {}, &status); !s.ok()) return ServerError(s);
  v1::ListQueuesResponse queues;
  if (const grpc::Status s = stub->ListQueues(client.NewContext().get(), {}, &queues); !s.ok()) return ServerError(s);
  const v1::Report report = BuildReport(status, queues);
  if (!PrintedAsData(args, report, out)) PrintReport(report, out);
  return 0;
}

}  // namespace nvmeadapt::ctl
