// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/node_facts.h"

#include <cerrno>
#include <charconv>
#include <utility>

#include "common/files.h"

namespace nvmeadapt::collect {
namespace {

// The fields of a line, split on spaces.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class Number>
bool ParseWhole(std::string_view text, Number* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Calls `each` with every line (without its newline) and its 1-based number; stops at the first error.
template <class Each>
Status ForEachLine(std::string_view text, Each each) {
  size_t number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    NA_RETURN_IF_ERROR(each(line, ++number));
  }
  return OkStatus();
}

Error BadLine(size_t number, std::string_view line, std::string_view why) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "line " + std::to_string(number) + " \"" + std::string(line) + "\": " + std::string(why));
}

Result<std::pair<uint32_t, CpuTicks>> ParseCpuLine(const std::vector<std::string_view>& fields, size_t number,
                                                   std::string_view line) {
  uint32_t cpu = 0;
  if (!ParseWhole(fields[0].substr(3), &cpu)) return BadLine(number, line, "not a CPU number");
  // user nice system idle iowait irq softirq steal: kernels since 2.6.11 print at least these eight.
  constexpr size_t kTimes = 8;
  if (fields.size() < 1 + kTimes) return BadLine(number, line, "fewer than 8 times");
  uint64_t t[kTimes] = {};
  for (size_t i = 0; i < kTimes; ++i) {
    if (!ParseWhole(fields[1 + i], &t[i])) return BadLine(number, line, "a time is not a number");
  }
  CpuTicks ticks;
  ticks.busy = t[0] + t[1] + t[2] + t[5] + t[6] + t[7];
  ticks.total = ticks.busy + t[3] + t[4];
  return std::pair(cpu, ticks);
}

// "avg10=1.23" of a PSI line.
Result<double> Avg10(const std::vector<std::string_view>& fields, size_t number, std::string_view line) {
  constexpr std::string_view kKey = "avg10=";
  double value = 0;
  if (fields.size() < 2 || fields[1].substr(0, kKey.size()) != kKey ||
      !ParseWhole(fields[1].substr(kKey.size()), &value) || value < 0 || value > 100) {
    return BadLine(number, line, "no avg10 within 0..100 after the kind");
  }
  return value;
}

}  // namespace

Result<std::vector<std::optional<CpuTicks>>> ParseProcStat(std::string_view text) {
  std::vector<std::optional<CpuTicks>> cpus;
  constexpr uint32_t kMaxCpus = 1u << 16;  // beyond any kernel's NR_CPUS: a corrupt line, not a CPU
  NA_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view line, size_t number) -> Status {
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty() || fields[0].substr(0, 3) != "cpu" || fields[0] == "cpu") return OkStatus();
    NA_ASSIGN_OR_RETURN(auto parsed, ParseCpuLine(fields, number, line));
    if (parsed.first >= kMaxCpus) return BadLine(number, line, "CPU number out of range");
    if (parsed.first >= cpus.size()) cpus.resize(parsed.first + 1);
    if (cpus[parsed.first]) return BadLine(number, line, "a second line for this CPU");
    cpus[parsed.first] = parsed.second;
    return OkStatus();
  }));
  if (cpus.empty()) return MakeError(ErrorCode::kInvalidArgument, "no cpuN line");
  return cpus;
}

Result<CpuPressure> ParseCpuPressure(std::string_view text) {
  std::optional<double> some;
  CpuPressure out;
  NA_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view line, size_t number) -> Status {
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) return OkStatus();
    if (fields[0] != "some" && fields[0] != "full") return BadLine(number, line, "neither some nor full");
    NA_ASSIGN_OR_RETURN(double avg10, Avg10(fields, number, line));
    (fields[0] == "some" ? some : out.full_avg10) = avg10;
    return OkStatus();
  }));
  if (!some) return MakeError(ErrorCode::kInvalidArgument, "no \"some\" line");
  out.some_avg10 = *some;
  return out;
}

std::vector<std::optional<double>> BusyShares(const std::vector<std::optional<CpuTicks>>& before,
                                              const std::vector<std::optional<CpuTicks>>& after) {
  std::vector<std::optional<double>> shares(after.size());
  for (size_t cpu = 0; cpu < after.size() && cpu < before.size(); ++cpu) {
    if (!before[cpu] || !after[cpu]) continue;
    const CpuTicks& a = *before[cpu];
    const CpuTicks& b = *after[cpu];
    if (b.total <= a.total || b.busy < a.busy) continue;
    const uint64_t busy = b.busy - a.busy;
    const uint64_t total = b.total - a.total;
    shares[cpu] = busy >= total ? 1.0 : static_cast<double>(busy) / static_cast<double>(total);
  }
  return shares;
}

NodeFactsReader::NodeFactsReader(std::string root)
    : stat_path_(root + (root.ends_with('/') ? "" : "/") + "proc/stat"),
      pressure_path_(root + (root.ends_with('/') ? "" : "/") + "proc/pressure/cpu") {}

Result<engine::NodeFacts> NodeFactsReader::Read(engine::Nanos now) {
  NA_ASSIGN_OR_RETURN(std::string stat_text, ReadWholeFile(stat_path_));
  Result<std::vector<std::optional<CpuTicks>>> ticks = ParseProcStat(stat_text);
  if (!ticks) return MakeError(ticks.error().code, stat_path_ + ": " + ticks.error().message);
  engine::NodeFacts facts;
  facts.at = now;
  Result<std::string> pressure_text = ReadWholeFile(pressure_path_);
  if (pressure_text) {
    Result<CpuPressure> pressure = ParseCpuPressure(*pressure_text);
    if (!pressure) return MakeError(pressure.error().code, pressure_path_ + ": " + pressure.error().message);
    facts.pressure_some_avg10 = pressure->some_avg10;
    facts.pressure_full_avg10 = pressure->full_avg10;
  } else if (pressure_text.error().sys_errno != ENOENT && pressure_text.error().sys_errno != EOPNOTSUPP) {
    return std::move(pressure_text).take_error();
  }
  facts.cpu_busy = have_last_ ? BusyShares(last_, *ticks)
                              : std::vector<std::optional<double>>(ticks->size());
  last_ = std::move(*ticks);
  have_last_ = true;
  return facts;
}

}  // namespace nvmeadapt::collect
