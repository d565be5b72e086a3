// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/bpf_collector.h"
#include "agent/collect/hook_plan.h"
#include "agent/collect/procfs_collector.h"
#include "common/log.h"

namespace nvmeadapt::collect {
namespace {

std::unique_ptr<Collector> Fallback(const CollectorOptions& options, const std::string& cause) {
  NA_WARN("collector: BPF unavailable: " << cause << "; using the procfs collector (deltas of /proc/interrupts and "
                                            "/sys/block/*/stat), observe only");
  auto collector = std::make_unique<ProcfsCollector>(options.root, options.procfs_interval_ms);
  collector->SetChoices({"BPF unavailable: " + cause + "; procfs collector, observe only"});
  return collector;
}

}  // namespace

Result<std::unique_ptr<Collector>> OpenCollector(const CollectorOptions& options) {
  return OpenCollector(options, MakeSystemFeatureProbe());
}

Result<std::unique_ptr<Collector>> OpenCollector(const CollectorOptions& options, std::shared_ptr<FeatureProbe> probe) {
  const HookPlan plan = PlanHooks(*probe, options);
  if (!plan.use_bpf) return Fallback(options, plan.fallback_cause);
  auto collector = BpfCollector::Open(options, plan, std::move(probe));
  if (!collector.ok()) {
    const ErrorCode code = collector.error().code;
    if (code == ErrorCode::kPermissionDenied || code == ErrorCode::kUnsupported)
      return Fallback(options, collector.error().message);
    return std::move(collector).take_error();
  }
  for (const std::string& decision : plan.decisions) NA_INFO("collector: " << decision);
  (*collector)->SetChoices(plan.decisions);
  return std::unique_ptr<Collector>(std::move(*collector));
}

}  // namespace nvmeadapt::collect
