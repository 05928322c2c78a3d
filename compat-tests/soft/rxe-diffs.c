/* compat-tests/soft/rxe-diffs.c: the last differences between swr0 and the
 * kernel's rxe that an outside conformance suite found (issue 34, item 4),
 * each checked on swr0 against what rxe answers (measured in the VM with
 * Debian's libibverbs: compat-tests/vm-sweep compares the same cases on
 * rxe0 and swr0).  Written for this project.
 *
 *   rxe-diffs          every check; one "PASS <name>" / "FAIL <name>: why"
 *                      line each; exit 0 when every check passed
 *
 * The EMFILE cycle runs first, before any other context of the process
 * exists: what the device keeps per process must go with its last context. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/entries.h"

#define QKEY 0x11111111u
#define CYCLES 50

static struct ibv_device *dev;

/* (d) open contexts until ibv_open_device fails, close them, 50 times: the
 * descriptors of the process and the endpoint files of the user's private
 * directory are what they were before the first context. */
static void emfile_cycle(void)
{
	static char files0[1 << 16] = "\n", left[4096], fdl[4096];
	static struct ibv_context *ctx[512];
	static char why[9000];
	char dir[300];
	struct rlimit orig, lim;
	int bad = 0, emfile = 0;
	soft_dir(dir, sizeof(dir));
	if (getrlimit(RLIMIT_NOFILE, &orig))
		die("getrlimit");
	int fds0 = new_entries("/proc/self/fd", NULL, NULL, 0);
	new_entries(dir, NULL, files0 + 1, sizeof(files0) - 1);
	for (int k = 0; k < CYCLES; k++) {
		int extra[8], n = 0;
		for (int i = 0; i < k % 8; i++)
			extra[i] = dup(0);
		lim = orig;
		lim.rlim_cur = fds0 + 48;
		if (setrlimit(RLIMIT_NOFILE, &lim))
			die("setrlimit");
		while (n < 512 && (ctx[n] = ibv_open_device(dev)))
			n++;
		emfile += errno == EMFILE;
		if (setrlimit(RLIMIT_NOFILE, &orig))
			die("setrlimit");
		for (int i = 0; i < n; i++)
			ibv_close_device(ctx[i]);
		for (int i = 0; i < k % 8; i++)
			close(extra[i]);
		int fds = new_entries("/proc/self/fd", NULL, NULL, 0), files = new_entries(dir, files0, left, sizeof(left));
		if ((fds != fds0 || files) && !bad++) {
			char p[300], t[200];
			DIR *d = opendir("/proc/self/fd");
			struct dirent *de;
			fdl[0] = 0;
			while (d && (de = readdir(d))) {
				ssize_t l;
				snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
				if (de->d_name[0] != '.' && (l = readlink(p, t, sizeof(t) - 1)) > 0 &&
				    strlen(fdl) + l + 8 < sizeof(fdl)) {
					t[l] = 0;
					strcat(fdl, de->d_name);
					strcat(fdl, "=");
					strcat(fdl, t);
					strcat(fdl, " ");
				}
			}
			if (d)
				closedir(d);
			snprintf(why, sizeof(why), "cycle %d: %d descriptors (%d before the first context: %s), new files: %s",
				 k, fds, fds0, fdl, files ? left : "none");
		}
	}
	check(emfile == CYCLES, "EMFILE cycle: every cycle ends in EMFILE", "another errno");
	check(!bad, "EMFILE cycle: 50 cycles leave no descriptor and no endpoint file", why);
}

/* ---- a context with QPs */
static struct ibv_context *c;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[8192] __attribute__((aligned(4096)));

static struct ibv_qp *mkqp(struct ibv_pd *p, struct ibv_cq *cq, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = t,
				     .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *q = ibv_create_qp(p, &a);
	if (!q)
		die("create_qp");
	return q;
}

static void ud_ready(struct ibv_qp *q)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_QKEY))
		die("ud init");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE))
		die("ud rtr");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("ud rts");
}

static struct ibv_ah_attr ah_attr(uint8_t tc)
{
	union ibv_gid g;
	if (ibv_query_gid(c, 1, 1, &g))
		die("query_gid");
	return (struct ibv_ah_attr){.is_global = 1, .port_num = 1,
				    .grh = {.dgid = g, .sgid_index = 1, .hop_limit = 64, .traffic_class = tc}};
}

/* a connected QP (RC or UC) in RTS whose peer is QP number `dqpn` */
static void connect_qp(struct ibv_qp *q, uint32_t dqpn, int rc)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
		die("init");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dqpn,
				 .max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = ah_attr(0)};
	int m = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (ibv_modify_qp(q, &a, m | (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)))
		die("rtr");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
				 .max_rd_atomic = 1};
	m = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (ibv_modify_qp(q, &a, m | (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0)))
		die("rts");
}

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	for (int i = 0; i < ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n > 0;
		usleep(1000);
	}
	return 0;
}

static void post_recv(struct ibv_qp *q, size_t off)
{
	struct ibv_sge s = {.addr = (uintptr_t)buf + off, .length = 40 + 64, .lkey = mr->lkey};
	struct ibv_recv_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1}, *bad;
	if (ibv_post_recv(q, &w, &bad))
		die("post_recv");
}

static void ud_send(struct ibv_qp *q, struct ibv_ah *ah, uint32_t dqpn)
{
	struct ibv_sge s = {.addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey};
	struct ibv_send_wr w = {.opcode = IBV_WR_SEND, .sg_list = &s, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
				.wr.ud = {.ah = ah, .remote_qpn = dqpn, .remote_qkey = QKEY}},
			   *bad;
	if (ibv_post_send(q, &w, &bad))
		die("post_send");
}

/* (a) arming a CQ whose handle names no CQ of the context: rxe's kernel
 * command finds none (ENOENT; the handle of a PD: EINVAL) */
static void req_notify_bad_handle(void)
{
	struct ibv_cq *cq = ibv_create_cq(c, 4, NULL, NULL, 0);
	struct ibv_pd *p = ibv_alloc_pd(c);
	char why[96];
	if (!cq || !p)
		die("cq/pd");
	uint32_t h = cq->handle;
	cq->handle = h + 1000;
	errno = 0;
	int r = ibv_req_notify_cq(cq, 0), e = errno;
	snprintf(why, sizeof(why), "returned %d errno %d, rxe: %d (ENOENT) errno %d", r, e, ENOENT, ENOENT);
	check(r == ENOENT && e == ENOENT, "req_notify_cq on a CQ whose handle names nothing: ENOENT (rxe)", why);
	cq->handle = p->handle;
	r = ibv_req_notify_cq(cq, 1);
	snprintf(why, sizeof(why), "returned %d, rxe: %d (EINVAL)", r, EINVAL);
	check(r == EINVAL, "req_notify_cq on a CQ with a PD's handle: EINVAL (rxe)", why);
	cq->handle = h;
	check(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq with its own handle again: 0", "refused");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(p);
}

/* (b) the traffic class in the receiver's GRH area: for a ::ffff: GID the
 * IPv4 header in its last 20 bytes (TOS = traffic class, TTL = hop limit,
 * destination 127.0.0.1 in the last 4 bytes), as rxe; wc.sl = 2 says so
 * (UCX's ud_verbs reads the destination address by it) */
static void ud_traffic_class(void)
{
	struct ibv_cq *cq = ibv_create_cq(c, 8, NULL, NULL, 0);
	struct ibv_qp *a = mkqp(pd, cq, IBV_QPT_UD), *b = mkqp(pd, cq, IBV_QPT_UD);
	struct ibv_ah_attr aa = ah_attr(0x68);
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	struct ibv_wc wc = {0};
	char why[160];
	ud_ready(a);
	ud_ready(b);
	memset(buf + 4096, 0xee, 40);
	post_recv(b, 4096);
	ud_send(a, ah, b->qp_num);
	int got = 0;
	for (int i = 0; i < 2 && wait_wc(cq, &wc, 2000); i++)
		if (wc.opcode == IBV_WC_RECV) {
			got = 1;
			break;
		}
	const unsigned char *g = (const unsigned char *)buf + 4096, lo[4] = {127, 0, 0, 1};
	int zeros = 1;
	for (int i = 0; i < 20; i++)
		zeros &= g[i] == 0;
	snprintf(why, sizeof(why), "received %d status %d; byte 20 0x%02x, TOS 0x%02x, TTL %u, first 20 zero %d, sl %u",
		 got, wc.status, g[20], g[21], g[28], zeros, wc.sl);
	check(got && !wc.status && zeros && g[20] == 0x45 && g[21] == 0x68 && g[28] == 64 && !memcmp(g + 36, lo, 4),
	      "UD traffic class 0x68 arrives as the TOS of the IPv4 header in the GRH area (rxe)", why);
	check(got && (wc.wc_flags & IBV_WC_GRH) && wc.sl == 2,
	      "UD receive: IBV_WC_GRH and sl 2 (IPv4 header, as mlx5 reports it for UCX)", why);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_ah(ah);
	ibv_destroy_cq(cq);
}

/* (c) a UD SEND addressed to an RC (UC) QP of another context that is
 * connected to the sender's QP number: dropped (rxe: a UD opcode is not of
 * the QP's transport); the QP still takes its own transport's SEND */
static void ud_send_to_connected(int rc)
{
	struct ibv_context *c2 = ibv_open_device(dev);
	struct ibv_pd *pd2 = c2 ? ibv_alloc_pd(c2) : NULL;
	struct ibv_mr *mr2 = pd2 ? ibv_reg_mr(pd2, buf + 6144, 2048, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr2)
		die("second context");
	struct ibv_cq *cq = ibv_create_cq(c, 8, NULL, NULL, 0), *cq2 = ibv_create_cq(c2, 8, NULL, NULL, 0);
	struct ibv_qp *u = mkqp(pd, cq, IBV_QPT_UD), *q = mkqp(pd2, cq2, rc ? IBV_QPT_RC : IBV_QPT_UC);
	struct ibv_ah_attr aa = ah_attr(0);
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	struct ibv_wc wc;
	char name[128];
	ud_ready(u);
	connect_qp(q, u->qp_num, rc);
	struct ibv_sge s = {.addr = (uintptr_t)buf + 6144, .length = 64, .lkey = mr2->lkey};
	struct ibv_recv_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1}, *bad;
	if (ibv_post_recv(q, &w, &bad))
		die("post_recv");
	ud_send(u, ah, q->qp_num);
	int sent = wait_wc(cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS;
	int recv = wait_wc(cq2, &wc, 500);
	snprintf(name, sizeof(name), "UD SEND to a%s QP connected to the sender's number: dropped (rxe)",
		 rc ? "n RC" : " UC");
	check(sent && !recv, name, !sent ? "the UD send did not complete" : "the receive completed");
	ibv_destroy_qp(u);
	ibv_destroy_qp(q);
	ibv_destroy_ah(ah);
	ibv_destroy_cq(cq);
	ibv_destroy_cq(cq2);
	ibv_dereg_mr(mr2);
	ibv_dealloc_pd(pd2);
	ibv_close_device(c2);
}

int main(void)
{
	int n;
	setvbuf(stdout, NULL, _IONBF, 0);
	struct ibv_device **l = ibv_get_device_list(&n);
	for (int i = 0; l && i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), "swr0"))
			dev = l[i];
	if (!dev)
		die("no swr0");
	emfile_cycle();
	if (!(c = ibv_open_device(dev)) || !(pd = ibv_alloc_pd(c)) ||
	    !(mr = ibv_reg_mr(pd, buf, 6144, IBV_ACCESS_LOCAL_WRITE)))
		die("open");
	req_notify_bad_handle();
	ud_traffic_class();
	ud_send_to_connected(1);
	ud_send_to_connected(0);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(c);
	ibv_free_device_list(l);
	return failures ? 1 : 0;
}
