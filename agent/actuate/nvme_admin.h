// NVMe admin commands through the kernel's passthrough ioctl: the Get/Set Features encodings the coalescing
// lever needs, the decoding of an NVMe completion status, and the device behind a small interface so that tests
// inject what the ioctl returns.
//
// NVMe base specification: Set Features (opcode 09h) and Get Features (0Ah) carry the Feature Identifier in
// Command Dword 10 bits 7:0; Set Features has Save (SV) in CDW10 bit 31, Get Features has Select (SEL) in CDW10
// bits 10:8 (0 current, 1 default, 2 saved, 3 supported capabilities). Interrupt Coalescing (FID 08h), CDW11:
// Aggregation Threshold (THR, 0's based) bits 7:0, Aggregation Time (TIME, 100 us units) bits 15:8.
// Interrupt Vector Configuration (FID 09h), CDW11: Interrupt Vector (IV) bits 15:0, Coalescing Disable (CD) bit 16;
// Get Features names the vector in IV too. The completion's Dword 0 carries the feature's value.
#pragma once

#include <linux/nvme_ioctl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace nvmeadapt::actuate {

static_assert(sizeof(nvme_passthru_cmd) == 72, "struct nvme_passthru_cmd is 72 bytes in the kernel ABI");

inline constexpr uint8_t kOpcodeSetFeatures = 0x09;
inline constexpr uint8_t kOpcodeGetFeatures = 0x0a;
inline constexpr uint8_t kFidInterruptCoalescing = 0x08;
inline constexpr uint8_t kFidInterruptVectorConfig = 0x09;
inline constexpr uint32_t kCdw10SaveBit = 1u << 31;
inline constexpr uint32_t kCoalescingDisableBit = 1u << 16;

enum class FeatureSelect : uint8_t { kCurrent = 0, kDefault = 1, kSaved = 2, kSupportedCapabilities = 3 };

nvme_passthru_cmd GetFeaturesCommand(uint8_t fid, uint32_t cdw11, FeatureSelect select, uint32_t timeout_ms);
nvme_passthru_cmd SetFeaturesCommand(uint8_t fid, uint32_t cdw11, bool save, uint32_t timeout_ms);

// CDW11 of FID 08h from the number of completions per interrupt (1..256, sent 0's based) and the time in
// 100 us units (0..255).
uint32_t CoalescingCdw11(uint32_t completions, uint8_t time_100us);
// CDW11 of FID 09h.
uint32_t VectorConfigCdw11(uint16_t vector, bool coalescing_disabled);

// The 15-bit status field the kernel returns from the passthrough ioctl (the CQE status without the phase
// tag): SC bits 7:0, SCT bits 10:8, CRD bits 12:11, More bit 13, DNR bit 14.
struct NvmeStatus {
  uint16_t raw = 0;
  uint8_t sc = 0;
  uint8_t sct = 0;
  uint8_t crd = 0;
  bool more = false;
  bool dnr = false;

  static NvmeStatus Decode(uint16_t raw);
  // "Feature Not Changeable (SCT 1h, SC 0Eh, DNR) [0x410e]"
  std::string ToString() const;
  // kUnsupported: Invalid Command Opcode, Invalid Field in Command; kUnavailable: aborts and path errors
  // (SCT 3h); kIo: data transfer, internal and media errors (SCT 2h); kRefused: everything else, notably the
  // command specific Feature Not Changeable / Not Saveable.
  ErrorCode Code() const;
};

// One controller's admin command path (/dev/nvmeN).
class AdminDevice {
 public:
  virtual ~AdminDevice() = default;
  // Runs `cmd`, filling cmd->result. Returns what ioctl(2) returns for NVME_IOCTL_ADMIN_CMD: 0 on success,
  // > 0 an NVMe status field (NvmeStatus), < 0 a negative errno.
  virtual int Submit(nvme_passthru_cmd* cmd) = 0;
};

class AdminDeviceOpener {
 public:
  virtual ~AdminDeviceOpener() = default;
  // Errors are SysError with the path (kNotFound, kPermissionDenied, ...).
  virtual Result<std::unique_ptr<AdminDevice>> Open(const std::string& path) = 0;
};

// open(2) + ioctl(2) on the real character device. Needs CAP_SYS_ADMIN for admin commands.
std::shared_ptr<AdminDeviceOpener> SystemAdminDeviceOpener();

}  // namespace nvmeadapt::actuate
