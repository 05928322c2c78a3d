/*
 * rxe (Soft-RoCE, rdma/rdma_user_rxe.h): CQs, QPs and SRQs are queues the
 * provider maps from the command fd; each create answers with the queue's
 * mmap offset and size (struct mminfo), and the mapped queue starts with
 * its header (struct rxe_queue_buf: element size, index mask, producer and
 * consumer indices).  The stand-in keeps one offset per queue and writes
 * the header when the provider maps it.  It remembers the latest MAXQ
 * queues (a ring: a program that creates and destroys queues for ever, as
 * the control-path bench does, maps each right after creating it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "standin.h"

#define MAXQ 256

struct rxe_q {
	uint64_t off;
	uint32_t log2_elem, slots;
};

struct rxe_ctx {
	uint64_t next_off;
	struct rxe_q q[MAXQ];
	unsigned nq;
};

static struct rxe_ctx *rctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct rxe_ctx));
}

/* A new queue of `n` elements of 2^log2 bytes: its mminfo. */
static int queue(struct sti_ctx *ctx, uint32_t n, uint32_t log2, struct mminfo *mi)
{
	struct rxe_ctx *r = rctx(ctx);
	uint32_t slots = sti_pow2(n + 1);

	if (!r)
		return 12; /* ENOMEM */
	r->next_off += 0x1000;
	mi->offset = r->next_off << 8;
	mi->size = (uint32_t)(sizeof(struct rxe_queue_buf) + ((uint64_t)slots << log2));
	r->q[r->nq++ % MAXQ] = (struct rxe_q){ mi->offset, log2, slots };
	return 0;
}

static int hook(struct sti_req *r)
{
	switch (r->op) {
	case STI_OP_CREATE_CQ:
	case STI_OP_RESIZE_CQ: {
		struct rxe_create_cq_resp resp = { 0 };
		int err;
		if (r->uout_len < sizeof(resp))
			return 0;
		err = queue(r->ctx, r->cqe, 6, &resp.mi);
		if (err)
			return err;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct rxe_create_qp_resp resp = { 0 };
		int err;
		if (r->uout_len < sizeof(resp))
			return 0;
		if (r->max_recv_wr)
			err = queue(r->ctx, r->max_recv_wr, 7, &resp.rq_mi);
		else
			err = 0;
		if (!err)
			err = queue(r->ctx, r->max_send_wr, 9, &resp.sq_mi);
		if (err)
			return err;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		struct rxe_create_srq_resp resp = { 0 };
		int err;
		if (r->uout_len < sizeof(resp))
			return 0;
		err = queue(r->ctx, r->max_recv_wr, 7, &resp.mi);
		if (err)
			return err;
		resp.srq_num = r->obj ? 0x40 + r->obj->handle : 0;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	case STI_OP_MODIFY_SRQ: {
		/* A resize (IB_SRQ_MAX_WR): the kernel makes a new queue and
		 * writes its mmap info where the command's mmap_info_addr
		 * points (the provider's memory: this process's). */
		struct rxe_modify_srq_cmd cmd;
		struct mminfo mi;
		int err;
		if (!(r->attr_mask & 1u))
			return 0;
		if (!r->uin || r->uin_len < sizeof(cmd))
			return 22;
		memcpy(&cmd, r->uin, sizeof(cmd));
		if (!cmd.mmap_info_addr)
			return 14; /* EFAULT */
		err = queue(r->ctx, r->max_recv_wr, 7, &mi);
		if (err)
			return err;
		memcpy((void *)(uintptr_t)cmd.mmap_info_addr, &mi, sizeof(mi));
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_q(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct rxe_ctx *r = rctx(ctx);

	/* the latest first: a queue is mapped right after its create */
	for (unsigned k = 0; r && k < r->nq && k < MAXQ; k++) {
		const struct rxe_q *q = &r->q[(r->nq - 1 - k) % MAXQ];
		if (q->off == off) {
			struct rxe_queue_buf *b = mem;
			if (len < sizeof(*b))
				return 22; /* EINVAL */
			b->log2_elem_size = q->log2_elem;
			b->index_mask = q->slots - 1;
			return 0;
		}
	}
	return 22;
}

/* rxe's pools refuse an object past their max_elem with EINVAL
 * (__rxe_add_to_pool), an MR with ENOMEM (rxe_alloc's NULL) */
static const struct sti_limits rxe_lim = {
	.count_err = EINVAL, .mr_count_err = ENOMEM,
};

const struct sti_driver sti_drv_rxe = {
	.lim = &rxe_lim,
	.name = "rxe",
	.driver_id = RDMA_DRIVER_RXE,
	.vendor_id = 0xffffff,
	.vendor_part_id = 0,
	.node_type = 1,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_q,
};
