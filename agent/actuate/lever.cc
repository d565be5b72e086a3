// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/lever.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/files.h"

namespace nvmeadapt::actuate {

LeverTarget TargetFor(const discover::Controller& controller, const discover::Queue& queue) {
  LeverTarget target;
  target.controller = controller.name;
  target.qid = queue.qid;
  if (controller.source == Source::kUvnvme) {
    target.socket_path = controller.socket_path;
    target.ctrl_index = controller.instance;
  } else if (controller.source == Source::kNvmet) {
    target.subsysnqn = controller.subsysnqn;
  } else if (queue.vector) {
    target.irq = queue.vector->irq;
    target.vector = queue.vector->index;
  }
  return target;
}

Status WriteAttribute(const std::string& root, const std::string& path, const std::string& value) {
  NA_ASSIGN_OR_RETURN(const int fd, OpenBeneath(root, path, O_WRONLY | O_TRUNC));
  const std::string line = value + "\n";
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = write(fd, line.data() + written, line.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return SysError("write '" + value + "' to", path, err);
    }
    written += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return SysError("close", path, errno);
  return OkStatus();
}

Error PlannedLever::Fail(ErrorCode code, std::string object, std::string message) const {
  return LeverFailure(kind_, code, std::move(object), std::move(message));
}

Error PlannedLever::Fail(std::string object, const Error& error) const {
  return LeverFailure(kind_, std::move(object), error);
}

Result<std::vector<WriteRecord>> PlannedLever::Run(std::vector<Step>& steps) {
  std::vector<WriteRecord> writes;
  for (auto& step : steps) {
    if (dry_run_) {
      writes.push_back({step.object, step.value, false});
      recorded_.push_back(writes.back());
      continue;
    }
    NA_RETURN_IF_ERROR(step.perform());
    writes.push_back({step.object, step.value, true});
  }
  return writes;
}

Result<SwitchPlan> PlannedLever::Plan(const LeverTarget& target, ReapMode mode) {
  NA_ASSIGN_OR_RETURN(StepPlan made, MakePlan(target, mode));
  Applied preview;
  preview.mode = mode;
  preview.dry_run = dry_run_;
  preview.restore.lever = kind_;
  preview.restore.target = target;
  for (const RestoreStep& found : made.found) {
    const auto original = originals_.find(found.object);
    preview.restore.steps.push_back(original != originals_.end() ? RestoreStep{found.object, original->second}
                                                                 : found);
  }
  for (const Step& step : made.steps) preview.writes.push_back(WriteRecord{step.object, step.value, false});
  if (!made.steps.empty()) preview.in_flight = std::move(made.in_flight);
  return SwitchPlan(*this, std::move(preview), std::move(made.steps), std::move(made.found));
}

void PlannedLever::KeepOriginals(const std::vector<Step>& steps, const std::vector<RestoreStep>& found) {
  for (const Step& step : steps) {
    for (const RestoreStep& value : found) {
      if (value.object == step.object) originals_.emplace(value.object, value.value);  // keeps the first
    }
  }
}

Result<Applied> SwitchPlan::Execute() {
  if (executed_) {
    Error twice = lever_->Fail(ErrorCode::kIo, preview_.restore.target.ToString(),
                               preview_.restore.target.ToString() + ": a plan executed twice");
    twice.code = ErrorCode::kInternal;  // a bug, not the device's doing
    twice.retry = RetryClassOf(twice.code);
    return twice;
  }
  executed_ = true;
  // Before writing: a plan that fails half way has still changed what it wrote first.
  if (!lever_->dry_run_) lever_->KeepOriginals(steps_, found_);
  Applied applied = preview_;
  NA_ASSIGN_OR_RETURN(applied.writes, lever_->Run(steps_));
  return applied;
}

Result<Applied> PlannedLever::Preview(const LeverTarget& target, ReapMode mode) {
  NA_ASSIGN_OR_RETURN(const SwitchPlan plan, Plan(target, mode));
  return plan.preview();
}

Result<Applied> PlannedLever::Apply(const LeverTarget& target, ReapMode mode) {
  NA_ASSIGN_OR_RETURN(SwitchPlan plan, Plan(target, mode));
  return plan.Execute();
}

Result<std::vector<WriteRecord>> PlannedLever::Restore(const RestorePoint& point) {
  if (point.lever != kind_) {
    return Fail(ErrorCode::kIo, point.target.ToString(),
                "restore point of lever " + std::string(LeverKindName(point.lever)) + " given to " +
                    std::string(LeverKindName(kind_)));
  }
  NA_ASSIGN_OR_RETURN(std::vector<Step> steps, MakeRestore(point));
  NA_ASSIGN_OR_RETURN(std::vector<WriteRecord> writes, Run(steps));
  if (!dry_run_) {
    for (const RestoreStep& step : point.steps) originals_.erase(step.object);
  }
  return writes;
}

}  // namespace nvmeadapt::actuate

