/* compat-tests/bench/shared_ref.c: one-sided operations on swr0 into
 * memory that is already shared (issue 34 item 3) beside private memory.
 * perftest has no memfd option: a target process registers <mem> (memfd:
 * memfd_create + mmap MAP_SHARED, descriptor kept; private: anonymous
 * MAP_PRIVATE), its parent posts RDMA WRITEs or READs of <bytes>, one at a
 * time, each completed before the next (the direct path executes it at
 * post time), <iters> of them after a tenth as warm-up.
 *
 *   shared_ref <memfd|private> <write|read> <bytes> <iters> [<target cpu> <initiator cpu>]
 *   prints: "shared <mem> <op> <bytes> us=<us per op> gbps=<GB/s>"
 *
 * Built and run by hand or by bench/run.sh beside cma_ref.c's rows. */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <sched.h>
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

#include "../common/opendev.h"
#include "../common/qpsetup.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static const int RW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

static void die(const char *m)
{
	perror(m);
	exit(2);
}

static void open_all(void)
{
	ctx = open_device_named("swr0");
	if (!ctx)
		die("open swr0");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
	qp = ibv_create_qp(pd, &a);
	if (!qp)
		die("qp");
}

static void connect_to(uint32_t dqpn)
{
	struct qps_conn c;
	qps_defaults(&c);
	c.access = RW;
	c.dest_qpn = dqpn;
	c.mtu = IBV_MTU_4096;
	c.sgid_index = 1;
	if (ibv_query_gid(ctx, 1, 1, &c.dgid) || qps_to_rts(qp, &c, NULL))
		die("connect");
}

struct info { uint32_t qpn, rkey; uint64_t addr; };

static uint8_t *mem(const char *kind, size_t n)
{
	int fd = -1, fl = MAP_PRIVATE | MAP_ANONYMOUS;
	if (!strcmp(kind, "memfd")) {
		fd = memfd_create("shared_ref", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, n))
			die("memfd");
		fl = MAP_SHARED;
	}
	uint8_t *p = mmap(NULL, n, PROT_READ | PROT_WRITE, fl, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	memset(p, 1, n);
	return p;
}

static void pin(const char *cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(atoi(cpu), &set);
	if (sched_setaffinity(0, sizeof set, &set))
		perror("sched_setaffinity (not pinned)");
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 7)
		return 2;
	const char *kind = argv[1];
	int rd = !strcmp(argv[2], "read");
	size_t bytes = strtoul(argv[3], 0, 0);
	long iters = strtol(argv[4], 0, 0);
	int t2i[2], i2t[2];
	if (pipe(t2i) || pipe(i2t))
		die("pipe");
	pid_t pid = fork();
	if (argc == 7)
		pin(argv[pid == 0 ? 5 : 6]);
	open_all();
	struct info me = { qp->qp_num, 0, 0 }, peer;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		uint8_t *p = mem(kind, bytes);
		struct ibv_mr *mr = ibv_reg_mr(pd, p, bytes, RW);
		if (!mr)
			die("reg_mr");
		me.rkey = mr->rkey;
		me.addr = (uintptr_t)p;
		if (write(t2i[1], &me, sizeof me) != sizeof me || read(i2t[0], &peer, sizeof peer) != sizeof peer)
			die("pipe");
		connect_to(peer.qpn);
		char c;
		if (write(t2i[1], "k", 1) != 1 || read(i2t[0], &c, 1) != 1) /* until the initiator is done */
			_exit(0);
		_exit(0);
	}
	if (read(t2i[0], &peer, sizeof peer) != sizeof peer || write(i2t[1], &me, sizeof me) != sizeof me)
		die("pipe");
	connect_to(peer.qpn);
	char c;
	if (read(t2i[0], &c, 1) != 1)
		die("pipe");
	uint8_t *l = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(l, 2, bytes);
	struct ibv_mr *lmr = ibv_reg_mr(pd, l, bytes, RW);
	if (!lmr)
		die("reg_mr");
	struct ibv_sge sg = { (uintptr_t)l, bytes, lmr->lkey };
	struct ibv_send_wr w = { .sg_list = &sg, .num_sge = 1, .opcode = rd ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	w.wr.rdma.remote_addr = peer.addr;
	w.wr.rdma.rkey = peer.rkey;
	double t0 = 0;
	for (long i = -iters / 10; i < iters; i++) {
		if (i == 0)
			t0 = now();
		struct ibv_wc wc;
		if (ibv_post_send(qp, &w, &bad))
			die("post");
		int n;
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
			;
		if (n < 0 || wc.status) {
			fprintf(stderr, "completion status %d\n", wc.status);
			return 1;
		}
	}
	double dt = now() - t0;
	printf("shared %s %s %zu us=%.4f gbps=%.3f\n", kind, rd ? "read" : "write", bytes, dt / iters * 1e6,
	       bytes * (double)iters / dt / 1e9);
	if (write(i2t[1], "x", 1) != 1)
		return 1;
	waitpid(pid, NULL, 0);
	return 0;
}
