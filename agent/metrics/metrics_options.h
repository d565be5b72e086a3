// SPDX-License-Identifier: Apache-2.0
// The `metrics` section of the agent's config, with its defaults applied and checked.
#pragma once

#include <cstddef>
#include <string>

#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::metrics {

inline constexpr std::string_view kDefaultListenAddress = "127.0.0.1:9464";
inline constexpr size_t kDefaultMaxTrackedQueues = 1024;
inline constexpr size_t kMaxMaxTrackedQueues = 65536;

struct MetricsOptions {
  std::string listen_address = std::string(kDefaultListenAddress);
  size_t max_tracked_queues = kDefaultMaxTrackedQueues;
  bool per_queue_interval_histogram = false;  // else per controller only (docs/metrics.md, "Cardinality")
};

// Empty fields take the defaults. Errors name the field: "metrics.listen_address: ...".
Result<MetricsOptions> MetricsOptionsFromConfig(const v1::MetricsConfig& config);
// "a.b.c.d:port" with a port 0..65535 (0: any free port). The HTTP server listens on IPv4 only.
Status ValidateListenAddress(std::string_view address);

}  // namespace nvmeadapt::metrics
