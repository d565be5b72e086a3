// SPDX-License-Identifier: Apache-2.0
// The agent's CPU scheduling policy. SCHED_BATCH keeps the agent's fair share of CPU but stops it from
// preempting a running thread each time it wakes (a ring-buffer record, a lever's answer, an RPC): on a
// machine where the agent shares a CPU with a polling reaper, a wakeup preemption at a switch is time
// taken from the very try the agent is about to judge.
#pragma once

#include <string_view>

#include "common/result.h"

namespace nvmeadapt::daemon {

// "batch" or "normal" for the calling thread, which threads it creates afterwards inherit.
Status ApplyCpuScheduling(std::string_view policy);

}  // namespace nvmeadapt::daemon
