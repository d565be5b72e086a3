#include "agent/actuate/nvme_admin.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace nvmeadapt::actuate {
namespace {

const char* StatusName(uint8_t sct, uint8_t sc) {
  if (sct == 0) {
    switch (sc) {
      case 0x00: return "Successful Completion";
      case 0x01: return "Invalid Command Opcode";
      case 0x02: return "Invalid Field in Command";
      case 0x03: return "Command ID Conflict";
      case 0x04: return "Data Transfer Error";
      case 0x05: return "Commands Aborted due to Power Loss Notification";
      case 0x06: return "Internal Error";
      case 0x07: return "Command Abort Requested";
      case 0x08: return "Command Aborted due to SQ Deletion";
      case 0x0b: return "Invalid Namespace or Format";
      case 0x0c: return "Command Sequence Error";
      default: return "Generic Command Status";
    }
  }
  if (sct == 1) {
    switch (sc) {
      case 0x0d: return "Feature Identifier Not Saveable";
      case 0x0e: return "Feature Not Changeable";
      case 0x0f: return "Feature Not Namespace Specific";
      default: return "Command Specific Status";
    }
  }
  if (sct == 2) return "Media and Data Integrity Error";
  if (sct == 3) return "Path Related Status";
  if (sct == 7) return "Vendor Specific";
  return "Reserved Status Code Type";
}

class SystemAdminDevice final : public AdminDevice {
 public:
  explicit SystemAdminDevice(int fd) : fd_(fd) {}
  ~SystemAdminDevice() override { close(fd_); }
  int Submit(nvme_passthru_cmd* cmd) override {
    for (;;) {
      const int ret = ioctl(fd_, NVME_IOCTL_ADMIN_CMD, cmd);
      if (ret >= 0) return ret;
      if (errno != EINTR) return -errno;
    }
  }

 private:
  int fd_;
};

class SystemOpener final : public AdminDeviceOpener {
 public:
  Result<std::unique_ptr<AdminDevice>> Open(const std::string& path) override {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SysError("open", path, errno);
    return std::unique_ptr<AdminDevice>(std::make_unique<SystemAdminDevice>(fd));
  }
};

}  // namespace

nvme_passthru_cmd GetFeaturesCommand(uint8_t fid, uint32_t cdw11, FeatureSelect select, uint32_t timeout_ms) {
  nvme_passthru_cmd cmd{};
  cmd.opcode = kOpcodeGetFeatures;
  cmd.cdw10 = uint32_t{fid} | (uint32_t{static_cast<uint8_t>(select)} & 0x7u) << 8;
  cmd.cdw11 = cdw11;
  cmd.timeout_ms = timeout_ms;
  return cmd;
}

nvme_passthru_cmd SetFeaturesCommand(uint8_t fid, uint32_t cdw11, bool save, uint32_t timeout_ms) {
  nvme_passthru_cmd cmd{};
  cmd.opcode = kOpcodeSetFeatures;
  cmd.cdw10 = uint32_t{fid} | (save ? kCdw10SaveBit : 0u);
  cmd.cdw11 = cdw11;
  cmd.timeout_ms = timeout_ms;
  return cmd;
}

uint32_t CoalescingCdw11(uint32_t completions, uint8_t time_100us) {
  const uint32_t thr = completions == 0 ? 0 : (completions - 1) & 0xffu;
  return thr | uint32_t{time_100us} << 8;
}

uint32_t VectorConfigCdw11(uint16_t vector, bool coalescing_disabled) {
  return uint32_t{vector} | (coalescing_disabled ? kCoalescingDisableBit : 0u);
}

NvmeStatus NvmeStatus::Decode(uint16_t raw) {
  NvmeStatus status;
  status.raw = raw;
  status.sc = static_cast<uint8_t>(raw & 0xff);
  status.sct = static_cast<uint8_t>((raw >> 8) & 0x7);
  status.crd = static_cast<uint8_t>((raw >> 11) & 0x3);
  status.more = (raw >> 13) & 1;
  status.dnr = (raw >> 14) & 1;
  return status;
}

std::string NvmeStatus::ToString() const {
  char text[160];
  std::snprintf(text, sizeof text, "%s (SCT %Xh, SC %02Xh%s%s) [0x%04x]", StatusName(sct, sc), sct, sc,
                dnr ? ", DNR" : "", more ? ", More" : "", raw);
  std::string out = text;
  if (crd != 0) out += " CRD " + std::to_string(crd);
  return out;
}

ErrorCode NvmeStatus::Code() const {
  switch (sct) {
    case 0:
      if (sc == 0x01 || sc == 0x02) return ErrorCode::kUnsupported;
      if (sc == 0x04 || sc == 0x06) return ErrorCode::kIo;
      if (sc == 0x07 || sc == 0x08) return ErrorCode::kUnavailable;
      return ErrorCode::kRefused;
    case 2: return ErrorCode::kIo;
    case 3: return ErrorCode::kUnavailable;
    default: return ErrorCode::kRefused;
  }
}

std::shared_ptr<AdminDeviceOpener> SystemAdminDeviceOpener() { return std::make_shared<SystemOpener>(); }

}  // namespace nvmeadapt::actuate
