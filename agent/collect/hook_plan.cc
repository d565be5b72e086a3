// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/hook_plan.h"

#include <array>
#include <optional>
#include <utility>

namespace nvmeadapt::collect {
namespace {

struct ProgramHook {
  std::string_view program;
  std::string_view hook;
};

constexpr std::array kProgramHooks = {
#define NA_PROGRAM_HOOK(name, hook) ProgramHook{#name, hook},
    NA_BPF_PROGRAMS(NA_PROGRAM_HOOK)
#undef NA_PROGRAM_HOOK
};

// Always loaded: AttachProcess attaches them to drivers' processes later.
constexpr std::array kUserspacePrograms = {BpfProgram::na_uvnvme_complete,
                                           BpfProgram::na_uvnvme_tally,
                                           BpfProgram::na_uvnvme_irq,
                                           BpfProgram::na_uvnvme_mode,
                                           BpfProgram::na_spdk_process_completions,
                                           BpfProgram::na_spdk_process_completions_ret};

// The twin of a hook that `attach` loads; nullopt for none (or a twin the hook does not have).
std::optional<BpfProgram> TwinProgram(Attach attach, BpfProgram btf, BpfProgram raw,
                                      std::optional<BpfProgram> tp = std::nullopt) {
  switch (attach) {
    case Attach::kTpBtf: return btf;
    case Attach::kRawTp: return raw;
    case Attach::kTracepoint: return tp;
    case Attach::kNone: break;
  }
  return std::nullopt;
}

// tp_btf where a trial tp_btf program loads; else its raw_tp twin (no BTF pointer reads there).
Attach VmlinuxTracepoint(FeatureProbe& probe, std::string_view event, std::string_view what,
                         std::vector<std::string>& decisions) {
  if (probe.TpBtfAttachable("", event)) {
    decisions.push_back(std::string(what) + ": tp_btf/" + std::string(event));
    return Attach::kTpBtf;
  }
  decisions.push_back(std::string(what) + ": raw_tp/" + std::string(event) +
                      " (a trial tp_btf program was refused or the tracepoint has no BTF)");
  return Attach::kRawTp;
}

// Our nvme-pci module (kmod/nvme-pci) reaps polled queues in a function of its own, which nvme_irq's and
// nvme_poll's hooks do not see.
void PlanAdaptivePoll(FeatureProbe& probe, HookPlan& plan) {
  if (!plan.nvme_per_batch && !plan.nvme_attribution) return;
  if (!probe.FentryAttachable("nvme", "nvme_adaptive_poll_cq")) {
    plan.decisions.push_back("nvme: no nvme_adaptive_poll_cq (the stock nvme-pci driver): no adaptive poll path to hook");
    return;
  }
  plan.nvme_adaptive_poll = true;
  plan.decisions.push_back(std::string("nvme: our nvme-pci module's poll path, ") +
                           (plan.nvme_per_batch ? "fexit/nvme_adaptive_poll_cq counting each poll run"
                                                : "fentry/fexit on nvme_adaptive_poll_cq marking its completions as poll"));
}

void PlanNvme(FeatureProbe& probe, const CollectorOptions& options, HookPlan& plan) {
  const bool driver = probe.ModuleBtf("nvme") || probe.ModuleBtf("nvme_core") ||
                      probe.BtfHasStruct("nvme_core", "nvme_request") || probe.Tracepoint("nvme", "nvme_sq").has_value();
  if (!driver) {
    plan.decisions.push_back("nvme: no nvme driver here; nvme namespaces, if any, are observed by the block layer");
    return;
  }
  // Telling interrupt from poll completions needs fentry on the reaping functions. Without it the nvme
  // tracepoint adds nothing the cheaper block-layer program does not see per hardware queue.
  if (!probe.FentryAttachable("nvme", "nvme_irq") || !probe.FentryAttachable("nvme", "nvme_poll")) {
    plan.decisions.push_back(
        "nvme: fentry on nvme_irq/nvme_poll not attachable (no BTF for them, or the kernel refused a trial "
        "fentry program); nvme queues are observed through the block layer, under their controllers' queues");
    return;
  }
  // Per batch: one program per reap (nvme_irq or nvme_poll), whose completions are counted from the
  // queue's CQ head, instead of one per completion. Needs the nvme module's own BTF for struct nvme_queue.
  if (options.kernel_nvme_per_batch && probe.BtfHasStruct("nvme", "nvme_queue") &&
      probe.BtfHasStruct("nvme", "nvme_dev")) {
    plan.nvme_per_batch = true;
    plan.decisions.push_back(
        "nvme: per batch, fentry/fexit on nvme_irq and nvme_poll counting each reap from the queue's CQ "
        "head (no per-completion program)");
    return;
  }
  if (!options.kernel_nvme_per_batch) {
    plan.decisions.push_back("nvme: per completion, as asked (kernel_nvme_per_batch off)");
  } else {
    plan.decisions.push_back("nvme: no struct nvme_queue in the nvme module's BTF: per completion");
  }
  if (probe.TpBtfAttachable("nvme_core", "nvme_sq")) {
    plan.nvme = Attach::kTpBtf;
    plan.decisions.push_back("nvme: tp_btf/nvme_sq with fentry/fexit on nvme_irq and nvme_poll");
  } else if (probe.BtfHasStruct("nvme_core", "nvme_request") && probe.Tracepoint("nvme", "nvme_sq")) {
    plan.nvme = Attach::kRawTp;
    plan.decisions.push_back("nvme: raw_tp/nvme_sq (a trial tp_btf program was refused) with fentry attribution");
  } else if (auto layout = probe.Tracepoint("nvme", "nvme_sq");
             layout && layout->offsets.contains("ctrl_id") && layout->offsets.contains("qid")) {
    plan.nvme = Attach::kTracepoint;
    plan.nvme_sq_layout = std::move(*layout);
    plan.decisions.push_back(
        "nvme: tracepoint/nvme/nvme_sq (no nvme_core BTF, so a raw tracepoint could not name the controller; "
        "the classic entry carries ctrl_id and qid) with fentry attribution");
  } else {
    plan.decisions.push_back("nvme: no usable nvme_sq hook; nvme queues are observed through the block layer, under their "
                             "controllers' queues");
    return;
  }
  plan.nvme_attribution = true;
}

// NVMe over Fabrics (bpf/na_fabrics.bpf.h). The host program counts fabrics controllers' completions in
// nvme_core, beside the PCIe programs; without them the block program counts every nvme disk already, so
// the host program would count those requests twice. It runs at every nvme completion, PCIe ones too (to
// return early), so only where nvme_fabrics is loaded, without which no fabrics controller can exist. The
// target program needs nvmet loaded (its BTF). Both are decided when the collector opens: a module loaded
// later is seen by the next agent start.
void PlanFabrics(FeatureProbe& probe, HookPlan& plan) {
  const bool nvme_programs = plan.nvme != Attach::kNone || plan.nvme_per_batch;
  if (!probe.ModuleBtf("nvme_fabrics")) {
    plan.decisions.push_back("fabrics host: nvme_fabrics not loaded (or without BTF); no host program");
  } else if (!nvme_programs) {
    plan.decisions.push_back("fabrics host: through the block layer (no kernel nvme programs)");
  } else if (probe.BtfHasStruct("nvme_core", "nvme_ctrl_ops") && probe.TpBtfAttachable("nvme_core", "nvme_complete_rq")) {
    plan.fabrics_host = true;
    plan.decisions.push_back("fabrics host: tp_btf/nvme_complete_rq for fabrics controllers (tcp, rdma, fc, loop)");
  } else {
    plan.decisions.push_back("fabrics host: no tp_btf/nvme_complete_rq (nvme_core BTF); fabrics controllers through the block layer");
  }
  if (probe.ModuleBtf("nvmet") && probe.BtfHasStruct("nvmet", "nvmet_req") &&
      probe.TpBtfAttachable("nvmet", "nvmet_req_complete")) {
    plan.fabrics_target = true;
    plan.decisions.push_back("fabrics target: tp_btf/nvmet_req_complete (nvmet queues by cntlid and qid)");
  } else {
    plan.decisions.push_back("fabrics target: nvmet not loaded or without BTF; no target queues");
  }
}

}  // namespace

std::string_view ProgramName(BpfProgram program) { return kProgramHooks[static_cast<size_t>(program)].program; }

std::string HookOfProgram(std::string_view program) {
  for (const ProgramHook& entry : kProgramHooks) {
    if (entry.program == program) return std::string(entry.hook);
  }
  return std::string(program);
}

std::vector<std::string> HookPlan::Programs() const {
  using P = BpfProgram;
  std::vector<std::string> programs;
  if (!use_bpf) return programs;
  auto add = [&](std::optional<BpfProgram> program) {
    if (program) programs.emplace_back(ProgramName(*program));
  };
  add(TwinProgram(block, P::na_block_rq_complete_btf, P::na_block_rq_complete_raw));
  add(TwinProgram(nvme, P::na_nvme_sq_btf, P::na_nvme_sq_raw, P::na_nvme_sq_tp));
  if (nvme_per_batch) {
    for (P program : {P::na_nvme_irq_batch_entry, P::na_nvme_irq_batch_exit, P::na_nvme_poll_batch_entry,
                      P::na_nvme_poll_batch_exit})
      add(program);
    if (nvme_adaptive_poll) add(P::na_nvme_adaptive_poll_batch_exit);
  }
  if (nvme_attribution) {
    for (P program : {P::na_nvme_irq_entry, P::na_nvme_irq_exit, P::na_nvme_poll_entry, P::na_nvme_poll_exit})
      add(program);
    if (nvme_adaptive_poll) {
      add(P::na_nvme_adaptive_poll_entry);
      add(P::na_nvme_adaptive_poll_exit);
    }
  }
  if (fabrics_host) add(P::na_fabrics_host_complete_btf);
  if (fabrics_target) add(P::na_fabrics_target_complete_btf);
  add(TwinProgram(irqs, P::na_irq_handler_entry_btf, P::na_irq_handler_entry_raw));
  add(TwinProgram(irqs, P::na_irq_handler_exit_btf, P::na_irq_handler_exit_raw));
  for (P program : kUserspacePrograms) add(program);
  return programs;
}

std::vector<std::string> HookPlan::KernelHooks() const {
  std::vector<std::string> hooks;
  for (const std::string& program : Programs()) {
    std::string hook = HookOfProgram(program);
    if (!hook.starts_with("usdt/") && !hook.starts_with("uprobe/") && !hook.starts_with("uretprobe/"))
      hooks.push_back(std::move(hook));
  }
  return hooks;
}

HookPlan PlanHooks(FeatureProbe& probe, const CollectorOptions& options) {
  HookPlan plan;
  if (options.force_procfs) {
    plan.fallback_cause = "the procfs collector was asked for (force_procfs)";
    return plan;
  }
  if (Status usable = probe.BpfUsable(); !usable.ok()) {
    plan.fallback_cause = usable.error().message;
    return plan;
  }
  plan.use_bpf = true;
  if (options.block) plan.block = VmlinuxTracepoint(probe, "block_rq_complete", "block", plan.decisions);
  if (options.irqs) plan.irqs = VmlinuxTracepoint(probe, "irq_handler_entry", "irqs", plan.decisions);
  if (options.kernel_nvme) {
    PlanNvme(probe, options, plan);
    PlanAdaptivePoll(probe, plan);
    PlanFabrics(probe, plan);
  }
  return plan;
}

}  // namespace nvmeadapt::collect
