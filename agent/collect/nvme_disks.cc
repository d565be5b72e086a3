// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/nvme_disks.h"

#include <charconv>
#include <fstream>

namespace nvmeadapt::collect {
namespace fs = std::filesystem;

std::optional<uint32_t> ReadDevNumber(const fs::path& dev_attribute) {
  std::ifstream in(dev_attribute);
  unsigned major = 0, minor = 0;
  char colon = 0;
  if (!(in >> major >> colon >> minor) || colon != ':') return std::nullopt;
  return (major << 20) | (minor & 0xfffff);
}

namespace {

// "nvme12" -> 12; anything else (nvme-subsys0, a PCI address) -> nullopt.
std::optional<uint32_t> ControllerInstance(const std::string& name) {
  constexpr std::string_view kPrefix = "nvme";
  if (!name.starts_with(kPrefix) || name.size() == kPrefix.size()) return std::nullopt;
  uint32_t instance = 0;
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size();
  auto [end, error] = std::from_chars(first, last, instance);
  if (error != std::errc() || end != last) return std::nullopt;
  return instance;
}

}  // namespace

std::vector<NvmeDisk> ListNvmeDisks(const fs::path& root) {
  std::vector<NvmeDisk> disks;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "sys/block", ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("nvme")) continue;
    const auto dev = ReadDevNumber(entry.path() / "dev");
    if (!dev) continue;
    NvmeDisk disk{std::move(name), *dev, std::nullopt};
    std::error_code link_error;
    const fs::path parent = fs::read_symlink(entry.path() / "device", link_error);
    if (!link_error) disk.controller = ControllerInstance(parent.filename().string());
    disks.push_back(std::move(disk));
  }
  return disks;
}

}  // namespace nvmeadapt::collect
