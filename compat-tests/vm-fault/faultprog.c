/* faultprog: one verbs process facing a fault on its device, for the
 * vm-fault suite (compat-tests/vm-fault/run.sh), run once on Debian's
 * libibverbs and once on ours inside the Soft-RoCE VM.
 *
 *   faultprog MODE DEV0 GID0 DEV1 GID1 READYFILE
 *
 * Opens DEV0 and DEV1, makes on each a PD, a completion channel, a CQ on it,
 * an SRQ, an MR and an RC QP receiving from the SRQ, connects the two QPs,
 * runs RDMA writes and sends from DEV0 to DEV1, and keeps a thread reading
 * both contexts' async events.  Then it writes READYFILE and the fault
 * comes:
 *
 *   delete    the harness runs `rdma link delete DEV0`; we wait until DEV0's
 *             uverbs device has left sysfs (the delete is under way), then
 *             try traffic, queries, a new device list, opening the stale
 *             device, a new PD
 *   portdown  the harness takes DEV0's netdev down; we wait for
 *             IBV_EVENT_PORT_ERR, then post a send and wait for completions
 *   eio       no outside fault: a seccomp filter makes every write() and
 *             ioctl() on both contexts' command fds fail with EIO, which is
 *             what the kernel answers once a device is disassociated
 *
 * and we destroy everything (each return value and errno printed), close
 * both devices and compare the descriptors, the heap and the mappings of
 * /dev/infiniband with a baseline taken after a first open/close.  In delete
 * mode we then wait for the deletion to finish: it can only finish once
 * nothing of ours holds the device any more.
 *
 * stdout: the steps, deterministic (the suite compares upstream's and ours
 * byte for byte); lines starting with "# " are figures (times, deltas) the
 * report reads but does not compare.  Exit status 0 when every step could be
 * run (what the steps returned is the output, not the status). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <mcheck.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "../common/qpsetup.h"

#define NCTX 2
#define BUF 4096
#define NRECV 32
#define ROUNDS 10

static const char *errname(int e)
{
    switch (e) {
    case 0: return "0";
    case EIO: return "EIO";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case ENXIO: return "ENXIO";
    case EBUSY: return "EBUSY";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENOSYS: return "ENOSYS";
    case EFAULT: return "EFAULT";
    case ETIMEDOUT: return "ETIMEDOUT";
    default: {
        static char b[32];
        snprintf(b, sizeof b, "errno%d", e);
        return b;
    }
    }
}

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static int count_uverbs_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "/dev/infiniband/"))
            n++;
    fclose(f);
    return n;
}

static long heap_used(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)(m.uordblks + m.hblkhd);
}

static int path_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* ---- async events: one thread polls both contexts' async fds */
struct ctx {
    struct ibv_context *c;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_srq *srq;
    struct ibv_mr *mr;
    struct ibv_qp *qp;
    char *buf;
    union ibv_gid gid;
    int gidx;
    char name[64];
};

static struct ctx X[NCTX];
static volatile int stop_async;
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned ev_seen[NCTX][64];   /* count per event type */
static long ev_first_ms[NCTX][64];
static long t_fault;                 /* when the fault was noticed/started */

static void *async_thread(void *arg)
{
    (void)arg;
    while (!stop_async) {
        struct pollfd p[NCTX];
        for (int i = 0; i < NCTX; i++) {
            p[i].fd = X[i].c->async_fd;
            p[i].events = POLLIN;
            p[i].revents = 0;
        }
        int n = poll(p, NCTX, 50);
        if (n <= 0)
            continue;
        for (int i = 0; i < NCTX; i++) {
            if (!(p[i].revents & POLLIN))
                continue;
            struct ibv_async_event ev;
            if (ibv_get_async_event(X[i].c, &ev))
                continue;
            unsigned t = (unsigned)ev.event_type < 64 ? (unsigned)ev.event_type : 63;
            pthread_mutex_lock(&ev_lock);
            if (!ev_seen[i][t]++)
                ev_first_ms[i][t] = now_ms();
            pthread_mutex_unlock(&ev_lock);
            ibv_ack_async_event(&ev);
        }
    }
    return NULL;
}

static unsigned seen(int i, enum ibv_event_type t)
{
    pthread_mutex_lock(&ev_lock);
    unsigned n = ev_seen[i][t];
    pthread_mutex_unlock(&ev_lock);
    return n;
}

/* ---- completions through the channel, with a deadline */
static int wait_wc(struct ctx *x, int timeout_ms, struct ibv_wc *wc)
{
    long end = now_ms() + timeout_ms;
    for (;;) {
        int n = ibv_poll_cq(x->cq, 1, wc);
        if (n != 0)
            return n;
        if (ibv_req_notify_cq(x->cq, 0))
            return -2;
        n = ibv_poll_cq(x->cq, 1, wc);
        if (n != 0)
            return n;
        long left = end - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = x->ch->fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) > 0) {
            struct ibv_cq *cq;
            void *cctx;
            if (ibv_get_cq_event(x->ch, &cq, &cctx) == 0)
                ibv_ack_cq_events(cq, 1);
        }
    }
}

static int post_recvs(struct ctx *x, int n)
{
    for (int i = 0; i < n; i++) {
        struct ibv_sge sge = {.addr = (uintptr_t)x->buf + 2048, .length = 256, .lkey = x->mr->lkey};
        struct ibv_recv_wr wr = {.wr_id = 1000 + i, .sg_list = &sge, .num_sge = 1}, *bad;
        if (ibv_post_srq_recv(x->srq, &wr, &bad))
            return -1;
    }
    return 0;
}

static int post_op(struct ctx *from, struct ctx *to, enum ibv_wr_opcode op, uint64_t id)
{
    struct ibv_sge sge = {.addr = (uintptr_t)from->buf, .length = 64, .lkey = from->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED}, *bad;
    if (op == IBV_WR_RDMA_WRITE) {
        wr.wr.rdma.remote_addr = (uintptr_t)to->buf + 1024;
        wr.wr.rdma.rkey = to->mr->rkey;
    }
    return ibv_post_send(from->qp, &wr, &bad);
}

/* rounds of write + send from X[0] to X[1]; prints one summary line */
static void traffic(const char *what, int rounds, int timeout_ms)
{
    int ok = 0, bad = 0, none = 0, post_err = 0;
    enum ibv_wc_status first_bad = IBV_WC_SUCCESS;
    for (int r = 0; r < rounds; r++) {
        snprintf(X[0].buf, 64, "round %d", r);
        int e1 = post_op(&X[0], &X[1], IBV_WR_RDMA_WRITE, 2 * r);
        int e2 = post_op(&X[0], &X[1], IBV_WR_SEND, 2 * r + 1);
        if (e1 || e2) {
            post_err++;
            break;
        }
        /* two send completions on X[0], one receive on X[1] */
        struct { struct ctx *x; int n; } want[2] = {{&X[0], 2}, {&X[1], 1}};
        for (int w = 0; w < 2; w++)
            for (int k = 0; k < want[w].n; k++) {
                struct ibv_wc wc;
                int n = wait_wc(want[w].x, timeout_ms, &wc);
                if (n <= 0) {
                    none++;
                    goto out;
                }
                if (wc.status == IBV_WC_SUCCESS) {
                    ok++;
                } else {
                    if (!bad++)
                        first_bad = wc.status;
                }
            }
    }
out:
    if (what)
        printf("%s: %d completions ok, %d in error%s%s, %s, post errors %d\n", what, ok, bad,
           bad ? " first " : "", bad ? ibv_wc_status_str(first_bad) : "",
           none ? "then none within the time limit" : "all came", post_err);
}

/* RTS towards the peer (compat-tests/common/qpsetup.h); 0 or ibv_modify_qp's error */
static int connect_qp(struct ctx *x, struct ctx *peer)
{
    struct qps_conn c;
    qps_defaults(&c);
    c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    c.dest_qpn = peer->qp->qp_num;
    c.sgid_index = x->gidx;
    c.dgid = peer->gid;
    c.timeout = 12;
    c.retry_cnt = 3;
    c.rnr_retry = 3;
    return qps_to_rts(x->qp, &c, NULL);
}

static struct ibv_device *find(struct ibv_device **l, const char *name)
{
    for (int i = 0; l && l[i]; i++)
        if (!strcmp(ibv_get_device_name(l[i]), name))
            return l[i];
    return NULL;
}

static void print_list(const char *what)
{
    int n = -1;
    struct ibv_device **l = ibv_get_device_list(&n);
    printf("%s:", what);
    if (!l) {
        printf(" NULL errno=%s\n", errname(errno));
        return;
    }
    for (int i = 0; i < n; i++)
        printf(" %s", ibv_get_device_name(l[i]));
    printf(" (%d)\n", n);
    ibv_free_device_list(l);
}

#define REPORT(name, expr)                                                  \
    do {                                                                    \
        errno = 0;                                                          \
        int rc_ = (expr);                                                   \
        printf("%s: %s\n", name, rc_ ? errname(rc_ > 0 ? rc_ : errno) : "0"); \
    } while (0)

static int install_eio_filter(int fd0, int fd1)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_write, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd0, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd1, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EIO & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        return -1;
    /* every thread: the async thread too */
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

#define PATHLEN 256
/* both contexts and their resources, connected; 0 or 1 (said on stdout) */
static int setup(const char **names, const int *gidx, struct ibv_device ***listp, struct ibv_device **dev0p,
                 char *uverbs_path, char *ibdev_path)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    *listp = list;
    for (int i = 0; i < NCTX; i++) {
        struct ctx *x = &X[i];
        struct ibv_device *d = find(list, names[i]);
        if (!d) {
            printf("%s: not found\n", names[i]);
            return 1;
        }
        if (i == 0) {
            *dev0p = d;
            snprintf(uverbs_path, PATHLEN, "/sys/class/infiniband_verbs/%s", d->dev_name);
            snprintf(ibdev_path, PATHLEN, "/sys/class/infiniband/%s", names[0]);
        }
        snprintf(x->name, sizeof x->name, "%s", names[i]);
        x->gidx = gidx[i];
        x->c = ibv_open_device(d);
        if (!x->c) {
            printf("open %s: %s\n", names[i], errname(errno));
            return 1;
        }
        if (ibv_query_gid(x->c, 1, x->gidx, &x->gid)) {
            printf("query_gid %s: %s\n", names[i], errname(errno));
            return 1;
        }
        if (posix_memalign((void **)&x->buf, 4096, BUF))
            return 1;
        memset(x->buf, 0, BUF);
        x->pd = ibv_alloc_pd(x->c);
        x->ch = ibv_create_comp_channel(x->c);
        if (!x->pd || !x->ch) {
            printf("pd/channel %s: %s\n", names[i], errname(errno));
            return 1;
        }
        fcntl(x->ch->fd, F_SETFL, fcntl(x->ch->fd, F_GETFL) | O_NONBLOCK);
        fcntl(x->c->async_fd, F_SETFL, fcntl(x->c->async_fd, F_GETFL) | O_NONBLOCK);
        x->cq = ibv_create_cq(x->c, 64, NULL, x->ch, 0);
        struct ibv_srq_init_attr sa = {.attr = {.max_wr = NRECV, .max_sge = 1}};
        x->srq = ibv_create_srq(x->pd, &sa);
        x->mr = ibv_reg_mr(x->pd, x->buf, BUF,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        if (!x->cq || !x->srq || !x->mr) {
            printf("cq/srq/mr %s: %s\n", names[i], errname(errno));
            return 1;
        }
        struct ibv_qp_init_attr qa = {.send_cq = x->cq, .recv_cq = x->cq, .srq = x->srq,
                                      .cap = {.max_send_wr = 16, .max_send_sge = 1, .max_inline_data = 0},
                                      .qp_type = IBV_QPT_RC};
        x->qp = ibv_create_qp(x->pd, &qa);
        if (!x->qp) {
            printf("qp %s: %s\n", names[i], errname(errno));
            return 1;
        }
        if (post_recvs(x, NRECV)) {
            printf("post_srq_recv %s failed\n", names[i]);
            return 1;
        }
    }
    for (int i = 0; i < NCTX; i++)
        if (connect_qp(&X[i], &X[1 - i])) {
            printf("connect %s: %s\n", names[i], errname(errno));
            return 1;
        }
    return 0;
}

/* destroys everything setup() made, no questions asked (the warm-up) */
static void teardown(struct ibv_device **list)
{
    for (int i = 0; i < NCTX; i++) {
        struct ctx *x = &X[i];
        ibv_destroy_qp(x->qp);
        ibv_destroy_srq(x->srq);
        ibv_dereg_mr(x->mr);
        ibv_destroy_cq(x->cq);
        ibv_destroy_comp_channel(x->ch);
        ibv_dealloc_pd(x->pd);
        ibv_close_device(x->c);
        free(x->buf);
        memset(x, 0, sizeof *x);
    }
    ibv_free_device_list(list);
}

/* a whole fault-free cycle first, so that what the library (or libc) sets up
 * once per process is not counted as a leak: setup, the async thread,
 * traffic, teardown */
static int warm_up(const char **names, const int *gidx)
{
    struct ibv_device **list = NULL, *dev0 = NULL;
    char up[PATHLEN], ip[PATHLEN];
    pthread_t th;
    if (setup(names, gidx, &list, &dev0, up, ip))
        return -1;
    if (pthread_create(&th, NULL, async_thread, NULL))
        return -1;
    traffic(NULL, 2, 10000);
    stop_async = 1;
    pthread_join(th, NULL);
    stop_async = 0;
    memset(ev_seen, 0, sizeof ev_seen);
    teardown(list);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s delete|portdown|eio DEV0 GID0 DEV1 GID1 READYFILE\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *ready = argv[6];
    const char *names[NCTX] = {argv[2], argv[4]};
    int gidx[NCTX] = {atoi(argv[3]), atoi(argv[5])};
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("mode %s, RDMAV_ALLOW_DISASSOC_DESTROY=%s\n", mode,
           getenv("RDMAV_ALLOW_DISASSOC_DESTROY") ? getenv("RDMAV_ALLOW_DISASSOC_DESTROY") : "(unset)");

    if (warm_up(names, gidx)) {
        printf("warm-up cycle failed\n");
        return 1;
    }
    /* a second fault-free cycle, measured: what a clean cycle keeps */
    long heap_w = heap_used();
    int fd_w = count_fds();
    int wrc = warm_up(names, gidx);
    if (wrc) {
        printf("second warm-up cycle failed\n");
        return 1;
    }
    int fd0 = count_fds(), maps0 = count_uverbs_maps();
    long heap0 = heap_used();
    printf("# clean_cycle_fd_delta=%d clean_cycle_heap_delta=%ld\n", fd0 - fd_w, heap0 - heap_w);
    /* FAULTPROG_MTRACE=FILE (with glibc's libc_malloc_debug.so preloaded):
     * every malloc/free of the measured cycle, from here to after the close,
     * goes to FILE; what is not freed there is what the cycle kept (mallinfo's
     * figures also count the chunks glibc's per-thread cache holds) */
    const char *mt = getenv("FAULTPROG_MTRACE");
    if (mt) {
        setenv("MALLOC_TRACE", mt, 1);
        mtrace();
    }

    struct ibv_device **list = NULL, *dev0 = NULL;
    char uverbs_path[PATHLEN], ibdev_path[PATHLEN];
    if (setup(names, gidx, &list, &dev0, uverbs_path, ibdev_path))
        return 1;
    printf("resources: 2 contexts, each PD, channel, CQ, SRQ, MR, RC QP (connected)\n");
    pthread_t th;
    if (pthread_create(&th, NULL, async_thread, NULL))
        return 1;
    traffic("traffic before the fault", ROUNDS, 10000);
    printf("%s written: %s\n", "rdma write", strncmp(X[1].buf + 1024, "round 9", 8) ? "no" : "yes");

    /* ---- the fault */
    FILE *rf = fopen(ready, "w");
    if (!rf) {
        printf("cannot write %s\n", ready);
        return 1;
    }
    fputs("ready\n", rf);
    fclose(rf);
    long t0 = now_ms();
    int eio = !strcmp(mode, "eio");
    if (!strcmp(mode, "delete")) {
        while (path_exists(uverbs_path) && now_ms() - t0 < 30000)
            usleep(20000);
        t_fault = now_ms();
        printf("uverbs device left sysfs (delete under way): %s\n", path_exists(uverbs_path) ? "no" : "yes");
        printf("# wait_for_delete_ms=%ld\n", t_fault - t0);
        printf("%s still listed in sysfs class infiniband: %s\n", names[0], path_exists(ibdev_path) ? "yes" : "no");
        traffic("traffic during the delete", 3, 5000);
        struct ibv_port_attr pa;
        REPORT("query_port during the delete", ibv_query_port(X[0].c, 1, &pa));
        printf("port state: %s\n", ibv_port_state_str(pa.state));
        struct ibv_device_attr da;
        REPORT("query_device during the delete", ibv_query_device(X[0].c, &da));
        print_list("device list during the delete");
        errno = 0;
        struct ibv_context *c2 = ibv_open_device(dev0);
        printf("open of the deleted device: %s\n", c2 ? "opened" : errname(errno));
        if (c2)
            ibv_close_device(c2);
        errno = 0;
        struct ibv_pd *pd2 = ibv_alloc_pd(X[0].c);
        printf("alloc_pd during the delete: %s\n", pd2 ? "0" : errname(errno));
        if (pd2)
            REPORT("dealloc_pd of it", ibv_dealloc_pd(pd2));
    } else if (!strcmp(mode, "portdown")) {
        while (!seen(0, IBV_EVENT_PORT_ERR) && now_ms() - t0 < 20000)
            usleep(20000);
        t_fault = now_ms();
        printf("IBV_EVENT_PORT_ERR on %s: %s\n", names[0], seen(0, IBV_EVENT_PORT_ERR) ? "yes" : "no");
        printf("# wait_for_port_err_ms=%ld\n", t_fault - t0);
        struct ibv_port_attr pa;
        REPORT("query_port after the port error", ibv_query_port(X[0].c, 1, &pa));
        printf("port state: %s\n", ibv_port_state_str(pa.state));
        traffic("traffic after the port error", 1, 4000);
        struct ibv_qp_attr qa;
        struct ibv_qp_init_attr qia;
        REPORT("query_qp", ibv_query_qp(X[0].qp, &qa, IBV_QP_STATE, &qia));
        printf("qp state: %d\n", (int)qa.qp_state);
    } else if (eio) {
        REPORT("seccomp filter (EIO on the command fds)", install_eio_filter(X[0].c->cmd_fd, X[1].c->cmd_fd));
        t_fault = now_ms();
        struct ibv_device_attr da;
        REPORT("query_device", ibv_query_device(X[0].c, &da));
        struct ibv_port_attr pa;
        REPORT("query_port", ibv_query_port(X[0].c, 1, &pa));
        errno = 0;
        struct ibv_pd *pd2 = ibv_alloc_pd(X[0].c);
        printf("alloc_pd: %s\n", pd2 ? "0" : errname(errno));
        struct ibv_qp_attr qa = {.qp_state = IBV_QPS_ERR};
        REPORT("modify_qp to ERR", ibv_modify_qp(X[0].qp, &qa, IBV_QP_STATE));
    } else {
        printf("unknown mode\n");
        return 2;
    }

    /* ---- destroy everything */
    long td = now_ms();
    for (int i = 0; i < NCTX; i++) {
        struct ctx *x = &X[i];
        char n[96];
#define D(what, expr)                                      \
    do {                                                   \
        snprintf(n, sizeof n, "%s %s", what, x->name);     \
        REPORT(n, expr);                                   \
    } while (0)
        D("destroy_qp", ibv_destroy_qp(x->qp));
        D("destroy_srq", ibv_destroy_srq(x->srq));
        D("dereg_mr", ibv_dereg_mr(x->mr));
        D("destroy_cq", ibv_destroy_cq(x->cq));
        D("destroy_comp_channel", ibv_destroy_comp_channel(x->ch));
        D("dealloc_pd", ibv_dealloc_pd(x->pd));
    }
    stop_async = 1;
    pthread_join(th, NULL);
    for (int i = 0; i < NCTX; i++) {
        printf("async events on %s:", X[i].name);
        int any = 0;
        for (int t = 0; t < 64; t++)
            if (ev_seen[i][t]) {
                printf(" %s", ibv_event_type_str((enum ibv_event_type)t));
                any = 1;
            }
        printf("%s\n", any ? "" : " none");
        for (int t = 0; t < 64; t++)
            if (ev_seen[i][t])
                printf("# event %s %s count=%u after_fault_ms=%ld\n", X[i].name,
                       ibv_event_type_str((enum ibv_event_type)t), ev_seen[i][t],
                       t_fault ? ev_first_ms[i][t] - t_fault : 0);
    }
    for (int i = 0; i < NCTX; i++) {
        char n[96];
        snprintf(n, sizeof n, "close_device %s", X[i].name);
        REPORT(n, ibv_close_device(X[i].c));
    }
    ibv_free_device_list(list);
    long tc = now_ms();
    printf("# destroy_and_close_ms=%ld\n", tc - td);
    for (int i = 0; i < NCTX; i++)
        free(X[i].buf);
    if (mt)
        muntrace();

    int fd1 = count_fds(), maps1 = count_uverbs_maps();
    long heap1 = heap_used();
    printf("descriptors back to the baseline: %s\n", fd1 == fd0 ? "yes" : "no");
    printf("mappings of /dev/infiniband left: %d\n", maps1);
    printf("# fd_delta=%d maps_delta=%d heap_delta=%ld\n", fd1 - fd0, maps1 - maps0, heap1 - heap0);

    if (!strcmp(mode, "delete")) {
        while (path_exists(ibdev_path) && now_ms() - tc < 20000)
            usleep(20000);
        printf("the delete finished after the close: %s\n", path_exists(ibdev_path) ? "no (still there 20 s later)" : "yes");
        printf("# delete_done_after_close_ms=%ld\n", now_ms() - tc);
    }
    return 0;
}
