// SPDX-License-Identifier: Apache-2.0
// uvnvme-load's output: one JSON object (--json) or a human summary. docs/uvnvme.md says what each
// number includes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "uvnvme/load/options.h"
#include "uvnvme/load/runner.h"

namespace nvmeadapt::uvnvme::load {

nlohmann::json ReportJson(const LoadOptions& options, const LoadResult& result);
std::string ReportText(const LoadOptions& options, const LoadResult& result);

}  // namespace nvmeadapt::uvnvme::load
