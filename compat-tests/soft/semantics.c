/* compat-tests/soft/semantics.c: error semantics and isolation of the
 * software RDMA device, between two processes (fork).
 *
 * The parent is the target: it registers one MR with remote write/read/
 * atomic rights and one with local rights only.  The child is the
 * initiator; for each check it uses a fresh RC QP pair (errors move QPs to
 * the error state).  Output: one "PASS <name>" / "FAIL <name>: why" line per
 * check.  Exit 0 when every check passed. */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/qpsetup.h"

#define NPAIR 13
#define BUF 4096

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp[NPAIR];

static struct ibv_qp *mkqp(void)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2 } };
	struct ibv_qp *q = ibv_create_qp(pd, &a);
	if (!q)
		die("qp");
	return q;
}

static void open_dev(void)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l || n < 1)
		die("no device");
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), "swr0"))
			ctx = ibv_open_device(l[i]);
	if (!ctx)
		die("open swr0");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	for (int i = 0; i < NPAIR; i++)
		qp[i] = mkqp();
}

static void connect_qp(struct ibv_qp *q, uint32_t dqpn)
{
	struct qps_conn c;

	qps_defaults(&c); /* MTU 1024, timeout 14, 7 retries, RNR timer 12 */
	c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	c.dest_qpn = dqpn;
	c.sgid_index = 1;
	if (ibv_query_gid(ctx, 1, 1, &c.dgid))
		die("gid");
	if (qps_to_rts(q, &c, NULL))
		die("modify_qp to RTS");
}

/* Waits for one completion (5 s at most). */
static int wait_wc(struct ibv_wc *wc)
{
	time_t end = time(NULL) + 5;
	while (time(NULL) <= end) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	}
	return 0;
}

struct info { uint32_t qpn[NPAIR]; uint64_t a, b, c; uint32_t rka, rkb, rkc; };

static int post(struct ibv_qp *q, enum ibv_wr_opcode op, void *laddr, uint32_t len, uint32_t lkey,
		uint64_t raddr, uint32_t rkey, uint64_t cmp, uint64_t swap)
{
	struct ibv_sge s = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = raddr; w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = cmp; w.wr.atomic.swap = swap;
	} else {
		w.wr.rdma.remote_addr = raddr; w.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(q, &w, &bad);
}

/* A zero-length RDMA operation (num_sge 0) with rkey 0 and address 0, as
 * UCX posts to flush a connection: IBTA C9-88, the responder validates no
 * R_Key or address for a DMA length of zero. */
static int post0(struct ibv_qp *q, enum ibv_wr_opcode op)
{
	struct ibv_send_wr w = { .wr_id = 8, .num_sge = 0, .opcode = op, .send_flags = IBV_SEND_SIGNALED }, *bad;
	return ibv_post_send(q, &w, &bad);
}

static void expect(const char *name, int want)
{
	struct ibv_wc wc;
	char why[128];
	if (!wait_wc(&wc)) {
		check(0, name, "no completion within 5 s");
		return;
	}
	snprintf(why, sizeof why, "status %s, want %s", ibv_wc_status_str(wc.status), ibv_wc_status_str(want));
	check((int)wc.status == want, name, why);
}

/* Waits for the next completion and checks its wr_id and status. */
static void expect_wr(const char *name, uint64_t wr_id, int want)
{
	struct ibv_wc wc;
	char why[160];
	if (!wait_wc(&wc)) {
		check(0, name, "no completion within 5 s");
		return;
	}
	snprintf(why, sizeof why, "wr_id %llu status %s, want wr_id %llu %s", (unsigned long long)wc.wr_id,
		 ibv_wc_status_str(wc.status), (unsigned long long)wr_id, ibv_wc_status_str(want));
	check(wc.wr_id == wr_id && (int)wc.status == want, name, why);
}

static char L[BUF];

/* One list of `n` RDMA requests `op`: request i copies 8 bytes between
 * L + off + 8 i and the target's MR A at `roff` + 8 i (rkey `rk[i]`). */
static int post_rdma_list(struct ibv_qp *q, enum ibv_wr_opcode op, struct ibv_mr *ml, const struct info *t,
			  int n, size_t off, size_t roff, const uint32_t *rk)
{
	struct ibv_sge s[8];
	struct ibv_send_wr w[8], *bad = NULL;
	memset(w, 0, sizeof w);
	for (int i = 0; i < n; i++) {
		s[i] = (struct ibv_sge){ .addr = (uintptr_t)L + off + 8 * i, .length = 8, .lkey = ml->lkey };
		w[i] = (struct ibv_send_wr){ .wr_id = 100 + i, .sg_list = &s[i], .num_sge = 1, .opcode = op,
			.send_flags = IBV_SEND_SIGNALED, .next = i + 1 < n ? &w[i + 1] : NULL };
		w[i].wr.rdma.remote_addr = t->a + roff + 8 * i;
		w[i].wr.rdma.rkey = rk[i];
	}
	return ibv_post_send(q, w, &bad);
}

/* Whether this process may copy through the kernel's cross-memory attach:
 * where it may not (qemu-user has no process_vm_readv: ENOSYS), the
 * provider's copies into memory that may be unmapped are plain CPU copies
 * (providers/swrdma/README.md), so the unmapped-page cases below are not
 * run there. */
static int cma_works(void)
{
	char a[8] = "cma", b[8];
	struct iovec l = { b, sizeof b }, r = { a, sizeof a };
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof a;
}

/* 3. A list of three 8-byte WRITEs into three pages of the target's MR C
 * whose middle page the target unmapped after registering it: one
 * process_vm_writev for the list stops in the second (EFAULT); the first
 * completes successfully, the second with the status it gets when posted
 * alone (on another QP, qp[9]), the third is flushed and does not land
 * (the target checks its pages). */
static void fault_list_checks(struct ibv_mr *ml, const struct info *t)
{
	struct ibv_sge s[3];
	struct ibv_send_wr w[3], *bad = NULL;
	memset(w, 0, sizeof w);
	memset(L + 3584, 'x', 24);
	for (int i = 0; i < 3; i++) {
		s[i] = (struct ibv_sge){ .addr = (uintptr_t)L + 3584 + 8 * i, .length = 8, .lkey = ml->lkey };
		w[i] = (struct ibv_send_wr){ .wr_id = 200 + i, .sg_list = &s[i], .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED, .next = i < 2 ? &w[i + 1] : NULL };
		w[i].wr.rdma.remote_addr = t->c + 4096 * i;
		w[i].wr.rdma.rkey = t->rkc;
	}
	/* the middle request alone, on its own QP: the status to expect */
	struct ibv_send_wr one = w[1];
	one.next = NULL;
	struct ibv_wc wc;
	int alone = -1;
	if (ibv_post_send(qp[9], &one, &bad) == 0 && wait_wc(&wc))
		alone = wc.status;
	check(alone > 0, "write into a page the target unmapped, posted alone, fails",
	      alone < 0 ? "no completion" : ibv_wc_status_str(alone));
	check(ibv_post_send(qp[8], w, &bad) == 0, "list of 3 writes, the 2nd into an unmapped page, posted",
	      "post failed");
	expect_wr("list with an unmapped target page: 1st completes", 200, IBV_WC_SUCCESS);
	expect_wr("list with an unmapped target page: 2nd fails as alone", 201, alone);
	expect_wr("list with an unmapped target page: 3rd -> WR_FLUSH_ERR", 202, IBV_WC_WR_FLUSH_ERR);
}

static void post_list_checks(struct ibv_mr *ml, const struct info *t)
{
	uint32_t ok[5] = { t->rka, t->rka, t->rka, t->rka, t->rka }, mid[5] = { t->rka, t->rka, t->rka ^ 0x5500,
								t->rka, t->rka };
	/* 1. four WRITEs in one list, then four READs back (qp[0]: healthy) */
	for (int i = 0; i < 32; i++)
		L[1024 + i] = 'a' + i;
	check(post_rdma_list(qp[0], IBV_WR_RDMA_WRITE, ml, t, 4, 1024, 256, ok) == 0, "list of 4 RDMA writes posted",
	      "post failed");
	char name[96];
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "list of RDMA writes: request %d completes, in order", i + 1);
		expect_wr(name, 100 + i, IBV_WC_SUCCESS);
	}
	memset(L + 2048, 0, 32);
	check(post_rdma_list(qp[0], IBV_WR_RDMA_READ, ml, t, 4, 2048, 256, ok) == 0, "list of 4 RDMA reads posted",
	      "post failed");
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "list of RDMA reads: request %d completes, in order", i + 1);
		expect_wr(name, 100 + i, IBV_WC_SUCCESS);
	}
	check(!memcmp(L + 1024, L + 2048, 32), "list of RDMA writes then reads: the data went and came back",
	      "differs");
	/* 2. five WRITEs, the third with a forged rkey (qp[6]): the two before it
	 * complete successfully, it fails with REM_ACCESS_ERR, the two after
	 * it are flushed (the target checks that they did not land) */
	for (int i = 0; i < 40; i++)
		L[3072 + i] = 'A' + i;
	check(post_rdma_list(qp[6], IBV_WR_RDMA_WRITE, ml, t, 5, 3072, 512, mid) == 0,
	      "list of 5 RDMA writes, the 3rd with a forged rkey, posted", "post failed");
	expect_wr("list with a bad write: 1st completes", 100, IBV_WC_SUCCESS);
	expect_wr("list with a bad write: 2nd completes", 101, IBV_WC_SUCCESS);
	expect_wr("list with a bad write: 3rd -> REM_ACCESS_ERR", 102, IBV_WC_REM_ACCESS_ERR);
	expect_wr("list with a bad write: 4th -> WR_FLUSH_ERR", 103, IBV_WC_WR_FLUSH_ERR);
	expect_wr("list with a bad write: 5th -> WR_FLUSH_ERR", 104, IBV_WC_WR_FLUSH_ERR);
	if (cma_works())
		fault_list_checks(ml, t);
	else
		printf("SKIP list with an unmapped target page: no process_vm_readv here (qemu-user), the provider's copies are plain CPU copies\n");
}

/* 4. Requests whose local source the initiator unmapped after registering
 * it (a kernel device pins registered pages and reads them; ours pins
 * nothing): the ring path reads the source fault-safe, the request
 * completes with LOC_PROT_ERR and its QP goes to the error state; the
 * peer's memory and receive queue stay as they were; we live.  Once a
 * plain copy: SIGSEGV in ibv_post_send.
 *  - qp[10]: an RDMA WRITE of 1 KiB from the unmapped page.  It tries the
 *    direct path first (process_vm_writev from our own unmapped page:
 *    EFAULT, nothing copied) and then takes the ring, as any WRITE the
 *    direct path cannot do (an MR or QP the target did not publish,
 *    SWRDMA_DIRECT=0, a request queued behind another).
 *  - qp[11]: a SEND (the ring, always) of two SGEs, 1 KiB on the mapped
 *    page then 1 KiB on the unmapped one: the copy fails in the middle of
 *    the message's only fragment.
 *  - qp[12]: a SEND of 64 KiB + 1 KiB whose last KiB lies on an unmapped
 *    page: its first 64 KiB fragment went to the target (which took a
 *    receive WQE for it and placed the fragment) before the copy of the
 *    second failed; the target gives the WQE back.
 * The target checks that nothing of the failed copies landed, that no
 * receive completed, and
 * that both receives are still posted (flushed when it moves the QPs to
 * the error state).  Where the provider's copies cannot be fault-safe
 * (qemu-user: no process_vm_readv) the case is skipped. */
#define BIGSEND (65536 + 1024)
static void unmapped_source_checks(const struct info *t)
{
	char *P = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *Q = mmap(NULL, 65536 + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (P == MAP_FAILED || Q == MAP_FAILED)
		die("mmap");
	memset(P, 's', 2 * 4096);
	memset(Q, 'q', 65536 + 4096);
	struct ibv_mr *mp = ibv_reg_mr(pd, P, 2 * 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mq = ibv_reg_mr(pd, Q, 65536 + 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mp || !mq)
		die("mr");
	munmap(P + 4096, 4096);
	munmap(Q + 65536, 4096);
	check(post(qp[10], IBV_WR_RDMA_WRITE, P + 4096, 1024, mp->lkey, t->a + 2048, t->rka, 0, 0) == 0,
	      "RDMA write from a local page unmapped after registering: posted (no crash)", "post failed");
	expect("RDMA write from a local page unmapped after registering -> LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR);
	post(qp[10], IBV_WR_RDMA_WRITE, P, 8, mp->lkey, t->a + 2048, t->rka, 0, 0);
	expect("next WR on the QP of that write -> WR_FLUSH_ERR", IBV_WC_WR_FLUSH_ERR);

	struct ibv_sge s[2] = { { .addr = (uintptr_t)P + 3072, .length = 1024, .lkey = mp->lkey },
				{ .addr = (uintptr_t)P + 4096, .length = 1024, .lkey = mp->lkey } };
	struct ibv_send_wr w = { .wr_id = 301, .sg_list = s, .num_sge = 2, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	check(ibv_post_send(qp[11], &w, &bad) == 0,
	      "SEND whose 2nd SGE lies on a local page unmapped after registering: posted (no crash)", "post failed");
	expect_wr("SEND from a partly unmapped local buffer -> LOC_PROT_ERR", 301, IBV_WC_LOC_PROT_ERR);

	struct ibv_sge sb = { .addr = (uintptr_t)Q, .length = BIGSEND, .lkey = mq->lkey };
	struct ibv_send_wr wb = { .wr_id = 302, .sg_list = &sb, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED };
	check(ibv_post_send(qp[12], &wb, &bad) == 0,
	      "SEND of 65 KiB whose last KiB lies on an unmapped local page: posted (no crash)", "post failed");
	expect_wr("SEND unmapped after its first 64 KiB fragment -> LOC_PROT_ERR", 302, IBV_WC_LOC_PROT_ERR);
	munmap(P, 4096);
	munmap(Q, 65536);
}

/* The target's side of case 4 (after the initiator is done): nothing
 * landed, no receive completed, and the receives `r11`, `r12` are still
 * posted: moving their QPs to the error state flushes them. */
static void unmapped_source_target_checks(const char *A, const char *r11, const char *r12)
{
	int clean = 1;
	for (int i = 0; i < 1024; i++)
		clean &= A[2048 + i] == 0;
	check(clean, "target memory: the write from the initiator's unmapped page did not land", "modified");
	clean = 1;
	for (int i = 0; i < BUF; i++)
		clean &= r11[i] == 'r';
	check(clean, "target receive buffer: the SEND aborted in its only fragment placed nothing", "modified");
	/* (the first 64 KiB fragment of the other was placed before its
	 * sender failed: a receive buffer holds anything until it completes) */
	clean = 1;
	for (int i = 65536; i < BIGSEND; i++)
		clean &= r12[i] == 'r';
	check(clean, "target receive buffer: nothing of the aborted fragment placed", "modified");
	struct ibv_wc wc;
	usleep(100000);
	int n = ibv_poll_cq(cq, 1, &wc);
	char why[96];
	snprintf(why, sizeof why, "wr_id %llu status %s", n > 0 ? (unsigned long long)wc.wr_id : 0ULL,
		 n > 0 ? ibv_wc_status_str(wc.status) : "-");
	check(n == 0, "target: no receive completion for the aborted SENDs", why);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	check(!ibv_modify_qp(qp[11], &a, IBV_QP_STATE), "target: QP of the aborted SEND to ERR", "modify failed");
	expect_wr("target: the receive the aborted SEND found is still posted (flushed)", 300, IBV_WC_WR_FLUSH_ERR);
	check(!ibv_modify_qp(qp[12], &a, IBV_QP_STATE), "target: QP of the SEND aborted after 64 KiB to ERR",
	      "modify failed");
	expect_wr("target: the receive the SEND aborted after 64 KiB took was given back (flushed)", 310,
		  IBV_WC_WR_FLUSH_ERR);
}

/* The target's sync with the initiator failed: say how the initiator
 * ended (a crash in the provider kills it), then give up. */
static void initiator_gone(pid_t child)
{
	int st;
	if (waitpid(child, &st, 0) == child && WIFSIGNALED(st))
		printf("FAIL initiator: killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
	die("sync");
}

int main(void)
{
	int p2c[2], c2p[2];
	struct info in;
	setvbuf(stdout, NULL, _IONBF, 0);
	if (pipe(p2c) || pipe(c2p))
		die("pipe");
	pid_t child = fork();
	if (child == 0) {
		/* Never outlive the test: a target that fails early must not leave
		 * the initiator waiting (holding the suite's files) forever. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(2);
		alarm(150);
	}
	open_dev();
	if (child) { /* target */
		/* (the initiator's ends: a read gets end-of-file when it dies) */
		close(c2p[1]);
		close(p2c[0]);
		static uint64_t A[BUF / 8] __attribute__((aligned(64))), B[BUF / 8];
		struct ibv_mr *ma = ibv_reg_mr(pd, A, sizeof A, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		struct ibv_mr *mb = ibv_reg_mr(pd, B, sizeof B, IBV_ACCESS_LOCAL_WRITE);
		if (!ma || !mb)
			die("mr");
		/* MR C: three pages, the middle one unmapped after registering */
		char *C = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (C == MAP_FAILED)
			die("mmap");
		memset(C, 0, 3 * 4096);
		struct ibv_mr *mc = ibv_reg_mr(pd, C, 3 * 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mc)
			die("mr");
		if (cma_works())
			munmap(C + 4096, 4096);
		in.c = (uintptr_t)C; in.rkc = mc->rkey;
		for (int i = 0; i < NPAIR; i++)
			in.qpn[i] = qp[i]->qp_num;
		A[0] = 100; A[1] = 5;
		in.a = (uintptr_t)A; in.b = (uintptr_t)B; in.rka = ma->rkey; in.rkb = mb->rkey;
		struct info peer;
		if (read(c2p[0], &peer, sizeof peer) != sizeof peer)
			die("read");
		for (int i = 0; i < NPAIR; i++)
			connect_qp(qp[i], peer.qpn[i]);
		/* case 4: one receive on qp[11] and one on qp[12] */
		static char R11[BUF], R12[BIGSEND];
		memset(R11, 'r', sizeof R11);
		memset(R12, 'r', sizeof R12);
		struct ibv_mr *mr11 = ibv_reg_mr(pd, R11, sizeof R11, IBV_ACCESS_LOCAL_WRITE);
		struct ibv_mr *mr12 = ibv_reg_mr(pd, R12, sizeof R12, IBV_ACCESS_LOCAL_WRITE);
		if (!mr11 || !mr12)
			die("mr");
		struct ibv_sge r11 = { .addr = (uintptr_t)R11, .length = sizeof R11, .lkey = mr11->lkey };
		struct ibv_sge r12 = { .addr = (uintptr_t)R12, .length = sizeof R12, .lkey = mr12->lkey };
		struct ibv_recv_wr rw11 = { .wr_id = 300, .sg_list = &r11, .num_sge = 1 };
		struct ibv_recv_wr rw12 = { .wr_id = 310, .sg_list = &r12, .num_sge = 1 }, *rbad;
		if (ibv_post_recv(qp[11], &rw11, &rbad) || ibv_post_recv(qp[12], &rw12, &rbad))
			die("post_recv");
		if (write(p2c[1], &in, sizeof in) != sizeof in)
			die("write");
		/* Let the initiator work (our provider thread serves it), then
		 * check what landed in our memory. */
		char c;
		if (read(c2p[0], &c, 1) != 1)
			initiator_gone(child);
		check(memcmp((char *)A + 64, "written by the peer", 20) == 0, "target memory: RDMA write landed", "data differs");
		check(A[0] == 200 && A[1] == 12, "target memory: atomics applied", "values differ");
		{
			char want[40];
			for (int i = 0; i < 40; i++)
				want[i] = 'A' + i;
			check(!memcmp((char *)A + 512, want, 16), "target memory: the writes before the bad one landed",
			      "data differs");
			int untouched = 1;
			for (int i = 16; i < 40; i++)
				untouched &= ((char *)A)[512 + i] == 0;
			check(untouched, "target memory: the bad write and the flushed ones did not land", "modified");
			if (cma_works()) {
				check(!memcmp(C, "xxxxxxxx", 8), "target memory: the write before the unmapped page landed",
				      "data differs");
				int clean2 = 1;
				for (int i = 0; i < 8; i++)
					clean2 &= C[2 * 4096 + i] == 0;
				check(clean2, "target memory: the write flushed after the unmapped page did not land",
				      "modified");
				unmapped_source_target_checks((const char *)A, R11, R12);
			}
		}
		int clean = 1;
		for (int i = 0; i < BUF / 8; i++)
			clean &= B[i] == 0;
		check(clean, "target memory: local-only MR untouched", "modified");
		if (write(p2c[1], "x", 1) != 1)
			die("sync");
		int st;
		waitpid(child, &st, 0);
		return failures || !WIFEXITED(st) || WEXITSTATUS(st) ? 1 : 0;
	}
	/* initiator */
	struct ibv_mr *ml = ibv_reg_mr(pd, L, sizeof L, IBV_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < NPAIR; i++)
		in.qpn[i] = qp[i]->qp_num;
	if (write(c2p[1], &in, sizeof in) != sizeof in)
		die("write");
	struct info t;
	if (read(p2c[0], &t, sizeof t) != sizeof t)
		die("read");
	for (int i = 0; i < NPAIR; i++)
		connect_qp(qp[i], t.qpn[i]);

	strcpy(L, "written by the peer");
	post(qp[0], IBV_WR_RDMA_WRITE, L, 20, ml->lkey, t.a + 64, t.rka, 0, 0);
	expect("RDMA write with the right rkey", IBV_WC_SUCCESS);
	memset(L, 0, 64);
	post(qp[0], IBV_WR_RDMA_READ, L, 20, ml->lkey, t.a + 64, t.rka, 0, 0);
	expect("RDMA read with the right rkey", IBV_WC_SUCCESS);
	check(!strcmp(L, "written by the peer"), "RDMA read data", "differs");
	post(qp[0], IBV_WR_ATOMIC_CMP_AND_SWP, L, 8, ml->lkey, t.a, t.rka, 100, 200);
	expect("compare-and-swap", IBV_WC_SUCCESS);
	check(*(uint64_t *)L == 100, "compare-and-swap returns the old value", "differs");
	post(qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, L, 8, ml->lkey, t.a + 8, t.rka, 7, 0);
	expect("fetch-and-add", IBV_WC_SUCCESS);
	check(*(uint64_t *)L == 5, "fetch-and-add returns the old value", "differs");
	check(post0(qp[0], IBV_WR_RDMA_WRITE) == 0, "zero-length RDMA write (rkey 0, address 0) posted", "post failed");
	expect("zero-length RDMA write needs no rkey (C9-88)", IBV_WC_SUCCESS);
	check(post0(qp[0], IBV_WR_RDMA_READ) == 0, "zero-length RDMA read (rkey 0, address 0) posted", "post failed");
	expect("zero-length RDMA read needs no rkey (C9-88)", IBV_WC_SUCCESS);
	post(qp[0], IBV_WR_RDMA_READ, L, 20, ml->lkey, t.a + 64, t.rka, 0, 0);
	expect("QP still usable after zero-length operations", IBV_WC_SUCCESS);

	post(qp[1], IBV_WR_RDMA_WRITE, L, 8, ml->lkey, t.b, t.rkb, 0, 0);
	expect("RDMA write into an MR without REMOTE_WRITE -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR);
	post(qp[1], IBV_WR_RDMA_WRITE, L, 8, ml->lkey, t.a, t.rka, 0, 0);
	expect("next WR on the failed QP -> WR_FLUSH_ERR", IBV_WC_WR_FLUSH_ERR);
	post(qp[2], IBV_WR_RDMA_READ, L, 8, ml->lkey, t.b, t.rkb, 0, 0);
	expect("RDMA read from an MR without REMOTE_READ -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR);
	post(qp[3], IBV_WR_RDMA_WRITE, L, 64, ml->lkey, t.a + BUF - 8, t.rka, 0, 0);
	expect("RDMA write past the end of the MR -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR);
	post(qp[4], IBV_WR_RDMA_WRITE, L, 8, ml->lkey, t.a, t.rka ^ 0x5500, 0, 0);
	expect("RDMA write with a forged rkey -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR);
	post(qp[5], IBV_WR_RDMA_WRITE, L, 8, ml->lkey + 1, t.a, t.rka, 0, 0);
	expect("bad lkey -> LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR);
	/* A misaligned atomic is refused at post, as rxe's provider refuses it
	 * (a responder that gets one anyway, from the wire, NAKs it as an
	 * invalid request: swrdma-rc's unit tests). */
	check(post(qp[6], IBV_WR_ATOMIC_FETCH_AND_ADD, L, 8, ml->lkey, t.a + 4, t.rka, 1, 0) == EINVAL,
	      "misaligned atomic -> EINVAL at post (as rxe)", "not refused");

	/* A post_send list of one-sided requests (issue 34: consecutive WRITEs
	 * or READs of a list go to the target in one process_vm_writev/readv):
	 * each completes on its own, in order, as on rxe. */
	if (cma_works())
		unmapped_source_checks(&t);
	else
		printf("SKIP requests from a local page unmapped after registering: no process_vm_readv here (qemu-user), the provider's copies are plain CPU copies\n");
	post_list_checks(ml, &t);

	/* Target verifies its memory; then it exits and our QP must fail
	 * instead of hanging. */
	if (write(c2p[1], "x", 1) != 1)
		die("sync");
	char c;
	if (read(p2c[0], &c, 1) != 1)
		die("sync");
	/* the parent is now in waitpid: kill-like situation is simulated by
	 * a grandchild below */
	struct ibv_qp *qc = mkqp();
	pid_t g = fork();
	if (g == 0) {
		/* a peer that dies without cleaning up */
		open_dev();
		if (write(c2p[1], &qp[7]->qp_num, 4) != 4)
			_exit(2);
		uint32_t d;
		if (read(p2c[0], &d, 4) != 4)
			_exit(2);
		connect_qp(qp[7], d);
		if (write(c2p[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	uint32_t gq;
	if (read(c2p[0], &gq, 4) != 4)
		die("read");
	if (write(p2c[1], &qc->qp_num, 4) != 4)
		die("write");
	connect_qp(qc, gq);
	if (read(c2p[0], &c, 1) != 1)
		die("read");
	kill(g, SIGKILL);
	waitpid(g, NULL, 0);
	usleep(100000);
	post(qc, IBV_WR_RDMA_WRITE, L, 8, ml->lkey, 4096, 1, 0, 0);
	expect("send to a peer that was killed -> RETRY_EXC_ERR (no hang)", IBV_WC_RETRY_EXC_ERR);
	return failures ? 1 : 0;
}
