// SPDX-License-Identifier: Apache-2.0
// The node's facts for the node layer (agent/engine/node.h): each CPU's busy share from the deltas of
// /proc/stat, and the CPU pressure of /proc/pressure/cpu where the kernel has PSI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/engine/node.h"
#include "common/result.h"

namespace nvmeadapt::collect {

// One CPU's line of /proc/stat, in clock ticks: busy is user + nice + system + irq + softirq + steal (guest
// time is already in user and nice), total adds idle and iowait.
struct CpuTicks {
  uint64_t busy = 0;
  uint64_t total = 0;
};

// The "cpuN" lines of /proc/stat, indexed by N; nullopt for a number without a line (an offline CPU). The
// summed "cpu" line is left out. Errors (kInvalidArgument) name the line.
Result<std::vector<std::optional<CpuTicks>>> ParseProcStat(std::string_view text);

struct CpuPressure {
  double some_avg10 = 0;
  std::optional<double> full_avg10;  // kernels before 5.13 print no "full" line for the CPU
};
// The text of /proc/pressure/cpu ("some avg10=0.12 avg60=... total=...", "full ..."). Errors name the line.
Result<CpuPressure> ParseCpuPressure(std::string_view text);

// The busy share of each CPU between two readings; nullopt where either has no line, no tick passed, or the
// counters went back (a CPU taken offline and back resets them).
std::vector<std::optional<double>> BusyShares(const std::vector<std::optional<CpuTicks>>& before,
                                              const std::vector<std::optional<CpuTicks>>& after);

class NodeFactsReader {
 public:
  // root: where proc/ is ("/" on a live system, a fake tree in tests).
  explicit NodeFactsReader(std::string root);

  // Reads both files. The first reading only takes the baseline: its busy shares are all nullopt. No PSI
  // file, or PSI turned off (psi=0: reading fails with EOPNOTSUPP), leaves the pressure nullopt; any other
  // failure is an error naming the path, and the baseline stays as it was.
  Result<engine::NodeFacts> Read(engine::Nanos now);

 private:
  std::string stat_path_;
  std::string pressure_path_;
  std::vector<std::optional<CpuTicks>> last_;
  bool have_last_ = false;
};

}  // namespace nvmeadapt::collect
