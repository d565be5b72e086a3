// SPDX-License-Identifier: Apache-2.0
// Where a kernel controller sits in an NVMe over Fabrics stack (docs/fabrics.md): "host" for a fabrics
// controller this node connected to (its transport is not pcie), "backing" for a local controller whose
// namespace an nvmet subsystem exports (configfs: nvmet/subsystems/*/namespaces/*/device_path), "local"
// otherwise. A bounded set: it is a metric label.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/discover/discovery.h"

namespace nvmeadapt::discover {

inline constexpr std::string_view kLayerLocal = "local";
inline constexpr std::string_view kLayerHost = "host";
inline constexpr std::string_view kLayerTarget = "target";
inline constexpr std::string_view kLayerBacking = "backing";

// The block devices ("nvme0n1") the enabled namespaces of the node's nvmet subsystems export. Empty
// without nvmet (no configfs tree); unreadable entries are left out (a subsystem being torn down).
std::set<std::string> NvmetExportedDisks(const DiscoveryOptions& options);

// How many poll queues a fabrics host controller (its /sys/class/nvme/nvmeN directory) runs now. sysfs names
// none: a namespace's queue/io_poll says whether there are any (0 -> 0); with some, the connection asked
// for the default I/O queues (one per online CPU, nvme_tcp caps them there) and the rest of queue_count
// minus the admin queue are poll queues (at least 1). nullopt when no namespace says (none attached yet).
// The poll queues are the last qids (nvme_tcp orders them default, read, poll).
// The number of online CPUs from {sysfs}/devices/system/cpu/online; sysconf's when that is unreadable.
uint32_t OnlineCpus(const std::string& sysfs_root);
std::optional<uint32_t> FabricsPollQueues(const std::string& controller_dir, uint32_t online_cpus);

// The fields of a fabrics controller's `address` attribute ("traddr=10.0.0.2,trsvcid=4420,src_addr=10.0.0.9"),
// in the kernel's order; a field without '=' is left out.
std::vector<std::pair<std::string, std::string>> FabricsAddressFields(const std::string& address);

// The controller's layer, from its transport and namespaces.
std::string_view ControllerLayer(const Controller& controller, const std::set<std::string>& exported);

}  // namespace nvmeadapt::discover
