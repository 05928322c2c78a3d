/* compat-tests/soft-hardening/endpoint.c: the software RDMA device's
 * endpoints (issue 10): peer death hidden by a forked child, stale endpoint
 * files of killed processes, descriptor exhaustion while opening a context
 * or making a link, and the private directory's rules.
 *
 * `endpoint <test>` runs one named test and prints "PASS <name>" or
 * "FAIL <name>: why" (run.sh runs each under a timeout: a hang fails).
 * The environment is run.sh's: XDG_RUNTIME_DIR a private directory,
 * RDMAV_SOFT_DEVICES=swr0. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RESULT_EXITS
#include "report.h"

static const char *sockdir(void)
{
	static char d[512];
	const char *rt = getenv("XDG_RUNTIME_DIR");
	snprintf(d, sizeof d, "%s/ibverbs-soft-%u", rt ? rt : "/tmp", (unsigned)getuid());
	return d;
}

static int exists(const char *name)
{
	char p[700];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", sockdir(), name);
	return lstat(p, &st) == 0;
}

/* Entries of the private directory that are endpoints: sockets (c<id>)
 * and symlinks (QPN links q<n>). */
static int count_endpoints(void)
{
	DIR *d = opendir(sockdir());
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_type == DT_SOCK || e->d_type == DT_LNK)
			n++;
	closedir(d);
	return n;
}

/* Our open descriptors (not counting the one that lists them). */
static int count_fds(int *highest)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0, hi = -1;
	if (!d)
		die("opendir /proc/self/fd");
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd == dirfd(d))
			continue;
		n++;
		if (fd > hi)
			hi = fd;
	}
	closedir(d);
	if (highest)
		*highest = hi;
	return n;
}

/* Fills every free descriptor number below the highest open one (with
 * /dev/null), so that a limit of highest + 1 + k leaves exactly k free;
 * returns the highest. */
static int fill_holes(void)
{
	int hi;
	count_fds(&hi);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul < 0)
		die("/dev/null");
	for (int fd = 0; fd < hi; fd++)
		if (fcntl(fd, F_GETFD) < 0 && dup3(nul, fd, O_CLOEXEC) < 0)
			die("dup3");
	if (nul > hi)
		hi = nul;
	return hi;
}

static void set_nofile(rlim_t soft)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r))
		die("getrlimit");
	r.rlim_cur = soft;
	if (setrlimit(RLIMIT_NOFILE, &r))
		die("setrlimit");
}

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("pipe write");
}

static void xread(int fd, void *p, size_t n)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	while (got < n) {
		if (poll(&pf, 1, 20000) != 1) {
			errno = ETIMEDOUT;
			die("pipe read");
		}
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r <= 0) {
			errno = EPIPE;
			die("pipe read (peer gone)");
		}
		got += r;
	}
}

static void to_init(struct ibv_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
}

static union ibv_gid port_gid;
static int have_gid;

/* INIT -> RTR towards `dqpn` (the provider makes the link here); 0 or the
 * error of ibv_modify_qp. */
static int to_rtr(struct ibv_context *c, struct ibv_qp *q, uint32_t dqpn)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	/* Queried once (it reads a file: not under a lowered limit). */
	if (!have_gid && ibv_query_gid(c, 1, 1, &port_gid))
		die("query_gid");
	have_gid = 1;
	a.ah_attr.grh.dgid = port_gid;
	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static void to_rts(struct ibv_qp *q)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

static struct ibv_qp *mkqp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *q = ibv_create_qp(pd, &a);
	if (!q)
		die("create_qp");
	return q;
}

/* A target process: opens swr0, makes an RC QP, reports its QPN and its
 * context's socket name, takes the initiator's QPN and moves its QP to RTS
 * (no receive is posted), then waits for one command byte:
 *   'f': forks a child that keeps every descriptor (no exec) and sleeps,
 *        reports the child's pid, then waits to be killed;
 *   'x': closes everything and exits 0;
 *   anything else / end of file: exits at once (kill -9 alike).
 * `ctx_id` receives the context id (the c<id> that appeared). */
struct target {
	pid_t pid;
	int to, from;
	uint32_t qpn;
};

static void target_main(int rd, int wr)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	if (!pd || !cq)
		die("target pd/cq");
	struct ibv_qp *q = mkqp(pd, cq);
	uint32_t qpn = q->qp_num, peer;
	xwrite(wr, &qpn, 4);
	xread(rd, &peer, 4);
	if (peer) {
		to_init(q);
		if (to_rtr(c, q, peer))
			die("target RTR");
		to_rts(q);
	}
	xwrite(wr, "r", 1);
	char cmd = 0;
	struct rlimit orig;
	if (getrlimit(RLIMIT_NOFILE, &orig))
		die("getrlimit");
again:
	if (read(rd, &cmd, 1) != 1)
		_exit(0);
	if (cmd == 'l') {
		int extra, hi, base;
		xread(rd, &extra, sizeof extra);
		hi = fill_holes();
		base = count_fds(NULL);
		set_nofile(hi + 1 + extra);
		xwrite(wr, &base, sizeof base);
		goto again;
	}
	if (cmd == 'u') {
		set_nofile(orig.rlim_cur);
		/* Whatever waited for a descriptor is handled now. */
		usleep(300 * 1000);
		int n = count_fds(NULL);
		xwrite(wr, &n, sizeof n);
		goto again;
	}
	if (cmd == 'f') {
		pid_t g = fork();
		if (g == 0) {
			alarm(60);
			for (;;)
				pause();
		}
		xwrite(wr, &g, sizeof g);
		for (;;)
			pause();
	}
	if (cmd == 'x') {
		ibv_destroy_qp(q);
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
		ibv_close_device(c);
		_exit(0);
	}
	_exit(0);
}

static void start_target(struct target *t)
{
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC))
		die("pipe");
	fflush(stdout);
	t->pid = fork();
	if (t->pid < 0)
		die("fork");
	if (t->pid == 0) {
		close(a[1]);
		close(b[0]);
		target_main(a[0], b[1]);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	t->to = a[1];
	t->from = b[0];
	xread(t->from, &t->qpn, 4);
}

/* Finishes the target's setup: `peer` is the initiator's QPN (0: none). */
static void target_ready(struct target *t, uint32_t peer)
{
	char r;
	xwrite(t->to, &peer, 4);
	xread(t->from, &r, 1);
}

static void kill_target(struct target *t)
{
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
	close(t->to);
	close(t->from);
}

/* ---- 1. peer death hidden by a forked child --------------------------- */

/* The target forks a child that inherits its sockets and then dies by
 * SIGKILL; the child lives on, so no hangup ever reaches the initiator.
 * An RC SEND posted to the dead target must still complete in error
 * (RETRY_EXC_ERR, as when a peer's socket hangs up), not hang. */
static void t_peer_death_forked(void)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	struct ibv_qp *q = mkqp(pd, cq);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("reg_mr");
	struct target t;
	start_target(&t);
	target_ready(&t, q->qp_num);
	to_init(q);
	if (to_rtr(c, q, t.qpn))
		die("RTR");
	to_rts(q);
	/* The link exists now (made at RTR); the target forks and dies. */
	pid_t g;
	xwrite(t.to, "f", 1);
	xread(t.from, &g, sizeof g);
	kill_target(&t);
	usleep(300 * 1000);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	int rc = ibv_post_send(q, &wr, &bad);
	struct ibv_wc wc;
	int got = 0;
	double end = now() + 10;
	while (rc == 0 && now() < end && !(got = ibv_poll_cq(cq, 1, &wc)))
		usleep(1000);
	kill(g, SIGKILL);
	if (rc)
		result(0, "ibv_post_send: %s", strerror(rc));
	if (got <= 0)
		result(0, "no completion 10 s after the peer died (its forked child still holds its sockets)");
	result(wc.wr_id == 7 && wc.status != IBV_WC_SUCCESS, "completion wr_id %llu status %s",
	       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
}

/* ---- 2. stale endpoint files ------------------------------------------ */

/* A target killed with SIGKILL leaves c<id> and q<qpn>; so does one killed
 * after forking a child that keeps its listening socket open.  The next
 * context that opens removes them, and keeps those of a live target. */
static void t_stale_reclaimed(void)
{
	struct target dead, live, hidden;
	char dq[32], lq[32], hq[32], dc[64] = "", lc[64] = "", hc[64] = "", p[700];
	pid_t g;
	start_target(&dead);
	target_ready(&dead, 0);
	start_target(&live);
	target_ready(&live, 0);
	start_target(&hidden);
	target_ready(&hidden, 0);
	snprintf(hq, sizeof hq, "q%u", hidden.qpn);
	snprintf(p, sizeof p, "%s/%s", sockdir(), hq);
	if (readlink(p, hc, sizeof hc - 1) <= 0)
		die("readlink (forking target's QPN link)");
	xwrite(hidden.to, "f", 1);
	xread(hidden.from, &g, sizeof g);
	kill_target(&hidden);
	snprintf(dq, sizeof dq, "q%u", dead.qpn);
	snprintf(lq, sizeof lq, "q%u", live.qpn);
	/* Each QPN link names its context's socket c<id>. */
	snprintf(p, sizeof p, "%s/%s", sockdir(), dq);
	if (readlink(p, dc, sizeof dc - 1) <= 0)
		die("readlink (killed target's QPN link)");
	snprintf(p, sizeof p, "%s/%s", sockdir(), lq);
	if (readlink(p, lc, sizeof lc - 1) <= 0)
		die("readlink (live target's QPN link)");
	kill_target(&dead);
	if (!exists(dq) || !exists(dc))
		result(0, "setup: %s or %s missing after the kill", dq, dc);
	struct ibv_context *c = open_dev();
	int dead_q = exists(dq), dead_c = exists(dc), live_q = exists(lq), live_c = exists(lc);
	int hidden_q = exists(hq), hidden_c = exists(hc);
	ibv_close_device(c);
	kill(g, SIGKILL);
	/* The live target still works: it closes its device and exits 0. */
	xwrite(live.to, "x", 1);
	int st = 0;
	waitpid(live.pid, &st, 0);
	if (dead_q || dead_c)
		result(0, "after a context opened, the killed process's %s%s%s still there", dead_c ? dc : "",
		       dead_c && dead_q ? " and " : "", dead_q ? dq : "");
	if (hidden_q || hidden_c)
		result(0, "after a context opened, %s%s%s of a process killed after forking a child still there",
		       hidden_c ? hc : "", hidden_c && hidden_q ? " and " : "", hidden_q ? hq : "");
	if (!live_q || !live_c)
		result(0, "a live process's %s%s%s was removed", live_c ? "" : lc, !live_c && !live_q ? " and " : "",
		       live_q ? "" : lq);
	result(WIFEXITED(st) && WEXITSTATUS(st) == 0, "live target exit status %d", st);
}

/* ---- 3. descriptor exhaustion ------------------------------------------ */

/* ibv_open_device under every RLIMIT_NOFILE from "no descriptor left"
 * upwards until it succeeds: each failure frees what it made (descriptors
 * and socket files). */
static void t_emfile_open(void)
{
	struct rlimit orig;
	if (getrlimit(RLIMIT_NOFILE, &orig))
		die("getrlimit");
	/* Warm up: library and provider loaded, one context opened and closed. */
	ibv_close_device(open_dev());
	int hi = fill_holes(), base = count_fds(NULL);
	int ep = count_endpoints();
	int failures = 0;
	char leak[400] = "";
	for (int extra = 0; extra < 64; extra++) {
		set_nofile(hi + 1 + extra);
		struct ibv_context *c = try_open();
		int err = errno;
		set_nofile(orig.rlim_cur);
		if (c) {
			ibv_close_device(c);
			int n = count_fds(NULL), e = count_endpoints();
			if (n != base || e != ep)
				result(0, "after a successful open and close at limit +%d: %d fds (was %d), %d "
					  "endpoint files (was %d)", extra, n, base, e, ep);
			if (!failures)
				result(0, "ibv_open_device never failed (limit not effective?)");
			if (leak[0])
				result(0, "%s", leak);
			result(1, "opened with %d free descriptors after %d failures", extra, failures);
		}
		failures++;
		int n = count_fds(NULL), e = count_endpoints();
		if ((n != base || e != ep) && !leak[0])
			snprintf(leak, sizeof leak, "ibv_open_device failed (%s) with %d free descriptors: %d fds "
				 "left open (was %d), %d endpoint files (was %d)", strerror(err), extra, n, base, e, ep);
		if (n != base || e != ep)
			fprintf(stderr, "%d free: %s, fds %d (was %d), endpoint files %d (was %d)\n", extra,
				strerror(err), n, base, e, ep);
		base = n;
		ep = e;
	}
	result(0, "ibv_open_device still fails with 64 free descriptors");
}

/* Making a link (INIT->RTR of an RC QP towards a live target) under every
 * RLIMIT_NOFILE from "no descriptor left" upwards until the link is made:
 * each failed attempt frees what it made. */
static void t_emfile_link(void)
{
	struct rlimit orig;
	if (getrlimit(RLIMIT_NOFILE, &orig))
		die("getrlimit");
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	struct target t;
	start_target(&t);
	target_ready(&t, 0);
	{
		struct ibv_qp *q0 = mkqp(pd, cq);
		to_init(q0);
		ibv_destroy_qp(q0);
		if (ibv_query_gid(c, 1, 1, &port_gid))
			die("query_gid");
		have_gid = 1;
	}
	int failures = 0;
	for (int extra = 0; extra < 32; extra++) {
		struct ibv_qp *q = mkqp(pd, cq);
		to_init(q);
		int hi = fill_holes(), base = count_fds(NULL);
		int ep = count_endpoints();
		set_nofile(hi + 1 + extra);
		to_rtr(c, q, t.qpn);
		set_nofile(orig.rlim_cur);
		usleep(20 * 1000);
		int n = count_fds(NULL), e = count_endpoints();
		ibv_destroy_qp(q);
		if (n > base + 1) {
			/* A link: its socket and the peer's doorbell (and a pidfd). */
			kill_target(&t);
			if (!failures)
				result(0, "the link never failed (limit not effective?)");
			result(e == ep, "endpoint files %d, was %d", e, ep);
		}
		failures++;
		if (n != base || e != ep) {
			kill_target(&t);
			result(0, "a link failed with %d free descriptors: %d fds left open (was %d), %d endpoint files "
				  "(was %d)", extra, n, base, e, ep);
		}
	}
	kill_target(&t);
	result(0, "no link made with 32 free descriptors");
}

/* The same on the accepting side: the target runs out of descriptors while
 * it takes a connection (accept, the hello's descriptors, its pidfd). */
static void t_emfile_accept(void)
{
	/* Without the direct path: with it, an initiator whose hello is not
	 * answered at once takes the target's descriptors itself (pidfd_getfd),
	 * and the target takes the link later, once it has descriptors again;
	 * this test is about the target failing to take one. */
	setenv("SWRDMA_DIRECT", "0", 1);
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	if (ibv_query_gid(c, 1, 1, &port_gid))
		die("query_gid");
	have_gid = 1;
	int failures = 0;
	for (int extra = 0; extra < 8; extra++) {
		/* A fresh target each time: a failed link is not retried. */
		struct target t;
		start_target(&t);
		target_ready(&t, 0);
		struct ibv_qp *q = mkqp(pd, cq);
		to_init(q);
		int base, n;
		xwrite(t.to, "l", 1);
		xwrite(t.to, &extra, sizeof extra);
		xread(t.from, &base, sizeof base);
		to_rtr(c, q, t.qpn);
		usleep(200 * 1000);
		xwrite(t.to, "u", 1);
		xread(t.from, &n, sizeof n);
		ibv_destroy_qp(q);
		kill_target(&t);
		fprintf(stderr, "%d free: target fds %d -> %d\n", extra, base, n);
		if (n > base + 1) {
			if (!failures)
				result(0, "the link never failed (limit not effective?)");
			result(1, "link taken with %d free descriptors", extra);
		}
		failures++;
		if (n != base)
			result(0, "the target failed to take a link with %d free descriptors: %d fds left open (was %d)",
			       extra, n, base);
	}
	result(0, "no link taken with 8 free descriptors");
}

/* Every descriptor the library and provider open for a context, its
 * completion channel and its links (both ways, with the peers' pidfds) is
 * close-on-exec: none leaks into a program the application executes. */
static void t_cloexec(void)
{
	static char before[4096];
	int hi;
	count_fds(&hi);
	for (int fd = 0; fd <= hi && fd < (int)sizeof before; fd++)
		before[fd] = fcntl(fd, F_GETFD) >= 0;
	struct ibv_context *c = open_dev();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(c);
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, ch, 0);
	if (!ch || !pd || !cq)
		die("channel/pd/cq");
	struct ibv_qp *q = mkqp(pd, cq);
	struct target t;
	start_target(&t);
	target_ready(&t, q->qp_num); /* the target connects to us */
	to_init(q);
	if (to_rtr(c, q, t.qpn)) /* we connect to the target */
		die("RTR");
	usleep(300 * 1000);
	int n = 0, bad = -1, nbad = 0;
	count_fds(&hi);
	for (int fd = 0; fd <= hi && fd < (int)sizeof before; fd++) {
		int fl = fcntl(fd, F_GETFD);
		if (fl < 0 || before[fd])
			continue;
		n++;
		if (!(fl & FD_CLOEXEC)) {
			nbad++;
			bad = fd;
		}
	}
	char what[256] = "";
	if (bad >= 0) {
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", bad);
		ssize_t l = readlink(p, what, sizeof what - 1);
		what[l > 0 ? l : 0] = 0;
	}
	kill_target(&t);
	if (n < 8)
		result(0, "only %d new descriptors (context, channel and two links expected)", n);
	result(nbad == 0, "%d of %d new descriptors lack FD_CLOEXEC (e.g. fd %d: %s)", nbad, n, bad, what);
}

/* ---- 4. the private directory ----------------------------------------- */

/* A runtime directory of ours that anyone may write to is not used: the
 * device's directory is elsewhere (the documented fallback) or the device
 * is refused, and nothing is created in it. */
static void t_rt_world_writable(void)
{
	char rt[600], mine[700];
	snprintf(rt, sizeof rt, "%s/open-rt", getenv("XDG_RUNTIME_DIR"));
	snprintf(mine, sizeof mine, "%s/ibverbs-soft-%u", rt, (unsigned)getuid());
	mkdir(rt, 0777);
	if (chmod(rt, 0777))
		die("chmod");
	setenv("XDG_RUNTIME_DIR", rt, 1);
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	const char *path = "";
	char keep[512] = "";
	for (int i = 0; l && i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), "swr0"))
			snprintf(keep, sizeof keep, "%s", l[i]->ibdev_path);
	path = keep;
	struct stat st;
	int made = lstat(mine, &st) == 0;
	if (l)
		ibv_free_device_list(l);
	if (made)
		result(0, "%s was created in a mode-0777 runtime directory (device path '%s')", mine, path);
	result(strncmp(path, rt, strlen(rt)) != 0, "device path '%s' is inside the mode-0777 runtime directory", path);
}

/* The id counter file "ids" replaced by a symlink to another file of the
 * user: opening a context must not write through it. */
static void t_ids_symlink(void)
{
	char victim[600], ids[700];
	snprintf(victim, sizeof victim, "%s/victim", getenv("XDG_RUNTIME_DIR"));
	snprintf(ids, sizeof ids, "%s/ids", sockdir());
	ibv_close_device(open_dev()); /* the directory exists */
	FILE *f = fopen(victim, "w");
	if (!f)
		die("victim");
	fputs("precious\n", f);
	fclose(f);
	unlink(ids);
	if (symlink(victim, ids))
		die("symlink");
	struct ibv_context *c = try_open();
	if (c)
		ibv_close_device(c);
	char got[64] = "";
	f = fopen(victim, "r");
	if (!f || !fgets(got, sizeof got, f))
		got[0] = 0;
	if (f)
		fclose(f);
	unlink(ids);
	result(!strcmp(got, "precious\n"), "the file behind the ids symlink was written (now '%.8s...')", got);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{ "peer-death-forked-child-detected", t_peer_death_forked },
		{ "stale-endpoint-files-reclaimed", t_stale_reclaimed },
		{ "emfile-open-device-no-leak", t_emfile_open },
		{ "emfile-make-link-no-leak", t_emfile_link },
		{ "emfile-take-link-no-leak", t_emfile_accept },
		{ "provider-fds-cloexec", t_cloexec },
		{ "runtime-dir-world-writable-refused", t_rt_world_writable },
		{ "ids-symlink-not-followed", t_ids_symlink },
	};
	if (argc != 2) {
		fprintf(stderr, "usage: %s <test>\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_name = argv[1];
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
		if (!strcmp(tests[i].name, argv[1])) {
			tests[i].fn();
			return 0;
		}
	printf("FAIL %s: no such test\n", argv[1]);
	return 2;
}
