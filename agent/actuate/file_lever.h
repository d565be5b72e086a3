// SPDX-License-Identifier: Apache-2.0
// The levers that write kernel files (the adaptive-poll attribute, the poll_queues parameter, GSIM's procfs
// files) share how they read a value, write a step and check a restore point's files. Paths are under
// configurable roots so that tests run against temporary trees.
#pragma once

#include <string>
#include <vector>

#include "agent/actuate/lever.h"

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

}  // namespace nvmeadapt::actuate
