// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/wiring.h"

#include <set>
#include <sstream>

#include "agent/config/levers_config.h"
#include "agent/daemon/real_ports.h"

namespace nvmeadapt::daemon {
namespace {

struct Sources {
  bool kernel = true;
  bool uvnvme = true;
  bool block = false;
};

Result<Sources> ParseSources(const std::optional<std::string>& list) {
  if (!list) return Sources{};
  Sources sources{false, false, false};
  std::stringstream in(*list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::optional<Source> source = ParseSource(item);
    if (source == Source::kKernelNvme) {
      sources.kernel = true;
    } else if (source == Source::kUvnvme) {
      sources.uvnvme = true;
    } else if (source == Source::kBlock) {
      sources.block = true;
    } else {
      return MakeError(ErrorCode::kInvalidArgument,
                       "--sources: unknown source '" + item + "' (kernel, uvnvme, block)");
    }
  }
  return sources;
}

// The discovery that the levers read controller details from lives as long as both.
class OwningLevers : public RealLevers {
 public:
  OwningLevers(config::LeverSettings settings, actuate::LeverEnvironment environment,
               std::shared_ptr<RealDiscovery> discovery)
      : RealLevers(std::move(settings), std::move(environment), *discovery), discovery_(std::move(discovery)) {}

 private:
  std::shared_ptr<RealDiscovery> discovery_;
};

class SharedDiscovery : public Discovery {
 public:
  explicit SharedDiscovery(std::shared_ptr<RealDiscovery> discovery) : discovery_(std::move(discovery)) {}
  Result<std::vector<DiscoveredQueue>> Scan() override { return discovery_->Scan(); }

 private:
  std::shared_ptr<RealDiscovery> discovery_;
};

// The NVMe target's queues are found from the collector's counts (discover/target_queues.h).
RealDiscovery::ObservedTargets ObservedTargetsOf(const collect::Collector* collector) {
  return [collector] {
    std::vector<discover::ObservedTargetQueue> targets;
    for (const QueueKey& key : collector->ObservedQueues()) {
      if (key.source != Source::kNvmet) continue;
      auto counters = collector->ReadCounters(key);
      if (!counters) continue;  // forgotten since it was listed
      targets.push_back({key.ctrl, key.qid, counters->completions});
    }
    return targets;
  };
}

}  // namespace

Result<Components> BuildComponents(const v1::Config& config, const DaemonFlags& flags) {
  NA_ASSIGN_OR_RETURN(auto sources, ParseSources(flags.sources));
  NA_ASSIGN_OR_RETURN(auto settings, config::LeverSettingsFromConfig(config));
  if (flags.dry_run) settings.dry_run = true;

  collect::CollectorOptions collector_options;
  collector_options.kernel_nvme = sources.kernel;
  collector_options.block = sources.block;
  NA_ASSIGN_OR_RETURN(auto collector, collect::OpenCollector(collector_options));

  discover::DiscoveryOptions discovery_options;
  discovery_options.runtime_dir = config.runtime_dir();
  discovery_options.kernel = sources.kernel;
  discovery_options.uvnvme = sources.uvnvme;
  if (flags.target_idle_seconds) {
    discovery_options.target_idle = static_cast<engine::Nanos>(*flags.target_idle_seconds * 1e9);
  }
  // The components own the collector as long as the discovery that asks it.
  auto discovery = std::make_shared<RealDiscovery>(discovery_options, ObservedTargetsOf(collector.get()));

  Components components;
  components.collector = std::move(collector);
  components.levers = std::make_unique<OwningLevers>(std::move(settings), actuate::LeverEnvironment{}, discovery);
  components.discovery = std::make_unique<SharedDiscovery>(std::move(discovery));
  return components;
}

}  // namespace nvmeadapt::daemon
