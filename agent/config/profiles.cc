#include "agent/config/profiles.h"

#include <vector>

#include "agent/config/policy_convert.h"

namespace nvmeadapt::config {
namespace {

// The rules of the kernel's adaptive-polling patch, written once: no batch allowance, no settling, no pace
// credit, no doubling of backoffs or polling runs, no early backoff of a stalled try (docs/architecture.md
// names each as "the patch's rule"); its numbers are the engine's defaults.
engine::Policy PatchRules() {
  engine::Policy p;
  p.batch_pace_allowance = false;
  p.settle_windows = 0;
  p.pace_credit = 0;
  p.max_backoff_windows = 0;
  p.backoff_load_change_percent = 0;
  p.max_poll_run_windows = 0;
  p.stall_backoff = false;
  return p;
}

engine::Policy Observe() {
  engine::Policy p;
  p.mode = engine::ControllerMode::kShadow;
  return p;
}

// Polls only queues clearly fast enough that polling pays, judged over longer windows: fewer tries, fewer
// switches, less CPU spent on polling that does not pay.
engine::Policy Throughput() {
  engine::Policy p;
  p.window_completions = 16384;
  p.poll_threshold = 5'000;
  p.max_failures = 2;
  p.backoff_windows = 128;
  return p;
}

// Tries polling sooner and forgives more before giving up on it: lower latency for loads that can spend
// the CPU.
engine::Policy Latency() {
  engine::Policy p;
  p.window_completions = 2048;
  p.poll_threshold = 20'000;
  p.pace_slack = 40'000;
  p.backoff_windows = 32;
  return p;
}

}  // namespace

std::span<const Profile> Profiles() {
  static const std::vector<Profile> profiles = {
      {"observe", "decide and report what would be done, change nothing (shadow mode): a rollout's first step",
       Observe(), true},
      {"patch", "the kernel adaptive-polling patch's rules exactly, to compare the agent with it", PatchRules()},
      {"throughput", "poll only queues clearly fast enough (5 us a completion), over 16384-completion windows: "
                     "fewer switches, less CPU",
       Throughput()},
      {"latency", "try polling up to 20 us a completion, over 2048-completion windows, forgiving 40 us of pace: "
                  "lower latency for loads that can spend CPU",
       Latency()},
  };
  return profiles;
}

Result<const Profile*> FindProfile(std::string_view name, std::string_view where) {
  std::string known;
  for (const Profile& profile : Profiles()) {
    if (profile.name == name) return &profile;
    known += (known.empty() ? "" : ", ") + std::string(profile.name);
  }
  return MakeError(ErrorCode::kInvalidArgument,
                   std::string(where) + ": unknown profile '" + std::string(name) + "' (" + known + ")");
}

v1::Policy ProfileLevel(const Profile& profile) {
  v1::Policy level = ToProto(profile.policy);
  if (!profile.sets_mode) level.clear_mode();
  return level;
}

Result<v1::Policy> ExpandProfile(const v1::Policy& level, std::string_view where) {
  if (!level.has_profile()) return level;
  auto profile = FindProfile(level.profile(), where);
  if (!profile) return profile.error();
  v1::Policy expanded = ProfileLevel(**profile);
  v1::Policy own = level;
  own.clear_profile();
  expanded.MergeFrom(own);
  return expanded;
}

}  // namespace nvmeadapt::config
