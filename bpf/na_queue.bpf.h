/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
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

#define NA_READ(x) (*(volatile typeof(x) *)&(x))
#define NA_WRITE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#define na_barrier() asm volatile("" ::: "memory")

/* Window size of queues the agent has not configured; set before load. */
const volatile __u32 na_default_window = NA_DEFAULT_WINDOW;

struct na_global_stats na_stats;
__u32 na_next_slot; /* slots never used so far start here; the agent allocates from it too */

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

/* Slots the agent released (ForgetQueue); taken before fresh ones. */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, NA_MAX_QUEUES);
	__uint(value_size, sizeof(__u32));
} na_free_slots SEC(".maps");

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

/* Slow path, once per queue: take a released slot or a fresh one, fill it, then publish it. Two CPUs
 * seeing the same new queue both fill a slot; the loser of the BPF_NOEXIST insert gives its slot back. */
static __noinline struct na_queue_slot *na_slot_create(const struct na_queue_key *key, __u64 now)
{
	struct na_queue_slot *slot;
	__u32 idx, *published;

	if (bpf_map_pop_elem(&na_free_slots, &idx) != 0) {
		idx = __sync_fetch_and_add(&na_next_slot, 1);
		if (idx >= NA_MAX_QUEUES) {
			__sync_fetch_and_add(&na_stats.slots_exhausted, 1);
			return NULL;
		}
	}
	slot = bpf_map_lookup_elem(&na_queues, &idx);
	if (!slot)
		return NULL;
	__builtin_memset(&slot->counters, 0, sizeof(slot->counters));
	slot->counters.window_start_ns = now;
	slot->window_bytes = 0;
	slot->restart_gen = 0;
	slot->window_seq = 0;
	slot->pace_miss_seq = 0;
	slot->observed_mode = NA_MODE_UNKNOWN;
	slot->key = *key;
	__builtin_memset(&slot->control, 0, sizeof(slot->control));
	if (bpf_map_update_elem(&na_queue_index, key, &idx, BPF_NOEXIST) == 0)
		return slot;
	bpf_map_push_elem(&na_free_slots, &idx, 0);
	published = bpf_map_lookup_elem(&na_queue_index, key);
	if (!published)
		return NULL;
	return bpf_map_lookup_elem(&na_queues, published);
}

static __always_inline struct na_queue_slot *na_slot_of(const struct na_queue_key *key, __u64 now)
{
	__u32 *idx = bpf_map_lookup_elem(&na_queue_index, key);

	if (!idx)
		return na_slot_create(key, now);
	return bpf_map_lookup_elem(&na_queues, idx);
}

static __always_inline __u32 na_record_mode(const struct na_queue_slot *slot)
{
	/* A managed queue reaps in the mode the agent set; others in the mode last observed. */
	return slot->control.generation ? slot->control.mode : slot->observed_mode;
}

static __always_inline void na_emit(struct na_queue_slot *slot, __u32 kind, __u32 completions, __u64 start,
			       __u64 end, __u64 bytes, __u32 generation)
{
	struct na_window_record *rec;

	rec = bpf_ringbuf_reserve(&na_windows, sizeof(*rec), 0);
	if (!rec) {
		__sync_fetch_and_add(&na_stats.ringbuf_drops, 1);
		return;
	}
	rec->key = slot->key;
	rec->kind = kind;
	rec->mode = na_record_mode(slot);
	rec->completions = completions;
	rec->generation = generation;
	rec->start_ns = start;
	rec->end_ns = end;
	rec->bytes = bytes;
	bpf_ringbuf_submit(rec, 0);
	__sync_fetch_and_add(&na_stats.records, 1);
}

/* Starts a new window at `start`, for the caller that claimed the boundary (window_seq moved by it), so
 * no other CPU writes window_start_ns now. The start moves before the count is cleared: a completion
 * racing in between is counted in the ending window and, with k >= window, is not pace-checked.
 * Returns what the ending window held. */
static __always_inline __u32 na_window_reset(struct na_queue_slot *slot, __u64 start, __u64 *bytes)
{
	NA_WRITE(slot->counters.window_start_ns, start);
	na_barrier();
	*bytes = __sync_lock_test_and_set(&slot->window_bytes, 0);
	return __sync_lock_test_and_set(&slot->counters.window_count, 0);
}

/* The agent bumped control.generation (a mode change): the window restarts at mode_since_ns. One CPU
 * wins the claim; until it publishes counters.generation, other CPUs count but skip the pace check.
 * Completions counted into the abandoned window between the claim and the reset are lost to windows
 * (not to the totals): windows straddling a mode change measure nothing anyway. */
static __noinline bool na_window_restart(struct na_queue_slot *slot, __u32 seen, __u32 generation)
{
	__u64 since, bytes;

	if (__sync_val_compare_and_swap(&slot->restart_gen, seen, generation) != seen)
		return false;
	/* Moving window_seq makes every close claimed on the abandoned window fail. */
	__sync_fetch_and_add(&slot->window_seq, 1);
	since = NA_READ(slot->control.mode_since_ns);
	na_window_reset(slot, since, &bytes);
	NA_WRITE(slot->pace_miss_seq, 0);
	na_barrier();
	NA_WRITE(slot->counters.generation, generation);
	return true;
}

/* Engine rule (agent/engine/engine.cc Engine::BehindPace): behind at completion k iff
 * elapsed * n > k * span + slack * n. For an integer x, x > r <=> x > floor(r), so with
 * x = elapsed - slack and r = k * span / n the test is exact in u64 without a 128-bit product:
 * k * span / n = k * (span / n) + k * (span % n) / n, where k * (span % n) < 2^64 for k, n < 2^32. */
static __always_inline bool na_behind_pace(__u64 elapsed, __u32 k, __u64 span, __u32 n, __u64 slack)
{
	__u64 limit;

	if (n == 0 || elapsed <= slack)
		return false;
	limit = (__u64)k * (span / n) + ((__u64)k * (span % n)) / n;
	return elapsed - slack > limit;
}

static __noinline void na_check_pace(struct na_queue_slot *slot, __u64 now, __u32 k, __u32 generation)
{
	__u64 start = NA_READ(slot->counters.window_start_ns);
	__u32 seq, reported;

	if (now <= start)
		return;
	if (!na_behind_pace(now - start, k, NA_READ(slot->control.baseline_span_ns),
			    NA_READ(slot->control.baseline_completions), NA_READ(slot->control.pace_slack_ns)))
		return;
	/* At most one early record per window: the CPU that moves pace_miss_seq to this window sends it. */
	seq = NA_READ(slot->window_seq) + 1;
	reported = NA_READ(slot->pace_miss_seq);
	if (reported == seq || __sync_val_compare_and_swap(&slot->pace_miss_seq, reported, seq) != reported)
		return;
	na_emit(slot, NA_RECORD_PACE_MISS, k, start, now, NA_READ(slot->window_bytes), generation);
}

/*
 * Accounts `n` completions (a kernel CQE is 1; a userspace driver reaps batches) of `bytes` reaped at
 * `now`, in `mode` as far as the hook can tell.
 */
static __always_inline void na_account(struct na_queue_slot *slot, __u64 now, __u32 n, __u64 bytes,
				       __u32 mode)
{
	__u32 generation, seen, window, seq, old, k;
	bool pace_ok = true;
	__u64 prev;

	generation = NA_READ(slot->control.generation);
	seen = NA_READ(slot->counters.generation);
	na_barrier();
	if (generation != seen)
		pace_ok = na_window_restart(slot, seen, generation);

	/* xchg gives every completion exactly one predecessor, so intervals add up to the span even when
	 * CPUs interleave; a predecessor stamped later on another CPU (now < prev) yields no interval. */
	prev = __sync_lock_test_and_set(&slot->counters.last_ns, now);
	if (prev && now > prev) {
		__u64 interval = now - prev;

		/* A batch of n reaped together spreads its gap evenly over its n completions. */
		if (n > 1)
			interval /= n;
		__sync_fetch_and_add(&slot->counters.hist[na_log2(interval) & (NA_HIST_BUCKETS - 1)], n);
	}
	__sync_fetch_and_add(&slot->counters.completions, n);
	if (bytes) {
		__sync_fetch_and_add(&slot->counters.bytes, bytes);
		__sync_fetch_and_add(&slot->window_bytes, bytes);
	}
	if (mode != NA_MODE_UNKNOWN) {
		if (mode == NA_MODE_POLL)
			__sync_fetch_and_add(&slot->counters.poll_completions, n);
		else
			__sync_fetch_and_add(&slot->counters.irq_completions, n);
		if (NA_READ(slot->observed_mode) != mode)
			NA_WRITE(slot->observed_mode, mode);
	}

	window = NA_READ(slot->control.window_completions);
	if (window == 0)
		window = na_default_window;
	seq = NA_READ(slot->window_seq);
	na_barrier();
	old = __sync_fetch_and_add(&slot->counters.window_count, n);
	k = old + n;
	if (k >= window) {
		/* The add that crossed the boundary closes the window; so may any add that finds it already
		 * full (a racing completion before the reset, or a window the agent shrank below the count).
		 * All of them claim window_seq as it was before their add: one wins, and a claim based on a
		 * window that has since closed or restarted fails. */
		__u64 start, window_bytes;
		__u32 count;

		if (__sync_val_compare_and_swap(&slot->window_seq, seq, seq + 1) != seq)
			return;
		start = NA_READ(slot->counters.window_start_ns);
		count = na_window_reset(slot, now, &window_bytes);
		na_emit(slot, NA_RECORD_WINDOW, count, start, now, window_bytes, generation);
		return;
	}
	if (pace_ok && generation && NA_READ(slot->control.mode) == NA_MODE_POLL &&
	    NA_READ(slot->control.baseline_completions))
		na_check_pace(slot, now, k, generation);
}

static __always_inline void na_account_key(const struct na_queue_key *key, __u64 now, __u32 n, __u64 bytes,
					   __u32 mode)
{
	struct na_queue_slot *slot = na_slot_of(key, now);

	if (slot)
		na_account(slot, now, n, bytes, mode);
}

#endif /* NVME_ADAPT_QUEUE_BPF_H */
