// SPDX-License-Identifier: Apache-2.0
// The NVMe admin commands of the coalescing lever, spoken through libnvme (Debian's libnvme-dev): Get and Set
// Features for Interrupt Coalescing (FID 08h) and Interrupt Vector Configuration (FID 09h), with libnvme's
// field layouts and names of NVMe statuses. The device is opened through a small interface so that tests can
// answer for it (tests/unit/fake_admin_device.h answers libnvme's ioctl itself).
//
// NVMe base specification, as libnvme encodes it: Set Features (opcode 09h) and Get Features (0Ah) carry the
// Feature Identifier in CDW10 bits 7:0; Set Features has Save (SV) in CDW10 bit 31 (never set here: nothing
// the agent changes outlives a power cycle), Get Features has Select (SEL) in CDW10 bits 10:8 (current here).
// FID 08h CDW11: Aggregation Threshold (THR, 0's based) bits 7:0, Aggregation Time (TIME, 100 us) bits 15:8.
// FID 09h CDW11: Interrupt Vector (IV) bits 15:0, Coalescing Disable (CD) bit 16; Get Features names the
// vector in IV too. The completion's Dword 0 carries the feature's value.
#pragma once

#include <libnvme.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace nvmeadapt::actuate {

inline constexpr uint8_t kOpcodeSetFeatures = nvme_admin_set_features;
inline constexpr uint8_t kOpcodeGetFeatures = nvme_admin_get_features;
inline constexpr uint8_t kFidInterruptCoalescing = NVME_FEAT_FID_IRQ_COALESCE;
inline constexpr uint8_t kFidInterruptVectorConfig = NVME_FEAT_FID_IRQ_CONFIG;
inline constexpr uint32_t kCoalescingDisableBit = NVME_SET(1u, FEAT_ICFG_CD);

// CDW11 of FID 08h from the completions per interrupt (1..256, sent 0's based) and the time in 100 us units.
uint32_t CoalescingCdw11(uint32_t completions, uint8_t time_100us);
// CDW11 of FID 09h.
uint32_t VectorConfigCdw11(uint16_t vector, bool coalescing_disabled);

// The 15-bit status field a passthrough command returns (the CQE status without the phase tag): SC bits 7:0,
// SCT bits 10:8, CRD bits 12:11, More bit 13, DNR bit 14.
struct NvmeStatus {
  uint16_t raw = 0;
  uint8_t sc = 0;
  uint8_t sct = 0;
  uint8_t crd = 0;
  bool more = false;
  bool dnr = false;

  static NvmeStatus Decode(uint16_t raw);
  // libnvme's name of the status and its fields: "Feature Not Changeable (SCT 1h, SC 0Eh, DNR) [0x410e]".
  std::string ToString() const;
  // What the agent makes of it (libnvme's errno mapping would make Feature Not Changeable EPERM): kUnsupported
  // for Invalid Command Opcode and Invalid Field in Command; kUnavailable for aborts and path errors (SCT 3h);
  // kIo for data transfer, internal and media errors (SCT 2h); kRefused for everything else, notably the
  // command specific Feature Not Changeable / Not Saveable.
  ErrorCode Code() const;
};

// One controller's admin command path: the open /dev/nvmeN that libnvme's calls take. Closed when destroyed.
class AdminDevice {
 public:
  explicit AdminDevice(int fd) : fd_(fd) {}
  virtual ~AdminDevice();
  AdminDevice(const AdminDevice&) = delete;
  AdminDevice& operator=(const AdminDevice&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

class AdminDeviceOpener {
 public:
  virtual ~AdminDeviceOpener() = default;
  // Errors are SysError with the path (kNotFound, kPermissionDenied, ...).
  virtual Result<std::unique_ptr<AdminDevice>> Open(const std::string& path) = 0;
};

// open(2) on the real character device. Admin commands need CAP_SYS_ADMIN.
std::shared_ptr<AdminDeviceOpener> SystemAdminDeviceOpener();

// The four commands. Each returns 0 (the completion's Dword 0 in *result for a Get), > 0 an NVMe status field
// (NvmeStatus), < 0 a negative errno; `timeout_ms` bounds the command in the kernel.
int GetInterruptCoalescing(const AdminDevice& device, uint32_t timeout_ms, uint32_t* result);
int GetInterruptVectorConfig(const AdminDevice& device, uint16_t vector, uint32_t timeout_ms, uint32_t* result);
int SetInterruptCoalescing(const AdminDevice& device, uint32_t cdw11, uint32_t timeout_ms);
int SetInterruptVectorConfig(const AdminDevice& device, uint32_t cdw11, uint32_t timeout_ms);

}  // namespace nvmeadapt::actuate
