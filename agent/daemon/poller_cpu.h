// SPDX-License-Identifier: Apache-2.0
// The CPU time of the thread that polls a queue, where the agent can tell which thread that is: uvnvme's
// reaper threads are named uvnvme-c<ctrl>q<qid> (uvnvme/load/runner.cc), and /proc/PID/task/TID/schedstat has
// their time on CPU. Kernel queues are polled by whichever task submitted I/O (io_uring's loop, a pvsync2 caller),
// which the collector does not attribute to a queue: for them, and for other sources, the error says why.
#pragma once

#include <string>

#include "agent/daemon/managed_queues.h"
#include "common/result.h"

namespace nvmeadapt::daemon {

// `proc_root` is "/proc" but in tests. Each call looks the thread up again: a driver restarts its reapers.
Result<engine::Nanos> ReadPollerCpu(const ManagedQueue& q, const std::string& proc_root = "/proc");

}  // namespace nvmeadapt::daemon
