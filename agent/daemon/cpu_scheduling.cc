// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/cpu_scheduling.h"

#include <sched.h>

#include <cerrno>
#include <string>

namespace nvmeadapt::daemon {

Status ApplyCpuScheduling(std::string_view policy) {
  int wanted;
  if (policy == "batch") {
    wanted = SCHED_BATCH;
  } else if (policy == "normal") {
    wanted = SCHED_OTHER;
  } else {
    return MakeError(ErrorCode::kInvalidArgument, "cpu scheduling: expected batch or normal, got '" +
                                                      std::string(policy) + "'");
  }
  const sched_param param{};  // priority 0: the only one for both policies
  if (sched_setscheduler(0, wanted, &param) != 0) {
    return SysError("sched_setscheduler", "to " + std::string(policy), errno);
  }
  return OkStatus();
}

}  // namespace nvmeadapt::daemon
