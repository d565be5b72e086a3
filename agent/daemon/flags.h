// SPDX-License-Identifier: Apache-2.0
// nvme-adaptd's command line. Flags override the config file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/engine/types.h"
#include "common/result.h"

namespace nvmeadapt::daemon {

struct DaemonFlags {
  bool help = false;
  bool version = false;
  std::string config_path;  // empty: the default path, which may be absent
  bool config_explicit = false;
  std::optional<std::string> state_dir;
  std::optional<std::string> runtime_dir;
  std::optional<std::string> log_level;
  std::optional<engine::ControllerMode> default_mode;
  bool dry_run = false;
  bool restore_only = false;  // put the journal back and exit
  std::optional<std::string> check_config;  // validate this config file offline and exit
  std::string record_windows;
  std::optional<std::string> api_socket;
  std::optional<std::string> metrics_listen;
  std::optional<std::string> cpu_scheduling;  // batch, normal
  std::optional<std::string> sources;  // comma-separated: kernel,uvnvme,block
  std::optional<double> exit_after_seconds;
  std::optional<double> min_disruptive_interval_seconds;
  std::optional<double> target_idle_seconds;  // the NVMe target's queues leave the list after this long idle
};

// On CLI11, as nvme-adaptctl's command line. Errors are one line naming the flag; durations are the one grammar
// (common/duration.h) or a bare number of seconds, the flags' older form.
Result<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args);
std::string DaemonUsage();

}  // namespace nvmeadapt::daemon
