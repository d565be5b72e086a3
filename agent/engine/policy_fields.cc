// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/policy_fields.h"

#include <algorithm>

namespace nvmeadapt::engine {
namespace {

using K = PolicyFieldKind;

// The longest backoff, polling run and failure count the engine accepts: 2^24 windows of a single completion
// already outlast any load (hours at 1 k IOPS); a larger value is a permanent backoff or a run never re-measured.
constexpr int64_t kMaxWindows = int64_t{1} << 24;
constexpr int64_t kSecond = 1'000'000'000;

#define NA_POLICY_MEMBER(member) .get = &GetPolicyMember<&Policy::member>, .set = &SetPolicyMember<&Policy::member>

// The bounds of every field, stated once: the proto's comments and the docs point here.
constexpr PolicyField kFields[] = {
    {.name = "window_completions", .trace_key = "window", .option = "window-completions", .column = "WINDOW",
     .kind = K::kCount, .min = 1, .max = kMaxWindowCompletions, .level_min = 16,
     .level_min_why = "smaller windows flood the ring buffer", .patch = 8192, NA_POLICY_MEMBER(window_completions)},
    {.name = "poll_threshold_ns", .trace_key = "threshold", .option = "poll-threshold", .column = "THRESHOLD",
     .kind = K::kNanos, .min = 1, .max = kSecond, .patch = 10'000, NA_POLICY_MEMBER(poll_threshold)},
    {.name = "pace_slack_ns", .trace_key = "slack", .option = "pace-slack", .column = "SLACK", .kind = K::kNanos,
     .min = 0, .max = 10 * kSecond, .patch = 20'000, NA_POLICY_MEMBER(pace_slack)},
    {.name = "max_failures", .trace_key = "failures", .option = "max-failures", .column = "MAX-FAILURES",
     .kind = K::kCount, .min = 1, .max = kMaxWindows, .patch = 3, NA_POLICY_MEMBER(max_failures)},
    {.name = "backoff_windows", .trace_key = "backoff", .option = "backoff-windows", .column = "BACKOFF",
     .kind = K::kCount, .min = 0, .max = kMaxWindows, .patch = 64, NA_POLICY_MEMBER(backoff_windows)},
    {.name = "max_poll_windows", .trace_key = "max_poll", .option = "max-poll-windows", .column = "MAX-POLL",
     .kind = K::kCount, .min = 1, .max = kMaxWindows, .patch = 64, NA_POLICY_MEMBER(max_poll_windows)},
    {.name = "timer_granularity_ns", .trace_key = "timer", .option = "timer-granularity", .column = "TIMER",
     .kind = K::kNanos, .min = kMinTimerGranularity, .max = kSecond, .patch = 1'000'000,
     NA_POLICY_MEMBER(timer_granularity)},
    {.name = "batch_pace_allowance", .trace_key = "batch", .option = "batch-pace-allowance", .column = "BATCH",
     .kind = K::kFlag, .min = 0, .max = 1, .patch = 0, NA_POLICY_MEMBER(batch_pace_allowance)},
    {.name = "settle_windows", .trace_key = "settle", .option = "settle-windows", .column = "SETTLE",
     .kind = K::kCount, .min = 0, .max = 64, .patch = 0, .absent_in_trace_is_patch = true,
     NA_POLICY_MEMBER(settle_windows)},
    {.name = "pace_credit_ns", .trace_key = "credit", .option = "pace-credit", .column = "CREDIT", .kind = K::kNanos,
     .min = 0, .max = 10 * kSecond, .patch = 0, .absent_in_trace_is_patch = true, NA_POLICY_MEMBER(pace_credit)},
    {.name = "pace_slack_percent", .trace_key = "slack_pct", .option = "pace-slack-percent", .column = "SLACK%",
     .kind = K::kPercent, .min = 0, .max = 100, .patch = 0, .absent_in_trace_is_patch = true,
     NA_POLICY_MEMBER(pace_slack_percent)},
    {.name = "run_pair_verdict", .trace_key = "pair", .option = "run-pair-verdict", .column = "PAIR",
     .kind = K::kFlag, .min = 0, .max = 1, .patch = 0, .absent_in_trace_is_patch = true,
     NA_POLICY_MEMBER(run_pair_verdict)},
    {.name = "max_backoff_windows", .trace_key = "backoff_max", .option = "max-backoff-windows",
     .column = "MAX-BACKOFF", .kind = K::kCount, .min = 0, .max = kMaxWindows,
     .zero_or_at_least = "backoff_windows", .patch = 0, .absent_in_trace_is_patch = true,
     NA_POLICY_MEMBER(max_backoff_windows)},
    {.name = "backoff_load_change_percent", .trace_key = "load_change", .option = "backoff-load-change",
     .column = "LOAD-CHANGE", .kind = K::kPercent, .min = 0, .max = 1000, .patch = 0,
     .absent_in_trace_is_patch = true, NA_POLICY_MEMBER(backoff_load_change_percent)},
    {.name = "max_poll_run_windows", .trace_key = "poll_run_max", .option = "max-poll-run-windows",
     .column = "MAX-POLL-RUN", .kind = K::kCount, .min = 0, .max = kMaxWindows,
     .zero_or_at_least = "max_poll_windows", .patch = 0, .absent_in_trace_is_patch = true,
     NA_POLICY_MEMBER(max_poll_run_windows)},
    {.name = "stall_backoff", .trace_key = "stall_backoff", .option = "stall-backoff", .column = "STALL-BACKOFF",
     .kind = K::kFlag, .min = 0, .max = 1, .patch = 0, .absent_in_trace_is_patch = true,
     NA_POLICY_MEMBER(stall_backoff)},
    {.name = "try_clock_first_completion", .trace_key = "try_clock_first", .option = "try-clock-first-completion",
     .column = "TRY-CLOCK-FIRST", .kind = K::kFlag, .min = 0, .max = 1, .patch = 0, .absent_in_trace_is_patch = true,
     NA_POLICY_MEMBER(try_clock_first_completion)},
    {.name = "node_layer", .trace_key = "node", .option = "node-layer", .column = "NODE", .kind = K::kFlag, .min = 0,
     .max = 1, .patch = 0, .absent_in_trace_is_patch = true, NA_POLICY_MEMBER(node_layer)},
    {.name = "mode", .trace_key = "mode", .option = "", .column = "MODE", .kind = K::kMode,
     .patch = static_cast<int64_t>(ControllerMode::kOff), NA_POLICY_MEMBER(mode)},
};

#undef NA_POLICY_MEMBER

Policy MakePatchPreset() {
  Policy p;
  for (const PolicyField& field : kFields) field.set(p, field.patch);
  return p;
}

Policy MakeObserve() {
  Policy p;
  p.mode = ControllerMode::kShadow;
  return p;
}

// Polls only queues clearly fast enough that polling pays, judged over longer windows: fewer tries, fewer
// switches, less CPU spent on polling that does not pay.
Policy MakeThroughput() {
  Policy p;
  p.window_completions = 16384;
  p.poll_threshold = 5'000;
  p.max_failures = 2;
  p.backoff_windows = 128;
  return p;
}

// Polls wherever polling completes faster, down to QD1 (a completion every 100 us: a slow flash read at
// QD1 qualifies), and forgives more before giving up on it; the node layer keeps that within the node's
// CPU budget (node.budget_cores / budget_share) and its headroom and pressure rules. At a fixed number of
// commands in flight a faster completion rate is a lower mean latency (Little's law), so the engine's
// verdict (the polling window strictly faster than its interrupt baseline) is the latency objective too.
Policy MakeLatency() {
  Policy p;
  p.window_completions = 2048;
  p.poll_threshold = 100'000;
  p.pace_slack = 40'000;
  p.backoff_windows = 32;
  p.node_layer = true;
  return p;
}

const PolicyProfile kProfiles[] = {
    {kDefaultProfile, "nvme-adapt's own rules (each field's default)", Policy{}},
    {kPatchProfile, "the adaptive-polling kernel patch's rules, exactly, to compare the agent with it",
     MakePatchPreset()},
    {"observe", "decide and report what would be done, change nothing (shadow mode): a rollout's first step",
     MakeObserve(), true},
    {"throughput",
     "poll only queues clearly fast enough (5 us a completion), over 16384-completion windows: fewer switches, "
     "less CPU",
     MakeThroughput()},
    {"latency",
     "poll wherever it completes faster, up to 100 us a completion (QD1 included), over 2048-completion windows, "
     "forgiving 40 us of pace, with the node layer on: lower latency within the node's CPU budget",
     MakeLatency()},
};

Error Bad(std::string_view prefix, const PolicyField& field, int64_t got) {
  return MakeError(ErrorCode::kInvalidArgument, std::string(prefix) + std::string(field.name) + ": must be " +
                                                    (field.kind == K::kMode ? std::string("a known controller mode")
                                                                            : "in " + PolicyFieldBounds(field)) +
                                                    " (got " + std::to_string(got) + ")");
}

}  // namespace

std::span<const PolicyField> PolicyFields() { return kFields; }

const PolicyField* FindPolicyField(std::string_view name) {
  auto it = std::find_if(std::begin(kFields), std::end(kFields), [&](const PolicyField& f) { return f.name == name; });
  return it == std::end(kFields) ? nullptr : &*it;
}

const PolicyField* FindPolicyTraceKey(std::string_view key) {
  auto it = std::find_if(std::begin(kFields), std::end(kFields),
                         [&](const PolicyField& f) { return f.trace_key == key; });
  return it == std::end(kFields) ? nullptr : &*it;
}

std::string PolicyFieldBounds(const PolicyField& field) {
  if (field.kind == K::kFlag) return "0|1";
  const std::string max = std::to_string(field.max);
  if (!field.zero_or_at_least.empty()) return "0 or [" + std::string(field.zero_or_at_least) + ", " + max + "]";
  return "[" + std::to_string(field.min) + ", " + max + "]";
}

Status ValidatePolicy(const Policy& p, std::string_view prefix) {
  for (const PolicyField& field : kFields) {
    const int64_t value = field.get(p);
    if (field.kind == K::kFlag) continue;
    if (field.kind == K::kMode) {
      if (!kControllerModes.Parse(ControllerModeName(p.mode))) return Bad(prefix, field, value);
      continue;
    }
    int64_t min = field.min;
    if (!field.zero_or_at_least.empty() && value != 0) min = FindPolicyField(field.zero_or_at_least)->get(p);
    if (value < min || value > field.max) return Bad(prefix, field, value);
  }
  return OkStatus();
}

std::span<const PolicyProfile> PolicyProfiles() { return kProfiles; }

const PolicyProfile* FindPolicyProfile(std::string_view name) {
  for (const PolicyProfile& profile : kProfiles) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

std::string PolicyProfileNames() {
  std::string names;
  for (const PolicyProfile& profile : kProfiles) names += (names.empty() ? "" : ", ") + std::string(profile.name);
  return names;
}

void ApplyPolicyProfile(const PolicyProfile& profile, Policy& policy) {
  for (const PolicyField& field : kFields) {
    if (field.kind != K::kMode || profile.sets_mode) field.set(policy, field.get(profile.policy));
  }
}

Policy PatchPreset() { return FindPolicyProfile(kPatchProfile)->policy; }

}  // namespace nvmeadapt::engine
