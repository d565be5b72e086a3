/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The pace rule of DESIGN.md section 3 as the BPF side computes it, in plain C so that the unit tests
 * compile the very same function and hold it against the engine's (tests/unit/pace_differential_test.cc), and
 * the nvme-pci module's in-driver policy runs it too (kmod/nvme-pci/src/nvme-adaptive-policy.h).
 * Engine rule (agent/engine/engine.cc Engine::BehindPace): a reap of n completions that brings a polling
 * window to completion k is behind iff elapsed * N > (k + n - 1) * S + slack * N, with S and N the
 * baseline's span and completions; without the batch allowance the index is k itself (the patch's rule).
 */
#ifndef NVME_ADAPT_PACE_H
#define NVME_ADAPT_PACE_H

#if defined(__KERNEL__) /* the nvme-pci module's in-driver policy (kmod/nvme-pci/src) */
#include <linux/types.h>
#elif !defined(__bpf__)
#include <linux/stddef.h>
#include <linux/types.h>
#include <stdbool.h>
#endif

/* The completion index the pace limit is taken at. k, n < 2^21 (NA_MAX_WINDOW), so no overflow. */
static __always_inline __u32 na_pace_index(__u32 k, __u32 n, bool batch_allowance)
{
	return batch_allowance && n > 1 ? k + n - 1 : k;
}

/* For an integer x, x > r <=> x > floor(r), so with x = elapsed - slack and r = index * span / N the test
 * is exact in u64 without a 128-bit product: index * span / N = index * (span / N) + index * (span % N) / N,
 * where index * (span % N) < 2^64 for index, N < 2^32. */
static __always_inline bool na_behind_pace(__u64 elapsed, __u32 index, __u64 span, __u32 n_baseline, __u64 slack)
{
	__u64 limit;

	if (n_baseline == 0 || elapsed <= slack)
		return false;
	limit = (__u64)index * (span / n_baseline) + ((__u64)index * (span % n_baseline)) / n_baseline;
	return elapsed - slack > limit;
}

#endif /* NVME_ADAPT_PACE_H */
