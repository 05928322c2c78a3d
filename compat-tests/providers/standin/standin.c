/*
 * The uverbs stand-in's interposition layer (LD_PRELOAD): the process's
 * open/close/ioctl/write/mmap/munmap/stat calls on /dev/infiniband/uverbsN
 * and on the descriptors opened from it go to the model in uverbs.c; every
 * other call goes to libc.  Also: RDMA netlink sockets are refused (as on a
 * kernel without RDMA), so discovery reads the sysfs fixture at SYSFS_PATH,
 * unless STANDIN_NETLINK=1: then netlink.c answers them from the fixture.
 *
 * Environment:
 *   SYSFS_PATH         the sysfs fixture (required: without it nothing is faked)
 *   STANDIN_LOG        the command log (appended; default: none)
 *   STANDIN_FAIL       N:ERR  the N-th command (from 1) fails with ERR
 *                      (an errno's name, EINVAL..., or its number), or
 *                      N:fatal  from the N-th command on the device is
 *                      disassociated: IBV_EVENT_DEVICE_FATAL on the async
 *                      fd, then EIO for every command.  A program that
 *                      opens /dev/infiniband/standin-round (ENOENT) marks
 *                      a round: commands then count from the latest mark,
 *                      and the first round gets no fault
 *   STANDIN_WRITE_ONLY 1: no ioctl interface (an old kernel: ENOTTY)
 *   STANDIN_DRIVER     the driver model to use (default: from the ibdev name)
 *   STANDIN_RAW        set: addresses are not masked in the log (debugging)
 *   STANDIN_NETLINK    1: RDMA netlink answers discovery (netlink.c);
 *                      otherwise socket(AF_NETLINK, .., NETLINK_RDMA)
 *                      fails with EPROTONOSUPPORT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "standin.h"

/* x86_64 and arm64: struct stat64 is struct stat. */
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat64");

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif
#define UVERBS_MAJOR 231

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int log_fd = -2;
static unsigned long ncmds;
static int round_no; /* round marks seen (see do_open) */
static long fail_at;
static int fail_err;      /* 0: fatal */
static int write_only;

#define MAX_CTX 64
static struct sti_ctx *ctxs[MAX_CTX];

struct map { void *addr; size_t len; uint64_t off; int used; };
#define MAX_MAPS 1024
static struct map maps[MAX_MAPS];

/* ---- libc's own functions ---- */
#define REAL(ret, name, ...)                                                   \
	static ret (*real_##name)(__VA_ARGS__);                                \
	static void load_##name(void)                                         \
	{                                                                      \
		if (!real_##name)                                              \
			real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name); \
	}
REAL(int, close, int)
REAL(int, ioctl, int, unsigned long, void *)
REAL(ssize_t, write, int, const void *, size_t)
REAL(int, socket, int, int, int)
REAL(int, fstat, int, struct stat *)
REAL(int, fstatat, int, const char *, struct stat *, int)
REAL(int, __fxstat, int, int, struct stat *)
REAL(int, __fxstatat, int, int, const char *, struct stat *, int)
REAL(int, __xstat, int, const char *, struct stat *)
REAL(int, __lxstat, int, const char *, struct stat *)
REAL(int, stat, const char *, struct stat *)
REAL(int, lstat, const char *, struct stat *)
REAL(int, statx, int, const char *, int, unsigned, struct statx *)

/* netlink.c */
int sti_nl_enabled(void);
int sti_nl_socket(int type);
void sti_nl_close(int fd);

int sti_real_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

/* ---- the log ---- */
static void log_open(void)
{
	const char *p = getenv("STANDIN_LOG");

	if (log_fd != -2)
		return;
	log_fd = -1;
	if (p && *p)
		log_fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

void sti_log(const char *fmt, ...)
{
	char buf[65536];
	va_list ap;
	int n;

	log_open();
	if (log_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	syscall(SYS_write, log_fd, buf, (size_t)n);
}

/*
 * What the log masks as an address.  Two rules, so that the log of a
 * program compares across runs wherever its memory lies:
 *
 *  - a word between 2^40 and 2^47: where a position-independent program's
 *    heap, stack and libraries lie (no size, key, number or GUID the
 *    libraries send is there);
 *  - a word below 4 GiB inside one of the process's own mappings (asked
 *    of the kernel at the time the command is logged, with mincore(2) on
 *    the word's page: it fails with ENOMEM exactly where /proc/self/maps
 *    has no mapping, for a thousandth of the cost of reading that file):
 *    the image, heap and data of a program that is not
 *    position-independent lie from 4 MiB up (0x400000), where no single
 *    rule by value could tell them from a length.
 *
 * Which fields hold user pointers is thus not listed: a response address,
 * a buffer given to the "kernel" in driver data (a CQ's or QP's ring, its
 * doorbell record), an ioctl attribute's pointer, or an opaque cookie like
 * user_handle that libraries fill with an object's address are all masked
 * when they hold an address, and shown as they are when a program puts a
 * plain number there.  A plain number that happens to fall inside a mapping
 * (a length of 16 MiB while the heap of a non-PIE program spans it) is
 * masked too, in one run and not the next: the brk heap of a non-PIE
 * program starts anywhere in the 1 GiB above its image, so the numbers a
 * compared program sends (compat-tests/standin-tool/verbs.c) stay out of
 * 4 MiB - 1.1 GiB; [vsyscall] (above 2^47) is not counted.
 */
static int is_address(uint64_t v, int by_maps)
{
	unsigned char vec;

	if (v >= (1ULL << 40) && v < (1ULL << 47))
		return 1;
	if (!by_maps)
		return 0;
	/* The mappings are asked only below 4 GiB, where a non-PIE program's
	 * image and brk heap lie (its mmap'd memory is above 2^40): between
	 * 2^32 and 2^40 lie none of its addresses, but device attributes that
	 * a mapping made there once covered (0x100000000 in mana's
	 * QUERY_DEVICE answer, under Debian's python3). */
	if (v >= (1ULL << 32))
		return 0;
	/* mincore on one page: 0 when the page is mapped (whatever its
	 * protection or residency), ENOMEM when not. */
	return syscall(SYS_mincore, (void *)(uintptr_t)(v & ~(uint64_t)4095), (size_t)1, &vec) == 0;
}

/*
 * Hex of a buffer; every naturally aligned 8-byte word that holds a
 * user-space address (is_address) is shown as "<ptr>", so that logs of two
 * runs compare.  Only for the log: without one (no STANDIN_LOG) nothing is
 * formatted, so that a program timed on the stand-in (compat-tests/bench,
 * section control) does not pay for it.
 */
static void hex_of(char *out, size_t outsz, const void *p, size_t len, int by_maps);

void sti_hex(char *out, size_t outsz, const void *p, size_t len)
{
	hex_of(out, outsz, p, len, 1);
}

/*
 * The same for what the "kernel" wrote (responses, output attributes,
 * driver data out): only the first rule.  The model writes no address of
 * the process there, and device attributes (a vendor id of 0xffffff, a
 * page size mask) could fall inside a non-PIE program's heap in one run
 * and not in the next.
 */
void sti_hex_out(char *out, size_t outsz, const void *p, size_t len)
{
	hex_of(out, outsz, p, len, 0);
}

static void hex_of(char *out, size_t outsz, const void *p, size_t len, int by_maps)
{
	const uint8_t *b = p;
	size_t i = 0, o = 0;

	if (!outsz)
		return;
	out[0] = 0;
	log_open();
	if (log_fd < 0)
		return;
	static int raw = -1;

	if (raw < 0)
		raw = getenv("STANDIN_RAW") != NULL;
	if (!p)
		len = 0;
	while (i < len && o + 20 < outsz) {
		if (!raw && !(i & 7) && i + 8 <= len) {
			uint64_t v;
			memcpy(&v, b + i, 8);
			if (is_address(v, by_maps)) {
				o += (size_t)snprintf(out + o, outsz - o, "<ptr>");
				i += 8;
				continue;
			}
		}
		o += (size_t)snprintf(out + o, outsz - o, "%02x", b[i]);
		i++;
	}
	if (i < len)
		snprintf(out + o, outsz - o, "...");
}

/* ---- configuration ---- */
static const char *sysfs(void)
{
	const char *s = getenv("SYSFS_PATH");
	return s && *s ? s : NULL;
}

/* An errno by name (ENOSPC) or number (28); -1 when neither. */
static int errno_of(const char *e)
{
	char *end;
	long n = strtol(e, &end, 10);

	if (*e && !*end)
		return n > 0 && n < 4096 ? (int)n : -1;
	for (int i = 1; i < 4096; i++) {
		const char *name = strerrorname_np(i);
		if (name && !strcmp(name, e))
			return i;
	}
	return -1;
}

static void config(void)
{
	static int done;
	const char *f;

	if (done)
		return;
	done = 1;
	f = getenv("STANDIN_FAIL");
	if (f && *f) {
		char *end;
		fail_at = strtol(f, &end, 10);
		if (*end == ':') {
			const char *e = end + 1;
			if (!strcmp(e, "fatal"))
				fail_err = 0;
			else if (!strcmp(e, "EINVAL"))
				fail_err = EINVAL;
			else if (!strcmp(e, "ENOMEM"))
				fail_err = ENOMEM;
			else if (!strcmp(e, "EIO"))
				fail_err = EIO;
			else if (!strcmp(e, "EOPNOTSUPP"))
				fail_err = EOPNOTSUPP;
			else
				fail_err = errno_of(e);
			if (fail_err < 0) { /* not an errno: no fault at all */
				fprintf(stderr, "standin: STANDIN_FAIL=%s: no such errno; no fault injected\n", f);
				fail_at = 0;
			}
		} else {
			fail_at = 0;
		}
	}
	f = getenv("STANDIN_WRITE_ONLY");
	write_only = f && *f == '1';
}

int sti_write_only(void)
{
	config();
	return write_only;
}

/* The device N of "/dev/infiniband/uverbsN" (or /dev/char/231:N) when the
 * fixture has it, else -1. */
static int dev_of_path(const char *path)
{
	char p[PATH_MAX];
	struct stat st;
	int n, maj, pos = 0;

	if (!path || !sysfs())
		return -1;
	if (sscanf(path, "/dev/infiniband/uverbs%d%n", &n, &pos) == 1 && !path[pos])
		;
	else if (sscanf(path, "/dev/char/%d:%d%n", &maj, &n, &pos) == 2 && !path[pos] && maj == UVERBS_MAJOR)
		;
	else
		return -1;
	if (n < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/class/infiniband_verbs/uverbs%d", sysfs(), n);
	load_stat();
	if (!real_stat || real_stat(p, &st))
		return -1;
	return n;
}

static struct sti_ctx *ctx_of_fd(int fd)
{
	for (int i = 0; i < MAX_CTX; i++)
		if (ctxs[i] && ctxs[i]->cmd_fd == fd)
			return ctxs[i];
	return NULL;
}

static void read_ibdev(int n, char *out, size_t sz)
{
	char p[PATH_MAX];
	int fd;
	ssize_t r;

	out[0] = 0;
	snprintf(p, sizeof(p), "%s/class/infiniband_verbs/uverbs%d/ibdev", sysfs(), n);
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	r = read(fd, out, sz - 1);
	sti_real_close(fd);
	if (r < 0)
		r = 0;
	out[r] = 0;
	out[strcspn(out, "\n")] = 0;
}

static int open_dev(int n, int flags)
{
	struct sti_ctx *c;
	const char *dn = getenv("STANDIN_DRIVER");
	int fd, i;

	config();
	/* An eventfd: a descriptor nothing else would accept a uverbs command
	 * on, so a call that got past us fails instead of succeeding. */
	fd = eventfd(0, (flags & O_CLOEXEC) ? EFD_CLOEXEC : 0);
	if (fd < 0)
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c) {
		sti_real_close(fd);
		errno = ENOMEM;
		return -1;
	}
	c->cmd_fd = fd;
	c->async_rfd = c->async_wfd = -1;
	c->dev.index = n;
	read_ibdev(n, c->dev.ibdev, sizeof(c->dev.ibdev));
	c->dev.drv = sti_driver_find(dn && *dn ? dn : c->dev.ibdev);
	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_CTX && ctxs[i]; i++)
		;
	if (i == MAX_CTX) {
		pthread_mutex_unlock(&lock);
		sti_real_close(fd);
		free(c);
		errno = EMFILE;
		return -1;
	}
	ctxs[i] = c;
	sti_log("open uverbs%d ibdev=%s driver=%s", n, c->dev.ibdev, c->dev.drv->name);
	pthread_mutex_unlock(&lock);
	return fd;
}

/* ---- open ---- */
#define ROUND_MARK "/dev/infiniband/standin-round"

static int do_open(int dirfd, const char *path, int flags, mode_t mode, int is_at)
{
	int n = dev_of_path(path);

	/* A program's round mark (STANDIN_FAIL counts from the latest). */
	if (path && sysfs() && !strcmp(path, ROUND_MARK)) {
		pthread_mutex_lock(&lock);
		round_no++;
		ncmds = 0;
		sti_log("round %d", round_no);
		pthread_mutex_unlock(&lock);
		errno = ENOENT;
		return -1;
	}
	if (n >= 0)
		return open_dev(n, flags);
	if (is_at)
		return (int)syscall(SYS_openat, dirfd, path, flags, mode);
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static int ret_errno(long r)
{
	return (int)r;
}

#define OPEN_MODE(flags, mode)                                                 \
	do {                                                                   \
		if ((flags) & (O_CREAT | O_TMPFILE)) {                         \
			va_list ap;                                            \
			va_start(ap, flags);                                   \
			mode = va_arg(ap, mode_t);                             \
			va_end(ap);                                            \
		}                                                              \
	} while (0)

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE(flags, mode);
	return ret_errno(do_open(AT_FDCWD, path, flags, mode, 0));
}
int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE(flags, mode);
	return do_open(AT_FDCWD, path, flags, mode, 0);
}
int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE(flags, mode);
	return do_open(dirfd, path, flags, mode, 1);
}
int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE(flags, mode);
	return do_open(dirfd, path, flags, mode, 1);
}
int __open_2(const char *path, int flags)
{
	return do_open(AT_FDCWD, path, flags, 0, 0);
}
int __open64_2(const char *path, int flags)
{
	return do_open(AT_FDCWD, path, flags, 0, 0);
}
int __openat_2(int dirfd, const char *path, int flags)
{
	return do_open(dirfd, path, flags, 0, 1);
}
int __openat64_2(int dirfd, const char *path, int flags)
{
	return do_open(dirfd, path, flags, 0, 1);
}

/* ---- close ---- */
int close(int fd)
{
	struct sti_ctx *c;

	pthread_mutex_lock(&lock);
	c = ctx_of_fd(fd);
	if (c) {
		for (int i = 0; i < MAX_CTX; i++)
			if (ctxs[i] == c)
				ctxs[i] = NULL;
		sti_log("close uverbs%d", c->dev.index);
		sti_ctx_release(c);
		free(c);
	}
	pthread_mutex_unlock(&lock);
	sti_nl_close(fd);
	load_close();
	return real_close(fd);
}

/* ---- commands ---- */
/* Counts a command; true when it is to fail (errno set, logged). */
static int injected(struct sti_ctx *c)
{
	config();
	ncmds++;
	/* With round marks, commands count from the latest one, and the
	 * first round (a warm-up) gets no fault. */
	if (round_no == 1)
		return 0;
	if (fail_at && (long)ncmds == fail_at) {
		if (!fail_err) {
			sti_log("inject %lu fatal", ncmds);
			sti_fatal(c);
		} else {
			sti_log("inject %lu errno=%d", ncmds, fail_err);
			errno = fail_err;
			return 1;
		}
	}
	if (fail_at && !fail_err && (long)ncmds >= fail_at) {
		errno = EIO;
		return 1;
	}
	return 0;
}

int ioctl(int fd, unsigned long req, ...)
{
	struct sti_ctx *c;
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	pthread_mutex_lock(&lock);
	c = ctx_of_fd(fd);
	if (!c) {
		pthread_mutex_unlock(&lock);
		load_ioctl();
		return real_ioctl(fd, req, arg);
	}
	config();
	if (req != RDMA_VERBS_IOCTL || write_only) {
		sti_log("ioctl 0x%lx -> ENOTTY", req);
		pthread_mutex_unlock(&lock);
		errno = ENOTTY;
		return -1;
	}
	if (injected(c)) {
		int e = errno;
		struct ib_uverbs_ioctl_hdr *h = arg;
		sti_log("ioctl obj=0x%x meth=0x%x -> failed %d", h->object_id, h->method_id, e);
		pthread_mutex_unlock(&lock);
		errno = e;
		return -1;
	}
	r = sti_uverbs_ioctl(c, arg);
	pthread_mutex_unlock(&lock);
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	struct sti_ctx *c;
	ssize_t r;

	pthread_mutex_lock(&lock);
	c = ctx_of_fd(fd);
	if (!c) {
		pthread_mutex_unlock(&lock);
		load_write();
		return real_write(fd, buf, len);
	}
	if (injected(c)) {
		int e = errno;
		const uint32_t *cmd = buf;
		sti_log("write cmd=0x%x -> failed %d", len >= 4 ? cmd[0] : 0, e);
		pthread_mutex_unlock(&lock);
		errno = e;
		return -1;
	}
	r = sti_uverbs_write(c, buf, len);
	pthread_mutex_unlock(&lock);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* ---- mmap ---- */
static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct sti_ctx *c;
	void *p;
	int err, i;

	pthread_mutex_lock(&lock);
	c = ctx_of_fd(fd);
	if (!c) {
		pthread_mutex_unlock(&lock);
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	}
	/* Device pages: memory that takes the doorbell writes and reads as
	 * the driver model fills it (zero unless it says otherwise). */
	p = (void *)syscall(SYS_mmap, addr, len, prot | PROT_READ | PROT_WRITE,
			    (flags & MAP_FIXED) | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	err = p == MAP_FAILED ? errno : 0;
	if (!err && c->dev.drv->mmap)
		err = c->dev.drv->mmap(c, (uint64_t)off, len, p);
	if (!err && !(prot & PROT_WRITE))
		mprotect(p, len, prot);
	sti_log("mmap uverbs%d len=0x%zx prot=%d flags=0x%x off=0x%llx -> %d", c->dev.index, len, prot,
		flags & ~MAP_FIXED, (unsigned long long)off, err);
	if (err) {
		if (p != MAP_FAILED)
			syscall(SYS_munmap, p, len);
		pthread_mutex_unlock(&lock);
		errno = err;
		return MAP_FAILED;
	}
	for (i = 0; i < MAX_MAPS && maps[i].used; i++)
		;
	if (i < MAX_MAPS)
		maps[i] = (struct map){ p, len, (uint64_t)off, 1 };
	pthread_mutex_unlock(&lock);
	return p;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off);
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_MAPS; i++)
		if (maps[i].used && maps[i].addr == addr) {
			sti_log("munmap len=0x%zx off=0x%llx", len, (unsigned long long)maps[i].off);
			maps[i].used = 0;
		}
	pthread_mutex_unlock(&lock);
	return (int)syscall(SYS_munmap, addr, len);
}

/* ---- stat: the char devices ---- */
static void fake_stat(struct stat *st, int n)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFCHR | 0666;
	st->st_rdev = makedev(UVERBS_MAJOR, (unsigned)n);
	st->st_dev = makedev(0, 5);
	st->st_nlink = 1;
	st->st_blksize = 4096;
}

static int fd_dev(int fd)
{
	struct sti_ctx *c;
	int n = -1;

	pthread_mutex_lock(&lock);
	c = ctx_of_fd(fd);
	if (c)
		n = c->dev.index;
	pthread_mutex_unlock(&lock);
	return n;
}

int fstat(int fd, struct stat *st)
{
	int n = fd_dev(fd);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load_fstat();
	return real_fstat(fd, st);
}
int fstat64(int fd, struct stat64 *st)
{
	return fstat(fd, (struct stat *)st);
}

int __fxstat(int ver, int fd, struct stat *st)
{
	int n = fd_dev(fd);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load___fxstat();
	return real___fxstat(ver, fd, st);
}
int __fxstat64(int ver, int fd, struct stat *st) __attribute__((alias("__fxstat")));

static int path_or_fd_dev(int dirfd, const char *path, int flags)
{
	if (path && !*path && (flags & AT_EMPTY_PATH))
		return fd_dev(dirfd);
	return dev_of_path(path);
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	int n = path_or_fd_dev(dirfd, path, flags);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load_fstatat();
	return real_fstatat(dirfd, path, st, flags);
}
int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	return fstatat(dirfd, path, (struct stat *)st, flags);
}

int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	int n = path_or_fd_dev(dirfd, path, flags);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load___fxstatat();
	return real___fxstatat(ver, dirfd, path, st, flags);
}
int __fxstatat64(int ver, int dirfd, const char *path, struct stat *st, int flags)
	__attribute__((alias("__fxstatat")));

int stat(const char *path, struct stat *st)
{
	int n = dev_of_path(path);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load_stat();
	return real_stat(path, st);
}
int stat64(const char *path, struct stat64 *st)
{
	return stat(path, (struct stat *)st);
}

int lstat(const char *path, struct stat *st)
{
	int n = dev_of_path(path);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load_lstat();
	return real_lstat(path, st);
}
int lstat64(const char *path, struct stat64 *st)
{
	return lstat(path, (struct stat *)st);
}

int __xstat(int ver, const char *path, struct stat *st)
{
	int n = dev_of_path(path);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load___xstat();
	return real___xstat(ver, path, st);
}
int __xstat64(int ver, const char *path, struct stat *st) __attribute__((alias("__xstat")));

int __lxstat(int ver, const char *path, struct stat *st)
{
	int n = dev_of_path(path);
	if (n >= 0) {
		fake_stat(st, n);
		return 0;
	}
	load___lxstat();
	return real___lxstat(ver, path, st);
}
int __lxstat64(int ver, const char *path, struct stat *st) __attribute__((alias("__lxstat")));

int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
	int n = path_or_fd_dev(dirfd, path, flags);
	if (n >= 0) {
		memset(sx, 0, sizeof(*sx));
		sx->stx_mask = STATX_BASIC_STATS;
		sx->stx_mode = S_IFCHR | 0666;
		sx->stx_nlink = 1;
		sx->stx_blksize = 4096;
		sx->stx_rdev_major = UVERBS_MAJOR;
		sx->stx_rdev_minor = (unsigned)n;
		sx->stx_dev_minor = 5;
		return 0;
	}
	load_statx();
	return real_statx(dirfd, path, flags, mask, sx);
}

/* ---- netlink: no RDMA netlink on this "kernel", unless STANDIN_NETLINK=1
 * (netlink.c answers it then) ---- */
int socket(int domain, int type, int protocol)
{
	if (sysfs() && domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		if (sti_nl_enabled())
			return sti_nl_socket(type);
		errno = EPROTONOSUPPORT;
		return -1;
	}
	load_socket();
	return real_socket(domain, type, protocol);
}
