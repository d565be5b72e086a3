/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
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
#define NA_MAX_NVME_DISKS 64      /* nvme disks the block program skips or counts as their controller's */

enum na_source {
	NA_SOURCE_KERNEL_NVME = 1, /* nvme tracepoints: ctrl = nvme instance, qid = NVMe qid */
	NA_SOURCE_BLOCK = 2,       /* block_rq_complete: ctrl = dev_t (major << 20 | minor), qid = hctx + 1 */
	NA_SOURCE_UVNVME = 3,      /* uvnvme USDT: ctrl = controller index, qid, pid */
	NA_SOURCE_SPDK = 4,        /* spdk uprobe: ctrl = high, qid = low 32 bits of the qpair pointer, pid */
	NA_SOURCE_NVMET = 5,       /* nvmet_req_complete: ctrl = target controller id (cntlid), qid */
};

/* What the block program does with an nvme disk's completions (set before load, see na_nvme_disks). */
enum na_nvme_disks_as {
	NA_NVME_DISKS_BLOCK = 0,   /* counted under the disk's block key, like any other disk */
	NA_NVME_DISKS_SKIPPED = 1, /* left out: the kernel nvme programs count them */
	NA_NVME_DISKS_NVME = 2,    /* counted under the controller's kernel nvme key, qid = hctx + 1 */
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

/* na_queue_control.flags */
#define NA_CONTROL_BATCH_ALLOWANCE 1U /* pace: a reap of n completions is held to k + n - 1 (DESIGN.md 3) */
/* A try's first window (a new generation in poll mode) starts at its first completion, not at the switch:
 * window_start_ns stays 0 until that completion writes it (engine::Policy::try_clock_first_completion). */
#define NA_CONTROL_TRY_CLOCK_FIRST 2U

/*
 * Written by the agent (one entry per managed queue), read by BPF at every completion. A switch is
 * published before the lever acts: a new generation with mode_since_ns 0 means "pending": completions go
 * on in the old window (no pace check) until the mode takes effect, which is either the driver's own mode
 * probe for this mode (its instant starts the window) or the agent writing mode_since_ns (the moment the
 * lever's write returned, for drivers that cannot tell). Whichever comes first restarts the window once.
 */
struct na_queue_control {
	__u32 mode;                 /* enum na_reap_mode the queue is switched to */
	__u32 generation;           /* bumped by the agent at each mode change: BPF restarts the window */
	__u64 mode_since_ns;        /* bpf_ktime_get_ns() clock: when the mode took effect; 0: pending */
	__u64 baseline_span_ns;     /* polling: span of the measuring window */
	__u32 baseline_completions; /* polling: completions of the measuring window (0: no pace check) */
	__u32 window_completions;   /* this queue's window size */
	__u64 pace_slack_ns;
	__u32 flags;                /* NA_CONTROL_* */
	__u32 pad;
};

/* One ring buffer record. For NA_RECORD_PACE_MISS, completions = k, end_ns - start_ns = elapsed and batch
 * = n, the size of the reap that brought the window to k. */
struct na_window_record {
	struct na_queue_key key;
	__u32 kind;        /* enum na_record_kind */
	__u32 mode;        /* enum na_reap_mode during the window */
	__u32 completions;
	__u32 generation;  /* the generation this window itself ran under (not the control's at the time) */
	__u64 start_ns;
	__u64 end_ns;
	__u64 bytes;
	__u64 first_ns;    /* the window's first completion */
	__u32 batch;
	__u32 pad;
};

/* The window in flight is one 64-bit word, so that a completion adds itself (count and bytes) and learns
 * its index k with a single atomic fetch_add: completions in the top 20 bits, bytes in the low 44. */
#define NA_WINDOW_COUNT_SHIFT 44
#define NA_WINDOW_BYTES_MASK ((1ULL << NA_WINDOW_COUNT_SHIFT) - 1)
#define NA_MAX_WINDOW ((1U << (64 - NA_WINDOW_COUNT_SHIFT)) - 1) /* 1048575 completions; < 16 TiB per window */
#define NA_WINDOW_COUNT(word) ((__u32)((word) >> NA_WINDOW_COUNT_SHIFT))
#define NA_WINDOW_BYTES(word) ((word) & NA_WINDOW_BYTES_MASK)

/* Per-queue counters the agent reads for metrics and for the agent timer. The first 64 bytes are what
 * a completion touches (one cache line). Totals are kept per window, not per completion (an atomic add
 * costs ~10 ns here): completions = done_completions + NA_WINDOW_COUNT(window), the same for bytes. */
struct na_queue_counters {
	__u64 last_ns;          /* last completion */
	__u64 window;           /* the window in flight: NA_WINDOW_COUNT / NA_WINDOW_BYTES */
	__u64 window_start_ns;  /* start of the window in flight */
	__u32 generation;       /* control generation the window in flight runs under */
	__u32 window_seq;       /* BPF-internal: the close claim; even, odd while a close empties the window */
	__u64 done_completions; /* completions of windows no longer in flight (closed or abandoned) */
	__u64 done_bytes;
	__u32 restart_gen;      /* BPF-internal: generation whose window restart one CPU has claimed */
	__u32 pace_miss_seq;    /* BPF-internal: window_seq + 1 of the last window that sent a pace miss */
	__u32 observed_mode;    /* enum na_reap_mode last seen by a hook that can tell (uvnvme, fentry) */
	__u32 window_mode;      /* enum na_reap_mode of the window in flight (managed queues) */

	__u64 window_first_ns;  /* first completion of the window in flight (written once per window) */
	__u64 abandoned_completions; /* part of done_completions in windows restarted before they filled */
	__u64 irq_completions;  /* completions attributed to the interrupt path (kernel: fentry nvme_irq) */
	__u64 poll_completions; /* completions attributed to the poll path (kernel: fentry nvme_poll) */
	__u64 batches;          /* userspace sources: complete() fires / process_completions calls that reaped */
	__u64 wakeups;          /* uvnvme: irq() fires (interrupt-mode reaper wakeups) */
	__u64 mode_switches;    /* uvnvme: mode() fires */
	__u64 pace_miss_retries; /* pace misses the full ring buffer refused: the next completion sends again */
	__u64 pace_miss_slack_ns; /* BPF-internal: the slack the window's last pace miss was sent under (~0: none) */
	/* log2 buckets of inter-completion intervals; an interval that came out <= 0 across CPUs counts in
	 * bucket 0, so the buckets add up to completions minus the queue's first batch */
	__u64 hist[NA_HIST_BUCKETS] __attribute__((aligned(64)));
};

/*
 * One element of the na_queues array map (BPF_F_MMAPABLE). The agent maps the array into its memory: it
 * reads counters in place and writes `control` in place (generation last), so a completion reads its
 * control from a line it needs anyway instead of looking up a second map. The slot index of a key is in
 * the na_queue_index hash map, the source of truth; a queue's slot is, where it was free, its home slot
 * (na_home_slot), so a completion finds it there with no lookup, else one of the next ones. Allocation,
 * the same in BPF (a queue's first completion) and in the agent (SetQueueControl): claim the first free
 * slot from home on by a compare-and-swap of its key's source 0 -> NA_SOURCE_CLAIMED, fill it, publish the
 * index (BPF_NOEXIST), then write the real source last, which makes the slot match its key; the loser of
 * a publish race sets source 0 again. A released slot gets source 0: free, and no key matches it.
 */
struct na_queue_slot {
	struct na_queue_key key;          /* line 0: read by every completion (cache check, control) */
	struct na_queue_control control;
	struct na_queue_counters counters __attribute__((aligned(64)));
} __attribute__((aligned(64)));

#define NA_SOURCE_CLAIMED 0xffffffffU /* na_queue_key.source of a slot being filled: matches no key */
#define NA_SLOT_PROBES 4               /* slots from home on that a completion checks before the hash map */
#define NA_SLOT_CLAIM_WALK 128         /* slots from home on that BPF may claim for a new queue (the agent: all) */

#ifdef __bpf__
#define NA_SHARED_INLINE static __always_inline
#else
#define NA_SHARED_INLINE static inline
#endif

/*
 * The table is split by who can add queues to it. The machine's own kernel queues (nvme, block) take slots in
 * the first half only; the sources a peer can multiply (uvnvme and SPDK processes, which any member of the
 * driver group may start, and nvmet, whose remote hosts make a controller per connect) in the second half
 * only. A flood of the latter cannot take the slot of a kernel queue, nor make its completions walk a full
 * table in interrupt context. Each half is a power of two; a walk stays in its half.
 */
#define NA_REGION_SLOTS (NA_MAX_QUEUES / 2)

NA_SHARED_INLINE __u32 na_region_base(__u32 source)
{
	return source == NA_SOURCE_KERNEL_NVME || source == NA_SOURCE_BLOCK ? 0 : NA_REGION_SLOTS;
}

/* The slot a queue takes if it is free, in its source's half. BPF and the agent must agree. */
NA_SHARED_INLINE __u32 na_home_slot(const struct na_queue_key *key)
{
	__u64 h = (((__u64)key->ctrl << 32) | key->qid) * 0x9e3779b97f4a7c15ULL;

	h ^= (((__u64)key->pid << 32) | key->source) * 0xc2b2ae3d27d4eb4fULL;
	h ^= h >> 29;
	return na_region_base(key->source) | ((__u32)(h >> 32) & (NA_REGION_SLOTS - 1));
}

/* The i-th slot from `home` on, wrapping within home's half. */
NA_SHARED_INLINE __u32 na_slot_index(__u32 home, __u32 i)
{
	return (home & ~(__u32)(NA_REGION_SLOTS - 1) & (NA_MAX_QUEUES - 1)) | ((home + i) & (NA_REGION_SLOTS - 1));
}

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
	__u32 irq_cq_position;  /* per-batch nvme: the queue's CQ position at nvme_irq entry */
	__u64 irq_queue;        /* per-batch nvme: the struct nvme_queue that nvme_irq entered for, 0 if none */
	__u64 poll_queue;       /* per-batch nvme: the struct nvme_queue that nvme_poll entered for, 0 if none */
	__u64 poll_batch_task;  /* per-batch nvme: the task inside that nvme_poll */
	__u32 poll_cq_position; /* per-batch nvme: the queue's CQ position at nvme_poll entry */
	__u32 in_adaptive_poll; /* inside our nvme-pci module's poll path (kmod/nvme-pci), softirq */
};

/* Per interrupt line, from irq_handler_entry/exit. */
struct na_irq_stats {
	__u64 count;
	__u64 time_ns;
};

#endif /* NVME_ADAPT_BPF_SHARED_H */
