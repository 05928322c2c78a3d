/* compat-tests/soft-hardening/hardening.c: the software RDMA device (swrdma)
 * against hostile peers and out-of-contract use.
 *
 * `hardening <test>` runs one named test and prints "PASS <name>" or
 * "FAIL <name>: why" (run.sh runs each under a timeout: a hang fails).
 *
 * Raw-peer tests speak the device's link protocol directly over its Unix
 * socket (`$XDG_RUNTIME_DIR/ibverbs-soft-<uid>/c<id>`): an 8-byte hello
 * (magic "SWRE", context id) with SCM_RIGHTS descriptors (the initiator's
 * ring memfd of LINK_BYTES and its eventfd doorbell), answered by the
 * target's hello with its eventfd.  The target is a child process that
 * opens swr0 and waits; a test passes only if the target survives, and
 * exits normally, with what the test asserts.
 *
 * Verbs tests use two processes (parent: initiator and judge; child: the
 * target, whose death by a signal fails the test) or one process. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SW_MAGIC 0x53575245u
#define RING_HDR 4096u
#define RING_SIZE (4u << 20)
#define LINK_BYTES (2u * (RING_HDR + RING_SIZE))
/* A record is published by its stamp, its position + 1 mixed with the
 * ring's salt (ring header offset 200), which stays 0 in the link files
 * this program makes (providers/swrdma/ring/src/lib.rs, `Form`: a record
 * is stamp @0, len @8, kind @12, flags @14, dst_qpn @16, src_qpn @20,
 * seq @24, raddr @32, rkey @40, imm @44, total @48, off @52 (32 bits
 * each), plen @56, status @60; the payload from 128). */
#define STAMP(pos) ((uint64_t)(pos) + 1)

#include "report.h"

/* ---- raw peers --------------------------------------------------------- */

static const char *sockdir(void)
{
	static char d[512];
	const char *rt = getenv("XDG_RUNTIME_DIR");
	snprintf(d, sizeof d, "%s/ibverbs-soft-%u", rt ? rt : "/tmp", (unsigned)getuid());
	return d;
}

/* The context ids whose sockets exist now (c<id>), as a bitmap-ish list. */
static int list_ids(uint32_t *ids, int max)
{
	DIR *d = opendir(sockdir());
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char *end;
		if (e->d_name[0] != 'c')
			continue;
		unsigned long v = strtoul(e->d_name + 1, &end, 10);
		if (*end == 0 && end != e->d_name + 1)
			ids[n++] = (uint32_t)v;
	}
	closedir(d);
	return n;
}

/* Forks a child joined by two pipes: in the child, *rdy is the write end
 * of "ready" and *cmd the read end of "command"; in the parent, the other
 * ends.  Returns the pid (0 in the child). */
static pid_t fork_piped(int *rdy, int *cmd)
{
	int r[2], c[2];
	if (pipe(r) || pipe(c))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	close(pid == 0 ? r[0] : r[1]);
	close(pid == 0 ? c[1] : c[0]);
	*rdy = pid == 0 ? r[1] : r[0];
	*cmd = pid == 0 ? c[0] : c[1];
	return pid;
}

/* Opens swr0 in *c; returns the new context's id (the socket that appeared
 * in the private directory; 0 when none did). */
static uint32_t open_new_ctx(struct ibv_context **c)
{
	uint32_t before[512], after[512], id = 0;
	int nb = list_ids(before, 512);
	*c = open_dev();
	int na = list_ids(after, 512);
	for (int i = 0; i < na; i++) {
		int old = 0;
		for (int j = 0; j < nb; j++)
			old |= after[i] == before[j];
		if (!old)
			id = after[i];
	}
	return id;
}

struct target {
	pid_t pid;
	int cmd;	/* write end: a byte tells the target to close and exit */
	uint32_t id;	/* its context id */
};

/* The target: opens swr0, reports its context id, waits for the command,
 * closes the device and exits 0 (3 when ibv_close_device took > 1 s). */
static void start_target(struct target *t)
{
	int rdy, cmd;
	t->pid = fork_piped(&rdy, &cmd);
	if (t->pid == 0) {
		struct ibv_context *c;
		uint32_t id = open_new_ctx(&c);
		if (write(rdy, &id, 4) != 4)
			_exit(2);
		char b;
		if (read(cmd, &b, 1) != 1)
			_exit(2);
		double t0 = now();
		ibv_close_device(c);
		_exit(now() - t0 > 1.0 ? 3 : 0);
	}
	t->cmd = cmd;
	struct pollfd p = { .fd = rdy, .events = POLLIN };
	if (poll(&p, 1, 10000) != 1 || read(rdy, &t->id, 4) != 4 || t->id == 0) {
		errno = EIO;
		die("target did not start");
	}
	close(rdy);
}

/* Tells the target to finish; describes how it ended into `why`; 1 when it
 * exited normally with status 0. */
static int stop_target(struct target *t, char *why, size_t n)
{
	int st = 0;
	signal(SIGPIPE, SIG_IGN);
	(void)!write(t->cmd, "q", 1);
	close(t->cmd);
	double end = now() + 15;
	while (waitpid(t->pid, &st, WNOHANG) == 0) {
		if (now() > end) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &st, 0);
			snprintf(why, n, "target hung (killed after 15 s)");
			return 0;
		}
		msleep(10);
	}
	if (WIFSIGNALED(st)) {
		snprintf(why, n, "target died of signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
		return 0;
	}
	if (WEXITSTATUS(st) == 3) {
		snprintf(why, n, "target's ibv_close_device took more than 1 s");
		return 0;
	}
	if (WEXITSTATUS(st) != 0) {
		snprintf(why, n, "target exit status %d", WEXITSTATUS(st));
		return 0;
	}
	snprintf(why, n, "target exited normally");
	return 1;
}

static int peer_connect(uint32_t id)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s/c%u", sockdir(), id);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a))
		die("connect to the target's socket");
	return s;
}

/* 0 when the hello could not be sent (the target closed the connection). */
static int try_send_hello(int s, int fd1, int fd2)
{
	uint32_t h[2] = { SW_MAGIC, 0x7ff00000u + (uint32_t)(getpid() & 0xffff) };
	struct iovec iov = { .iov_base = h, .iov_len = sizeof h };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(2 * sizeof(int));
	int fds[2] = { fd1, fd2 };
	memcpy(CMSG_DATA(c), fds, sizeof fds);
	return sendmsg(s, &m, MSG_NOSIGNAL) == sizeof h;
}

static void send_hello(int s, int fd1, int fd2)
{
	if (!try_send_hello(s, fd1, fd2))
		die("sendmsg hello");
}

/* 1 when the target answered our hello within `ms` (its eventfd in *efd). */
static int wait_reply(int s, int ms, int *efd)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	*efd = -1;
	if (poll(&p, 1, ms) != 1)
		return 0;
	uint32_t h[2] = { 0, 0 };
	struct iovec iov = { .iov_base = h, .iov_len = sizeof h };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	ssize_t n = recvmsg(s, &m, MSG_DONTWAIT);
	if (n != sizeof h || h[0] != SW_MAGIC)
		return 0; /* closed: refused */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(efd, CMSG_DATA(c), sizeof(int));
	return 1;
}

static int make_memfd(int seal)
{
	int fd = memfd_create("peer-link", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, LINK_BYTES))
		die("memfd");
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		die("F_ADD_SEALS");
	return fd;
}

static void kick(int efd)
{
	uint64_t one = 1;
	if (efd >= 0)
		(void)!write(efd, &one, 8);
}

/* Control: a well-formed crafted peer (sealed memfd, eventfd) is accepted:
 * the reply-detection the refusal tests rely on works. */
static void t_accepted(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int s = peer_connect(t.id), m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC), te;
	send_hello(s, m, e);
	int got = wait_reply(s, 3000, &te);
	int ok = stop_target(&t, why, sizeof why);
	result(got && ok, "reply=%d, %s", got, why);
}

/* (c) A peer that passes an unsealed memfd and shrinks it after the
 * handshake must not kill the target with SIGBUS: the link is refused. */
static void t_unsealed(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int s = peer_connect(t.id), m = make_memfd(0), e = eventfd(0, EFD_CLOEXEC), te;
	send_hello(s, m, e);
	int got = wait_reply(s, 2000, &te);
	if (ftruncate(m, 0))
		die("ftruncate");
	kick(te);
	msleep(400);
	int ok = stop_target(&t, why, sizeof why);
	result(!got && ok, "%s, %s", got ? "link accepted" : "link refused", why);
}

/* (c) A memfd of the wrong size (sealed) is refused too. */
static void t_wrong_size(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int s = peer_connect(t.id), e = eventfd(0, EFD_CLOEXEC), te;
	int m = memfd_create("peer-link", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0 || ftruncate(m, 4096) || fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		die("memfd");
	send_hello(s, m, e);
	int got = wait_reply(s, 2000, &te);
	msleep(200);
	int ok = stop_target(&t, why, sizeof why);
	result(!got && ok, "%s, %s", got ? "link accepted" : "link refused", why);
}

static void ring_record(int m, int te);

/* (d) A peer that passes a pipe (read end closed) as its doorbell: the
 * target must refuse it, and must not die of SIGPIPE when it would ring it
 * (we write one record into the request ring and ask for a wake-up). */
static void t_pipe_doorbell(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int s = peer_connect(t.id), m = make_memfd(1), p[2], te;
	if (pipe(p))
		die("pipe");
	close(p[0]);
	send_hello(s, m, p[1]);
	int got = wait_reply(s, 2000, &te);
	if (got)
		ring_record(m, te);
	msleep(500);
	int ok = stop_target(&t, why, sizeof why);
	result(!got && ok, "%s, %s", got ? "link accepted" : "link refused", why);
}

/* Writes one record of an unknown kind into the request ring of link
 * memory `m` and asks the target for a wake-up once it has consumed it
 * (the target then rings our doorbell). */
static void ring_record(int m, int te)
{
	uint8_t *map = mmap(NULL, LINK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
	if (map == MAP_FAILED)
		die("mmap");
	uint32_t *rec = (uint32_t *)(map + RING_HDR);
	rec[2] = 128;	/* len */
	rec[3] = 99;	/* kind 99, flags 0 */
	__atomic_store_n((uint32_t *)(map + 132), 1, __ATOMIC_SEQ_CST); /* space_wanted */
	__atomic_store_n((uint64_t *)rec, STAMP(0), __ATOMIC_RELEASE);  /* published */
	__atomic_store_n((uint64_t *)map, 128, __ATOMIC_RELEASE);      /* head */
	kick(te);
}

/* Hang: a peer whose doorbell is full (an eventfd at its maximum count, in
 * blocking mode) must not block the target's thread (nor close_device)
 * when the target rings it. */
static void t_full_doorbell(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int s = peer_connect(t.id), m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC), te;
	uint64_t max = 0xfffffffffffffffeull;
	if (write(e, &max, 8) != 8)
		die("eventfd write");
	send_hello(s, m, e);
	int got = wait_reply(s, 2000, &te);
	if (got)
		ring_record(m, te);
	msleep(500);
	int ok = stop_target(&t, why, sizeof why);
	result(got && ok, "%s, %s", got ? "link accepted" : "link refused", why);
}

/* Unbounded growth / hang: a peer that streams requests (SENDs to a QPN
 * that does not exist: each is answered with a NAK) and never consumes its
 * response ring; the target's response backlog is bounded: the link is
 * dropped (our socket is hung up), the target lives. */
static void t_backlog_overflow(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int s = peer_connect(t.id), m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), te;
	send_hello(s, m, e);
	int got = wait_reply(s, 2000, &te), dropped = 0;
	long sent = 0;
	if (got) {
		uint8_t *map = mmap(NULL, LINK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
		if (map == MAP_FAILED)
			die("mmap");
		uint64_t *head = (uint64_t *)map, *tail = (uint64_t *)(map + 64), h = 0;
		double end = now() + 30;
		while (now() < end && !dropped && sent < 2000000) {
			uint64_t tl = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
			int n = 0;
			while (h - tl + 128 <= RING_SIZE && n < 1024) {
				uint32_t *rec = (uint32_t *)(map + RING_HDR + (h & (RING_SIZE - 1)));
				memset(rec + 2, 0, 128 - 8);
				rec[2] = 128;			/* len */
				rec[3] = 2 | (3u << 16);	/* K_WRITE, F_FIRST|F_LAST */
				rec[4] = 0xfffff0;		/* dst_qpn: none */
				__atomic_store_n((uint64_t *)rec, STAMP(h), __ATOMIC_RELEASE);
				h += 128;
				n++;
			}
			if (n) {
				__atomic_store_n(head, h, __ATOMIC_RELEASE);
				sent += n;
				kick(te);
			}
			struct pollfd p = { .fd = s, .events = POLLIN };
			if (poll(&p, 1, n ? 0 : 1) == 1) {
				char b[16];
				ssize_t r = recv(s, b, sizeof b, MSG_DONTWAIT);
				dropped = r == 0 || (r < 0 && errno != EAGAIN);
			}
		}
	}
	int ok = stop_target(&t, why, sizeof why);
	result(got && dropped && ok, "%ld requests sent, link %s, %s", sent, dropped ? "dropped" : "not dropped", why);
}

/* (d) A socket instead of an eventfd is refused as well. */
static void t_socket_doorbell(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int s = peer_connect(t.id), m = make_memfd(1), sp[2], te;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		die("socketpair");
	send_hello(s, m, sp[1]);
	int got = wait_reply(s, 2000, &te);
	msleep(200);
	int ok = stop_target(&t, why, sizeof why);
	result(!got && ok, "%s, %s", got ? "link accepted" : "link refused", why);
}

/* Hang: peers that connect and never say hello must not stall the
 * provider's thread (another peer's hello is answered at once) nor
 * ibv_close_device. */
static void t_silent_hello(void)
{
	struct target t;
	char why[128];
	start_target(&t);
	int silent[4];
	for (int i = 0; i < 4; i++)
		silent[i] = peer_connect(t.id);
	msleep(50);
	int s = peer_connect(t.id), m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC), te;
	double t0 = now();
	send_hello(s, m, e);
	int got = wait_reply(s, 4000, &te);
	double dt = now() - t0;
	int ok = stop_target(&t, why, sizeof why);
	for (int i = 0; i < 4; i++)
		close(silent[i]);
	result(got && dt < 1.0 && ok, "hello answered: %s after %.2f s (want < 1 s), %s", got ? "yes" : "no", dt, why);
}

/* ---- verbs helpers ------------------------------------------------------- */

static void to_init(struct ibv_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
}

/* RTR (with the responder's min_rnr_timer) and RTS (with the requester's
 * timeout, retry_cnt and rnr_retry). */
static void to_rts_p(struct ibv_context *c, struct ibv_qp *q, uint32_t dqpn, int min_rnr_timer, int timeout,
		     int retry_cnt, int rnr_retry)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_query_gid(c, 1, 1, &a.ah_attr.grh.dgid))
		die("query_gid");
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

static void to_rts(struct ibv_context *c, struct ibv_qp *q, uint32_t dqpn)
{
	to_rts_p(c, q, dqpn, 12, 14, 7, 7);
}

static struct ibv_qp *mkqp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t swr, uint32_t rwr)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = swr, .max_recv_wr = rwr, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *q = ibv_create_qp(pd, &a);
	if (!q)
		die("create_qp");
	return q;
}

/* One completion within `ms` (0: none came). */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	double end = now() + ms / 1000.0;
	while (now() < end) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n > 0)
			return 1;
		if (n < 0)
			return 0;
	}
	return 0;
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

/* ---- (a), (b): remote accesses the target cannot serve -------------------- */

#define NQ 4
enum { M_UNMAP, M_RDONLY, M_DEREG_UNMAP, M_DEREG_FILL, M_STOPPED, M_OVERLAP, M_LIAR, M_PLAIN, M_NODUMP };
#define OVERLAP_ROUNDS 6
struct tinfo { uint32_t qpn[NQ]; uint64_t addr; uint32_t rkey; uint64_t len; };

/* The target's lie (t_liar): its own directory entry of MR `key` says the
 * MR is `len` bytes long.  The directory is the memory file named
 * "swrdma-dir" that the provider maps read-write in its owner. */
static void lie_about(uint32_t key, uint64_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	volatile uint64_t *dir = NULL;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long s, e;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3 && strstr(line, "memfd:swrdma-dir") && perms[1] == 'w')
			dir = (volatile uint64_t *)s;
	}
	if (f)
		fclose(f);
	if (!dir)
		die("no directory mapping to lie in");
	volatile uint64_t *e = dir + 4096 / 8 + ((key >> 8) % 4096) * 16;
	if (e[1] != key)
		die("the MR is not in the directory");
	uint64_t seq = e[0];
	e[0] = seq | 1;
	__sync_synchronize();
	e[5] = len;
	__sync_synchronize();
	e[0] = (seq | 1) + 1;
}

/* The target child: NQ QPs, one MR over an mmap'ed buffer of `len` bytes,
 * then the mode's mischief.  Exit 0 unless it sees a write land after its
 * ibv_dereg_mr returned (exit 4). */
static void target_main(int mode, size_t len, int to_p, int from_p)
{
	/* Not dumpable: the kernel refuses peers cross-memory attach (and
	 * ptrace) to this process; the device must fall back to the ring. */
	if (mode == M_NODUMP && prctl(PR_SET_DUMPABLE, 0))
		die("PR_SET_DUMPABLE");
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 64, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	struct ibv_qp *q[NQ];
	struct tinfo ti, pi;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	memset(buf, 0, len);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("reg_mr");
	for (int i = 0; i < NQ; i++) {
		q[i] = mkqp(pd, cq, 16, 16);
		to_init(q[i]);
		ti.qpn[i] = q[i]->qp_num;
	}
	ti.addr = (uintptr_t)buf;
	ti.rkey = mr->rkey;
	ti.len = len;
	struct ibv_mr *mr2 = NULL;
	if (mode == M_OVERLAP) {
		/* A second MR over the same pages, the one the peer writes
		 * through; the first is deregistered meanwhile. */
		mr2 = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr2)
			die("reg_mr 2");
		ti.rkey = mr2->rkey;
	}
	xwrite(to_p, &ti, sizeof ti);
	xread(from_p, &pi, sizeof pi);
	for (int i = 0; i < NQ; i++)
		to_rts(c, q[i], pi.qpn[i]);
	int status = 0;
	if (mode == M_UNMAP)
		munmap(buf, len);
	if (mode == M_RDONLY && mprotect(buf, len, PROT_READ))
		die("mprotect");
	if (mode == M_LIAR) {
		memset(buf, 0x4c, len);
		lie_about(mr->rkey, 1ull << 40);
	}
	xwrite(to_p, "r", 1);
	if (mode == M_DEREG_UNMAP || mode == M_DEREG_FILL) {
		/* Wait until the peer's write is under way, then deregister. */
		volatile uint8_t *mid = buf + len / 2;
		double end = now() + 10;
		while (*mid != 0xaa && now() < end)
			;
		if (ibv_dereg_mr(mr))
			die("dereg_mr");
		if (mode == M_DEREG_UNMAP) {
			munmap(buf, len);
		} else {
			memset(buf, 0x55, len);
			msleep(100);
			for (size_t i = 0; i < len; i++)
				if (buf[i] != 0x55) {
					status = 4;
					break;
				}
		}
	}
	if (mode == M_OVERLAP) {
		/* Deregister the shared MR while the peer's last round of writes
		 * (through the other MR) streams in: none of them may be lost when
		 * the pages become private again. */
		volatile uint8_t *first = buf;
		double end = now() + 20;
		while (*first != OVERLAP_ROUNDS && now() < end)
			;
		if (ibv_dereg_mr(mr))
			die("dereg_mr");
	}
	char b;
	xread(from_p, &b, 1);
	if (mode == M_OVERLAP) {
		for (size_t i = 0; i < len; i++)
			if (buf[i] != OVERLAP_ROUNDS) {
				fprintf(stderr, "byte %zu: %u\n", i, buf[i]);
				status = 5;
				break;
			}
	}
	if (mode == M_STOPPED || mode == M_NODUMP) {
		/* What the initiator did while we were stopped (t_direct_stopped). */
		for (size_t i = 0; i < 4096; i++)
			if (buf[i] != 0x5a)
				status = 5;
		uint64_t v;
		memcpy(&v, buf + 8192, 8);
		if (v != 6)
			status = 5;
	}
	_exit(status);
}

/* Starts the target; fills *ti; connects the initiator's QPs. */
struct pairx {
	pid_t pid;
	int to_t, from_t;
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *q[NQ];
	struct tinfo ti;
};

/* start_pair stops the target (SIGSTOP) once its QPs are ready, before
 * ours go to RTR: our first link to it is made while it cannot run. */
static int stop_before_link;

static void start_pair(struct pairx *x, int mode, size_t len)
{
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		die("pipe");
	x->pid = fork();
	if (x->pid < 0)
		die("fork");
	if (x->pid == 0) {
		close(a[0]);
		close(b[1]);
		target_main(mode, len, a[1], b[0]);
	}
	close(a[1]);
	close(b[0]);
	x->from_t = a[0];
	x->to_t = b[1];
	x->c = open_dev();
	x->pd = ibv_alloc_pd(x->c);
	x->cq = ibv_create_cq(x->c, 64, NULL, NULL, 0);
	if (!x->pd || !x->cq)
		die("pd/cq");
	struct tinfo mine;
	memset(&mine, 0, sizeof mine);
	for (int i = 0; i < NQ; i++) {
		x->q[i] = mkqp(x->pd, x->cq, 16, 16);
		to_init(x->q[i]);
		mine.qpn[i] = x->q[i]->qp_num;
	}
	xread(x->from_t, &x->ti, sizeof x->ti);
	xwrite(x->to_t, &mine, sizeof mine);
	char r;
	if (stop_before_link) {
		xread(x->from_t, &r, 1);
		msleep(100);
		if (kill(x->pid, SIGSTOP))
			die("SIGSTOP");
	}
	for (int i = 0; i < NQ; i++)
		to_rts(x->c, x->q[i], x->ti.qpn[i]);
	if (!stop_before_link)
		xread(x->from_t, &r, 1);
}

/* Ends the pair: tells the target to finish and describes its end. */
static int end_pair(struct pairx *x, char *why, size_t n)
{
	int st;
	signal(SIGPIPE, SIG_IGN);
	(void)!write(x->to_t, "d", 1);
	double end = now() + 15;
	while (waitpid(x->pid, &st, WNOHANG) == 0) {
		if (now() > end) {
			kill(x->pid, SIGKILL);
			waitpid(x->pid, &st, 0);
			snprintf(why, n, "target hung");
			return 0;
		}
		msleep(5);
	}
	if (WIFSIGNALED(st)) {
		snprintf(why, n, "target died of signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
		return 0;
	}
	if (WEXITSTATUS(st) == 5) {
		snprintf(why, n, "the target's memory does not hold what the initiator wrote");
		return 0;
	}
	if (WEXITSTATUS(st) == 4) {
		snprintf(why, n, "a write landed in the target's memory after ibv_dereg_mr returned");
		return 0;
	}
	if (WEXITSTATUS(st)) {
		snprintf(why, n, "target exit status %d", WEXITSTATUS(st));
		return 0;
	}
	snprintf(why, n, "target alive");
	return 1;
}

static int post_op(struct ibv_qp *q, enum ibv_wr_opcode op, void *l, uint32_t len, uint32_t lkey, uint64_t ra,
		   uint32_t rkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)l, .length = len, .lkey = lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = ra;
		w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = 0;
		w.wr.atomic.swap = 1;
	} else {
		w.wr.rdma.remote_addr = ra;
		w.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(q, &w, &bad);
}

/* (a) RDMA WRITE / READ / atomics into a registered region its owner has
 * unmapped (or made read-only): remote-access error completions, the owner
 * lives. */
static void t_remote_unmapped(int mode)
{
	struct pairx x;
	char why[160], res[200] = "";
	start_pair(&x, mode, 65536);
	static uint8_t lb[4096] __attribute__((aligned(64)));
	struct ibv_mr *lmr = ibv_reg_mr(x.pd, lb, sizeof lb, IBV_ACCESS_LOCAL_WRITE);
	if (!lmr)
		die("reg local");
	static const struct { enum ibv_wr_opcode op; const char *n; } ops[NQ] = {
		{ IBV_WR_RDMA_WRITE, "WRITE" }, { IBV_WR_RDMA_READ, "READ" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, "CAS" }, { IBV_WR_ATOMIC_FETCH_AND_ADD, "FAA" } };
	int good = 1, nops = mode == M_RDONLY ? 2 : NQ;
	for (int i = 0; i < nops; i++) {
		struct ibv_wc wc;
		/* The ring path (the owner's CPU copies) answers REM_ACCESS_ERR;
		 * a direct access (direct.rs: the pages stay in the MR's memory
		 * file, as a device's pinned pages stay) succeeds, as on hardware.
		 * Either is right; a crash, a hang or another status is not. */
		int want = (mode == M_RDONLY && ops[i].op == IBV_WR_RDMA_READ) ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR;
		uint32_t len = ops[i].op == IBV_WR_RDMA_WRITE || ops[i].op == IBV_WR_RDMA_READ ? 4096 : 8;
		if (post_op(x.q[i], ops[i].op, lb, len, lmr->lkey, x.ti.addr, x.ti.rkey))
			die("post_send");
		int got = wait_wc(x.cq, &wc, 5000);
		char one[48];
		snprintf(one, sizeof one, "%s:%s ", ops[i].n, got ? ibv_wc_status_str(wc.status) : "no completion");
		strncat(res, one, sizeof res - strlen(res) - 1);
		if (!got || ((int)wc.status != want && wc.status != IBV_WC_SUCCESS))
			good = 0;
	}
	int ok = end_pair(&x, why, sizeof why);
	result(good && ok, "%s; %s", res, why);
}

/* (b) ibv_dereg_mr while a 64 MiB RDMA WRITE streams in: the target must
 * not fault (dereg + munmap) and no byte may land after dereg returned
 * (dereg + refill + check).  Several rounds alternate the two. */
static void t_dereg_inflight(void)
{
	const size_t big = 64u << 20;
	int rounds = 10, good = 1;
	char why[160] = "", last[320] = "";
	uint8_t *lb = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lb == MAP_FAILED)
		die("mmap");
	memset(lb, 0xaa, big);
	for (int r = 0; r < rounds && good; r++) {
		struct pairx x;
		int mode = r % 2 ? M_DEREG_FILL : M_DEREG_UNMAP;
		start_pair(&x, mode, big);
		struct ibv_mr *lmr = ibv_reg_mr(x.pd, lb, big, IBV_ACCESS_LOCAL_WRITE);
		if (!lmr)
			die("reg local");
		int writes = 0, errs = 0;
		double end = now() + 8;
		while (now() < end && !errs) {
			struct ibv_wc wc;
			if (post_op(x.q[0], IBV_WR_RDMA_WRITE, lb, (uint32_t)big, lmr->lkey, x.ti.addr, x.ti.rkey))
				break;
			if (!wait_wc(x.cq, &wc, 8000))
				break;
			writes++;
			if (wc.status != IBV_WC_SUCCESS)
				errs++;
		}
		good = end_pair(&x, why, sizeof why);
		snprintf(last, sizeof last, "round %d (%s): %d writes, %s", r + 1,
			 mode == M_DEREG_FILL ? "dereg+refill" : "dereg+munmap", writes, why);
		printf("# %s\n", last);
		ibv_dereg_mr(lmr);
		ibv_destroy_qp(x.q[0]);
	}
	result(good, "%s", last);
}

/* Issues 12 and 22: one-sided operations need no CPU of the target.  The
 * target is stopped with SIGSTOP (after one warm-up READ, or before any
 * access to its MR at all); RDMA WRITE, READ, compare-and-swap and
 * fetch-and-add must then complete, with the right data, while it cannot
 * run at all.  The target checks its memory after SIGCONT. */
static int post_atomic(struct ibv_qp *q, enum ibv_wr_opcode op, void *l, uint32_t lkey, uint64_t ra, uint32_t rkey,
		       uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge s = { .addr = (uintptr_t)l, .length = 8, .lkey = lkey };
	struct ibv_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	w.wr.atomic.remote_addr = ra;
	w.wr.atomic.rkey = rkey;
	w.wr.atomic.compare_add = cmp_add;
	w.wr.atomic.swap = swap;
	return ibv_post_send(q, &w, &bad);
}

/* Drops CAP_SYS_PTRACE (when run as root: it would let us reach even a
 * process that is not dumpable). */
static void drop_ptrace_cap(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d))
		die("capget");
	d[0].effective &= ~(1u << CAP_SYS_PTRACE);
	d[0].permitted &= ~(1u << CAP_SYS_PTRACE);
	d[0].inheritable &= ~(1u << CAP_SYS_PTRACE);
	if (syscall(SYS_capset, &h, d))
		die("capset");
}

static void t_direct_stopped(int warm)
{
	struct pairx x;
	char why[160], res[300] = "";
	if (warm < 0)
		drop_ptrace_cap();
	stop_before_link = warm == 2;
	start_pair(&x, warm < 0 ? M_NODUMP : M_STOPPED, 65536);
	static uint8_t lb[3 * 4096] __attribute__((aligned(4096)));
	struct ibv_mr *lmr = ibv_reg_mr(x.pd, lb, sizeof lb, IBV_ACCESS_LOCAL_WRITE);
	if (!lmr)
		die("reg local");
	struct ibv_wc wc;
	int good = 1;
	if (warm == 1 && (post_op(x.q[0], IBV_WR_RDMA_READ, lb, 8, lmr->lkey, x.ti.addr, x.ti.rkey) ||
		     !wait_wc(x.cq, &wc, 5000) || wc.status != IBV_WC_SUCCESS))
		die("warm-up READ");
	msleep(200);
	if (warm >= 0 && warm != 2 && kill(x.pid, SIGSTOP))
		die("SIGSTOP");
	msleep(100);
#define STEP(name, cond)                                                                                    \
	do {                                                                                                \
		int got_ = wait_wc(x.cq, &wc, 3000);                                                        \
		int ok_ = got_ && wc.status == IBV_WC_SUCCESS && (cond);                                     \
		char one_[64];                                                                              \
		snprintf(one_, sizeof one_, "%s:%s ", name,                                                 \
			 !got_ ? "no completion while stopped" : wc.status ? ibv_wc_status_str(wc.status)   \
				 : ok_ ? "ok" : "wrong data");                                             \
		strncat(res, one_, sizeof res - strlen(res) - 1);                                          \
		if (!ok_)                                                                                   \
			good = 0;                                                                           \
	} while (0)
	memset(lb, 0x5a, 4096);
	if (post_op(x.q[0], IBV_WR_RDMA_WRITE, lb, 4096, lmr->lkey, x.ti.addr, x.ti.rkey))
		die("post WRITE");
	STEP("WRITE", 1);
	memset(lb + 4096, 0, 4096);
	if (good && post_op(x.q[0], IBV_WR_RDMA_READ, lb + 4096, 4096, lmr->lkey, x.ti.addr, x.ti.rkey))
		die("post READ");
	if (good)
		STEP("READ", !memcmp(lb, lb + 4096, 4096));
	uint64_t *old = (uint64_t *)(lb + 8192);
	*old = 99;
	if (good && post_atomic(x.q[0], IBV_WR_ATOMIC_CMP_AND_SWP, old, lmr->lkey, x.ti.addr + 8192, x.ti.rkey, 0, 1))
		die("post CAS");
	if (good)
		STEP("CAS", *old == 0);
	*old = 99;
	if (good && post_atomic(x.q[0], IBV_WR_ATOMIC_FETCH_AND_ADD, old, lmr->lkey, x.ti.addr + 8192, x.ti.rkey, 5, 0))
		die("post FAA");
	if (good)
		STEP("FAA", *old == 1);
#undef STEP
	kill(x.pid, SIGCONT);
	int ok = end_pair(&x, why, sizeof why);
	result(good && ok, "target %s: %s; %s",
	       warm < 0 ? "not dumpable (no cross-memory attach), running"
	       : warm == 2 ? "stopped before our first link to it"
	       : warm ? "stopped after a warm-up READ" : "stopped before any access", res, why);
}

/* Atomics executed by the initiator (cross-memory attach: read, add,
 * write, with the target's atomic lock held) and by the target's own
 * thread (the ring path: a request with others in flight before it goes
 * there) on the same 8 bytes are atomic with respect to one another: 4 QPs
 * with 8 fetch-and-adds of 1 outstanding each (2 QPs on each path), 2500
 * rounds; the word must
 * end at exactly 80000 and every fetched value be distinct. */
static void t_atomics_mixed(void)
{
	struct pairx x;
	char why[160];
	start_pair(&x, M_PLAIN, 65536);
	static uint64_t lb[NQ * 8 + 1] __attribute__((aligned(64)));
	struct ibv_mr *lmr = ibv_reg_mr(x.pd, lb, sizeof lb, IBV_ACCESS_LOCAL_WRITE);
	if (!lmr)
		die("reg local");
	const int rounds = 2500;
	static uint8_t seen[NQ * 8 * 2500];
	int good = 1, dup = 0;
	struct ibv_wc wc;
	for (int r = 0; r < rounds && good; r++) {
		/* A zero-length READ (never executed directly) first on half the
		 * QPs: their atomics queue behind it and go to the target's
		 * thread, while the others are executed here, at the same time. */
		for (int i = 0; i < NQ / 2; i++)
			if (post_op(x.q[i], IBV_WR_RDMA_READ, lb, 0, lmr->lkey, x.ti.addr, x.ti.rkey))
				die("post READ");
		for (int i = 0; i < NQ; i++)
			for (int j = 0; j < 8; j++)
				if (post_atomic(x.q[i], IBV_WR_ATOMIC_FETCH_AND_ADD, &lb[i * 8 + j], lmr->lkey,
						x.ti.addr + 16384, x.ti.rkey, 1, 0))
					die("post FAA");
		for (int k = 0; k < NQ * 8 + NQ / 2 && good; k++)
			if (!wait_wc(x.cq, &wc, 5000) || wc.status != IBV_WC_SUCCESS)
				good = 0;
		for (int k = 0; k < NQ * 8 && good; k++) {
			uint64_t v = lb[k];
			if (v >= sizeof seen || seen[v]++)
				dup++;
		}
	}
	lb[NQ * 8] = 0;
	struct ibv_sge sg = { .addr = (uintptr_t)&lb[NQ * 8], .length = 8, .lkey = lmr->lkey };
	struct ibv_send_wr w = { .wr_id = 9, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	w.wr.rdma.remote_addr = x.ti.addr + 16384;
	w.wr.rdma.rkey = x.ti.rkey;
	if (good && (ibv_post_send(x.q[0], &w, &bad) || !wait_wc(x.cq, &wc, 5000) || wc.status != IBV_WC_SUCCESS))
		good = 0;
	uint64_t want = (uint64_t)rounds * NQ * 8;
	int ok = end_pair(&x, why, sizeof why);
	result(good && ok && !dup && lb[NQ * 8] == want,
	       "completions all successful %d; the word ended at %llu (want %llu), %d fetched values repeated; %s", good,
	       (unsigned long long)lb[NQ * 8], (unsigned long long)want, dup, why);
}

/* Issue 22, item 4: a peer that lies in its directory (it claims its MR is
 * 1 TiB long: the target rewrites its own directory entry, whose layout is
 * direct.rs': a 4 KiB header, then 16-word MR entries by key index, each a
 * sequence word followed by key, PD, rights, IOVA, length, address) cannot
 * make our provider copy beyond what *we* registered: our READ and WRITE
 * touch exactly our 4 KiB local buffer (the guard pages around it, which
 * are ours but not registered, keep their bytes), and an access beyond the
 * target's real buffer completes with the error the target's own MR table
 * gives (REM_ACCESS_ERR), not with success. */
static void t_liar(void)
{
	struct pairx x;
	char why[160], res[300] = "";
	start_pair(&x, M_LIAR, 65536);
	uint8_t *lb = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lb == MAP_FAILED)
		die("mmap");
	memset(lb, 0xee, 3 * 4096);
	uint8_t *mid = lb + 4096;
	struct ibv_mr *lmr = ibv_reg_mr(x.pd, mid, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!lmr)
		die("reg local");
	struct ibv_wc wc;
	int good = 1;
	struct { const char *n; enum ibv_wr_opcode op; uint64_t off; int want; } steps[] = {
		{ "READ", IBV_WR_RDMA_READ, 0, IBV_WC_SUCCESS },
		{ "WRITE", IBV_WR_RDMA_WRITE, 4096, IBV_WC_SUCCESS },
		{ "READ-beyond", IBV_WR_RDMA_READ, 1ull << 30, IBV_WC_REM_ACCESS_ERR },
	};
	for (int i = 0; i < 3 && good; i++) {
		memset(mid, 0x10 + i, 4096);
		if (post_op(x.q[i], steps[i].op, mid, 4096, lmr->lkey, x.ti.addr + steps[i].off, x.ti.rkey))
			die("post");
		int got = wait_wc(x.cq, &wc, 5000);
		char one[80];
		snprintf(one, sizeof one, "%s:%s ", steps[i].n, got ? ibv_wc_status_str(wc.status) : "no completion");
		strncat(res, one, sizeof res - strlen(res) - 1);
		if (!got || (int)wc.status != steps[i].want)
			good = 0;
		if (got && i == 0 && wc.status == IBV_WC_SUCCESS && !(mid[0] == 0x4c && mid[4095] == 0x4c)) {
			strncat(res, "(wrong data) ", sizeof res - strlen(res) - 1);
			good = 0;
		}
	}
	int guards = 1;
	for (size_t i = 0; i < 4096; i++)
		if (lb[i] != 0xee || lb[2 * 4096 + i] != 0xee)
			guards = 0;
	int ok = end_pair(&x, why, sizeof why);
	result(good && guards && ok, "%sguard pages around our buffer kept: %d; %s", res, guards, why);
}

/* Two MRs over the same pages.  The target deregisters the first while the
 * peer's last round of writes through the second streams in: none of them
 * may be lost (the target checks every byte after the last write
 * completed). */
static void t_overlap_dereg(void)
{
	const size_t len = 16u << 20, chunk = 65536;
	struct pairx x;
	char why[160];
	start_pair(&x, M_OVERLAP, len);
	uint8_t *lb = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lb == MAP_FAILED)
		die("mmap");
	struct ibv_mr *lmr = ibv_reg_mr(x.pd, lb, chunk, IBV_ACCESS_LOCAL_WRITE);
	if (!lmr)
		die("reg local");
	int good = 1, writes = 0;
	for (int r = 1; r <= OVERLAP_ROUNDS && good; r++) {
		memset(lb, r, chunk);
		for (size_t off = 0; off < len && good; off += chunk) {
			struct ibv_wc wc;
			if (post_op(x.q[0], IBV_WR_RDMA_WRITE, lb, chunk, lmr->lkey, x.ti.addr + off, x.ti.rkey) ||
			    !wait_wc(x.cq, &wc, 5000) || wc.status != IBV_WC_SUCCESS)
				good = 0;
			writes++;
		}
	}
	int ok = end_pair(&x, why, sizeof why);
	result(good && ok, "%d writes of 64 KiB %s; %s", writes, good ? "completed" : "failed", why);
}

/* ---- (a) registration checks ------------------------------------------------ */

static void t_reg(const char *what)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	int w = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mr = NULL;
	int want = 0;
	void *p = NULL;
	size_t len = 4096;
	if (!strcmp(what, "null")) {
		want = EFAULT;
	} else if (!strcmp(what, "2^40")) {
		p = malloc(4096);
		len = 1ull << 40;
		want = EFAULT;
	} else if (!strcmp(what, "wrap")) {
		p = (void *)(uintptr_t)-4096;
		len = 8192;
		want = EINVAL;
	} else if (!strcmp(what, "unmapped")) {
		p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		munmap(p, 8192);
		want = EFAULT;
	} else if (!strcmp(what, "read-only-writable")) {
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		want = EFAULT;
	} else if (!strcmp(what, "read-only-readable")) {
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		w = IBV_ACCESS_REMOTE_READ;
		want = 0;
	}
	errno = 0;
	mr = ibv_reg_mr(pd, p, len, w);
	int e = errno;
	if (want == 0)
		result(mr != NULL, "ibv_reg_mr failed: %s", strerror(e));
	else
		result(!mr && e == want, "ibv_reg_mr gave %s, errno %d (%s); want NULL, %s", mr ? "an MR" : "NULL", e,
		       strerror(e), strerror(want));
	if (mr)
		ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(c);
}

/* ---- strictness (one process) ------------------------------------------------ */

struct local {
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
};

static void local_pair(struct local *l, int cqe, uint32_t swr, uint32_t rwr)
{
	l->c = open_dev();
	l->pd = ibv_alloc_pd(l->c);
	l->cq = ibv_create_cq(l->c, cqe, NULL, NULL, 0);
	if (!l->pd || !l->cq)
		die("pd/cq");
	l->a = mkqp(l->pd, l->cq, swr, rwr);
	l->b = mkqp(l->pd, l->cq, swr, rwr);
	to_init(l->a);
	to_init(l->b);
	to_rts(l->c, l->a, l->b->qp_num);
	to_rts(l->c, l->b, l->a->qp_num);
}

/* ibv_post_send beyond max_send_wr outstanding: ENOMEM, *bad_wr the first
 * request not posted (no receives are posted: the SENDs stay outstanding). */
static void t_overpost_send(void)
{
	struct local l;
	local_pair(&l, 64, 2, 2);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(l.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	struct ibv_send_wr w[4], *bad = NULL;
	memset(w, 0, sizeof w);
	for (int i = 0; i < 4; i++) {
		w[i].wr_id = i;
		w[i].sg_list = &s;
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_SEND;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].next = i < 3 ? &w[i + 1] : NULL;
	}
	int r = ibv_post_send(l.a, w, &bad);
	result(r == ENOMEM && bad == &w[2], "ibv_post_send of 4 on max_send_wr=2 gave %d (%s), bad_wr=#%ld; want ENOMEM, #2",
	       r, strerror(r), bad ? (long)(bad - w) : -1L);
}

static void t_overpost_recv(void)
{
	struct local l;
	local_pair(&l, 64, 2, 2);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(l.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	struct ibv_recv_wr w[4], *bad = NULL;
	memset(w, 0, sizeof w);
	for (int i = 0; i < 4; i++) {
		w[i].wr_id = i;
		w[i].sg_list = &s;
		w[i].num_sge = 1;
		w[i].next = i < 3 ? &w[i + 1] : NULL;
	}
	int r = ibv_post_recv(l.a, w, &bad);
	result(r == ENOMEM && bad == &w[2], "ibv_post_recv of 4 on max_recv_wr=2 gave %d (%s), bad_wr=#%ld; want ENOMEM, #2",
	       r, strerror(r), bad ? (long)(bad - w) : -1L);
}

/* A CQ never holds more completions than its depth: 16 SEND completions and
 * 16 RECV completions into a CQ of 4 give IBV_EVENT_CQ_ERR and at most 4. */
static void t_cq_overrun(void)
{
	struct local l;
	local_pair(&l, 4, 16, 16);
	int depth = l.cq->cqe;
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(l.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	for (int i = 0; i < 16; i++) {
		struct ibv_recv_wr rw = { .wr_id = 100 + i, .sg_list = &s, .num_sge = 1 }, *rb;
		if (ibv_post_recv(l.b, &rw, &rb))
			die("post_recv");
	}
	for (int i = 0; i < 16; i++) {
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED }, *bad;
		if (ibv_post_send(l.a, &w, &bad))
			die("post_send");
	}
	/* Let everything complete (the provider's thread makes progress). */
	msleep(500);
	struct ibv_wc wc[64];
	int total = 0, neg = 0;
	for (int k = 0; k < 10; k++) {
		int n = ibv_poll_cq(l.cq, 64, wc);
		if (n < 0) {
			neg = 1;
			break;
		}
		total += n;
	}
	int ev = 0;
	struct pollfd p = { .fd = l.c->async_fd, .events = POLLIN };
	int fl = fcntl(l.c->async_fd, F_GETFL);
	fcntl(l.c->async_fd, F_SETFL, fl | O_NONBLOCK);
	if (poll(&p, 1, 1000) == 1) {
		struct ibv_async_event e;
		if (!ibv_get_async_event(l.c, &e)) {
			ev = e.event_type == IBV_EVENT_CQ_ERR && e.element.cq == l.cq;
			ibv_ack_async_event(&e);
		}
	}
	result(total <= depth && ev, "polled %d completions from a CQ of depth %d (32 generated), CQ_ERR event: %s, "
	       "poll error afterwards: %s", total, depth, ev ? "yes" : "no", neg ? "yes" : "no");
}

/* An RC QP takes requests only from the QP it is connected to: C (connected
 * to B, while B is connected to A) cannot consume B's posted receive; its
 * SEND fails (RETRY_EXC_ERR, as packets dropped on the wire), A's SEND then
 * lands in that receive. */
static void t_foreign_qp(void)
{
	struct local l;
	local_pair(&l, 64, 8, 8);
	struct ibv_qp *c = mkqp(l.pd, l.cq, 8, 8);
	to_init(c);
	to_rts(l.c, c, l.b->qp_num);
	static char buf[256];
	struct ibv_mr *mr = ibv_reg_mr(l.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = { .addr = (uintptr_t)buf, .length = 128, .lkey = mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 50, .sg_list = &rs, .num_sge = 1 }, *rb;
	if (ibv_post_recv(l.b, &rw, &rb))
		die("post_recv");
	struct ibv_sge s16 = { .addr = (uintptr_t)buf + 128, .length = 16, .lkey = mr->lkey };
	struct ibv_sge s32 = { .addr = (uintptr_t)buf + 128, .length = 32, .lkey = mr->lkey };
	struct ibv_send_wr wc_ = { .wr_id = 1, .sg_list = &s16, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_send_wr wa = { .wr_id = 2, .sg_list = &s32, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED };
	if (ibv_post_send(c, &wc_, &bad))
		die("post_send C");
	int c_status = -1, a_status = -1, b_len = -1, b_status = -1;
	struct ibv_wc wc;
	double end = now() + 5;
	while (now() < end && c_status < 0) {
		if (ibv_poll_cq(l.cq, 1, &wc) == 1) {
			if (wc.qp_num == c->qp_num)
				c_status = wc.status;
			else if (wc.qp_num == l.b->qp_num) {
				b_status = wc.status;
				b_len = wc.byte_len;
			}
		}
	}
	if (ibv_post_send(l.a, &wa, &bad))
		die("post_send A");
	end = now() + 5;
	while (now() < end && (a_status < 0 || b_len < 0)) {
		if (ibv_poll_cq(l.cq, 1, &wc) == 1) {
			if (wc.qp_num == l.a->qp_num)
				a_status = wc.status;
			else if (wc.qp_num == l.b->qp_num && b_len < 0) {
				b_status = wc.status;
				b_len = wc.byte_len;
			}
		}
	}
	result(c_status == IBV_WC_RETRY_EXC_ERR && a_status == IBV_WC_SUCCESS && b_status == IBV_WC_SUCCESS &&
	       b_len == 32, "C's SEND: %s; A's SEND: %s; B's receive: %s, %d bytes (want RETRY_EXC_ERR, success, "
	       "success with A's 32 bytes)", c_status < 0 ? "none" : ibv_wc_status_str(c_status),
	       a_status < 0 ? "none" : ibv_wc_status_str(a_status),
	       b_status < 0 ? "none" : ibv_wc_status_str(b_status), b_len);
}

static void t_modify_missing(int step)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 8, NULL, NULL, 0);
	struct ibv_qp *q = mkqp(pd, cq, 4, 4);
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	int r;
	if (step == 0) {
		/* RESET->INIT with only the port: PKEY_INDEX, ACCESS_FLAGS missing */
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT);
	} else if (step == 2) {
		/* INIT->RTR with everything required plus an RTS attribute
		 * (TIMEOUT), which this transition does not take */
		to_init(q);
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = q->qp_num;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.timeout = 14;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.sgid_index = 1;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.port_num = 1;
		ibv_query_gid(c, 1, 1, &a.ah_attr.grh.dgid);
		r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT);
	} else {
		to_init(q);
		/* INIT->RTR with the destination only: PATH_MTU, RQ_PSN,
		 * MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER missing */
		a.qp_state = IBV_QPS_RTR;
		a.dest_qp_num = q->qp_num;
		a.ah_attr.port_num = 1;
		r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN);
	}
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	ibv_query_qp(q, &qa, IBV_QP_STATE, &ia);
	int want_state = step == 0 ? IBV_QPS_RESET : IBV_QPS_INIT;
	result(r == EINVAL && (int)qa.qp_state == want_state, "ibv_modify_qp gave %d (%s), state now %d; want EINVAL, %d",
	       r, strerror(r), qa.qp_state, want_state);
}

/* ibv_dealloc_pd with a live object in the PD, ibv_destroy_cq with a live
 * QP: EBUSY, and 0 once the object is gone. */
static void t_busy(const char *what)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 8, NULL, NULL, 0);
	static char buf[4096];
	int r1, r2 = -1;
	if (!strcmp(what, "mr")) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
		r1 = ibv_dealloc_pd(pd);
		ibv_dereg_mr(mr);
	} else if (!strcmp(what, "qp")) {
		struct ibv_qp *q = mkqp(pd, cq, 4, 4);
		r1 = ibv_dealloc_pd(pd);
		ibv_destroy_qp(q);
	} else if (!strcmp(what, "ah")) {
		struct ibv_ah_attr aa = { .port_num = 1, .is_global = 1, .grh = { .sgid_index = 1, .hop_limit = 1 } };
		ibv_query_gid(c, 1, 1, &aa.grh.dgid);
		struct ibv_ah *ah = ibv_create_ah(pd, &aa);
		if (!ah)
			die("create_ah");
		r1 = ibv_dealloc_pd(pd);
		ibv_destroy_ah(ah);
	} else if (!strcmp(what, "srq")) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(pd, &sa);
		if (!srq)
			die("create_srq");
		r1 = ibv_dealloc_pd(pd);
		ibv_destroy_srq(srq);
	} else { /* cq with a live QP */
		struct ibv_qp *q = mkqp(pd, cq, 4, 4);
		r1 = ibv_destroy_cq(cq);
		ibv_destroy_qp(q);
		r2 = ibv_destroy_cq(cq);
		cq = NULL;
	}
	if (r2 == -1)
		r2 = ibv_dealloc_pd(pd);
	result(r1 == EBUSY && r2 == 0, "with the %s alive: %d (%s), after destroying it: %d; want EBUSY, 0", what, r1,
	       strerror(r1), r2);
}

/* The device's fault recovery (mem.rs) must leave faults that are not its
 * own to the application: a SIGSEGV handler installed before the device
 * opened still gets them, and without one the process still dies of
 * SIGSEGV (no loop, no hang). */
static void app_handler(int sig)
{
	(void)sig;
	_exit(7);
}

static void t_foreign_fault(int with_handler)
{
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		if (with_handler)
			signal(SIGSEGV, app_handler);
		struct ibv_context *c = open_dev();
		struct ibv_pd *pd = ibv_alloc_pd(c); /* the provider is fully up */
		(void)pd;
		*(volatile int *)(uintptr_t)8 = 1;
		_exit(0);
	}
	int st;
	double end = now() + 20;
	while (waitpid(p, &st, WNOHANG) == 0) {
		if (now() > end) {
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			result(0, "the faulting process hung");
			return;
		}
		msleep(5);
	}
	if (with_handler)
		result(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status 0x%x; want exit 7 from the application's handler", st);
	else
		result(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status 0x%x; want death by SIGSEGV", st);
}

/* ---- receiver not ready: RNR NAKs, no buffering (issue 10) ----------------- */

/* Resident memory of process `pid` (0: ourselves) in KiB: VmRSS (anonymous,
 * file and shared memory). */
static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long v = -1;
	if (pid)
		snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof path, "/proc/self/status");
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static int qp_state(struct ibv_qp *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;
	if (ibv_query_qp(q, &a, IBV_QP_STATE, &i))
		return -1;
	return a.qp_state;
}

#define FLOOD_N 16384
#define FLOOD_LEN 65536

/* The reproducer: 16384 SENDs of 64 KiB to an RC QP with no
 * receive posted.  mode 0: the process's resident memory (sender and
 * receiver both live here; the sender's buffer is one 64 KiB MR) grows by
 * less than 64 MiB in 3 s (it grew by the whole 1 GiB: every message was
 * copied into the receiver's queue); no send completes meanwhile
 * (rnr_retry 7: the sender waits).  mode 1: receives posted late take all
 * 16384 messages, in order, and every send completes successfully. */
static void t_rnr_flood(int mode)
{
	struct local l;
	l.c = open_dev();
	l.pd = ibv_alloc_pd(l.c);
	l.cq = ibv_create_cq(l.c, 2 * FLOOD_N + 16, NULL, NULL, 0);
	if (!l.pd || !l.cq)
		die("pd/cq");
	l.a = mkqp(l.pd, l.cq, FLOOD_N, 16);
	l.b = mkqp(l.pd, l.cq, 16, FLOOD_N);
	to_init(l.a);
	to_init(l.b);
	to_rts_p(l.c, l.a, l.b->qp_num, 1, 14, 7, 7);
	to_rts_p(l.c, l.b, l.a->qp_num, 1, 14, 7, 7);
	char *sbuf = malloc(FLOOD_LEN);
	char *rbuf = malloc(FLOOD_LEN);
	if (!sbuf || !rbuf)
		die("malloc");
	memset(sbuf, 0x5a, FLOOD_LEN);
	memset(rbuf, 0, FLOOD_LEN);
	struct ibv_mr *smr = ibv_reg_mr(l.pd, sbuf, FLOOD_LEN, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rmr = ibv_reg_mr(l.pd, rbuf, FLOOD_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr)
		die("reg_mr");
	long before = rss_kib(0), peak = before;
	struct ibv_sge s = { .addr = (uintptr_t)sbuf, .length = FLOOD_LEN, .lkey = smr->lkey };
	struct ibv_wc wc[64];
	int early = 0, posted = 0;
	double t0 = now();
	for (int i = 0; i < FLOOD_N; i++) {
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(i) }, *bad;
		if (ibv_post_send(l.a, &w, &bad))
			break;
		posted++;
		if (i % 256 == 0) {
			int n = ibv_poll_cq(l.cq, 64, wc);
			early += n > 0 ? n : 0;
			long r = rss_kib(0);
			peak = r > peak ? r : peak;
		}
	}
	while (now() < t0 + 3) {
		int n = ibv_poll_cq(l.cq, 64, wc);
		early += n > 0 ? n : 0;
		long r = rss_kib(0);
		peak = r > peak ? r : peak;
		msleep(1);
	}
	long grew = peak - before;
	if (mode == 0) {
		result(posted == FLOOD_N && grew < 64 * 1024 && early == 0,
		       "%d of %d SENDs of 64 KiB posted, none received: resident memory grew by %ld KiB in 3 s "
		       "(want < 65536), %d completions meanwhile (want 0)", posted, FLOOD_N, grew, early);
		return;
	}
	/* Late receives: all messages arrive, in order. */
	struct ibv_sge rs = { .addr = (uintptr_t)rbuf, .length = FLOOD_LEN, .lkey = rmr->lkey };
	for (int i = 0; i < FLOOD_N; i++) {
		struct ibv_recv_wr rw = { .wr_id = 1000000 + i, .sg_list = &rs, .num_sge = 1 }, *rb;
		if (ibv_post_recv(l.b, &rw, &rb))
			die("post_recv");
	}
	int sends = 0, recvs = 0, bad_order = 0, bad_status = 0;
	double end = now() + 60;
	while ((sends < posted || recvs < posted) && now() < end) {
		int n = ibv_poll_cq(l.cq, 64, wc);
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				if (!bad_status)
					printf("  completion %s on qp %u\n", ibv_wc_status_str(wc[k].status), wc[k].qp_num);
				bad_status++;
				continue;
			}
			if (wc[k].qp_num == l.b->qp_num) {
				if (ntohl(wc[k].imm_data) != (uint32_t)recvs || wc[k].byte_len != FLOOD_LEN ||
				    wc[k].wr_id != 1000000u + recvs)
					bad_order++;
				recvs++;
			} else {
				if (wc[k].wr_id != (uint64_t)sends)
					bad_order++;
				sends++;
			}
		}
	}
	result(early == 0 && sends == posted && recvs == posted && !bad_order && !bad_status && rbuf[0] == 0x5a,
	       "%d SENDs posted with no receive (%d completions early); receives posted 3 s later: %d sends and %d "
	       "receives completed (want %d each), %d out of order, %d errors", posted, early, sends, recvs, posted,
	       bad_order, bad_status);
}

/* rnr_retry N < 7: a SEND to a QP that never posts a receive completes
 * with IBV_WC_RNR_RETRY_EXC_ERR after N retries, each after the responder's
 * min_rnr_timer (24: 40.96 ms, so >= N * 41 ms), the QP goes to the error
 * state and the SEND behind it is flushed. */
static void t_rnr_exc(int retries)
{
	struct local l;
	l.c = open_dev();
	l.pd = ibv_alloc_pd(l.c);
	l.cq = ibv_create_cq(l.c, 64, NULL, NULL, 0);
	if (!l.pd || !l.cq)
		die("pd/cq");
	l.a = mkqp(l.pd, l.cq, 8, 8);
	l.b = mkqp(l.pd, l.cq, 8, 8);
	to_init(l.a);
	to_init(l.b);
	to_rts_p(l.c, l.a, l.b->qp_num, 24, 14, 7, retries);
	to_rts_p(l.c, l.b, l.a->qp_num, 24, 14, 7, 7);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(l.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey };
	struct ibv_send_wr w2 = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr w1 = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED, .next = &w2 }, *bad;
	double t0 = now();
	if (ibv_post_send(l.a, &w1, &bad))
		die("post_send");
	struct ibv_wc wc;
	int st1 = -1, st2 = -1;
	double t1 = 0;
	while (now() < t0 + 10 && st2 < 0) {
		if (ibv_poll_cq(l.cq, 1, &wc) != 1)
			continue;
		if (wc.wr_id == 1) {
			st1 = wc.status;
			t1 = now() - t0;
		} else if (wc.wr_id == 2)
			st2 = wc.status;
	}
	double min = retries * 0.04096;
	int state = qp_state(l.a);
	result(st1 == IBV_WC_RNR_RETRY_EXC_ERR && st2 == IBV_WC_WR_FLUSH_ERR && t1 >= min && t1 < min + 3 &&
	       state == IBV_QPS_ERR,
	       "rnr_retry %d: first SEND %s after %.3f s (want RNR_RETRY_EXC_ERR after >= %.3f s), second %s "
	       "(want WR_FLUSH_ERR), QP state %d (want %d, ERR)", retries,
	       st1 < 0 ? "not completed" : ibv_wc_status_str(st1), t1, min,
	       st2 < 0 ? "not completed" : ibv_wc_status_str(st2), state, IBV_QPS_ERR);
}

/* Order behind an RNR NAK: SEND #0 finds no receive; SENDs #1..#7 and an
 * RDMA WRITE_WITH_IMM (#8) follow; receives posted 100 ms later take #0..#8
 * in that order, and every send completes successfully, in order. */
static void t_rnr_order(void)
{
	struct local l;
	local_pair(&l, 64, 16, 16);
	static char sbuf[9][256], rbuf[9][256], wbuf[256];
	struct ibv_mr *mr = ibv_reg_mr(l.pd, sbuf, sizeof sbuf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rmr = ibv_reg_mr(l.pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *wmr = ibv_reg_mr(l.pd, wbuf, sizeof wbuf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr || !rmr || !wmr)
		die("reg_mr");
	struct ibv_sge s[9];
	for (int i = 0; i < 9; i++) {
		memset(sbuf[i], 'a' + i, sizeof sbuf[i]);
		s[i] = (struct ibv_sge){ .addr = (uintptr_t)sbuf[i], .length = 100 + i, .lkey = mr->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &s[i], .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(i) }, *bad;
		if (i == 8) {
			w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			w.wr.rdma.remote_addr = (uintptr_t)wbuf;
			w.wr.rdma.rkey = wmr->rkey;
		}
		if (ibv_post_send(l.a, &w, &bad))
			die("post_send");
		if (i == 0)
			msleep(20); /* #0 is NAKed before the others follow */
	}
	msleep(100);
	struct ibv_wc wc[16];
	int early = ibv_poll_cq(l.cq, 16, wc);
	for (int i = 0; i < 9; i++) {
		struct ibv_sge rs = { .addr = (uintptr_t)rbuf[i], .length = 256, .lkey = rmr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 100 + i, .sg_list = &rs, .num_sge = 1 }, *rb;
		if (ibv_post_recv(l.b, &rw, &rb))
			die("post_recv");
	}
	int sends = 0, recvs = 0, bad = 0;
	double end = now() + 10;
	while ((sends < 9 || recvs < 9) && now() < end) {
		int n = ibv_poll_cq(l.cq, 16, wc);
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				bad++;
				continue;
			}
			if (wc[k].qp_num == l.b->qp_num) {
				int i = recvs++;
				int want_len = 100 + i;
				if (ntohl(wc[k].imm_data) != (uint32_t)i || wc[k].wr_id != 100u + i ||
				    (int)wc[k].byte_len != want_len || (i < 8 && rbuf[i][0] != 'a' + i))
					bad++;
			} else if (wc[k].wr_id != (uint64_t)sends++)
				bad++;
		}
	}
	result(early == 0 && sends == 9 && recvs == 9 && !bad && wbuf[0] == 'a' + 8,
	       "%d completions before receives were posted (want 0); then %d sends, %d receives (want 9 each), %d "
	       "wrong (order, length, data or status)", early, sends, recvs, bad);
}

/* A SEND to a QP still in INIT: the wire drops it and the requester retries
 * after its timeout (10: 4.2 ms) retry_cnt (2) times, then completes it with
 * IBV_WC_RETRY_EXC_ERR (it was kept without bound, never completing).
 * mode 1: the responder reaches RTR 30 ms later: the SEND lands. */
static void t_before_rtr(int mode)
{
	struct local l;
	l.c = open_dev();
	l.pd = ibv_alloc_pd(l.c);
	l.cq = ibv_create_cq(l.c, 64, NULL, NULL, 0);
	if (!l.pd || !l.cq)
		die("pd/cq");
	l.a = mkqp(l.pd, l.cq, 8, 8);
	l.b = mkqp(l.pd, l.cq, 8, 8);
	to_init(l.a);
	to_init(l.b);
	to_rts_p(l.c, l.a, l.b->qp_num, 12, mode ? 14 : 10, mode ? 7 : 2, 7);
	static char buf[64], rbuf[64];
	struct ibv_mr *mr = ibv_reg_mr(l.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rmr = ibv_reg_mr(l.pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = { .addr = (uintptr_t)rbuf, .length = 64, .lkey = rmr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rb;
	if (ibv_post_recv(l.b, &rw, &rb))
		die("post_recv");
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	if (ibv_post_send(l.a, &w, &bad))
		die("post_send");
	if (mode) {
		msleep(30);
		to_rts_p(l.c, l.b, l.a->qp_num, 12, 14, 7, 7);
	}
	struct ibv_wc wc;
	int st = -1, got_recv = 0;
	double t0 = now();
	while (now() < t0 + 10 && (st < 0 || (mode && !got_recv))) {
		if (ibv_poll_cq(l.cq, 1, &wc) != 1)
			continue;
		if (wc.wr_id == 1)
			st = wc.status;
		else if (wc.wr_id == 9 && wc.status == IBV_WC_SUCCESS)
			got_recv = 1;
	}
	if (mode)
		result(st == IBV_WC_SUCCESS && got_recv, "SEND %s, receive %s (responder in RTR after 30 ms)",
		       st < 0 ? "not completed" : ibv_wc_status_str(st), got_recv ? "completed" : "not completed");
	else
		result(st == IBV_WC_RETRY_EXC_ERR && qp_state(l.a) == IBV_QPS_ERR,
		       "SEND to a QP in INIT: %s (want RETRY_EXC_ERR), requester QP state %d (want ERR)",
		       st < 0 ? "not completed in 10 s" : ibv_wc_status_str(st), qp_state(l.a));
}

/* ---- link memory and count (issue 10) -------------------------------------- */

/* Links cost memory as it is used: 32 links accepted by the target from
 * crafted peers (who write nothing into the rings) make the target's
 * resident memory grow by less than 4 MiB (each link's rings were
 * prefaulted: +8 MiB a link, +256 MiB). */
static void t_link_memory(void)
{
	struct target t;
	char why[128];
	enum { N = 32 };
	int s[N], m[N], e[N], te[N], got = 0;
	start_target(&t);
	msleep(200);
	long before = rss_kib(t.pid);
	for (int i = 0; i < N; i++) {
		s[i] = peer_connect(t.id);
		m[i] = make_memfd(1);
		e[i] = eventfd(0, EFD_CLOEXEC);
		send_hello(s[i], m[i], e[i]);
		got += wait_reply(s[i], 3000, &te[i]);
	}
	msleep(300);
	long after = rss_kib(t.pid);
	int ok = stop_target(&t, why, sizeof why);
	for (int i = 0; i < N; i++) {
		close(s[i]);
		close(m[i]);
		close(e[i]);
	}
	result(got == N && after - before < 4096 && ok,
	       "%d of %d links accepted; the target's resident memory grew by %ld KiB (want < 4096 KiB; "
	       "a link's rings are %u KiB); %s", got, N, after - before, LINK_BYTES / 1024, why);
}

/* A context accepts at most 256 links from peers: of 300 crafted peers,
 * 256 get the hello answered, the others see the connection closed at once
 * (no hang), and the target is fine. */
static void t_link_count(void)
{
	struct target t;
	char why[128];
	enum { N = 300 };
	static int s[N], te[N];
	int got = 0, refused_fast = 0;
	start_target(&t);
	for (int i = 0; i < N; i++) {
		s[i] = peer_connect(t.id);
		int m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC);
		int sent = try_send_hello(s[i], m, e);
		close(m);
		close(e);
		double t0 = now();
		te[i] = -1;
		int r = sent && wait_reply(s[i], 3000, &te[i]);
		got += r;
		if (!r && now() - t0 < 1.0)
			refused_fast++;
		if (te[i] >= 0)
			close(te[i]);
	}
	int ok = stop_target(&t, why, sizeof why);
	for (int i = 0; i < N; i++)
		close(s[i]);
	result(got == 256 && refused_fast == N - 256 && ok,
	       "%d of %d links accepted (want 256), %d refused at once (want %d); %s", got, N, refused_fast, N - 256, why);
}

/* Shared memory resident in this process (RssShmem, KiB). */
static long shmem_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "RssShmem: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* A link gives its ring pages back once idle: after a burst of 256 RDMA
 * WRITEs of 64 KiB between two QPs of one context (one link each way,
 * both mapped here), 2.5 s without traffic leave at most 1 MiB of ring
 * memory resident (the rings were 2 x 8 MiB, prefaulted, for good). */
static void t_link_idle_memory(void)
{
	struct local l;
	local_pair(&l, 512, 256, 16);
	enum { LEN = 65536, N = 256 };
	char *src = malloc(LEN), *dst = malloc(LEN);
	if (!src || !dst)
		die("malloc");
	memset(src, 7, LEN);
	struct ibv_mr *smr = ibv_reg_mr(l.pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = ibv_reg_mr(l.pd, dst, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!smr || !dmr)
		die("reg_mr");
	struct ibv_sge s = { .addr = (uintptr_t)src, .length = LEN, .lkey = smr->lkey };
	for (int i = 0; i < N; i++) {
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED }, *bad;
		w.wr.rdma.remote_addr = (uintptr_t)dst;
		w.wr.rdma.rkey = dmr->rkey;
		if (ibv_post_send(l.a, &w, &bad))
			die("post_send");
	}
	struct ibv_wc wc[64];
	int done = 0, errs = 0;
	long peak = 0;
	double end = now() + 20;
	while (done < N && now() < end) {
		int n = ibv_poll_cq(l.cq, 64, wc);
		for (int k = 0; k < n; k++)
			errs += wc[k].status != IBV_WC_SUCCESS;
		done += n > 0 ? n : 0;
		long v = shmem_kib();
		peak = v > peak ? v : peak;
	}
	msleep(2500);
	long idle = shmem_kib();
	result(done == N && !errs && idle <= 1024 && dst[0] == 7,
	       "%d of %d WRITEs done (%d errors); ring memory resident: %ld KiB at most during the burst, %ld KiB "
	       "after 2.5 s idle (want <= 1024)", done, N, errs, peak, idle);
}

/* The connecting side of a refused link gets an error completion, never a
 * hang: context T (with an RC QP) already has 256 links from crafted peers;
 * an RC QP of context C connected to T's QP posts a SEND: it completes with
 * IBV_WC_RETRY_EXC_ERR at once (the link was accepted, T's QP had no
 * receive, and the SEND waited for ever). */
static void t_link_refused_completion(void)
{
	struct ibv_context *tc;
	uint32_t tid = open_new_ctx(&tc);
	if (!tid)
		die("the target context's id");
	enum { N = 256 };
	static int s[N];
	int got = 0;
	for (int i = 0; i < N; i++) {
		s[i] = peer_connect(tid);
		int m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC), te;
		send_hello(s[i], m, e);
		close(m);
		close(e);
		/* (T's context thread answers; this thread only waits.) */
		got += wait_reply(s[i], 3000, &te);
		if (te >= 0)
			close(te);
	}
	struct ibv_context *cc = open_dev();
	struct ibv_pd *tpd = ibv_alloc_pd(tc), *cpd = ibv_alloc_pd(cc);
	struct ibv_cq *tcq = ibv_create_cq(tc, 16, NULL, NULL, 0), *ccq = ibv_create_cq(cc, 16, NULL, NULL, 0);
	if (!tpd || !cpd || !tcq || !ccq)
		die("pd/cq");
	struct ibv_qp *tq = mkqp(tpd, tcq, 4, 4), *cq = mkqp(cpd, ccq, 4, 4);
	to_init(tq);
	to_init(cq);
	to_rts(tc, tq, cq->qp_num);
	to_rts(cc, cq, tq->qp_num);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(cpd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	double t0 = now();
	int pr = ibv_post_send(cq, &w, &bad);
	struct ibv_wc wc;
	int st = -1;
	if (!pr && wait_wc(ccq, &wc, 10000))
		st = wc.status;
	double dt = now() - t0;
	result(got == N && !pr && st == IBV_WC_RETRY_EXC_ERR && dt < 8,
	       "%d of %d crafted links accepted; then post_send %d, SEND %s after %.2f s (want RETRY_EXC_ERR)", got, N,
	       pr, st < 0 ? "not completed" : ibv_wc_status_str(st), dt);
}

/* A process holds at most 1024 links: a target with 5 contexts, 300
 * crafted peers each (at most 256 a context), accepts 1024 in all. */
static void t_link_process_count(void)
{
	enum { NC = 5, N = 300 };
	int rdy, cmd;
	pid_t pid = fork_piped(&rdy, &cmd);
	if (pid == 0) {
		for (int k = 0; k < NC; k++) {
			struct ibv_context *c;
			uint32_t id = open_new_ctx(&c);
			if (write(rdy, &id, 4) != 4)
				_exit(2);
		}
		char b;
		if (read(cmd, &b, 1) != 1)
			_exit(2);
		_exit(0);
	}
	uint32_t ids[NC];
	xread(rdy, ids, sizeof ids);
	static int s[NC * N];
	int got = 0, refused_fast = 0;
	for (int k = 0; k < NC; k++)
		for (int i = 0; i < N; i++) {
			int x = k * N + i;
			s[x] = peer_connect(ids[k]);
			int m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC), te;
			int sent = try_send_hello(s[x], m, e);
			close(m);
			close(e);
			double t0 = now();
			te = -1;
			int r = sent && wait_reply(s[x], 3000, &te);
			got += r;
			refused_fast += !r && now() - t0 < 1.0;
			if (te >= 0)
				close(te);
		}
	(void)!write(cmd, "q", 1);
	int st = 0;
	waitpid(pid, &st, 0);
	for (int i = 0; i < NC * N; i++)
		close(s[i]);
	result(got == 1024 && refused_fast == NC * N - 1024 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "%d of %d links accepted by a process of %d contexts (want 1024), %d refused at once, target status 0x%x",
	       got, NC * N, NC, refused_fast, st);
}

/* Issue 22, item 4: a peer that lies in its ring records.  A raw peer
 * links to a target that registered the middle page of three (the pages
 * around it are the target's too, filled with 0xee, and not registered) and
 * has an RC QP in RTR connected to the peer's made-up QPN.  It sends one
 * RDMA WRITE record (layout: swrdma-ring's `Form`, see STAMP) per fresh
 * target: an honest one (control: its 64 bytes land), then lies: an
 * address before the MR, one that runs past its end, an offset far past
 * the message (before the 32-bit field it wrapped the address around to
 * before the MR), a payload length beyond the record, a record longer than
 * the ring holds.  The target must live and no byte outside its MR may
 * change. */
struct liar_info { uint32_t id, qpn, rkey; uint64_t addr; };
#define LIAR_QPN 0x7f123u

static void liar_target(int rdy, int cmd)
{
	struct liar_info li = { 0 };
	struct ibv_context *c;
	li.id = open_new_ctx(&c);
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	uint8_t *b = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pd || !cq || b == MAP_FAILED)
		_exit(2);
	memset(b, 0xee, 3 * 4096);
	memset(b + 4096, 0, 4096);
	struct ibv_mr *mr = ibv_reg_mr(pd, b + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp *q = mkqp(pd, cq, 4, 4);
	if (!mr)
		_exit(2);
	to_init(q);
	to_rts(c, q, LIAR_QPN);
	li.qpn = q->qp_num;
	li.rkey = mr->rkey;
	li.addr = (uintptr_t)b + 4096;
	if (write(rdy, &li, sizeof li) != sizeof li)
		_exit(2);
	char x;
	if (read(cmd, &x, 1) != 1)
		_exit(2);
	for (size_t i = 0; i < 4096; i++)
		if (b[i] != 0xee || b[2 * 4096 + i] != 0xee)
			_exit(5);
	/* Report whether the control write landed (exit 6 when it did). */
	_exit(b[4096] == 0x77 && b[4096 + 63] == 0x77 ? 6 : 0);
}

static void t_lying_records(void)
{
	static const char *names[] = { "honest", "before-the-MR", "past-its-end", "offset-wraps",
				       "payload-beyond-record", "record-beyond-ring" };
	char res[600] = "";
	int good = 1;
	for (int v = 0; v < 6; v++) {
		int rdy, cmd;
		pid_t pid = fork_piped(&rdy, &cmd);
		if (pid == 0)
			liar_target(rdy, cmd);
		struct liar_info li;
		xread(rdy, &li, sizeof li);
		int s = peer_connect(li.id), m = make_memfd(1), e = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), te;
		send_hello(s, m, e);
		if (!wait_reply(s, 2000, &te))
			die("no link");
		uint8_t *map = mmap(NULL, LINK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
		if (map == MAP_FAILED)
			die("mmap");
		uint8_t *rec = map + RING_HDR;
		uint32_t len = 128 + 64, plen = 64;
		uint64_t raddr = li.addr, off = 0, total = 64;
		if (v == 1)
			raddr = li.addr - 64;
		else if (v == 2)
			raddr = li.addr + 4096 - 32;
		else if (v == 3)
			off = 0xffffffc0u;	/* an offset far past the message (32 bits) */
		else if (v == 4)
			plen = 4096;		/* the record holds 64 */
		else if (v == 5)
			len = RING_SIZE + 4096;
		memset(rec, 0, 128 + 64);
		*(uint32_t *)(rec + 8) = len;
		*(uint32_t *)(rec + 12) = 2 | (3u << 16);	/* K_WRITE, F_FIRST|F_LAST */
		*(uint32_t *)(rec + 16) = li.qpn;
		*(uint32_t *)(rec + 20) = LIAR_QPN;
		*(uint64_t *)(rec + 32) = raddr;
		*(uint32_t *)(rec + 40) = li.rkey;
		*(uint32_t *)(rec + 48) = (uint32_t)total;
		*(uint32_t *)(rec + 52) = (uint32_t)off;
		*(uint32_t *)(rec + 56) = plen;
		memset(rec + 128, 0x77, 64);
		__atomic_store_n((uint64_t *)rec, STAMP(0), __ATOMIC_RELEASE);	  /* published */
		__atomic_store_n((uint64_t *)map, (uint64_t)128 + 64, __ATOMIC_RELEASE); /* head */
		kick(te);
		msleep(300);
		(void)!write(cmd, "q", 1);
		int st;
		double end = now() + 10;
		while (waitpid(pid, &st, WNOHANG) == 0 && now() < end)
			msleep(10);
		if (now() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
		int landed = WIFEXITED(st) && WEXITSTATUS(st) == 6;
		int clean = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || landed);
		int ok = clean && (v == 0 ? landed : !landed);
		char one[100];
		snprintf(one, sizeof one, "%s:%s ", names[v],
			 WIFSIGNALED(st) ? "target killed" : WEXITSTATUS(st) == 5 ? "bytes outside the MR changed"
			 : !clean ? "target failed" : landed ? "written" : "refused");
		strncat(res, one, sizeof res - strlen(res) - 1);
		good &= ok;
		munmap(map, LINK_BYTES);
		close(s);
		close(m);
		close(e);
		close(rdy);
		close(cmd);
	}
	result(good, "%s(want: honest written, every lie refused, the target alive)", res);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <test>\n", argv[0]);
		return 2;
	}
	const char *t = argv[1];
	test_name = t;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(t, "peer-accepted-control")) t_accepted();
	else if (!strcmp(t, "memfd-unsealed-refused")) t_unsealed();
	else if (!strcmp(t, "memfd-wrong-size-refused")) t_wrong_size();
	else if (!strcmp(t, "doorbell-pipe-refused-no-sigpipe")) t_pipe_doorbell();
	else if (!strcmp(t, "doorbell-socket-refused")) t_socket_doorbell();
	else if (!strcmp(t, "doorbell-full-no-block")) t_full_doorbell();
	else if (!strcmp(t, "response-backlog-bounded")) t_backlog_overflow();
	else if (!strcmp(t, "silent-hello-no-stall")) t_silent_hello();
	else if (!strcmp(t, "remote-access-unmapped-mr")) t_remote_unmapped(M_UNMAP);
	else if (!strcmp(t, "remote-write-readonly-mr")) t_remote_unmapped(M_RDONLY);
	else if (!strcmp(t, "dereg-mr-waits-for-inflight-write")) t_dereg_inflight();
	else if (!strcmp(t, "one-sided-ops-complete-while-target-stopped")) t_direct_stopped(1);
	else if (!strcmp(t, "one-sided-ops-first-access-while-target-stopped")) t_direct_stopped(0);
	else if (!strcmp(t, "one-sided-ops-fall-back-to-ring-when-refused")) t_direct_stopped(-1);
	else if (!strcmp(t, "one-sided-ops-complete-when-target-stopped-before-link")) t_direct_stopped(2);
	else if (!strcmp(t, "lying-directory-bounded-by-own-registrations")) t_liar();
	else if (!strcmp(t, "atomics-direct-and-ring-are-atomic")) t_atomics_mixed();
	else if (!strcmp(t, "lying-ring-records-bounded-by-own-registrations")) t_lying_records();
	else if (!strcmp(t, "dereg-mr-loses-no-overlapping-write")) t_overlap_dereg();
	else if (!strcmp(t, "foreign-segv-reaches-app-handler")) t_foreign_fault(1);
	else if (!strcmp(t, "foreign-segv-default-action")) t_foreign_fault(0);
	else if (!strcmp(t, "reg-mr-null-efault")) t_reg("null");
	else if (!strcmp(t, "reg-mr-2^40-efault")) t_reg("2^40");
	else if (!strcmp(t, "reg-mr-wrap-einval")) t_reg("wrap");
	else if (!strcmp(t, "reg-mr-unmapped-efault")) t_reg("unmapped");
	else if (!strcmp(t, "reg-mr-readonly-writable-efault")) t_reg("read-only-writable");
	else if (!strcmp(t, "reg-mr-readonly-readable-ok")) t_reg("read-only-readable");
	else if (!strcmp(t, "post-send-beyond-max-send-wr-enomem")) t_overpost_send();
	else if (!strcmp(t, "post-recv-beyond-max-recv-wr-enomem")) t_overpost_recv();
	else if (!strcmp(t, "cq-overrun-cq-err")) t_cq_overrun();
	else if (!strcmp(t, "rc-foreign-qp-cannot-consume-recv")) t_foreign_qp();
	else if (!strcmp(t, "modify-qp-reset-init-missing-einval")) t_modify_missing(0);
	else if (!strcmp(t, "modify-qp-init-rtr-missing-einval")) t_modify_missing(1);
	else if (!strcmp(t, "modify-qp-init-rtr-extra-attr-einval")) t_modify_missing(2);
	else if (!strcmp(t, "dealloc-pd-live-mr-ebusy")) t_busy("mr");
	else if (!strcmp(t, "dealloc-pd-live-qp-ebusy")) t_busy("qp");
	else if (!strcmp(t, "dealloc-pd-live-ah-ebusy")) t_busy("ah");
	else if (!strcmp(t, "dealloc-pd-live-srq-ebusy")) t_busy("srq");
	else if (!strcmp(t, "destroy-cq-live-qp-ebusy")) t_busy("cq");
	else if (!strcmp(t, "rnr-flood-receiver-memory-bounded")) t_rnr_flood(0);
	else if (!strcmp(t, "rnr-flood-late-receives-complete-in-order")) t_rnr_flood(1);
	else if (!strcmp(t, "rnr-retry-0-exc-err")) t_rnr_exc(0);
	else if (!strcmp(t, "rnr-retry-3-exc-err")) t_rnr_exc(3);
	else if (!strcmp(t, "rnr-retry-6-exc-err")) t_rnr_exc(6);
	else if (!strcmp(t, "rnr-nak-keeps-order")) t_rnr_order();
	else if (!strcmp(t, "send-before-rtr-retry-exc-err")) t_before_rtr(0);
	else if (!strcmp(t, "send-before-rtr-lands-after-rtr")) t_before_rtr(1);
	else if (!strcmp(t, "link-memory-lazy")) t_link_memory();
	else if (!strcmp(t, "link-memory-given-back-when-idle")) t_link_idle_memory();
	else if (!strcmp(t, "links-per-context-bounded")) t_link_count();
	else if (!strcmp(t, "links-per-process-bounded")) t_link_process_count();
	else if (!strcmp(t, "link-refused-send-error-completion")) t_link_refused_completion();
	else {
		fprintf(stderr, "unknown test %s\n", t);
		return 2;
	}
	return failed;
}
