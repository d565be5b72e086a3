// SPDX-License-Identifier: Apache-2.0
// The one table of Policy's fields: each field's names (API/JSON, trace, CLI), bounds and the kernel patch's
// value, with its member in Policy. Validation, the trace format, replay's defaults, the config/API
// conversion (agent/config/policy_convert.cc), the CLI's options (agent/ctl/policy_flags.cc) and the named
// profiles all walk it; a new field is a member in Policy (policy.h, with its default and why), a proto field
// (proto/nvmeadapt/v1/policy.proto) and one row here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "agent/engine/policy.h"

namespace nvmeadapt::engine {

// How a field's value is read and shown: a count (N), a count in percent, nanoseconds (a duration), on|off,
// or the controller mode (a word of kControllerModes).
enum class PolicyFieldKind : uint8_t { kCount, kPercent, kNanos, kFlag, kMode };

struct PolicyField {
  std::string_view name;       // the proto field's name, which is also its JSON and config name
  std::string_view trace_key;  // key=value in trace lines (agent/engine/trace.h)
  std::string_view option;     // nvme-adaptctl policy set --OPTION; empty: set by a command of its own
  std::string_view column;     // nvme-adaptctl policy get's heading
  PolicyFieldKind kind;
  int64_t min = 0, max = 0;  // inclusive; a flag's and the mode's are not checked here
  // The least value a policy level may set where it is above `min` (the engine accepts `min`, replay and the
  // simulator use it; the agent's levels stop here), and why.
  int64_t level_min = 0;
  std::string_view level_min_why;
  // Non-empty: the value is 0 (the feature off) or at least this other field's value, and at most `max`.
  std::string_view zero_or_at_least;
  int64_t patch = 0;  // the adaptive-polling patch's value (its cover letter's rules)
  // A trace line without this key was written before the key existed, by an engine that ran the patch's
  // value: replay runs that. Otherwise replay runs Policy{}'s default.
  bool absent_in_trace_is_patch = false;
  int64_t (*get)(const Policy&) = nullptr;
  void (*set)(Policy&, int64_t) = nullptr;
};

template <auto Member>
int64_t GetPolicyMember(const Policy& p) {
  return static_cast<int64_t>(p.*Member);
}

template <auto Member>
void SetPolicyMember(Policy& p, int64_t value) {
  p.*Member = static_cast<std::remove_cvref_t<decltype(p.*Member)>>(value);
}

// In the order of the trace's keys and of the CLI's columns.
std::span<const PolicyField> PolicyFields();
const PolicyField* FindPolicyField(std::string_view name);
const PolicyField* FindPolicyTraceKey(std::string_view key);

// "[1, 1048575]", "0 or [backoff_windows, 16777216]", "0|1" or the modes.
std::string PolicyFieldBounds(const PolicyField& field);

// A named set of rule values: every field but the mode, which says what to do with a queue, not how to judge
// it (a profile that sets_mode, such as `observe`, sets it too). Profiles grow here (a row of
// PolicyProfiles()); `default` is Policy{}, `patch` the patch column.
struct PolicyProfile {
  std::string_view name;
  std::string_view about;
  Policy policy;
  bool sets_mode = false;
};
inline constexpr std::string_view kDefaultProfile = "default";
inline constexpr std::string_view kPatchProfile = "patch";

std::span<const PolicyProfile> PolicyProfiles();
const PolicyProfile* FindPolicyProfile(std::string_view name);
// "default, patch": the names, for errors and help.
std::string PolicyProfileNames();
// Every field of `policy` set to the profile's value (the mode only where the profile sets_mode).
void ApplyPolicyProfile(const PolicyProfile& profile, Policy& policy);
// The patch's rules (each row's `patch`), mode off as in the patch.
Policy PatchPreset();

}  // namespace nvmeadapt::engine
