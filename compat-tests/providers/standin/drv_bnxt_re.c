/*
 * bnxt_re (Broadcom NetXtreme-E/C, rdma/bnxt_re-abi.h), modelled as a
 * BCM57508 (a "gen P5" chip) in static WQE mode, without write-combining
 * doorbell pages or doorbell pacing (so the provider makes no driver
 * method calls).  Queues live in user memory passed in the create
 * requests.
 *
 * Mappings: the context's shared page at offset 0 (the kernel writes each
 * new AH's id at BNXT_RE_AVID_OFFT in it, which the provider reads back
 * after create_ah; the model does the same), and the doorbell page at the
 * `dbr` offset alloc_pd answers.
 *
 * CQs: the CQ ring is the process's own memory (create_cq's request:
 * cq_va), and the stand-in runs in the process, so the model writes there
 * what the chip would.  The model never completes work, so the chip's
 * producer stays at entry 0 of the current ring, whose valid (phase) bit
 * is the one create_cq answers (1; a fresh ring after a resize starts over
 * at entry 0 with phase 1 too).  resize_cq (rdma-core 56 and later; 44 has
 * no resize) hands over a new ring (the request's cq_va); the chip then
 * writes a CUT-OFF CQE at its producer position in the *old* ring, which
 * the provider polls for (20 x 100 ms before it gives up with -EIO) before
 * it frees the old ring, moves to the new one and acks the cut-off with a
 * doorbell carrying the CQE's resize toggle.
 */
#include <errno.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>

#include "standin.h"

/* Layouts of rdma-core 65's kernel-headers/rdma/bnxt_re-abi.h. */
struct bnxt_uctx_resp_m {
	uint32_t dev_id;
	uint32_t max_qp;
	uint32_t pg_size;
	uint32_t cqe_sz;
	uint32_t max_cqd;
	uint32_t rsvd;
	uint64_t comp_mask;
	uint32_t chip_id0;
	uint32_t chip_id1;
	uint32_t mode;
	uint32_t rsvd1;
};

struct bnxt_pd_resp_m {
	uint32_t pdid;
	uint32_t dpi;
	uint64_t dbr;
} __attribute__((packed, aligned(4)));

struct bnxt_cq_resp_m {
	uint32_t cqid;
	uint32_t tail;
	uint32_t phase;
	uint32_t rsvd;
	uint64_t comp_mask;
};

struct bnxt_qp_resp_m {
	uint32_t qpid;
	uint32_t rsvd;
};

/* The request of create_cq (cq_va, cq_handle, and from rdma-core 65 on a
 * comp_mask) and of resize_cq (cq_va). */
struct bnxt_cq_req_m {
	uint64_t cq_va;
};

/* A CQE: 24 bytes of type-specific data, then the base header whose
 * first word holds the valid (phase) bit, the type and the resize
 * toggle. */
#define CQE_SZ 32
#define CQE_HDR_OFF 24
#define BCQE_PH_MASK 0x1u
#define BCQE_TYPE_SHIFT 1
#define BCQE_TYPE_COFF 0xfu  /* cut-off: the ring is retired */
#define BCQE_RESIZE_TOG_SHIFT 5
#define BCQE_RESIZE_TOG_MASK 0x3u
#define CQ_START_PHASE 1

/* A CQ's ring in the process (obj->drv), and where the chip would write
 * its next CQE there. */
struct bnxt_cq_m {
	uint64_t va;
	uint32_t prod;    /* entry index (the model never advances it) */
	uint32_t phase;   /* the valid bit a CQE written at `prod` carries */
	uint32_t resizes; /* resizes done: the cut-off's toggle */
};

struct bnxt_srq_resp_m {
	uint32_t srqid;
	uint32_t rsvd;
	uint64_t comp_mask;
};

#define PG 4096
#define SHPG_OFF 0x0ULL
#define DB_OFF 0x1000ULL  /* the doorbell page's mmap offset */
#define AVID_OFFT 0x10
#define CMASK_HAVE_CCTX 0x1
#define CMASK_HAVE_MODE 0x2
#define CHIP_57508 0x1750

struct bnxt_ctx {
	void *shpg;           /* where the provider mapped the shared page */
	uint32_t next_cq, next_qp, next_srq, next_pd, next_ah;
};

static struct bnxt_ctx *bctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct bnxt_ctx));
}

/* The cut-off CQE the chip writes into the ring being retired. */
static void cq_write_cutoff(const struct bnxt_cq_m *m, uint32_t tog)
{
	uint8_t *e = (uint8_t *)(uintptr_t)m->va + (size_t)m->prod * CQE_SZ;
	uint32_t flg = (m->phase & BCQE_PH_MASK) |
		       (BCQE_TYPE_COFF << BCQE_TYPE_SHIFT) |
		       ((tog & BCQE_RESIZE_TOG_MASK) << BCQE_RESIZE_TOG_SHIFT);
	uint32_t *hdr = (uint32_t *)(e + CQE_HDR_OFF);

	memset(e, 0, CQE_SZ);
	/* The valid word last (little endian, as the chip writes it): the
	 * provider reads the rest only once the phase bit says valid. */
	__atomic_store_n(hdr, htole32(flg), __ATOMIC_RELEASE);
}

static int hook(struct sti_req *r)
{
	struct bnxt_ctx *c = bctx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct bnxt_uctx_resp_m a = { 0 };
		a.dev_id = 0;
		a.max_qp = 65536;
		a.pg_size = PG;
		a.cqe_sz = 32;
		a.max_cqd = 0xffffff;
		a.comp_mask = CMASK_HAVE_CCTX | CMASK_HAVE_MODE;
		a.chip_id0 = CHIP_57508;
		a.mode = 0; /* BNXT_QPLIB_WQE_MODE_STATIC */
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		struct bnxt_pd_resp_m a = { .pdid = 1 + c->next_pd++, .dpi = 1, .dbr = DB_OFF };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct bnxt_cq_resp_m a = { .cqid = 1 + c->next_cq++, .tail = 0, .phase = CQ_START_PHASE };
		struct bnxt_cq_req_m q;
		struct bnxt_cq_m *m;
		if (!r->obj || !r->uin || r->uin_len < sizeof(q))
			return 14; /* EFAULT: bnxt_re copies the request */
		memcpy(&q, r->uin, sizeof(q));
		if (!q.cq_va)
			return 14; /* nothing to pin */
		m = calloc(1, sizeof(*m));
		if (!m)
			return 12;
		m->va = q.cq_va;
		m->prod = 0;
		m->phase = a.phase;
		free(r->obj->drv);
		r->obj->drv = m;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_RESIZE_CQ: {
		struct bnxt_cq_m *m = r->obj ? r->obj->drv : NULL;
		struct bnxt_cq_req_m q;
		if (!m || !r->uin || r->uin_len < sizeof(q))
			return 14;
		memcpy(&q, r->uin, sizeof(q));
		if (!q.cq_va)
			return 14;
		m->resizes++;
		cq_write_cutoff(m, m->resizes);
		/* The new ring, from its first entry with the start phase. */
		m->va = q.cq_va;
		m->prod = 0;
		m->phase = CQ_START_PHASE;
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct bnxt_qp_resp_m a = { .qpid = 2 + c->next_qp++ };
		if (r->qp_type != 2 /* RC */ && r->qp_type != 4 /* UD */ && r->qp_type != 8 /* RAW_PACKET */)
			return 22; /* EINVAL */
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		struct bnxt_srq_resp_m a = { .srqid = 1 + c->next_srq++ };
		if (r->uin_len == 0)
			return 22;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_AH: {
		uint32_t avid = 1 + c->next_ah++;
		if (c->shpg)
			memcpy((char *)c->shpg + AVID_OFFT, &avid, sizeof(avid));
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_page(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct bnxt_ctx *c = bctx(ctx);

	if (!c)
		return 12;
	if (len != PG)
		return 22;
	if (off == SHPG_OFF) {
		c->shpg = mem;
		return 0;
	}
	if (off == DB_OFF)
		return 0;
	return 22;
}

/*
 * bnxt_re's create_qp request of rdma-core 56 (struct ubnxt_re_qp without an
 * initializer) leaves comp_mask and the slot counts after it as its stack
 * had them; rdma-core 65 zeroes them, 44 does not send them.  The log
 * clears what follows qpsva, qprva and qp_handle.
 */
static void norm_in(uint32_t cmd, uint8_t *b, size_t len)
{
	if (sti_cmd_is(cmd, IB_USER_VERBS_CMD_CREATE_QP, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE) && len > 24)
		memset(b + 24, 0, len - 24);
}

/* The CQ depth the device reports is the one its context answer gives the
 * provider (max_cqd), which the provider checks before it asks. */
static const struct sti_limits bnxt_re_lim = {
	.max_cqe = 0xffffff,
	/* bnxt_re_reg_user_mr: ENOMEM past BNXT_RE_MAX_MR_SIZE (2^39), before
	 * the memory is pinned; the device reports the same figure */
	.max_mr_size = 1ULL << 39, .mr_size_err = ENOMEM,
};

const struct sti_driver sti_drv_bnxt_re = {
	.lim = &bnxt_re_lim,
	.name = "bnxt_re",
	.driver_id = RDMA_DRIVER_BNXT_RE,
	.vendor_id = 0x14e4,
	.vendor_part_id = 0x1614,
	.node_type = 1,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_page,
	.norm_in = norm_in,
};
