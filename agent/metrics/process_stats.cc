// SPDX-License-Identifier: Apache-2.0
#include "agent/metrics/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <vector>

#include "common/files.h"

namespace nvmeadapt::metrics {
namespace {

constexpr size_t kMaxProcFileBytes = 1 << 20;

std::vector<std::string_view> SplitFields(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = text.find_first_not_of(" \n", pos);
    if (start == std::string_view::npos) break;
    const size_t end = text.find_first_of(" \n", start);
    fields.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    pos = end == std::string_view::npos ? text.size() : end;
  }
  return fields;
}

bool ParseUnsigned(std::string_view text, uint64_t& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Result<uint64_t> BootTimeSeconds() {
  const std::string path = "/proc/stat";
  NA_ASSIGN_OR_RETURN(auto text, ReadWholeFile(path, kMaxProcFileBytes));
  const size_t at = text.find("\nbtime ");
  uint64_t btime = 0;
  if (at != std::string::npos) {
    const size_t start = at + 7;
    const size_t end = text.find('\n', start);
    if (ParseUnsigned(std::string_view(text).substr(start, end - start), btime)) return btime;
  }
  return MakeError(ErrorCode::kIo, path + ": no btime line");
}

Result<uint64_t> CountOpenFds(const std::string& fd_dir) {
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) return SysError("opendir", fd_dir, errno);
  uint64_t count = 0;
  errno = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  const int read_errno = errno;
  closedir(dir);
  if (read_errno != 0) return SysError("readdir", fd_dir, read_errno);
  return count;
}

}  // namespace

Result<ProcessStats> ReadProcessStats(const std::string& proc_dir) {
  const std::string stat_path = proc_dir + "/stat";
  NA_ASSIGN_OR_RETURN(auto stat, ReadWholeFile(stat_path, kMaxProcFileBytes));
  // Field 2 (comm) is in parentheses and may hold spaces or parentheses itself: count from the last ')'.
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos) return MakeError(ErrorCode::kIo, stat_path + ": no ')' after comm");
  const std::vector<std::string_view> fields = SplitFields(std::string_view(stat).substr(comm_end + 1));
  // fields[0] is field 3 (state): field N of proc(5) is fields[N - 3].
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3, kStartTime = 22 - 3, kVsize = 23 - 3, kRss = 24 - 3;
  uint64_t utime = 0, stime = 0, start_ticks = 0, vsize = 0, rss_pages = 0;
  if (fields.size() <= kRss || !ParseUnsigned(fields[kUtime], utime) || !ParseUnsigned(fields[kStime], stime) ||
      !ParseUnsigned(fields[kStartTime], start_ticks) || !ParseUnsigned(fields[kVsize], vsize) ||
      !ParseUnsigned(fields[kRss], rss_pages)) {
    return MakeError(ErrorCode::kIo, stat_path + ": unexpected format");
  }
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (ticks_per_second <= 0 || page_size <= 0) return SysError("sysconf", "_SC_CLK_TCK/_SC_PAGESIZE", errno);

  NA_ASSIGN_OR_RETURN(auto boot_time, BootTimeSeconds());
  NA_ASSIGN_OR_RETURN(auto open_fds, CountOpenFds(proc_dir + "/fd"));
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return SysError("getrlimit", "RLIMIT_NOFILE", errno);

  ProcessStats out;
  const double ticks = static_cast<double>(ticks_per_second);
  out.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  out.resident_bytes = rss_pages * static_cast<uint64_t>(page_size);
  out.virtual_bytes = vsize;
  out.start_time_seconds = static_cast<double>(boot_time) + static_cast<double>(start_ticks) / ticks;
  out.open_fds = open_fds;
  out.max_fds = limit.rlim_cur;
  return out;
}

}  // namespace nvmeadapt::metrics
