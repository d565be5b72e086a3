// SPDX-License-Identifier: Apache-2.0
// The one duration grammar of nvme-adapt: the daemon's flags, the config's nanosecond fields, nvme-adaptctl and
// uvnvme-load all read durations here (issue 46). It is absl's (absl::ParseDuration, which gRPC brings): a sum of
// decimal numbers, each with an optional fraction and a unit (ns, us, ms, s, m, h), such as "1.5ms" or "1m30s",
// and "0" alone; plus `d` for days of 24 hours, which an operator writes for a pause or an override and absl
// lacks. absl's sign and "inf" are refused: no setting here is a negative or endless time. The arithmetic is
// exact in nanoseconds, so what FormatDuration prints parses back to the same number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace nvmeadapt {

// Nanoseconds; kInvalidArgument saying what is wrong and showing the grammar by example otherwise.
Result<int64_t> ParseDuration(std::string_view text);
// The shortest exact form: 30000000000 -> "30s", 1500000 -> "1.5ms", 90000000000 -> "1m30s".
std::string FormatDuration(int64_t nanos);
// The units in the grammar's words, for help texts: "ns, us, ms, s, m, h or d".
inline constexpr std::string_view kDurationUnits = "ns, us, ms, s, m, h or d";

}  // namespace nvmeadapt
