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
	slot->counters.observed_mode = NA_MODE_UNKNOWN;
	slot->key = *key;
	__builtin_memset(&slot->control, 0, sizeof(slot->control));
	/* The default window goes into the slot so that completions read it from the slot's first line. */
	slot->control.window_completions = na_default_window;
	if (bpf_map_update_elem(&na_queue_index, key, &idx, BPF_NOEXIST) == 0)
		return slot;
	bpf_map_push_elem(&na_free_slots, &idx, 0);
	published = bpf_map_lookup_elem(&na_queue_index, key);
	if (!published)
		return NULL;
	return bpf_map_lookup_elem(&na_queues, published);
}

/* The key -> slot hash lookup costs about 44 ns per completion here (16-byte jhash, bucket walk), as much
 * as the rest of the accounting. A direct-mapped cache of (hash tag, slot index) in .bss answers most
 * lookups with a multiply and two loads. An entry is a hint only: the slot's own key is compared before
 * use, so a stale or racing entry (64-bit stores, never torn) costs a slow lookup, never a wrong slot. */
__u64 na_slot_cache[NA_SLOT_CACHE_ENTRIES];

static __always_inline __u64 na_key_hash(const struct na_queue_key *key)
{
	__u64 h = (((__u64)key->ctrl << 32) | key->qid) * 0x9e3779b97f4a7c15ULL;

	h ^= (((__u64)key->pid << 32) | key->source) * 0xc2b2ae3d27d4eb4fULL;
	return h ^ (h >> 29);
}

static __always_inline bool na_key_equal(const struct na_queue_key *a, const struct na_queue_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1];
}

static __noinline struct na_queue_slot *na_slot_lookup(const struct na_queue_key *key, __u64 now, __u64 hash)
{
	struct na_queue_slot *slot;
	__u32 *idx = bpf_map_lookup_elem(&na_queue_index, key), found;

	if (!idx)
		return na_slot_create(key, now);
	found = *idx;
	slot = bpf_map_lookup_elem(&na_queues, &found);
	if (slot)
		NA_WRITE(na_slot_cache[hash & (NA_SLOT_CACHE_ENTRIES - 1)], (hash & ~0xffffffffULL) | (found + 1));
	return slot;
}

static __always_inline struct na_queue_slot *na_slot_of(const struct na_queue_key *key, __u64 now)
{
	__u64 hash = na_key_hash(key), entry = NA_READ(na_slot_cache[hash & (NA_SLOT_CACHE_ENTRIES - 1)]);
	struct na_queue_slot *slot;
	__u32 idx;

	if ((entry >> 32) == (hash >> 32) && (__u32)entry) {
		idx = (__u32)entry - 1;
		slot = bpf_map_lookup_elem(&na_queues, &idx);
		if (slot && na_key_equal(&slot->key, key))
			return slot;
	}
	return na_slot_lookup(key, now, hash);
}

static __always_inline __u32 na_record_mode(const struct na_queue_slot *slot)
{
	/* A managed queue reaps in the mode the agent set; others in the mode last observed. */
	return slot->control.generation ? slot->control.mode : slot->counters.observed_mode;
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
 * no other CPU writes window_start_ns now. The start moves before the window word is cleared: a
 * completion racing in between is counted in the ending window and, seeing k >= window, is not
 * pace-checked. What the ending window held moves to the done totals; it is returned. */
static __always_inline __u64 na_window_reset(struct na_queue_slot *slot, __u64 start)
{
	__u64 word;

	NA_WRITE(slot->counters.window_start_ns, start);
	na_barrier();
	word = __sync_lock_test_and_set(&slot->counters.window, 0);
	__sync_fetch_and_add(&slot->counters.done_completions, NA_WINDOW_COUNT(word));
	__sync_fetch_and_add(&slot->counters.done_bytes, NA_WINDOW_BYTES(word));
	return word;
}

/* The agent bumped control.generation (a mode change): the window restarts at mode_since_ns. One CPU
 * wins the claim; until it publishes counters.generation, other CPUs count but skip the pace check.
 * Completions counted into the abandoned window between the claim and the reset go with it: they stay
 * in the totals (abandoned_completions) but in no window. Windows straddling a mode change measure
 * nothing anyway. */
static __noinline bool na_window_restart(struct na_queue_slot *slot, __u32 seen, __u32 generation)
{
	__u64 word;

	if (__sync_val_compare_and_swap(&slot->counters.restart_gen, seen, generation) != seen)
		return false;
	/* Moving window_seq makes every close claimed on the abandoned window fail. */
	__sync_fetch_and_add(&slot->counters.window_seq, 1);
	word = na_window_reset(slot, NA_READ(slot->control.mode_since_ns));
	__sync_fetch_and_add(&slot->counters.abandoned_completions, NA_WINDOW_COUNT(word));
	NA_WRITE(slot->counters.pace_miss_seq, 0);
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
	seq = NA_READ(slot->counters.window_seq) + 1;
	reported = NA_READ(slot->counters.pace_miss_seq);
	if (reported == seq || __sync_val_compare_and_swap(&slot->counters.pace_miss_seq, reported, seq) != reported)
		return;
	na_emit(slot, NA_RECORD_PACE_MISS, k, start, now, NA_WINDOW_BYTES(NA_READ(slot->counters.window)), generation);
}

/*
 * Accounts `n` completions (a kernel CQE is 1; a userspace driver reaps batches) of `bytes` reaped at
 * `now`, in `mode` as far as the hook can tell. Three atomics on the slot's hot line and histogram:
 * xchg of the last completion time, the histogram bucket, and one fetch_add on the window word.
 */
static __always_inline void na_account(struct na_queue_slot *slot, __u64 now, __u32 n, __u64 bytes,
				       __u32 mode)
{
	__u32 generation, seen, window, seq, old, k;
	bool pace_ok = true;
	__u64 prev, word;

	generation = NA_READ(slot->control.generation);
	seen = NA_READ(slot->counters.generation);
	na_barrier();
	if (generation != seen)
		pace_ok = na_window_restart(slot, seen, generation);

	if (n > NA_MAX_WINDOW)
		n = NA_MAX_WINDOW;
	/* xchg gives every completion exactly one predecessor, so intervals add up to the span even when
	 * CPUs interleave. A predecessor stamped later on another CPU (now <= prev) counts as interval 0. */
	prev = __sync_lock_test_and_set(&slot->counters.last_ns, now);
	if (prev) {
		__u64 interval = now > prev ? now - prev : 0;

		/* A batch of n reaped together spreads its gap evenly over its n completions. */
		if (n > 1)
			interval /= n;
		__sync_fetch_and_add(&slot->counters.hist[na_log2(interval) & (NA_HIST_BUCKETS - 1)], n);
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
	if (k >= window) {
		/* The add that crossed the boundary closes the window; so may any add that finds it already
		 * full (a racing completion before the reset, or a window the agent shrank below the count).
		 * All of them claim window_seq as it was before their add: one wins, and a claim based on a
		 * window that has since closed or restarted fails. */
		__u64 start;

		if (__sync_val_compare_and_swap(&slot->counters.window_seq, seq, seq + 1) != seq)
			return;
		start = NA_READ(slot->counters.window_start_ns);
		word = na_window_reset(slot, now);
		na_emit(slot, NA_RECORD_WINDOW, NA_WINDOW_COUNT(word), start, now, NA_WINDOW_BYTES(word), generation);
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
