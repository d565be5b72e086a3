// SPDX-License-Identifier: Apache-2.0
// kernel.bpf_stats_enabled, which the BPF cost benchmarks turn on for their run and put back after: the
// kernel counts a program's run time only while it is set.
#pragma once

#include <fstream>
#include <string>

namespace nvmeadapt::bench {

inline constexpr const char* kStatsSysctl = "/proc/sys/kernel/bpf_stats_enabled";

inline std::string ReadSysctl() {
  std::ifstream in(kStatsSysctl);
  std::string value;
  in >> value;
  return value;
}

inline bool WriteSysctl(const std::string& value) {
  std::ofstream out(kStatsSysctl);
  out << value << "\n";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace nvmeadapt::bench
