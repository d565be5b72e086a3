// One interface for every lever of DESIGN.md section 5 (docs/levers.md): put a queue (or its vector, or its
// controller, by the lever's scope) in interrupt or poll reaping, report what was written, and say how to put it
// back. Results are typed: success, or a LeverError with a code, the lever and the object concerned.
//
// Levers are not thread-safe: the daemon calls them from one thread (and should call a kPollQueuesReset lever
// off its main loop: a controller reset blocks for about a second).
#pragma once

#include <cassert>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "agent/actuate/lever_kind.h"
#include "agent/common/result.h"
#include "agent/discover/types.h"
#include "agent/engine/types.h"

namespace nvmeadapt::actuate {

// Why a lever failed. `code` is one of kRefused (the device, kernel or driver said no: NVMe "Feature Not
// Changeable", EINVAL from a sysfs store, {"ok": false} from a driver), kUnsupported (this machine lacks the
// lever: no attribute, no GSIM, no vector), kNotFound (the controller, IRQ, device or process is gone),
// kPermissionDenied, kIo (anything else, garbage answers included) or kUnavailable (transient: timeout, busy).
struct LeverError {
  ErrorCode code = ErrorCode::kIo;
  LeverKind lever = LeverKind::kDryRun;
  std::string object;       // the path, device, IRQ or socket concerned
  std::string message;      // one line, naming the object
  int sys_errno = 0;        // when a syscall failed
  uint16_t nvme_status = 0; // when an NVMe controller completed the command with an error (see nvme_admin.h)

  std::string ToString() const;  // "coalescing: refused: /dev/nvme0 Set Features 08h: Feature Not Changeable ..."
  Error ToError() const;         // the common error type, message = ToString()
};

// Result<T> of agent/common with a LeverError.
template <class T>
class [[nodiscard]] LeverResult {
 public:
  LeverResult(T value) : state_(std::in_place_index<0>, std::move(value)) {}     // NOLINT: implicit by design
  LeverResult(LeverError error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT
  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { assert(ok()); return std::get<0>(state_); }
  const T& value() const& { assert(ok()); return std::get<0>(state_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const LeverError& error() const { assert(!ok()); return std::get<1>(state_); }

 private:
  std::variant<T, LeverError> state_;
};

template <>
class [[nodiscard]] LeverResult<void> {
 public:
  LeverResult() = default;
  LeverResult(LeverError error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const LeverError& error() const { assert(!ok()); return *error_; }

 private:
  std::optional<LeverError> error_;
};

// The queue a lever acts for, with everything any lever may need. Build it with TargetFor.
struct LeverTarget {
  std::string controller;           // "nvme0", "uvnvme:1234:0"
  uint32_t qid = 0;
  std::optional<uint32_t> irq;      // kernel: Linux IRQ of the queue's vector (GSIM)
  std::optional<uint32_t> vector;   // kernel: NVMe interrupt vector (IV) of the queue's CQ (coalescing)
  std::string socket_path;          // uvnvme: the process's control socket
  uint32_t ctrl_index = 0;          // uvnvme: the controller's index in the process

  std::string ToString() const;     // "nvme0 q1"
  bool operator==(const LeverTarget&) const = default;
};

LeverTarget TargetFor(const discover::Controller& controller, const discover::Queue& queue);

// One value to write back: a file and its content, a feature and its Command Dword 11, a queue and its mode.
struct RestoreStep {
  std::string object;
  std::string value;
  bool operator==(const RestoreStep&) const = default;
};

// How to put a target back as the lever found it before this agent first changed it. Self-contained, so that
// it can be journaled (ToJson) and replayed after a restart by a new lever of the same kind. A restore point of
// a controller-scope lever restores the whole controller.
struct RestorePoint {
  LeverKind lever = LeverKind::kDryRun;
  LeverTarget target;
  std::vector<RestoreStep> steps;  // Lever::Restore performs them in this order

  bool operator==(const RestorePoint&) const = default;
  std::string ToJson() const;  // one line
  static Result<RestorePoint> FromJson(std::string_view json);
};

// A write a lever made, or would have made in dry run.
struct WriteRecord {
  std::string object;
  std::string value;
  bool performed = false;  // false: dry run
  bool operator==(const WriteRecord&) const = default;
};

struct Applied {
  engine::ReapMode mode = engine::ReapMode::kInterrupt;
  std::vector<WriteRecord> writes;  // empty when the target already was in `mode`
  RestorePoint restore;             // the values found before this agent's first change
  bool dry_run = false;
};

class Lever {
 public:
  virtual ~Lever() = default;
  virtual LeverKind Kind() const = 0;
  virtual LeverScope Scope() const = 0;
  virtual bool DryRun() const = 0;

  // Puts `target` in `mode`: reads the current state, writes only what differs. In dry run it reads, records
  // the writes it would make and makes none.
  virtual LeverResult<Applied> Apply(const LeverTarget& target, engine::ReapMode mode) = 0;
  // Writes a restore point back (in dry run: records it). Returns what was written.
  virtual LeverResult<std::vector<WriteRecord>> Restore(const RestorePoint& point) = 0;
  // What Apply would do now, without doing or recording it: the writes (performed = false) and the restore
  // point. The daemon journals the restore point before it calls Apply.
  virtual LeverResult<Applied> Preview(const LeverTarget& target, engine::ReapMode mode) = 0;
};

// The base of every lever: a lever plans (reads the state and decides each write), this class performs the
// plan or, in dry run, records it, and keeps the first value found for each object it changed so that the
// restore point stays the original however often the queue switches.
class PlannedLever : public Lever {
 public:
  PlannedLever(LeverKind kind, LeverScope scope, bool dry_run) : kind_(kind), scope_(scope), dry_run_(dry_run) {}

  LeverKind Kind() const final { return kind_; }
  LeverScope Scope() const final { return scope_; }
  bool DryRun() const final { return dry_run_; }
  LeverResult<Applied> Apply(const LeverTarget& target, engine::ReapMode mode) final;
  LeverResult<std::vector<WriteRecord>> Restore(const RestorePoint& point) final;
  LeverResult<Applied> Preview(const LeverTarget& target, engine::ReapMode mode) final;

  // Dry run: every write recorded so far, in order.
  const std::vector<WriteRecord>& Recorded() const { return recorded_; }

 protected:
  struct Step {
    std::string object;
    std::string value;
    std::function<LeverResult<void>()> perform;  // not called in dry run
  };
  struct Plan {
    std::vector<Step> steps;
    // The current value of every object this lever may change for the target (whatever the mode), in the
    // order a restore should write them.
    std::vector<RestoreStep> found;
  };

  virtual LeverResult<Plan> MakePlan(const LeverTarget& target, engine::ReapMode mode) = 0;
  virtual LeverResult<std::vector<Step>> MakeRestore(const RestorePoint& point) = 0;

  LeverError Fail(ErrorCode code, std::string object, std::string message) const;
  // An Error from agent/common (SysError, a parser, the control client) as this lever's: the code comes from
  // its errno when it has one (LeverCodeForErrno), else is kept within the lever codes.
  LeverError Fail(std::string object, const Error& error) const;

 private:
  LeverResult<std::vector<WriteRecord>> Run(std::vector<Step>& steps);
  // The plan for `mode` and the restore point it implies (first values kept), performing nothing.
  LeverResult<Applied> Prepare(const LeverTarget& target, engine::ReapMode mode, Plan& plan);

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

// The lever code for an errno: EINVAL and ERANGE from a kernel store are kRefused, ENOTTY kUnsupported, the
// rest as SysError maps them, kept within the lever codes (anything else is kIo).
ErrorCode LeverCodeForErrno(int err);

}  // namespace nvmeadapt::actuate
