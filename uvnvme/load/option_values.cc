// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/load/option_values.h"

#include <charconv>
#include <cmath>

#include "common/duration.h"

namespace nvmeadapt::uvnvme::load {
namespace {

// A number with an optional suffix from `units` (longest match first).
Result<double> ParseWithUnits(std::string_view text, const std::vector<std::pair<std::string_view, double>>& units,
                              double default_scale, std::string_view expected) {
  for (const auto& [suffix, scale] : units) {
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      auto number = ParseNumber(text.substr(0, text.size() - suffix.size()));
      if (number) return *number * scale;
      break;
    }
  }
  auto number = ParseNumber(text);
  if (!number) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "expected " + std::string(expected) + ", got '" + std::string(text) + "'");
  }
  return *number * default_scale;
}

Result<std::optional<ReapMode>> ParsePhaseMode(std::string_view text) {
  if (auto mode = ParseReapMode(text)) return std::optional<ReapMode>(*mode);
  return MakeError(ErrorCode::kInvalidArgument, "unknown mode '" + std::string(text) + "' (interrupt, poll)");
}

}  // namespace

Result<double> ParseNumber(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "expected a non-negative number, got '" + std::string(text) + "'");
  }
  return value;
}

Result<uint32_t> ParseU32(std::string_view text, uint32_t min, uint32_t max) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return MakeError(ErrorCode::kInvalidArgument, "expected an integer in [" + std::to_string(min) + ", " +
                                                      std::to_string(max) + "], got '" + std::string(text) + "'");
  }
  return static_cast<uint32_t>(value);
}

// The one duration grammar of common/duration.h, as nvme-adaptctl, the agent's config and flags take it ("2s",
// "500ms", "1m30s"), or a bare number of seconds (the older form).
Result<int64_t> ParseDurationNs(std::string_view text) {
  double value = 0;
  if (auto seconds = ParseNumber(text)) {
    value = *seconds * 1e9;
  } else {
    auto nanos = ParseDuration(text);
    if (!nanos) return nanos.error();
    value = static_cast<double>(*nanos);
  }
  if (value > 1e9 * 86400 * 365) return MakeError(ErrorCode::kInvalidArgument, "duration too long");
  return static_cast<int64_t>(std::llround(value));
}

Result<uint64_t> ParseCount(std::string_view text) {
  auto value = ParseWithUnits(text, {{"k", 1e3}, {"m", 1e6}, {"g", 1e9}}, 1, "a count such as 500k");
  if (!value) return std::move(value).take_error();
  if (*value > 1e15 || *value != std::floor(*value)) return MakeError(ErrorCode::kInvalidArgument, "expected a whole count");
  return static_cast<uint64_t>(*value);
}

Result<uint64_t> ParseBytes(std::string_view text) {
  auto value = ParseWithUnits(text, {{"k", 1024.0}, {"m", 1048576.0}}, 1, "a size such as 4k");
  if (!value) return std::move(value).take_error();
  if (*value > 1e12 || *value != std::floor(*value)) return MakeError(ErrorCode::kInvalidArgument, "expected whole bytes");
  return static_cast<uint64_t>(*value);
}

Result<std::vector<Phase>> ParsePhases(std::string_view profile) {
  std::vector<Phase> phases;
  while (!profile.empty()) {
    const size_t comma = profile.find(',');
    const std::string_view item = profile.substr(0, comma);
    profile = comma == std::string_view::npos ? std::string_view() : profile.substr(comma + 1);
    Phase phase;
    phase.label = std::string(item);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': expected DURATION:qdN or DURATION:idle");
    }
    auto duration = ParseDurationNs(item.substr(0, colon));
    if (!duration || *duration <= 0) {
      return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': bad duration");
    }
    phase.duration_ns = *duration;
    std::string_view rest = item.substr(colon + 1);
    const size_t colon2 = rest.find(':');
    const std::string_view load = rest.substr(0, colon2);
    if (load == "idle") {
      phase.queue_depth = 0;
    } else if (load.starts_with("qd")) {
      auto depth = ParseU32(load.substr(2), 1, kMaxQueueEntries - 1);
      if (!depth) return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': " + depth.error().message);
      phase.queue_depth = *depth;
    } else {
      return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': expected qdN or idle after the duration");
    }
    if (colon2 != std::string_view::npos) {
      auto mode = ParsePhaseMode(rest.substr(colon2 + 1));
      if (!mode) return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': " + mode.error().message);
      phase.mode = *mode;
    }
    phases.push_back(std::move(phase));
    if (comma != std::string_view::npos && profile.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "trailing ',' in the profile");
    }
  }
  if (phases.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty profile");
  return phases;
}

}  // namespace nvmeadapt::uvnvme::load
