// SPDX-License-Identifier: Apache-2.0
// Label values of nvme-adapt metrics stay bounded: enums map to fixed names, free-form values (lever names,
// gRPC methods, BPF program names) are admitted up to a per-label limit and fold into "other" beyond it, and
// every value is cut to a safe length and character set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/grpc_code_names.h"
#include "agent/engine/types.h"

namespace nvmeadapt::metrics {

inline constexpr std::string_view kOtherLabelValue = "other";
inline constexpr size_t kMaxLabelValueLength = 64;
// Distinct values kept per free-form label.
inline constexpr size_t kMaxLeverNames = 16;
inline constexpr size_t kMaxGrpcMethods = 32;
inline constexpr size_t kMaxBpfPrograms = 64;

// How a polling try (one polling window, or the pace check inside it) ended.
enum class PollTryResult : uint8_t { kSuccess, kBehindPace, kNotFaster, kStalled };
inline constexpr PollTryResult kAllPollTryResults[] = {PollTryResult::kSuccess, PollTryResult::kBehindPace,
                                                       PollTryResult::kNotFaster, PollTryResult::kStalled};

std::string_view PollTryResultName(PollTryResult result);  // "success", "behind_pace", "not_faster", "stalled"
// The try result a decision reports, if it judged a polling window: poll_window_faster, behind_pace,
// not_faster and stalled do; every other reason does not.
std::optional<PollTryResult> PollTryResultOf(const engine::Decision& decision);

// The canonical gRPC status code name ("OK", "NOT_FOUND", ...); codes outside 0..16 are "UNKNOWN".
using nvmeadapt::GrpcCodeName;

// At most kMaxLabelValueLength characters of [A-Za-z0-9_.:/-]; any other character becomes '_', and an
// empty value becomes "none".
std::string SanitizeLabelValue(std::string_view value);

// Admits the first `max_values` distinct values of one label; later ones become "other".
class BoundedLabelValues {
 public:
  explicit BoundedLabelValues(size_t max_values) : max_values_(max_values) {}
  // The sanitized value if admitted, else "other".
  std::string Admit(std::string_view value);
  size_t admitted() const { return admitted_.size(); }

 private:
  size_t max_values_;
  std::set<std::string, std::less<>> admitted_;
};

}  // namespace nvmeadapt::metrics
