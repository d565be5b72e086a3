// SPDX-License-Identifier: Apache-2.0
// The base class of every lever of DESIGN.md section 5 (docs/levers.md): put a queue (or its vector, or its
// controller, by the lever's scope) in interrupt or poll reaping with one plan per switch, report what was
// written, and say how to put it back (restore_point.h). Results are typed: success, or an Error naming the
// lever and the object concerned (lever_error.h).
//
// Levers are not thread-safe: the daemon calls them from one thread (and should call a kPollQueuesReset or
// kTcpReconnect lever off its main loop: a controller reset or reconnect blocks for a second or more).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/actuate/lever_error.h"
#include "agent/actuate/lever_scope.h"
#include "agent/actuate/lever_target.h"
#include "agent/actuate/restore_point.h"
#include "agent/discover/types.h"
#include "agent/engine/types.h"
#include "common/result.h"

namespace nvmeadapt::actuate {

// The target of a discovered queue of `controller`.
LeverTarget TargetFor(const discover::Controller& controller, const discover::Queue& queue);

// A write a lever made, or would have made in dry run.
struct WriteRecord {
  std::string object;
  std::string value;
  bool performed = false;  // false: dry run
  bool operator==(const WriteRecord&) const = default;
};

struct Applied {
  ReapMode mode = ReapMode::kInterrupt;
  std::vector<WriteRecord> writes;  // empty when the target already was in `mode`
  RestorePoint restore;             // the values found before this agent's first change
  bool dry_run = false;
  // What puts the target back if the change stops between two of its steps (a crash): journaled beside the
  // restore point while the change is under way. Only a lever whose target does not exist between its steps
  // has one (the reconnect lever, from its disconnect to its connect).
  std::optional<RestorePoint> in_flight;
};

// One step of a plan: a value a lever writes to an object, and how.
struct LeverStep {
  std::string object;
  std::string value;
  std::function<Status()> perform;  // not called in dry run
};

class PlannedLever;

// What a lever will do to put one target in one mode, read and decided once: the restore point for the journal
// (before Execute), then Execute. Its lever must outlive it.
class SwitchPlan {
 public:
  // The writes Execute will make (performed = false), the restore point and the mode.
  const Applied& preview() const { return preview_; }
  const RestorePoint& restore() const { return preview_.restore; }
  // False: the target already is in the mode, Execute writes nothing.
  bool changes() const { return !steps_.empty(); }
  // Makes the writes (in dry run: records them). A plan executes once; again is kInternal.
  Result<Applied> Execute();

 private:
  friend class PlannedLever;
  SwitchPlan(PlannedLever& lever, Applied preview, std::vector<LeverStep> steps, std::vector<RestoreStep> found)
      : lever_(&lever), preview_(std::move(preview)), steps_(std::move(steps)), found_(std::move(found)) {}

  PlannedLever* lever_;
  Applied preview_;
  std::vector<LeverStep> steps_;
  std::vector<RestoreStep> found_;
  bool executed_ = false;
};

// The base of every lever: a lever plans (reads the state and decides each write), this class performs the
// plan or, in dry run, records it, and keeps the first value found for each object it changed so that the
// restore point stays the original however often the queue switches.
class PlannedLever {
 public:
  PlannedLever(LeverKind kind, LeverScope scope, bool dry_run) : kind_(kind), scope_(scope), dry_run_(dry_run) {}
  virtual ~PlannedLever() = default;

  LeverKind Kind() const { return kind_; }
  LeverScope Scope() const { return scope_; }
  bool DryRun() const { return dry_run_; }

  // Reads the current state of `target` and decides what puts it in `mode` (only what differs), writing
  // nothing: the daemon journals the plan's restore point, then executes the plan.
  Result<SwitchPlan> Plan(const LeverTarget& target, ReapMode mode);
  // Plan and Execute at once. In dry run it reads, records the writes it would make and makes none.
  Result<Applied> Apply(const LeverTarget& target, ReapMode mode);
  // What Apply would do now, without doing or recording it: the plan's preview.
  Result<Applied> Preview(const LeverTarget& target, ReapMode mode);
  // Writes a restore point back (in dry run: records it). Returns what was written.
  Result<std::vector<WriteRecord>> Restore(const RestorePoint& point);

  // Dry run: every write recorded so far, in order.
  const std::vector<WriteRecord>& Recorded() const { return recorded_; }

 protected:
  using Step = LeverStep;
  struct StepPlan {
    std::vector<Step> steps;
    // The current value of every object this lever may change for the target (whatever the mode), in the
    // order a restore should write them.
    std::vector<RestoreStep> found;
    std::optional<RestorePoint> in_flight;  // Applied::in_flight
  };

  virtual Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) = 0;
  virtual Result<std::vector<Step>> MakeRestore(const RestorePoint& point) = 0;

  // LeverFailure of this lever.
  Error Fail(ErrorCode code, std::string object, std::string message) const;
  Error Fail(std::string object, const Error& error) const;

 private:
  friend class SwitchPlan;
  Result<std::vector<WriteRecord>> Run(std::vector<Step>& steps);
  // Keeps the value found of each object a plan is about to write, unless one is kept already.
  void KeepOriginals(const std::vector<Step>& steps, const std::vector<RestoreStep>& found);

  LeverKind kind_;
  LeverScope scope_;
  bool dry_run_;
  std::map<std::string, std::string> originals_;  // object -> value found before this lever first changed it
  std::vector<WriteRecord> recorded_;
};

// Writes a sysfs/procfs value like `echo value > path` (the file must exist). `path` must lie under `root`
// (the lever's sysfs or procfs root) and is opened with OpenBeneath: no '..', no link out of root, the file
// itself not a link. Errors are SysError with the path, or kPermissionDenied saying why the path was refused.
Status WriteAttribute(const std::string& root, const std::string& path, const std::string& value);

}  // namespace nvmeadapt::actuate
