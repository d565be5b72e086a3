// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sysfs side of adaptive interrupt polling (nvme-adaptive.c):
 *   /sys/class/nvme/nvme<N>/adaptive_poll        0 or 1: the controller's in-driver policy (cover letter)
 *   /sys/class/nvme/nvme<N>/adaptive/q<Q>/mode   auto | interrupt | poll: what the queue is told (ours)
 *   /sys/class/nvme/nvme<N>/adaptive/q<Q>/state  interrupt | poll | ineligible | offline: how it is reaped
 *   /sys/class/nvme/nvme<N>/adaptive/q<Q>/stats  reaped_irq reaped_poll interrupts timer_runs
 *                                                switches_to_poll switches_to_irq tries fails_pace
 *                                                fails_slower fails_stalled backoffs
 *   /sys/class/nvme/nvme<N>/adaptive/q<Q>/policy the in-driver policy: off, or its state, the reason of
 *                                                its last window end or switch, and its counts
 * A queue directory lives as long as the controller: a reset stops and starts the queue behind it, and
 * the queue keeps its mode across the reset.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "nvme.h"
#include "nvme-adaptive.h"

struct nvme_adaptive_qdir {
	struct kobject kobj;
	struct nvme_adaptive_queue *aq;
};

struct nvme_adaptive_attr {
	struct attribute attr;
	ssize_t (*show)(struct nvme_adaptive_queue *aq, char *buf);
	ssize_t (*store)(struct nvme_adaptive_queue *aq, const char *buf, size_t count);
};

static const char * const nvme_adaptive_settings[] = {
	[NVME_ADAPTIVE_AUTO] = "auto",
	[NVME_ADAPTIVE_INTERRUPT] = "interrupt",
	[NVME_ADAPTIVE_POLL] = "poll",
};

static ssize_t mode_show(struct nvme_adaptive_queue *aq, char *buf)
{
	return sysfs_emit(buf, "%s\n", nvme_adaptive_settings[READ_ONCE(aq->setting)]);
}

static void nvme_adaptive_set_queue(struct nvme_adaptive_ctrl *actrl, struct nvme_adaptive_queue *aq,
				    int setting)
{
	aq->setting = setting;
}

static ssize_t mode_store(struct nvme_adaptive_queue *aq, const char *buf, size_t count)
{
	int setting = sysfs_match_string(nvme_adaptive_settings, buf);
	int ret;

	if (setting < 0)
		return -EINVAL;
	if (aq->enabled && !aq->eligible)
		return -EOPNOTSUPP;
	mutex_lock(&aq->actrl->change_lock);
	ret = nvme_adaptive_change(aq->actrl, aq, nvme_adaptive_set_queue, setting);
	mutex_unlock(&aq->actrl->change_lock);
	return ret ? ret : count;
}

static ssize_t state_show(struct nvme_adaptive_queue *aq, char *buf)
{
	const char *state = "interrupt";
	unsigned long flags;

	if (!aq->cq_lock)
		return sysfs_emit(buf, "offline\n");
	spin_lock_irqsave(aq->cq_lock, flags);
	if (!aq->enabled)
		state = "offline";
	else if (!aq->eligible)
		state = "ineligible";
	else if (aq->polling)
		state = "poll";
	spin_unlock_irqrestore(aq->cq_lock, flags);
	return sysfs_emit(buf, "%s\n", state);
}

static ssize_t stats_show(struct nvme_adaptive_queue *aq, char *buf)
{
	struct nvme_adaptive_stats s = {};
	unsigned long flags;

	if (!aq->cq_lock)
		goto out;
	spin_lock_irqsave(aq->cq_lock, flags);
	s = aq->stats;
	spin_unlock_irqrestore(aq->cq_lock, flags);
out:
	return sysfs_emit(buf, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", s.reaped_irq,
			  s.reaped_poll, s.interrupts, s.timer_runs, s.switches_to_poll, s.switches_to_irq,
			  s.tries, s.fails_pace, s.fails_slower, s.fails_stalled, s.backoffs);
}

static const char * const nvme_adaptive_states[] = {
	[NAP_MEASURE] = "measure", [NAP_POLL] = "poll", [NAP_BACKOFF] = "backoff",
};

static const char * const nvme_adaptive_reasons[NAP_REASONS] = {
	[NAP_NONE] = "none",
	[NAP_WINDOW_FAST] = "window_fast",
	[NAP_WINDOW_SLOW] = "window_slow",
	[NAP_BEHIND_PACE] = "behind_pace",
	[NAP_NOT_FASTER] = "not_faster",
	[NAP_POLL_KEPT] = "poll_kept",
	[NAP_MAX_POLL_WINDOWS] = "max_poll_windows",
	[NAP_STALLED] = "stalled",
	[NAP_BACKING_OFF] = "backing_off",
	[NAP_BACKOFF_OVER] = "backoff_over",
};

static ssize_t policy_show(struct nvme_adaptive_queue *aq, char *buf)
{
	struct nap_queue q;
	unsigned long flags;
	bool on;

	if (!aq->cq_lock)
		return sysfs_emit(buf, "off\n");
	spin_lock_irqsave(aq->cq_lock, flags);
	q = aq->policy;
	on = aq->policy_on;
	spin_unlock_irqrestore(aq->cq_lock, flags);
	if (!on)
		return sysfs_emit(buf, "off\n");
	return sysfs_emit(buf, "%s %s failures=%u backoff_left=%u poll_windows=%u baseline_ns=%llu/%u\n",
			  nvme_adaptive_states[q.state], nvme_adaptive_reasons[q.reason], q.failures,
			  q.backoff_left, q.poll_windows, q.baseline_span, q.baseline_count);
}

static struct nvme_adaptive_attr nvme_adaptive_mode_attr = __ATTR(mode, 0644, mode_show, mode_store);
static struct nvme_adaptive_attr nvme_adaptive_state_attr = __ATTR(state, 0444, state_show, NULL);
static struct nvme_adaptive_attr nvme_adaptive_stats_attr = __ATTR(stats, 0444, stats_show, NULL);
static struct nvme_adaptive_attr nvme_adaptive_policy_attr = __ATTR(policy, 0444, policy_show, NULL);

static struct attribute *nvme_adaptive_queue_attrs[] = {
	&nvme_adaptive_mode_attr.attr,
	&nvme_adaptive_state_attr.attr,
	&nvme_adaptive_stats_attr.attr,
	&nvme_adaptive_policy_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(nvme_adaptive_queue);

static ssize_t nvme_adaptive_attr_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct nvme_adaptive_attr *a = container_of(attr, struct nvme_adaptive_attr, attr);

	return a->show(container_of(kobj, struct nvme_adaptive_qdir, kobj)->aq, buf);
}

static ssize_t nvme_adaptive_attr_store(struct kobject *kobj, struct attribute *attr, const char *buf,
					size_t count)
{
	struct nvme_adaptive_attr *a = container_of(attr, struct nvme_adaptive_attr, attr);

	if (!a->store)
		return -EIO;
	return a->store(container_of(kobj, struct nvme_adaptive_qdir, kobj)->aq, buf, count);
}

static const struct sysfs_ops nvme_adaptive_sysfs_ops = {
	.show = nvme_adaptive_attr_show,
	.store = nvme_adaptive_attr_store,
};

static void nvme_adaptive_qdir_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct nvme_adaptive_qdir, kobj));
}

static const struct kobj_type nvme_adaptive_qdir_type = {
	.release = nvme_adaptive_qdir_release,
	.sysfs_ops = &nvme_adaptive_sysfs_ops,
	.default_groups = nvme_adaptive_queue_groups,
};

void nvme_adaptive_ctrl_init(struct nvme_adaptive_ctrl *actrl, struct nvme_ctrl *ctrl,
			     const struct nvme_adaptive_ops *ops, struct mutex *queues_lock,
			     unsigned int nr_queues)
{
	actrl->ctrl = ctrl;
	actrl->ops = ops;
	actrl->queues_lock = queues_lock;
	actrl->nr_queues = nr_queues;
	actrl->adaptive = nvme_adaptive_initial_mode();
	mutex_init(&actrl->change_lock);
}

int nvme_adaptive_ctrl_add(struct nvme_adaptive_ctrl *actrl)
{
	unsigned int qid;
	int ret;

	actrl->dir = kobject_create_and_add("adaptive", &actrl->ctrl->device->kobj);
	if (!actrl->dir)
		return -ENOMEM;
	for (qid = 1; qid < actrl->nr_queues; qid++) {
		struct nvme_adaptive_queue *aq = actrl->ops->slot(actrl, qid);
		struct nvme_adaptive_qdir *qdir = kzalloc(sizeof(*qdir), GFP_KERNEL);

		/* A slot the controller never sets up (fewer queues than allocated) still has a directory. */
		aq->actrl = actrl;
		aq->qid = qid;
		if (!qdir) {
			ret = -ENOMEM;
			goto undo;
		}
		qdir->aq = aq;
		ret = kobject_init_and_add(&qdir->kobj, &nvme_adaptive_qdir_type, actrl->dir, "q%u", qid);
		if (ret) {
			kobject_put(&qdir->kobj);
			goto undo;
		}
		aq->dir = qdir;
	}
	return 0;
undo:
	nvme_adaptive_ctrl_remove(actrl);
	return ret;
}

void nvme_adaptive_ctrl_remove(struct nvme_adaptive_ctrl *actrl)
{
	unsigned int qid;

	if (!actrl->dir)
		return;
	for (qid = 1; qid < actrl->nr_queues; qid++) {
		struct nvme_adaptive_queue *aq = actrl->ops->slot(actrl, qid);

		if (!aq->dir)
			continue;
		kobject_del(&aq->dir->kobj);
		kobject_put(&aq->dir->kobj);
		aq->dir = NULL;
	}
	kobject_put(actrl->dir);
	actrl->dir = NULL;
}

ssize_t nvme_adaptive_ctrl_show(struct nvme_adaptive_ctrl *actrl, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(actrl->adaptive));
}

static void nvme_adaptive_set_ctrl(struct nvme_adaptive_ctrl *actrl, struct nvme_adaptive_queue *aq, int on)
{
	WRITE_ONCE(actrl->adaptive, on);
}

ssize_t nvme_adaptive_ctrl_store(struct nvme_adaptive_ctrl *actrl, const char *buf, size_t count)
{
	bool on;
	int ret = kstrtobool(buf, &on);

	if (ret)
		return ret;
	mutex_lock(&actrl->change_lock);
	if (on != actrl->adaptive)
		ret = nvme_adaptive_change(actrl, NULL, nvme_adaptive_set_ctrl, on);
	mutex_unlock(&actrl->change_lock);
	return ret ? ret : count;
}
