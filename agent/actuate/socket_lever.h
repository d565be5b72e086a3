// SPDX-License-Identifier: Apache-2.0
// The userspace driver's control socket (docs/uvnvme-control.md). Queue scope: {"op": "set_mode"} switches one
// queue and is acknowledged once the driver reaps in the new mode; the restore point is the mode "list" showed
// before the first change. A refusal carries the driver's message (kRefused); a vanished process is kNotFound
// or kUnavailable; no reply within the timeout is kUnavailable.
#pragma once

#include "agent/actuate/lever.h"
#include "agent/discover/control_client.h"

namespace nvmeadapt::actuate {

struct SocketLeverOptions {
  int timeout_ms = 2000;  // per exchange: connect, request, reply
  bool dry_run = false;
};

class SocketLever final : public PlannedLever {
 public:
  explicit SocketLever(SocketLeverOptions options);
  // Restore step object: "<controller> q<qid> mode"; value "interrupt" or "poll".
  static std::string ModeObject(const LeverTarget& target);

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;
  // One set_mode exchange; the reply must acknowledge the mode asked for.
  Status SetMode(discover::ControlClient& client, const LeverTarget& target, const std::string& mode) const;
  SocketLeverOptions options_;
};

}  // namespace nvmeadapt::actuate
