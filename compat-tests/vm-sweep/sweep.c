/*
 * vm-sweep: one bad argument per call, over libibverbs' exported API.
 *
 *   sweep DEVICE GID_INDEX [CASE...]   run every case (or the named ones)
 *   sweep --list                        the case names, one per line
 *
 * Every case runs in a child process of its own (fork), which opens DEVICE
 * and sets up fresh good objects (PD, CQs, completion channel, SRQ, RC QP,
 * MR, AH; a QP with ibv_qp_ex send ops for the ibv_wr_* cases), then makes
 * ONE call with one bad argument.  The child prints
 *
 *   NAME|CLASS|DETAIL
 *
 * CLASS (the return convention):  ptr (a non-NULL pointer), null (NULL,
 * DETAIL: errno), ok (0), code (a positive error code, DETAIL: its name),
 * minus1 (-1, DETAIL: errno), neg (another negative value, DETAIL: it),
 * val (DETAIL: the value), str (DETAIL: the string), void (DETAIL: -),
 * setup (the good objects could not be made, DETAIL: what and errno).
 * When the child dies, the parent prints NAME|signal|SIGNAME; a child still
 * running after 10 s (F_SLOW: 300 s) is killed: NAME|signal|timeout.
 *
 * The program is built with Debian's headers; which libibverbs.so.1 runs is
 * LD_LIBRARY_PATH's choice.  Written for this project (not from rdma-core).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/entries.h"

/* the private exports applications can reach (declared in driver.h, which
 * libibverbs-dev does not ship in every version): declared here */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, enum ibv_gid_type *type);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				uint16_t *vid);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt, ...);

/* F_SLOW: makes many objects (the limit cases): 300 s instead of 10 */
enum { F_NODEV = 1, F_QPEX = 2, F_SLOW = 4 };

typedef struct env {
	const char *devname;
	int gidx;
	struct ibv_device **list;
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_qp *qpx;
	struct ibv_qp_ex *qx;
	union ibv_gid gid;
	char *buf;
} E;

struct tcase {
	const char *name;
	int flags;
	void (*fn)(E *);
};
static struct tcase cases[512];
static int ncases;
static const char *cur;

static void reg(const char *name, int flags, void (*fn)(E *))
{
	if (ncases < (int)(sizeof(cases) / sizeof(cases[0])))
		cases[ncases++] = (struct tcase){name, flags, fn};
}

#define C(nm, fl)                                                                     \
	static void c_##nm(E *e);                                                     \
	__attribute__((constructor)) static void r_##nm(void) { reg(#nm, fl, c_##nm); } \
	static void c_##nm(E *e)

static const char *ename(int e)
{
	static char b[32];
	const char *n = e ? strerrorname_np(e) : "0";
	if (n)
		return n;
	snprintf(b, sizeof(b), "errno%d", e);
	return b;
}

static void out(const char *cls, const char *detail)
{
	printf("%s|%s|%s\n", cur, cls, detail);
	fflush(stdout);
}

static void out_ptr(const void *p, int err)
{
	if (p)
		out("ptr", "-");
	else
		out("null", ename(err));
}

static void out_code(long r, int err)
{
	char b[48];
	if (r == 0)
		out("ok", "-");
	else if (r == -1)
		out("minus1", ename(err));
	else if (r > 0)
		out("code", ename((int)r));
	else {
		/* ibv_rereg_mr's IBV_REREG_MR_ERR_* and the like: errno tells why */
		snprintf(b, sizeof(b), "%ld:%s", r, ename(err));
		out("neg", b);
	}
}

static void out_val(long v)
{
	char b[48];
	snprintf(b, sizeof(b), "%ld", v);
	out("val", b);
}

/* errno is cleared before the call: a NULL or -1 that leaves it alone shows as 0 */
#define PTR(x)                           \
	do {                             \
		errno = 0;               \
		const void *p_ = (x);    \
		out_ptr(p_, errno);      \
	} while (0)
#define CODE(x)                          \
	do {                             \
		errno = 0;               \
		long r_ = (long)(x);     \
		out_code(r_, errno);     \
	} while (0)
#define VAL(x) out_val((long)(x))
#define STR(x) out("str", (x) ? (x) : "(null)")
#define VOID(x)                          \
	do {                             \
		x;                       \
		out("void", "-");        \
	} while (0)

static void setup_fail(const char *what)
{
	char b[96];
	snprintf(b, sizeof(b), "%s:%s", what, ename(errno));
	out("setup", b);
	_exit(3);
}

static void setup(E *e, int flags)
{
	int n = 0;
	e->list = ibv_get_device_list(&n);
	if (!e->list)
		setup_fail("get_device_list");
	if (flags & F_NODEV)
		return;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(e->list[i]), e->devname))
			e->dev = e->list[i];
	if (!e->dev) {
		errno = ENODEV;
		setup_fail("device");
	}
	if (!(e->ctx = ibv_open_device(e->dev)))
		setup_fail("open_device");
	if (!(e->pd = ibv_alloc_pd(e->ctx)))
		setup_fail("alloc_pd");
	if (!(e->ch = ibv_create_comp_channel(e->ctx)))
		setup_fail("create_comp_channel");
	if (!(e->cq = ibv_create_cq(e->ctx, 16, NULL, e->ch, 0)))
		setup_fail("create_cq");
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	if (!(e->srq = ibv_create_srq(e->pd, &sa)))
		setup_fail("create_srq");
	struct ibv_qp_init_attr qa = {.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
	if (!(e->qp = ibv_create_qp(e->pd, &qa)))
		setup_fail("create_qp");
	e->buf = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->buf == MAP_FAILED)
		setup_fail("mmap");
	if (!(e->mr = ibv_reg_mr(e->pd, e->buf, 4096,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		setup_fail("reg_mr");
	if (ibv_query_gid(e->ctx, 1, e->gidx, &e->gid))
		setup_fail("query_gid");
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1,
				 .grh = {.dgid = e->gid, .sgid_index = (uint8_t)e->gidx, .hop_limit = 64}};
	if (!(e->ah = ibv_create_ah(e->pd, &aa)))
		setup_fail("create_ah");
	if (flags & F_QPEX) {
		struct ibv_qp_init_attr_ex xa = {
			.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC, .pd = e->pd,
			.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE};
		if (!(e->qpx = ibv_create_qp_ex(e->ctx, &xa)))
			setup_fail("create_qp_ex");
		if (!(e->qx = ibv_qp_to_qp_ex(e->qpx)))
			setup_fail("qp_to_qp_ex");
	}
}

static struct ibv_qp_init_attr good_qp_attr(E *e)
{
	return (struct ibv_qp_init_attr){.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
					 .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
}

static struct ibv_ah_attr good_ah_attr(E *e)
{
	return (struct ibv_ah_attr){.is_global = 1, .port_num = 1,
				    .grh = {.dgid = e->gid, .sgid_index = (uint8_t)e->gidx, .hop_limit = 64}};
}

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* ===================================================================== */
/* devices */

C(get_device_list_null_num, F_NODEV) { struct ibv_device **l = ibv_get_device_list(NULL); PTR(l); ibv_free_device_list(l); (void)e; }
C(free_device_list_null, F_NODEV) { (void)e; VOID(ibv_free_device_list(NULL)); }
C(get_device_name_null, F_NODEV) { (void)e; PTR(ibv_get_device_name(NULL)); }
C(get_device_guid_null, F_NODEV) { (void)e; VAL(ibv_get_device_guid(NULL)); }
C(get_device_index_null, F_NODEV) { (void)e; VAL(ibv_get_device_index(NULL)); }
C(open_device_null, F_NODEV) { (void)e; PTR(ibv_open_device(NULL)); }
C(close_device_null, F_NODEV) { (void)e; CODE(ibv_close_device(NULL)); }
C(import_device_fd_neg, F_NODEV) { (void)e; PTR(ibv_import_device(-1)); }
C(import_device_fd_notdev, F_NODEV) { (void)e; PTR(ibv_import_device(0)); }

/* ===================================================================== */
/* queries */

C(query_device_null_ctx, 0) { struct ibv_device_attr a; (void)e; CODE(ibv_query_device(NULL, &a)); }
C(query_device_null_attr, 0) { CODE(ibv_query_device(e->ctx, NULL)); }
C(query_device_ex_bad_input_mask, 0)
{
	struct ibv_query_device_ex_input in = {.comp_mask = 1u << 31};
	struct ibv_device_attr_ex a;
	CODE(ibv_query_device_ex(e->ctx, &in, &a));
}
C(query_port_0, 0) { struct ibv_port_attr a; CODE(ibv_query_port(e->ctx, 0, &a)); }
C(query_port_2, 0) { struct ibv_port_attr a; CODE(ibv_query_port(e->ctx, 2, &a)); }
C(query_port_255, 0) { struct ibv_port_attr a; CODE(ibv_query_port(e->ctx, 255, &a)); }
/* the exported function itself, not the header's inline around it (which
 * clears *port_attr first) */
C(query_port_null_attr, 0) { CODE((ibv_query_port)(e->ctx, 1, NULL)); }
C(query_port_null_ctx, 0) { struct ibv_port_attr a; (void)e; CODE((ibv_query_port)(NULL, 1, (struct _compat_ibv_port_attr *)&a)); }
C(query_gid_port_0, 0) { union ibv_gid g; CODE(ibv_query_gid(e->ctx, 0, 0, &g)); }
C(query_gid_port_255, 0) { union ibv_gid g; CODE(ibv_query_gid(e->ctx, 255, 0, &g)); }
C(query_gid_index_neg, 0) { union ibv_gid g; CODE(ibv_query_gid(e->ctx, 1, -1, &g)); }
C(query_gid_index_huge, 0) { union ibv_gid g; CODE(ibv_query_gid(e->ctx, 1, 100000, &g)); }
C(query_gid_index_past_table, 0)
{
	struct ibv_port_attr pa;
	union ibv_gid g;
	if (ibv_query_port(e->ctx, 1, &pa))
		setup_fail("query_port");
	CODE(ibv_query_gid(e->ctx, 1, pa.gid_tbl_len, &g));
}
C(query_gid_null_gid, 0) { CODE(ibv_query_gid(e->ctx, 1, 0, NULL)); }
C(query_gid_ex_bad_flags, 0) { struct ibv_gid_entry g; CODE(ibv_query_gid_ex(e->ctx, 1, e->gidx, &g, 1)); }
C(query_gid_ex_port_0, 0) { struct ibv_gid_entry g; CODE(ibv_query_gid_ex(e->ctx, 0, e->gidx, &g, 0)); }
C(query_gid_ex_port_255, 0) { struct ibv_gid_entry g; CODE(ibv_query_gid_ex(e->ctx, 255, e->gidx, &g, 0)); }
C(query_gid_ex_index_huge, 0) { struct ibv_gid_entry g; CODE(ibv_query_gid_ex(e->ctx, 1, 100000, &g, 0)); }
C(query_gid_ex_null_entry, 0) { CODE(ibv_query_gid_ex(e->ctx, 1, e->gidx, NULL, 0)); }
C(query_gid_ex_empty_slot, 0)
{
	/* the last slot of the table: empty on both devices */
	struct ibv_port_attr pa;
	struct ibv_gid_entry g;
	if (ibv_query_port(e->ctx, 1, &pa))
		setup_fail("query_port");
	CODE(ibv_query_gid_ex(e->ctx, 1, pa.gid_tbl_len - 1, &g, 0));
}
C(query_gid_table_bad_flags, 0) { struct ibv_gid_entry g[64]; CODE(ibv_query_gid_table(e->ctx, g, 64, 1)); }
C(query_gid_table_zero_entries, 0) { struct ibv_gid_entry g[1]; CODE(ibv_query_gid_table(e->ctx, g, 0, 0)); }
C(query_gid_table_one_entry, 0) { struct ibv_gid_entry g[1]; CODE(ibv_query_gid_table(e->ctx, g, 1, 0)); }
C(query_gid_table_null_entries, 0) { CODE(ibv_query_gid_table(e->ctx, NULL, 64, 0)); }
C(query_gid_type_index_huge, 0) { enum ibv_gid_type t; CODE(ibv_query_gid_type(e->ctx, 1, 100000, &t)); }
C(query_gid_type_port_0, 0) { enum ibv_gid_type t; CODE(ibv_query_gid_type(e->ctx, 0, 0, &t)); }
C(query_gid_type_port_255, 0) { enum ibv_gid_type t; CODE(ibv_query_gid_type(e->ctx, 255, 0, &t)); }
C(query_pkey_port_0, 0) { __be16 p; CODE(ibv_query_pkey(e->ctx, 0, 0, &p)); }
C(query_pkey_port_255, 0) { __be16 p; CODE(ibv_query_pkey(e->ctx, 255, 0, &p)); }
C(query_pkey_index_neg, 0) { __be16 p; CODE(ibv_query_pkey(e->ctx, 1, -1, &p)); }
C(query_pkey_index_huge, 0) { __be16 p; CODE(ibv_query_pkey(e->ctx, 1, 100000, &p)); }
C(query_pkey_null, 0) { CODE(ibv_query_pkey(e->ctx, 1, 0, NULL)); }
C(get_pkey_index_absent, 0) { CODE(ibv_get_pkey_index(e->ctx, 1, htobe16(0x1234))); }
C(get_pkey_index_port_0, 0) { CODE(ibv_get_pkey_index(e->ctx, 0, htobe16(0xffff))); }
C(get_pkey_index_port_255, 0) { CODE(ibv_get_pkey_index(e->ctx, 255, htobe16(0xffff))); }
C(query_rt_values_ex_bad_mask, 0) { struct ibv_values_ex v = {.comp_mask = 1u << 30}; CODE(ibv_query_rt_values_ex(e->ctx, &v)); }
C(query_rt_values_ex_zero_mask, 0) { struct ibv_values_ex v = {.comp_mask = 0}; CODE(ibv_query_rt_values_ex(e->ctx, &v)); }

/* ===================================================================== */
/* PD, MR, MW */

C(alloc_pd_null_ctx, F_NODEV) { (void)e; PTR(ibv_alloc_pd(NULL)); }
C(dealloc_pd_null, F_NODEV) { (void)e; CODE(ibv_dealloc_pd(NULL)); }
C(dealloc_pd_busy, 0) { CODE(ibv_dealloc_pd(e->pd)); }
C(reg_mr_null_pd, 0) { PTR(ibv_reg_mr(NULL, e->buf, 4096, 0)); }
C(reg_mr_null_addr_zero_len, 0) { PTR(ibv_reg_mr(e->pd, NULL, 0, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_mr_zero_len, 0) { PTR(ibv_reg_mr(e->pd, e->buf, 0, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_mr_huge_len, 0) { PTR(ibv_reg_mr(e->pd, e->buf, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_mr_wrapping, 0) { PTR(ibv_reg_mr(e->pd, (void *)(UINTPTR_MAX - 4095), 8192, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_mr_unmapped, 0) { PTR(ibv_reg_mr(e->pd, (void *)0x10000, 4096, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_mr_bad_access, 0) { PTR(ibv_reg_mr(e->pd, e->buf, 4096, 1 << 29)); }
C(reg_mr_remote_write_no_local, 0) { PTR(ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_REMOTE_WRITE)); }
C(reg_mr_remote_atomic_no_local, 0) { PTR(ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_REMOTE_ATOMIC)); }
C(reg_mr_iova_wrapping, 0) { PTR(ibv_reg_mr_iova(e->pd, e->buf, 8192, UINT64_MAX - 4095, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_mr_iova2_null_pd, 0) { PTR(ibv_reg_mr_iova2(NULL, e->buf, 4096, 0, 0)); }
C(reg_mr_iova2_bad_access, 0) { PTR(ibv_reg_mr_iova2(e->pd, e->buf, 4096, (uintptr_t)e->buf, 1u << 29)); }
C(reg_mr_iova2_huge_len, 0) { PTR(ibv_reg_mr_iova2(e->pd, e->buf, SIZE_MAX, (uintptr_t)e->buf, 0)); }
C(reg_dmabuf_mr_fd_neg, 0) { PTR(ibv_reg_dmabuf_mr(e->pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_dmabuf_mr_null_pd, 0) { PTR(ibv_reg_dmabuf_mr(NULL, 0, 4096, 0, -1, 0)); }
C(dereg_mr_null, F_NODEV) { (void)e; CODE(ibv_dereg_mr(NULL)); }
C(rereg_mr_bad_flags, 0) { CODE(ibv_rereg_mr(e->mr, 1 << 20, NULL, NULL, 0, 0)); }
C(rereg_mr_no_flags, 0) { CODE(ibv_rereg_mr(e->mr, 0, NULL, NULL, 0, 0)); }
C(rereg_mr_change_pd_null, 0) { CODE(ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0)); }
C(rereg_mr_translation_zero_len, 0) { CODE(ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, e->buf, 0, 0)); }
C(rereg_mr_translation_null_addr, 0)
{
	CODE(ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 4096, 0));
}
C(rereg_mr_bad_access, 0) { CODE(ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 1 << 29)); }
C(rereg_mr_null_mr, F_NODEV) { (void)e; CODE(ibv_rereg_mr(NULL, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0)); }
C(alloc_mw_bad_type, 0) { PTR(ibv_alloc_mw(e->pd, 99)); }
C(alloc_mw_null_pd, 0) { PTR(ibv_alloc_mw(NULL, IBV_MW_TYPE_1)); }
C(advise_mr_bad_advice, 0)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
	CODE(ibv_advise_mr(e->pd, 99, 0, &s, 1));
}
C(import_pd_bad_handle, 0) { PTR(ibv_import_pd(e->ctx, 0x7fffffff)); }
C(import_mr_bad_handle, 0) { PTR(ibv_import_mr(e->pd, 0x7fffffff)); }
C(import_dm_bad_handle, 0) { PTR(ibv_import_dm(e->ctx, 0x7fffffff)); }
C(alloc_dm_zero_len, 0) { struct ibv_alloc_dm_attr a = {.length = 0}; PTR(ibv_alloc_dm(e->ctx, &a)); }
C(alloc_td_bad_mask, 0) { struct ibv_td_init_attr a = {.comp_mask = 1u << 31}; PTR(ibv_alloc_td(e->ctx, &a)); }
C(alloc_parent_domain_null_pd, 0) { struct ibv_parent_domain_init_attr a = {.pd = NULL}; PTR(ibv_alloc_parent_domain(e->ctx, &a)); }

/* ===================================================================== */
/* completion channels, CQs */

C(create_comp_channel_null, F_NODEV) { (void)e; PTR(ibv_create_comp_channel(NULL)); }
C(destroy_comp_channel_null, F_NODEV) { (void)e; CODE(ibv_destroy_comp_channel(NULL)); }
C(destroy_comp_channel_busy, 0) { CODE(ibv_destroy_comp_channel(e->ch)); }
C(create_cq_zero, 0) { PTR(ibv_create_cq(e->ctx, 0, NULL, NULL, 0)); }
C(create_cq_neg, 0) { PTR(ibv_create_cq(e->ctx, -1, NULL, NULL, 0)); }
C(create_cq_huge, 0) { PTR(ibv_create_cq(e->ctx, 1 << 30, NULL, NULL, 0)); }
C(create_cq_int_max, 0) { PTR(ibv_create_cq(e->ctx, 0x7fffffff, NULL, NULL, 0)); }
C(create_cq_bad_vector, 0) { PTR(ibv_create_cq(e->ctx, 16, NULL, NULL, 9999)); }
C(create_cq_neg_vector, 0) { PTR(ibv_create_cq(e->ctx, 16, NULL, NULL, -1)); }
C(create_cq_null_ctx, F_NODEV) { (void)e; PTR(ibv_create_cq(NULL, 16, NULL, NULL, 0)); }
C(create_cq_ex_bad_comp_mask, 0)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 16, .comp_mask = 1u << 31};
	PTR(ibv_create_cq_ex(e->ctx, &a));
}
C(create_cq_ex_bad_wc_flags, 0)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 16, .wc_flags = 1ull << 60};
	PTR(ibv_create_cq_ex(e->ctx, &a));
}
C(create_cq_ex_bad_flags, 0)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 16, .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS, .flags = 1u << 30};
	PTR(ibv_create_cq_ex(e->ctx, &a));
}
C(create_cq_ex_zero, 0) { struct ibv_cq_init_attr_ex a = {.cqe = 0}; PTR(ibv_create_cq_ex(e->ctx, &a)); }
C(create_cq_ex_huge, 0) { struct ibv_cq_init_attr_ex a = {.cqe = 1u << 30}; PTR(ibv_create_cq_ex(e->ctx, &a)); }
C(create_cq_ex_bad_vector, 0) { struct ibv_cq_init_attr_ex a = {.cqe = 16, .comp_vector = 9999}; PTR(ibv_create_cq_ex(e->ctx, &a)); }
C(destroy_cq_null, F_NODEV) { (void)e; CODE(ibv_destroy_cq(NULL)); }
C(destroy_cq_busy, 0) { CODE(ibv_destroy_cq(e->cq)); }
C(resize_cq_zero, 0) { CODE(ibv_resize_cq(e->cq, 0)); }
C(resize_cq_neg, 0) { CODE(ibv_resize_cq(e->cq, -1)); }
C(resize_cq_huge, 0) { CODE(ibv_resize_cq(e->cq, 1 << 30)); }
C(resize_cq_null, F_NODEV) { (void)e; CODE(ibv_resize_cq(NULL, 16)); }
C(modify_cq_bad_mask, 0) { struct ibv_modify_cq_attr a = {.attr_mask = 1u << 30}; CODE(ibv_modify_cq(e->cq, &a)); }
C(req_notify_cq_solicited_2, 0) { CODE(ibv_req_notify_cq(e->cq, 2)); }
C(poll_cq_neg, 0) { struct ibv_wc wc[1]; CODE(ibv_poll_cq(e->cq, -1, wc)); }
C(poll_cq_zero_null_wc, 0) { CODE(ibv_poll_cq(e->cq, 0, NULL)); }
C(poll_cq_empty_null_wc, 0) { CODE(ibv_poll_cq(e->cq, 4, NULL)); }
C(ack_cq_events_zero, 0) { VOID(ibv_ack_cq_events(e->cq, 0)); }
C(get_cq_event_nonblock_empty, 0)
{
	struct ibv_cq *cq;
	void *cqctx;
	int fl = fcntl(e->ch->fd, F_GETFL);
	if (fcntl(e->ch->fd, F_SETFL, fl | O_NONBLOCK))
		setup_fail("fcntl");
	CODE(ibv_get_cq_event(e->ch, &cq, &cqctx));
}
C(get_cq_event_null_channel, F_NODEV) { struct ibv_cq *cq; void *c; (void)e; CODE(ibv_get_cq_event(NULL, &cq, &c)); }
C(get_async_event_nonblock_empty, 0)
{
	struct ibv_async_event ev;
	int fl = fcntl(e->ctx->async_fd, F_GETFL);
	if (fcntl(e->ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		setup_fail("fcntl");
	CODE(ibv_get_async_event(e->ctx, &ev));
}
C(get_async_event_null_ctx, F_NODEV) { struct ibv_async_event ev; (void)e; CODE(ibv_get_async_event(NULL, &ev)); }
C(ack_async_event_null, F_NODEV) { (void)e; VOID(ibv_ack_async_event(NULL)); }

/* ===================================================================== */
/* SRQs */

C(create_srq_null_attr, 0) { PTR(ibv_create_srq(e->pd, NULL)); }
C(create_srq_null_pd, 0) { struct ibv_srq_init_attr a = {.attr = {.max_wr = 16, .max_sge = 1}}; PTR(ibv_create_srq(NULL, &a)); }
C(create_srq_zero_wr, 0) { struct ibv_srq_init_attr a = {.attr = {.max_wr = 0, .max_sge = 1}}; PTR(ibv_create_srq(e->pd, &a)); }
C(create_srq_huge_wr, 0) { struct ibv_srq_init_attr a = {.attr = {.max_wr = 1u << 30, .max_sge = 1}}; PTR(ibv_create_srq(e->pd, &a)); }
C(create_srq_huge_sge, 0) { struct ibv_srq_init_attr a = {.attr = {.max_wr = 16, .max_sge = 100000}}; PTR(ibv_create_srq(e->pd, &a)); }
C(create_srq_limit_over_wr, 0)
{
	struct ibv_srq_init_attr a = {.attr = {.max_wr = 16, .max_sge = 1, .srq_limit = 100}};
	PTR(ibv_create_srq(e->pd, &a));
}
C(create_srq_ex_bad_mask, 0)
{
	struct ibv_srq_init_attr_ex a = {.attr = {.max_wr = 16, .max_sge = 1}, .comp_mask = 1u << 30, .pd = e->pd};
	PTR(ibv_create_srq_ex(e->ctx, &a));
}
C(create_srq_ex_bad_type, 0)
{
	struct ibv_srq_init_attr_ex a = {.attr = {.max_wr = 16, .max_sge = 1},
					 .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD, .srq_type = 99, .pd = e->pd};
	PTR(ibv_create_srq_ex(e->ctx, &a));
}
C(create_srq_ex_no_pd, 0)
{
	struct ibv_srq_init_attr_ex a = {.attr = {.max_wr = 16, .max_sge = 1}, .comp_mask = IBV_SRQ_INIT_ATTR_TYPE,
					 .srq_type = IBV_SRQT_BASIC};
	PTR(ibv_create_srq_ex(e->ctx, &a));
}
C(modify_srq_bad_mask, 0) { struct ibv_srq_attr a = {0}; CODE(ibv_modify_srq(e->srq, &a, 1 << 20)); }
C(modify_srq_zero_mask, 0) { struct ibv_srq_attr a = {0}; CODE(ibv_modify_srq(e->srq, &a, 0)); }
C(modify_srq_limit_over_wr, 0) { struct ibv_srq_attr a = {.srq_limit = 100000}; CODE(ibv_modify_srq(e->srq, &a, IBV_SRQ_LIMIT)); }
C(modify_srq_resize_huge, 0) { struct ibv_srq_attr a = {.max_wr = 1u << 30}; CODE(ibv_modify_srq(e->srq, &a, IBV_SRQ_MAX_WR)); }
C(query_srq_null_attr, 0) { CODE(ibv_query_srq(e->srq, NULL)); }
C(destroy_srq_null, F_NODEV) { (void)e; CODE(ibv_destroy_srq(NULL)); }
C(post_srq_recv_huge_sge, 0)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &s, .num_sge = 1000}, *bad = NULL;
	CODE(ibv_post_srq_recv(e->srq, &wr, &bad));
}
C(post_srq_recv_neg_sge, 0)
{
	struct ibv_recv_wr wr = {.num_sge = -1}, *bad = NULL;
	CODE(ibv_post_srq_recv(e->srq, &wr, &bad));
}
C(get_srq_num_basic, 0) { uint32_t n; CODE(ibv_get_srq_num(e->srq, &n)); }

/* ===================================================================== */
/* QPs */

C(create_qp_null_attr, 0) { PTR(ibv_create_qp(e->pd, NULL)); }
C(create_qp_null_pd, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); PTR(ibv_create_qp(NULL, &a)); }
C(create_qp_bad_type, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.qp_type = 99; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_huge_send_wr, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.cap.max_send_wr = 1u << 30; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_huge_recv_wr, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.cap.max_recv_wr = 1u << 30; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_huge_send_sge, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.cap.max_send_sge = 100000; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_huge_recv_sge, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.cap.max_recv_sge = 100000; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_huge_inline, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.cap.max_inline_data = 1u << 30; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_zero_caps, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); memset(&a.cap, 0, sizeof(a.cap)); PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_null_send_cq, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.send_cq = NULL; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_null_recv_cq, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); a.recv_cq = NULL; PTR(ibv_create_qp(e->pd, &a)); }
C(create_qp_ex_no_pd_mask, 0)
{
	struct ibv_qp_init_attr_ex a = {.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
					.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
	PTR(ibv_create_qp_ex(e->ctx, &a));
}
C(create_qp_ex_bad_comp_mask, 0)
{
	struct ibv_qp_init_attr_ex a = {.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC, .pd = e->pd,
					.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
					.comp_mask = IBV_QP_INIT_ATTR_PD | (1u << 30)};
	PTR(ibv_create_qp_ex(e->ctx, &a));
}
C(create_qp_ex_bad_send_ops, 0)
{
	struct ibv_qp_init_attr_ex a = {.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC, .pd = e->pd,
					.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
					.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					.send_ops_flags = 1ull << 60};
	PTR(ibv_create_qp_ex(e->ctx, &a));
}
C(create_qp_ex_bad_create_flags, 0)
{
	struct ibv_qp_init_attr_ex a = {.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC, .pd = e->pd,
					.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
					.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
					.create_flags = 1u << 30};
	PTR(ibv_create_qp_ex(e->ctx, &a));
}
C(create_qp_ex_xrc_send_no_xrcd, 0)
{
	struct ibv_qp_init_attr_ex a = {.send_cq = e->cq, .qp_type = IBV_QPT_XRC_SEND, .pd = e->pd,
					.cap = {.max_send_wr = 8, .max_send_sge = 1}, .comp_mask = IBV_QP_INIT_ATTR_PD};
	PTR(ibv_create_qp_ex(e->ctx, &a));
}
C(open_qp_no_xrcd, 0) { struct ibv_qp_open_attr a = {.comp_mask = 0}; PTR(ibv_open_qp(e->ctx, &a)); }
C(modify_qp_zero_mask, 0) { struct ibv_qp_attr a = {0}; CODE(ibv_modify_qp(e->qp, &a, 0)); }
C(modify_qp_bad_mask, 0) { struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT}; CODE(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | (1 << 30))); }
C(modify_qp_bad_state, 0) { struct ibv_qp_attr a = {.qp_state = 99}; CODE(ibv_modify_qp(e->qp, &a, IBV_QP_STATE)); }
C(modify_qp_reset_to_rts, 0) { struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS}; CODE(ibv_modify_qp(e->qp, &a, IBV_QP_STATE)); }
C(modify_qp_init_missing_attrs, 0) { struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT}; CODE(ibv_modify_qp(e->qp, &a, IBV_QP_STATE)); }
static int to_init(E *e, int port, int pkey, int access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = (uint8_t)port, .pkey_index = (uint16_t)pkey,
				.qp_access_flags = (unsigned)access};
	return ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS);
}
C(modify_qp_init_port_0, 0) { CODE(to_init(e, 0, 0, 0)); }
C(modify_qp_init_port_255, 0) { CODE(to_init(e, 255, 0, 0)); }
C(modify_qp_init_pkey_huge, 0) { CODE(to_init(e, 1, 9999, 0)); }
C(modify_qp_init_bad_access, 0) { CODE(to_init(e, 1, 0, 1 << 29)); }
C(modify_qp_rtr_bad_mtu, 0)
{
	if (to_init(e, 1, 0, 0))
		setup_fail("to_init");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = 99, .dest_qp_num = e->qp->qp_num,
				.max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = good_ah_attr(e)};
	CODE(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
}
C(modify_qp_rtr_bad_sgid, 0)
{
	if (to_init(e, 1, 0, 0))
		setup_fail("to_init");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = e->qp->qp_num,
				.max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = good_ah_attr(e)};
	a.ah_attr.grh.sgid_index = 250;
	CODE(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
}
C(modify_qp_null_attr_zero_mask, 0) { CODE(ibv_modify_qp(e->qp, NULL, 0)); }
C(modify_qp_rate_limit_bad, 0)
{
	struct ibv_qp_rate_limit_attr a = {.rate_limit = 1};
	CODE(ibv_modify_qp_rate_limit(e->qp, &a));
}
C(query_qp_zero_mask, 0) { struct ibv_qp_attr a; struct ibv_qp_init_attr ia; CODE(ibv_query_qp(e->qp, &a, 0, &ia)); }
C(query_qp_bad_mask, 0) { struct ibv_qp_attr a; struct ibv_qp_init_attr ia; CODE(ibv_query_qp(e->qp, &a, 1 << 30, &ia)); }
C(query_qp_null_attr, 0) { struct ibv_qp_init_attr ia; CODE(ibv_query_qp(e->qp, NULL, IBV_QP_STATE, &ia)); }
C(destroy_qp_null, F_NODEV) { (void)e; CODE(ibv_destroy_qp(NULL)); }
C(qp_to_qp_ex_plain_qp, 0) { PTR(ibv_qp_to_qp_ex(e->qp)); }
C(query_ece_null, 0) { CODE(ibv_query_ece(e->qp, NULL)); }
C(set_ece_bad_vendor, 0) { struct ibv_ece ece = {.vendor_id = 0xdead, .options = 1}; CODE(ibv_set_ece(e->qp, &ece)); }
C(set_ece_bad_comp_mask, 0) { struct ibv_ece ece = {.comp_mask = 1}; CODE(ibv_set_ece(e->qp, &ece)); }
C(query_qp_data_in_order_bad_op, 0) { VAL(ibv_query_qp_data_in_order(e->qp, 99, 0)); }
C(query_qp_data_in_order_bad_flags, 0) { VAL(ibv_query_qp_data_in_order(e->qp, IBV_WR_SEND, 1u << 30)); }
C(attach_mcast_rc_qp, 0)
{
	union ibv_gid g = {.raw = {0xff, 0x0e, [15] = 1}};
	CODE(ibv_attach_mcast(e->qp, &g, 0));
}
C(attach_mcast_not_mcast_gid, 0) { CODE(ibv_attach_mcast(e->qp, &e->gid, 0)); }
C(detach_mcast_not_attached, 0)
{
	union ibv_gid g = {.raw = {0xff, 0x0e, [15] = 1}};
	CODE(ibv_detach_mcast(e->qp, &g, 0));
}

/* posting on a RESET QP, and bad work requests */
C(post_send_reset_qp, 0)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
			   *bad = NULL;
	CODE(ibv_post_send(e->qp, &wr, &bad));
}
C(post_send_huge_sge, 0)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &s, .num_sge = 1000, .opcode = IBV_WR_SEND}, *bad = NULL;
	CODE(ibv_post_send(e->qp, &wr, &bad));
}
C(post_send_neg_sge, 0)
{
	struct ibv_send_wr wr = {.num_sge = -1, .opcode = IBV_WR_SEND}, *bad = NULL;
	CODE(ibv_post_send(e->qp, &wr, &bad));
}
C(post_send_bad_opcode, 0)
{
	struct ibv_send_wr wr = {.num_sge = 0, .opcode = 99}, *bad = NULL;
	CODE(ibv_post_send(e->qp, &wr, &bad));
}
C(post_send_inline_too_big, 0)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 60000, .lkey = 0};
	struct ibv_send_wr wr = {.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE},
			   *bad = NULL;
	CODE(ibv_post_send(e->qp, &wr, &bad));
}
C(post_recv_huge_sge, 0)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &s, .num_sge = 1000}, *bad = NULL;
	CODE(ibv_post_recv(e->qp, &wr, &bad));
}
C(post_recv_neg_sge, 0)
{
	struct ibv_recv_wr wr = {.num_sge = -1}, *bad = NULL;
	CODE(ibv_post_recv(e->qp, &wr, &bad));
}
C(post_recv_too_many_wr, 0)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr[64], *bad = NULL;
	for (int i = 0; i < 64; i++)
		wr[i] = (struct ibv_recv_wr){.wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1, .next = i < 63 ? &wr[i + 1] : NULL};
	CODE(ibv_post_recv(e->qp, wr, &bad));
}

/* ibv_qp_ex work requests (a RESET QP with SEND and RDMA_WRITE ops) */
C(wr_complete_reset_qp, F_QPEX)
{
	ibv_wr_start(e->qx);
	ibv_wr_send(e->qx);
	ibv_wr_set_sge(e->qx, e->mr->lkey, (uintptr_t)e->buf, 64);
	CODE(ibv_wr_complete(e->qx));
}
C(wr_complete_huge_sge_list, F_QPEX)
{
	static struct ibv_sge s[64];
	for (int i = 0; i < 64; i++)
		s[i] = (struct ibv_sge){.addr = (uintptr_t)e->buf, .length = 8, .lkey = e->mr->lkey};
	ibv_wr_start(e->qx);
	ibv_wr_send(e->qx);
	ibv_wr_set_sge_list(e->qx, 64, s);
	CODE(ibv_wr_complete(e->qx));
}
C(wr_complete_inline_too_big, F_QPEX)
{
	ibv_wr_start(e->qx);
	ibv_wr_send(e->qx);
	ibv_wr_set_inline_data(e->qx, e->buf, 60000);
	CODE(ibv_wr_complete(e->qx));
}
C(wr_complete_nothing, F_QPEX)
{
	ibv_wr_start(e->qx);
	CODE(ibv_wr_complete(e->qx));
}
C(wr_abort_nothing, F_QPEX)
{
	ibv_wr_start(e->qx);
	VOID(ibv_wr_abort(e->qx));
}

/* ===================================================================== */
/* address handles */

C(create_ah_null_attr, 0) { PTR(ibv_create_ah(e->pd, NULL)); }
C(create_ah_null_pd, 0) { struct ibv_ah_attr a = good_ah_attr(e); PTR(ibv_create_ah(NULL, &a)); }
C(create_ah_port_0, 0) { struct ibv_ah_attr a = good_ah_attr(e); a.port_num = 0; PTR(ibv_create_ah(e->pd, &a)); }
C(create_ah_port_255, 0) { struct ibv_ah_attr a = good_ah_attr(e); a.port_num = 255; PTR(ibv_create_ah(e->pd, &a)); }
C(create_ah_bad_sgid_index, 0) { struct ibv_ah_attr a = good_ah_attr(e); a.grh.sgid_index = 250; PTR(ibv_create_ah(e->pd, &a)); }
C(create_ah_no_grh_roce, 0) { struct ibv_ah_attr a = good_ah_attr(e); a.is_global = 0; a.dlid = 1; PTR(ibv_create_ah(e->pd, &a)); }
C(create_ah_bad_rate, 0) { struct ibv_ah_attr a = good_ah_attr(e); a.static_rate = 200; PTR(ibv_create_ah(e->pd, &a)); }
C(create_ah_zero_dgid, 0) { struct ibv_ah_attr a = good_ah_attr(e); memset(&a.grh.dgid, 0, 16); PTR(ibv_create_ah(e->pd, &a)); }
C(destroy_ah_null, F_NODEV) { (void)e; CODE(ibv_destroy_ah(NULL)); }
C(init_ah_from_wc_no_grh, 0)
{
	struct ibv_wc wc = {.wc_flags = 0, .src_qp = 1};
	struct ibv_ah_attr a;
	CODE(ibv_init_ah_from_wc(e->ctx, 1, &wc, NULL, &a));
}
C(init_ah_from_wc_port_0, 0)
{
	struct ibv_wc wc = {.wc_flags = IBV_WC_GRH, .src_qp = 1};
	struct ibv_grh grh = {.sgid = e->gid, .dgid = e->gid};
	struct ibv_ah_attr a;
	CODE(ibv_init_ah_from_wc(e->ctx, 0, &wc, &grh, &a));
}
C(init_ah_from_wc_unknown_dgid, 0)
{
	struct ibv_wc wc = {.wc_flags = IBV_WC_GRH, .src_qp = 1};
	struct ibv_grh grh = {.sgid = e->gid};
	struct ibv_ah_attr a;
	memset(&grh.dgid, 0x5a, 16);
	CODE(ibv_init_ah_from_wc(e->ctx, 1, &wc, &grh, &a));
}
C(create_ah_from_wc_no_grh, 0)
{
	struct ibv_wc wc = {.wc_flags = 0, .src_qp = 1};
	PTR(ibv_create_ah_from_wc(e->pd, &wc, NULL, 1));
}

/* ===================================================================== */
/* XRC domains, WQs, flows, counters, TDs: unsupported or bad masks */

C(open_xrcd_bad_mask, 0) { struct ibv_xrcd_init_attr a = {.comp_mask = 1u << 30}; PTR(ibv_open_xrcd(e->ctx, &a)); }
C(open_xrcd_bad_fd, 0)
{
	struct ibv_xrcd_init_attr a = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = 9999,
				       .oflags = O_CREAT};
	PTR(ibv_open_xrcd(e->ctx, &a));
}
C(create_wq_bad_type, 0)
{
	struct ibv_wq_init_attr a = {.wq_type = 99, .max_wr = 8, .max_sge = 1, .pd = e->pd, .cq = e->cq};
	PTR(ibv_create_wq(e->ctx, &a));
}
C(create_rwq_ind_table_zero, 0) { struct ibv_rwq_ind_table_init_attr a = {.log_ind_tbl_size = 0}; PTR(ibv_create_rwq_ind_table(e->ctx, &a)); }
C(create_flow_bad_attr, 0)
{
	struct ibv_flow_attr a = {.type = 99, .size = sizeof(a), .port = 1};
	PTR(ibv_create_flow(e->qp, &a));
}
C(create_counters_bad_mask, 0) { struct ibv_counters_init_attr a = {.comp_mask = 1u << 30}; PTR(ibv_create_counters(e->ctx, &a)); }
C(bind_mw_null_mw, 0)
{
	struct ibv_mw_bind b = {.bind_info = {.mr = e->mr, .addr = (uintptr_t)e->buf, .length = 64}};
	struct ibv_mw mw = {.context = e->ctx, .pd = e->pd, .type = IBV_MW_TYPE_2};
	CODE(ibv_bind_mw(e->qp, &mw, &b));
}

/* ===================================================================== */
/* strings and rates (no device) */

C(wc_status_str_neg, F_NODEV) { (void)e; STR(ibv_wc_status_str(-1)); }
C(wc_status_str_huge, F_NODEV) { (void)e; STR(ibv_wc_status_str(9999)); }
C(event_type_str_huge, F_NODEV) { (void)e; STR(ibv_event_type_str(9999)); }
C(event_type_str_neg, F_NODEV) { (void)e; STR(ibv_event_type_str(-1)); }
C(node_type_str_huge, F_NODEV) { (void)e; STR(ibv_node_type_str(9999)); }
C(node_type_str_neg, F_NODEV) { (void)e; STR(ibv_node_type_str(-5)); }
C(port_state_str_huge, F_NODEV) { (void)e; STR(ibv_port_state_str(9999)); }
C(port_state_str_neg, F_NODEV) { (void)e; STR(ibv_port_state_str(-1)); }
C(rate_to_mult_huge, F_NODEV) { (void)e; VAL(ibv_rate_to_mult(9999)); }
C(rate_to_mult_neg, F_NODEV) { (void)e; VAL(ibv_rate_to_mult(-1)); }
C(rate_to_mbps_huge, F_NODEV) { (void)e; VAL(ibv_rate_to_mbps(9999)); }
C(rate_to_mbps_neg, F_NODEV) { (void)e; VAL(ibv_rate_to_mbps(-1)); }
C(mult_to_ibv_rate_7, F_NODEV) { (void)e; VAL(mult_to_ibv_rate(7)); }
C(mult_to_ibv_rate_neg, F_NODEV) { (void)e; VAL(mult_to_ibv_rate(-1)); }
C(mbps_to_ibv_rate_7, F_NODEV) { (void)e; VAL(mbps_to_ibv_rate(7)); }
C(mbps_to_ibv_rate_neg, F_NODEV) { (void)e; VAL(mbps_to_ibv_rate(-1)); }

/* ===================================================================== */
/* fork support and sysfs helpers */

C(dontfork_range_no_init_null, F_NODEV) { (void)e; CODE(ibv_dontfork_range(NULL, 4096)); }
C(dofork_range_no_init_huge, F_NODEV) { (void)e; CODE(ibv_dofork_range((void *)4096, SIZE_MAX)); }
C(fork_init_then_dontfork_wrapping, F_NODEV)
{
	(void)e;
	if (ibv_fork_init())
		setup_fail("fork_init");
	CODE(ibv_dontfork_range((void *)(UINTPTR_MAX - 4095), 8192));
}
C(fork_init_then_dontfork_zero_len, F_NODEV)
{
	static char b[8192];
	(void)e;
	if (ibv_fork_init())
		setup_fail("fork_init");
	CODE(ibv_dontfork_range(b, 0));
}
C(fork_init_then_dofork_unmapped, F_NODEV)
{
	(void)e;
	if (ibv_fork_init())
		setup_fail("fork_init");
	CODE(ibv_dofork_range((void *)0x10000, 4096));
}
C(fork_init_after_open, 0) { (void)e; CODE(ibv_fork_init()); }
C(is_fork_initialized_plain, F_NODEV) { (void)e; VAL(ibv_is_fork_initialized()); }
C(read_sysfs_file_missing, F_NODEV) { char b[64]; (void)e; CODE(ibv_read_sysfs_file("/nonexistent-dir", "x", b, sizeof(b))); }
C(read_sysfs_file_zero_size, F_NODEV) { char b[64]; (void)e; CODE(ibv_read_sysfs_file("/proc", "version", b, 0)); }
C(read_sysfs_file_null_dir, F_NODEV) { char b[64]; (void)e; CODE(ibv_read_sysfs_file(NULL, "x", b, sizeof(b))); }
C(get_sysfs_path_plain, F_NODEV) { (void)e; STR(ibv_get_sysfs_path()); }

/* ===================================================================== */
/* more NULLs and flags */

C(query_gid_null_ctx, 0) { union ibv_gid g; (void)e; CODE(ibv_query_gid(NULL, 1, 0, &g)); }
C(query_pkey_null_ctx, 0) { __be16 p; (void)e; CODE(ibv_query_pkey(NULL, 1, 0, &p)); }
C(get_pkey_index_null_ctx, 0) { (void)e; CODE(ibv_get_pkey_index(NULL, 1, htobe16(0xffff))); }
C(ack_cq_events_null, F_NODEV) { (void)e; VOID(ibv_ack_cq_events(NULL, 1)); }
C(get_cq_event_nonblock_null_out, 0)
{
	int fl = fcntl(e->ch->fd, F_GETFL);
	if (fcntl(e->ch->fd, F_SETFL, fl | O_NONBLOCK))
		setup_fail("fcntl");
	CODE(ibv_get_cq_event(e->ch, NULL, NULL));
}
C(get_async_event_nonblock_null_event, 0)
{
	int fl = fcntl(e->ctx->async_fd, F_GETFL);
	if (fcntl(e->ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		setup_fail("fcntl");
	CODE(ibv_get_async_event(e->ctx, NULL));
}
C(reg_mr_on_demand, 0) { PTR(ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND)); }
C(reg_mr_optional_relaxed, 0) { PTR(ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING)); }
C(rereg_mr_translation_huge, 0)
{
	CODE(ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, e->buf, SIZE_MAX, 0));
}
C(modify_srq_null_attr, 0) { CODE(ibv_modify_srq(e->srq, NULL, IBV_SRQ_LIMIT)); }
C(create_srq_zero_sge, 0) { struct ibv_srq_init_attr a = {.attr = {.max_wr = 16, .max_sge = 0}}; PTR(ibv_create_srq(e->pd, &a)); }
C(unimport_pd_null, F_NODEV) { (void)e; VOID(ibv_unimport_pd(NULL)); }
C(unimport_mr_null, F_NODEV) { (void)e; VOID(ibv_unimport_mr(NULL)); }
C(unimport_dm_null, F_NODEV) { (void)e; VOID(ibv_unimport_dm(NULL)); }
C(attach_mcast_null_gid, 0) { CODE(ibv_attach_mcast(e->qp, NULL, 0)); }
C(post_send_null_wr, 0) { struct ibv_send_wr *bad = NULL; CODE(ibv_post_send(e->qp, NULL, &bad)); }
C(post_recv_null_wr, 0) { struct ibv_recv_wr *bad = NULL; CODE(ibv_post_recv(e->qp, NULL, &bad)); }
C(post_srq_recv_null_wr, 0) { struct ibv_recv_wr *bad = NULL; CODE(ibv_post_srq_recv(e->srq, NULL, &bad)); }
C(fork_init_then_dontfork_null, F_NODEV)
{
	(void)e;
	if (ibv_fork_init())
		setup_fail("fork_init");
	CODE(ibv_dontfork_range(NULL, 4096));
}
C(fork_init_then_dofork_never_dontforked, F_NODEV)
{
	static char b[3 * 4096];
	(void)e;
	if (ibv_fork_init())
		setup_fail("fork_init");
	CODE(ibv_dofork_range(b, sizeof(b)));
}
C(read_ibdev_sysfs_file_null_dev, F_NODEV) { char b[64]; (void)e; CODE(ibv_read_ibdev_sysfs_file(b, sizeof(b), NULL, "node_guid")); }

/* ibv_resolve_eth_l2_from_gid: provider-facing (RoCE AHs), callable */
C(resolve_eth_l2_no_grh, 0)
{
	struct ibv_ah_attr a = good_ah_attr(e);
	uint8_t mac[6];
	uint16_t vid;
	a.is_global = 0;
	CODE(ibv_resolve_eth_l2_from_gid(e->ctx, &a, mac, &vid));
}
C(resolve_eth_l2_bad_sgid, 0)
{
	struct ibv_ah_attr a = good_ah_attr(e);
	uint8_t mac[6];
	uint16_t vid;
	a.grh.sgid_index = 250;
	CODE(ibv_resolve_eth_l2_from_gid(e->ctx, &a, mac, &vid));
}
C(resolve_eth_l2_port_0, 0)
{
	struct ibv_ah_attr a = good_ah_attr(e);
	uint8_t mac[6];
	uint16_t vid;
	a.port_num = 0;
	CODE(ibv_resolve_eth_l2_from_gid(e->ctx, &a, mac, &vid));
}

/* ===================================================================== */
/* use after destroy: upstream documents nothing; recorded, compared */

C(destroy_qp_twice, 0)
{
	if (ibv_destroy_qp(e->qp))
		setup_fail("destroy_qp");
	CODE(ibv_destroy_qp(e->qp));
}
C(dereg_mr_twice, 0)
{
	if (ibv_dereg_mr(e->mr))
		setup_fail("dereg_mr");
	CODE(ibv_dereg_mr(e->mr));
}
C(destroy_ah_twice, 0)
{
	if (ibv_destroy_ah(e->ah))
		setup_fail("destroy_ah");
	CODE(ibv_destroy_ah(e->ah));
}
C(close_device_twice, 0)
{
	struct ibv_context *c = ibv_open_device(e->dev);
	if (!c || ibv_close_device(c))
		setup_fail("open/close");
	CODE(ibv_close_device(c));
}
C(free_device_list_twice, F_NODEV)
{
	ibv_free_device_list(e->list);
	VOID(ibv_free_device_list(e->list));
}

/* ===================================================================== */
/* object handles and limits; zero-length, UD and memory-window traffic */

#include "sweep-objects.c"
#include "sweep-traffic.c"
#include "sweep-fds.c"
#include "sweep-limits.c"

/* ===================================================================== */

static const char *signame(int s)
{
	const char *n = sigabbrev_np(s);
	static char b[16];
	if (n) {
		snprintf(b, sizeof(b), "SIG%s", n);
		return b;
	}
	snprintf(b, sizeof(b), "sig%d", s);
	return b;
}

static void run_one(const struct tcase *c, const char *dev, int gidx)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		E e = {.devname = dev, .gidx = gidx};
		cur = c->name;
		alarm(c->flags & F_SLOW ? 300 : 10);
		setup(&e, c->flags);
		c->fn(&e);
		fflush(stdout);
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("waitpid");
			exit(2);
		}
	if (WIFSIGNALED(st))
		printf("%s|signal|%s\n", c->name, WTERMSIG(st) == SIGALRM ? "timeout" : signame(WTERMSIG(st)));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (int i = 0; i < ncases; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [CASE...] | --list\n", argv[0]);
		return 2;
	}
	/* no core files from the crashes we provoke */
	signal(SIGPIPE, SIG_IGN);
	int gidx = atoi(argv[2]);
	for (int i = 0; i < ncases; i++) {
		int want = argc == 3;
		for (int j = 3; j < argc && !want; j++)
			want = !strcmp(argv[j], cases[i].name);
		if (want)
			run_one(&cases[i], argv[1], gidx);
	}
	return 0;
}
