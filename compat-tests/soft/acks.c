/* compat-tests/soft/acks.c: the ACKs of swr0's reliable SENDs, where the
 * responder does not answer a request nobody waits for (unsignaled, send
 * queue far from full): the requester takes it as done when a later
 * request of its QP is answered, or when it sees the responder consumed it
 * (providers/swrdma/README.md, "A request nobody waits for is not answered").
 * What an application sees must be what rxe shows, which ACKs every
 * message before its receive completes:
 *
 * 1. The receiver exits at once after it took unsignaled SENDs (no
 *    ibv_destroy_*, no later poll: the deferred ACKs die with it).  The
 *    sender must not see those SENDs fail: they were delivered, as on a
 *    NIC or on rxe, which acknowledge before the receive completes.  Its
 *    first error completion must be the one of a SEND posted after the
 *    receiver had gone (RETRY_EXC_ERR once the retries are spent).
 * 2. The receiver takes unsignaled SENDs and then stops calling the
 *    library (it sleeps, alive): the sender's send queue still empties,
 *    so that it can post a whole send queue again (ENOMEM if the ACKs
 *    never came).
 * 3. The receiver has no receive posted: the sender's unsignaled SEND is
 *    RNR-NAKed (consumed, not delivered), then the receiver exits.  The
 *    SEND must fail (it was never delivered), not pass as delivered.
 * 4. The receiver took unsignaled SENDs and sleeps; the sender moves its
 *    QP to the error state: nothing is flushed (they were delivered; no
 *    completion at all).
 * 5. The same, then the sender posts a SEND with a bad local key: its
 *    LOC_PROT_ERR is the first completion (the SENDs before it are not
 *    flushed).
 *
 * Output: "PASS <name>" / "FAIL <name>: why" lines; exit 0 when all pass. */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/opendev.h"
#include "../common/qpsetup.h"

#define SQ 64
#define N 8

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static char buf[4096];
static struct ibv_mr *mr;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void setup(void)
{
	ctx = open_device_named("swr0");
	if (!ctx)
		die("open swr0");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4 * SQ, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = SQ, .max_recv_wr = 2 * SQ, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 } };
	qp = ibv_create_qp(pd, &a);
	mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	if (!qp || !mr)
		die("qp/mr");
}

static void connect_to(uint32_t dqpn, uint8_t min_rnr_timer)
{
	struct qps_conn c;
	qps_defaults(&c);
	c.min_rnr_timer = min_rnr_timer;
	c.dest_qpn = dqpn;
	c.sgid_index = 1;
	if (ibv_query_gid(ctx, 1, 1, &c.dgid) || qps_to_rts(qp, &c, NULL))
		die("connect");
}

static void post_recvs(int n)
{
	struct ibv_sge s = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr w = { .sg_list = &s, .num_sge = 1 }, *bad;
	for (int i = 0; i < n; i++)
		if (ibv_post_recv(qp, &w, &bad))
			die("post_recv");
}

static int post_send(uint64_t id, int signaled)
{
	struct ibv_sge s = { (uintptr_t)"ack", 3, 0 };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | (signaled ? IBV_SEND_SIGNALED : 0) }, *bad;
	return ibv_post_send(qp, &w, &bad);
}

/* Polls until `n` completions came (each successful) or `secs` passed;
 * returns how many came. */
static int take(int n, double secs)
{
	struct ibv_wc wc;
	int got = 0;
	double end = now() + secs;
	while (got < n && now() < end) {
		int k = ibv_poll_cq(cq, 1, &wc);
		if (k < 0 || (k == 1 && wc.status != IBV_WC_SUCCESS))
			return -1;
		got += k;
	}
	return got;
}

/* Check `name`: the next completion (within 10 s) is an error of the
 * request `id` (the peer is gone; none before it may fail). */
static void first_is_error(uint64_t id, const char *name)
{
	struct ibv_wc wc = { 0 };
	double end = now() + 10;
	int k = 0;
	while (now() < end && (k = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	char why[160];
	snprintf(why, sizeof why, "first completion: wr_id %llu status %s (want %llu, an error)",
		 (unsigned long long)wc.wr_id, k == 1 ? ibv_wc_status_str(wc.status) : "none in 10 s",
		 (unsigned long long)id);
	check(k == 1 && wc.wr_id == id && wc.status != IBV_WC_SUCCESS, name, why);
}

/* The receiver of a case: posts receives, connects, says "ready" (after
 * polling long enough for its context's thread to leave the progress to
 * it, as an application that busy-polls does), takes N completions, says
 * "got" and then exits at once (how 1) or sleeps without calling the
 * library (how 2). */
static void receiver(int how, int to_s, int from_s, uint32_t peer)
{
	/* (How 3: RNR timer code 0, 655 ms: the sender sends the NAKed SEND
	 * again only after the receiver is gone.) */
	connect_to(peer, how == 3 ? 0 : 12);
	if (how == 3) {
		take(1, 0.05);
		char c;
		if (write(to_s, "r", 1) != 1 || read(from_s, &c, 1) != 1)
			_exit(2);
		_exit(0); /* (told to: the SEND was NAKed) */
	}
	post_recvs(2 * SQ);
	take(1, 0.05);
	if (write(to_s, "r", 1) != 1)
		_exit(2);
	int got = take(N, 10);
	if (write(to_s, got == N ? "g" : "x", 1) != 1)
		_exit(2);
	if (how == 1)
		_exit(0);
	char c;
	if (read(from_s, &c, 1) != 1) /* until the sender is done */
		_exit(0);
	_exit(0);
}

static void run(int how)
{
	int s2r[2], r2s[2], q[2];
	if (pipe(s2r) || pipe(r2s) || pipe(q))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	setup();
	uint32_t mine = qp->qp_num, peer;
	int wq = pid == 0 ? q[1] : s2r[1], rq = pid == 0 ? s2r[0] : q[0];
	if (write(wq, &mine, 4) != 4 || read(rq, &peer, 4) != 4)
		die("exchange");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		receiver(how, r2s[1], s2r[0], peer);
	}
	connect_to(peer, 12);
	char c = 0;
	if (read(r2s[0], &c, 1) != 1 || c != 'r')
		die("receiver not ready");
	if (how == 3) {
		/* The SEND finds no receive: RNR NAK (rnr_retry 7: sent again
		 * without limit); the sender polls meanwhile (its progress takes
		 * the NAK), then the receiver exits. */
		post_send(300, 0);
		take(1, 0.1);
		if (write(s2r[1], "x", 1) != 1)
			die("pipe");
		waitpid(pid, NULL, 0);
		first_is_error(300, "a NAKed SEND is not taken as delivered");
		return;
	}
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad |= post_send(100 + i, 0);
	if (read(r2s[0], &c, 1) != 1 || c != 'g' || bad) {
		check(0, how == 1 ? "delivered before the receiver exited" : "acknowledged while the receiver sleeps",
		      "the receiver did not take the SENDs");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	if (how == 4 || how == 5)
		usleep(20000);
	if (how == 4) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			die("modify_qp ERR");
		struct ibv_wc wc;
		int k = 0;
		double end = now() + 0.3;
		while (now() < end && (k = ibv_poll_cq(cq, 1, &wc)) == 0)
			;
		char why[160];
		snprintf(why, sizeof why, "a completion came: wr_id %llu status %s", k == 1 ? (unsigned long long)wc.wr_id : 0ULL,
			 k == 1 ? ibv_wc_status_str(wc.status) : "(poll failed)");
		check(k == 0, "delivered SENDs are not flushed by the error state", why);
		if (write(s2r[1], "d", 1) != 1)
			die("pipe");
		waitpid(pid, NULL, 0);
		return;
	}
	if (how == 5) {
		struct ibv_sge s = { (uintptr_t)buf, 8, mr->lkey ^ 0x5a5a00 };
		struct ibv_send_wr w = { .wr_id = 500, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
		if (ibv_post_send(qp, &w, &bad))
			die("post_send bad lkey");
		first_is_error(500, "a local error flushes no delivered SEND");
		if (write(s2r[1], "d", 1) != 1)
			die("pipe");
		waitpid(pid, NULL, 0);
		return;
	}
	if (how == 1) {
		waitpid(pid, NULL, 0);
		/* The peer is gone: a SEND posted now fails with RETRY_EXC_ERR
		 * after the retries (timeout 14: 67 ms, 7 retries); the N before
		 * it must not fail at all. */
		post_send(999, 1);
		first_is_error(999, "delivered before the receiver exited");
		return;
	}
	/* How 2: the receiver took the N SENDs and sleeps.  A whole send queue
	 * more must go (ENOMEM if the N were never acknowledged), the last
	 * one signaled. */
	usleep(20000);
	int e = 0, i;
	for (i = 0; i < SQ && !e; i++)
		e = post_send(200 + i, i == SQ - 1);
	int got = e ? 0 : take(1, 10);
	char why[160];
	snprintf(why, sizeof why, "post_send %d of %d: %s; completion %s", i, SQ, e ? strerror(e) : "ok",
		 got == 1 ? "came" : "did not come in 10 s");
	check(!e && got == 1, "acknowledged while the receiver sleeps", why);
	if (write(s2r[1], "d", 1) != 1)
		die("pipe");
	waitpid(pid, NULL, 0);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int how = 1; how <= 5; how++) {
		pid_t p = fork();
		if (p == 0) {
			run(how);
			exit(failures ? 1 : 0);
		}
		int st;
		waitpid(p, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failures++;
	}
	return failures ? 1 : 0;
}
