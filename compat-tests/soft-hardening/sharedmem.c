/* compat-tests/soft-hardening/sharedmem.c: registered memory that is
 * already shared (issue 34 item 3).  A target process registers memory of
 * a shared object; an initiator (its parent) reaches it with RDMA WRITE,
 * READ and atomics.  swr0 maps the object itself on the initiator's side
 * (providers/swrdma/src/shared.rs) when the target's mapping shows it;
 * what the application sees must stay what Linux and a kernel NIC give:
 *
 *   <kind>-ops            WRITE, READ, fetch-and-add and compare-and-swap
 *                         land in and come from the object
 *   <kind>-unmapped       the target unmaps the object and maps private
 *                         memory at the same address: a WRITE does not
 *                         touch that memory; with the object reached
 *                         directly it lands in the object (as in pinned
 *                         pages of a kernel NIC), else it fails with
 *                         REM_ACCESS_ERR (the private path follows the
 *                         address); either way no process dies
 *   <kind>-fork           the target forks: its child sees the WRITE (the
 *                         mapping is shared, Linux's fork)
 *   <kind>-dontneed       MADV_DONTNEED on the registered MAP_SHARED range
 *                         keeps the contents (the object's pages)
 *   <kind>-dereg          after the target's ibv_dereg_mr a WRITE completes
 *                         with REM_ACCESS_ERR and lands nowhere; the
 *                         initiator's mapping of the object (there after
 *                         the first WRITE when it is reached directly) is
 *                         gone
 *   memfd-truncated       the target truncates its memfd under the MR: a
 *                         WRITE and a READ complete with REM_ACCESS_ERR, no
 *                         SIGBUS in either process; the target still works
 *   <kind>: sysv (removed at once, IPC_RMID, as perftest does), sysvkept
 *   (not removed), sysvhuge (SHM_HUGETLB: SKIP without huge pages), memfd,
 *   memfdclosed (the memfd's descriptor closed before registering: the
 *   private path), file (a MAP_SHARED file with a path, its descriptor
 *   closed), deleted (a file unlinked, its descriptor kept).
 *
 * `sharedmem <test>` prints "PASS <test>", "SKIP <test>: why" or
 * "FAIL <test>: why".  SWRDMA_SHARED=0 in the environment: every kind on
 * the private path (the expectations follow). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#define RESULT_EXITS
#include "report.h"
#include "../common/qpsetup.h"

#define SZ (2u << 20)
static const int RW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_REMOTE_ATOMIC;

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static int to_t[2], to_i[2];

enum { C_DEREG = 0, C_UNMAP, C_CHECK, C_OBJCHECK, C_ANONCHECK, C_TRUNC, C_DONTNEED, C_FORK, C_CHILDCHECK, C_PING, C_END };
struct cmd { int op; uint32_t off, len; uint8_t byte; };
struct setup { uint32_t qpn, rkey; uint64_t addr; int shmid; char why[120]; };

static void msg_write(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("pipe write");
}
static void msg_read(int fd, void *p, size_t n)
{
	if (read(fd, p, n) != (ssize_t)n)
		die("pipe read");
}

static void open_all(void)
{
	ctx = open_dev();
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	qp = pd && cq ? ibv_create_qp(pd, &a) : NULL;
	if (!qp)
		die("pd/cq/qp");
}

static void connect_to(uint32_t dqpn)
{
	struct qps_conn c;
	qps_defaults(&c);
	c.access = RW;
	c.dest_qpn = dqpn;
	c.sgid_index = 1;
	if (ibv_query_gid(ctx, 1, 1, &c.dgid) || qps_to_rts(qp, &c, NULL))
		die("connect");
}

/* ---- the target ---- */
static const char *kind;
static uint8_t *buf;  /* the application's mapping */
static int obj_fd = -1, shmid = -1;
static pid_t child_pid;
static struct ibv_mr *mr;
static int child_go[2];

static char path[64];

static int make_object(char *why)
{
	if (!strncmp(kind, "sysv", 4)) {
		int huge = !strcmp(kind, "sysvhuge");
		shmid = shmget(IPC_PRIVATE, SZ, IPC_CREAT | 0600 | (huge ? SHM_HUGETLB : 0));
		if (shmid < 0) {
			snprintf(why, 120, "shmget%s: %s", huge ? " SHM_HUGETLB" : "", strerror(errno));
			return -1;
		}
		buf = shmat(shmid, NULL, 0);
		if (strcmp(kind, "sysvkept"))
			shmctl(shmid, IPC_RMID, NULL); /* as perftest: gone with its last attachment */
		return buf == (void *)-1 ? -2 : 0;
	}
	if (!strncmp(kind, "memfd", 5))
		obj_fd = memfd_create("sharedmem", MFD_CLOEXEC);
	else /* file: keeps its path; deleted: only the descriptor */
		obj_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (!strcmp(kind, "deleted"))
		unlink(path);
	if (obj_fd < 0 || ftruncate(obj_fd, SZ))
		return -2;
	buf = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, obj_fd, 0);
	if (buf == MAP_FAILED)
		return -2;
	if (!strcmp(kind, "memfdclosed") || !strcmp(kind, "file")) { /* the mapping alone */
		close(obj_fd);
		obj_fd = -1;
	}
	return 0;
}

/* A new mapping of the object (to look at it after the application's
 * own mapping went away). */
static uint8_t *map_again(void)
{
	if (shmid >= 0) {
		uint8_t *p = shmat(shmid, NULL, 0);
		return p == (void *)-1 ? NULL : p;
	}
	int fd = obj_fd >= 0 ? obj_fd : open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	uint8_t *p = mmap(NULL, SZ, PROT_READ, MAP_SHARED, fd, 0);
	if (fd != obj_fd)
		close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static int all_are(const uint8_t *p, uint32_t n, uint8_t v)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void target(void)
{
	struct setup s = { 0 };
	int r = make_object(s.why);
	if (r == -2)
		die("object");
	if (r == 0) {
		memset(buf, 0, SZ);
		mr = ibv_reg_mr(pd, buf, SZ, RW);
		if (!mr)
			die("reg_mr");
		s.addr = (uintptr_t)buf;
		s.shmid = shmid;
		s.rkey = mr->rkey;
	}
	s.qpn = qp->qp_num;
	msg_write(to_i[1], &s, sizeof s);
	uint32_t dqpn;
	msg_read(to_t[0], &dqpn, 4);
	if (r)
		_exit(0);
	connect_to(dqpn);
	msg_write(to_i[1], "k", 1);
	for (;;) {
		struct cmd c;
		int ok = 1;
		msg_read(to_t[0], &c, sizeof c);
		switch (c.op) {
		case C_CHECK: ok = all_are(buf + c.off, c.len, c.byte); break;
		case C_UNMAP: {
			/* the object goes away from this address; private memory
			 * filled with 0x11 takes its place */
			if (shmid >= 0)
				ok = shmdt(buf) == 0;
			else
				ok = munmap(buf, SZ) == 0;
			void *p = mmap(buf, SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			ok = ok && p == buf;
			if (ok)
				memset(buf, 0x11, SZ);
			break;
		}
		case C_ANONCHECK: ok = all_are(buf, SZ, 0x11); break;
		case C_OBJCHECK: {
			uint8_t *p = map_again();
			ok = p ? all_are(p + c.off, c.len, c.byte) : 2;
			if (p && shmid >= 0)
				shmdt(p);
			else if (p)
				munmap(p, SZ);
			break;
		}
		case C_TRUNC: ok = ftruncate(obj_fd, 0) == 0; break;
		case C_DONTNEED: ok = madvise(buf, SZ, MADV_DONTNEED) == 0; break;
		case C_FORK:
			if (pipe(child_go))
				die("pipe");
			child_pid = fork();
			if (child_pid == 0) {
				struct cmd cc;
				if (read(child_go[0], &cc, sizeof cc) != sizeof cc)
					_exit(3);
				_exit(all_are(buf + cc.off, cc.len, cc.byte) ? 0 : 1);
			}
			ok = child_pid > 0;
			break;
		case C_CHILDCHECK: {
			int st;
			msg_write(child_go[1], &c, sizeof c);
			ok = waitpid(child_pid, &st, 0) == child_pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
			break;
		}
		case C_PING: break;
		case C_DEREG: ok = ibv_dereg_mr(mr) == 0; break;
		case C_END: _exit(0);
		}
		msg_write(to_i[1], &ok, sizeof ok);
	}
}

/* ---- the initiator ---- */
static struct setup ts;
static pid_t main_pid;
static uint8_t lbuf[SZ] __attribute__((aligned(4096)));
static struct ibv_mr *lmr;

static int tell(int op, uint32_t off, uint32_t len, uint8_t byte)
{
	struct cmd c = { op, off, len, byte };
	int ok;
	msg_write(to_t[1], &c, sizeof c);
	msg_read(to_i[0], &ok, sizeof ok);
	return ok;
}

/* One RDMA operation on the target's [off, off+len): its status (-1: no
 * completion in 5 s). */
static int rdma(enum ibv_wr_opcode op, uint32_t off, uint32_t len, uint64_t cmp, uint64_t swp)
{
	struct ibv_sge sg = { (uintptr_t)lbuf, len, lmr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		w.wr.atomic.remote_addr = ts.addr + off;
		w.wr.atomic.rkey = ts.rkey;
		w.wr.atomic.compare_add = cmp;
		w.wr.atomic.swap = swp;
	} else {
		w.wr.rdma.remote_addr = ts.addr + off;
		w.wr.rdma.rkey = ts.rkey;
	}
	if (ibv_post_send(qp, &w, &bad))
		die("post_send");
	struct ibv_wc wc;
	double end = now() + 5;
	while (now() < end)
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			return wc.status;
	return -1;
}

static int wr(uint32_t off, uint32_t len, uint8_t v)
{
	memset(lbuf, v, len);
	return rdma(IBV_WR_RDMA_WRITE, off, len, 0, 0);
}

static int direct_on(void)
{
	const char *e = getenv("SWRDMA_SHARED");
	return !(e && !strcmp(e, "0")) && strcmp(kind, "memfdclosed") != 0;
}

static void t_ops(void)
{
	int s = wr(4096, 65536, 0xa5);
	if (s || tell(C_CHECK, 4096, 65536, 0xa5) != 1)
		result(0, "WRITE: status %d or contents differ", s);
	memset(lbuf, 0, 65536);
	s = rdma(IBV_WR_RDMA_READ, 4096, 65536, 0, 0);
	if (s || !all_are(lbuf, 65536, 0xa5))
		result(0, "READ: status %d or contents differ", s);
	s = rdma(IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 5, 0);
	uint64_t old = *(uint64_t *)lbuf;
	if (s || old != 0)
		result(0, "FAA: status %d old %llu", s, (unsigned long long)old);
	s = rdma(IBV_WR_ATOMIC_CMP_AND_SWP, 0, 8, 5, 0x0101010101010101ull);
	old = *(uint64_t *)lbuf;
	if (s || old != 5 || tell(C_CHECK, 0, 8, 1) != 1)
		result(0, "CAS: status %d old %llu or contents differ", s, (unsigned long long)old);
	/* a WRITE at the MR's last bytes */
	s = wr(SZ - 100, 100, 0x3c);
	result(!s && tell(C_CHECK, SZ - 100, 100, 0x3c) == 1, "WRITE at the end: status %d", s);
}

static void t_unmapped(void)
{
	if (tell(C_UNMAP, 0, 0, 0) != 1)
		die("unmap");
	int s = wr(8192, 4096, 0x77);
	int anon = tell(C_ANONCHECK, 0, 0, 0);
	if (tell(C_PING, 0, 0, 0) != 1)
		result(0, "target gone");
	if (direct_on()) {
		/* the object, as pinned pages of a kernel NIC; never the memory
		 * now at that address */
		int o = tell(C_OBJCHECK, 8192, 4096, 0x77);
		/* (a removed segment cannot be attached again to look: EIDRM) */
		if (o == 2 && ts.shmid >= 0 && strcmp(kind, "sysvkept"))
			o = 1;
		result(s == IBV_WC_SUCCESS && o == 1 && anon == 1,
		       "object reached: status %d (want 0), in the object %d, private memory untouched %d", s, o, anon);
	}
	/* the private path follows the address (cross-memory attach), as it
	 * always did: the WRITE lands in what is mapped there now */
	result(s == IBV_WC_SUCCESS && anon == 0 && tell(C_CHECK, 8192, 4096, 0x77) == 1,
	       "private path: status %d, the WRITE not at the address", s);
}

static void t_fork(void)
{
	if (tell(C_FORK, 0, 0, 0) != 1)
		die("fork");
	int s = wr(12288, 8192, 0x5e);
	result(!s && tell(C_CHILDCHECK, 12288, 8192, 0x5e) == 1 && tell(C_CHECK, 12288, 8192, 0x5e) == 1,
	       "status %d, or the child or parent does not see the WRITE", s);
}

static void t_dontneed(void)
{
	int s = wr(0, 65536, 0x42);
	if (s || tell(C_DONTNEED, 0, 0, 0) != 1)
		result(0, "WRITE status %d or madvise failed", s);
	result(tell(C_CHECK, 0, 65536, 0x42) == 1, "MADV_DONTNEED lost the shared contents");
}

/* Lines of our own /proc/self/maps that name the target's object. */
static int object_maps(void)
{
	char l[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		die("maps");
	while (fgets(l, sizeof l, f))
		n += strstr(l, "memfd:sharedmem") || strstr(l, "swrdma-sharedmem-") || strstr(l, "/SYSV");
	fclose(f);
	return n;
}

static void t_dereg(void)
{
	int s = wr(0, 4096, 0x61);
	int before = object_maps();
	if (s || tell(C_DEREG, 0, 0, 0) != 1)
		result(0, "WRITE status %d or dereg failed", s);
	s = wr(0, 4096, 0x62);
	int after = object_maps();
	if (s != IBV_WC_REM_ACCESS_ERR || tell(C_CHECK, 0, 4096, 0x61) != 1)
		result(0, "WRITE after dereg: status %d (want REM_ACCESS_ERR) or it landed", s);
	if (direct_on())
		result(before >= 1 && after == 0, "our mappings of the object: %d before, %d after dereg (want >= 1, 0)",
		       before, after);
	result(before == 0 && after == 0, "private path, yet %d/%d mappings of the object here", before, after);
}

static void t_truncated(void)
{
	int s = wr(0, 4096, 0x21);
	if (s || tell(C_TRUNC, 0, 0, 0) != 1)
		result(0, "WRITE status %d or ftruncate failed", s);
	s = wr(65536, 4096, 0x22);
	int r = rdma(IBV_WR_RDMA_READ, 65536, 4096, 0, 0);
	/* the QP is in the error state after the first: the READ flushed */
	result(s == IBV_WC_REM_ACCESS_ERR && (r == IBV_WC_WR_FLUSH_ERR || r == IBV_WC_REM_ACCESS_ERR) &&
	       tell(C_PING, 0, 0, 0) == 1, "WRITE %d READ %d (want REM_ACCESS_ERR, then flushed)", s, r);
}

static void unlink_path(void)
{
	if (getpid() != main_pid)
		return;
	unlink(path);
	if (!strcmp(kind, "sysvkept") && ts.rkey)
		shmctl(ts.shmid, IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	test_name = argv[1];
	main_pid = getpid();
	setvbuf(stdout, NULL, _IONBF, 0);
	char *dash = strrchr(argv[1], '-');
	if (!dash)
		return 2;
	static char k[32];
	snprintf(k, sizeof k, "%.*s", (int)(dash - argv[1]), argv[1]);
	kind = k;
	const char *t = dash + 1;
	snprintf(path, sizeof path, "/tmp/swrdma-sharedmem-%d", (int)getpid());
	atexit(unlink_path);
	if (pipe(to_t) || pipe(to_i))
		die("pipe");
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(60);
		open_all();
		target();
	}
	open_all();
	msg_read(to_i[0], &ts, sizeof ts);
	msg_write(to_t[1], &qp->qp_num, 4);
	if (!ts.rkey) {
		printf("SKIP %s: %s\n", test_name, ts.why);
		waitpid(pid, NULL, 0);
		return 0;
	}
	connect_to(ts.qpn);
	char c;
	msg_read(to_i[0], &c, 1);
	lmr = ibv_reg_mr(pd, lbuf, SZ, RW);
	if (!lmr)
		die("reg_mr");
	alarm(60);
	if (!strcmp(t, "ops"))
		t_ops();
	else if (!strcmp(t, "unmapped"))
		t_unmapped();
	else if (!strcmp(t, "fork"))
		t_fork();
	else if (!strcmp(t, "dontneed"))
		t_dontneed();
	else if (!strcmp(t, "dereg"))
		t_dereg();
	else if (!strcmp(t, "truncated"))
		t_truncated();
	printf("FAIL %s: unknown test\n", test_name);
	return 2;
}
