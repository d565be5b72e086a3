/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Per-queue completion accounting shared by every hook: the maps, the slot table, windows, the pace
 * check and the ring buffer records. Included by nvme_adapt.bpf.c only (it defines the maps).
 *
 * Concurrency: completions of one queue can run on any CPU at the same time. No lock is taken; every
 * read-modify-write of shared state is one atomic instruction (BPF_ATOMIC, -mcpu=v3), and the two
 * decisions that must happen once (closing a window, restarting it at a control generation change) go
 * to the one CPU whose atomic crossed the boundary. The races this leaves are listed where they happen
 * and in docs/collectors.md.
 */
#ifndef NVME_ADAPT_QUEUE_BPF_H
#define NVME_ADAPT_QUEUE_BPF_H

#include "na_kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "nvme_adapt.h"
#include "na_pace.h"

#define NA_READ(x) (*(volatile typeof(x) *)&(x))
#define NA_WRITE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#define na_barrier() asm volatile("" ::: "memory")

/* Window size of queues the agent has not configured; set before load. */
const volatile __u32 na_default_window = NA_DEFAULT_WINDOW;

/* Whether the per-completion hooks (block, nvme_sq) stamp every completion, for the interval histogram;
 * set before load (CollectorOptions::completion_intervals). Off, they read the clock only where a rule needs
 * the time: a window's first completion and its close, and every completion of a polling window under a
 * pace check. The clock read is the largest single cost of such a hook (docs/collectors.md). */
const volatile __u32 na_completion_intervals = 0;

/* The time a per-completion hook passes to na_account: 0 means "not read; read it where needed". */
static __always_inline __u64 na_completion_stamp(void)
{
	return na_completion_intervals ? bpf_ktime_get_ns() : 0;
}

struct na_global_stats na_stats;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NA_MAX_QUEUES);
	__type(key, struct na_queue_key);
	__type(value, __u32);
} na_queue_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NA_MAX_QUEUES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct na_queue_slot);
} na_queues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, NA_RINGBUF_BYTES);
} na_windows SEC(".maps");

static __always_inline __u32 na_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r < NA_HIST_BUCKETS ? r : NA_HIST_BUCKETS - 1;
}

static __always_inline bool na_key_equal(const struct na_queue_key *a, const struct na_queue_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1];
}

static __always_inline struct na_queue_slot *na_slot_at(__u32 home, __u32 i)
{
	__u32 idx = na_slot_index(home, i);

	return bpf_map_lookup_elem(&na_queues, &idx);
}

/* Slow path, once per queue: claim the first free slot among the NA_SLOT_CLAIM_WALK from home on, fill
 * it, publish it (see struct na_queue_slot). Two CPUs seeing the same new queue both claim and fill a
 * slot; the loser of the BPF_NOEXIST insert frees its slot and takes the winner's. A plain bounded loop,
 * not bpf_loop (5.17), so that older kernels load it; the agent walks the whole table. */
static __noinline struct na_queue_slot *na_slot_create(const struct na_queue_key *key, __u64 now, __u32 home)
{
	struct na_queue_slot *slot = NULL;
	__u32 idx = 0, i, *published;

#pragma clang loop unroll(disable)
	for (i = 0; i < NA_SLOT_CLAIM_WALK; i++) {
		idx = na_slot_index(home, i);
		slot = bpf_map_lookup_elem(&na_queues, &idx);
		if (slot && NA_READ(slot->key.source) == 0 &&
		    __sync_val_compare_and_swap(&slot->key.source, 0, NA_SOURCE_CLAIMED) == 0)
			break;
		slot = NULL;
	}
	if (!slot) {
		__sync_fetch_and_add(&na_stats.slots_exhausted, 1);
		return NULL;
	}
	__builtin_memset(&slot->counters, 0, sizeof(slot->counters));
	slot->counters.window_start_ns = now ? now : bpf_ktime_get_ns();
	slot->counters.observed_mode = NA_MODE_UNKNOWN;
	slot->key.ctrl = key->ctrl;
	slot->key.qid = key->qid;
	slot->key.pid = key->pid;
	__builtin_memset(&slot->control, 0, sizeof(slot->control));
	/* The default window goes into the slot so that completions read it from the slot's first line. */
	slot->control.window_completions = na_default_window;
	if (bpf_map_update_elem(&na_queue_index, key, &idx, BPF_NOEXIST) == 0) {
		na_barrier();
		NA_WRITE(slot->key.source, key->source);
		return slot;
	}
	NA_WRITE(slot->key.source, 0);
	published = bpf_map_lookup_elem(&na_queue_index, key);
	if (!published)
		return NULL;
	return bpf_map_lookup_elem(&na_queues, published);
}

/* A queue whose home slot was taken: the next few slots, then the hash map (the key -> slot hash lookup
 * costs about 44 ns here: 16-byte jhash, bucket walk), then a new slot. */
static __noinline struct na_queue_slot *na_slot_lookup(const struct na_queue_key *key, __u64 now, __u32 home)
{
	struct na_queue_slot *slot;
	__u32 *idx, found;

	for (__u32 i = 1; i < NA_SLOT_PROBES; i++) {
		slot = na_slot_at(home, i);
		if (slot && na_key_equal(&slot->key, key))
			return slot;
	}
	idx = bpf_map_lookup_elem(&na_queue_index, key);
	if (!idx)
		return na_slot_create(key, now, home);
	found = *idx;
	return bpf_map_lookup_elem(&na_queues, &found);
}

/* Most completions find their queue at its home slot: a hash, one address, one compare on the line the
 * accounting reads anyway. The slot's own key is compared before use, so a slot taken by another queue
 * or being filled (source NA_SOURCE_CLAIMED) costs the slow path, never a wrong slot. */
static __always_inline struct na_queue_slot *na_slot_of(const struct na_queue_key *key, __u64 now)
{
	__u32 home = na_home_slot(key);
	struct na_queue_slot *slot = na_slot_at(home, 0);

	if (slot && na_key_equal(&slot->key, key))
		return slot;
	return na_slot_lookup(key, now, home);
}

/* The mode a window ran in: a managed queue's window carries the mode its generation switched to; an
 * unmanaged queue reaps in the mode last observed. */
static __always_inline __u32 na_window_mode(const struct na_queue_slot *slot, __u32 window_generation)
{
	return window_generation ? NA_READ(slot->counters.window_mode) : NA_READ(slot->counters.observed_mode);
}

struct na_emit_args {
	__u32 kind;
	__u32 completions;
	__u32 generation; /* the generation of the window the record describes */
	__u32 batch;
	__u64 start;
	__u64 end;
	__u64 bytes;
	__u64 first;
};

/* Returns false when the ring buffer was full (counted in na_stats.ringbuf_drops). */
static __always_inline bool na_emit(struct na_queue_slot *slot, const struct na_emit_args *a)
{
	struct na_window_record *rec;

	rec = bpf_ringbuf_reserve(&na_windows, sizeof(*rec), 0);
	if (!rec) {
		__sync_fetch_and_add(&na_stats.ringbuf_drops, 1);
		return false;
	}
	rec->key = slot->key;
	rec->kind = a->kind;
	rec->mode = na_window_mode(slot, a->generation);
	rec->completions = a->completions;
	rec->generation = a->generation;
	rec->start_ns = a->start;
	rec->end_ns = a->end;
	rec->bytes = a->bytes;
	rec->first_ns = a->first;
	rec->batch = a->batch;
	rec->pad = 0;
	bpf_ringbuf_submit(rec, 0);
	__sync_fetch_and_add(&na_stats.records, 1);
	return true;
}

/* Starts a new window at `start`, for the caller that claimed the boundary (window_seq moved by it), so
 * no other CPU writes window_start_ns now. The start moves before the window word is cleared: a
 * completion racing in between is counted in the ending window and, seeing k >= window, is not
 * pace-checked. What the ending window held moves to the done totals; it is returned. */
static __always_inline __u64 na_window_reset(struct na_queue_slot *slot, __u64 start)
{
	__u64 word;

	NA_WRITE(slot->counters.window_start_ns, start);
	NA_WRITE(slot->counters.window_first_ns, 0);
	NA_WRITE(slot->counters.pace_miss_slack_ns, ~0ULL); /* before the word: a new window's claim sees it */
	na_barrier();
	word = __sync_lock_test_and_set(&slot->counters.window, 0);
	__sync_fetch_and_add(&slot->counters.done_completions, NA_WINDOW_COUNT(word));
	__sync_fetch_and_add(&slot->counters.done_bytes, NA_WINDOW_BYTES(word));
	return word;
}

/* The window of a new control generation starts at `start`, in `mode`: the instant the mode took effect
 * (the driver's mode probe, or mode_since_ns from the agent). One caller wins the claim per generation;
 * until it publishes counters.generation, other CPUs count but neither close windows nor check pace.
 * What the abandoned window held stays in the totals (abandoned_completions) and in no window record. */
static __noinline bool na_window_restart(struct na_queue_slot *slot, __u32 seen, __u32 generation, __u64 start,
					 __u32 mode)
{
	__u64 word;

	if (__sync_val_compare_and_swap(&slot->counters.restart_gen, seen, generation) != seen)
		return false;
	/* A try under the first-completion clock: no start until its first completion writes one (0 holds pace
	 * checks off meanwhile; the agent's timer judges a try without completions from the switch). */
	if (mode == NA_MODE_POLL && (NA_READ(slot->control.flags) & NA_CONTROL_TRY_CLOCK_FIRST))
		start = 0;
	/* Moving window_seq makes every close claimed on the abandoned window fail; by two, to keep its parity
	 * (odd: a close in progress, na_account_reaps). */
	__sync_fetch_and_add(&slot->counters.window_seq, 2);
	word = na_window_reset(slot, start);
	__sync_fetch_and_add(&slot->counters.abandoned_completions, NA_WINDOW_COUNT(word));
	NA_WRITE(slot->counters.pace_miss_seq, 0);
	NA_WRITE(slot->counters.window_mode, mode);
	na_barrier();
	NA_WRITE(slot->counters.generation, generation);
	return true;
}

/* A driver that says when it switched (uvnvme's mode probe, the probe contract) calls this at that
 * instant. If the agent's pending switch asked for this mode, the try's window starts now, so every
 * completion reaped in the new mode counts in it and no time before the switch is charged to it. Any
 * other switch (the driver's own) restarts the window under the same generation: a window straddling
 * a switch measures neither mode. The driver reaps a queue from one thread: nothing races this there. */
static __always_inline void na_driver_switched(struct na_queue_slot *slot, __u64 now, __u32 mode)
{
	__u32 generation = NA_READ(slot->control.generation), seen = NA_READ(slot->counters.generation);

	__sync_fetch_and_add(&slot->counters.mode_switches, 1);
	NA_WRITE(slot->counters.observed_mode, mode);
	na_barrier();
	if (generation != seen && NA_READ(slot->control.mode) == mode &&
	    na_window_restart(slot, seen, generation, now, mode))
		return;
	__sync_fetch_and_add(&slot->counters.window_seq, 2);
	__sync_fetch_and_add(&slot->counters.abandoned_completions, NA_WINDOW_COUNT(na_window_reset(slot, now)));
	NA_WRITE(slot->counters.window_mode, mode);
}

/* Claims the window's early record under `slack`. One per window, and one more each time the window's limit
 * loosened since (the agent pushes the engine's credit once it judged the previous window, which may be after
 * this window's first record: the engine forgave that record, and the window would otherwise be watched by
 * the timer alone until it ends). False: not this caller's to send. What it found stays in *reported and
 * *sent_slack, to give the claim back if the ring buffer refuses the record. */
static __always_inline bool na_claim_pace_miss(struct na_queue_slot *slot, __u32 seq, __u64 slack, __u32 *reported,
					       __u64 *sent_slack)
{
	*reported = NA_READ(slot->counters.pace_miss_seq);
	*sent_slack = NA_READ(slot->counters.pace_miss_slack_ns);
	if (*reported != seq) {
		if (__sync_val_compare_and_swap(&slot->counters.pace_miss_seq, *reported, seq) != *reported)
			return false;
		NA_WRITE(slot->counters.pace_miss_slack_ns, slack);
		return true;
	}
	/* ~0 while the first claimant has not written its slack yet: that record is on its way. */
	if (slack <= *sent_slack)
		return false;
	return __sync_val_compare_and_swap(&slot->counters.pace_miss_slack_ns, *sent_slack, slack) == *sent_slack;
}

static __noinline void na_check_pace(struct na_queue_slot *slot, __u64 now, __u32 k, __u32 n, __u32 generation)
{
	__u64 start = NA_READ(slot->counters.window_start_ns), slack = NA_READ(slot->control.pace_slack_ns), sent_slack;
	__u32 seq, reported, flags = NA_READ(slot->control.flags);
	struct na_emit_args rec = {};

	if (!start || now <= start) /* 0: a try whose clock waits for its first completion */
		return;
	if (!na_behind_pace(now - start, na_pace_index(k, n, flags & NA_CONTROL_BATCH_ALLOWANCE),
			    NA_READ(slot->control.baseline_span_ns), NA_READ(slot->control.baseline_completions), slack))
		return;
	seq = NA_READ(slot->counters.window_seq) + 1;
	if (!na_claim_pace_miss(slot, seq, slack, &reported, &sent_slack))
		return;
	rec.kind = NA_RECORD_PACE_MISS;
	rec.completions = k;
	rec.generation = generation;
	rec.batch = n;
	rec.start = start;
	rec.end = now;
	rec.bytes = NA_WINDOW_BYTES(NA_READ(slot->counters.window));
	rec.first = NA_READ(slot->counters.window_first_ns);
	if (na_emit(slot, &rec))
		return;
	/* Lost on a full ring buffer: give the claim back, so the next completion still behind sends it. */
	if (reported == seq)
		__sync_val_compare_and_swap(&slot->counters.pace_miss_slack_ns, slack, sent_slack);
	else
		__sync_val_compare_and_swap(&slot->counters.pace_miss_seq, seq, reported);
	__sync_fetch_and_add(&slot->counters.pace_miss_retries, 1);
}

/*
 * Accounts `n` completions (a kernel CQE is 1; a userspace driver or a per-batch hook reaps batches; a
 * driver's tally sums many reaps) of `bytes` reaped at `now`, in `mode` as far as the hook can tell. now 0:
 * the hook did not read the clock (na_completion_stamp); it is read here only where a rule needs it, and
 * such completions count in no interval. `last_reap` is the size of the reap that brought them to `now`
 * (n, but for a tally: its last reap), which the pace check and the records' batch take; `first` the time
 * of their first reap (a tally's; 0: `now`), which a window they open takes as its first completion.
 * Three atomics on the slot's hot line and histogram: xchg of the last completion time, the histogram
 * bucket, and one fetch_add on the window word.
 */
static __always_inline void na_account_reaps(struct na_queue_slot *slot, __u64 now, __u64 first, __u32 n,
					     __u32 last_reap, __u64 bytes, __u32 mode)
{
	__u32 generation, seen, window, seq, old, k;
	bool settled = true; /* this completion saw no switch in progress: it may close windows and check pace */
	bool intervals = now != 0; /* every completion of this hook is stamped: it counts in the histogram */
	__u64 prev, word, since;

	generation = NA_READ(slot->control.generation);
	seen = NA_READ(slot->counters.generation);
	na_barrier();
	if (generation != seen) {
		/* A switch the agent published. Until it took effect (mode_since_ns 0: the driver's probe or
		 * the lever's return will say), completions go on in the old window. */
		since = NA_READ(slot->control.mode_since_ns);
		settled = since && na_window_restart(slot, seen, generation, since, NA_READ(slot->control.mode));
		if (settled)
			seen = generation;
	}
	/* A polling window under a pace check needs every completion's time (the pace check, and the last
	 * completion the agent's stall timer reads). */
	if (!now && seen && NA_READ(slot->counters.window_mode) == NA_MODE_POLL &&
	    NA_READ(slot->control.baseline_completions))
		now = bpf_ktime_get_ns();

	if (n > NA_MAX_WINDOW)
		n = NA_MAX_WINDOW;
	/* xchg gives every completion exactly one predecessor, so intervals add up to the span even when
	 * CPUs interleave. A predecessor stamped later on another CPU (now <= prev) counts as interval 0. */
	if (now) {
		prev = __sync_lock_test_and_set(&slot->counters.last_ns, now);
		if (prev && intervals) {
			__u64 interval = now > prev ? now - prev : 0;

			/* A batch of n reaped together spreads its gap evenly over its n completions. */
			if (n > 1)
				interval /= n;
			__sync_fetch_and_add(&slot->counters.hist[na_log2(interval) & (NA_HIST_BUCKETS - 1)], n);
		}
	}
	if (mode != NA_MODE_UNKNOWN) {
		if (mode == NA_MODE_POLL)
			__sync_fetch_and_add(&slot->counters.poll_completions, n);
		else
			__sync_fetch_and_add(&slot->counters.irq_completions, n);
		if (NA_READ(slot->counters.observed_mode) != mode)
			NA_WRITE(slot->counters.observed_mode, mode);
	}

	window = NA_READ(slot->control.window_completions);
	if (window == 0 || window > NA_MAX_WINDOW)
		window = na_default_window;
	seq = NA_READ(slot->counters.window_seq);
	na_barrier();
	word = __sync_fetch_and_add(&slot->counters.window,
				    ((__u64)n << NA_WINDOW_COUNT_SHIFT) | (bytes & NA_WINDOW_BYTES_MASK));
	old = NA_WINDOW_COUNT(word);
	k = old + n;
	if (old == 0) {
		if (!now)
			now = bpf_ktime_get_ns();
		first = first && first <= now ? first : now;
		NA_WRITE(slot->counters.window_first_ns, first);
		/* Only a try under the first-completion clock has no start (na_window_restart): its clock starts here. */
		if (!NA_READ(slot->counters.window_start_ns))
			__sync_val_compare_and_swap(&slot->counters.window_start_ns, 0, first);
	}
	if (!settled)
		return;
	if (k >= window) {
		/* The add that crossed the boundary closes the window; so may any add that finds it already
		 * full (a racing completion before the reset, or a window the agent shrank below the count).
		 * All of them claim window_seq as it was before their add: one wins, and a claim based on a
		 * window that has since closed or restarted fails. The winner holds window_seq odd until the
		 * window is empty: an add that read it between the claim and the reset landed in the window
		 * being closed, and must not close the next one (it would send that window empty). The
		 * record carries the generation this completion found the window in, not the control's. */
		struct na_emit_args rec = {.kind = NA_RECORD_WINDOW, .generation = seen, .batch = last_reap};

		if ((seq & 1) || __sync_val_compare_and_swap(&slot->counters.window_seq, seq, seq + 1) != seq)
			return;
		if (!now)
			now = bpf_ktime_get_ns();
		rec.end = now;
		rec.first = NA_READ(slot->counters.window_first_ns);
		rec.start = NA_READ(slot->counters.window_start_ns) ?: rec.first;
		word = na_window_reset(slot, now);
		__sync_fetch_and_add(&slot->counters.window_seq, 1);
		rec.completions = NA_WINDOW_COUNT(word);
		rec.bytes = NA_WINDOW_BYTES(word);
		na_emit(slot, &rec);
		return;
	}
	if (seen && NA_READ(slot->counters.window_mode) == NA_MODE_POLL && NA_READ(slot->control.baseline_completions)) {
		if (!now)
			now = bpf_ktime_get_ns();
		na_check_pace(slot, now, k, last_reap, seen);
	}
}

static __always_inline void na_account(struct na_queue_slot *slot, __u64 now, __u32 n, __u64 bytes, __u32 mode)
{
	na_account_reaps(slot, now, 0, n, n, bytes, mode);
}

static __always_inline void na_account_key(const struct na_queue_key *key, __u64 now, __u32 n, __u64 bytes,
					   __u32 mode)
{
	struct na_queue_slot *slot = na_slot_of(key, now);

	if (slot)
		na_account(slot, now, n, bytes, mode);
}

#endif /* NVME_ADAPT_QUEUE_BPF_H */
