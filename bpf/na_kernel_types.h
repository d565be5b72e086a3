/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kernel types the BPF programs use, and nothing else: a minimal CO-RE header kept in the tree
 * instead of a generated vmlinux.h.
 *
 * How it was made: by hand, field by field, from `bpftool btf dump file /sys/kernel/btf/vmlinux format c`
 * of the 6.18 host kernel and the struct definitions of Debian's 6.1 kernel (drivers/nvme/host/nvme.h for
 * the nvme types). Only the fields read are declared; every struct carries preserve_access_index, so
 * clang records a CO-RE relocation for each access and libbpf fixes the offsets against the running
 * kernel's BTF (vmlinux, or module BTF such as /sys/kernel/btf/nvme_core for the nvme types). Field order
 * and sizes here do not need to match the kernel; names and types do. Adding a field: check that the
 * name exists in both kernels (`bpftool btf dump file /sys/kernel/btf/vmlinux | grep -A40 "STRUCT 'x'"`),
 * and give a `___flavor` twin plus a bpf_core_field_exists() guard where it does not.
 *
 * Why not vmlinux.h: generating it at build time ties the build to a machine whose kernel has BTF (a
 * packaging container may have none), and a checked-in one is 2.8 MB of which we use a dozen fields.
 */
#ifndef NVME_ADAPT_KERNEL_TYPES_H
#define NVME_ADAPT_KERNEL_TYPES_H

#include <linux/types.h>
#include <linux/bpf.h>

/* bpf_tracing.h names pt_regs fields the kernel way (di, si, ...) when it sees this. */
#define __VMLINUX_H__

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

/* x86-64 register frame (arch/x86/include/asm/ptrace.h): uprobe and USDT programs get it as context,
 * and context accesses are not relocated, so this one keeps the kernel's exact layout. */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs, flags,
		sp, ss;
};

struct gendisk {
	int major;
	int first_minor;
};

struct request_queue {
	void *queuedata;      /* nvme: the namespace; NULL on the admin queue (see nvme_req_qid) */
	struct gendisk *disk; /* since 5.15, d152c682f03c "block: add an explicit ->disk backpointer to the request_queue" */
};

struct blk_mq_hw_ctx {
	unsigned int queue_num; /* 0-based hardware queue index; nvme qid = queue_num + 1 */
	void *driver_data;      /* nvme: the hardware queue's struct nvme_queue (nvme_init_hctx) */
};

struct request {
	struct request_queue *q;
	struct blk_mq_hw_ctx *mq_hctx;
	unsigned int __data_len;
};

/* Before 5.17 the disk hung off the request: f3fa33acca9f "block: remove the ->rq_disk field in struct
 * request" moved every user to rq->q->disk. */
struct request___with_rq_disk {
	struct gendisk *rq_disk;
};

struct irqaction;

/* nvme_core module types (drivers/nvme/host/nvme.h). struct nvme_request is the blk-mq pdu that follows
 * struct request (nvme_req() = blk_mq_rq_to_pdu()); its layout depends on CONFIG_NVME_MULTIPATH
 * (start_time before ctrl), which CO-RE absorbs. */
/* ops->flags & NVME_F_FABRICS (drivers/nvme/host/nvme.h, 1 << 0): tcp, rdma, fc, loop; not pci. */
struct nvme_ctrl_ops {
	unsigned int flags;
};

struct nvme_ctrl {
	int instance; /* the N of /dev/nvmeN */
	const struct nvme_ctrl_ops *ops;
};

struct nvme_request {
	struct nvme_ctrl *ctrl;
};

/* nvme (pci) module types, drivers/nvme/host/pci.c; these fields have the same names and types in 6.1 and
 * 6.18. The completion queue's head and phase say how far the driver has consumed it: nvme_poll_cq()
 * advances cq_head once per entry and flips cq_phase at each wrap (nvme_update_cq_head). */
struct nvme_dev {
	struct nvme_ctrl ctrl;
};

struct nvme_queue {
	struct nvme_dev *dev;
	u32 q_depth;
	u16 cq_head;
	u16 qid;
	u8 cq_phase;
};

/* Our nvme-pci module's per-queue adaptive state (kmod/nvme-pci/src/nvme-adaptive.h), in the nvme module's
 * BTF only when that module is loaded: its poll path's programs load only then (agent/collect/hook_plan.cc). */
struct nvme_adaptive_queue {
	int ctrl_instance;
	u16 qid;
};

/* nvmet module types (drivers/nvme/target/nvmet.h), same names and types in 6.1 and 6.18. A queue's qid is
 * set by its Connect command (nvmet_sq_setup); before that sq->ctrl is NULL. cntlid comes from one IDA
 * for the whole target (nvmet_alloc_ctrl), so it names a controller on this node. */
struct nvmet_ctrl {
	u16 cntlid;
};

struct nvmet_sq {
	struct nvmet_ctrl *ctrl;
	u16 qid;
};

struct nvmet_req {
	struct nvmet_sq *sq;
	unsigned long transfer_len; /* size_t */
};

#pragma clang attribute pop

#endif /* NVME_ADAPT_KERNEL_TYPES_H */
