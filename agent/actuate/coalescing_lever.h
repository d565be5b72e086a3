// SPDX-License-Identifier: Apache-2.0
// Interrupt coalescing through NVMe Set Features on /dev/nvmeN (stock kernels, real SSDs). Vector scope:
// kPoll sets the controller's aggregation (FID 08h: THR, TIME) when it differs and enables coalescing on the
// queue's vector (FID 09h, CD = 0); kInterrupt disables coalescing on the vector (CD = 1) and leaves 08h.
// The restore point holds the 08h value and the vector's 09h value read (Get Features, current) before the
// first change; a restore reads both again and sets only what differs. Devices may refuse: QEMU answers Set
// Features 08h with Feature Not Changeable (kRefused).
#pragma once

#include <memory>
#include <string>

#include "agent/actuate/lever.h"
#include "agent/actuate/nvme_admin.h"

namespace nvmeadapt::actuate {

struct CoalescingOptions {
  std::string dev_root = "/dev";
  uint32_t completions = 8;  // per interrupt, 2..256 (THR is 0's based)
  uint32_t time_us = 100;    // a multiple of 100, up to 25500 (TIME counts 100 us)
  uint32_t timeout_ms = 5000;
  bool dry_run = false;
  std::shared_ptr<AdminDeviceOpener> opener;  // SystemAdminDeviceOpener() when empty
};

class CoalescingLever final : public PlannedLever {
 public:
  explicit CoalescingLever(CoalescingOptions options);
  std::string DevicePath(const std::string& controller) const;
  // Restore step objects: "<device> feature 08h" and "<device> feature 09h vector N"; values "0x%08x" (CDW11).
  static std::string CoalescingObject(const std::string& device);
  static std::string VectorObject(const std::string& device, uint32_t vector);

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;
  Result<std::shared_ptr<AdminDevice>> OpenDevice(const std::string& path) const;
  // A command's answer (nvme_admin.h: 0, an NVMe status, a negative errno) as the completion's Dword 0, or an
  // Error naming the device and the command.
  Result<uint32_t> Answered(int ret, uint32_t result, const std::string& path, const std::string& what) const;
  // Get Features (current) of FID 08h, or of 09h for `vector`.
  Result<uint32_t> Get(const AdminDevice& device, uint8_t fid, uint16_t vector, const std::string& path) const;
  Step SetStep(std::shared_ptr<AdminDevice> device, const std::string& path, std::string object, uint8_t fid,
               uint32_t cdw11) const;

  CoalescingOptions options_;
};

}  // namespace nvmeadapt::actuate
