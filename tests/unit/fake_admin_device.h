// SPDX-License-Identifier: Apache-2.0
// An NVMe controller's admin command path for tests: features 08h and 09h kept in memory, every command and
// every open recorded, failures scripted per command. The lever's libnvme calls run for real: the device is
// an eventfd, and this test library's ioctl(2) (which the program's definition gives libnvme in place of
// libc's) answers NVME_IOCTL_ADMIN_CMD on it from the FakeController; every other call goes to libc's.
// So `commands` holds the 72-byte commands exactly as libnvme encoded them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/actuate/nvme_admin.h"

namespace nvmeadapt::testing {

using actuate::AdminDevice;
using actuate::AdminDeviceOpener;
using actuate::kCoalescingDisableBit;
using actuate::kFidInterruptCoalescing;
using actuate::kOpcodeGetFeatures;
using actuate::VectorConfigCdw11;

// An NVMe controller's features 08h and 09h, with scripted failures.
struct FakeController {
  uint32_t coalescing = 0;                    // FID 08h CDW11
  std::map<uint16_t, bool> disabled;          // FID 09h CD per vector (coalescing enabled by default)
  std::vector<nvme_passthru_cmd> commands;    // as submitted
  std::map<std::pair<uint8_t, uint8_t>, int> fail;  // (opcode, fid) -> ioctl answer: > 0 a status, < 0 -errno

  // Runs `cmd` as the controller would; the value the ioctl returns (0, a status, or -errno).
  int Answer(nvme_passthru_cmd* cmd);
};

class FakeOpener final : public AdminDeviceOpener {
 public:
  explicit FakeOpener(std::shared_ptr<FakeController> c) : c_(std::move(c)) {}
  // A device whose admin commands `c_` answers, while it is open.
  Result<std::unique_ptr<AdminDevice>> Open(const std::string& path) override;
  std::vector<std::string> opened;  // every open: a lever that reads the device twice shows it here

 private:
  std::shared_ptr<FakeController> c_;
};

}  // namespace nvmeadapt::testing
