#include "agent/engine/trace_words.h"

namespace nvmeadapt::engine {

std::vector<std::string_view> TraceWords(std::string_view line) {
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

Error BadTraceLine(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

Result<ReapMode> TraceReapMode(std::string_view text) {
  if (auto mode = ParseReapMode(text)) return *mode;
  return BadTraceLine("unknown reaping mode '" + std::string(text) + "' (interrupt, poll)");
}

Result<TraceKeyValues> ApplyPolicyWords(std::span<const std::string_view> words, Policy& policy) {
  TraceKeyValues rest;
  for (std::string_view word : words) {
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) return BadTraceLine("expected key=value, got '" + std::string(word) + "'");
    std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    auto u32 = [&](uint32_t& field) -> Status {
      auto n = TraceNumber<uint32_t>(value, key);
      if (!n) return n.error();
      field = *n;
      return OkStatus();
    };
    auto ns = [&](Nanos& field) -> Status {
      auto n = TraceNumber<Nanos>(value, key);
      if (!n) return n.error();
      field = *n;
      return OkStatus();
    };
    auto flag = [&](bool& field) -> Status {
      if (value != "0" && value != "1") {
        return BadTraceLine(std::string(key) + ": expected 0 or 1, got '" + std::string(value) + "'");
      }
      field = value == "1";
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
    else if (key == "batch") status = flag(policy.batch_pace_allowance);
    else if (key == "stall_backoff") status = flag(policy.stall_backoff);
    else if (key == "mode") {
      auto mode = ParseControllerMode(value);
      if (!mode) return BadTraceLine("unknown controller mode '" + std::string(value) + "'");
      policy.mode = *mode;
    } else {
      rest.emplace_back(key, value);
    }
    if (!status) return status.error();
  }
  return rest;
}

}  // namespace nvmeadapt::engine
