/*
 * hns (HiSilicon RoCE, rdma/hns-abi.h), modelled as a HIP09 (hw_ver 0x130):
 * queues live in the process's own memory (the create commands carry their
 * addresses and the record doorbells'); the context answers the table
 * sizes, the CQE size and, when the provider asks for them, the extended
 * SGE / RQ inline / CQE inline modes and the inline limit; CQs, SRQs and
 * QPs answer their numbers and the record-doorbell capability; create_ah
 * and the extended modify_qp answer the destination MAC, traffic-class mode
 * and priority (rdma-core >= 56).  RC, UD and XRC QPs.  The mmaps: the UAR
 * (doorbell) page at offset 0 (and each QP's DWQE page when offered).
 *
 * Direct WQE (HNS_ROCE_QP_CAP_DIRECT_WQE and its 64 KiB page) is not
 * offered: every release's provider copies a direct WQE with
 * mmio_memcpy_x64(dst, wqe, sizeof(struct hns_roce_rc_sq_wqe)), 32 bytes,
 * and x86-64's generic mmio_memcpy_x64 loops `do { 64 bytes; bytecnt -=
 * 64; } while (bytecnt > 0)` on a size_t: 32 never reaches 0, the loop never
 * ends, and the process dies of SIGSEGV past the page on the first
 * post_send (arm64, where the hardware is, copies 64 bytes once).  Set
 * HNS_DWQE to 1 to see it.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#include "standin.h"

#define PG 4096ULL
#define DWQE_SIZE 65536ULL
#define MAXE 256

#define HNS_HW_VER3 0x130
#define HNS_QP_TAB 0x80000
#define HNS_SRQ_TAB 0x100000
#define HNS_CQE_SIZE 64
#define HNS_MAX_INLINE 1024

/* The request / response layouts (rdma-core 65's hns-abi.h). */
struct hns_ucontext_cmd {
	uint32_t config, reserved;
};
struct hns_ucontext_resp {
	uint32_t qp_tab_size, cqe_size, srq_tab_size, reserved, config, max_inline_data;
	uint8_t congest_type, reserved0[7];
};
#define HNS_EXSGE 1u
#define HNS_RQ_INLINE 2u
#define HNS_CQE_INLINE 4u
#define HNS_CONGEST_DCQCN 1u /* congest_type: a bit per algorithm */

struct hns_cq_cmd {
	uint64_t buf_addr, db_addr;
	uint32_t cqe_size, reserved;
};
struct hns_cq_resp {
	uint64_t cqn, cap_flags;
};
#define HNS_CQ_RECORD_DB 1u

struct hns_srq_cmd {
	uint64_t buf_addr, db_addr, que_addr;
	uint32_t req_cap_flags, reserved;
};
struct hns_srq_resp {
	uint32_t srqn, cap_flags;
};
#define HNS_SRQ_RECORD_DB 1u

struct hns_qp_cmd {
	uint64_t buf_addr, db_addr;
	uint8_t log_sq_bb_count, log_sq_stride, sq_no_prefetch, reserved[5];
	uint64_t sdb_addr, comp_mask, create_flags, cong_type_flags;
};
struct hns_qp_resp {
	uint64_t cap_flags, dwqe_mmap_key;
};
#define HNS_QP_RQ_RECORD_DB 1u
#define HNS_QP_SQ_RECORD_DB 2u
#define HNS_QP_DIRECT_WQE (1u << 5)
#define HNS_QP_MASK_CONGEST_TYPE 1u

struct hns_modify_qp_resp {
	uint8_t tc_mode, priority, reserved[6];
};
struct hns_ah_resp {
	uint8_t dmac[6], priority, tc_mode;
};

struct hns_ent {
	uint64_t key;
	uint32_t owner;
	int used;
};

#define HNS_DWQE 0

struct hns_ctx {
	uint64_t next_key;
	uint32_t next_cqn, next_srqn;
	struct hns_ent e[MAXE];
};

static struct hns_ctx *hctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct hns_ctx));
}

/* The first `n` bytes of the driver request (zero beyond what came). */
static void in(const struct sti_req *r, void *p, size_t n)
{
	memset(p, 0, n);
	if (r->uin)
		memcpy(p, r->uin, r->uin_len < n ? r->uin_len : n);
}

static int get_context(struct sti_req *r)
{
	struct hns_ucontext_cmd cmd;
	struct hns_ucontext_resp resp = { 0 };

	in(r, &cmd, sizeof(cmd));
	resp.qp_tab_size = HNS_QP_TAB;
	resp.srq_tab_size = HNS_SRQ_TAB;
	resp.cqe_size = HNS_CQE_SIZE;
	if (r->uin_len >= sizeof(cmd.config)) {
		if (cmd.config & HNS_EXSGE) {
			resp.config |= HNS_EXSGE;
			resp.max_inline_data = HNS_MAX_INLINE;
		}
		if (cmd.config & HNS_RQ_INLINE)
			resp.config |= HNS_RQ_INLINE;
		if (cmd.config & HNS_CQE_INLINE)
			resp.config |= HNS_CQE_INLINE;
	}
	resp.congest_type = HNS_CONGEST_DCQCN;
	sti_put(r, &resp, sizeof(resp));
	return 0;
}

static int create_cq(struct sti_req *r)
{
	struct hns_cq_cmd cmd;
	struct hns_cq_resp resp = { 0 };
	struct hns_ctx *c = hctx(r->ctx);

	if (!c)
		return 12;
	in(r, &cmd, sizeof(cmd));
	if (r->uin_len < offsetof(struct hns_cq_cmd, cqe_size))
		return 22;
	if (r->uin_len >= offsetof(struct hns_cq_cmd, reserved) && cmd.cqe_size != 32 && cmd.cqe_size != 64)
		return 22;
	resp.cqn = ++c->next_cqn;
	if (r->uout_len >= sizeof(resp))
		resp.cap_flags = HNS_CQ_RECORD_DB;
	sti_put(r, &resp, sizeof(resp));
	return 0;
}

static int create_srq(struct sti_req *r)
{
	struct hns_srq_cmd cmd;
	struct hns_srq_resp resp = { 0 };

	in(r, &cmd, sizeof(cmd));
	if (r->uin_len < offsetof(struct hns_srq_cmd, req_cap_flags))
		return 22;
	/* The core numbers the SRQ next (uverbs.c: 0x40 + next_num): the
	 * driver's SRQ number is the same one. */
	resp.srqn = 0x40 + r->ctx->next_num;
	if (r->uin_len >= offsetof(struct hns_srq_cmd, reserved) && (cmd.req_cap_flags & HNS_SRQ_RECORD_DB))
		resp.cap_flags = HNS_SRQ_RECORD_DB;
	sti_put(r, &resp, sizeof(resp));
	return 0;
}

static int create_qp(struct sti_req *r)
{
	struct hns_qp_cmd cmd;
	struct hns_qp_resp resp = { 0 };
	struct hns_ctx *c = hctx(r->ctx);
	int has_sq, has_rq;

	if (!c)
		return 12;
	switch (r->qp_type) {
	case IB_UVERBS_QPT_RC:
	case IB_UVERBS_QPT_UD:
	case IB_UVERBS_QPT_XRC_INI:
	case IB_UVERBS_QPT_XRC_TGT:
		break;
	default:
		return 95; /* EOPNOTSUPP */
	}
	in(r, &cmd, sizeof(cmd));
	if (r->uin_len < offsetof(struct hns_qp_cmd, sdb_addr))
		return 22;
	if (r->uin_len >= offsetof(struct hns_qp_cmd, cong_type_flags) + 8 &&
	    (cmd.comp_mask & HNS_QP_MASK_CONGEST_TYPE) && !(cmd.cong_type_flags & HNS_CONGEST_DCQCN))
		return 22;
	has_sq = r->qp_type != IB_UVERBS_QPT_XRC_TGT && r->max_send_wr;
	has_rq = r->qp_type != IB_UVERBS_QPT_XRC_INI && r->qp_type != IB_UVERBS_QPT_XRC_TGT && r->max_recv_wr;
	if (r->uout_len >= offsetof(struct hns_qp_resp, dwqe_mmap_key)) {
		if (has_sq && r->uin_len >= offsetof(struct hns_qp_cmd, comp_mask))
			resp.cap_flags |= HNS_QP_SQ_RECORD_DB;
		if (has_rq)
			resp.cap_flags |= HNS_QP_RQ_RECORD_DB;
	}
	if (HNS_DWQE && r->uout_len >= sizeof(resp) && r->qp_type != IB_UVERBS_QPT_XRC_TGT) {
		for (unsigned i = 0; i < MAXE; i++)
			if (!c->e[i].used) {
				c->next_key += DWQE_SIZE;
				c->e[i] = (struct hns_ent){ c->next_key, r->obj ? r->obj->handle : ~0u, 1 };
				resp.cap_flags |= HNS_QP_DIRECT_WQE;
				resp.dwqe_mmap_key = c->next_key;
				break;
			}
		if (!resp.dwqe_mmap_key)
			return 12;
	}
	sti_put(r, &resp, sizeof(resp));
	return 0;
}

static int hook(struct sti_req *r)
{
	switch (r->op) {
	case STI_OP_GET_CONTEXT:
		return get_context(r);
	case STI_OP_ALLOC_PD: {
		uint32_t pdn = 1 + (r->obj ? r->obj->handle : 0);
		sti_put(r, &pdn, sizeof(pdn));
		return 0;
	}
	case STI_OP_CREATE_CQ:
		return create_cq(r);
	case STI_OP_CREATE_SRQ:
		return create_srq(r);
	case STI_OP_CREATE_QP:
		return create_qp(r);
	case STI_OP_MODIFY_QP: {
		struct hns_modify_qp_resp resp = { 0 }; /* priority mode, SL 0 */
		if (r->uout && r->uout_len)
			sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_CREATE_AH: {
		/* The destination MAC the kernel resolved: the stand-in's
		 * peer, whatever the GID. */
		struct hns_ah_resp resp = { { 0x02, 0x00, 0x5e, 0x10, 0x00, 0x01 }, 0, 0 };
		if (r->uout && r->uout_len)
			sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_q(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	struct hns_ctx *c = ctx->drv;

	if (off == 0)
		return len == PG ? 0 : 22; /* the UAR */
	for (unsigned i = 0; c && i < MAXE; i++)
		if (c->e[i].used && c->e[i].key == off)
			return len == DWQE_SIZE ? 0 : 22;
	return 22;
}

static void release(struct sti_ctx *ctx, struct sti_obj *o)
{
	struct hns_ctx *c = ctx->drv;

	if (!o)
		return;
	if (c && o->type == STI_T_QP)
		for (unsigned i = 0; i < MAXE; i++)
			if (c->e[i].used && c->e[i].owner == o->handle)
				c->e[i].used = 0;
}

/* What hns_roce_query_device reports of a HIP08/09 (HNS_ROCE_V2_MAX_SQ_SGE_NUM,
 * _RQ_SGE_NUM, _SRQ_SGE_NUM: 64 each) and its create_qp / create_srq
 * size checks enforce (EINVAL above); the provider rounds the receive and
 * SRQ scatter entries it asks up to a power of two, and a CQ's entries (the
 * device's CQ depth is a power of two: 2^16 here, below a HIP08's 2^22, for
 * the same reason as the generic device's, uverbs.c). */
static const struct sti_limits hns_lim = {
	.max_send_sge = 64, .max_recv_sge = 64, .max_srq_sge = 64, .max_inline = HNS_MAX_INLINE,
	.max_cqe = 65536,
};

const struct sti_driver sti_drv_hns = {
	.lim = &hns_lim,
	.name = "hns",
	.driver_id = RDMA_DRIVER_HNS,
	.vendor_id = 0x19e5,
	.vendor_part_id = 0xa222,
	.hw_ver = HNS_HW_VER3,
	.node_type = 1,
	.link_layer = 2,
	/* What the kernel driver has not: the core answers EOPNOTSUPP. */
	.lacks = STI_LACKS(RESIZE_CQ) | STI_LACKS(CREATE_WQ) | STI_LACKS(MODIFY_WQ) |
		 STI_LACKS(CREATE_RWQ_IND_TBL) | STI_LACKS(CREATE_FLOW) | STI_LACKS(ALLOC_DM) |
		 STI_LACKS(REG_DM_MR),
	.hook = hook,
	.mmap = mmap_q,
	.release = release,
};
