// SPDX-License-Identifier: Apache-2.0
// The `node` section of the config (config.proto NodeConfig) as the node layer's settings (agent/engine/node.h)
// with the defaults applied, and how often the daemon reads the node's facts. A bad value is refused with the
// field named ("node.min_headroom: ...").
#pragma once

#include "agent/engine/node.h"
#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::config {

struct NodeLayerConfig {
  // enabled is always true here: the layer decides the queues whose policy has node_layer set (each
  // queue's NodeQueue.decided), so that a policy change turns it on or off per controller without a reload.
  engine::NodeSettings settings;
  engine::Nanos facts_interval = 1'000'000'000;
  bool operator==(const NodeLayerConfig&) const = default;
};

inline constexpr engine::Nanos kMinFactsInterval = 100'000'000;
inline constexpr engine::Nanos kMaxFactsInterval = 60'000'000'000;

Result<NodeLayerConfig> NodeLayerFromConfig(const v1::NodeConfig& node);
// The settings in force as the config's message (GetStatus shows them).
v1::NodeConfig NodeLayerToProto(const NodeLayerConfig& node);

}  // namespace nvmeadapt::config
