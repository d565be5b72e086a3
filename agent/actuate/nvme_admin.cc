// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/nvme_admin.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace nvmeadapt::actuate {
namespace {

class SystemOpener final : public AdminDeviceOpener {
 public:
  Result<std::unique_ptr<AdminDevice>> Open(const std::string& path) override {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SysError("open", path, errno);
    return std::make_unique<AdminDevice>(fd);
  }
};

// libnvme answers -1 with errno set when no completion came back; the levers' convention is -errno.
int Answer(int ret) { return ret == -1 ? -errno : ret; }

int GetFeature(const AdminDevice& device, uint8_t fid, uint32_t cdw11, uint32_t timeout_ms, uint32_t* result) {
  nvme_get_features_args args{};
  args.args_size = sizeof args;
  args.fd = device.fd();
  args.fid = fid;
  args.sel = NVME_GET_FEATURES_SEL_CURRENT;
  args.cdw11 = cdw11;
  args.timeout = timeout_ms;
  args.result = result;
  return Answer(nvme_get_features(&args));
}

int SetFeature(const AdminDevice& device, uint8_t fid, uint32_t cdw11, uint32_t timeout_ms) {
  uint32_t result = 0;
  nvme_set_features_args args{};
  args.args_size = sizeof args;
  args.fd = device.fd();
  args.fid = fid;
  args.cdw11 = cdw11;
  args.save = false;
  args.timeout = timeout_ms;
  args.result = &result;
  return Answer(nvme_set_features(&args));
}

}  // namespace

AdminDevice::~AdminDevice() { close(fd_); }

std::shared_ptr<AdminDeviceOpener> SystemAdminDeviceOpener() { return std::make_shared<SystemOpener>(); }

uint32_t CoalescingCdw11(uint32_t completions, uint8_t time_100us) {
  const uint32_t thr = completions == 0 ? 0 : completions - 1;
  return NVME_SET(thr, FEAT_IRQC_THR) | NVME_SET(uint32_t{time_100us}, FEAT_IRQC_TIME);
}

uint32_t VectorConfigCdw11(uint16_t vector, bool coalescing_disabled) {
  return NVME_SET(uint32_t{vector}, FEAT_ICFG_IV) | NVME_SET(coalescing_disabled ? 1u : 0u, FEAT_ICFG_CD);
}

int GetInterruptCoalescing(const AdminDevice& device, uint32_t timeout_ms, uint32_t* result) {
  return GetFeature(device, kFidInterruptCoalescing, 0, timeout_ms, result);
}

int GetInterruptVectorConfig(const AdminDevice& device, uint16_t vector, uint32_t timeout_ms, uint32_t* result) {
  return GetFeature(device, kFidInterruptVectorConfig, VectorConfigCdw11(vector, false), timeout_ms, result);
}

int SetInterruptCoalescing(const AdminDevice& device, uint32_t cdw11, uint32_t timeout_ms) {
  return SetFeature(device, kFidInterruptCoalescing, cdw11 & 0xffffu, timeout_ms);
}

int SetInterruptVectorConfig(const AdminDevice& device, uint32_t cdw11, uint32_t timeout_ms) {
  return SetFeature(device, kFidInterruptVectorConfig, cdw11 & 0x1ffffu, timeout_ms);
}

NvmeStatus NvmeStatus::Decode(uint16_t raw) {
  NvmeStatus status;
  status.raw = raw;
  status.sc = static_cast<uint8_t>(nvme_status_code(raw));
  status.sct = static_cast<uint8_t>(nvme_status_code_type(raw));
  status.crd = static_cast<uint8_t>((raw & NVME_SC_CRD) >> 11);
  status.more = (raw & NVME_SC_MORE) != 0;
  status.dnr = (raw & NVME_SC_DNR) != 0;
  return status;
}

std::string NvmeStatus::ToString() const {
  // libnvme says "Name: what it means"; the name is enough beside the fields.
  std::string name = nvme_status_to_string(raw, /*fabrics=*/false);
  if (const size_t colon = name.find(": "); colon != std::string::npos) name.resize(colon);
  char fields[64];
  std::snprintf(fields, sizeof fields, " (SCT %Xh, SC %02Xh%s%s) [0x%04x]", sct, sc, dnr ? ", DNR" : "",
                more ? ", More" : "", raw);
  std::string out = name + fields;
  if (crd != 0) out += " CRD " + std::to_string(crd);
  return out;
}

ErrorCode NvmeStatus::Code() const {
  switch (sct) {
    case NVME_SCT_GENERIC:
      if (sc == NVME_SC_INVALID_OPCODE || sc == NVME_SC_INVALID_FIELD) return ErrorCode::kUnsupported;
      if (sc == NVME_SC_DATA_XFER_ERROR || sc == NVME_SC_INTERNAL) return ErrorCode::kIo;
      if (sc == NVME_SC_ABORT_REQ || sc == NVME_SC_ABORT_QUEUE) return ErrorCode::kUnavailable;
      return ErrorCode::kRefused;
    case NVME_SCT_MEDIA: return ErrorCode::kIo;
    case NVME_SCT_PATH: return ErrorCode::kUnavailable;
    default: return ErrorCode::kRefused;
  }
}

}  // namespace nvmeadapt::actuate
