// SPDX-License-Identifier: GPL-2.0-only
/*
 * Adaptive interrupt polling for nvme-pci I/O queues, written for nvme-adapt from the cover letter of
 * "nvme-pci: add adaptive interrupt polling" (v2, LKML, August 2026).
 *
 * An eligible queue (dedicated MSI-X vector, no threaded handler) is reaped either by its interrupt
 * handler or, in poll mode, with its vector disabled, by an hrtimer that schedules irq_poll to drain the
 * completion queue. Who decides:
 * - the in-driver policy (nvme-adaptive-policy.h), when the controller's adaptive_poll is on and the
 *   queue's mode is "auto": it measures in the interrupt handler and in every poll run;
 * - the queue's mode file ("interrupt", "poll"), set by an operator or the nvme-adapt agent: the driver
 *   only does what it is told.
 * Every change made through sysfs freezes the namespaces and waits for what is in flight first. The
 * policy's own switches happen between two reaps under the queue's cq_lock, so none loses a completion:
 * a vector disabled while a completion is posted keeps it pending and the kernel resends it at
 * enable_irq(), and a poll run always drains what it finds.
 *
 * Contexts: poll mode is entered in hard irq context on the vector's CPU (the interrupt handler, or an
 * IPI sent there for a sysfs change), so the hrtimer is pinned to that CPU and the poll runs stay there;
 * a poll run (softirq) leaves it; process context (sysfs, queue teardown) stops it with
 * irq_poll_disable() and hrtimer_cancel(), after which nothing of the queue's poll path runs.
 */
#include <linux/irq.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/smp.h>
#include <linux/sysfs.h>
#include <linux/version.h>

#include "nvme.h"
#include "nvme-adaptive.h"

static bool adaptive_poll;
module_param(adaptive_poll, bool, 0644);
MODULE_PARM_DESC(adaptive_poll, "initial adaptive_poll of a new controller (default off)");

#define NVME_ADAPTIVE_PARAM(name, type, lo, hi, def, desc)				\
	static type adaptive_poll_##name = def;						\
	static int adaptive_poll_##name##_set(const char *val, const struct kernel_param *kp) \
	{										\
		unsigned long long v;							\
		int ret = kstrtoull(val, 0, &v);					\
											\
		if (ret)								\
			return ret;							\
		if (v < (lo) || v > (hi))						\
			return -ERANGE;							\
		WRITE_ONCE(*(type *)kp->arg, v);					\
		return 0;								\
	}										\
	static const struct kernel_param_ops adaptive_poll_##name##_ops = {		\
		.set = adaptive_poll_##name##_set,					\
		.get = param_get_##type,						\
	};										\
	module_param_cb(adaptive_poll_##name, &adaptive_poll_##name##_ops,		\
			&adaptive_poll_##name, 0644);					\
	MODULE_PARM_DESC(adaptive_poll_##name, desc " [" #lo ".." #hi ", default " #def "]")

/* The cover letter's numbers are the defaults; bounds keep the policy's arithmetic exact. */
NVME_ADAPTIVE_PARAM(window, uint, 1, 1048575, 8192, "completions per measurement window");
NVME_ADAPTIVE_PARAM(threshold_ns, ulong, 1, 1000000000, 10000,
		    "try polling when a window averaged at most this per completion");
NVME_ADAPTIVE_PARAM(slack_ns, ulong, 0, 10000000000, 20000,
		    "how far a polling window may fall behind the interrupt-mode pace");
NVME_ADAPTIVE_PARAM(max_failures, uint, 1, 1048576, 3, "failed tries in a row before backing off");
NVME_ADAPTIVE_PARAM(backoff_windows, uint, 0, 1048576, 64, "windows in interrupt mode after max_failures");
NVME_ADAPTIVE_PARAM(max_windows, uint, 1, 1048576, 64, "polling windows before measuring again");
/* Ours: the poll period and the irq_poll weight. */
NVME_ADAPTIVE_PARAM(interval_ns, ulong, 1000, 10000000, 5000,
		    "hrtimer period between poll runs");
NVME_ADAPTIVE_PARAM(budget, uint, 1, 4096, 64,
		    "completions one poll run reaps at most (irq_poll weight; for queues started later)");

bool nvme_adaptive_initial_mode(void)
{
	return READ_ONCE(adaptive_poll);
}

static void nvme_adaptive_params(struct nap_params *p)
{
	p->window = READ_ONCE(adaptive_poll_window);
	p->threshold_ns = READ_ONCE(adaptive_poll_threshold_ns);
	p->slack_ns = READ_ONCE(adaptive_poll_slack_ns);
	p->max_failures = READ_ONCE(adaptive_poll_max_failures);
	p->backoff_windows = READ_ONCE(adaptive_poll_backoff_windows);
	p->max_poll_windows = READ_ONCE(adaptive_poll_max_windows);
}

static ktime_t nvme_adaptive_interval(void)
{
	return ns_to_ktime(READ_ONCE(adaptive_poll_interval_ns));
}

/* The policy asked to leave polling: count why. Called under cq_lock. */
static void nvme_adaptive_count_end(struct nvme_adaptive_queue *aq)
{
	switch (aq->policy.reason) {
	case NAP_BEHIND_PACE:
		aq->stats.fails_pace++;
		break;
	case NAP_NOT_FASTER:
		aq->stats.fails_slower++;
		break;
	case NAP_STALLED:
		aq->stats.fails_stalled++;
		break;
	default:
		return;
	}
	if (aq->policy.state == NAP_BACKOFF)
		aq->stats.backoffs++;
}

/*
 * The poll path's reap, a function of its own so that tracers see which completions it reaped: the
 * agent's BPF collector attributes them to poll mode by its fexit (ctrl_instance and qid of `aq`, the
 * count returned).
 */
static noinline int nvme_adaptive_poll_cq(struct nvme_adaptive_queue *aq, int budget)
{
	return aq->actrl->ops->reap(aq, budget);
}

static int nvme_adaptive_poll(struct irq_poll *iop, int budget)
{
	struct nvme_adaptive_queue *aq = container_of(iop, struct nvme_adaptive_queue, iop);
	struct nap_params p;
	unsigned long flags;
	bool leave = false;
	int reaped;

	spin_lock_irqsave(aq->cq_lock, flags);
	reaped = nvme_adaptive_poll_cq(aq, budget);
	aq->stats.reaped_poll += reaped;
	aq->stats.timer_runs++;
	if (aq->policy_on && !aq->leave_pending) {
		u64 now = ktime_get_ns();
		enum nap_verdict v;

		nvme_adaptive_params(&p);
		v = reaped ? nap_on_reap(&aq->policy, &p, now, reaped) :
			     nap_on_empty_poll(&aq->policy, &p, now);
		if (v == NAP_TO_INTERRUPT) {
			aq->leave_pending = true;
			nvme_adaptive_count_end(aq);
		}
	}
	/* A full budget keeps us on the irq_poll list: the contract forbids completing it. */
	if (reaped >= budget) {
		spin_unlock_irqrestore(aq->cq_lock, flags);
		return reaped;
	}
	irq_poll_complete(iop);
	if (aq->leave_pending) {
		aq->leave_pending = false;
		aq->polling = false;
		aq->stats.switches_to_irq++;
		nap_switched(&aq->policy, ktime_get_ns());
		leave = true;
	} else {
		hrtimer_start(&aq->timer, nvme_adaptive_interval(), HRTIMER_MODE_REL_PINNED);
	}
	spin_unlock_irqrestore(aq->cq_lock, flags);
	/* After the unlock: a completion pending on the vector is resent now, and its handler takes cq_lock. */
	if (leave)
		enable_irq(aq->irq);
	return reaped;
}

static enum hrtimer_restart nvme_adaptive_timer(struct hrtimer *timer)
{
	struct nvme_adaptive_queue *aq = container_of(timer, struct nvme_adaptive_queue, timer);

	irq_poll_sched(&aq->iop);
	return HRTIMER_NORESTART;
}

/*
 * Called under cq_lock in hard irq context on the vector's CPU (its handler, or the IPI of
 * nvme_adaptive_start_polling), so the pinned timer and the poll runs stay on that CPU.
 */
static void nvme_adaptive_enter_poll(struct nvme_adaptive_queue *aq, u64 now)
{
	aq->polling = true;
	aq->stats.switches_to_poll++;
	disable_irq_nosync(aq->irq);
	hrtimer_start(&aq->timer, nvme_adaptive_interval(), HRTIMER_MODE_REL_PINNED);
	nap_switched(&aq->policy, now);
}

irqreturn_t nvme_adaptive_irq(struct nvme_adaptive_queue *aq)
{
	struct nap_params p;
	enum nap_verdict v = NAP_STAY;
	u64 now = 0;
	int reaped;

	spin_lock(aq->cq_lock);
	reaped = aq->actrl->ops->reap(aq, INT_MAX);
	aq->stats.interrupts++;
	aq->stats.reaped_irq += reaped;
	if (!aq->polling && aq->policy_on && reaped) {
		now = ktime_get_ns();
		nvme_adaptive_params(&p);
		v = nap_on_reap(&aq->policy, &p, now, reaped);
		if (v == NAP_TO_POLL) {
			aq->stats.tries++;
			nvme_adaptive_enter_poll(aq, now);
		}
	}
	spin_unlock(aq->cq_lock);
	return reaped || v == NAP_TO_POLL ? IRQ_HANDLED : IRQ_NONE;
}

/*
 * Stops polling from process context. irq_poll_disable() waits for a scheduled or running poll run and
 * keeps new ones from running; only a poll run re-arms the timer, so after hrtimer_cancel() nothing of
 * the poll path runs. Whoever clears `polling` enables the vector, exactly once.
 */
static void nvme_adaptive_stop_polling(struct nvme_adaptive_queue *aq)
{
	unsigned long flags;
	bool enable = false;

	spin_lock_irqsave(aq->cq_lock, flags);
	if (!aq->polling) {
		spin_unlock_irqrestore(aq->cq_lock, flags);
		return;
	}
	aq->leave_pending = true;
	spin_unlock_irqrestore(aq->cq_lock, flags);

	irq_poll_disable(&aq->iop);
	hrtimer_cancel(&aq->timer);

	spin_lock_irqsave(aq->cq_lock, flags);
	aq->leave_pending = false;
	if (aq->polling) {
		aq->stats.reaped_poll += aq->actrl->ops->reap(aq, INT_MAX);
		aq->polling = false;
		aq->stats.switches_to_irq++;
		nap_switched(&aq->policy, ktime_get_ns());
		enable = true;
	}
	spin_unlock_irqrestore(aq->cq_lock, flags);
	if (enable)
		enable_irq(aq->irq);
	irq_poll_enable(&aq->iop);
}

static void nvme_adaptive_enter_poll_ipi(void *data)
{
	struct nvme_adaptive_queue *aq = data;

	spin_lock(aq->cq_lock);
	if (!aq->polling)
		nvme_adaptive_enter_poll(aq, ktime_get_ns());
	spin_unlock(aq->cq_lock);
}

/* Starts polling from process context, on the CPU the vector's interrupts go to. */
static void nvme_adaptive_start_polling(struct nvme_adaptive_queue *aq)
{
	const struct cpumask *mask = irq_data_get_effective_affinity_mask(irq_get_irq_data(aq->irq));
	unsigned int cpu = cpumask_first_and(mask, cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	smp_call_function_single(cpu, nvme_adaptive_enter_poll_ipi, aq, 1);
}

/* Puts a live queue where its setting and the controller's mode say. Process context, nothing in flight. */
static void nvme_adaptive_apply(struct nvme_adaptive_queue *aq)
{
	unsigned long flags;
	bool adaptive;

	if (!aq->enabled || !aq->eligible)
		return;
	adaptive = aq->setting == NVME_ADAPTIVE_AUTO && aq->actrl->adaptive;
	if (aq->setting == NVME_ADAPTIVE_POLL) {
		spin_lock_irqsave(aq->cq_lock, flags);
		aq->policy_on = false;
		aq->leave_pending = false;
		spin_unlock_irqrestore(aq->cq_lock, flags);
		nvme_adaptive_start_polling(aq);
		return;
	}
	spin_lock_irqsave(aq->cq_lock, flags);
	aq->policy_on = false;
	spin_unlock_irqrestore(aq->cq_lock, flags);
	nvme_adaptive_stop_polling(aq);
	if (adaptive) {
		spin_lock_irqsave(aq->cq_lock, flags);
		nap_reset(&aq->policy, ktime_get_ns());
		aq->policy_on = true;
		spin_unlock_irqrestore(aq->cq_lock, flags);
	}
}

void nvme_adaptive_queue_init(struct nvme_adaptive_queue *aq, struct nvme_adaptive_ctrl *actrl,
			      spinlock_t *cq_lock, u16 qid)
{
	aq->cq_lock = cq_lock;
	aq->actrl = actrl;
	aq->ctrl_instance = actrl->ctrl->instance;
	aq->qid = qid;
	aq->setting = NVME_ADAPTIVE_AUTO;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(&aq->timer, nvme_adaptive_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED);
#else
	hrtimer_init(&aq->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED);
	aq->timer.function = nvme_adaptive_timer;
#endif
	irq_poll_init(&aq->iop, READ_ONCE(adaptive_poll_budget), nvme_adaptive_poll);
}

void nvme_adaptive_queue_start(struct nvme_adaptive_queue *aq, unsigned int irq, bool eligible)
{
	aq->irq = irq;
	aq->eligible = eligible && aq->qid > 0;
	aq->polling = false;
	aq->leave_pending = false;
	aq->policy_on = false;
	aq->iop.weight = READ_ONCE(adaptive_poll_budget);
	aq->enabled = true;
	nvme_adaptive_apply(aq);
}

void nvme_adaptive_queue_stop(struct nvme_adaptive_queue *aq)
{
	unsigned long flags;

	if (!aq->enabled)
		return;
	if (aq->eligible) {
		spin_lock_irqsave(aq->cq_lock, flags);
		aq->policy_on = false;
		spin_unlock_irqrestore(aq->cq_lock, flags);
		nvme_adaptive_stop_polling(aq);
	}
	aq->enabled = false;
}

/*
 * A change through sysfs: freeze the namespaces and wait for what is in flight, apply, unfreeze. The
 * queues lock keeps a reset from starting or stopping queues meanwhile.
 */
int nvme_adaptive_change(struct nvme_adaptive_ctrl *actrl, struct nvme_adaptive_queue *only,
				void (*set)(struct nvme_adaptive_ctrl *, struct nvme_adaptive_queue *, int),
				int value)
{
	unsigned int qid;
	int ret;

	if (nvme_ctrl_state(actrl->ctrl) != NVME_CTRL_LIVE)
		return -EBUSY;
	ret = actrl->ops->freeze(actrl);
	if (ret)
		return ret;
	mutex_lock(actrl->queues_lock);
	set(actrl, only, value);
	for (qid = 1; qid < actrl->nr_queues; qid++) {
		struct nvme_adaptive_queue *aq = actrl->ops->slot(actrl, qid);

		if (!only || aq == only)
			nvme_adaptive_apply(aq);
	}
	mutex_unlock(actrl->queues_lock);
	actrl->ops->unfreeze(actrl);
	return 0;
}
