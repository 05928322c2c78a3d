/*
 * ocrdma (Emulex OneConnect RoCE, rdma/ocrdma-abi.h), without DPP (direct
 * packet push).  The queues are kernel memory the provider maps: each
 * create answers the queue's page (one virtual page, as the provider
 * requires) and the doorbell page, by mmap offset; the stand-in hands
 * these out a page apart from its own key counter and lets the provider
 * map exactly those.
 *
 * The context's AH table (ah_tbl_page, ah_tbl_len) is shared: the
 * provider marks the slot it reserves for a new AH with ah_tbl_len and
 * passes the slot as the AH's dlid; the kernel writes the AH's id (and
 * its VLAN/L3 flags) there, which the provider reads back after
 * create_ah.  The hook cannot see create_ah's core request (the dlid), so
 * it finds the reserved slot by its marker.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>

#include "standin.h"

struct oc_uctx_resp_m {
	uint32_t dev_id;
	uint32_t wqe_size;
	uint32_t max_inline_data;
	uint32_t dpp_wqe_size;
	uint64_t ah_tbl_page;
	uint32_t ah_tbl_len;
	uint32_t rqe_size;
	uint8_t fw_ver[32];
	uint64_t rsvd1;
	uint64_t rsvd2;
};

struct oc_pd_resp_m {
	uint32_t id;
	uint32_t dpp_enabled;
	uint32_t dpp_page_addr_hi;
	uint32_t dpp_page_addr_lo;
	uint32_t rsvd[2];
};

struct oc_cq_resp_m {
	uint32_t cq_id;
	uint32_t page_size;
	uint32_t num_pages;
	uint32_t max_hw_cqe;
	uint64_t page_addr[8];
	uint64_t db_page_addr;
	uint32_t db_page_size;
	uint32_t phase_change;
	uint64_t rsvd1;
	uint64_t rsvd2;
};

struct oc_qp_resp_m {
	uint16_t qp_id;
	uint16_t sq_dbid;
	uint16_t rq_dbid;
	uint16_t resv0;
	uint32_t sq_page_size;
	uint32_t rq_page_size;
	uint32_t num_sq_pages;
	uint32_t num_rq_pages;
	uint64_t sq_page_addr[8];
	uint64_t rq_page_addr[8];
	uint64_t db_page_addr;
	uint32_t db_page_size;
	uint32_t dpp_credit;
	uint32_t dpp_offset;
	uint32_t num_wqe_allocated;
	uint32_t num_rqe_allocated;
	uint32_t db_sq_offset;
	uint32_t db_rq_offset;
	uint32_t db_shift;
	uint64_t rsvd[11];
};

struct oc_srq_resp_m {
	uint16_t rq_dbid;
	uint16_t resv0;
	uint32_t resv1;
	uint32_t rq_page_size;
	uint32_t num_rq_pages;
	uint64_t rq_page_addr[8];
	uint64_t db_page_addr;
	uint32_t db_page_size;
	uint32_t num_rqe_allocated;
	uint32_t db_rq_offset;
	uint32_t db_shift;
	uint64_t rsvd2;
	uint64_t rsvd3;
};

#define PG 4096
#define WQE_SIZE 256
#define RQE_SIZE 256
#define CQE_SIZE 16
#define AH_TBL_LEN PG
#define KEY_BASE 0x10000000ULL
#define MAXKEYS 2048
/* Doorbell offsets within the doorbell page (the kernel's OCRDMA_DB_*). */
#define DB_SQ_OFFSET 0x60
#define DB_RQ_OFFSET 0xa0
#define DB_SQ_SHIFT 16
#define DB_RQ_SHIFT 24

struct oc_ctx {
	uint64_t next_key;
	struct { uint64_t key, len; } keys[MAXKEYS];
	unsigned nkeys;
	uint32_t *ah_tbl;     /* where the provider mapped the AH table */
	uint32_t next_pd, next_cq, next_qp, next_db, next_ah;
};

static struct oc_ctx *octx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct oc_ctx));
}

static uint64_t pages(uint64_t n)
{
	return n ? (n + PG - 1) / PG * PG : PG;
}

static uint64_t key(struct oc_ctx *c, uint64_t len)
{
	uint64_t k;

	if (!c->next_key)
		c->next_key = KEY_BASE;
	if (c->nkeys == MAXKEYS)
		return ~0ULL;
	k = c->next_key;
	c->keys[c->nkeys].key = k;
	c->keys[c->nkeys++].len = pages(len);
	c->next_key += pages(len);
	return k;
}

static int hook(struct sti_req *r)
{
	struct oc_ctx *c = octx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct oc_uctx_resp_m a = { 0 };
		a.dev_id = 0;
		a.wqe_size = WQE_SIZE;
		a.rqe_size = RQE_SIZE;
		a.max_inline_data = 232;
		a.dpp_wqe_size = WQE_SIZE;
		a.ah_tbl_len = AH_TBL_LEN;
		a.ah_tbl_page = key(c, AH_TBL_LEN);
		memcpy(a.fw_ver, "10.2.470.14", 11);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		struct oc_pd_resp_m a = { .id = 1 + c->next_pd++ };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct oc_cq_resp_m a = { 0 };
		uint32_t n = sti_pow2(r->cqe + 1);
		a.cq_id = 1 + c->next_cq++;
		a.page_size = (uint32_t)pages((uint64_t)n * CQE_SIZE);
		a.num_pages = 1;
		a.max_hw_cqe = a.page_size / CQE_SIZE;
		a.page_addr[0] = key(c, a.page_size);
		a.db_page_size = PG;
		a.db_page_addr = key(c, PG);
		a.phase_change = 1;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct oc_qp_resp_m a = { 0 };
		if (r->qp_type != 2 /* RC */ && r->qp_type != 4 /* UD */ && r->qp_type != 3 /* UC */)
			return 22; /* EINVAL */
		a.qp_id = (uint16_t)(1 + c->next_qp++);
		a.sq_dbid = a.rq_dbid = (uint16_t)(1 + c->next_db++);
		a.num_wqe_allocated = sti_pow2(r->max_send_wr + 1);
		a.num_rqe_allocated = sti_pow2(r->max_recv_wr + 1);
		a.sq_page_size = (uint32_t)pages((uint64_t)a.num_wqe_allocated * WQE_SIZE);
		a.rq_page_size = (uint32_t)pages((uint64_t)a.num_rqe_allocated * RQE_SIZE);
		a.num_sq_pages = 1;
		a.num_rq_pages = 1;
		a.sq_page_addr[0] = key(c, a.sq_page_size);
		a.rq_page_addr[0] = key(c, a.rq_page_size);
		a.db_page_size = PG;
		a.db_page_addr = key(c, PG);
		a.db_sq_offset = DB_SQ_OFFSET;
		a.db_rq_offset = DB_RQ_OFFSET;
		a.db_shift = DB_RQ_SHIFT;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		struct oc_srq_resp_m a = { 0 };
		a.rq_dbid = (uint16_t)(1 + c->next_db++);
		a.num_rqe_allocated = sti_pow2(r->max_recv_wr + 1);
		a.rq_page_size = (uint32_t)pages((uint64_t)a.num_rqe_allocated * RQE_SIZE);
		a.num_rq_pages = 1;
		a.rq_page_addr[0] = key(c, a.rq_page_size);
		a.db_page_size = PG;
		a.db_page_addr = key(c, PG);
		a.db_rq_offset = DB_RQ_OFFSET;
		a.db_shift = DB_SQ_SHIFT;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_AH:
		if (c->ah_tbl) {
			for (unsigned i = 0; i < AH_TBL_LEN / 4; i++)
				if (c->ah_tbl[i] == AH_TBL_LEN) {
					c->ah_tbl[i] = 1 + (c->next_ah++ & 0x3ff);
					break;
				}
		}
		return 0;
	default:
		return 0;
	}
}

static int mmap_key(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct oc_ctx *c = octx(ctx);

	if (!c)
		return 12;
	for (unsigned i = 0; i < c->nkeys; i++)
		if (c->keys[i].key == off) {
			if (len > c->keys[i].len)
				return 22; /* EINVAL */
			if (i == 0)
				c->ah_tbl = mem;
			return 0;
		}
	return 22;
}

/*
 * ocrdma's create_cq request (struct ocrdma_create_cq_ureq) sets dpp_cq and
 * leaves rsvd as its stack had it: cleared in the log.
 */
static void norm_in(uint32_t cmd, uint8_t *b, size_t len)
{
	if (sti_cmd_is(cmd, IB_USER_VERBS_CMD_CREATE_CQ, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE) && len >= 8)
		memset(b + 4, 0, 4);
}

const struct sti_driver sti_drv_ocrdma = {
	.name = "ocrdma",
	.driver_id = RDMA_DRIVER_OCRDMA,
	.vendor_id = 0x10df,
	.vendor_part_id = 0x0720,
	.node_type = 1,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_key,
	.norm_in = norm_in,
};
