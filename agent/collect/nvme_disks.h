// SPDX-License-Identifier: Apache-2.0
// The nvme disks of a machine as /sys/block lists them, for the block program: their dev_t, and the
// controller whose hardware queues carry their requests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace nvmeadapt::collect {

struct NvmeDisk {
  std::string name;                       // nvme0n1, nvme0c0n1 (a multipath path)
  uint32_t dev = 0;                       // the kernel's encoding: major << 20 | minor
  std::optional<uint32_t> controller;     // nvme<N> instance; none for a multipath head (no requests of its own)
};

// "MAJOR:MINOR" of a sysfs dev attribute in the kernel's dev_t encoding; nullopt if absent or malformed.
std::optional<uint32_t> ReadDevNumber(const std::filesystem::path& dev_attribute);

// Every <root>/sys/block/nvme* with a readable dev attribute. The controller is the instance of the
// disk's parent device (its `device` link points at nvme<N>).
std::vector<NvmeDisk> ListNvmeDisks(const std::filesystem::path& root);

}  // namespace nvmeadapt::collect
