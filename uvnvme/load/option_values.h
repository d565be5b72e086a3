// SPDX-License-Identifier: Apache-2.0
// The values uvnvme-load's options take (durations, counts, sizes, bounded integers, phase profiles),
// each refusal saying what was expected and what came.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "uvnvme/host_queue.h"

namespace nvmeadapt::uvnvme::load {

struct Phase {
  std::string label;  // as written in the profile, e.g. "2s:qd64:poll"
  int64_t duration_ns = 0;
  uint32_t queue_depth = 0;  // per job; 0 = idle
  std::optional<ReapMode> mode;  // switch every queue to this mode when the phase starts
};

Result<double> ParseNumber(std::string_view text);                             // finite, >= 0
Result<uint32_t> ParseU32(std::string_view text, uint32_t min, uint32_t max);  // within [min, max]
Result<int64_t> ParseDurationNs(std::string_view text);  // "2s", "500ms", "100us", "3" (seconds)
Result<uint64_t> ParseCount(std::string_view text);      // "4096", "500k", "1m", "2g" (powers of 1000)
Result<uint64_t> ParseBytes(std::string_view text);      // "4096", "4k" = 4096, "1m" = 1048576
Result<std::vector<Phase>> ParsePhases(std::string_view profile);

}  // namespace nvmeadapt::uvnvme::load
