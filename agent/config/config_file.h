// SPDX-License-Identifier: Apache-2.0
// Reading the agent's Config from JSON: unknown fields and bad values are refused with the field named.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::config {

inline constexpr std::string_view kDefaultConfigPath = "/etc/nvme-adapt/config.json";

// Parses and validates. The error is one line naming the problem.
Result<v1::Config> ParseConfigJson(std::string_view json);
// Reads `path` and parses it; errors start with the path.
Result<v1::Config> LoadConfigFile(const std::string& path);
// Everything ParseConfigJson checks beyond JSON syntax and field names.
Status ValidateConfig(const v1::Config& config);

}  // namespace nvmeadapt::config
