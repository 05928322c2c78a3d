/*
 * efa (Amazon Elastic Fabric Adapter, rdma/efa-abi.h): an SRD/UD-only
 * device.  The context answers with the device's queue limits and the
 * commands that take udata (query_device, create_ah); query_device_ex
 * answers the SQ/RQ depths, SGE counts and device capabilities; a CQ is a
 * ring of sub-CQs the provider maps read-only, and a doorbell page; a QP
 * is an RQ ring, an SQ doorbell page, an RQ doorbell page and the SQ's LLQ
 * descriptor ring, each behind an mmap key; an AH answers the device's
 * address handle number.  MR_QUERY (the driver method of the MR object)
 * answers the interconnect ids.
 *
 * Every mmap key is one entry of the context (as rdma_user_mmap_entry):
 * a page-aligned offset with the entry's length, which the mapping must
 * match; the entries of an object go away with it.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/efa-abi.h>

#include "standin.h"

#define PG 4096ULL
#define PALIGN(x) (((uint64_t)(x) + PG - 1) & ~(PG - 1))
#define MAXE 512

/* The device (values of a gen-2 EFA). */
#define EFA_SUB_CQS 1
#define EFA_INLINE_BUF 32
#define EFA_MAX_SQ_WR 4096
#define EFA_MAX_RQ_WR 32768
#define EFA_MAX_SQ_SGE 2
#define EFA_MAX_RQ_SGE 3
#define EFA_MAX_LLQ (EFA_MAX_SQ_WR * 64)
#define EFA_MAX_TX_BATCH 16
#define EFA_MAX_RDMA 0x40000000u
#define EFA_MAX_CQ_DEPTH 65536
#define EFA_CAPS                                                                                     \
	(EFA_QUERY_DEVICE_CAPS_RDMA_READ | EFA_QUERY_DEVICE_CAPS_RNR_RETRY |                         \
	 EFA_QUERY_DEVICE_CAPS_CQ_NOTIFICATIONS | EFA_QUERY_DEVICE_CAPS_CQ_WITH_SGID)

/* Newer uAPI names, absent from older headers. */
#define EFA_METHOD_MR_QUERY (1U << UVERBS_ID_NS_SHIFT)
#define EFA_ATTR_QUERY_MR_HANDLE (1U << UVERBS_ID_NS_SHIFT)
#define EFA_ATTR_QUERY_MR_RESP_IC_ID_VALIDITY (EFA_ATTR_QUERY_MR_HANDLE + 1)
#define EFA_ATTR_QUERY_MR_RESP_RECV_IC_ID (EFA_ATTR_QUERY_MR_HANDLE + 2)
#define EFA_ATTR_QUERY_MR_RESP_RDMA_READ_IC_ID (EFA_ATTR_QUERY_MR_HANDLE + 3)
#define EFA_ATTR_QUERY_MR_RESP_RDMA_RECV_IC_ID (EFA_ATTR_QUERY_MR_HANDLE + 4)

struct efa_ent {
	uint64_t key, len;
	uint32_t owner; /* object handle */
	int used;
};

struct efa_ctx {
	uint64_t next_key;
	struct efa_ent e[MAXE];
};

static struct efa_ctx *ectx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct efa_ctx));
}

/* A new mmap entry of `len` bytes for object `o`: its key, 0 when full. */
static uint64_t entry(struct sti_ctx *ctx, struct sti_obj *o, uint64_t len)
{
	struct efa_ctx *c = ectx(ctx);

	if (!c)
		return 0;
	for (unsigned i = 0; i < MAXE; i++)
		if (!c->e[i].used) {
			c->next_key += PG;
			c->e[i] = (struct efa_ent){ c->next_key, PALIGN(len), o ? o->handle : ~0u, 1 };
			return c->next_key;
		}
	return 0;
}

static void drop_entries(struct sti_ctx *ctx, uint32_t owner)
{
	struct efa_ctx *c = ctx->drv;

	for (unsigned i = 0; c && i < MAXE; i++)
		if (c->e[i].used && c->e[i].owner == owner)
			c->e[i].used = 0;
}

static int create_cq(struct sti_req *r)
{
	struct efa_ibv_create_cq cmd = { 0 };
	struct efa_ibv_create_cq_resp resp = { 0 };
	uint32_t entries;

	if (!r->uin || r->uin_len < offsetof(struct efa_ibv_create_cq, reserved_58))
		return 22;
	memcpy(&cmd, r->uin, r->uin_len < sizeof(cmd) ? r->uin_len : sizeof(cmd));
	if (!r->uout || r->uout_len < offsetof(struct efa_ibv_create_cq_resp, db_off))
		return 22;
	if (cmd.comp_mask || !cmd.cq_entry_size || cmd.num_sub_cqs != EFA_SUB_CQS)
		return 22;
	/* The core rounds to 2^n - 1; the device keeps the (power of two)
	 * depth the provider asked for. */
	entries = (r->cqe + 1) / 2;
	if (entries > EFA_MAX_CQ_DEPTH)
		return 22;
	r->cqe = entries;
	resp.q_mmap_size = PALIGN((uint64_t)cmd.cq_entry_size * entries * cmd.num_sub_cqs);
	resp.q_mmap_key = entry(r->ctx, r->obj, resp.q_mmap_size);
	resp.cq_idx = (uint16_t)(r->obj ? r->obj->handle : 0);
	/* Every CQ gets its doorbell page, with a completion channel or
	 * without: the provider's req_notify_cq (efa_arm_cq) writes the
	 * doorbell without looking whether there is one, so a CQ without
	 * one (a workload whose create_comp_channel failed) would kill the
	 * process there. */
	{
		resp.comp_mask |= EFA_CREATE_CQ_RESP_DB_OFF;
		resp.db_off = 0x100 + 8 * (uint32_t)resp.cq_idx;
		resp.db_mmap_key = entry(r->ctx, r->obj, PG);
	}
	if (!resp.q_mmap_key || ((resp.comp_mask & EFA_CREATE_CQ_RESP_DB_OFF) && !resp.db_mmap_key))
		return 12;
	sti_put(r, &resp, sizeof(resp));
	return 0;
}

static int create_qp(struct sti_req *r)
{
	struct efa_ibv_create_qp cmd = { 0 };
	struct efa_ibv_create_qp_resp resp = { 0 };

	if (!r->uin || r->uin_len < sizeof(cmd) || !r->uout || r->uout_len < sizeof(resp))
		return 22;
	memcpy(&cmd, r->uin, sizeof(cmd));
	if (r->qp_type != IB_UVERBS_QPT_UD && r->qp_type != IB_UVERBS_QPT_DRIVER)
		return 95; /* EOPNOTSUPP */
	if (cmd.comp_mask)
		return 95;
	if (r->qp_type == IB_UVERBS_QPT_DRIVER && cmd.driver_qp_type != EFA_QP_DRIVER_TYPE_SRD)
		return 22;
	/* efa_qp_validate_cap's limits: the core model checks them (lim) */
	if (!cmd.sq_ring_size || cmd.sq_ring_size > EFA_MAX_LLQ * 2)
		return 22;
	resp.sq_db_offset = 0x20;
	resp.rq_db_offset = 0x40;
	resp.llq_desc_offset = 0;
	resp.sq_db_mmap_key = entry(r->ctx, r->obj, PG);
	resp.llq_desc_mmap_key = entry(r->ctx, r->obj, cmd.sq_ring_size);
	if (cmd.rq_ring_size) {
		resp.rq_db_mmap_key = entry(r->ctx, r->obj, PG);
		resp.rq_mmap_size = PALIGN(cmd.rq_ring_size);
		resp.rq_mmap_key = entry(r->ctx, r->obj, resp.rq_mmap_size);
		if (!resp.rq_db_mmap_key || !resp.rq_mmap_key)
			return 12;
	}
	if (!resp.sq_db_mmap_key || !resp.llq_desc_mmap_key)
		return 12;
	/* One sub-CQ per CQ: index 0 on both sides. */
	sti_put(r, &resp, sizeof(resp));
	return 0;
}

static int hook(struct sti_req *r)
{
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct efa_ibv_alloc_ucontext_resp resp = { 0 };
		resp.cmds_supp_udata_mask = EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE | EFA_USER_CMDS_SUPP_UDATA_CREATE_AH;
		resp.sub_cqs_per_cq = EFA_SUB_CQS;
		resp.inline_buf_size = EFA_INLINE_BUF;
		resp.max_llq_size = EFA_MAX_LLQ;
		resp.max_tx_batch = EFA_MAX_TX_BATCH;
		resp.min_sq_wr = 0;
		if (r->uout)
			sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_QUERY_DEVICE: {
		struct efa_ibv_ex_query_device_resp resp = { 0 };
		if (!r->uout || !r->uout_len)
			return 0;
		resp.max_sq_wr = EFA_MAX_SQ_WR;
		resp.max_rq_wr = EFA_MAX_RQ_WR;
		resp.max_sq_sge = EFA_MAX_SQ_SGE;
		resp.max_rq_sge = EFA_MAX_RQ_SGE;
		resp.max_rdma_size = EFA_MAX_RDMA;
		resp.device_caps = EFA_CAPS;
		sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		struct efa_ibv_alloc_pd_resp resp = { 0 };
		resp.pdn = (uint16_t)(1 + (r->obj ? r->obj->handle : 0));
		if (r->uout)
			sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_CREATE_CQ:
		return create_cq(r);
	case STI_OP_CREATE_QP:
		return create_qp(r);
	case STI_OP_CREATE_AH: {
		struct efa_ibv_create_ah_resp resp = { 0 };
		/* The AH number only goes back through udata. */
		if (!r->uout || r->uout_len < sizeof(resp))
			return 95;
		resp.efa_address_handle = (uint16_t)(0x10 + (r->obj ? r->obj->handle : 0));
		sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_REG_MR:
	case STI_OP_REG_DMABUF_MR:
	case STI_OP_MODIFY_QP:
	case STI_OP_QUERY_QP:
		return 0;
	default:
		return 0;
	}
}

static int ioctl_m(struct sti_ctx *ctx, struct sti_ioctl *io)
{
	if (io->object == UVERBS_OBJECT_MR && io->method == EFA_METHOD_MR_QUERY) {
		struct sti_attr *h = sti_attr_find(io, EFA_ATTR_QUERY_MR_HANDLE);
		uint16_t v = 7, id; /* recv, rdma read and rdma recv ids valid */
		if (!h || !sti_get(ctx, (uint32_t)*h->data, STI_T_MR))
			return 22;
		{
			struct sti_attr *a = sti_attr_find(io, EFA_ATTR_QUERY_MR_RESP_IC_ID_VALIDITY);
			if (a)
				sti_attr_out(a, &v, sizeof(v));
		}
		for (uint16_t k = 0; k < 3; k++) {
			struct sti_attr *a = sti_attr_find(io, (uint16_t)(EFA_ATTR_QUERY_MR_RESP_RECV_IC_ID + k));
			id = (uint16_t)(k + 1);
			if (a)
				sti_attr_out(a, &id, sizeof(id));
		}
		return 0;
	}
	return -1;
}

static int mmap_q(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct efa_ctx *c = ctx->drv;

	for (unsigned i = 0; c && i < MAXE; i++)
		if (c->e[i].used && c->e[i].key == off)
			return PALIGN(len) == c->e[i].len ? 0 : 22;
	return 22;
}

static void release(struct sti_ctx *ctx, struct sti_obj *o)
{
	if (!o)
		return;
	if (o->type == STI_T_CQ || o->type == STI_T_QP) {
		drop_entries(ctx, o->handle);
	}
}

/* What efa_query_device reports and efa_create_cq / efa_qp_validate_cap
 * enforce (EINVAL above): the send and receive queues' own depths and
 * scatter entries, the inline buffer, the CQ depth. */
static const struct sti_limits efa_lim = {
	.max_send_wr = EFA_MAX_SQ_WR, .max_recv_wr = EFA_MAX_RQ_WR,
	.max_send_sge = EFA_MAX_SQ_SGE, .max_recv_sge = EFA_MAX_RQ_SGE,
	.max_inline = EFA_INLINE_BUF, .max_cqe = EFA_MAX_CQ_DEPTH,
};

const struct sti_driver sti_drv_efa = {
	.lim = &efa_lim,
	.name = "efa",
	.driver_id = RDMA_DRIVER_EFA,
	.vendor_id = 0x1d0f,
	.vendor_part_id = 0xefa0,
	.node_type = 1,
	.link_layer = 0,
	/* What the kernel driver has not: the core answers EOPNOTSUPP. */
	.lacks = STI_LACKS(REREG_MR) | STI_LACKS(ALLOC_MW) | STI_LACKS(RESIZE_CQ) |
		 STI_LACKS(CREATE_SRQ) | STI_LACKS(MODIFY_SRQ) | STI_LACKS(OPEN_XRCD) | STI_LACKS(CREATE_WQ) |
		 STI_LACKS(MODIFY_WQ) | STI_LACKS(CREATE_RWQ_IND_TBL) | STI_LACKS(CREATE_FLOW) |
		 STI_LACKS(ALLOC_DM) | STI_LACKS(REG_DM_MR),
	.hook = hook,
	.ioctl = ioctl_m,
	.mmap = mmap_q,
	.release = release,
};
