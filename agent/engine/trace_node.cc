#include "agent/engine/trace_node.h"

#include <charconv>
#include <sstream>

#include "agent/engine/trace_words.h"

namespace nvmeadapt::engine {
namespace {

struct ShareKey {
  std::string_view key;
  double NodeSettings::*member;
};
constexpr ShareKey kShareKeys[] = {
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

struct TimeKey {
  std::string_view key;
  Nanos NodeSettings::*member;
};
constexpr TimeKey kTimeKeys[] = {
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

Result<std::pair<std::string_view, std::string_view>> KeyValue(std::string_view word) {
  const size_t eq = word.find('=');
  if (eq == std::string_view::npos) return BadTraceLine("expected key=value, got '" + std::string(word) + "'");
  return std::pair{word.substr(0, eq), word.substr(eq + 1)};
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
  for (const ShareKey& key : kShareKeys) out << ' ' << key.key << '=' << Exact(s.*key.member);
  for (const TimeKey& key : kTimeKeys) out << ' ' << key.key << '=' << s.*key.member;
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
  for (std::string_view word : words) {
    NA_ASSIGN_OR_RETURN(auto kv, KeyValue(word));
    const auto [key, value] = kv;
    if (key == "enabled") {
      s.enabled = value == "1";
      continue;
    }
    bool known = false;
    for (const ShareKey& share : kShareKeys) {
      if (share.key != key) continue;
      NA_ASSIGN_OR_RETURN(s.*share.member, ExactNumber(value, key));
      known = true;
    }
    for (const TimeKey& time : kTimeKeys) {
      if (time.key != key) continue;
      NA_ASSIGN_OR_RETURN(s.*time.member, TraceNumber<Nanos>(value, key));
      known = true;
    }
    if (!known) return BadTraceLine("node: unknown key '" + std::string(key) + "'");
  }
  NA_RETURN_IF_ERROR(ValidateNodeSettings(s, "node: "));
  return s;
}

Result<NodeQueue> ParseNodeQueueWords(std::span<const std::string_view> words) {
  NodeQueue q;
  for (std::string_view word : words) {
    NA_ASSIGN_OR_RETURN(auto kv, KeyValue(word));
    const auto [key, value] = kv;
    if (key == "decided") {
      q.decided = value == "1";
    } else if (key == "cpu") {
      NA_ASSIGN_OR_RETURN(q.cpu, TraceNumber<uint32_t>(value, key));
    } else if (key == "gain") {
      NA_ASSIGN_OR_RETURN(q.gain_per_cpu_second, ExactNumber(value, key));
    } else if (key == "cost") {
      NA_ASSIGN_OR_RETURN(q.poll_cost_cores, ExactNumber(value, key));
    } else if (key == "own") {
      NA_ASSIGN_OR_RETURN(q.own_busy, ExactNumber(value, key));
    } else {
      return BadTraceLine("nodequeue: unknown key '" + std::string(key) + "'");
    }
  }
  return q;
}

Result<NodeFacts> ParseFactsWords(Nanos now, std::span<const std::string_view> words) {
  NodeFacts facts;
  facts.at = now;
  for (std::string_view word : words) {
    NA_ASSIGN_OR_RETURN(auto kv, KeyValue(word));
    const auto [key, value] = kv;
    if (key == "busy") {
      NA_RETURN_IF_ERROR(ParseBusy(value, facts));
    } else if (key == "some") {
      NA_ASSIGN_OR_RETURN(facts.pressure_some_avg10, ExactNumber(value, key));
    } else if (key == "full") {
      NA_ASSIGN_OR_RETURN(facts.pressure_full_avg10, ExactNumber(value, key));
    } else {
      return BadTraceLine("facts: unknown key '" + std::string(key) + "'");
    }
  }
  return facts;
}

}  // namespace nvmeadapt::engine
