/* compat-tests/bench: control-path costs of a libibverbs on a real (kernel)
 * device — run in the Soft-RoCE VM once on Debian's library and once on
 * ours.  Linked against libibverbs.so.1 by SONAME only (no rpath), so
 * LD_LIBRARY_PATH decides which implementation runs.
 *
 *   vm_bench --dev rxe0 --gid-index 1 [--dgid <sysfs-gid>] [--startup N]
 *            [--iters K] [--max-seconds S]
 *   vm_bench --startup-child rxe0      (internal: one fresh process)
 *   vm_bench --null-child              (internal: exits at once)
 *
 * Output, one line each:
 *   lib <path of the libibverbs.so.1 this process runs>
 *   result <name> median=<us> mean=<us> min=<us> n=<count>
 *   fail <name> <why>
 * Benchmarks (each op timed on its own, CLOCK_MONOTONIC, µs):
 *   startup_process  spawn (posix_spawn of this binary) -> exit, for a child
 *                    that calls ibv_get_device_list + ibv_open_device +
 *                    ibv_query_device + ibv_query_port (includes loading
 *                    the library and the provider)
 *   startup_null     spawn -> exit of a child that calls no verb (the
 *                    process floor: exec, loading the libraries, exit)
 *   startup_calls    the same four calls, timed inside the child
 *                    (also _list: ibv_get_device_list; _open:
 *                    ibv_open_device + ibv_free_device_list; _query:
 *                    ibv_query_device + ibv_query_port; _providers: how
 *                    many provider files the child had loaded)
 *   pd               ibv_alloc_pd + ibv_dealloc_pd (also _alloc, _dealloc)
 *   mr_4k, mr_1m     ibv_reg_mr + ibv_dereg_mr (also _reg, _dereg)
 *   cq               ibv_create_cq(256) + ibv_destroy_cq (also _create, _destroy)
 *   qp               RC ibv_create_qp, modify to INIT, RTR, RTS, ibv_destroy_qp
 *                    (also _create, _init, _rtr, _rts, _destroy)
 *   srq              ibv_create_srq(256 wr, 1 sge) + ibv_destroy_srq
 *                    (also _create, _destroy)
 *   ah               ibv_create_ah (the QP's address vector: GRH to the
 *                    dgid) + ibv_destroy_ah (also _create, _destroy)
 * Exit status: 0, or 2 when the device cannot be opened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/qpsetup.h"

extern char **environ;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct series {
    const char *name;
    double *v;
    int n, cap;
};

static void add(struct series *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) abort();
    }
    s->v[s->n++] = x;
}

static void report(struct series *s)
{
    if (!s->n) return;
    double sum = 0;
    for (int i = 0; i < s->n; i++) sum += s->v[i];
    qsort(s->v, s->n, sizeof *s->v, cmpd);
    double med = s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
    printf("result %s median=%.3f mean=%.3f min=%.3f n=%d\n", s->name, med, sum / s->n, s->v[0], s->n);
    fflush(stdout);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const char *name, const char *fmt, ...)
{
    va_list ap;
    printf("fail %s ", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* ibv_get_device_list + ibv_open_device; on failure writes why into err. */
static struct ibv_context *open_dev(const char *dev, char *err, size_t errlen)
{
    int n = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list) {
        snprintf(err, errlen, "ibv_get_device_list: %s", strerror(errno));
        return NULL;
    }
    struct ibv_device *d = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(ibv_get_device_name(list[i]), dev)) d = list[i];
    if (!d) {
        snprintf(err, errlen, "ibv_get_device_list: %d device(s), no %s", n, dev);
        ibv_free_device_list(list);
        return NULL;
    }
    errno = 0;
    struct ibv_context *ctx = ibv_open_device(d);
    if (!ctx) snprintf(err, errlen, "ibv_open_device(%s): %s", dev, errno ? strerror(errno) : "NULL, errno not set");
    ibv_free_device_list(list);
    return ctx;
}

/* dl_iterate_phdr: how many provider files (*-rdmav*.so) are loaded */
static int count_provider(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "-rdmav") && strstr(info->dlpi_name, ".so")) ++*(int *)data;
    return 0;
}

static int startup_child(const char *dev)
{
    double t0 = now_us();
    int n = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list) {
        printf("fail ibv_get_device_list: %s\n", strerror(errno));
        return 2;
    }
    struct ibv_device *d = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(ibv_get_device_name(list[i]), dev)) d = list[i];
    if (!d) {
        printf("fail ibv_get_device_list: %d device(s), no %s\n", n, dev);
        return 2;
    }
    double t1 = now_us();
    errno = 0;
    struct ibv_context *ctx = ibv_open_device(d);
    if (!ctx) {
        printf("fail ibv_open_device(%s): %s\n", dev, errno ? strerror(errno) : "NULL, errno not set");
        return 2;
    }
    ibv_free_device_list(list);
    double t2 = now_us();
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    int rc = ibv_query_device(ctx, &da);
    if (rc) {
        printf("fail ibv_query_device: %s\n", strerror(rc));
        return 2;
    }
    rc = ibv_query_port(ctx, 1, &pa);
    if (rc) {
        printf("fail ibv_query_port: %s\n", strerror(rc));
        return 2;
    }
    double t3 = now_us();
    /* the whole, then its parts: list (ibv_get_device_list), open
     * (ibv_open_device + ibv_free_device_list), query (device + port) */
    int nprov = 0;
    dl_iterate_phdr(count_provider, &nprov);
    printf("calls_us %.3f %.3f %.3f %.3f\nproviders %d\n", t3 - t0, t1 - t0, t2 - t1, t3 - t2, nprov);
    ibv_close_device(ctx);
    return 0;
}

/* spawn -> exit of `self --null-child`, n times: the process floor */
static void bench_null(const char *self, int n, double max_s)
{
    struct series nul = {.name = "startup_null"};
    double end = now_us() + max_s * 1e6;
    for (int i = 0; i < n && (i < 3 || now_us() < end); i++) {
        char *argv[] = {(char *)self, "--null-child", NULL};
        pid_t pid;
        int st;
        double t0 = now_us();
        int rc = posix_spawn(&pid, self, NULL, NULL, argv, environ);
        if (rc) {
            fail("startup_null", "posix_spawn: %s", strerror(rc));
            free(nul.v);
            return;
        }
        waitpid(pid, &st, 0);
        double t1 = now_us();
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fail("startup_null", "child status %d", st);
            free(nul.v);
            return;
        }
        add(&nul, t1 - t0);
    }
    report(&nul);
}

static void bench_startup(const char *self, const char *dev, int n, double max_s)
{
    struct series proc = {.name = "startup_process"}, calls = {.name = "startup_calls"},
                  list = {.name = "startup_list"}, opn = {.name = "startup_open"}, query = {.name = "startup_query"},
                  provs = {.name = "startup_providers"};
    double end = now_us() + max_s * 1e6;
    for (int i = 0; i < n && (i < 3 || now_us() < end); i++) {
        int fd[2];
        if (pipe(fd)) {
            fail("startup", "pipe: %s", strerror(errno));
            return;
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
        posix_spawn_file_actions_addclose(&fa, fd[0]);
        char *argv[] = {(char *)self, "--startup-child", (char *)dev, NULL};
        pid_t pid;
        double t0 = now_us();
        int rc = posix_spawn(&pid, self, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(fd[1]);
        if (rc) {
            close(fd[0]);
            fail("startup", "posix_spawn: %s", strerror(rc));
            return;
        }
        char buf[512];
        size_t got = 0;
        ssize_t r;
        while (got < sizeof buf - 1 && (r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0) got += r;
        buf[got] = 0;
        close(fd[0]);
        int st;
        waitpid(pid, &st, 0);
        double t1 = now_us();
        double c, cl = 0, co = 0, cq = 0;
        int got_parts = sscanf(buf, "calls_us %lf %lf %lf %lf", &c, &cl, &co, &cq);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || got_parts < 1) {
            buf[strcspn(buf, "\n")] = 0;
            if (!strncmp(buf, "fail ", 5))
                fail("startup", "%s", buf + 5);
            else
                fail("startup", "child status %d: %s", st, buf);
            free(proc.v);
            free(calls.v);
            free(list.v);
            free(opn.v);
            free(query.v);
            return;
        }
        add(&proc, t1 - t0);
        add(&calls, c);
        const char *pl = strstr(buf, "providers ");
        int np;
        if (pl && sscanf(pl, "providers %d", &np) == 1) add(&provs, np);
        if (got_parts == 4) {
            add(&list, cl);
            add(&opn, co);
            add(&query, cq);
        }
    }
    report(&proc);
    report(&calls);
    report(&list);
    report(&opn);
    report(&query);
    report(&provs);
}

/* One create/destroy pair, timed: make() returns the object (NULL: failed,
 * errno set), drop() destroys it (0 or an errno value). */
struct pair_ops {
    const char *name;
    void *(*make)(void *arg);
    int (*drop)(void *obj);
    void *arg;
};

static void bench_pair(const struct pair_ops *o, int iters, double max_s)
{
    char n_cr[32], n_de[32];
    snprintf(n_cr, sizeof n_cr, "%s_create", o->name);
    snprintf(n_de, sizeof n_de, "%s_destroy", o->name);
    struct series pair = {.name = o->name}, cr = {.name = n_cr}, de = {.name = n_de};
    double end = now_us() + max_s * 1e6;
    for (int i = -2; i < iters && (i < 5 || now_us() < end); i++) {
        double t0 = now_us();
        errno = 0;
        void *obj = o->make(o->arg);
        double t1 = now_us();
        if (!obj) {
            fail(o->name, "create: %s", strerror(errno));
            goto out;
        }
        int rc = o->drop(obj);
        double t2 = now_us();
        if (rc) {
            fail(o->name, "destroy: %s", strerror(rc));
            goto out;
        }
        if (i < 0) continue; /* warm-up */
        add(&cr, t1 - t0);
        add(&de, t2 - t1);
        add(&pair, t2 - t0);
    }
    report(&pair);
    report(&cr);
    report(&de);
out:
    free(pair.v);
    free(cr.v);
    free(de.v);
}

static void *make_pd(void *ctx) { return ibv_alloc_pd(ctx); }
static int drop_pd(void *pd) { return ibv_dealloc_pd(pd); }
static void *make_srq(void *pd)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 256, .max_sge = 1}};
    return ibv_create_srq(pd, &sa);
}
static int drop_srq(void *srq) { return ibv_destroy_srq(srq); }
struct ah_arg {
    struct ibv_pd *pd;
    struct ibv_ah_attr attr;
};
static void *make_ah(void *a)
{
    struct ah_arg *x = a;
    return ibv_create_ah(x->pd, &x->attr);
}
static int drop_ah(void *ah) { return ibv_destroy_ah(ah); }

static void bench_mr(struct ibv_pd *pd, size_t len, const char *name, int iters, double max_s)
{
    char n_pair[32], n_reg[32], n_dereg[32];
    snprintf(n_pair, sizeof n_pair, "%s", name);
    snprintf(n_reg, sizeof n_reg, "%s_reg", name);
    snprintf(n_dereg, sizeof n_dereg, "%s_dereg", name);
    struct series pair = {.name = n_pair}, reg = {.name = n_reg}, dereg = {.name = n_dereg};
    void *buf;
    if (posix_memalign(&buf, 4096, len)) {
        fail(name, "posix_memalign failed");
        return;
    }
    memset(buf, 1, len);
    int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    double end = now_us() + max_s * 1e6;
    for (int i = -2; i < iters && (i < 5 || now_us() < end); i++) {
        double t0 = now_us();
        errno = 0;
        struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, acc);
        double t1 = now_us();
        if (!mr) {
            fail(name, "ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
            goto out;
        }
        int rc = ibv_dereg_mr(mr);
        double t2 = now_us();
        if (rc) {
            fail(name, "ibv_dereg_mr: %s", strerror(rc));
            goto out;
        }
        if (i < 0) continue; /* warm-up */
        add(&reg, t1 - t0);
        add(&dereg, t2 - t1);
        add(&pair, t2 - t0);
    }
    report(&pair);
    report(&reg);
    report(&dereg);
out:
    free(pair.v);
    free(reg.v);
    free(dereg.v);
    free(buf);
}

static void bench_cq(struct ibv_context *ctx, int iters, double max_s)
{
    struct series pair = {.name = "cq"}, cr = {.name = "cq_create"}, de = {.name = "cq_destroy"};
    double end = now_us() + max_s * 1e6;
    for (int i = -2; i < iters && (i < 5 || now_us() < end); i++) {
        double t0 = now_us();
        errno = 0;
        struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
        double t1 = now_us();
        if (!cq) {
            fail("cq", "ibv_create_cq: %s", strerror(errno));
            goto out;
        }
        int rc = ibv_destroy_cq(cq);
        double t2 = now_us();
        if (rc) {
            fail("cq", "ibv_destroy_cq: %s", strerror(rc));
            goto out;
        }
        if (i < 0) continue;
        add(&cr, t1 - t0);
        add(&de, t2 - t1);
        add(&pair, t2 - t0);
    }
    report(&pair);
    report(&cr);
    report(&de);
out:
    free(pair.v);
    free(cr.v);
    free(de.v);
}

static void bench_qp(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index, const union ibv_gid *dgid, int iters,
                     double max_s)
{
    struct series all = {.name = "qp"}, s_cr = {.name = "qp_create"}, s_init = {.name = "qp_init"}, s_rtr = {.name = "qp_rtr"}, s_rts = {.name = "qp_rts"},
                  s_de = {.name = "qp_destroy"};
    struct series *ser[] = {&all, &s_cr, &s_init, &s_rtr, &s_rts, &s_de};
    errno = 0;
    struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
    if (!cq) {
        fail("qp", "ibv_create_cq: %s", strerror(errno));
        return;
    }
    struct ibv_qp_init_attr ia = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
    };
    /* the remote end of every RTR: a QP that stays in RESET (nothing is sent) */
    errno = 0;
    struct ibv_qp *peer = ibv_create_qp(pd, &ia);
    if (!peer) {
        fail("qp", "ibv_create_qp: %s", strerror(errno));
        ibv_destroy_cq(cq);
        return;
    }
    /* INIT, RTR towards the peer, RTS (compat-tests/common/qpsetup.h) */
    static const enum ibv_qp_state steps[3] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
    struct qps_conn conn;
    qps_defaults(&conn);
    conn.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    conn.dest_qpn = peer->qp_num;
    conn.sgid_index = gid_index;
    conn.dgid = *dgid;
    double end = now_us() + max_s * 1e6;
    for (int i = -2; i < iters && (i < 5 || now_us() < end); i++) {
        double t[6];
        int rc;
        const char *stage;
        t[0] = now_us();
        errno = 0;
        struct ibv_qp *qp = ibv_create_qp(pd, &ia);
        t[1] = now_us();
        if (!qp) {
            fail("qp", "ibv_create_qp: %s", strerror(errno));
            break;
        }
        for (int k = 0; k < 3; k++) { /* INIT, RTR, RTS: t[2], t[3], t[4] */
            stage = qps_state_name(steps[k]);
            rc = qps_modify(qp, steps[k], &conn);
            t[2 + k] = now_us();
            if (rc) goto bad;
        }
        stage = "destroy";
        rc = ibv_destroy_qp(qp);
        t[5] = now_us();
        if (rc) {
            fail("qp", "ibv_destroy_qp: %s", strerror(rc));
            break;
        }
        if (i < 0) continue;
        add(&all, t[5] - t[0]);
        for (int k = 1; k <= 5; k++) add(ser[k], t[k] - t[k - 1]);
        continue;
    bad:
        fail("qp", "ibv_modify_qp(%s): %s", stage, strerror(rc));
        ibv_destroy_qp(qp);
        break;
    }
    for (int k = 0; k < 6; k++) {
        report(ser[k]);
        free(ser[k]->v);
    }
    ibv_destroy_qp(peer);
    ibv_destroy_cq(cq);
}

/* "0000:0000:0000:0000:0000:ffff:c000:0202" (sysfs) -> gid */
static int parse_gid(const char *s, union ibv_gid *g)
{
    unsigned v[8];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8) return -1;
    for (int i = 0; i < 8; i++) {
        g->raw[2 * i] = v[i] >> 8;
        g->raw[2 * i + 1] = v[i] & 0xff;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dev = "rxe0", *dgid_s = NULL;
    int gid_index = 1, nstart = 30, iters = 300;
    double max_s = 8;
    if (argc == 3 && !strcmp(argv[1], "--startup-child")) return startup_child(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "--null-child")) return 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto usage;
        if (!strcmp(a, "--dev")) dev = v;
        else if (!strcmp(a, "--gid-index")) gid_index = atoi(v);
        else if (!strcmp(a, "--dgid")) dgid_s = v;
        else if (!strcmp(a, "--startup")) nstart = atoi(v);
        else if (!strcmp(a, "--iters")) iters = atoi(v);
        else if (!strcmp(a, "--max-seconds")) max_s = atof(v);
        else goto usage;
        i++;
    }

    Dl_info di;
    if (dladdr((void *)ibv_get_device_list, &di) && di.dli_fname) {
        char real[4096];
        printf("lib %s\n", realpath(di.dli_fname, real) ? real : di.dli_fname);
    }
    fflush(stdout);

    char self[4096];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    if (l <= 0) {
        fail("startup", "readlink /proc/self/exe: %s", strerror(errno));
        return 1;
    }
    self[l] = 0;
    if (nstart > 0) {
        bench_startup(self, dev, nstart, max_s);
        bench_null(self, nstart, max_s);
    }

    char err[256];
    struct ibv_context *ctx = open_dev(dev, err, sizeof err);
    if (!ctx) {
        fail("open", "%s", err);
        return 2;
    }
    union ibv_gid dgid;
    if (dgid_s) {
        if (parse_gid(dgid_s, &dgid)) {
            fail("qp", "bad --dgid %s", dgid_s);
            return 1;
        }
    } else if (ibv_query_gid(ctx, 1, gid_index, &dgid)) {
        fail("qp", "ibv_query_gid(%d) failed", gid_index);
    }
    struct pair_ops pdo = {"pd", make_pd, drop_pd, ctx};
    bench_pair(&pdo, iters, max_s);
    errno = 0;
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    if (!pd) {
        fail("mr_4k", "ibv_alloc_pd: %s", strerror(errno));
        fail("mr_1m", "ibv_alloc_pd: %s", strerror(errno));
    } else {
        bench_mr(pd, 4096, "mr_4k", iters, max_s);
        bench_mr(pd, 1 << 20, "mr_1m", iters, max_s);
    }
    bench_cq(ctx, iters, max_s);
    if (pd) {
        bench_qp(ctx, pd, gid_index, &dgid, iters, max_s);
        struct pair_ops srqo = {"srq", make_srq, drop_srq, pd};
        bench_pair(&srqo, iters, max_s);
        struct qps_conn conn;
        qps_defaults(&conn);
        conn.sgid_index = gid_index;
        conn.dgid = dgid;
        struct ah_arg aa = {.pd = pd};
        qps_ah_attr(&conn, &aa.attr);
        struct pair_ops aho = {"ah", make_ah, drop_ah, &aa};
        bench_pair(&aho, iters, max_s);
    } else {
        fail("qp", "ibv_alloc_pd: failed");
    }
    if (pd) ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    return 0;
usage:
    fprintf(stderr, "usage: vm_bench --dev D --gid-index I [--dgid G] [--startup N] [--iters K] [--max-seconds S]\n");
    return 1;
}
