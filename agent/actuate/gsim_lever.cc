// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/gsim_lever.h"

#include <filesystem>

#include "agent/actuate/lever_registry.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

using discover::JoinPath;

constexpr char kDelayName[] = "delay_us";

std::string IrqDir(const std::string& procfs_root) { return JoinPath(procfs_root, "irq"); }

}  // namespace

std::string_view GsimLayoutName(GsimLayout layout) {
  switch (layout) {
    case GsimLayout::kAbsent: return "absent";
    case GsimLayout::kGlobalFile: return "v1-v3 /proc/irq/soft_moderation file";
    case GsimLayout::kModerationDir: return "v4 /proc/irq/soft_moderation/ directory";
    case GsimLayout::kSwModerationDir: return "/proc/irq/sw_moderation/ directory with allow_sw_moderation";
  }
  return "unknown";
}

GsimLayout ProbeGsimLayout(const std::string& procfs_root) {
  const std::string irq = IrqDir(procfs_root);
  if (discover::IsDirectory(JoinPath(irq, "sw_moderation"))) return GsimLayout::kSwModerationDir;
  const std::string soft = JoinPath(irq, "soft_moderation");
  if (discover::IsDirectory(soft)) return GsimLayout::kModerationDir;
  if (discover::PathExists(soft)) return GsimLayout::kGlobalFile;
  return GsimLayout::kAbsent;
}

GsimLever::GsimLever(GsimOptions options)
    : FileLever(LeverKind::kGsim, LeverScope::kVector, options.dry_run, options.procfs_root),
      options_(std::move(options)) {}

std::string GsimLever::IrqPath(GsimLayout layout, uint32_t irq) const {
  const char* name = layout == GsimLayout::kSwModerationDir ? "allow_sw_moderation" : "soft_moderation";
  return JoinPath(JoinPath(IrqDir(options_.procfs_root), std::to_string(irq)), name);
}

std::string GsimLever::DelayPath(GsimLayout layout) const {
  const std::string irq = IrqDir(options_.procfs_root);
  switch (layout) {
    case GsimLayout::kModerationDir: return JoinPath(JoinPath(irq, "soft_moderation"), kDelayName);
    case GsimLayout::kSwModerationDir: return JoinPath(JoinPath(irq, "sw_moderation"), kDelayName);
    case GsimLayout::kAbsent:
    case GsimLayout::kGlobalFile: break;
  }
  return JoinPath(irq, "soft_moderation");
}

std::string GsimLever::DelayValue(GsimLayout layout, uint32_t delay_us) {
  const std::string value = std::to_string(delay_us);
  return layout == GsimLayout::kGlobalFile ? std::string(kDelayName) + "=" + value : value;
}

Result<GsimLever::IrqSwitch> GsimLever::ReadIrqSwitch(GsimLayout layout, uint32_t irq) const {
  const std::string path = IrqPath(layout, irq);
  const std::string missing = layout == GsimLayout::kAbsent
                                  ? "no soft_moderation (this kernel lacks GSIM)"
                                  : "no per-IRQ switch (GSIM layout: " + std::string(GsimLayoutName(layout)) + ")";
  NA_ASSIGN_OR_RETURN(const std::string text, ReadValue(path, missing));
  const std::string word = text.substr(0, text.find_first_of(" \t\n"));
  if (word == "on" || word == "off") return IrqSwitch{word, "on", "off"};
  if (word == "1" || word == "0") return IrqSwitch{word, "1", "0"};
  return Fail(ErrorCode::kIo, path,
              path + ": expected \"on ...\", \"off ...\", \"1\" or \"0\", read '" + text.substr(0, 40) + "'");
}

// The global delay as the value that sets it again: the v1-v3 file shows a "delay_us  N" line among its
// statistics and takes "delay_us=N"; the directories have a delay_us file holding N.
Result<std::string> GsimLever::ReadDelay(GsimLayout layout) const {
  const std::string path = DelayPath(layout);
  NA_ASSIGN_OR_RETURN(const std::string text,
                      ReadValue(path, "no delay_us (GSIM layout: " + std::string(GsimLayoutName(layout)) + ")"));
  uint32_t delay = 0;
  if (layout != GsimLayout::kGlobalFile) {
    if (!discover::ParseU32(text, &delay)) {
      return Fail(ErrorCode::kIo, path,
                  path + ": expected a number of microseconds, read '" + text.substr(0, 40) + "'");
    }
    return DelayValue(layout, delay);
  }
  for (std::string_view line : discover::Split(text, "\n")) {
    const auto words = discover::Split(line, " \t");
    if (words.size() == 2 && words[0] == kDelayName && discover::ParseU32(words[1], &delay)) {
      return DelayValue(layout, delay);
    }
  }
  return Fail(ErrorCode::kIo, path, path + ": no \"delay_us N\" line");
}

Result<PlannedLever::StepPlan> GsimLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  if (!target.irq) {
    return Fail(ErrorCode::kUnsupported, target.ToString(), target.ToString() + " has no interrupt vector");
  }
  const GsimLayout layout = Layout();
  NA_ASSIGN_OR_RETURN(const IrqSwitch irq_switch, ReadIrqSwitch(layout, *target.irq));
  const std::string irq_path = IrqPath(layout, *target.irq);
  StepPlan plan;
  plan.found.push_back({irq_path, irq_switch.current});  // per IRQ first, then the global delay
  if (options_.delay_us > 0) {
    NA_ASSIGN_OR_RETURN(const std::string delay, ReadDelay(layout));
    plan.found.push_back({DelayPath(layout), delay});
    const std::string wanted_delay = DelayValue(layout, options_.delay_us);
    if (mode == ReapMode::kPoll && delay != wanted_delay) {
      plan.steps.push_back(WriteStep(DelayPath(layout), wanted_delay));
    }
  }
  const std::string& wanted = mode == ReapMode::kPoll ? irq_switch.on : irq_switch.off;
  if (irq_switch.current != wanted) plan.steps.push_back(WriteStep(irq_path, wanted));
  return plan;
}

Result<std::vector<PlannedLever::Step>> GsimLever::MakeRestore(const RestorePoint& point) {
  if (!point.target.irq) {
    return Fail(ErrorCode::kIo, point.target.ToString(), "restore point without an IRQ");
  }
  const GsimLayout layout = Layout();
  const std::string irq_path = IrqPath(layout, *point.target.irq);
  NA_ASSIGN_OR_RETURN(std::vector<Step> steps, RestoreFiles(point, {irq_path, DelayPath(layout)}));
  // An IRQ that vanished took its moderation with it; the global delay did not and is still put back. A
  // number the kernel gave to another handler since (a reset, a hot swap) is not the queue's any more:
  // procfs lists an IRQ's handlers as directories, and the queue's is named "nvme<instance>q<qid>".
  const std::string irq_dir = std::filesystem::path(irq_path).parent_path().string();
  const std::string handler = point.target.controller + "q" + std::to_string(point.target.qid);
  if (discover::IsDirectory(JoinPath(irq_dir, handler))) return steps;
  std::erase_if(steps, [&](const Step& step) { return step.object != DelayPath(layout); });
  if (steps.empty()) {
    const std::string why = discover::IsDirectory(irq_dir) ? " no longer names " + handler + " (no " +
                                                                 JoinPath(irq_dir, handler) + ")"
                                                           : " is gone: " + irq_dir + " not found";
    return Fail(ErrorCode::kNotFound, irq_path, "IRQ " + std::to_string(*point.target.irq) + why);
  }
  return steps;
}

// Registered with the levers (lever_registry.h).
namespace {

std::unique_ptr<PlannedLever> MakeGsim(bool dry_run, const config::LeverSettings& settings,
                                       const LeverEnvironment& environment) {
  return std::make_unique<GsimLever>(GsimOptions{environment.procfs_root, settings.gsim_delay_us, dry_run});
}

bool GsimPresent(const config::LeverSettings&, const discover::Controller&, const LeverEnvironment& environment) {
  return ProbeGsimLayout(environment.procfs_root) != GsimLayout::kAbsent;
}

const LeverRegistrar kRegistered({{.kind = LeverKind::kGsim, .risk = LeverRisk::kDriverSpecific,
                                   .serves = {Source::kKernelNvme}, .auto_rank = 20, .offered = &GsimPresent,
                                   .auto_why = "GSIM present"}, &MakeGsim});

}  // namespace

}  // namespace nvmeadapt::actuate
