#include "agent/ctl/policy_flags.h"

#include <algorithm>

#include "agent/ctl/values.h"

namespace nvmeadapt::ctl {
namespace {

using P = v1::Policy;

// In the order of `policy get`'s columns and of the help.
constexpr PolicyFlag kFlags[] = {
    {.option = "window-completions", .value = "N", .column = "WINDOW", .has = &P::has_window_completions,
     .count = &P::window_completions, .set_count = &P::set_window_completions},
    {.option = "poll-threshold", .value = "DURATION", .column = "THRESHOLD", .has = &P::has_poll_threshold_ns,
     .duration = &P::poll_threshold_ns, .set_duration = &P::set_poll_threshold_ns},
    {.option = "pace-slack", .value = "DURATION", .column = "SLACK", .has = &P::has_pace_slack_ns,
     .duration = &P::pace_slack_ns, .set_duration = &P::set_pace_slack_ns},
    {.option = "max-failures", .value = "N", .column = "MAX-FAILURES", .has = &P::has_max_failures,
     .count = &P::max_failures, .set_count = &P::set_max_failures},
    {.option = "backoff-windows", .value = "N", .column = "BACKOFF", .has = &P::has_backoff_windows,
     .count = &P::backoff_windows, .set_count = &P::set_backoff_windows},
    {.option = "max-poll-windows", .value = "N", .column = "MAX-POLL", .has = &P::has_max_poll_windows,
     .count = &P::max_poll_windows, .set_count = &P::set_max_poll_windows},
    {.option = "timer-granularity", .value = "DURATION", .column = "TIMER", .has = &P::has_timer_granularity_ns,
     .duration = &P::timer_granularity_ns, .set_duration = &P::set_timer_granularity_ns},
    {.option = "batch-pace-allowance", .value = "on|off", .column = "BATCH", .has = &P::has_batch_pace_allowance,
     .on_off = &P::batch_pace_allowance, .set_on_off = &P::set_batch_pace_allowance},
    {.option = "settle-windows", .value = "N", .column = "SETTLE", .has = &P::has_settle_windows,
     .count = &P::settle_windows, .set_count = &P::set_settle_windows},
    {.option = "pace-credit", .value = "DURATION", .column = "CREDIT", .has = &P::has_pace_credit_ns,
     .duration = &P::pace_credit_ns, .set_duration = &P::set_pace_credit_ns},
    {.option = "max-backoff-windows", .value = "N", .column = "MAX-BACKOFF", .has = &P::has_max_backoff_windows,
     .count = &P::max_backoff_windows, .set_count = &P::set_max_backoff_windows},
    {.option = "backoff-load-change", .value = "PERCENT", .column = "LOAD-CHANGE",
     .has = &P::has_backoff_load_change_percent, .count = &P::backoff_load_change_percent,
     .set_count = &P::set_backoff_load_change_percent},
    {.option = "max-poll-run-windows", .value = "N", .column = "MAX-POLL-RUN", .has = &P::has_max_poll_run_windows,
     .count = &P::max_poll_run_windows, .set_count = &P::set_max_poll_run_windows},
    {.option = "stall-backoff", .value = "on|off", .column = "STALL-BACKOFF", .has = &P::has_stall_backoff,
     .on_off = &P::stall_backoff, .set_on_off = &P::set_stall_backoff},
};

Error Usage(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

Status ApplyOne(const PolicyFlag& flag, const std::string& text, v1::Policy* policy) {
  const std::string option = "--" + std::string(flag.option);
  if (flag.set_count) {
    auto number = ParseUint32(text);
    if (!number) return Usage(option + ": " + number.error().message);
    (policy->*flag.set_count)(*number);
  } else if (flag.set_duration) {
    auto nanos = ParseDuration(text);
    if (!nanos) return Usage(option + ": " + nanos.error().message);
    (policy->*flag.set_duration)(*nanos);
  } else {
    if (text != "on" && text != "off") return Usage(option + ": expected on or off, got '" + text + "'");
    (policy->*flag.set_on_off)(text == "on");
  }
  return OkStatus();
}

}  // namespace

std::span<const PolicyFlag> PolicyFlags() { return kFlags; }

bool IsPolicyFlag(std::string_view option) {
  return std::any_of(std::begin(kFlags), std::end(kFlags), [&](const PolicyFlag& f) { return f.option == option; });
}

Status ApplyPolicyFlags(const Args& args, v1::Policy* policy) {
  for (const PolicyFlag& flag : kFlags) {
    if (const std::string* text = args.value(flag.option)) NA_RETURN_IF_ERROR(ApplyOne(flag, *text, policy));
  }
  return OkStatus();
}

std::string PolicyFlagText(const PolicyFlag& flag, const v1::Policy& policy) {
  if (!(policy.*flag.has)()) return "-";
  if (flag.count) return std::to_string((policy.*flag.count)()) + (flag.value == "PERCENT" ? "%" : "");
  if (flag.duration) return FormatDuration((policy.*flag.duration)());
  return (policy.*flag.on_off)() ? "on" : "off";
}

std::string PolicyFlagsHelp(std::string_view first, std::string_view indent) {
  constexpr size_t kWidth = 100;
  std::string out, line = std::string(indent) + std::string(first);
  for (const PolicyFlag& flag : kFlags) {
    const std::string item = "--" + std::string(flag.option) + " " + std::string(flag.value);
    if (line.size() + 3 + item.size() > kWidth) {
      out += line + "\n";
      line = std::string(indent) + item;
    } else {
      line += "   " + item;
    }
  }
  return out + line + "\n";
}

}  // namespace nvmeadapt::ctl
