/*
 * vm-rcerr: RC error completions, one case per error class.
 *
 *   rcerr DEVICE GID_INDEX [CASE...]   run every case (or the named ones)
 *   rcerr --list                        the case names, one per line
 *
 * Every case runs in a child process of its own (fork) with fresh objects:
 * one context on DEVICE, a PD, a requester QP A and a responder QP B (RC,
 * each with a CQ of its own), connected to each other in this process
 * (loopback: B's address is A's own GID).  The case posts its bad work
 * request on A (usually followed by a good SEND, which must be flushed once
 * A is in error) and lets B hold two receives, then waits for A's
 * completions (at most 6 s), lets B settle (150 ms) and prints
 *
 *   NAME|post=R|A=ST,ST...|B=ST,ST...|qpA=STATE|qpB=STATE|evA=EV...|evB=EV...
 *
 * post: what ibv_post_send of the bad request returned (0 or the errno
 * name); A/B: the completion statuses on A's and B's CQ in order ("-":
 * none; "TIMEOUT" appended when A did not complete everything it posted);
 * qpA/qpB: ibv_query_qp's state after (or "gone"); evA/evB: the affiliated
 * async events of each QP (the context's async fd, read without blocking).
 * setup failures: NAME|setup|WHAT:ERRNO.  A child that dies: NAME|signal|SIG.
 *
 * Built with Debian's headers; LD_LIBRARY_PATH picks the library.  Written
 * for this project (not from rdma-core).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUFSZ (1 << 16)
#define MRSZ 8192

typedef struct env {
	const char *devname;
	int gidx;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
	struct ibv_srq *srq;
	char *la, *rb;             /* A's local buffer, B's target buffer */
	struct ibv_mr *mra, *mrb;  /* full local rights / the case's remote rights */
	union ibv_gid gid;
	int b_gone;
	int nposted;               /* A's signaled WRs */
	char post[32];
	/* the case's knobs (set before connect) */
	int b_access;              /* B's qp_access_flags */
	int mrb_access;            /* B's MR rights */
	int rnr_retry, retry_cnt, timeout;
	enum ibv_mtu mtu_a, mtu_b;
	int b_state;               /* how far B goes: IBV_QPS_RESET/INIT/RTR/RTS */
	int a_state;               /* how far A goes: RTR or RTS */
	int b_recvs;               /* receives B holds (2048 bytes each) */
	int b_dest;                /* A's dest QPN override (0: B's) */
	int a_ex;                  /* A made with ibv_create_qp_ex (ibv_wr_* send ops) */
	int check_data;            /* READ: check what lands (DATA_OK / DATA_BAD in A) */
	uint32_t data_len;         /* (set by req: the READ's length and offset) */
	uint64_t data_off;
} E;

struct tcase {
	const char *name;
	void (*fn)(E *);
};
static struct tcase cases[128];
static int ncases;
static const char *cur;

static void reg(const char *name, void (*fn)(E *))
{
	if (ncases < (int)(sizeof(cases) / sizeof(cases[0])))
		cases[ncases++] = (struct tcase){name, fn};
}

#define C(nm)                                                                    \
	static void c_##nm(E *e);                                                \
	__attribute__((constructor)) static void r_##nm(void) { reg(#nm, c_##nm); } \
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

static void setup_fail(const char *what)
{
	printf("%s|setup|%s:%s\n", cur, what, ename(errno));
	fflush(stdout);
	_exit(3);
}

static const char *wcname(int s)
{
	static const char *n[] = {
		"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR",
		"MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR",
		"REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR",
		"REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR",
		"GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE"};
	static char b[16];
	if (s >= 0 && s < (int)(sizeof(n) / sizeof(n[0])))
		return n[s];
	snprintf(b, sizeof(b), "st%d", s);
	return b;
}

static const char *qpsname(int s)
{
	static const char *n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	static char b[16];
	if (s >= 0 && s < 7)
		return n[s];
	snprintf(b, sizeof(b), "qps%d", s);
	return b;
}

static const char *evname(int t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL: return "QP_FATAL";
	case IBV_EVENT_QP_REQ_ERR: return "QP_REQ_ERR";
	case IBV_EVENT_QP_ACCESS_ERR: return "QP_ACCESS_ERR";
	case IBV_EVENT_COMM_EST: return "COMM_EST";
	case IBV_EVENT_SQ_DRAINED: return "SQ_DRAINED";
	case IBV_EVENT_PATH_MIG: return "PATH_MIG";
	case IBV_EVENT_PATH_MIG_ERR: return "PATH_MIG_ERR";
	case IBV_EVENT_QP_LAST_WQE_REACHED: return "LAST_WQE_REACHED";
	case IBV_EVENT_SRQ_ERR: return "SRQ_ERR";
	case IBV_EVENT_SRQ_LIMIT_REACHED: return "SRQ_LIMIT";
	case IBV_EVENT_CQ_ERR: return "CQ_ERR";
	default: {
		static char b[16];
		snprintf(b, sizeof(b), "ev%d", t);
		return b;
	}
	}
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- set-up ---------------------------------------------------------- */

static void open_all(E *e)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n), *d = NULL;
	if (!l)
		setup_fail("get_device_list");
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), e->devname))
			d = l[i];
	if (!d) {
		errno = ENODEV;
		setup_fail("device");
	}
	if (!(e->ctx = ibv_open_device(d)))
		setup_fail("open_device");
	if (ibv_query_gid(e->ctx, 1, e->gidx, &e->gid))
		setup_fail("query_gid");
	int fl = fcntl(e->ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(e->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		setup_fail("async_fd");
	if (!(e->pd = ibv_alloc_pd(e->ctx)))
		setup_fail("alloc_pd");
	if (!(e->cqa = ibv_create_cq(e->ctx, 32, NULL, NULL, 0)) || !(e->cqb = ibv_create_cq(e->ctx, 32, NULL, NULL, 0)))
		setup_fail("create_cq");
	char *m = mmap(NULL, 2 * BUFSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		setup_fail("mmap");
	memset(m, 0x5a, 2 * BUFSZ);
	e->la = m;
	e->rb = m + BUFSZ;
	int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (!(e->mra = ibv_reg_mr(e->pd, e->la, BUFSZ, IBV_ACCESS_LOCAL_WRITE)))
		setup_fail("reg_mr_a");
	if (!(e->mrb = ibv_reg_mr(e->pd, e->rb, MRSZ, e->mrb_access ? e->mrb_access : all)))
		setup_fail("reg_mr_b");
}

static struct ibv_qp *mkqp(E *e, struct ibv_cq *cq, enum ibv_qp_type t, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa = {.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = t,
				      .cap = {.max_send_wr = 8, .max_recv_wr = srq ? 0 : 8, .max_send_sge = 2,
					      .max_recv_sge = 2}};
	return ibv_create_qp(e->pd, &qa);
}

static int to_init(struct ibv_qp *q, int access)
{
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qp_access_flags = access};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (q->qp_type != IBV_QPT_UD)
		mask |= IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(q, &at, mask);
}

static int to_rtr(E *e, struct ibv_qp *q, uint32_t dest, enum ibv_mtu mtu)
{
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = dest, .rq_psn = 100,
				 .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
				 .ah_attr = {.is_global = 1, .port_num = 1, .sl = 0,
					     .grh = {.dgid = e->gid, .sgid_index = e->gidx, .hop_limit = 64}}};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (q->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return ibv_modify_qp(q, &at, mask);
}

static int to_rts(E *e, struct ibv_qp *q)
{
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_RTS, .sq_psn = 100, .timeout = e->timeout,
				 .retry_cnt = e->retry_cnt, .rnr_retry = e->rnr_retry, .max_rd_atomic = 1};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (q->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(q, &at, mask);
}

static void post_recv(E *e, struct ibv_qp *q, uint64_t id, char *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_recv_wr w = {.wr_id = id, .sg_list = &s, .num_sge = len ? 1 : 0}, *bad;
	if (ibv_post_recv(q, &w, &bad))
		setup_fail("post_recv");
}

/* A and B made and brought as far as the case asks; B holds b_recvs
 * receives of 2048 bytes (into the start of B's MR: the SEND target) */
static void connect_ab(E *e, enum ibv_qp_type t)
{
	if (e->a_ex) {
		struct ibv_qp_init_attr_ex qa = {
			.send_cq = e->cqa, .recv_cq = e->cqa, .qp_type = t, .pd = e->pd,
			.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2},
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
					  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD};
		if (!(e->a = ibv_create_qp_ex(e->ctx, &qa)))
			setup_fail("create_qp_ex");
	} else if (!(e->a = mkqp(e, e->cqa, t, NULL)))
		setup_fail("create_qp");
	if (!(e->b = mkqp(e, e->cqb, t, e->srq)))
		setup_fail("create_qp");
	if (to_init(e->a, 0))
		setup_fail("init_a");
	uint32_t bq = e->b_dest ? (uint32_t)e->b_dest : e->b->qp_num;
	if (to_rtr(e, e->a, bq, e->mtu_a))
		setup_fail("rtr_a");
	if (e->a_state == IBV_QPS_RTS && to_rts(e, e->a))
		setup_fail("rts_a");
	if (e->b_state >= IBV_QPS_INIT && to_init(e->b, e->b_access))
		setup_fail("init_b");
	for (int i = 0; i < e->b_recvs; i++) {
		if (e->srq) {
			struct ibv_sge s = {.addr = (uintptr_t)e->rb + 2048 * i, .length = 2048, .lkey = e->mrb->lkey};
			struct ibv_recv_wr w = {.wr_id = 100 + i, .sg_list = &s, .num_sge = 1}, *bad;
			if (ibv_post_srq_recv(e->srq, &w, &bad))
				setup_fail("post_srq_recv");
		} else if (e->b_state >= IBV_QPS_INIT) {
			post_recv(e, e->b, 100 + i, e->rb + 2048 * i, 2048, e->mrb->lkey);
		}
	}
	if (e->b_state >= IBV_QPS_RTR && to_rtr(e, e->b, e->a->qp_num, e->mtu_b))
		setup_fail("rtr_b");
	if (e->b_state >= IBV_QPS_RTS && to_rts(e, e->b))
		setup_fail("rts_b");
}

/* ---- the work requests ----------------------------------------------- */

static void post(E *e, struct ibv_send_wr *w)
{
	struct ibv_send_wr *bad;
	int r = ibv_post_send(e->a, w, &bad);
	if (!e->post[0])
		snprintf(e->post, sizeof(e->post), "%s", ename(r));
	if (r == 0)
		e->nposted++;
}

/* one request of opcode op, len bytes from A's buffer (lkey: A's MR's),
 * to B's buffer at offset off with rkey (0: B's MR's) */
static void req(E *e, enum ibv_wr_opcode op, uint32_t len, uint64_t off, uint32_t rkey)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->la, .length = len, .lkey = e->mra->lkey};
	struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = len ? 1 : 0, .opcode = op,
				.send_flags = IBV_SEND_SIGNALED};
	w.wr.rdma.remote_addr = (uintptr_t)e->rb + off;
	w.wr.rdma.rkey = rkey ? rkey : e->mrb->rkey;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = (uintptr_t)e->rb + off;
		w.wr.atomic.rkey = rkey ? rkey : e->mrb->rkey;
		w.wr.atomic.compare_add = 1;
		w.wr.atomic.swap = 2;
	}
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND_WITH_IMM)
		w.imm_data = htonl(0x1234);
	if (e->check_data) {
		/* a pattern at the target, zeros where it is to land */
		for (uint32_t i = 0; i < len; i++)
			e->rb[off + i] = (char)(i * 7 + i / 251 + 3);
		memset(e->la, 0, len);
		e->data_len = len;
		e->data_off = off;
	}
	post(e, &w);
}

/* the good SEND after the bad request: flushed once A is in error */
static void trailer(E *e)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->la, .length = 16, .lkey = e->mra->lkey};
	struct ibv_send_wr w = {.wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED}, *bad;
	if (ibv_post_send(e->a, &w, &bad) == 0)
		e->nposted++;
}

/* ---- the outcome ----------------------------------------------------- */

static void add(char *b, size_t n, const char *s)
{
	size_t l = strlen(b);
	snprintf(b + l, n - l, "%s%s", l ? "," : "", s);
}

static int drain(struct ibv_cq *cq, char *b, size_t n)
{
	struct ibv_wc wc[8];
	int got = 0, k;
	while ((k = ibv_poll_cq(cq, 8, wc)) > 0) {
		for (int i = 0; i < k; i++)
			add(b, n, wcname(wc[i].status));
		got += k;
	}
	return got;
}

static void events(E *e, char *ea, char *eb, size_t n)
{
	struct ibv_async_event ev;
	while (ibv_get_async_event(e->ctx, &ev) == 0) {
		if (ev.element.qp && ev.element.qp == e->a)
			add(ea, n, evname(ev.event_type));
		else if (ev.element.qp && ev.element.qp == e->b)
			add(eb, n, evname(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

static const char *state(struct ibv_qp *q, int gone)
{
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;
	if (gone || !q)
		return "gone";
	if (ibv_query_qp(q, &at, IBV_QP_STATE, &ia))
		return ename(errno);
	return qpsname(at.qp_state);
}

static void finish(E *e)
{
	char a[256] = "", b[256] = "", ea[128] = "", eb[128] = "";
	int got = 0;
	double t0 = now_s();
	while (got < e->nposted && now_s() - t0 < 6) {
		got += drain(e->cqa, a, sizeof(a));
		if (!e->b_gone)
			drain(e->cqb, b, sizeof(b));
		events(e, ea, eb, sizeof(ea));
		usleep(1000);
	}
	if (got < e->nposted)
		add(a, sizeof(a), "TIMEOUT");
	if (e->check_data)
		add(a, sizeof(a), memcmp(e->la, e->rb + e->data_off, e->data_len) ? "DATA_BAD" : "DATA_OK");
	t0 = now_s();
	while (now_s() - t0 < 0.15) {
		drain(e->cqa, a, sizeof(a));
		if (!e->b_gone)
			drain(e->cqb, b, sizeof(b));
		events(e, ea, eb, sizeof(ea));
		usleep(2000);
	}
	printf("%s|post=%s|A=%s|B=%s|qpA=%s|qpB=%s|evA=%s|evB=%s\n", cur, e->post[0] ? e->post : "-", a[0] ? a : "-",
	       b[0] ? b : "-", state(e->a, 0), state(e->b, e->b_gone), ea[0] ? ea : "-", eb[0] ? eb : "-");
	fflush(stdout);
}

/* the common shape: objects, A and B connected (RC), the bad request, the
 * trailing SEND, the outcome */
static void rc(E *e, enum ibv_wr_opcode op, uint32_t len, uint64_t off, uint32_t rkey)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	req(e, op, len, off, rkey);
	trailer(e);
	finish(e);
}

#define ALLR (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define BADKEY(e) ((e)->mrb->rkey ^ 0x00ff0000u)
static void rck(E *e, enum ibv_wr_opcode op, uint32_t len, uint64_t off, int badkey)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	req(e, op, len, off, badkey ? BADKEY(e) : 0);
	trailer(e);
	finish(e);
}

/* ---- the cases ------------------------------------------------------- */

/* controls: every operation that must work */
C(ok_send) { rc(e, IBV_WR_SEND, 64, 0, 0); }
C(ok_send_multi_packet) { e->mtu_a = e->mtu_b = IBV_MTU_256; rc(e, IBV_WR_SEND, 1000, 0, 0); }
C(ok_write_multi_packet) { e->mtu_a = e->mtu_b = IBV_MTU_256; rc(e, IBV_WR_RDMA_WRITE, 1000, 512, 0); }
C(ok_read_multi_packet) { e->mtu_a = e->mtu_b = IBV_MTU_256; rc(e, IBV_WR_RDMA_READ, 1000, 512, 0); }
C(ok_send_2k) { rc(e, IBV_WR_SEND, 2048, 0, 0); }
C(ok_write) { rc(e, IBV_WR_RDMA_WRITE, 64, 512, 0); }
C(ok_write_imm) { rc(e, IBV_WR_RDMA_WRITE_WITH_IMM, 64, 512, 0); }
C(ok_read) { rc(e, IBV_WR_RDMA_READ, 64, 512, 0); }
C(ok_cas) { rc(e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 512, 0); }
C(ok_faa) { rc(e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 512, 0); }
C(ok_write_zero_len_bad_rkey) { rck(e, IBV_WR_RDMA_WRITE, 0, 512, 1); }
C(ok_read_zero_len_bad_rkey) { rck(e, IBV_WR_RDMA_READ, 0, 512, 1); }

/* remote access: bad rkey, out of the MR, MR without the right, QP without it */
C(write_bad_rkey) { rck(e, IBV_WR_RDMA_WRITE, 64, 512, 1); }
C(write_out_of_mr) { rc(e, IBV_WR_RDMA_WRITE, 64, MRSZ - 32, 0); }
C(write_mr_no_right) { e->mrb_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ; rc(e, IBV_WR_RDMA_WRITE, 64, 512, 0); }
C(write_qp_no_right) { e->b_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC; rc(e, IBV_WR_RDMA_WRITE, 64, 512, 0); }
C(write_imm_bad_rkey) { rck(e, IBV_WR_RDMA_WRITE_WITH_IMM, 64, 512, 1); }
C(write_imm_qp_no_right) { e->b_access = IBV_ACCESS_REMOTE_READ; rc(e, IBV_WR_RDMA_WRITE_WITH_IMM, 64, 512, 0); }
C(read_bad_rkey) { rck(e, IBV_WR_RDMA_READ, 64, 512, 1); }
C(read_out_of_mr) { rc(e, IBV_WR_RDMA_READ, 64, MRSZ - 32, 0); }
C(read_mr_no_right) { e->mrb_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE; rc(e, IBV_WR_RDMA_READ, 64, 512, 0); }
C(read_qp_no_right) { e->b_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC; rc(e, IBV_WR_RDMA_READ, 64, 512, 0); }
C(cas_bad_rkey) { rck(e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 512, 1); }
C(cas_out_of_mr) { rc(e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, MRSZ, 0); }
C(cas_mr_no_right) { e->mrb_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ; rc(e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 512, 0); }
C(cas_qp_no_right) { e->b_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ; rc(e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 512, 0); }
C(cas_misaligned) { rc(e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 516, 0); }
C(faa_bad_rkey) { rck(e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 512, 1); }
C(faa_out_of_mr) { rc(e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, MRSZ, 0); }
C(faa_mr_no_right) { e->mrb_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ; rc(e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 512, 0); }
C(faa_qp_no_right) { e->b_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ; rc(e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 512, 0); }
C(faa_misaligned) { rc(e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 513, 0); }

/* the same through ibv_wr_* (rxe's provider checks the alignment only in
 * ibv_post_send): the misaligned atomic and a SEND in one wr_complete */
static void wr_atomic_misaligned(E *e, int cas)
{
	e->a_ex = 1;
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(e->a);
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	if (cas)
		ibv_wr_atomic_cmp_swp(qx, e->mrb->rkey, (uintptr_t)e->rb + 516, 1, 2);
	else
		ibv_wr_atomic_fetch_add(qx, e->mrb->rkey, (uintptr_t)e->rb + 516, 1);
	ibv_wr_set_sge(qx, e->mra->lkey, (uintptr_t)e->la, 8);
	qx->wr_id = 2;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, e->mra->lkey, (uintptr_t)e->la, 16);
	int r = ibv_wr_complete(qx);
	snprintf(e->post, sizeof(e->post), "%s", ename(r));
	if (r == 0)
		e->nposted = 2;
	finish(e);
}
C(wr_cas_misaligned) { wr_atomic_misaligned(e, 1); }
C(wr_faa_misaligned) { wr_atomic_misaligned(e, 0); }

/* receive not ready (RNR), rnr_retry 0 */
C(send_rnr) { e->b_recvs = 0; rc(e, IBV_WR_SEND, 64, 0, 0); }
C(write_imm_rnr) { e->b_recvs = 0; rc(e, IBV_WR_RDMA_WRITE_WITH_IMM, 64, 512, 0); }
/* which check comes first: no receive (RNR) or the bad rkey / the range */
C(write_imm_rnr_bad_rkey) { e->b_recvs = 0; rck(e, IBV_WR_RDMA_WRITE_WITH_IMM, 64, 512, 1); }
C(write_imm_rnr_out_of_mr) { e->b_recvs = 0; rc(e, IBV_WR_RDMA_WRITE_WITH_IMM, 64, MRSZ - 32, 0); }
/* WRITE with immediate into a zero-length receive: the data goes to the rkey */
C(write_imm_zero_len_recv)
{
	e->b_recvs = 0;
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	post_recv(e, e->b, 100, e->rb, 0, e->mrb->lkey);
	post_recv(e, e->b, 101, e->rb + 2048, 2048, e->mrb->lkey);
	req(e, IBV_WR_RDMA_WRITE_WITH_IMM, 64, 512, 0);
	trailer(e);
	finish(e);
}

/* the receive is too short */
C(send_too_long) { rc(e, IBV_WR_SEND, 3000, 0, 0); }
C(send_too_long_multi_packet) { e->mtu_a = e->mtu_b = IBV_MTU_256; rc(e, IBV_WR_SEND, 2100, 0, 0); }
C(send_into_zero_sge_recv)
{
	e->b_recvs = 0;
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	post_recv(e, e->b, 100, e->rb, 0, e->mrb->lkey);
	post_recv(e, e->b, 101, e->rb + 2048, 2048, e->mrb->lkey);
	req(e, IBV_WR_SEND, 64, 0, 0);
	trailer(e);
	finish(e);
}
/* the responder's receive has a bad lkey */
C(send_recv_bad_lkey)
{
	e->b_recvs = 0;
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	post_recv(e, e->b, 100, e->rb, 2048, e->mrb->lkey ^ 0x00ff0000u);
	post_recv(e, e->b, 101, e->rb + 2048, 2048, e->mrb->lkey);
	req(e, IBV_WR_SEND, 64, 0, 0);
	trailer(e);
	finish(e);
}
/* SEND with invalidate of a key that is no window */
C(send_inv_mr_rkey)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_sge s = {.addr = (uintptr_t)e->la, .length = 16, .lkey = e->mra->lkey};
	struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
				.send_flags = IBV_SEND_SIGNALED};
	w.invalidate_rkey = e->mrb->rkey;
	post(e, &w);
	trailer(e);
	finish(e);
}

/* one packet longer than the path MTU of the other side (A: 1024, B: 256, the
 * receive has room;
 * for READ the other way round: B answers in 1024-byte packets) */
C(send_over_mtu) { e->mtu_b = IBV_MTU_256; e->mtu_a = IBV_MTU_1024; rc(e, IBV_WR_SEND, 200 + 512, 0, 0); }
C(write_over_mtu) { e->mtu_b = IBV_MTU_256; e->mtu_a = IBV_MTU_1024; rc(e, IBV_WR_RDMA_WRITE, 712, 512, 0); }
C(write_imm_over_mtu) { e->mtu_b = IBV_MTU_256; e->mtu_a = IBV_MTU_1024; rc(e, IBV_WR_RDMA_WRITE_WITH_IMM, 712, 512, 0); }
C(read_over_mtu) { e->mtu_b = IBV_MTU_1024; e->mtu_a = IBV_MTU_256; rc(e, IBV_WR_RDMA_READ, 712, 512, 0); }
/* the same with the data checked: 3 responses of B where A counts 12, and
 * 6000 bytes (6 where A counts 24; our requester asks in parts of 16
 * packets); the control: both ends at 256 */
C(read_over_mtu_data)
{
	e->mtu_b = IBV_MTU_1024; e->mtu_a = IBV_MTU_256; e->check_data = 1;
	rc(e, IBV_WR_RDMA_READ, 3000, 512, 0);
}
C(read_over_mtu_parts)
{
	e->mtu_b = IBV_MTU_1024; e->mtu_a = IBV_MTU_256; e->check_data = 1;
	rc(e, IBV_WR_RDMA_READ, 6000, 1024, 0);
}
C(ok_read_parts_data)
{
	e->mtu_b = IBV_MTU_256; e->mtu_a = IBV_MTU_256; e->check_data = 1;
	rc(e, IBV_WR_RDMA_READ, 6000, 1024, 0);
}

/* local errors at the requester */
C(send_bad_lkey)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_sge s = {.addr = (uintptr_t)e->la, .length = 16, .lkey = e->mra->lkey ^ 0x00ff0000u};
	struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED};
	post(e, &w);
	trailer(e);
	finish(e);
}
C(send_outside_mr)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_sge s = {.addr = (uintptr_t)e->la + BUFSZ - 8, .length = 16, .lkey = e->mra->lkey};
	struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED};
	post(e, &w);
	trailer(e);
	finish(e);
}
C(write_bad_lkey)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_sge s = {.addr = (uintptr_t)e->la, .length = 16, .lkey = e->mra->lkey ^ 0x00ff0000u};
	struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED};
	w.wr.rdma.remote_addr = (uintptr_t)e->rb;
	w.wr.rdma.rkey = e->mrb->rkey;
	post(e, &w);
	trailer(e);
	finish(e);
}
/* READ into local memory without LOCAL_WRITE (B's MR without it) */
C(read_into_readonly_mr)
{
	e->mrb_access = IBV_ACCESS_REMOTE_READ;
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_mr *ro = ibv_reg_mr(e->pd, e->la + BUFSZ / 2, 4096, IBV_ACCESS_REMOTE_READ);
	if (!ro)
		setup_fail("reg_mr_ro");
	struct ibv_sge s = {.addr = (uintptr_t)e->la + BUFSZ / 2, .length = 64, .lkey = ro->lkey};
	struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				.send_flags = IBV_SEND_SIGNALED};
	w.wr.rdma.remote_addr = (uintptr_t)e->rb;
	w.wr.rdma.rkey = e->mrb->rkey;
	post(e, &w);
	trailer(e);
	finish(e);
}

/* the responder QP is not ready: RESET, INIT, ERR, destroyed, no such QP
 * (the requester retries retry_cnt times, then RETRY_EXC_ERR) */
C(send_to_reset) { e->b_state = IBV_QPS_RESET; rc(e, IBV_WR_SEND, 64, 0, 0); }
C(send_to_init) { e->b_state = IBV_QPS_INIT; rc(e, IBV_WR_SEND, 64, 0, 0); }
C(write_to_init) { e->b_state = IBV_QPS_INIT; rc(e, IBV_WR_RDMA_WRITE, 64, 512, 0); }
C(send_to_rtr) { e->b_state = IBV_QPS_RTR; rc(e, IBV_WR_SEND, 64, 0, 0); }
C(read_to_rtr) { e->b_state = IBV_QPS_RTR; rc(e, IBV_WR_RDMA_READ, 64, 512, 0); }
C(send_to_err)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
	if (ibv_modify_qp(e->b, &at, IBV_QP_STATE))
		setup_fail("b_to_err");
	req(e, IBV_WR_SEND, 64, 0, 0);
	trailer(e);
	finish(e);
}
C(read_to_err)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
	if (ibv_modify_qp(e->b, &at, IBV_QP_STATE))
		setup_fail("b_to_err");
	req(e, IBV_WR_RDMA_READ, 64, 512, 0);
	trailer(e);
	finish(e);
}
C(cas_to_err)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
	if (ibv_modify_qp(e->b, &at, IBV_QP_STATE))
		setup_fail("b_to_err");
	req(e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 512, 0);
	trailer(e);
	finish(e);
}
C(send_to_destroyed)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	if (ibv_destroy_qp(e->b))
		setup_fail("destroy_b");
	e->b_gone = 1;
	req(e, IBV_WR_SEND, 64, 0, 0);
	trailer(e);
	finish(e);
}
C(send_to_no_qp) { e->b_dest = 0xfffff0; rc(e, IBV_WR_SEND, 64, 0, 0); }

/* posting on a QP that cannot send: in RTR, in ERR */
C(post_send_in_rtr) { e->a_state = IBV_QPS_RTR; rc(e, IBV_WR_SEND, 64, 0, 0); }
C(post_send_in_err)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
	if (ibv_modify_qp(e->a, &at, IBV_QP_STATE))
		setup_fail("a_to_err");
	req(e, IBV_WR_SEND, 64, 0, 0);
	trailer(e);
	finish(e);
}
C(post_recv_in_err)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
	if (ibv_modify_qp(e->b, &at, IBV_QP_STATE))
		setup_fail("b_to_err");
	struct ibv_sge s = {.addr = (uintptr_t)e->rb, .length = 16, .lkey = e->mrb->lkey};
	struct ibv_recv_wr w = {.wr_id = 7, .sg_list = &s, .num_sge = 1}, *bad;
	int r = ibv_post_recv(e->b, &w, &bad);
	snprintf(e->post, sizeof(e->post), "%s", ename(r));
	finish(e);
}

/* UC with an SRQ at the responder */
C(uc_send_srq)
{
	open_all(e);
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
	if (!(e->srq = ibv_create_srq(e->pd, &sa)))
		setup_fail("create_srq");
	e->a = mkqp(e, e->cqa, IBV_QPT_UC, NULL);
	errno = 0;
	e->b = mkqp(e, e->cqb, IBV_QPT_UC, e->srq);
	if (!e->b) {
		printf("%s|post=create_qp:%s|A=-|B=-|qpA=-|qpB=gone|evA=-|evB=-\n", cur, ename(errno));
		return;
	}
	if (!e->a)
		setup_fail("create_qp_a");
	e->srq = NULL;
	if (to_init(e->a, 0) || to_init(e->b, IBV_ACCESS_REMOTE_WRITE))
		setup_fail("init");
	struct ibv_sge s = {.addr = (uintptr_t)e->rb, .length = 256, .lkey = e->mrb->lkey};
	struct ibv_recv_wr w = {.wr_id = 100, .sg_list = &s, .num_sge = 1}, *bad;
	struct ibv_srq *srq = e->b->srq;
	if (ibv_post_srq_recv(srq, &w, &bad))
		setup_fail("post_srq_recv");
	if (to_rtr(e, e->a, e->b->qp_num, e->mtu_a) || to_rts(e, e->a) || to_rtr(e, e->b, e->a->qp_num, e->mtu_b) ||
	    to_rts(e, e->b))
		setup_fail("connect");
	req(e, IBV_WR_SEND, 64, 0, 0);
	finish(e);
}
/* the first error flushes what follows, on both sides (3 more SENDs) */
C(flush_after_error)
{
	open_all(e);
	connect_ab(e, IBV_QPT_RC);
	req(e, IBV_WR_RDMA_WRITE, 64, 512, BADKEY(e));
	trailer(e);
	trailer(e);
	trailer(e);
	finish(e);
}

/* ===================================================================== */

static void run_one(const struct tcase *c, const char *dev, int gidx)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		E e = {.devname = dev, .gidx = gidx, .rnr_retry = 0, .retry_cnt = 1, .timeout = 12,
		       .mtu_a = IBV_MTU_1024, .mtu_b = IBV_MTU_1024, .b_state = IBV_QPS_RTS, .a_state = IBV_QPS_RTS,
		       .b_recvs = 2, .b_access = ALLR};
		cur = c->name;
		alarm(20);
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
		printf("%s|signal|%s\n", c->name,
		       WTERMSIG(st) == SIGALRM ? "timeout" : sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
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
