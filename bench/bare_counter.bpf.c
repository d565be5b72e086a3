// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The reference for bench/bpf_cost: the least a tp_btf program on block_rq_complete can do and still
 * count, one atomic add to a global (the completion program's counters are atomic adds too). */
#include "na_kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__u64 na_bare_events;

SEC("tp_btf/block_rq_complete")
int BPF_PROG(na_bare_block_rq_complete)
{
	__sync_fetch_and_add(&na_bare_events, 1);
	return 0;
}
