// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/coalescing_lever.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agent/actuate/lever_registry.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

std::string Hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

bool ParseHex(const std::string& text, uint32_t* value) {
  if (text.size() < 3 || text.compare(0, 2, "0x") != 0) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long parsed = std::strtoul(text.c_str() + 2, &end, 16);
  if (errno != 0 || *end != '\0' || parsed > UINT32_MAX) return false;
  *value = static_cast<uint32_t>(parsed);
  return true;
}

std::string FidName(uint8_t fid) {
  char text[8];
  std::snprintf(text, sizeof text, "%02Xh", fid);
  return text;
}

}  // namespace

CoalescingLever::CoalescingLever(CoalescingOptions options)
    : PlannedLever(LeverKind::kCoalescing, LeverScope::kVector, options.dry_run), options_(std::move(options)) {
  if (!options_.opener) options_.opener = SystemAdminDeviceOpener();
}

std::string CoalescingLever::DevicePath(const std::string& controller) const {
  return discover::JoinPath(options_.dev_root, controller);
}

std::string CoalescingLever::CoalescingObject(const std::string& device) { return device + " feature 08h"; }

std::string CoalescingLever::VectorObject(const std::string& device, uint32_t vector) {
  return device + " feature 09h vector " + std::to_string(vector);
}

Result<std::shared_ptr<AdminDevice>> CoalescingLever::OpenDevice(const std::string& path) const {
  auto device = options_.opener->Open(path);
  if (!device) return Fail(path, device.error());
  return std::shared_ptr<AdminDevice>(std::move(*device));
}

Result<uint32_t> CoalescingLever::Answered(int ret, uint32_t result, const std::string& path,
                                           const std::string& what) const {
  if (ret == 0) return result;
  if (ret < 0) {
    Error error = SysError(what + " on", path, -ret);
    return Fail(path, error);
  }
  const NvmeStatus status = NvmeStatus::Decode(static_cast<uint16_t>(ret));
  Error error = Fail(status.Code(), path, path + " " + what + ": " + status.ToString());
  error.nvme_status = status.raw;
  return error;
}

Result<uint32_t> CoalescingLever::Get(const AdminDevice& device, uint8_t fid, uint16_t vector,
                                      const std::string& path) const {
  uint32_t result = 0;
  const int ret = fid == kFidInterruptCoalescing
                      ? GetInterruptCoalescing(device, options_.timeout_ms, &result)
                      : GetInterruptVectorConfig(device, vector, options_.timeout_ms, &result);
  return Answered(ret, result, path, "Get Features " + FidName(fid));
}

PlannedLever::Step CoalescingLever::SetStep(std::shared_ptr<AdminDevice> device, const std::string& path,
                                            std::string object, uint8_t fid, uint32_t cdw11) const {
  Step step;
  step.object = std::move(object);
  step.value = Hex(cdw11);
  step.perform = [this, device = std::move(device), path, fid, cdw11]() -> Status {
    const int ret = fid == kFidInterruptCoalescing ? SetInterruptCoalescing(*device, cdw11, options_.timeout_ms)
                                                   : SetInterruptVectorConfig(*device, cdw11, options_.timeout_ms);
    NA_RETURN_IF_ERROR(Answered(ret, 0, path, "Set Features " + FidName(fid)));
    return OkStatus();
  };
  return step;
}

Result<PlannedLever::StepPlan> CoalescingLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  if (!target.vector || *target.vector == 0) {
    // Vector 0 belongs to the admin queue, which coalescing never applies to.
    return Fail(ErrorCode::kUnsupported, target.ToString(),
                target.ToString() + " has no dedicated interrupt vector to coalesce");
  }
  const uint16_t iv = static_cast<uint16_t>(*target.vector);
  const std::string path = DevicePath(target.controller);
  NA_ASSIGN_OR_RETURN(const std::shared_ptr<AdminDevice> device, OpenDevice(path));
  NA_ASSIGN_OR_RETURN(const uint32_t aggregation, Get(*device, kFidInterruptCoalescing, iv, path));
  NA_ASSIGN_OR_RETURN(const uint32_t vector_config, Get(*device, kFidInterruptVectorConfig, iv, path));

  const uint32_t current_08 = aggregation & 0xffffu;
  const bool disabled = (vector_config & kCoalescingDisableBit) != 0;
  StepPlan plan;
  plan.found.push_back({CoalescingObject(path), Hex(current_08)});
  plan.found.push_back({VectorObject(path, iv), Hex(VectorConfigCdw11(iv, disabled))});
  if (mode == ReapMode::kPoll) {
    const uint32_t wanted_08 =
        CoalescingCdw11(options_.completions, static_cast<uint8_t>(options_.time_us / 100));
    if (current_08 != wanted_08) {
      plan.steps.push_back(SetStep(device, path, CoalescingObject(path), kFidInterruptCoalescing, wanted_08));
    }
    if (disabled) {
      plan.steps.push_back(
          SetStep(device, path, VectorObject(path, iv), kFidInterruptVectorConfig, VectorConfigCdw11(iv, false)));
    }
  } else if (!disabled) {
    plan.steps.push_back(
        SetStep(device, path, VectorObject(path, iv), kFidInterruptVectorConfig, VectorConfigCdw11(iv, true)));
  }
  return plan;
}

Result<std::vector<PlannedLever::Step>> CoalescingLever::MakeRestore(const RestorePoint& point) {
  const std::string path = DevicePath(point.target.controller);
  std::vector<std::pair<std::string, std::pair<uint8_t, uint32_t>>> commands;
  for (const RestoreStep& step : point.steps) {
    uint32_t cdw11 = 0;
    if (!ParseHex(step.value, &cdw11)) {
      return Fail(ErrorCode::kIo, step.object, "restore value '" + step.value + "' is not 0x-hex");
    }
    if (step.object == CoalescingObject(path)) {
      commands.push_back({step.object, {kFidInterruptCoalescing, cdw11 & 0xffffu}});
    } else if (point.target.vector && step.object == VectorObject(path, *point.target.vector)) {
      commands.push_back({step.object, {kFidInterruptVectorConfig, cdw11 & 0x1ffffu}});
    } else {
      return Fail(ErrorCode::kIo, step.object,
                  "restore point names " + step.object + ", not a feature of " + point.target.ToString());
    }
  }
  std::vector<Step> steps;
  if (commands.empty()) return steps;
  NA_ASSIGN_OR_RETURN(const std::shared_ptr<AdminDevice> device, OpenDevice(path));
  for (const auto& [object, command] : commands) {
    const auto [fid, cdw11] = command;
    // Only what differs is written back, as in MakePlan: the journal holds a restore point from before an Apply
    // that may have failed before any write, and a device that refuses the Set (QEMU: Feature Not Changeable)
    // would otherwise fail every restore of a value it never changed.
    const bool vector_config = fid == kFidInterruptVectorConfig;
    NA_ASSIGN_OR_RETURN(const uint32_t current, Get(*device, fid, static_cast<uint16_t>(cdw11 & 0xffffu), path));
    const uint32_t compared = vector_config ? kCoalescingDisableBit : 0xffffu;
    if ((current & compared) == (cdw11 & compared)) continue;
    steps.push_back(SetStep(device, path, object, fid, cdw11));
  }
  return steps;
}

// Registered with the levers (lever_registry.h).
namespace {

std::unique_ptr<PlannedLever> MakeCoalescing(bool dry_run, const config::LeverSettings& settings,
                                             const LeverEnvironment& environment) {
  return std::make_unique<CoalescingLever>(CoalescingOptions{environment.dev_root, settings.coalescing_threshold,
                                                             settings.coalescing_time_us, settings.admin_timeout_ms,
                                                             dry_run, environment.admin});
}

// Every NVMe controller takes Set Features (a device may refuse it): AUTO's last kernel lever.
const LeverRegistrar kRegistered({{.kind = LeverKind::kCoalescing, .risk = LeverRisk::kNothingElse,
                                   .serves = {Source::kKernelNvme}, .auto_rank = 30,
                                   .auto_why = "no adaptive-poll attribute, no GSIM"}, &MakeCoalescing});

}  // namespace

}  // namespace nvmeadapt::actuate
