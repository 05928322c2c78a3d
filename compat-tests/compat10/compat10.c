/*
 * compat-tests/compat10: a program of the IBVERBS_1.0 era.
 *
 * Every verb below that exists in two versions is bound to its
 * IBVERBS_1.0 definition with .symver, so the dynamic linker resolves
 * "ibv_open_device@IBVERBS_1.0" and friends, exactly as for a binary linked
 * against libibverbs 1.0.  The 1.0 object layouts are declared here (they
 * are not in any installed header); the data-path calls go through the 1.0
 * context's op table, as 1.0's inline ibv_poll_cq/ibv_post_send did.
 *
 *   compat10 nodev              what works without a device
 *   compat10 device NAME        the object life cycle and a loopback on NAME
 *
 * Output, one line each:
 *   LIB <path>                  the library ibv_open_device@IBVERBS_1.0 is in
 *   CHECK <name> ok | CHECK <name> bad: <why>     must be ok for every library
 *   INFO <name> <value>         deterministic; compared between libraries
 *   DIFF <name> <value>         a known difference (upstream defect), not compared
 *   SKIP <name>: <why>
 * Exit status: 0 when every CHECK was ok.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "../common/qpsetup.h"

/* ---- the 1.0 layouts ------------------------------------------------- */

struct v10_context;
struct v10_cq;
struct v10_qp;
struct v10_srq;
struct v10_ah;

struct v10_device {
	void *obsolete_sysfs_dev;
	void *obsolete_sysfs_ibdev;
	struct ibv_device *real_device;
	void *ops[2];
};

struct v10_recv_wr {
	struct v10_recv_wr *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
};

struct v10_send_wr {
	struct v10_send_wr *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
	enum ibv_wr_opcode opcode;
	int send_flags;
	uint32_t imm_data;
	union {
		struct { uint64_t remote_addr; uint32_t rkey; } rdma;
		struct { uint64_t remote_addr; uint64_t compare_add; uint64_t swap; uint32_t rkey; } atomic;
		struct { struct v10_ah *ah; uint32_t remote_qpn; uint32_t remote_qkey; } ud;
	} wr;
};

typedef void (*v10_unused_op)(void);

struct v10_context_ops {
	v10_unused_op query_device, query_port, alloc_pd, dealloc_pd, reg_mr, dereg_mr, create_cq;
	int (*poll_cq)(struct v10_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct v10_cq *cq, int solicited_only);
	v10_unused_op cq_event, resize_cq, destroy_cq, create_srq, modify_srq, query_srq, destroy_srq;
	int (*post_srq_recv)(struct v10_srq *srq, struct v10_recv_wr *wr, struct v10_recv_wr **bad);
	v10_unused_op create_qp, query_qp, modify_qp, destroy_qp;
	int (*post_send)(struct v10_qp *qp, struct v10_send_wr *wr, struct v10_send_wr **bad);
	int (*post_recv)(struct v10_qp *qp, struct v10_recv_wr *wr, struct v10_recv_wr **bad);
	v10_unused_op create_ah, destroy_ah, attach_mcast, detach_mcast;
};

struct v10_context {
	struct v10_device *device;
	struct v10_context_ops ops;
	int cmd_fd;
	int async_fd;
	int num_comp_vectors;
	struct ibv_context *real_context;
};

struct v10_pd {
	struct v10_context *context;
	uint32_t handle;
	struct ibv_pd *real_pd;
};

struct v10_mr {
	struct v10_context *context;
	struct v10_pd *pd;
	uint32_t handle, lkey, rkey;
	struct ibv_mr *real_mr;
};

struct v10_cq {
	struct v10_context *context;
	void *cq_context;
	uint32_t handle;
	int cqe;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t comp_events_completed, async_events_completed;
	struct ibv_cq *real_cq;
};

struct v10_srq {
	struct v10_context *context;
	void *srq_context;
	struct v10_pd *pd;
	uint32_t handle;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
	struct ibv_srq *real_srq;
};

struct v10_qp_init_attr {
	void *qp_context;
	struct v10_cq *send_cq, *recv_cq;
	struct v10_srq *srq;
	struct ibv_qp_cap cap;
	enum ibv_qp_type qp_type;
	int sq_sig_all;
};

struct v10_qp {
	struct v10_context *context;
	void *qp_context;
	struct v10_pd *pd;
	struct v10_cq *send_cq, *recv_cq;
	struct v10_srq *srq;
	uint32_t handle, qp_num;
	enum ibv_qp_state state;
	enum ibv_qp_type qp_type;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
	struct ibv_qp *real_qp;
};

struct v10_ah {
	struct v10_context *context;
	struct v10_pd *pd;
	uint32_t handle;
	struct ibv_ah *real_ah;
};

_Static_assert(sizeof(struct v10_device) == 40, "ibv_device_1_0");
_Static_assert(sizeof(struct v10_context_ops) == 27 * sizeof(void *), "ibv_context_ops_1_0");
_Static_assert(offsetof(struct v10_context, real_context) == 240, "ibv_context_1_0");
_Static_assert(sizeof(struct v10_send_wr) == 72, "ibv_send_wr_1_0");
_Static_assert(sizeof(struct v10_cq) == 128, "ibv_cq_1_0");
_Static_assert(sizeof(struct v10_qp) == 168, "ibv_qp_1_0");
_Static_assert(sizeof(struct v10_srq) == 136, "ibv_srq_1_0");
_Static_assert(sizeof(struct v10_qp_init_attr) == 64, "ibv_qp_init_attr_1_0");

/* ---- the IBVERBS_1.0 entry points ------------------------------------- */

#define V10(ret, name, args)  \
	ret name##_10 args;   \
	__asm__(".symver " #name "_10, " #name "@IBVERBS_1.0")

V10(struct v10_device **, ibv_get_device_list, (int *num));
V10(void, ibv_free_device_list, (struct v10_device **list));
V10(const char *, ibv_get_device_name, (struct v10_device *dev));
V10(uint64_t, ibv_get_device_guid, (struct v10_device *dev));
V10(struct v10_context *, ibv_open_device, (struct v10_device *dev));
V10(int, ibv_close_device, (struct v10_context *ctx));
V10(int, ibv_get_async_event, (struct v10_context *ctx, struct ibv_async_event *ev));
V10(void, ibv_ack_async_event, (struct ibv_async_event *ev));
V10(int, ibv_query_device, (struct v10_context *ctx, struct ibv_device_attr *attr));
V10(int, ibv_query_port, (struct v10_context *ctx, uint8_t port, struct ibv_port_attr *attr));
V10(int, ibv_query_gid, (struct v10_context *ctx, uint8_t port, int index, union ibv_gid *gid));
V10(int, ibv_query_pkey, (struct v10_context *ctx, uint8_t port, int index, uint16_t *pkey));
V10(struct v10_pd *, ibv_alloc_pd, (struct v10_context *ctx));
V10(int, ibv_dealloc_pd, (struct v10_pd *pd));
V10(struct v10_mr *, ibv_reg_mr, (struct v10_pd *pd, void *addr, size_t len, int access));
V10(int, ibv_dereg_mr, (struct v10_mr *mr));
V10(struct v10_cq *, ibv_create_cq, (struct v10_context *ctx, int cqe, void *cq_context,
				      struct ibv_comp_channel *ch, int vec));
V10(int, ibv_resize_cq, (struct v10_cq *cq, int cqe));
V10(int, ibv_destroy_cq, (struct v10_cq *cq));
V10(int, ibv_get_cq_event, (struct ibv_comp_channel *ch, struct v10_cq **cq, void **cq_context));
V10(void, ibv_ack_cq_events, (struct v10_cq *cq, unsigned int n));
V10(struct v10_srq *, ibv_create_srq, (struct v10_pd *pd, struct ibv_srq_init_attr *attr));
V10(int, ibv_modify_srq, (struct v10_srq *srq, struct ibv_srq_attr *attr, int mask));
V10(int, ibv_query_srq, (struct v10_srq *srq, struct ibv_srq_attr *attr));
V10(int, ibv_destroy_srq, (struct v10_srq *srq));
V10(struct v10_qp *, ibv_create_qp, (struct v10_pd *pd, struct v10_qp_init_attr *attr));
V10(int, ibv_query_qp, (struct v10_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct v10_qp_init_attr *init));
V10(int, ibv_modify_qp, (struct v10_qp *qp, struct ibv_qp_attr *attr, int mask));
V10(int, ibv_destroy_qp, (struct v10_qp *qp));
V10(struct v10_ah *, ibv_create_ah, (struct v10_pd *pd, struct ibv_ah_attr *attr));
V10(int, ibv_destroy_ah, (struct v10_ah *ah));
V10(int, ibv_attach_mcast, (struct v10_qp *qp, const union ibv_gid *gid, uint16_t lid));
V10(int, ibv_detach_mcast, (struct v10_qp *qp, const union ibv_gid *gid, uint16_t lid));

/* ---- output ------------------------------------------------------------ */

static int failed;

static void check(const char *name, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(const char *name, int ok, const char *fmt, ...)
{
	if (ok) {
		printf("CHECK %s ok\n", name);
	} else {
		va_list ap;

		printf("CHECK %s bad: ", name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		failed = 1;
	}
	fflush(stdout);
}

#define info(name, ...) do { printf("INFO %s ", name); printf(__VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

static const char *ename(int e)
{
	static char buf[32];

	switch (e) {
	case 0: return "0";
	case EINVAL: return "EINVAL";
	case ENOSYS: return "ENOSYS";
	case ENODEV: return "ENODEV";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	}
	snprintf(buf, sizeof buf, "errno%d", e);
	return buf;
}

/* ---- without a device ------------------------------------------------------ */

static int nonblocking_empty_pipe(int p[2])
{
	if (pipe(p))
		return -1;
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	return 0;
}

static void fake_cq(struct ibv_cq *cq)
{
	memset(cq, 0, sizeof *cq);
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
}

static int run_nodev(void)
{
	int n = -1, n11 = -1, e10, e11;
	struct v10_device **l10;
	struct ibv_device **l11;

	/* Device list: the 1.0 list wraps the current one, element by element. */
	errno = 0;
	l10 = ibv_get_device_list_10(&n);
	e10 = errno;
	errno = 0;
	l11 = ibv_get_device_list(&n11);
	e11 = errno;
	if (!l10) {
		info("get_device_list_1_0", "NULL errno=%s", ename(e10));
		check("get_device_list_1_0 fails like 1.1", !l11 && e10 == e11,
		      "1.0: NULL errno %d; 1.1: %p errno %d", e10, (void *)l11, e11);
	} else {
		int i, same = 1;

		info("get_device_list_1_0", "n=%d", n);
		check("get_device_list_1_0 count", l11 && n == n11, "1.0: %d, 1.1: %d", n, n11);
		check("get_device_list_1_0 NULL-terminated", l10[n] == NULL, "l[n] = %p", (void *)l10[n]);
		for (i = 0; l11 && i < n && i < n11; i++) {
			const char *a = ibv_get_device_name_10(l10[i]);
			const char *b = ibv_get_device_name(l10[i]->real_device);

			info("device", "%d %s guid=%016llx", i, a ? a : "(null)",
			     (unsigned long long)be64toh(ibv_get_device_guid_10(l10[i])));
			if (!a || !b || strcmp(a, b) ||
			    ibv_get_device_guid_10(l10[i]) != ibv_get_device_guid(l10[i]->real_device) ||
			    strcmp(ibv_get_device_name(l11[i]), a))
				same = 0;
		}
		check("1.0 devices wrap the real ones (name, guid, order)", same, "mismatch");
		ibv_free_device_list_10(l10);
	}
	if (l11)
		ibv_free_device_list(l11);

	/* The 1.0 list may be fetched and freed repeatedly. */
	{
		int i, ok = 1;

		for (i = 0; i < 3; i++) {
			struct v10_device **l = ibv_get_device_list_10(NULL);

			if (!!l != !!l10)
				ok = 0;
			if (l)
				ibv_free_device_list_10(l);
		}
		check("get/free_device_list_1_0 repeated, num NULL", ok, "inconsistent result");
	}

	/* Completion-event acknowledgement reaches the real CQ. */
	{
		struct ibv_cq real;
		struct v10_cq cq10;

		fake_cq(&real);
		memset(&cq10, 0, sizeof cq10);
		cq10.real_cq = &real;
		ibv_ack_cq_events_10(&cq10, 3);
		ibv_ack_cq_events_10(&cq10, 2);
		check("ack_cq_events_1_0 counts on the real CQ", real.comp_events_completed == 5 &&
		      cq10.comp_events_completed == 0, "real %u, 1.0 %u", real.comp_events_completed,
		      cq10.comp_events_completed);
	}

	/* Asynchronous-event acknowledgement: the 1.0 element is translated
	 * to the real object. */
	{
		struct ibv_cq rcq;
		struct ibv_qp rqp;
		struct ibv_srq rsrq;
		struct v10_cq cq10;
		struct v10_qp qp10;
		struct v10_srq srq10;
		struct ibv_async_event ev;
		static const enum ibv_event_type qp_events[] = {
			IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR,
			IBV_EVENT_COMM_EST, IBV_EVENT_SQ_DRAINED, IBV_EVENT_PATH_MIG,
			IBV_EVENT_PATH_MIG_ERR, IBV_EVENT_QP_LAST_WQE_REACHED,
		};
		unsigned i;

		fake_cq(&rcq);
		memset(&rqp, 0, sizeof rqp);
		pthread_mutex_init(&rqp.mutex, NULL);
		pthread_cond_init(&rqp.cond, NULL);
		memset(&rsrq, 0, sizeof rsrq);
		pthread_mutex_init(&rsrq.mutex, NULL);
		pthread_cond_init(&rsrq.cond, NULL);
		memset(&cq10, 0, sizeof cq10);
		memset(&qp10, 0, sizeof qp10);
		memset(&srq10, 0, sizeof srq10);
		cq10.real_cq = &rcq;
		qp10.real_qp = &rqp;
		srq10.real_srq = &rsrq;

		ev.event_type = IBV_EVENT_CQ_ERR;
		ev.element.cq = (struct ibv_cq *)&cq10;
		ibv_ack_async_event_10(&ev);
		check("ack_async_event_1_0 CQ_ERR reaches the real CQ", rcq.async_events_completed == 1 &&
		      ev.element.cq == (struct ibv_cq *)&cq10, "real %u", rcq.async_events_completed);

		for (i = 0; i < sizeof qp_events / sizeof qp_events[0]; i++) {
			ev.event_type = qp_events[i];
			ev.element.qp = (struct ibv_qp *)&qp10;
			ibv_ack_async_event_10(&ev);
		}
		check("ack_async_event_1_0 QP events reach the real QP", rqp.events_completed == 8 &&
		      qp10.events_completed == 0, "real %u", rqp.events_completed);

		ev.event_type = IBV_EVENT_SRQ_ERR;
		ev.element.srq = (struct ibv_srq *)&srq10;
		ibv_ack_async_event_10(&ev);
		ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
		ibv_ack_async_event_10(&ev);
		check("ack_async_event_1_0 SRQ events reach the real SRQ", rsrq.events_completed == 2 &&
		      srq10.events_completed == 0, "real %u", rsrq.events_completed);

		ev.event_type = IBV_EVENT_PORT_ACTIVE;
		ev.element.port_num = 1;
		ibv_ack_async_event_10(&ev);
		check("ack_async_event_1_0 port event is a no-op", rcq.async_events_completed == 1 &&
		      rqp.events_completed == 8 && rsrq.events_completed == 2, "counters moved");
	}

	/* Event reads on empty non-blocking fds fail with EAGAIN. */
	{
		int p[2], ret, e;
		struct ibv_context *real = calloc(1, sizeof *real);
		struct v10_context ctx10;
		struct ibv_async_event ev;
		struct ibv_comp_channel ch;
		struct v10_cq *cq = (void *)1;
		void *cqc = (void *)1;

		if (!real || nonblocking_empty_pipe(p)) {
			check("async/cq event setup", 0, "pipe: %s", strerror(errno));
		} else {
			memset(&ctx10, 0, sizeof ctx10);
			real->cmd_fd = -1;
			real->async_fd = p[0];
			ctx10.real_context = real;
			errno = 0;
			ret = ibv_get_async_event_10(&ctx10, &ev);
			e = errno;
			info("get_async_event_1_0 empty", "ret=%d errno=%s", ret, ename(e));
			check("get_async_event_1_0 on an empty fd", ret == -1 && e == EAGAIN,
			      "ret %d errno %d", ret, e);

			memset(&ch, 0, sizeof ch);
			ch.context = real;
			ch.fd = p[0];
			errno = 0;
			ret = ibv_get_cq_event_10(&ch, &cq, &cqc);
			e = errno;
			info("get_cq_event_1_0 empty", "ret=%d errno=%s", ret, ename(e));
			check("get_cq_event_1_0 on an empty fd", ret == -1 && e == EAGAIN &&
			      cq == (void *)1 && cqc == (void *)1, "ret %d errno %d", ret, e);
			close(p[0]);
			close(p[1]);
		}
		free(real);
	}

	return failed;
}

/* ---- with a device ------------------------------------------------------------ */

#define BUF_SIZE 8192
#define GRH 40

struct env {
	struct v10_context *ctx;
	struct ibv_comp_channel *ch;
	struct v10_cq *scq, *rcq;
	int port, gid_index, link_eth;
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Polls a 1.0 CQ through the 1.0 op table until a completion arrives. */
static int poll_one(struct env *e, struct v10_cq *cq, struct ibv_wc *wc, double timeout)
{
	double end = now() + timeout;

	for (;;) {
		int n = e->ctx->ops.poll_cq(cq, 1, wc);

		if (n != 0)
			return n;
		if (now() > end)
			return 0;
		usleep(200);
	}
}

/* The connection's attributes (compat-tests/common/qpsetup.h) from what the
 * port said: a GRH only on Ethernet, the UD QPs' qkey. */
static void env_conn(struct env *e, struct qps_conn *c)
{
	qps_defaults(c);
	c->port = e->port;
	c->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	c->qkey = 0x11111111;
	c->mtu = e->mtu;
	c->dlid = e->lid;
	c->sgid_index = e->link_eth ? e->gid_index : -1;
	c->dgid = e->gid;
}

/* one step of a 1.0 QP, through ibv_modify_qp@IBVERBS_1.0 */
static int modify_10(struct env *e, struct v10_qp *qp, enum ibv_qp_type type, enum ibv_qp_state to,
		     uint32_t remote_qpn)
{
	struct qps_conn c;
	struct ibv_qp_attr a;
	int mask;

	env_conn(e, &c);
	c.dest_qpn = remote_qpn;
	mask = qps_attr(to, type, &c, &a);
	return ibv_modify_qp_10(qp, &a, mask);
}

static int to_init(struct env *e, struct v10_qp *qp, int ud)
{
	return modify_10(e, qp, ud ? IBV_QPT_UD : IBV_QPT_RC, IBV_QPS_INIT, 0);
}

static void fill_ah(struct env *e, struct ibv_ah_attr *ah)
{
	struct qps_conn c;

	env_conn(e, &c);
	qps_ah_attr(&c, ah);
}

static int rc_connect(struct env *e, struct v10_qp *qp, uint32_t remote_qpn)
{
	int ret = modify_10(e, qp, IBV_QPT_RC, IBV_QPS_RTR, remote_qpn);

	return ret ? ret : modify_10(e, qp, IBV_QPT_RC, IBV_QPS_RTS, remote_qpn);
}

/* ibv_query_qp@IBVERBS_1.0 on a QP without an SRQ, in a child: upstream
 * reads the SRQ's context through a NULL pointer there. */
static void query_qp_no_srq(struct v10_qp *qp, struct v10_cq *scq, struct v10_cq *rcq, void *qpc)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct ibv_qp_attr a;
		struct v10_qp_init_attr ia;
		int ret;

		memset(&ia, 0x5a, sizeof ia);
		ret = ibv_query_qp_10(qp, &a, IBV_QP_STATE, &ia);
		_exit(ret ? 2 : (ia.srq == NULL && ia.send_cq == scq && ia.recv_cq == rcq &&
				 ia.qp_context == qpc) ? 0 : 3);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		printf("DIFF query_qp_1_0-without-srq fork-failed\n");
		return;
	}
	if (WIFSIGNALED(st))
		printf("DIFF query_qp_1_0-without-srq signal %d\n", WTERMSIG(st));
	else
		printf("DIFF query_qp_1_0-without-srq %s\n", WEXITSTATUS(st) == 0 ? "ok" :
		       WEXITSTATUS(st) == 2 ? "error" : "wrong-attributes");
	fflush(stdout);
}

static int run_device(const char *name)
{
	struct env e;
	struct v10_device **l10, *dev = NULL;
	struct v10_pd *pd;
	struct v10_mr *mr = NULL;
	struct v10_srq *srq = NULL;
	struct v10_qp *qa, *qb, *ua = NULL, *ub = NULL;
	struct v10_ah *ah = NULL;
	struct ibv_device_attr da, da11;
	struct ibv_port_attr pa, pa11;
	union ibv_gid g11;
	uint16_t pkey, pkey11;
	int n, i, ret;
	char *buf;
	static int cq_ctx_tag, srq_ctx_tag, qa_tag, qb_tag;
	const char *gi = getenv("C10_GID_INDEX");

	memset(&e, 0, sizeof e);
	e.port = 1;
	e.gid_index = gi ? atoi(gi) : 1;

	l10 = ibv_get_device_list_10(&n);
	if (!l10) {
		printf("SKIP device: no device list (errno %s)\n", ename(errno));
		return 77;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name_10(l10[i]), name))
			dev = l10[i];
	if (!dev) {
		printf("SKIP device: %s not listed\n", name);
		ibv_free_device_list_10(l10);
		return 77;
	}

	/* --- context ---------------------------------------------------------- */
	errno = 0;
	e.ctx = ibv_open_device_10(dev);
	check("open_device_1_0", e.ctx != NULL, "NULL, errno %s", ename(errno));
	if (!e.ctx) {
		ibv_free_device_list_10(l10);
		return 1;
	}
	check("context_1_0 fields", e.ctx->device == dev && e.ctx->real_context &&
	      e.ctx->real_context->device == dev->real_device,
	      "device %p/%p real %p", (void *)e.ctx->device, (void *)dev, (void *)e.ctx->real_context);
	check("context_1_0 data-path ops", e.ctx->ops.poll_cq && e.ctx->ops.req_notify_cq &&
	      e.ctx->ops.post_send && e.ctx->ops.post_recv && e.ctx->ops.post_srq_recv, "missing op");

	ret = ibv_query_device_10(e.ctx, &da);
	check("query_device_1_0", ret == 0 && ibv_query_device(e.ctx->real_context, &da11) == 0 &&
	      !memcmp(&da, &da11, sizeof da), "ret %d or differs from 1.1", ret);
	info("device_attr", "ports=%u max_qp_wr=%d max_sge=%d max_cqe=%d max_srq_wr=%d",
	     da.phys_port_cnt, da.max_qp_wr, da.max_sge, da.max_cqe, da.max_srq_wr);

	memset(&pa, 0xa5, sizeof pa);
	ret = ibv_query_port_10(e.ctx, e.port, &pa);
	memset(&pa11, 0xa5, sizeof pa11);
	check("query_port_1_0", ret == 0 && ibv_query_port(e.ctx->real_context, e.port, &pa11) == 0 &&
	      !memcmp(&pa, &pa11, sizeof pa), "ret %d or differs from the header's ibv_query_port", ret);
	info("port_attr", "state=%d max_mtu=%d active_mtu=%d link_layer=%d gid_tbl_len=%d",
	     pa.state, pa.max_mtu, pa.active_mtu, pa.link_layer, pa.gid_tbl_len);
	e.link_eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	e.lid = pa.lid;
	e.mtu = pa.active_mtu < IBV_MTU_1024 ? pa.active_mtu : IBV_MTU_1024;
	if (!e.link_eth)
		e.gid_index = 0;

	ret = ibv_query_gid_10(e.ctx, e.port, e.gid_index, &e.gid);
	check("query_gid_1_0", ret == 0 && ibv_query_gid(e.ctx->real_context, e.port, e.gid_index, &g11) == 0 &&
	      !memcmp(&e.gid, &g11, sizeof g11), "ret %d", ret);
	errno = 0;
	ret = ibv_query_gid_10(e.ctx, e.port, 100000, &g11);
	info("query_gid_1_0 out of range", "ret=%d", ret);
	ret = ibv_query_pkey_10(e.ctx, e.port, 0, &pkey);
	check("query_pkey_1_0", ret == 0 && ibv_query_pkey(e.ctx->real_context, e.port, 0, &pkey11) == 0 &&
	      pkey == pkey11, "ret %d", ret);
	info("pkey[0]", "0x%04x", ntohs(pkey));

	/* --- PD, MR --------------------------------------------------------------- */
	pd = ibv_alloc_pd_10(e.ctx);
	check("alloc_pd_1_0", pd && pd->context == e.ctx && pd->real_pd &&
	      pd->real_pd->context == e.ctx->real_context, "pd %p errno %s", (void *)pd, ename(errno));
	if (!pd)
		goto close;
	buf = aligned_alloc(4096, BUF_SIZE);
	memset(buf, 0, BUF_SIZE);
	mr = ibv_reg_mr_10(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	check("reg_mr_1_0", mr && mr->pd == pd && mr->context == e.ctx && mr->real_mr &&
	      mr->lkey == mr->real_mr->lkey && mr->rkey == mr->real_mr->rkey &&
	      mr->real_mr->addr == buf && mr->real_mr->length == BUF_SIZE &&
	      mr->real_mr->pd == pd->real_pd, "mr %p errno %s", (void *)mr, ename(errno));
	if (!mr)
		goto dealloc;
	errno = 0;
	{
		struct v10_mr *bad = ibv_reg_mr_10(pd, buf, BUF_SIZE, IBV_ACCESS_REMOTE_WRITE);

		info("reg_mr_1_0 remote-write without local-write", "%s errno=%s",
		     bad ? "ok" : "NULL", bad ? "0" : ename(errno));
		if (bad)
			ibv_dereg_mr_10(bad);
	}

	/* --- CQs, SRQ ------------------------------------------------------------- */
	e.ch = ibv_create_comp_channel(e.ctx->real_context);
	check("create_comp_channel (on the real context)", e.ch != NULL, "errno %s", ename(errno));
	e.scq = ibv_create_cq_10(e.ctx, 32, NULL, NULL, 0);
	e.rcq = e.ch ? ibv_create_cq_10(e.ctx, 32, &cq_ctx_tag, e.ch, 0) : NULL;
	check("create_cq_1_0", e.scq && e.rcq && e.rcq->context == e.ctx && e.rcq->cq_context == &cq_ctx_tag &&
	      e.rcq->cqe == 32 && e.rcq->real_cq && e.rcq->real_cq->cq_context == e.rcq &&
	      e.rcq->real_cq->channel == e.ch && e.scq->real_cq->channel == NULL,
	      "scq %p rcq %p errno %s", (void *)e.scq, (void *)e.rcq, ename(errno));
	if (!e.scq || !e.rcq)
		goto destroy_cq;
	ret = ibv_resize_cq_10(e.scq, 64);
	info("resize_cq_1_0", "ret=%s cqe>=64:%d", ename(ret < 0 ? -ret : ret), e.scq->real_cq->cqe >= 64);

	{
		struct ibv_srq_init_attr sa;
		struct ibv_srq_attr q;

		memset(&sa, 0, sizeof sa);
		sa.srq_context = &srq_ctx_tag;
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		srq = ibv_create_srq_10(pd, &sa);
		check("create_srq_1_0", srq && srq->context == e.ctx && srq->pd == pd &&
		      srq->srq_context == &srq_ctx_tag && srq->real_srq &&
		      srq->real_srq->srq_context == srq, "srq %p errno %s", (void *)srq, ename(errno));
		if (!srq)
			goto destroy_cq;
		ret = ibv_query_srq_10(srq, &q);
		check("query_srq_1_0", ret == 0 && q.max_wr >= 16 && q.max_sge >= 1, "ret %d", ret);
	}

	/* --- RC QPs ----------------------------------------------------------------- */
	{
		struct v10_qp_init_attr ia;
		struct ibv_qp_attr a;

		memset(&ia, 0, sizeof ia);
		ia.qp_context = &qa_tag;
		ia.send_cq = e.scq;
		ia.recv_cq = e.rcq;
		ia.srq = srq;
		ia.cap.max_send_wr = 16;
		ia.cap.max_recv_wr = 16;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.qp_type = IBV_QPT_RC;
		qa = ibv_create_qp_10(pd, &ia);
		check("create_qp_1_0 (RC, SRQ)", qa && qa->context == e.ctx && qa->pd == pd &&
		      qa->send_cq == e.scq && qa->recv_cq == e.rcq && qa->srq == srq &&
		      qa->qp_context == &qa_tag && qa->qp_type == IBV_QPT_RC && qa->real_qp &&
		      qa->qp_num == qa->real_qp->qp_num && qa->real_qp->qp_context == qa &&
		      qa->real_qp->send_cq == e.scq->real_cq && qa->real_qp->srq == srq->real_srq &&
		      ia.cap.max_send_wr >= 16 && ia.cap.max_send_sge >= 1,
		      "qp %p errno %s", (void *)qa, ename(errno));
		if (!qa)
			goto destroy_srq;

		memset(&ia, 0, sizeof ia);
		ia.qp_context = &qb_tag;
		ia.send_cq = e.scq;
		ia.recv_cq = e.rcq;
		ia.cap.max_send_wr = 16;
		ia.cap.max_recv_wr = 16;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.qp_type = IBV_QPT_RC;
		qb = ibv_create_qp_10(pd, &ia);
		check("create_qp_1_0 (RC)", qb && qb->srq == NULL && qb->real_qp &&
		      qb->qp_num == qb->real_qp->qp_num && qb->real_qp->qp_context == qb &&
		      ia.cap.max_recv_wr >= 16 && ia.cap.max_recv_sge >= 1,
		      "qp %p errno %s", (void *)qb, ename(errno));
		if (!qb)
			goto destroy_qa;

		memset(&ia, 0x5a, sizeof ia);
		ret = ibv_query_qp_10(qa, &a, IBV_QP_STATE | IBV_QP_CAP, &ia);
		check("query_qp_1_0 translates back to 1.0 objects", ret == 0 && a.qp_state == IBV_QPS_RESET &&
		      ia.qp_context == &qa_tag && ia.send_cq == e.scq && ia.recv_cq == e.rcq &&
		      ia.srq == srq && ia.qp_type == IBV_QPT_RC, "ret %d state %d", ret, a.qp_state);
		query_qp_no_srq(qb, e.scq, e.rcq, &qb_tag);

		ret = to_init(&e, qa, 0);
		check("modify_qp_1_0 RESET->INIT", ret == 0 && to_init(&e, qb, 0) == 0 &&
		      qa->real_qp->state == IBV_QPS_INIT && qb->real_qp->state == IBV_QPS_INIT, "ret %d", ret);
		ret = ibv_query_qp_10(qa, &a, IBV_QP_STATE, &ia);
		check("query_qp_1_0 INIT", ret == 0 && a.qp_state == IBV_QPS_INIT, "ret %d state %d", ret, a.qp_state);
	}

	{
		union ibv_gid mgid;

		memset(&mgid, 0, sizeof mgid);
		mgid.raw[0] = 0xff;
		mgid.raw[15] = 1;
		ret = ibv_attach_mcast_10(qa, &mgid, 0);
		info("attach_mcast_1_0 on RC", "%s", ret ? "fails" : "ok");
		if (!ret)
			ibv_detach_mcast_10(qa, &mgid, 0);
	}

	/* --- receives (1.0 lists, bad_wr maps back to the 1.0 request) -------------- */
	{
		struct ibv_sge sg[2], sgbad[8];
		struct v10_recv_wr w[2], *bad = NULL;
		struct v10_recv_wr s[4], *sbad = NULL;
		struct ibv_srq_attr q;
		int k;

		sg[0] = (struct ibv_sge){ (uintptr_t)buf + 512, 256, mr->lkey };
		memset(w, 0, sizeof w);
		w[0] = (struct v10_recv_wr){ &w[1], 0xB1, &sg[0], 1 };
		for (k = 0; k < 8; k++)
			sgbad[k] = (struct ibv_sge){ (uintptr_t)buf + 768, 8, mr->lkey };
		w[1] = (struct v10_recv_wr){ NULL, 0xB2, sgbad, 8 };
		ret = e.ctx->ops.post_recv(qb, w, &bad);
		check("post_recv_1_0 list with a bad second request", ret != 0 && bad == &w[1],
		      "ret %d bad %p (w %p, w+1 %p)", ret, (void *)bad, (void *)&w[0], (void *)&w[1]);

		for (k = 0; k < 3; k++)
			s[k] = (struct v10_recv_wr){ &s[k + 1], 0x50 + k, NULL, 1 };
		{
			static struct ibv_sge ssg[4];

			for (k = 0; k < 4; k++) {
				ssg[k] = (struct ibv_sge){ (uintptr_t)buf + 1024 + 256 * k, 256, mr->lkey };
				s[k].sg_list = &ssg[k];
			}
		}
		s[2].next = NULL;
		ret = e.ctx->ops.post_srq_recv(srq, s, &sbad);
		check("post_srq_recv_1_0 list of 3", ret == 0, "ret %d", ret);
		s[3] = (struct v10_recv_wr){ NULL, 0x60, sgbad, 8 };
		sbad = NULL;
		ret = e.ctx->ops.post_srq_recv(srq, &s[3], &sbad);
		check("post_srq_recv_1_0 bad request", ret != 0 && sbad == &s[3], "ret %d bad %p", ret, (void *)sbad);

		memset(&q, 0, sizeof q);
		q.srq_limit = 3;
		ret = ibv_modify_srq_10(srq, &q, IBV_SRQ_LIMIT);
		check("modify_srq_1_0 arm limit", ret == 0, "ret %d", ret);
	}

	/* --- connect, send A->B with immediate, B->A into the SRQ ------------------ */
	ret = rc_connect(&e, qa, qb->qp_num);
	if (!ret)
		ret = rc_connect(&e, qb, qa->qp_num);
	check("modify_qp_1_0 INIT->RTR->RTS (loopback)", ret == 0 && qa->real_qp->state == IBV_QPS_RTS &&
	      qb->real_qp->state == IBV_QPS_RTS, "ret %d", ret);
	if (ret)
		goto destroy_qb;
	{
		struct ibv_sge sg = { (uintptr_t)buf, 64, mr->lkey };
		struct v10_send_wr w, *bad = NULL;
		struct ibv_wc wc;
		struct v10_cq *evcq = NULL;
		void *evctx = NULL;
		struct pollfd pfd;

		for (i = 0; i < 64; i++)
			buf[i] = (char)(i * 7 + 1);
		ret = e.ctx->ops.req_notify_cq(e.rcq, 0);
		check("req_notify_cq_1_0", ret == 0, "ret %d", ret);
		memset(&w, 0, sizeof w);
		w.wr_id = 0xA1;
		w.sg_list = &sg;
		w.num_sge = 1;
		w.opcode = IBV_WR_SEND_WITH_IMM;
		w.send_flags = IBV_SEND_SIGNALED;
		w.imm_data = htonl(0x11223344);
		ret = e.ctx->ops.post_send(qa, &w, &bad);
		check("post_send_1_0 SEND_WITH_IMM", ret == 0, "ret %d", ret);

		pfd.fd = e.ch->fd;
		pfd.events = POLLIN;
		ret = poll(&pfd, 1, 20000);
		check("completion event", ret == 1, "poll %d", ret);
		if (ret == 1) {
			ret = ibv_get_cq_event_10(e.ch, &evcq, &evctx);
			check("get_cq_event_1_0 returns the 1.0 CQ and its context", ret == 0 && evcq == e.rcq &&
			      evctx == &cq_ctx_tag, "ret %d cq %p ctx %p", ret, (void *)evcq, evctx);
			if (ret == 0)
				ibv_ack_cq_events_10(evcq, 1);
			check("ack_cq_events_1_0", e.rcq->real_cq->comp_events_completed == 1, "%u",
			      e.rcq->real_cq->comp_events_completed);
		}
		ret = poll_one(&e, e.rcq, &wc, 20);
		check("poll_cq_1_0 receive", ret == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0xB1 &&
		      wc.opcode == IBV_WC_RECV && wc.byte_len == 64 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      wc.imm_data == htonl(0x11223344) && wc.qp_num == qb->qp_num &&
		      !memcmp(buf + 512, buf, 64),
		      "ret %d status %d wr_id %llx byte_len %u", ret, wc.status,
		      (unsigned long long)wc.wr_id, wc.byte_len);
		ret = poll_one(&e, e.scq, &wc, 20);
		check("poll_cq_1_0 send", ret == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0xA1 &&
		      wc.opcode == IBV_WC_SEND, "ret %d status %d wr_id %llx", ret, wc.status,
		      (unsigned long long)wc.wr_id);

		/* B -> A: a good send followed by a bad one in one 1.0 list. */
		{
			struct ibv_sge sg2 = { (uintptr_t)buf + 2048, 100, mr->lkey }, sgbad[8];
			struct v10_send_wr l[2];
			int k;

			for (k = 0; k < 100; k++)
				buf[2048 + k] = (char)(k * 3 + 5);
			for (k = 0; k < 8; k++)
				sgbad[k] = (struct ibv_sge){ (uintptr_t)buf + 4096, 8, mr->lkey };
			memset(l, 0, sizeof l);
			l[0].next = &l[1];
			l[0].wr_id = 0xB3;
			l[0].sg_list = &sg2;
			l[0].num_sge = 1;
			l[0].opcode = IBV_WR_SEND;
			l[0].send_flags = IBV_SEND_SIGNALED;
			l[1].wr_id = 0xB4;
			l[1].sg_list = sgbad;
			l[1].num_sge = 8;
			l[1].opcode = IBV_WR_SEND;
			l[1].send_flags = IBV_SEND_SIGNALED;
			bad = NULL;
			ret = e.ctx->ops.post_send(qb, l, &bad);
			check("post_send_1_0 list with a bad second request", ret != 0 && bad == &l[1],
			      "ret %d bad %p (l %p, l+1 %p)", ret, (void *)bad, (void *)&l[0], (void *)&l[1]);
			ret = poll_one(&e, e.rcq, &wc, 20);
			check("poll_cq_1_0 SRQ receive", ret == 1 && wc.status == IBV_WC_SUCCESS &&
			      wc.wr_id == 0x50 && wc.byte_len == 100 && wc.qp_num == qa->qp_num &&
			      !memcmp(buf + 1024, buf + 2048, 100),
			      "ret %d status %d wr_id %llx byte_len %u", ret, wc.status,
			      (unsigned long long)wc.wr_id, wc.byte_len);
			ret = poll_one(&e, e.scq, &wc, 20);
			check("poll_cq_1_0 send B->A", ret == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0xB3,
			      "ret %d status %d wr_id %llx", ret, wc.status, (unsigned long long)wc.wr_id);
		}

		/* SRQ limit: 3 posted, limit 3, one consumed -> limit event,
		 * reported on the 1.0 SRQ. */
		{
			struct ibv_async_event ev;
			int afd = e.ctx->real_context->async_fd;

			pfd.fd = afd;
			pfd.events = POLLIN;
			ret = poll(&pfd, 1, 10000);
			if (ret != 1) {
				check("get_async_event_1_0 SRQ_LIMIT_REACHED", 0, "no event within 10 s");
			} else {
				ret = ibv_get_async_event_10(e.ctx, &ev);
				check("get_async_event_1_0 SRQ_LIMIT_REACHED on the 1.0 SRQ", ret == 0 &&
				      ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
				      ev.element.srq == (struct ibv_srq *)srq, "ret %d type %d srq %p",
				      ret, ev.event_type, (void *)ev.element.srq);
				if (ret == 0) {
					ibv_ack_async_event_10(&ev);
					check("ack_async_event_1_0 on the real SRQ",
					      srq->real_srq->events_completed == 1, "%u",
					      srq->real_srq->events_completed);
				}
			}
		}
	}

	/* --- UD with a 1.0 address handle ----------------------------------------- */
	{
		struct ibv_ah_attr aa;
		struct v10_qp_init_attr ia;

		fill_ah(&e, &aa);
		ah = ibv_create_ah_10(pd, &aa);
		check("create_ah_1_0", ah && ah->pd == pd && ah->context == e.ctx && ah->real_ah &&
		      ah->real_ah->pd == pd->real_pd, "ah %p errno %s", (void *)ah, ename(errno));
		memset(&ia, 0, sizeof ia);
		ia.send_cq = e.scq;
		ia.recv_cq = e.rcq;
		ia.cap.max_send_wr = 4;
		ia.cap.max_recv_wr = 4;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.qp_type = IBV_QPT_UD;
		ua = ibv_create_qp_10(pd, &ia);
		ub = ibv_create_qp_10(pd, &ia);
		check("create_qp_1_0 (UD)", ua && ub && ua->qp_type == IBV_QPT_UD, "errno %s", ename(errno));
		if (ah && ua && ub) {
			struct ibv_sge rs = { (uintptr_t)buf + 5120, GRH + 128, mr->lkey };
			struct ibv_sge ss = { (uintptr_t)buf + 6144, 128, mr->lkey };
			struct v10_recv_wr r = { NULL, 0xD1, &rs, 1 }, *rbad = NULL;
			struct v10_send_wr s, *sbad = NULL;
			struct ibv_wc wc;
			int k;

			ret = to_init(&e, ua, 1);
			if (!ret)
				ret = to_init(&e, ub, 1);
			if (!ret)
				ret = modify_10(&e, ua, IBV_QPT_UD, IBV_QPS_RTR, 0);
			if (!ret)
				ret = modify_10(&e, ub, IBV_QPT_UD, IBV_QPS_RTR, 0);
			if (!ret)
				ret = modify_10(&e, ua, IBV_QPT_UD, IBV_QPS_RTS, 0);
			check("modify_qp_1_0 UD to RTS", ret == 0, "ret %d", ret);
			if (!ret)
				ret = e.ctx->ops.post_recv(ub, &r, &rbad);
			check("post_recv_1_0 UD", ret == 0, "ret %d", ret);
			for (k = 0; k < 128; k++)
				buf[6144 + k] = (char)(k ^ 0x5a);
			memset(&s, 0, sizeof s);
			s.wr_id = 0xD2;
			s.sg_list = &ss;
			s.num_sge = 1;
			s.opcode = IBV_WR_SEND;
			s.send_flags = IBV_SEND_SIGNALED;
			s.wr.ud.ah = ah;
			s.wr.ud.remote_qpn = ub->qp_num;
			s.wr.ud.remote_qkey = 0x11111111;
			if (!ret)
				ret = e.ctx->ops.post_send(ua, &s, &sbad);
			check("post_send_1_0 UD through a 1.0 address handle", ret == 0, "ret %d", ret);
			if (!ret) {
				ret = poll_one(&e, e.rcq, &wc, 20);
				check("poll_cq_1_0 UD receive", ret == 1 && wc.status == IBV_WC_SUCCESS &&
				      wc.wr_id == 0xD1 && wc.byte_len == GRH + 128 && wc.qp_num == ub->qp_num &&
				      wc.src_qp == ua->qp_num && !memcmp(buf + 5120 + GRH, buf + 6144, 128),
				      "ret %d status %d wr_id %llx byte_len %u", ret, wc.status,
				      (unsigned long long)wc.wr_id, wc.byte_len);
				ret = poll_one(&e, e.scq, &wc, 20);
				check("poll_cq_1_0 UD send", ret == 1 && wc.status == IBV_WC_SUCCESS &&
				      wc.wr_id == 0xD2, "ret %d status %d", ret, wc.status);
			}
		}
		if (ua)
			check("destroy_qp_1_0 (UD)", ibv_destroy_qp_10(ua) == 0, "failed");
		if (ub)
			check("destroy_qp_1_0 (UD) 2", ibv_destroy_qp_10(ub) == 0, "failed");
		if (ah)
			check("destroy_ah_1_0", ibv_destroy_ah_10(ah) == 0, "failed");
	}

	/* --- teardown ------------------------------------------------------------ */
destroy_qb:
	check("destroy_qp_1_0", ibv_destroy_qp_10(qb) == 0, "failed");
destroy_qa:
	check("destroy_qp_1_0 (SRQ)", ibv_destroy_qp_10(qa) == 0, "failed");
destroy_srq:
	if (srq)
		check("destroy_srq_1_0", ibv_destroy_srq_10(srq) == 0, "failed");
destroy_cq:
	if (e.rcq)
		check("destroy_cq_1_0 (channel)", ibv_destroy_cq_10(e.rcq) == 0, "failed");
	if (e.scq)
		check("destroy_cq_1_0", ibv_destroy_cq_10(e.scq) == 0, "failed");
	if (e.ch)
		check("destroy_comp_channel", ibv_destroy_comp_channel(e.ch) == 0, "failed");
	if (mr)
		check("dereg_mr_1_0", ibv_dereg_mr_10(mr) == 0, "failed");
dealloc:
	check("dealloc_pd_1_0", ibv_dealloc_pd_10(pd) == 0, "failed");
close:
	check("close_device_1_0", ibv_close_device_10(e.ctx) == 0, "failed");
	ibv_free_device_list_10(l10);
	return failed;
}

int main(int argc, char **argv)
{
	Dl_info di;

	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(120);
	/* Which library the 1.0 references were bound to. */
	if (dladdr((void *)ibv_open_device_10, &di) && di.dli_fname)
		printf("LIB %s\n", di.dli_fname);
	if (argc == 2 && !strcmp(argv[1], "nodev"))
		return run_nodev();
	if (argc == 3 && !strcmp(argv[1], "device"))
		return run_device(argv[2]);
	fprintf(stderr, "usage: %s nodev | device NAME\n", argv[0]);
	return 2;
}
