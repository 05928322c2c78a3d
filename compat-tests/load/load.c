/*
 * load: the verbs library under load, for compat-tests/load.
 *
 *   load threads DEVICE GID_INDEX SECONDS WARMUP [NTHREADS]
 *   load pairs DEVICE GID_INDEX NPAIRS MESSAGES
 *
 * threads: NTHREADS (default 16) threads of one process loop for SECONDS:
 *   ibv_get_device_list, ibv_open_device, ibv_free_device_list,
 *   ibv_alloc_pd, ibv_reg_mr/ibv_dereg_mr (4 KiB .. 512 KiB), ibv_create_cq,
 *   ibv_create_qp (RC) + INIT/RTR/RTS connected to itself + one RDMA write
 *   (data checked) / ibv_destroy_qp, a second create/destroy QP without
 *   traffic, ibv_destroy_cq, ibv_dealloc_pd, ibv_close_device.
 *   Samples are taken at quiescent points: every worker parks at the top of
 *   its loop (everything it had is released), the main thread reads
 *   /proc/self/fd (count), /proc/self/status (VmRSS, VmData, VmSize,
 *   RssShmem, Threads) and /proc/meminfo (Shmem), then lets them go on.
 *   The first sample is at WARMUP s, then about every (SECONDS-WARMUP)/4 s,
 *   the last at SECONDS.  Output (one fact per line):
 *     sample T fd=N rss_kb=N vmdata_kb=N vmsize_kb=N rssshmem_kb=N threads=N shmem_kb=N malloc_inuse_kb=N
 *     ops OP N                   successful calls per operation
 *     errors OP ERRNO_NAME N     failed calls (none when all succeeded)
 *     error-example OP: text     the first failure of each OP
 *     flat METRIC warm=N end=N tolerance=N ok|GROWN
 *     threads-verdict ok|FAILED (why)
 *   Exit status 0 when nothing failed and every metric is flat.
 *   Knobs for investigating (not used by run.sh): LOAD_DEPTH (1..7, what an
 *   iteration does, to find what grows), LOAD_LEAK_EVERY / LOAD_LEAK_CTX
 *   (leak on purpose: the run must FAIL; see below).
 *   Tolerances: fd, threads: exact; rss, vmdata, vmsize: max(4 MiB, 5%);
 *   rssshmem 1 MiB; system Shmem 16 MiB (system-wide: others use it too);
 *   malloc_inuse (mallinfo2: uordblks + hblkhd, every arena; the program
 *   re-executes itself with GLIBC_TUNABLES=glibc.malloc.tcache_count=0, as
 *   tcache'd chunks count as in use) 32 KiB.
 *
 * pairs: NPAIRS server/client process pairs (2*NPAIRS children, forked
 *   before this process touches verbs).  Each pair connects one RC QP per
 *   side through a socketpair (qpn, psn, gid, rkey, addr), then all wait
 *   until every pair is connected; then the client sends MESSAGES messages
 *   (sizes 1..1024 bytes, content derived from pair and sequence, checked by
 *   the server), RDMA-writes 64 KiB in 16 writes and sends "done"; the
 *   server checks the 64 KiB and answers with a send; the client checks the
 *   answer.  Every child then reports and waits until the parent has seen
 *   all of them (all alive at once: the peak), then all exit.
 *   Output:
 *     pairs-baseline memavail_kb=N shmem_kb=N
 *     pairs-peak memavail_kb=N shmem_kb=N children_rss_kb=N children_rssshmem_kb=N
 *     pairs-result ok=N failed=N
 *     pair-failure I: text       (for each failed side)
 *   The after-exit comparison is made by run.sh (it owns the directory).
 *   Exit status 0 when every side succeeded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/qpsetup.h"

static const char *dev_name;
static int gid_index;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct ibv_device *find_dev(struct ibv_device **list, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ibv_get_device_name(list[i]), dev_name) == 0)
            return list[i];
    return NULL;
}

/* ---------------------------------------------------------------- threads */

enum op {
    OP_GET_LIST, OP_OPEN, OP_FREE_LIST, OP_ALLOC_PD, OP_REG_MR, OP_DEREG_MR, OP_CREATE_CQ,
    OP_CREATE_QP, OP_MODIFY_QP, OP_RDMA_WRITE, OP_DESTROY_QP, OP_DESTROY_CQ, OP_DEALLOC_PD,
    OP_CLOSE, OP_COUNT
};
static const char *op_name[OP_COUNT] = {
    "ibv_get_device_list", "ibv_open_device", "ibv_free_device_list", "ibv_alloc_pd", "ibv_reg_mr",
    "ibv_dereg_mr", "ibv_create_cq", "ibv_create_qp", "ibv_modify_qp", "rdma_write_self",
    "ibv_destroy_qp", "ibv_destroy_cq", "ibv_dealloc_pd", "ibv_close_device",
};

#define MAX_ERRNO 256
static atomic_ulong ops_ok[OP_COUNT];
static atomic_ulong ops_err[OP_COUNT][MAX_ERRNO + 1]; /* [MAX_ERRNO]: other */
static pthread_mutex_t example_lock = PTHREAD_MUTEX_INITIALIZER;
static char *example[OP_COUNT];

static void ok(enum op op)
{
    atomic_fetch_add_explicit(&ops_ok[op], 1, memory_order_relaxed);
}

static void err(enum op op, int e, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    atomic_fetch_add(&ops_err[op][e > 0 && e < MAX_ERRNO ? e : MAX_ERRNO], 1);
    pthread_mutex_lock(&example_lock);
    if (!example[op]) {
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        example[op] = strdup(buf);
    }
    pthread_mutex_unlock(&example_lock);
}

/* parking: the main thread asks, every worker parks at the top of its loop */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int park_req, parked;
static atomic_int stop;

static void park_point(void)
{
    pthread_mutex_lock(&park_lock);
    if (park_req) {
        parked++;
        pthread_cond_broadcast(&park_cond);
        while (park_req)
            pthread_cond_wait(&park_cond, &park_lock);
        parked--;
    }
    pthread_mutex_unlock(&park_lock);
}

/* INIT, RTR, RTS connected to itself (compat-tests/common/qpsetup.h) */
static int modify_self(struct ibv_qp *qp, union ibv_gid *gid, char *why, size_t whylen)
{
    struct qps_conn c;
    enum ibv_qp_state failed;
    int rc;

    qps_defaults(&c);
    c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    c.dest_qpn = qp->qp_num;
    c.sgid_index = gid_index;
    c.dgid = *gid;
    rc = qps_to_rts(qp, &c, &failed);
    if (rc)
        snprintf(why, whylen, "%s: %s", qps_state_name(failed), strerror(rc));
    return rc;
}

/* one RDMA write of 256 bytes from buf[0..] to buf[2048..] through the QP
 * connected to itself, completion polled (10 s at most), data checked */
static int write_self(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, unsigned seed, char *why,
                      size_t whylen)
{
    unsigned char *buf = mr->addr;
    struct ibv_sge sge = { (uintptr_t)buf, 256, mr->lkey };
    struct ibv_send_wr wr, *bad;
    struct ibv_wc wc;
    double t0;
    int n, rc;

    for (int i = 0; i < 256; i++) {
        buf[i] = (unsigned char)(seed * 31 + i);
        buf[2048 + i] = 0;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = seed;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = (uintptr_t)buf + 2048;
    wr.wr.rdma.rkey = mr->rkey;
    rc = ibv_post_send(qp, &wr, &bad);
    if (rc) {
        snprintf(why, whylen, "ibv_post_send: %s", strerror(rc));
        return rc;
    }
    t0 = now();
    while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
        if (now() - t0 > 10) {
            snprintf(why, whylen, "no completion in 10 s");
            return ETIMEDOUT;
        }
        sched_yield();
    }
    if (n < 0) {
        snprintf(why, whylen, "ibv_poll_cq: %d", n);
        return EIO;
    }
    if (wc.status != IBV_WC_SUCCESS) {
        snprintf(why, whylen, "completion %s", ibv_wc_status_str(wc.status));
        return EIO;
    }
    if (memcmp(buf, buf + 2048, 256) != 0) {
        snprintf(why, whylen, "data differs after the write");
        return EIO;
    }
    return 0;
}

/* LOAD_DEPTH (for finding what leaks; default 7, everything): 1 list + open +
 * close, 2 + PD, 3 + MRs, 4 + CQ, 5 + QPs created and destroyed, 6 + the QP
 * connected to itself (INIT/RTR/RTS), 7 + the RDMA write */
static int depth = 7;
/* LOAD_LEAK_EVERY=N (testing the test): every Nth iteration of each worker
 * leaks 64 bytes of malloc'd memory (what a small leak in the library would
 * look like) or, with LOAD_LEAK_CTX set, its whole context (never closed);
 * the run must then FAIL */
static unsigned leak_every;
static int leak_ctx;

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg, it = 0;
    char why[160];

    while (!atomic_load(&stop)) {
        struct ibv_device **list;
        struct ibv_device *dev;
        struct ibv_context *ctx;
        struct ibv_pd *pd;
        struct ibv_cq *cq;
        union ibv_gid gid;
        int n, rc;

        park_point();
        if (atomic_load(&stop))
            break;
        it++;
        list = ibv_get_device_list(&n);
        if (!list) {
            err(OP_GET_LIST, errno, "%s", strerror(errno));
            continue;
        }
        ok(OP_GET_LIST);
        dev = find_dev(list, n);
        if (!dev) {
            err(OP_GET_LIST, ENODEV, "%s not in the list of %d", dev_name, n);
            ibv_free_device_list(list);
            continue;
        }
        ctx = ibv_open_device(dev);
        ibv_free_device_list(list); /* documented: after opening what one uses */
        ok(OP_FREE_LIST);
        if (!ctx) {
            err(OP_OPEN, errno, "%s", strerror(errno));
            continue;
        }
        ok(OP_OPEN);
        if (depth < 2)
            goto close;
        pd = ibv_alloc_pd(ctx);
        if (!pd) {
            err(OP_ALLOC_PD, errno, "%s", strerror(errno));
            goto close;
        }
        ok(OP_ALLOC_PD);
        for (int k = 0; k < 4 && depth >= 3; k++) {
            size_t len = (size_t)4096 << ((it + k + id) % 8); /* 4 KiB .. 512 KiB */
            /* mmap, not malloc: the test's own buffers must not fragment the heap it measures */
            void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            struct ibv_mr *mr;
            if (p == MAP_FAILED)
                abort();
            memset(p, 0, len);
            mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
            if (!mr) {
                err(OP_REG_MR, errno, "%zu bytes: %s", len, strerror(errno));
            } else {
                ok(OP_REG_MR);
                rc = ibv_dereg_mr(mr);
                if (rc)
                    err(OP_DEREG_MR, rc, "%s", strerror(rc));
                else
                    ok(OP_DEREG_MR);
            }
            munmap(p, len);
        }
        if (depth < 4)
            goto pd;
        cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
        if (!cq) {
            err(OP_CREATE_CQ, errno, "%s", strerror(errno));
            goto pd;
        }
        ok(OP_CREATE_CQ);
        if ((rc = ibv_query_gid(ctx, 1, gid_index, &gid))) {
            err(OP_MODIFY_QP, rc < 0 ? errno : rc, "ibv_query_gid(%d): %s", gid_index, strerror(errno));
            goto cq;
        }
        for (int q = 0; q < 2 && depth >= 5; q++) {
            struct ibv_qp_init_attr ia;
            struct ibv_qp *qp;
            struct ibv_mr *mr = NULL;
            void *buf = NULL;

            memset(&ia, 0, sizeof(ia));
            ia.send_cq = cq;
            ia.recv_cq = cq;
            ia.qp_type = IBV_QPT_RC;
            ia.cap.max_send_wr = 8;
            ia.cap.max_recv_wr = 8;
            ia.cap.max_send_sge = 1;
            ia.cap.max_recv_sge = 1;
            qp = ibv_create_qp(pd, &ia);
            if (!qp) {
                err(OP_CREATE_QP, errno, "%s", strerror(errno));
                continue;
            }
            ok(OP_CREATE_QP);
            if (q == 0 && depth >= 6) {
                /* the first QP of each context: connected to itself, one write */
                rc = modify_self(qp, &gid, why, sizeof(why));
                if (rc) {
                    err(OP_MODIFY_QP, rc, "%s", why);
                } else {
                    ok(OP_MODIFY_QP);
                }
                if (!rc && depth >= 7) {
                    buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                    if (buf == MAP_FAILED)
                        abort();
                    mr = buf ? ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
                    if (!mr) {
                        err(OP_REG_MR, errno, "4096 bytes: %s", strerror(errno));
                    } else {
                        ok(OP_REG_MR);
                        rc = write_self(qp, cq, mr, it * 16 + id, why, sizeof(why));
                        if (rc)
                            err(OP_RDMA_WRITE, rc, "%s", why);
                        else
                            ok(OP_RDMA_WRITE);
                    }
                }
            }
            rc = ibv_destroy_qp(qp);
            if (rc)
                err(OP_DESTROY_QP, rc, "%s", strerror(rc));
            else
                ok(OP_DESTROY_QP);
            if (mr) {
                rc = ibv_dereg_mr(mr);
                if (rc)
                    err(OP_DEREG_MR, rc, "%s", strerror(rc));
                else
                    ok(OP_DEREG_MR);
            }
            if (buf)
                munmap(buf, 4096);
        }
    cq:
        rc = ibv_destroy_cq(cq);
        if (rc)
            err(OP_DESTROY_CQ, rc, "%s", strerror(rc));
        else
            ok(OP_DESTROY_CQ);
    pd:
        rc = ibv_dealloc_pd(pd);
        if (rc)
            err(OP_DEALLOC_PD, rc, "%s", strerror(rc));
        else
            ok(OP_DEALLOC_PD);
    close:
        if (leak_every && it % leak_every == 0) {
            if (leak_ctx)
                continue;
            *(volatile char *)malloc(64) = 1;
        }
        rc = ibv_close_device(ctx);
        if (rc)
            err(OP_CLOSE, rc < 0 ? errno : rc, "%s", strerror(rc < 0 ? errno : rc));
        else
            ok(OP_CLOSE);
    }
    return NULL;
}

struct sample {
    double t;
    long fd, rss, vmdata, vmsize, rssshmem, threads, shmem, heap;
};

static long field(const char *path, const char *key)
{
    char line[256];
    size_t kl = strlen(key);
    long v = -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static long count_fds(void)
{
    long n = 0;
    struct dirent *e;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* parks the workers (at most 60 s), samples, lets them go */
static int take_sample(struct sample *s, double t0, int nthreads)
{
    double w0 = now();
    int all;

    pthread_mutex_lock(&park_lock);
    park_req = 1;
    while (parked < nthreads && now() - w0 < 60) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&park_cond, &park_lock, &ts);
    }
    all = parked == nthreads;
    if (all) {
        s->t = now() - t0;
        s->fd = count_fds();
        s->rss = field("/proc/self/status", "VmRSS");
        s->vmdata = field("/proc/self/status", "VmData");
        s->vmsize = field("/proc/self/status", "VmSize");
        s->rssshmem = field("/proc/self/status", "RssShmem");
        s->threads = field("/proc/self/status", "Threads");
        s->shmem = field("/proc/meminfo", "Shmem");
        {
            struct mallinfo2 mi = mallinfo2(); /* every arena's bytes in use, and malloc's own mmaps */
            s->heap = (long)((mi.uordblks + mi.hblkhd) / 1024);
        }
    }
    park_req = 0;
    pthread_cond_broadcast(&park_cond);
    pthread_mutex_unlock(&park_lock);
    return all ? 0 : -1;
}

static int flat(const char *name, long warm, long end, long tol)
{
    int good = end - warm <= tol;
    printf("flat %s warm=%ld end=%ld tolerance=%ld %s\n", name, warm, end, tol, good ? "ok" : "GROWN");
    return good;
}

static long maxl(long a, long b)
{
    return a > b ? a : b;
}

static int run_threads(double seconds, double warmup, int nthreads)
{
    pthread_t th[64];
    struct sample s[8];
    int ns = 0, failed = 0, hung = 0;
    double t0 = now(), next;
    char verdict[512] = "";

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (nthreads < 1 || nthreads > 64 || warmup >= seconds) {
        fprintf(stderr, "load: bad thread count or warm-up\n");
        return 2;
    }
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i)) {
            fprintf(stderr, "load: pthread_create failed\n");
            return 2;
        }
    next = warmup;
    while (ns < 6) {
        double left = t0 + next - now();
        if (left > 0)
            usleep((useconds_t)(left * 1e6));
        if (take_sample(&s[ns], t0, nthreads)) {
            hung = 1;
            break;
        }
        printf("sample %.1f fd=%ld rss_kb=%ld vmdata_kb=%ld vmsize_kb=%ld rssshmem_kb=%ld threads=%ld shmem_kb=%ld "
               "malloc_inuse_kb=%ld\n",
               s[ns].t, s[ns].fd, s[ns].rss, s[ns].vmdata, s[ns].vmsize, s[ns].rssshmem, s[ns].threads, s[ns].shmem,
               s[ns].heap);
        ns++;
        if (next >= seconds)
            break;
        next += (seconds - warmup) / 4;
        if (next > seconds - 0.01)
            next = seconds;
    }
    atomic_store(&stop, 1);
    if (hung) {
        printf("threads-verdict FAILED (the workers did not all reach the top of their loop within 60 s: %d of %d; "
               "a hang)\n", parked, nthreads);
        fflush(stdout);
        _exit(1);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    printf("elapsed %.1f\n", now() - t0);
    for (int i = 0; i < OP_COUNT; i++)
        printf("ops %s %lu\n", op_name[i], atomic_load(&ops_ok[i]));
    for (int i = 0; i < OP_COUNT; i++) {
        for (int e = 1; e <= MAX_ERRNO; e++) {
            unsigned long c = atomic_load(&ops_err[i][e]);
            if (!c)
                continue;
            printf("errors %s %s %lu\n", op_name[i], e < MAX_ERRNO ? strerrorname_np(e) : "other", c);
            failed = 1;
        }
        if (example[i])
            printf("error-example %s: %s\n", op_name[i], example[i]);
    }
    if (failed)
        strcat(verdict, " errors returned;");
    {
        struct sample *w = &s[0], *e = &s[ns - 1];
        int good = 1;
        good &= flat("fd", w->fd, e->fd, 0);
        good &= flat("threads", w->threads, e->threads, 0);
        good &= flat("rss_kb", w->rss, e->rss, maxl(4096, w->rss / 20));
        good &= flat("vmdata_kb", w->vmdata, e->vmdata, maxl(4096, w->vmdata / 20));
        good &= flat("vmsize_kb", w->vmsize, e->vmsize, maxl(4096, w->vmsize / 20));
        good &= flat("rssshmem_kb", w->rssshmem, e->rssshmem, 1024);
        good &= flat("shmem_kb", w->shmem, e->shmem, 16384);
        good &= flat("malloc_inuse_kb", w->heap, e->heap, 32);
        if (!good)
            strcat(verdict, " not flat after the warm-up;");
        failed |= !good;
    }
    printf("threads-verdict %s%s\n", failed ? "FAILED" : "ok", verdict);
    return failed;
}

/* ------------------------------------------------------------------ pairs */

struct peer {
    uint32_t qpn, psn, rkey;
    uint64_t addr;
    union ibv_gid gid;
};

#define SLOT 1024
#define RECV_DEPTH 64
#define WBUF (64 * 1024)

static int xfer(int fd, void *p, size_t n, int out)
{
    char *c = p;
    while (n) {
        ssize_t r = out ? write(fd, c, n) : read(fd, c, n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static unsigned char pat(int pair, int seq, int i)
{
    return (unsigned char)(pair * 7 + seq * 13 + i * 3 + 1);
}

struct side {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    unsigned char *buf; /* RECV_DEPTH slots for receives, then WBUF, then one send slot */
    size_t len;
};

static int post_recv(struct side *s, int slot)
{
    struct ibv_sge sge = { (uintptr_t)s->buf + (size_t)slot * SLOT, SLOT, s->mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1 }, *bad;
    return ibv_post_recv(s->qp, &wr, &bad);
}

static int wait_wc(struct side *s, struct ibv_wc *wc, const char *what, char *why, size_t whylen)
{
    double t0 = now();
    int n;
    while ((n = ibv_poll_cq(s->cq, 1, wc)) == 0) {
        if (now() - t0 > 60) {
            snprintf(why, whylen, "%s: no completion in 60 s", what);
            return -1;
        }
        sched_yield();
    }
    if (n < 0) {
        snprintf(why, whylen, "%s: ibv_poll_cq %d", what, n);
        return -1;
    }
    if (wc->status != IBV_WC_SUCCESS) {
        snprintf(why, whylen, "%s: completion %s (opcode %d)", what, ibv_wc_status_str(wc->status), wc->opcode);
        return -1;
    }
    return 0;
}

static int post_send(struct side *s, enum ibv_wr_opcode op, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
                     uint64_t id)
{
    struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(s->qp, &wr, &bad);
}

/* one side of pair PAIR; SOCK to the peer, STATUS to the parent (ready
 * byte, then waits for the parent's go byte before tearing down) */
static int pair_side(int pair, int server, int sock, int status, int messages, char *why, size_t whylen)
{
    struct ibv_device **list;
    struct ibv_device *dev;
    struct side s;
    struct peer me, peer;
    struct qps_conn qc;
    struct ibv_wc wc;
    int n, rc;
    char c = 'r';
    size_t wbuf_off = (size_t)RECV_DEPTH * SLOT, send_off = wbuf_off + WBUF;

    memset(&s, 0, sizeof(s));
    list = ibv_get_device_list(&n);
    if (!list) {
        snprintf(why, whylen, "ibv_get_device_list: %s", strerror(errno));
        return -1;
    }
    dev = find_dev(list, n);
    s.ctx = dev ? ibv_open_device(dev) : NULL;
    ibv_free_device_list(list);
    if (!s.ctx) {
        snprintf(why, whylen, "ibv_open_device(%s): %s", dev_name, dev ? strerror(errno) : "no such device");
        return -1;
    }
    s.len = send_off + SLOT;
    s.buf = aligned_alloc(4096, (s.len + 4095) & ~(size_t)4095);
    memset(s.buf, 0, s.len);
    s.pd = ibv_alloc_pd(s.ctx);
    s.mr = s.pd ? ibv_reg_mr(s.pd, s.buf, s.len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
    s.cq = s.mr ? ibv_create_cq(s.ctx, 2 * RECV_DEPTH + 16, NULL, NULL, 0) : NULL;
    if (s.cq) {
        struct ibv_qp_init_attr ia;
        memset(&ia, 0, sizeof(ia));
        ia.send_cq = s.cq;
        ia.recv_cq = s.cq;
        ia.qp_type = IBV_QPT_RC;
        ia.cap.max_send_wr = RECV_DEPTH;
        ia.cap.max_recv_wr = RECV_DEPTH;
        ia.cap.max_send_sge = 1;
        ia.cap.max_recv_sge = 1;
        s.qp = ibv_create_qp(s.pd, &ia);
    }
    if (!s.qp) {
        snprintf(why, whylen, "setting up PD/MR/CQ/QP: %s", strerror(errno));
        return -1;
    }
    memset(&me, 0, sizeof(me));
    me.qpn = s.qp->qp_num;
    me.psn = (uint32_t)(pair * 2 + server) * 1000 & 0xffffff;
    me.rkey = s.mr->rkey;
    me.addr = (uintptr_t)s.buf + wbuf_off;
    if (ibv_query_gid(s.ctx, 1, gid_index, &me.gid)) {
        snprintf(why, whylen, "ibv_query_gid: %s", strerror(errno));
        return -1;
    }
    if (xfer(sock, &me, sizeof(me), 1) || xfer(sock, &peer, sizeof(peer), 0)) {
        snprintf(why, whylen, "exchange with the peer failed");
        return -1;
    }
    qps_defaults(&qc);
    qc.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    qc.dest_qpn = peer.qpn;
    qc.rq_psn = peer.psn;
    qc.sgid_index = gid_index;
    qc.dgid = peer.gid;
    qc.sq_psn = me.psn;
    rc = qps_modify(s.qp, IBV_QPS_INIT, &qc);
    for (int i = 0; !rc && i < RECV_DEPTH; i++) /* receives: from INIT on */
        if ((rc = post_recv(&s, i))) {
            snprintf(why, whylen, "ibv_post_recv: %s", strerror(rc));
            return -1;
        }
    if (!rc)
        rc = qps_modify(s.qp, IBV_QPS_RTR, &qc);
    if (!rc)
        rc = qps_modify(s.qp, IBV_QPS_RTS, &qc);
    if (rc) {
        snprintf(why, whylen, "ibv_modify_qp: %s", strerror(rc));
        return -1;
    }
    /* both sides are RTS before the client sends anything */
    if (xfer(sock, &c, 1, 1) || xfer(sock, &c, 1, 0)) {
        snprintf(why, whylen, "sync with the peer failed");
        return -1;
    }
    if (!server) {
        int outstanding = 0;
        for (int seq = 0; seq < messages; seq++) {
            uint32_t len = (uint32_t)(1 + (seq * 37) % SLOT);
            while (outstanding >= RECV_DEPTH / 2) {
                if (wait_wc(&s, &wc, "send", why, whylen))
                    return -1;
                outstanding--;
            }
            /* the send slot is reused: wait for the previous send first */
            if (outstanding) {
                if (wait_wc(&s, &wc, "send", why, whylen))
                    return -1;
                outstanding--;
            }
            for (uint32_t i = 0; i < len; i++)
                s.buf[send_off + i] = pat(pair, seq, (int)i);
            if ((rc = post_send(&s, IBV_WR_SEND, send_off, len, 0, 0, (uint64_t)seq))) {
                snprintf(why, whylen, "ibv_post_send(send %d): %s", seq, strerror(rc));
                return -1;
            }
            outstanding++;
        }
        while (outstanding) {
            if (wait_wc(&s, &wc, "send", why, whylen))
                return -1;
            outstanding--;
        }
        /* 64 KiB in 16 RDMA writes of 4 KiB, from our WBUF to theirs */
        for (int i = 0; i < WBUF; i++)
            s.buf[wbuf_off + i] = pat(pair, 7777, i);
        for (int i = 0; i < 16; i++) {
            if ((rc = post_send(&s, IBV_WR_RDMA_WRITE, wbuf_off + (size_t)i * 4096, 4096, peer.addr + (uint64_t)i * 4096,
                                peer.rkey, 100000 + (uint64_t)i))) {
                snprintf(why, whylen, "ibv_post_send(write %d): %s", i, strerror(rc));
                return -1;
            }
            if (wait_wc(&s, &wc, "rdma write", why, whylen))
                return -1;
        }
        memcpy(s.buf + send_off, "done", 4);
        if ((rc = post_send(&s, IBV_WR_SEND, send_off, 4, 0, 0, 200000))) {
            snprintf(why, whylen, "ibv_post_send(done): %s", strerror(rc));
            return -1;
        }
        /* the send's completion and the server's answer, in either order */
        for (int got = 0, answered = 0; got < 2;) {
            if (wait_wc(&s, &wc, "done/answer", why, whylen))
                return -1;
            got++;
            if (wc.opcode == IBV_WC_RECV) {
                unsigned char *m = s.buf + wc.wr_id * SLOT;
                answered = 1;
                if (wc.byte_len != 2 || memcmp(m, "ok", 2) != 0) {
                    snprintf(why, whylen, "the server's answer is not \"ok\" (%u bytes)", wc.byte_len);
                    return -1;
                }
            }
            if (got == 2 && !answered) {
                snprintf(why, whylen, "no answer from the server");
                return -1;
            }
        }
    } else {
        int seq = 0;
        for (;;) {
            unsigned char *m;
            if (wait_wc(&s, &wc, "recv", why, whylen))
                return -1;
            if (wc.opcode != IBV_WC_RECV) {
                snprintf(why, whylen, "unexpected completion opcode %d", wc.opcode);
                return -1;
            }
            m = s.buf + wc.wr_id * SLOT;
            if (seq == messages) {
                if (wc.byte_len != 4 || memcmp(m, "done", 4) != 0) {
                    snprintf(why, whylen, "expected \"done\", got %u bytes", wc.byte_len);
                    return -1;
                }
                break;
            }
            {
                uint32_t len = (uint32_t)(1 + (seq * 37) % SLOT);
                if (wc.byte_len != len) {
                    snprintf(why, whylen, "message %d: %u bytes, expected %u", seq, wc.byte_len, len);
                    return -1;
                }
                for (uint32_t i = 0; i < len; i++)
                    if (m[i] != pat(pair, seq, (int)i)) {
                        snprintf(why, whylen, "message %d: byte %u differs", seq, i);
                        return -1;
                    }
            }
            seq++;
            if ((rc = post_recv(&s, (int)wc.wr_id))) {
                snprintf(why, whylen, "ibv_post_recv: %s", strerror(rc));
                return -1;
            }
        }
        for (int i = 0; i < WBUF; i++)
            if (s.buf[wbuf_off + i] != pat(pair, 7777, i)) {
                snprintf(why, whylen, "RDMA-written byte %d differs", i);
                return -1;
            }
        memcpy(s.buf + send_off, "ok", 2);
        if ((rc = post_send(&s, IBV_WR_SEND, send_off, 2, 0, 0, 300000))) {
            snprintf(why, whylen, "ibv_post_send(ok): %s", strerror(rc));
            return -1;
        }
        if (wait_wc(&s, &wc, "answer", why, whylen))
            return -1;
    }
    /* all alive at once: report, wait for the parent's go */
    c = 'r';
    if (xfer(status, &c, 1, 1) || xfer(status, &c, 1, 0)) {
        snprintf(why, whylen, "parent gone");
        return -1;
    }
    if ((rc = ibv_destroy_qp(s.qp)) || (rc = ibv_destroy_cq(s.cq)) || (rc = ibv_dereg_mr(s.mr)) ||
        (rc = ibv_dealloc_pd(s.pd)) || (rc = ibv_close_device(s.ctx))) {
        snprintf(why, whylen, "tear-down: %s", strerror(rc > 0 ? rc : errno));
        return -1;
    }
    free(s.buf);
    return 0;
}

static long child_status_kb(pid_t pid, const char *key)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    return field(path, key);
}

static int run_pairs(int npairs, int messages)
{
    int nchild = 2 * npairs, okc = 0, failedc = 0, ready = 0;
    pid_t *pid = calloc((size_t)nchild, sizeof(pid_t));
    int *st = calloc((size_t)nchild, sizeof(int));   /* parent's end of each status socket */
    int *errp = calloc((size_t)nchild, sizeof(int)); /* read end of each child's failure pipe */
    long rss = 0, rssshmem = 0;
    double t0 = now();

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("pairs-baseline memavail_kb=%ld shmem_kb=%ld\n", field("/proc/meminfo", "MemAvailable"),
           field("/proc/meminfo", "Shmem"));
    for (int p = 0; p < npairs; p++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
            return 2;
        for (int side = 0; side < 2; side++) {
            int stv[2], ep[2], i = 2 * p + side;
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, stv) || pipe(ep))
                return 2;
            pid[i] = fork();
            if (pid[i] < 0) {
                perror("fork");
                return 2;
            }
            if (pid[i] == 0) {
                char why[256] = "";
                int rc;
                close(stv[0]);
                close(ep[0]);
                close(sv[side]);
                for (int j = 0; j < i; j++) /* the parent's ends of earlier children */
                    close(st[j]), close(errp[j]);
                rc = pair_side(p, side == 0, sv[1 - side], stv[1], messages, why, sizeof(why));
                if (rc)
                    dprintf(ep[1], "pair %d %s: %s\n", p, side == 0 ? "server" : "client", why);
                _exit(rc ? 1 : 0);
            }
            close(stv[1]);
            close(ep[1]);
            st[i] = stv[0];
            errp[i] = ep[0];
        }
        close(sv[0]);
        close(sv[1]);
    }
    /* wait until every child is ready (or gone): 10 min at most */
    {
        int *done = calloc((size_t)nchild, sizeof(int));
        while (ready < nchild && now() - t0 < 600) {
            struct pollfd *pf = calloc((size_t)nchild, sizeof(*pf));
            for (int i = 0; i < nchild; i++) {
                pf[i].fd = done[i] ? -1 : st[i];
                pf[i].events = POLLIN;
            }
            if (poll(pf, (nfds_t)nchild, 1000) > 0)
                for (int i = 0; i < nchild; i++)
                    if (pf[i].revents) {
                        char c;
                        done[i] = 1;
                        ready++;
                        if (read(st[i], &c, 1) != 1)
                            st[i] = -st[i] - 1; /* died before ready */
                    }
            free(pf);
        }
        free(done);
    }
    for (int i = 0; i < nchild; i++) {
        long r = child_status_kb(pid[i], "VmRSS"), sh = child_status_kb(pid[i], "RssShmem");
        if (r > 0)
            rss += r;
        if (sh > 0)
            rssshmem += sh;
    }
    printf("pairs-peak memavail_kb=%ld shmem_kb=%ld children_rss_kb=%ld children_rssshmem_kb=%ld ready=%d "
           "seconds=%.1f\n",
           field("/proc/meminfo", "MemAvailable"), field("/proc/meminfo", "Shmem"), rss, rssshmem, ready,
           now() - t0);
    /* go: all exit */
    for (int i = 0; i < nchild; i++)
        if (st[i] >= 0) {
            char c = 'g';
            if (write(st[i], &c, 1) != 1)
                (void)0;
        }
    for (int i = 0; i < nchild; i++) {
        int ws;
        char buf[512];
        ssize_t r;
        if (waitpid(pid[i], &ws, 0) < 0)
            ws = -1;
        r = read(errp[i], buf, sizeof(buf) - 1);
        if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
            okc++;
        } else {
            failedc++;
            if (r > 0) {
                buf[r] = 0;
                printf("pair-failure %s", buf);
            } else if (WIFSIGNALED(ws)) {
                printf("pair-failure pair %d %s: killed by signal %d\n", i / 2, i % 2 ? "client" : "server",
                       WTERMSIG(ws));
            } else {
                printf("pair-failure pair %d %s: exit status %d\n", i / 2, i % 2 ? "client" : "server",
                       WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
            }
        }
    }
    printf("pairs-result ok=%d failed=%d seconds=%.1f\n", okc, failedc, now() - t0);
    return failedc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[1], "threads") == 0) {
        /* malloc's per-thread caches (tcache) hold freed chunks that
         * mallinfo2 counts as in use: they fill up slowly over a run and
         * look like a leak.  Without them malloc_inuse is exact. */
        const char *tun = getenv("GLIBC_TUNABLES");
        if (!tun || !strstr(tun, "glibc.malloc.tcache_count=0")) {
            char buf[512];
            snprintf(buf, sizeof(buf), "%s%sglibc.malloc.tcache_count=0", tun ? tun : "", tun ? ":" : "");
            setenv("GLIBC_TUNABLES", buf, 1);
            execv("/proc/self/exe", argv);
            perror("load: re-executing with GLIBC_TUNABLES");
            return 2;
        }
        dev_name = argv[2];
        gid_index = atoi(argv[3]);
        if (getenv("LOAD_DEPTH"))
            depth = atoi(getenv("LOAD_DEPTH"));
        if (getenv("LOAD_LEAK_EVERY"))
            leak_every = (unsigned)atoi(getenv("LOAD_LEAK_EVERY"));
        leak_ctx = getenv("LOAD_LEAK_CTX") != NULL;
        return run_threads(atof(argv[4]), atof(argv[5]), argc > 6 ? atoi(argv[6]) : 16);
    }
    if (argc == 6 && strcmp(argv[1], "pairs") == 0) {
        dev_name = argv[2];
        gid_index = atoi(argv[3]);
        return run_pairs(atoi(argv[4]), atoi(argv[5]));
    }
    fprintf(stderr, "usage: load threads DEVICE GID_INDEX SECONDS WARMUP [NTHREADS]\n"
                    "       load pairs DEVICE GID_INDEX NPAIRS MESSAGES\n");
    return 2;
}
