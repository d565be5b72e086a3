/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nvmet polling-queue task (pqt): the interface between nvmet and nvmet-pqt.c.
 *
 * nvmet.h embeds a struct nvmet_pqt_ns in every struct nvmet_ns (zeroed with it: polled submission
 * off, nothing counted) and includes this file. io-cmd-bdev.c offers each read or write of a
 * block-device namespace to nvmet_pqt_submit_rw() before it builds its own bio; core.c calls
 * nvmet_pqt_init() and nvmet_pqt_exit() at module load and unload and nvmet_pqt_ns_disable() before
 * a namespace lets its block device go; configfs.c lists the two namespace attributes. Everything
 * else (the task, the ring, the attributes' semantics, the counters) lives in nvmet-pqt.c, which is
 * the same for every kernel the patches cover.
 */
#ifndef _NVMET_PQT_H
#define _NVMET_PQT_H

#include <linux/atomic.h>
#include <linux/blk_types.h>
#include <linux/types.h>

struct bio;
struct configfs_attribute;
struct nvmet_ns;
struct nvmet_pqt_task;
struct nvmet_req;

/*
 * Per namespace. `enabled` and the submit-side counters are written by the command's submitter, the
 * others by the task alone (when it retires a bio); readers use READ_ONCE.
 */
struct nvmet_pqt_ns {
	bool		enabled;	/* new reads and writes are submitted polled */
	atomic_t	inflight;	/* polled bios not retired by the task yet */
	atomic64_t	submitted;	/* bios submitted polled */
	atomic64_t	fallback;	/* commands submitted the ordinary way while enabled */
	u64		reaped;		/* retired bios whose completion ran in the task's poll */
	u64		retired;	/* polled bios retired by the task (completed anywhere) */
	u64		unpolled;	/* retired bios the block layer took off the poll queue */
};

int nvmet_pqt_init(void);
void nvmet_pqt_exit(void);

/*
 * Submits a read or write of a block-device namespace as polled bios when the namespace has polled
 * submission on and the command can be polled; returns false (nothing done) when the caller must
 * submit it the ordinary way. `opf` and `sector` are what the caller would submit.
 */
bool nvmet_pqt_submit_rw(struct nvmet_req *req, blk_opf_t opf, sector_t sector);

/*
 * Turns polled submission off for a namespace whose commands have all completed and waits until the
 * task let go of its bios. Called with the subsystem's lock held, before the block device is
 * released.
 */
void nvmet_pqt_ns_disable(struct nvmet_ns *ns);

/*
 * The task's only reap: polls the hardware queue `bio` was dispatched to and returns how many
 * polled bios of nvmet completed in this call (for tracers: fexit on it attributes the task's
 * completions).
 */
int nvmet_pqt_poll_bio(struct nvmet_pqt_task *task, struct bio *bio);

/* configfs: namespaces/<nsid>/pqt_enable (rw) and pqt_stats (ro). */
extern struct configfs_attribute nvmet_ns_attr_pqt_enable;
extern struct configfs_attribute nvmet_ns_attr_pqt_stats;

#endif /* _NVMET_PQT_H */
