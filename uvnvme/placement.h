// SPDX-License-Identifier: Apache-2.0
// Where uvnvme's threads run: an optional CPU set and, for the emulated controller, an optional real-time
// class, so the emulated device can be given a core of its own as hardware would have.
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::uvnvme {

struct ThreadPlacement {
  bool realtime = false;  // SCHED_FIFO priority 1 (needs CAP_SYS_NICE)
  std::vector<int> cpus;  // empty: wherever the scheduler likes
};

// `what` names the thread in the error, e.g. "controller 0 thread 1".
Status ApplyPlacement(pthread_t thread, const ThreadPlacement& placement, const std::string& what);

// Lets the fair class's tasks queued on this CPU (its kernel workers) run once, without idling the CPU:
// a real-time (SCHED_FIFO) caller drops to SCHED_OTHER, yields and takes its real-time class back; any
// other caller has nothing to do (the fair scheduler shares the CPU already). With nothing else runnable
// the caller continues at once. An error means the real-time class could not be taken back.
Status YieldToFairTasks(pthread_t thread, const std::string& what);

// "1", "0-3", "0,2-3": CPUs this process may run on (its affinity mask), else an error naming the CPU.
Result<std::vector<int>> ParseCpuList(std::string_view text);

}  // namespace nvmeadapt::uvnvme
