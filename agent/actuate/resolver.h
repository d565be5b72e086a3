// Which lever serves a controller (config `levers`, docs/levers.md), what this machine offers, and building the
// levers from the settings.
//
// Order: a per-controller override; else the source's default (levers.kernel_lever / levers.uvnvme_lever);
// else, for AUTO: uvnvme -> the control socket; kernel -> the adaptive-poll attribute if the kernel has it,
// else GSIM if the kernel has it, else coalescing (Set Features 08h/09h); an NVMe/TCP host -> dry run (shadow
// decisions), levers.kernel_lever counting for it only when it is tcp_reconnect. The poll_queues and reconnect
// levers are never picked by AUTO: they reset or disconnect the controller. An explicit choice is kept even where the machine lacks the lever (Apply
// then fails with kUnsupported, which the daemon reports). `levers.dry_run` makes every lever a dry run.
#pragma once

#include <memory>
#include <string>

#include "agent/actuate/lever.h"
#include "agent/actuate/lever_registry.h"
#include "agent/config/levers_config.h"
#include "agent/discover/types.h"

namespace nvmeadapt::actuate {

// What the machine offers a controller, as far as resolving needs to know.
struct LeverFacts {
  bool adaptive_poll_attribute = false;  // the attribute of the kernel patch exists for this controller
  bool gsim = false;                     // the kernel has GSIM, in any layout (ProbeGsimLayout)
  bool nvmet_polling_task = false;       // nvmet has the polling-queue task's parameters (pqt_*)
};

LeverFacts ProbeLeverFacts(const config::LeverSettings& settings, const discover::Controller& controller,
                           const LeverEnvironment& environment);

struct LeverChoice {
  LeverKind kind = LeverKind::kDryRun;  // never kAuto
  bool dry_run = false;                 // the lever records instead of writing
  std::string why;                      // e.g. "levers.controllers[1]", "kernel default: GSIM present"
  // No lever serves the controller (an NVMe target's queues, a TCP host without the reconnect lever, block
  // devices, SPDK): its queues get shadow decisions in any mode but off, never a pretended switch.
  bool shadow_only = false;
};

// Pure.
LeverChoice ResolveLever(const config::LeverSettings& settings, const discover::Controller& controller,
                         const LeverFacts& facts);

// The explicit dry-run lever: records "<controller> q<qid>" -> "interrupt"/"poll" and knows nothing else (its
// restore points are empty). Used where dry run was chosen as the lever itself rather than as a mode of one.
class DryRunLever final : public PlannedLever {
 public:
  DryRunLever() : PlannedLever(LeverKind::kDryRun, LeverScope::kAny, /*dry_run=*/true) {}

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;
};

}  // namespace nvmeadapt::actuate
