/*
 * siw (Soft-iWARP, rdma/siw-abi.h): CQs, send and receive queues and SRQs
 * are arrays the provider maps from the command fd at the "key" each
 * create answers with (an mmap entry's offset: page numbers handed out in
 * order, as rdma_user_mmap_entry_insert does), together with the number of
 * entries (a power of two).  A CQ's array of struct siw_cqe is followed by
 * its struct siw_cq_ctrl; memory starts zeroed, as the kernel's vmalloc_user
 * does.  A QP on an SRQ gets no receive queue: its rq_key stays 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/siw-abi.h>

#include "standin.h"

#define MAXE 512
#define PAGE 4096u

struct siw_ent {
	uint64_t key;
	uint64_t len;
	const struct sti_obj *obj;
};

struct siw_ctx {
	uint64_t next_pg;
	struct siw_ent e[MAXE];
	unsigned n;
};

static struct siw_ctx *sctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct siw_ctx));
}

/* A new mmap entry of `len` bytes for `obj`: its key, or an errno. */
static int entry(struct sti_ctx *ctx, const struct sti_obj *obj, uint64_t len, __u64 *key)
{
	struct siw_ctx *s = sctx(ctx);
	uint64_t pages = (len + PAGE - 1) / PAGE;

	if (!s || s->n == MAXE)
		return 12; /* ENOMEM */
	if (!pages)
		pages = 1;
	*key = s->next_pg * PAGE;
	s->e[s->n++] = (struct siw_ent){ *key, len, obj };
	s->next_pg += pages;
	return 0;
}

static uint32_t obj_id(const struct sti_req *r)
{
	return r->obj ? r->obj->handle + 1 : 1;
}

static int hook(struct sti_req *r)
{
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct siw_uresp_alloc_ctx resp = { .dev_id = 0 /* vendor_part_id */ };
		if (r->uout_len < sizeof(resp))
			return 0;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct siw_uresp_create_cq resp = { 0 };
		uint32_t n = sti_pow2(r->cqe ? r->cqe : 1);
		int err;
		if (r->uout_len < sizeof(resp))
			return 0;
		err = entry(r->ctx, r->obj, (uint64_t)n * sizeof(struct siw_cqe) + sizeof(struct siw_cq_ctrl),
			    &resp.cq_key);
		if (err)
			return err;
		r->cqe = n;
		resp.cq_id = obj_id(r);
		resp.num_cqe = n;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	case STI_OP_CREATE_QP: {
		struct siw_uresp_create_qp resp = { 0 };
		uint32_t nsq = sti_pow2(r->max_send_wr ? r->max_send_wr : 1);
		uint32_t nrq = r->max_recv_wr ? sti_pow2(r->max_recv_wr) : 0;
		int err;
		if (r->uout_len < sizeof(resp))
			return 0;
		err = entry(r->ctx, r->obj, (uint64_t)nsq * sizeof(struct siw_sqe), &resp.sq_key);
		if (!err && nrq)
			err = entry(r->ctx, r->obj, (uint64_t)nrq * sizeof(struct siw_rqe), &resp.rq_key);
		if (err)
			return err;
		resp.qp_id = obj_id(r);
		resp.num_sqe = nsq;
		resp.num_rqe = nrq;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		struct siw_uresp_create_srq resp = { 0 };
		uint32_t n = sti_pow2(r->max_recv_wr ? r->max_recv_wr : 1);
		int err;
		if (r->uout_len < sizeof(resp))
			return 0;
		err = entry(r->ctx, r->obj, (uint64_t)n * sizeof(struct siw_rqe), &resp.srq_key);
		if (err)
			return err;
		resp.num_rqe = n;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	case STI_OP_REG_MR: {
		/* The stag is the MR's key, which the core assigns after this
		 * hook: left 0 (the provider uses the core's lkey/rkey). */
		struct siw_uresp_reg_mr resp = { 0 };
		if (r->uout_len < sizeof(resp))
			return 0;
		memcpy(r->uout, &resp, sizeof(resp));
		r->uout_written = sizeof(resp);
		return 0;
	}
	default:
		return 0;
	}
}

/* The kernel's siw_mmap: the entry at this offset, no longer than it. */
static int mmap_q(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct siw_ctx *s = sctx(ctx);

	for (unsigned i = 0; s && i < s->n; i++)
		if (s->e[i].key == off) {
			uint64_t max = (s->e[i].len + PAGE - 1) / PAGE * PAGE;
			return len > max ? 22 /* EINVAL */ : 0;
		}
	return 22;
}

static void release(struct sti_ctx *ctx, struct sti_obj *o)
{
	struct siw_ctx *s = ctx->drv;

	if (!o)
		return;
	/* The object's entries go; a mapping already made stays valid. */
	for (unsigned i = 0; s && i < s->n;)
		if (s->e[i].obj == o)
			s->e[i] = s->e[--s->n];
		else
			i++;
}

/* siw reports RLIMIT_MEMLOCK as its max_mr_size and siw_reg_user_mr
 * refuses (ENOMEM), before it pins the memory, an MR of more pages than the
 * limit leaves beside the process's locked memory (VmLck).  The model
 * takes the MR as starting on a page boundary. */
static uint64_t mr_size(uint64_t *left)
{
	struct rlimit rl;
	uint64_t locked = 0;
	char line[128];
	FILE *f;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY) {
		if (left)
			*left = ~0ULL;
		return ~0ULL;
	}
	if (left) {
		f = fopen("/proc/self/status", "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "VmLck: %" SCNu64 " kB", &locked) == 1)
				break;
		if (f)
			fclose(f);
		locked *= 1024;
		*left = rl.rlim_cur / PAGE * PAGE > locked ? rl.rlim_cur / PAGE * PAGE - locked : 0;
	}
	return rl.rlim_cur;
}

static const struct sti_limits siw_lim = {
	.mr_size = mr_size, .mr_size_err = ENOMEM,
};

const struct sti_driver sti_drv_siw = {
	.lim = &siw_lim,
	.name = "siw",
	.driver_id = RDMA_DRIVER_SIW,
	.vendor_id = 0x626d74, /* "bmt" */
	.vendor_part_id = 0,
	.node_type = 4,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_q,
	.release = release,
};
