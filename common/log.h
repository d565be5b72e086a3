// One-line logs to stderr: "2026-11-29T21:52:51.123Z info message". Nothing in a hot path logs.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "common/result.h"

namespace nvmeadapt {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
// The config's log_level words; an empty one is info. The number is syslog's priority, which journald reads
// off the start of a line (sd-daemon's prefixes).
inline constexpr EnumTable<LogLevel, 5> kLogLevels({{LogLevel::kDebug, "debug", 7},
                                                    {LogLevel::kInfo, "info", 6},
                                                    {LogLevel::kWarn, "warn", 4},
                                                    {LogLevel::kError, "error", 3},
                                                    {LogLevel::kInfo, ""}},
                                                   "info");

void SetLogLevel(LogLevel level);
LogLevel CurrentLogLevel();
Result<LogLevel> ParseLogLevel(std::string_view name);
// Writes one line: control characters of `message` (newline, carriage return, escape...) are written as \xNN.
void WriteLog(LogLevel level, std::string_view message);
// `text` with every byte below 0x20 and 0x7f written as \xNN.
std::string EscapeControlCharacters(std::string_view text);

}  // namespace nvmeadapt

#define NA_LOG(level, expr)                                                   \
  do {                                                                        \
    if (static_cast<int>(level) >= static_cast<int>(::nvmeadapt::CurrentLogLevel())) { \
      std::ostringstream na_log_stream_;                                      \
      na_log_stream_ << expr;                                                 \
      ::nvmeadapt::WriteLog(level, na_log_stream_.str());                     \
    }                                                                         \
  } while (0)

#define NA_DEBUG(expr) NA_LOG(::nvmeadapt::LogLevel::kDebug, expr)
#define NA_INFO(expr) NA_LOG(::nvmeadapt::LogLevel::kInfo, expr)
#define NA_WARN(expr) NA_LOG(::nvmeadapt::LogLevel::kWarn, expr)
#define NA_ERROR(expr) NA_LOG(::nvmeadapt::LogLevel::kError, expr)
