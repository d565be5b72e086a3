#include "agent/actuate/resolver.h"

#include "agent/actuate/coalescing_lever.h"
#include "agent/actuate/gsim_lever.h"
#include "agent/actuate/reconnect_lever.h"
#include "agent/actuate/socket_lever.h"
#include "agent/actuate/sysfs_levers.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {

LeverFacts ProbeLeverFacts(const config::LeverSettings& settings, const discover::Controller& controller,
                           const LeverEnvironment& environment) {
  LeverFacts facts;
  if (controller.source == Source::kNvmet) {
    facts.nvmet_polling_task =
        discover::PathExists(discover::JoinPath(environment.sysfs_root, "module/nvmet/parameters/pqt_idle_usecs"));
  }
  if (controller.source != Source::kKernelNvme) return facts;
  facts.adaptive_poll_attribute = discover::PathExists(
      ExpandPathTemplate(settings.adaptive_poll_path_template, environment.sysfs_root, controller.name));
  facts.gsim = ProbeGsimLayout(environment.procfs_root) != GsimLayout::kAbsent;
  return facts;
}

LeverChoice ResolveLever(const config::LeverSettings& settings, const discover::Controller& controller,
                         const LeverFacts& facts) {
  LeverChoice choice;
  const auto done = [&settings](LeverChoice c) {
    c.dry_run = settings.dry_run || c.kind == LeverKind::kDryRun;
    if (settings.dry_run && c.kind != LeverKind::kDryRun) c.why += " (levers.dry_run)";
    return c;
  };
  for (size_t i = 0; i < settings.controllers.size(); ++i) {
    const auto& entry = settings.controllers[i];
    if (entry.controller == controller.name && entry.lever != LeverKind::kAuto) {
      return done({entry.lever, false, "levers.controllers[" + std::to_string(i) + "]"});
    }
  }
  switch (controller.source) {
    case Source::kUvnvme:
      if (settings.uvnvme_lever != LeverKind::kAuto) return done({settings.uvnvme_lever, false, "levers.uvnvme_lever"});
      return done({LeverKind::kUvnvmeSocket, false, "uvnvme default: control socket"});
    case Source::kKernelNvme:
      if (controller.transport == "tcp") {
        // Disruptive, like poll_queues: only when named. levers.kernel_lever serves the PCIe controllers.
        if (settings.kernel_lever == LeverKind::kTcpReconnect) return done({settings.kernel_lever, false, "levers.kernel_lever"});
        return done({LeverKind::kDryRun, true,
                     "tcp host: shadow decisions only (the reconnect lever tcp_reconnect switches it when "
                     "levers.controllers names it: it disconnects)",
                     true});
      }
      if (settings.kernel_lever != LeverKind::kAuto) return done({settings.kernel_lever, false, "levers.kernel_lever"});
      if (facts.adaptive_poll_attribute) {
        return done({LeverKind::kAdaptivePollSysfs, false, "kernel default: adaptive-poll attribute present"});
      }
      if (facts.gsim) return done({LeverKind::kGsim, false, "kernel default: GSIM present"});
      return done({LeverKind::kCoalescing, false, "kernel default: no adaptive-poll attribute, no GSIM"});
    case Source::kNvmet:
      // The series' parameters are the module's, for every target queue at once, and it was never merged:
      // no lever is written against it (docs/fabrics.md).
      return done({LeverKind::kDryRun, true,
                   facts.nvmet_polling_task
                       ? "nvmet target queue: shadow decisions only (this kernel has the polling-queue task, "
                         "pqt_*, module-wide; nvme-adapt has no lever for it)"
                       : "nvmet target queue: shadow decisions only (no lever on this kernel: it has no "
                         "polling-queue task, /sys/module/nvmet/parameters/pqt_*)",
                   true});
    default:
      break;
  }
  // Block devices and SPDK are observed only: no lever switches them.
  return done({LeverKind::kDryRun, true, "no lever for " + controller.name + "'s source: shadow decisions only", true});
}

std::unique_ptr<PlannedLever> MakeLever(LeverKind kind, bool dry_run, const config::LeverSettings& settings,
                                        const LeverEnvironment& environment) {
  switch (kind) {
    case LeverKind::kAdaptivePollSysfs:
      return std::make_unique<AdaptivePollLever>(AdaptivePollOptions{
          environment.sysfs_root, settings.adaptive_poll_path_template, settings.adaptive_poll_on_value,
          settings.adaptive_poll_off_value, dry_run});
    case LeverKind::kGsim:
      return std::make_unique<GsimLever>(GsimOptions{environment.procfs_root, settings.gsim_delay_us, dry_run});
    case LeverKind::kCoalescing:
      return std::make_unique<CoalescingLever>(CoalescingOptions{environment.dev_root, settings.coalescing_threshold,
                                                                 settings.coalescing_time_us,
                                                                 settings.admin_timeout_ms, dry_run,
                                                                 environment.admin});
    case LeverKind::kPollQueuesReset:
      return std::make_unique<PollQueuesLever>(
          PollQueuesOptions{environment.sysfs_root, settings.poll_queues, dry_run, environment.poll_queues_module});
    case LeverKind::kTcpReconnect: {
      ReconnectOptions options{environment.sysfs_root, settings.poll_queues, "nvme", dry_run, environment.commands};
      options.nvme_cli_config = settings.nvme_cli_config;
      for (const auto& entry : settings.controllers) {
        if (entry.hdr_digest && entry.data_digest) {
          options.declared_digests[entry.controller] =
              ConnectionDigests{*entry.hdr_digest, *entry.data_digest, std::nullopt, "levers.controllers (" + entry.controller + ")"};
        }
      }
      return std::make_unique<ReconnectLever>(std::move(options));
    }
    case LeverKind::kUvnvmeSocket:
      return std::make_unique<SocketLever>(SocketLeverOptions{static_cast<int>(settings.socket_timeout_ms), dry_run});
    case LeverKind::kAuto:
    case LeverKind::kDryRun:
      break;
  }
  return std::make_unique<DryRunLever>();
}

Result<PlannedLever::StepPlan> DryRunLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  StepPlan plan;
  plan.steps.push_back(Step{target.ToString(), std::string(ReapModeName(mode)), nullptr});
  return plan;
}

Result<std::vector<PlannedLever::Step>> DryRunLever::MakeRestore(const RestorePoint& point) {
  std::vector<Step> steps;
  for (const RestoreStep& step : point.steps) steps.push_back(Step{step.object, step.value, nullptr});
  return steps;
}

}  // namespace nvmeadapt::actuate
