// SPDX-License-Identifier: Apache-2.0
// uvnvme's reaper threads, found by the name uvnvme gives each (uvnvme-c<ctrl>q<qid>, cut to the kernel's 15
// characters): the thread that reaps a queue's completions, so the CPU it may run on is the queue's reaping
// CPU (the node layer's CPU rules) and its CPU time is what polling the queue costs (daemon/poller_cpu.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::discover {

// "uvnvme-c0q1": the name of the reaper of (ctrl, qid), as /proc/PID/task/TID/comm shows it.
std::string ReaperThreadName(uint32_t ctrl, uint32_t qid);

// The task directory (/proc/PID/task/TID) of the thread of process `pid` named `name`.
Result<std::string> FindThread(const std::string& proc_root, pid_t pid, const std::string& name);

// Each reaper thread of process `pid` and the CPUs it may run on (Cpus_allowed_list), by (ctrl, qid). A thread
// that goes while it is read is left out; an unreadable task directory is an error naming it.
Result<std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>>> ReaperCpus(const std::string& proc_root,
                                                                                  pid_t pid);

}  // namespace nvmeadapt::discover
