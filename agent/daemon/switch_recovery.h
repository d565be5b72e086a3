// SPDX-License-Identifier: Apache-2.0
// What a failed switch leaves behind and the way back from it: the queue's degraded mark, the retry with
// backoff of a mode the agent itself wants, and each lever's error record that GetStatus reports. On the
// loop thread: the loop side of the mode switcher (mode_switcher.h runs the switches' blocking steps).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/daemon/managed_queues.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

class SwitchRecovery {
 public:
  // The queue's switch failed: it is degraded (the reason names its lever), the lever's error is counted
  // and the queue's backoff grows (1 s doubling to 60 s; queue.retry_delay). True when worth retrying.
  bool Failed(ManagedQueue& queue, const Error& error);
  // The queue's switch applied: its lever works, the queue is whole, nothing is left to retry.
  void Applied(ManagedQueue& queue);
  // Retries `mode` for `why` at `at` (RetryLevers in the loop takes it then).
  static void PlanRetry(ManagedQueue& queue, ReapMode mode, engine::Reason why, engine::Nanos at);

  // GetStatus's levers: every lever serving a queue and every lever that failed, available unless its last
  // error says this machine lacks it or forbids it and no switch succeeded since.
  void DescribeLevers(const std::vector<ManagedQueue*>& queues, v1::GetStatusResponse& status) const;

 private:
  struct LeverErrors {
    uint64_t count = 0;
    std::string last;
    ErrorCode last_code = ErrorCode::kInternal;
    bool worked_since = false;  // a switch succeeded after the last error
  };
  std::map<std::string, LeverErrors> lever_errors_;
};

}  // namespace nvmeadapt::daemon
