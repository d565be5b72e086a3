// SPDX-License-Identifier: Apache-2.0
// The explicit dry-run lever: records "<controller> q<qid>" -> "interrupt"/"poll" and knows nothing else (its
// restore points are empty). The stand-in where no lever serves a controller (shadow decisions), and a lever
// of its own where the config names it instead of a mode of one (levers.dry_run). No header: the registry
// builds it.
#include "agent/actuate/lever_registry.h"

namespace nvmeadapt::actuate {
namespace {

class DryRunLever final : public PlannedLever {
 public:
  DryRunLever() : PlannedLever(LeverKind::kDryRun, LeverScope::kAny, /*dry_run=*/true) {}

 private:
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override {
    StepPlan plan;
    plan.steps.push_back(Step{target.ToString(), std::string(ReapModeName(mode)), nullptr});
    return plan;
  }
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override {
    std::vector<Step> steps;
    for (const RestoreStep& step : point.steps) steps.push_back(Step{step.object, step.value, nullptr});
    return steps;
  }
};

std::unique_ptr<PlannedLever> MakeDryRun(bool, const config::LeverSettings&, const LeverEnvironment&) {
  return std::make_unique<DryRunLever>();
}

const LeverRegistrar kRegistered({{.kind = LeverKind::kDryRun, .risk = LeverRisk::kNothingElse,
                                   .serves = {Source::kKernelNvme, Source::kBlock, Source::kUvnvme, Source::kSpdk,
                                              Source::kNvmet},
                                   .stands_in = true}, &MakeDryRun});

}  // namespace
}  // namespace nvmeadapt::actuate
