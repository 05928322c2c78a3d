/* compat-tests/soft-rdmacm/rsecho.c: a plain TCP echo (over 127.0.0.1, or
 * the IPv4 address ADDR) for the rsockets preload check (librspreload.so
 * from librdmacm1).
 *
 *   rsecho server PORT BYTES [ADDR]
 *                              accepts one connection on 127.0.0.1:PORT,
 *                              reads BYTES, checks them, writes them back,
 *                              waits for the client's close
 *   rsecho client PORT BYTES [ADDR]
 *                              connects to 127.0.0.1:PORT, sends BYTES of a
 *                              pattern, reads them back and compares
 *
 * It calls socket(AF_INET, SOCK_STREAM, 0), bind, listen, accept, connect,
 * read and write exactly: librspreload turns only those into rsockets.
 * Python and Perl are no use here: both ask for SOCK_STREAM|SOCK_CLOEXEC
 * (rsocket() refuses any flag in the type, and librspreload then quietly
 * hands the socket to the kernel) and Python accepts with accept4(), which
 * librspreload does not take.  So that a quiet fallback to kernel TCP cannot
 * pass, each connected socket must answer getsockopt(SOL_RDMA, RDMA_INLINE),
 * which only an rsocket does (the kernel has no SOL_RDMA).
 * Exit status 0 only when all of it held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *role;

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

static void die(const char *what)
{
	fprintf(stderr, "rsecho %s: %s: %s\n", role, what, strerror(errno));
	exit(1);
}

static void must_be_rsocket(int fd)
{
	int val = 0;
	socklen_t len = sizeof(val);

	if (getsockopt(fd, SOL_RDMA, RDMA_INLINE, &val, &len)) {
		fprintf(stderr, "rsecho %s: not an rsocket (getsockopt SOL_RDMA: %s): "
			"librspreload left it to the kernel's TCP\n", role, strerror(errno));
		exit(3);
	}
}

static void read_all(int fd, unsigned char *buf, size_t n)
{
	size_t off = 0;
	ssize_t r;

	while (off < n) {
		r = read(fd, buf + off, n - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read");
		if (r == 0) {
			fprintf(stderr, "rsecho %s: end of stream after %zu of %zu bytes\n",
				role, off, n);
			exit(1);
		}
		off += (size_t)r;
	}
}

static void write_all(int fd, const unsigned char *buf, size_t n)
{
	size_t off = 0;
	ssize_t w;

	while (off < n) {
		w = write(fd, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		off += (size_t)w;
	}
}

static void check(const unsigned char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (buf[i] != pattern(i)) {
			fprintf(stderr, "rsecho %s: byte %zu is 0x%02x, not 0x%02x\n",
				role, i, buf[i], pattern(i));
			exit(2);
		}
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin;
	unsigned char *buf, c;
	size_t n, i;
	int fd, cfd, one = 1;
	ssize_t r;

	if ((argc != 4 && argc != 5) || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: rsecho server|client PORT BYTES [ADDR]\n");
		return 64;
	}
	role = argv[1];
	n = strtoul(argv[3], NULL, 0);
	buf = malloc(n ? n : 1);
	if (!buf)
		die("malloc");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)atoi(argv[2]));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (argc == 5 && inet_pton(AF_INET, argv[4], &sin.sin_addr) != 1) {
		fprintf(stderr, "rsecho: bad address %s\n", argv[4]);
		return 64;
	}

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (!strcmp(role, "server")) {
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
			die("setsockopt SO_REUSEADDR");
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
			die("bind");
		if (listen(fd, 1))
			die("listen");
		cfd = accept(fd, NULL, NULL);
		if (cfd < 0)
			die("accept");
		must_be_rsocket(cfd);
		read_all(cfd, buf, n);
		check(buf, n);
		write_all(cfd, buf, n);
		/* The client closes first, once it has everything back. */
		r = read(cfd, &c, 1);
		if (r != 0) {
			fprintf(stderr, "rsecho server: expected the client's close, read gave %zd\n", r);
			return 1;
		}
		close(cfd);
		close(fd);
		printf("rsecho server: %zu bytes received, checked and echoed on an rsocket\n", n);
	} else {
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			die("connect");
		must_be_rsocket(fd);
		for (i = 0; i < n; i++)
			buf[i] = pattern(i);
		write_all(fd, buf, n);
		memset(buf, 0, n);
		read_all(fd, buf, n);
		check(buf, n);
		close(fd);
		printf("rsecho client: %zu bytes sent, echoed back and checked on an rsocket\n", n);
	}
	free(buf);
	return 0;
}
