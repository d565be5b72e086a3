// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * nvme-adapt's completion collectors. Every hook exists in the twins a kernel may need; the agent
 * (agent/collect) probes the running kernel, leaves autoload on for the best twin of each hook and off
 * for the rest, so only what can attach is ever loaded. All of them feed na_account().
 */
#include "na_queue.bpf.h"
#include "na_fabrics.bpf.h"
#include "na_usdt.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Classic-tracepoint twin of nvme_sq: where the entry keeps ctrl_id and qid (from the tracefs format
 * file, read by the agent before load; the layout changed across kernels). */
const volatile __u32 na_tp_nvme_sq_ctrl_off = 8;
const volatile __u32 na_tp_nvme_sq_qid_off = 44;

/* The nvme disks (dev_t and controller instance), filled by the agent from /sys/block. Where the kernel
 * nvme programs load they count these disks' completions, so the block program skips them; where they
 * cannot (no fentry on nvme_irq/nvme_poll, e.g. no module BTF) the block program counts them under the
 * controller's queue, so the daemon's nvme queues get their windows all the same. na_nvme_disks_as is
 * set before load: where it is NA_NVME_DISKS_BLOCK the lookup is compiled out of the hot path. */
const volatile __u32 na_nvme_disks_as = NA_NVME_DISKS_BLOCK;
__u32 na_nvme_disk_devs[NA_MAX_NVME_DISKS];
__u32 na_nvme_disk_ctrls[NA_MAX_NVME_DISKS];
__u32 na_nvme_disk_count;

struct na_cpu_context na_cpu[NA_MAX_CPUS];

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NA_MAX_IRQS);
	__type(key, __u32);
	__type(value, struct na_irq_stats);
} na_irq_stats SEC(".maps");

/* SPDK: the qpair a thread passed to spdk_nvme_qpair_process_completions, for its return probe. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} na_spdk_calls SEC(".maps");

static __always_inline struct na_cpu_context *na_this_cpu(void)
{
	return &na_cpu[bpf_get_smp_processor_id() & (NA_MAX_CPUS - 1)];
}

/* ---- any blk-mq device: block_rq_complete ------------------------------------------------------ */

/* Kernel dev_t encoding (MKDEV: major << 20 | minor), as /sys/block/X/dev prints it split. */
static __always_inline __u32 na_mkdev(int major, int minor)
{
	return ((__u32)major << 20) | ((__u32)minor & 0xfffff);
}

/* The nvme disk's index in na_nvme_disk_devs, or -1. */
static __always_inline int na_nvme_disk(__u32 dev)
{
	__u32 count = NA_READ(na_nvme_disk_count);

	for (__u32 i = 0; i < NA_MAX_NVME_DISKS && i < count; i++)
		if (na_nvme_disk_devs[i] == dev)
			return (int)i;
	return -1;
}

static __always_inline void na_block_complete(__u32 dev, __u32 hctx, __u32 nr_bytes)
{
	struct na_queue_key key = {.source = NA_SOURCE_BLOCK, .ctrl = dev, .qid = hctx + 1, .pid = 0};

	if (na_nvme_disks_as != NA_NVME_DISKS_BLOCK) {
		int disk = na_nvme_disk(dev);

		if (disk >= 0 && na_nvme_disks_as == NA_NVME_DISKS_SKIPPED)
			return;
		/* Every namespace of a controller shares its hardware queues, and nvme numbers the I/O queue
		 * of hardware context i as qid i + 1 (nvme_req_qid() in drivers/nvme/host/nvme.h). */
		if (disk >= 0 && disk < NA_MAX_NVME_DISKS) {
			key.source = NA_SOURCE_KERNEL_NVME;
			key.ctrl = na_nvme_disk_ctrls[disk];
		}
	}
	/* Flush requests complete with nr_bytes 0; they are completions of the queue all the same. */
	na_account_key(&key, na_completion_stamp(), 1, nr_bytes, NA_MODE_UNKNOWN);
}

/* tp_btf: the request is a trusted BTF pointer, so fields are read with plain loads (a NULL pointer
 * reads as 0) that CO-RE relocates; no bpf_probe_read per hop. Newer verifiers (Debian's 6.12 and
 * 7.3) type a tracepoint's pointer argument trusted_ptr_or_null and refuse the first load without a
 * NULL check. */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(na_block_rq_complete_btf, struct request *rq, int error, unsigned int nr_bytes)
{
	struct request_queue *q;
	struct gendisk *disk;

	if (!rq)
		return 0;
	q = rq->q;

	if (bpf_core_field_exists(((struct request___with_rq_disk *)rq)->rq_disk))
		disk = ((struct request___with_rq_disk *)rq)->rq_disk;
	else
		disk = q ? q->disk : NULL;
	/* No disk: a passthrough queue without a block device (nvme admin, sg); nothing to key it by. */
	if (!disk || !rq->mq_hctx)
		return 0;
	na_block_complete(na_mkdev(disk->major, disk->first_minor), rq->mq_hctx->queue_num, nr_bytes);
	return 0;
}

/* raw_tp twin for kernels whose tp_btf cannot attach: the same reads through bpf_probe_read_kernel. */
SEC("raw_tp/block_rq_complete")
int BPF_PROG(na_block_rq_complete_raw, struct request *rq, int error, unsigned int nr_bytes)
{
	struct gendisk *disk;
	struct blk_mq_hw_ctx *hctx;

	if (bpf_core_field_exists(((struct request___with_rq_disk *)rq)->rq_disk))
		disk = BPF_CORE_READ((struct request___with_rq_disk *)rq, rq_disk);
	else
		disk = BPF_CORE_READ(rq, q, disk);
	hctx = BPF_CORE_READ(rq, mq_hctx);
	if (!disk || !hctx)
		return 0;
	na_block_complete(na_mkdev(BPF_CORE_READ(disk, major), BPF_CORE_READ(disk, first_minor)),
			  BPF_CORE_READ(hctx, queue_num), nr_bytes);
	return 0;
}

/* ---- kernel nvme: nvme_sq fires in nvme_handle_cqe for every CQE, inside nvme_irq or nvme_poll ---- */

/* Which reaping path runs on this CPU. An interrupt handler cannot migrate and nests over anything, so
 * it is checked first; nvme_poll runs in process context, so the poller is recognized by task. */
static __always_inline __u32 na_nvme_reap_mode(void)
{
	struct na_cpu_context *cpu = na_this_cpu();

	if (cpu->in_nvme_irq)
		return NA_MODE_INTERRUPT;
	if (cpu->in_adaptive_poll)
		return NA_MODE_POLL;
	if (cpu->poll_task && cpu->poll_task == (__u64)bpf_get_current_task())
		return NA_MODE_POLL;
	return NA_MODE_UNKNOWN;
}

static __always_inline void na_nvme_complete(__u32 ctrl, __u32 qid, __u32 bytes)
{
	struct na_queue_key key = {.source = NA_SOURCE_KERNEL_NVME, .ctrl = ctrl, .qid = qid, .pid = 0};

	na_account_key(&key, na_completion_stamp(), 1, bytes, na_nvme_reap_mode());
}

/* nvme_req(req)->ctrl->instance: struct nvme_request is the pdu right after struct request
 * (blk_mq_rq_to_pdu), and a module type, so both hops are CO-RE probe reads against nvme_core's BTF. */
static __always_inline __u32 na_nvme_ctrl_instance(struct request *req)
{
	struct nvme_request *nreq = (void *)req + bpf_core_type_size(struct request);

	return BPF_CORE_READ(nreq, ctrl, instance);
}

/* qid as nvme_req_qid() computes it (drivers/nvme/host/nvme.h, the same in 6.1 and 6.18): 0 on the
 * admin queue, whose request_queue has no queuedata, else hardware queue index + 1. */
SEC("tp_btf/nvme_sq")
int BPF_PROG(na_nvme_sq_btf, struct request *req, __u16 sq_head, int sq_tail)
{
	struct request_queue *q;
	__u32 qid = 0;

	if (!req) /* 6.12 and 7.3 type req trusted_ptr_or_null (see block_rq_complete) */
		return 0;
	q = req->q;
	if (q && q->queuedata && req->mq_hctx)
		qid = req->mq_hctx->queue_num + 1;
	na_nvme_complete(na_nvme_ctrl_instance(req), qid, req->__data_len);
	return 0;
}

SEC("raw_tp/nvme_sq")
int BPF_PROG(na_nvme_sq_raw, struct request *req, __u16 sq_head, int sq_tail)
{
	__u32 qid = 0;

	if (BPF_CORE_READ(req, q, queuedata))
		qid = BPF_CORE_READ(req, mq_hctx, queue_num) + 1;
	na_nvme_complete(na_nvme_ctrl_instance(req), qid, BPF_CORE_READ(req, __data_len));
	return 0;
}

/* Without nvme BTF the request cannot be decoded, but the classic tracepoint entry carries ctrl_id and
 * qid, filled by the tracepoint itself. No bytes here. */
SEC("tracepoint/nvme/nvme_sq")
int na_nvme_sq_tp(void *ctx)
{
	int ctrl = 0, qid = 0;

	bpf_probe_read_kernel(&ctrl, sizeof(ctrl), ctx + (na_tp_nvme_sq_ctrl_off & 0xfff));
	bpf_probe_read_kernel(&qid, sizeof(qid), ctx + (na_tp_nvme_sq_qid_off & 0xfff));
	na_nvme_complete(ctrl, qid, 0);
	return 0;
}

/* nvme_irq(int irq, void *data) runs in hard interrupt context: it cannot nest on its CPU. */
SEC("fentry/nvme_irq")
int BPF_PROG(na_nvme_irq_entry)
{
	na_this_cpu()->in_nvme_irq = 1;
	return 0;
}

SEC("fexit/nvme_irq")
int BPF_PROG(na_nvme_irq_exit)
{
	na_this_cpu()->in_nvme_irq = 0;
	return 0;
}

/* nvme_poll(hctx, iob) runs in process context. A poller migrated between entry and exit leaves its
 * mark on the old CPU; the mark matches only that task, and the next nvme_poll there overwrites it. */
SEC("fentry/nvme_poll")
int BPF_PROG(na_nvme_poll_entry)
{
	na_this_cpu()->poll_task = (__u64)bpf_get_current_task();
	return 0;
}

SEC("fexit/nvme_poll")
int BPF_PROG(na_nvme_poll_exit)
{
	struct na_cpu_context *cpu = na_this_cpu();

	if (cpu->poll_task == (__u64)bpf_get_current_task())
		cpu->poll_task = 0;
	return 0;
}

/* Our nvme-pci module's poll path (kmod/nvme-pci/src/nvme-adaptive.c): nvme_adaptive_poll_cq(aq, budget)
 * reaps in softirq on the vector's CPU. Only a hard interrupt nests over it, and nvme_irq is checked first. */
SEC("fentry/nvme_adaptive_poll_cq")
int BPF_PROG(na_nvme_adaptive_poll_entry)
{
	na_this_cpu()->in_adaptive_poll = 1;
	return 0;
}

SEC("fexit/nvme_adaptive_poll_cq")
int BPF_PROG(na_nvme_adaptive_poll_exit)
{
	na_this_cpu()->in_adaptive_poll = 0;
	return 0;
}

/* ---- kernel nvme, per batch: two program runs per reap instead of one per completion ------------ */

/* Where the driver stands in its completion queue, counted over two laps so that a reap of up to
 * 2 * q_depth - 1 entries is measured right: the phase bit starts at 1 and flips at every wrap of the head. */
static __always_inline __u32 na_cq_position(struct nvme_queue *nvmeq, __u32 depth)
{
	__u32 head = BPF_CORE_READ(nvmeq, cq_head);

	return BPF_CORE_READ(nvmeq, cq_phase) ? head : head + depth;
}

/* The CQEs the reap between entry and exit consumed (the position moves only under the reap: nvme_irq for
 * an interrupt queue, nvme_poll under cq_poll_lock for a poll queue). */
static __always_inline __u32 na_cq_consumed(struct nvme_queue *nvmeq, __u32 before)
{
	__u32 depth = BPF_CORE_READ(nvmeq, q_depth), laps = 2 * depth;

	return laps ? (na_cq_position(nvmeq, depth) + laps - before) % laps : 0;
}

/* The reap brought n completions at one time (the window rules for a batch, as for uvnvme); the request
 * sizes are not read on this path, so it counts no bytes. */
static __always_inline void na_nvme_batch(struct nvme_queue *nvmeq, __u32 n, __u32 mode)
{
	struct na_queue_key key = {.source = NA_SOURCE_KERNEL_NVME, .pid = 0};

	if (n == 0)
		return;
	key.ctrl = BPF_CORE_READ(nvmeq, dev, ctrl.instance);
	key.qid = BPF_CORE_READ(nvmeq, qid);
	na_account_key(&key, bpf_ktime_get_ns(), n, 0, mode);
}

/* nvme_irq(irq, data = the struct nvme_queue) reaps in hard interrupt context: it cannot nest on its CPU
 * (a threaded handler, use_threaded_interrupts, can be interrupted by another queue's: its entry mark is
 * then overwritten and that batch goes uncounted, which the count check in tests/vm would show). */
SEC("fentry/nvme_irq")
int BPF_PROG(na_nvme_irq_batch_entry, int irq, void *data)
{
	struct nvme_queue *nvmeq = data;
	struct na_cpu_context *cpu = na_this_cpu();

	cpu->irq_cq_position = na_cq_position(nvmeq, BPF_CORE_READ(nvmeq, q_depth));
	cpu->irq_queue = (__u64)data;
	return 0;
}

SEC("fexit/nvme_irq")
int BPF_PROG(na_nvme_irq_batch_exit, int irq, void *data, int ret)
{
	struct na_cpu_context *cpu = na_this_cpu();

	if (cpu->irq_queue != (__u64)data)
		return 0;
	cpu->irq_queue = 0;
	na_nvme_batch(data, na_cq_consumed(data, cpu->irq_cq_position), NA_MODE_INTERRUPT);
	return 0;
}

/* nvme_poll(hctx, iob) runs in process context and returns only whether it found anything (nvme_poll_cq's
 * bool, in 6.1 as in 6.18), so the batch comes from the CQ position too. The mark is per CPU and names the
 * task: nvme_poll has no preemption point before its spin lock, and a poller that migrated anyway finds
 * no mark of its own at exit and that batch goes uncounted. An nvme_irq nesting over it uses its own mark. */
SEC("fentry/nvme_poll")
int BPF_PROG(na_nvme_poll_batch_entry, struct blk_mq_hw_ctx *hctx)
{
	struct nvme_queue *nvmeq = hctx->driver_data;
	struct na_cpu_context *cpu = na_this_cpu();

	cpu->poll_cq_position = na_cq_position(nvmeq, BPF_CORE_READ(nvmeq, q_depth));
	cpu->poll_batch_task = (__u64)bpf_get_current_task();
	cpu->poll_queue = (__u64)nvmeq;
	return 0;
}

SEC("fexit/nvme_poll")
int BPF_PROG(na_nvme_poll_batch_exit, struct blk_mq_hw_ctx *hctx, void *iob, int found)
{
	struct nvme_queue *nvmeq = hctx->driver_data;
	struct na_cpu_context *cpu = na_this_cpu();

	if (cpu->poll_queue != (__u64)nvmeq || cpu->poll_batch_task != (__u64)bpf_get_current_task())
		return 0;
	cpu->poll_queue = 0;
	if (found)
		na_nvme_batch(nvmeq, na_cq_consumed(nvmeq, cpu->poll_cq_position), NA_MODE_POLL);
	return 0;
}

/* Per batch on our module's poll path: the function returns what it reaped, so one program suffices. */
SEC("fexit/nvme_adaptive_poll_cq")
int BPF_PROG(na_nvme_adaptive_poll_batch_exit, struct nvme_adaptive_queue *aq, int budget, int reaped)
{
	struct na_queue_key key = {.source = NA_SOURCE_KERNEL_NVME, .pid = 0};

	if (reaped <= 0)
		return 0;
	key.ctrl = BPF_CORE_READ(aq, ctrl_instance);
	key.qid = BPF_CORE_READ(aq, qid);
	na_account_key(&key, bpf_ktime_get_ns(), reaped, 0, NA_MODE_POLL);
	return 0;
}

/* ---- interrupts: count and time in handler per irq number ------------------------------------- */

static __always_inline void na_irq_enter(void)
{
	na_this_cpu()->irq_entry_ns = bpf_ktime_get_ns();
}

/* One irq's handlers never run on two CPUs at once (IRQD_IRQ_INPROGRESS), so plain adds suffice. */
static __always_inline void na_irq_leave(int irq)
{
	__u64 entry = na_this_cpu()->irq_entry_ns, now = bpf_ktime_get_ns();
	__u32 key = irq;
	struct na_irq_stats *stats;

	if (key >= NA_MAX_IRQS) {
		__sync_fetch_and_add(&na_stats.irq_out_of_range, 1);
		return;
	}
	stats = bpf_map_lookup_elem(&na_irq_stats, &key);
	if (!stats)
		return;
	stats->count++;
	if (entry && now > entry)
		stats->time_ns += now - entry;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(na_irq_handler_entry_btf, int irq)
{
	na_irq_enter();
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(na_irq_handler_exit_btf, int irq)
{
	na_irq_leave(irq);
	return 0;
}

SEC("raw_tp/irq_handler_entry")
int BPF_PROG(na_irq_handler_entry_raw, int irq)
{
	na_irq_enter();
	return 0;
}

SEC("raw_tp/irq_handler_exit")
int BPF_PROG(na_irq_handler_exit_raw, int irq)
{
	na_irq_leave(irq);
	return 0;
}

/* ---- userspace drivers ------------------------------------------------------------------------- */

static __always_inline __u32 na_current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline struct na_queue_slot *na_uvnvme_slot(__u32 ctrl, __u32 qid, __u64 now)
{
	struct na_queue_key key = {.source = NA_SOURCE_UVNVME, .ctrl = ctrl, .qid = qid, .pid = na_current_tgid()};

	return na_slot_of(&key, now);
}

/* uvnvme:complete(ctrl, qid, n, mode): one reaped batch of n > 0 completions. */
SEC("usdt")
int na_uvnvme_complete(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), a[4] = {}; /* ctrl, qid, n, mode */
	struct na_queue_slot *slot;
	__u32 n;

	if (na_usdt_args(ctx, a, 4))
		return 0;
	n = a[2];
	if (n == 0)
		return 0;
	slot = na_uvnvme_slot(a[0], a[1], now);
	if (!slot)
		return 0;
	__sync_fetch_and_add(&slot->counters.batches, 1);
	na_account(slot, now, n, 0, a[3] ? NA_MODE_POLL : NA_MODE_INTERRUPT);
	return 0;
}

/* uvnvme:tally(ctrl, qid, n, reaps, mode, last_reap, first_ns, last_ns): n > 0 completions the driver
 * reaped in `reaps` reaps in one mode since its previous tally, the last reap of last_reap at last_ns
 * (CLOCK_MONOTONIC, bpf_ktime_get_ns()'s clock). They count as one reap of n at last_ns, held to the pace
 * of the last reap (docs/probes.md). A time the driver did not give (0, or after now) is taken as now. */
SEC("usdt")
int na_uvnvme_tally(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), a[8] = {}, first_ns, last_ns;
	struct na_queue_slot *slot;
	__u32 n, reaps, last_reap;

	if (na_usdt_args(ctx, a, 8))
		return 0;
	n = a[2];
	reaps = a[3];
	last_reap = a[5];
	first_ns = a[6];
	last_ns = a[7];
	if (n == 0)
		return 0;
	if (last_ns == 0 || last_ns > now)
		last_ns = now;
	if (first_ns > last_ns)
		first_ns = last_ns;
	if (last_reap == 0 || last_reap > n)
		last_reap = n;
	slot = na_uvnvme_slot(a[0], a[1], last_ns);
	if (!slot)
		return 0;
	__sync_fetch_and_add(&slot->counters.batches, reaps ? reaps : 1);
	na_account_reaps(slot, last_ns, first_ns, n, last_reap, 0, a[4] ? NA_MODE_POLL : NA_MODE_INTERRUPT);
	return 0;
}

/* uvnvme:irq(ctrl, qid): an interrupt-mode reaper woke up. */
SEC("usdt")
int na_uvnvme_irq(struct pt_regs *ctx)
{
	struct na_queue_slot *slot;
	__u64 a[2] = {}; /* ctrl, qid */

	if (na_usdt_args(ctx, a, 2))
		return 0;
	slot = na_uvnvme_slot(a[0], a[1], bpf_ktime_get_ns());
	if (slot)
		__sync_fetch_and_add(&slot->counters.wakeups, 1);
	return 0;
}

/* uvnvme:mode(ctrl, qid, mode): the new mode is in effect (fired by the reaper before it reaps in it). */
SEC("usdt")
int na_uvnvme_mode(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), a[3] = {}; /* ctrl, qid, mode */
	struct na_queue_slot *slot;

	if (na_usdt_args(ctx, a, 3))
		return 0;
	slot = na_uvnvme_slot(a[0], a[1], now);
	if (slot)
		na_driver_switched(slot, now, a[2] ? NA_MODE_POLL : NA_MODE_INTERRUPT);
	return 0;
}

/* SPDK: int32_t spdk_nvme_qpair_process_completions(struct spdk_nvme_qpair *qpair, uint32_t max)
 * returns the completions reaped, or a negative errno. The entry probe remembers the qpair per thread. */
SEC("uprobe")
int BPF_KPROBE(na_spdk_process_completions, void *qpair)
{
	__u64 thread = bpf_get_current_pid_tgid(), pointer = (__u64)qpair;

	bpf_map_update_elem(&na_spdk_calls, &thread, &pointer, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(na_spdk_process_completions_ret, int ret)
{
	__u64 thread = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), *pointer, qpair;
	struct na_queue_slot *slot;
	struct na_queue_key key;

	pointer = bpf_map_lookup_elem(&na_spdk_calls, &thread);
	if (!pointer)
		return 0;
	qpair = *pointer;
	bpf_map_delete_elem(&na_spdk_calls, &thread);
	if (ret <= 0)
		return 0;
	key.source = NA_SOURCE_SPDK;
	key.ctrl = qpair >> 32;
	key.qid = (__u32)qpair;
	key.pid = thread >> 32;
	slot = na_slot_of(&key, now);
	if (!slot)
		return 0;
	__sync_fetch_and_add(&slot->counters.batches, 1);
	na_account(slot, now, ret, 0, NA_MODE_UNKNOWN);
	return 0;
}

/* ---- test entry (BPF_PROG_TEST_RUN only; never attached) ------------------------------------- */

/* Runs the accounting with a caller-chosen clock, so tests/bpf can check windows, restarts and the
 * pace check to the nanosecond: args = {source, ctrl, qid, pid, now, n, bytes, mode}. */
SEC("raw_tp")
int na_test_account(__u64 *args)
{
	struct na_queue_key key = {.source = args[0], .ctrl = args[1], .qid = args[2], .pid = args[3]};

	na_account_key(&key, args[4], args[5], args[6], args[7]);
	return 0;
}

/* A driver's tally with a caller-chosen clock: args = {source, ctrl, qid, pid, last_ns, n, last_reap,
 * first_ns, mode}. */
SEC("raw_tp")
int na_test_tally(__u64 *args)
{
	struct na_queue_key key = {.source = args[0], .ctrl = args[1], .qid = args[2], .pid = args[3]};
	struct na_queue_slot *slot = na_slot_of(&key, args[4]);

	if (slot)
		na_account_reaps(slot, args[4], args[7], args[5], args[6], 0, args[8]);
	return 0;
}

/* A driver's mode probe with a caller-chosen clock: args = {source, ctrl, qid, pid, now, mode}. */
SEC("raw_tp")
int na_test_mode(__u64 *args)
{
	struct na_queue_key key = {.source = args[0], .ctrl = args[1], .qid = args[2], .pid = args[3]};
	struct na_queue_slot *slot = na_slot_of(&key, args[4]);

	if (slot)
		na_driver_switched(slot, args[4], args[5] == NA_MODE_POLL ? NA_MODE_POLL : NA_MODE_INTERRUPT);
	return 0;
}
