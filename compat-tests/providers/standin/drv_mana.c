/*
 * mana (Microsoft Azure Network Adapter; the uAPI is rdma-core's
 * kernel-headers/rdma/mana-abi.h, not installed here: the layouts the
 * stand-in answers with are written out below).  The provider keeps its
 * queues in its own memory and hands their addresses in; the kernel
 * answers with GDMA queue ids: a CQ's id, an RC QP's four queue ids (send
 * requester/responder, receive requester/responder: the low two bits are
 * the queue's type, the QP number is the receive responder's id), a raw
 * QP's send queue and CQ ids, an RSS QP's (CQ, WQ) id pair per WQ of its
 * indirection table.  The context maps one doorbell page at offset 0.
 */
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "standin.h"

/* mana-abi.h, version 1 */
struct mana_cq_resp {
	uint32_t cqid, reserved;
};
struct mana_raw_qp_resp {
	uint32_t sqid, cqid, tx_vp_offset, reserved;
};
struct mana_rc_qp_resp {
	uint32_t queue_id[4];
};
struct mana_rss_entry {
	uint32_t cqid, wqid;
};
struct mana_rss_qp_resp {
	uint64_t num_entries;
	struct mana_rss_entry entries[64];
};

#define QPT_RAW_PACKET 8
#define DOORBELL_PAGE 4096u

static uint32_t handle_of(const struct sti_req *r)
{
	return r->obj ? r->obj->handle : 0;
}

static int hook(struct sti_req *r)
{
	switch (r->op) {
	case STI_OP_CREATE_CQ: {
		struct mana_cq_resp resp = { .cqid = 0x20 + handle_of(r) };
		if (r->uout_len >= sizeof(resp.cqid))
			sti_put(r, &resp, sizeof(resp));
		return 0;
	}
	case STI_OP_CREATE_QP: {
		uint32_t h = handle_of(r);
		if (r->qp_type == QPT_RAW_PACKET && r->uout_len >= sizeof(struct mana_rss_qp_resp)) {
			/* RSS: the driver does not see the table's WQs here; one
			 * entry, as for a table of one WQ. */
			struct mana_rss_qp_resp resp = { .num_entries = 1 };
			resp.entries[0] = (struct mana_rss_entry){ 0x20 + h, 0x200 + h };
			sti_put(r, &resp, sizeof(resp));
		} else if (r->qp_type == QPT_RAW_PACKET) {
			struct mana_raw_qp_resp resp = { .sqid = 0x100 + h, .cqid = 0x20 + h, .tx_vp_offset = 0 };
			sti_put(r, &resp, sizeof(resp));
		} else {
			/* types: send requester 0, send responder 1, receive
			 * requester 1, receive responder 0; ids below 256, so
			 * that the log's pointer masking leaves them alone */
			static const uint32_t type[4] = { 0, 1, 1, 0 };
			struct mana_rc_qp_resp resp;
			for (int i = 0; i < 4; i++)
				resp.queue_id[i] = (((h & 15) * 4 + (uint32_t)i) << 2) | type[i];
			sti_put(r, &resp, sizeof(resp));
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* Only the doorbell page can be mapped. */
static int mmap_db(struct sti_ctx *ctx, uint64_t off, size_t len, void *mem)
{
	return off == 0 && len <= DOORBELL_PAGE ? 0 : 22 /* EINVAL */;
}

/* The device's CQ depth: a power of two, which the provider rounds what it
 * asks up to (EINVAL above). */
static const struct sti_limits mana_lim = {
	.max_cqe = 65536,
};

const struct sti_driver sti_drv_mana = {
	.lim = &mana_lim,
	.name = "mana",
	.driver_id = 20, /* RDMA_DRIVER_MANA */
	.vendor_id = 0x1414,
	.vendor_part_id = 0x00ba,
	.node_type = 1,
	.link_layer = 2,
	.hook = hook,
	.mmap = mmap_db,
};
