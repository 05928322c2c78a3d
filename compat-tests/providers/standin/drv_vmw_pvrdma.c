/*
 * vmw_pvrdma (VMware paravirtual RDMA, rdma/vmw_pvrdma-abi.h), a RoCE
 * port.  The rings live in user memory passed in the create requests;
 * the driver data out is the QP table size (the provider sizes its
 * qp-number -> QP table with it and indexes it by the QP handle's low 16
 * bits: a zero size makes that an out-of-bounds write) and the PD, CQ,
 * SRQ and QP numbers/handles.  One mapping: the UAR page at offset 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>

#include "standin.h"

struct pv_pair_m {
	uint32_t a;
	uint32_t b;
};

#define PG 4096
#define QP_TAB_SIZE 0xffff

struct pv_ctx {
	uint32_t next_pd, next_cq, next_srq;
};

static struct pv_ctx *pctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct pv_ctx));
}

static void put(struct sti_req *r, uint32_t a, uint32_t b)
{
	struct pv_pair_m p = { a, b };
	size_t n = sizeof(p);

	if (n > r->uout_len)
		n = r->uout_len;
	memcpy(r->uout, &p, n);
	r->uout_written = n;
}

/* The QP number the core (uverbs.c) gives the QP being made. */
static uint32_t next_qpn(struct sti_ctx *ctx)
{
	return ctx->next_qpn ? ctx->next_qpn : 0x100 + 0x1000 * (uint32_t)ctx->dev.index;
}

static int hook(struct sti_req *r)
{
	struct pv_ctx *c = pctx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT:
		put(r, QP_TAB_SIZE, 0);
		return 0;
	case STI_OP_ALLOC_PD:
		put(r, 1 + c->next_pd++, 0);
		return 0;
	case STI_OP_CREATE_CQ:
		put(r, 1 + c->next_cq++, 0);
		return 0;
	case STI_OP_CREATE_SRQ:
		put(r, 1 + c->next_srq++, 0);
		return 0;
	case STI_OP_CREATE_QP: {
		uint32_t qpn = next_qpn(r->ctx);
		if (r->qp_type != 2 /* RC */ && r->qp_type != 4 /* UD */ && r->qp_type != 3 /* UC */)
			return 95; /* EOPNOTSUPP */
		if ((qpn & 0xffff) >= QP_TAB_SIZE)
			return 12;
		put(r, qpn, qpn);
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_uar(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	(void)ctx;
	(void)mem;
	return off == 0 && len == PG ? 0 : 22;
}

/*
 * pvrdma's create_cq request (struct pvrdma_create_cq) sets buf_addr and
 * buf_size and leaves `reserved` as its stack had it: cleared in the log.
 */
static void norm_in(uint32_t cmd, uint8_t *b, size_t len)
{
	if (sti_cmd_is(cmd, IB_USER_VERBS_CMD_CREATE_CQ, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE) && len >= 16)
		memset(b + 12, 0, 4);
}

/* The device's SRQ and CQ depths (pvrdma_create_srq and pvrdma_create_cq
 * refuse more, EINVAL): powers of two, which the provider rounds what it
 * asks up to. */
static const struct sti_limits vmw_pvrdma_lim = {
	.max_srq_wr = 32768, .max_cqe = 65536,
	/* pvrdma_reg_user_mr: EINVAL past the device's max_mr_size (the
	 * host's figure: 4 GiB here), before the memory is pinned */
	.max_mr_size = 1ULL << 32, .mr_size_err = EINVAL,
};

const struct sti_driver sti_drv_vmw_pvrdma = {
	.lim = &vmw_pvrdma_lim,
	.name = "vmw_pvrdma",
	.driver_id = RDMA_DRIVER_VMW_PVRDMA,
	.vendor_id = 0x15ad,
	.vendor_part_id = 0x0820,
	.node_type = 1,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_uar,
	.norm_in = norm_in,
};
