// SPDX-License-Identifier: Apache-2.0
// The daemon's ports over the real modules: discovery over agent/discover, levers over agent/actuate.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/actuate/resolver.h"
#include "agent/config/levers_config.h"
#include "agent/daemon/ports.h"
#include "agent/discover/discovery.h"
#include "agent/discover/target_queues.h"
#include "common/clock.h"

namespace nvmeadapt::daemon {

// Scans run on the agent's scan worker while levers read the last snapshot on the loop and the switch
// workers: the snapshot is replaced whole, never changed in place.
class RealDiscovery : public Discovery {
 public:
  // The NVMe target's queues the collector counts now (discover/target_queues.h); empty: none are listed.
  using ObservedTargets = std::function<std::vector<discover::ObservedTargetQueue>()>;

  explicit RealDiscovery(discover::DiscoveryOptions options, ObservedTargets observed_targets = {},
                         std::function<engine::Nanos()> monotonic = MonotonicNanos)
      : options_(std::move(options)), observed_targets_(std::move(observed_targets)),
        monotonic_(std::move(monotonic)) {}
  Result<std::vector<DiscoveredQueue>> Scan() override;  // one at a time
  // The last scan, with the controller details levers need.
  std::shared_ptr<const discover::Snapshot> snapshot() const;

 private:
  discover::Snapshot DiscoverAll();

  discover::DiscoveryOptions options_;
  ObservedTargets observed_targets_;
  std::function<engine::Nanos()> monotonic_;
  discover::TargetQueueActivity target_activity_;  // the scan's: scans run one at a time
  mutable std::mutex mutex_;
  std::shared_ptr<const discover::Snapshot> snapshot_ = std::make_shared<discover::Snapshot>();  // mutex_
  std::map<std::string, std::string> reported_skips_;  // last scan's unreadable sources and why
};

// Thread-safe: the loop asks which lever serves a queue while controllers' workers plan and execute (each
// controller's switches one at a time; different controllers' at once). A plan reads the device once and
// carries what its Execute writes; it keeps its lever, so it outlives a device replaced meanwhile.
class RealLevers : public Levers {
 public:
  RealLevers(config::LeverSettings settings, actuate::LeverEnvironment environment, const RealDiscovery& discovery)
      : settings_(std::move(settings)), environment_(std::move(environment)), discovery_(discovery) {}

  std::optional<std::string> LeverNameFor(const DiscoveredQueue& queue) const override;
  engine::ControllerMode ModeFor(const DiscoveredQueue& queue, engine::ControllerMode mode) const override;
  bool Disruptive(const DiscoveredQueue& queue) const override;
  Result<LeverPlan> Plan(const DiscoveredQueue& queue, ReapMode mode) override;
  Status Restore(const v1::JournalEntry& entry) override;

 private:
  struct ControllerLever {
    std::string identity;  // the device it was resolved for
    std::string journal_identity;  // the same, as journal entries record it
    actuate::LeverChoice choice;
    std::shared_ptr<actuate::PlannedLever> lever;  // shared: a switch keeps its lever if the device is replaced
  };

  // The lever of a controller in the last snapshot, resolved once per device (a copy: nullopt when the
  // controller is not in the snapshot).
  std::optional<ControllerLever> For(const std::string& controller) const;

  config::LeverSettings settings_;
  actuate::LeverEnvironment environment_;
  const RealDiscovery& discovery_;
  mutable std::mutex mutex_;  // guards levers_; never held while a lever runs
  mutable std::map<std::string, ControllerLever> levers_;
};

}  // namespace nvmeadapt::daemon
