// SPDX-License-Identifier: Apache-2.0
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

// Every program of bpf/nvme_adapt.bpf.c, named once: its skeleton member and the hook it stands for. The
// plan names programs by these enumerators (as libbpf-tools' set_autoload(obj->progs.x)), and the collector
// holds each name to the skeleton's members at compile time (bpf_collector.cc).
#define NA_BPF_PROGRAMS(X)                                                             \
  X(na_block_rq_complete_btf, "tp_btf/block_rq_complete")                              \
  X(na_block_rq_complete_raw, "raw_tp/block_rq_complete")                              \
  X(na_nvme_sq_btf, "tp_btf/nvme_sq")                                                  \
  X(na_nvme_sq_raw, "raw_tp/nvme_sq")                                                  \
  X(na_nvme_sq_tp, "tracepoint/nvme/nvme_sq")                                          \
  X(na_nvme_irq_entry, "fentry/nvme_irq")                                              \
  X(na_nvme_irq_exit, "fexit/nvme_irq")                                                \
  X(na_nvme_poll_entry, "fentry/nvme_poll")                                            \
  X(na_nvme_poll_exit, "fexit/nvme_poll")                                              \
  X(na_nvme_irq_batch_entry, "fentry/nvme_irq")                                        \
  X(na_nvme_irq_batch_exit, "fexit/nvme_irq")                                          \
  X(na_nvme_poll_batch_entry, "fentry/nvme_poll")                                      \
  X(na_nvme_poll_batch_exit, "fexit/nvme_poll")                                        \
  X(na_nvme_adaptive_poll_entry, "fentry/nvme_adaptive_poll_cq")                       \
  X(na_nvme_adaptive_poll_exit, "fexit/nvme_adaptive_poll_cq")                         \
  X(na_nvme_adaptive_poll_batch_exit, "fexit/nvme_adaptive_poll_cq")                   \
  X(na_irq_handler_entry_btf, "tp_btf/irq_handler_entry")                              \
  X(na_irq_handler_exit_btf, "tp_btf/irq_handler_exit")                                \
  X(na_irq_handler_entry_raw, "raw_tp/irq_handler_entry")                              \
  X(na_irq_handler_exit_raw, "raw_tp/irq_handler_exit")                                \
  X(na_uvnvme_complete, "usdt/uvnvme:complete")                                        \
  X(na_uvnvme_tally, "usdt/uvnvme:tally")                                              \
  X(na_uvnvme_irq, "usdt/uvnvme:irq")                                                  \
  X(na_uvnvme_mode, "usdt/uvnvme:mode")                                                \
  X(na_spdk_process_completions, "uprobe/spdk_nvme_qpair_process_completions")         \
  X(na_spdk_process_completions_ret, "uretprobe/spdk_nvme_qpair_process_completions")  \
  X(na_fabrics_host_complete_btf, "tp_btf/nvme_complete_rq")                           \
  X(na_fabrics_target_complete_btf, "tp_btf/nvmet_req_complete")                       \
  X(na_test_account, "test/na_test_account")                                           \
  X(na_test_mode, "test/na_test_mode")                                                 \
  X(na_test_tally, "test/na_test_tally")

enum class BpfProgram : uint8_t {
#define NA_PROGRAM_ENUMERATOR(name, hook) name,
  NA_BPF_PROGRAMS(NA_PROGRAM_ENUMERATOR)
#undef NA_PROGRAM_ENUMERATOR
};

std::string_view ProgramName(BpfProgram program);  // "na_block_rq_complete_btf"

struct HookPlan {
  bool use_bpf = false;
  std::string fallback_cause;  // why not, when !use_bpf: one line

  Attach block = Attach::kNone;           // block_rq_complete
  Attach nvme = Attach::kNone;            // nvme_sq
  bool nvme_attribution = false;          // fentry/fexit on nvme_irq and nvme_poll (with the nvme_sq program)
  bool nvme_per_batch = false;            // instead of nvme_sq: one program per reap (nvme_irq, nvme_poll)
  // Our nvme-pci module's poll path (kmod/nvme-pci) is there: its reaps count as poll, per batch or per
  // completion as the two flags above say.
  bool nvme_adaptive_poll = false;
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

// The hook label of a BPF program name ("na_block_rq_complete_btf" -> "tp_btf/block_rq_complete").
std::string HookOfProgram(std::string_view program);

}  // namespace nvmeadapt::collect
