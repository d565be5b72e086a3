// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/adaptive_poll_lever.h"

#include "agent/actuate/lever_registry.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {

AdaptivePollLever::AdaptivePollLever(AdaptivePollOptions options)
    : FileLever(LeverKind::kAdaptivePollSysfs, LeverScope::kController, options.dry_run, options.sysfs_root),
      options_(std::move(options)) {}

std::string AdaptivePollLever::PathFor(const std::string& controller) const {
  return ExpandPathTemplate(options_.path_template, options_.sysfs_root, controller);
}

Result<PlannedLever::StepPlan> AdaptivePollLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  const std::string path = PathFor(target.controller);
  NA_ASSIGN_OR_RETURN(const std::string current,
                      ReadValue(path, "no adaptive-poll attribute (this kernel lacks the adaptive polling patch)"));
  const std::string& wanted = mode == ReapMode::kPoll ? options_.on_value : options_.off_value;
  StepPlan plan;
  plan.found.push_back({path, current});
  if (current != wanted) plan.steps.push_back(WriteStep(path, wanted));
  return plan;
}

Result<std::vector<PlannedLever::Step>> AdaptivePollLever::MakeRestore(const RestorePoint& point) {
  return RestoreFiles(point, {PathFor(point.target.controller)});
}

namespace {

std::unique_ptr<PlannedLever> MakeAdaptivePoll(bool dry_run, const config::LeverSettings& settings,
                                               const LeverEnvironment& environment) {
  return std::make_unique<AdaptivePollLever>(AdaptivePollOptions{environment.sysfs_root,
                                                                 settings.adaptive_poll_path_template,
                                                                 settings.adaptive_poll_on_value,
                                                                 settings.adaptive_poll_off_value, dry_run});
}

bool AttributePresent(const config::LeverSettings& settings, const discover::Controller& controller,
                      const LeverEnvironment& environment) {
  return discover::PathExists(
      ExpandPathTemplate(settings.adaptive_poll_path_template, environment.sysfs_root, controller.name));
}

// The attribute turns the kernel's own adaptive polling on: adaptive is the attribute's poll. The in-kernel
// mechanism comes first where the kernel has it.
const LeverRegistrar kRegistered({{.kind = LeverKind::kAdaptivePollSysfs, .risk = LeverRisk::kDriverSpecific,
                                   .adaptive_as = engine::ControllerMode::kPoll, .serves = {Source::kKernelNvme},
                                   .auto_rank = 10, .offered = &AttributePresent,
                                   .auto_why = "adaptive-poll attribute present"}, &MakeAdaptivePoll});

}  // namespace

}  // namespace nvmeadapt::actuate
