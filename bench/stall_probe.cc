// SPDX-License-Identifier: Apache-2.0
// The machine's own stall floor on one CPU: a thread that does nothing but read the clock, pinned to the
// CPU (SCHED_FIFO with --realtime, as uvnvme's device thread runs), records every gap between two reads.
// A gap is time the CPU was taken from it: interrupts, kernel work, or a hypervisor that did not run the
// virtual CPU. No device can post completions more evenly than this thread can read its clock, so the
// evaluation reports the device's longest gap next to this one.
//
// Usage: stall_probe CPU SECONDS [--realtime]   prints one JSON object.
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

namespace {

int64_t Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The CPU's steal time (field 8 of its /proc/stat line) in USER_HZ ticks, or -1.
long long StealTicks(int cpu) {
  std::ifstream stat("/proc/stat");
  const std::string want = "cpu" + std::to_string(cpu);
  for (std::string line; std::getline(stat, line);) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name != want) continue;
    long long value = 0;
    for (int i = 0; i < 8 && fields >> value; ++i) {
    }
    return fields ? value : -1;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: stall_probe CPU SECONDS [--realtime]\n");
    return 2;
  }
  char* end = nullptr;
  const long cpu = std::strtol(argv[1], &end, 10);
  const double seconds = std::strtod(argv[2], nullptr);
  if (*end != '\0' || cpu < 0 || cpu >= CPU_SETSIZE || !(seconds > 0 && seconds <= 600)) {
    std::fprintf(stderr, "stall_probe: bad CPU '%s' or SECONDS '%s' (0 < SECONDS <= 600)\n", argv[1], argv[2]);
    return 2;
  }
  const bool realtime = argc > 3 && std::strcmp(argv[3], "--realtime") == 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<int>(cpu), &set);
  if (int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set); err != 0) {
    std::fprintf(stderr, "stall_probe: pin to CPU %ld: %s\n", cpu, std::strerror(err));
    return 1;
  }
  std::string scheduling = "normal";
  if (realtime) {
    sched_param param{};
    param.sched_priority = 1;
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
      std::fprintf(stderr, "stall_probe: SCHED_FIFO on CPU %ld: %s\n", cpu, std::strerror(errno));
      return 1;
    }
    scheduling = "fifo";
  }
  // Buckets of gaps: > 10 us, > 100 us, > 1 ms, > 10 ms.
  long long over[4] = {0, 0, 0, 0};
  const int64_t limits[4] = {10'000, 100'000, 1'000'000, 10'000'000};
  const long long steal_before = StealTicks(static_cast<int>(cpu));
  const int64_t start = Now();
  const int64_t stop = start + static_cast<int64_t>(seconds * 1e9);
  int64_t previous = start, longest = 0;
  while (previous < stop) {
    const int64_t now = Now();
    const int64_t gap = now - previous;
    if (gap > limits[0]) {
      longest = gap > longest ? gap : longest;
      for (int i = 0; i < 4; ++i) over[i] += gap > limits[i] ? 1 : 0;
    }
    previous = now;
  }
  const long long steal_after = StealTicks(static_cast<int>(cpu));
  std::printf(
      "{\"cpu\": %ld, \"scheduling\": \"%s\", \"seconds\": %.3f, \"longest_gap_us\": %.3f, "
      "\"gaps_over_10us\": %lld, \"gaps_over_100us\": %lld, \"gaps_over_1ms\": %lld, \"gaps_over_10ms\": %lld, "
      "\"steal_ticks\": %lld}\n",
      cpu, scheduling.c_str(), static_cast<double>(previous - start) / 1e9, static_cast<double>(longest) / 1e3,
      over[0], over[1], over[2], over[3],
      steal_before >= 0 && steal_after >= 0 ? steal_after - steal_before : -1LL);
  return 0;
}
