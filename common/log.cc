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
std::mutex g_write_mutex;

// True when stderr is the journal's stream: systemd sets JOURNAL_STREAM to its "device:inode". Then a line
// carries a priority prefix and no timestamp (the journal stamps each line itself).
bool StderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  struct stat st {};
  if (stream == nullptr || fstat(2, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) && ino == static_cast<unsigned long long>(st.st_ino);
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel CurrentLogLevel() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

Result<LogLevel> ParseLogLevel(std::string_view name) {
  if (auto level = kLogLevels.Parse(name)) return *level;
  return MakeError(ErrorCode::kInvalidArgument,
                   "log_level: unknown level '" + std::string(name) + "' (" + kLogLevels.Choices() + ")");
}

std::string EscapeControlCharacters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out.push_back(c);
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

void WriteLog(LogLevel level, std::string_view message) {
  static const bool to_journal = StderrIsJournal();
  if (to_journal) {
    std::lock_guard lock(g_write_mutex);
    std::fprintf(stderr, "<%d>%s %.*s\n", kLogLevels.Proto(level), kLogLevels.Name(level).data(),
                 static_cast<int>(message.size()), message.data());
    return;
  }
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  // Messages quote names peers chose (socket files, process names): a newline in one must not start a
  // line that looks like the agent's own.
  const std::string line = EscapeControlCharacters(message);
  std::lock_guard lock(g_write_mutex);
  std::fprintf(stderr, "%s.%03ldZ %s %.*s\n", stamp, now.tv_nsec / 1000000, kLogLevels.Name(level).data(),
               static_cast<int>(line.size()), line.data());
}

}  // namespace nvmeadapt
