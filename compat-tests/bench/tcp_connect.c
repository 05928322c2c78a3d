/* The reference for rdma_cm connection set-up and tear-down (bench section
 * "rdmacm"): N TCP connections over 127.0.0.1, each socket + connect (the
 * client), accept (a server process), then close on both sides, one after
 * the other; prints the microseconds per connection.
 *   tcp_connect PORT N
 * Or split over two processes (two network namespaces: the wire device's
 * reference, the same veth as its rdma_cm): the server accepts N on
 * ADDR:PORT and ends; the client connects N times and prints.
 *   tcp_connect PORT N ADDR server|client
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int port, n, l, one = 1, i;
	double t0, t1;
	pid_t srv = 0;
	char c;

	if (argc != 3 && argc != 5)
		return 2;
	port = atoi(argv[1]);
	n = atoi(argv[2]);
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (argc == 5 && inet_pton(AF_INET, argv[3], &a.sin_addr) != 1)
		return 2;
	if (argc == 5 && argv[4][0] == 'c')
		goto client;
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 128)) {
		perror("listen");
		return 1;
	}
	srv = argc == 5 ? 0 : fork();
	if (srv == 0) {
		/* server: accept, wait for the client's close, close */
		for (i = 0; i < n; i++) {
			int s = accept(l, NULL, NULL);

			if (s < 0)
				_exit(1);
			while (read(s, &c, 1) > 0)
				;
			close(s);
		}
		_exit(0);
	}
	close(l);
client:
	t0 = now_us();
	for (i = 0; i < n; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s < 0 || connect(s, (void *)&a, sizeof(a))) {
			perror("connect");
			if (argc == 3)
				kill(srv, SIGKILL);
			return 1;
		}
		/* one byte each way would be data; a connection only */
		shutdown(s, SHUT_WR);
		while (read(s, &c, 1) > 0)
			;
		close(s);
	}
	t1 = now_us();
	if (argc == 3)
		waitpid(srv, NULL, 0);
	printf("tcp_connect %d connections %.2f us/conn\n", n, (t1 - t0) / n);
	return 0;
}
