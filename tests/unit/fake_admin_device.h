// An NVMe controller's admin command path for tests: features 08h and 09h kept in memory, every command and
// every open recorded, failures scripted per command.
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
  std::map<std::pair<uint8_t, uint8_t>, int> fail;  // (opcode, fid) -> ioctl return value
};

class FakeDevice final : public AdminDevice {
 public:
  explicit FakeDevice(std::shared_ptr<FakeController> c) : c_(std::move(c)) {}
  int Submit(nvme_passthru_cmd* cmd) override {
    c_->commands.push_back(*cmd);
    const uint8_t fid = cmd->cdw10 & 0xff;
    if (auto it = c_->fail.find({cmd->opcode, fid}); it != c_->fail.end()) return it->second;
    const uint16_t iv = cmd->cdw11 & 0xffff;
    if (cmd->opcode == kOpcodeGetFeatures) {
      cmd->result = fid == kFidInterruptCoalescing ? c_->coalescing : VectorConfigCdw11(iv, c_->disabled[iv]);
    } else if (fid == kFidInterruptCoalescing) {
      c_->coalescing = cmd->cdw11 & 0xffff;
    } else {
      c_->disabled[iv] = (cmd->cdw11 & kCoalescingDisableBit) != 0;
    }
    return 0;
  }

 private:
  std::shared_ptr<FakeController> c_;
};

class FakeOpener final : public AdminDeviceOpener {
 public:
  explicit FakeOpener(std::shared_ptr<FakeController> c) : c_(std::move(c)) {}
  Result<std::unique_ptr<AdminDevice>> Open(const std::string& path) override {
    opened.push_back(path);  // every open: a lever that reads the device twice shows it here
    return std::unique_ptr<AdminDevice>(std::make_unique<FakeDevice>(c_));
  }
  std::vector<std::string> opened;

 private:
  std::shared_ptr<FakeController> c_;
};

}  // namespace nvmeadapt::testing
