/*
 * The uverbs uAPI as the stand-in answers it: write() commands (with and
 * without the extended header), RDMA_VERBS_IOCTL methods of the core
 * objects (INVOKE_WRITE included), the object table (handles allocated
 * lowest-free in one table per file, as the kernel's xarray does), the
 * async event and completion channel descriptors (pipes: the process
 * reads the kernel's event records from them), and the command log.
 * The driver's own data (udata) is left to the driver model (drv_*.c).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "standin.h"

#define HEXSZ 16384
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* ------------------------------------------------- the latest kernel uAPI */
/*
 * STANDIN_KERNEL=latest: the model also answers the methods that kernels
 * after 6.1 added and rdma-core 65's libibverbs issues.  Bookworm's headers
 * (Linux 6.1) have none of them: the ids and layouts are written here from
 * rdma-core's kernel-headers/rdma/ib_user_ioctl_cmds.h and
 * ib_user_ioctl_verbs.h (rdma-core 65, the kernel's uAPI as of its
 * "Update kernel headers"), and what each method is sent from rdma-core 65's
 * libibverbs/cmd_{device,mr,cq,qp,dmah,dmabuf,comp_cntr}.c.  Unset, or any
 * other value, the model answers as 6.1 does (EPROTONOSUPPORT for these).
 */
int sti_kernel_latest(void)
{
	static int v = -1;

	if (v < 0) {
		const char *k = getenv("STANDIN_KERNEL");
		v = k && !strcmp(k, "latest");
	}
	return v;
}

/* enum uverbs_default_objects: after ASYNC_EVENT (16) */
enum { K_OBJECT_DMAH = 17, K_OBJECT_DMABUF = 18, K_OBJECT_COMP_CNTR = 19, K_NOBJECTS = 20 };
/* enum uverbs_methods_device: after QUERY_GID_ENTRY (6) */
enum { K_METHOD_QUERY_PORT_SPEED = 7, K_METHOD_QUERY_COMP_CNTR_CAPS = 8 };
/* enum uverbs_attrs_query_port_speed_cmd_attr_ids */
enum { K_ATTR_QUERY_PORT_SPEED_PORT_NUM, K_ATTR_QUERY_PORT_SPEED_RESP };
/* enum uverbs_attrs_query_comp_cntr_caps_attr_ids */
enum { K_ATTR_QUERY_COMP_CNTR_CAPS_MAX_COUNTERS, K_ATTR_QUERY_COMP_CNTR_CAPS_MAX_VALUE,
       K_ATTR_QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS };
/* enum uverbs_attrs_get_context_attr_ids: after CORE_SUPPORT */
enum { K_ATTR_GET_CONTEXT_FD_ARR = 2 };
/* enum uverbs_attrs_create_cq_cmd_attr_ids: after EVENT_FD (7) */
enum { K_ATTR_CREATE_CQ_BUFFER_VA = 8, K_ATTR_CREATE_CQ_BUFFER_LENGTH, K_ATTR_CREATE_CQ_BUFFER_FD,
       K_ATTR_CREATE_CQ_BUFFER_OFFSET, K_ATTR_CREATE_CQ_BUF_UMEM };
/* enum uverbs_attrs_create_qp_cmd_attr_ids: after RESP_QP_NUM (14) */
enum { K_ATTR_CREATE_QP_BUF_UMEM = 15, K_ATTR_CREATE_QP_RQ_BUF_UMEM, K_ATTR_CREATE_QP_SQ_BUF_UMEM };
/* enum uverbs_methods_qp: after QP_DESTROY; its attributes */
enum { K_METHOD_QP_ATTACH_COMP_CNTR = 2 };
enum { K_ATTR_QP_ATTACH_COMP_CNTR_HANDLE, K_ATTR_QP_ATTACH_COMP_CNTR_CNTR_HANDLE,
       K_ATTR_QP_ATTACH_COMP_CNTR_OP_MASK };
/* DMAH: enum uverbs_methods_dmah, uverbs_attrs_{alloc,free}_dmah_cmd_attr_ids */
enum { K_METHOD_DMAH_ALLOC, K_METHOD_DMAH_FREE };
enum { K_ATTR_ALLOC_DMAH_HANDLE, K_ATTR_ALLOC_DMAH_CPU_ID, K_ATTR_ALLOC_DMAH_TPH_MEM_TYPE, K_ATTR_ALLOC_DMAH_PH };
enum { K_ATTR_FREE_DMA_HANDLE };
/* DMABUF: enum uverbs_methods_dmabuf, uverbs_attrs_alloc_dmabuf_cmd_attr_ids */
enum { K_METHOD_DMABUF_ALLOC };
enum { K_ATTR_ALLOC_DMABUF_HANDLE, K_ATTR_ALLOC_DMABUF_PGOFF };
/* enum uverbs_methods_mr: after REG_DMABUF_MR (4); uverbs_attrs_reg_mr_cmd_attr_ids */
enum { K_METHOD_REG_MR = 5 };
enum { K_ATTR_REG_MR_HANDLE, K_ATTR_REG_MR_PD_HANDLE, K_ATTR_REG_MR_DMA_HANDLE, K_ATTR_REG_MR_IOVA,
       K_ATTR_REG_MR_ADDR, K_ATTR_REG_MR_LENGTH, K_ATTR_REG_MR_ACCESS_FLAGS, K_ATTR_REG_MR_FD,
       K_ATTR_REG_MR_FD_OFFSET, K_ATTR_REG_MR_RESP_LKEY, K_ATTR_REG_MR_RESP_RKEY };
/* COMP_CNTR: enum uverbs_methods_comp_cntr and the attributes of each */
enum { K_METHOD_COMP_CNTR_CREATE, K_METHOD_COMP_CNTR_DESTROY, K_METHOD_COMP_CNTR_MODIFY,
       K_METHOD_COMP_CNTR_READ };
enum { K_ATTR_CREATE_COMP_CNTR_HANDLE };
enum { K_ATTR_DESTROY_COMP_CNTR_HANDLE };
enum { K_ATTR_MODIFY_COMP_CNTR_HANDLE, K_ATTR_MODIFY_COMP_CNTR_ENTRY, K_ATTR_MODIFY_COMP_CNTR_OP,
       K_ATTR_MODIFY_COMP_CNTR_VALUE };
enum { K_ATTR_READ_COMP_CNTR_HANDLE, K_ATTR_READ_COMP_CNTR_ENTRY, K_ATTR_READ_COMP_CNTR_RESP_VALUE };
/* ib_user_ioctl_verbs.h: enum ib_uverbs_comp_cntr_entry (COMP 0, ERR 1),
 * ib_uverbs_comp_cntr_modify_op (SET 0, INC 1), and the six
 * ib_uverbs_qp_attach_comp_cntr_op bits (SEND 1 ... REMOTE_RDMA_WRITE 32) */
#define K_COMP_CNTR_MODIFY_OP_INC 1
#define K_QP_ATTACH_COMP_CNTR_OPS 0x3fu
/* efa-abi.h (rdma-core 65): the efa driver's attributes of COMP_CNTR_CREATE,
 * in the driver's namespace: where the device writes the counts, each a
 * struct ib_uverbs_buffer_desc */
enum { K_EFA_ATTR_CREATE_COMP_CNTR_COMP_BUFFER = 0x1000, K_EFA_ATTR_CREATE_COMP_CNTR_ERR_BUFFER };
/* struct ib_uverbs_buffer_desc (ib_user_ioctl_verbs.h); type VA is 1 */
struct k_buffer_desc {
	uint32_t type;
	int32_t fd;
	uint32_t flags, optional_flags;
	uint64_t addr, length;
};
#define K_BUFFER_TYPE_VA 1
/* Methods of the latest kernel whose attributes in the driver's namespace
 * are the driver's own (efa's COMP_CNTR_CREATE buffers), not the udata
 * (UHW_IN/UHW_OUT share their ids). */
static int k_driver_attrs(uint16_t obj, uint16_t meth)
{
	return sti_kernel_latest() && obj == K_OBJECT_COMP_CNTR && meth == K_METHOD_COMP_CNTR_CREATE;
}
/* struct ib_uverbs_query_port_resp_ex: 6.1's reserved[6] became
 * reserved[2] and __u32 active_speed_ex, at byte 44 */
#define K_QUERY_PORT_ACTIVE_SPEED_EX_OFF 44

/* ---------------------------------------------------------------- objects */
struct sti_obj *sti_get(struct sti_ctx *ctx, uint32_t handle, enum sti_type t)
{
	if (handle >= STI_MAX_OBJS || !ctx->objs[handle])
		return NULL;
	if (t != STI_T_NONE && ctx->objs[handle]->type != t)
		return NULL;
	return ctx->objs[handle];
}

struct sti_obj *sti_new(struct sti_ctx *ctx, enum sti_type t)
{
	for (uint32_t h = 0; h < STI_MAX_OBJS; h++)
		if (!ctx->objs[h]) {
			struct sti_obj *o = calloc(1, sizeof(*o));
			if (!o)
				return NULL;
			o->type = t;
			o->handle = h;
			o->fd = o->rfd = -1;
			ctx->objs[h] = o;
			return o;
		}
	return NULL;
}

void *sti_drv_ctx(struct sti_ctx *ctx, size_t size)
{
	if (!ctx->drv)
		ctx->drv = calloc(1, size);
	return ctx->drv;
}

void sti_put(struct sti_req *r, const void *p, size_t n)
{
	if (!r->uout)
		return;
	if (n > r->uout_len)
		n = r->uout_len;
	memcpy(r->uout, p, n);
	r->uout_written = n;
}

void sti_free(struct sti_ctx *ctx, struct sti_obj *o)
{
	if (!o)
		return;
	if (ctx->dev.drv->release)
		ctx->dev.drv->release(ctx, o);
	free(o->drv);
	free(o->uses);
	free(o->mcast);
	if (o->fd >= 0)
		sti_real_close(o->fd);
	ctx->objs[o->handle] = NULL;
	free(o);
}

void sti_ctx_release(struct sti_ctx *ctx)
{
	for (uint32_t h = 0; h < STI_MAX_OBJS; h++)
		if (ctx->objs[h])
			sti_free(ctx, ctx->objs[h]);
	if (ctx->dev.drv->release)
		ctx->dev.drv->release(ctx, NULL);
	free(ctx->drv);
	ctx->drv = NULL;
	if (ctx->async_wfd >= 0)
		sti_real_close(ctx->async_wfd);
	ctx->async_wfd = -1;
}

/* A pipe whose read end goes to the process: 0 or errno. */
static int event_pipe(int *rfd, int *wfd)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		return errno;
	/* The process reads with blocking reads, as from the kernel's file. */
	fcntl(p[0], F_SETFL, 0);
	*rfd = p[0];
	*wfd = p[1];
	return 0;
}

static void async_event(struct sti_ctx *ctx, uint64_t element, uint32_t type)
{
	struct ib_uverbs_async_event_desc d = { .element = element, .event_type = type };

	if (ctx->async_wfd >= 0 && write(ctx->async_wfd, &d, sizeof(d)) != sizeof(d))
		sti_log("async event lost");
}

void sti_fatal(struct sti_ctx *ctx)
{
	async_event(ctx, 0, 8 /* IB_EVENT_DEVICE_FATAL */);
}

/* Completion events delivered to a channel and not read yet. */
static unsigned pending_events(int wfd_peer_r)
{
	int n = 0;

	if (wfd_peer_r < 0 || ioctl(wfd_peer_r, FIONREAD, &n))
		return 0;
	return (unsigned)n / sizeof(struct ib_uverbs_comp_event_desc);
}

/* ------------------------------------------------------------ device data */
/* The generic device's limits (a ConnectX-4 class one, as mlx5_ib reports
 * it: 2^15 WRs per queue, 2^15 - 1 SRQ WRs; 2^16 - 1 CQ entries, a
 * log_max_cq_sz of 16 rather than 22, so that a CQ one past the limit costs
 * the providers that allocate before they ask a few MB, not half a GB). */
static const struct sti_limits generic_lim = {
	.max_send_wr = 32768, .max_recv_wr = 32768, .max_send_sge = 30, .max_recv_sge = 30,
	.max_inline = 1024, .max_cqe = 65535, .max_srq_wr = 32767, .max_srq_sge = 31,
	.max_mr_size = ~0ULL,
};

#define LIM_OR(f) (d && d->f ? d->f : generic_lim.f)
struct sti_limits sti_limits_of(const struct sti_ctx *ctx)
{
	const struct sti_limits *d = ctx->dev.drv ? ctx->dev.drv->lim : NULL;
	struct sti_limits l = {
		LIM_OR(max_send_wr), LIM_OR(max_recv_wr), LIM_OR(max_send_sge), LIM_OR(max_recv_sge),
		LIM_OR(max_inline),  LIM_OR(max_cqe),     LIM_OR(max_srq_wr),   LIM_OR(max_srq_sge),
		LIM_OR(max_mr_size), LIM_OR(mr_size_err), LIM_OR(mr_size),      LIM_OR(count_err),
		LIM_OR(mr_count_err),
	};
	if (l.mr_size)
		l.max_mr_size = l.mr_size(NULL);
	return l;
}
#undef LIM_OR

/*
 * The device's object counts (max_pd, max_qp, ...): the generic device's
 * figures, far above what the model's handle table holds, unless
 * STANDIN_MAX_<PD|QP|CQ|SRQ|MR|AH|MW>=N sets one, read at every
 * QUERY_DEVICE and every create (so that a program may change it as it
 * runs).  A create that would make more than that many objects of its
 * type fails with the driver's errno (rxe's pools: EINVAL, ENOMEM for an
 * MR; ENOMEM elsewhere), as a device does whose firmware, bitmap or
 * counter is used up.  The model counts the objects of the context (the
 * kernel's drivers count per device: one context per device here).
 */
static const struct { enum sti_type t; const char *env; uint32_t dflt; } counts[] = {
	{ STI_T_PD, "STANDIN_MAX_PD", 16777216 },   { STI_T_QP, "STANDIN_MAX_QP", 131072 },
	{ STI_T_CQ, "STANDIN_MAX_CQ", 16777216 },   { STI_T_SRQ, "STANDIN_MAX_SRQ", 8388608 },
	{ STI_T_MR, "STANDIN_MAX_MR", 16777216 },   { STI_T_AH, "STANDIN_MAX_AH", 0x7fffffff },
	{ STI_T_MW, "STANDIN_MAX_MW", 16777216 },
};

/* The count the device reports for objects of type t; 0 for a type not counted. */
static uint32_t count_max(enum sti_type t)
{
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (counts[i].t == t) {
			const char *e = getenv(counts[i].env);
			char *end;
			unsigned long v;

			if (!e || !*e)
				return counts[i].dflt;
			v = strtoul(e, &end, 0);
			return *end || v > 0x7fffffff ? counts[i].dflt : (uint32_t)v;
		}
	return 0;
}

/* 0, or the errno of a create of one more object of type t. */
static int count_refused(struct sti_ctx *ctx, enum sti_type t)
{
	uint32_t max = count_max(t), n = 0;
	struct sti_limits l;

	if (!max)
		return 0;
	for (uint32_t h = 0; h < STI_MAX_OBJS; h++)
		if (ctx->objs[h] && ctx->objs[h]->type == t)
			n++;
	if (n < max)
		return 0;
	l = sti_limits_of(ctx);
	if (t == STI_T_MR && l.mr_count_err)
		return l.mr_count_err;
	return l.count_err ? l.count_err : ENOMEM;
}

static void query_device(struct sti_ctx *ctx, struct ib_uverbs_query_device_resp *r)
{
	const struct sti_driver *d = ctx->dev.drv;
	struct sti_limits l = sti_limits_of(ctx);

	memset(r, 0, sizeof(*r));
	r->fw_ver = 0x10002001eULL;
	r->node_guid = htobe64(0x0002c90300a1b200ULL + (uint64_t)ctx->dev.index);
	r->sys_image_guid = r->node_guid;
	r->max_mr_size = l.max_mr_size;
	r->page_size_cap = 0xfffffffffffff000ULL;
	r->vendor_id = d->vendor_id;
	r->vendor_part_id = d->vendor_part_id;
	r->hw_ver = d->hw_ver;
	r->max_qp = count_max(STI_T_QP);
	r->max_qp_wr = MIN(l.max_send_wr, l.max_recv_wr);
	r->device_cap_flags = 0x25a1c36;
	r->max_sge = MIN(l.max_send_sge, l.max_recv_sge);
	r->max_sge_rd = 30;
	r->max_cq = count_max(STI_T_CQ);
	r->max_cqe = l.max_cqe;
	r->max_mr = count_max(STI_T_MR);
	r->max_pd = count_max(STI_T_PD);
	r->max_qp_rd_atom = 16;
	r->max_res_rd_atom = 2097152;
	r->max_qp_init_rd_atom = 16;
	r->atomic_cap = 1;
	r->max_mw = count_max(STI_T_MW);
	r->max_mcast_grp = 2097152;
	r->max_mcast_qp_attach = 240;
	r->max_total_mcast_qp_attach = 503316480;
	r->max_ah = count_max(STI_T_AH);
	r->max_srq = count_max(STI_T_SRQ);
	r->max_srq_wr = l.max_srq_wr;
	r->max_srq_sge = l.max_srq_sge;
	r->max_pkeys = 128;
	r->local_ca_ack_delay = 16;
	r->phys_port_cnt = 1;
}

static size_t query_device_ex(struct sti_ctx *ctx, struct ib_uverbs_ex_query_device_resp *r, size_t len)
{
	memset(r, 0, sizeof(*r));
	query_device(ctx, &r->base);
	r->odp_caps.general_caps = 0;
	r->timestamp_mask = 0x7fffffffffffffffULL;
	r->hca_core_clock = 156250;
	r->device_cap_flags_ex = r->base.device_cap_flags;
	r->rss_caps.supported_qpts = 1 << 8; /* IB_QPT_RAW_PACKET */
	r->rss_caps.max_rwq_indirection_tables = 65536;
	r->rss_caps.max_rwq_indirection_table_size = 2048;
	r->max_wq_type_rq = 65536;
	r->raw_packet_caps = 0x1e;
	r->cq_moderation_caps.max_cq_moderation_count = 65535;
	r->cq_moderation_caps.max_cq_moderation_period = 4095;
	r->max_dm_size = 131072;
	len = MIN(len, sizeof(*r));
	r->response_length = (uint32_t)len;
	return len;
}

static void query_port(struct sti_ctx *ctx, struct ib_uverbs_query_port_resp *r)
{
	int eth = ctx->dev.drv->link_layer == 2;

	memset(r, 0, sizeof(*r));
	r->port_cap_flags = eth ? 0x04010000 : 0x2659e848;
	r->max_msg_sz = 0x40000000;
	r->gid_tbl_len = eth ? 255 : 128;
	r->pkey_tbl_len = eth ? 1 : 128;
	r->lid = eth ? 0 : 1;
	r->sm_lid = eth ? 0 : 1;
	r->state = 4;
	r->max_mtu = 5;
	r->active_mtu = eth ? 3 : 5;
	r->max_vl_num = eth ? 0 : 4;
	r->subnet_timeout = eth ? 0 : 18;
	r->active_width = 2;
	r->active_speed = 32;
	r->phys_state = 5;
	r->link_layer = ctx->dev.drv->link_layer;
}

static void gid_entry(struct sti_ctx *ctx, uint32_t port, uint32_t index, struct ib_uverbs_gid_entry *e)
{
	uint64_t guid = 0x0002c90300a1b200ULL + (uint64_t)ctx->dev.index;

	memset(e, 0, sizeof(*e));
	e->gid[0] = htobe64(0xfe80000000000000ULL);
	e->gid[1] = htobe64(guid);
	e->gid_index = index;
	e->port_num = port;
	if (ctx->dev.drv->link_layer == 2) {
		e->gid_type = index ? IB_UVERBS_GID_TYPE_ROCE_V2 : IB_UVERBS_GID_TYPE_ROCE_V1;
		e->netdev_ifindex = 2;
	} else {
		e->gid_type = IB_UVERBS_GID_TYPE_IB;
	}
}
#define NGIDS(ctx) ((ctx)->dev.drv->link_layer == 2 ? 2u : 1u)
/* The device's completion vectors (GET_CONTEXT, QUERY_CONTEXT). */
#define NUM_COMP_VECTORS 4u

/* --------------------------------------------------------------- the verbs */
/* One command, whichever way it came (write, INVOKE_WRITE, or a method). */
struct cmd {
	struct sti_ctx *ctx;
	struct sti_req dr;       /* what the driver hook sees */
	char note[512];          /* the log's result part */
};

static int hook(struct cmd *c, enum sti_op op, struct sti_obj *o)
{
	c->dr.op = op;
	c->dr.ctx = c->ctx;
	c->dr.obj = o;
	if (c->ctx->dev.drv->lacks & (1ull << op))
		return EOPNOTSUPP;
	if (!c->ctx->dev.drv->hook)
		return 0;
	return c->ctx->dev.drv->hook(&c->dr);
}

static void note(struct cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct cmd *c, const char *fmt, ...)
{
	size_t n = strlen(c->note);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->note + n, sizeof(c->note) - n, fmt, ap);
	va_end(ap);
}

static struct sti_obj *obj_or(struct cmd *c, uint32_t h, enum sti_type t, int *err)
{
	struct sti_obj *o = sti_get(c->ctx, h, t);
	if (!o)
		*err = EINVAL;
	return o;
}

/* 0, or the driver's errno for a REG_MR of user memory `length` bytes
 * long: drivers that compare the length with their max_mr_size before they
 * pin the memory (irdma, erdma, pvrdma: EINVAL; bnxt_re: ENOMEM; siw: the
 * pages past its RLIMIT_MEMLOCK, ENOMEM). */
static int mr_size_refused(struct sti_ctx *ctx, uint64_t length)
{
	const struct sti_limits *d = ctx->dev.drv ? ctx->dev.drv->lim : NULL;
	uint64_t left;

	if (!d || !d->mr_size_err)
		return 0;
	if (d->mr_size) {
		d->mr_size(&left);
		return length > left ? d->mr_size_err : 0;
	}
	return length > d->max_mr_size ? d->mr_size_err : 0;
}

/* Creates an object and lets the driver fill its udata; on the driver's
 * failure the object is gone again. */
static struct sti_obj *make(struct cmd *c, enum sti_type t, enum sti_op op, int *err)
{
	struct sti_obj *o;

	*err = count_refused(c->ctx, t);
	if (!*err && op == STI_OP_REG_MR)
		*err = mr_size_refused(c->ctx, c->dr.length);
	if (*err)
		return NULL;
	o = sti_new(c->ctx, t);
	if (!o) {
		*err = ENOMEM;
		return NULL;
	}
	*err = hook(c, op, o);
	if (*err) {
		sti_free(c->ctx, o);
		return NULL;
	}
	return o;
}

/*
 * The kernel's references between objects.  Linux counts, on each object,
 * the objects made on it (the usecnt of a PD, CQ, SRQ, WQ, RWQ indirection
 * table, QP, DM, counters, flow action, DMA handle; an XRCD's uxrcd
 * refcnt), taken when the user object is made and given back when it is
 * destroyed, and a destroy asked by the process while the count is not 0
 * is refused with EBUSY (uverbs_free_pd; ib_destroy_cq_user,
 * ib_destroy_srq_user, ib_destroy_wq_user, ib_destroy_qp_user;
 * uverbs_free_rwq_ind_tbl; ib_destroy_usecnt for XRCD, DM, counters, flow
 * actions, DMA handles).  A QP with multicast groups attached is refused
 * the same way (uverbs_free_qp).  Closing the context destroys everything
 * whatever the counts (sti_ctx_release).
 */
static void use(struct sti_obj *o, struct sti_obj *u)
{
	struct sti_obj **n;

	if (!u)
		return;
	n = realloc(o->uses, (o->nuses + 1) * sizeof(*n));
	if (!n) {
		sti_log("out of memory: a use of h%u by h%u is not counted", u->handle, o->handle);
		return;
	}
	o->uses = n;
	n[o->nuses++] = u;
	u->usecnt++;
}

/* o no longer uses u (a REREG_MR moving an MR to another PD). */
static void unuse(struct sti_obj *o, struct sti_obj *u)
{
	for (uint32_t i = 0; i < o->nuses; i++)
		if (o->uses[i] == u) {
			u->usecnt--;
			o->uses[i] = o->uses[--o->nuses];
			return;
		}
}

/* A destroy the process asked for: EBUSY while others use the object,
 * else the uses it held are given back and it is gone. */
static int destroy_obj(struct cmd *c, struct sti_obj *o)
{
	if (o->usecnt || o->nmcast)
		return EBUSY;
	for (uint32_t i = 0; i < o->nuses; i++)
		o->uses[i]->usecnt--;
	o->nuses = 0;
	sti_free(c->ctx, o);
	return 0;
}

static int destroy(struct cmd *c, uint32_t h, enum sti_type t)
{
	struct sti_obj *o = sti_get(c->ctx, h, t);

	if (!o)
		return EINVAL;
	return destroy_obj(c, o);
}

/* The flow spec types of the counters and flow action handle (the
 * kernel's enum ib_flow_spec_type, as libibverbs' IBV_FLOW_SPEC_ACTION_*) */
#define K_FLOW_SPEC_ACTION_HANDLE 0x1002u
#define K_FLOW_SPEC_ACTION_COUNT 0x1003u

/* A flow uses its QP (ib_uverbs_ex_create_flow), and the counters and flow
 * actions its specs name (flow_resources_add). */
static void flow_uses(struct cmd *c, struct sti_obj *o, const struct ib_uverbs_create_flow *q, size_t in_len)
{
	const uint8_t *p = (const uint8_t *)q;
	size_t off = sizeof(*q);

	use(o, sti_get(c->ctx, q->qp_handle, STI_T_QP));
	for (unsigned i = 0; i < q->flow_attr.num_of_specs; i++) {
		struct ib_uverbs_flow_spec_hdr h;
		uint32_t handle;

		if (off + sizeof(h) > in_len)
			break;
		memcpy(&h, p + off, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > in_len)
			break;
		if (h.size >= sizeof(h) + 4 &&
		    (h.type == K_FLOW_SPEC_ACTION_COUNT || h.type == K_FLOW_SPEC_ACTION_HANDLE)) {
			memcpy(&handle, p + off + sizeof(h), 4);
			use(o, sti_get(c->ctx, handle,
				       h.type == K_FLOW_SPEC_ACTION_COUNT ? STI_T_COUNTERS : STI_T_FLOW_ACTION));
		}
		off += h.size;
	}
}

/* ATTACH_MCAST / DETACH_MCAST: the QP's list of groups, as
 * ib_uverbs_attach_mcast keeps it (a group attached twice is there once;
 * detaching one that is not there is EINVAL). */
static int mcast(struct sti_obj *qp, const uint8_t gid[16], uint16_t lid, int attach)
{
	uint8_t key[18];
	uint8_t (*n)[18];

	memcpy(key, gid, 16);
	memcpy(key + 16, &lid, 2);
	for (uint32_t i = 0; i < qp->nmcast; i++)
		if (!memcmp(qp->mcast[i], key, sizeof(key))) {
			if (attach)
				return 0;
			memcpy(qp->mcast[i], qp->mcast[--qp->nmcast], sizeof(key));
			return 0;
		}
	if (!attach)
		return EINVAL;
	n = realloc(qp->mcast, (qp->nmcast + 1) * sizeof(*n));
	if (!n)
		return ENOMEM;
	qp->mcast = n;
	memcpy(n[qp->nmcast++], key, sizeof(key));
	return 0;
}

static uint32_t new_qpn(struct sti_ctx *ctx)
{
	if (!ctx->next_qpn)
		ctx->next_qpn = 0x100 + 0x1000 * (uint32_t)ctx->dev.index;
	return ctx->next_qpn++;
}

static uint32_t new_key(struct sti_ctx *ctx)
{
	ctx->next_key += 0x100;
	return 0x1000 + ctx->next_key + 0x10 * (uint32_t)ctx->dev.index;
}

uint32_t sti_pow2(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

static uint32_t round_cqe(uint32_t cqe)
{
	return sti_pow2(cqe + 1) - 1;
}

static int v_create_cq(struct cmd *c, uint64_t uh, uint32_t cqe, uint32_t comp_vector, int chan_fd,
		       uint32_t *handle, uint32_t *cqe_out)
{
	struct sti_obj *o;
	int err;

	/* The core refuses a completion vector the device does not have
	 * (create_cq and the CQ_CREATE method), before the driver sees it. */
	if (comp_vector >= NUM_COMP_VECTORS)
		return EINVAL;
	if (!cqe || cqe > sti_limits_of(c->ctx).max_cqe)
		return EINVAL;
	c->dr.cqe = round_cqe(cqe);
	o = make(c, STI_T_CQ, STI_OP_CREATE_CQ, &err);
	if (!o)
		return err;
	o->user_handle = uh;
	o->cqe = c->dr.cqe;
	if (chan_fd >= 0) {
		/* The first CQ of a channel gets one completion event, so that
		 * get_cq_event/ack/destroy run. */
		for (uint32_t h = 0; h < STI_MAX_OBJS; h++) {
			struct sti_obj *ch = c->ctx->objs[h];
			if (ch && ch->type == STI_T_COMP_CHANNEL && ch->rfd == chan_fd && !ch->cqe) {
				struct ib_uverbs_comp_event_desc d = { .cq_handle = uh };
				if (write(ch->fd, &d, sizeof(d)) == sizeof(d)) {
					ch->cqe = 1;
					o->state = 1; /* one event delivered */
					o->rfd = chan_fd;
				}
			}
		}
	}
	*handle = o->handle;
	*cqe_out = o->cqe;
	note(c, " cq=%u cqe=%u", o->handle, o->cqe);
	return 0;
}

static uint32_t cq_events_read(struct sti_obj *cq)
{
	if (!cq->state)
		return 0;
	return pending_events(cq->rfd) ? 0 : 1;
}

struct qp_args {
	uint64_t user_handle;
	uint32_t pd, scq, rcq, srq, xrcd, ind, type, flags, source_qpn;
	int has_pd, has_scq, has_rcq, has_srq, has_xrcd, has_ind;
	struct ib_uverbs_qp_cap cap;
};

/* What the drivers check of a QP's capabilities (efa_qp_validate_cap,
 * rxe_qp_chk_cap, bnxt_re's and hns' size checks...): EINVAL above the
 * device's limits. */
static int qp_over_limits(const struct sti_ctx *ctx, const struct ib_uverbs_qp_cap *cap)
{
	struct sti_limits l = sti_limits_of(ctx);

	return cap->max_send_wr > l.max_send_wr || cap->max_recv_wr > l.max_recv_wr ||
	       cap->max_send_sge > l.max_send_sge || cap->max_recv_sge > l.max_recv_sge ||
	       cap->max_inline_data > l.max_inline;
}

static int v_create_qp(struct cmd *c, struct qp_args *a, uint32_t *handle, uint32_t *qpn, struct ib_uverbs_qp_cap *cap)
{
	struct sti_ctx *ctx = c->ctx;
	struct sti_obj *o;
	int err = 0;

	if (a->has_pd && !sti_get(ctx, a->pd, STI_T_PD))
		return EINVAL;
	if (a->has_xrcd && !sti_get(ctx, a->xrcd, STI_T_XRCD))
		return EINVAL;
	if (a->has_scq && !sti_get(ctx, a->scq, STI_T_CQ))
		return EINVAL;
	if (a->has_rcq && !sti_get(ctx, a->rcq, STI_T_CQ))
		return EINVAL;
	if (a->has_srq && !sti_get(ctx, a->srq, STI_T_SRQ))
		return EINVAL;
	if (a->has_ind && !sti_get(ctx, a->ind, STI_T_RWQ_IND_TBL))
		return EINVAL;
	if (qp_over_limits(ctx, &a->cap))
		return EINVAL;
	c->dr.qp_type = a->type;
	c->dr.max_send_wr = a->cap.max_send_wr;
	c->dr.max_recv_wr = a->cap.max_recv_wr;
	c->dr.max_send_sge = a->cap.max_send_sge;
	c->dr.max_recv_sge = a->cap.max_recv_sge;
	c->dr.max_inline = a->cap.max_inline_data;
	o = make(c, STI_T_QP, STI_OP_CREATE_QP, &err);
	if (!o)
		return err;
	o->user_handle = a->user_handle;
	o->qp_type = a->type;
	o->num = a->type == IB_UVERBS_QPT_RAW_PACKET && a->source_qpn ? a->source_qpn : new_qpn(ctx);
	/* ib_qp_usecnt_inc; an XRC target QP holds its XRCD instead */
	if (a->has_pd)
		use(o, sti_get(ctx, a->pd, STI_T_PD));
	if (a->has_xrcd)
		use(o, sti_get(ctx, a->xrcd, STI_T_XRCD));
	if (a->has_scq)
		use(o, sti_get(ctx, a->scq, STI_T_CQ));
	if (a->has_rcq)
		use(o, sti_get(ctx, a->rcq, STI_T_CQ));
	if (a->has_srq)
		use(o, sti_get(ctx, a->srq, STI_T_SRQ));
	if (a->has_ind)
		use(o, sti_get(ctx, a->ind, STI_T_RWQ_IND_TBL));
	*handle = o->handle;
	*qpn = o->num;
	cap->max_send_wr = c->dr.max_send_wr;
	cap->max_recv_wr = c->dr.max_recv_wr;
	cap->max_send_sge = c->dr.max_send_sge;
	cap->max_recv_sge = c->dr.max_recv_sge;
	cap->max_inline_data = c->dr.max_inline;
	note(c, " qp=%u qpn=0x%x", o->handle, o->num);
	return 0;
}

static int v_create_srq(struct cmd *c, uint32_t type, uint32_t pd, uint32_t xrcd, uint32_t cq, uint64_t uh,
			uint32_t *max_wr, uint32_t *max_sge, uint32_t *handle, uint32_t *srqn)
{
	struct sti_obj *o;
	int err = 0;

	if (!sti_get(c->ctx, pd, STI_T_PD))
		return EINVAL;
	if (type == IB_UVERBS_SRQT_XRC && (!sti_get(c->ctx, xrcd, STI_T_XRCD) || !sti_get(c->ctx, cq, STI_T_CQ)))
		return EINVAL;
	if (*max_wr > sti_limits_of(c->ctx).max_srq_wr || *max_sge > sti_limits_of(c->ctx).max_srq_sge)
		return EINVAL;
	c->dr.max_recv_wr = *max_wr;
	c->dr.max_recv_sge = *max_sge;
	o = make(c, STI_T_SRQ, STI_OP_CREATE_SRQ, &err);
	if (!o)
		return err;
	o->user_handle = uh;
	o->num = 0x40 + c->ctx->next_num++;
	/* ib_create_srq_user: the PD; an XRC SRQ its CQ and XRCD too */
	use(o, sti_get(c->ctx, pd, STI_T_PD));
	if (type == IB_UVERBS_SRQT_XRC) {
		use(o, sti_get(c->ctx, xrcd, STI_T_XRCD));
		use(o, sti_get(c->ctx, cq, STI_T_CQ));
	}
	*max_wr = c->dr.max_recv_wr;
	*max_sge = c->dr.max_recv_sge;
	*handle = o->handle;
	*srqn = o->num;
	note(c, " srq=%u", o->handle);
	return 0;
}

/* ------------------------------------------------------- write() commands */
struct wdesc {
	const char *name;
	size_t in, out; /* core sizes (without the headers) */
};

#define W(n, i, o) [IB_USER_VERBS_CMD_##n] = { #n, i, o }
static const struct wdesc wcmds[] = {
	W(GET_CONTEXT, sizeof(struct ib_uverbs_get_context), sizeof(struct ib_uverbs_get_context_resp)),
	W(QUERY_DEVICE, sizeof(struct ib_uverbs_query_device), sizeof(struct ib_uverbs_query_device_resp)),
	W(QUERY_PORT, sizeof(struct ib_uverbs_query_port), sizeof(struct ib_uverbs_query_port_resp)),
	W(ALLOC_PD, sizeof(struct ib_uverbs_alloc_pd), sizeof(struct ib_uverbs_alloc_pd_resp)),
	W(DEALLOC_PD, sizeof(struct ib_uverbs_dealloc_pd), 0),
	W(CREATE_AH, sizeof(struct ib_uverbs_create_ah), sizeof(struct ib_uverbs_create_ah_resp)),
	W(DESTROY_AH, sizeof(struct ib_uverbs_destroy_ah), 0),
	W(REG_MR, sizeof(struct ib_uverbs_reg_mr), sizeof(struct ib_uverbs_reg_mr_resp)),
	W(REREG_MR, sizeof(struct ib_uverbs_rereg_mr), sizeof(struct ib_uverbs_rereg_mr_resp)),
	W(DEREG_MR, sizeof(struct ib_uverbs_dereg_mr), 0),
	W(ALLOC_MW, sizeof(struct ib_uverbs_alloc_mw), sizeof(struct ib_uverbs_alloc_mw_resp)),
	W(DEALLOC_MW, sizeof(struct ib_uverbs_dealloc_mw), 0),
	W(CREATE_COMP_CHANNEL, sizeof(struct ib_uverbs_create_comp_channel),
	  sizeof(struct ib_uverbs_create_comp_channel_resp)),
	W(CREATE_CQ, sizeof(struct ib_uverbs_create_cq), sizeof(struct ib_uverbs_create_cq_resp)),
	W(RESIZE_CQ, sizeof(struct ib_uverbs_resize_cq), sizeof(struct ib_uverbs_resize_cq_resp)),
	W(DESTROY_CQ, sizeof(struct ib_uverbs_destroy_cq), sizeof(struct ib_uverbs_destroy_cq_resp)),
	W(POLL_CQ, sizeof(struct ib_uverbs_poll_cq), sizeof(struct ib_uverbs_poll_cq_resp)),
	W(REQ_NOTIFY_CQ, sizeof(struct ib_uverbs_req_notify_cq), 0),
	W(CREATE_QP, sizeof(struct ib_uverbs_create_qp), sizeof(struct ib_uverbs_create_qp_resp)),
	W(QUERY_QP, sizeof(struct ib_uverbs_query_qp), sizeof(struct ib_uverbs_query_qp_resp)),
	W(MODIFY_QP, sizeof(struct ib_uverbs_modify_qp), 0),
	W(DESTROY_QP, sizeof(struct ib_uverbs_destroy_qp), sizeof(struct ib_uverbs_destroy_qp_resp)),
	W(POST_SEND, sizeof(struct ib_uverbs_post_send), sizeof(struct ib_uverbs_post_send_resp)),
	W(POST_RECV, sizeof(struct ib_uverbs_post_recv), sizeof(struct ib_uverbs_post_recv_resp)),
	W(ATTACH_MCAST, sizeof(struct ib_uverbs_attach_mcast), 0),
	W(DETACH_MCAST, sizeof(struct ib_uverbs_detach_mcast), 0),
	W(CREATE_SRQ, sizeof(struct ib_uverbs_create_srq), sizeof(struct ib_uverbs_create_srq_resp)),
	W(MODIFY_SRQ, sizeof(struct ib_uverbs_modify_srq), 0),
	W(QUERY_SRQ, sizeof(struct ib_uverbs_query_srq), sizeof(struct ib_uverbs_query_srq_resp)),
	W(DESTROY_SRQ, sizeof(struct ib_uverbs_destroy_srq), sizeof(struct ib_uverbs_destroy_srq_resp)),
	W(POST_SRQ_RECV, sizeof(struct ib_uverbs_post_srq_recv), sizeof(struct ib_uverbs_post_srq_recv_resp)),
	W(OPEN_XRCD, sizeof(struct ib_uverbs_open_xrcd), sizeof(struct ib_uverbs_open_xrcd_resp)),
	W(CLOSE_XRCD, sizeof(struct ib_uverbs_close_xrcd), 0),
	W(CREATE_XSRQ, sizeof(struct ib_uverbs_create_xsrq), sizeof(struct ib_uverbs_create_srq_resp)),
	W(OPEN_QP, sizeof(struct ib_uverbs_open_qp), sizeof(struct ib_uverbs_create_qp_resp)),
};
#undef W

#define WX(n, i, o) [n] = { #n, i, o }
static const struct wdesc xcmds[] = {
	WX(IB_USER_VERBS_EX_CMD_QUERY_DEVICE, sizeof(struct ib_uverbs_ex_query_device),
	   sizeof(struct ib_uverbs_ex_query_device_resp)),
	WX(IB_USER_VERBS_EX_CMD_CREATE_CQ, sizeof(struct ib_uverbs_ex_create_cq),
	   sizeof(struct ib_uverbs_ex_create_cq_resp)),
	WX(IB_USER_VERBS_EX_CMD_CREATE_QP, sizeof(struct ib_uverbs_ex_create_qp),
	   sizeof(struct ib_uverbs_ex_create_qp_resp)),
	WX(IB_USER_VERBS_EX_CMD_MODIFY_QP, sizeof(struct ib_uverbs_ex_modify_qp),
	   sizeof(struct ib_uverbs_ex_modify_qp_resp)),
	WX(IB_USER_VERBS_EX_CMD_CREATE_FLOW, sizeof(struct ib_uverbs_create_flow),
	   sizeof(struct ib_uverbs_create_flow_resp)),
	WX(IB_USER_VERBS_EX_CMD_DESTROY_FLOW, sizeof(struct ib_uverbs_destroy_flow), 0),
	WX(IB_USER_VERBS_EX_CMD_CREATE_WQ, sizeof(struct ib_uverbs_ex_create_wq),
	   sizeof(struct ib_uverbs_ex_create_wq_resp)),
	WX(IB_USER_VERBS_EX_CMD_MODIFY_WQ, sizeof(struct ib_uverbs_ex_modify_wq), 0),
	WX(IB_USER_VERBS_EX_CMD_DESTROY_WQ, sizeof(struct ib_uverbs_ex_destroy_wq),
	   sizeof(struct ib_uverbs_ex_destroy_wq_resp)),
	WX(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, sizeof(struct ib_uverbs_ex_create_rwq_ind_table),
	   sizeof(struct ib_uverbs_ex_create_rwq_ind_table_resp)),
	WX(IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, sizeof(struct ib_uverbs_ex_destroy_rwq_ind_table), 0),
	WX(IB_USER_VERBS_EX_CMD_MODIFY_CQ, sizeof(struct ib_uverbs_ex_modify_cq), 0),
};
#undef WX

/* One write command: in/out are the core request and response (the
 * response zeroed, *out_len its room, set to what was written), the driver
 * data in c->dr.  0 or errno. */
static int do_write(struct cmd *c, uint32_t cmd, int ex, const void *in, size_t in_len, void *out,
		    size_t *out_len)
{
	struct sti_ctx *ctx = c->ctx;
	size_t room = *out_len;
	int err = 0;

	*out_len = 0;
#define IN(T) const struct T *q = in; if (in_len < sizeof(*q)) return EINVAL
#define OUT(T) struct T r; memset(&r, 0, sizeof(r))
#define RESP() do { *out_len = MIN(room, sizeof(r)); memcpy(out, &r, *out_len); } while (0)
	if (!ctx->have_ucontext && !(cmd == IB_USER_VERBS_CMD_GET_CONTEXT && !ex))
		return EINVAL;
	if (ex) {
		switch (cmd) {
		case IB_USER_VERBS_EX_CMD_QUERY_DEVICE: {
			struct ib_uverbs_ex_query_device_resp r;
			size_t n;
			err = hook(c, STI_OP_QUERY_DEVICE, NULL);
			if (err)
				return err;
			n = query_device_ex(ctx, &r, room);
			memcpy(out, &r, n);
			*out_len = n;
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_CREATE_CQ: {
			IN(ib_uverbs_ex_create_cq);
			OUT(ib_uverbs_ex_create_cq_resp);
			err = v_create_cq(c, q->user_handle, q->cqe, q->comp_vector, q->comp_channel, &r.base.cq_handle,
				  &r.base.cqe);
			if (err)
				return err;
			r.response_length = (uint32_t)MIN(room, sizeof(r));
			RESP();
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_CREATE_QP: {
			IN(ib_uverbs_ex_create_qp);
			OUT(ib_uverbs_ex_create_qp_resp);
			struct qp_args a = { .user_handle = q->user_handle, .pd = q->pd_handle,
					     .scq = q->send_cq_handle, .rcq = q->recv_cq_handle,
					     .srq = q->srq_handle, .type = q->qp_type, .flags = q->create_flags,
					     .source_qpn = q->source_qpn };
			struct ib_uverbs_qp_cap cap;
			int xrc_tgt = q->qp_type == IB_UVERBS_QPT_XRC_TGT;
			a.has_ind = !!(q->comp_mask & IB_UVERBS_CREATE_QP_MASK_IND_TABLE);
			a.ind = q->rwq_ind_tbl_handle;
			a.has_pd = !xrc_tgt;
			a.has_xrcd = xrc_tgt;
			a.xrcd = q->pd_handle;
			a.has_scq = !xrc_tgt && !a.has_ind;
			a.has_rcq = !xrc_tgt && !a.has_ind && q->qp_type != IB_UVERBS_QPT_XRC_INI && !q->is_srq;
			a.has_srq = !!q->is_srq;
			a.cap = (struct ib_uverbs_qp_cap){ q->max_send_wr, q->max_recv_wr, q->max_send_sge,
							   q->max_recv_sge, q->max_inline_data };
			err = v_create_qp(c, &a, &r.base.qp_handle, &r.base.qpn, &cap);
			if (err)
				return err;
			r.base.max_send_wr = cap.max_send_wr;
			r.base.max_recv_wr = cap.max_recv_wr;
			r.base.max_send_sge = cap.max_send_sge;
			r.base.max_recv_sge = cap.max_recv_sge;
			r.base.max_inline_data = cap.max_inline_data;
			r.response_length = (uint32_t)MIN(room, sizeof(r));
			RESP();
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_MODIFY_QP: {
			IN(ib_uverbs_ex_modify_qp);
			OUT(ib_uverbs_ex_modify_qp_resp);
			struct sti_obj *o = obj_or(c, q->base.qp_handle, STI_T_QP, &err);
			if (!o)
				return err;
			c->dr.attr_mask = q->base.attr_mask;
			c->dr.qp_state = q->base.qp_state;
			err = hook(c, STI_OP_MODIFY_QP, o);
			if (err)
				return err;
			if (q->base.attr_mask & 1)
				o->state = q->base.qp_state;
			r.response_length = (uint32_t)MIN(room, sizeof(r));
			RESP();
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_CREATE_FLOW: {
			IN(ib_uverbs_create_flow);
			OUT(ib_uverbs_create_flow_resp);
			struct sti_obj *o;
			if (!sti_get(ctx, q->qp_handle, STI_T_QP))
				return EINVAL;
			o = make(c, STI_T_FLOW, STI_OP_CREATE_FLOW, &err);
			if (!o)
				return err;
			flow_uses(c, o, q, in_len);
			r.flow_handle = o->handle;
			RESP();
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_DESTROY_FLOW: {
			IN(ib_uverbs_destroy_flow);
			return destroy(c, q->flow_handle, STI_T_FLOW);
		}
		case IB_USER_VERBS_EX_CMD_CREATE_WQ: {
			IN(ib_uverbs_ex_create_wq);
			OUT(ib_uverbs_ex_create_wq_resp);
			struct sti_obj *o;
			if (!sti_get(ctx, q->pd_handle, STI_T_PD) || !sti_get(ctx, q->cq_handle, STI_T_CQ))
				return EINVAL;
			c->dr.max_recv_wr = q->max_wr;
			c->dr.max_recv_sge = q->max_sge;
			o = make(c, STI_T_WQ, STI_OP_CREATE_WQ, &err);
			if (!o)
				return err;
			/* ib_create_wq: the PD and the CQ */
			use(o, sti_get(ctx, q->pd_handle, STI_T_PD));
			use(o, sti_get(ctx, q->cq_handle, STI_T_CQ));
			o->user_handle = q->user_handle;
			o->num = 0x80 + ctx->next_num++;
			r.wq_handle = o->handle;
			r.max_wr = c->dr.max_recv_wr;
			r.max_sge = c->dr.max_recv_sge;
			r.wqn = o->num;
			r.response_length = (uint32_t)MIN(room, sizeof(r));
			RESP();
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_MODIFY_WQ: {
			IN(ib_uverbs_ex_modify_wq);
			struct sti_obj *o = obj_or(c, q->wq_handle, STI_T_WQ, &err);
			if (!o)
				return err;
			return hook(c, STI_OP_MODIFY_WQ, o);
		}
		case IB_USER_VERBS_EX_CMD_DESTROY_WQ: {
			IN(ib_uverbs_ex_destroy_wq);
			OUT(ib_uverbs_ex_destroy_wq_resp);
			err = destroy(c, q->wq_handle, STI_T_WQ);
			if (err)
				return err;
			r.response_length = (uint32_t)MIN(room, sizeof(r));
			RESP();
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL: {
			IN(ib_uverbs_ex_create_rwq_ind_table);
			OUT(ib_uverbs_ex_create_rwq_ind_table_resp);
			size_t n = (size_t)1 << q->log_ind_tbl_size;
			struct sti_obj *o;
			if (q->log_ind_tbl_size > 11 || in_len < sizeof(*q) + 4 * n)
				return EINVAL;
			for (size_t i = 0; i < n; i++)
				if (!sti_get(ctx, q->wq_handles[i], STI_T_WQ))
					return EINVAL;
			o = make(c, STI_T_RWQ_IND_TBL, STI_OP_CREATE_RWQ_IND_TBL, &err);
			if (!o)
				return err;
			/* each entry is a use of its WQ (one per entry) */
			for (size_t i = 0; i < n; i++)
				use(o, sti_get(ctx, q->wq_handles[i], STI_T_WQ));
			o->num = 0xc0 + ctx->next_num++;
			r.ind_tbl_handle = o->handle;
			r.ind_tbl_num = o->num;
			r.response_length = (uint32_t)MIN(room, sizeof(r));
			RESP();
			return 0;
		}
		case IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL: {
			IN(ib_uverbs_ex_destroy_rwq_ind_table);
			return destroy(c, q->ind_tbl_handle, STI_T_RWQ_IND_TBL);
		}
		case IB_USER_VERBS_EX_CMD_MODIFY_CQ: {
			IN(ib_uverbs_ex_modify_cq);
			return sti_get(ctx, q->cq_handle, STI_T_CQ) ? 0 : EINVAL;
		}
		}
		return ENOSYS;
	}

	switch (cmd) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: {
		OUT(ib_uverbs_get_context_resp);
		if (ctx->have_ucontext)
			return EINVAL;
		err = hook(c, STI_OP_GET_CONTEXT, NULL);
		if (err)
			return err;
		err = event_pipe(&ctx->async_rfd, &ctx->async_wfd);
		if (err)
			return err;
		ctx->have_ucontext = 1;
		r.async_fd = (uint32_t)ctx->async_rfd;
		r.num_comp_vectors = NUM_COMP_VECTORS;
		async_event(ctx, 1, 9 /* IB_EVENT_PORT_ACTIVE */);
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_DEVICE: {
		OUT(ib_uverbs_query_device_resp);
		query_device(ctx, &r);
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		IN(ib_uverbs_query_port);
		OUT(ib_uverbs_query_port_resp);
		if (q->port_num != 1)
			return EINVAL;
		query_port(ctx, &r);
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		OUT(ib_uverbs_alloc_pd_resp);
		struct sti_obj *o = make(c, STI_T_PD, STI_OP_ALLOC_PD, &err);
		if (!o)
			return err;
		r.pd_handle = o->handle;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_DEALLOC_PD: {
		IN(ib_uverbs_dealloc_pd);
		return destroy(c, q->pd_handle, STI_T_PD);
	}
	case IB_USER_VERBS_CMD_CREATE_AH: {
		IN(ib_uverbs_create_ah);
		OUT(ib_uverbs_create_ah_resp);
		struct sti_obj *o;
		if (!sti_get(ctx, q->pd_handle, STI_T_PD))
			return EINVAL;
		o = make(c, STI_T_AH, STI_OP_CREATE_AH, &err);
		if (!o)
			return err;
		use(o, sti_get(ctx, q->pd_handle, STI_T_PD));
		o->user_handle = q->user_handle;
		r.ah_handle = o->handle;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_DESTROY_AH: {
		IN(ib_uverbs_destroy_ah);
		return destroy(c, q->ah_handle, STI_T_AH);
	}
	case IB_USER_VERBS_CMD_REG_MR: {
		IN(ib_uverbs_reg_mr);
		OUT(ib_uverbs_reg_mr_resp);
		struct sti_obj *o;
		if (!sti_get(ctx, q->pd_handle, STI_T_PD) || !q->length)
			return EINVAL;
		c->dr.length = q->length;
		o = make(c, STI_T_MR, STI_OP_REG_MR, &err);
		if (!o)
			return err;
		use(o, sti_get(ctx, q->pd_handle, STI_T_PD));
		o->num = new_key(ctx);
		o->rkey = o->num;
		r.mr_handle = o->handle;
		r.lkey = o->num;
		r.rkey = o->rkey;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_REREG_MR: {
		IN(ib_uverbs_rereg_mr);
		OUT(ib_uverbs_rereg_mr_resp);
		struct sti_obj *o = obj_or(c, q->mr_handle, STI_T_MR, &err);
		if (!o)
			return err;
		if (!q->flags || (q->flags & ~7u))
			return EINVAL;
		if ((q->flags & 2 /* IB_MR_REREG_PD */) && !sti_get(ctx, q->pd_handle, STI_T_PD))
			return EINVAL;
		err = hook(c, STI_OP_REREG_MR, o);
		if (err)
			return err;
		if (q->flags & 2) {
			/* the MR's use moves to the new PD */
			for (uint32_t i = 0; i < o->nuses; i++)
				if (o->uses[i]->type == STI_T_PD) {
					unuse(o, o->uses[i]);
					break;
				}
			use(o, sti_get(ctx, q->pd_handle, STI_T_PD));
		}
		o->num = new_key(ctx);
		o->rkey = o->num;
		r.lkey = o->num;
		r.rkey = o->rkey;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_DEREG_MR: {
		IN(ib_uverbs_dereg_mr);
		return destroy(c, q->mr_handle, STI_T_MR);
	}
	case IB_USER_VERBS_CMD_ALLOC_MW: {
		IN(ib_uverbs_alloc_mw);
		OUT(ib_uverbs_alloc_mw_resp);
		struct sti_obj *o;
		if (!sti_get(ctx, q->pd_handle, STI_T_PD) || (q->mw_type != 1 && q->mw_type != 2))
			return EINVAL;
		o = make(c, STI_T_MW, STI_OP_ALLOC_MW, &err);
		if (!o)
			return err;
		use(o, sti_get(ctx, q->pd_handle, STI_T_PD));
		o->rkey = new_key(ctx);
		r.mw_handle = o->handle;
		r.rkey = o->rkey;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_DEALLOC_MW: {
		IN(ib_uverbs_dealloc_mw);
		return destroy(c, q->mw_handle, STI_T_MW);
	}
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL: {
		OUT(ib_uverbs_create_comp_channel_resp);
		struct sti_obj *o = sti_new(ctx, STI_T_COMP_CHANNEL);
		if (!o)
			return ENOMEM;
		err = event_pipe(&o->rfd, &o->fd);
		if (err) {
			sti_free(ctx, o);
			return err;
		}
		r.fd = (uint32_t)o->rfd;
		note(c, " channel");
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_CREATE_CQ: {
		IN(ib_uverbs_create_cq);
		OUT(ib_uverbs_create_cq_resp);
		err = v_create_cq(c, q->user_handle, q->cqe, q->comp_vector, q->comp_channel, &r.cq_handle, &r.cqe);
		if (err)
			return err;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_RESIZE_CQ: {
		IN(ib_uverbs_resize_cq);
		OUT(ib_uverbs_resize_cq_resp);
		struct sti_obj *o = obj_or(c, q->cq_handle, STI_T_CQ, &err);
		if (!o)
			return err;
		if (!q->cqe || q->cqe > sti_limits_of(ctx).max_cqe)
			return EINVAL;
		c->dr.cqe = round_cqe(q->cqe);
		err = hook(c, STI_OP_RESIZE_CQ, o);
		if (err)
			return err;
		o->cqe = c->dr.cqe;
		r.cqe = o->cqe;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_DESTROY_CQ: {
		IN(ib_uverbs_destroy_cq);
		OUT(ib_uverbs_destroy_cq_resp);
		struct sti_obj *o = obj_or(c, q->cq_handle, STI_T_CQ, &err);
		if (!o)
			return err;
		if (o->usecnt)
			return EBUSY; /* ib_destroy_cq_user */
		r.comp_events_reported = cq_events_read(o);
		destroy_obj(c, o);
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_POLL_CQ: {
		IN(ib_uverbs_poll_cq);
		OUT(ib_uverbs_poll_cq_resp);
		if (!sti_get(ctx, q->cq_handle, STI_T_CQ))
			return EINVAL;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: {
		IN(ib_uverbs_req_notify_cq);
		return sti_get(ctx, q->cq_handle, STI_T_CQ) ? 0 : EINVAL;
	}
	case IB_USER_VERBS_CMD_CREATE_QP: {
		IN(ib_uverbs_create_qp);
		OUT(ib_uverbs_create_qp_resp);
		int xrc_tgt = q->qp_type == IB_UVERBS_QPT_XRC_TGT;
		struct qp_args a = { .user_handle = q->user_handle, .pd = q->pd_handle, .scq = q->send_cq_handle,
				     .rcq = q->recv_cq_handle, .srq = q->srq_handle, .type = q->qp_type };
		struct ib_uverbs_qp_cap cap;
		a.has_pd = !xrc_tgt;
		a.has_xrcd = xrc_tgt;
		a.xrcd = q->pd_handle;
		a.has_scq = !xrc_tgt;
		a.has_rcq = !xrc_tgt && q->qp_type != IB_UVERBS_QPT_XRC_INI && !q->is_srq;
		a.has_srq = !!q->is_srq;
		a.cap = (struct ib_uverbs_qp_cap){ q->max_send_wr, q->max_recv_wr, q->max_send_sge, q->max_recv_sge,
						   q->max_inline_data };
		err = v_create_qp(c, &a, &r.qp_handle, &r.qpn, &cap);
		if (err)
			return err;
		r.max_send_wr = cap.max_send_wr;
		r.max_recv_wr = cap.max_recv_wr;
		r.max_send_sge = cap.max_send_sge;
		r.max_recv_sge = cap.max_recv_sge;
		r.max_inline_data = cap.max_inline_data;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_OPEN_QP: {
		IN(ib_uverbs_open_qp);
		OUT(ib_uverbs_create_qp_resp);
		struct sti_obj *o, *t = NULL;
		for (uint32_t h = 0; h < STI_MAX_OBJS; h++)
			if (ctx->objs[h] && ctx->objs[h]->type == STI_T_QP && ctx->objs[h]->num == q->qpn)
				t = ctx->objs[h];
		if (!t || !sti_get(ctx, q->pd_handle, STI_T_XRCD))
			return EINVAL;
		o = sti_new(ctx, STI_T_QP);
		if (!o)
			return ENOMEM;
		use(o, sti_get(ctx, q->pd_handle, STI_T_XRCD)); /* the uxrcd refcnt */
		o->num = t->num;
		o->qp_type = q->qp_type;
		o->user_handle = q->user_handle;
		r.qp_handle = o->handle;
		r.qpn = o->num;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_QP: {
		IN(ib_uverbs_query_qp);
		OUT(ib_uverbs_query_qp_resp);
		struct sti_obj *o = obj_or(c, q->qp_handle, STI_T_QP, &err);
		if (!o)
			return err;
		err = hook(c, STI_OP_QUERY_QP, o);
		if (err)
			return err;
		r.qp_state = (uint8_t)o->state;
		r.cur_qp_state = (uint8_t)o->state;
		r.path_mtu = 3;
		r.port_num = 1;
		r.max_send_wr = 16;
		r.max_recv_wr = 16;
		r.max_send_sge = 1;
		r.max_recv_sge = 1;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_MODIFY_QP: {
		IN(ib_uverbs_modify_qp);
		struct sti_obj *o = obj_or(c, q->qp_handle, STI_T_QP, &err);
		if (!o)
			return err;
		c->dr.attr_mask = q->attr_mask;
		c->dr.qp_state = q->qp_state;
		err = hook(c, STI_OP_MODIFY_QP, o);
		if (err)
			return err;
		if (q->attr_mask & 1)
			o->state = q->qp_state;
		return 0;
	}
	case IB_USER_VERBS_CMD_DESTROY_QP: {
		IN(ib_uverbs_destroy_qp);
		OUT(ib_uverbs_destroy_qp_resp);
		err = destroy(c, q->qp_handle, STI_T_QP);
		if (err)
			return err;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_POST_SEND:
	case IB_USER_VERBS_CMD_POST_RECV:
	case IB_USER_VERBS_CMD_POST_SRQ_RECV: {
		IN(ib_uverbs_post_send); /* qp_handle / srq_handle at the same place */
		OUT(ib_uverbs_post_send_resp);
		if (!sti_get(ctx, q->qp_handle, cmd == IB_USER_VERBS_CMD_POST_SRQ_RECV ? STI_T_SRQ : STI_T_QP))
			return EINVAL;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_ATTACH_MCAST:
	case IB_USER_VERBS_CMD_DETACH_MCAST: {
		IN(ib_uverbs_attach_mcast);
		struct sti_obj *o = obj_or(c, q->qp_handle, STI_T_QP, &err);
		if (!o)
			return err;
		return mcast(o, q->gid, q->mlid, cmd == IB_USER_VERBS_CMD_ATTACH_MCAST);
	}
	case IB_USER_VERBS_CMD_CREATE_SRQ: {
		IN(ib_uverbs_create_srq);
		OUT(ib_uverbs_create_srq_resp);
		r.max_wr = q->max_wr;
		r.max_sge = q->max_sge;
		err = v_create_srq(c, IB_UVERBS_SRQT_BASIC, q->pd_handle, 0, 0, q->user_handle, &r.max_wr, &r.max_sge,
				   &r.srq_handle, &r.srqn);
		if (err)
			return err;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_CREATE_XSRQ: {
		IN(ib_uverbs_create_xsrq);
		OUT(ib_uverbs_create_srq_resp);
		r.max_wr = q->max_wr;
		r.max_sge = q->max_sge;
		err = v_create_srq(c, q->srq_type, q->pd_handle, q->xrcd_handle, q->cq_handle, q->user_handle,
				   &r.max_wr, &r.max_sge, &r.srq_handle, &r.srqn);
		if (err)
			return err;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_MODIFY_SRQ: {
		IN(ib_uverbs_modify_srq);
		struct sti_obj *o = obj_or(c, q->srq_handle, STI_T_SRQ, &err);
		if (!o)
			return err;
		/* a resize past the device's SRQ depth (drivers that cannot
		 * resize at all, mlx5 and mlx4, refuse any: EINVAL too) */
		if ((q->attr_mask & 1u /* IB_SRQ_MAX_WR */) && q->max_wr > sti_limits_of(ctx).max_srq_wr)
			return EINVAL;
		c->dr.attr_mask = q->attr_mask;
		c->dr.max_recv_wr = q->max_wr;
		return hook(c, STI_OP_MODIFY_SRQ, o);
	}
	case IB_USER_VERBS_CMD_QUERY_SRQ: {
		IN(ib_uverbs_query_srq);
		OUT(ib_uverbs_query_srq_resp);
		if (!sti_get(ctx, q->srq_handle, STI_T_SRQ))
			return EINVAL;
		r.max_wr = 16;
		r.max_sge = 1;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_DESTROY_SRQ: {
		IN(ib_uverbs_destroy_srq);
		OUT(ib_uverbs_destroy_srq_resp);
		err = destroy(c, q->srq_handle, STI_T_SRQ);
		if (err)
			return err;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_OPEN_XRCD: {
		OUT(ib_uverbs_open_xrcd_resp);
		struct sti_obj *o = make(c, STI_T_XRCD, STI_OP_OPEN_XRCD, &err);
		if (!o)
			return err;
		r.xrcd_handle = o->handle;
		RESP();
		return 0;
	}
	case IB_USER_VERBS_CMD_CLOSE_XRCD: {
		IN(ib_uverbs_close_xrcd);
		return destroy(c, q->xrcd_handle, STI_T_XRCD);
	}
	}
	return ENOSYS;
#undef IN
#undef OUT
#undef RESP
}

static const char *wname(uint32_t cmd, int ex)
{
	if (ex)
		return cmd < sizeof(xcmds) / sizeof(xcmds[0]) && xcmds[cmd].name ? xcmds[cmd].name + 20 : "EX_?";
	return cmd < sizeof(wcmds) / sizeof(wcmds[0]) && wcmds[cmd].name ? wcmds[cmd].name : "?";
}

static const struct wdesc *wd(uint32_t cmd, int ex)
{
	if (ex)
		return cmd < sizeof(xcmds) / sizeof(xcmds[0]) && xcmds[cmd].name ? &xcmds[cmd] : NULL;
	return cmd < sizeof(wcmds) / sizeof(wcmds[0]) && wcmds[cmd].name ? &wcmds[cmd] : NULL;
}

/*
 * The core request as the log shows it: what the kernel reads of it.  A
 * modify command's fields outside its attr_mask, and an address vector's
 * GRH without is_global, are not read; providers leave them as their
 * stack had them (rdma-core 44's hns and irdma do), so they are cleared.
 */
static void norm_dest(struct ib_uverbs_qp_dest *d)
{
	d->reserved = 0;
	if (!d->is_global) {
		memset(d->dgid, 0, sizeof(d->dgid));
		d->flow_label = 0;
		d->sgid_index = d->hop_limit = d->traffic_class = 0;
	}
}

static void norm_modify_qp(struct ib_uverbs_modify_qp *q)
{
	uint32_t m = q->attr_mask;

#define KEEP(bit, f) do { if (!(m & (1u << (bit)))) memset(&q->f, 0, sizeof(q->f)); } while (0)
	KEEP(0, qp_state);
	KEEP(1, cur_qp_state);
	KEEP(2, en_sqd_async_notify);
	KEEP(3, qp_access_flags);
	KEEP(4, pkey_index);
	KEEP(5, port_num);
	KEEP(6, qkey);
	KEEP(7, dest);
	KEEP(8, path_mtu);
	KEEP(9, timeout);
	KEEP(10, retry_cnt);
	KEEP(11, rnr_retry);
	KEEP(12, rq_psn);
	KEEP(13, max_rd_atomic);
	KEEP(14, alt_dest);
	KEEP(14, alt_pkey_index);
	KEEP(14, alt_port_num);
	KEEP(14, alt_timeout);
	KEEP(15, min_rnr_timer);
	KEEP(16, sq_psn);
	KEEP(17, max_dest_rd_atomic);
	KEEP(18, path_mig_state);
	KEEP(20, dest_qp_num);
#undef KEEP
	memset(q->reserved, 0, sizeof(q->reserved));
	norm_dest(&q->dest);
	norm_dest(&q->alt_dest);
}

/* A posted send request: the union's members that its QP type and opcode
 * do not use, and the immediate/invalidate word of opcodes without one
 * (rdma-core 44 builds the request in an uninitialised buffer). */
static void norm_post_send(struct sti_ctx *ctx, uint8_t *b, size_t len)
{
	struct ib_uverbs_post_send h;
	struct sti_obj *qp;
	int ud;

	if (len < sizeof(h))
		return;
	memcpy(&h, b, sizeof(h));
	qp = sti_get(ctx, h.qp_handle, STI_T_QP);
	ud = qp && qp->qp_type == IB_UVERBS_QPT_UD;
	if (h.wqe_size < sizeof(struct ib_uverbs_send_wr))
		return;
	for (uint32_t i = 0; i < h.wr_count; i++) {
		size_t off = sizeof(h) + (size_t)i * h.wqe_size;
		struct ib_uverbs_send_wr w, k;

		if (off + sizeof(w) > len)
			break;
		memcpy(&w, b + off, sizeof(w));
		k = w;
		memset(&w.wr, 0, sizeof(w.wr));
		if (w.opcode != IB_UVERBS_WR_SEND_WITH_IMM && w.opcode != IB_UVERBS_WR_RDMA_WRITE_WITH_IMM &&
		    w.opcode != IB_UVERBS_WR_SEND_WITH_INV)
			w.ex.imm_data = 0;
		if (ud) {
			w.wr.ud.ah = k.wr.ud.ah;
			w.wr.ud.remote_qpn = k.wr.ud.remote_qpn;
			w.wr.ud.remote_qkey = k.wr.ud.remote_qkey;
		} else if (w.opcode == IB_UVERBS_WR_RDMA_WRITE || w.opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM ||
			   w.opcode == IB_UVERBS_WR_RDMA_READ) {
			w.wr.rdma.remote_addr = k.wr.rdma.remote_addr;
			w.wr.rdma.rkey = k.wr.rdma.rkey;
		} else if (w.opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP || w.opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD) {
			w.wr.atomic = k.wr.atomic;
			w.wr.atomic.reserved = 0;
		}
		memcpy(b + off, &w, sizeof(w));
	}
}

/* Posted receive requests: their reserved word. */
static void norm_post_recv(uint8_t *b, size_t len)
{
	struct ib_uverbs_post_recv h;

	if (len < sizeof(h))
		return;
	memcpy(&h, b, sizeof(h));
	if (h.wqe_size < sizeof(struct ib_uverbs_recv_wr))
		return;
	for (uint32_t i = 0; i < h.wr_count; i++) {
		size_t off = sizeof(h) + (size_t)i * h.wqe_size + offsetof(struct ib_uverbs_recv_wr, reserved);

		if (off + 4 > len)
			break;
		memset(b + off, 0, 4);
	}
}

static void hex_core_in(struct sti_ctx *ctx, char *out, const void *in, size_t len, uint32_t cmd, int ex)
{
	static uint8_t copy[65536];

	if (!in || len > sizeof(copy)) {
		sti_hex(out, HEXSZ, in, len);
		return;
	}
	memcpy(copy, in, len);
	if (!ex && cmd == IB_USER_VERBS_CMD_POST_SEND)
		norm_post_send(ctx, copy, len);
	else if (!ex && (cmd == IB_USER_VERBS_CMD_POST_RECV || cmd == IB_USER_VERBS_CMD_POST_SRQ_RECV))
		norm_post_recv(copy, len); /* the SRQ form has the same layout */
	else if (cmd == IB_USER_VERBS_CMD_MODIFY_QP && len >= sizeof(struct ib_uverbs_modify_qp))
		norm_modify_qp((struct ib_uverbs_modify_qp *)copy); /* the ex form starts with it too */
	else if (!ex && cmd == IB_USER_VERBS_CMD_MODIFY_SRQ && len >= sizeof(struct ib_uverbs_modify_srq)) {
		struct ib_uverbs_modify_srq *q = (void *)copy;
		if (!(q->attr_mask & 1))
			q->max_wr = 0;
		if (!(q->attr_mask & 2))
			q->srq_limit = 0;
	} else if (ex && cmd == IB_USER_VERBS_EX_CMD_MODIFY_WQ && len >= sizeof(struct ib_uverbs_ex_modify_wq)) {
		struct ib_uverbs_ex_modify_wq *q = (void *)copy;
		if (!(q->attr_mask & 1))
			q->wq_state = 0;
		if (!(q->attr_mask & 2))
			q->curr_wq_state = 0;
		if (!(q->attr_mask & 4))
			q->flags = q->flags_mask = 0;
	}
	sti_hex(out, HEXSZ, copy, len);
}

/* The driver data of a request as the log shows it (see norm_in). */
static void hex_uin(struct sti_ctx *ctx, char *out, const void *uin, size_t len, uint32_t cmd)
{
	static uint8_t copy[4096];

	if (!ctx->dev.drv->norm_in || !uin || len > sizeof(copy)) {
		sti_hex(out, HEXSZ, uin, len);
		return;
	}
	memcpy(copy, uin, len);
	ctx->dev.drv->norm_in(cmd, copy, len);
	sti_hex(out, HEXSZ, copy, len);
}

/* Runs one write-style command and logs it: `via` is "write" or "invoke". */
static int run_write(struct sti_ctx *ctx, const char *via, uint32_t cmd, int ex, const void *in, size_t in_len,
		     void *out, size_t *out_len, const void *uin, size_t uin_len, void *uout, size_t *uout_len)
{
	static char h1[HEXSZ], h2[HEXSZ], h3[HEXSZ], h4[HEXSZ];
	struct cmd c;
	int err;

	memset(&c, 0, sizeof(c));
	c.ctx = ctx;
	c.dr.uin = uin;
	c.dr.uin_len = uin_len;
	c.dr.uout = uout;
	c.dr.uout_len = *uout_len;
	if (uout)
		memset(uout, 0, *uout_len);
	if (out)
		memset(out, 0, *out_len);
	if (!ex && uin && (cmd == IB_USER_VERBS_CMD_POST_SEND || cmd == IB_USER_VERBS_CMD_POST_RECV ||
			   cmd == IB_USER_VERBS_CMD_POST_SRQ_RECV)) {
		/* write(): the requests after the header came as "driver data". */
		static uint8_t whole[65536];
		size_t n = in_len + uin_len < sizeof(whole) ? in_len + uin_len : 0;
		memcpy(whole, in, n ? in_len : 0);
		memcpy(whole + in_len, uin, n ? uin_len : 0);
		hex_core_in(ctx, h1, n ? whole : in, n ? n : in_len, cmd, ex);
		h2[0] = 0;
	} else {
		hex_core_in(ctx, h1, in, in_len, cmd, ex);
		hex_uin(ctx, h2, uin, uin_len, ex ? STI_EX(cmd) : cmd);
	}
	err = do_write(&c, cmd, ex, in, in_len, out, out_len);
	*uout_len = err ? 0 : c.dr.uout_written;
	if (err)
		*out_len = 0;
	sti_hex_out(h3, HEXSZ, out, *out_len);
	sti_hex_out(h4, HEXSZ, uout, *uout_len);
	/* Descriptors handed out are not compared by number. */
	if (!err && !ex && (cmd == IB_USER_VERBS_CMD_GET_CONTEXT || cmd == IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL))
		memcpy(h3, "<fd>....", 8);
	sti_log("%s %s%s in=%s udata_in=%s -> %d out=%s udata_out=%s%s", via, ex ? "EX_" : "", wname(cmd, ex), h1,
		h2, err, h3, h4, c.note);
	return err;
}

ssize_t sti_uverbs_write(struct sti_ctx *ctx, const void *buf, size_t len)
{
	const struct ib_uverbs_cmd_hdr *h = buf;
	const uint8_t *p = buf;
	uint32_t cmd;
	int ex, err;

	if (len < sizeof(*h)) {
		sti_log("write short %zu -> EINVAL", len);
		return -EINVAL;
	}
	cmd = h->command & IB_USER_VERBS_CMD_COMMAND_MASK;
	ex = !!(h->command & IB_USER_VERBS_CMD_FLAG_EXTENDED);
	if (h->command & ~(IB_USER_VERBS_CMD_COMMAND_MASK | IB_USER_VERBS_CMD_FLAG_EXTENDED)) {
		sti_log("write cmd=0x%x -> EINVAL", h->command);
		return -EINVAL;
	}
	if (ex) {
		const struct ib_uverbs_ex_cmd_hdr *x = (const void *)(h + 1);
		size_t hl = sizeof(*h) + sizeof(*x), in_len, uin_len, out_len, uout_len;
		const struct wdesc *d = wd(cmd, 1);
		uint8_t *resp;
		if (len < hl || !d) {
			sti_log("write EX_%u len=%zu -> %s", cmd, len, d ? "EINVAL" : "ENOSYS");
			return d ? -EINVAL : -ENOSYS;
		}
		in_len = (size_t)h->in_words * 8;
		uin_len = (size_t)x->provider_in_words * 8;
		out_len = (size_t)h->out_words * 8;
		uout_len = (size_t)x->provider_out_words * 8;
		if (hl + in_len + uin_len != len || x->cmd_hdr_reserved) {
			sti_log("write EX_%s len=%zu words=%u+%u -> EINVAL", wname(cmd, 1), len, h->in_words,
				x->provider_in_words);
			return -EINVAL;
		}
		if ((out_len || uout_len) && !x->response) {
			sti_log("write EX_%s no response -> EFAULT", wname(cmd, 1));
			return -EFAULT;
		}
		resp = (uint8_t *)(uintptr_t)x->response;
		err = run_write(ctx, "write", cmd, 1, p + hl, in_len, resp, &out_len, uin_len ? p + hl + in_len : NULL,
				uin_len, uout_len ? resp + (size_t)h->out_words * 8 : NULL, &uout_len);
		return err ? -err : (ssize_t)len;
	} else {
		const struct wdesc *d = wd(cmd, 0);
		size_t in_len, uin_len, out_len, uout_len, total_out = (size_t)h->out_words * 4;
		uint8_t *resp = NULL;
		if (!d) {
			sti_log("write %u -> ENOSYS", cmd);
			return -ENOSYS;
		}
		if ((size_t)h->in_words * 4 != len || len < sizeof(*h) + d->in) {
			sti_log("write %s len=%zu in_words=%u -> EINVAL", d->name, len, h->in_words);
			return -EINVAL;
		}
		in_len = d->in;
		uin_len = len - sizeof(*h) - d->in;
		if (d->out) {
			if (total_out < d->out) {
				sti_log("write %s out_words=%u -> ENOSPC", d->name, h->out_words);
				return -ENOSPC;
			}
			memcpy(&resp, p + sizeof(*h), sizeof(resp)); /* `response`, first in every such command */
		}
		out_len = d->out;
		uout_len = d->out ? total_out - d->out : 0;
		err = run_write(ctx, "write", cmd, 0, p + sizeof(*h), in_len, resp, &out_len,
				uin_len ? p + sizeof(*h) + in_len : NULL, uin_len, resp ? resp + d->out : NULL,
				&uout_len);
		return err ? -err : (ssize_t)len;
	}
}

/* ------------------------------------------------------------------ ioctl */
const void *sti_attr_in(const struct sti_attr *a)
{
	if (a->len <= sizeof(uint64_t))
		return a->data;
	return (const void *)(uintptr_t)*a->data;
}

/* As the kernel's uverbs_copy_to_struct_or_zero: a longer buffer than the
 * kernel's structure gets zeros after it. */
int sti_attr_out(struct sti_attr *a, const void *src, size_t len)
{
	uint8_t *dst = (uint8_t *)(uintptr_t)*a->data;

	memcpy(dst, src, MIN(len, a->len));
	if (a->len > len)
		memset(dst + len, 0, a->len - len);
	*a->pflags |= UVERBS_ATTR_F_VALID_OUTPUT;
	return 0;
}

struct sti_attr *sti_attr_find(struct sti_ioctl *io, uint16_t id)
{
	for (unsigned i = 0; i < io->nattrs; i++)
		if (io->attrs[i].id == id)
			return &io->attrs[i];
	return NULL;
}

/* How an attribute is read, for the log and the model. */
enum akind { A_UNK, A_IN, A_OUT, A_IDR, A_NEW, A_DEL, A_FD, A_FDNEW, A_IDRS };

struct aspec { uint16_t obj, meth, attr; enum akind k; };
#define S(o, m, a, k) { UVERBS_OBJECT_##o, UVERBS_METHOD_##m, UVERBS_ATTR_##a, A_##k }
static const struct aspec specs[] = {
	S(DEVICE, INVOKE_WRITE, CORE_IN, IN), S(DEVICE, INVOKE_WRITE, CORE_OUT, OUT),
	S(DEVICE, INVOKE_WRITE, WRITE_CMD, IN),
	S(DEVICE, QUERY_PORT, QUERY_PORT_PORT_NUM, IN), S(DEVICE, QUERY_PORT, QUERY_PORT_RESP, OUT),
	S(DEVICE, GET_CONTEXT, GET_CONTEXT_NUM_COMP_VECTORS, OUT),
	S(DEVICE, GET_CONTEXT, GET_CONTEXT_CORE_SUPPORT, OUT),
	S(DEVICE, QUERY_CONTEXT, QUERY_CONTEXT_NUM_COMP_VECTORS, OUT),
	S(DEVICE, QUERY_CONTEXT, QUERY_CONTEXT_CORE_SUPPORT, OUT),
	S(DEVICE, QUERY_GID_TABLE, QUERY_GID_TABLE_ENTRY_SIZE, IN),
	S(DEVICE, QUERY_GID_TABLE, QUERY_GID_TABLE_FLAGS, IN),
	S(DEVICE, QUERY_GID_TABLE, QUERY_GID_TABLE_RESP_ENTRIES, OUT),
	S(DEVICE, QUERY_GID_TABLE, QUERY_GID_TABLE_RESP_NUM_ENTRIES, OUT),
	S(DEVICE, QUERY_GID_ENTRY, QUERY_GID_ENTRY_PORT, IN), S(DEVICE, QUERY_GID_ENTRY, QUERY_GID_ENTRY_GID_INDEX, IN),
	S(DEVICE, QUERY_GID_ENTRY, QUERY_GID_ENTRY_FLAGS, IN),
	S(DEVICE, QUERY_GID_ENTRY, QUERY_GID_ENTRY_RESP_ENTRY, OUT),
	S(DEVICE, INFO_HANDLES, INFO_OBJECT_ID, IN), S(DEVICE, INFO_HANDLES, INFO_TOTAL_HANDLES, OUT),
	S(DEVICE, INFO_HANDLES, INFO_HANDLES_LIST, OUT),
	S(PD, PD_DESTROY, DESTROY_PD_HANDLE, DEL),
	S(CQ, CQ_CREATE, CREATE_CQ_HANDLE, NEW), S(CQ, CQ_CREATE, CREATE_CQ_CQE, IN),
	S(CQ, CQ_CREATE, CREATE_CQ_USER_HANDLE, IN), S(CQ, CQ_CREATE, CREATE_CQ_COMP_CHANNEL, FD),
	S(CQ, CQ_CREATE, CREATE_CQ_COMP_VECTOR, IN), S(CQ, CQ_CREATE, CREATE_CQ_FLAGS, IN),
	S(CQ, CQ_CREATE, CREATE_CQ_RESP_CQE, OUT), S(CQ, CQ_CREATE, CREATE_CQ_EVENT_FD, FD),
	S(CQ, CQ_DESTROY, DESTROY_CQ_HANDLE, DEL), S(CQ, CQ_DESTROY, DESTROY_CQ_RESP, OUT),
	S(QP, QP_CREATE, CREATE_QP_HANDLE, NEW), S(QP, QP_CREATE, CREATE_QP_XRCD_HANDLE, IDR),
	S(QP, QP_CREATE, CREATE_QP_PD_HANDLE, IDR), S(QP, QP_CREATE, CREATE_QP_SRQ_HANDLE, IDR),
	S(QP, QP_CREATE, CREATE_QP_SEND_CQ_HANDLE, IDR), S(QP, QP_CREATE, CREATE_QP_RECV_CQ_HANDLE, IDR),
	S(QP, QP_CREATE, CREATE_QP_IND_TABLE_HANDLE, IDR), S(QP, QP_CREATE, CREATE_QP_USER_HANDLE, IN),
	S(QP, QP_CREATE, CREATE_QP_CAP, IN), S(QP, QP_CREATE, CREATE_QP_TYPE, IN),
	S(QP, QP_CREATE, CREATE_QP_FLAGS, IN), S(QP, QP_CREATE, CREATE_QP_SOURCE_QPN, IN),
	S(QP, QP_CREATE, CREATE_QP_EVENT_FD, FD), S(QP, QP_CREATE, CREATE_QP_RESP_CAP, OUT),
	S(QP, QP_CREATE, CREATE_QP_RESP_QP_NUM, OUT),
	S(QP, QP_DESTROY, DESTROY_QP_HANDLE, DEL), S(QP, QP_DESTROY, DESTROY_QP_RESP, OUT),
	S(SRQ, SRQ_CREATE, CREATE_SRQ_HANDLE, NEW), S(SRQ, SRQ_CREATE, CREATE_SRQ_PD_HANDLE, IDR),
	S(SRQ, SRQ_CREATE, CREATE_SRQ_XRCD_HANDLE, IDR), S(SRQ, SRQ_CREATE, CREATE_SRQ_CQ_HANDLE, IDR),
	S(SRQ, SRQ_CREATE, CREATE_SRQ_USER_HANDLE, IN), S(SRQ, SRQ_CREATE, CREATE_SRQ_MAX_WR, IN),
	S(SRQ, SRQ_CREATE, CREATE_SRQ_MAX_SGE, IN), S(SRQ, SRQ_CREATE, CREATE_SRQ_LIMIT, IN),
	S(SRQ, SRQ_CREATE, CREATE_SRQ_MAX_NUM_TAGS, IN), S(SRQ, SRQ_CREATE, CREATE_SRQ_TYPE, IN),
	S(SRQ, SRQ_CREATE, CREATE_SRQ_EVENT_FD, FD), S(SRQ, SRQ_CREATE, CREATE_SRQ_RESP_MAX_WR, OUT),
	S(SRQ, SRQ_CREATE, CREATE_SRQ_RESP_MAX_SGE, OUT), S(SRQ, SRQ_CREATE, CREATE_SRQ_RESP_SRQ_NUM, OUT),
	S(SRQ, SRQ_DESTROY, DESTROY_SRQ_HANDLE, DEL), S(SRQ, SRQ_DESTROY, DESTROY_SRQ_RESP, OUT),
	S(WQ, WQ_CREATE, CREATE_WQ_HANDLE, NEW), S(WQ, WQ_CREATE, CREATE_WQ_PD_HANDLE, IDR),
	S(WQ, WQ_CREATE, CREATE_WQ_CQ_HANDLE, IDR), S(WQ, WQ_CREATE, CREATE_WQ_USER_HANDLE, IN),
	S(WQ, WQ_CREATE, CREATE_WQ_TYPE, IN), S(WQ, WQ_CREATE, CREATE_WQ_EVENT_FD, FD),
	S(WQ, WQ_CREATE, CREATE_WQ_MAX_WR, IN), S(WQ, WQ_CREATE, CREATE_WQ_MAX_SGE, IN),
	S(WQ, WQ_CREATE, CREATE_WQ_FLAGS, IN), S(WQ, WQ_CREATE, CREATE_WQ_RESP_MAX_WR, OUT),
	S(WQ, WQ_CREATE, CREATE_WQ_RESP_MAX_SGE, OUT), S(WQ, WQ_CREATE, CREATE_WQ_RESP_WQ_NUM, OUT),
	S(WQ, WQ_DESTROY, DESTROY_WQ_HANDLE, DEL), S(WQ, WQ_DESTROY, DESTROY_WQ_RESP, OUT),
	S(DM, DM_ALLOC, ALLOC_DM_HANDLE, NEW), S(DM, DM_ALLOC, ALLOC_DM_LENGTH, IN),
	S(DM, DM_ALLOC, ALLOC_DM_ALIGNMENT, IN), S(DM, DM_FREE, FREE_DM_HANDLE, DEL),
	S(MR, DM_MR_REG, REG_DM_MR_HANDLE, NEW), S(MR, DM_MR_REG, REG_DM_MR_OFFSET, IN),
	S(MR, DM_MR_REG, REG_DM_MR_LENGTH, IN), S(MR, DM_MR_REG, REG_DM_MR_PD_HANDLE, IDR),
	S(MR, DM_MR_REG, REG_DM_MR_ACCESS_FLAGS, IN), S(MR, DM_MR_REG, REG_DM_MR_DM_HANDLE, IDR),
	S(MR, DM_MR_REG, REG_DM_MR_RESP_LKEY, OUT), S(MR, DM_MR_REG, REG_DM_MR_RESP_RKEY, OUT),
	S(MR, MR_DESTROY, DESTROY_MR_HANDLE, DEL),
	S(MR, ADVISE_MR, ADVISE_MR_PD_HANDLE, IDR), S(MR, ADVISE_MR, ADVISE_MR_ADVICE, IN),
	S(MR, ADVISE_MR, ADVISE_MR_FLAGS, IN), S(MR, ADVISE_MR, ADVISE_MR_SGE_LIST, IN),
	S(MR, QUERY_MR, QUERY_MR_HANDLE, IDR), S(MR, QUERY_MR, QUERY_MR_RESP_LKEY, OUT),
	S(MR, QUERY_MR, QUERY_MR_RESP_RKEY, OUT), S(MR, QUERY_MR, QUERY_MR_RESP_LENGTH, OUT),
	S(MR, QUERY_MR, QUERY_MR_RESP_IOVA, OUT),
	S(MR, REG_DMABUF_MR, REG_DMABUF_MR_HANDLE, NEW), S(MR, REG_DMABUF_MR, REG_DMABUF_MR_PD_HANDLE, IDR),
	S(MR, REG_DMABUF_MR, REG_DMABUF_MR_OFFSET, IN), S(MR, REG_DMABUF_MR, REG_DMABUF_MR_LENGTH, IN),
	S(MR, REG_DMABUF_MR, REG_DMABUF_MR_IOVA, IN), S(MR, REG_DMABUF_MR, REG_DMABUF_MR_FD, FD),
	S(MR, REG_DMABUF_MR, REG_DMABUF_MR_ACCESS_FLAGS, IN),
	S(MR, REG_DMABUF_MR, REG_DMABUF_MR_RESP_LKEY, OUT), S(MR, REG_DMABUF_MR, REG_DMABUF_MR_RESP_RKEY, OUT),
	S(COUNTERS, COUNTERS_CREATE, CREATE_COUNTERS_HANDLE, NEW),
	S(COUNTERS, COUNTERS_DESTROY, DESTROY_COUNTERS_HANDLE, DEL),
	S(COUNTERS, COUNTERS_READ, READ_COUNTERS_HANDLE, IDR), S(COUNTERS, COUNTERS_READ, READ_COUNTERS_BUFF, OUT),
	S(COUNTERS, COUNTERS_READ, READ_COUNTERS_FLAGS, IN),
	S(MW, MW_DESTROY, DESTROY_MW_HANDLE, DEL), S(XRCD, XRCD_DESTROY, DESTROY_XRCD_HANDLE, DEL),
	S(AH, AH_DESTROY, DESTROY_AH_HANDLE, DEL), S(RWQ_IND_TBL, RWQ_IND_TBL_DESTROY, DESTROY_RWQ_IND_TBL_HANDLE, DEL),
	S(FLOW, FLOW_DESTROY, DESTROY_FLOW_HANDLE, DEL),
	S(FLOW_ACTION, FLOW_ACTION_DESTROY, DESTROY_FLOW_ACTION_HANDLE, DEL),
	S(ASYNC_EVENT, ASYNC_EVENT_ALLOC, ASYNC_EVENT_ALLOC_FD_HANDLE, FDNEW),
};
#undef S

/* The latest kernel's attributes (STANDIN_KERNEL=latest only: under 6.1
 * they are unknown, and the log shows them so). */
#define K(o, m, a, k) { o, m, a, A_##k }
static const struct aspec specs_latest[] = {
	K(UVERBS_OBJECT_DEVICE, K_METHOD_QUERY_PORT_SPEED, K_ATTR_QUERY_PORT_SPEED_PORT_NUM, IN),
	K(UVERBS_OBJECT_DEVICE, K_METHOD_QUERY_PORT_SPEED, K_ATTR_QUERY_PORT_SPEED_RESP, OUT),
	K(UVERBS_OBJECT_DEVICE, K_METHOD_QUERY_COMP_CNTR_CAPS, K_ATTR_QUERY_COMP_CNTR_CAPS_MAX_COUNTERS, OUT),
	K(UVERBS_OBJECT_DEVICE, K_METHOD_QUERY_COMP_CNTR_CAPS, K_ATTR_QUERY_COMP_CNTR_CAPS_MAX_VALUE, OUT),
	K(UVERBS_OBJECT_DEVICE, K_METHOD_QUERY_COMP_CNTR_CAPS, K_ATTR_QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS, OUT),
	K(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, K_ATTR_GET_CONTEXT_FD_ARR, IN),
	K(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, K_ATTR_CREATE_CQ_BUFFER_VA, IN),
	K(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, K_ATTR_CREATE_CQ_BUFFER_LENGTH, IN),
	K(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, K_ATTR_CREATE_CQ_BUFFER_FD, FD),
	K(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, K_ATTR_CREATE_CQ_BUFFER_OFFSET, IN),
	K(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, K_ATTR_CREATE_CQ_BUF_UMEM, IN),
	K(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, K_ATTR_CREATE_QP_BUF_UMEM, IN),
	K(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, K_ATTR_CREATE_QP_RQ_BUF_UMEM, IN),
	K(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, K_ATTR_CREATE_QP_SQ_BUF_UMEM, IN),
	K(UVERBS_OBJECT_QP, K_METHOD_QP_ATTACH_COMP_CNTR, K_ATTR_QP_ATTACH_COMP_CNTR_HANDLE, IDR),
	K(UVERBS_OBJECT_QP, K_METHOD_QP_ATTACH_COMP_CNTR, K_ATTR_QP_ATTACH_COMP_CNTR_CNTR_HANDLE, IDR),
	K(UVERBS_OBJECT_QP, K_METHOD_QP_ATTACH_COMP_CNTR, K_ATTR_QP_ATTACH_COMP_CNTR_OP_MASK, IN),
	K(K_OBJECT_DMAH, K_METHOD_DMAH_ALLOC, K_ATTR_ALLOC_DMAH_HANDLE, NEW),
	K(K_OBJECT_DMAH, K_METHOD_DMAH_ALLOC, K_ATTR_ALLOC_DMAH_CPU_ID, IN),
	K(K_OBJECT_DMAH, K_METHOD_DMAH_ALLOC, K_ATTR_ALLOC_DMAH_TPH_MEM_TYPE, IN),
	K(K_OBJECT_DMAH, K_METHOD_DMAH_ALLOC, K_ATTR_ALLOC_DMAH_PH, IN),
	K(K_OBJECT_DMAH, K_METHOD_DMAH_FREE, K_ATTR_FREE_DMA_HANDLE, DEL),
	K(K_OBJECT_DMABUF, K_METHOD_DMABUF_ALLOC, K_ATTR_ALLOC_DMABUF_HANDLE, FDNEW),
	K(K_OBJECT_DMABUF, K_METHOD_DMABUF_ALLOC, K_ATTR_ALLOC_DMABUF_PGOFF, IN),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_HANDLE, NEW),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_PD_HANDLE, IDR),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_DMA_HANDLE, IDR),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_IOVA, IN),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_ADDR, IN),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_LENGTH, IN),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_ACCESS_FLAGS, IN),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_FD, FD),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_FD_OFFSET, IN),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_RESP_LKEY, OUT),
	K(UVERBS_OBJECT_MR, K_METHOD_REG_MR, K_ATTR_REG_MR_RESP_RKEY, OUT),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_CREATE, K_ATTR_CREATE_COMP_CNTR_HANDLE, NEW),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_CREATE, K_EFA_ATTR_CREATE_COMP_CNTR_COMP_BUFFER, IN),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_CREATE, K_EFA_ATTR_CREATE_COMP_CNTR_ERR_BUFFER, IN),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_DESTROY, K_ATTR_DESTROY_COMP_CNTR_HANDLE, DEL),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_MODIFY, K_ATTR_MODIFY_COMP_CNTR_HANDLE, IDR),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_MODIFY, K_ATTR_MODIFY_COMP_CNTR_ENTRY, IN),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_MODIFY, K_ATTR_MODIFY_COMP_CNTR_OP, IN),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_MODIFY, K_ATTR_MODIFY_COMP_CNTR_VALUE, IN),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_READ, K_ATTR_READ_COMP_CNTR_HANDLE, IDR),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_READ, K_ATTR_READ_COMP_CNTR_ENTRY, IN),
	K(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_READ, K_ATTR_READ_COMP_CNTR_RESP_VALUE, OUT),
};
#undef K

static enum akind kind_of(struct sti_ctx *ctx, uint16_t obj, uint16_t meth, uint16_t attr)
{
	/* In the driver's namespace, ids 0x1000 and up are the driver's own
	 * attributes, not the udata of a core method. */
	if (obj >= 0x1000 || meth >= 0x1000) {
		static const enum akind map[] = { A_UNK, A_IN, A_OUT, A_IDR, A_NEW, A_DEL, A_FD, A_FDNEW };
		int k = ctx->dev.drv->attr_kind ? ctx->dev.drv->attr_kind(obj, meth, attr) : 0;
		return k > 0 && k < (int)(sizeof(map) / sizeof(map[0])) ? map[k] : A_UNK;
	}
	if (attr == UVERBS_ATTR_UHW_IN && !k_driver_attrs(obj, meth))
		return A_IN;
	if (attr == UVERBS_ATTR_UHW_OUT && !k_driver_attrs(obj, meth))
		return A_OUT;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (specs[i].obj == obj && specs[i].meth == meth && specs[i].attr == attr)
			return specs[i].k;
	for (size_t i = 0; sti_kernel_latest() && i < sizeof(specs_latest) / sizeof(specs_latest[0]); i++)
		if (specs_latest[i].obj == obj && specs_latest[i].meth == meth && specs_latest[i].attr == attr)
			return specs_latest[i].k;
	if (ctx->dev.drv->attr_kind) {
		static const enum akind map[] = { A_UNK, A_IN, A_OUT, A_IDR, A_NEW, A_DEL, A_FD, A_FDNEW };
		int k = ctx->dev.drv->attr_kind(obj, meth, attr);
		return k > 0 && k < (int)(sizeof(map) / sizeof(map[0])) ? map[k] : A_UNK;
	}
	return A_UNK;
}

static const char *const objnames[] = { "DEVICE", "PD", "COMP_CHANNEL", "CQ", "QP", "SRQ", "AH", "MR", "MW",
					"FLOW", "XRCD", "RWQ_IND_TBL", "WQ", "FLOW_ACTION", "DM", "COUNTERS",
					"ASYNC_EVENT", /* the latest kernel's: */ "DMAH", "DMABUF", "COMP_CNTR" };

/* How many of them the model knows: 6.1 ends with ASYNC_EVENT. */
static size_t nobjects(void)
{
	return sti_kernel_latest() ? K_NOBJECTS : K_OBJECT_DMAH;
}

static void u64_of(const struct sti_attr *a, uint64_t *v)
{
	*v = 0;
	if (a->len <= 8)
		memcpy(v, a->data, a->len ? a->len : 8);
	else
		memcpy(v, sti_attr_in(a), 8);
}

static uint64_t in_u64(struct sti_ioctl *io, uint16_t id, uint64_t dflt)
{
	struct sti_attr *a = sti_attr_find(io, id);
	uint64_t v;

	if (!a)
		return dflt;
	u64_of(a, &v);
	if (a->len && a->len < 8)
		v &= (1ULL << (8 * a->len)) - 1;
	return v;
}

static int has(struct sti_ioctl *io, uint16_t id)
{
	return sti_attr_find(io, id) != NULL;
}

static void out_attr(struct sti_ioctl *io, uint16_t id, const void *src, size_t len)
{
	struct sti_attr *a = sti_attr_find(io, id);
	if (a)
		sti_attr_out(a, src, len);
}

static void out_u32(struct sti_ioctl *io, uint16_t id, uint32_t v)
{
	out_attr(io, id, &v, sizeof(v));
}

static void set_handle(struct sti_ioctl *io, uint16_t id, uint32_t h)
{
	struct sti_attr *a = sti_attr_find(io, id);
	if (a)
		*a->data = h;
}

static int del(struct cmd *c, struct sti_ioctl *io, uint16_t id, enum sti_type t)
{
	return destroy(c, (uint32_t)in_u64(io, id, ~0ULL), t);
}

/* The latest kernel's methods (STANDIN_KERNEL=latest); -1 when it is not
 * one of them. */
static int latest_method(struct cmd *c, struct sti_ioctl *io)
{
	struct sti_ctx *ctx = c->ctx;
	int err = 0;

#define KM(o, m) (((uint32_t)(o) << 16) | (uint32_t)(m))
	switch (KM(io->object, io->method)) {
	case KM(UVERBS_OBJECT_DEVICE, K_METHOD_QUERY_PORT_SPEED): {
		/* The effective speed in units of 100 Mb/s: 4X EDR, 100 Gb/s. */
		uint64_t speed = 1000;
		if (!ctx->have_ucontext)
			return EINVAL;
		if (in_u64(io, K_ATTR_QUERY_PORT_SPEED_PORT_NUM, 0) != 1)
			return EINVAL;
		out_attr(io, K_ATTR_QUERY_PORT_SPEED_RESP, &speed, sizeof(speed));
		return 0;
	}
	case KM(UVERBS_OBJECT_DEVICE, K_METHOD_QUERY_COMP_CNTR_CAPS): {
		uint64_t max_value = ~0ULL;
		if (!ctx->have_ucontext)
			return EINVAL;
		out_u32(io, K_ATTR_QUERY_COMP_CNTR_CAPS_MAX_COUNTERS, 1024);
		out_attr(io, K_ATTR_QUERY_COMP_CNTR_CAPS_MAX_VALUE, &max_value, sizeof(max_value));
		out_u32(io, K_ATTR_QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS, K_QP_ATTACH_COMP_CNTR_OPS);
		return 0;
	}
	case KM(UVERBS_OBJECT_MR, K_METHOD_REG_MR): {
		/* An address or a dma-buf (fd and offset), never both; the
		 * IOVA is mandatory; a DMA handle when given must be one. */
		struct sti_obj *o;
		int by_addr = has(io, K_ATTR_REG_MR_ADDR), by_fd = has(io, K_ATTR_REG_MR_FD);
		if (!sti_get(ctx, (uint32_t)in_u64(io, K_ATTR_REG_MR_PD_HANDLE, ~0ULL), STI_T_PD))
			return EINVAL;
		if (by_addr == by_fd || (by_fd && !has(io, K_ATTR_REG_MR_FD_OFFSET)) || !has(io, K_ATTR_REG_MR_IOVA))
			return EINVAL;
		if (has(io, K_ATTR_REG_MR_DMA_HANDLE) &&
		    !sti_get(ctx, (uint32_t)in_u64(io, K_ATTR_REG_MR_DMA_HANDLE, ~0ULL), STI_T_DMAH))
			return EINVAL;
		c->dr.length = in_u64(io, K_ATTR_REG_MR_LENGTH, 0);
		if (!c->dr.length)
			return EINVAL;
		o = make(c, STI_T_MR, by_fd ? STI_OP_REG_DMABUF_MR : STI_OP_REG_MR, &err);
		if (!o)
			return err;
		use(o, sti_get(ctx, (uint32_t)in_u64(io, K_ATTR_REG_MR_PD_HANDLE, ~0ULL), STI_T_PD));
		if (has(io, K_ATTR_REG_MR_DMA_HANDLE))
			use(o, sti_get(ctx, (uint32_t)in_u64(io, K_ATTR_REG_MR_DMA_HANDLE, ~0ULL), STI_T_DMAH));
		o->num = o->rkey = new_key(ctx);
		set_handle(io, K_ATTR_REG_MR_HANDLE, o->handle);
		out_u32(io, K_ATTR_REG_MR_RESP_LKEY, o->num);
		out_u32(io, K_ATTR_REG_MR_RESP_RKEY, o->rkey);
		return 0;
	}
	case KM(K_OBJECT_DMAH, K_METHOD_DMAH_ALLOC): {
		struct sti_obj *o;
		/* The CPU must be one the process may run on: 0 is. */
		if (has(io, K_ATTR_ALLOC_DMAH_CPU_ID) && in_u64(io, K_ATTR_ALLOC_DMAH_CPU_ID, 0) >= 1024)
			return EINVAL;
		o = sti_new(ctx, STI_T_DMAH);
		if (!o)
			return ENOMEM;
		set_handle(io, K_ATTR_ALLOC_DMAH_HANDLE, o->handle);
		return 0;
	}
	case KM(K_OBJECT_DMAH, K_METHOD_DMAH_FREE):
		return del(c, io, K_ATTR_FREE_DMA_HANDLE, STI_T_DMAH);
	case KM(K_OBJECT_DMABUF, K_METHOD_DMABUF_ALLOC): {
		/* A dma-buf of the page at PGOFF of the command fd's mmap
		 * space: a descriptor the process closes. */
		struct sti_attr *a = sti_attr_find(io, K_ATTR_ALLOC_DMABUF_HANDLE);
		int fd;
		if (!a || !has(io, K_ATTR_ALLOC_DMABUF_PGOFF))
			return EINVAL;
		fd = memfd_create("standin-dmabuf", MFD_CLOEXEC);
		if (fd < 0)
			return errno;
		*a->data = (uint64_t)fd;
		return 0;
	}
	case KM(UVERBS_OBJECT_QP, K_METHOD_QP_ATTACH_COMP_CNTR): {
		uint64_t ops = in_u64(io, K_ATTR_QP_ATTACH_COMP_CNTR_OP_MASK, 0);
		if (!sti_get(ctx, (uint32_t)in_u64(io, K_ATTR_QP_ATTACH_COMP_CNTR_HANDLE, ~0ULL), STI_T_QP) ||
		    !sti_get(ctx, (uint32_t)in_u64(io, K_ATTR_QP_ATTACH_COMP_CNTR_CNTR_HANDLE, ~0ULL), STI_T_COMP_CNTR))
			return EINVAL;
		if (!ops || (ops & ~(uint64_t)K_QP_ATTACH_COMP_CNTR_OPS))
			return EINVAL;
		return 0;
	}
	case KM(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_CREATE): {
		/* efa's driver attributes say where its device writes the
		 * counts (a buffer of the process): so do we. */
		static const uint16_t ids[2] = { K_EFA_ATTR_CREATE_COMP_CNTR_COMP_BUFFER,
						 K_EFA_ATTR_CREATE_COMP_CNTR_ERR_BUFFER };
		uint64_t va[2] = { 0, 0 };
		struct sti_obj *o;
		for (int i = 0; i < 2; i++) {
			struct sti_attr *a = sti_attr_find(io, ids[i]);
			struct k_buffer_desc d;
			if (!a)
				continue;
			if (a->len != sizeof(d))
				return EINVAL;
			memcpy(&d, sti_attr_in(a), sizeof(d));
			if (d.flags || d.length < sizeof(uint64_t))
				return EINVAL;
			if (d.type == K_BUFFER_TYPE_VA)
				va[i] = d.addr;
		}
		o = sti_new(ctx, STI_T_COMP_CNTR);
		if (!o)
			return ENOMEM;
		for (int i = 0; i < 2; i++) {
			o->cntr_va[i] = va[i];
			if (va[i])
				memset((void *)(uintptr_t)va[i], 0, sizeof(uint64_t));
		}
		set_handle(io, K_ATTR_CREATE_COMP_CNTR_HANDLE, o->handle);
		return 0;
	}
	case KM(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_DESTROY):
		return del(c, io, K_ATTR_DESTROY_COMP_CNTR_HANDLE, STI_T_COMP_CNTR);
	case KM(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_MODIFY): {
		struct sti_obj *o = obj_or(c, (uint32_t)in_u64(io, K_ATTR_MODIFY_COMP_CNTR_HANDLE, ~0ULL),
					   STI_T_COMP_CNTR, &err);
		uint64_t e = in_u64(io, K_ATTR_MODIFY_COMP_CNTR_ENTRY, ~0ULL), op = in_u64(io, K_ATTR_MODIFY_COMP_CNTR_OP, ~0ULL);
		uint64_t v = in_u64(io, K_ATTR_MODIFY_COMP_CNTR_VALUE, 0);
		if (!o)
			return err;
		if (e > 1 || op > K_COMP_CNTR_MODIFY_OP_INC || !has(io, K_ATTR_MODIFY_COMP_CNTR_VALUE))
			return EINVAL;
		o->cntr[e] = op == K_COMP_CNTR_MODIFY_OP_INC ? o->cntr[e] + v : v;
		if (o->cntr_va[e])
			memcpy((void *)(uintptr_t)o->cntr_va[e], &o->cntr[e], sizeof(uint64_t));
		return 0;
	}
	case KM(K_OBJECT_COMP_CNTR, K_METHOD_COMP_CNTR_READ): {
		struct sti_obj *o = obj_or(c, (uint32_t)in_u64(io, K_ATTR_READ_COMP_CNTR_HANDLE, ~0ULL),
					   STI_T_COMP_CNTR, &err);
		uint64_t e = in_u64(io, K_ATTR_READ_COMP_CNTR_ENTRY, ~0ULL);
		if (!o)
			return err;
		if (e > 1)
			return EINVAL;
		out_attr(io, K_ATTR_READ_COMP_CNTR_RESP_VALUE, &o->cntr[e], sizeof(uint64_t));
		return 0;
	}
	}
#undef KM
	return -1;
}

/* Core methods; -1 when there is no such method. */
static int core_method(struct cmd *c, struct sti_ioctl *io)
{
	struct sti_ctx *ctx = c->ctx;
	struct sti_attr *uin = sti_attr_find(io, UVERBS_ATTR_UHW_IN), *uout = sti_attr_find(io, UVERBS_ATTR_UHW_OUT);
	int err = 0;

	if (k_driver_attrs(io->object, io->method))
		uin = uout = NULL;
	/* 6.1 knows no attribute of CQ_CREATE or QP_CREATE after theirs: a
	 * mandatory one (rdma-core 65's CQ buffer, mlx5's UMEM buffers) is
	 * refused as the kernel refuses any unknown mandatory attribute. */
	if (!sti_kernel_latest() && io->object == UVERBS_OBJECT_CQ && io->method == UVERBS_METHOD_CQ_CREATE)
		for (unsigned i = 0; i < io->nattrs; i++)
			if (io->attrs[i].id >= K_ATTR_CREATE_CQ_BUFFER_VA && io->attrs[i].id < UVERBS_ATTR_UHW_IN &&
			    (io->attrs[i].flags & UVERBS_ATTR_F_MANDATORY))
				return EPROTONOSUPPORT;
	if (!sti_kernel_latest() && io->object == UVERBS_OBJECT_QP && io->method == UVERBS_METHOD_QP_CREATE)
		for (unsigned i = 0; i < io->nattrs; i++)
			if (io->attrs[i].id >= K_ATTR_CREATE_QP_BUF_UMEM && io->attrs[i].id < UVERBS_ATTR_UHW_IN &&
			    (io->attrs[i].flags & UVERBS_ATTR_F_MANDATORY))
				return EPROTONOSUPPORT;
	if (uin) {
		c->dr.uin = sti_attr_in(uin);
		c->dr.uin_len = uin->len;
	}
	if (uout) {
		c->dr.uout = (void *)(uintptr_t)*uout->data;
		c->dr.uout_len = uout->len;
		memset(c->dr.uout, 0, uout->len);
	}
	if (io->object != UVERBS_OBJECT_DEVICE && !ctx->have_ucontext)
		return EINVAL;
	if (sti_kernel_latest()) {
		err = latest_method(c, io);
		if (err != -1)
			return err;
		err = 0;
	}
#define M(o, m) ((UVERBS_OBJECT_##o << 16) | UVERBS_METHOD_##m)
	switch ((io->object << 16) | io->method) {
	case M(DEVICE, GET_CONTEXT):
		if (ctx->have_ucontext)
			return EINVAL;
		err = hook(c, STI_OP_GET_CONTEXT, NULL);
		if (err)
			return err;
		ctx->have_ucontext = 1;
		out_u32(io, UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, NUM_COMP_VECTORS);
		{
			uint64_t sup = IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
			out_attr(io, UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, &sup, sizeof(sup));
		}
		return 0;
	case M(DEVICE, QUERY_CONTEXT): {
		uint64_t sup = IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
		if (!ctx->have_ucontext)
			return EINVAL;
		out_u32(io, UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, NUM_COMP_VECTORS);
		out_attr(io, UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, &sup, sizeof(sup));
		return 0;
	}
	case M(DEVICE, QUERY_PORT): {
		struct ib_uverbs_query_port_resp_ex r;
		if (!ctx->have_ucontext)
			return EINVAL;
		if (in_u64(io, UVERBS_ATTR_QUERY_PORT_PORT_NUM, 0) != 1)
			return EINVAL;
		memset(&r, 0, sizeof(r));
		query_port(ctx, &r.legacy_resp);
		if (sti_kernel_latest()) {
			/* The latest kernel gives the speed again, wide
			 * (IB_SPEED_* beyond u8: XDR...). */
			uint32_t ex = r.legacy_resp.active_speed;
			memcpy((uint8_t *)&r + K_QUERY_PORT_ACTIVE_SPEED_EX_OFF, &ex, sizeof(ex));
		}
		out_attr(io, UVERBS_ATTR_QUERY_PORT_RESP, &r, sizeof(r));
		return 0;
	}
	case M(DEVICE, QUERY_GID_ENTRY): {
		struct ib_uverbs_gid_entry e;
		uint32_t port = (uint32_t)in_u64(io, UVERBS_ATTR_QUERY_GID_ENTRY_PORT, 0);
		uint32_t idx = (uint32_t)in_u64(io, UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, 0);
		if (!ctx->have_ucontext)
			return EINVAL;
		if (in_u64(io, UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0))
			return EINVAL;
		if (port != 1)
			return EINVAL;
		if (idx >= NGIDS(ctx))
			return ENODATA;
		gid_entry(ctx, port, idx, &e);
		out_attr(io, UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, &e, sizeof(e));
		return 0;
	}
	case M(DEVICE, QUERY_GID_TABLE): {
		struct sti_attr *a = sti_attr_find(io, UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES);
		uint64_t esz = in_u64(io, UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, 0), n = 0;
		uint8_t *dst;
		if (!ctx->have_ucontext)
			return EINVAL;
		if (!a || esz < sizeof(struct ib_uverbs_gid_entry) || in_u64(io, UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0))
			return EINVAL;
		dst = (uint8_t *)(uintptr_t)*a->data;
		for (uint32_t i = 0; i < NGIDS(ctx); i++) {
			struct ib_uverbs_gid_entry e;
			if ((n + 1) * esz > a->len)
				return EINVAL;
			gid_entry(ctx, 1, i, &e);
			memset(dst + n * esz, 0, esz);
			memcpy(dst + n * esz, &e, sizeof(e));
			n++;
		}
		*a->pflags |= UVERBS_ATTR_F_VALID_OUTPUT;
		a->written = n * esz; /* the entries written, not the rest of the buffer */
		out_attr(io, UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, &n, sizeof(n));
		return 0;
	}
	case M(PD, PD_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_PD_HANDLE, STI_T_PD);
	case M(MR, MR_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_MR_HANDLE, STI_T_MR);
	case M(MW, MW_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_MW_HANDLE, STI_T_MW);
	case M(AH, AH_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_AH_HANDLE, STI_T_AH);
	case M(XRCD, XRCD_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_XRCD_HANDLE, STI_T_XRCD);
	case M(FLOW, FLOW_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_FLOW_HANDLE, STI_T_FLOW);
	case M(RWQ_IND_TBL, RWQ_IND_TBL_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, STI_T_RWQ_IND_TBL);
	case M(FLOW_ACTION, FLOW_ACTION_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE, STI_T_FLOW_ACTION);
	case M(DM, DM_FREE):
		if (!(ctx->dev.drv->caps & STI_CAP_DM))
			return -1;
		return del(c, io, UVERBS_ATTR_FREE_DM_HANDLE, STI_T_DM);
	case M(COUNTERS, COUNTERS_DESTROY):
		return del(c, io, UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, STI_T_COUNTERS);
	case M(ASYNC_EVENT, ASYNC_EVENT_ALLOC): {
		struct sti_attr *a = sti_attr_find(io, UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE);
		if (!a)
			return EINVAL;
		if (ctx->async_wfd >= 0)
			return EINVAL;
		err = event_pipe(&ctx->async_rfd, &ctx->async_wfd);
		if (err)
			return err;
		*a->data = (uint64_t)ctx->async_rfd;
		async_event(ctx, 1, 9 /* IB_EVENT_PORT_ACTIVE */);
		return 0;
	}
	case M(CQ, CQ_CREATE): {
		uint32_t h, cqe;
		int chan = has(io, UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL) ?
				   (int)in_u64(io, UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, 0) : -1;
		err = v_create_cq(c, in_u64(io, UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0),
				  (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_CQ_CQE, 0),
				  (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0), chan, &h, &cqe);
		if (err)
			return err;
		set_handle(io, UVERBS_ATTR_CREATE_CQ_HANDLE, h);
		out_u32(io, UVERBS_ATTR_CREATE_CQ_RESP_CQE, cqe);
		return 0;
	}
	case M(CQ, CQ_DESTROY): {
		struct ib_uverbs_destroy_cq_resp r = { 0 };
		struct sti_obj *o = obj_or(c, (uint32_t)in_u64(io, UVERBS_ATTR_DESTROY_CQ_HANDLE, ~0ULL), STI_T_CQ, &err);
		if (!o)
			return err;
		if (o->usecnt)
			return EBUSY; /* ib_destroy_cq_user */
		r.comp_events_reported = cq_events_read(o);
		destroy_obj(c, o);
		out_attr(io, UVERBS_ATTR_DESTROY_CQ_RESP, &r, sizeof(r));
		return 0;
	}
	case M(QP, QP_CREATE): {
		struct qp_args a = { 0 };
		struct ib_uverbs_qp_cap cap;
		struct sti_attr *ca = sti_attr_find(io, UVERBS_ATTR_CREATE_QP_CAP);
		uint32_t h, qpn;
		if (!ca || ca->len < sizeof(a.cap))
			return EINVAL;
		memcpy(&a.cap, sti_attr_in(ca), sizeof(a.cap));
		a.user_handle = in_u64(io, UVERBS_ATTR_CREATE_QP_USER_HANDLE, 0);
		a.type = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_QP_TYPE, 0);
		a.flags = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_QP_FLAGS, 0);
		a.source_qpn = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_QP_SOURCE_QPN, 0);
#define H(f, id) do { a.has_##f = has(io, UVERBS_ATTR_CREATE_QP_##id); a.f = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_QP_##id, 0); } while (0)
		H(pd, PD_HANDLE);
		H(xrcd, XRCD_HANDLE);
		H(scq, SEND_CQ_HANDLE);
		H(rcq, RECV_CQ_HANDLE);
		H(srq, SRQ_HANDLE);
		H(ind, IND_TABLE_HANDLE);
#undef H
		err = v_create_qp(c, &a, &h, &qpn, &cap);
		if (err)
			return err;
		set_handle(io, UVERBS_ATTR_CREATE_QP_HANDLE, h);
		out_attr(io, UVERBS_ATTR_CREATE_QP_RESP_CAP, &cap, sizeof(cap));
		out_u32(io, UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qpn);
		return 0;
	}
	case M(QP, QP_DESTROY): {
		struct ib_uverbs_destroy_qp_resp r = { 0 };
		err = del(c, io, UVERBS_ATTR_DESTROY_QP_HANDLE, STI_T_QP);
		if (err)
			return err;
		out_attr(io, UVERBS_ATTR_DESTROY_QP_RESP, &r, sizeof(r));
		return 0;
	}
	case M(SRQ, SRQ_CREATE): {
		uint32_t wr = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_SRQ_MAX_WR, 0);
		uint32_t sge = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_SRQ_MAX_SGE, 0), h, n;
		err = v_create_srq(c, (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_SRQ_TYPE, 0),
				   (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, ~0ULL),
				   (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE, ~0ULL),
				   (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE, ~0ULL),
				   in_u64(io, UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, 0), &wr, &sge, &h, &n);
		if (err)
			return err;
		set_handle(io, UVERBS_ATTR_CREATE_SRQ_HANDLE, h);
		out_u32(io, UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, wr);
		out_u32(io, UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, sge);
		out_u32(io, UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, n);
		return 0;
	}
	case M(SRQ, SRQ_DESTROY): {
		struct ib_uverbs_destroy_srq_resp r = { 0 };
		err = del(c, io, UVERBS_ATTR_DESTROY_SRQ_HANDLE, STI_T_SRQ);
		if (err)
			return err;
		out_attr(io, UVERBS_ATTR_DESTROY_SRQ_RESP, &r, sizeof(r));
		return 0;
	}
	case M(WQ, WQ_CREATE): {
		struct sti_obj *o;
		if (!sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_WQ_PD_HANDLE, ~0ULL), STI_T_PD) ||
		    !sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, ~0ULL), STI_T_CQ))
			return EINVAL;
		c->dr.max_recv_wr = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_WQ_MAX_WR, 0);
		c->dr.max_recv_sge = (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_WQ_MAX_SGE, 0);
		o = make(c, STI_T_WQ, STI_OP_CREATE_WQ, &err);
		if (!o)
			return err;
		use(o, sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_WQ_PD_HANDLE, ~0ULL), STI_T_PD));
		use(o, sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, ~0ULL), STI_T_CQ));
		o->num = 0x80 + ctx->next_num++;
		set_handle(io, UVERBS_ATTR_CREATE_WQ_HANDLE, o->handle);
		out_u32(io, UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, c->dr.max_recv_wr);
		out_u32(io, UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE, c->dr.max_recv_sge);
		out_u32(io, UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, o->num);
		return 0;
	}
	case M(WQ, WQ_DESTROY): {
		uint32_t r[2] = { 0, 0 };
		err = del(c, io, UVERBS_ATTR_DESTROY_WQ_HANDLE, STI_T_WQ);
		if (err)
			return err;
		out_attr(io, UVERBS_ATTR_DESTROY_WQ_RESP, r, 4);
		return 0;
	}
	case M(DM, DM_ALLOC): {
		struct sti_obj *o;
		if (!(ctx->dev.drv->caps & STI_CAP_DM))
			return -1;
		c->dr.length = in_u64(io, UVERBS_ATTR_ALLOC_DM_LENGTH, 0);
		if (!c->dr.length || c->dr.length > 131072)
			return EINVAL;
		o = make(c, STI_T_DM, STI_OP_ALLOC_DM, &err);
		if (!o)
			return err;
		set_handle(io, UVERBS_ATTR_ALLOC_DM_HANDLE, o->handle);
		return 0;
	}
	case M(MR, DM_MR_REG): {
		struct sti_obj *o;
		if (!(ctx->dev.drv->caps & STI_CAP_DM))
			return -1;
		if (!sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_REG_DM_MR_PD_HANDLE, ~0ULL), STI_T_PD) ||
		    !sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_REG_DM_MR_DM_HANDLE, ~0ULL), STI_T_DM))
			return EINVAL;
		c->dr.length = in_u64(io, UVERBS_ATTR_REG_DM_MR_LENGTH, 0);
		o = make(c, STI_T_MR, STI_OP_REG_DM_MR, &err);
		if (!o)
			return err;
		use(o, sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_REG_DM_MR_PD_HANDLE, ~0ULL), STI_T_PD));
		use(o, sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_REG_DM_MR_DM_HANDLE, ~0ULL), STI_T_DM));
		o->num = o->rkey = new_key(ctx);
		set_handle(io, UVERBS_ATTR_REG_DM_MR_HANDLE, o->handle);
		out_u32(io, UVERBS_ATTR_REG_DM_MR_RESP_LKEY, o->num);
		out_u32(io, UVERBS_ATTR_REG_DM_MR_RESP_RKEY, o->rkey);
		return 0;
	}
	case M(MR, REG_DMABUF_MR): {
		struct sti_obj *o;
		if (!sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, ~0ULL), STI_T_PD))
			return EINVAL;
		c->dr.length = in_u64(io, UVERBS_ATTR_REG_DMABUF_MR_LENGTH, 0);
		o = make(c, STI_T_MR, STI_OP_REG_DMABUF_MR, &err);
		if (!o)
			return err;
		use(o, sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, ~0ULL), STI_T_PD));
		o->num = o->rkey = new_key(ctx);
		set_handle(io, UVERBS_ATTR_REG_DMABUF_MR_HANDLE, o->handle);
		out_u32(io, UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, o->num);
		out_u32(io, UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, o->rkey);
		return 0;
	}
	case M(MR, QUERY_MR): {
		struct sti_obj *o = obj_or(c, (uint32_t)in_u64(io, UVERBS_ATTR_QUERY_MR_HANDLE, ~0ULL), STI_T_MR, &err);
		if (!o)
			return err;
		out_u32(io, UVERBS_ATTR_QUERY_MR_RESP_LKEY, o->num);
		out_u32(io, UVERBS_ATTR_QUERY_MR_RESP_RKEY, o->rkey);
		return 0;
	}
	case M(MR, ADVISE_MR):
		if (!sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_ADVISE_MR_PD_HANDLE, ~0ULL), STI_T_PD))
			return EINVAL;
		return EOPNOTSUPP; /* a device without ODP */
	case M(COUNTERS, COUNTERS_CREATE): {
		struct sti_obj *o = sti_new(ctx, STI_T_COUNTERS);
		if (!o)
			return ENOMEM;
		set_handle(io, UVERBS_ATTR_CREATE_COUNTERS_HANDLE, o->handle);
		return 0;
	}
	case M(COUNTERS, COUNTERS_READ): {
		struct sti_attr *a = sti_attr_find(io, UVERBS_ATTR_READ_COUNTERS_BUFF);
		if (!sti_get(ctx, (uint32_t)in_u64(io, UVERBS_ATTR_READ_COUNTERS_HANDLE, ~0ULL), STI_T_COUNTERS) || !a)
			return EINVAL;
		memset((void *)(uintptr_t)*a->data, 0, a->len);
		*a->pflags |= UVERBS_ATTR_F_VALID_OUTPUT;
		return 0;
	}
	}
#undef M
	return -1;
}

int sti_uverbs_ioctl(struct sti_ctx *ctx, void *arg)
{
	static char line[65536], hex[HEXSZ];
	struct ib_uverbs_ioctl_hdr *h = arg;
	struct sti_attr attrs[64];
	struct sti_ioctl io;
	struct cmd c;
	size_t o = 0;
	int err;

	if (h->length < sizeof(*h) || h->num_attrs > 64 ||
	    h->length != sizeof(*h) + h->num_attrs * sizeof(struct ib_uverbs_attr) || h->reserved1 || h->reserved2) {
		sti_log("ioctl malformed length=%u num_attrs=%u -> EINVAL", h->length, h->num_attrs);
		return EINVAL;
	}
	io.object = h->object_id;
	io.method = h->method_id;
	io.driver_id = h->driver_id;
	io.nattrs = h->num_attrs;
	io.attrs = attrs;
	for (unsigned i = 0; i < h->num_attrs; i++) {
		struct ib_uverbs_attr *a = &h->attrs[i];
		attrs[i] = (struct sti_attr){ a->attr_id, a->len, a->flags, a->attr_data.enum_data.elem_id, (uint64_t *)&a->data,
					      &a->flags, 0 };
	}
	/* The request, attributes in id order (the kernel does not care for
	 * their order, nor do we). */
	if (io.object < nobjects())
		o += (size_t)snprintf(line + o, sizeof(line) - o, "ioctl %s", objnames[io.object]);
	else
		o += (size_t)snprintf(line + o, sizeof(line) - o, "ioctl obj=0x%x", io.object);
	o += (size_t)snprintf(line + o, sizeof(line) - o, ".%u driver=%u", io.method, io.driver_id);
	for (int id = -1;;) {
		int next = 0x10000;
		unsigned k = 0;
		for (unsigned i = 0; i < io.nattrs; i++)
			if (attrs[i].id > id && attrs[i].id < next) {
				next = attrs[i].id;
				k = i;
			}
		if (next == 0x10000)
			break;
		id = next;
		struct sti_attr *a = &attrs[k];
		enum akind kd = kind_of(ctx, io.object, io.method, a->id);
		o += (size_t)snprintf(line + o, sizeof(line) - o, " a%x/f%x/e%u/l%u", a->id,
				      a->flags & ~UVERBS_ATTR_F_VALID_OUTPUT, a->elem_id, a->len);
		switch (kd) {
		case A_IN:
		case A_UNK:
			if (a->id == UVERBS_ATTR_UHW_IN && !k_driver_attrs(io.object, io.method)) {
				uint32_t wc = (uint32_t)in_u64(&io, UVERBS_ATTR_WRITE_CMD, 0);
				int inv = io.object == UVERBS_OBJECT_DEVICE && io.method == UVERBS_METHOD_INVOKE_WRITE;
				hex_uin(ctx, hex, sti_attr_in(a), a->len,
					inv ? ((wc & IB_USER_VERBS_CMD_FLAG_EXTENDED) ?
						       STI_EX(wc & IB_USER_VERBS_CMD_COMMAND_MASK) : wc) :
					      STI_METHOD(io.object, io.method));
				o += (size_t)snprintf(line + o, sizeof(line) - o, "=%s", hex);
			} else if (a->id == UVERBS_ATTR_CORE_IN && io.object == UVERBS_OBJECT_DEVICE &&
				   io.method == UVERBS_METHOD_INVOKE_WRITE) {
				uint32_t wc = (uint32_t)in_u64(&io, UVERBS_ATTR_WRITE_CMD, 0);
				hex_core_in(ctx, hex, sti_attr_in(a), a->len, wc & IB_USER_VERBS_CMD_COMMAND_MASK,
					    !!(wc & IB_USER_VERBS_CMD_FLAG_EXTENDED));
				o += (size_t)snprintf(line + o, sizeof(line) - o, "=%s", hex);
			} else if (a->len <= 8 || kd == A_IN) {
				sti_hex(hex, sizeof(hex), sti_attr_in(a), a->len <= 8 ? 8 : a->len);
				o += (size_t)snprintf(line + o, sizeof(line) - o, "=%s", hex);
			}
			break;
		case A_IDR:
		case A_DEL:
			o += (size_t)snprintf(line + o, sizeof(line) - o, "=h%llu", (unsigned long long)*a->data);
			break;
		case A_FD:
			o += (size_t)snprintf(line + o, sizeof(line) - o, "=%s",
					      (int64_t)*a->data < 0 ? "nofd" : "fd");
			break;
		default:
			break;
		}
		if (o >= sizeof(line))
			o = sizeof(line) - 1;
	}
	memset(&c, 0, sizeof(c));
	c.ctx = ctx;
	if (io.object == UVERBS_OBJECT_DEVICE && io.method == UVERBS_METHOD_INVOKE_WRITE) {
		struct sti_attr *ci = sti_attr_find(&io, UVERBS_ATTR_CORE_IN), *co = sti_attr_find(&io, UVERBS_ATTR_CORE_OUT);
		struct sti_attr *ui = sti_attr_find(&io, UVERBS_ATTR_UHW_IN), *uo = sti_attr_find(&io, UVERBS_ATTR_UHW_OUT);
		uint64_t wc = in_u64(&io, UVERBS_ATTR_WRITE_CMD, ~0ULL);
		uint32_t cmd = (uint32_t)wc & IB_USER_VERBS_CMD_COMMAND_MASK;
		int ex = !!(wc & IB_USER_VERBS_CMD_FLAG_EXTENDED);
		const struct wdesc *d = wd(cmd, ex);
		size_t out_len = co ? co->len : 0, uout_len = uo ? uo->len : 0;
		sti_log("%s", line);
		if (!d || !ci || ci->len < d->in || (d->out && (!co || co->len < d->out))) {
			/* What the kernel answers upstream's probe (QUERY_DEVICE
			 * without its request): the request is too short. */
			sti_log("  -> %s", d ? "ENOSPC" : "EOPNOTSUPP");
			return d ? ENOSPC : EOPNOTSUPP;
		}
		err = run_write(ctx, "invoke", cmd, ex, sti_attr_in(ci), ci->len, co ? (void *)(uintptr_t)*co->data : NULL,
				&out_len, ui ? sti_attr_in(ui) : NULL, ui ? ui->len : 0,
				uo ? (void *)(uintptr_t)*uo->data : NULL, &uout_len);
		if (!err) {
			if (co && out_len)
				*co->pflags |= UVERBS_ATTR_F_VALID_OUTPUT;
			if (uo && uout_len)
				*uo->pflags |= UVERBS_ATTR_F_VALID_OUTPUT;
		}
		return err;
	}
	if (io.object >= (1u << 12) || io.method >= (1u << 12) || !(io.object < nobjects()))
		err = -1;
	else
		err = core_method(&c, &io);
	if (err == -1 && ctx->dev.drv->ioctl)
		err = ctx->dev.drv->ioctl(ctx, &io);
	if (err == -1)
		err = EPROTONOSUPPORT;
	if (!err && c.dr.uout && c.dr.uout_written) {
		struct sti_attr *uo = sti_attr_find(&io, UVERBS_ATTR_UHW_OUT);
		*uo->pflags |= UVERBS_ATTR_F_VALID_OUTPUT;
	}
	/* The answer: outputs written, handles made. */
	o += (size_t)snprintf(line + o, sizeof(line) - o, " -> %d", err);
	for (unsigned i = 0; !err && i < io.nattrs && o < sizeof(line) - 64; i++) {
		struct sti_attr *a = &attrs[i];
		enum akind kd = kind_of(ctx, io.object, io.method, a->id);
		if (kd == A_NEW)
			o += (size_t)snprintf(line + o, sizeof(line) - o, " a%x=h%llu", a->id, (unsigned long long)*a->data);
		else if (kd == A_FDNEW)
			o += (size_t)snprintf(line + o, sizeof(line) - o, " a%x=fd", a->id);
		else if (*a->pflags & UVERBS_ATTR_F_VALID_OUTPUT) {
			size_t n = a->id == UVERBS_ATTR_UHW_OUT ? c.dr.uout_written : a->written ? a->written : a->len;
			sti_hex_out(hex, sizeof(hex), (void *)(uintptr_t)*a->data, n);
			o += (size_t)snprintf(line + o, sizeof(line) - o, " a%x=%s", a->id, hex);
		}
	}
	if (o >= sizeof(line))
		o = sizeof(line) - 1;
	sti_log("%s%s", line, c.note);
	return err;
}
