#include "agent/discover/fabrics_layer.h"

#include "agent/discover/fs.h"

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

std::string_view ControllerLayer(const Controller& controller, const std::set<std::string>& exported) {
  if (!controller.transport.empty() && controller.transport != "pcie") return kLayerHost;
  for (const Namespace& ns : controller.namespaces) {
    if (exported.contains(ns.name) || exported.contains(HeadName(ns.name))) return kLayerBacking;
  }
  return kLayerLocal;
}

}  // namespace nvmeadapt::discover
