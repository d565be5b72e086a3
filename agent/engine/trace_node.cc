// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/trace_node.h"

#include <charconv>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "agent/engine/trace_words.h"

namespace nvmeadapt::engine {
namespace {

// A setting's trace key and its member.
template <class T>
struct SettingKey {
  std::string_view key;
  T NodeSettings::*member;
};
constexpr SettingKey<double> kShareKeys[] = {
    {"budget_cores", &NodeSettings::budget_cores},
    {"budget_share", &NodeSettings::budget_share},
    {"poll_cost", &NodeSettings::default_poll_cost_cores},
    {"min_headroom", &NodeSettings::min_headroom},
    {"stop_headroom", &NodeSettings::stop_headroom},
    {"some_limit", &NodeSettings::pressure_some_limit},
    {"idle_share", &NodeSettings::pressure_idle_share},
    {"some_rise", &NodeSettings::pressure_some_rise},
    {"full_rise", &NodeSettings::pressure_full_rise},
};

constexpr SettingKey<Nanos> kTimeKeys[] = {
    {"stagger_gap", &NodeSettings::stagger_gap},
    {"facts_max_age", &NodeSettings::facts_max_age},
};

// The shortest text that reads back to the same double.
std::string Exact(double value) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return ec == std::errc() ? std::string(text, end) : "nan";
}

Result<double> ExactNumber(std::string_view text, std::string_view what) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return BadTraceLine(std::string(what) + ": not a number: '" + std::string(text) + "'");
  }
  return value;
}

// Hands each key=value word to `apply`, which says whether it knew the key; the error names `verb`.
template <class Apply>
Status ForEachKey(std::span<const std::string_view> words, std::string_view verb, Apply apply) {
  for (std::string_view word : words) {
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) return BadTraceLine("expected key=value, got '" + std::string(word) + "'");
    const std::string_view key = word.substr(0, eq);
    NA_ASSIGN_OR_RETURN(const bool known, apply(key, word.substr(eq + 1)));
    if (!known) return BadTraceLine(std::string(verb) + ": unknown key '" + std::string(key) + "'");
  }
  return OkStatus();
}

// Sets the one of `slots` that `key` names to `value`; false when none is named so.
Result<bool> SetExact(std::initializer_list<std::pair<std::string_view, std::optional<double>*>> slots,
                      std::string_view key, std::string_view value) {
  for (const auto& [name, slot] : slots) {
    if (name != key) continue;
    NA_ASSIGN_OR_RETURN(*slot, ExactNumber(value, key));
    return true;
  }
  return false;
}

// busy=X,X,-,...: one share per CPU, '-' where a CPU had no figure.
Status ParseBusy(std::string_view list, NodeFacts& facts) {
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (item == "-") {
      facts.cpu_busy.emplace_back();
    } else {
      NA_ASSIGN_OR_RETURN(double share, ExactNumber(item, "busy"));
      facts.cpu_busy.emplace_back(share);
    }
    if (comma == std::string_view::npos) return OkStatus();
    list = list.substr(comma + 1);
  }
}

}  // namespace

std::string FormatNodeLine(const NodeSettings& s) {
  std::ostringstream out;
  out << "node enabled=" << (s.enabled ? 1 : 0);
  for (const SettingKey<double>& key : kShareKeys) out << ' ' << key.key << '=' << Exact(s.*key.member);
  for (const SettingKey<Nanos>& key : kTimeKeys) out << ' ' << key.key << '=' << s.*key.member;
  return out.str();
}

std::string FormatNodeQueueLine(std::string_view name, const NodeQueue& q) {
  std::ostringstream out;
  out << "nodequeue " << name << " decided=" << (q.decided ? 1 : 0);
  if (q.cpu) out << " cpu=" << *q.cpu;
  if (q.gain_per_cpu_second) out << " gain=" << Exact(*q.gain_per_cpu_second);
  if (q.poll_cost_cores) out << " cost=" << Exact(*q.poll_cost_cores);
  if (q.own_busy) out << " own=" << Exact(*q.own_busy);
  return out.str();
}

std::string FormatFactsLine(const NodeFacts& facts) {
  std::ostringstream out;
  out << "facts " << facts.at;
  if (!facts.cpu_busy.empty()) {
    out << " busy=";
    for (size_t cpu = 0; cpu < facts.cpu_busy.size(); ++cpu) {
      if (cpu > 0) out << ',';
      out << (facts.cpu_busy[cpu] ? Exact(*facts.cpu_busy[cpu]) : "-");
    }
  }
  if (facts.pressure_some_avg10) out << " some=" << Exact(*facts.pressure_some_avg10);
  if (facts.pressure_full_avg10) out << " full=" << Exact(*facts.pressure_full_avg10);
  return out.str();
}

Result<NodeSettings> ParseNodeWords(std::span<const std::string_view> words) {
  NodeSettings s;
  NA_RETURN_IF_ERROR(ForEachKey(words, "node", [&](std::string_view key, std::string_view value) -> Result<bool> {
    if (key == "enabled") {
      s.enabled = value == "1";
      return true;
    }
    for (const SettingKey<double>& share : kShareKeys) {
      if (share.key != key) continue;
      NA_ASSIGN_OR_RETURN(s.*share.member, ExactNumber(value, key));
      return true;
    }
    for (const SettingKey<Nanos>& time : kTimeKeys) {
      if (time.key != key) continue;
      NA_ASSIGN_OR_RETURN(s.*time.member, TraceNumber<Nanos>(value, key));
      return true;
    }
    return false;
  }));
  NA_RETURN_IF_ERROR(ValidateNodeSettings(s, "node: "));
  return s;
}

Result<NodeQueue> ParseNodeQueueWords(std::span<const std::string_view> words) {
  NodeQueue q;
  NA_RETURN_IF_ERROR(ForEachKey(words, "nodequeue", [&](std::string_view key, std::string_view value) -> Result<bool> {
    if (key == "cpu") {
      NA_ASSIGN_OR_RETURN(q.cpu, TraceNumber<uint32_t>(value, key));
      return true;
    }
    if (key == "decided") {
      q.decided = value == "1";
      return true;
    }
    return SetExact({{"gain", &q.gain_per_cpu_second}, {"cost", &q.poll_cost_cores}, {"own", &q.own_busy}}, key, value);
  }));
  return q;
}

Result<NodeFacts> ParseFactsWords(Nanos now, std::span<const std::string_view> words) {
  NodeFacts facts;
  facts.at = now;
  NA_RETURN_IF_ERROR(ForEachKey(words, "facts", [&](std::string_view key, std::string_view value) -> Result<bool> {
    if (key != "busy") {
      return SetExact({{"some", &facts.pressure_some_avg10}, {"full", &facts.pressure_full_avg10}}, key, value);
    }
    NA_RETURN_IF_ERROR(ParseBusy(value, facts));
    return true;
  }));
  return facts;
}

}  // namespace nvmeadapt::engine
