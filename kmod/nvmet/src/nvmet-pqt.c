// SPDX-License-Identifier: GPL-2.0-only
/*
 * nvmet polling-queue task (pqt), written for nvme-adapt from the description in the LKML thread of
 * September 2023 on a polling queue task for the NVMe target: block-device namespaces submit their
 * bios to the backing disk's poll queues, and a kernel thread polls for their completions instead
 * of waiting for the disk's interrupts. No code of that series is used here.
 *
 * One task per target (this module), created when a namespace first turns polled submission on and
 * kept, asleep when idle, until the module goes. Poll queues belong to the backing disk, not to a
 * port or a host queue: one poller per target reaps each poll queue from one place (several pollers
 * of one hardware queue would only contend for its lock), and the series' parameters (one CPU, one
 * idle time, one ring) describe exactly one task. It can be bound to a CPU (pqt_affinity_core).
 *
 * Submission: nvmet_pqt_submit_rw() takes a read or write of a namespace whose pqt_enable is 1 when
 * it has no metadata and no peer-to-peer memory and reserves a slot of the ring (pqt_ring_size bios
 * in flight at most) for each bio it needs; anything else is left to the ordinary path (counted as
 * a fallback). It cuts the command's data into bios within the backing queue's limits (no
 * bio_chain: the block layer takes a bio it must split off the poll queue), allocates each from our
 * own bio_set, submits it REQ_POLLED and hands it to the task. The command completes when its last
 * bio does.
 *
 * Bio lifetime: the task owns every polled bio from its allocation on; nothing else frees it. A
 * bio's end_io (which may run in the task's poll, in another poller of the same hardware queue, or
 * anywhere the block layer completes it) only records the result, completes the command when it is
 * the command's last bio, and marks the bio done as the very last thing it does with it. The task
 * polls a bio only while it is not done, through the bio it holds (bio_poll() reads its queue and
 * its current cookie, so a request that was requeued is polled where it is now), and puts it once
 * it is done. nvmet's inline bio is never used for a polled command, so reusing the request for the
 * next command touches nothing of the task's.
 *
 * Switching: pqt_enable 0 stops new polled submissions and waits until the task has retired every
 * polled bio of the namespace. A submitter counts its bios in the namespace before it looks at the
 * attribute and the switch clears the attribute before it looks at the count (a full barrier on
 * each side), so a submission either backs out to the ordinary path or is waited for. Nothing is
 * lost (the task keeps polling what is in flight) and nothing completes twice (only end_io
 * completes a command, once per bio). The host's connection and configfs stay as they are.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": pqt: " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/configfs.h>
#include <linux/cpumask.h>
#include <linux/kobject.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/memremap.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/scatterlist.h>
#include <linux/sysfs.h>
#include <linux/wait.h>

#include "nvmet.h"

/* Bios one command may be cut into; a larger command goes the ordinary way. */
#define NVMET_PQT_MAX_BIOS	32
/* Hardware queues a reap pass remembers having polled (more are polled again: harmless). */
#define NVMET_PQT_PASS_QUEUES	8

#ifdef BLK_POLL_NOSLEEP
#define NVMET_PQT_POLL_FLAGS	(BLK_POLL_ONESHOT | BLK_POLL_NOSLEEP)
#else
#define NVMET_PQT_POLL_FLAGS	BLK_POLL_ONESHOT
#endif

enum nvmet_pqt_state {
	NVMET_PQT_NONE,		/* no task yet */
	NVMET_PQT_POLLING,	/* bios in the ring */
	NVMET_PQT_IDLE,		/* nothing in the ring, awake until pqt_idle_usecs passed */
	NVMET_PQT_SLEEPING,
};

static const char * const nvmet_pqt_state_names[] = {
	[NVMET_PQT_NONE]	= "none",
	[NVMET_PQT_POLLING]	= "polling",
	[NVMET_PQT_IDLE]	= "idle",
	[NVMET_PQT_SLEEPING]	= "sleeping",
};

struct nvmet_pqt_task {
	struct task_struct	*thread;
	struct llist_head	incoming;	/* bios submitted, not yet in the task's ring */
	bool			sleeping;
	atomic_t		queued;		/* ring slots taken (bios not retired) */
	/* Woken when a namespace's last polled bio is retired. */
	wait_queue_head_t	drain_wq;
	/* Written by the thread only. */
	int			state;
	u64			reaped;		/* polled bios completed in nvmet_pqt_poll_bio() */
	u64			polls;		/* bio_poll() calls */
	u64			retired;	/* polled bios retired */
	u64			busy_ns;	/* awake with bios in the ring */
	u64			idle_ns;	/* awake with an empty ring */
	u64			sleep_ns;
	u64			wakeups;
};

/* Per polled bio, in front of it (the bio_set's front_pad). */
struct nvmet_pqt_io {
	struct llist_node	node;		/* on the task's incoming list */
	struct list_head	entry;		/* in the task's ring */
	struct nvmet_pqt_ns	*pns;
	/* The command's first bio, which holds the command's state. */
	struct nvmet_pqt_io	*head;
	struct nvmet_req	*req;		/* head only */
	atomic_t		pending;	/* head only: the command's bios not completed */
	atomic_t		status;		/* head only: the first error */
	bool			reaped;		/* completed in the task's poll */
	/* End_io is finished with the bio: the task may put it (release/acquire). */
	int			done;
	struct bio		bio;		/* last */
};

static struct nvmet_pqt_task nvmet_pqt = {
	.incoming	= LLIST_HEAD_INIT(nvmet_pqt.incoming),
	.drain_wq	= __WAIT_QUEUE_HEAD_INITIALIZER(nvmet_pqt.drain_wq),
};

/* Serializes starting the task, switching namespaces and setting the task's CPU. */
static DEFINE_MUTEX(nvmet_pqt_mutex);
static struct bio_set nvmet_pqt_bio_set;
static struct kobject *nvmet_pqt_kobj;

static int pqt_affinity_core = -1;
static unsigned int pqt_idle_usecs = 1000;
static unsigned int pqt_ring_size = 1024;

static int nvmet_pqt_bind(struct task_struct *thread, int cpu)
{
	int ret;

	ret = set_cpus_allowed_ptr(thread, cpu < 0 ? cpu_possible_mask : cpumask_of(cpu));
	if (ret)
		pr_warn("cannot bind the task to CPU %d: %d\n", cpu, ret);
	return ret;
}

static int nvmet_pqt_affinity_set(const char *val, const struct kernel_param *kp)
{
	int cpu, ret;

	ret = kstrtoint(val, 0, &cpu);
	if (ret)
		return ret;
	if (cpu < -1 || cpu >= (int)nr_cpu_ids || (cpu >= 0 && !cpu_possible(cpu)))
		return -EINVAL;
	mutex_lock(&nvmet_pqt_mutex);
	if (nvmet_pqt.thread)
		ret = nvmet_pqt_bind(nvmet_pqt.thread, cpu);
	if (!ret)
		WRITE_ONCE(pqt_affinity_core, cpu);
	mutex_unlock(&nvmet_pqt_mutex);
	return ret;
}

static const struct kernel_param_ops nvmet_pqt_affinity_ops = {
	.set	= nvmet_pqt_affinity_set,
	.get	= param_get_int,
};
module_param_cb(pqt_affinity_core, &nvmet_pqt_affinity_ops, &pqt_affinity_core, 0644);
MODULE_PARM_DESC(pqt_affinity_core,
		 "CPU the polling-queue task runs on, -1 for any (default -1; applies at once)");

static int nvmet_pqt_uint_set(const char *val, const struct kernel_param *kp,
			      unsigned int lo, unsigned int hi)
{
	unsigned int v;
	int ret = kstrtouint(val, 0, &v);

	if (ret)
		return ret;
	if (v < lo || v > hi)
		return -ERANGE;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static int nvmet_pqt_idle_set(const char *val, const struct kernel_param *kp)
{
	return nvmet_pqt_uint_set(val, kp, 0, 1000000);
}

static const struct kernel_param_ops nvmet_pqt_idle_ops = {
	.set	= nvmet_pqt_idle_set,
	.get	= param_get_uint,
};
module_param_cb(pqt_idle_usecs, &nvmet_pqt_idle_ops, &pqt_idle_usecs, 0644);
MODULE_PARM_DESC(pqt_idle_usecs,
		 "microseconds the task stays awake with nothing to poll before it sleeps [0..1000000, default 1000]");

static int nvmet_pqt_ring_set(const char *val, const struct kernel_param *kp)
{
	return nvmet_pqt_uint_set(val, kp, 1, 65536);
}

static const struct kernel_param_ops nvmet_pqt_ring_ops = {
	.set	= nvmet_pqt_ring_set,
	.get	= param_get_uint,
};
module_param_cb(pqt_ring_size, &nvmet_pqt_ring_ops, &pqt_ring_size, 0644);
MODULE_PARM_DESC(pqt_ring_size,
		 "polled bios in flight at most; more go the ordinary way [1..65536, default 1024]");

static bool nvmet_pqt_bdev_pollable(struct block_device *bdev)
{
	struct request_queue *q = bdev_get_queue(bdev);

#ifdef BLK_FEAT_POLL
	return q->limits.features & BLK_FEAT_POLL;
#else
	return test_bit(QUEUE_FLAG_POLL, &q->queue_flags);
#endif
}

/*
 * Completion of the command whose bios are counted in head->pending: the last one completes the
 * command and then marks the head bio done (until then the head is alive for the others).
 */
static void nvmet_pqt_put_pending(struct nvmet_pqt_io *head, int nr)
{
	struct nvmet_req *req = head->req;
	blk_status_t status;

	if (!atomic_sub_and_test(nr, &head->pending))
		return;
	status = (__force blk_status_t)atomic_read(&head->status);
	nvmet_req_complete(req, blk_to_nvme_status(req, status));
	/* Orders the command's writes to the head before the task may see it done and put it. */
	smp_store_release(&head->done, 1);
}

static void nvmet_pqt_end_io(struct bio *bio)
{
	struct nvmet_pqt_io *io = container_of(bio, struct nvmet_pqt_io, bio);
	struct nvmet_pqt_io *head = io->head;

	/* In the task's poll (task context): not an interrupt that came while the task ran. */
	if (in_task() && current == READ_ONCE(nvmet_pqt.thread)) {
		io->reaped = true;
		nvmet_pqt.reaped++;
	}
	if (bio->bi_status)
		atomic_cmpxchg(&head->status, 0, (__force int)bio->bi_status);
	if (io != head) {
		/*
		 * The task may put a done bio at once: nothing of it is touched after this, and the
		 * release orders `reaped` before `done` for the task's acquire.
		 */
		smp_store_release(&io->done, 1);
	}
	nvmet_pqt_put_pending(head, 1);
}

noinline int nvmet_pqt_poll_bio(struct nvmet_pqt_task *task, struct bio *bio)
{
	DEFINE_IO_COMP_BATCH(iob);
	u64 before = task->reaped;

	task->polls++;
	bio_poll(bio, &iob, NVMET_PQT_POLL_FLAGS);
	if (iob.complete)
		iob.complete(&iob);
	return task->reaped - before;
}

static void nvmet_pqt_retire(struct nvmet_pqt_task *t, struct nvmet_pqt_io *io)
{
	struct nvmet_pqt_ns *pns = io->pns;

	list_del(&io->entry);
	WRITE_ONCE(pns->retired, pns->retired + 1);
	if (io->reaped)
		WRITE_ONCE(pns->reaped, pns->reaped + 1);
	if (!(io->bio.bi_opf & REQ_POLLED))
		WRITE_ONCE(pns->unpolled, pns->unpolled + 1);
	WRITE_ONCE(t->retired, t->retired + 1);
	bio_put(&io->bio);
	atomic_dec(&t->queued);
	/* The namespace may go once its count is 0: not touched after. */
	if (atomic_dec_and_test(&pns->inflight) && wq_has_sleeper(&t->drain_wq))
		wake_up_all(&t->drain_wq);
}

/* A pass over the ring: retires what is done, polls each hardware queue with bios in flight. */
static void nvmet_pqt_reap(struct nvmet_pqt_task *t, struct list_head *ring)
{
	struct block_device *polled_bdev[NVMET_PQT_PASS_QUEUES];
	blk_qc_t polled_cookie[NVMET_PQT_PASS_QUEUES];
	struct nvmet_pqt_io *io, *next;
	int nr_polled = 0, i;

	list_for_each_entry_safe(io, next, ring, entry) {
		/* Acquire: pairs with the release in end_io; a done bio is the task's alone. */
		if (!smp_load_acquire(&io->done)) {
			struct block_device *bdev = io->bio.bi_bdev;
			blk_qc_t cookie = READ_ONCE(io->bio.bi_cookie);

			/* Not dispatched yet, or not on a poll queue: nothing to poll for it. */
			if (cookie == BLK_QC_T_NONE)
				continue;
			for (i = 0; i < nr_polled; i++)
				if (polled_bdev[i] == bdev && polled_cookie[i] == cookie)
					break;
			if (i < nr_polled)
				continue;
			if (nr_polled < NVMET_PQT_PASS_QUEUES) {
				polled_bdev[nr_polled] = bdev;
				polled_cookie[nr_polled++] = cookie;
			}
			nvmet_pqt_poll_bio(t, &io->bio);
			/* As above: completed by this poll or by anyone else meanwhile. */
			if (!smp_load_acquire(&io->done))
				continue;
		}
		nvmet_pqt_retire(t, io);
	}
}

/* Moves what submitters queued to the ring's tail, oldest first. */
static void nvmet_pqt_take(struct nvmet_pqt_task *t, struct list_head *ring)
{
	struct llist_node *first = llist_del_all(&t->incoming);
	struct nvmet_pqt_io *io, *next;

	if (!first)
		return;
	llist_for_each_entry_safe(io, next, llist_reverse_order(first), node)
		list_add_tail(&io->entry, ring);
}

/* Adds the time since *mark to *bucket. */
static void nvmet_pqt_account(u64 *bucket, u64 *mark)
{
	u64 now = ktime_get_ns();

	WRITE_ONCE(*bucket, *bucket + (now - *mark));
	*mark = now;
}

/* Lets others run when they should; the time off the CPU counts as neither busy nor idle. */
static void nvmet_pqt_yield(u64 *mark)
{
	if (need_resched()) {
		cond_resched();
		*mark = ktime_get_ns();
	}
}

static void nvmet_pqt_sleep(struct nvmet_pqt_task *t, u64 *mark)
{
	WRITE_ONCE(t->state, NVMET_PQT_SLEEPING);
	set_current_state(TASK_IDLE);
	WRITE_ONCE(t->sleeping, true);
	/* Pairs with llist_add()'s full barrier in nvmet_pqt_queue() before it reads `sleeping`. */
	smp_mb();
	if (llist_empty(&t->incoming) && !kthread_should_stop())
		schedule();
	__set_current_state(TASK_RUNNING);
	WRITE_ONCE(t->sleeping, false);
	nvmet_pqt_account(&t->sleep_ns, mark);
	WRITE_ONCE(t->wakeups, t->wakeups + 1);
}

static int nvmet_pqt_thread(void *data)
{
	struct nvmet_pqt_task *t = data;
	u64 mark = ktime_get_ns(), idle_since = mark;
	LIST_HEAD(ring);

	for (;;) {
		nvmet_pqt_take(t, &ring);
		if (!list_empty(&ring)) {
			WRITE_ONCE(t->state, NVMET_PQT_POLLING);
			nvmet_pqt_reap(t, &ring);
			nvmet_pqt_account(&t->busy_ns, &mark);
			idle_since = mark;
			nvmet_pqt_yield(&mark);
			continue;
		}
		/* The module goes: every namespace is gone, nothing can be submitted any more. */
		if (kthread_should_stop())
			break;
		WRITE_ONCE(t->state, NVMET_PQT_IDLE);
		nvmet_pqt_account(&t->idle_ns, &mark);
		if (mark - idle_since < (u64)READ_ONCE(pqt_idle_usecs) * NSEC_PER_USEC) {
			cpu_relax();
			nvmet_pqt_yield(&mark);
			continue;
		}
		nvmet_pqt_sleep(t, &mark);
		idle_since = mark;
	}
	WRITE_ONCE(t->state, NVMET_PQT_NONE);
	return 0;
}

static void nvmet_pqt_queue(struct nvmet_pqt_task *t, struct nvmet_pqt_io *io)
{
	/* llist_add() is a fully ordered cmpxchg: the task sees the bio or we see it asleep. */
	llist_add(&io->node, &t->incoming);
	if (READ_ONCE(t->sleeping))
		wake_up_process(t->thread);
}

static int nvmet_pqt_start(void)
{
	struct task_struct *thread;

	lockdep_assert_held(&nvmet_pqt_mutex);
	if (nvmet_pqt.thread)
		return 0;
	thread = kthread_create(nvmet_pqt_thread, &nvmet_pqt, "nvmet-pqt");
	if (IS_ERR(thread)) {
		pr_err("cannot start the polling-queue task: %ld\n", PTR_ERR(thread));
		return PTR_ERR(thread);
	}
	if (READ_ONCE(pqt_affinity_core) >= 0)
		nvmet_pqt_bind(thread, READ_ONCE(pqt_affinity_core));
	WRITE_ONCE(nvmet_pqt.state, NVMET_PQT_IDLE);
	/* Published before any namespace can be switched on (release in nvmet_pqt_ns_on()). */
	WRITE_ONCE(nvmet_pqt.thread, thread);
	wake_up_process(thread);
	return 0;
}

/*
 * How many scatterlist entries from `sg` on (at most `left`) the next bio takes: as many as the
 * backing queue takes in one request (segments and bytes), at least one.
 */
static unsigned int nvmet_pqt_span(struct scatterlist *sg, unsigned int left,
				   unsigned int max_segs, unsigned int max_bytes)
{
	unsigned int n = 0, bytes = 0;

	while (n < left && n < max_segs && (!n || bytes + sg->length <= max_bytes)) {
		bytes += sg->length;
		n++;
		sg = sg_next(sg);
	}
	return n;
}

/* Gives back what nvmet_pqt_reserve() took, for bios never submitted. */
static void nvmet_pqt_unreserve(struct nvmet_pqt_ns *pns, unsigned int nr)
{
	atomic_sub(nr, &nvmet_pqt.queued);
	if (atomic_sub_and_test(nr, &pns->inflight) && wq_has_sleeper(&nvmet_pqt.drain_wq))
		wake_up_all(&nvmet_pqt.drain_wq);
}

/* Takes `nr` ring slots and counts them in the namespace, unless the ring is full or it is off. */
static bool nvmet_pqt_reserve(struct nvmet_pqt_ns *pns, unsigned int nr)
{
	if (atomic_add_return(nr, &nvmet_pqt.queued) > READ_ONCE(pqt_ring_size)) {
		atomic_sub(nr, &nvmet_pqt.queued);
		return false;
	}
	atomic_add(nr, &pns->inflight);
	/* Counted before `enabled` is read: pairs with the barrier in nvmet_pqt_ns_off(). */
	smp_mb__after_atomic();
	/* Acquire: pairs with the release in nvmet_pqt_ns_on(), after the task was published. */
	if (!smp_load_acquire(&pns->enabled)) {
		nvmet_pqt_unreserve(pns, nr);
		return false;
	}
	return true;
}

bool nvmet_pqt_submit_rw(struct nvmet_req *req, blk_opf_t opf, sector_t sector)
{
	struct nvmet_pqt_ns *pns = &req->ns->pqt;
	struct block_device *bdev = req->ns->bdev;
	struct request_queue *q = bdev_get_queue(bdev);
	unsigned int max_segs, max_bytes, left, nr_bios, n, i;
	struct nvmet_pqt_io *head = NULL, *io;
	struct scatterlist *sg;
	struct blk_plug plug;

	if (!READ_ONCE(pns->enabled))
		return false;
	if (req->metadata_len || is_pci_p2pdma_page(sg_page(req->sg)))
		goto fallback;

	max_segs = min_t(unsigned int, queue_max_segments(q), BIO_MAX_VECS);
	max_bytes = min_t(unsigned int, queue_max_sectors(q), UINT_MAX >> SECTOR_SHIFT);
	max_bytes <<= SECTOR_SHIFT;
	nr_bios = 0;
	for (sg = req->sg, left = req->sg_cnt; left; left -= n, nr_bios++) {
		n = nvmet_pqt_span(sg, left, max_segs, max_bytes);
		for (i = 0; i < n; i++)
			sg = sg_next(sg);
	}
	if (nr_bios > NVMET_PQT_MAX_BIOS || !nvmet_pqt_reserve(pns, nr_bios))
		goto fallback;
	atomic64_add(nr_bios, &pns->submitted);

	blk_start_plug(&plug);
	for (sg = req->sg, left = req->sg_cnt; left; left -= n) {
		struct bio *bio;

		n = nvmet_pqt_span(sg, left, max_segs, max_bytes);
		bio = bio_alloc_bioset(bdev, n, opf | REQ_POLLED, GFP_KERNEL, &nvmet_pqt_bio_set);
		io = container_of(bio, struct nvmet_pqt_io, bio);
		io->pns = pns;
		io->reaped = false;
		io->done = 0;
		if (!head) {
			head = io;
			io->req = req;
			atomic_set(&io->pending, nr_bios);
			atomic_set(&io->status, 0);
		}
		io->head = head;
		bio->bi_iter.bi_sector = sector;
		bio->bi_end_io = nvmet_pqt_end_io;
		for (i = 0; i < n; i++) {
			__bio_add_page(bio, sg_page(sg), sg->length, sg->offset);
			sector += sg->length >> SECTOR_SHIFT;
			sg = sg_next(sg);
		}
		nvmet_pqt_queue(&nvmet_pqt, io);
		submit_bio(bio);
	}
	blk_finish_plug(&plug);
	return true;

fallback:
	if (READ_ONCE(pns->enabled))
		atomic64_inc(&pns->fallback);
	return false;
}

/* Stops new polled submissions and waits until the task retired the namespace's polled bios. */
static int nvmet_pqt_ns_off(struct nvmet_ns *ns)
{
	int ret;

	lockdep_assert_held(&nvmet_pqt_mutex);
	WRITE_ONCE(ns->pqt.enabled, false);
	/* Cleared before the count is read: pairs with the barrier in nvmet_pqt_reserve(). */
	smp_mb();
	ret = wait_event_killable(nvmet_pqt.drain_wq, !atomic_read(&ns->pqt.inflight));
	if (ret)
		pr_warn("ns %u: stopped waiting for %d polled bios (they are still polled)\n",
			ns->nsid, atomic_read(&ns->pqt.inflight));
	return ret ? -EINTR : 0;
}

static int nvmet_pqt_ns_on(struct nvmet_ns *ns)
{
	int ret;

	lockdep_assert_held(&nvmet_pqt_mutex);
	ret = nvmet_pqt_start();
	if (ret)
		return ret;
	mutex_lock(&ns->subsys->lock);
	if (!ns->enabled) {
		pr_info("ns %u: not enabled: enable it before polled submission\n", ns->nsid);
		ret = -EINVAL;
	} else if (!ns->bdev) {
		pr_warn("ns %u: %s is not served as a block device: no polled submission\n",
			ns->nsid, ns->device_path);
		ret = -EOPNOTSUPP;
	} else if (!nvmet_pqt_bdev_pollable(ns->bdev)) {
		pr_warn("ns %u: %pg has no poll queue (queue/io_poll 0): polled submission refused\n",
			ns->nsid, ns->bdev);
		ret = -EOPNOTSUPP;
	} else {
		/* Release: a submitter that sees it on also sees the task (nvmet_pqt_start()). */
		smp_store_release(&ns->pqt.enabled, true);
	}
	mutex_unlock(&ns->subsys->lock);
	return ret;
}

void nvmet_pqt_ns_disable(struct nvmet_ns *ns)
{
	lockdep_assert_held(&ns->subsys->lock);
	/* Every command of the namespace completed: only the task's retiring is left. */
	WRITE_ONCE(ns->pqt.enabled, false);
	wait_event(nvmet_pqt.drain_wq, !atomic_read(&ns->pqt.inflight));
}

static ssize_t nvmet_pqt_enable_show(struct config_item *item, char *page)
{
	return snprintf(page, PAGE_SIZE, "%d\n", READ_ONCE(to_nvmet_ns(item)->pqt.enabled));
}

static ssize_t nvmet_pqt_enable_store(struct config_item *item, const char *page, size_t count)
{
	struct nvmet_ns *ns = to_nvmet_ns(item);
	bool enable;
	int ret;

	if (kstrtobool(page, &enable))
		return -EINVAL;
	mutex_lock(&nvmet_pqt_mutex);
	ret = enable ? nvmet_pqt_ns_on(ns) : nvmet_pqt_ns_off(ns);
	mutex_unlock(&nvmet_pqt_mutex);
	return ret ? ret : count;
}

struct configfs_attribute nvmet_ns_attr_pqt_enable = {
	.ca_name	= "pqt_enable",
	.ca_owner	= THIS_MODULE,
	.ca_mode	= 0644,
	.show		= nvmet_pqt_enable_show,
	.store		= nvmet_pqt_enable_store,
};

static ssize_t nvmet_pqt_ns_stats_show(struct config_item *item, char *page)
{
	struct nvmet_pqt_ns *pns = &to_nvmet_ns(item)->pqt;

	return snprintf(page, PAGE_SIZE, "%lld %llu %llu %llu %lld %d\n",
			(long long)atomic64_read(&pns->submitted), READ_ONCE(pns->reaped),
			READ_ONCE(pns->retired), READ_ONCE(pns->unpolled),
			(long long)atomic64_read(&pns->fallback), atomic_read(&pns->inflight));
}

struct configfs_attribute nvmet_ns_attr_pqt_stats = {
	.ca_name	= "pqt_stats",
	.ca_owner	= THIS_MODULE,
	.ca_mode	= 0444,
	.show		= nvmet_pqt_ns_stats_show,
};

/* /sys/module/nvmet/pqt/: the task's state and counters. */
static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", nvmet_pqt_state_names[READ_ONCE(nvmet_pqt.state)]);
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct nvmet_pqt_task *t = &nvmet_pqt;

	return sysfs_emit(buf, "%llu %llu %llu %llu %llu %llu %llu %d\n",
			  READ_ONCE(t->reaped), READ_ONCE(t->polls), READ_ONCE(t->retired),
			  READ_ONCE(t->busy_ns), READ_ONCE(t->idle_ns), READ_ONCE(t->sleep_ns),
			  READ_ONCE(t->wakeups), atomic_read(&t->queued));
}

static struct kobj_attribute nvmet_pqt_state_attr = __ATTR_RO(state);
static struct kobj_attribute nvmet_pqt_stats_attr = __ATTR_RO(stats);

static struct attribute *nvmet_pqt_attrs[] = {
	&nvmet_pqt_state_attr.attr,
	&nvmet_pqt_stats_attr.attr,
	NULL,
};

static const struct attribute_group nvmet_pqt_group = {
	.attrs = nvmet_pqt_attrs,
};

int nvmet_pqt_init(void)
{
	int ret;

	ret = bioset_init(&nvmet_pqt_bio_set, BIO_POOL_SIZE, offsetof(struct nvmet_pqt_io, bio),
			  BIOSET_NEED_BVECS);
	if (ret)
		return ret;
#ifdef MODULE
	nvmet_pqt_kobj = kobject_create_and_add("pqt", &THIS_MODULE->mkobj.kobj);
#else
	nvmet_pqt_kobj = kobject_create_and_add("nvmet-pqt", kernel_kobj);
#endif
	if (!nvmet_pqt_kobj) {
		ret = -ENOMEM;
		goto out_bioset;
	}
	ret = sysfs_create_group(nvmet_pqt_kobj, &nvmet_pqt_group);
	if (ret)
		goto out_kobj;
	return 0;

out_kobj:
	kobject_put(nvmet_pqt_kobj);
out_bioset:
	bioset_exit(&nvmet_pqt_bio_set);
	return ret;
}

void nvmet_pqt_exit(void)
{
	/* Every namespace is gone: each waited until the task retired its bios. */
	if (nvmet_pqt.thread)
		kthread_stop(nvmet_pqt.thread);
	sysfs_remove_group(nvmet_pqt_kobj, &nvmet_pqt_group);
	kobject_put(nvmet_pqt_kobj);
	bioset_exit(&nvmet_pqt_bio_set);
}
