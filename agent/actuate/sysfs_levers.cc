#include "agent/actuate/sysfs_levers.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "agent/actuate/lever_registry.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

using discover::JoinPath;

std::string Parent(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

void ReplaceAll(std::string& text, std::string_view from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

}  // namespace

std::string ExpandPathTemplate(const std::string& path_template, const std::string& sysfs_root,
                               const std::string& controller) {
  std::string path = path_template;
  ReplaceAll(path, "{sysfs}", sysfs_root);
  ReplaceAll(path, "{ctrl}", controller);
  return path;
}

Result<std::string> FileLever::ReadValue(const std::string& path, const std::string& missing_what) const {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err != ENOENT) return Fail(path, SysError("stat", path, err));
    const std::string parent = Parent(path);
    if (!discover::IsDirectory(parent)) return Fail(ErrorCode::kNotFound, path, parent + ": not found");
    Error error = Fail(ErrorCode::kUnsupported, path, path + ": " + missing_what);
    error.sys_errno = err;
    return error;
  }
  auto value = discover::ReadTrimmed(path);
  if (!value) return Fail(path, value.error());
  return *value;
}

PlannedLever::Step FileLever::WriteStep(const std::string& path, const std::string& value) const {
  return Step{path, value, [this, path, value]() -> Status {
                if (Status written = WriteAttribute(root_, path, value); !written) return Fail(path, written.error());
                return {};
              }};
}

Result<std::vector<PlannedLever::Step>> FileLever::RestoreFiles(const RestorePoint& point,
                                                                     const std::vector<std::string>& allowed) const {
  std::vector<Step> steps;
  for (const RestoreStep& step : point.steps) {
    if (std::find(allowed.begin(), allowed.end(), step.object) == allowed.end()) {
      return Fail(ErrorCode::kIo, step.object,
                  "restore point names " + step.object + ", not a file of this lever for " + point.target.ToString());
    }
    steps.push_back(WriteStep(step.object, step.value));
  }
  return steps;
}

// --- adaptive-poll attribute ---------------------------------------------------------------------------------

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

// --- poll_queues + reset_controller ---------------------------------------------------------------------------

PollQueuesLever::PollQueuesLever(PollQueuesOptions options)
    : FileLever(LeverKind::kPollQueuesReset, LeverScope::kController, options.dry_run, options.sysfs_root),
      options_(std::move(options)),
      module_(options_.module ? options_.module : std::make_shared<PollQueuesModule>()) {}

std::string PollQueuesLever::ParameterPath() const {
  return JoinPath(options_.sysfs_root, "module/nvme/parameters/poll_queues");
}

Result<std::string> PollQueuesLever::ReadParameter() const {
  return ReadValue(ParameterPath(), "no poll_queues parameter (the nvme module is not loaded?)");
}

std::string PollQueuesLever::ResetPath(const std::string& controller) const {
  return JoinPath(JoinPath(JoinPath(options_.sysfs_root, "class/nvme"), controller), "reset_controller");
}

std::vector<PlannedLever::Step> PollQueuesLever::ResetSteps(const std::string& controller, const std::string& current,
                                                            const std::string& value, bool holds) {
  std::vector<Step> steps;
  if (current != value) {
    Step write = WriteStep(ParameterPath(), value);
    write.perform = [this, inner = std::move(write.perform), current] {
      module_->WillWrite(current);
      return inner();
    };
    steps.push_back(std::move(write));
  }
  Step reset = WriteStep(ResetPath(controller), "1");
  reset.perform = [this, inner = std::move(reset.perform), controller, value, holds] {
    Status result = inner();
    if (!result) return result;
    reset_with_[controller] = value;
    if (holds) module_->ResetWith(controller, value);
    return result;
  };
  steps.push_back(std::move(reset));
  // Other controllers still run with the module's value set by their switch: it goes back for their next
  // reset (theirs, or the kernel's own recovery), so that only this controller changed.
  if (const auto others = module_->HeldByOthers(controller); others && *others != value) {
    steps.push_back(WriteStep(ParameterPath(), *others));
  }
  return steps;
}

Result<PlannedLever::StepPlan> PollQueuesLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  const std::string reset = ResetPath(target.controller);
  if (!discover::PathExists(reset)) {
    if (!discover::IsDirectory(Parent(reset))) {
      return Fail(ErrorCode::kNotFound, reset, "controller " + target.controller + ": " + Parent(reset) + " not found");
    }
    return Fail(ErrorCode::kUnsupported, reset, reset + ": no reset_controller attribute");
  }
  const std::string parameter = ParameterPath();
  NA_ASSIGN_OR_RETURN(const std::string current, ReadParameter());
  const std::string wanted = mode == ReapMode::kPoll ? std::to_string(options_.poll_queues) : "0";
  StepPlan plan;
  // The module's value before any controller's switch, not another controller's applied one.
  plan.found.push_back({parameter, module_->SafeValue(current)});
  const auto done = reset_with_.find(target.controller);
  if (done == reset_with_.end() || done->second != wanted) {
    plan.steps = ResetSteps(target.controller, current, wanted, mode == ReapMode::kPoll);
    if (mode != ReapMode::kPoll) plan.steps.back().perform = ForgetAfter(target.controller, std::move(plan.steps.back().perform));
  } else if (current != wanted && !module_->HeldByOthers(target.controller)) {
    plan.steps.push_back(WriteStep(parameter, wanted));
  }
  return plan;
}

std::function<Status()> PollQueuesLever::ForgetAfter(const std::string& controller, std::function<Status()> perform) {
  return [this, controller, perform = std::move(perform)] {
    Status result = perform();
    if (result) module_->Forget(controller);
    return result;
  };
}

std::optional<bool> PollQueuesLever::RunsPollQueues(const std::string& controller) const {
  // A namespace's io_poll is 1 exactly when its controller was last reset with poll queues.
  const std::string dir = JoinPath(JoinPath(options_.sysfs_root, "class/nvme"), controller);
  std::error_code ec;
  for (const auto& child : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = child.path().filename().string();
    if (name.rfind(controller + "n", 0) != 0) continue;
    auto io_poll = discover::ReadTrimmed(JoinPath(child.path().string(), "queue/io_poll"));
    if (io_poll) return *io_poll == "1";
  }
  return std::nullopt;
}

Result<std::vector<PlannedLever::Step>> PollQueuesLever::MakeRestore(const RestorePoint& point) {
  NA_ASSIGN_OR_RETURN(std::vector<Step> steps, RestoreFiles(point, {ParameterPath()}));
  const std::string controller = point.target.controller;
  NA_ASSIGN_OR_RETURN(const std::string current, ReadParameter());
  std::optional<std::string> safe;
  for (const RestoreStep& step : point.steps) safe = step.value;
  const bool parameter_changed = safe && *safe != current;
  std::erase_if(steps, [&](const Step& step) { return step.value == current; });  // already the safe value
  // A reset holds the controller's I/O for about a second: only when it runs with another value than the
  // safe one. Known from this lever's own reset, else from the namespaces' io_poll, else assumed when the
  // parameter differs (the lever writes the parameter before it resets).
  bool reset_needed = !safe.has_value();
  if (safe) {
    if (const auto done = reset_with_.find(controller); done != reset_with_.end()) {
      reset_needed = done->second != *safe;
    } else if (const std::optional<bool> polling = RunsPollQueues(controller)) {
      reset_needed = *polling != (*safe != "0");
    } else {
      reset_needed = parameter_changed;
    }
  }
  const auto others = module_->HeldByOthers(controller);
  const bool gone = !discover::IsDirectory(Parent(ResetPath(controller)));
  if (others && safe && *others != *safe) {
    // The module stays at the others' value: it is put back once, by the last of them. This controller
    // alone takes the safe value, by a reset in between.
    steps.clear();
    if (!gone && reset_needed) steps = ResetSteps(controller, current, *safe, /*holds=*/false);
  } else if (gone) {
    if (steps.empty()) {
      return Fail(ErrorCode::kNotFound, ResetPath(controller), "controller " + controller + " is gone");
    }
    // the parameter is global and stays; the controller took its queues with it
  } else if (reset_needed) {
    Step reset = WriteStep(ResetPath(controller), "1");  // the parameter counts at reset only
    reset.perform = [this, inner = std::move(reset.perform), controller] {
      Status result = inner();
      if (result) reset_with_.erase(controller);
      return result;
    };
    steps.push_back(std::move(reset));
  }
  if (!DryRun()) module_->Forget(controller);
  return steps;
}

// Registered with the levers (lever_registry.h).
namespace {

std::unique_ptr<PlannedLever> MakeAdaptivePoll(bool dry_run, const config::LeverSettings& settings,
                                               const LeverEnvironment& environment) {
  return std::make_unique<AdaptivePollLever>(AdaptivePollOptions{environment.sysfs_root,
                                                                 settings.adaptive_poll_path_template,
                                                                 settings.adaptive_poll_on_value,
                                                                 settings.adaptive_poll_off_value, dry_run});
}

std::unique_ptr<PlannedLever> MakePollQueues(bool dry_run, const config::LeverSettings& settings,
                                             const LeverEnvironment& environment) {
  return std::make_unique<PollQueuesLever>(
      PollQueuesOptions{environment.sysfs_root, settings.poll_queues, dry_run, environment.poll_queues_module});
}

// The attribute turns the kernel's own adaptive polling on: adaptive is the attribute's poll.
const LeverRegistrar kAdaptivePoll({{LeverKind::kAdaptivePollSysfs, LeverRisk::kDriverSpecific,
                                     engine::ControllerMode::kPoll},
                                    &MakeAdaptivePoll});
// A reset is never the engine's call: adaptive leaves it alone.
const LeverRegistrar kPollQueues({{LeverKind::kPollQueuesReset, LeverRisk::kResetsController,
                                   engine::ControllerMode::kOff, /*disruptive=*/true},
                                  &MakePollQueues});

}  // namespace

}  // namespace nvmeadapt::actuate
