/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one header shared by the BPF programs (bpf/, the .bpf.c files) and the agent (agent/collect): every record,
 * map key and constant that crosses the boundary is defined here and nowhere else.
 */
#ifndef NVME_ADAPT_BPF_SHARED_H
#define NVME_ADAPT_BPF_SHARED_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define NA_HIST_BUCKETS 32        /* log2 buckets of inter-completion intervals in ns: [2^i, 2^(i+1)) */
#define NA_MAX_QUEUES 4096        /* queues tracked per collector (map capacity) */
#define NA_MAX_IRQS 1024
#define NA_RINGBUF_BYTES (256 * 1024)
#define NA_DEFAULT_WINDOW 8192
#define NA_DEFAULT_PACE_SLACK_NS 20000ULL
#define NA_MAX_CPUS 1024          /* per-CPU scratch (interrupt attribution, handler entry time) */
#define NA_MAX_SKIP_DEVS 64       /* block devices the block program leaves to the kernel nvme programs */

enum na_source {
	NA_SOURCE_KERNEL_NVME = 1, /* nvme tracepoints: ctrl = nvme instance, qid = NVMe qid */
	NA_SOURCE_BLOCK = 2,       /* block_rq_complete: ctrl = dev_t (major << 20 | minor), qid = hctx + 1 */
	NA_SOURCE_UVNVME = 3,      /* uvnvme USDT: ctrl = controller index, qid, pid */
	NA_SOURCE_SPDK = 4,        /* spdk uprobe: ctrl = high, qid = low 32 bits of the qpair pointer, pid */
};

enum na_reap_mode {
	NA_MODE_INTERRUPT = 0,
	NA_MODE_POLL = 1,
	NA_MODE_UNKNOWN = 2,
};

enum na_record_kind {
	NA_RECORD_WINDOW = 1,     /* a full window of window_completions completions */
	NA_RECORD_PACE_MISS = 2,  /* polling window behind pace at completion k (completions = k) */
};

struct na_queue_key {
	__u32 source; /* enum na_source */
	__u32 ctrl;
	__u32 qid;
	__u32 pid;    /* 0 for kernel queues */
};

/* Written by the agent (one entry per managed queue), read by BPF at every completion. */
struct na_queue_control {
	__u32 mode;                 /* enum na_reap_mode now in effect */
	__u32 generation;           /* bumped by the agent at each mode change: BPF restarts the window */
	__u64 mode_since_ns;        /* bpf_ktime_get_ns() clock: when the mode took effect */
	__u64 baseline_span_ns;     /* polling: span of the measuring window */
	__u32 baseline_completions; /* polling: completions of the measuring window (0: no pace check) */
	__u32 window_completions;   /* this queue's window size */
	__u64 pace_slack_ns;
};

/* One ring buffer record. For NA_RECORD_PACE_MISS, completions = k and end_ns - start_ns = elapsed. */
struct na_window_record {
	struct na_queue_key key;
	__u32 kind;        /* enum na_record_kind */
	__u32 mode;        /* enum na_reap_mode during the window */
	__u32 completions;
	__u32 generation;  /* na_queue_control.generation the window ran under */
	__u64 start_ns;
	__u64 end_ns;
	__u64 bytes;
};

/* Per-queue counters the agent reads for metrics and for the agent timer. The fields every completion
 * writes come first so that they share one cache line. */
struct na_queue_counters {
	__u64 last_ns;          /* last completion */
	__u64 completions;
	__u64 bytes;
	__u64 window_start_ns;  /* start of the window in flight */
	__u32 window_count;     /* completions in the window in flight */
	__u32 generation;       /* control generation the window in flight runs under */
	__u64 irq_completions;  /* completions attributed to the interrupt path (kernel: fentry nvme_irq) */
	__u64 poll_completions; /* completions attributed to the poll path (kernel: fentry nvme_poll) */
	__u64 batches;          /* userspace sources: complete() fires / process_completions calls that reaped */
	__u64 wakeups;          /* uvnvme: irq() fires (interrupt-mode reaper wakeups) */
	__u64 mode_switches;    /* uvnvme: mode() fires */
	__u64 hist[NA_HIST_BUCKETS];
};

/*
 * One element of the na_queues array map (BPF_F_MMAPABLE). The agent maps the array into its memory: it
 * reads counters in place and writes `control` in place (generation last), so a completion reads its
 * control from the cache lines it already touches instead of looking up a second map. The slot index of
 * a key is in the na_queue_index hash map; whoever allocates a slot (BPF on a queue's first completion,
 * or the agent on SetQueueControl) fills it completely before publishing the index.
 */
struct na_queue_slot {
	struct na_queue_counters counters;
	__u64 window_bytes;     /* bytes of the window in flight */
	__u32 restart_gen;      /* control generation whose window restart has been claimed (one CPU wins) */
	__u32 window_seq;       /* windows closed or restarted so far */
	__u32 pace_miss_seq;    /* window_seq + 1 of the last window that sent NA_RECORD_PACE_MISS */
	__u32 observed_mode;    /* enum na_reap_mode last seen by a hook that can tell (uvnvme, fentry) */
	struct na_queue_key key;
	struct na_queue_control control;
} __attribute__((aligned(64)));

/* Collector-wide counters (one instance in the object's .bss). */
struct na_global_stats {
	__u64 ringbuf_drops;    /* records lost: ring buffer full */
	__u64 records;          /* records submitted */
	__u64 slots_exhausted;  /* completions of queues that found no free slot (NA_MAX_QUEUES reached) */
	__u64 irq_out_of_range; /* interrupts numbered >= NA_MAX_IRQS, not tracked */
};

/* Per CPU: which nvme reaping path is running here (fentry/fexit on nvme_irq and nvme_poll). */
struct na_cpu_context {
	__u64 poll_task;        /* task inside nvme_poll on this CPU, 0 if none */
	__u64 irq_entry_ns;     /* irq_handler_entry time of the handler running here */
	__u32 in_nvme_irq;
	__u32 pad;
};

/* Per interrupt line, from irq_handler_entry/exit. */
struct na_irq_stats {
	__u64 count;
	__u64 time_ns;
};

#endif /* NVME_ADAPT_BPF_SHARED_H */
