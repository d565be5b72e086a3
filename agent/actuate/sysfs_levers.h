// The levers that write kernel files: the adaptive-poll attribute of the kernel patch and the nvme poll_queues
// module parameter with a controller reset (GSIM, also a file lever: gsim_lever.h). Paths are under
// configurable roots so that tests run against temporary trees. See docs/levers.md for what each does.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/actuate/lever.h"
#include "agent/actuate/poll_queues_module.h"

namespace nvmeadapt::actuate {

// Shared by the file levers: reading a value with the right error when it is missing, and a write step.
class FileLever : public PlannedLever {
 protected:
  // Every file the lever writes lies under `root` (its sysfs or procfs root): see WriteAttribute.
  FileLever(LeverKind kind, LeverScope scope, bool dry_run, std::string root)
      : PlannedLever(kind, scope, dry_run), root_(std::move(root)) {}
  // A missing file whose directory exists is kUnsupported ("<path>: <missing_what>"); a missing directory is
  // kNotFound (the controller or IRQ is gone).
  Result<std::string> ReadValue(const std::string& path, const std::string& missing_what) const;
  Step WriteStep(const std::string& path, const std::string& value) const;
  // Restore steps may only name files this lever would write for the point's target.
  Result<std::vector<Step>> RestoreFiles(const RestorePoint& point,
                                              const std::vector<std::string>& allowed) const;

 private:
  std::string root_;
};

// "{sysfs}/class/nvme/{ctrl}/adaptive_poll" with {sysfs} and {ctrl} replaced.
std::string ExpandPathTemplate(const std::string& path_template, const std::string& sysfs_root,
                               const std::string& controller);

struct AdaptivePollOptions {
  std::string sysfs_root = "/sys";
  std::string path_template = "{sysfs}/class/nvme/{ctrl}/adaptive_poll";
  std::string on_value = "1";
  std::string off_value = "0";
  bool dry_run = false;
};

// The attribute exists only on kernels carrying the adaptive interrupt polling patch. Controller scope: with it
// the kernel decides per queue itself; kPoll writes on_value (the kernel's adaptive polling on), kInterrupt
// writes off_value.
class AdaptivePollLever final : public FileLever {
 public:
  explicit AdaptivePollLever(AdaptivePollOptions options);
  std::string PathFor(const std::string& controller) const;

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;
  AdaptivePollOptions options_;
};

struct PollQueuesOptions {
  std::string sysfs_root = "/sys";
  uint32_t poll_queues = 1;  // asked for in poll mode; interrupt mode asks for 0
  bool dry_run = false;
  std::shared_ptr<PollQueuesModule> module;  // shared by every controller's lever; empty: one of its own
};

// Stock kernels: nvme's poll_queues module parameter is read at controller reset only, so a switch writes it
// and then resets the controller (about 1 s, I/O held meanwhile). The parameter is global: other controllers
// take it at their next reset, and its restore point is the module's (PollQueuesModule). Poll queues serve
// only io_uring IOPOLL I/O. Controller scope.
class PollQueuesLever final : public FileLever {
 public:
  explicit PollQueuesLever(PollQueuesOptions options);
  std::string ParameterPath() const;
  std::string ResetPath(const std::string& controller) const;

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;
  Result<std::string> ReadParameter() const;
  // Sets the parameter to `value` if it reads `current`, resets `controller`, and sets it back to the value
  // other controllers hold it at, if any. `holds`: the controller now holds the module at `value`.
  std::vector<Step> ResetSteps(const std::string& controller, const std::string& current, const std::string& value,
                               bool holds);
  // `perform`, after which `controller` no longer holds the module.
  std::function<Status()> ForgetAfter(const std::string& controller, std::function<Status()> perform);
  // Whether the controller runs poll queues now (its namespaces' io_poll); nullopt when none says.
  std::optional<bool> RunsPollQueues(const std::string& controller) const;
  PollQueuesOptions options_;
  std::map<std::string, std::string> reset_with_;  // controller -> poll_queues value it was last reset with
  std::shared_ptr<PollQueuesModule> module_;
};

}  // namespace nvmeadapt::actuate
