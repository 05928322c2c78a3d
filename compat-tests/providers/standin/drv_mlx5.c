/*
 * mlx5 (ConnectX-4, Ethernet port; rdma/mlx5-abi.h, rdma/mlx5_user_ioctl_*.h).
 *
 * What the model answers:
 *  - alloc_ucontext: the device's limits; the library asks for dynamic UARs
 *    (MLX5_LIB_CAP_DYN_UAR), so no bfregs are handed out with the context
 *    (tot_bfregs 0) and the library allocates its UARs with the UAR object's
 *    ALLOC method; the core clock page and the clock info page are mappable.
 *  - query_device_ex's udata (TSO, RSS, CQE compression, VXLAN offloads),
 *    alloc_pd (pdn), create_cq (cqn), create_srq (srqn), create_qp (bfreg
 *    index; TIR/TIS/RQ/SQ numbers for RAW_PACKET and RSS QPs), create_wq and
 *    create_rwq_ind_tbl (response_length), create_ah (the destination MAC).
 *  - mmaps on the command fd: UAR pages (legacy command/index offsets and the
 *    offsets the UAR object hands out), the core clock and clock info pages.
 *  - driver methods: UAR alloc/destroy, DEVX QUERY_EQN and QUERY_UAR, the
 *    DEVX object ALLOC_PD (the one firmware command modelled), mlx5's
 *    QUERY_PORT and PD_QUERY.  A general DEVX command (firmware data) is
 *    answered EOPNOTSUPP, other DEVX object commands EINVAL; objects a
 *    ConnectX-4 does not have (VAR, packet pacing) do not exist
 *    (EPROTONOSUPPORT), device memory (MEMIC) neither (ALLOC_DM: EOPNOTSUPP).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/mlx5-abi.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>

#include "standin.h"

#define PAGE 4096ULL
#define MAXMAP 256
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* mmap commands (the offset's page number: command << 8 | index) */
#define CMD_SHIFT 8
#define DYN_PGOFF_START (9ULL << 16) /* the offsets the UAR object hands out */

enum dkind { K_NONE, K_PD, K_CQ, K_SRQ, K_QP, K_UAR, K_DEVX_OBJ };

struct mlx5_obj {
	enum dkind kind;
	uint32_t num;      /* pdn, cqn, srqn, page id, firmware object id */
	uint64_t mmap_off; /* UAR: its mmap offset */
};

struct mlx5_ctx {
	int devx;          /* the context has a DEVX uid */
	int dyn_uar;       /* the library allocates its UARs */
	uint32_t tot_bfregs;
	uint32_t next_pdn, next_cqn, next_srqn, next_rsc, next_page, next_dyn;
	uint32_t next_fw_pd;
	struct {
		uint64_t off;
		uint32_t len;
		int used;
	} dyn[MAXMAP];
};

static struct mlx5_ctx *mctx(struct sti_ctx *ctx)
{
	if (!ctx->drv) {
		struct mlx5_ctx *m = calloc(1, sizeof(struct mlx5_ctx));
		if (!m)
			return NULL;
		m->next_pdn = 0x10;
		m->next_cqn = 0x400;
		m->next_srqn = 0x800;
		m->next_rsc = 0;
		m->next_page = 0x20;
		m->next_fw_pd = 0x80;
		ctx->drv = m;
	}
	return ctx->drv;
}

static struct mlx5_obj *dobj(struct sti_obj *o, enum dkind k, uint32_t num)
{
	struct mlx5_obj *d;

	if (!o)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->kind = k;
	d->num = num;
	o->drv = d;
	return d;
}

/* ------------------------------------------------------------ udata */
static int get_context(struct sti_req *r)
{
	struct mlx5_ib_alloc_ucontext_req_v2 q;
	struct mlx5_ib_alloc_ucontext_resp p;
	struct mlx5_ctx *m = mctx(r->ctx);

	if (!m)
		return ENOMEM;
	memset(&q, 0, sizeof(q));
	if (!r->uin || r->uin_len < offsetof(struct mlx5_ib_alloc_ucontext_req_v2, flags))
		return EINVAL;
	memcpy(&q, r->uin, MIN(r->uin_len, sizeof(q)));
	if (r->uin_len > sizeof(q))
		for (size_t i = sizeof(q); i < r->uin_len; i++)
			if (((const uint8_t *)r->uin)[i])
				return EOPNOTSUPP;
	if ((q.flags & ~(uint32_t)MLX5_IB_ALLOC_UCTX_DEVX) || q.comp_mask || q.reserved0 || q.reserved1 ||
	    q.reserved2)
		return EOPNOTSUPP;
	if (q.total_num_bfregs > 512 || (q.total_num_bfregs && q.num_low_latency_bfregs > q.total_num_bfregs - 1))
		return ENOMEM;
	m->devx = !!(q.flags & MLX5_IB_ALLOC_UCTX_DEVX);
	/* Dynamic UARs come with the UAR object (an ioctl method): a kernel
	 * without the ioctl interface predates them and hands out bfregs. */
	m->dyn_uar = !!(q.lib_caps & MLX5_LIB_CAP_DYN_UAR) && !sti_write_only();
	m->tot_bfregs = m->dyn_uar ? 0 : (q.total_num_bfregs ? q.total_num_bfregs : 4);

	memset(&p, 0, sizeof(p));
	p.qp_tab_size = 1 << 18;
	p.bf_reg_size = 512;
	p.tot_bfregs = m->tot_bfregs;
	p.cache_line_size = 64;
	p.max_sq_desc_sz = 1024;
	p.max_rq_desc_sz = 512;
	p.max_send_wqebb = 1 << 15;
	p.max_recv_wr = 1 << 15;
	p.max_srq_recv_wr = 1 << 15;
	p.num_ports = 1;
	p.flow_action_flags = 0;
	p.comp_mask = MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET |
		      MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY;
	p.cqe_version = MIN(q.max_cqe_version, 1);
	p.cmds_supp_uhw = MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | MLX5_USER_CMDS_SUPP_UHW_CREATE_AH;
	p.eth_min_inline = MLX5_USER_INLINE_MODE_L2;
	p.clock_info_versions = 1 << MLX5_IB_CLOCK_INFO_V1;
	p.hca_core_clock_offset = 0; /* internal_timer_h at 0x1000 of the init segment */
	p.log_uar_size = 12;
	p.num_uars_per_page = 1;
	p.num_dyn_bfregs = m->dyn_uar ? 0 : 16;
	p.dump_fill_mkey = 0x7;
	p.response_length = (uint32_t)MIN(r->uout_len, sizeof(p));
	sti_put(r, &p, sizeof(p));
	return 0;
}

static int query_device(struct sti_req *r)
{
	struct mlx5_ib_query_device_resp p;

	if (!r->uout_len)
		return 0;
	memset(&p, 0, sizeof(p));
	p.tso_caps.max_tso = 1 << 18;
	p.tso_caps.supported_qpts = 1 << IB_UVERBS_QPT_RAW_PACKET;
	p.rss_caps.rx_hash_fields_mask = 0xff; /* IPv4/IPv6 addresses, TCP/UDP ports */
	p.rss_caps.rx_hash_function = MLX5_RX_HASH_FUNC_TOEPLITZ;
	p.cqe_comp_caps.max_num = 64;
	p.cqe_comp_caps.supported_format = MLX5_IB_CQE_RES_FORMAT_HASH | MLX5_IB_CQE_RES_FORMAT_CSUM;
	p.tunnel_offloads_caps = MLX5_IB_TUNNELED_OFFLOADS_VXLAN;
	p.response_length = (uint32_t)MIN(r->uout_len, sizeof(p));
	sti_put(r, &p, sizeof(p));
	return 0;
}

/* A TIR/TIS/RQ/SQ number: kept under 0x100 so that the log's hex does not
 * take a (comp_mask, tirn) or (tisn, rqn) pair for a pointer and mask it. */
static uint32_t rsc(struct mlx5_ctx *m)
{
	return 0x10 + (m->next_rsc++ % 0xe0);
}

static int create_qp(struct sti_req *r)
{
	struct mlx5_ctx *m = mctx(r->ctx);
	struct mlx5_ib_create_qp_resp p;
	int rss = r->uin_len >= offsetof(struct mlx5_ib_create_qp_rss, comp_mask);

	if (!m)
		return ENOMEM;
	memset(&p, 0, sizeof(p));
	if (rss) {
		struct mlx5_ib_create_qp_rss q;
		memset(&q, 0, sizeof(q));
		memcpy(&q, r->uin, MIN(r->uin_len, sizeof(q)));
		if (r->qp_type != IB_UVERBS_QPT_RAW_PACKET || q.comp_mask)
			return EOPNOTSUPP;
		if (q.rx_hash_function != MLX5_RX_HASH_FUNC_TOEPLITZ || q.rx_key_len > sizeof(q.rx_hash_key))
			return EOPNOTSUPP;
		p.comp_mask = MLX5_IB_CREATE_QP_RESP_MASK_TIRN;
		p.tirn = rsc(m);
	} else {
		struct mlx5_ib_create_qp q;
		memset(&q, 0, sizeof(q));
		if (r->uin && r->uin_len)
			memcpy(&q, r->uin, MIN(r->uin_len, sizeof(q)));
		if (q.flags & (MLX5_QP_FLAG_BFREG_INDEX | MLX5_QP_FLAG_UAR_PAGE_INDEX))
			p.bfreg_index = 1u << 31; /* MLX5_IB_INVALID_BFREG: the library's own UAR */
		else if (m->tot_bfregs > 1)
			p.bfreg_index = 1 + (m->next_rsc % (m->tot_bfregs - 1));
		if (r->qp_type == IB_UVERBS_QPT_RAW_PACKET) {
			if (r->max_send_wr) {
				p.comp_mask |= MLX5_IB_CREATE_QP_RESP_MASK_TISN | MLX5_IB_CREATE_QP_RESP_MASK_SQN;
				p.tisn = rsc(m);
				p.sqn = rsc(m);
			}
			if (r->max_recv_wr) {
				p.comp_mask |= MLX5_IB_CREATE_QP_RESP_MASK_TIRN | MLX5_IB_CREATE_QP_RESP_MASK_RQN;
				p.tirn = rsc(m);
				p.rqn = rsc(m);
			}
		}
	}
	if (r->uout_len)
		sti_put(r, &p, sizeof(p));
	return 0;
}

static int hook(struct sti_req *r)
{
	struct mlx5_ctx *m = mctx(r->ctx);

	if (!m)
		return ENOMEM;
	switch (r->op) {
	case STI_OP_GET_CONTEXT:
		return get_context(r);
	case STI_OP_QUERY_DEVICE:
		return query_device(r);
	case STI_OP_ALLOC_PD: {
		struct mlx5_ib_alloc_pd_resp p = { .pdn = m->next_pdn++ };
		if (!dobj(r->obj, K_PD, p.pdn))
			return ENOMEM;
		sti_put(r, &p, sizeof(p));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct mlx5_ib_create_cq_resp p = { .cqn = m->next_cqn++ };
		struct mlx5_ib_create_cq q;
		memset(&q, 0, sizeof(q));
		if (r->uin)
			memcpy(&q, r->uin, MIN(r->uin_len, sizeof(q)));
		if (r->uin_len >= offsetof(struct mlx5_ib_create_cq, cqe_comp_en) && q.cqe_size != 64 &&
		    q.cqe_size != 128)
			return EINVAL;
		if (!dobj(r->obj, K_CQ, p.cqn))
			return ENOMEM;
		sti_put(r, &p, sizeof(p));
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		struct mlx5_ib_create_srq_resp p = { .srqn = m->next_srqn++ };
		if (!dobj(r->obj, K_SRQ, p.srqn))
			return ENOMEM;
		sti_put(r, &p, sizeof(p));
		return 0;
	}
	case STI_OP_CREATE_QP:
		return create_qp(r);
	case STI_OP_CREATE_WQ: {
		struct mlx5_ib_create_wq_resp p = { .response_length = sizeof(p) };
		if (r->uout_len)
			sti_put(r, &p, sizeof(p));
		return 0;
	}
	case STI_OP_CREATE_RWQ_IND_TBL: {
		struct mlx5_ib_create_rwq_ind_tbl_resp p = { .response_length = sizeof(p) };
		if (r->uout_len)
			sti_put(r, &p, sizeof(p));
		return 0;
	}
	case STI_OP_CREATE_AH: {
		struct mlx5_ib_create_ah_resp p = { .response_length = sizeof(p),
						    .dmac = { 0x00, 0x02, 0xc9, 0xa1, 0xb2, 0x01 } };
		if (r->uout_len)
			sti_put(r, &p, sizeof(p));
		return 0;
	}
	case STI_OP_ALLOC_DM:
		/* A ConnectX-4 has no device memory (MEMIC).  (Were it
		 * modelled, the answer would be the driver attributes
		 * MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET/_PAGE_INDEX, which
		 * the core model does not hand to the hook.) */
		return EOPNOTSUPP;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------- mmaps */
static int mmap_cb(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct mlx5_ctx *m = mctx(ctx);
	uint64_t pg = off / PAGE;
	unsigned cmd, idx;

	if (!m || off % PAGE)
		return EINVAL;
	for (unsigned i = 0; i < MAXMAP; i++)
		if (m->dyn[i].used && m->dyn[i].off == off)
			return len == m->dyn[i].len ? 0 : EINVAL;
	if (pg >= DYN_PGOFF_START)
		return EINVAL;
	cmd = (unsigned)(pg >> CMD_SHIFT) & 0xff;
	idx = (unsigned)(pg & 0xff) | (unsigned)((pg >> 16) << 8);
	switch (cmd) {
	case MLX5_IB_MMAP_REGULAR_PAGE:
	case MLX5_IB_MMAP_WC_PAGE:
	case MLX5_IB_MMAP_NC_PAGE:
	case MLX5_IB_MMAP_ALLOC_WC:
		/* The context's own UARs: one UAR a page (num_uars_per_page),
		 * two bfregs of its four usable by software
		 * (MLX5_NON_FP_BFREGS_PER_UAR), so tot_bfregs / 2 pages. */
		if (len != PAGE)
			return EINVAL;
		if (cmd == MLX5_IB_MMAP_ALLOC_WC || idx < (m->tot_bfregs + 1) / 2)
			return 0;
		return EINVAL;
	case MLX5_IB_MMAP_CORE_CLOCK:
	case MLX5_IB_MMAP_CLOCK_INFO:
		return len == PAGE ? 0 : EINVAL;
	default:
		return EINVAL;
	}
}

static void release(struct sti_ctx *ctx, struct sti_obj *o)
{
	struct mlx5_ctx *m = ctx->drv;

	if (!o)
		return;
	if (o->drv) {
		struct mlx5_obj *d = o->drv;
		if (d->kind == K_UAR && m)
			for (unsigned i = 0; i < MAXMAP; i++)
				if (m->dyn[i].used && m->dyn[i].off == d->mmap_off)
					m->dyn[i].used = 0;
	}
}

/* ------------------------------------------------------- driver methods */
static uint64_t in_u64(struct sti_ioctl *io, uint16_t id, uint64_t dflt)
{
	struct sti_attr *a = sti_attr_find(io, id);
	uint64_t v = 0;

	if (!a)
		return dflt;
	if (a->len <= 8) {
		memcpy(&v, a->data, a->len ? a->len : 8);
	} else {
		memcpy(&v, sti_attr_in(a), 8);
	}
	if (a->len && a->len < 8)
		v &= (1ULL << (8 * a->len)) - 1;
	return v;
}

static int out_attr(struct sti_ioctl *io, uint16_t id, const void *p, size_t n)
{
	struct sti_attr *a = sti_attr_find(io, id);

	if (!a)
		return EINVAL;
	return sti_attr_out(a, p, n);
}

static struct sti_obj *drv_obj(struct sti_ctx *ctx, uint64_t h, enum dkind k)
{
	struct sti_obj *o = sti_get(ctx, (uint32_t)h, STI_T_DRIVER);

	if (!o || h > 0xffffffffULL || !o->drv || ((struct mlx5_obj *)o->drv)->kind != k)
		return NULL;
	return o;
}

#define NS(x) (0x1000u + (x))

static int uar_alloc(struct sti_ctx *ctx, struct mlx5_ctx *m, struct sti_ioctl *io)
{
	struct sti_attr *h = sti_attr_find(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE);
	uint64_t type = in_u64(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, ~0ULL);
	struct mlx5_obj *d;
	struct sti_obj *o;
	uint64_t off;
	uint32_t len = PAGE, page;
	unsigned slot;

	if (!h || (type != MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF && type != MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC))
		return EINVAL;
	if (!sti_attr_find(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET) ||
	    !sti_attr_find(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH) ||
	    !sti_attr_find(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID))
		return EINVAL;
	for (slot = 0; slot < MAXMAP && m->dyn[slot].used; slot++)
		;
	if (slot == MAXMAP)
		return ENOMEM;
	o = sti_new(ctx, STI_T_DRIVER);
	if (!o)
		return ENOMEM;
	page = m->next_page++;
	off = (DYN_PGOFF_START + m->next_dyn++) * PAGE;
	d = dobj(o, K_UAR, page);
	if (!d) {
		sti_free(ctx, o);
		return ENOMEM;
	}
	d->mmap_off = off;
	m->dyn[slot].off = off;
	m->dyn[slot].len = len;
	m->dyn[slot].used = 1;
	*h->data = o->handle;
	out_attr(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, &off, sizeof(off));
	out_attr(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, &len, sizeof(len));
	out_attr(io, MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, &page, sizeof(page));
	return 0;
}

/* A DEVX object create: the one command modelled is ALLOC_PD. */
static int devx_obj_create(struct sti_ctx *ctx, struct mlx5_ctx *m, struct sti_ioctl *io)
{
	struct sti_attr *h = sti_attr_find(io, MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE);
	struct sti_attr *in = sti_attr_find(io, MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN);
	struct sti_attr *outa = sti_attr_find(io, MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT);
	uint32_t hdr, opcode, mbox[4] = { 0, 0, 0, 0 };
	struct sti_obj *o;

	if (!m->devx)
		return EINVAL;
	if (!h || !in || !outa || in->len < 8 || outa->len < 16)
		return EINVAL;
	memcpy(&hdr, sti_attr_in(in), 4);
	opcode = be32toh(hdr) >> 16;
	if (opcode != 0x800 /* MLX5_CMD_OP_ALLOC_PD */)
		return EINVAL;
	o = sti_new(ctx, STI_T_DRIVER);
	if (!o)
		return ENOMEM;
	if (!dobj(o, K_DEVX_OBJ, m->next_fw_pd++)) {
		sti_free(ctx, o);
		return ENOMEM;
	}
	mbox[2] = htobe32(((struct mlx5_obj *)o->drv)->num & 0xffffff);
	*h->data = o->handle;
	sti_attr_out(outa, mbox, sizeof(mbox));
	return 0;
}

static int del_obj(struct sti_ctx *ctx, struct sti_ioctl *io, uint16_t id, enum dkind k)
{
	struct sti_obj *o = drv_obj(ctx, in_u64(io, id, ~0ULL), k);

	if (!o)
		return EINVAL;
	sti_free(ctx, o);
	return 0;
}

static int drv_ioctl(struct sti_ctx *ctx, struct sti_ioctl *io)
{
	struct mlx5_ctx *m = mctx(ctx);

	if (!m)
		return ENOMEM;
	if (!ctx->have_ucontext)
		return EINVAL;
	switch (io->object) {
	case UVERBS_OBJECT_DEVICE:
		if (io->method == MLX5_IB_METHOD_QUERY_PORT) {
			struct mlx5_ib_uapi_query_port p;
			if (in_u64(io, MLX5_IB_ATTR_QUERY_PORT_PORT_NUM, 0) != 1)
				return EINVAL;
			memset(&p, 0, sizeof(p));
			return out_attr(io, MLX5_IB_ATTR_QUERY_PORT, &p, sizeof(p));
		}
		return -1;
	case UVERBS_OBJECT_PD:
		if (io->method == NS(0) /* MLX5_IB_METHOD_PD_QUERY */) {
			struct sti_obj *o = sti_get(ctx, (uint32_t)in_u64(io, NS(0), ~0ULL), STI_T_PD);
			uint32_t pdn;
			if (!o || !o->drv)
				return EINVAL;
			pdn = ((struct mlx5_obj *)o->drv)->num;
			return out_attr(io, NS(1), &pdn, sizeof(pdn));
		}
		return -1;
	case MLX5_IB_OBJECT_DEVX:
		switch (io->method) {
		case MLX5_IB_METHOD_DEVX_OTHER:
			/* Firmware commands (QUERY_HCA_CAP...): not modelled. */
			return EOPNOTSUPP;
		case MLX5_IB_METHOD_DEVX_QUERY_UAR: {
			uint32_t idx = (uint32_t)in_u64(io, MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX, ~0ULL);
			if (m->dyn_uar || idx >= m->tot_bfregs)
				return EINVAL;
			idx /= 4;
			return out_attr(io, MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX, &idx, sizeof(idx));
		}
		case MLX5_IB_METHOD_DEVX_QUERY_EQN: {
			uint32_t vec = (uint32_t)in_u64(io, MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC, ~0ULL), eqn;
			if (vec >= 4)
				return EINVAL;
			eqn = 7 + vec;
			return out_attr(io, MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN, &eqn, sizeof(eqn));
		}
		case MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT:
			return EOPNOTSUPP;
		}
		return -1;
	case MLX5_IB_OBJECT_DEVX_OBJ:
		switch (io->method) {
		case MLX5_IB_METHOD_DEVX_OBJ_CREATE:
			return devx_obj_create(ctx, m, io);
		case MLX5_IB_METHOD_DEVX_OBJ_DESTROY:
			return del_obj(ctx, io, MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE, K_DEVX_OBJ);
		case MLX5_IB_METHOD_DEVX_OBJ_MODIFY:
		case MLX5_IB_METHOD_DEVX_OBJ_QUERY:
		case MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY:
			return EOPNOTSUPP;
		}
		return -1;
	case MLX5_IB_OBJECT_UAR:
		switch (io->method) {
		case MLX5_IB_METHOD_UAR_OBJ_ALLOC:
			return uar_alloc(ctx, m, io);
		case MLX5_IB_METHOD_UAR_OBJ_DESTROY:
			return del_obj(ctx, io, MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, K_UAR);
		}
		return -1;
	case MLX5_IB_OBJECT_DEVX_UMEM:
	case MLX5_IB_OBJECT_FLOW_MATCHER:
	case MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD:
	case MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD:
	case MLX5_IB_OBJECT_STEERING_ANCHOR:
		return EOPNOTSUPP;
	case MLX5_IB_OBJECT_VAR: /* virtio emulation: not on a ConnectX-4 */
	case MLX5_IB_OBJECT_PP:  /* packet pacing: not on a ConnectX-4 */
	default:
		return -1;
	}
}

/* -------------------------------------------------- attribute kinds (log) */
/* Ids newer than some releases' headers (rdma-core's kernel-headers at
 * sid's version): the driver attributes of a few core methods, VAR's flags,
 * the flow matcher's port and the data-direct sysfs path. */
#define A_NS 0x1000u       /* UVERBS_ID_DRIVER_NS */
#define A_NS_UHW 0x1002u   /* UVERBS_ID_DRIVER_NS_WITH_UHW: after UHW_IN/OUT */
#define VAR_ALLOC_FLAGS (MLX5_IB_ATTR_VAR_OBJ_ALLOC_PAGE_ID + 1)
#define FLOW_MATCHER_IB_PORT (MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE + 1)
#define METHOD_GET_DATA_DIRECT_SYSFS_PATH (MLX5_IB_METHOD_QUERY_PORT + 1)

/* How the log reads an attribute of an mlx5 driver method, or a driver
 * attribute (id 0x1000 and up) of a core method: STI_A_*, 0 unknown. */
static int attr_kind(uint16_t obj, uint16_t meth, uint16_t attr)
{
	const int IN = STI_A_IN, OUT = STI_A_OUT, IDR = STI_A_IDR, NEW = STI_A_NEW, DEL = STI_A_DEL, FD = STI_A_FD,
		  FDNEW = STI_A_FDNEW;
	unsigned a = attr >= A_NS ? attr - A_NS : 0xffff; /* index among the driver's ids */

	if (attr < A_NS)
		return 0; /* core attributes: the core's table */
	switch (obj) {
	case UVERBS_OBJECT_DEVICE:
		if (meth == MLX5_IB_METHOD_QUERY_PORT)
			return a == 0 ? IN : a == 1 ? OUT : 0; /* PORT_NUM, QUERY_PORT */
		if (meth == METHOD_GET_DATA_DIRECT_SYSFS_PATH)
			return a == 0 ? OUT : 0;
		if (meth == UVERBS_METHOD_QUERY_CONTEXT)
			return a == 0 ? OUT : 0; /* MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX */
		return 0;
	case UVERBS_OBJECT_PD:
		if (meth == MLX5_IB_METHOD_PD_QUERY)
			return a == 0 ? IDR : a == 1 ? OUT : 0; /* HANDLE, RESP_PDN */
		return 0;
	case UVERBS_OBJECT_CQ:
		/* sid: UAR_INDEX, DBR_BUF_UMEM (a UMEM object) */
		if (meth == UVERBS_METHOD_CQ_CREATE)
			return attr == A_NS_UHW ? IN : attr == A_NS_UHW + 1 ? IDR : 0;
		return 0;
	case UVERBS_OBJECT_QP:
		if (meth == UVERBS_METHOD_QP_CREATE)
			return attr == A_NS_UHW ? IDR : 0; /* sid: DBR_BUF_UMEM */
		return 0;
	case UVERBS_OBJECT_MR:
		if (meth == UVERBS_METHOD_REG_DMABUF_MR)
			return a == 0 ? IN : 0; /* sid: mlx5 ACCESS_FLAGS */
		return 0;
	case UVERBS_OBJECT_DM:
		switch (meth) {
		case UVERBS_METHOD_DM_ALLOC: /* RESP_START_OFFSET, RESP_PAGE_INDEX, REQ_TYPE */
			return a <= 1 ? OUT : a == 2 ? IN : 0;
		case MLX5_IB_METHOD_DM_MAP_OP_ADDR: /* REQ_HANDLE, REQ_OP, RESP_START_OFFSET, RESP_PAGE_INDEX */
			return a == 0 ? IDR : a == 1 ? IN : a <= 3 ? OUT : 0;
		case MLX5_IB_METHOD_DM_QUERY: /* REQ_HANDLE, RESP_START_OFFSET, _PAGE_INDEX, _LENGTH */
			return a == 0 ? IDR : a <= 3 ? OUT : 0;
		}
		return 0;
	case UVERBS_OBJECT_FLOW_ACTION:
		switch (meth) {
		case UVERBS_METHOD_FLOW_ACTION_ESP_CREATE:
			return a == 0 ? IN : 0; /* MLX5_IB_ATTR_CREATE_FLOW_ACTION_FLAGS */
		case MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER: /* HANDLE, ACTIONS_PRM, FT_TYPE */
			return a == 0 ? NEW : a <= 2 ? IN : 0;
		case MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT: /* HANDLE, TYPE, FT_TYPE, DATA_BUF */
			return a == 0 ? NEW : a <= 3 ? IN : 0;
		}
		return 0;
	case UVERBS_OBJECT_FLOW:
		switch (meth) {
		case MLX5_IB_METHOD_CREATE_FLOW:
			switch (attr) {
			case MLX5_IB_ATTR_CREATE_FLOW_HANDLE:
				return NEW;
			case MLX5_IB_ATTR_CREATE_FLOW_DEST_QP:
			case MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX:
			case MLX5_IB_ATTR_CREATE_FLOW_MATCHER:
				return IDR;
			case MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE:
			case MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS: /* arrays of handles */
			case MLX5_IB_ATTR_CREATE_FLOW_TAG:
			case MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX:
			case MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX_OFFSET:
			case MLX5_IB_ATTR_CREATE_FLOW_FLAGS:
				return IN;
			}
			return 0;
		case MLX5_IB_METHOD_DESTROY_FLOW:
			return a == 0 ? DEL : 0;
		}
		return 0;
	case MLX5_IB_OBJECT_DEVX:
		switch (meth) {
		case MLX5_IB_METHOD_DEVX_OTHER: /* CMD_IN, CMD_OUT */
		case MLX5_IB_METHOD_DEVX_QUERY_UAR: /* USER_IDX, DEV_IDX */
		case MLX5_IB_METHOD_DEVX_QUERY_EQN: /* USER_VEC, DEV_EQN */
			return a == 0 ? IN : a == 1 ? OUT : 0;
		case MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT:
			switch (attr) {
			case MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE:
			case MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_NUM: /* an eventfd */
				return FD;
			case MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE:
				return IDR;
			case MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST:
			case MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE:
				return IN;
			}
			return 0;
		}
		return 0;
	case MLX5_IB_OBJECT_DEVX_OBJ:
		switch (meth) {
		case MLX5_IB_METHOD_DEVX_OBJ_CREATE: /* HANDLE, CMD_IN, CMD_OUT */
			return a == 0 ? NEW : a == 1 ? IN : a == 2 ? OUT : 0;
		case MLX5_IB_METHOD_DEVX_OBJ_DESTROY:
			return a == 0 ? DEL : 0;
		case MLX5_IB_METHOD_DEVX_OBJ_MODIFY:
		case MLX5_IB_METHOD_DEVX_OBJ_QUERY:
			return a == 0 ? IDR : a == 1 ? IN : a == 2 ? OUT : 0;
		case MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY: /* HANDLE, CMD_IN, FD, WR_ID, OUT_LEN */
			return a == 0 ? IDR : a == 2 ? FD : a <= 4 ? IN : 0;
		}
		return 0;
	case MLX5_IB_OBJECT_DEVX_UMEM:
		switch (meth) {
		case MLX5_IB_METHOD_DEVX_UMEM_REG:
			switch (attr) {
			case MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE:
				return NEW;
			case MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR:
			case MLX5_IB_ATTR_DEVX_UMEM_REG_LEN:
			case MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS:
			case MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP:
				return IN;
			case MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID:
				return OUT;
			case MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD:
				return FD;
			}
			return 0;
		case MLX5_IB_METHOD_DEVX_UMEM_DEREG:
			return a == 0 ? DEL : 0;
		}
		return 0;
	case MLX5_IB_OBJECT_FLOW_MATCHER:
		switch (meth) {
		case MLX5_IB_METHOD_FLOW_MATCHER_CREATE:
			/* HANDLE; MATCH_MASK, FLOW_TYPE, MATCH_CRITERIA, FLOW_FLAGS,
			 * FT_TYPE, (sid) IB_PORT */
			return a == 0 ? NEW : attr <= FLOW_MATCHER_IB_PORT ? IN : 0;
		case MLX5_IB_METHOD_FLOW_MATCHER_DESTROY:
			return a == 0 ? DEL : 0;
		}
		return 0;
	case MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD:
		return meth == MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC && a == 0 ? FDNEW : 0;
	case MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD:
		if (meth == MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC)
			return a == 0 ? FDNEW : a == 1 ? IN : 0; /* HANDLE, FLAGS */
		return 0;
	case MLX5_IB_OBJECT_VAR:
		switch (meth) {
		case MLX5_IB_METHOD_VAR_OBJ_ALLOC:
			/* HANDLE, MMAP_OFFSET, MMAP_LENGTH, PAGE_ID, (sid) FLAGS */
			return a == 0 ? NEW : attr < VAR_ALLOC_FLAGS ? OUT : attr == VAR_ALLOC_FLAGS ? IN : 0;
		case MLX5_IB_METHOD_VAR_OBJ_DESTROY:
			return a == 0 ? DEL : 0;
		}
		return 0;
	case MLX5_IB_OBJECT_PP:
		switch (meth) {
		case MLX5_IB_METHOD_PP_OBJ_ALLOC: /* HANDLE, CTX, FLAGS, INDEX */
			return a == 0 ? NEW : a <= 2 ? IN : a == 3 ? OUT : 0;
		case MLX5_IB_METHOD_PP_OBJ_DESTROY:
			return a == 0 ? DEL : 0;
		}
		return 0;
	case MLX5_IB_OBJECT_UAR:
		switch (meth) {
		case MLX5_IB_METHOD_UAR_OBJ_ALLOC: /* HANDLE, TYPE, MMAP_OFFSET, MMAP_LENGTH, PAGE_ID */
			return a == 0 ? NEW : a == 1 ? IN : a <= 4 ? OUT : 0;
		case MLX5_IB_METHOD_UAR_OBJ_DESTROY:
			return a == 0 ? DEL : 0;
		}
		return 0;
	case MLX5_IB_OBJECT_STEERING_ANCHOR:
		switch (meth) {
		case MLX5_IB_METHOD_STEERING_ANCHOR_CREATE: /* HANDLE, FT_TYPE, PRIORITY, FT_ID */
			return a == 0 ? NEW : a <= 2 ? IN : a == 3 ? OUT : 0;
		case MLX5_IB_METHOD_STEERING_ANCHOR_DESTROY:
			return a == 0 ? DEL : 0;
		}
		return 0;
	}
	return 0;
}

const struct sti_driver sti_drv_mlx5 = {
	.name = "mlx5",
	.driver_id = RDMA_DRIVER_MLX5,
	.vendor_id = 0x02c9,
	.vendor_part_id = 4115,
	.node_type = 1,
	.link_layer = 2,
	.caps = STI_CAP_DM, /* the method exists; a ConnectX-4 has no memory for it */
	.hook = hook,
	.ioctl = drv_ioctl,
	.mmap = mmap_cb,
	.attr_kind = attr_kind,
	.release = release,
};
