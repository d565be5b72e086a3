// SPDX-License-Identifier: Apache-2.0
// The payoff series: whether polling pays on each queue (from the engine's own comparisons, engine/payoff.h)
// and what shadow mode would have done. docs/metrics.md, "Payoff".
#include <string>
#include <vector>

#include "agent/metrics/family_builder.h"

namespace nvmeadapt::metrics {
namespace {

constexpr double kSecondsPerNano = 1e-9;

// "poll" for a shadow window that would have started a try, "interrupt" for one that would have stayed.
std::string ShadowDecision(engine::Reason reason) {
  return std::string(ReapModeName(reason == engine::Reason::kWindowFast ? ReapMode::kPoll : ReapMode::kInterrupt));
}

}  // namespace

void AddPayoffFamilies(const std::vector<QueueSeries>& queues, std::vector<MetricFamily>& out) {
  FamilyBuilder speedup("nvme_adapt_queue_poll_speedup",
                        "The last kept polling window's completion rate over the interrupt baseline it was held to.",
                        MetricType::Gauge);
  FamilyBuilder polled("nvme_adapt_queue_polled_completions_total",
                       "Completions reaped in polling windows the engine judged, kept or not.", MetricType::Counter);
  FamilyBuilder gained("nvme_adapt_queue_completions_gained_total",
                       "Estimate of the completions polling added: each kept window's completions x (1 - baseline "
                       "rate / its rate).",
                       MetricType::Counter);
  FamilyBuilder polling("nvme_adapt_queue_polling_seconds_total",
                        "Time in judged polling windows, by outcome (kept, or failed: the try ended in it).",
                        MetricType::Counter);
  FamilyBuilder cpu("nvme_adapt_queue_polling_cpu_seconds_total",
                    "CPU the queue's poller spent while the queue was in poll mode, where it can be measured "
                    "(uvnvme reaper threads).",
                    MetricType::Counter);
  FamilyBuilder shadow("nvme_adapt_queue_shadow_decisions_total",
                       "Shadow mode: windows judged, by what the engine would have decided and why.",
                       MetricType::Counter);
  FamilyBuilder shadow_completions("nvme_adapt_queue_shadow_completions_total",
                                   "Shadow mode: completions of the judged windows, by what the engine would have "
                                   "decided (their poll share is the share it would have polled).",
                                   MetricType::Counter);
  for (const QueueSeries& queue : queues) {
    if (!queue.payoff) continue;
    const engine::QueuePayoff& p = *queue.payoff;
    const Labels labels = QueueLabelsOf(queue);
    if (p.judged_windows > 0) {
      if (p.kept_windows > 0) speedup.Add(labels, p.last_kept_speedup);
      polled.Add(labels, static_cast<double>(p.polled_completions));
      gained.Add(labels, p.completions_gained);
      polling.Add(With(labels, "outcome", "kept"),
                  static_cast<double>(p.polling_time - p.failed_polling_time) * kSecondsPerNano);
      polling.Add(With(labels, "outcome", "failed"), static_cast<double>(p.failed_polling_time) * kSecondsPerNano);
    }
    if (queue.polling_cpu_seconds) cpu.Add(labels, *queue.polling_cpu_seconds);
    if (p.ShadowWindows() > 0) {
      for (size_t i = 0; i < engine::kMeasureReasons.size(); ++i) {
        const engine::Reason reason = engine::kMeasureReasons[i];
        const Labels decided = With(labels, "decision", ShadowDecision(reason));
        shadow.Add(With(decided, "reason", std::string(engine::ReasonName(reason))),
                   static_cast<double>(p.shadow_windows[i]));
        shadow_completions.Add(decided, static_cast<double>(p.shadow_completions[i]));
      }
    }
  }
  for (FamilyBuilder* family : {&speedup, &polled, &gained, &polling, &cpu, &shadow, &shadow_completions}) {
    family->MoveTo(out);
  }
}

}  // namespace nvmeadapt::metrics
