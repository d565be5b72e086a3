/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The in-driver adaptive polling policy: the rules of the adaptive interrupt polling cover letter (LKML,
 * August 2026) as a pure state machine. No locking, no clock, no I/O: the driver (nvme-adaptive.c) feeds
 * it the time and the completions of each reap, and switches the queue when it says so. The same file
 * compiles in userspace, where tests/unit/kmod_policy_differential_test.cc holds it against the agent's
 * engine under the `patch` profile; the pace test is bpf/na_pace.h's, the very function the BPF side runs.
 *
 * Rules (numbers are the module's parameters, defaults the cover letter's):
 * - Interrupt mode: a window is `window` completions. A full window whose span averaged at most
 *   `threshold_ns` per completion becomes the baseline (span S over N completions) and a try starts.
 * - Polling: a reap that brings the window to k < window completions is behind iff elapsed > k * S / N +
 *   slack; behind fails the try at once. A full polling window must be strictly faster than the baseline
 *   (span * N < S * count), else the try fails. A kept window resets the failures; after `max_poll_windows`
 *   kept windows the queue goes back to interrupt mode to measure a fresh baseline.
 * - `max_failures` failed tries in a row: `backoff_windows` interrupt-mode windows without measuring.
 * - A poll run that reaps nothing fails the try as soon as the next completion would already be behind
 *   (the hrtimer keeps running when completions stop, so no completion is needed to notice).
 * Windows start when a mode took effect (nap_switched) and at the end of the previous window.
 */
#ifndef NVME_ADAPTIVE_POLICY_H
#define NVME_ADAPTIVE_POLICY_H

#include "na_pace.h"

struct nap_params {
	__u32 window;           /* completions per window */
	__u64 threshold_ns;     /* try polling at or below this average per completion */
	__u64 slack_ns;         /* a polling window may fall this far behind the baseline's pace */
	__u32 max_failures;     /* failed tries in a row before backing off */
	__u32 backoff_windows;  /* interrupt-mode windows to sit out after max_failures */
	__u32 max_poll_windows; /* kept polling windows before measuring again */
};

enum nap_state {
	NAP_MEASURE,	/* interrupt mode, each full window measured */
	NAP_POLL,	/* polling, held to the baseline */
	NAP_BACKOFF,	/* interrupt mode, windows counted but not measured */
};

enum nap_reason {
	NAP_NONE,
	NAP_WINDOW_FAST,	/* measured window fast: try polling */
	NAP_WINDOW_SLOW,	/* measured window slow: stay */
	NAP_BEHIND_PACE,	/* polling fell behind the baseline's pace */
	NAP_NOT_FASTER,		/* full polling window not strictly faster */
	NAP_POLL_KEPT,		/* full polling window faster: keep polling */
	NAP_MAX_POLL_WINDOWS,	/* run long enough: measure interrupt mode again */
	NAP_STALLED,		/* no completion while the next one is already behind pace */
	NAP_BACKING_OFF,	/* a backoff window passed */
	NAP_BACKOFF_OVER,	/* the last backoff window passed: measure */
	NAP_REASONS
};

enum nap_verdict { NAP_STAY, NAP_TO_POLL, NAP_TO_INTERRUPT };

struct nap_queue {
	__u64 start;		/* when the window in flight started */
	__u64 baseline_span;	/* S */
	__u32 baseline_count;	/* N */
	__u32 count;		/* completions of the window in flight */
	__u32 failures;		/* failed tries in a row */
	__u32 backoff_left;	/* backoff windows still to pass */
	__u32 poll_windows;	/* kept windows of the polling run */
	__u8 state;		/* enum nap_state */
	__u8 reason;		/* enum nap_reason of the last window end or switch */
};

/* A fresh queue measures from `now`. */
static inline void nap_reset(struct nap_queue *q, __u64 now)
{
	q->start = now;
	q->baseline_span = 0;
	q->baseline_count = 0;
	q->count = 0;
	q->failures = 0;
	q->backoff_left = 0;
	q->poll_windows = 0;
	q->state = NAP_MEASURE;
	q->reason = NAP_NONE;
}

/* The mode the policy asked for took effect at `now`: the next window starts there. */
static inline void nap_switched(struct nap_queue *q, __u64 now)
{
	q->start = now;
	q->count = 0;
}

static inline void nap_next_window(struct nap_queue *q, __u64 now)
{
	q->start = now;
	q->count = 0;
}

static inline enum nap_verdict nap_fail(struct nap_queue *q, const struct nap_params *p, __u8 reason)
{
	q->reason = reason;
	q->poll_windows = 0;
	if (++q->failures >= p->max_failures && p->backoff_windows > 0) {
		q->state = NAP_BACKOFF;
		q->backoff_left = p->backoff_windows;
		q->failures = 0;
	} else {
		if (q->failures >= p->max_failures)
			q->failures = 0;
		q->state = NAP_MEASURE;
	}
	return NAP_TO_INTERRUPT;
}

static inline enum nap_verdict nap_window_measured(struct nap_queue *q, const struct nap_params *p, __u64 now)
{
	__u64 span = now - q->start;

	if (q->state == NAP_BACKOFF) {
		q->reason = --q->backoff_left ? NAP_BACKING_OFF : NAP_BACKOFF_OVER;
		if (!q->backoff_left)
			q->state = NAP_MEASURE;
		nap_next_window(q, now);
		return NAP_STAY;
	}
	if (span <= p->threshold_ns * q->count) {
		q->baseline_span = span;
		q->baseline_count = q->count;
		q->poll_windows = 0;
		q->state = NAP_POLL;
		q->reason = NAP_WINDOW_FAST;
		return NAP_TO_POLL;
	}
	q->reason = NAP_WINDOW_SLOW;
	nap_next_window(q, now);
	return NAP_STAY;
}

static inline enum nap_verdict nap_window_polled(struct nap_queue *q, const struct nap_params *p, __u64 now)
{
	__u64 span = now - q->start;

	/* Strictly faster at the same count: span / count < S / N, in integers as the engine has it. */
	if (!((__uint128_t)span * q->baseline_count < (__uint128_t)q->baseline_span * q->count))
		return nap_fail(q, p, NAP_NOT_FASTER);
	q->failures = 0;
	if (++q->poll_windows >= p->max_poll_windows) {
		q->poll_windows = 0;
		q->state = NAP_MEASURE;
		q->reason = NAP_MAX_POLL_WINDOWS;
		return NAP_TO_INTERRUPT;
	}
	q->reason = NAP_POLL_KEPT;
	nap_next_window(q, now);
	return NAP_STAY;
}

/*
 * A reap of n > 0 completions at `now`. NAP_TO_POLL / NAP_TO_INTERRUPT: switch the queue, then call
 * nap_switched() when the new mode is in effect.
 */
static inline enum nap_verdict nap_on_reap(struct nap_queue *q, const struct nap_params *p, __u64 now, __u32 n)
{
	q->count += n;
	if (q->count >= p->window)
		return q->state == NAP_POLL ? nap_window_polled(q, p, now) : nap_window_measured(q, p, now);
	/* Before the window is full, the patch's rule holds a reap to the count it reached: no batch allowance. */
	if (q->state == NAP_POLL && na_behind_pace(now - q->start, na_pace_index(q->count, n, false),
						   q->baseline_span, q->baseline_count, p->slack_ns))
		return nap_fail(q, p, NAP_BEHIND_PACE);
	return NAP_STAY;
}

/* A poll run that reaped nothing at `now`: the try fails once even the next completion would be late. */
static inline enum nap_verdict nap_on_empty_poll(struct nap_queue *q, const struct nap_params *p, __u64 now)
{
	if (q->state != NAP_POLL)
		return NAP_STAY;
	if (!na_behind_pace(now - q->start, q->count + 1, q->baseline_span, q->baseline_count, p->slack_ns))
		return NAP_STAY;
	return nap_fail(q, p, NAP_STALLED);
}

#endif /* NVME_ADAPTIVE_POLICY_H */
