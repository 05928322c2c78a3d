/*
 * compat-tests/providers/workload.c -- the verbs workload that the providers
 * suite runs once on upstream's libibverbs and once on ours, each time on the
 * user-space stand-in for the kernel's uverbs device.  Every step writes
 * "@step <name>" before the call and "@ret <name> rc=<int> errno=<name>" after
 * it (plus "@out <name> key=value ..." for deterministic query results,
 * "@skip <name> <why>" for steps whose prerequisites failed), so that the
 * stand-in's command log (same file, O_APPEND) can be compared step by step.
 *
 *   workload [--only SECTION,...] [--faults]
 *
 * Compiled against exactly one release's headers (rdma-core 44, 56.1 or
 * 65.0); newer interfaces are guarded by header markers (see HAVE_* below).
 * Direct-verbs libraries are dlopen()ed, never linked.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/mlx4dv.h>
#include <infiniband/efadv.h>
#include <infiniband/manadv.h>

/*
 * Header markers.
 *  - hnsdv.h first shipped after rdma-core 44 (present in 56.1 and 65.0);
 *    efadv_query_mr() appeared in the same window (absent in 44, present in
 *    56.1), and efadv.h has no macro of its own to tell, so the presence of
 *    hnsdv.h stands for "rdma-core >= 56".
 *  - IBV_DEVICE_CC_DMA_BOUNCE (a #define in verbs.h) is new in 65.0, as are
 *    ibv_query_port_speed(), ibv_reg_mr_ex(), ibv_alloc_dmah(),
 *    ibv_dm_export_dmabuf_fd(), ibv_alloc_buf() and the completion counters.
 */
#if defined(__has_include)
#if __has_include(<infiniband/hnsdv.h>)
#include <infiniband/hnsdv.h>
#define HAVE_HNSDV 1
#define HAVE_EFADV_QUERY_MR 1
#endif
#endif
#ifdef IBV_DEVICE_CC_DMA_BOUNCE
#define HAVE_QUERY_PORT_SPEED 1
#define HAVE_REG_MR_EX 1		/* ibv_reg_mr_ex, ibv_alloc_dmah */
#define HAVE_DM_EXPORT_DMABUF 1	/* ibv_dm_export_dmabuf_fd */
#define HAVE_COMP_CNTR 1		/* ibv_*_comp_cntr */
#define HAVE_ALLOC_BUF 1		/* ibv_alloc_buf, ibv_free_buf */
#define HAVE_EFADV_CQ_EXT_MEM 1	/* efadv_create_cq on a dma-buf */
#endif

#define PORT 1
#define QKEY 0x11111111u
#define CQE 64
#define MAX_WR 16
#define BUF_SIZE 65536
#define MR_LEN 4096
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

static int logfd = 1;
static struct ibv_device **dev_list;
static struct ibv_device *dev;
static struct ibv_context *ctx;
static const char *devname_ = "";
static struct ibv_port_attr port_attr;
static int port_ok;
static union ibv_gid gid0;
static int gid0_ok;
static unsigned char buf[BUF_SIZE] __attribute__((aligned(4096)));

/* ---------------------------------------------------------------- output */

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(logfd, line, n) < 0) {
		/* nothing sensible to do */
	}
}

static const char *errname(int e)
{
	static char num[16];

	switch (e) {
	case 0: return "0";
	case EINVAL: return "EINVAL";
	case ENOMEM: return "ENOMEM";
	case EIO: return "EIO";
	case EOPNOTSUPP: return "EOPNOTSUPP";	/* == ENOTSUP on Linux */
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EFAULT: return "EFAULT";
	case EAGAIN: return "EAGAIN";
	case EBUSY: return "EBUSY";
	case ENODEV: return "ENODEV";
	case ENOTTY: return "ENOTTY";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ENOSPC: return "ENOSPC";
	case EACCES: return "EACCES";
	case EEXIST: return "EEXIST";
	case ERANGE: return "ERANGE";
	case EMSGSIZE: return "EMSGSIZE";
	case EBADF: return "EBADF";
	case ENXIO: return "ENXIO";
	}
	snprintf(num, sizeof(num), "%d", e);
	return num;
}

/* Step names built with a format live in a small ring of buffers. */
static const char *N(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *N(const char *fmt, ...)
{
	static char ring[16][160];
	static unsigned int next;
	char *s = ring[next++ % 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s, sizeof(ring[0]), fmt, ap);
	va_end(ap);
	return s;
}

static void step(const char *name) { emit("@step %s", name); }

static void retp(const char *name, int ok, int e)
{
	emit("@ret %s rc=%d errno=%s", name, ok ? 1 : 0, ok ? "0" : errname(e));
}

static void reti(const char *name, long rc, int e)
{
	emit("@ret %s rc=%ld errno=%s", name, rc, rc && e ? errname(e) : "0");
}

static void skip(const char *name, const char *why) { emit("@skip %s %s", name, why); }

/* pointer-returning call */
#define CALLP(var, name, expr) do {					\
	const char *n_ = (name);					\
	int e_;								\
	step(n_);							\
	errno = 0;							\
	(var) = (expr);							\
	e_ = errno;							\
	retp(n_, (var) != NULL, e_);					\
} while (0)

/* int-returning call */
#define CALLI(var, name, expr) do {					\
	const char *n_ = (name);					\
	int e_;								\
	step(n_);							\
	errno = 0;							\
	(var) = (expr);							\
	e_ = errno;							\
	reti(n_, (long)(var), e_);					\
} while (0)

/* count-returning call (poll_cq, gid table, poll(2) ...): rc >= 0 is success */
#define CALLN(var, name, expr) do {					\
	const char *n_ = (name);					\
	int e_;								\
	step(n_);							\
	errno = 0;							\
	(var) = (expr);							\
	e_ = errno;							\
	reti(n_, (long)(var), (var) < 0 ? e_ : 0);			\
} while (0)

/* void call */
#define CALLV(name, expr) do {						\
	const char *n_ = (name);					\
	step(n_);							\
	expr;								\
	reti(n_, 0, 0);							\
} while (0)

static void hex(char *out, size_t outlen, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i, o = 0;

	for (i = 0; i < len && o + 3 < outlen; i++)
		o += snprintf(out + o, outlen - o, "%02x", b[i]);
	out[o] = 0;
}

/* ------------------------------------------------------------ selection */

static const char *const sections[] = {
	"device", "pd_mr", "cq", "srq", "qp", "xrc", "ah", "mw", "flow",
	"wq_rss", "dm", "counters", "td", "refuse", "limits", "advise", "async", "dv",
	"close",
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))
static int selected[NSECTIONS];

static int want(const char *sec)
{
	size_t i;

	for (i = 0; i < NSECTIONS; i++)
		if (!strcmp(sections[i], sec))
			return selected[i];
	return 0;
}

/* -------------------------------------------------------------- helpers */

static const char *qpt_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW_PACKET";
	case IBV_QPT_XRC_SEND: return "XRC_SEND";
	case IBV_QPT_XRC_RECV: return "XRC_RECV";
	default: return "OTHER";
	}
}

static void fixed_dgid(union ibv_gid *g)
{
	/* link-local, EUI-64 of 00:02:c9:00:00:01 */
	static const uint8_t raw[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					 0x02, 0x02, 0xc9, 0xff, 0xfe, 0x00, 0x00, 0x01 };
	memcpy(g->raw, raw, 16);
}

static int is_eth(void)
{
	return port_ok && port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
}

static void fill_ah(struct ibv_ah_attr *a, int global)
{
	memset(a, 0, sizeof(*a));
	a->dlid = 1;
	a->sl = 0;
	a->src_path_bits = 0;
	a->static_rate = 0;
	a->port_num = PORT;
	if (global) {
		a->is_global = 1;
		fixed_dgid(&a->grh.dgid);
		a->grh.sgid_index = 0;
		a->grh.hop_limit = 64;
		a->grh.flow_label = 0;
		a->grh.traffic_class = 0;
	}
}

static void out_cq(const char *name, struct ibv_cq *cq)
{
	emit("@out %s cqe=%d", name, cq->cqe);
}

static void out_qp(const char *name, struct ibv_qp *qp, struct ibv_qp_cap *cap)
{
	emit("@out %s qp_num=%u qp_type=%s max_send_wr=%u max_recv_wr=%u "
	     "max_send_sge=%u max_recv_sge=%u max_inline_data=%u",
	     name, qp->qp_num, qpt_name(qp->qp_type), cap->max_send_wr,
	     cap->max_recv_wr, cap->max_send_sge, cap->max_recv_sge,
	     cap->max_inline_data);
}

static void poll_cq_step(const char *name, struct ibv_cq *cq)
{
	struct ibv_wc wc[4];
	int n, i;

	/* Providers leave fields of some completions unset (ocrdma: the
	 * opcode of a flushed receive): no stack bytes in the log. */
	memset(wc, 0, sizeof(wc));
	CALLN(n, name, ibv_poll_cq(cq, 4, wc));
	if (n >= 0) {
		char line[512];
		int o = snprintf(line, sizeof(line), "@out %s count=%d", name, n);

		for (i = 0; i < n && o < (int)sizeof(line) - 64; i++)
			o += snprintf(line + o, sizeof(line) - o,
				      " wc%d=%llu/%s/%d", i,
				      (unsigned long long)wc[i].wr_id,
				      ibv_wc_status_str(wc[i].status),
				      (int)wc[i].opcode);
		emit("%s", line);
	}
}

static struct ibv_qp *create_qp_step(const char *name, struct ibv_pd *pd,
				     struct ibv_cq *cq, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = t;
	a.sq_sig_all = 0;
	a.cap.max_send_wr = MAX_WR;
	a.cap.max_recv_wr = MAX_WR;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = 0;
	CALLP(qp, name, ibv_create_qp(pd, &a));
	if (qp)
		out_qp(name, qp, &a.cap);
	return qp;
}

static int modify_step(const char *name, struct ibv_qp *qp,
		       enum ibv_qp_type t, enum ibv_qp_state st, uint32_t dqpn)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE, rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	switch (st) {
	case IBV_QPS_INIT:
		if (t == IBV_QPT_RAW_PACKET) {
			a.port_num = PORT;
			mask |= IBV_QP_PORT;
			break;
		}
		a.pkey_index = 0;
		a.port_num = PORT;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (t == IBV_QPT_UD) {
			a.qkey = QKEY;
			mask |= IBV_QP_QKEY;
		} else {
			a.qp_access_flags = IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_ATOMIC;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		if (t == IBV_QPT_UD || t == IBV_QPT_RAW_PACKET)
			break;
		fill_ah(&a.ah_attr, is_eth());
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = 0;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (t == IBV_QPT_RC || t == IBV_QPT_XRC_RECV) {
			/* responder attributes: not for UC or XRC_SEND */
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		if (t == IBV_QPT_RAW_PACKET)
			break;
		a.sq_psn = 0;
		mask |= IBV_QP_SQ_PSN;
		if (t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND) {
			a.timeout = 14;
			a.retry_cnt = 7;
			a.rnr_retry = 7;
			a.max_rd_atomic = 1;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		break;
	}
	CALLI(rc, name, ibv_modify_qp(qp, &a, mask));
	return rc;
}

/* INIT, RTR, RTS; stops (with skips) at the first failure */
static int bring_up(const char *prefix, struct ibv_qp *qp, enum ibv_qp_type t,
		    uint32_t dqpn)
{
	static const struct { enum ibv_qp_state st; const char *n; } seq[] = {
		{ IBV_QPS_INIT, "INIT" }, { IBV_QPS_RTR, "RTR" },
		{ IBV_QPS_RTS, "RTS" },
	};
	size_t i;

	for (i = 0; i < 3; i++) {
		const char *name = N("%s %s %s", prefix, qpt_name(t), seq[i].n);

		if (modify_step(name, qp, t, seq[i].st, dqpn)) {
			for (i++; i < 3; i++)
				skip(N("%s %s %s", prefix, qpt_name(t), seq[i].n),
				     "previous-modify-failed");
			return -1;
		}
	}
	return 0;
}

static struct ibv_mr *reg_mr_step(const char *name, struct ibv_pd *pd,
				  void *addr, size_t len, int access)
{
	struct ibv_mr *mr;

	CALLP(mr, name, ibv_reg_mr(pd, addr, len, access));
	if (mr)
		emit("@out %s length=%zu lkey=%u rkey=%u", name, mr->length,
		     mr->lkey, mr->rkey);
	return mr;
}

static struct ibv_cq *create_cq_step(const char *name,
				     struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;

	CALLP(cq, name, ibv_create_cq(ctx, CQE, NULL, ch, 0));
	if (cq)
		out_cq(name, cq);
	return cq;
}

static void destroy_qp_step(const char *name, struct ibv_qp *qp)
{
	int rc;

	if (qp)
		CALLI(rc, name, ibv_destroy_qp(qp));
}

static void destroy_cq_step(const char *name, struct ibv_cq *cq)
{
	int rc;

	if (cq)
		CALLI(rc, name, ibv_destroy_cq(cq));
}

static void dereg_mr_step(const char *name, struct ibv_mr *mr)
{
	int rc;

	if (mr)
		CALLI(rc, name, ibv_dereg_mr(mr));
}

static void dealloc_pd_step(const char *name, struct ibv_pd *pd)
{
	int rc;

	if (pd)
		CALLI(rc, name, ibv_dealloc_pd(pd));
}

static void destroy_ah_step(const char *name, struct ibv_ah *ah)
{
	int rc;

	if (ah)
		CALLI(rc, name, ibv_destroy_ah(ah));
}

/* fixed Ethernet/IPv4 frame at buf + 2048 for RAW_PACKET sends */
static const uint8_t dst_mac[6] = { 0x00, 0x02, 0xc9, 0x00, 0x00, 0x01 };
static const uint8_t src_mac[6] = { 0x00, 0x02, 0xc9, 0x00, 0x00, 0x02 };

static void init_buffers(void)
{
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	memcpy(buf + 2048, dst_mac, 6);
	memcpy(buf + 2048 + 6, src_mac, 6);
	buf[2048 + 12] = 0x08;
	buf[2048 + 13] = 0x00;
}

static int post_recv_step(const char *name, struct ibv_qp *qp,
			  struct ibv_mr *mr)
{
	struct ibv_sge sge = { (uintptr_t)buf + 4096 - 4096, 1024, mr->lkey };
	struct ibv_recv_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x100;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CALLI(rc, name, ibv_post_recv(qp, &wr, &bad));
	return rc;
}

static int post_send_step(const char *name, struct ibv_qp *qp,
			  struct ibv_mr *mr, struct ibv_ah *ah,
			  uint32_t remote_srqn)
{
	struct ibv_sge sge = { (uintptr_t)buf + 1024, 64, mr->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x200;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	switch (qp->qp_type) {
	case IBV_QPT_UD:
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qp->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
		break;
	case IBV_QPT_RAW_PACKET:
		sge.addr = (uintptr_t)buf + 2048;
		break;
	case IBV_QPT_XRC_SEND:
		wr.qp_type.xrc.remote_srqn = remote_srqn;
		break;
	default:
		break;
	}
	CALLI(rc, name, ibv_post_send(qp, &wr, &bad));
	return rc;
}

/* --------------------------------------------------------------- device */

static void sec_device(void)
{
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;
	struct ibv_gid_entry ge, table[16];
	char g[40];
	uint16_t pkey;
	ssize_t n;
	int rc, i;

	CALLI(rc, "query_device", ibv_query_device(ctx, &da));
	if (!rc)
		emit("@out query_device fw_ver=%s node_guid=%016llx "
		     "sys_image_guid=%016llx max_mr_size=%llu page_size_cap=%llu "
		     "vendor_id=%u vendor_part_id=%u hw_ver=%u max_qp=%d "
		     "max_qp_wr=%d device_cap_flags=%u max_sge=%d max_sge_rd=%d "
		     "max_cq=%d max_cqe=%d max_mr=%d max_pd=%d "
		     "max_qp_rd_atom=%d max_qp_init_rd_atom=%d max_srq=%d "
		     "max_srq_wr=%d max_srq_sge=%d max_ah=%d max_mw=%d "
		     "atomic_cap=%d max_pkeys=%u phys_port_cnt=%u",
		     da.fw_ver[0] ? da.fw_ver : "-",
		     (unsigned long long)da.node_guid,
		     (unsigned long long)da.sys_image_guid,
		     (unsigned long long)da.max_mr_size,
		     (unsigned long long)da.page_size_cap, da.vendor_id,
		     da.vendor_part_id, da.hw_ver, da.max_qp, da.max_qp_wr,
		     da.device_cap_flags, da.max_sge, da.max_sge_rd, da.max_cq,
		     da.max_cqe, da.max_mr, da.max_pd, da.max_qp_rd_atom,
		     da.max_qp_init_rd_atom, da.max_srq, da.max_srq_wr,
		     da.max_srq_sge, da.max_ah, da.max_mw, (int)da.atomic_cap,
		     da.max_pkeys, da.phys_port_cnt);

	memset(&dx, 0, sizeof(dx));
	CALLI(rc, "query_device_ex", ibv_query_device_ex(ctx, NULL, &dx));
	if (!rc)
		emit("@out query_device_ex max_qp=%d max_cqe=%d comp_mask=%u "
		     "device_cap_flags_ex=%llu odp_general_caps=%llu "
		     "odp_rc_caps=%u max_tso=%u rss_max_rwq_indirection_tables=%u "
		     "rss_max_rwq_indirection_table_size=%u rss_supported_qpts=%u "
		     "max_wq_type_rq=%u raw_packet_caps=%u tm_max_num_tags=%u "
		     "max_cq_count=%u max_cq_period=%u max_dm_size=%llu "
		     "pci_atomic_fetch_add=%u xrc_odp_caps=%u phys_port_cnt_ex=%u",
		     dx.orig_attr.max_qp, dx.orig_attr.max_cqe, dx.comp_mask,
		     (unsigned long long)dx.device_cap_flags_ex,
		     (unsigned long long)dx.odp_caps.general_caps,
		     dx.odp_caps.per_transport_caps.rc_odp_caps,
		     dx.tso_caps.max_tso,
		     dx.rss_caps.max_rwq_indirection_tables,
		     dx.rss_caps.max_rwq_indirection_table_size,
		     dx.rss_caps.supported_qpts, dx.max_wq_type_rq,
		     dx.raw_packet_caps, dx.tm_caps.max_num_tags,
		     dx.cq_mod_caps.max_cq_count, dx.cq_mod_caps.max_cq_period,
		     (unsigned long long)dx.max_dm_size,
		     dx.pci_atomic_caps.fetch_add, dx.xrc_odp_caps,
		     dx.phys_port_cnt_ex);

	memset(&ge, 0, sizeof(ge));
	CALLI(rc, N("query_gid_ex %d 0", PORT),
	      ibv_query_gid_ex(ctx, PORT, 0, &ge, 0));
	if (!rc) {
		hex(g, sizeof(g), ge.gid.raw, 16);
		emit("@out query_gid_ex %d 0 gid=%s gid_index=%u port_num=%u "
		     "gid_type=%u", PORT, g, ge.gid_index, ge.port_num,
		     ge.gid_type);
	}

	memset(table, 0, sizeof(table));
	CALLN(n, "query_gid_table", ibv_query_gid_table(ctx, table, 16, 0));
	if (n > 0) {
		char line[1600];
		int o = snprintf(line, sizeof(line), "@out query_gid_table count=%zd", n);

		for (i = 0; i < n && i < 16 && o < (int)sizeof(line) - 80; i++) {
			hex(g, sizeof(g), table[i].gid.raw, 16);
			o += snprintf(line + o, sizeof(line) - o, " %u/%u/%u/%s",
				      table[i].port_num, table[i].gid_index,
				      table[i].gid_type, g);
		}
		emit("%s", line);
	}

	CALLI(rc, N("query_pkey %d 0", PORT), ibv_query_pkey(ctx, PORT, 0, &pkey));
	if (!rc)
		emit("@out query_pkey %d 0 pkey=0x%04x", PORT, ntohs(pkey));

	{
		int idx;

		CALLN(idx, N("get_pkey_index %d 0xffff", PORT),
		      ibv_get_pkey_index(ctx, PORT, htons(0xffff)));
		(void)idx;
	}

	/* Bad input answers as upstream's: indexes past the tables, a port
	 * the device does not have (return value and errno compared). */
	{
		union ibv_gid gbad;
		struct ibv_gid_entry gebad;
		struct ibv_port_attr pbad;
		uint16_t kbad;

		memset(&gbad, 0, sizeof(gbad));
		CALLI(rc, N("query_gid %d 100000", PORT),
		      ibv_query_gid(ctx, PORT, 100000, &gbad));
		CALLI(rc, "query_gid 77 0", ibv_query_gid(ctx, 77, 0, &gbad));
		CALLI(rc, N("query_gid_ex %d 100000", PORT),
		      ibv_query_gid_ex(ctx, PORT, 100000, &gebad, 0));
		CALLI(rc, N("query_pkey %d 100000", PORT),
		      ibv_query_pkey(ctx, PORT, 100000, &kbad));
		CALLI(rc, "query_port 77", ibv_query_port(ctx, 77, &pbad));
	}

#ifdef HAVE_QUERY_PORT_SPEED
	{
		uint64_t speed = 0;

		CALLI(rc, N("query_port_speed %d", PORT),
		      ibv_query_port_speed(ctx, PORT, &speed));
		if (!rc)
			emit("@out query_port_speed %d speed=%llu", PORT,
			     (unsigned long long)speed);
	}
#endif
}

/* --------------------------------------------------------------- pd_mr */

static void sec_pd_mr(void)
{
	struct ibv_pd *pd, *ipd = NULL;
	struct ibv_mr *mr, *mr2 = NULL, *mr3 = NULL, *mr4 = NULL, *imr = NULL;
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	if (!pd) {
		skip("pd_mr", "no-pd");
		return;
	}
	mr = reg_mr_step("reg_mr", pd, buf, MR_LEN, ACCESS);

	CALLP(mr2, "reg_mr_iova2",
	      ibv_reg_mr_iova2(pd, buf + MR_LEN, MR_LEN, 0x10000, ACCESS));
	if (mr2)
		emit("@out reg_mr_iova2 length=%zu lkey=%u rkey=%u", mr2->length,
		     mr2->lkey, mr2->rkey);

	mr3 = reg_mr_step("reg_mr relaxed", pd, buf + 2 * MR_LEN, MR_LEN,
			  ACCESS | IBV_ACCESS_RELAXED_ORDERING);

	if (mr) {
		CALLI(rc, "rereg_mr",
		      ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				   IBV_ACCESS_LOCAL_WRITE));
		if (!rc)
			emit("@out rereg_mr lkey=%u rkey=%u", mr->lkey, mr->rkey);
	} else {
		skip("rereg_mr", "no-mr");
	}

	CALLP(mr4, "reg_dmabuf_mr",
	      ibv_reg_dmabuf_mr(pd, 0, MR_LEN, 0, -1, ACCESS));

	CALLP(ipd, "import_pd", ibv_import_pd(ctx, pd->handle));
	if (ipd)
		CALLV("unimport_pd", ibv_unimport_pd(ipd));
	if (mr) {
		CALLP(imr, "import_mr", ibv_import_mr(pd, mr->handle));
		if (imr) {
			emit("@out import_mr length=%zu lkey=%u rkey=%u",
			     imr->length, imr->lkey, imr->rkey);
			CALLV("unimport_mr", ibv_unimport_mr(imr));
		}
	} else {
		skip("import_mr", "no-mr");
	}

#ifdef HAVE_REG_MR_EX
	{
		struct ibv_mr_init_attr ma;
		struct ibv_dmah_init_attr ha;
		struct ibv_dmah *dmah = NULL;
		struct ibv_mr *mr5 = NULL;

		memset(&ma, 0, sizeof(ma));
		ma.length = MR_LEN;
		ma.access = ACCESS;
		ma.comp_mask = IBV_REG_MR_MASK_ADDR;
		ma.addr = buf + 3 * MR_LEN;
		CALLP(mr5, "reg_mr_ex", ibv_reg_mr_ex(pd, &ma));
		if (mr5)
			emit("@out reg_mr_ex length=%zu lkey=%u rkey=%u",
			     mr5->length, mr5->lkey, mr5->rkey);
		dereg_mr_step("dereg_mr ex", mr5);

		memset(&ha, 0, sizeof(ha));
		ha.comp_mask = IBV_DMAH_INIT_ATTR_MASK_CPU_ID;
		ha.cpu_id = 0;
		CALLP(dmah, "alloc_dmah", ibv_alloc_dmah(ctx, &ha));
		if (dmah)
			CALLI(rc, "dealloc_dmah", ibv_dealloc_dmah(dmah));

		/* With a processing hint and a steering tag (CPU and memory
		 * type), as mlx5 requires, and an MR registered with it. */
		dmah = NULL;
		memset(&ha, 0, sizeof(ha));
		ha.comp_mask = IBV_DMAH_INIT_ATTR_MASK_CPU_ID | IBV_DMAH_INIT_ATTR_MASK_PH |
			       IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE;
		ha.cpu_id = 0;
		ha.ph = 1;
		ha.tph_mem_type = IBV_TPH_MEM_TYPE_VM;
		CALLP(dmah, "alloc_dmah ph", ibv_alloc_dmah(ctx, &ha));
		if (dmah) {
			memset(&ma, 0, sizeof(ma));
			ma.length = MR_LEN;
			ma.access = ACCESS;
			ma.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_IOVA | IBV_REG_MR_MASK_DMAH;
			ma.addr = buf + 3 * MR_LEN;
			ma.iova = 0x20000;
			ma.dmah = dmah;
			mr5 = NULL;
			CALLP(mr5, "reg_mr_ex dmah", ibv_reg_mr_ex(pd, &ma));
			dereg_mr_step("dereg_mr ex dmah", mr5);
			CALLI(rc, "dealloc_dmah ph", ibv_dealloc_dmah(dmah));
		}
	}
#endif
#ifdef HAVE_ALLOC_BUF
	{
		struct ibv_buf *b = NULL;
		void *mem;

		CALLP(mem, "alloc_buf", ibv_alloc_buf(pd, MR_LEN, &b));
		if (mem && b)
			CALLV("free_buf", ibv_free_buf(b));
	}
#endif
	dereg_mr_step("dereg_mr dmabuf", mr4);
	dereg_mr_step("dereg_mr relaxed", mr3);
	dereg_mr_step("dereg_mr iova2", mr2);
	dereg_mr_step("dereg_mr", mr);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ------------------------------------------------------------------ cq */

static void sec_cq(void)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx = NULL;
	struct ibv_cq_init_attr_ex ca;
	int rc;

	CALLP(ch, "create_comp_channel", ibv_create_comp_channel(ctx));
	cq = create_cq_step("create_cq", ch);
	if (cq) {
		CALLI(rc, "req_notify_cq", ibv_req_notify_cq(cq, 0));
		if (ch) {
			struct pollfd p = { ch->fd, POLLIN, 0 };
			int pr;

			CALLN(pr, "poll_comp_channel", poll(&p, 1, 200));
			if (pr > 0) {
				struct ibv_cq *ecq = NULL;
				void *ectx = NULL;

				CALLI(rc, "get_cq_event",
				      ibv_get_cq_event(ch, &ecq, &ectx));
				if (!rc) {
					emit("@out get_cq_event same_cq=%d",
					     ecq == cq);
					if (ecq)
						CALLV("ack_cq_events",
						      ibv_ack_cq_events(ecq, 1));
				}
			} else {
				skip("get_cq_event", "not-readable");
			}
		}
		poll_cq_step("poll_cq", cq);
		CALLI(rc, "resize_cq", ibv_resize_cq(cq, 2 * CQE));
		out_cq("resize_cq", cq);
		CALLI(rc, "req_notify_cq solicited", ibv_req_notify_cq(cq, 1));
	} else {
		skip("req_notify_cq", "no-cq");
	}

	memset(&ca, 0, sizeof(ca));
	ca.cqe = CQE;
	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
		      IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
		      IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
		      IBV_WC_EX_WITH_DLID_PATH_BITS;
	ca.comp_mask = 0;
	CALLP(cqx, "create_cq_ex", ibv_create_cq_ex(ctx, &ca));
	if (cqx) {
		struct ibv_poll_cq_attr pa = { 0 };

		out_cq("create_cq_ex", ibv_cq_ex_to_cq(cqx));
		if (cqx->start_poll) {
			CALLI(rc, "start_poll", ibv_start_poll(cqx, &pa));
			if (rc == 0 && cqx->end_poll)
				CALLV("end_poll", ibv_end_poll(cqx));
		}
		destroy_cq_step("destroy_cq_ex", ibv_cq_ex_to_cq(cqx));
	}
	destroy_cq_step("destroy_cq", cq);
	if (ch)
		CALLI(rc, "destroy_comp_channel", ibv_destroy_comp_channel(ch));
}

/* ----------------------------------------------------------------- srq */

static void sec_srq(void)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr = NULL;
	struct ibv_srq *srq = NULL;
	struct ibv_srq_init_attr sa;
	struct ibv_srq_attr qa;
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	if (!pd) {
		skip("srq", "no-pd");
		return;
	}
	mr = reg_mr_step("reg_mr", pd, buf, MR_LEN, ACCESS);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = MAX_WR;
	sa.attr.max_sge = 1;
	CALLP(srq, "create_srq", ibv_create_srq(pd, &sa));
	if (srq) {
		emit("@out create_srq max_wr=%u max_sge=%u", sa.attr.max_wr,
		     sa.attr.max_sge);
		memset(&qa, 0, sizeof(qa));
		qa.srq_limit = 4;
		CALLI(rc, "modify_srq", ibv_modify_srq(srq, &qa, IBV_SRQ_LIMIT));
		memset(&qa, 0, sizeof(qa));
		CALLI(rc, "query_srq", ibv_query_srq(srq, &qa));
		if (!rc)
			emit("@out query_srq max_wr=%u max_sge=%u srq_limit=%u",
			     qa.max_wr, qa.max_sge, qa.srq_limit);
		if (mr) {
			struct ibv_sge sge = { (uintptr_t)buf, 256, mr->lkey };
			struct ibv_recv_wr wr, *bad = NULL;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = 0x300;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			CALLI(rc, "post_srq_recv", ibv_post_srq_recv(srq, &wr, &bad));
		} else {
			skip("post_srq_recv", "no-mr");
		}
		CALLI(rc, "destroy_srq", ibv_destroy_srq(srq));
	}
	dereg_mr_step("dereg_mr", mr);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ------------------------------------------------------------------ qp */

static struct ibv_qp *create_qp_ex2_step(const char *name, struct ibv_pd *pd,
					 struct ibv_cq *cq, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = t;
	a.cap.max_send_wr = MAX_WR;
	a.cap.max_recv_wr = MAX_WR;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = 0;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = pd;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	if (t == IBV_QPT_RC)
		a.send_ops_flags |= IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_RDMA_READ;
	CALLP(qp, name, ibv_create_qp_ex(ctx, &a));
	if (qp)
		out_qp(name, qp, &a.cap);
	return qp;
}

static void qp_ex_sends(const char *tn, struct ibv_qp *qp, struct ibv_mr *mr,
			struct ibv_ah *ah)
{
	struct ibv_qp_ex *qpx;
	int rc;

	CALLP(qpx, N("qp_to_qp_ex %s", tn), ibv_qp_to_qp_ex(qp));
	if (!qpx || !qpx->wr_start || !qpx->wr_send || !qpx->wr_set_sge ||
	    !qpx->wr_complete) {
		skip(N("wr_start %s", tn), "no-qp_ex-ops");
		return;
	}
	if (!mr) {
		skip(N("wr_start %s", tn), "no-mr");
		return;
	}
	if (qp->qp_type == IBV_QPT_UD && (!ah || !qpx->wr_set_ud_addr)) {
		skip(N("wr_start %s", tn), "no-ah");
		return;
	}
	qpx->wr_id = 0x400;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	CALLV(N("wr_start %s", tn), ibv_wr_start(qpx));
	CALLV(N("wr_send %s", tn), ibv_wr_send(qpx));
	if (qp->qp_type == IBV_QPT_UD)
		CALLV(N("wr_set_ud_addr %s", tn),
		      ibv_wr_set_ud_addr(qpx, ah, qp->qp_num, QKEY));
	CALLV(N("wr_set_sge %s", tn),
	      ibv_wr_set_sge(qpx, mr->lkey,
			     (uintptr_t)buf + (qp->qp_type == IBV_QPT_RAW_PACKET ? 2048 : 1024),
			     64));
	CALLI(rc, N("wr_complete %s", tn), ibv_wr_complete(qpx));
}

static void qp_cycle(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_mr *mr,
		     struct ibv_ah *ah, enum ibv_qp_type t)
{
	const char *tn = qpt_name(t);
	struct ibv_qp *qp;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	int rc, up;

	qp = create_qp_step(N("create_qp %s", tn), pd, cq, t);
	if (qp) {
		up = bring_up("modify_qp", qp, t, qp->qp_num);

		memset(&qa, 0, sizeof(qa));
		memset(&qi, 0, sizeof(qi));
		CALLI(rc, N("query_qp %s", tn),
		      ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP |
				   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_PORT | IBV_QP_PKEY_INDEX, &qi));
		if (!rc)
			emit("@out query_qp %s qp_state=%d path_mtu=%d "
			     "dest_qp_num=%u max_send_wr=%u max_recv_wr=%u "
			     "max_send_sge=%u max_recv_sge=%u max_inline_data=%u "
			     "init_qp_type=%s", tn, (int)qa.qp_state,
			     (int)qa.path_mtu, qa.dest_qp_num,
			     qi.cap.max_send_wr, qi.cap.max_recv_wr,
			     qi.cap.max_send_sge, qi.cap.max_recv_sge,
			     qi.cap.max_inline_data, qpt_name(qi.qp_type));

		if (t == IBV_QPT_RC) {
			struct ibv_ece ece;

			memset(&ece, 0, sizeof(ece));
			CALLI(rc, "query_ece RC", ibv_query_ece(qp, &ece));
			if (!rc)
				emit("@out query_ece RC vendor_id=%u options=%u "
				     "comp_mask=%u", ece.vendor_id, ece.options,
				     ece.comp_mask);
			memset(&ece, 0, sizeof(ece));
			CALLI(rc, "set_ece RC", ibv_set_ece(qp, &ece));
			CALLN(rc, "query_qp_data_in_order RC",
			      ibv_query_qp_data_in_order(qp, IBV_WR_RDMA_WRITE, 0));
		}

		if (mr) {
			post_recv_step(N("post_recv %s", tn), qp, mr);
			if (up)
				skip(N("post_send %s", tn), "not-rts");
			else if (t == IBV_QPT_UD && !ah)
				skip(N("post_send %s", tn), "no-ah");
			else
				post_send_step(N("post_send %s", tn), qp, mr, ah, 0);
		} else {
			skip(N("post_recv %s", tn), "no-mr");
		}
		poll_cq_step(N("poll_cq %s", tn), cq);
		modify_step(N("modify_qp %s ERR", tn), qp, t, IBV_QPS_ERR, 0);
		poll_cq_step(N("poll_cq %s after-err", tn), cq);
		destroy_qp_step(N("destroy_qp %s", tn), qp);
	}

	qp = create_qp_ex2_step(N("create_qp_ex2 %s", tn), pd, cq, t);
	if (qp) {
		up = bring_up("modify_qp_ex2", qp, t, qp->qp_num);
		if (!up)
			qp_ex_sends(tn, qp, mr, ah);
		else
			skip(N("wr_start %s", tn), "not-rts");
		poll_cq_step(N("poll_cq ex2 %s", tn), cq);
		modify_step(N("modify_qp_ex2 %s ERR", tn), qp, t, IBV_QPS_ERR, 0);
		destroy_qp_step(N("destroy_qp_ex2 %s", tn), qp);
	}
}

static void sec_qp(void)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah = NULL;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("create_cq", NULL);
	if (!pd || !cq) {
		skip("qp", "no-pd-or-cq");
		destroy_cq_step("destroy_cq", cq);
		dealloc_pd_step("dealloc_pd", pd);
		return;
	}
	mr = reg_mr_step("reg_mr", pd, buf, MR_LEN, ACCESS);
	fill_ah(&aa, is_eth());
	CALLP(ah, "create_ah qp", ibv_create_ah(pd, &aa));

	qp_cycle(pd, cq, mr, ah, IBV_QPT_RC);
	qp_cycle(pd, cq, mr, ah, IBV_QPT_UC);
	qp_cycle(pd, cq, mr, ah, IBV_QPT_UD);
	qp_cycle(pd, cq, mr, ah, IBV_QPT_RAW_PACKET);

	destroy_ah_step("destroy_ah qp", ah);
	dereg_mr_step("dereg_mr", mr);
	destroy_cq_step("destroy_cq", cq);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ----------------------------------------------------------------- xrc */

static void sec_xrc(void)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr = NULL;
	struct ibv_xrcd *xrcd = NULL;
	struct ibv_srq *srq = NULL;
	struct ibv_qp *sqp = NULL, *rqp = NULL;
	struct ibv_xrcd_init_attr xa;
	struct ibv_srq_init_attr_ex sa;
	struct ibv_qp_init_attr_ex qa;
	uint32_t srqn = 0;
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("create_cq", NULL);
	if (!pd || !cq) {
		skip("xrc", "no-pd-or-cq");
		destroy_cq_step("destroy_cq", cq);
		dealloc_pd_step("dealloc_pd", pd);
		return;
	}
	mr = reg_mr_step("reg_mr", pd, buf, MR_LEN, ACCESS);

	memset(&xa, 0, sizeof(xa));
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	CALLP(xrcd, "open_xrcd", ibv_open_xrcd(ctx, &xa));

	if (xrcd) {
		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = MAX_WR;
		sa.attr.max_sge = 1;
		sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD;
		sa.srq_type = IBV_SRQT_XRC;
		sa.pd = pd;
		sa.cq = cq;
		sa.xrcd = xrcd;
		CALLP(srq, "create_srq_ex XRC", ibv_create_srq_ex(ctx, &sa));
		if (srq) {
			CALLI(rc, "get_srq_num", ibv_get_srq_num(srq, &srqn));
			if (!rc)
				emit("@out get_srq_num srqn=%u", srqn);
		}

		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_XRC_RECV;
		qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		qa.xrcd = xrcd;
		CALLP(rqp, "create_qp XRC_RECV", ibv_create_qp_ex(ctx, &qa));
		if (rqp) {
			/* What the library wrote into the provider's verbs_qp
			 * (the QP's first member, laid out by this release's
			 * headers as the provider of this release has it). */
			struct peek_verbs_qp {
				union {
					struct ibv_qp qp;
					struct ibv_qp_ex qp_ex;
				};
				uint32_t comp_mask;
				void *xrcd;
			} *vq = (struct peek_verbs_qp *)rqp;

			emit("@out create_qp XRC_RECV qp_num=%u verbs_qp.comp_mask=%u verbs_qp.xrcd=%s",
			     rqp->qp_num, vq->comp_mask,
			     vq->xrcd == (void *)xrcd ? "the-xrcd" : vq->xrcd ? "other" : "null");
		}
	} else {
		skip("create_srq_ex XRC", "no-xrcd");
		skip("create_qp XRC_RECV", "no-xrcd");
	}

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.send_cq = cq;
	qa.cap.max_send_wr = MAX_WR;
	qa.cap.max_send_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = pd;
	CALLP(sqp, "create_qp XRC_SEND", ibv_create_qp_ex(ctx, &qa));
	if (sqp)
		out_qp("create_qp XRC_SEND", sqp, &qa.cap);

	if (sqp)
		bring_up("modify_qp", sqp, IBV_QPT_XRC_SEND,
			 rqp ? rqp->qp_num : sqp->qp_num);
	if (rqp) {
		if (!modify_step("modify_qp XRC_RECV INIT", rqp, IBV_QPT_XRC_RECV,
				 IBV_QPS_INIT, 0))
			modify_step("modify_qp XRC_RECV RTR", rqp, IBV_QPT_XRC_RECV,
				    IBV_QPS_RTR, sqp ? sqp->qp_num : rqp->qp_num);
		else
			skip("modify_qp XRC_RECV RTR", "previous-modify-failed");
	}
	if (srq && mr) {
		struct ibv_sge sge = { (uintptr_t)buf, 256, mr->lkey };
		struct ibv_recv_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x500;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		CALLI(rc, "post_srq_recv XRC", ibv_post_srq_recv(srq, &wr, &bad));
	}
	if (sqp && mr && srq)
		post_send_step("post_send XRC_SEND", sqp, mr, NULL, srqn);
	else
		skip("post_send XRC_SEND", "missing-qp-mr-or-srq");
	poll_cq_step("poll_cq XRC", cq);

	destroy_qp_step("destroy_qp XRC_SEND", sqp);
	destroy_qp_step("destroy_qp XRC_RECV", rqp);
	if (srq)
		CALLI(rc, "destroy_srq XRC", ibv_destroy_srq(srq));
	if (xrcd)
		CALLI(rc, "close_xrcd", ibv_close_xrcd(xrcd));
	dereg_mr_step("dereg_mr", mr);
	destroy_cq_step("destroy_cq", cq);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ------------------------------------------------------------------ ah */

static void sec_ah(void)
{
	struct ibv_pd *pd;
	struct ibv_ah *ah1 = NULL, *ah2 = NULL;
	struct ibv_ah_attr aa;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	if (!pd) {
		skip("ah", "no-pd");
		return;
	}
	fill_ah(&aa, 0);
	CALLP(ah1, "create_ah", ibv_create_ah(pd, &aa));
	fill_ah(&aa, 1);
	CALLP(ah2, "create_ah grh", ibv_create_ah(pd, &aa));
	destroy_ah_step("destroy_ah grh", ah2);
	destroy_ah_step("destroy_ah", ah1);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ------------------------------------------------------------------ mw */

static void sec_mw(void)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_mw *mw1 = NULL, *mw2 = NULL;
	int rc, up = -1;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("create_cq", NULL);
	if (!pd || !cq) {
		skip("mw", "no-pd-or-cq");
		destroy_cq_step("destroy_cq", cq);
		dealloc_pd_step("dealloc_pd", pd);
		return;
	}
	mr = reg_mr_step("reg_mr mw_bind", pd, buf, MR_LEN,
			 ACCESS | IBV_ACCESS_MW_BIND);
	qp = create_qp_step("create_qp RC", pd, cq, IBV_QPT_RC);
	if (qp)
		up = bring_up("modify_qp", qp, IBV_QPT_RC, qp->qp_num);

	CALLP(mw1, "alloc_mw 1", ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	CALLP(mw2, "alloc_mw 2", ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	if (mw1)
		emit("@out alloc_mw 1 rkey=%u", mw1->rkey);
	if (mw2)
		emit("@out alloc_mw 2 rkey=%u", mw2->rkey);

	if (mw1 && mr && qp && !up) {
		struct ibv_mw_bind mb;

		memset(&mb, 0, sizeof(mb));
		mb.wr_id = 0x600;
		mb.send_flags = IBV_SEND_SIGNALED;
		mb.bind_info.mr = mr;
		mb.bind_info.addr = (uintptr_t)buf;
		mb.bind_info.length = 1024;
		mb.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ;
		CALLI(rc, "bind_mw", ibv_bind_mw(qp, mw1, &mb));
	} else {
		skip("bind_mw", "missing-mw1-mr-or-rts-qp");
	}
	if (mw2 && mr && qp && !up) {
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x601;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw.mw = mw2;
		wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
		wr.bind_mw.bind_info.mr = mr;
		wr.bind_mw.bind_info.addr = (uintptr_t)buf;
		wr.bind_mw.bind_info.length = 1024;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		CALLI(rc, "post_send BIND_MW", ibv_post_send(qp, &wr, &bad));
	} else {
		skip("post_send BIND_MW", "missing-mw2-mr-or-rts-qp");
	}
	if (qp)
		poll_cq_step("poll_cq mw", cq);

	if (mw2)
		CALLI(rc, "dealloc_mw 2", ibv_dealloc_mw(mw2));
	if (mw1)
		CALLI(rc, "dealloc_mw 1", ibv_dealloc_mw(mw1));
	destroy_qp_step("destroy_qp RC", qp);
	dereg_mr_step("dereg_mr mw_bind", mr);
	destroy_cq_step("destroy_cq", cq);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ---------------------------------------------------------------- flow */

/*
 * Flow attributes are a struct ibv_flow_attr followed by its specs, back to
 * back; built in an aligned byte buffer with memcpy (no packed structs).
 */
union flow_buf {
	struct ibv_flow_attr attr;
	unsigned char raw[512];
	uint64_t align_;
};

static struct ibv_flow_attr *build_flow(union flow_buf *fb,
					struct ibv_counters *cnt)
{
	struct ibv_flow_attr a;
	struct ibv_flow_spec_eth e;
	struct ibv_flow_spec_counter_action c;
	size_t off = sizeof(a);

	memset(fb, 0, sizeof(*fb));
	memset(&e, 0, sizeof(e));
	e.type = IBV_FLOW_SPEC_ETH;
	e.size = sizeof(e);
	memcpy(e.val.dst_mac, dst_mac, 6);
	memset(e.mask.dst_mac, 0xff, 6);
	memcpy(fb->raw + off, &e, sizeof(e));
	off += sizeof(e);
	if (cnt) {
		memset(&c, 0, sizeof(c));
		c.type = IBV_FLOW_SPEC_ACTION_COUNT;
		c.size = sizeof(c);
		c.counters = cnt;
		memcpy(fb->raw + off, &c, sizeof(c));
		off += sizeof(c);
	}
	memset(&a, 0, sizeof(a));
	a.type = IBV_FLOW_ATTR_NORMAL;
	a.size = off;
	a.priority = 0;
	a.num_of_specs = cnt ? 2 : 1;
	a.port = PORT;
	a.flags = 0;
	memcpy(fb->raw, &a, sizeof(a));
	return &fb->attr;
}

/* RAW_PACKET QP in INIT on port 1, for flows */
static struct ibv_qp *raw_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp *qp = create_qp_step("create_qp RAW_PACKET", pd, cq,
					   IBV_QPT_RAW_PACKET);

	if (qp)
		modify_step("modify_qp RAW_PACKET INIT", qp, IBV_QPT_RAW_PACKET,
			    IBV_QPS_INIT, 0);
	return qp;
}

static void sec_flow(void)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp = NULL;
	struct ibv_flow *fl = NULL;
	union flow_buf f;
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("create_cq", NULL);
	if (pd && cq)
		qp = raw_qp(pd, cq);
	if (qp) {
		CALLP(fl, "create_flow", ibv_create_flow(qp, build_flow(&f, NULL)));
		if (fl)
			CALLI(rc, "destroy_flow", ibv_destroy_flow(fl));
	} else {
		skip("create_flow", "no-raw-qp");
	}
	destroy_qp_step("destroy_qp RAW_PACKET", qp);
	destroy_cq_step("destroy_cq", cq);
	dealloc_pd_step("dealloc_pd", pd);
}

/* -------------------------------------------------------------- wq_rss */

static void sec_wq_rss(void)
{
	static uint8_t key[40] = {
		0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2,
		0x83, 0x19, 0xdb, 0x1a, 0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9,
		0x2c, 0x9c, 0x03, 0xd1, 0xad, 0x99, 0x44, 0xa7, 0xd9, 0x56,
		0x3d, 0x59, 0x06, 0x3c, 0x25, 0xf3, 0xfc, 0x1f, 0xdc, 0x2a,
	};
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr = NULL;
	struct ibv_wq *wq = NULL;
	struct ibv_rwq_ind_table *tbl = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_wq_init_attr wa;
	struct ibv_wq_attr wm;
	struct ibv_rwq_ind_table_init_attr ta;
	struct ibv_qp_init_attr_ex qa;
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("create_cq", NULL);
	if (!pd || !cq) {
		skip("wq_rss", "no-pd-or-cq");
		destroy_cq_step("destroy_cq", cq);
		dealloc_pd_step("dealloc_pd", pd);
		return;
	}
	mr = reg_mr_step("reg_mr", pd, buf, MR_LEN, ACCESS);

	memset(&wa, 0, sizeof(wa));
	wa.wq_type = IBV_WQT_RQ;
	wa.max_wr = MAX_WR;
	wa.max_sge = 1;
	wa.pd = pd;
	wa.cq = cq;
	CALLP(wq, "create_wq", ibv_create_wq(ctx, &wa));
	if (wq) {
		emit("@out create_wq max_wr=%u max_sge=%u wq_num=%u", wa.max_wr,
		     wa.max_sge, wq->wq_num);
		memset(&wm, 0, sizeof(wm));
		wm.attr_mask = IBV_WQ_ATTR_STATE;
		wm.wq_state = IBV_WQS_RDY;
		CALLI(rc, "modify_wq", ibv_modify_wq(wq, &wm));
		if (mr && wq->post_recv) {
			struct ibv_sge sge = { (uintptr_t)buf, 256, mr->lkey };
			struct ibv_recv_wr wr, *bad = NULL;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = 0x700;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			CALLI(rc, "post_wq_recv", ibv_post_wq_recv(wq, &wr, &bad));
		} else {
			skip("post_wq_recv", "no-mr-or-op");
		}

		memset(&ta, 0, sizeof(ta));
		ta.log_ind_tbl_size = 0;
		ta.ind_tbl = &wq;
		CALLP(tbl, "create_rwq_ind_table", ibv_create_rwq_ind_table(ctx, &ta));
	} else {
		skip("create_rwq_ind_table", "no-wq");
	}
	if (tbl) {
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_RAW_PACKET;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			       IBV_QP_INIT_ATTR_RX_HASH;
		qa.pd = pd;
		qa.rwq_ind_tbl = tbl;
		qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		qa.rx_hash_conf.rx_hash_key_len = sizeof(key);
		qa.rx_hash_conf.rx_hash_key = key;
		qa.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
						      IBV_RX_HASH_DST_IPV4;
		CALLP(qp, "create_qp RSS", ibv_create_qp_ex(ctx, &qa));
		if (qp)
			emit("@out create_qp RSS qp_num=%u", qp->qp_num);
	} else {
		skip("create_qp RSS", "no-ind-table");
	}
	destroy_qp_step("destroy_qp RSS", qp);
	if (tbl)
		CALLI(rc, "destroy_rwq_ind_table", ibv_destroy_rwq_ind_table(tbl));
	if (wq)
		CALLI(rc, "destroy_wq", ibv_destroy_wq(wq));
	dereg_mr_step("dereg_mr", mr);
	destroy_cq_step("destroy_cq", cq);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ------------------------------------------------------------------ dm */

static void sec_dm(void)
{
	struct ibv_pd *pd;
	struct ibv_dm *dm = NULL, *idm = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_alloc_dm_attr da;
	unsigned char back[64];
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	memset(&da, 0, sizeof(da));
	da.length = 64;
	da.log_align_req = 0;
	da.comp_mask = 0;
	CALLP(dm, "alloc_dm", ibv_alloc_dm(ctx, &da));
	if (dm) {
		if (dm->memcpy_to_dm)
			CALLI(rc, "memcpy_to_dm", ibv_memcpy_to_dm(dm, 0, buf, 64));
		if (dm->memcpy_from_dm) {
			memset(back, 0, sizeof(back));
			CALLI(rc, "memcpy_from_dm",
			      ibv_memcpy_from_dm(back, dm, 0, 64));
			if (!rc)
				emit("@out memcpy_from_dm same=%d",
				     !memcmp(back, buf, 64));
		}
		if (pd) {
			CALLP(mr, "reg_dm_mr",
			      ibv_reg_dm_mr(pd, dm, 0, 64,
					    IBV_ACCESS_ZERO_BASED |
					    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_WRITE));
			if (mr)
				emit("@out reg_dm_mr length=%zu lkey=%u rkey=%u",
				     mr->length, mr->lkey, mr->rkey);
		} else {
			skip("reg_dm_mr", "no-pd");
		}
#ifdef HAVE_DM_EXPORT_DMABUF
		{
			int fd;

			step("dm_export_dmabuf_fd");
			errno = 0;
			fd = ibv_dm_export_dmabuf_fd(dm);
			/* never print the descriptor itself */
			reti("dm_export_dmabuf_fd", fd >= 0 ? 0 : -1, errno);
			if (fd >= 0)
				close(fd);
		}
#endif
		CALLP(idm, "import_dm", ibv_import_dm(ctx, dm->handle));
		if (idm)
			CALLV("unimport_dm", ibv_unimport_dm(idm));
	} else {
		skip("memcpy_to_dm", "no-dm");
	}
	dereg_mr_step("dereg_mr dm", mr);
	if (dm)
		CALLI(rc, "free_dm", ibv_free_dm(dm));
	dealloc_pd_step("dealloc_pd", pd);
}

/* ------------------------------------------------------------ counters */

static void sec_counters(void)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp = NULL;
	struct ibv_counters *cnt = NULL;
	struct ibv_counters_init_attr ci;
	struct ibv_counter_attach_attr ca;
	struct ibv_flow *fl = NULL;
	union flow_buf f;
	uint64_t vals[2];
	int rc, att = -1;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("create_cq", NULL);
	if (pd && cq)
		qp = raw_qp(pd, cq);

	memset(&ci, 0, sizeof(ci));
	CALLP(cnt, "create_counters", ibv_create_counters(ctx, &ci));
	if (cnt) {
		memset(&ca, 0, sizeof(ca));
		ca.counter_desc = IBV_COUNTER_PACKETS;
		ca.index = 0;
		CALLI(att, "attach_counters_point_flow",
		      ibv_attach_counters_point_flow(cnt, &ca, NULL));
		ca.counter_desc = IBV_COUNTER_BYTES;
		ca.index = 1;
		CALLI(rc, "attach_counters_point_flow bytes",
		      ibv_attach_counters_point_flow(cnt, &ca, NULL));
	} else {
		skip("attach_counters_point_flow", "no-counters");
	}
	if (cnt && qp && !att) {
		CALLP(fl, "create_flow counters",
		      ibv_create_flow(qp, build_flow(&f, cnt)));
	} else {
		skip("create_flow counters", "missing-counters-or-qp");
	}
	if (cnt && fl) {
		memset(vals, 0, sizeof(vals));
		CALLI(rc, "read_counters",
		      ibv_read_counters(cnt, vals, 2, IBV_READ_COUNTERS_ATTR_PREFER_CACHED));
		if (!rc)
			emit("@out read_counters packets=%llu bytes=%llu",
			     (unsigned long long)vals[0],
			     (unsigned long long)vals[1]);
	} else {
		skip("read_counters", "no-flow");
	}
	if (fl)
		CALLI(rc, "destroy_flow counters", ibv_destroy_flow(fl));
	if (cnt)
		CALLI(rc, "destroy_counters", ibv_destroy_counters(cnt));
	destroy_qp_step("destroy_qp RAW_PACKET", qp);

#ifdef HAVE_COMP_CNTR
	{
		struct ibv_comp_cntr_caps caps;
		struct ibv_comp_cntr_init_attr ia;
		struct ibv_comp_cntr *cc = NULL;
		uint64_t v;

		memset(&caps, 0, sizeof(caps));
		CALLI(rc, "query_comp_cntr_caps", ibv_query_comp_cntr_caps(ctx, &caps));
		if (!rc)
			emit("@out query_comp_cntr_caps max_value=%llu max_counters=%u "
			     "supported_qp_attach_ops=%u",
			     (unsigned long long)caps.max_value, caps.max_counters,
			     caps.supported_qp_attach_ops);
		memset(&ia, 0, sizeof(ia));
		ia.type = IBV_COMP_CNTR_TYPE_WRS;
		CALLP(cc, "create_comp_cntr", ibv_create_comp_cntr(ctx, &ia));
		if (cc) {
			CALLI(rc, "set_comp_cntr", ibv_set_comp_cntr(cc, 5));
			CALLI(rc, "inc_comp_cntr", ibv_inc_comp_cntr(cc, 2));
			v = 0;
			CALLI(rc, "read_comp_cntr", ibv_read_comp_cntr(cc, &v));
			if (!rc)
				emit("@out read_comp_cntr value=%llu", (unsigned long long)v);
			CALLI(rc, "set_err_comp_cntr", ibv_set_err_comp_cntr(cc, 1));
			v = 0;
			CALLI(rc, "read_err_comp_cntr", ibv_read_err_comp_cntr(cc, &v));
			if (!rc)
				emit("@out read_err_comp_cntr value=%llu", (unsigned long long)v);
			{
				struct ibv_qp_attach_comp_cntr_attr aa;
				struct ibv_qp *cqp;

				/* (no PD or CQ: upstream's ibv_create_qp would
				 * dereference NULL) */
				cqp = pd && cq ? create_qp_step("create_qp comp_cntr UD", pd, cq, IBV_QPT_UD)
					       : NULL;
				if (cqp) {
					memset(&aa, 0, sizeof(aa));
					aa.op_mask = IBV_QP_ATTACH_COMP_CNTR_OP_SEND |
						     IBV_QP_ATTACH_COMP_CNTR_OP_RECV;
					CALLI(rc, "qp_attach_comp_cntr",
					      ibv_qp_attach_comp_cntr(cqp, cc, &aa));
					destroy_qp_step("destroy_qp comp_cntr UD", cqp);
				}
			}
			CALLI(rc, "destroy_comp_cntr", ibv_destroy_comp_cntr(cc));
		}
	}
#endif
	destroy_cq_step("destroy_cq", cq);
	dealloc_pd_step("dealloc_pd", pd);
}

/* ------------------------------------------------------------------ td */

static void sec_td(void)
{
	struct ibv_pd *pd, *ppd = NULL;
	struct ibv_td *td = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_td_init_attr ta;
	struct ibv_parent_domain_init_attr pa;
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	memset(&ta, 0, sizeof(ta));
	CALLP(td, "alloc_td", ibv_alloc_td(ctx, &ta));
	if (pd) {
		memset(&pa, 0, sizeof(pa));
		pa.pd = pd;
		pa.td = td;
		pa.comp_mask = 0;
		CALLP(ppd, "alloc_parent_domain", ibv_alloc_parent_domain(ctx, &pa));
	} else {
		skip("alloc_parent_domain", "no-pd");
	}
	if (ppd) {
		cq = create_cq_step("create_cq", NULL);
		if (cq)
			qp = create_qp_step("create_qp RC parent_domain", ppd, cq,
					    IBV_QPT_RC);
	}
	destroy_qp_step("destroy_qp RC parent_domain", qp);
	destroy_cq_step("destroy_cq", cq);
	dealloc_pd_step("dealloc_parent_domain", ppd);
	if (td)
		CALLI(rc, "dealloc_td", ibv_dealloc_td(td));
	dealloc_pd_step("dealloc_pd", pd);
}

/* -------------------------------------------------------------- refuse */

/*
 * What the kernel refuses: a destroy of an object that others still use
 * (EBUSY) and a completion vector the device does not have (EINVAL).  Each
 * such call is followed by "@want <E> [after <step>]": runner.py checks
 * that the stand-in answered it so wherever the call reached it (a
 * provider that refuses it itself, or has no such verb, does not), and
 * where the object in use was made by a command (the "after" step reached
 * the stand-in: mlx4's and mthca's AHs on InfiniBand are the provider's
 * own, the kernel knows none).  After a refusal the objects are destroyed
 * in the right order.  Should a destroy not be refused (a stand-in without
 * the kernel's references, or a disassociated device whose destroys
 * RDMAV_ALLOW_DISASSOC_DESTROY lets succeed), the object is gone and its
 * users point at freed memory in the provider: the case stops there and
 * leaves them as they are.
 */
static void refusal(int e, const char *after)
{
	if (after)
		emit("@want %s after %s", errname(e), after);
	else
		emit("@want %s", errname(e));
}

/*
 * Providers whose destroy frees the object whatever the kernel answers
 * (the same with either library): after the kernel's refusal the object
 * is gone on the provider's side (and stays in the kernel until the
 * device is closed), so it is not used again.
 */
static int frees_when_refused(const char *verb)
{
	static const struct { const char *prov, *verb; } t[] = {
		/* unmaps the queues and frees the QP before the answer counts */
		{ "ocrdma", "destroy_qp" },
		/* the XRCD's memory is freed though the command failed */
		{ "qedr", "close_xrcd" },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strncmp(devname_, t[i].prov, strlen(t[i].prov)) &&
		    !strcmp(verb, t[i].verb))
			return 1;
	return 0;
}

/* A destroy the kernel refuses (EBUSY) while the object made by step
 * `after` uses `obj`; when it is gone all the same, `obj` is cleared, and
 * when it was not even refused the case (a void function) ends. */
#define REFUSE_DESTROY(name, verb, expr, obj, after) do {		\
	int r_;								\
	CALLI(r_, (name), (expr));					\
	refusal(EBUSY, (after));					\
	if (!r_ || frees_when_refused(verb))				\
		(obj) = NULL;						\
	if (!r_) {							\
		skip((name), "destroyed-though-in-use");		\
		return;							\
	}								\
} while (0)

static void refuse_pd_mr(void)
{
	struct ibv_pd *xpd;
	struct ibv_mr *mr;

	/* a PD with an MR */
	CALLP(xpd, "refuse alloc_pd mr", ibv_alloc_pd(ctx));
	if (xpd && (mr = reg_mr_step("refuse reg_mr", xpd, buf, MR_LEN, ACCESS))) {
		REFUSE_DESTROY("refuse dealloc_pd with mr", "dealloc_pd", ibv_dealloc_pd(xpd), xpd,
			       "refuse reg_mr");
		dereg_mr_step("refuse dereg_mr", mr);
	}
	dealloc_pd_step("refuse dealloc_pd mr", xpd);
}

static void refuse_pd_mw(void)
{
	struct ibv_pd *xpd;
	struct ibv_mw *mw = NULL;
	int rc;

	/* a PD with an MW */
	CALLP(xpd, "refuse alloc_pd mw", ibv_alloc_pd(ctx));
	if (xpd)
		CALLP(mw, "refuse alloc_mw", ibv_alloc_mw(xpd, IBV_MW_TYPE_1));
	if (mw) {
		REFUSE_DESTROY("refuse dealloc_pd with mw", "dealloc_pd", ibv_dealloc_pd(xpd), xpd,
			       "refuse alloc_mw");
		CALLI(rc, "refuse dealloc_mw", ibv_dealloc_mw(mw));
	}
	dealloc_pd_step("refuse dealloc_pd mw", xpd);
}

static void refuse_pd_ah(void)
{
	struct ibv_pd *xpd;
	struct ibv_ah *ah = NULL;
	struct ibv_ah_attr aa;

	/* a PD with an AH */
	CALLP(xpd, "refuse alloc_pd ah", ibv_alloc_pd(ctx));
	fill_ah(&aa, is_eth());
	if (xpd)
		CALLP(ah, "refuse create_ah", ibv_create_ah(xpd, &aa));
	if (ah) {
		REFUSE_DESTROY("refuse dealloc_pd with ah", "dealloc_pd", ibv_dealloc_pd(xpd), xpd,
			       "refuse create_ah");
		destroy_ah_step("refuse destroy_ah", ah);
	}
	dealloc_pd_step("refuse dealloc_pd ah", xpd);
}

/* a PD with an SRQ */
static void refuse_pd_srq(void)
{
	struct ibv_pd *xpd;
	struct ibv_srq *srq = NULL;
	struct ibv_srq_init_attr sa;
	int rc;

	CALLP(xpd, "refuse alloc_pd srq", ibv_alloc_pd(ctx));
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = MAX_WR;
	sa.attr.max_sge = 1;
	if (xpd)
		CALLP(srq, "refuse create_srq", ibv_create_srq(xpd, &sa));
	if (srq) {
		REFUSE_DESTROY("refuse dealloc_pd with srq", "dealloc_pd", ibv_dealloc_pd(xpd), xpd,
			       "refuse create_srq");
		CALLI(rc, "refuse destroy_srq", ibv_destroy_srq(srq));
	}
	dealloc_pd_step("refuse dealloc_pd srq", xpd);
}

/* an SRQ with a QP */
static void refuse_srq_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr qa;
	struct ibv_qp *qp = NULL;
	int rc;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = MAX_WR;
	sa.attr.max_sge = 1;
	CALLP(srq, "refuse create_srq qp", ibv_create_srq(pd, &sa));
	if (!srq)
		return;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = MAX_WR;
	qa.cap.max_send_sge = 1;
	CALLP(qp, "refuse create_qp srq", ibv_create_qp(pd, &qa));
	if (qp) {
		REFUSE_DESTROY("refuse destroy_srq with qp", "destroy_srq", ibv_destroy_srq(srq), srq,
			       "refuse create_qp srq");
		destroy_qp_step("refuse destroy_qp srq", qp);
	}
	if (srq)
		CALLI(rc, "refuse destroy_srq qp", ibv_destroy_srq(srq));
}

/* a CQ with a QP */
static void refuse_cq_qp(struct ibv_pd *pd)
{
	struct ibv_cq *xcq;
	struct ibv_qp *qp;

	xcq = create_cq_step("refuse create_cq qp", NULL);
	if (!xcq)
		return;
	qp = create_qp_step("refuse create_qp RC cq", pd, xcq, IBV_QPT_RC);
	if (qp) {
		REFUSE_DESTROY("refuse destroy_cq with qp", "destroy_cq", ibv_destroy_cq(xcq), xcq,
			       "refuse create_qp RC cq");
		destroy_qp_step("refuse destroy_qp RC cq", qp);
	}
	destroy_cq_step("refuse destroy_cq qp", xcq);
}

/* a PD with a QP */
static void refuse_pd_qp(struct ibv_cq *cq)
{
	struct ibv_pd *xpd;
	struct ibv_qp *qp;

	CALLP(xpd, "refuse alloc_pd qp", ibv_alloc_pd(ctx));
	if (!xpd)
		return;
	qp = create_qp_step("refuse create_qp RC pd", xpd, cq, IBV_QPT_RC);
	if (qp) {
		REFUSE_DESTROY("refuse dealloc_pd with qp", "dealloc_pd", ibv_dealloc_pd(xpd), xpd,
			       "refuse create_qp RC pd");
		destroy_qp_step("refuse destroy_qp RC pd", qp);
	}
	dealloc_pd_step("refuse dealloc_pd qp", xpd);
}

static void refuse_mcast(struct ibv_pd *pd, struct ibv_cq *cq)
{
	/* a multicast group: ff0e::1:ff00:1 on LID 0xc001 */
	static const uint8_t mgid[16] = { 0xff, 0x0e, 0, 0, 0, 0, 0, 0,
					  0, 0, 0, 1, 0xff, 0, 0, 1 };
	struct ibv_qp *qp;
	union ibv_gid g;
	int rc;

	/* a UD QP with a multicast group attached */
	qp = create_qp_step("refuse create_qp UD", pd, cq, IBV_QPT_UD);
	if (qp) {
		memcpy(g.raw, mgid, 16);
		CALLI(rc, "refuse attach_mcast", ibv_attach_mcast(qp, &g, 0xc001));
		if (!rc) {
			REFUSE_DESTROY("refuse destroy_qp with mcast", "destroy_qp", ibv_destroy_qp(qp), qp,
				       "refuse attach_mcast");
			if (qp)
				CALLI(rc, "refuse detach_mcast", ibv_detach_mcast(qp, &g, 0xc001));
		}
		destroy_qp_step("refuse destroy_qp UD", qp);
	}
}

static struct ibv_xrcd *xrcd_step(const char *name)
{
	struct ibv_xrcd_init_attr xa;
	struct ibv_xrcd *xrcd;

	memset(&xa, 0, sizeof(xa));
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	CALLP(xrcd, name, ibv_open_xrcd(ctx, &xa));
	return xrcd;
}

static struct ibv_srq *xsrq_step(const char *name, struct ibv_pd *pd, struct ibv_cq *cq,
				 struct ibv_xrcd *xrcd)
{
	struct ibv_srq_init_attr_ex sa;
	struct ibv_srq *srq;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = MAX_WR;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = pd;
	sa.cq = cq;
	sa.xrcd = xrcd;
	CALLP(srq, name, ibv_create_srq_ex(ctx, &sa));
	return srq;
}

/* an XRCD with an XRC SRQ */
static void refuse_xrcd_srq(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	int rc;

	xrcd = xrcd_step("refuse open_xrcd srq");
	if (!xrcd)
		return;
	srq = xsrq_step("refuse create_srq_ex XRC", pd, cq, xrcd);
	if (srq) {
		REFUSE_DESTROY("refuse close_xrcd with srq", "close_xrcd", ibv_close_xrcd(xrcd), xrcd,
			       "refuse create_srq_ex XRC");
		CALLI(rc, "refuse destroy_srq XRC", ibv_destroy_srq(srq));
	}
	if (xrcd)
		CALLI(rc, "refuse close_xrcd srq", ibv_close_xrcd(xrcd));
}

/* a CQ with an XRC SRQ */
static void refuse_cq_xsrq(struct ibv_pd *pd)
{
	struct ibv_xrcd *xrcd;
	struct ibv_cq *xcq;
	struct ibv_srq *srq;
	int rc;

	xrcd = xrcd_step("refuse open_xrcd cq");
	if (!xrcd)
		return;
	xcq = create_cq_step("refuse create_cq xrc", NULL);
	if (xcq) {
		srq = xsrq_step("refuse create_srq_ex XRC cq", pd, xcq, xrcd);
		if (srq) {
			REFUSE_DESTROY("refuse destroy_cq with xrc srq", "destroy_cq", ibv_destroy_cq(xcq),
				       xcq, "refuse create_srq_ex XRC cq");
			CALLI(rc, "refuse destroy_srq XRC cq", ibv_destroy_srq(srq));
		}
		destroy_cq_step("refuse destroy_cq xrc", xcq);
	}
	CALLI(rc, "refuse close_xrcd cq", ibv_close_xrcd(xrcd));
}

/* an XRCD with an XRC receive QP */
static void refuse_xrcd_qp(void)
{
	struct ibv_xrcd *xrcd;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp *qp;
	int rc;

	xrcd = xrcd_step("refuse open_xrcd qp");
	if (!xrcd)
		return;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = xrcd;
	CALLP(qp, "refuse create_qp XRC_RECV", ibv_create_qp_ex(ctx, &qa));
	if (qp) {
		REFUSE_DESTROY("refuse close_xrcd with qp", "close_xrcd", ibv_close_xrcd(xrcd), xrcd,
			       "refuse create_qp XRC_RECV");
		destroy_qp_step("refuse destroy_qp XRC_RECV", qp);
	}
	if (xrcd)
		CALLI(rc, "refuse close_xrcd qp", ibv_close_xrcd(xrcd));
}

static struct ibv_wq *wq_step(const char *name, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_wq_init_attr wa;
	struct ibv_wq *wq;

	memset(&wa, 0, sizeof(wa));
	wa.wq_type = IBV_WQT_RQ;
	wa.max_wr = MAX_WR;
	wa.max_sge = 1;
	wa.pd = pd;
	wa.cq = cq;
	CALLP(wq, name, ibv_create_wq(ctx, &wa));
	return wq;
}

static struct ibv_rwq_ind_table *tbl_step(const char *name, struct ibv_wq *wq)
{
	struct ibv_rwq_ind_table_init_attr ta;
	struct ibv_rwq_ind_table *tbl;

	memset(&ta, 0, sizeof(ta));
	ta.log_ind_tbl_size = 0;
	ta.ind_tbl = &wq;
	CALLP(tbl, name, ibv_create_rwq_ind_table(ctx, &ta));
	return tbl;
}

/* a CQ with a WQ */
static void refuse_cq_wq(struct ibv_pd *pd)
{
	struct ibv_cq *xcq;
	struct ibv_wq *wq;
	int rc;

	xcq = create_cq_step("refuse create_cq wq", NULL);
	if (!xcq)
		return;
	wq = wq_step("refuse create_wq cq", pd, xcq);
	if (wq) {
		REFUSE_DESTROY("refuse destroy_cq with wq", "destroy_cq", ibv_destroy_cq(xcq), xcq,
			       "refuse create_wq cq");
		CALLI(rc, "refuse destroy_wq cq", ibv_destroy_wq(wq));
	}
	destroy_cq_step("refuse destroy_cq wq", xcq);
}

/* a PD with a WQ */
static void refuse_pd_wq(struct ibv_cq *cq)
{
	struct ibv_pd *xpd;
	struct ibv_wq *wq;
	int rc;

	CALLP(xpd, "refuse alloc_pd wq", ibv_alloc_pd(ctx));
	if (!xpd)
		return;
	wq = wq_step("refuse create_wq pd", xpd, cq);
	if (wq) {
		REFUSE_DESTROY("refuse dealloc_pd with wq", "dealloc_pd", ibv_dealloc_pd(xpd), xpd,
			       "refuse create_wq pd");
		CALLI(rc, "refuse destroy_wq pd", ibv_destroy_wq(wq));
	}
	dealloc_pd_step("refuse dealloc_pd wq", xpd);
}

/* a WQ in an indirection table, and the table with an RSS QP */
static void refuse_wq_tbl(struct ibv_pd *pd, struct ibv_cq *cq, int with_qp)
{
	static uint8_t key[40] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	const char *tn = with_qp ? "qp" : "wq";
	struct ibv_wq *wq;
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp *qp;
	int rc;

	wq = wq_step(N("refuse create_wq table %s", tn), pd, cq);
	if (!wq)
		return;
	tbl = tbl_step(N("refuse create_rwq_ind_table %s", tn), wq);
	if (tbl && !with_qp) {
		REFUSE_DESTROY("refuse destroy_wq in table", "destroy_wq", ibv_destroy_wq(wq), wq,
			       "refuse create_rwq_ind_table wq");
	} else if (tbl) {
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_RAW_PACKET;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			       IBV_QP_INIT_ATTR_RX_HASH;
		qa.pd = pd;
		qa.rwq_ind_tbl = tbl;
		qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		qa.rx_hash_conf.rx_hash_key_len = sizeof(key);
		qa.rx_hash_conf.rx_hash_key = key;
		qa.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
						      IBV_RX_HASH_DST_IPV4;
		CALLP(qp, "refuse create_qp RSS", ibv_create_qp_ex(ctx, &qa));
		if (qp) {
			REFUSE_DESTROY("refuse destroy_rwq_ind_table with qp", "destroy_rwq_ind_table",
				       ibv_destroy_rwq_ind_table(tbl), tbl, "refuse create_qp RSS");
			destroy_qp_step("refuse destroy_qp RSS", qp);
		}
	}
	if (tbl)
		CALLI(rc, N("refuse destroy_rwq_ind_table %s", tn), ibv_destroy_rwq_ind_table(tbl));
	if (wq)
		CALLI(rc, N("refuse destroy_wq table %s", tn), ibv_destroy_wq(wq));
}

/* a QP with a flow (with_counters: counters the flow counts into) */
static void refuse_flow(struct ibv_pd *pd, struct ibv_cq *cq, int with_counters)
{
	const char *tn = with_counters ? "counters" : "qp";
	struct ibv_qp *qp;
	struct ibv_flow *fl = NULL;
	struct ibv_counters *cnt = NULL;
	struct ibv_counters_init_attr ci;
	struct ibv_counter_attach_attr ca;
	union flow_buf f;
	int rc = -1;

	qp = create_qp_step(N("refuse create_qp RAW_PACKET %s", tn), pd, cq, IBV_QPT_RAW_PACKET);
	if (!qp)
		return;
	modify_step(N("refuse modify_qp RAW_PACKET INIT %s", tn), qp, IBV_QPT_RAW_PACKET,
		    IBV_QPS_INIT, 0);
	if (with_counters) {
		memset(&ci, 0, sizeof(ci));
		CALLP(cnt, "refuse create_counters", ibv_create_counters(ctx, &ci));
		if (cnt) {
			memset(&ca, 0, sizeof(ca));
			ca.counter_desc = IBV_COUNTER_PACKETS;
			CALLI(rc, "refuse attach_counters_point_flow",
			      ibv_attach_counters_point_flow(cnt, &ca, NULL));
		}
	}
	if (!with_counters || (cnt && !rc))
		CALLP(fl, N("refuse create_flow %s", tn), ibv_create_flow(qp, build_flow(&f, cnt)));
	if (fl && with_counters)
		REFUSE_DESTROY("refuse destroy_counters with flow", "destroy_counters",
			       ibv_destroy_counters(cnt), cnt, "refuse create_flow counters");
	else if (fl)
		REFUSE_DESTROY("refuse destroy_qp with flow", "destroy_qp", ibv_destroy_qp(qp), qp,
			       "refuse create_flow qp");
	if (fl)
		CALLI(rc, N("refuse destroy_flow %s", tn), ibv_destroy_flow(fl));
	if (cnt)
		CALLI(rc, "refuse destroy_counters", ibv_destroy_counters(cnt));
	destroy_qp_step(N("refuse destroy_qp RAW_PACKET %s", tn), qp);
}

static void sec_refuse(void)
{
	struct ibv_cq_init_attr_ex cx;
	struct ibv_cq_ex *cqx;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *xcq;

	/* a completion vector one past the device's last */
	CALLP(xcq, "refuse create_cq comp_vector",
	      ibv_create_cq(ctx, CQE, NULL, NULL, ctx->num_comp_vectors));
	refusal(EINVAL, NULL);
	destroy_cq_step("refuse destroy_cq comp_vector", xcq);
	memset(&cx, 0, sizeof(cx));
	cx.cqe = CQE;
	cx.comp_vector = ctx->num_comp_vectors;
	cx.wc_flags = IBV_WC_STANDARD_FLAGS;
	CALLP(cqx, "refuse create_cq_ex comp_vector", ibv_create_cq_ex(ctx, &cx));
	refusal(EINVAL, NULL);
	if (cqx)
		destroy_cq_step("refuse destroy_cq_ex comp_vector", ibv_cq_ex_to_cq(cqx));

	CALLP(pd, "refuse alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("refuse create_cq", NULL);
	if (pd && cq) {
		refuse_pd_mr();
		refuse_pd_mw();
		refuse_pd_ah();
		refuse_pd_srq();
		refuse_srq_qp(pd, cq);
		refuse_cq_qp(pd);
		refuse_pd_qp(cq);
		refuse_mcast(pd, cq);
		refuse_xrcd_srq(pd, cq);
		refuse_cq_xsrq(pd);
		refuse_xrcd_qp();
		refuse_cq_wq(pd);
		refuse_pd_wq(cq);
		refuse_wq_tbl(pd, cq, 0);
		refuse_wq_tbl(pd, cq, 1);
		refuse_flow(pd, cq, 0);
		refuse_flow(pd, cq, 1);
	} else {
		skip("refuse", "no-pd-or-cq");
	}
	destroy_cq_step("refuse destroy_cq", cq);
	dealloc_pd_step("refuse dealloc_pd", pd);
}

/* -------------------------------------------------------------- limits */

static int name_has_prefix(const char *p)
{
	return !strncmp(devname_, p, strlen(p));
}

/*
 * The limits the device reports (query_device), as the kernel's drivers
 * enforce them: one past a limit is refused (EINVAL: "@want EINVAL"), the
 * limit itself is accepted ("@want OK"; asked only where what a provider
 * allocates for it stays small, LIMIT_AT_MAX entries).  runner.py checks
 * the stand-in's answer wherever the call reached it; many providers
 * check the same limits themselves and never send the command.
 */
#define LIMIT_AT_MAX 65536u

enum lim_what {
	LW_CQE, LW_CQE_EX, LW_RESIZE_CQ, LW_SEND_WR, LW_RECV_WR, LW_SEND_SGE, LW_RECV_SGE,
	LW_SRQ_WR, LW_SRQ_SGE, LW_MODIFY_SRQ_WR,
};

static const struct lim_case {
	const char *name;
	enum lim_what what;
} lim_cases[] = {
	{ "create_cq cqe", LW_CQE },
	{ "create_cq_ex cqe", LW_CQE_EX },
	{ "resize_cq cqe", LW_RESIZE_CQ },
	{ "create_qp max_send_wr", LW_SEND_WR },
	{ "create_qp max_recv_wr", LW_RECV_WR },
	{ "create_qp max_send_sge", LW_SEND_SGE },
	{ "create_qp max_recv_sge", LW_RECV_SGE },
	{ "create_srq max_wr", LW_SRQ_WR },
	{ "create_srq max_sge", LW_SRQ_SGE },
	{ "modify_srq max_wr", LW_MODIFY_SRQ_WR },
};

/* Where one past the reported limit is no refusal, only compared: devices
 * whose queue has more than query_device's figure (the smaller of the send
 * and receive sides, as the kernel reports max_qp_wr and max_sge), and
 * providers that ask for the limit instead (the kernel sees no excess). */
static int lim_wider(enum lim_what w)
{
	static const struct { const char *prov; enum lim_what what; } t[] = {
		{ "efa", LW_RECV_WR },	 /* 32768 receive WRs, 4096 send */
		{ "efa", LW_RECV_SGE },	 /* 3 receive SGEs, 2 send */
		{ "erdma", LW_SEND_SGE }, /* 6 send SGEs, 1 receive */
		{ "bnxt_re", LW_SEND_WR }, /* the provider lowers the WRs to max_qp_wr */
		{ "bnxt_re", LW_RECV_WR },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].what == w && name_has_prefix(t[i].prov))
			return 1;
	return 0;
}

/* "@want" after the call itself (NULL: nothing wanted, only compared) */
static void lim_want(const char *want)
{
	if (want)
		emit("@want %s", want);
}

static uint32_t lim_of(const struct ibv_device_attr *da, enum lim_what w)
{
	switch (w) {
	case LW_CQE: case LW_CQE_EX: case LW_RESIZE_CQ: return (uint32_t)da->max_cqe;
	case LW_SEND_WR: case LW_RECV_WR: return (uint32_t)da->max_qp_wr;
	case LW_SEND_SGE: case LW_RECV_SGE: return (uint32_t)da->max_sge;
	case LW_SRQ_WR: case LW_MODIFY_SRQ_WR: return (uint32_t)da->max_srq_wr;
	case LW_SRQ_SGE: return (uint32_t)da->max_srq_sge;
	}
	return 0;
}

/* A CQ of `v` entries (plain or extended), or one resized to `v`. */
static void lim_cq(const char *name, enum lim_what w, uint32_t v, const char *want)
{
	struct ibv_cq_init_attr_ex cx;
	struct ibv_cq_ex *cqx = NULL;
	struct ibv_cq *cq = NULL;
	int rc;

	if (w == LW_CQE) {
		CALLP(cq, name, ibv_create_cq(ctx, (int)v, NULL, NULL, 0));
	} else if (w == LW_CQE_EX) {
		memset(&cx, 0, sizeof(cx));
		cx.cqe = v;
		cx.wc_flags = IBV_WC_STANDARD_FLAGS;
		CALLP(cqx, name, ibv_create_cq_ex(ctx, &cx));
		cq = cqx ? ibv_cq_ex_to_cq(cqx) : NULL;
	} else {
		cq = create_cq_step(N("%s cq", name), NULL);
		if (!cq)
			return;
		CALLI(rc, name, ibv_resize_cq(cq, (int)v));
	}
	lim_want(want);
	destroy_cq_step(N("%s destroy_cq", name), cq);
}

/* A QP (UD on efa, which has no RC; RC elsewhere) with one capability at `v`. */
static void lim_qp(const char *name, enum lim_what w, uint32_t v, struct ibv_pd *pd, struct ibv_cq *cq,
		   const char *want)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = name_has_prefix("efa") ? IBV_QPT_UD : IBV_QPT_RC;
	a.cap.max_send_wr = w == LW_SEND_WR ? v : MAX_WR;
	a.cap.max_recv_wr = w == LW_RECV_WR ? v : MAX_WR;
	a.cap.max_send_sge = w == LW_SEND_SGE ? v : 1;
	a.cap.max_recv_sge = w == LW_RECV_SGE ? v : 1;
	CALLP(qp, name, ibv_create_qp(pd, &a));
	lim_want(want);
	destroy_qp_step(N("%s destroy_qp", name), qp);
}

/* An SRQ with max_wr or max_sge at `v`, or one whose max_wr is modified to `v`. */
static void lim_srq(const char *name, enum lim_what w, uint32_t v, struct ibv_pd *pd, const char *want)
{
	struct ibv_srq_init_attr sa;
	struct ibv_srq_attr ma;
	struct ibv_srq *srq;
	int rc;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = w == LW_SRQ_WR ? v : MAX_WR;
	sa.attr.max_sge = w == LW_SRQ_SGE ? v : 1;
	if (w == LW_MODIFY_SRQ_WR) {
		CALLP(srq, N("%s srq", name), ibv_create_srq(pd, &sa));
		if (!srq)
			return;
		memset(&ma, 0, sizeof(ma));
		ma.max_wr = v;
		CALLI(rc, name, ibv_modify_srq(srq, &ma, IBV_SRQ_MAX_WR));
	} else {
		CALLP(srq, name, ibv_create_srq(pd, &sa));
	}
	lim_want(want);
	if (srq)
		CALLI(rc, N("%s destroy_srq", name), ibv_destroy_srq(srq));
}

static void lim_try(const struct lim_case *c, uint32_t v, int over, struct ibv_pd *pd, struct ibv_cq *cq)
{
	const char *name = N("limits %s %s", c->name, over ? "over max" : "at max");
	const char *want = !over ? "OK" : lim_wider(c->what) ? NULL : "EINVAL";

	switch (c->what) {
	case LW_CQE: case LW_CQE_EX: case LW_RESIZE_CQ:
		lim_cq(name, c->what, v, want);
		break;
	case LW_SEND_WR: case LW_RECV_WR: case LW_SEND_SGE: case LW_RECV_SGE:
		lim_qp(name, c->what, v, pd, cq, want);
		break;
	case LW_SRQ_WR: case LW_SRQ_SGE: case LW_MODIFY_SRQ_WR:
		lim_srq(name, c->what, v, pd, want);
		break;
	}
}

/*
 * An MR one past max_mr_size, and one of max_mr_size itself: the drivers
 * that compare the length with it before they pin the memory refuse the
 * longer one (irdma, erdma, pvrdma: EINVAL; bnxt_re, siw: ENOMEM); the
 * others have no such check (a too long MR fails where the kernel pins
 * it, which the stand-in does not do: only compared).  Asked only where
 * the range stays inside the address space (max_mr_size below 2^46, the
 * MR at 2^44).  The range is not mapped: neither library touches an MR's
 * memory without fork support (ibv_fork_init), and the stand-in does not
 * pin it.
 */
#define MR_FAR_ADDR 0x100000000000ULL
#define MR_FAR_MAX (1ULL << 46)

static const char *mr_size_want(void)
{
	static const struct { const char *prov, *err; } t[] = {
		{ "irdma", "EINVAL" }, { "erdma", "EINVAL" }, { "vmw_pvrdma", "EINVAL" },
		{ "bnxt_re", "ENOMEM" }, { "siw", "ENOMEM" },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (name_has_prefix(t[i].prov))
			return t[i].err;
	return NULL;
}

static void lim_mr_size(struct ibv_pd *pd, uint64_t max)
{
	struct ibv_mr *mr;

	emit("@out limits max_mr_size=%llu", (unsigned long long)max);
	if (!max || max >= MR_FAR_MAX) {
		skip("limits reg_mr max_mr_size", "no-room-past-max_mr_size");
		return;
	}
	CALLP(mr, "limits reg_mr length at max",
	      ibv_reg_mr(pd, (void *)(uintptr_t)MR_FAR_ADDR, (size_t)max, IBV_ACCESS_LOCAL_WRITE));
	lim_want("OK");
	dereg_mr_step("limits reg_mr length at max dereg_mr", mr);
	CALLP(mr, "limits reg_mr length over max",
	      ibv_reg_mr(pd, (void *)(uintptr_t)MR_FAR_ADDR, (size_t)max + 1, IBV_ACCESS_LOCAL_WRITE));
	lim_want(mr_size_want());
	dereg_mr_step("limits reg_mr length over max dereg_mr", mr);
}

/*
 * The device's object counts (max_pd, max_cq, max_qp, max_srq, max_mr,
 * max_ah, max_mw): the stand-in reports the device's (far above what it
 * holds) unless STANDIN_MAX_<TYPE> names one, which this section sets to
 * COUNT_MAX for one type at a time: objects are made until there are
 * COUNT_MAX of that type (the limit itself, "@want OK"), then one more,
 * which the driver refuses (rxe's pools: EINVAL, ENOMEM for an MR; the
 * others' firmware, bitmap or counter: ENOMEM).  What the section holds
 * already (its PD and CQ, what providers keep: count_held) counts; a
 * create refused earlier than that ends the case.
 */
#define COUNT_MAX 4

enum cnt_what { CW_PD, CW_CQ, CW_QP, CW_SRQ, CW_MR, CW_AH, CW_MW };

static const struct cnt_case {
	const char *name, *env;
	enum cnt_what what;
} cnt_cases[] = {
	{ "pd", "STANDIN_MAX_PD", CW_PD }, { "cq", "STANDIN_MAX_CQ", CW_CQ },
	{ "qp", "STANDIN_MAX_QP", CW_QP }, { "srq", "STANDIN_MAX_SRQ", CW_SRQ },
	{ "mr", "STANDIN_MAX_MR", CW_MR }, { "ah", "STANDIN_MAX_AH", CW_AH },
	{ "mw", "STANDIN_MAX_MW", CW_MW },
};

static const char *count_want(enum cnt_what w)
{
	if (name_has_prefix("rxe"))
		return w == CW_MR ? "ENOMEM" : "EINVAL";
	return "ENOMEM";
}

static int count_of(const struct ibv_device_attr *da, enum cnt_what w)
{
	switch (w) {
	case CW_PD: return da->max_pd;
	case CW_CQ: return da->max_cq;
	case CW_QP: return da->max_qp;
	case CW_SRQ: return da->max_srq;
	case CW_MR: return da->max_mr;
	case CW_AH: return da->max_ah;
	case CW_MW: return da->max_mw;
	}
	return 0;
}

static void *count_make(const char *name, enum cnt_what w, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa;
	struct ibv_srq_init_attr sa;
	struct ibv_ah_attr aa;
	void *o = NULL;

	switch (w) {
	case CW_PD:
		CALLP(o, name, ibv_alloc_pd(ctx));
		break;
	case CW_CQ:
		CALLP(o, name, ibv_create_cq(ctx, CQE, NULL, NULL, 0));
		break;
	case CW_QP:
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.qp_type = name_has_prefix("efa") ? IBV_QPT_UD : IBV_QPT_RC;
		qa.cap.max_send_wr = MAX_WR;
		qa.cap.max_recv_wr = MAX_WR;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		CALLP(o, name, ibv_create_qp(pd, &qa));
		break;
	case CW_SRQ:
		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = MAX_WR;
		sa.attr.max_sge = 1;
		CALLP(o, name, ibv_create_srq(pd, &sa));
		break;
	case CW_MR:
		CALLP(o, name, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE));
		break;
	case CW_AH:
		fill_ah(&aa, is_eth());
		CALLP(o, name, ibv_create_ah(pd, &aa));
		break;
	case CW_MW:
		CALLP(o, name, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
		break;
	}
	return o;
}

static void count_free(const char *name, enum cnt_what w, void *o)
{
	int rc;

	switch (w) {
	case CW_PD: CALLI(rc, name, ibv_dealloc_pd(o)); break;
	case CW_CQ: CALLI(rc, name, ibv_destroy_cq(o)); break;
	case CW_QP: CALLI(rc, name, ibv_destroy_qp(o)); break;
	case CW_SRQ: CALLI(rc, name, ibv_destroy_srq(o)); break;
	case CW_MR: CALLI(rc, name, ibv_dereg_mr(o)); break;
	case CW_AH: CALLI(rc, name, ibv_destroy_ah(o)); break;
	case CW_MW: CALLI(rc, name, ibv_dealloc_mw(o)); break;
	}
}

/* The objects of type w that the "kernel" holds besides the section's
 * own PD and CQ. */
static int count_held(enum cnt_what w)
{
	static const struct { const char *prov; enum cnt_what what; } t[] = {
		/* the provider's own PD, made with the context */
		{ "irdma", CW_PD }, { "mthca", CW_PD },
		/* the section's CQ's ring, registered as an MR */
		{ "mthca", CW_MR },
		/* the refuse section's QP with a multicast group, which the
		 * provider frees although the kernel refused its destroy, and
		 * so the PD and CQ it uses */
		{ "ocrdma", CW_QP }, { "ocrdma", CW_PD }, { "ocrdma", CW_CQ },
	};
	size_t i;
	int n = 0;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		n += t[i].what == w && name_has_prefix(t[i].prov);
	return n;
}

static void lim_count(const struct cnt_case *c, struct ibv_pd *pd, struct ibv_cq *cq)
{
	int held = (c->what == CW_PD || c->what == CW_CQ) + count_held(c->what);
	void *objs[COUNT_MAX + 1];
	struct ibv_device_attr da;
	char v[16];
	int i, n = 0, rc;

	snprintf(v, sizeof(v), "%d", COUNT_MAX);
	setenv(c->env, v, 1);
	CALLI(rc, N("limits count %s query_device", c->name), ibv_query_device(ctx, &da));
	if (!rc)
		emit("@out limits count %s max=%d", c->name, count_of(&da, c->what));
	for (i = held; i <= COUNT_MAX; i++) {
		objs[n] = count_make(N("limits count %s %d of %d", c->name, i + 1, COUNT_MAX), c->what, pd,
				     cq);
		if (i == COUNT_MAX - 1)
			lim_want("OK");
		else if (i == COUNT_MAX)
			lim_want(count_want(c->what));
		if (!objs[n])
			break;
		n++;
	}
	while (n > 0) {
		n--;
		count_free(N("limits count %s destroy %d", c->name, n + held + 1), c->what, objs[n]);
	}
	unsetenv(c->env);
}

/* the workload runs with --faults (see main) */
static int fault_runs;

static void sec_limits(void)
{
	struct ibv_device_attr da;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	size_t i;
	int rc;

	CALLI(rc, "limits query_device", ibv_query_device(ctx, &da));
	if (rc) {
		skip("limits", "no-device-attributes");
		return;
	}
	emit("@out limits max_cqe=%d max_qp_wr=%d max_sge=%d max_srq_wr=%d max_srq_sge=%d", da.max_cqe,
	     da.max_qp_wr, da.max_sge, da.max_srq_wr, da.max_srq_sge);
	CALLP(pd, "limits alloc_pd", ibv_alloc_pd(ctx));
	cq = create_cq_step("limits create_cq", NULL);
	for (i = 0; pd && cq && i < sizeof(lim_cases) / sizeof(lim_cases[0]); i++) {
		const struct lim_case *c = &lim_cases[i];
		uint32_t l = lim_of(&da, c->what);

		if (!l) /* no such object on the device */
			continue;
		if (l <= LIMIT_AT_MAX)
			lim_try(c, l, 0, pd, cq);
		lim_try(c, l + 1, 1, pd, cq);
	}
	if (pd && cq)
		lim_mr_size(pd, da.max_mr_size);
	for (i = 0; pd && cq && i < sizeof(cnt_cases) / sizeof(cnt_cases[0]); i++)
		lim_count(&cnt_cases[i], pd, cq);
	destroy_cq_step("limits destroy_cq", cq);
	dealloc_pd_step("limits dealloc_pd", pd);
}

/* -------------------------------------------------------------- advise */

static void sec_advise(void)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr = NULL;
	int rc;

	CALLP(pd, "alloc_pd", ibv_alloc_pd(ctx));
	if (!pd) {
		skip("advise", "no-pd");
		return;
	}
	mr = reg_mr_step("reg_mr odp", pd, buf, MR_LEN,
			 ACCESS | IBV_ACCESS_ON_DEMAND);
	if (mr) {
		struct ibv_sge sge = { (uintptr_t)buf, MR_LEN, mr->lkey };

		CALLI(rc, "advise_mr",
		      ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	} else {
		skip("advise_mr", "no-odp-mr");
	}
	dereg_mr_step("dereg_mr odp", mr);
	dealloc_pd_step("dealloc_pd", pd);
}

/* --------------------------------------------------------------- async */

static void sec_async(void)
{
	struct pollfd p = { ctx->async_fd, POLLIN, 0 };
	struct ibv_async_event ev;
	int pr, rc, i;

	/* Every event queued (the port's, and IBV_EVENT_DEVICE_FATAL after a
	 * disassociation): the first wait may take 200 ms, the next none. */
	for (i = 0; i < 4; i++) {
		CALLN(pr, N("poll_async_fd %d", i), poll(&p, 1, i ? 0 : 200));
		if (pr <= 0) {
			skip(N("get_async_event %d", i), "not-readable");
			break;
		}
		CALLI(rc, N("get_async_event %d", i), ibv_get_async_event(ctx, &ev));
		if (rc)
			break;
		emit("@out get_async_event %d event_type=%d (%s)", i, (int)ev.event_type,
		     ibv_event_type_str(ev.event_type));
		CALLV(N("ack_async_event %d", i), ibv_ack_async_event(&ev));
	}
}

/* ------------------------------------------------------------------ dv */

static void *dl_open(const char *soname)
{
	void *h;

	step(N("dlopen %s", soname));
	h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	retp(N("dlopen %s", soname), h != NULL, ENOENT);
	return h;
}

#define DLSYM(h, fn) ((__typeof__(&fn))dlsym((h), #fn))

/* common objects the dv calls are made on */
struct dv_objs {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_wq *wq;
	struct ibv_ah *ah;
	struct ibv_dm *dm;
};

static void dv_objs_create(struct dv_objs *o, int with_dm)
{
	struct ibv_srq_init_attr sa;
	struct ibv_wq_init_attr wa;
	struct ibv_alloc_dm_attr da;
	struct ibv_ah_attr aa;

	memset(o, 0, sizeof(*o));
	CALLP(o->pd, "dv alloc_pd", ibv_alloc_pd(ctx));
	o->cq = create_cq_step("dv create_cq", NULL);
	if (!o->pd)
		return;
	o->mr = reg_mr_step("dv reg_mr", o->pd, buf, MR_LEN, ACCESS);
	if (o->cq)
		o->qp = create_qp_step("dv create_qp RC", o->pd, o->cq, IBV_QPT_RC);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = MAX_WR;
	sa.attr.max_sge = 1;
	CALLP(o->srq, "dv create_srq", ibv_create_srq(o->pd, &sa));
	if (o->cq) {
		memset(&wa, 0, sizeof(wa));
		wa.wq_type = IBV_WQT_RQ;
		wa.max_wr = MAX_WR;
		wa.max_sge = 1;
		wa.pd = o->pd;
		wa.cq = o->cq;
		CALLP(o->wq, "dv create_wq", ibv_create_wq(ctx, &wa));
	}
	fill_ah(&aa, 1);
	CALLP(o->ah, "dv create_ah grh", ibv_create_ah(o->pd, &aa));
	if (with_dm) {
		memset(&da, 0, sizeof(da));
		da.length = 64;
		CALLP(o->dm, "dv alloc_dm", ibv_alloc_dm(ctx, &da));
	}
}

static void dv_objs_destroy(struct dv_objs *o)
{
	int rc;

	if (o->dm)
		CALLI(rc, "dv free_dm", ibv_free_dm(o->dm));
	destroy_ah_step("dv destroy_ah grh", o->ah);
	if (o->wq)
		CALLI(rc, "dv destroy_wq", ibv_destroy_wq(o->wq));
	if (o->srq)
		CALLI(rc, "dv destroy_srq", ibv_destroy_srq(o->srq));
	destroy_qp_step("dv destroy_qp RC", o->qp);
	dereg_mr_step("dv dereg_mr", o->mr);
	destroy_cq_step("dv destroy_cq", o->cq);
	dealloc_pd_step("dv dealloc_pd", o->pd);
}

static void dv_mlx5(void *h)
{
	__typeof__(&mlx5dv_is_supported) is_supported = DLSYM(h, mlx5dv_is_supported);
	__typeof__(&mlx5dv_query_device) query_device = DLSYM(h, mlx5dv_query_device);
	__typeof__(&mlx5dv_init_obj) init_obj = DLSYM(h, mlx5dv_init_obj);
	__typeof__(&mlx5dv_create_cq) create_cq = DLSYM(h, mlx5dv_create_cq);
	__typeof__(&mlx5dv_create_qp) create_qp = DLSYM(h, mlx5dv_create_qp);
	__typeof__(&_mlx5dv_query_port) query_port = DLSYM(h, _mlx5dv_query_port);
	__typeof__(&mlx5dv_open_device) open_device = DLSYM(h, mlx5dv_open_device);
	__typeof__(&mlx5dv_devx_general_cmd) general_cmd = DLSYM(h, mlx5dv_devx_general_cmd);
	__typeof__(&mlx5dv_devx_obj_create) obj_create = DLSYM(h, mlx5dv_devx_obj_create);
	__typeof__(&mlx5dv_devx_obj_destroy) obj_destroy = DLSYM(h, mlx5dv_devx_obj_destroy);
	__typeof__(&mlx5dv_alloc_var) alloc_var = DLSYM(h, mlx5dv_alloc_var);
	__typeof__(&mlx5dv_free_var) free_var = DLSYM(h, mlx5dv_free_var);
	__typeof__(&mlx5dv_devx_alloc_uar) alloc_uar = DLSYM(h, mlx5dv_devx_alloc_uar);
	__typeof__(&mlx5dv_devx_free_uar) free_uar = DLSYM(h, mlx5dv_devx_free_uar);
	struct dv_objs o;
	int rc, mine = name_has_prefix("mlx5_");

	if (is_supported) {
		int sup;

		CALLI(sup, "mlx5dv_is_supported", (int)is_supported(dev));
		mine = mine || sup;
	}
	if (!mine) {
		skip("dv mlx5", "not-an-mlx5-device");
		return;
	}

	if (query_device) {
		struct mlx5dv_context c;

		memset(&c, 0, sizeof(c));
		c.comp_mask = MLX5DV_CONTEXT_MASK_CQE_COMPRESION |
			      MLX5DV_CONTEXT_MASK_SWP |
			      MLX5DV_CONTEXT_MASK_STRIDING_RQ |
			      MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS |
			      MLX5DV_CONTEXT_MASK_DYN_BFREGS |
			      MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS |
			      MLX5DV_CONTEXT_MASK_DC_ODP_CAPS |
			      MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS;
		CALLI(rc, "mlx5dv_query_device", query_device(ctx, &c));
		if (!rc)
			emit("@out mlx5dv_query_device version=%u flags=%llu "
			     "comp_mask=%llu cqe_comp_max_num=%u sw_parsing_caps=%u "
			     "tunnel_offloads_caps=%u max_dynamic_bfregs=%u "
			     "num_lag_ports=%u",
			     c.version, (unsigned long long)c.flags,
			     (unsigned long long)c.comp_mask,
			     c.cqe_comp_caps.max_num,
			     c.sw_parsing_caps.sw_parsing_offloads,
			     c.tunnel_offloads_caps, c.max_dynamic_bfregs,
			     c.num_lag_ports);
	} else {
		skip("mlx5dv_query_device", "no-symbol");
	}

	if (query_port) {
		struct mlx5dv_port pi;

		memset(&pi, 0, sizeof(pi));
		CALLI(rc, N("mlx5dv_query_port %d", PORT),
		      query_port(ctx, PORT, &pi, sizeof(pi)));
		if (!rc)
			emit("@out mlx5dv_query_port %d flags=%llu vport=%u "
			     "vport_vhca_id=%u esw_owner_vhca_id=%u",
			     PORT, (unsigned long long)pi.flags, pi.vport,
			     pi.vport_vhca_id, pi.esw_owner_vhca_id);
	}

	dv_objs_create(&o, 1);
	if (init_obj) {
		struct mlx5dv_obj dv;
		struct mlx5dv_qp dqp;
		struct mlx5dv_cq dcq;
		struct mlx5dv_srq dsrq;
		struct mlx5dv_rwq drwq;
		struct mlx5dv_dm ddm;
		struct mlx5dv_ah dah;
		struct mlx5dv_pd dpd;

		if (o.qp) {
			memset(&dv, 0, sizeof(dv));
			memset(&dqp, 0, sizeof(dqp));
			dv.qp.in = o.qp;
			dv.qp.out = &dqp;
			CALLI(rc, "mlx5dv_init_obj QP", init_obj(&dv, MLX5DV_OBJ_QP));
			if (!rc)
				emit("@out mlx5dv_init_obj QP sq_wqe_cnt=%u sq_stride=%u "
				     "rq_wqe_cnt=%u rq_stride=%u bf_size=%u",
				     dqp.sq.wqe_cnt, dqp.sq.stride, dqp.rq.wqe_cnt,
				     dqp.rq.stride, dqp.bf.size);
		}
		if (o.cq) {
			memset(&dv, 0, sizeof(dv));
			memset(&dcq, 0, sizeof(dcq));
			dv.cq.in = o.cq;
			dv.cq.out = &dcq;
			CALLI(rc, "mlx5dv_init_obj CQ", init_obj(&dv, MLX5DV_OBJ_CQ));
			if (!rc)
				emit("@out mlx5dv_init_obj CQ cqe_cnt=%u cqe_size=%u cqn=%u",
				     dcq.cqe_cnt, dcq.cqe_size, dcq.cqn);
		}
		if (o.srq) {
			memset(&dv, 0, sizeof(dv));
			memset(&dsrq, 0, sizeof(dsrq));
			dv.srq.in = o.srq;
			dv.srq.out = &dsrq;
			CALLI(rc, "mlx5dv_init_obj SRQ", init_obj(&dv, MLX5DV_OBJ_SRQ));
			if (!rc)
				emit("@out mlx5dv_init_obj SRQ stride=%u head=%u tail=%u",
				     dsrq.stride, dsrq.head, dsrq.tail);
		}
		if (o.wq) {
			memset(&dv, 0, sizeof(dv));
			memset(&drwq, 0, sizeof(drwq));
			dv.rwq.in = o.wq;
			dv.rwq.out = &drwq;
			CALLI(rc, "mlx5dv_init_obj RWQ", init_obj(&dv, MLX5DV_OBJ_RWQ));
			if (!rc)
				emit("@out mlx5dv_init_obj RWQ wqe_cnt=%u stride=%u",
				     drwq.wqe_cnt, drwq.stride);
		}
		if (o.dm) {
			memset(&dv, 0, sizeof(dv));
			memset(&ddm, 0, sizeof(ddm));
			dv.dm.in = o.dm;
			dv.dm.out = &ddm;
			CALLI(rc, "mlx5dv_init_obj DM", init_obj(&dv, MLX5DV_OBJ_DM));
			if (!rc)
				emit("@out mlx5dv_init_obj DM length=%llu",
				     (unsigned long long)ddm.length);
		}
		if (o.ah) {
			memset(&dv, 0, sizeof(dv));
			memset(&dah, 0, sizeof(dah));
			dv.ah.in = o.ah;
			dv.ah.out = &dah;
			CALLI(rc, "mlx5dv_init_obj AH", init_obj(&dv, MLX5DV_OBJ_AH));
		}
		if (o.pd) {
			memset(&dv, 0, sizeof(dv));
			memset(&dpd, 0, sizeof(dpd));
			dv.pd.in = o.pd;
			dv.pd.out = &dpd;
			CALLI(rc, "mlx5dv_init_obj PD", init_obj(&dv, MLX5DV_OBJ_PD));
			if (!rc)
				emit("@out mlx5dv_init_obj PD pdn=%u", dpd.pdn);
		}
	}

	if (create_cq) {
		struct ibv_cq_init_attr_ex ca;
		struct mlx5dv_cq_init_attr ma;
		struct ibv_cq_ex *cqx;

		memset(&ca, 0, sizeof(ca));
		ca.cqe = CQE;
		ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
		memset(&ma, 0, sizeof(ma));
		CALLP(cqx, "mlx5dv_create_cq", create_cq(ctx, &ca, &ma));
		if (cqx) {
			out_cq("mlx5dv_create_cq", ibv_cq_ex_to_cq(cqx));
			destroy_cq_step("destroy_cq mlx5dv", ibv_cq_ex_to_cq(cqx));
		}
	}
	if (create_qp && o.pd && o.cq) {
		struct ibv_qp_init_attr_ex qa;
		struct mlx5dv_qp_init_attr ma;
		struct ibv_qp *qp;

		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_RC;
		qa.send_cq = o.cq;
		qa.recv_cq = o.cq;
		qa.cap.max_send_wr = MAX_WR;
		qa.cap.max_recv_wr = MAX_WR;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD;
		qa.pd = o.pd;
		memset(&ma, 0, sizeof(ma));
		ma.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
		ma.create_flags = 0;
		CALLP(qp, "mlx5dv_create_qp RC", create_qp(ctx, &qa, &ma));
		if (qp) {
			out_qp("mlx5dv_create_qp RC", qp, &qa.cap);
			destroy_qp_step("destroy_qp mlx5dv RC", qp);
		}
	}
	dv_objs_destroy(&o);

	if (open_device) {
		struct mlx5dv_context_attr ca;
		struct ibv_context *dctx;

		memset(&ca, 0, sizeof(ca));
		ca.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
		CALLP(dctx, "mlx5dv_open_device devx", open_device(dev, &ca));
		if (!dctx)
			return;
		if (general_cmd) {
			uint32_t in[4] = { htonl(0x100u << 16), 0, 0, 0 };
			uint32_t out[(0x10 + 0x1000) / 4];

			memset(out, 0, sizeof(out));
			CALLI(rc, "mlx5dv_devx_general_cmd QUERY_HCA_CAP",
			      general_cmd(dctx, in, sizeof(in), out, sizeof(out)));
			emit("@out mlx5dv_devx_general_cmd QUERY_HCA_CAP status=%u "
			     "syndrome=0x%08x", ntohl(out[0]) >> 24, ntohl(out[1]));
		}
		if (obj_create) {
			uint32_t in[4] = { htonl(0x800u << 16), 0, 0, 0 };
			uint32_t out[4];
			struct mlx5dv_devx_obj *obj;

			memset(out, 0, sizeof(out));
			CALLP(obj, "mlx5dv_devx_obj_create ALLOC_PD",
			      obj_create(dctx, in, sizeof(in), out, sizeof(out)));
			emit("@out mlx5dv_devx_obj_create ALLOC_PD status=%u",
			     ntohl(out[0]) >> 24);
			if (obj && obj_destroy)
				CALLI(rc, "mlx5dv_devx_obj_destroy", obj_destroy(obj));
		}
		if (alloc_var) {
			struct mlx5dv_var *var;

			CALLP(var, "mlx5dv_alloc_var", alloc_var(dctx, 0));
			if (var) {
				emit("@out mlx5dv_alloc_var page_id=%u length=%u",
				     var->page_id, var->length);
				if (free_var)
					CALLV("mlx5dv_free_var", free_var(var));
			}
		}
		if (alloc_uar) {
			struct mlx5dv_devx_uar *uar;

			CALLP(uar, "mlx5dv_devx_alloc_uar",
			      alloc_uar(dctx, MLX5DV_UAR_ALLOC_TYPE_BF));
			if (uar) {
				emit("@out mlx5dv_devx_alloc_uar page_id=%u",
				     uar->page_id);
				if (free_uar)
					CALLV("mlx5dv_devx_free_uar", free_uar(uar));
			}
		}
		CALLI(rc, "close_device mlx5dv", ibv_close_device(dctx));
	}
}

static void dv_mlx4(void *h)
{
	__typeof__(&mlx4dv_query_device) query_device = DLSYM(h, mlx4dv_query_device);
	__typeof__(&mlx4dv_init_obj) init_obj = DLSYM(h, mlx4dv_init_obj);
	struct dv_objs o;
	int rc;

	if (!name_has_prefix("mlx4_")) {
		skip("dv mlx4", "not-an-mlx4-device");
		return;
	}
	if (query_device) {
		struct mlx4dv_context c;

		memset(&c, 0, sizeof(c));
		CALLI(rc, "mlx4dv_query_device", query_device(ctx, &c));
		if (!rc)
			emit("@out mlx4dv_query_device version=%u max_inl_recv_sz=%u "
			     "comp_mask=%llu", c.version, c.max_inl_recv_sz,
			     (unsigned long long)c.comp_mask);
	}
	dv_objs_create(&o, 0);
	if (init_obj) {
		struct mlx4dv_obj dv;
		struct mlx4dv_qp dqp;
		struct mlx4dv_cq dcq;
		struct mlx4dv_srq dsrq;
		struct mlx4dv_rwq drwq;

		if (o.qp) {
			memset(&dv, 0, sizeof(dv));
			dv.qp.in = o.qp;
			dv.qp.out = &dqp;
			CALLI(rc, "mlx4dv_init_obj QP", init_obj(&dv, MLX4DV_OBJ_QP));
			if (!rc)
				emit("@out mlx4dv_init_obj QP sq_wqe_cnt=%u rq_wqe_cnt=%u",
				     dqp.sq.wqe_cnt, dqp.rq.wqe_cnt);
		}
		if (o.cq) {
			memset(&dv, 0, sizeof(dv));
			dv.cq.in = o.cq;
			dv.cq.out = &dcq;
			CALLI(rc, "mlx4dv_init_obj CQ", init_obj(&dv, MLX4DV_OBJ_CQ));
			if (!rc)
				emit("@out mlx4dv_init_obj CQ cqe_cnt=%u cqe_size=%u cqn=%u",
				     dcq.cqe_cnt, dcq.cqe_size, dcq.cqn);
		}
		if (o.srq) {
			memset(&dv, 0, sizeof(dv));
			dv.srq.in = o.srq;
			dv.srq.out = &dsrq;
			CALLI(rc, "mlx4dv_init_obj SRQ", init_obj(&dv, MLX4DV_OBJ_SRQ));
		}
		if (o.wq) {
			memset(&dv, 0, sizeof(dv));
			dv.rwq.in = o.wq;
			dv.rwq.out = &drwq;
			CALLI(rc, "mlx4dv_init_obj RWQ", init_obj(&dv, MLX4DV_OBJ_RWQ));
		}
	}
	dv_objs_destroy(&o);
}

static void dv_efa(void *h)
{
	__typeof__(&efadv_query_device) query_device = DLSYM(h, efadv_query_device);
	__typeof__(&efadv_create_qp_ex) create_qp_ex = DLSYM(h, efadv_create_qp_ex);
	__typeof__(&efadv_query_ah) query_ah = DLSYM(h, efadv_query_ah);
#ifdef HAVE_EFADV_QUERY_MR
	__typeof__(&efadv_query_mr) query_mr = DLSYM(h, efadv_query_mr);
#endif
	struct dv_objs o;
	int rc;

	if (!name_has_prefix("efa_")) {
		skip("dv efa", "not-an-efa-device");
		return;
	}
	if (query_device) {
		struct efadv_device_attr a;

		memset(&a, 0, sizeof(a));
		CALLI(rc, "efadv_query_device", query_device(ctx, &a, sizeof(a)));
		if (!rc)
			emit("@out efadv_query_device max_sq_wr=%u max_rq_wr=%u "
			     "max_sq_sge=%u max_rq_sge=%u inline_buf_size=%u "
			     "device_caps=%u max_rdma_size=%u", a.max_sq_wr,
			     a.max_rq_wr, a.max_sq_sge, a.max_rq_sge,
			     a.inline_buf_size, a.device_caps, a.max_rdma_size);
	}
	dv_objs_create(&o, 0);
	if (create_qp_ex && o.pd && o.cq) {
		struct ibv_qp_init_attr_ex qa;
		struct efadv_qp_init_attr ea;
		struct ibv_qp *qp;

		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_DRIVER;
		qa.send_cq = o.cq;
		qa.recv_cq = o.cq;
		qa.cap.max_send_wr = MAX_WR;
		qa.cap.max_recv_wr = MAX_WR;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.pd = o.pd;
		qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
		memset(&ea, 0, sizeof(ea));
		ea.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD;
		CALLP(qp, "efadv_create_qp_ex SRD",
		      create_qp_ex(ctx, &qa, &ea, sizeof(ea)));
		if (qp) {
			out_qp("efadv_create_qp_ex SRD", qp, &qa.cap);
			destroy_qp_step("destroy_qp efadv SRD", qp);
		}
	}
	if (query_ah && o.ah) {
		struct efadv_ah_attr a;

		memset(&a, 0, sizeof(a));
		CALLI(rc, "efadv_query_ah", query_ah(o.ah, &a, sizeof(a)));
		if (!rc)
			emit("@out efadv_query_ah ahn=%u", a.ahn);
	}
#ifdef HAVE_EFADV_QUERY_MR
	if (query_mr && o.mr) {
		struct efadv_mr_attr a;

		memset(&a, 0, sizeof(a));
		CALLI(rc, "efadv_query_mr", query_mr(o.mr, &a, sizeof(a)));
		if (!rc)
			emit("@out efadv_query_mr ic_id_validity=%u recv_ic_id=%u "
			     "rdma_read_ic_id=%u rdma_recv_ic_id=%u",
			     a.ic_id_validity, a.recv_ic_id, a.rdma_read_ic_id,
			     a.rdma_recv_ic_id);
	}
#endif
#ifdef HAVE_EFADV_CQ_EXT_MEM
	{
		/* A CQ on the application's dma-buf (rdma-core 65): the
		 * library sends CQ_CREATE's BUFFER_FD/OFFSET/LENGTH.  The
		 * stand-in does not look into the descriptor: /dev/null. */
		__typeof__(&efadv_create_cq) create_cq = DLSYM(h, efadv_create_cq);
		struct ibv_cq_init_attr_ex ca;
		struct efadv_cq_init_attr ea;
		struct ibv_cq_ex *xcq = NULL;
		void *mem = aligned_alloc(4096, 65536);
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (create_cq && mem && fd >= 0) {
			memset(&ca, 0, sizeof(ca));
			ca.cqe = 16;
			ca.wc_flags = IBV_WC_STANDARD_FLAGS;
			memset(&ea, 0, sizeof(ea));
			ea.flags = EFADV_CQ_INIT_FLAGS_EXT_MEM_DMABUF;
			ea.ext_mem_dmabuf.buffer = mem;
			ea.ext_mem_dmabuf.length = 65536;
			ea.ext_mem_dmabuf.offset = 0;
			ea.ext_mem_dmabuf.fd = fd;
			CALLP(xcq, "efadv_create_cq EXT_MEM_DMABUF", create_cq(ctx, &ca, &ea, sizeof(ea)));
			if (xcq)
				destroy_cq_step("destroy_cq EXT_MEM_DMABUF", ibv_cq_ex_to_cq(xcq));
		}
		if (fd >= 0)
			close(fd);
		free(mem);
	}
#endif
	dv_objs_destroy(&o);
}

static void *mana_alloc(size_t size, void *priv)
{
	void *p = NULL;

	(void)priv;
	if (posix_memalign(&p, 4096, size ? size : 1))
		return NULL;
	memset(p, 0, size);
	return p;
}

static void mana_free(void *ptr, void *priv)
{
	(void)priv;
	free(ptr);
}

static void dv_mana(void *h)
{
	__typeof__(&manadv_set_context_attr) set_attr = DLSYM(h, manadv_set_context_attr);
	__typeof__(&manadv_init_obj) init_obj = DLSYM(h, manadv_init_obj);
	struct dv_objs o;
	int rc;

	if (!name_has_prefix("mana_")) {
		skip("dv mana", "not-a-mana-device");
		return;
	}
	if (set_attr) {
		struct manadv_ctx_allocators al = { mana_alloc, mana_free, NULL };

		CALLI(rc, "manadv_set_context_attr BUF_ALLOCATORS",
		      set_attr(ctx, MANADV_CTX_ATTR_BUF_ALLOCATORS, &al));
	}
	dv_objs_create(&o, 0);
	if (init_obj) {
		struct manadv_obj dv;
		struct manadv_cq dcq;
		struct manadv_rwq drwq;
		struct manadv_qp dqp;

		if (o.cq) {
			memset(&dv, 0, sizeof(dv));
			dv.cq.in = o.cq;
			dv.cq.out = &dcq;
			CALLI(rc, "manadv_init_obj CQ", init_obj(&dv, MANADV_OBJ_CQ));
			if (!rc)
				emit("@out manadv_init_obj CQ count=%u cq_id=%u",
				     dcq.count, dcq.cq_id);
		}
		if (o.wq) {
			memset(&dv, 0, sizeof(dv));
			dv.rwq.in = o.wq;
			dv.rwq.out = &drwq;
			CALLI(rc, "manadv_init_obj RWQ", init_obj(&dv, MANADV_OBJ_RWQ));
			if (!rc)
				emit("@out manadv_init_obj RWQ count=%u size=%u wq_id=%u",
				     drwq.count, drwq.size, drwq.wq_id);
		}
		if (o.qp && o.qp->qp_type == IBV_QPT_RAW_PACKET) {
			memset(&dv, 0, sizeof(dv));
			dv.qp.in = o.qp;
			dv.qp.out = &dqp;
			CALLI(rc, "manadv_init_obj QP", init_obj(&dv, MANADV_OBJ_QP));
		}
	}
	dv_objs_destroy(&o);
}

#ifdef HAVE_HNSDV
static void dv_hns(void *h)
{
	__typeof__(&hnsdv_query_device) query_device = DLSYM(h, hnsdv_query_device);
	__typeof__(&hnsdv_create_qp) create_qp = DLSYM(h, hnsdv_create_qp);
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	int rc;

	if (!name_has_prefix("hns_")) {
		skip("dv hns", "not-an-hns-device");
		return;
	}
	if (query_device) {
		struct hnsdv_context c;

		memset(&c, 0, sizeof(c));
		c.comp_mask = HNSDV_CONTEXT_MASK_CONGEST_TYPE;
		CALLI(rc, "hnsdv_query_device", query_device(ctx, &c));
		if (!rc)
			emit("@out hnsdv_query_device comp_mask=%llu flags=%llu "
			     "congest_type=%u", (unsigned long long)c.comp_mask,
			     (unsigned long long)c.flags, c.congest_type);
	}
	if (create_qp) {
		CALLP(pd, "dv alloc_pd", ibv_alloc_pd(ctx));
		cq = create_cq_step("dv create_cq", NULL);
		if (pd && cq) {
			struct ibv_qp_init_attr_ex qa;
			struct hnsdv_qp_init_attr ha;
			struct ibv_qp *qp;

			memset(&qa, 0, sizeof(qa));
			qa.qp_type = IBV_QPT_RC;
			qa.send_cq = cq;
			qa.recv_cq = cq;
			qa.cap.max_send_wr = MAX_WR;
			qa.cap.max_recv_wr = MAX_WR;
			qa.cap.max_send_sge = 1;
			qa.cap.max_recv_sge = 1;
			qa.comp_mask = IBV_QP_INIT_ATTR_PD;
			qa.pd = pd;
			memset(&ha, 0, sizeof(ha));
			CALLP(qp, "hnsdv_create_qp RC", create_qp(ctx, &qa, &ha));
			if (qp) {
				out_qp("hnsdv_create_qp RC", qp, &qa.cap);
				destroy_qp_step("destroy_qp hnsdv RC", qp);
			}
		}
		destroy_cq_step("dv destroy_cq", cq);
		dealloc_pd_step("dv dealloc_pd", pd);
	}
}
#endif

static void sec_dv(void)
{
	void *h;

	/*
	 * Every dv object is destroyed before its library is closed; a
	 * provider the library itself loaded only loses a reference.
	 */
	h = dl_open("libmlx5.so.1");
	if (h) {
		dv_mlx5(h);
		dlclose(h);
	}
	h = dl_open("libmlx4.so.1");
	if (h) {
		dv_mlx4(h);
		dlclose(h);
	}
	h = dl_open("libefa.so.1");
	if (h) {
		dv_efa(h);
		dlclose(h);
	}
	h = dl_open("libmana.so.1");
	if (h) {
		dv_mana(h);
		dlclose(h);
	}
#ifdef HAVE_HNSDV
	h = dl_open("libhns.so.1");
	if (h) {
		dv_hns(h);
		dlclose(h);
	} else {
		skip("dv hns", "libhns.so.1-absent");
	}
#else
	skip("dv hns", "no-hnsdv.h-in-this-release");
#endif
}

/* ---------------------------------------------------------- resources */

static void resources(const char *tag)
{
	struct mallinfo2 mi = mallinfo2();
	DIR *d = opendir("/proc/self/fd");
	FILE *f;
	long fds = 0, maps = 0;
	int c;

	if (d) {
		struct dirent *e;

		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				fds++;
		closedir(d);
		fds--;	/* the directory stream's own descriptor */
	}
	f = fopen("/proc/self/maps", "re");
	if (f) {
		while ((c = getc(f)) != EOF)
			if (c == '\n')
				maps++;
		fclose(f);
	}
	emit("%s fds=%ld maps=%ld heap=%zu", tag, fds, maps,
	     mi.uordblks + mi.hblkhd);
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr, "usage: workload [--only SECTION,...] [--faults]\n");
	exit(2);
}

static void select_sections(const char *list)
{
	char *copy = strdup(list), *tok, *save = NULL;
	size_t i;

	if (!copy)
		exit(2);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NSECTIONS; i++)
			if (!strcmp(sections[i], tok))
				break;
		if (i == NSECTIONS) {
			fprintf(stderr, "workload: unknown section '%s'\n", tok);
			exit(2);
		}
		selected[i] = 1;
	}
	free(copy);
}

/* A round mark for the stand-in (an open it answers with ENOENT, as
 * does any other system). */
static void round_mark(void)
{
	int fd = open("/dev/infiniband/standin-round", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
}

/*
 * The workload once: 0, 1 when the device does not open, 3 when there is
 * no device.
 */
static int run_once(void)
{
	int num = 0, rc;

	dev_list = ibv_get_device_list(&num);
	if (!dev_list || num <= 0 || !dev_list[0]) {
		emit("@nodev");
		if (dev_list)
			ibv_free_device_list(dev_list);
		return 3;
	}
	dev = dev_list[0];
	devname_ = ibv_get_device_name(dev);
	if (!devname_)
		devname_ = "";
	emit("@out get_device_list count=%d first=%s", num, devname_);

	CALLP(ctx, "open_device", ibv_open_device(dev));
	if (!ctx) {
		skip("workload", "open_device-failed");
		ibv_free_device_list(dev_list);
		return 1;
	}

	memset(&port_attr, 0, sizeof(port_attr));
	CALLI(rc, N("query_port %d", PORT), ibv_query_port(ctx, PORT, &port_attr));
	port_ok = !rc;
	if (port_ok)
		emit("@out query_port %d state=%d max_mtu=%d active_mtu=%d "
		     "gid_tbl_len=%d port_cap_flags=%u max_msg_sz=%u "
		     "pkey_tbl_len=%u lid=%u sm_lid=%u lmc=%u max_vl_num=%u "
		     "active_width=%u active_speed=%u phys_state=%u "
		     "link_layer=%u port_cap_flags2=%u",
		     PORT, (int)port_attr.state, (int)port_attr.max_mtu,
		     (int)port_attr.active_mtu, port_attr.gid_tbl_len,
		     port_attr.port_cap_flags, port_attr.max_msg_sz,
		     port_attr.pkey_tbl_len, port_attr.lid, port_attr.sm_lid,
		     port_attr.lmc, port_attr.max_vl_num,
		     port_attr.active_width, port_attr.active_speed,
		     port_attr.phys_state, port_attr.link_layer,
		     port_attr.port_cap_flags2);
	CALLI(rc, N("query_gid %d 0", PORT), ibv_query_gid(ctx, PORT, 0, &gid0));
	gid0_ok = !rc;
	if (gid0_ok) {
		char g[40];

		hex(g, sizeof(g), gid0.raw, 16);
		emit("@out query_gid %d 0 gid=%s", PORT, g);
	}

	if (want("device")) sec_device();
	if (want("pd_mr")) sec_pd_mr();
	if (want("cq")) sec_cq();
	if (want("srq")) sec_srq();
	if (want("qp")) sec_qp();
	if (want("xrc")) sec_xrc();
	if (want("ah")) sec_ah();
	if (want("mw")) sec_mw();
	if (want("flow")) sec_flow();
	if (want("wq_rss")) sec_wq_rss();
	if (want("dm")) sec_dm();
	if (want("counters")) sec_counters();
	if (want("td")) sec_td();
	if (want("refuse")) sec_refuse();
	/*
	 * Not in fault runs: its objects are the device's largest (queues of
	 * max_qp_wr entries), and a fatal fault on their destroy leaves them
	 * behind in both libraries, where whether their large blocks' mappings
	 * merge with their neighbours' changes the map count by one either way
	 * (qedr trixie #166, mana sid #141): noise, not a leak of ours.  The
	 * fault paths of the same commands run in the sections above.
	 */
	if (want("limits") && !fault_runs) sec_limits();
	if (want("advise")) sec_advise();
	if (want("async")) sec_async();
	if (want("dv")) sec_dv();
	/*
	 * "close" always runs, like the opening preamble (open_device,
	 * query_port 1, query_gid 1 0): the resource figures of --faults are
	 * only meaningful with the device closed.  Naming it in --only is
	 * accepted and changes nothing.
	 */
	CALLI(rc, "close_device", ibv_close_device(ctx));
	ctx = NULL;
	CALLV("free_device_list", ibv_free_device_list(dev_list));
	dev_list = NULL;

	return 0;
}

int main(int argc, char **argv)
{
	const char *logpath = getenv("STANDIN_LOG");
	int faults = 0, only = 0, rc, i;
	size_t s;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--faults")) {
			faults = 1;
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			select_sections(argv[++i]);
			only = 1;
		} else if (!strncmp(argv[i], "--only=", 7)) {
			select_sections(argv[i] + 7);
			only = 1;
		} else {
			usage();
		}
	}
	if (!only)
		for (s = 0; s < NSECTIONS; s++)
			selected[s] = 1;

	if (logpath && *logpath) {
		logfd = open(logpath, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (logfd < 0) {
			perror(logpath);
			return 2;
		}
	}
	init_buffers();

	/*
	 * With --faults the workload runs three times, each after a round
	 * mark for the stand-in (STANDIN_FAIL counts from the latest mark and
	 * spares the first round): the first run fills what either library
	 * allocates once and keeps (caches, pools), the second and third get
	 * the same fault at the same command.  What the third leaves behind
	 * beyond the second (@res1 to @res) is what the fault path leaks
	 * each time it runs.
	 */
	fault_runs = faults;
	if (faults) {
		round_mark();
		rc = run_once();
		if (rc == 3)
			return rc;
		resources("@res0");
		round_mark();
		run_once();
		resources("@res1");
		round_mark();
	}
	rc = run_once();
	if (faults)
		resources("@res");
	return rc;
}
