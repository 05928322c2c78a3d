/*
 * RDMA netlink (NETLINK_RDMA) for the stand-in, when STANDIN_NETLINK=1:
 * the kernel's answers to device discovery, built from the sysfs fixture.
 *
 * A "netlink socket" is one end of a socketpair(AF_UNIX, SOCK_SEQPACKET):
 * the process sends its requests on it (sendmsg/sendto/send, caught here
 * and answered), and the answers are written, one datagram each as the
 * kernel sends them, to the other end, so that the process's reads of its
 * end work natively.  recvmsg/recvfrom are caught only to give the sender's
 * address as the kernel's (a sockaddr_nl with port id 0), which libnl
 * checks; bind/getsockname/setsockopt(SOL_NETLINK) keep the socket's
 * netlink address and options.
 *
 * Answered (rdma/rdma_netlink.h, RDMA_NL_NLDEV):
 *   RDMA_NLDEV_CMD_GET          dump: one message per fixture device
 *                               (NLM_F_MULTI), then NLMSG_DONE in a datagram
 *                               of its own; with DEV_INDEX: that device
 *   RDMA_NLDEV_CMD_GET_CHARDEV  "uverbs" of a device: its driver id, char
 *                               device (231:N), ABI, name uverbsN
 *   RDMA_NLDEV_CMD_SYS_GET      netns mode shared, copy-on-fork 1
 * Anything else: NLMSG_ERROR -EINVAL (the request echoed, as the kernel
 * does); an ACK (NLMSG_ERROR 0, header only, NLM_F_CAPPED) after a
 * non-dump request that asked for one.  Dumps are never ACKed.
 *
 * The fixture: each $SYSFS_PATH/class/infiniband_verbs/uverbsN (ibdev,
 * dev, abi_version) is the device of index N; its
 * $SYSFS_PATH/class/infiniband/<ibdev>/ gives node_guid, sys_image_guid,
 * node_type, fw_ver, ports/ (the port count) and the port's link_layer;
 * standin_driver_id there (a number, or "-": the kernel sends none, as for
 * drivers with uverbs_no_driver_id_binding) overrides the driver id of the
 * driver model (STANDIN_DRIVER, else the ibdev name).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "standin.h"

#define MAX_NL 16

struct nlsock {
	int fd, peer;   /* the process's end, the end the answers go to */
	uint32_t portid; /* 0 until bound */
};

static struct nlsock socks[MAX_NL];
static pthread_mutex_t nl_lock = PTHREAD_MUTEX_INITIALIZER;
static int autobind_next = -4097;

static struct nlsock *find(int fd)
{
	if (fd < 0)
		return NULL;
	for (int i = 0; i < MAX_NL; i++)
		if (socks[i].fd == fd && socks[i].peer > 0)
			return &socks[i];
	return NULL;
}

int sti_nl_enabled(void)
{
	const char *s = getenv("STANDIN_NETLINK");
	return s && *s == '1';
}

int sti_nl_is(int fd)
{
	int r;

	pthread_mutex_lock(&nl_lock);
	r = find(fd) != NULL;
	pthread_mutex_unlock(&nl_lock);
	return r;
}

int sti_nl_socket(int type)
{
	int sv[2], i;
	int flags = type & (SOCK_CLOEXEC | SOCK_NONBLOCK);

	if ((type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) != SOCK_RAW &&
	    (type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) != SOCK_DGRAM) {
		errno = ESOCKTNOSUPPORT;
		return -1;
	}
	if (syscall(SYS_socketpair, AF_UNIX, SOCK_SEQPACKET | flags, 0, sv))
		return -1;
	/* The answers' end never blocks the stand-in. */
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFD, FD_CLOEXEC);
	pthread_mutex_lock(&nl_lock);
	for (i = 0; i < MAX_NL && socks[i].peer > 0; i++)
		;
	if (i == MAX_NL) {
		pthread_mutex_unlock(&nl_lock);
		sti_real_close(sv[0]);
		sti_real_close(sv[1]);
		errno = ENOBUFS;
		return -1;
	}
	socks[i] = (struct nlsock){ .fd = sv[0], .peer = sv[1], .portid = 0 };
	pthread_mutex_unlock(&nl_lock);
	sti_log("netlink socket");
	return sv[0];
}

/* Before the process's close of `fd`. */
void sti_nl_close(int fd)
{
	struct nlsock *s;

	pthread_mutex_lock(&nl_lock);
	s = find(fd);
	if (s) {
		sti_real_close(s->peer);
		s->peer = 0;
		s->fd = -1;
	}
	pthread_mutex_unlock(&nl_lock);
}

static int portid_taken(uint32_t p)
{
	for (int i = 0; i < MAX_NL; i++)
		if (socks[i].peer > 0 && socks[i].portid == p)
			return 1;
	return 0;
}

/* The kernel's autobind: the process id first, then negative ids. */
static void autobind(struct nlsock *s)
{
	if (s->portid)
		return;
	if (!portid_taken((uint32_t)getpid()))
		s->portid = (uint32_t)getpid();
	else
		s->portid = (uint32_t)autobind_next--;
}

/* ---- the fixture ---- */
static const char *sysfs(void)
{
	const char *s = getenv("SYSFS_PATH");
	return s && *s ? s : NULL;
}

/* The first line of a fixture file, without its newline; -1 if none. */
static int read_line(char *out, size_t sz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int read_line(char *out, size_t sz, const char *fmt, ...)
{
	char p[PATH_MAX];
	va_list ap;
	ssize_t r;
	int fd;

	out[0] = 0;
	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = read(fd, out, sz - 1);
	sti_real_close(fd);
	if (r < 0)
		r = 0;
	out[r] = 0;
	out[strcspn(out, "\n")] = 0;
	return 0;
}

/* "0002:c903:00a1:b200" as the kernel gives it (be64_to_cpu of the GUID). */
static uint64_t parse_guid(const char *s)
{
	unsigned a, b, c, d;

	if (sscanf(s, "%x:%x:%x:%x", &a, &b, &c, &d) != 4)
		return 0;
	return ((uint64_t)a << 48) | ((uint64_t)b << 32) | ((uint64_t)c << 16) | d;
}

struct nldev {
	int index;            /* N of uverbsN: also the device index */
	char ibdev[64];
	unsigned major, minor;
	uint64_t abi;
	uint64_t node_guid, sys_image_guid;
	uint8_t node_type;
	uint32_t ports;
	int has_driver_id;
	uint32_t driver_id;
	char fw[64];
	char proto[8];
};

static int load_dev(int n, struct nldev *d)
{
	const char *root = sysfs();
	char buf[128];
	DIR *dir;
	struct dirent *e;

	memset(d, 0, sizeof(*d));
	d->index = n;
	if (!root || read_line(d->ibdev, sizeof(d->ibdev), "%s/class/infiniband_verbs/uverbs%d/ibdev", root, n) ||
	    !d->ibdev[0])
		return -1;
	d->major = 231;
	d->minor = (unsigned)n;
	if (!read_line(buf, sizeof(buf), "%s/class/infiniband_verbs/uverbs%d/dev", root, n))
		sscanf(buf, "%u:%u", &d->major, &d->minor);
	if (!read_line(buf, sizeof(buf), "%s/class/infiniband_verbs/uverbs%d/abi_version", root, n))
		d->abi = strtoull(buf, NULL, 10);
	if (!read_line(buf, sizeof(buf), "%s/class/infiniband/%s/node_guid", root, d->ibdev))
		d->node_guid = parse_guid(buf);
	if (!read_line(buf, sizeof(buf), "%s/class/infiniband/%s/sys_image_guid", root, d->ibdev))
		d->sys_image_guid = parse_guid(buf);
	d->node_type = 1;
	if (!read_line(buf, sizeof(buf), "%s/class/infiniband/%s/node_type", root, d->ibdev))
		d->node_type = (uint8_t)atoi(buf);
	read_line(d->fw, sizeof(d->fw), "%s/class/infiniband/%s/fw_ver", root, d->ibdev);
	snprintf(buf, sizeof(buf), "%s/class/infiniband/%s/ports", root, d->ibdev);
	/* opendir() reaches openat through glibc's own calls: not ours. */
	dir = opendir(buf);
	if (dir) {
		while ((e = readdir(dir))) {
			int p = atoi(e->d_name);
			if (p > 0 && (uint32_t)p > d->ports)
				d->ports = (uint32_t)p;
		}
		closedir(dir);
	}
	if (!read_line(buf, sizeof(buf), "%s/class/infiniband/%s/ports/1/link_layer", root, d->ibdev) &&
	    !strcmp(buf, "Ethernet"))
		strcpy(d->proto, d->node_type == 4 ? "iw" : "roce");
	else
		strcpy(d->proto, d->node_type == 4 ? "iw" : "ib");
	if (!read_line(buf, sizeof(buf), "%s/class/infiniband/%s/standin_driver_id", root, d->ibdev)) {
		if (strcmp(buf, "-")) {
			d->has_driver_id = 1;
			d->driver_id = (uint32_t)strtoul(buf, NULL, 0);
		}
	} else {
		const char *dn = getenv("STANDIN_DRIVER");
		d->has_driver_id = 1;
		d->driver_id = sti_driver_find(dn && *dn ? dn : d->ibdev)->driver_id;
	}
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The fixture's uverbsN numbers, ascending (the kernel's index order). */
static int list_devs(int *out, int max)
{
	char p[PATH_MAX];
	struct dirent *e;
	DIR *dir;
	int n = 0, k, pos;

	if (!sysfs())
		return 0;
	snprintf(p, sizeof(p), "%s/class/infiniband_verbs", sysfs());
	dir = opendir(p);
	if (!dir)
		return 0;
	while ((e = readdir(dir)) && n < max)
		if (sscanf(e->d_name, "uverbs%d%n", &k, &pos) == 1 && !e->d_name[pos] && k >= 0)
			out[n++] = k;
	closedir(dir);
	qsort(out, (size_t)n, sizeof(int), cmp_int);
	return n;
}

/* ---- messages ---- */
struct msgbuf {
	uint8_t b[8192];
	size_t len;
	size_t start; /* the message being built */
};

static struct nlmsghdr *msg_begin(struct msgbuf *m, uint16_t type, uint16_t flags, uint32_t seq, uint32_t pid)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(m->b + m->len);

	m->start = m->len;
	memset(h, 0, sizeof(*h));
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	h->nlmsg_pid = pid;
	m->len += NLMSG_HDRLEN;
	return h;
}

static void msg_end(struct msgbuf *m)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(m->b + m->start);
	h->nlmsg_len = (uint32_t)(m->len - m->start);
	m->len = NLMSG_ALIGN(m->len);
}

static void put(struct msgbuf *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)(m->b + m->len);
	size_t pad = NLA_ALIGN(NLA_HDRLEN + len) - (NLA_HDRLEN + len);

	if (m->len + NLA_HDRLEN + len + pad > sizeof(m->b))
		return;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	a->nla_type = type;
	memcpy((uint8_t *)a + NLA_HDRLEN, data, len);
	memset((uint8_t *)a + NLA_HDRLEN + len, 0, pad);
	m->len += NLA_HDRLEN + len + pad;
}

static void put_u8(struct msgbuf *m, uint16_t t, uint8_t v) { put(m, t, &v, 1); }
static void put_u32(struct msgbuf *m, uint16_t t, uint32_t v) { put(m, t, &v, 4); }
static void put_u64(struct msgbuf *m, uint16_t t, uint64_t v) { put(m, t, &v, 8); }
static void put_str(struct msgbuf *m, uint16_t t, const char *s) { put(m, t, s, strlen(s) + 1); }

/* One datagram to the process. */
static void deliver(struct nlsock *s, struct msgbuf *m)
{
	if (m->len)
		syscall(SYS_sendto, s->peer, m->b, m->len, MSG_DONTWAIT, NULL, 0);
	m->len = 0;
}

/* NLMSG_ERROR: an ACK (err 0: the header only) or an error (the request
 * echoed), in a datagram of its own. */
static void ack(struct nlsock *s, const struct nlmsghdr *req, int err)
{
	struct msgbuf m = { .len = 0 };
	size_t echo = err ? req->nlmsg_len : NLMSG_HDRLEN;
	struct nlmsgerr e;

	if (echo > sizeof(m.b) - 64)
		echo = NLMSG_HDRLEN;
	msg_begin(&m, NLMSG_ERROR, err ? 0 : NLM_F_CAPPED, req->nlmsg_seq, s->portid);
	e.error = err;
	memcpy(m.b + m.len, &e.error, sizeof(e.error));
	m.len += sizeof(e.error);
	memcpy(m.b + m.len, req, echo);
	if (echo == NLMSG_HDRLEN)
		((struct nlmsghdr *)(m.b + m.len))->nlmsg_len = req->nlmsg_len;
	m.len += echo;
	msg_end(&m);
	deliver(s, &m);
}

static void fill_dev(struct msgbuf *m, const struct nldev *d)
{
	uint64_t zero = 0;

	put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)d->index);
	put_str(m, RDMA_NLDEV_ATTR_DEV_NAME, d->ibdev);
	put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, d->ports);
	put_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, zero);
	if (d->fw[0])
		put_str(m, RDMA_NLDEV_ATTR_FW_VERSION, d->fw);
	put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, d->node_guid);
	put_u64(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, d->sys_image_guid);
	put_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, d->node_type);
	put_u8(m, RDMA_NLDEV_ATTR_DEV_DIM, 0);
	put_str(m, RDMA_NLDEV_ATTR_DEV_PROTOCOL, d->proto);
}

/* The request's attributes of interest. */
struct req_attrs {
	int has_index;
	uint32_t index;
	char type[32];
};

static void parse_req(const struct nlmsghdr *h, struct req_attrs *ra)
{
	const uint8_t *p = (const uint8_t *)h + NLMSG_HDRLEN;
	size_t left = h->nlmsg_len - NLMSG_HDRLEN;

	memset(ra, 0, sizeof(*ra));
	while (left >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)p;
		size_t l = a->nla_len, dl;
		if (l < NLA_HDRLEN || l > left)
			break;
		dl = l - NLA_HDRLEN;
		switch (a->nla_type & NLA_TYPE_MASK) {
		case RDMA_NLDEV_ATTR_DEV_INDEX:
			if (dl >= 4) {
				memcpy(&ra->index, p + NLA_HDRLEN, 4);
				ra->has_index = 1;
			}
			break;
		case RDMA_NLDEV_ATTR_CHARDEV_TYPE:
			if (dl >= sizeof(ra->type))
				dl = sizeof(ra->type) - 1;
			memcpy(ra->type, p + NLA_HDRLEN, dl);
			ra->type[dl] = 0;
			break;
		}
		if (NLA_ALIGN(l) >= left)
			break;
		left -= NLA_ALIGN(l);
		p += NLA_ALIGN(l);
	}
}

/* One request: its answer delivered; returns the error for the ACK (0). */
static int handle(struct nlsock *s, const struct nlmsghdr *h)
{
	uint16_t op = h->nlmsg_type & ((1 << 10) - 1);
	int client = h->nlmsg_type >> 10;
	int dump = (h->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	struct msgbuf m = { .len = 0 };
	struct req_attrs ra;
	struct nldev d;

	parse_req(h, &ra);
	if (client != RDMA_NL_NLDEV) {
		sti_log("netlink client=%d op=%u: EINVAL", client, op);
		return -EINVAL;
	}
	switch (op) {
	case RDMA_NLDEV_CMD_GET:
		if (dump) {
			int ns[64], n = list_devs(ns, 64), sent = 0;
			for (int i = 0; i < n; i++) {
				if (load_dev(ns[i], &d))
					continue;
				msg_begin(&m, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), NLM_F_MULTI,
					  h->nlmsg_seq, s->portid);
				fill_dev(&m, &d);
				msg_end(&m);
				sent++;
			}
			deliver(s, &m);
			msg_begin(&m, NLMSG_DONE, NLM_F_MULTI, h->nlmsg_seq, s->portid);
			memset(m.b + m.len, 0, 4);
			m.len += 4;
			msg_end(&m);
			deliver(s, &m);
			sti_log("netlink GET dump: %d devices", sent);
			return 1; /* dumps are never ACKed */
		}
		if (!ra.has_index || load_dev((int)ra.index, &d)) {
			sti_log("netlink GET index=%d: EINVAL", ra.has_index ? (int)ra.index : -1);
			return -EINVAL;
		}
		msg_begin(&m, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0, h->nlmsg_seq, s->portid);
		fill_dev(&m, &d);
		msg_end(&m);
		deliver(s, &m);
		sti_log("netlink GET index=%u: %s", ra.index, d.ibdev);
		return 0;
	case RDMA_NLDEV_CMD_GET_CHARDEV: {
		uint64_t cdev;
		char name[32];
		if (dump) {
			sti_log("netlink GET_CHARDEV dump: EOPNOTSUPP");
			return -EOPNOTSUPP;
		}
		if (!ra.type[0]) {
			sti_log("netlink GET_CHARDEV no type: EINVAL");
			return -EINVAL;
		}
		if (ra.has_index && load_dev((int)ra.index, &d)) {
			sti_log("netlink GET_CHARDEV index=%u type=%s: EINVAL", ra.index, ra.type);
			return -EINVAL;
		}
		/* uverbs has no global (device-less) answer; no other client
		 * is modelled. */
		if (strcmp(ra.type, "uverbs") || !ra.has_index) {
			sti_log("netlink GET_CHARDEV index=%d type=%s: EOPNOTSUPP",
				ra.has_index ? (int)ra.index : -1, ra.type);
			return -EOPNOTSUPP;
		}
		msg_begin(&m, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV), 0, h->nlmsg_seq,
			  s->portid);
		if (d.has_driver_id)
			put_u32(&m, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, d.driver_id);
		/* huge_encode_dev() */
		cdev = (d.minor & 0xff) | ((uint64_t)d.major << 8) | ((uint64_t)(d.minor & ~0xffu) << 12);
		put_u64(&m, RDMA_NLDEV_ATTR_CHARDEV, cdev);
		put_u64(&m, RDMA_NLDEV_ATTR_CHARDEV_ABI, d.abi);
		snprintf(name, sizeof(name), "uverbs%d", d.index);
		put_str(&m, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
		msg_end(&m);
		deliver(s, &m);
		if (d.has_driver_id)
			sti_log("netlink GET_CHARDEV index=%u type=uverbs: %s %u:%u abi=%llu driver_id=%u", ra.index,
				name, d.major, d.minor, (unsigned long long)d.abi, d.driver_id);
		else
			sti_log("netlink GET_CHARDEV index=%u type=uverbs: %s %u:%u abi=%llu no driver_id", ra.index,
				name, d.major, d.minor, (unsigned long long)d.abi);
		return 0;
	}
	case RDMA_NLDEV_CMD_SYS_GET:
		msg_begin(&m, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), 0, h->nlmsg_seq, s->portid);
		put_u8(&m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1);
		put_u8(&m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
		msg_end(&m);
		deliver(s, &m);
		sti_log("netlink SYS_GET: copy_on_fork=1");
		return 0;
	default:
		sti_log("netlink op=%u%s: EINVAL", op, dump ? " dump" : "");
		return -EINVAL;
	}
}

/* The process sends `len` bytes of requests on `s`. */
static ssize_t requests(struct nlsock *s, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	autobind(s);
	while (len - off >= NLMSG_HDRLEN) {
		struct nlmsghdr h;
		int err = 0;
		memcpy(&h, buf + off, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len - off)
			break;
		if ((h.nlmsg_flags & NLM_F_REQUEST) && h.nlmsg_type >= NLMSG_MIN_TYPE) {
			/* aligned copy */
			uint64_t copy[1024];
			const struct nlmsghdr *hp = (const struct nlmsghdr *)(buf + off);
			if (h.nlmsg_len <= sizeof(copy)) {
				memcpy(copy, buf + off, h.nlmsg_len);
				hp = (const struct nlmsghdr *)copy;
				err = handle(s, hp);
			} else {
				err = -EINVAL;
			}
			if (err < 0 || (err == 0 && (h.nlmsg_flags & NLM_F_ACK)))
				ack(s, hp, err);
		} else if (h.nlmsg_flags & NLM_F_ACK) {
			ack(s, (const struct nlmsghdr *)(buf + off), 0);
		}
		off += NLMSG_ALIGN(h.nlmsg_len);
		if (off >= len)
			break;
	}
	return (ssize_t)len;
}

/* ---- the interposed socket calls ---- */
#define NEXT(ret, name, ...)                                                   \
	static ret (*next_##name)(__VA_ARGS__);                                \
	static void load_##name(void)                                         \
	{                                                                      \
		if (!next_##name)                                              \
			next_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name); \
	}
NEXT(int, bind, int, const struct sockaddr *, socklen_t)
NEXT(int, getsockname, int, struct sockaddr *, socklen_t *)
NEXT(int, setsockopt, int, int, int, const void *, socklen_t)
NEXT(ssize_t, sendmsg, int, const struct msghdr *, int)
NEXT(ssize_t, sendto, int, const void *, size_t, int, const struct sockaddr *, socklen_t)
NEXT(ssize_t, send, int, const void *, size_t, int)
NEXT(ssize_t, recvmsg, int, struct msghdr *, int)
NEXT(ssize_t, recvfrom, int, void *, size_t, int, struct sockaddr *, socklen_t *)

static void kernel_addr(void *name, socklen_t *namelen)
{
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };
	socklen_t n;

	if (!name || !namelen)
		return;
	n = *namelen < sizeof(k) ? *namelen : (socklen_t)sizeof(k);
	memcpy(name, &k, n);
	*namelen = sizeof(k);
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct nlsock *s;

	pthread_mutex_lock(&nl_lock);
	s = find(fd);
	if (s) {
		const struct sockaddr_nl *nl = (const struct sockaddr_nl *)sa;
		int r = 0;
		if (!sa || len < sizeof(*nl) || nl->nl_family != AF_NETLINK) {
			errno = EINVAL;
			r = -1;
		} else if (nl->nl_pid && s->portid && nl->nl_pid != s->portid) {
			errno = EINVAL;
			r = -1;
		} else if (nl->nl_pid && !s->portid && portid_taken(nl->nl_pid)) {
			errno = EADDRINUSE;
			r = -1;
		} else if (nl->nl_pid) {
			s->portid = nl->nl_pid;
		} else {
			autobind(s);
		}
		pthread_mutex_unlock(&nl_lock);
		return r;
	}
	pthread_mutex_unlock(&nl_lock);
	load_bind();
	return next_bind(fd, sa, len);
}

int getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct nlsock *s;

	pthread_mutex_lock(&nl_lock);
	s = find(fd);
	if (s) {
		struct sockaddr_nl me = { .nl_family = AF_NETLINK, .nl_pid = s->portid };
		socklen_t n;
		pthread_mutex_unlock(&nl_lock);
		if (!len) {
			errno = EFAULT;
			return -1;
		}
		n = *len < sizeof(me) ? *len : (socklen_t)sizeof(me);
		memcpy(sa, &me, n);
		*len = sizeof(me);
		return 0;
	}
	pthread_mutex_unlock(&nl_lock);
	load_getsockname();
	return next_getsockname(fd, sa, len);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	/* SOL_NETLINK options (NETLINK_EXT_ACK, NETLINK_CAP_ACK, groups...)
	 * are accepted and change nothing; SOL_SOCKET ones (buffer sizes) go
	 * to the socket pair. */
	if (level == SOL_NETLINK && sti_nl_is(fd))
		return 0;
	load_setsockopt();
	return next_setsockopt(fd, level, name, val, len);
}

static ssize_t send_on(int fd, const void *buf, size_t len, int *handled)
{
	struct nlsock *s;
	ssize_t r = 0;

	pthread_mutex_lock(&nl_lock);
	s = find(fd);
	*handled = s != NULL;
	if (s)
		r = requests(s, buf, len);
	pthread_mutex_unlock(&nl_lock);
	return r;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	int handled;

	if (sti_nl_is(fd)) {
		uint8_t buf[16384];
		size_t len = 0;
		for (size_t i = 0; msg && i < msg->msg_iovlen; i++) {
			size_t n = msg->msg_iov[i].iov_len;
			if (len + n > sizeof(buf)) {
				errno = EMSGSIZE;
				return -1;
			}
			memcpy(buf + len, msg->msg_iov[i].iov_base, n);
			len += n;
		}
		ssize_t r = send_on(fd, buf, len, &handled);
		if (handled)
			return r;
	}
	load_sendmsg();
	return next_sendmsg(fd, msg, flags);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	int handled;
	ssize_t r = send_on(fd, buf, len, &handled);

	if (handled)
		return r;
	load_sendto();
	return next_sendto(fd, buf, len, flags, to, tolen);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	int handled;
	ssize_t r = send_on(fd, buf, len, &handled);

	if (handled)
		return r;
	load_send();
	return next_send(fd, buf, len, flags);
}

/* Reads work on the socket pair; only the sender's address is the kernel's. */
ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t r;

	load_recvmsg();
	r = next_recvmsg(fd, msg, flags);
	if (r >= 0 && msg && msg->msg_name && sti_nl_is(fd))
		kernel_addr(msg->msg_name, &msg->msg_namelen);
	return r;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	ssize_t r;

	load_recvfrom();
	r = next_recvfrom(fd, buf, len, flags, from, fromlen);
	if (r >= 0 && from && sti_nl_is(fd))
		kernel_addr(from, fromlen);
	return r;
}
