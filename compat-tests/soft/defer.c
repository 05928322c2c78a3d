/* compat-tests/soft/defer.c: RDMA WRITEs and READs on private memory that
 * swr0 keeps back to execute several with one system call
 * (providers/swrdma/src/send/defer.rs): a request posted alone, after
 * another one with no poll in between, while the application polls, may
 * wait for the next call of the library.  What an application sees must
 * not change:
 *
 * 1. A program that posts two WRITEs and then waits on its own memory,
 *    making no further call (a poll-free protocol: the peer answers by an
 *    RDMA WRITE once it sees the second), is answered: the context's
 *    thread executes what waits (within about a millisecond).
 * 2. 64 WRITEs of 4 KiB (unsignaled, the last signaled) and then a SEND:
 *    when the SEND's receive completes at the target, every WRITE's data
 *    is there (the SEND does not overtake them).
 * 3. 32 READs of 4 KiB, the last signaled: when it completes, every READ's
 *    data is in place.
 * 4. The same WRITEs as in 2, then the initiator polls its CQ until the
 *    last completes: the data is at the target when it does.
 *
 * Two processes (fork), one QP each, private anonymous memory.  Before
 * each case the initiator polls its empty CQ for 250 ms: its context's
 * thread then leaves progress to it (the condition for keeping requests
 * back).  Output: "PASS <name>" / "FAIL <name>: why"; exit 0 when all pass. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/opendev.h"
#include "../common/qpsetup.h"

#define SQ 256
#define REGION (1 << 20)
#define PIECE 4096

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static char *mem; /* REGION bytes, private anonymous, registered */
static struct ibv_mr *mr;

struct where {
	uint64_t addr;
	uint32_t rkey, qpn;
};

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
		.cap = { .max_send_wr = SQ, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 } };
	qp = ibv_create_qp(pd, &a);
	mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!qp || mem == MAP_FAILED)
		die("qp/mmap");
	memset(mem, 0, REGION);
	mr = ibv_reg_mr(pd, mem, REGION, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("reg_mr");
}

static void connect_to(uint32_t dqpn)
{
	struct qps_conn c;
	qps_defaults(&c);
	c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	c.dest_qpn = dqpn;
	c.sgid_index = 1;
	if (ibv_query_gid(ctx, 1, 1, &c.dgid) || qps_to_rts(qp, &c, NULL))
		die("connect");
}

static int post(enum ibv_wr_opcode op, uint64_t id, size_t off, size_t len, const struct where *w, size_t roff,
		int signaled)
{
	struct ibv_sge s = { (uintptr_t)(mem + off), (uint32_t)len, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0 }, *bad;
	if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = w->addr + roff;
		wr.wr.rdma.rkey = w->rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/* Polls until the completion `id` came (1), an error or a wrong one came
 * (-1), or `secs` passed (0). */
static int wait_for(uint64_t id, double secs, char *why, size_t n)
{
	struct ibv_wc wc;
	double end = now() + secs;
	while (now() < end) {
		int k = ibv_poll_cq(cq, 1, &wc);
		if (k < 0) {
			snprintf(why, n, "ibv_poll_cq failed");
			return -1;
		}
		if (k == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.wr_id != id) {
				snprintf(why, n, "completion wr_id %llu status %s (want %llu, success)",
					 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
					 (unsigned long long)id);
				return -1;
			}
			return 1;
		}
	}
	snprintf(why, n, "no completion of %llu in %.0f s", (unsigned long long)id, secs);
	return 0;
}

/* Empty polls for `secs` (the context's thread then backs off). */
static void poll_idle(double secs)
{
	struct ibv_wc wc;
	double end = now() + secs;
	while (now() < end)
		ibv_poll_cq(cq, 1, &wc);
}

static void pattern(char *p, int i)
{
	for (int k = 0; k < PIECE; k++)
		p[k] = (char)(i * 7 + k * 13 + 1);
}

static int pattern_ok(const char *p, int i)
{
	char want[PIECE];
	pattern(want, i);
	return memcmp(p, want, PIECE) == 0;
}

/* The target: exchanges addresses, then serves the cases in order. */
static void target(int rd, int wr, const struct where *peer)
{
	char c, why[200];
	/* 1: wait (memory, no call) for the second WRITE, then answer. */
	volatile char *flag = mem + 64;
	double end = now() + 10;
	while (*flag != 'b' && now() < end)
		;
	if (*flag == 'b') {
		mem[128] = 'y';
		if (post(IBV_WR_RDMA_WRITE, 1, 128, 1, peer, 128, 1) || wait_for(1, 10, why, sizeof why) != 1)
			_exit(3);
	}
	/* 2: the SEND's receive, then the 64 pieces. */
	struct ibv_sge s = { (uintptr_t)(mem + REGION - 64), 64, mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 2, .sg_list = &s, .num_sge = 1 }, *bad;
	if (ibv_post_recv(qp, &r, &bad))
		_exit(3);
	c = 'r';
	if (write(wr, &c, 1) != 1)
		_exit(2);
	int got = wait_for(2, 10, why, sizeof why) == 1;
	int ok = got;
	for (int i = 0; ok && i < 64; i++)
		ok = pattern_ok(mem + 4096 + (size_t)i * PIECE, i);
	c = !got ? 'n' : ok ? 'y' : 'x';
	if (write(wr, &c, 1) != 1)
		_exit(2);
	/* 3: pieces to be read. */
	for (int i = 0; i < 32; i++)
		pattern(mem + 512 * 1024 + (size_t)i * PIECE, 100 + i);
	c = 'p';
	if (write(wr, &c, 1) != 1)
		_exit(2);
	/* 4: after the initiator's last completion, the pieces. */
	if (read(rd, &c, 1) != 1)
		_exit(2);
	ok = 1;
	for (int i = 0; ok && i < 64; i++)
		ok = pattern_ok(mem + 4096 + (size_t)i * PIECE, 200 + i);
	c = ok ? 'y' : 'x';
	if (write(wr, &c, 1) != 1 || read(rd, &c, 1) != 1)
		_exit(2);
	_exit(0);
}

int main(void)
{
	int a2t[2], t2a[2];
	if (pipe(a2t) || pipe(t2a))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	setup();
	struct where mine = { (uintptr_t)mem, mr->rkey, qp->qp_num }, peer;
	int wq = pid == 0 ? t2a[1] : a2t[1], rq = pid == 0 ? a2t[0] : t2a[0];
	if (write(wq, &mine, sizeof mine) != sizeof mine || read(rq, &peer, sizeof peer) != sizeof peer)
		die("exchange");
	connect_to(peer.qpn);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		target(a2t[0], t2a[1], &peer);
	}
	char c, why[200];

	/* 1 */
	poll_idle(0.25);
	volatile char *answer = mem + 128;
	mem[0] = 'a';
	mem[1] = 'b';
	int bad = post(IBV_WR_RDMA_WRITE, 10, 0, 1, &peer, 0, 0);
	bad |= post(IBV_WR_RDMA_WRITE, 11, 1, 1, &peer, 64, 0);
	double t0 = now();
	while (*answer != 'y' && now() - t0 < 5)
		;
	snprintf(why, sizeof why, "posted: %s; no answer in 5 s (the second WRITE never reached the target)",
		 bad ? "failed" : "ok");
	check(!bad && *answer == 'y', "a WRITE followed by no call of the library executes", why);
	if (*answer == 'y')
		printf("# answered after %.3f ms\n", (now() - t0) * 1e3);

	/* 2 */
	if (read(rq, &c, 1) != 1 || c != 'r')
		die("target not ready (2)");
	poll_idle(0.25);
	bad = 0;
	for (int i = 0; i < 64; i++) {
		pattern(mem + 4096 + (size_t)i * PIECE, i);
		bad |= post(IBV_WR_RDMA_WRITE, 20 + i, 4096 + (size_t)i * PIECE, PIECE, &peer,
			    4096 + (size_t)i * PIECE, i == 63);
	}
	memcpy(mem + 2048, "done", 4);
	bad |= post(IBV_WR_SEND, 99, 2048, 4, &peer, 0, 1);
	int done = wait_for(83, 10, why, sizeof why);
	if (read(rq, &c, 1) != 1)
		die("target (2)");
	snprintf(why, sizeof why, "posted: %s; the target says %s", bad ? "failed" : "ok",
		 c == 'y' ? "all there" : c == 'n' ? "no SEND came" : "pieces missing when the SEND came");
	check(!bad && c == 'y' && done == 1, "WRITEs then a SEND: the SEND does not overtake them", why);
	wait_for(99, 10, why, sizeof why);

	/* 3 */
	if (read(rq, &c, 1) != 1 || c != 'p')
		die("target not ready (3)");
	poll_idle(0.25);
	bad = 0;
	for (int i = 0; i < 32; i++)
		bad |= post(IBV_WR_RDMA_READ, 300 + i, 256 * 1024 + (size_t)i * PIECE, PIECE, &peer,
			    512 * 1024 + (size_t)i * PIECE, i == 31);
	done = wait_for(331, 10, why, sizeof why);
	int ok = done == 1 && !bad;
	for (int i = 0; ok && i < 32; i++)
		if (!pattern_ok(mem + 256 * 1024 + (size_t)i * PIECE, 100 + i)) {
			snprintf(why, sizeof why, "piece %d not read", i);
			ok = 0;
		}
	check(ok, "READs: every piece in place at the last completion", why);

	/* 4 */
	poll_idle(0.25);
	bad = 0;
	for (int i = 0; i < 64; i++) {
		pattern(mem + 4096 + (size_t)i * PIECE, 200 + i);
		bad |= post(IBV_WR_RDMA_WRITE, 400 + i, 4096 + (size_t)i * PIECE, PIECE, &peer,
			    4096 + (size_t)i * PIECE, i == 63);
	}
	done = wait_for(463, 10, why, sizeof why);
	c = 'c';
	if (write(wq, &c, 1) != 1 || read(rq, &c, 1) != 1)
		die("target (4)");
	snprintf(why, sizeof why, "posted: %s; completion %d; the target says %s", bad ? "failed" : "ok", done,
		 c == 'y' ? "all there" : "pieces missing");
	check(!bad && done == 1 && c == 'y', "WRITEs: all at the target when the last completes", why);

	if (write(wq, "q", 1) != 1)
		die("pipe");
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		check(0, "target process", "exited with an error");
	return failures ? 1 : 0;
}
