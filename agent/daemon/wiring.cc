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

}  // namespace

Result<Components> BuildComponents(const v1::Config& config, const DaemonFlags& flags) {
  auto sources = ParseSources(flags.sources);
  if (!sources) return sources.error();
  auto settings = config::LeverSettingsFromConfig(config);
  if (!settings) return settings.error();
  if (flags.dry_run) settings->dry_run = true;

  collect::CollectorOptions collector_options;
  collector_options.kernel_nvme = sources->kernel;
  collector_options.block = sources->block;
  auto collector = collect::OpenCollector(collector_options);
  if (!collector) return collector.error();

  discover::DiscoveryOptions discovery_options;
  discovery_options.runtime_dir = config.runtime_dir();
  discovery_options.kernel = sources->kernel;
  discovery_options.uvnvme = sources->uvnvme;
  auto discovery = std::make_shared<RealDiscovery>(discovery_options);

  Components components;
  components.collector = std::move(*collector);
  components.levers = std::make_unique<OwningLevers>(std::move(*settings), actuate::LeverEnvironment{}, discovery);
  components.discovery = std::make_unique<SharedDiscovery>(std::move(discovery));
  return components;
}

}  // namespace nvmeadapt::daemon
