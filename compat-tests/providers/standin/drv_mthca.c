/*
 * mthca (Mellanox InfiniHost, rdma/mthca-abi.h), an InfiniBand port; the
 * fixture's device (15b3:6282, MT25218 in native mode) is mem-free
 * ("Arbel"): doorbell records live in user pages the provider allocates
 * from a table sized by uarc_size.  Queues live in user memory registered
 * by the provider (the create requests carry their lkeys and doorbell
 * indices).  The driver data out is the context's QP table size and UAR
 * context size and the PD, CQ and SRQ numbers.  One mapping: the UAR page
 * at offset 0.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "standin.h"

struct mthca_uctx_resp_m {
	uint32_t qp_tab_size;
	uint32_t uarc_size;
};

struct mthca_num_resp_m {
	uint32_t num;
	uint32_t reserved;
};

#define PG 4096
#define QP_TAB_SIZE 65536
#define UARC_SIZE (16 * PG)

struct mthca_ctx {
	uint32_t next_pd, next_cq;
};

static struct mthca_ctx *mctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct mthca_ctx));
}

static int hook(struct sti_req *r)
{
	struct mthca_ctx *c = mctx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct mthca_uctx_resp_m a = { QP_TAB_SIZE, UARC_SIZE };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		struct mthca_num_resp_m a = { .num = 1 + c->next_pd++ };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct mthca_num_resp_m a = { .num = 0x80 + c->next_cq++ };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		/* The number the core (uverbs.c) hands out next. */
		struct mthca_num_resp_m a = { .num = 0x40 + r->ctx->next_num };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_QP:
		if (r->qp_type != 2 /* RC */ && r->qp_type != 3 /* UC */ && r->qp_type != 4 /* UD */)
			return 22; /* EINVAL */
		return 0;
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

const struct sti_driver sti_drv_mthca = {
	.name = "mthca",
	.driver_id = RDMA_DRIVER_MTHCA,
	.vendor_id = 0x02c9,
	.vendor_part_id = 25218,
	.node_type = 1,
	.link_layer = 1,
	.hook = hook,
	.mmap = mmap_uar,
};
