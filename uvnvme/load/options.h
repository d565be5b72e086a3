// SPDX-License-Identifier: Apache-2.0
// uvnvme-load's command line: a fio-like description of the load and the device model.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "uvnvme/driver.h"
#include "uvnvme/host_queue.h"
#include "uvnvme/load/option_values.h"

namespace nvmeadapt::uvnvme::load {

struct LoadOptions {
  DriverConfig driver;     // controllers, queues, entries, model, coalescing, initial mode
  uint32_t jobs = 0;       // 0: one per queue; job j drives queue j mod queues
  uint32_t queue_depth = 1;
  uint32_t block_bytes = 4096;
  uint32_t read_percent = 100;
  int64_t io_work_ns = 0;  // --io-work-us: the application's own CPU work per completion (app_work.h)
  std::vector<int> host_cpus;  // the reaper threads' CPUs; empty: any
  std::string device_clock_requested = "auto";  // --device-clock; driver.device_clock is what it resolved to
  bool external = false;   // --mode external: start in interrupt mode, never switch (the agent does)
  std::vector<Phase> phases;  // always at least one (from --runtime and --qd without --phases)
  bool json = false;
  bool socket = true;
  std::string runtime_dir = "/run";
  uint64_t seed = 1;
};

inline constexpr uint64_t kMaxQueuePhases = 4096;  // queues x phases: each keeps two 18 KiB histograms

// Errors name the argument: "--qd: expected a positive integer, got 'x'".
Result<LoadOptions> ParseLoadOptions(std::span<const std::string_view> args);
std::string LoadUsage();  // generated from the option table: every option, its value and help

// --device-clock auto: faithful when the controller threads have CPUs of their own (--controller-cpus
// with at least one CPU per controller thread, none of them in --host-cpus, which is given), else sleeping.
DeviceClock AutoDeviceClock(const DriverConfig& driver, const std::vector<int>& host_cpus);

}  // namespace nvmeadapt::uvnvme::load
