/*
 * ionic (AMD Pensando DSC, rdma/ionic-abi.h; rdma-core 65's provider, in
 * Debian sid only), modelled as the upstream kernel driver
 * (drivers/infiniband/hw/ionic) answers on a device with two UDMA engines,
 * the firmware's RDMA version 2, no express doorbells and a controller
 * memory buffer (CMB) for send and receive queues.
 *
 * The provider allocates every queue itself (anonymous memory described
 * to the kernel by a struct ionic_qdesc) and has no SRQ, XRC, WQ, flow or
 * resize_cq support (the model refuses those commands, EOPNOTSUPP, should
 * they come).
 *
 * A CQ is one hardware CQ per UDMA engine of its udma_mask (two cqids in
 * the response); a QP goes to one engine (udma_idx), alternately, as
 * ionic_get_qpid does.
 *
 * Mappings, as the kernel's rdma_user_mmap entries (each at the lowest free
 * page range, gone with its object; an mmap must have the entry's length):
 * the context's doorbell page (first entry: offset 0, answered as
 * dbell_offset), its PHC page (struct ib_uverbs_clock_info at phc_offset,
 * mapped read-only; query_device_ex reads the clock from it), and each
 * QP's send and receive queue CMB pages (sq/rq_cmb_offset), which the
 * provider maps with the queue's size and writes its WQEs to.
 *
 * Written from the uAPI header and the provider's use of it, and from the
 * upstream kernel driver's checks (ionic_controlpath.c): qdesc validation,
 * CMB placement, the QP's capabilities answered from its queue sizes.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>

#include "standin.h"

/* Layouts of rdma-core 65's kernel-headers/rdma/ionic-abi.h
 * (IONIC_ABI_VERSION 1) and, for the PHC page, of struct
 * ib_uverbs_clock_info in its rdma/ib_user_verbs.h. */
struct ionic_ctx_resp_m {
	uint32_t rsvd;
	uint32_t page_shift;
	uint64_t dbell_offset;
	uint16_t version;
	uint8_t qp_opcodes;
	uint8_t admin_opcodes;
	uint8_t sq_qtype;
	uint8_t rq_qtype;
	uint8_t cq_qtype;
	uint8_t admin_qtype;
	uint8_t max_stride;
	uint8_t max_spec;
	uint8_t udma_count;
	uint8_t expdb_mask;
	uint8_t expdb_qtypes;
	uint8_t rsvd2[3];
	uint64_t phc_offset;
};

struct clock_info_m {
	uint32_t sign;
	uint32_t resv;
	uint64_t nsec;
	uint64_t cycles;
	uint64_t frac;
	uint32_t mult;
	uint32_t shift;
	uint64_t mask;
	uint64_t overflow_period;
};

struct ionic_qdesc_m {
	uint64_t addr;
	uint32_t size;
	uint16_t mask;
	uint8_t depth_log2;
	uint8_t stride_log2;
};

struct ionic_ah_resp_m {
	uint32_t ahid;
	uint32_t pad;
};

struct ionic_cq_req_m {
	struct ionic_qdesc_m cq[2];
	uint8_t udma_mask;
	uint8_t rsvd[7];
};

struct ionic_cq_resp_m {
	uint32_t cqid[2];
	uint8_t udma_mask;
	uint8_t rsvd[7];
};

struct ionic_qp_req_m {
	struct ionic_qdesc_m sq;
	struct ionic_qdesc_m rq;
	uint8_t sq_spec;
	uint8_t rq_spec;
	uint8_t sq_cmb;
	uint8_t rq_cmb;
	uint8_t udma_mask;
	uint8_t rsvd[3];
};

struct ionic_qp_resp_m {
	uint32_t qpid;
	uint8_t sq_cmb;
	uint8_t rq_cmb;
	uint8_t udma_idx;
	uint8_t rsvd[1];
	uint64_t sq_cmb_offset;
	uint64_t rq_cmb_offset;
};

#define RDMA_DRIVER_IONIC_M 21 /* enum rdma_driver_id of rdma-core 65's kernel headers */

#define PG 4096u
#define CMB_ENABLE 1
#define CMB_REQUIRE 2
#define CMB_EXPDB 4
#define CMB_WC 8
#define CMB_UC 16
#define CMB_SUPPORTED (CMB_ENABLE | CMB_REQUIRE | CMB_EXPDB | CMB_WC | CMB_UC)

/* The device (lif_cfg) */
#define UDMA_COUNT 2
#define VERSION 2
#define QP_OPCODES 9     /* IONIC_V2_OP_BIND_MW + 1 */
#define ADMIN_OPCODES 32
#define MAX_STRIDE 9     /* 512-byte WQEs at most */
#define SPEC_HIGH 16     /* IONIC_SPEC_HIGH */
#define SPEC_FIRST_SGE 2 /* IONIC_V1_SPEC_FIRST_SGE */
#define CQ_GRACE 100
#define PLD_OFF 32       /* offsetof(struct ionic_v1_wqe, common.pld) = recv.pld */
#define SGE_SZ 16
#define CMB_ORDER 5      /* queues of fewer than 2^5 pages go to the CMB */

#define MAXE 256

struct ionic_ent {
	uint32_t pgoff, npages;
	const struct sti_obj *obj; /* NULL: the context's doorbell or PHC page */
};

struct ionic_ctx_m {
	struct ionic_ent e[MAXE];
	unsigned n;
	uint64_t phc_off;
	uint32_t next_cqid, next_ahid;
	uint8_t next_udma;
};

static struct ionic_ctx_m *ictx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct ionic_ctx_m));
}

/* rdma_user_mmap_entry_insert: the lowest free range of pages. */
static int entry(struct ionic_ctx_m *c, const struct sti_obj *obj, uint64_t len, uint64_t *off)
{
	uint32_t npages = (uint32_t)((len + PG - 1) / PG), start = 0;

	if (c->n == MAXE)
		return 12; /* ENOMEM */
	for (;;) {
		unsigned i;
		for (i = 0; i < c->n; i++)
			if (c->e[i].pgoff < start + npages && start < c->e[i].pgoff + c->e[i].npages)
				break;
		if (i == c->n)
			break;
		start = c->e[i].pgoff + c->e[i].npages;
	}
	c->e[c->n++] = (struct ionic_ent){ start, npages, obj };
	if (off)
		*off = (uint64_t)start * PG;
	return 0;
}

/* The kernel's ionic_validate_qdesc. */
static int qdesc_ok(const struct ionic_qdesc_m *q)
{
	if (!q->addr || !q->size || !q->mask || !q->depth_log2 || !q->stride_log2)
		return 0;
	if (q->addr & (PG - 1))
		return 0;
	if (q->mask != (1u << q->depth_log2) - 1)
		return 0;
	return (uint64_t)q->size >= 1ull << (q->depth_log2 + q->stride_log2);
}

/* ionic_v1_{send,recv}_wqe_max_sge and ionic_v1_send_wqe_max_data (no
 * express doorbell). */
static uint32_t max_sge(uint8_t stride_log2, int spec)
{
	int first = spec > SPEC_FIRST_SGE ? SPEC_FIRST_SGE : 0;
	int n = (int)((1u << stride_log2) - PLD_OFF) / SGE_SZ - first;
	if (spec && n > spec)
		n = spec;
	return n < 0 ? 0 : (uint32_t)n;
}

static uint32_t max_data(uint8_t stride_log2)
{
	return (1u << stride_log2) - PLD_OFF;
}

static uint32_t order_base_2(uint32_t n)
{
	uint32_t o = 0;
	while ((1u << o) < n)
		o++;
	return o;
}

/* The QP number the core will give the QP being made (uverbs.c new_qpn):
 * the kernel driver's qpid is the QP number. */
static uint32_t next_qpn(const struct sti_ctx *ctx)
{
	return ctx->next_qpn ? ctx->next_qpn : 0x100 + 0x1000 * (uint32_t)ctx->dev.index;
}

/* ionic_qp_{sq,rq}_init_cmb and what ionic_create_qp answers: the queue
 * goes to the CMB, mapped write-combining unless UC alone is asked. */
static int place_cmb(struct ionic_ctx_m *c, const struct sti_obj *obj, uint8_t req, const struct ionic_qdesc_m *q,
		     int rq, uint8_t *cmb, uint64_t *off)
{
	uint8_t f = req;
	int wc, err;

	*cmb = 0;
	*off = 0;
	if (!(f & CMB_ENABLE))
		return 0;
	if (f & ~CMB_SUPPORTED) {
		if (f & CMB_REQUIRE)
			return 0;
		f &= CMB_SUPPORTED;
	}
	if (f & CMB_EXPDB) { /* the device has no express doorbells */
		if (f & CMB_REQUIRE)
			return 0;
		f &= ~CMB_EXPDB;
	}
	if (order_base_2(q->size / PG) >= CMB_ORDER)
		return 0;
	if ((f & (CMB_WC | CMB_UC)) == (CMB_WC | CMB_UC))
		f &= ~(CMB_WC | CMB_UC);
	if (rq && (f & CMB_EXPDB))
		wc = (f & (CMB_WC | CMB_UC)) == CMB_WC;
	else
		wc = (f & (CMB_WC | CMB_UC)) != CMB_UC;
	f |= wc ? CMB_WC : CMB_UC;
	err = entry(c, obj, q->size, off);
	if (err)
		return err;
	*cmb = f;
	return 0;
}

static int hook(struct sti_req *r)
{
	struct ionic_ctx_m *c = ictx(r->ctx);

	if (!c)
		return 12;
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct ionic_ctx_resp_m a = { 0 };
		int err;
		if (r->uin_len < 8) /* struct ionic_ctx_req */
			return 14; /* EFAULT */
		if (!c->n && ((err = entry(c, NULL, PG, NULL)) || (err = entry(c, NULL, PG, &c->phc_off))))
			return err;
		a.page_shift = 12;
		a.dbell_offset = 0; /* the doorbell page's offset within its page */
		a.version = VERSION;
		a.qp_opcodes = QP_OPCODES;
		a.admin_opcodes = ADMIN_OPCODES;
		a.sq_qtype = 1;
		a.rq_qtype = 2;
		a.cq_qtype = 3;
		a.admin_qtype = 4;
		a.max_stride = MAX_STRIDE;
		a.max_spec = SPEC_HIGH;
		a.udma_count = UDMA_COUNT;
		a.expdb_mask = 0;
		a.expdb_qtypes = 0;
		a.phc_offset = c->phc_off;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct ionic_cq_req_m q;
		struct ionic_cq_resp_m a = { 0 };
		if (!r->uin || r->uin_len < sizeof(q))
			return 14;
		memcpy(&q, r->uin, sizeof(q));
		a.udma_mask = ((1u << UDMA_COUNT) - 1) & q.udma_mask;
		if (!a.udma_mask)
			return 22;
		for (int i = 0; i < UDMA_COUNT; i++) {
			if (!(a.udma_mask & (1u << i)))
				continue;
			if (!qdesc_ok(&q.cq[i]))
				return 22;
			a.cqid[i] = 2 * ++c->next_cqid + (uint32_t)i;
		}
		if (r->uout_len < sizeof(a))
			return 28; /* ENOSPC */
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct ionic_qp_req_m q;
		struct ionic_qp_resp_m a = { 0 };
		uint8_t mask;
		int err;
		if (!r->uin || r->uin_len < sizeof(q))
			return 14;
		memcpy(&q, r->uin, sizeof(q));
		if (r->qp_type != IB_UVERBS_QPT_RC && r->qp_type != IB_UVERBS_QPT_UC &&
		    r->qp_type != IB_UVERBS_QPT_UD)
			return 95;
		mask = (1u << UDMA_COUNT) - 1;
		if (q.udma_mask)
			mask &= q.udma_mask;
		if (!mask)
			return 22;
		/* ionic_get_qpid: the engines in turn (the turn passes even
		 * when a later check fails) */
		a.udma_idx = c->next_udma;
		if (!(mask & (1u << a.udma_idx)))
			a.udma_idx ^= 1;
		c->next_udma ^= UDMA_COUNT - 1;
		a.qpid = next_qpn(r->ctx);
		if (r->max_send_wr > 0xffff || r->max_recv_wr > 0xffff || r->max_send_sge < 1 || r->max_recv_sge < 1 ||
		    r->max_send_sge > SPEC_HIGH || r->max_send_sge > max_sge(MAX_STRIDE, 0) ||
		    r->max_recv_sge > SPEC_HIGH || r->max_recv_sge > max_sge(MAX_STRIDE, 0) ||
		    r->max_inline > max_data(MAX_STRIDE))
			return 22;
		if (!qdesc_ok(&q.sq) || !qdesc_ok(&q.rq))
			return 22;
		err = place_cmb(c, r->obj, q.sq_cmb, &q.sq, 0, &a.sq_cmb, &a.sq_cmb_offset);
		if (!err)
			err = place_cmb(c, r->obj, q.rq_cmb, &q.rq, 1, &a.rq_cmb, &a.rq_cmb_offset);
		if (!err && r->uout_len < sizeof(a))
			err = 28;
		if (err)
			return err; /* the core's sti_free -> release drops the entries */
		r->max_send_wr = q.sq.mask;
		r->max_send_sge = max_sge(q.sq.stride_log2, q.sq_spec);
		r->max_inline = max_data(q.sq.stride_log2);
		r->max_recv_wr = q.rq.mask;
		r->max_recv_sge = max_sge(q.rq.stride_log2, q.rq_spec);
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_AH: {
		struct ionic_ah_resp_m a = { .ahid = ++c->next_ahid };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	default:
		return 0;
	}
}

/* rdma_user_mmap_entry_get: an entry starting at this page, of exactly
 * this length. */
static int mmap_ent(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct ionic_ctx_m *c = ictx(ctx);

	if (!c || off % PG)
		return 22;
	for (unsigned i = 0; i < c->n; i++)
		if ((uint64_t)c->e[i].pgoff * PG == off) {
			if (len != (size_t)c->e[i].npages * PG)
				return 22;
			if (off == c->phc_off) {
				/* the PHC's timecounter: a 1 GHz cycle counter
				 * of 48 bits, not updating (sign even) */
				struct clock_info_m ci = {
					.nsec = 1000000000ull, .cycles = 1000000000ull,
					.mult = 1u << 20, .shift = 20,
					.mask = (1ull << 48) - 1, .overflow_period = 1ull << 40,
				};
				memcpy(mem, &ci, sizeof(ci));
			}
			return 0;
		}
	return 22;
}

static void release(struct sti_ctx *ctx, struct sti_obj *o)
{
	struct ionic_ctx_m *c = ctx->drv;

	if (!o || !c)
		return;
	for (unsigned i = 0; i < c->n;)
		if (c->e[i].obj == o)
			c->e[i] = c->e[--c->n];
		else
			i++;
}

/*
 * ionic_create_qp_ex's request (struct uionic_qp on its stack, without an
 * initializer) leaves the three reserved bytes after udma_mask as its stack
 * had them; the kernel does not read them.
 */
static void norm_in(uint32_t cmd, uint8_t *b, size_t len)
{
	if (sti_cmd_is(cmd, IB_USER_VERBS_CMD_CREATE_QP, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE) &&
	    len >= offsetof(struct ionic_qp_req_m, rsvd) + 3)
		memset(b + offsetof(struct ionic_qp_req_m, rsvd), 0, 3);
}

/* What ionic_query_device reports and its QP size checks enforce
 * (EINVAL above): IONIC_SPEC_HIGH scatter entries, and the inline data
 * of the largest WQE. */
static const struct sti_limits ionic_lim = {
	.max_send_sge = SPEC_HIGH, .max_recv_sge = SPEC_HIGH, .max_inline = (1u << MAX_STRIDE) - PLD_OFF,
};

const struct sti_driver sti_drv_ionic = {
	.lim = &ionic_lim,
	.name = "ionic",
	.driver_id = RDMA_DRIVER_IONIC_M,
	.vendor_id = 0x1dd8, /* Pensando Systems */
	.vendor_part_id = 0x1002,
	.node_type = 1,
	.link_layer = 2,
	/* What the kernel driver has not: the core answers EOPNOTSUPP. */
	.lacks = STI_LACKS(RESIZE_CQ) | STI_LACKS(REREG_MR) | STI_LACKS(CREATE_SRQ) | STI_LACKS(MODIFY_SRQ) |
		 STI_LACKS(OPEN_XRCD) | STI_LACKS(CREATE_WQ) | STI_LACKS(MODIFY_WQ) |
		 STI_LACKS(CREATE_RWQ_IND_TBL) | STI_LACKS(CREATE_FLOW) | STI_LACKS(ALLOC_DM) |
		 STI_LACKS(REG_DM_MR),
	.hook = hook,
	.mmap = mmap_ent,
	.norm_in = norm_in,
	.release = release,
};
