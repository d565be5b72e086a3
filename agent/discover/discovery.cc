// SPDX-License-Identifier: Apache-2.0
#include "agent/discover/discovery.h"

#include <algorithm>
#include <tuple>

#include "agent/discover/fs.h"

namespace nvmeadapt::discover {

std::string_view VectorKindName(VectorKind kind) {
  switch (kind) {
    case VectorKind::kMsix: return "msix";
    case VectorKind::kMsi: return "msi";
    case VectorKind::kIntx: return "intx";
    case VectorKind::kEventfd: return "eventfd";
  }
  return "msix";
}

std::string_view IneligibilityName(Ineligibility reason) {
  switch (reason) {
    case Ineligibility::kNone: return "none";
    case Ineligibility::kAdminQueue: return "admin_queue";
    case Ineligibility::kPollQueue: return "poll_queue";
    case Ineligibility::kNotMsix: return "not_msix";
    case Ineligibility::kSharedVector: return "shared_vector";
    case Ineligibility::kThreaded: return "threaded_irq";
    case Ineligibility::kNoInterrupts: return "no_interrupts";
  }
  return "none";
}

std::string Controller::Identity() const {
  if (source == Source::kKernelNvme) return name + "|" + serial + "|" + address;
  return name + "|" + socket_path;
}

const Controller* Snapshot::Find(std::string_view wanted) const {
  for (const auto& c : controllers) {
    if (c.name == wanted) return &c;
  }
  return nullptr;
}

std::string UvnvmeControllerName(pid_t pid, uint32_t ctrl) {
  return "uvnvme:" + std::to_string(pid) + ":" + std::to_string(ctrl);
}

DiscoveryOptions DiscoveryOptions::UnderRoot(const std::string& root) {
  DiscoveryOptions options;
  options.sysfs_root = JoinPath(root, "sys");
  options.procfs_root = JoinPath(root, "proc");
  options.runtime_dir = JoinPath(root, "run");
  return options;
}

Snapshot Discover(const DiscoveryOptions& options) {
  Snapshot snapshot;
  if (options.kernel) {
    auto kernel = DiscoverKernel(options, &snapshot.skipped);
    if (kernel) {
      snapshot.controllers = std::move(*kernel);
    } else {
      snapshot.skipped.push_back(Skipped{JoinPath(options.sysfs_root, "class/nvme"), kernel.error()});
    }
  }
  if (options.uvnvme) {
    for (auto& c : DiscoverUvnvme(options, &snapshot.skipped)) snapshot.controllers.push_back(std::move(c));
  }
  std::sort(snapshot.controllers.begin(), snapshot.controllers.end(), [](const Controller& a, const Controller& b) {
    return std::tie(a.source, a.pid, a.instance) < std::tie(b.source, b.pid, b.instance);
  });
  return snapshot;
}

}  // namespace nvmeadapt::discover
