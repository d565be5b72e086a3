// SPDX-License-Identifier: Apache-2.0
#include "agent/metrics/label_values.h"

#include <array>

namespace nvmeadapt::metrics {

std::string_view PollTryResultName(PollTryResult result) {
  switch (result) {
    case PollTryResult::kSuccess: return "success";
    case PollTryResult::kBehindPace: return "behind_pace";
    case PollTryResult::kNotFaster: return "not_faster";
    case PollTryResult::kStalled: return "stalled";
  }
  return "success";
}

std::optional<PollTryResult> PollTryResultOf(const engine::Decision& decision) {
  switch (decision.reason) {
    case engine::Reason::kPollWindowFaster: return PollTryResult::kSuccess;
    case engine::Reason::kBehindPace: return PollTryResult::kBehindPace;
    case engine::Reason::kNotFaster: return PollTryResult::kNotFaster;
    case engine::Reason::kStalled: return PollTryResult::kStalled;
    default: return std::nullopt;
  }
}

std::string SanitizeLabelValue(std::string_view value) {
  if (value.empty()) return "none";
  std::string out(value.substr(0, kMaxLabelValueLength));
  for (char& c : out) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                         c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
    if (!allowed) c = '_';
  }
  return out;
}

std::string BoundedLabelValues::Admit(std::string_view value) {
  std::string clean = SanitizeLabelValue(value);
  if (admitted_.contains(clean)) return clean;
  if (admitted_.size() >= max_values_) return std::string(kOtherLabelValue);
  admitted_.insert(clean);
  return clean;
}

}  // namespace nvmeadapt::metrics
