// SPDX-License-Identifier: Apache-2.0
// The lever of an NVMe target's queues: our nvmet's polling-queue task (kmod/nvmet/README.md), switched per
// namespace through configfs (subsystems/<nqn>/namespaces/<nsid>/pqt_enable). Controller scope: the task
// serves a namespace's backing disk, which every host connection to the subsystem reaches, so a target
// controller in poll turns polled submission on for each namespace of its subsystem that the task can serve
// (enabled, on a block device with a poll queue) and leaves the others alone. The engine still decides per
// target queue (a controller's adaptive mode is adaptive): each queue's decision is a vote, and a namespace
// polls while a vote for poll stands (NvmetPollVotes, shared by every target controller's lever).
// docs/fabrics.md says what that means for the engine.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/actuate/file_lever.h"
#include "agent/actuate/nvmet_poll_votes.h"

namespace nvmeadapt::actuate {

// How a value reaches a kernel file: WriteAttribute; tests give the kernel's refusals.
using AttributeWriter = std::function<Status(const std::string& root, const std::string& path, const std::string& value)>;

struct NvmetPollTaskOptions {
  std::string sysfs_root = "/sys";  // configfs under {sysfs}/kernel/config, the backing disks under {sysfs}/block
  bool dry_run = false;
  std::shared_ptr<NvmetPollVotes> votes;  // the environment's, shared by every controller's lever; own one if null
  AttributeWriter write = &WriteAttribute;
};

// A namespace of an nvmet subsystem as the task sees it.
struct NvmetNamespace {
  std::string dir;         // {sysfs}/kernel/config/nvmet/subsystems/<nqn>/namespaces/<nsid>
  std::string pqt_enable;  // dir/pqt_enable
  bool has_task = false;   // pqt_enable exists: our nvmet, not the stock one
  bool enabled = false;    // enable 1
  std::string disk;        // the last part of device_path, as discovery names a backing disk ("nvme0n1")
  bool disk_polls = false;  // {sysfs}/block/<disk>/queue/io_poll is 1: the disk has a poll queue
  bool Served() const { return has_task && enabled && disk_polls; }
};

// {sysfs}/kernel/config/nvmet/subsystems/<nqn>
std::string NvmetSubsystemDir(const std::string& sysfs_root, const std::string& nqn);
// The namespaces of subsystem `nqn`, by nsid; kNotFound when the subsystem is gone, kInvalidArgument for a name
// that is no directory entry ("", ".", "..", or with a '/').
Result<std::vector<NvmetNamespace>> ReadNvmetNamespaces(const std::string& sysfs_root, const std::string& nqn);

class NvmetPollTaskLever : public FileLever {
 public:
  explicit NvmetPollTaskLever(NvmetPollTaskOptions options);

 protected:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;

 private:
  // The namespaces the task serves for the target's subsystem; kUnsupported (with the path) when none.
  Result<std::vector<NvmetNamespace>> Served(const LeverTarget& target) const;
  // A write of pqt_enable, with the kernel's refusals said in the attribute's words.
  Status Write(const std::string& path, const std::string& value) const;

  NvmetPollTaskOptions options_;
};

}  // namespace nvmeadapt::actuate
