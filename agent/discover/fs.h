// SPDX-License-Identifier: Apache-2.0
// Small read-only file system helpers for sysfs and procfs. Every error names the path it concerns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::discover {

// Reads a whole text file (sysfs attributes report a size of 4096 whatever they hold, so it reads to EOF).
Result<std::string> ReadText(const std::string& path, size_t limit = 16u << 20);
// The limit for a file only the kernel writes whose size follows the machine's (/proc/interrupts).
inline constexpr size_t kUnboundedRead = SIZE_MAX;
// ReadText without the surrounding whitespace (sysfs values end with a newline, some are space padded).
Result<std::string> ReadTrimmed(const std::string& path);
// The entries of a directory, without "." and "..", sorted by name.
Result<std::vector<std::string>> ListDir(const std::string& path);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);

std::string_view Trim(std::string_view text);
std::string JoinPath(std::string_view dir, std::string_view name);
// Splits on any of `separators`, dropping empty pieces.
std::vector<std::string_view> Split(std::string_view text, std::string_view separators);
// A decimal number that fills the whole text (after trimming), or nothing.
bool ParseU32(std::string_view text, uint32_t* value);

}  // namespace nvmeadapt::discover
