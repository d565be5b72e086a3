// SPDX-License-Identifier: Apache-2.0
// The header and data digests (and TLS) of an NVMe/TCP host connection, for the reconnect lever. The kernel
// shows neither digest anywhere (no sysfs attribute, on 6.1 as on the newest kernels: drivers/nvme/host/
// sysfs.c), so a reconnect rebuilt from sysfs alone would drop them silently. Two sources say them instead:
// nvme-cli's JSON config (/etc/nvme/config.json, what `nvme connect-all` and `nvme config` use: per host, per
// subsystem, per port `hdr_digest`, `data_digest`, `tls`) and the operator's declaration in the agent's
// config (levers.controllers[].hdr_digest/data_digest). A connection neither speaks of, or of which they
// disagree, is not switched (docs/fabrics.md).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "agent/config/levers_config.h"
#include "common/result.h"

namespace nvmeadapt::actuate {

// What identifies a connection's port in nvme-cli's config: as the connection's sysfs attributes say it.
struct PortKey {
  std::string hostnqn;
  std::string nqn;
  std::string traddr;
  std::string trsvcid;
  std::string host_traddr;  // empty when the connection has none
  std::string host_iface;
};

struct ConnectionDigests {
  bool hdr = false;
  bool data = false;
  std::optional<bool> tls;  // what the source says of TLS (nvme-cli's config only)
  std::string source;       // where this came from, for messages: "/etc/nvme/config.json", "levers.controllers"
};

// The port of `key` in the nvme-cli JSON config at `path` (a list of hosts, or {"hosts": [...]}, as libnvme
// writes either): nullopt when the file does not exist or lists no such port (a port's missing digest or tls
// key is off, as libnvme reads it). kIo naming the file when it cannot be read or parsed, or two ports of
// the connection in it disagree.
Result<std::optional<ConnectionDigests>> DigestsFromNvmeConfig(const std::string& path, const PortKey& key);

// The digests a reconnect of `controller` must ask for, from the declaration and nvme-cli's config, checked
// against what sysfs shows of TLS (`tls_in_sysfs`: nullopt where the kernel cannot say). kUnsupported (before
// anything is disconnected) when neither source speaks of the connection, or two of them disagree.
Result<ConnectionDigests> ResolveDigests(const std::string& controller, const std::optional<ConnectionDigests>& declared,
                                         const std::optional<ConnectionDigests>& configured,
                                         std::optional<bool> tls_in_sysfs, const std::string& config_path);

// The digests the config declares, per controller (levers.controllers[].hdrDigest/dataDigest, both set).
std::map<std::string, ConnectionDigests> DeclaredDigests(const config::LeverSettings& settings);

}  // namespace nvmeadapt::actuate
