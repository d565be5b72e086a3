// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/poll_queues_lever.h"

#include <filesystem>

#include "agent/actuate/lever_registry.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

using discover::JoinPath;

std::string Parent(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

}  // namespace

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

namespace {

std::unique_ptr<PlannedLever> MakePollQueues(bool dry_run, const config::LeverSettings& settings,
                                             const LeverEnvironment& environment) {
  return std::make_unique<PollQueuesLever>(
      PollQueuesOptions{environment.sysfs_root, settings.poll_queues, dry_run, environment.poll_queues_module});
}

// A reset is never the engine's call: adaptive leaves it alone, and AUTO never picks it.
const LeverRegistrar kRegistered({{.kind = LeverKind::kPollQueuesReset, .risk = LeverRisk::kResetsController,
                                   .adaptive_as = engine::ControllerMode::kOff, .disruptive = true,
                                   .serves = {Source::kKernelNvme}}, &MakePollQueues});

}  // namespace

}  // namespace nvmeadapt::actuate
