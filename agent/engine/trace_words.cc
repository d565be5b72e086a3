// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/trace_words.h"

#include <cstdint>

#include "agent/engine/policy_fields.h"

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
    const PolicyField* field = FindPolicyTraceKey(key);
    if (key == "profile") {  // every field but the mode from a named profile; later words lay over it
      const PolicyProfile* profile = FindPolicyProfile(value);
      if (profile == nullptr) {
        return BadTraceLine("unknown profile '" + std::string(value) + "' (" + PolicyProfileNames() + ")");
      }
      ApplyPolicyProfile(*profile, policy);
    } else if (field == nullptr) {
      rest.emplace_back(key, value);
    } else if (field->kind == PolicyFieldKind::kMode) {
      auto mode = ParseControllerMode(value);
      if (!mode) return BadTraceLine("unknown controller mode '" + std::string(value) + "'");
      policy.mode = *mode;
    } else if (field->kind == PolicyFieldKind::kFlag) {
      if (value != "0" && value != "1") {
        return BadTraceLine(std::string(key) + ": expected 0 or 1, got '" + std::string(value) + "'");
      }
      field->set(policy, value == "1");
    } else {
      // Read as the widest kind, then refused outside the member's type: ValidatePolicy judges the rest.
      NA_ASSIGN_OR_RETURN(auto n, TraceNumber<int64_t>(value, key));
      if (field->kind != PolicyFieldKind::kNanos && (n < 0 || n > int64_t{UINT32_MAX})) {
        return BadTraceLine(std::string(key) + ": not a 32-bit count: '" + std::string(value) + "'");
      }
      field->set(policy, n);
    }
  }
  return rest;
}

Policy ReplayDefaultPolicy() {
  Policy policy;
  for (const PolicyField& field : PolicyFields()) {
    if (field.absent_in_trace_is_patch) field.set(policy, field.patch);
  }
  return policy;
}

}  // namespace nvmeadapt::engine
