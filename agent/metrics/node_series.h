// SPDX-License-Identifier: Apache-2.0
// What the metrics show of the node layer (docs/metrics.md, "Node layer").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "agent/engine/node.h"

namespace nvmeadapt::metrics {

// The node layer (agent/engine/node.h) as the daemon runs it: its deferrals and ended runs by reason word
// (four values: a bounded label), what it spends and may spend, and the node's CPU pressure.
struct NodeSeries {
  std::array<uint64_t, engine::kNodeReasonCount> deferred{};  // by index in kNodeReasons
  std::array<uint64_t, engine::kNodeReasonCount> ended{};
  double polling_cores = 0;
  std::optional<double> budget_cores;  // absent: no budget
  std::optional<double> pressure_some_avg10;
  std::optional<double> pressure_full_avg10;
  size_t decided_queues = 0;  // eligible queues whose policy has node_layer
};

}  // namespace nvmeadapt::metrics
