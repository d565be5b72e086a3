// SPDX-License-Identifier: Apache-2.0
// Short texts of what polling gained and cost (v1::Payoff), for the queues table, watch and report.
#pragma once

#include <string>

#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::ctl {

// "x1.25 +819 cpu 0.40s" (last kept speedup, completions gained, CPU spent polling), "tried 3, none kept",
// "shadow: 40% would poll", or "-" when nothing was judged.
std::string PayoffText(const v1::Payoff& payoff);
// A judged polling window's rate against its baseline, e.g. "x1.25 vs baseline"; "" for other decisions.
std::string JudgedText(const v1::Decision& decision);
// "x1.25" with two decimals.
std::string Ratio(double ratio);
// "40%" of part over whole (rounded); "-" for an empty whole.
std::string Percent(uint64_t part, uint64_t whole);

}  // namespace nvmeadapt::ctl
