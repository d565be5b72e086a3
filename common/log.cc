// SPDX-License-Identifier: Apache-2.0
#include "common/log.h"

#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

namespace nvmeadapt {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<JournalSink> g_journal_sink{nullptr};
std::mutex g_write_mutex;

// True when stderr is the journal's stream: systemd sets JOURNAL_STREAM to its "device:inode". Then lines go
// to the journal sink, or carry a priority prefix and no timestamp (the journal stamps each line itself).
bool StderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  struct stat st {};
  if (stream == nullptr || fstat(2, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) && ino == static_cast<unsigned long long>(st.st_ino);
}
}  // namespace

void SetJournalSink(JournalSink sink) { g_journal_sink.store(sink); }

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel CurrentLogLevel() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

Result<LogLevel> ParseLogLevel(std::string_view name) {
  if (auto level = kLogLevels.Parse(name)) return *level;
  return MakeError(ErrorCode::kInvalidArgument,
                   "log_level: unknown level '" + std::string(name) + "' (" + kLogLevels.Choices() + ")");
}

// The length of the valid UTF-8 sequence at text[at] (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF), or 0.
static size_t Utf8SequenceLength(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  }
  return length;
}

bool IsUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t length = Utf8SequenceLength(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string EscapeControlCharacters(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char byte) {
    out += "\\x";
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  };
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if (byte >= 0x20 && byte != 0x7f) {
        out.push_back(text[i]);
      } else {
        escape(byte);
      }
      ++i;
      continue;
    }
    const size_t length = Utf8SequenceLength(text, i);
    const bool c1 = length == 2 && byte == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if (length == 0) {
      escape(byte);
      ++i;
    } else if (c1) {
      escape(byte);
      escape(static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

void WriteLog(LogLevel level, std::string_view message, const LogFields& fields) {
  static const bool to_journal = StderrIsJournal();
  // Messages quote names peers chose (socket files, process names): a newline in one must not start a
  // line that looks like the agent's own, nor an escape sequence reach the terminal of who reads the log.
  const std::string line = EscapeControlCharacters(message);
  if (to_journal) {
    const JournalSink sink = g_journal_sink.load();
    if (sink != nullptr && sink(kLogLevels.Proto(level), line, fields)) return;
    std::lock_guard lock(g_write_mutex);
    std::fprintf(stderr, "<%d>%s %.*s\n", kLogLevels.Proto(level), kLogLevels.Name(level).data(),
                 static_cast<int>(line.size()), line.data());
    return;
  }
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::lock_guard lock(g_write_mutex);
  std::fprintf(stderr, "%s.%03ldZ %s %.*s\n", stamp, now.tv_nsec / 1000000, kLogLevels.Name(level).data(),
               static_cast<int>(line.size()), line.data());
}

}  // namespace nvmeadapt
