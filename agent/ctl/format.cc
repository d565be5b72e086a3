// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <sstream>

#include "agent/config/policy_layers.h"
#include "agent/ctl/payoff_text.h"
#include "agent/ctl/policy_flags.h"
#include "agent/ctl/values.h"

namespace nvmeadapt::ctl {
namespace {

std::string UnixTime(int64_t unix_ns) {
  if (unix_ns <= 0) return "-";
  const time_t seconds = static_cast<time_t>(unix_ns / 1'000'000'000);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const size_t n = strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(unix_ns / 1'000'000 % 1000));
  return text;
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string OverrideText(const v1::QueueInfo& q) {
  if (!q.has_override() || q.override().mode() == v1::REAP_MODE_UNSPECIFIED) return "-";
  std::string text = ShortName(q.override().mode());
  if (q.override().expires_unix_ns() > 0) text += " until " + UnixTime(q.override().expires_unix_ns());
  return text;
}

std::string NoteText(const v1::QueueInfo& q) {
  if (!q.eligible()) return "not eligible: " + q.ineligible_reason();
  if (q.degraded()) return "degraded: " + q.degraded_reason();
  if (!q.last_decision().reason().empty()) return "last: " + q.last_decision().reason();
  return "";
}

template <class Getter>
std::string Field(bool has, Getter get) {
  return has ? get() : "-";
}

std::vector<std::string> PolicyRow(const std::string& level, const v1::Policy& p) {
  std::vector<std::string> row = {level,
                                  Field(p.has_mode(), [&] { return ShortName(p.mode()); })};
  for (const PolicyFlag& flag : PolicyFlags()) row.push_back(PolicyFlagText(flag, p));
  return row;
}

}  // namespace

std::string PolicyOriginText(const v1::PolicyOrigin& origin) {
  std::string text;
  if (origin.source() == v1::POLICY_SOURCE_API) {
    text = "set over the API";
    if (!origin.set_by().empty()) text += " by " + origin.set_by();
    if (origin.set_unix_ns() > 0) text += " at " + UnixTime(origin.set_unix_ns());
    text += origin.file_authoritative() ? ", until the next reload (the config file is authoritative)"
                                        : ", overriding the config file (nvme-adaptctl policy reset goes back to it)";
  } else {
    text = "the config file";
    if (origin.file_authoritative()) text += " (authoritative)";
  }
  if (!origin.hash().empty()) text += "; hash " + origin.hash();
  return text;
}

std::string PauseText(const v1::Pause& pause) {
  std::string text = "every queue held in " + ShortName(pause.mode()) + " mode";
  text += pause.ends_unix_ns() > 0 ? " until " + UnixTime(pause.ends_unix_ns()) : " until nvme-adaptctl resume";
  if (!pause.set_by().empty()) text += "; paused by " + pause.set_by();
  if (pause.set_unix_ns() > 0) text += " at " + UnixTime(pause.set_unix_ns());
  return text;
}

void Table::Print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
}

std::string ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

// "2 queue(s) decided ..., polling 1 core(s); deferred cpu_busy 14; ended -" (the reasons with a count only).
static std::string NodeLayerText(const v1::NodeStatus& node) {
  std::ostringstream text;
  text << node.decided_queues() << " queue(s) decided (policy node_layer), polling " << node.polling_cores()
       << " core(s)";
  if (node.budget_cores() > 0) text << " of a budget of " << node.budget_cores();
  for (const auto* counts : {&node.deferred_tries(), &node.ended_runs()}) {
    std::string list;
    for (const auto& row : std::map<std::string, uint64_t>(counts->begin(), counts->end())) {
      if (row.second > 0) list += (list.empty() ? "" : ", ") + row.first + " " + std::to_string(row.second);
    }
    text << (counts == &node.deferred_tries() ? "; deferred " : "; ended ") << (list.empty() ? "-" : list);
  }
  return text.str();
}

void PrintStatus(const v1::GetStatusResponse& s, std::ostream& out) {
  Table t({"version", s.version()});
  t.Add({"node", OrDash(s.node())});
  t.Add({"uptime", FormatDuration(s.uptime_ns() / 1'000'000'000 * 1'000'000'000)});
  t.Add({"collector", OrDash(s.collector()) + (s.observe_only() ? " (observe only)" : "")});
  t.Add({"queues", std::to_string(s.queues()) + " (managed " + std::to_string(s.queues_managed()) + ", polling " +
                       std::to_string(s.queues_polling()) + ")"});
  t.Add({"ring buffer drops", std::to_string(s.ringbuf_drops())});
  if (s.has_policy_origin()) t.Add({"policy", PolicyOriginText(s.policy_origin())});
  t.Add({"paused", s.has_pause() ? PauseText(s.pause()) : "no"});
  if (s.has_node_layer()) t.Add({"node layer", NodeLayerText(s.node_layer())});
  std::string hooks;
  for (const auto& hook : s.hooks()) hooks += (hooks.empty() ? "" : ", ") + hook;
  t.Add({"hooks", OrDash(hooks)});
  for (const auto& lever : s.levers()) {
    std::string text = lever.name() + (lever.available() ? " (available" : " (unavailable") + ", " +
                       std::to_string(lever.errors()) + " errors)";
    if (!lever.last_error().empty()) text += " last error: " + lever.last_error();
    t.Add({"lever", text});
  }
  if (s.degraded().empty()) t.Add({"degraded", "-"});
  for (const auto& line : s.degraded()) t.Add({"degraded", line});
  t.Print(out);
}

void PrintQueues(const v1::ListQueuesResponse& response, std::ostream& out, bool wide) {
  std::vector<std::string> headings = {"QUEUE", "SOURCE", "TRANSPORT", "LAYER", "MODE", "STATE", "POLICY",
                                       "OVERRIDE", "SWITCHES", "COMPLETIONS", "PAYOFF"};
  if (wide) headings.insert(headings.end(), {"ID", "LEVER", "CPUS", "IRQ", "WINDOWS", "FAILURES"});
  headings.emplace_back("NOTE");
  Table t(headings);
  for (const auto& q : response.queues()) {
    std::vector<std::string> row = {QueueName(q.id()), ShortName(q.source()), OrDash(q.transport()),
                                    OrDash(q.layer()), ShortName(q.mode()), ShortName(q.state()),
                                    ShortName(q.controller_mode()), OverrideText(q),
                                    std::to_string(q.mode_switches()), std::to_string(q.completions()),
                                    PayoffText(q.payoff())};
    if (wide) {
      std::string cpus;
      for (uint32_t cpu : q.cpus()) cpus += (cpus.empty() ? "" : ",") + std::to_string(cpu);
      row.insert(row.end(), {OrDash(q.controller_id()), OrDash(q.lever()), OrDash(cpus), q.irq() < 0 ? "-" : std::to_string(q.irq()),
                             std::to_string(q.windows()), std::to_string(q.failures())});
    }
    row.push_back(NoteText(q));
    t.Add(std::move(row));
  }
  t.Print(out);
}

void PrintPolicySet(const v1::PolicySet& policy, const v1::Policy* effective_global, std::ostream& out) {
  std::vector<std::string> headings = {"LEVEL", "MODE"};
  for (const PolicyFlag& flag : PolicyFlags()) headings.emplace_back(flag.column);
  Table t(headings);
  if (effective_global) t.Add(PolicyRow("effective global", *effective_global));
  t.Add(PolicyRow("global", policy.policy()));
  for (const auto& c : policy.controllers()) t.Add(PolicyRow("controller " + c.controller(), c.policy()));
  for (const auto& q : policy.queues()) {
    v1::QueueId id;
    id.set_controller(q.controller());
    id.set_queue(q.queue());
    t.Add(PolicyRow("queue " + QueueName(id), q.policy()));
  }
  for (const auto& s : policy.selectors()) t.Add(PolicyRow("selector " + s.name(), s.policy()));
  t.Print(out);
  if (policy.selectors_size() == 0) return;
  out << "\n";
  Table selectors({"SELECTOR", "MATCH"});
  for (const auto& s : policy.selectors()) selectors.Add({s.name(), config::SelectorText(s.match())});
  selectors.Print(out);
}

void PrintPolicyExplain(const v1::ExplainPolicyResponse& explained, std::ostream& out) {
  out << "queue " << QueueName(explained.queue()) << " (controller ID " << explained.controller_id() << ")\n";
  Table t({"FIELD", "VALUE", "ENTRY", "SOURCE"});
  for (const v1::PolicyFieldOrigin& f : explained.fields()) {
    std::string value = f.value().has_mode() ? ShortName(f.value().mode()) : "-";
    for (const PolicyFlag& flag : PolicyFlags()) {
      if (flag.field != nullptr && flag.field->name == f.field()) value = PolicyFlagText(flag, f.value());
    }
    const std::string source = f.source() == v1::POLICY_SOURCE_API           ? "api"
                               : f.source() == v1::POLICY_SOURCE_CONFIG_FILE ? "config file"
                                                                             : "default";
    t.Add({f.field(), value, f.entry(), source});
  }
  t.Print(out);
}

void PrintQueue(const v1::QueueInfo& q, std::ostream& out) {
  v1::ListQueuesResponse one;
  *one.add_queues() = q;
  PrintQueues(one, out);
}

std::string FormatEvent(const v1::Event& e) {
  std::string line = UnixTime(e.time_unix_ns()) + " #" + std::to_string(e.sequence()) + " " + ShortName(e.kind());
  if (e.has_queue()) line += " " + QueueName(e.queue());
  if (!e.message().empty()) {
    line += " " + e.message();
  } else if (e.has_decision()) {
    line += " " + e.decision().reason() + ": " + ShortName(e.decision().from()) + " -> " + ShortName(e.decision().to());
    if (const std::string judged = JudgedText(e.decision()); !judged.empty()) line += " (" + judged + ")";
  }
  if (e.missed() > 0) line += " (missed " + std::to_string(e.missed()) + " events before this one)";
  return line;
}

}  // namespace nvmeadapt::ctl
