// SPDX-License-Identifier: Apache-2.0
#include "agent/state/device_identity.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "agent/discover/fabrics_layer.h"
#include "agent/discover/fs.h"
#include "common/files.h"

namespace nvmeadapt::state {
namespace {

std::string FirstLine(const std::string& path) {
  auto text = ReadWholeFile(path, 4096);
  if (!text) return "";
  std::string line = text->substr(0, text->find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
  size_t start = line.find_first_not_of(" \t");
  return start == std::string::npos ? "" : line.substr(start);
}

// "nvme-" and 16 hex digits of FNV-1a, 64 bits, of `identity`: short, label-safe, the same on every node.
std::string HashedId(std::string_view identity) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char byte : identity) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "nvme-";
  for (int shift = 60; shift >= 0; shift -= 4) id += kHex[(hash >> shift) & 15];
  return id;
}

// A fabrics host's identity (KernelControllerIdentity): neither a PCIe controller's nor a process's.
bool IsFabricsIdentity(const std::string& identity) {
  return !identity.empty() && identity.rfind("pci=", 0) != 0 && identity.rfind("pid=", 0) != 0;
}

}  // namespace

std::string ReadBootId(const std::string& procfs_root) {
  return FirstLine(procfs_root + "/sys/kernel/random/boot_id");
}

std::string KernelControllerIdentity(const std::string& transport, const std::string& address,
                                     const std::string& subsysnqn, const std::string& serial) {
  if (transport.empty() || transport == "pcie") return "pci=" + address + " serial=" + serial;
  std::string connection;
  for (const auto& [name, value] : discover::FabricsAddressFields(address)) {
    if (name != "src_addr") connection += (connection.empty() ? "" : ",") + name + "=" + value;
  }
  return transport + "=" + connection + " subsysnqn=" + subsysnqn + " serial=" + serial;
}

std::string StableControllerId(const std::string& transport, const std::string& address,
                               const std::string& subsysnqn, const std::string& serial, const std::string& cntlid) {
  if (serial.empty() && subsysnqn.empty()) return "";
  std::string identity = "v2";
  auto field = [&identity](std::string_view value) {
    identity += ":" + std::to_string(value.size()) + ":";
    identity += value;
  };
  if (transport.empty() || transport == "pcie") {
    for (std::string_view value : {std::string_view("pcie"), std::string_view(serial), std::string_view(subsysnqn),
                                   std::string_view(cntlid)}) {
      field(value);
    }
  } else {
    field(transport);
    for (const auto& [name, value] : discover::FabricsAddressFields(address)) {
      if (name == "src_addr") continue;  // the local end the kernel picked for this connect
      field(name);
      field(value);
    }
    field(subsysnqn);
    field(serial);
  }
  return HashedId(identity);
}

std::string LegacyStableControllerId(const std::string& transport, const std::string& address,
                                     const std::string& subsysnqn, const std::string& serial) {
  if (serial.empty() && subsysnqn.empty()) return "";
  return HashedId(transport.empty() || transport == "pcie"
                      ? "serial=" + serial + " subsysnqn=" + subsysnqn
                      : KernelControllerIdentity(transport, address, subsysnqn, serial));
}

std::string ProcessIdentity(const std::string& procfs_root, pid_t pid) {
  if (pid <= 0) return "";
  auto stat = ReadWholeFile(procfs_root + "/" + std::to_string(pid) + "/stat", 4096);
  if (!stat) return "";
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return "";
  size_t pos = close + 1;
  for (int field = 3; field < 22; ++field) {
    pos = stat->find(' ', pos + 1);
    if (pos == std::string::npos) return "";
  }
  const size_t begin = pos + 1;
  const size_t end = stat->find(' ', begin);
  const std::string start = stat->substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  uint64_t ticks = 0;
  auto [ptr, ec] = std::from_chars(start.data(), start.data() + start.size(), ticks);
  if (ec != std::errc() || ptr != start.data() + start.size()) return "";
  return "pid=" + std::to_string(pid) + " start=" + start;
}

std::string CurrentIdentity(const std::string& controller, const IdentityRoots& roots) {
  if (controller.rfind("uvnvme:", 0) == 0) {
    const std::string rest = controller.substr(7);
    pid_t pid = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc() || ptr == rest.data()) return "";
    return ProcessIdentity(roots.procfs_root, pid);
  }
  const std::string dir = roots.sysfs_root + "/class/nvme/" + controller;
  const std::string address = FirstLine(dir + "/address");
  if (address.empty()) return "";
  return KernelControllerIdentity(FirstLine(dir + "/transport"), address, FirstLine(dir + "/subsysnqn"),
                                  FirstLine(dir + "/serial"));
}

std::string IdentityNow(const std::string& controller, const std::string& recorded, const IdentityRoots& roots) {
  const std::string now = CurrentIdentity(controller, roots);
  if (now == recorded) return now;
  if (IsFabricsIdentity(recorded)) {
    auto names = discover::ListDir(roots.sysfs_root + "/class/nvme");
    if (!names) return now;
    const bool elsewhere = std::any_of(names->begin(), names->end(), [&](const std::string& name) {
      return name != controller && CurrentIdentity(name, roots) == recorded;
    });
    return elsewhere ? recorded : now;
  }
  // Written before fabrics hosts had their own: their address (src_addr and all) as if it were a PCI one.
  const std::string dir = roots.sysfs_root + "/class/nvme/" + controller;
  const bool legacy = recorded.rfind("pci=", 0) == 0 && IsFabricsIdentity(now) &&
                      recorded == KernelControllerIdentity("pcie", FirstLine(dir + "/address"), "",
                                                           FirstLine(dir + "/serial"));
  return legacy ? recorded : now;
}

}  // namespace nvmeadapt::state
