// SPDX-License-Identifier: Apache-2.0
#include "agent/discover/fabrics_layer.h"

#include <unistd.h>

#include <algorithm>

#include "agent/discover/fs.h"
#include "agent/discover/procfs_parse.h"

namespace nvmeadapt::discover {
namespace {

// nvme0c0n1 (a path of a multipath head) -> nvme0n1; any other name as it is. A target exports the head.
std::string HeadName(const std::string& name) {
  const size_t c = name.find('c', 4);
  const size_t n = name.rfind('n');
  if (c == std::string::npos || n == std::string::npos || n < c) return name;
  return name.substr(0, c) + name.substr(n);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FabricsAddressFields(const std::string& address) {
  std::vector<std::pair<std::string, std::string>> fields;
  size_t start = 0;
  while (start < address.size()) {
    const size_t end = std::min(address.find(',', start), address.size());
    const std::string field = address.substr(start, end - start);
    if (const size_t eq = field.find('='); eq != std::string::npos) {
      fields.emplace_back(field.substr(0, eq), field.substr(eq + 1));
    }
    start = end + 1;
  }
  return fields;
}

std::set<std::string> NvmetExportedDisks(const DiscoveryOptions& options) {
  std::set<std::string> disks;
  const std::string subsystems = JoinPath(options.sysfs_root, "kernel/config/nvmet/subsystems");
  auto names = ListDir(subsystems);
  if (!names) return disks;
  for (const auto& subsystem : *names) {
    const std::string ns_dir = JoinPath(JoinPath(subsystems, subsystem), "namespaces");
    auto namespaces = ListDir(ns_dir);
    if (!namespaces) continue;
    for (const auto& ns : *namespaces) {
      const std::string dir = JoinPath(ns_dir, ns);
      auto enabled = ReadTrimmed(JoinPath(dir, "enable"));
      auto device = ReadTrimmed(JoinPath(dir, "device_path"));
      if (!enabled || *enabled != "1" || !device) continue;
      const size_t slash = device->rfind('/');
      disks.insert(slash == std::string::npos ? *device : device->substr(slash + 1));
    }
  }
  return disks;
}

uint32_t OnlineCpus(const std::string& sysfs_root) {
  if (auto text = ReadTrimmed(JoinPath(sysfs_root, "devices/system/cpu/online"))) {
    if (auto cpus = ParseCpuList(*text); cpus && !cpus->empty()) return static_cast<uint32_t>(cpus->size());
  }
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<uint32_t>(n) : 1u;
}

std::optional<uint32_t> FabricsPollQueues(const std::string& controller_dir, uint32_t online_cpus) {
  auto entries = ListDir(controller_dir);
  if (!entries) return std::nullopt;
  std::optional<bool> polled;
  for (const auto& entry : *entries) {
    if (entry.rfind("nvme", 0) != 0) continue;
    auto io_poll = ReadTrimmed(JoinPath(JoinPath(JoinPath(controller_dir, entry), "queue"), "io_poll"));
    if (!io_poll) continue;
    polled = *io_poll == "1";
    break;
  }
  if (!polled) return std::nullopt;
  if (!*polled) return 0u;
  uint32_t queue_count = 0;
  auto text = ReadTrimmed(JoinPath(controller_dir, "queue_count"));
  if (text) ParseU32(*text, &queue_count);
  const uint32_t io_queues = queue_count > 0 ? queue_count - 1 : 0;
  return io_queues > online_cpus ? io_queues - online_cpus : 1u;
}

std::string_view ControllerLayer(const Controller& controller, const std::set<std::string>& exported) {
  if (!controller.transport.empty() && controller.transport != "pcie") return kLayerHost;
  for (const Namespace& ns : controller.namespaces) {
    if (exported.contains(ns.name) || exported.contains(HeadName(ns.name))) return kLayerBacking;
  }
  return kLayerLocal;
}

}  // namespace nvmeadapt::discover
