/*
 * irdma (Intel E810 / X722 iWARP+RoCE, rdma/irdma-abi.h), modelled as a
 * GEN_2 (E810) device.  The queues live in user memory the provider
 * registers itself (REG_MR with irdma_mem_reg_req), so the driver data is
 * small: alloc_ucontext answers the device's limits and the mmap key of
 * the doorbell page, create_cq/create_qp/alloc_pd/create_ah their ids and
 * the sizes granted, modify_qp "no push page".
 *
 * The provider maps one page: the doorbell page at db_mmap_key.  Nothing
 * is read from it, so it stays zero.
 *
 * Requests: rdma-core 44's provider sends an 8-byte irdma_alloc_ucontext_req
 * (no comp_mask) with its reserved fields uninitialized; the answer here
 * depends on userspace_ver and (when sent) comp_mask only, never on the
 * reserved bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>

#include "standin.h"

/* The ABI structures as rdma-core 65's kernel-headers/rdma/irdma-abi.h
 * lays them out (the installed header may be older). */
struct irdma_uctx_req_m {
	uint32_t rsvd32;
	uint8_t userspace_ver;
	uint8_t rsvd8[3];
	uint64_t comp_mask;
};

struct irdma_uctx_resp_m {
	uint32_t max_pds;
	uint32_t max_qps;
	uint32_t wq_size;
	uint8_t kernel_ver;
	uint8_t rsvd[3];
	uint64_t feature_flags;
	uint64_t db_mmap_key;
	uint32_t max_hw_wq_frags;
	uint32_t max_hw_read_sges;
	uint32_t max_hw_inline;
	uint32_t max_hw_rq_quanta;
	uint32_t max_hw_wq_quanta;
	uint32_t min_hw_cq_size;
	uint32_t max_hw_cq_size;
	uint16_t max_hw_sq_chunk;
	uint8_t hw_rev;
	uint8_t rsvd2;
	uint64_t comp_mask;
	uint16_t min_hw_wq_size;
	uint8_t rsvd3[2];
	uint32_t max_hw_srq_quanta;
};

struct irdma_cq_resp_m {
	uint32_t cq_id;
	uint32_t cq_size;
};

struct irdma_qp_resp_m {
	uint32_t qp_id;
	uint32_t actual_sq_size;
	uint32_t actual_rq_size;
	uint32_t irdma_drv_opt;
	uint16_t push_idx;
	uint8_t lsmm;
	uint8_t rsvd;
	uint32_t qp_caps;
};

struct irdma_id_resp_m {
	uint32_t id;
	uint8_t rsvd[4];
};

#define UCTX_USE_RAW_ATTR 1u
#define UCTX_MIN_HW_WQ_SIZE 2u
#define FEATURE_RTS_AE 1u
#define FEATURE_CQ_RESIZE 2u
#define GEN_2 2
#define MAX_WQ_QUANTA 32768u
#define MIN_WQ_SIZE 8u
#define SQ_RSVD 258u
#define RQ_RSVD 1u
#define DB_KEY 0x0ULL
#define PAGE 4096

struct irdma_ctx {
	int raw;              /* the context asked for raw queue sizes */
	uint32_t next_cq, next_qp, next_pd, next_ah;
};

static struct irdma_ctx *ictx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct irdma_ctx));
}

/* The WQE size shift for a queue of `sge` fragments and `inl` inline
 * bytes (GEN_2). */
static uint32_t wqe_shift(uint32_t sge, uint32_t inl)
{
	if (sge <= 1 && inl <= 8)
		return 0;
	if (sge < 4 && inl <= 39)
		return 1;
	if (sge < 8 && inl <= 101)
		return 2;
	return 3;
}

/* Granted size of a queue (in WRs) for `wr` requested: with raw
 * attributes `wr` is a WR count, else the provider's quanta already. */
static int wq_size(int raw, uint32_t wr, uint32_t shift, uint32_t rsvd, uint32_t *out)
{
	uint32_t depth;

	if (!raw) {
		*out = wr;
		return 0;
	}
	depth = sti_pow2((wr << shift) + rsvd);
	if (depth < (MIN_WQ_SIZE << shift))
		depth = MIN_WQ_SIZE << shift;
	else if (depth > MAX_WQ_QUANTA)
		return 22; /* EINVAL */
	*out = depth >> shift;
	return 0;
}

static int hook(struct sti_req *r)
{
	struct irdma_ctx *c = ictx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct irdma_uctx_req_m q = { 0 };
		struct irdma_uctx_resp_m a = { 0 };
		if (r->uin_len < 8)
			return 22;
		memcpy(&q, r->uin, r->uin_len < sizeof(q) ? r->uin_len : sizeof(q));
		if (q.userspace_ver < 4 || q.userspace_ver > 5)
			return 22;
		c->raw = r->uin_len >= sizeof(q) && (q.comp_mask & UCTX_USE_RAW_ATTR);
		a.max_pds = 262144;
		a.max_qps = 65536;
		a.wq_size = 0;
		a.kernel_ver = q.userspace_ver;
		a.feature_flags = FEATURE_RTS_AE | FEATURE_CQ_RESIZE;
		a.db_mmap_key = DB_KEY;
		a.max_hw_wq_frags = 13;
		a.max_hw_read_sges = 13;
		a.max_hw_inline = 101;
		a.max_hw_rq_quanta = MAX_WQ_QUANTA;
		a.max_hw_wq_quanta = MAX_WQ_QUANTA;
		a.min_hw_cq_size = 1;
		a.max_hw_cq_size = 1048575;
		a.max_hw_sq_chunk = 8;
		a.hw_rev = GEN_2;
		a.comp_mask = UCTX_USE_RAW_ATTR | UCTX_MIN_HW_WQ_SIZE;
		a.min_hw_wq_size = MIN_WQ_SIZE;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		struct irdma_id_resp_m a = { .id = 1 + c->next_pd++ };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_AH: {
		struct irdma_id_resp_m a = { .id = 1 + c->next_ah++ };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct irdma_cq_resp_m a = { .cq_id = 1 + c->next_cq++, .cq_size = r->cqe + 1 };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct irdma_qp_resp_m a = { 0 };
		uint32_t sqs = wqe_shift(r->max_send_sge, r->max_inline), rqs = wqe_shift(r->max_recv_sge, 0);
		int err;
		if (r->qp_type != 2 /* RC */ && r->qp_type != 4 /* UD */)
			return 95; /* EOPNOTSUPP */
		err = wq_size(c->raw, r->max_send_wr, sqs, SQ_RSVD, &a.actual_sq_size);
		if (!err)
			err = wq_size(c->raw, r->max_recv_wr, rqs, RQ_RSVD, &a.actual_rq_size);
		if (err)
			return err;
		a.qp_id = 2 + c->next_qp++;
		a.lsmm = 1;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_SRQ:
		return 95; /* GEN_2 has no SRQ */
	default:
		return 0; /* modify_qp: no push page (push_valid 0) */
	}
}

static int mmap_db(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	(void)ctx;
	(void)mem;
	if (off == DB_KEY && len == PAGE)
		return 0;
	return 22;
}

/*
 * Bytes of irdma's requests that the provider leaves as its stack had them
 * (rdma-core 44 to 65 declare the command structs without an initializer):
 * GET_CONTEXT's rsvd32 and rsvd8[3] (struct irdma_alloc_ucontext_req), and
 * of REG_MR's struct irdma_mem_reg_req the page counts that its reg_type
 * does not use (a plain memory region uses none).  The kernel reads none
 * of them; the log clears them.
 */
static void norm_in(uint32_t cmd, uint8_t *b, size_t len)
{
	if (sti_cmd_is(cmd, IB_USER_VERBS_CMD_GET_CONTEXT, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT) &&
	    len >= 8) {
		memset(b, 0, 4);
		memset(b + 5, 0, 3);
	} else if (sti_cmd_is(cmd, IB_USER_VERBS_CMD_REG_MR, UVERBS_OBJECT_MR, 5 /* REG_MR (kernel 6.15) */) &&
		   len >= 8) {
		uint16_t type;
		memcpy(&type, b, 2);
		if (type == 0) /* IRDMA_MEMREG_TYPE_MEM */
			memset(b + 2, 0, 6);
		else if (type == 1) /* IRDMA_MEMREG_TYPE_QP: no cq_pages */
			memset(b + 2, 0, 2);
		else if (type == 2) /* IRDMA_MEMREG_TYPE_CQ: no rq/sq pages */
			memset(b + 4, 0, 4);
	}
}

/* The CQ depth the device reports is the one its context answer gives the
 * provider (max_hw_cq_size), which the provider checks before it asks. */
static const struct sti_limits irdma_lim = {
	.max_cqe = 1048575,
	/* irdma_reg_user_mr: EINVAL past the hardware's max_mr_size
	 * (IRDMA_MAX_MR_SIZE, 2^45), before the memory is pinned */
	.max_mr_size = 1ULL << 45, .mr_size_err = EINVAL,
};

const struct sti_driver sti_drv_irdma = {
	.lim = &irdma_lim,
	.name = "irdma",
	.driver_id = RDMA_DRIVER_IRDMA,
	.vendor_id = 0x8086,
	.vendor_part_id = 0x124c,
	.node_type = 4,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_db,
	.norm_in = norm_in,
};
