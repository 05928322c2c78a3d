/* compat-tests/bench: the floor of the software device's one-sided
 * operations on private memory (issue 34, item 3) - a plain loop of
 * process_vm_writev / process_vm_readv calls from one process into another,
 * one call per message, what swrdma's direct path does per RDMA WRITE/READ
 * (providers/swrdma/src/direct.rs) without any of its checks.
 *
 *   cma_ref [target_cpu initiator_cpu [bytes...]]   default: 0 1 2 4096 65536 1048576
 *
 * The target (a forked child, pinned to target_cpu, its buffer touched
 * first) sleeps in read() like perftest's bandwidth server; the initiator
 * (pinned to initiator_cpu) copies one message per call between its own
 * buffer and the same address of the target's, repeated for ~0.2 s per
 * trial, 7 trials, after a warm-up.  Prints one line per direction and size:
 *   cma <write|read> <bytes> best_us=<us per call> median_us=<us> best_gbps=<G> median_gbps=<G> trials=<n>
 * GB/s = 10^9 bytes per second (each byte counted once). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set))
        perror("sched_setaffinity (not pinned)");
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int tcpu = argc > 2 ? atoi(argv[1]) : 0, icpu = argc > 2 ? atoi(argv[2]) : 1;
    size_t sizes[16];
    int n = 0;
    for (int i = 3; i < argc && n < 16; i++) sizes[n++] = strtoull(argv[i], NULL, 0);
    if (n == 0) {
        size_t d[] = {2, 4096, 65536, 1048576};
        for (int i = 0; i < 4; i++) sizes[n++] = d[i];
    }
    size_t max = 0;
    for (int i = 0; i < n; i++) max = sizes[i] > max ? sizes[i] : max;
    int to_child[2], from_child[2];
    if (pipe(to_child) || pipe(from_child)) {
        perror("pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        pin(tcpu);
        char *buf;
        if (posix_memalign((void **)&buf, 4096, max)) return 1;
        memset(buf, 0xa5, max);
        if (write(from_child[1], &buf, sizeof buf) != sizeof buf) return 1;
        char c;
        while (read(to_child[0], &c, 1) > 0) {}
        return 0;
    }
    close(to_child[0]);
    close(from_child[1]);
    pin(icpu);
    char *remote;
    if (read(from_child[0], &remote, sizeof remote) != sizeof remote) {
        fprintf(stderr, "cma_ref: no address from the target\n");
        return 1;
    }
    char *local;
    if (posix_memalign((void **)&local, 4096, max)) return 1;
    memset(local, 0x5a, max);
    int rc = 0;
    for (int dir = 0; dir < 2 && !rc; dir++) {
        for (int s = 0; s < n && !rc; s++) {
            size_t len = sizes[s];
            struct iovec l = {local, len}, r = {remote, len};
            enum { TRIALS = 7 };
            double us[TRIALS];
            for (int t = -1; t < TRIALS; t++) {   /* t = -1: warm-up */
                unsigned long long calls = 0;
                double t0 = now(), t1;
                do {
                    for (int k = 0; k < 16; k++) {
                        ssize_t got = dir == 0 ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                                               : process_vm_readv(pid, &l, 1, &r, 1, 0);
                        if (got != (ssize_t)len) {
                            perror(dir == 0 ? "process_vm_writev" : "process_vm_readv");
                            rc = 1;
                            break;
                        }
                    }
                    calls += 16;
                    t1 = now();
                } while (!rc && t1 - t0 < (t < 0 ? 0.05 : 0.2));
                if (rc) break;
                if (t >= 0) us[t] = (t1 - t0) / calls * 1e6;
            }
            if (rc) break;
            qsort(us, TRIALS, sizeof us[0], cmp);
            printf("cma %s %zu best_us=%.4f median_us=%.4f best_gbps=%.3f median_gbps=%.3f trials=%d\n",
                   dir == 0 ? "write" : "read", len, us[0], us[TRIALS / 2], len / us[0] / 1e3,
                   len / us[TRIALS / 2] / 1e3, TRIALS);
            fflush(stdout);
        }
    }
    close(to_child[1]);
    waitpid(pid, NULL, 0);
    return rc;
}
