/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * USDT arguments for the uvnvme programs, read the way libbpf's bpf_usdt_arg() reads them (the probe
 * site's spec, which libbpf fills at attach time), but the spec is looked up once per fire instead of
 * once per argument, and the registers are copied with one bpf_probe_read_kernel() call instead of one
 * per argument. BPF_USDT calls bpf_usdt_arg() for every argument: about 50 ns each
 * here, most of what the `tally` program (8 arguments) cost per fire (bench/probe_fire_bench.cc).
 */
#ifndef NVME_ADAPT_USDT_BPF_H
#define NVME_ADAPT_USDT_BPF_H

#include "na_kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

/* The fire's saved registers, copied out of the context with one helper call: a register is then read
 * at the offset libbpf recorded (reg_off), a bounded map-value load, which every kernel's verifier takes
 * (a variable-offset context load it refuses). Per CPU: a uprobe program runs from user mode with
 * migration disabled, and nothing that runs on top of it on the CPU uses this. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pt_regs);
} na_usdt_regs SEC(".maps");

#define NA_PT_REGS_WORDS (sizeof(struct pt_regs) / sizeof(__u64))

/* The probe's first `count` arguments into args[], cast as bpf_usdt_arg() casts them (the note's size
 * and signedness). Returns -1, args undefined, when the site has no spec or fewer arguments, or one
 * cannot be read. */
static __always_inline int na_usdt_args(struct pt_regs *ctx, __u64 *args, const __u32 count)
{
	struct __bpf_usdt_spec *spec;
	__u64 *regs;
	__u32 zero = 0;
	int spec_id = __bpf_usdt_spec_id(ctx);

	if (spec_id < 0)
		return -1;
	spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &spec_id);
	regs = bpf_map_lookup_elem(&na_usdt_regs, &zero);
	if (!spec || !regs || spec->arg_cnt < (short)count)
		return -1;
	if (bpf_probe_read_kernel(regs, sizeof(struct pt_regs), ctx))
		return -1;
#pragma unroll
	for (__u32 i = 0; i < count && i < BPF_USDT_MAX_ARG_CNT; i++) {
		struct __bpf_usdt_arg_spec *arg = &spec->args[i];
		__u32 reg = (__u32)arg->reg_off / sizeof(__u64);
		__u64 val = 0;

		/* The bound is checked on the index itself: compiled on the offset, the verifier loses it. */
		asm volatile("" : "+r"(reg));

		switch (arg->arg_type) {
		case BPF_USDT_ARG_CONST:
			val = arg->val_off;
			break;
		case BPF_USDT_ARG_REG:
			if (reg >= NA_PT_REGS_WORDS)
				return -1;
			val = regs[reg];
			break;
		case BPF_USDT_ARG_REG_DEREF:
			if (reg >= NA_PT_REGS_WORDS ||
			    bpf_probe_read_user(&val, sizeof(val), (void *)(regs[reg] + arg->val_off)))
				return -1;
			break;
		default:
			return -1;
		}
		val <<= arg->arg_bitshift;
		if (arg->arg_signed)
			val = (__u64)((__s64)val >> arg->arg_bitshift);
		else
			val >>= arg->arg_bitshift;
		args[i] = val;
	}
	return 0;
}

#endif /* NVME_ADAPT_USDT_BPF_H */
