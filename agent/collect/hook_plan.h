// Which BPF program of each twin set to load, decided from a FeatureProbe alone (no libbpf here), so the
// selection logic is unit-tested with a fake probe. docs/collectors.md explains the order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/collect/collector.h"
#include "agent/collect/feature_probe.h"

namespace nvmeadapt::collect {

enum class Attach : uint8_t { kNone, kTpBtf, kRawTp, kTracepoint };

struct HookPlan {
  bool use_bpf = false;
  std::string fallback_cause;  // why not, when !use_bpf: one line

  Attach block = Attach::kNone;           // block_rq_complete
  Attach nvme = Attach::kNone;            // nvme_sq
  bool nvme_attribution = false;          // fentry/fexit on nvme_irq and nvme_poll (with the nvme_sq program)
  bool nvme_per_batch = false;            // instead of nvme_sq: one program per reap (nvme_irq, nvme_poll)
  Attach irqs = Attach::kNone;            // irq_handler_entry/exit
  bool fabrics_host = false;              // tp_btf/nvme_complete_rq, fabrics controllers only (na_fabrics.bpf.h)
  bool fabrics_target = false;            // tp_btf/nvmet_req_complete: the NVMe target's queues
  TracepointLayout nvme_sq_layout;        // for Attach::kTracepoint
  std::vector<std::string> decisions;     // one line per choice, with its reason, for the log

  // BPF program names (bpf/nvme_adapt.bpf.c) to load; every other program gets autoload off. The
  // userspace-driver programs are always loaded: AttachProcess attaches them later.
  std::vector<std::string> Programs() const;
  // What gets attached at open, e.g. "tp_btf/block_rq_complete", "fentry/nvme_irq".
  std::vector<std::string> KernelHooks() const;
};

HookPlan PlanHooks(FeatureProbe& probe, const CollectorOptions& options);

std::string_view AttachName(Attach attach);  // "tp_btf", "raw_tp", "tracepoint", "none"

// The hook label of a BPF program name ("na_block_rq_complete_btf" -> "tp_btf/block_rq_complete").
std::string HookOfProgram(std::string_view program);

}  // namespace nvmeadapt::collect
