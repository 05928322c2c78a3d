/* compat-tests/soft-hardening/memmodel.c: the software RDMA device leaves
 * the application's memory as Linux defines it (issue 22, item 1).  With a
 * kernel device, registering memory pins its pages and changes nothing the
 * application can see; these checks hold swr0 to the same:
 *
 *   registration-keeps-mapping       /proc/self/maps lines of a registered
 *                                    buffer are the same before, during and
 *                                    after the registration; contents kept
 *   reg-mr-loses-no-concurrent-write a thread writes every cache line of a
 *                                    4 MiB buffer while another registers
 *                                    and deregisters it (20 rounds): every
 *                                    line holds the last value written
 *   madvise-dontneed-zero-fills      MADV_DONTNEED on a registered buffer
 *                                    and after ibv_dereg_mr gives zeros;
 *                                    MADV_FREE succeeds on both
 *   fork-child-copy-on-write         a child forked while a buffer is
 *                                    registered (and after) writes its own
 *                                    copy; the parent's bytes stay
 *   fork-init-dontfork               after ibv_fork_init, a registered
 *                                    range is not in a forked child
 *                                    (MADV_DONTFORK, as upstream documents)
 *   mremap-mprotect-munmap           the application moves, grows,
 *                                    write-protects and unmaps registered
 *                                    memory as it could without the device;
 *                                    deregistration still succeeds
 *
 * `memmodel <test>` prints "PASS <name>" or "FAIL <name>: why". */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RESULT_EXITS
#include "report.h"

static const int RW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_REMOTE_ATOMIC;
#define PG 4096

static struct ibv_pd *open_pd(void)
{
	struct ibv_context *c = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	if (!pd)
		die("alloc_pd");
	return pd;
}

static uint8_t *anon(size_t n)
{
	uint8_t *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* n bytes of fresh private anonymous memory filled with `fill` in *p,
 * registered with every right. */
static struct ibv_mr *reg_filled(struct ibv_pd *pd, uint8_t **p, size_t n, int fill)
{
	*p = anon(n);
	memset(*p, fill, n);
	struct ibv_mr *mr = ibv_reg_mr(pd, *p, n, RW);
	if (!mr)
		die("reg_mr");
	return mr;
}

/* The /proc/self/maps lines that overlap [a, a+n), concatenated. */
static void maps_of(const void *a, size_t n, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uintptr_t s0 = (uintptr_t)a, e0 = s0 + n;
	out[0] = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long s, e;
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s < e0 && e > s0)
			strncat(out, line, cap - strlen(out) - 1);
	}
	if (f)
		fclose(f);
}

static int all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void t_keeps_mapping(void)
{
	struct ibv_pd *pd = open_pd();
	const size_t n = 64 * PG;
	uint8_t *p = anon(n);
	memset(p, 0x3c, n);
	static char before[4096], during[4096], after[4096];
	maps_of(p, n, before, sizeof before);
	struct ibv_mr *mr = ibv_reg_mr(pd, p + 100, n - 200, RW);
	if (!mr)
		die("reg_mr");
	maps_of(p, n, during, sizeof during);
	int kept = all(p, n, 0x3c);
	if (ibv_dereg_mr(mr))
		die("dereg_mr");
	maps_of(p, n, after, sizeof after);
	int kept2 = all(p, n, 0x3c);
	result(!strcmp(before, during) && !strcmp(before, after) && kept && kept2,
	       "maps before:\n%s during:\n%s after:\n%s contents kept: %d, %d", before, during, after, kept, kept2);
}

/* One thread writes every cache line once (a pass paced to last about
 * 4 ms), while the main thread registers the buffer in the middle of the
 * pass; a second pass runs while it deregisters.  Every line must hold the
 * value of the last pass. */
#define LINES ((4u << 20) / 64)
static uint8_t *cw_buf;
static volatile int cw_go;
static uint32_t cw_val;

static void *cw_writer(void *arg)
{
	(void)arg;
	while (!cw_go)
		;
	double t0 = now();
	for (uint32_t i = 0; i < LINES; i++) {
		__atomic_store_n((uint32_t *)(cw_buf + (size_t)i * 64), cw_val, __ATOMIC_RELAXED);
		if (i % 256 == 255)
			while (now() < t0 + 0.004 * (i + 1) / LINES)
				;
	}
	return NULL;
}

/* One paced pass of value v beside `op` (started 1 ms into the pass);
 * returns the number of lines that lost their write. */
static int pass_beside(uint32_t v, struct ibv_mr **mr, struct ibv_pd *pd)
{
	cw_val = v;
	cw_go = 0;
	pthread_t t;
	if (pthread_create(&t, NULL, cw_writer, NULL))
		die("pthread_create");
	cw_go = 1;
	usleep(1000);
	if (*mr) {
		if (ibv_dereg_mr(*mr))
			die("dereg_mr");
		*mr = NULL;
	} else if (!(*mr = ibv_reg_mr(pd, cw_buf, (size_t)LINES * 64, RW))) {
		die("reg_mr");
	}
	pthread_join(t, NULL);
	int bad = 0;
	for (uint32_t i = 0; i < LINES; i++)
		if (*(uint32_t *)(cw_buf + (size_t)i * 64) != v)
			bad++;
	return bad;
}

static void t_concurrent_write(void)
{
	struct ibv_pd *pd = open_pd();
	cw_buf = anon((size_t)LINES * 64);
	int lost_reg = 0, lost_dereg = 0, bad_rounds = 0;
	for (int r = 0; r < 20; r++) {
		struct ibv_mr *mr = NULL;
		int a = pass_beside(2 * r + 1, &mr, pd);
		int b = pass_beside(2 * r + 2, &mr, pd);
		lost_reg += a;
		lost_dereg += b;
		bad_rounds += a || b;
		munmap(cw_buf, (size_t)LINES * 64);
		cw_buf = anon((size_t)LINES * 64);
	}
	result(!bad_rounds, "20 rounds of a writer pass beside ibv_reg_mr and one beside ibv_dereg_mr: %d rounds lost "
	       "writes (%d cache lines at reg_mr, %d at dereg_mr)", bad_rounds, lost_reg, lost_dereg);
}

static void t_dontneed(void)
{
	struct ibv_pd *pd = open_pd();
	const size_t n = 16 * PG;
	uint8_t *p;
	struct ibv_mr *mr = reg_filled(pd, &p, n, 0x77);
	int dn1 = madvise(p, 4 * PG, MADV_DONTNEED) == 0 && all(p, 4 * PG, 0) && all(p + 4 * PG, n - 4 * PG, 0x77);
	memset(p, 0x11, n);
	int fr1 = madvise(p + 8 * PG, 4 * PG, MADV_FREE) == 0;
	if (ibv_dereg_mr(mr))
		die("dereg_mr");
	memset(p, 0x22, n);
	int dn2 = madvise(p, n, MADV_DONTNEED) == 0 && all(p, n, 0);
	memset(p, 0x33, n);
	errno = 0;
	int fr2 = madvise(p, n, MADV_FREE) == 0;
	int e = errno;
	result(dn1 && fr1 && dn2 && fr2,
	       "registered: MADV_DONTNEED zero-fills %d, MADV_FREE ok %d; after dereg: MADV_DONTNEED zero-fills %d, "
	       "MADV_FREE ok %d (%s)",
	       dn1, fr1, dn2, fr2, fr2 ? "" : strerror(e));
}

/* A child writes its own copy; returns 1 when it exited 0 having seen the
 * parent's bytes first.  `raw`: forked by the system call itself (no
 * pthread_atfork handler runs, as with a raw clone or a fork in another
 * runtime). */
static int child_writes_copy(uint8_t *p, size_t n, uint8_t seen, int raw)
{
	pid_t k = raw ? (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) : fork();
	if (k < 0)
		die("fork");
	if (k == 0) {
		if (!all(p, n, seen))
			_exit(3);
		memset(p, 0x99, n);
		_exit(all(p, n, 0x99) ? 0 : 4);
	}
	int st;
	waitpid(k, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void t_fork_cow(void)
{
	struct ibv_pd *pd = open_pd();
	const size_t n = 8 * PG;
	uint8_t *p;
	struct ibv_mr *mr = reg_filled(pd, &p, n, 0x5e);
	int c1 = child_writes_copy(p, n, 0x5e, 0), k1 = all(p, n, 0x5e);
	int r1 = child_writes_copy(p, n, 0x5e, 1), q1 = all(p, n, 0x5e);
	memset(p, 0x6e, n);
	int k2 = all(p, n, 0x6e);
	if (ibv_dereg_mr(mr))
		die("dereg_mr");
	int c3 = child_writes_copy(p, n, 0x6e, 0), k3 = all(p, n, 0x6e);
	int r3 = child_writes_copy(p, n, 0x6e, 1), q3 = all(p, n, 0x6e);
	result(c1 && k1 && r1 && q1 && k2 && c3 && k3 && r3 && q3,
	       "registered: fork(): child saw and wrote its copy %d, parent kept its bytes %d; raw clone: %d, %d; "
	       "parent writes %d; after dereg: fork() %d, %d; raw clone %d, %d",
	       c1, k1, r1, q1, k2, c3, k3, r3, q3);
}

static sigjmp_buf segv_jb;
static void on_segv(int s)
{
	(void)s;
	siglongjmp(segv_jb, 1);
}

static void t_fork_init(void)
{
	if (ibv_fork_init())
		die("ibv_fork_init");
	struct ibv_pd *pd = open_pd();
	const size_t n = 4 * PG;
	uint8_t *p = anon(3 * n);
	memset(p, 0x42, 3 * n);
	struct ibv_mr *mr = ibv_reg_mr(pd, p + n, n, RW);
	if (!mr)
		die("reg_mr");
	pid_t k = fork();
	if (k < 0)
		die("fork");
	if (k == 0) {
		/* The registered middle is not in the child; the rest is. */
		signal(SIGSEGV, on_segv);
		if (!all(p, n, 0x42) || !all(p + 2 * n, n, 0x42))
			_exit(3);
		if (sigsetjmp(segv_jb, 1) == 0) {
			volatile uint8_t x = p[n];
			(void)x;
			_exit(4); /* readable: still there */
		}
		_exit(0);
	}
	int st;
	waitpid(k, &st, 0);
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	int kept = all(p, 3 * n, 0x42);
	ibv_dereg_mr(mr);
	result(ok && kept, "child exit status 0x%x (3: the unregistered rest missing, 4: the registered range there); "
	       "parent kept its bytes %d", st, kept);
}

static void t_mremap(void)
{
	struct ibv_pd *pd = open_pd();
	const size_t n = 8 * PG;
	/* mremap: grow and move a registered buffer. */
	uint8_t *p = anon(n);
	memset(p, 0x61, n);
	struct ibv_mr *mr = ibv_reg_mr(pd, p, n, RW);
	if (!mr)
		die("reg_mr");
	uint8_t *q = mremap(p, n, 4 * n, MREMAP_MAYMOVE);
	int moved = q != MAP_FAILED && all(q, n, 0x61) && all(q + n, 3 * n, 0);
	if (moved)
		memset(q, 0x62, 4 * n);
	int moved2 = moved && all(q, 4 * n, 0x62);
	int d1 = ibv_dereg_mr(mr) == 0;
	if (moved)
		munmap(q, 4 * n);
	/* mprotect: read-only while registered, then writable again. */
	p = anon(n);
	memset(p, 0x63, n);
	mr = ibv_reg_mr(pd, p, n, RW);
	if (!mr)
		die("reg_mr 2");
	int prot = mprotect(p, n, PROT_READ) == 0 && all(p, n, 0x63);
	static char m1[4096];
	maps_of(p, n, m1, sizeof m1);
	int ro = strstr(m1, " r--p ") != NULL;
	int prot2 = mprotect(p, n, PROT_READ | PROT_WRITE) == 0;
	if (prot2)
		memset(p, 0x64, n);
	int d2 = ibv_dereg_mr(mr) == 0;
	/* munmap while registered, then deregister. */
	int um = munmap(p, n) == 0;
	p = anon(n);
	mr = ibv_reg_mr(pd, p, n, RW);
	if (!mr)
		die("reg_mr 3");
	int um2 = munmap(p, n) == 0;
	int d3 = ibv_dereg_mr(mr) == 0;
	result(moved && moved2 && d1 && prot && ro && prot2 && d2 && um && um2 && d3,
	       "mremap grow+move %d (writable %d), dereg after %d; mprotect RO %d (maps r--p %d), back RW %d, dereg %d; "
	       "munmap %d, munmap registered %d, dereg after %d",
	       moved, moved2, d1, prot, ro, prot2, d2, um, um2, d3);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <test>\n", argv[0]);
		return 2;
	}
	const char *t = test_name = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(t, "registration-keeps-mapping")) t_keeps_mapping();
	else if (!strcmp(t, "reg-mr-loses-no-concurrent-write")) t_concurrent_write();
	else if (!strcmp(t, "madvise-dontneed-zero-fills")) t_dontneed();
	else if (!strcmp(t, "fork-child-copy-on-write")) t_fork_cow();
	else if (!strcmp(t, "fork-init-dontfork")) t_fork_init();
	else if (!strcmp(t, "mremap-mprotect-munmap")) t_mremap();
	else {
		fprintf(stderr, "unknown test %s\n", t);
		return 2;
	}
	return 0;
}
