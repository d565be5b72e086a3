// SPDX-License-Identifier: Apache-2.0
// What GetStatus and ListQueues show of a queue, the node layer and the kernel, built from the loop's state.
#pragma once

#include <cstdint>

#include "agent/daemon/managed_queues.h"
#include "agent/daemon/node_decider.h"
#include "agent/daemon/payoff_listener.h"
#include "agent/engine/engine.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

// `view`: the engine's; `wall_minus_monotonic` turns the override's expiry into wall-clock time.
v1::QueueInfo DescribeQueue(const ManagedQueue& queue, const engine::QueueView& view, const QueuePayoffRecord* payoff,
                            int64_t wall_minus_monotonic);

v1::NodeStatus DescribeNode(const NodeDecider& node);

// The node's kernel release and whether it has BTF (what the BPF collector's programs need), for reports.
void DescribeKernel(v1::GetStatusResponse& status);

}  // namespace nvmeadapt::daemon
