// SPDX-License-Identifier: Apache-2.0
// A decision as the API, the event stream and the log keep it.
#pragma once

#include <cstdint>

#include "agent/engine/types.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

// `wall_minus_monotonic` turns the decision's instant into wall-clock time. Whether it was applied, its lever
// error and the node layer's reason are the caller's to add.
v1::Decision DecisionProto(const engine::Decision& decision, int64_t wall_minus_monotonic);

// False for the window-by-window outcomes that change nothing: as events or log lines they would flood both.
bool Notable(const engine::Decision& decision);
// True for a decision that changes the queue's state as an operator reads the log: a switch, a backoff begun
// or over, an override set or ended. Shadow's "would poll" and a deferred try change nothing (issue 45).
bool ChangesState(const engine::Decision& decision);

}  // namespace nvmeadapt::daemon
