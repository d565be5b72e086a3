// The daemon's ports over the real modules: discovery over agent/discover, levers over agent/actuate.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "agent/actuate/resolver.h"
#include "agent/config/levers_config.h"
#include "agent/daemon/ports.h"
#include "agent/discover/discovery.h"

namespace nvmeadapt::daemon {

class RealDiscovery : public Discovery {
 public:
  explicit RealDiscovery(discover::DiscoveryOptions options) : options_(std::move(options)) {}
  Result<std::vector<DiscoveredQueue>> Scan() override;
  // The last scan, with the controller details levers need.
  const discover::Snapshot& snapshot() const { return snapshot_; }

 private:
  discover::DiscoveryOptions options_;
  discover::Snapshot snapshot_;
  std::map<std::string, std::string> reported_skips_;  // last scan's unreadable sources and why
};

// Writes a journal entry's restore point back with a new lever of its kind, never in dry run: what the
// daemon runs before anything else at start, and --restore-only.
Status RestoreWithFreshLever(const v1::JournalEntry& entry, const config::LeverSettings& settings,
                             const actuate::LeverEnvironment& environment);

class RealLevers : public Levers {
 public:
  RealLevers(config::LeverSettings settings, actuate::LeverEnvironment environment, const RealDiscovery& discovery)
      : settings_(std::move(settings)), environment_(std::move(environment)), discovery_(discovery) {}

  std::string LeverFor(const DiscoveredQueue& queue) const override;
  engine::ControllerMode ModeFor(const DiscoveredQueue& queue, engine::ControllerMode mode) const override;
  bool Disruptive(const DiscoveredQueue& queue) const override;
  Result<LeverPlan> Plan(const DiscoveredQueue& queue, engine::ReapMode mode) override;
  Status Apply(const LeverPlan& plan) override;
  Status Restore(const v1::JournalEntry& entry) override;

 private:
  struct ControllerLever {
    std::string identity;  // the device it was resolved for
    std::string journal_identity;  // the same, as journal entries record it
    actuate::LeverChoice choice;
    std::unique_ptr<actuate::PlannedLever> lever;
  };
  struct Pending {
    actuate::PlannedLever* lever = nullptr;
    actuate::LeverTarget target;
    engine::ReapMode mode = engine::ReapMode::kInterrupt;
  };

  // The lever of a controller in the last snapshot, resolved once per device.
  ControllerLever* For(const std::string& controller) const;

  config::LeverSettings settings_;
  actuate::LeverEnvironment environment_;
  const RealDiscovery& discovery_;
  mutable std::map<std::string, ControllerLever> levers_;
  std::map<std::string, Pending> pending_;  // by journal target, between Plan and Apply
};

}  // namespace nvmeadapt::daemon
