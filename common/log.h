// SPDX-License-Identifier: Apache-2.0
// One-line logs to stderr: "2026-11-29T21:52:51.123Z info message", or entries of the journal when stderr is
// its stream. Nothing in a hot path logs.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "common/result.h"

namespace nvmeadapt {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
// The config's log_level words; an empty one is info. The number is syslog's priority: the journal entry's
// PRIORITY=, or the prefix of a line on the journal's stream when no sink took it (sd-daemon's prefixes).
inline constexpr EnumTable<LogLevel, 5> kLogLevels({{LogLevel::kDebug, "debug", 7},
                                                    {LogLevel::kInfo, "info", 6},
                                                    {LogLevel::kWarn, "warn", 4},
                                                    {LogLevel::kError, "error", 3},
                                                    {LogLevel::kInfo, ""}},
                                                   "info");

// What a line is about, for the journal's own fields (CONTROLLER=, QUEUE=, REASON=): set where the call site
// knows them; empty ones are left out. Values go as they are (the journal's protocol carries any bytes).
struct LogFields {
  std::string_view controller;  // "nvme0", "uvnvme:1234:0"
  std::string_view queue;       // the queue's name, "nvme0:q3"
  std::string_view reason;      // why: an error's message, a skip's cause
};

// Where lines go when stderr is the journal's stream (JOURNAL_STREAM names it): the daemon installs the
// journal's native protocol (common/journald_sink.h), one entry per line with its fields, so that nothing in
// a message can start another entry or choose its priority. A sink returns false when the entry was not
// taken; the line then goes to stderr, escaped, after a priority prefix.
using JournalSink = bool (*)(int priority, std::string_view message, const LogFields& fields);
void SetJournalSink(JournalSink sink);

void SetLogLevel(LogLevel level);
LogLevel CurrentLogLevel();
Result<LogLevel> ParseLogLevel(std::string_view name);
// Writes one line: control characters of `message` (newline, carriage return, escape...) are written as \xNN.
void WriteLog(LogLevel level, std::string_view message, const LogFields& fields = {});
// `text` with every byte that is not printable UTF-8 written as \xNN: C0 controls (newline, ESC, ...), DEL,
// C1 controls (U+0080..U+009F, each of their two bytes) and bytes of no valid UTF-8 sequence. What is left
// can neither start a line, nor move a terminal's cursor or retitle it, nor make a protobuf string invalid.
std::string EscapeControlCharacters(std::string_view text);
// Every byte of `text` is part of a valid UTF-8 sequence (what JSON and protobuf strings may hold).
bool IsUtf8(std::string_view text);

}  // namespace nvmeadapt

#define NA_LOG_FIELDS(level, fields, expr)                                   \
  do {                                                                        \
    if (static_cast<int>(level) >= static_cast<int>(::nvmeadapt::CurrentLogLevel())) { \
      std::ostringstream na_log_stream_;                                      \
      na_log_stream_ << expr;                                                 \
      ::nvmeadapt::WriteLog(level, na_log_stream_.str(), fields);             \
    }                                                                         \
  } while (0)
#define NA_LOG(level, expr) NA_LOG_FIELDS(level, ::nvmeadapt::LogFields{}, expr)

#define NA_DEBUG(expr) NA_LOG(::nvmeadapt::LogLevel::kDebug, expr)
#define NA_INFO(expr) NA_LOG(::nvmeadapt::LogLevel::kInfo, expr)
#define NA_WARN(expr) NA_LOG(::nvmeadapt::LogLevel::kWarn, expr)
#define NA_ERROR(expr) NA_LOG(::nvmeadapt::LogLevel::kError, expr)
// With the journal's fields: NA_WARN_FIELDS((::nvmeadapt::LogFields{.queue = name}), "...")
#define NA_INFO_FIELDS(fields, expr) NA_LOG_FIELDS(::nvmeadapt::LogLevel::kInfo, fields, expr)
#define NA_WARN_FIELDS(fields, expr) NA_LOG_FIELDS(::nvmeadapt::LogLevel::kWarn, fields, expr)
