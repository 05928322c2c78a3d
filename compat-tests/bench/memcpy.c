/* compat-tests/bench: this machine's memcpy throughput, the bandwidth limit
 * for the software device (which copies every message through memory).
 *
 *   memcpy [bytes...]     default: 65536 (in cache) and 67108864 (DRAM)
 *
 * For each size: glibc's memcpy from one buffer to another, both touched
 * first, repeated for ~0.25 s per trial, 7 trials.  Prints one line per size:
 *   memcpy <bytes> best_gbps=<G> median_gbps=<G> trials=<n>
 * GB/s = 10^9 bytes copied per second (each byte counted once). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    size_t sizes[16];
    int n = 0;
    if (argc > 1) {
        for (int i = 1; i < argc && n < 16; i++) sizes[n++] = strtoull(argv[i], NULL, 0);
    } else {
        sizes[n++] = 64 << 10;
        sizes[n++] = 64 << 20;
    }
    for (int s = 0; s < n; s++) {
        size_t len = sizes[s];
        char *src, *dst;
        if (posix_memalign((void **)&src, 4096, len) || posix_memalign((void **)&dst, 4096, len)) {
            perror("posix_memalign");
            return 1;
        }
        memset(src, 0x5a, len);
        memset(dst, 0xa5, len);
        /* warm up */
        for (int i = 0; i < 3; i++) {
            memcpy(dst, src, len);
            __asm__ volatile("" ::"r"(dst), "r"(src) : "memory");
        }
        enum { TRIALS = 7 };
        double gbps[TRIALS];
        for (int t = 0; t < TRIALS; t++) {
            unsigned long long reps = 0;
            double t0 = now(), t1;
            do {
                for (int k = 0; k < 8; k++) {
                    memcpy(dst, src, len);
                    __asm__ volatile("" ::"r"(dst), "r"(src) : "memory");
                }
                reps += 8;
                t1 = now();
            } while (t1 - t0 < 0.25);
            gbps[t] = (double)len * reps / (t1 - t0) / 1e9;
        }
        qsort(gbps, TRIALS, sizeof gbps[0], cmp);
        printf("memcpy %zu best_gbps=%.3f median_gbps=%.3f trials=%d\n", len, gbps[TRIALS - 1],
               gbps[TRIALS / 2], TRIALS);
        free(src);
        free(dst);
    }
    return 0;
}
