/* compat-tests/bench: the latency limit for the software device — two
 * processes on different CPUs bouncing one cache line through a MAP_SHARED
 * page, both busy-waiting (no pause, no syscalls).
 *
 *   shm_pingpong [cpu_a cpu_b [round_trips]]     default: 0 1 200000
 *
 * Process A stores 2i+1 and waits for 2i+2; process B waits for each odd
 * value and stores the next one.  One-way latency = elapsed / (2 * round
 * trips).  7 trials; prints
 *   shm_pingpong one_way_ns_best=<ns> one_way_ns_median=<ns> round_trips=<n> trials=<n> cpus=<a>,<b> pinned=<0|1> */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define STOP UINT64_MAX

int main(int argc, char **argv)
{
    int ca = argc > 2 ? atoi(argv[1]) : 0, cb = argc > 2 ? atoi(argv[2]) : 1;
    long rt = argc > 3 ? atol(argv[3]) : 200000;
    enum { TRIALS = 7 };
    /* line 0: the ball; line 1 (page[8]): the child could not pin itself */
    volatile uint64_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    volatile uint64_t *ball = page;
    page[0] = 0;
    page[8] = 0;
    int pinned = 1;
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        if (pin(cb)) page[8] = 1; /* not pinned: reported, the run goes on */
        for (;;) {
            uint64_t v;
            while (((v = __atomic_load_n(ball, __ATOMIC_ACQUIRE)) & 1) == 0)
                ;
            if (v == STOP) _exit(0);
            __atomic_store_n(ball, v + 1, __ATOMIC_RELEASE);
        }
    }
    if (pin(ca)) pinned = 0;
    double ns[TRIALS];
    uint64_t x = 0;
    /* warm-up: one short trial */
    for (int t = -1; t < TRIALS; t++) {
        long n = t < 0 ? rt / 10 : rt;
        double t0 = now();
        for (long i = 0; i < n; i++) {
            __atomic_store_n(ball, x + 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(ball, __ATOMIC_ACQUIRE) != x + 2)
                ;
            x += 2;
        }
        double t1 = now();
        if (t >= 0) ns[t] = (t1 - t0) * 1e9 / (2.0 * n);
    }
    __atomic_store_n(ball, STOP, __ATOMIC_RELEASE);
    int st;
    waitpid(pid, &st, 0);
    if (page[8]) pinned = 0;
    qsort(ns, TRIALS, sizeof ns[0], cmp);
    printf("shm_pingpong one_way_ns_best=%.1f one_way_ns_median=%.1f round_trips=%ld trials=%d cpus=%d,%d pinned=%d\n",
           ns[0], ns[TRIALS / 2], rt, TRIALS, ca, cb, pinned);
    return 0;
}
