/*
 * mlx4 (ConnectX-3, rdma/mlx4-abi.h, uverbs ABI 4), an InfiniBand port.
 * Queues and doorbell records live in user memory passed in the create
 * requests; the driver data out is the context's limits (QP table size,
 * BlueFlame register size, CQE size), the PD/CQ/SRQ numbers, and in
 * query_device_ex's udata the offset of the HCA core clock.
 *
 * Mappings (at multiples of the 4 KiB page, as mlx4_ib_mmap takes them):
 * 0 the UAR (doorbells), 1 the BlueFlame page, 3 the core clock page
 * (read by ibv_query_rt_values_ex: big-endian hi/lo words at the clock
 * offset; left zero).
 *
 * CQs: the CQ buffer and its doorbell record are the process's own memory
 * (create_cq's driver data: buf_addr, db_addr), and the stand-in runs in the
 * process, so the model writes there what the HCA would:
 *  - when a CQ is created (and when resize_cq hands over a new buffer), every
 *    CQE's ownership bit is set so that the entry looks hardware-owned to the
 *    provider (the provider only zeroes the buffer; a zero owner bit at
 *    consumer index 0 would read as a completion);
 *  - resize_cq: the HCA writes a RESIZE CQE into the old buffer at the
 *    consumer index (read from the doorbell record, where the provider
 *    posts it), with the ownership bit that makes it software-owned there;
 *    the provider's resize walks the old buffer up to that CQE.
 * A CQE is 32 bytes, or 64 with the 32 that matter in the second half: the
 * owner/opcode byte is the last byte of the entry either way.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "standin.h"

struct mlx4_uctx_resp_m {
	uint32_t dev_caps;
	uint32_t qp_tab_size;
	uint16_t bf_reg_size;
	uint16_t bf_regs_per_page;
	uint32_t cqe_size;
};

struct mlx4_num_resp_m {
	uint32_t num;
	uint32_t reserved;
};

struct mlx4_qdev_resp_m {
	uint32_t comp_mask;
	uint32_t response_length;
	uint64_t hca_core_clock_offset;
	uint32_t max_inl_recv_sz;
	uint32_t reserved;
	uint64_t rx_hash_fields_mask;
	uint8_t rx_hash_function;
	uint8_t reserved2[7];
	uint32_t max_tso;
	uint32_t supported_qpts;
};

#define PG 4096
#define CLOCK_OFFSET 0x1f0 /* within the clock page */

struct mlx4_ctx {
	uint32_t next_pd, next_cq, next_srq;
	uint32_t cqe_size; /* as answered at alloc_ucontext */
};

/* The request of create_cq / resize_cq (rdma/mlx4-abi.h). */
struct mlx4_create_cq_m {
	uint64_t buf_addr;
	uint64_t db_addr;
};

/* A CQ's memory in the process (obj->drv). */
struct mlx4_cq_m {
	uint64_t buf, db;
};

#define CQE_OWNER 0x80
#define CQE_OPCODE_RESIZE 0x16

static struct mlx4_ctx *mctx(struct sti_ctx *ctx)
{
	return sti_drv_ctx(ctx, sizeof(struct mlx4_ctx));
}

static uint32_t cq_cqe_size(const struct mlx4_ctx *c)
{
	return c->cqe_size == 64 ? 64 : 32;
}

/* The consumer index the provider last posted (doorbell record, big
 * endian, 24 bits). */
static uint32_t cq_ci(const struct mlx4_cq_m *m)
{
	uint32_t v;

	memcpy(&v, (const void *)(uintptr_t)m->db, sizeof(v));
	return be32toh(v) & 0xffffff;
}

/* The owner/opcode byte of entry `idx` (`mask` = entries - 1). */
static uint8_t *cq_owner_byte(const struct mlx4_ctx *c, uint64_t buf, uint32_t mask, uint32_t idx)
{
	uint32_t sz = cq_cqe_size(c);

	return (uint8_t *)(uintptr_t)buf + (size_t)(idx & mask) * sz + sz - 1;
}

/* The ownership bit a software-owned entry has at consumer index n:
 * it flips on each pass over the ring. */
static uint8_t cq_sw_owner(uint32_t mask, uint32_t n)
{
	return (n & (mask + 1)) ? CQE_OWNER : 0;
}

/* Every entry of a buffer of mask + 1 entries hardware-owned for the
 * consumer indexes ci .. ci + mask. */
static void cq_hw_own(const struct mlx4_ctx *c, uint64_t buf, uint32_t mask, uint32_t ci)
{
	for (uint32_t k = 0; k <= mask; k++) {
		uint32_t n = ci + k;
		uint8_t *b = cq_owner_byte(c, buf, mask, n);
		*b = (uint8_t)((*b & ~CQE_OWNER) | (cq_sw_owner(mask, n) ^ CQE_OWNER));
	}
}

/* The CQE the HCA writes into the old buffer when a resize takes effect. */
static void cq_resize_cqe(const struct mlx4_ctx *c, uint64_t buf, uint32_t mask, uint32_t ci)
{
	uint32_t sz = cq_cqe_size(c);
	uint8_t *e = (uint8_t *)(uintptr_t)buf + (size_t)(ci & mask) * sz;

	memset(e, 0, sz);
	e[sz - 1] = (uint8_t)(cq_sw_owner(mask, ci) | CQE_OPCODE_RESIZE);
}

static int hook(struct sti_req *r)
{
	struct mlx4_ctx *c = mctx(r->ctx);

	if (!c)
		return 12; /* ENOMEM */
	switch (r->op) {
	case STI_OP_GET_CONTEXT: {
		struct mlx4_uctx_resp_m a = { 0 };
		a.dev_caps = 0; /* 32-byte CQEs */
		a.qp_tab_size = 131072;
		a.bf_reg_size = 512;
		a.bf_regs_per_page = 8;
		a.cqe_size = 32;
		c->cqe_size = a.cqe_size;
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_QUERY_DEVICE: {
		struct mlx4_qdev_resp_m a = { 0 };
		a.comp_mask = 1; /* MLX4_IB_QUERY_DEV_RESP_MASK_CORE_CLOCK_OFFSET */
		/* Within the page, as the kernel gives it (the clock's offset
		 * modulo the page size): the provider unmaps the clock page at
		 * its address less this offset. */
		a.hca_core_clock_offset = CLOCK_OFFSET;
		a.max_inl_recv_sz = 0;
		a.response_length = (uint32_t)(r->uout_len < sizeof(a) ? r->uout_len : sizeof(a));
		if (r->uout_len)
			sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_ALLOC_PD: {
		struct mlx4_num_resp_m a = { .num = 1 + c->next_pd++ };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	case STI_OP_CREATE_CQ: {
		struct mlx4_num_resp_m a = { .num = 0x80 + c->next_cq++ };
		struct mlx4_create_cq_m q;
		struct mlx4_cq_m *m;
		if (!r->obj || !r->uin || r->uin_len < sizeof(q))
			return 22; /* EINVAL: mlx4_ib needs the buffer */
		memcpy(&q, r->uin, sizeof(q));
		if (!q.buf_addr || !q.db_addr)
			return 14; /* EFAULT: nothing to pin */
		m = calloc(1, sizeof(*m));
		if (!m)
			return 12;
		m->buf = q.buf_addr;
		m->db = q.db_addr;
		free(r->obj->drv);
		r->obj->drv = m;
		sti_put(r, &a, sizeof(a));
		/* Its entries hardware-owned, the consumer index at 0. */
		cq_hw_own(c, m->buf, r->cqe, 0);
		return 0;
	}
	case STI_OP_RESIZE_CQ: {
		struct mlx4_cq_m *m = r->obj ? r->obj->drv : NULL;
		uint64_t nbuf;
		uint32_t ci;
		if (!m || !r->uin || r->uin_len < sizeof(nbuf))
			return 22;
		memcpy(&nbuf, r->uin, sizeof(nbuf));
		if (!nbuf)
			return 14;
		ci = cq_ci(m);
		/* The new buffer, as the HCA takes it over: hardware-owned
		 * after the consumer index that the RESIZE CQE moves on to. */
		cq_hw_own(c, nbuf, r->cqe, ci + 1);
		cq_resize_cqe(c, m->buf, r->obj->cqe, ci);
		m->buf = nbuf;
		return 0;
	}
	case STI_OP_CREATE_SRQ: {
		/* The number the core hands out next (uverbs.c: 0x40 + next_num). */
		struct mlx4_num_resp_m a = { .num = 0x40 + r->ctx->next_num };
		sti_put(r, &a, sizeof(a));
		return 0;
	}
	default:
		return 0;
	}
}

static int mmap_page(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	(void)ctx;
	(void)mem;
	if (len != PG)
		return 22;
	if (off == 0 || off == PG || off == 3 * PG)
		return 0;
	return 22;
}

const struct sti_driver sti_drv_mlx4 = {
	.name = "mlx4",
	.driver_id = RDMA_DRIVER_MLX4,
	.vendor_id = 0x02c9,
	.vendor_part_id = 4099,
	.node_type = 1,
	.link_layer = 1,
	.hook = hook,
	.mmap = mmap_page,
};
