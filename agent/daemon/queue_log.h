// SPDX-License-Identifier: Apache-2.0
// The log's lines about a queue's life (issue 45, item 6): its state changes (a switch, a backoff begun or
// over, an override) at info and its errors (a lever's refusal, a BPF control the collector refuses) at warn,
// each kind at most kBurst lines a queue per kPeriod; a line held back is written at debug only, and the count
// of what was held back is said with the next line let out or once the period is over
// (common/log_rate_limit.h). A dozen queues that switch or fail often then stay far below journald's rate
// limit, which would otherwise drop the lines that matter. Decisions that change nothing are not the log's
// (shadow's "would poll" and a deferred try are events; every decision is in the trace's decision file and
// the counters), and the log has them at debug. Every line carries the journal's QUEUE=, CONTROLLER= and REASON=.
// On the loop thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "agent/daemon/managed_queues.h"
#include "agent/engine/types.h"
#include "common/log_rate_limit.h"

namespace nvmeadapt::daemon {

class QueueLog {
 public:
  static constexpr uint32_t kBurst = 5;
  static constexpr engine::Nanos kPeriod = 60'000'000'000;

  explicit QueueLog(std::function<engine::Nanos()> monotonic,
                    LogRateLimit::Settings limits = {.burst = kBurst, .period_ns = kPeriod});

  // A state change of `queue`; `reason` is the journal's REASON= (the decision's reason word).
  void Change(const ManagedQueue& queue, std::string_view reason, const std::string& message);
  // An error about `queue`; `reason` is the error's own message.
  void Error(const ManagedQueue& queue, std::string_view reason, const std::string& message);
  // What periods that ended held back and nobody said since: a line per queue and kind (once a second).
  void Flush();
  // The queue left: what was held back about it is said now, and nothing of it kept.
  void Forget(const ManagedQueue& queue);

 private:
  enum class Kind { kChange, kError };
  void Write(Kind kind, const ManagedQueue& queue, std::string_view reason, const std::string& message);
  void SayHeldBack(Kind kind, const LogRateLimit::Suppressed& held);

  const std::function<engine::Nanos()> monotonic_;
  LogRateLimit changes_;
  LogRateLimit errors_;
  std::map<std::string, std::string, std::less<>> controllers_;  // queue name -> its controller, for Flush
};

}  // namespace nvmeadapt::daemon
