// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/queue_control.h"

#include "agent/engine/rules.h"

namespace nvmeadapt::collect {

QueueControl ControlFor(const engine::QueueView& view, ReapMode mode, uint32_t generation, engine::Nanos mode_since) {
  QueueControl control;
  control.mode = mode;
  control.generation = generation;
  control.mode_since = mode_since;
  if (mode == ReapMode::kPoll && view.state == engine::QueueState::kPolling) {
    control.baseline_span = view.baseline_span;
    control.baseline_completions = view.baseline_completions;
  }
  control.window_completions = view.policy.window_completions;
  // The run's credit too, so that the BPF side reports only misses the engine's rule can confirm: it sends
  // one early record per window.
  control.pace_slack = engine::PaceSlack(view.policy, view.baseline_span, view.pace_credit);
  control.batch_pace_allowance = view.policy.batch_pace_allowance;
  control.try_clock_first_completion = view.policy.try_clock_first_completion;
  return control;
}

bool InKernelHalf(Source source) { return na_region_base(static_cast<__u32>(source)) == 0; }

}  // namespace nvmeadapt::collect
