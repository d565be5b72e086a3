// SPDX-License-Identifier: Apache-2.0
// The uvnvme control protocol of docs/uvnvme-control.md, without the socket: one JSON request line in,
// one JSON response line out, against whatever implements ControlTarget (the Driver, or a test's fake).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "uvnvme/controller.h"
#include "uvnvme/host_queue.h"

namespace nvmeadapt::uvnvme {

inline constexpr size_t kMaxRequestBytes = 4096;  // a request line without its '\n'

struct QueueInfo {
  uint32_t ctrl = 0;
  uint32_t qid = 0;
  ReapMode mode = ReapMode::kInterrupt;
  uint64_t submitted = 0;
  uint64_t completed = 0;
  uint64_t wakeups = 0;
  uint64_t mode_switches = 0;
  Coalescing coalescing;
};

class ControlTarget {
 public:
  virtual ~ControlTarget() = default;
  virtual std::vector<QueueInfo> ListQueues() const = 0;
  // Both return once the change is in effect; an error means nothing changed (or, for a timeout, says so).
  virtual Status SetMode(uint32_t ctrl, uint32_t qid, ReapMode mode) = 0;
  virtual Status SetCoalescing(uint32_t ctrl, uint32_t qid, Coalescing coalescing) = 0;
};

// `line` is one request without its newline; the result is one response without its newline.
std::string HandleControlRequest(std::string_view line, ControlTarget& target, pid_t pid);
std::string ControlErrorResponse(std::string_view message);

}  // namespace nvmeadapt::uvnvme
