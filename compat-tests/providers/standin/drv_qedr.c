/*
 * qedr (QLogic/Marvell FastLinQ 41000/45000, rdma/qedr-abi.h), a RoCE
 * port, without DPM (direct WQE writes to the doorbell BAR).  Queues
 * (chains) live in user memory passed in the create requests.
 *
 * Mappings: the context's doorbell range (db_pa, db_size: the doorbell
 * page of the context's DPI) at offset 0, and, when the context asked for
 * doorbell recovery (QEDR_ALLOC_UCTX_DB_REC), one doorbell-recovery page
 * per CQ and per SQ/RQ at the offset the create answers (db_rec_addr).
 * The provider writes its doorbell data into those pages; nothing is read
 * from them.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>

#include "standin.h"

struct qedr_uctx_resp_m {
	uint64_t db_pa;
	uint32_t db_size;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_srq_wr;
	uint32_t sges_per_send_wr;
	uint32_t sges_per_recv_wr;
	uint32_t sges_per_srq_wr;
	uint32_t max_cqes;
	uint8_t dpm_flags;
	uint8_t wids_enabled;
	uint16_t wid_count;
	uint16_t ldpm_limit_size;
	uint8_t edpm_trans_size;
	uint8_t reserved;
	uint16_t edpm_limit_size;
	uint8_t padding[6];
};

struct qedr_pd_resp_m {
	uint32_t pd_id;
	uint32_t reserved;
};

struct qedr_cq_resp_m {
	uint32_t db_offset;
	uint16_t icid;
	uint16_t reserved;
	uint64_t db_rec_addr;
};

struct qedr_qp_resp_m {
	uint32_t qp_id;
	uint32_t atomic_supported;
	uint32_t sq_db_offset;
	uint16_t sq_icid;
	uint32_t rq_db_offset;
	uint16_t rq_icid;
	uint32_t rq_db2_offset;
	uint32_t reserved;
	uint64_t sq_db_rec_addr;
	uint64_t rq_db_rec_addr;
};

struct qedr_srq_resp_m {
	uint16_t srq_id;
	uint16_t reserved0;
	uint32_t reserved1;
};

#define PG 4096
#define DB_PA 0x0ULL
#define DB_SIZE 0x2000u
#define UCTX_DB_REC 2u
/* Doorbell offsets within the DPI page (the kernel's DQ_PWM_OFFSET_*). */
#define DB_CQ_OFF 0x608u
#define DB_XCM_OFF 0x4c8u
#define DB_TCM_OFF 0x488u
#define MAXREC 1024

struct qedr_ctx {
	int db_rec;
	uint64_t next_key;                 /* the next doorbell-recovery page's offset */
	uint64_t keys[MAXREC];
	unsigned nkeys;
	uint32_t next_pd, next_icid, next_srq;
};

static struct qedr_ctx *qctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct qedr_ctx));
}

/* A doorbell-recovery page's mmap offset, or 0 without recovery. */
static uint64_t rec_page(struct qedr_ctx *c)
{
	if (!c->db_rec || c->nkeys == MAXREC)
		return 0;
	c->keys[c->nkeys++] = c->next_key;
	c->next_key += PG;
	return c->keys[c->nkeys - 1];
}

/* The QP number the core (uverbs.c) gives the QP being made. */
static uint32_t next_qpn(struct sti_ctx *ctx)
{
	return ctx->next_qpn ? ctx->next_qpn : 0x100 + 0x1000 * (uint32_t)ctx->dev.index;
}

static int hook(struct sti_req *r)
{
	struct qedr_ctx *c = qctx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct qedr_uctx_resp_m a = { 0 };
		uint32_t flags = 0;
		if (r->uin_len >= 4)
			memcpy(&flags, r->uin, 4);
		c->db_rec = !!(flags & UCTX_DB_REC);
		c->next_key = DB_PA + DB_SIZE;
		a.db_pa = DB_PA;
		a.db_size = DB_SIZE;
		a.max_send_wr = 0x8000;
		a.max_recv_wr = 0x8000;
		a.max_srq_wr = 0x8000;
		a.sges_per_send_wr = 4;
		a.sges_per_recv_wr = 4;
		a.sges_per_srq_wr = 4;
		a.max_cqes = 0x8000;
		a.dpm_flags = 0; /* QEDR_DPM_TYPE_NONE */
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		struct qedr_pd_resp_m a = { .pd_id = 1 + c->next_pd++ };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct qedr_cq_resp_m a = { 0 };
		if (!r->uin_len)
			return 22; /* EINVAL */
		a.db_offset = DB_CQ_OFF;
		a.icid = (uint16_t)(0x10 + c->next_icid++);
		a.db_rec_addr = rec_page(c);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct qedr_qp_resp_m a = { 0 };
		if (r->qp_type != 2 /* RC */ && r->qp_type != 4 /* UD */)
			return 22;
		a.qp_id = next_qpn(r->ctx);
		a.atomic_supported = 1;
		a.rq_icid = (uint16_t)(0x100 + 2 * c->next_icid);
		a.sq_icid = (uint16_t)(a.rq_icid + 1);
		c->next_icid++;
		a.sq_db_offset = DB_XCM_OFF;
		a.rq_db_offset = DB_TCM_OFF;
		a.sq_db_rec_addr = rec_page(c);
		if (r->max_recv_wr)
			a.rq_db_rec_addr = rec_page(c);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		struct qedr_srq_resp_m a = { .srq_id = (uint16_t)(1 + c->next_srq++) };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_db(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct qedr_ctx *c = qctx(ctx);

	(void)mem;
	if (!c)
		return 12;
	if (off == DB_PA)
		return len == DB_SIZE ? 0 : 22;
	for (unsigned i = 0; i < c->nkeys; i++)
		if (c->keys[i] == off)
			return len == PG ? 0 : 22;
	return 22;
}

/*
 * qedr's create_qp request starts with the provider's QP address split in
 * two 32-bit halves (qp_handle_hi, qp_handle_lo), which the log's address
 * masking does not recognise: cleared.
 */
static void norm_in(uint32_t cmd, uint8_t *b, size_t len)
{
	if (sti_cmd_is(cmd, IB_USER_VERBS_CMD_CREATE_QP, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE) && len >= 8)
		memset(b, 0, 8);
}

const struct sti_driver sti_drv_qedr = {
	.name = "qedr",
	.driver_id = RDMA_DRIVER_QEDR,
	.vendor_id = 0x1077,
	.vendor_part_id = 0x1629,
	.node_type = 1,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_db,
	.norm_in = norm_in,
};
