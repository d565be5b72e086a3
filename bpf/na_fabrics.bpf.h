/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * NVMe over Fabrics: the two layers the PCIe programs cannot see (included by nvme_adapt.bpf.c, one object).
 *
 * Host: a fabrics controller (tcp, rdma, fc, loop) has no nvme_irq, nvme_poll or nvme_sq: its transport
 * reaps completions itself (nvme_tcp's io_work, its poll queues' nvme_tcp_poll). nvme_complete_rq in
 * nvme_core fires for every transport; this program counts there the completions of fabrics controllers
 * only (ops->flags & NVME_F_FABRICS), under the controller's kernel nvme key (instance, qid), so the PCIe
 * queues are still counted once, by the nvme programs.
 *
 * Target: nvmet_req_complete fires once per request the target completes back to its host, on the
 * target's queue (nvmet_sq): keyed by the target controller (cntlid) and qid, source NA_SOURCE_NVMET.
 * Neither layer tells interrupt from poll in BPF: the mode is the queue's as discovery knows it.
 */
#ifndef NVME_ADAPT_FABRICS_BPF_H
#define NVME_ADAPT_FABRICS_BPF_H

#include "na_queue.bpf.h"

#define NA_NVME_F_FABRICS 1U /* drivers/nvme/host/nvme.h */

SEC("tp_btf/nvme_complete_rq")
int BPF_PROG(na_fabrics_host_complete_btf, struct request *req)
{
	struct nvme_request *nreq;
	struct nvme_ctrl *ctrl;
	struct na_queue_key key = {.source = NA_SOURCE_KERNEL_NVME};

	if (!req) /* trusted_ptr_or_null on 6.12 and later */
		return 0;
	nreq = (void *)req + bpf_core_type_size(struct request);
	ctrl = BPF_CORE_READ(nreq, ctrl);
	if (!ctrl || !(BPF_CORE_READ(ctrl, ops, flags) & NA_NVME_F_FABRICS))
		return 0;
	key.ctrl = BPF_CORE_READ(ctrl, instance);
	if (req->q && req->q->queuedata && req->mq_hctx) /* nvme_req_qid(): 0 on the admin queue */
		key.qid = req->mq_hctx->queue_num + 1;
	na_account_key(&key, na_completion_stamp(), 1, req->__data_len, NA_MODE_UNKNOWN);
	return 0;
}

SEC("tp_btf/nvmet_req_complete")
int BPF_PROG(na_fabrics_target_complete_btf, struct nvmet_req *req)
{
	struct nvmet_sq *sq;
	struct nvmet_ctrl *ctrl;
	struct na_queue_key key = {.source = NA_SOURCE_NVMET};

	if (!req)
		return 0;
	sq = req->sq;
	if (!sq)
		return 0;
	ctrl = sq->ctrl;
	if (!ctrl) /* a Connect not yet installed: the queue has no controller (nor qid) yet */
		return 0;
	key.ctrl = ctrl->cntlid;
	key.qid = sq->qid;
	na_account_key(&key, na_completion_stamp(), 1, req->transfer_len, NA_MODE_UNKNOWN);
	return 0;
}

#endif /* NVME_ADAPT_FABRICS_BPF_H */
