/* compat-tests/soft/wakeup.c: completion events as UCX's wakeup mode uses
 * them (ucx_perftest -E sleep; uct_ib_iface_pre_arm/arm_cq, ucp_worker_wait).
 *
 * One process, two RC QPs of one context connected to each other, one CQ
 * with a completion channel whose descriptor is non-blocking and waited on
 * with edge-triggered epoll.  UCX polls, drains the channel, arms the CQ
 * and sleeps without polling again: a completion that came after its last
 * poll and before its arm must still wake it (a Mellanox CQ's arm doorbell
 * carries the consumer index and fires at once when completions are
 * unpolled; swr0 hung there, issue "UCX wakeup").  Output: one
 * "PASS <name>" / "FAIL <name>: why" line per check; exit 0 when every
 * check passed. */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/qpsetup.h"

static struct ibv_context *ctx;
static struct ibv_comp_channel *ch;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static struct ibv_mr *mr;
static char buf[2][64];
static int ep;

static void connect_qp(struct ibv_qp *q, uint32_t dqpn)
{
	struct qps_conn c;

	qps_defaults(&c); /* MTU 1024, timeout 14, 7 retries, RNR timer 12 */
	c.access = 0;
	c.dest_qpn = dqpn;
	c.sgid_index = 1;
	if (ibv_query_gid(ctx, 1, 1, &c.dgid))
		die("gid");
	if (qps_to_rts(q, &c, NULL))
		die("modify_qp to RTS");
}

static void setup(void)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l)
		die("no device");
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), "swr0"))
			ctx = ibv_open_device(l[i]);
	if (!ctx)
		die("open swr0");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	if (!pd || !ch)
		die("pd/channel");
	cq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	if (!cq || !mr)
		die("cq/mr");
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 } };
	qa = ibv_create_qp(pd, &a);
	qb = ibv_create_qp(pd, &a);
	if (!qa || !qb)
		die("qp");
	connect_qp(qa, qb->qp_num);
	connect_qp(qb, qa->qp_num);
	/* As UCX: the channel non-blocking, in an edge-triggered epoll set. */
	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK))
		die("fcntl");
	ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ev))
		die("epoll");
}

/* A receive on qb and an 8-byte send from qa (both signaled: two
 * completions). */
static void ping(void)
{
	struct ibv_sge rs = { (uintptr_t)buf[1], 8, mr->lkey }, ss = { (uintptr_t)buf[0], 8, mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_send_wr sw = { .wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bsw;
	if (ibv_post_recv(qb, &rw, &brw) || ibv_post_send(qa, &sw, &bsw))
		die("post");
}

/* uct_ib_iface_pre_arm: takes (and acknowledges) every event written. */
static int drain_events(void)
{
	struct ibv_cq *c;
	void *cc;
	int k = 0;
	while (ibv_get_cq_event(ch, &c, &cc) == 0)
		k++;
	if (k)
		ibv_ack_cq_events(cq, k);
	return k;
}

static int poll_all(void)
{
	struct ibv_wc wc[8];
	int k = 0, n;
	while ((n = ibv_poll_cq(cq, 8, wc)) > 0) {
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				die("completion status");
		k += n;
	}
	return k;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void)
{
	char why[160];
	struct epoll_event ev;
	setup();

	/* 1. The completions land after the last (empty) poll and before the
	 * arm: the arm must wake the sleeper (edge-triggered: a new write). */
	poll_all();
	drain_events();
	ping();
	usleep(200000); /* the context's thread delivers both meanwhile */
	ibv_req_notify_cq(cq, 0);
	int w = epoll_wait(ep, &ev, 1, 3000);
	int got = drain_events(), k = poll_all();
	snprintf(why, sizeof why, "epoll_wait %d, %d events, %d completions (2 polled before the arm's sleep ends)", w, got, k);
	check(w == 1 && got >= 1 && k == 2, "arm with unpolled completions wakes", why);

	/* 2. UCX's loop: poll; when nothing, drain the channel, arm, sleep in
	 * edge-triggered epoll_wait (no poll after the arm). */
	int iters = 500, done = 0, timeouts = 0;
	double t0 = now_s();
	for (int i = 0; i < iters && !timeouts; i++) {
		ping();
		for (int c = 0; c < 2;) {
			int n = poll_all();
			c += n;
			if (n || c >= 2)
				continue;
			if (drain_events())
				continue; /* UCS_ERR_BUSY: progress again */
			ibv_req_notify_cq(cq, 0);
			if (epoll_wait(ep, &ev, 1, 3000) != 1) {
				timeouts++;
				break;
			}
		}
		done += !timeouts;
	}
	double us = (now_s() - t0) * 1e6 / (done ? done : 1);
	snprintf(why, sizeof why, "%d of %d round trips, then a 3 s sleep never woken", done, iters);
	check(!timeouts, "poll, arm, sleep (edge-triggered) never misses a completion", why);
	printf("# %.1f us per send/receive pair in the loop\n", us);

	/* 3. A solicited-only arm is not fired by successful unsolicited
	 * completions already in the CQ (nor by new ones). */
	poll_all();
	drain_events();
	ping();
	usleep(200000);
	ibv_req_notify_cq(cq, 1);
	w = epoll_wait(ep, &ev, 1, 300);
	got = drain_events();
	k = poll_all();
	snprintf(why, sizeof why, "epoll_wait %d, %d events, %d completions", w, got, k);
	check(w == 0 && got == 0 && k == 2, "solicited-only arm: no event for unsolicited completions", why);
	return failures ? 1 : 0;
}
