// Where a kernel controller sits in an NVMe over Fabrics stack (docs/fabrics.md): "host" for a fabrics
// controller this node connected to (its transport is not pcie), "backing" for a local controller whose
// namespace an nvmet subsystem exports (configfs: nvmet/subsystems/*/namespaces/*/device_path), "local"
// otherwise. A bounded set: it is a metric label.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "agent/discover/discovery.h"

namespace nvmeadapt::discover {

inline constexpr std::string_view kLayerLocal = "local";
inline constexpr std::string_view kLayerHost = "host";
inline constexpr std::string_view kLayerTarget = "target";
inline constexpr std::string_view kLayerBacking = "backing";

// The block devices ("nvme0n1") the enabled namespaces of the node's nvmet subsystems export. Empty
// without nvmet (no configfs tree); unreadable entries are left out (a subsystem being torn down).
std::set<std::string> NvmetExportedDisks(const DiscoveryOptions& options);

// The controller's layer, from its transport and namespaces.
std::string_view ControllerLayer(const Controller& controller, const std::set<std::string>& exported);

}  // namespace nvmeadapt::discover
