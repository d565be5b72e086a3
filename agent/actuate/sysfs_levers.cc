#include "agent/actuate/sysfs_levers.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

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

LeverResult<std::string> FileLever::ReadValue(const std::string& path, const std::string& missing_what) const {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err != ENOENT) return Fail(path, SysError("stat", path, err));
    const std::string parent = Parent(path);
    if (!discover::IsDirectory(parent)) return Fail(ErrorCode::kNotFound, path, parent + ": not found");
    LeverError error = Fail(ErrorCode::kUnsupported, path, path + ": " + missing_what);
    error.sys_errno = err;
    return error;
  }
  auto value = discover::ReadTrimmed(path);
  if (!value) return Fail(path, value.error());
  return *value;
}

PlannedLever::Step FileLever::WriteStep(const std::string& path, const std::string& value) const {
  return Step{path, value, [this, path, value]() -> LeverResult<void> {
                if (Status written = WriteAttribute(root_, path, value); !written) return Fail(path, written.error());
                return {};
              }};
}

LeverResult<std::vector<PlannedLever::Step>> FileLever::RestoreFiles(const RestorePoint& point,
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

LeverResult<PlannedLever::Plan> AdaptivePollLever::MakePlan(const LeverTarget& target, engine::ReapMode mode) {
  const std::string path = PathFor(target.controller);
  auto current = ReadValue(path, "no adaptive-poll attribute (this kernel lacks the adaptive polling patch)");
  if (!current) return current.error();
  const std::string& wanted = mode == engine::ReapMode::kPoll ? options_.on_value : options_.off_value;
  Plan plan;
  plan.found.push_back({path, *current});
  if (*current != wanted) plan.steps.push_back(WriteStep(path, wanted));
  return plan;
}

LeverResult<std::vector<PlannedLever::Step>> AdaptivePollLever::MakeRestore(const RestorePoint& point) {
  return RestoreFiles(point, {PathFor(point.target.controller)});
}

// --- GSIM ----------------------------------------------------------------------------------------------------

GsimLever::GsimLever(GsimOptions options)
    : FileLever(LeverKind::kGsim, LeverScope::kVector, options.dry_run, options.procfs_root),
      options_(std::move(options)) {}

std::string GsimLever::IrqPath(uint32_t irq) const {
  return JoinPath(JoinPath(JoinPath(options_.procfs_root, "irq"), std::to_string(irq)), "soft_moderation");
}

std::string GsimLever::GlobalPath() const { return JoinPath(options_.procfs_root, "irq/soft_moderation"); }

LeverResult<std::string> GsimLever::ReadIrqState(const std::string& path) const {
  auto text = ReadValue(path, "no soft_moderation (this kernel lacks GSIM)");
  if (!text) return text;
  const std::string state = text->substr(0, text->find_first_of(" \t\n"));
  if (state != "on" && state != "off") {
    return Fail(ErrorCode::kIo, path, path + ": expected \"on ...\" or \"off ...\", read '" + text->substr(0, 40) + "'");
  }
  return state;
}

// The "delay_us  N" line of the statistics /proc/irq/soft_moderation shows, as the "delay_us=N" that sets it.
LeverResult<std::string> GsimLever::ReadGlobalDelay() const {
  const std::string path = GlobalPath();
  auto text = ReadValue(path, "no soft_moderation (this kernel lacks GSIM)");
  if (!text) return text;
  for (std::string_view line : discover::Split(*text, "\n")) {
    const auto words = discover::Split(line, " \t");
    uint32_t delay = 0;
    if (words.size() == 2 && words[0] == "delay_us" && discover::ParseU32(words[1], &delay)) {
      return "delay_us=" + std::to_string(delay);
    }
  }
  return Fail(ErrorCode::kIo, path, path + ": no \"delay_us N\" line");
}

LeverResult<PlannedLever::Plan> GsimLever::MakePlan(const LeverTarget& target, engine::ReapMode mode) {
  if (!target.irq) {
    return Fail(ErrorCode::kUnsupported, target.ToString(), target.ToString() + " has no interrupt vector");
  }
  const std::string irq_path = IrqPath(*target.irq);
  auto state = ReadIrqState(irq_path);
  if (!state) return state.error();
  Plan plan;
  if (options_.delay_us > 0) {
    auto delay = ReadGlobalDelay();
    if (!delay) return delay.error();
    plan.found.push_back({GlobalPath(), *delay});
    const std::string wanted_delay = "delay_us=" + std::to_string(options_.delay_us);
    if (mode == engine::ReapMode::kPoll && *delay != wanted_delay) {
      plan.steps.push_back(WriteStep(GlobalPath(), wanted_delay));
    }
  }
  plan.found.insert(plan.found.begin(), RestoreStep{irq_path, *state});  // per IRQ first, then the global delay
  const std::string wanted = mode == engine::ReapMode::kPoll ? "on" : "off";
  if (*state != wanted) plan.steps.push_back(WriteStep(irq_path, wanted));
  return plan;
}

LeverResult<std::vector<PlannedLever::Step>> GsimLever::MakeRestore(const RestorePoint& point) {
  if (!point.target.irq) {
    return Fail(ErrorCode::kIo, point.target.ToString(), "restore point without an IRQ");
  }
  auto steps = RestoreFiles(point, {IrqPath(*point.target.irq), GlobalPath()});
  if (!steps) return steps;
  // An IRQ that vanished took its moderation with it; the global delay did not and is still put back.
  const std::string irq_dir = Parent(IrqPath(*point.target.irq));
  if (discover::IsDirectory(irq_dir)) return steps;
  std::erase_if(*steps, [&](const Step& step) { return step.object != GlobalPath(); });
  if (steps->empty()) {
    return Fail(ErrorCode::kNotFound, IrqPath(*point.target.irq), "IRQ " + std::to_string(*point.target.irq) +
                                                                      " is gone: " + irq_dir + " not found");
  }
  return steps;
}

// --- poll_queues + reset_controller ---------------------------------------------------------------------------

PollQueuesLever::PollQueuesLever(PollQueuesOptions options)
    : FileLever(LeverKind::kPollQueuesReset, LeverScope::kController, options.dry_run, options.sysfs_root),
      options_(std::move(options)) {}

std::string PollQueuesLever::ParameterPath() const {
  return JoinPath(options_.sysfs_root, "module/nvme/parameters/poll_queues");
}

std::string PollQueuesLever::ResetPath(const std::string& controller) const {
  return JoinPath(JoinPath(JoinPath(options_.sysfs_root, "class/nvme"), controller), "reset_controller");
}

LeverResult<PlannedLever::Plan> PollQueuesLever::MakePlan(const LeverTarget& target, engine::ReapMode mode) {
  const std::string reset = ResetPath(target.controller);
  if (!discover::PathExists(reset)) {
    if (!discover::IsDirectory(Parent(reset))) {
      return Fail(ErrorCode::kNotFound, reset, "controller " + target.controller + ": " + Parent(reset) + " not found");
    }
    return Fail(ErrorCode::kUnsupported, reset, reset + ": no reset_controller attribute");
  }
  const std::string parameter = ParameterPath();
  auto current = ReadValue(parameter, "no poll_queues parameter (the nvme module is not loaded?)");
  if (!current) return current.error();
  const std::string wanted = mode == engine::ReapMode::kPoll ? std::to_string(options_.poll_queues) : "0";
  Plan plan;
  plan.found.push_back({parameter, *current});
  if (*current != wanted) plan.steps.push_back(WriteStep(parameter, wanted));
  const auto done = reset_with_.find(target.controller);
  if (done == reset_with_.end() || done->second != wanted) {
    Step step = WriteStep(reset, "1");
    step.perform = [this, inner = std::move(step.perform), controller = target.controller, wanted] {
      LeverResult<void> result = inner();
      if (result) reset_with_[controller] = wanted;
      return result;
    };
    plan.steps.push_back(std::move(step));
  }
  return plan;
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

LeverResult<std::vector<PlannedLever::Step>> PollQueuesLever::MakeRestore(const RestorePoint& point) {
  auto steps = RestoreFiles(point, {ParameterPath()});
  if (!steps) return steps;
  const std::string controller = point.target.controller;
  auto current = ReadValue(ParameterPath(), "no poll_queues parameter (the nvme module is not loaded?)");
  if (!current) return current.error();
  std::optional<std::string> safe;
  for (const RestoreStep& step : point.steps) safe = step.value;
  const bool parameter_changed = safe && *safe != *current;
  std::erase_if(*steps, [&](const Step& step) { return step.value == *current; });  // already the safe value
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
  if (!discover::IsDirectory(Parent(ResetPath(controller)))) {
    if (steps->empty()) {
      return Fail(ErrorCode::kNotFound, ResetPath(controller), "controller " + controller + " is gone");
    }
    return steps;  // the parameter is global and stays; the controller took its queues with it
  }
  if (!reset_needed) return steps;
  Step reset = WriteStep(ResetPath(controller), "1");  // the parameter counts at reset only
  reset.perform = [this, inner = std::move(reset.perform), controller = point.target.controller] {
    LeverResult<void> result = inner();
    if (result) reset_with_.erase(controller);
    return result;
  };
  steps->push_back(std::move(reset));
  return steps;
}

}  // namespace nvmeadapt::actuate
