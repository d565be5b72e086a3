/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Adaptive interrupt polling for nvme-pci I/O queues: the interface between pci.c and nvme-adaptive.c.
 *
 * pci.c embeds a struct nvme_adaptive_queue in every struct nvme_queue and a struct nvme_adaptive_ctrl in
 * struct nvme_dev, sends an eligible queue's interrupts to nvme_adaptive_irq(), stops polling before it
 * frees a queue's vector, and supplies what this file cannot do itself (struct nvme_adaptive_ops): reap a
 * queue's completion queue, find a queue slot by qid, freeze and unfreeze the namespaces. Everything else
 * (the poll mode, the in-driver policy, the per-queue modes, the sysfs files, freeze and drain) lives in
 * nvme-adaptive.c, which is the same for every kernel the patches cover.
 */
#ifndef _NVME_ADAPTIVE_H
#define _NVME_ADAPTIVE_H

#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/kobject.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>

#include "nvme-adaptive-policy.h"

struct nvme_ctrl;
struct nvme_adaptive_ctrl;
struct nvme_adaptive_queue;

struct nvme_adaptive_ops {
	/*
	 * Reaps at most `budget` entries of the queue's completion queue and completes their requests.
	 * Called with the queue's cq_lock held. Returns the entries reaped.
	 */
	int (*reap)(struct nvme_adaptive_queue *aq, int budget);
	/* The slot of I/O queue `qid` (1 .. nr_queues - 1), live or not. */
	struct nvme_adaptive_queue *(*slot)(struct nvme_adaptive_ctrl *actrl, unsigned int qid);
	/* Freezes the namespaces and waits for what is in flight; an error leaves them unfrozen. */
	int (*freeze)(struct nvme_adaptive_ctrl *actrl);
	void (*unfreeze)(struct nvme_adaptive_ctrl *actrl);
};

/* How a queue was set through its `mode` file. */
enum nvme_adaptive_setting {
	NVME_ADAPTIVE_AUTO,		/* the controller's adaptive_poll decides */
	NVME_ADAPTIVE_INTERRUPT,	/* interrupts, whatever the controller's mode */
	NVME_ADAPTIVE_POLL,		/* polled by the hrtimer, whatever the controller's mode */
};

struct nvme_adaptive_stats {
	u64 reaped_irq;		/* completions reaped by the interrupt handler */
	u64 reaped_poll;	/* completions reaped by the poll path */
	u64 interrupts;		/* interrupt handler runs */
	u64 timer_runs;		/* poll runs */
	u64 switches_to_poll;
	u64 switches_to_irq;
	u64 tries;		/* tries the in-driver policy started */
	u64 fails_pace;		/* tries that fell behind the baseline's pace */
	u64 fails_slower;	/* full polling windows not strictly faster */
	u64 fails_stalled;	/* poll runs with nothing while already behind */
	u64 backoffs;		/* backoffs the in-driver policy started */
};

struct nvme_adaptive_qdir;

struct nvme_adaptive_queue {
	spinlock_t *cq_lock;		/* the queue's cq_poll_lock: every reap and every field below */
	struct nvme_adaptive_ctrl *actrl;
	int ctrl_instance;		/* nvme%d, for the agent's BPF collector */
	u16 qid;
	unsigned int irq;
	bool eligible;			/* dedicated MSI-X vector, not threaded */
	bool enabled;			/* vector requested, queue live */
	bool polling;			/* reaped by the hrtimer and irq_poll, vector disabled */
	bool leave_pending;		/* stop polling at the end of the poll run in flight */
	bool policy_on;			/* the in-driver policy decides */
	u8 setting;			/* enum nvme_adaptive_setting */
	struct nap_queue policy;
	struct nvme_adaptive_stats stats;
	struct hrtimer timer;
	struct irq_poll iop;
	struct nvme_adaptive_qdir *dir;	/* adaptive/q<qid> */
};

struct nvme_adaptive_ctrl {
	struct nvme_ctrl *ctrl;
	const struct nvme_adaptive_ops *ops;
	struct mutex *queues_lock;	/* held by pci.c while it sets queues up or tears them down */
	struct mutex change_lock;	/* one mode change at a time */
	unsigned int nr_queues;		/* slots, admin queue included */
	bool adaptive;			/* the controller's adaptive_poll */
	struct kobject *dir;		/* /sys/class/nvme/nvme%d/adaptive */
};

/* At probe, before any queue is started: the initial mode comes from the adaptive_poll parameter. */
void nvme_adaptive_ctrl_init(struct nvme_adaptive_ctrl *actrl, struct nvme_ctrl *ctrl,
			     const struct nvme_adaptive_ops *ops, struct mutex *queues_lock,
			     unsigned int nr_queues);
/* Once the controller's device is in sysfs: adaptive/q<qid> for every I/O queue slot. */
int nvme_adaptive_ctrl_add(struct nvme_adaptive_ctrl *actrl);
/* At remove, before the queues are freed: after it no show or store of ours runs. */
void nvme_adaptive_ctrl_remove(struct nvme_adaptive_ctrl *actrl);

/* Once per queue slot, when the slot is allocated. */
void nvme_adaptive_queue_init(struct nvme_adaptive_queue *aq, struct nvme_adaptive_ctrl *actrl,
			      spinlock_t *cq_lock, u16 qid);
/* The queue's vector is requested (`eligible`: dedicated MSI-X, not threaded). Process context. */
void nvme_adaptive_queue_start(struct nvme_adaptive_queue *aq, unsigned int irq, bool eligible);
/* Before the vector is freed: polling stops and every pending completion is reaped. Process context. */
void nvme_adaptive_queue_stop(struct nvme_adaptive_queue *aq);

/* The interrupt handler of an eligible queue (nvme_irq calls it). */
irqreturn_t nvme_adaptive_irq(struct nvme_adaptive_queue *aq);

/* Between nvme-adaptive.c and nvme-adaptive-sysfs.c. */
bool nvme_adaptive_initial_mode(void);
/*
 * Freezes the namespaces, calls set(actrl, only, value) and puts `only` (every queue when NULL) where its
 * setting and the controller's mode say, unfreezes. -EBUSY unless the controller is live.
 */
int nvme_adaptive_change(struct nvme_adaptive_ctrl *actrl, struct nvme_adaptive_queue *only,
			 void (*set)(struct nvme_adaptive_ctrl *, struct nvme_adaptive_queue *, int), int value);

/* /sys/class/nvme/nvme%d/adaptive_poll */
ssize_t nvme_adaptive_ctrl_show(struct nvme_adaptive_ctrl *actrl, char *buf);
ssize_t nvme_adaptive_ctrl_store(struct nvme_adaptive_ctrl *actrl, const char *buf, size_t count);

#endif /* _NVME_ADAPTIVE_H */
