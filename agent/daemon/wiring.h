// SPDX-License-Identifier: Apache-2.0
// Builds the daemon's real components from its config: the collector (BPF, or the procfs fallback),
// discovery over sysfs/procfs and uvnvme sockets, and the levers.
#pragma once

#include <memory>

#include "agent/collect/collector.h"
#include "agent/daemon/flags.h"
#include "agent/daemon/ports.h"
#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::daemon {

struct Components {
  std::unique_ptr<collect::Collector> collector;
  std::unique_ptr<Discovery> discovery;
  std::unique_ptr<Levers> levers;
};

Result<Components> BuildComponents(const v1::Config& config, const DaemonFlags& flags);

}  // namespace nvmeadapt::daemon
