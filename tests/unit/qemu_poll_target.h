// SPDX-License-Identifier: Apache-2.0
// The lever target of a queue of the captured qemu-poll tree (tests/data/sysfs): nvme0 qQID on IRQ 28 + QID.
#pragma once

#include <cstdint>

#include "agent/actuate/lever.h"

namespace nvmeadapt::actuate {

inline LeverTarget Nvme0(uint32_t qid = 1) {
  LeverTarget target;
  target.controller = "nvme0";
  target.qid = qid;
  target.irq = 28 + qid;
  target.vector = qid;
  return target;
}

}  // namespace nvmeadapt::actuate
