// SPDX-License-Identifier: Apache-2.0
// The nvme poll_queues module parameter with a controller reset (docs/levers.md).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/actuate/file_lever.h"
#include "agent/actuate/poll_queues_module.h"

namespace nvmeadapt::actuate {

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
