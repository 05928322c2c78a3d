/*
 * erdma (Alibaba Elastic RDMA, rdma/erdma-abi.h), an iWARP RNIC: the
 * context answers three doorbell pages (SQ, RQ, CQ) behind mmap keys and
 * how the SQ doorbells are shared (a whole page here: the SQ doorbell of
 * QP n is at (n & 0x1f) * 128 in it); CQ and QP rings live in the
 * process's own memory (the create commands carry their address, length
 * and doorbell record); a CQ answers its number and depth, a QP its number
 * and queue depths and where the RQ starts in the ring.  RC QPs only, no
 * SRQ.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/erdma-abi.h>

#include "standin.h"

#define PG 4096ULL
#define ERDMA_DEV_ID 0x107f
#define ERDMA_SDB_PAGE 0
#define ERDMA_MAX_CQE (1u << 22)
#define ERDMA_MAX_WR 4096u
#define ERDMA_MAX_SEND_SGE 6u
#define ERDMA_MAX_RECV_SGE 1u
#define ERDMA_MAX_INLINE 96u
#define ERDMA_WQEBB_PER_SQE 4u
#define ERDMA_SQEBB 32u
#define ERDMA_RQE 32u
#define ERDMA_CQE 32u

/* The mmap keys of the context's doorbell pages. */
#define KEY_SDB (1 * PG)
#define KEY_RDB (2 * PG)
#define KEY_CDB (3 * PG)

/* The QP number the core will give the QP being made (uverbs.c new_qpn):
 * the kernel driver's qp_id is the QP number. */
static uint32_t next_qpn(const struct sti_ctx *ctx)
{
	return ctx->next_qpn ? ctx->next_qpn : 0x100 + 0x1000 * (uint32_t)ctx->dev.index;
}

static int hook(struct sti_req *r)
{
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct erdma_uresp_alloc_ctx resp = { 0 };
		resp.dev_id = ERDMA_DEV_ID;
		resp.sdb_type = ERDMA_SDB_PAGE;
		resp.sdb_offset = 0;
		resp.sdb = KEY_SDB;
		resp.rdb = KEY_RDB;
		resp.cdb = KEY_CDB;
		sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct erdma_ureq_create_cq cmd = { 0 };
		struct erdma_uresp_create_cq resp = { 0 };
		uint32_t depth;
		if (!r->uin || r->uin_len < sizeof(cmd))
			return 22;
		memcpy(&cmd, r->uin, sizeof(cmd));
		/* The provider asks a power of two; the core rounded it to
		 * 2^n - 1: the depth is the power of two asked. */
		depth = sti_pow2((r->cqe + 1) / 2);
		if (depth > ERDMA_MAX_CQE || (uint64_t)cmd.qbuf_len < (uint64_t)depth * ERDMA_CQE)
			return 22;
		r->cqe = depth;
		resp.cq_id = 1 + (r->obj ? r->obj->handle : 0);
		resp.num_cqe = depth;
		sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct erdma_ureq_create_qp cmd = { 0 };
		struct erdma_uresp_create_qp resp = { 0 };
		uint64_t sq_len;
		if (r->qp_type != IB_UVERBS_QPT_RC)
			return 95; /* EOPNOTSUPP */
		if (!r->uin || r->uin_len < sizeof(cmd))
			return 22;
		memcpy(&cmd, r->uin, sizeof(cmd));
		/* the limits are the core model's (lim); an empty queue is erdma's */
		if (!r->max_send_wr || !r->max_recv_wr)
			return 22;
		resp.qp_id = next_qpn(r->ctx);
		resp.num_sqe = sti_pow2(r->max_send_wr * ERDMA_WQEBB_PER_SQE);
		resp.num_rqe = sti_pow2(r->max_recv_wr);
		sq_len = ((uint64_t)resp.num_sqe * ERDMA_SQEBB + PG - 1) & ~(PG - 1);
		resp.rq_offset = (uint32_t)sq_len;
		if ((uint64_t)cmd.qbuf_len < sq_len + (uint64_t)resp.num_rqe * ERDMA_RQE)
			return 22;
		sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_db(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	if (off != KEY_SDB && off != KEY_RDB && off != KEY_CDB)
		return 22;
	return len == PG ? 0 : 22;
}

/* What erdma_query_device reports and erdma_create_cq / erdma_create_qp
 * enforce (EINVAL above). */
static const struct sti_limits erdma_lim = {
	.max_send_wr = ERDMA_MAX_WR, .max_recv_wr = ERDMA_MAX_WR,
	.max_send_sge = ERDMA_MAX_SEND_SGE, .max_recv_sge = ERDMA_MAX_RECV_SGE,
	.max_inline = ERDMA_MAX_INLINE, .max_cqe = ERDMA_MAX_CQE,
	/* erdma_reg_user_mr: EINVAL past the device's max_mr_size (a power of
	 * two the device gives: 2^40 here), before the memory is pinned */
	.max_mr_size = 1ULL << 40, .mr_size_err = EINVAL,
};

const struct sti_driver sti_drv_erdma = {
	.lim = &erdma_lim,
	.name = "erdma",
	.driver_id = RDMA_DRIVER_ERDMA,
	.vendor_id = 0x1ded,
	.vendor_part_id = ERDMA_DEV_ID,
	.node_type = 4,
	.link_layer = 2,
	/* What the kernel driver has not: the core answers EOPNOTSUPP. */
	.lacks = STI_LACKS(REREG_MR) | STI_LACKS(ALLOC_MW) | STI_LACKS(RESIZE_CQ) |
		 STI_LACKS(CREATE_SRQ) | STI_LACKS(MODIFY_SRQ) | STI_LACKS(CREATE_AH) | STI_LACKS(OPEN_XRCD) |
		 STI_LACKS(CREATE_WQ) | STI_LACKS(MODIFY_WQ) | STI_LACKS(CREATE_RWQ_IND_TBL) |
		 STI_LACKS(CREATE_FLOW) | STI_LACKS(ALLOC_DM) | STI_LACKS(REG_DM_MR),
	.hook = hook,
	.mmap = mmap_db,
};
