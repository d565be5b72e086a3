// SPDX-License-Identifier: Apache-2.0
// What docs/metrics.md documents, for the tests that hold the exposition, the dashboard and the rules to it:
// the rows of its metric tables, and the metric names a PromQL text mentions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/metrics_text_parser.h"

namespace nvmeadapt::metrics::testing {

// Rows of the tables whose header starts "| <first_column> | type | labels | meaning |" ("metric": the served
// families; "planned metric": names rules may use before the agent serves them): name -> (type, labels).
std::map<std::string, FamilyShape> DocumentedFamilies(std::string_view markdown,
                                                      std::string_view first_column = "metric");

// Every token of metric-name characters ([A-Za-z0-9_:]) in `text`, in order.
std::vector<std::string> NameTokens(std::string_view text);

}  // namespace nvmeadapt::metrics::testing
