/*
 * fork-mr: registered memory across fork(), for the vm-fork suite.
 *
 *   fork-mr DEVICE GID_INDEX [--fork-init]
 *
 * Opens DEVICE, registers a 2-page buffer (page 0: the target, page 1: the
 * source of RDMA writes), connects an RC QP to itself (loopback through the
 * device's own GID), RDMA-writes once, then fork()s:
 *   child:  writes its copy of the registered target page, waits until the
 *           parent did an RDMA write into its own target page, checks that
 *           its copy still holds what it wrote, exits.  With fork protection
 *           (RDMAV_FORK_SAFE=1 or ibv_fork_init(): MADV_DONTFORK on the
 *           registered range) the child has no such page and dies with
 *           SIGSEGV when it writes - that is what upstream does too.
 *   parent: checks that its target page is unchanged by the child's write,
 *           RDMA-writes into the target through the MR (while the child is
 *           alive, and again after it exited) and checks each time that the
 *           data arrived in the parent's memory, then tears everything down.
 * Prints one line per parent step ("step: ok" or "step: FAILED (...)"), what
 * the child did (child_write:, child_copy:), ibv_is_fork_initialized() (and
 * ibv_fork_init()'s return with --fork-init).  Exit status 0 when every
 * parent step was ok; the child's fate is an observation, compared with
 * upstream's by fork.sh.  The output holds no addresses or keys, so two
 * libraries' outputs can be compared byte for byte.
 * RDMAV_FORK_SAFE / RDMAV_HUGEPAGES_SAFE come from the environment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/qpsetup.h"

#define PAGE 4096
#define LEN PAGE /* bytes written per RDMA write */

static int failures;

static void step(const char *name, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void step(const char *name, int ok, const char *fmt, ...)
{
	printf("%s: %s", name, ok ? "ok" : "FAILED");
	if (!ok && fmt) {
		va_list ap;

		va_start(ap, fmt);
		printf(" (");
		vprintf(fmt, ap);
		printf(")");
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static const char *fork_status(enum ibv_fork_status s)
{
	switch (s) {
	case IBV_FORK_DISABLED: return "IBV_FORK_DISABLED";
	case IBV_FORK_ENABLED: return "IBV_FORK_ENABLED";
	case IBV_FORK_UNNEEDED: return "IBV_FORK_UNNEEDED";
	}
	return "unknown";
}

/* the first byte offset where buf differs from c, or -1 */
static long differs(const unsigned char *buf, unsigned char c, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != c)
			return (long)i;
	return -1;
}

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	unsigned char *buf;
	uint64_t wr_id;
};

/* RDMA-write the source page (filled with c) into the target page */
static int rdma_write(struct ctx *c, unsigned char v, const char **why)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + PAGE), .length = LEN, .lkey = c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = ++c->wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)c->buf, .rkey = c->mr->rkey },
	}, *bad;
	struct ibv_wc wc;
	struct timespec t0, t;
	int n;

	memset(c->buf + PAGE, v, LEN);
	if (ibv_post_send(c->qp, &wr, &bad)) {
		*why = "ibv_post_send failed";
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0) {
			*why = "ibv_poll_cq failed";
			return -1;
		}
		if (n == 1)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 20) {
			*why = "no completion within 20 s";
			return -1;
		}
		usleep(1000);
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != c->wr_id) {
		static char msg[128];

		snprintf(msg, sizeof(msg), "completion status %s", ibv_wc_status_str(wc.status));
		*why = msg;
		return -1;
	}
	return 0;
}

/* 0, or the step that failed: -1 the GID, -2 INIT, -3 RTR, -4 RTS */
static int connect_self(struct ctx *c, int gid_index)
{
	struct qps_conn q;
	enum ibv_qp_state failed;

	qps_defaults(&q);
	if (ibv_query_gid(c->ctx, 1, gid_index, &q.dgid))
		return -1;
	q.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
	q.dest_qpn = c->qp->qp_num;
	q.sgid_index = gid_index;
	if (qps_to_rts(c->qp, &q, &failed))
		return failed == IBV_QPS_INIT ? -2 : failed == IBV_QPS_RTR ? -3 : -4;
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = { 0 };
	struct ibv_device **list;
	const char *why = "";
	int gid_index, fork_init = 0, n, i, to_child[2], to_parent[2], st;
	long off;
	pid_t pid;
	char b;
	int child_wrote;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [--fork-init]\n", argv[0]);
		return 2;
	}
	gid_index = atoi(argv[2]);
	fork_init = argc > 3 && !strcmp(argv[3], "--fork-init");
	printf("RDMAV_FORK_SAFE=%s\n", getenv("RDMAV_FORK_SAFE") ? getenv("RDMAV_FORK_SAFE") : "(unset)");
	if (fork_init) {
		int ret = ibv_fork_init();

		printf("ibv_fork_init: %d%s%s\n", ret, ret ? " " : "", ret ? strerror(ret) : "");
	}
	printf("ibv_is_fork_initialized: %s\n", fork_status(ibv_is_fork_initialized()));
	fflush(stdout);

	list = ibv_get_device_list(&n);
	if (!list) {
		step("open", 0, "ibv_get_device_list: %s", strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			c.ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	step("open", !!c.ctx, "cannot open %s: %s", argv[1], strerror(errno));
	if (!c.ctx)
		return 1;
	/* registered before anything else is set up, like a real application */
	if (posix_memalign((void **)&c.buf, PAGE, 2 * PAGE))
		return 1;
	memset(c.buf, 0xA1, 2 * PAGE);
	c.pd = ibv_alloc_pd(c.ctx);
	c.mr = c.pd ? ibv_reg_mr(c.pd, c.buf, 2 * PAGE, IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	step("reg_mr", !!c.mr, "%s: %s", c.pd ? "ibv_reg_mr" : "ibv_alloc_pd", strerror(errno));
	if (!c.mr)
		return 1;
	c.cq = ibv_create_cq(c.ctx, 16, NULL, NULL, 0);
	if (c.cq) {
		struct ibv_qp_init_attr qa = {
			.send_cq = c.cq, .recv_cq = c.cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		c.qp = ibv_create_qp(c.pd, &qa);
	}
	i = c.qp ? connect_self(&c, gid_index) : -5;
	step("qp_loopback", i == 0, "setup step %d failed: %s", -i, strerror(errno));
	if (i)
		return 1;
	i = rdma_write(&c, 0xB2, &why);
	off = i ? -2 : differs(c.buf, 0xB2, LEN);
	step("rdma_write_before_fork", off == -1, "%s", i ? why : "data did not arrive");

	if (pipe(to_child) || pipe(to_parent))
		return 1;
	signal(SIGPIPE, SIG_IGN);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		step("fork", 0, "%s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		/* child: no verbs; write the copy of the registered page.  With
		 * fork protection (MADV_DONTFORK) the child has no such page and
		 * dies here (SIGSEGV): the parent reports what happened. */
		close(to_child[1]);
		close(to_parent[0]);
		b = 'a';
		if (write(to_parent[1], &b, 1) != 1)
			_exit(3);
		memset(c.buf, 0xCC, LEN);
		b = 'w';
		if (write(to_parent[1], &b, 1) != 1)
			_exit(3);
		if (read(to_child[0], &b, 1) != 1)
			_exit(4);
		/* the parent has RDMA-written 0xD3 into its page: ours is private */
		_exit(differs(c.buf, 0xCC, LEN) == -1 ? 0 : 5);
	}
	close(to_child[0]);
	close(to_parent[1]);
	step("fork", 1, NULL);
	/* what the child did: an observation, compared with upstream's */
	n = 0;
	while (n < 2 && read(to_parent[0], &b, 1) == 1)
		n++;
	child_wrote = n == 2;
	if (!child_wrote) {
		if (waitpid(pid, &st, 0) == pid && WIFSIGNALED(st))
			printf("child_write: the child died writing its copy (signal %d: %s)\n",
			       WTERMSIG(st), WTERMSIG(st) == SIGSEGV ?
			       "the registered pages are not inherited (MADV_DONTFORK)" : strsignal(WTERMSIG(st)));
		else
			printf("child_write: the child ended before writing\n");
		pid = -1;
	} else {
		printf("child_write: the child wrote its copy of the registered page\n");
	}
	fflush(stdout);
	off = differs(c.buf, 0xB2, LEN);
	step("parent_buffer_unchanged", off == -1, "byte %ld is 0x%02x", off, off >= 0 ? c.buf[off] : 0);
	i = rdma_write(&c, 0xD3, &why);
	off = i ? -2 : differs(c.buf, 0xD3, LEN);
	step(pid > 0 ? "rdma_write_while_child_alive" : "rdma_write_after_fork", off == -1,
	     "%s", i ? why : "data did not arrive in the parent's buffer");
	if (pid > 0) {
		b = 'c';
		n = write(to_child[1], &b, 1);
		(void)n;
		if (waitpid(pid, &st, 0) != pid)
			st = -1;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			printf("child_copy: still the child's own after the parent's RDMA write\n");
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 5)
			printf("child_copy: CHANGED by the parent's RDMA write\n");
		else if (WIFEXITED(st))
			printf("child_copy: the child exited with status %d\n", WEXITSTATUS(st));
		else
			printf("child_copy: the child died (signal %d)\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	}
	i = rdma_write(&c, 0xE4, &why);
	off = i ? -2 : differs(c.buf, 0xE4, LEN);
	step("rdma_write_after_child_exit", off == -1, "%s", i ? why : "data did not arrive");

	i = ibv_destroy_qp(c.qp) | ibv_destroy_cq(c.cq) | ibv_dereg_mr(c.mr) |
	    ibv_dealloc_pd(c.pd) | ibv_close_device(c.ctx);
	step("cleanup", i == 0, "a destroy call failed");
	free(c.buf);
	printf("result: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
