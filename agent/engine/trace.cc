#include "agent/engine/trace.h"

#include <charconv>
#include <span>
#include <sstream>

namespace nvmeadapt::engine {
namespace {

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

Error BadLine(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

template <class T>
Result<T> Number(std::string_view text, std::string_view what) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return BadLine(std::string(what) + ": not a number: '" + std::string(text) + "'");
  }
  return value;
}

Result<ReapMode> Mode(std::string_view text) {
  if (auto mode = ParseReapMode(text)) return *mode;
  return BadLine("unknown reaping mode '" + std::string(text) + "' (interrupt, poll)");
}

// Applies key=value policy words to `policy`; other keys are returned to the caller untouched.
Result<std::vector<std::pair<std::string_view, std::string_view>>> ApplyPolicyWords(
    std::span<const std::string_view> words, Policy& policy) {
  std::vector<std::pair<std::string_view, std::string_view>> rest;
  for (std::string_view word : words) {
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) return BadLine("expected key=value, got '" + std::string(word) + "'");
    std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    auto u32 = [&](uint32_t& field) -> Status {
      auto n = Number<uint32_t>(value, key);
      if (!n) return n.error();
      field = *n;
      return OkStatus();
    };
    auto ns = [&](Nanos& field) -> Status {
      auto n = Number<Nanos>(value, key);
      if (!n) return n.error();
      field = *n;
      return OkStatus();
    };
    Status status;
    if (key == "window") status = u32(policy.window_completions);
    else if (key == "threshold") status = ns(policy.poll_threshold);
    else if (key == "slack") status = ns(policy.pace_slack);
    else if (key == "failures") status = u32(policy.max_failures);
    else if (key == "backoff") status = u32(policy.backoff_windows);
    else if (key == "max_poll") status = u32(policy.max_poll_windows);
    else if (key == "timer") status = ns(policy.timer_granularity);
    else if (key == "settle") status = u32(policy.settle_windows);
    else if (key == "credit") status = ns(policy.pace_credit);
    else if (key == "backoff_max") status = u32(policy.max_backoff_windows);
    else if (key == "load_change") status = u32(policy.backoff_load_change_percent);
    else if (key == "poll_run_max") status = u32(policy.max_poll_run_windows);
    else if (key == "batch") {
      if (value != "0" && value != "1") return BadLine("batch: expected 0 or 1, got '" + std::string(value) + "'");
      policy.batch_pace_allowance = value == "1";
    } else if (key == "mode") {
      auto mode = ParseControllerMode(value);
      if (!mode) return BadLine("unknown controller mode '" + std::string(value) + "'");
      policy.mode = *mode;
    } else {
      rest.emplace_back(key, value);
    }
    if (!status) return status.error();
  }
  return rest;
}

}  // namespace

std::string FormatPolicy(const Policy& p) {
  std::ostringstream out;
  out << "window=" << p.window_completions << " threshold=" << p.poll_threshold << " slack=" << p.pace_slack
      << " failures=" << p.max_failures << " backoff=" << p.backoff_windows << " max_poll=" << p.max_poll_windows
      << " timer=" << p.timer_granularity << " batch=" << (p.batch_pace_allowance ? 1 : 0)
      << " settle=" << p.settle_windows << " credit=" << p.pace_credit << " backoff_max=" << p.max_backoff_windows
      << " load_change=" << p.backoff_load_change_percent << " poll_run_max=" << p.max_poll_run_windows
      << " mode=" << ControllerModeName(p.mode);
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
  return out.str();
}

std::optional<QueueHandle> TraceReplayer::Handle(std::string_view name) const {
  auto it = handles_.find(std::string(name));
  if (it == handles_.end()) return std::nullopt;
  return it->second;
}

Result<QueueHandle> TraceReplayer::Lookup(std::string_view name) const {
  if (auto handle = Handle(name)) return *handle;
  return BadLine("unknown queue '" + std::string(name) + "'");
}

void TraceReplayer::Emit(std::string_view name, const std::optional<Decision>& decision) {
  if (decision) decisions_.push_back(FormatDecision(name, *decision));
}

Status TraceReplayer::Apply(std::string_view line) {
  if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  const std::vector<std::string_view> w = Words(line);
  if (w.empty()) return OkStatus();
  const std::string_view verb = w[0];
  auto need = [&](size_t n, const char* usage) -> Status {
    if (w.size() < n) return BadLine(std::string(verb) + ": expected '" + usage + "'");
    return OkStatus();
  };
#define NA_TRY(expr)            \
  do {                          \
    auto na_status_ = (expr);   \
    if (!na_status_) return na_status_.error(); \
  } while (0)

  if (verb == "queue") {
    NA_TRY(need(2, "queue NAME [eligible=0|1] [reap=MODE] [safe=MODE] [POLICY...]"));
    if (handles_.count(std::string(w[1]))) return BadLine("queue '" + std::string(w[1]) + "' exists");
    QueueSetup setup;
    // A trace without settle=, credit=, backoff_max=, load_change= or poll_run_max= was recorded by an
    // engine that had none of them (the patch's rules there): replay it the way it ran.
    setup.policy.settle_windows = 0;
    setup.policy.pace_credit = 0;
    setup.policy.max_backoff_windows = 0;
    setup.policy.backoff_load_change_percent = 0;
    setup.policy.max_poll_run_windows = 0;
    auto rest = ApplyPolicyWords(std::span(w).subspan(2), setup.policy);
    if (!rest) return rest.error();
    for (auto [key, value] : *rest) {
      if (key == "eligible") {
        setup.eligible = value == "1";
      } else if (key == "reap" || key == "safe") {
        auto mode = Mode(value);
        if (!mode) return mode.error();
        (key == "reap" ? setup.current : setup.safe) = *mode;
      } else {
        return BadLine("queue: unknown key '" + std::string(key) + "'");
      }
    }
    NA_TRY(ValidatePolicy(setup.policy, ""));
    AddedQueue added = engine_.AddQueue(setup, 0);
    handles_.emplace(std::string(w[1]), added.handle);
    Emit(w[1], added.decision);
    return OkStatus();
  }
  if (verb == "remove") {
    NA_TRY(need(2, "remove NAME"));
    auto handle = Lookup(w[1]);
    if (!handle) return handle.error();
    engine_.RemoveQueue(*handle);
    handles_.erase(std::string(w[1]));
    return OkStatus();
  }
  if (verb == "switch") return OkStatus();  // the agent's switch timeline: a record for people, no engine input
  auto handle = w.size() >= 2 ? Lookup(w[1]) : Result<QueueHandle>(BadLine(std::string(verb) + ": no queue"));
  if (!handle) return handle.error();
  if (verb == "window") {
    NA_TRY(need(6, "window NAME MODE COMPLETIONS START END [miss=K:ELAPSED]"));
    WindowRecord r;
    r.queue = *handle;
    auto mode = Mode(w[2]);
    auto completions = Number<uint32_t>(w[3], "completions");
    auto start = Number<Nanos>(w[4], "start");
    auto end = Number<Nanos>(w[5], "end");
    if (!mode) return mode.error();
    if (!completions) return completions.error();
    if (!start) return start.error();
    if (!end) return end.error();
    r.mode = *mode;
    r.completions = *completions;
    r.start = *start;
    r.end = *end;
    if (w.size() > 6) {
      std::string_view miss = w[6];
      const size_t colon = miss.find(':');
      if (!miss.starts_with("miss=") || colon == std::string_view::npos) {
        return BadLine("window: expected miss=K:ELAPSED[:N], got '" + std::string(miss) + "'");
      }
      const size_t colon2 = miss.find(':', colon + 1);
      auto k = Number<uint32_t>(miss.substr(5, colon - 5), "miss k");
      auto elapsed = Number<Nanos>(miss.substr(colon + 1, colon2 == std::string_view::npos ? std::string_view::npos
                                                                                        : colon2 - colon - 1),
                                   "miss elapsed");
      auto batch = colon2 == std::string_view::npos ? Result<uint32_t>(1u)
                                                    : Number<uint32_t>(miss.substr(colon2 + 1), "miss n");
      if (!k) return k.error();
      if (!elapsed) return elapsed.error();
      if (!batch) return batch.error();
      if (*batch == 0) return BadLine("window: miss n must be >= 1");
      r.pace_miss = PaceMiss{*k, *elapsed, *batch};
    }
    Emit(w[1], engine_.OnWindow(r));
    return OkStatus();
  }
  if (verb == "timer") {
    NA_TRY(need(5, "timer NAME NOW START COMPLETIONS [LAST]"));
    auto now = Number<Nanos>(w[2], "now");
    auto start = Number<Nanos>(w[3], "start");
    auto completions = Number<uint32_t>(w[4], "completions");
    auto last = w.size() > 5 ? Number<Nanos>(w[5], "last") : Result<Nanos>(Nanos{0});
    if (!now) return now.error();
    if (!start) return start.error();
    if (!completions) return completions.error();
    if (!last) return last.error();
    Emit(w[1], engine_.OnTimer(*handle, *now, WindowProgress{*start, *completions, *last}));
    return OkStatus();
  }
  auto now = w.size() >= 3 ? Number<Nanos>(w[2], "now") : Result<Nanos>(BadLine(std::string(verb) + ": no time"));
  if (!now) return now.error();
  if (verb == "policy") {
    Policy policy = engine_.View(*handle).policy;
    auto rest = ApplyPolicyWords(std::span(w).subspan(3), policy);
    if (!rest) return rest.error();
    if (!rest->empty()) return BadLine("policy: unknown key '" + std::string(rest->front().first) + "'");
    NA_TRY(ValidatePolicy(policy, ""));
    Emit(w[1], engine_.SetPolicy(*handle, policy, *now));
    return OkStatus();
  }
  if (verb == "override") {
    NA_TRY(need(4, "override NAME NOW MODE|none [expires=NS]"));
    std::optional<Override> o;
    if (w[3] != "none") {
      auto mode = Mode(w[3]);
      if (!mode) return mode.error();
      o = Override{*mode, 0};
      if (w.size() > 4) {
        if (!w[4].starts_with("expires=")) return BadLine("override: expected expires=NS");
        auto expires = Number<Nanos>(w[4].substr(8), "expires");
        if (!expires) return expires.error();
        o->expires_at = *expires;
      }
    }
    Emit(w[1], engine_.SetOverride(*handle, o, *now));
    return OkStatus();
  }
  if (verb == "lever") {
    NA_TRY(need(4, "lever NAME NOW MODE"));
    auto mode = Mode(w[3]);
    if (!mode) return mode.error();
    Emit(w[1], engine_.OnLeverResult(*handle, *mode, *now));
    return OkStatus();
  }
#undef NA_TRY
  return BadLine("unknown verb '" + std::string(verb) + "'");
}

Result<std::vector<std::string>> ReplayTrace(std::string_view text) {
  TraceReplayer replayer;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (Status status = replayer.Apply(line); !status) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "line " + std::to_string(line_number) + ": " + status.error().message);
    }
  }
  return replayer.decisions();
}

}  // namespace nvmeadapt::engine
