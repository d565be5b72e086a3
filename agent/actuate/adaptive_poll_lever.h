// SPDX-License-Identifier: Apache-2.0
// The adaptive-poll attribute of the kernel patch (docs/levers.md).
#pragma once

#include <string>

#include "agent/actuate/file_lever.h"

namespace nvmeadapt::actuate {

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

}  // namespace nvmeadapt::actuate
