// SPDX-License-Identifier: Apache-2.0
#include "agent/metrics/metrics_options.h"

#include <arpa/inet.h>

#include <charconv>

namespace nvmeadapt::metrics {

Status ValidateListenAddress(std::string_view address) {
  auto invalid = [&](std::string_view why) {
    return MakeError(ErrorCode::kInvalidArgument, "metrics.listen_address: '" + std::string(address) + "' " +
                                                      std::string(why) + " (expected IPV4:PORT, e.g. 127.0.0.1:9464)");
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return invalid("has no port");
  const std::string host(address.substr(0, colon));
  const std::string_view port = address.substr(colon + 1);
  in_addr parsed{};
  if (host.empty() || inet_pton(AF_INET, host.c_str(), &parsed) != 1) {
    // civetweb as Debian builds it listens on IPv4 addresses only: no IPv6, no host names.
    return invalid("has no IPv4 address");
  }
  unsigned value = 0;
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || value > 65535) {
    return invalid("has a bad port");
  }
  return OkStatus();
}

Result<MetricsOptions> MetricsOptionsFromConfig(const v1::MetricsConfig& config) {
  MetricsOptions options;
  if (!config.listen_address().empty()) options.listen_address = config.listen_address();
  NA_RETURN_IF_ERROR(ValidateListenAddress(options.listen_address));
  if (config.max_tracked_queues() > kMaxMaxTrackedQueues) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "metrics.max_tracked_queues: " + std::to_string(config.max_tracked_queues()) +
                         " is above the limit of " + std::to_string(kMaxMaxTrackedQueues));
  }
  if (config.max_tracked_queues() != 0) options.max_tracked_queues = config.max_tracked_queues();
  options.per_queue_interval_histogram = config.per_queue_interval_histogram();
  return options;
}

}  // namespace nvmeadapt::metrics
