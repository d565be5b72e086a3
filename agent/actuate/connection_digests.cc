// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/connection_digests.h"

#include <nlohmann/json.hpp>

#include <vector>

#include "common/files.h"

namespace nvmeadapt::actuate {
namespace {

// nvme-cli's config is a few KiB; a bound keeps a mistaken path (a device, a huge file) from being read whole.
constexpr size_t kMaxConfigBytes = 4 << 20;
// libnvme's default service of the tcp transport, for a port that leaves trsvcid out.
constexpr char kDefaultTcpService[] = "4420";

std::string StringField(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// libnvme reads a missing flag as off; a value that is not a boolean is a mistake the operator must see.
Result<bool> FlagField(const nlohmann::json& object, const char* name, const std::string& where) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) return MakeError(ErrorCode::kIo, where + ": " + name + " is not true or false");
  return it->get<bool>();
}

// A field the port or host leaves out matches anything; one it gives must be the connection's.
bool Matches(const std::string& configured, const std::string& actual) {
  return configured.empty() || configured == actual;
}

bool PortMatches(const nlohmann::json& port, const PortKey& key) {
  const std::string transport = StringField(port, "transport");
  const std::string service = StringField(port, "trsvcid");
  return transport == "tcp" && StringField(port, "traddr") == key.traddr &&
         (service.empty() ? std::string(kDefaultTcpService) : service) == key.trsvcid &&
         Matches(StringField(port, "host_traddr"), key.host_traddr) &&
         Matches(StringField(port, "host_iface"), key.host_iface);
}

std::string Words(const ConnectionDigests& d) {
  std::string words = std::string("header digest ") + (d.hdr ? "on" : "off") + ", data digest " + (d.data ? "on" : "off");
  if (d.tls) words += std::string(", tls ") + (*d.tls ? "on" : "off");
  return words;
}

}  // namespace

Result<std::optional<ConnectionDigests>> DigestsFromNvmeConfig(const std::string& path, const PortKey& key) {
  auto text = ReadWholeFile(path, kMaxConfigBytes);
  if (!text && text.error().code == ErrorCode::kNotFound) return std::optional<ConnectionDigests>();
  if (!text) return MakeError(ErrorCode::kIo, "nvme-cli config " + path + ": " + text.error().message);
  const nlohmann::json root = nlohmann::json::parse(*text, nullptr, false);
  if (root.is_discarded()) return MakeError(ErrorCode::kIo, "nvme-cli config " + path + ": not JSON");
  const nlohmann::json* hosts = &root;
  if (root.is_object() && root.contains("hosts")) hosts = &root["hosts"];
  if (!hosts->is_array()) return MakeError(ErrorCode::kIo, "nvme-cli config " + path + ": not a list of hosts");
  std::optional<ConnectionDigests> found;
  for (const auto& host : *hosts) {
    if (!host.is_object() || !Matches(StringField(host, "hostnqn"), key.hostnqn)) continue;
    const auto subsystems = host.find("subsystems");
    if (subsystems == host.end() || !subsystems->is_array()) continue;
    for (const auto& subsystem : *subsystems) {
      if (!subsystem.is_object() || StringField(subsystem, "nqn") != key.nqn) continue;
      const auto ports = subsystem.find("ports");
      if (ports == subsystem.end() || !ports->is_array()) continue;
      for (const auto& port : *ports) {
        if (!port.is_object() || !PortMatches(port, key)) continue;
        const std::string where = "nvme-cli config " + path + ", port " + key.traddr + ":" + key.trsvcid + " of " + key.nqn;
        NA_ASSIGN_OR_RETURN(const bool hdr, FlagField(port, "hdr_digest", where));
        NA_ASSIGN_OR_RETURN(const bool data, FlagField(port, "data_digest", where));
        NA_ASSIGN_OR_RETURN(const bool tls, FlagField(port, "tls", where));
        const ConnectionDigests here{hdr, data, tls, path};
        if (found && (found->hdr != here.hdr || found->data != here.data || found->tls != here.tls)) {
          return MakeError(ErrorCode::kIo, where + ": listed twice, once with " + Words(*found) + " and once with " +
                                               Words(here));
        }
        found = here;
      }
    }
  }
  return found;
}

Result<ConnectionDigests> ResolveDigests(const std::string& controller, const std::optional<ConnectionDigests>& declared,
                                         const std::optional<ConnectionDigests>& configured,
                                         std::optional<bool> tls_in_sysfs, const std::string& config_path) {
  const std::string not_switched = ": not switched, the connection is left as it is";
  if (!declared && !configured) {
    return MakeError(ErrorCode::kUnsupported,
                     controller + ": its header and data digests are unknown (the kernel shows neither) and a "
                                  "reconnect would drop them: list its port in " + config_path +
                         " (hdr_digest, data_digest) or declare them in levers.controllers[].hdrDigest/dataDigest" +
                         not_switched);
  }
  if (declared && configured && (declared->hdr != configured->hdr || declared->data != configured->data)) {
    return MakeError(ErrorCode::kUnsupported, controller + ": " + declared->source + " declares " + Words(*declared) +
                                                  ", " + configured->source + " says " + Words(*configured) +
                                                  not_switched);
  }
  ConnectionDigests chosen = configured ? *configured : *declared;
  // TLS itself is carried from sysfs (tls_mode, tls_key); a config that says otherwise describes another
  // connection than the one running, and its digests cannot be trusted either.
  if (configured && configured->tls && tls_in_sysfs && *configured->tls != *tls_in_sysfs) {
    return MakeError(ErrorCode::kUnsupported,
                     controller + ": " + configured->source + " says tls " + (*configured->tls ? "on" : "off") +
                         ", the kernel shows tls " + (*tls_in_sysfs ? "on" : "off") + not_switched);
  }
  if (declared && configured) chosen.source = declared->source + " and " + configured->source;
  return chosen;
}

std::map<std::string, ConnectionDigests> DeclaredDigests(const config::LeverSettings& settings) {
  std::map<std::string, ConnectionDigests> declared;
  for (const auto& entry : settings.controllers) {
    if (entry.hdr_digest && entry.data_digest) {
      declared[entry.controller] = ConnectionDigests{*entry.hdr_digest, *entry.data_digest, std::nullopt,
                                                     "levers.controllers (" + entry.controller + ")"};
    }
  }
  return declared;
}

}  // namespace nvmeadapt::actuate
