// SPDX-License-Identifier: Apache-2.0
// The queue a lever acts for, with everything any lever may need. Header-only and free of discovery types, so
// that the daemon's discovered queues carry it to the levers (discovery fills it with actuate::TargetFor).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/vocabulary.h"

namespace nvmeadapt::actuate {

struct LeverTarget {
  std::string controller;           // "nvme0", "uvnvme:1234:0"
  uint32_t qid = 0;
  std::optional<uint32_t> irq;      // kernel: Linux IRQ of the queue's vector (GSIM)
  std::optional<uint32_t> vector;   // kernel: NVMe interrupt vector (IV) of the queue's CQ (coalescing)
  std::string socket_path;          // uvnvme: the process's control socket
  uint32_t ctrl_index = 0;          // uvnvme: the controller's index in the process
  std::string subsysnqn;            // nvmet: the subsystem the target controller serves ("": not known)

  std::string ToString() const { return QueueObjectName(controller, qid); }  // "nvme0 q1"
  bool operator==(const LeverTarget&) const = default;
};

}  // namespace nvmeadapt::actuate
