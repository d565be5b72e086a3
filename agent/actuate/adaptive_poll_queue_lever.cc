// SPDX-License-Identifier: Apache-2.0
// The per-queue lever of our nvme-pci module (kmod/README.md): the agent decides, the driver only does. A queue
// is put in a mode by writing `poll` or `interrupt` to /sys/class/nvme/<ctrl>/adaptive/q<qid>/mode; the module
// freezes the controller's namespaces, waits for the I/O in flight, switches and unfreezes, so a switch loses
// nothing and changes nothing else. The restore point is the mode file as found (`auto` before any agent: the
// controller's own adaptive_poll decides). AUTO takes it first wherever the controller has the files: on a
// stock kernel no other lever makes a kernel queue poll.
#include <string>
#include <vector>

#include "agent/actuate/file_lever.h"
#include "agent/actuate/lever_registry.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

std::string QueuesDir(const std::string& sysfs_root, const std::string& controller) {
  return discover::JoinPath(discover::JoinPath(discover::JoinPath(sysfs_root, "class/nvme"), controller), "adaptive");
}

std::string ModePath(const std::string& sysfs_root, const std::string& controller, uint32_t qid) {
  return discover::JoinPath(QueuesDir(sysfs_root, controller), "q" + std::to_string(qid) + "/mode");
}

class AdaptivePollQueueLever final : public FileLever {
 public:
  AdaptivePollQueueLever(bool dry_run, const std::string& sysfs_root)
      : FileLever(LeverKind::kAdaptivePollQueue, LeverScope::kQueue, dry_run, sysfs_root), sysfs_root_(sysfs_root) {}

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override {
    const std::string path = ModePath(sysfs_root_, target.controller, target.qid);
    NA_ASSIGN_OR_RETURN(const std::string current,
                        ReadValue(path, "no per-queue mode file (not nvme-adapt's nvme-pci module: kmod/README.md)"));
    const std::string wanted = mode == ReapMode::kPoll ? "poll" : "interrupt";
    StepPlan plan;
    plan.found.push_back({path, current});
    if (current != wanted) plan.steps.push_back(WriteStep(path, wanted));
    return plan;
  }

  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override {
    return RestoreFiles(point, {ModePath(sysfs_root_, point.target.controller, point.target.qid)});
  }

  std::string sysfs_root_;
};

std::unique_ptr<PlannedLever> Make(bool dry_run, const config::LeverSettings&, const LeverEnvironment& environment) {
  return std::make_unique<AdaptivePollQueueLever>(dry_run, environment.sysfs_root);
}

bool ModuleLoaded(const config::LeverSettings&, const discover::Controller& controller,
                  const LeverEnvironment& environment) {
  return discover::IsDirectory(QueuesDir(environment.sysfs_root, controller.name));
}

// Before the adaptive-poll attribute (10), which the module has too: there the agent decides per queue.
const LeverRegistrar kRegistered({{.kind = LeverKind::kAdaptivePollQueue, .risk = LeverRisk::kNothingElse,
                                   .serves = {Source::kKernelNvme}, .auto_rank = 5, .offered = &ModuleLoaded,
                                   .auto_why = "nvme-adapt's nvme-pci module (per-queue mode files)"},
                                  &Make});

}  // namespace
}  // namespace nvmeadapt::actuate
