/*
 * cxgb4 (Chelsio T5 iWARP, rdma/cxgb4-abi.h, uverbs ABI 3).  The queues
 * are kernel memory the provider maps: every create answers the mmap keys
 * (offsets, a page apart, as the kernel hands them out from the context's
 * key counter) of the queue memory and of the doorbell/GTS register page.
 *
 * The context's status page (t4_dev_status_page, key answered by
 * alloc_ucontext) is read by the provider at context creation: the QP and
 * CQ id ranges (qp_start/qp_size, cq_start/cq_size) size its id->object
 * tables, so the ids answered below stay inside them.  Queue memory is
 * left zero (no CQE valid, no QP error), the status entry at the end of
 * each queue included.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "standin.h"

struct c4_uctx_resp_m {
	uint64_t status_page_key;
	uint32_t status_page_size;
	uint32_t reserved;
};

struct c4_cq_resp_m {
	uint64_t key;
	uint64_t gts_key;
	uint64_t memsize;
	uint32_t cqid;
	uint32_t size;
	uint32_t qid_mask;
	uint32_t flags;
};

struct c4_qp_resp_m {
	uint64_t ma_sync_key;
	uint64_t sq_key;
	uint64_t rq_key;
	uint64_t sq_db_gts_key;
	uint64_t rq_db_gts_key;
	uint64_t sq_memsize;
	uint64_t rq_memsize;
	uint32_t sqid;
	uint32_t rqid;
	uint32_t sq_size;
	uint32_t rq_size;
	uint32_t qid_mask;
	uint32_t flags;
};

struct c4_srq_resp_m {
	uint64_t srq_key;
	uint64_t srq_db_gts_key;
	uint64_t srq_memsize;
	uint32_t srqid;
	uint32_t srq_size;
	uint32_t rqt_abs_idx;
	uint32_t qid_mask;
	uint32_t flags;
	uint32_t reserved;
};

struct c4_status_page_m {
	uint8_t db_off;
	uint8_t write_cmpl_supported;
	uint16_t pad2;
	uint32_t pad3;
	uint64_t qp_start;
	uint64_t qp_size;
	uint64_t cq_start;
	uint64_t cq_size;
};

#define PG 4096
#define ENTRY 64          /* a queue entry (64-byte CQEs, t4_wr, t4_recv_wr) */
#define QID_MASK 31
#define QP_START 1024
#define QP_SIZE 1024
#define CQ_START 1024
#define CQ_SIZE 1024
#define C4IW_64B_CQE 1
#define MAXKEYS 2048

struct c4_ctx {
	uint64_t next_key;
	struct { uint64_t key, len; } keys[MAXKEYS];
	unsigned nkeys;
	uint32_t next_qid, next_cq, next_pd;
};

static struct c4_ctx *cctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct c4_ctx));
}

static uint64_t pages(uint64_t n)
{
	return (n + PG - 1) / PG * PG;
}

/* A new mmap key for `len` bytes (0 when the table is full: no such key
 * maps, as after the kernel ran out). */
static uint64_t key(struct c4_ctx *c, uint64_t len)
{
	uint64_t k = c->next_key;

	if (c->nkeys == MAXKEYS)
		return ~0ULL;
	c->keys[c->nkeys].key = k;
	c->keys[c->nkeys++].len = len;
	c->next_key += pages(len);
	return k;
}

/* Queue memory for `size` entries and the status entries after them. */
static uint64_t qmem(uint32_t size)
{
	return pages((uint64_t)(size + 2) * ENTRY + 16 * 8);
}

static int hook(struct sti_req *r)
{
	struct c4_ctx *c = cctx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct c4_uctx_resp_m a = { 0 };
		a.status_page_size = PG;
		a.status_page_key = key(c, PG);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		uint32_t pdid = 1 + c->next_pd++;
		sti_put(r, &pdid, sizeof(pdid));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct c4_cq_resp_m a = { 0 };
		uint32_t flags = 0;
		if (c->next_cq >= CQ_SIZE)
			return 12;
		if (r->uin_len >= 4)
			memcpy(&flags, r->uin, 4);
		a.cqid = CQ_START + c->next_cq++;
		a.size = r->cqe + 1;
		a.memsize = qmem(a.size);
		a.qid_mask = QID_MASK;
		a.flags = flags & C4IW_64B_CQE;
		a.key = key(c, a.memsize);
		a.gts_key = key(c, PG);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct c4_qp_resp_m a = { 0 };
		if (r->qp_type != 2 /* RC */)
			return 95; /* EOPNOTSUPP */
		if (c->next_qid + 2 > QP_SIZE)
			return 12;
		a.sqid = QP_START + c->next_qid++;
		a.rqid = QP_START + c->next_qid++;
		a.sq_size = r->max_send_wr + 1;
		a.rq_size = r->max_recv_wr + 1 < 16 ? 16 : r->max_recv_wr + 1;
		a.sq_memsize = qmem(a.sq_size);
		a.rq_memsize = qmem(a.rq_size);
		a.qid_mask = QID_MASK;
		a.flags = 2; /* C4IW_QPF_WRITE_W_IMM, not on-chip */
		a.sq_key = key(c, a.sq_memsize);
		a.sq_db_gts_key = key(c, PG);
		/* With an SRQ the provider maps no RQ; the keys stay unused. */
		a.rq_key = key(c, a.rq_memsize);
		a.rq_db_gts_key = key(c, PG);
		a.ma_sync_key = key(c, PG);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		struct c4_srq_resp_m a = { 0 };
		if (c->next_qid + 1 > QP_SIZE)
			return 12;
		a.srqid = QP_START + c->next_qid++;
		a.srq_size = r->max_recv_wr + 1 < 16 ? 16 : r->max_recv_wr + 1;
		a.srq_memsize = qmem(a.srq_size);
		a.rqt_abs_idx = 0x100 + a.srqid;
		a.qid_mask = QID_MASK;
		a.flags = 1; /* T4_SRQ_LIMIT_SUPPORT */
		a.srq_key = key(c, a.srq_memsize);
		a.srq_db_gts_key = key(c, PG);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_key(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct c4_ctx *c = cctx(ctx);

	if (!c)
		return 12;
	for (unsigned i = 0; i < c->nkeys; i++)
		if (c->keys[i].key == off) {
			if (len > pages(c->keys[i].len))
				return 22; /* EINVAL */
			if (i == 0 && len >= sizeof(struct c4_status_page_m)) {
				/* the context's status page */
				struct c4_status_page_m *s = mem;
				s->write_cmpl_supported = 0;
				s->qp_start = QP_START;
				s->qp_size = QP_SIZE;
				s->cq_start = CQ_START;
				s->cq_size = CQ_SIZE;
			}
			return 0;
		}
	return 22;
}

const struct sti_driver sti_drv_cxgb4 = {
	.name = "cxgb4",
	.driver_id = RDMA_DRIVER_CXGB4,
	.vendor_id = 0x1425,
	.vendor_part_id = 0x5401,
	.node_type = 4,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_key,
};
