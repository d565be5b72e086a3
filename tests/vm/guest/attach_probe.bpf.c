// SPDX-License-Identifier: GPL-2.0-only
// One tiny counting program per hook the BPF collectors may choose from. The VM test loads each program on
// its own (a hook that fails to load or attach does not hide the others), runs I/O, and reports every
// program's hit count next to the tracefs hist counts. Each loaded copy of the object has its own map and
// only one program, so slot 0 is that program's count.
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} hits SEC(".maps");

static __always_inline int count_hit(void) {
  __u32 slot = 0;
  __u64 *value = bpf_map_lookup_elem(&hits, &slot);
  if (value)
    __sync_fetch_and_add(value, 1);
  return 0;
}

struct request;
struct blk_mq_hw_ctx;
struct io_comp_batch;
struct irqaction;

SEC("tp_btf/nvme_complete_rq")
int BPF_PROG(tp_btf_nvme_complete_rq, struct request *req) { return count_hit(); }

SEC("raw_tp/nvme_complete_rq")
int raw_tp_nvme_complete_rq(void *ctx) { return count_hit(); }

SEC("tracepoint/nvme/nvme_complete_rq")
int tracepoint_nvme_complete_rq(void *ctx) { return count_hit(); }

SEC("tp_btf/nvme_sq")
int BPF_PROG(tp_btf_nvme_sq, struct request *req, __le16 sq_head, int sq_tail) { return count_hit(); }

SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_btf_block_rq_complete, struct request *rq, int error, unsigned int nr_bytes) { return count_hit(); }

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(tp_btf_irq_handler_entry, int irq, struct irqaction *action) { return count_hit(); }

SEC("fentry/nvme_irq")
int BPF_PROG(fentry_nvme_irq, int irq, void *data) { return count_hit(); }

SEC("kprobe/nvme_irq")
int kprobe_nvme_irq(void *ctx) { return count_hit(); }

SEC("fentry/nvme_poll")
int BPF_PROG(fentry_nvme_poll, struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob) { return count_hit(); }

// Counts only the polls that found completions: nvme_poll returns whether it found any.
SEC("fexit/nvme_poll")
int BPF_PROG(fexit_nvme_poll_found, struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob, int found) {
  return found ? count_hit() : 0;
}

SEC("fentry/nvme_pci_complete_rq")
int BPF_PROG(fentry_nvme_pci_complete_rq, struct request *req) { return count_hit(); }

// Reads through the request pointer without a NULL check, as the agent's tp_btf/nvme_sq once did. A verifier
// that types a tracepoint's pointer argument trusted_ptr_or_null (Debian's 6.12 and 7.3) refuses this program.
struct request___deref {
  void *q;
} __attribute__((preserve_access_index));

SEC("tp_btf/nvme_sq")
int BPF_PROG(tp_btf_nvme_sq_unchecked, struct request___deref *req) { return req->q ? count_hit() : 0; }

SEC("fentry/nvme_pci_complete_batch")
int BPF_PROG(fentry_nvme_pci_complete_batch, struct io_comp_batch *iob) { return count_hit(); }
