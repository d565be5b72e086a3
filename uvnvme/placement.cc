// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/placement.h"

#include <sched.h>

#include <cerrno>
#include <charconv>

namespace nvmeadapt::uvnvme {

Status ApplyPlacement(pthread_t thread, const ThreadPlacement& placement, const std::string& what) {
  if (!placement.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : placement.cpus) CPU_SET(cpu, &set);
    if (int err = pthread_setaffinity_np(thread, sizeof set, &set); err != 0) {
      return SysError("pthread_setaffinity_np", what, err);
    }
  }
  if (placement.realtime) {
    sched_param param{};
    param.sched_priority = 1;
    if (int err = pthread_setschedparam(thread, SCHED_FIFO, &param); err != 0) {
      return SysError("SCHED_FIFO for", what, err);
    }
  }
  return OkStatus();
}

Status YieldToFairTasks(pthread_t thread, const std::string& what) {
  int policy = 0;
  sched_param realtime{};
  if (int err = pthread_getschedparam(thread, &policy, &realtime); err != 0) {
    return SysError("pthread_getschedparam for", what, err);
  }
  if (policy != SCHED_FIFO && policy != SCHED_RR) return OkStatus();
  const sched_param fair{};
  if (int err = pthread_setschedparam(thread, SCHED_OTHER, &fair); err != 0) {
    return SysError("SCHED_OTHER for", what, err);
  }
  sched_yield();  // cannot fail on Linux
  if (int err = pthread_setschedparam(thread, policy, &realtime); err != 0) {
    return SysError("taking back SCHED_FIFO for", what, err);
  }
  return OkStatus();
}

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  auto bad = [&] { return MakeError(ErrorCode::kInvalidArgument, "expected a CPU list such as 1 or 0,2-3, got '" +
                                                                      std::string(text) + "'"); };
  auto number = [](std::string_view s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && out >= 0 && out < CPU_SETSIZE;
  };
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return SysError("sched_getaffinity", "", errno);
  std::vector<int> cpus;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const size_t dash = item.find('-');
    int first = 0, last = 0;
    if (!number(item.substr(0, dash), first)) return bad();
    last = first;
    if (dash != std::string_view::npos && (!number(item.substr(dash + 1), last) || last < first)) return bad();
    for (int cpu = first; cpu <= last; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) {
        return MakeError(ErrorCode::kInvalidArgument, "CPU " + std::to_string(cpu) + " is not available to this process");
      }
      cpus.push_back(cpu);
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return cpus;
}

}  // namespace nvmeadapt::uvnvme
