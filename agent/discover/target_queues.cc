// SPDX-License-Identifier: Apache-2.0
#include "agent/discover/target_queues.h"

#include <map>

#include "agent/discover/fabrics_layer.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::discover {

namespace {

// What the nvmet ports export: their transports and the subsystems linked to them.
struct NvmetExports {
  std::set<std::string> transports;
  std::set<std::string> subsystems;
};

NvmetExports ReadNvmetExports(const DiscoveryOptions& options) {
  NvmetExports exports;
  const std::string ports = JoinPath(options.sysfs_root, "kernel/config/nvmet/ports");
  auto names = ListDir(ports);
  if (!names) return exports;
  for (const auto& port : *names) {
    const std::string dir = JoinPath(ports, port);
    auto exported = ListDir(JoinPath(dir, "subsystems"));
    auto trtype = ReadTrimmed(JoinPath(dir, "addr_trtype"));
    if (!exported || exported->empty() || !trtype || trtype->empty()) continue;  // a port being set up or torn down
    exports.transports.insert(*trtype);
    exports.subsystems.insert(exported->begin(), exported->end());
  }
  return exports;
}

// nvmet's defaults (NVME_CNTLID_MIN, NVME_CNTLID_MAX) where a kernel has no attribute or it is unreadable.
constexpr uint32_t kCntlidMin = 1;
constexpr uint32_t kCntlidMax = 0xffef;

uint32_t ReadCntlidBound(const std::string& path, uint32_t fallback) {
  auto text = ReadTrimmed(path);
  uint32_t value = 0;
  return text && ParseU32(*text, &value) ? value : fallback;
}

std::string SubsystemHolding(const DiscoveryOptions& options, const std::set<std::string>& exported,
                             uint32_t cntlid) {
  std::string found;
  for (const std::string& nqn : exported) {
    const std::string dir = JoinPath(JoinPath(options.sysfs_root, "kernel/config/nvmet/subsystems"), nqn);
    if (cntlid < ReadCntlidBound(JoinPath(dir, "attr_cntlid_min"), kCntlidMin) ||
        cntlid > ReadCntlidBound(JoinPath(dir, "attr_cntlid_max"), kCntlidMax)) {
      continue;
    }
    if (!found.empty()) return "";  // two ranges hold it: either may have given it
    found = nqn;
  }
  return found;
}

}  // namespace

std::set<std::string> NvmetExportTransports(const DiscoveryOptions& options) {
  return ReadNvmetExports(options).transports;
}

std::string NvmetSubsystemOf(const DiscoveryOptions& options, uint32_t cntlid) {
  return SubsystemHolding(options, ReadNvmetExports(options).subsystems, cntlid);
}

std::string TargetTransport(const std::set<std::string>& exported) {
  return exported.size() == 1 ? *exported.begin() : "unknown";
}

std::vector<ObservedTargetQueue> TargetQueueActivity::Active(const std::vector<ObservedTargetQueue>& observed,
                                                             engine::Nanos now, engine::Nanos idle) {
  std::map<std::pair<uint32_t, uint32_t>, Seen> seen;
  std::vector<ObservedTargetQueue> active;
  for (const ObservedTargetQueue& queue : observed) {
    const auto key = std::make_pair(queue.cntlid, queue.qid);
    Seen now_seen{queue.completions, now};
    if (const auto before = seen_.find(key); before != seen_.end() && before->second.completions == queue.completions) {
      now_seen.changed = before->second.changed;
    }
    if (now - now_seen.changed <= idle) active.push_back(queue);
    seen.emplace(key, now_seen);
  }
  seen_ = std::move(seen);
  return active;
}

std::vector<Controller> DiscoverTargets(const DiscoveryOptions& options,
                                        const std::vector<ObservedTargetQueue>& active) {
  std::map<uint32_t, std::map<uint32_t, Queue>> by_controller;
  for (const ObservedTargetQueue& seen : active) {
    Queue q;
    q.qid = seen.qid;
    q.key = QueueKey{Source::kNvmet, seen.cntlid, seen.qid, 0};
    q.mode = ReapMode::kInterrupt;  // as the header says, whatever pqt_enable is now
    q.eligible = seen.qid != 0;
    if (!q.eligible) {
      q.reason = Ineligibility::kAdminQueue;
      q.reason_text = "admin queue";
    }
    by_controller[seen.cntlid].emplace(seen.qid, std::move(q));
  }
  if (by_controller.empty()) return {};
  const NvmetExports exports = ReadNvmetExports(options);
  const std::string transport = TargetTransport(exports.transports);
  std::vector<Controller> controllers;
  for (auto& [cntlid, queues] : by_controller) {
    Controller c;
    c.name = NvmetControllerName(cntlid);
    c.source = Source::kNvmet;
    c.instance = cntlid;
    c.model = "nvmet";
    c.transport = transport;
    c.layer = std::string(kLayerTarget);
    c.state = "live";
    c.subsysnqn = SubsystemHolding(options, exports.subsystems, cntlid);
    for (auto& [qid, q] : queues) c.queues.push_back(std::move(q));
    controllers.push_back(std::move(c));
  }
  return controllers;
}

}  // namespace nvmeadapt::discover
