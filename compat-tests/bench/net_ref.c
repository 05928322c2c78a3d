/* compat-tests/bench/net_ref.c: the references of the host wire section of
 * `make bench` (issue 25), measured in the same run on the same CPUs and the
 * same veth as the figures they are compared with.
 *
 *   net_ref udp-pong  <bind-addr> <port>                 (server: echoes)
 *   net_ref udp-ping  <server-addr> <port> <bytes> <iters>
 *       UDP ping-pong, both sides blocking in recv (as a program that does
 *       not spin would); prints "udp_pingpong bytes B iters N typical_us X
 *       p99_us Y" where X and Y are ONE-WAY times (half of the median and of
 *       the 99th percentile round trip), as perftest's *_lat print.
 *   net_ref udp-pong-spin <bind-addr> <port>
 *   net_ref udp-ping-spin <server-addr> <port> <bytes> <iters>
 *       The same ping-pong with the handicap of a program that spins on its
 *       memory (ib_write_lat's target) on a device that needs a thread of
 *       the program to move the data: on each side the main thread spins on
 *       a word that a second thread, blocked in recv, writes when a datagram
 *       came; both threads share the CPU the process is pinned to (taskset).
 *       Prints "udp_pingpong_spin ..." as udp-ping.
 *   net_ref udp-sink  <bind-addr> <port> <seconds>       (receiver)
 *   net_ref udp-blast <server-addr> <port> <bytes> <seconds>
 *       A plain UDP sender of <bytes>-byte datagrams as fast as sendto goes;
 *       the receiver prints "udp_stream bytes B received_MBps X datagrams N
 *       seconds S" (MB = 10^6 bytes of UDP payload received, timed from the
 *       first to the last datagram received).
 *   net_ref pipe-pong <cpu-a> <cpu-b> <iters>
 *       Two processes, pinned to <cpu-a> and <cpu-b>, pass one byte back and
 *       forth over two pipes, both blocking in read; prints "pipe_pingpong
 *       iters N typical_us X avg_us Y" (ROUND TRIP, median and mean).
 * Numbers only; exit status 0 unless something could not be set up. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int udp_socket(const char *addr, int port, struct sockaddr_in *sa, int do_bind)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int big = 4 << 20;
    if (fd < 0) { perror("socket"); exit(1); }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1) { fprintf(stderr, "bad address %s\n", addr); exit(1); }
    if (do_bind && bind(fd, (struct sockaddr *)sa, sizeof *sa) < 0) { perror("bind"); exit(1); }
    return fd;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) < 0) perror("sched_setaffinity");
}

static int udp_pong(const char *addr, int port)
{
    struct sockaddr_in sa, peer;
    int fd = udp_socket(addr, port, &sa, 1);
    static char buf[65536];
    struct timeval tv = { 10, 0 }; /* a lost client: give up after 10 s of silence */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
        socklen_t pl = sizeof peer;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &pl);
        if (n < 0) return errno == EAGAIN ? 0 : 1;
        if (n == 1 && buf[0] == 'Q') return 0;
        sendto(fd, buf, n, 0, (struct sockaddr *)&peer, pl);
    }
}

static int udp_ping(const char *addr, int port, int bytes, int iters)
{
    struct sockaddr_in sa;
    int fd = udp_socket(addr, port, &sa, 0), i, warm = iters / 10 + 10;
    char *buf = calloc(1, bytes > 1 ? bytes : 2);
    double *rtt = calloc(iters, sizeof *rtt), sum = 0;
    struct timeval tv = { 1, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    connect(fd, (struct sockaddr *)&sa, sizeof sa);
    for (i = -warm; i < iters; i++) {
        double t0 = now_us();
        if (send(fd, buf, bytes, 0) < 0 || recv(fd, buf, bytes, 0) < 0) { i--; continue; } /* lost: again */
        if (i >= 0) rtt[i] = now_us() - t0, sum += rtt[i];
    }
    send(fd, "Q", 1, 0);
    qsort(rtt, iters, sizeof *rtt, cmp_d);
    printf("udp_pingpong bytes %d iters %d typical_us %.2f p99_us %.2f avg_us %.2f\n", bytes, iters,
           rtt[iters / 2] / 2, rtt[(int)(iters * 0.99)] / 2, sum / iters / 2);
    return 0;
}

/* The spinning variants: a receiver thread writes the count of datagrams
 * received into `arrived` (as a device's thread writes the application's
 * buffer); the main thread spins on it. */
struct spin_rx {
    int fd;
    _Atomic long arrived;
    struct sockaddr_in peer;
    socklen_t pl;
};

static void *spin_rx_thread(void *arg)
{
    struct spin_rx *r = arg;
    static char buf[65536];
    for (;;) {
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        ssize_t n = recvfrom(r->fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &pl);
        if (n < 0 && errno != EINTR) { atomic_store(&r->arrived, -1); return NULL; }
        if (n == 1 && buf[0] == 'Q') { atomic_store(&r->arrived, -1); return NULL; }
        if (n > 0) {
            r->peer = peer, r->pl = pl;
            atomic_fetch_add(&r->arrived, 1);
        }
    }
}

/* Spins until `r` saw datagram number `want`; 0, or -1 when it ended. */
static int spin_wait(struct spin_rx *r, long want, double deadline)
{
    long a;
    while ((a = atomic_load_explicit(&r->arrived, memory_order_acquire)) < want) {
        if (a < 0 || now_us() > deadline) return -1;
    }
    return 0;
}

static int udp_pong_spin(const char *addr, int port)
{
    struct sockaddr_in sa;
    struct spin_rx r = { .fd = udp_socket(addr, port, &sa, 1) };
    pthread_t t;
    static char buf[65536];
    struct timeval tv = { 10, 0 };
    setsockopt(r.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (pthread_create(&t, NULL, spin_rx_thread, &r)) return 1;
    for (long i = 1;; i++) {
        if (spin_wait(&r, i, now_us() + 10e6) < 0) break;
        sendto(r.fd, buf, 2, 0, (struct sockaddr *)&r.peer, r.pl);
    }
    pthread_join(t, NULL);
    return 0;
}

static int udp_ping_spin(const char *addr, int port, int bytes, int iters)
{
    struct sockaddr_in sa;
    struct spin_rx r = { .fd = udp_socket(addr, port, &sa, 0) };
    int i, warm = iters / 10 + 10;
    char *buf = calloc(1, bytes > 1 ? bytes : 2);
    double *rtt = calloc(iters, sizeof *rtt), sum = 0;
    pthread_t t;
    connect(r.fd, (struct sockaddr *)&sa, sizeof sa);
    if (pthread_create(&t, NULL, spin_rx_thread, &r)) return 1;
    long want = 0;
    for (i = -warm; i < iters; i++) {
        double t0 = now_us();
        if (send(r.fd, buf, bytes, 0) < 0) return 1;
        if (spin_wait(&r, ++want, t0 + 5e6) < 0) { fprintf(stderr, "udp-ping-spin: no answer\n"); return 1; }
        if (i >= 0) rtt[i] = now_us() - t0, sum += rtt[i];
    }
    send(r.fd, "Q", 1, 0);
    shutdown(r.fd, SHUT_RDWR);
    qsort(rtt, iters, sizeof *rtt, cmp_d);
    printf("udp_pingpong_spin bytes %d iters %d typical_us %.2f p99_us %.2f avg_us %.2f\n", bytes, iters,
           rtt[iters / 2] / 2, rtt[(int)(iters * 0.99)] / 2, sum / iters / 2);
    return 0;
}

static int udp_sink(const char *addr, int port, double seconds)
{
    struct sockaddr_in sa;
    int fd = udp_socket(addr, port, &sa, 1);
    static char buf[65536];
    double first = 0, last = 0, bytes = 0;
    long n = 0, size = 0;
    struct timeval tv = { 0, 300000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    double deadline = now_us() + (seconds + 10) * 1e6;
    while (now_us() < deadline) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0) { if (n > 0) break; else continue; } /* 0.3 s quiet after data: done */
        if (r == 1 && buf[0] == 'Q') break;
        last = now_us();
        if (n++ == 0) { first = last; size = r; continue; } /* time from the first datagram */
        bytes += r;
    }
    double s = (last - first) / 1e6;
    printf("udp_stream bytes %ld received_MBps %.1f datagrams %ld seconds %.3f\n", size,
           s > 0 ? bytes / s / 1e6 : 0, n, s);
    return n > 0 ? 0 : 1;
}

static int udp_blast(const char *addr, int port, int bytes, double seconds)
{
    struct sockaddr_in sa;
    int fd = udp_socket(addr, port, &sa, 0), i;
    char *buf = calloc(1, bytes);
    connect(fd, (struct sockaddr *)&sa, sizeof sa);
    double end = now_us() + seconds * 1e6;
    long sent = 0;
    while (now_us() < end)
        for (i = 0; i < 64; i++) sent += send(fd, buf, bytes, 0) > 0;
    usleep(100000);
    for (i = 0; i < 3; i++) send(fd, "Q", 1, 0);
    fprintf(stderr, "udp_blast sent %ld datagrams of %d bytes\n", sent, bytes);
    return 0;
}

static int pipe_pong(int ca, int cb, int iters)
{
    int ab[2], ba[2], i, warm = iters / 10 + 10;
    char c = 0;
    double *rtt = calloc(iters, sizeof *rtt), sum = 0;
    if (pipe(ab) || pipe(ba)) { perror("pipe"); return 1; }
    pid_t p = fork();
    if (p == 0) {
        pin(cb);
        for (i = -warm; i < iters; i++)
            if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1) _exit(1);
        _exit(0);
    }
    pin(ca);
    for (i = -warm; i < iters; i++) {
        double t0 = now_us();
        if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) return 1;
        if (i >= 0) rtt[i] = now_us() - t0, sum += rtt[i];
    }
    waitpid(p, NULL, 0);
    qsort(rtt, iters, sizeof *rtt, cmp_d);
    printf("pipe_pingpong iters %d typical_us %.2f avg_us %.2f\n", iters, rtt[iters / 2], sum / iters);
    return 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "udp-pong") && argc == 4) return udp_pong(argv[2], atoi(argv[3]));
    if (!strcmp(m, "udp-ping") && argc == 6) return udp_ping(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (!strcmp(m, "udp-pong-spin") && argc == 4) return udp_pong_spin(argv[2], atoi(argv[3]));
    if (!strcmp(m, "udp-ping-spin") && argc == 6)
        return udp_ping_spin(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (!strcmp(m, "udp-sink") && argc == 5) return udp_sink(argv[2], atoi(argv[3]), atof(argv[4]));
    if (!strcmp(m, "udp-blast") && argc == 6) return udp_blast(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]));
    if (!strcmp(m, "pipe-pong") && argc == 5) return pipe_pong(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: see the comment at the top of net_ref.c\n");
    return 2;
}
