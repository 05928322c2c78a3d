/*
 * compat-tests/wire-hostile/victim.c: a program that carries real traffic
 * over a wire device while an attacker sends hostile packets at it.
 *
 *   victim server DEV LOCAL PEER ATTACKER
 *   victim client DEV LOCAL PEER
 *
 * Both: an RC QP "T" (path MTU 1024, PSNs 0) whose address vector is
 * ::ffff:PEER; print "qpn T RKEY VA" (the server: its traffic MR, 9 pages,
 * remote read/write; page 8 is a canary the client never touches, 0xc3),
 * then wait for "peer QPN [RKEY VA]" on stdin and go to RTS ("ready").
 * The client then loops: RDMA WRITE of 2048 bytes of pattern(i) into page
 * i % 8 of the server's MR, RDMA READ of them back (checked), SEND with
 * immediate i of 2048 bytes of pattern(i) (checked by the server), about
 * 2 ms apart.  The server also has, in a second PD (the attacker's):
 *   H   an RC QP whose peer is ATTACKER (dest QPN 0x333, PSNs 0, path MTU
 *       1024, max_dest_rd_atomic 16), 8 receives of 4096 bytes posted;
 *   U   the same as UC;  D  a UD QP, Q_Key 0x11111111, 8 receives;
 *   RESET, INIT, ERR  RC QPs in those states (ERR: RTS towards ATTACKER,
 *       then error);
 *   HMR a 4096-byte MR (remote read/write/atomic) between two unregistered
 *       guard pages (0xa5); a deregistered MR's R_Key ("dead").
 * Commands (one a line, answers one line unless said):
 *   stat     client: "stat ITER BAD STATUS RSS_KB"; server: "stat SENDS
 *            BAD HRECV URECV DRECV RSS_KB" (BAD: data that did not match;
 *            STATUS: the first error completion's status, 0 none)
 *   targets  (server) "targets h=.. u=.. d=.. reset=.. init=.. err=.. hva=..
 *            hrkey=.. tva=.. trkey=.. dead=.." (roce_hostile's keys)
 *   arm      (server) H and U destroyed and made anew, HMR zeroed:
 *            "armed H U"
 *   check    (server) "check GUARDS CANARY" (1: intact)
 *   states   (server) "states H U D RESET INIT ERR T" (ibv_qp_state)
 *   peek OFF (server) 8 bytes of HMR at OFF, hex
 *   quit
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "../common/qpsetup.h"

#define LEN 2048
#define PAGES 9
enum { Q_T, Q_H, Q_U, Q_D, Q_RESET, Q_INIT, Q_ERR, NQ };

static struct ibv_context *ctx;
static struct ibv_pd *pd_t, *pd_h;
static struct ibv_cq *cq;
static struct ibv_qp *qp[NQ];
static struct ibv_mr *tmr, *hmr, *rmr, *rmr_h, *lmr;
static unsigned char *tbuf, *hpage, *rbuf, *lbuf;
static uint32_t dead_rkey;
static int gid = -1, server;
static const char *peer_ip, *att_ip;
static unsigned long sends, bad, iter, cnt[NQ];
static int first_status;

static unsigned char pat(unsigned long i, unsigned j)
{
	return (unsigned char)(i * 131 + j * 7 + (j >> 8) + 1);
}

/* the index of the RoCE v2 GID ::ffff:IP (rxe lists each address twice,
 * RoCE v1 and v2) */
static int gid_of(const char *ip)
{
	struct in_addr a;
	struct ibv_gid_entry e;
	static const unsigned char pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (inet_pton(AF_INET, ip, &a) != 1)
		return -1;
	for (int i = 0; i < 1024; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(e.gid.raw, pfx, 12) &&
		    !memcmp(e.gid.raw + 12, &a, 4))
			return i;
	}
	return -1;
}

static long rss_kb(void)
{
	char l[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(l, sizeof(l), f))
		if (sscanf(l, "VmRSS: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static struct ibv_qp *mkqp(struct ibv_pd *pd, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = t,
				      .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
	return ibv_create_qp(pd, &ia);
}

static void conn(struct qps_conn *c, const char *ip, uint32_t dqpn)
{
	qps_defaults(c);
	c->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		    IBV_ACCESS_REMOTE_ATOMIC;
	c->dest_qpn = dqpn;
	c->qkey = 0x11111111;
	c->sgid_index = gid;
	c->max_dest_rd_atomic = 16;
	c->max_rd_atomic = 16;
	c->timeout = 14;
	memset(c->dgid.raw, 0, 16);
	c->dgid.raw[10] = c->dgid.raw[11] = 0xff;
	inet_pton(AF_INET, ip, c->dgid.raw + 12);
}

static int post_recv(int q, int slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)rbuf + 4096 * (q * 16 + slot), .length = 4096,
			      .lkey = q == Q_T ? rmr->lkey : rmr_h->lkey};
	struct ibv_recv_wr wr = {.wr_id = ((uint64_t)q << 32) | slot, .sg_list = &sge, .num_sge = 1}, *b;
	return ibv_post_recv(qp[q], &wr, &b);
}

static int to_rts(int q, const char *ip, uint32_t dqpn, int recvs)
{
	struct qps_conn c;
	enum ibv_qp_state failed;
	conn(&c, ip, dqpn);
	if (qps_to_rts(qp[q], &c, &failed))
		return -1;
	for (int i = 0; i < recvs; i++)
		if (post_recv(q, i))
			return -1;
	return 0;
}

/* H and U (again): destroyed if they exist, created, to RTS towards the attacker */
static int arm(void)
{
	for (int q = Q_H; q <= Q_U; q++) {
		if (qp[q])
			ibv_destroy_qp(qp[q]);
		qp[q] = mkqp(pd_h, q == Q_H ? IBV_QPT_RC : IBV_QPT_UC);
		if (!qp[q] || to_rts(q, att_ip, 0x333, 8))
			return -1;
	}
	memset(hpage + 4096, 0, 4096);
	return 0;
}

static int server_setup(void)
{
	struct qps_conn c;
	enum ibv_qp_state failed;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	hpage = aligned_alloc(4096, 3 * 4096);
	memset(hpage, 0xa5, 3 * 4096);
	hmr = ibv_reg_mr(pd_h, hpage + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	unsigned char *dbuf = aligned_alloc(4096, 4096);
	struct ibv_mr *dmr = ibv_reg_mr(pd_h, dbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!hmr || !dmr)
		return -1;
	dead_rkey = dmr->rkey;
	ibv_dereg_mr(dmr);
	if (arm())
		return -1;
	qp[Q_D] = mkqp(pd_h, IBV_QPT_UD);
	conn(&c, att_ip, 0);
	if (!qp[Q_D] || qps_to_rts(qp[Q_D], &c, &failed))
		return -1;
	for (int i = 0; i < 8; i++)
		if (post_recv(Q_D, i))
			return -1;
	qp[Q_RESET] = mkqp(pd_h, IBV_QPT_RC);
	qp[Q_INIT] = mkqp(pd_h, IBV_QPT_RC);
	qp[Q_ERR] = mkqp(pd_h, IBV_QPT_RC);
	if (!qp[Q_RESET] || !qp[Q_INIT] || !qp[Q_ERR] || qps_modify(qp[Q_INIT], IBV_QPS_INIT, &c) ||
	    to_rts(Q_ERR, att_ip, 0x334, 0) || ibv_modify_qp(qp[Q_ERR], &a, IBV_QP_STATE))
		return -1;
	return 0;
}

/* the server's completions: T's SENDs checked and their receives posted
 * again; H, U, D receives counted and posted again */
static void server_poll(void)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(cq, 16, wc);
	for (int k = 0; k < n; k++) {
		int q = (int)(wc[k].wr_id >> 32), slot = (int)(wc[k].wr_id & 0xffff);
		if (q < 0 || q >= NQ)
			continue;
		if (wc[k].status != IBV_WC_SUCCESS) {
			if (q == Q_T && !first_status)
				first_status = wc[k].status;
			continue;
		}
		cnt[q]++;
		if (q == Q_T) {
			unsigned char *p = rbuf + 4096 * (q * 16 + slot);
			unsigned long i = ntohl(wc[k].imm_data);
			int ok = wc[k].byte_len == LEN && (wc[k].wc_flags & IBV_WC_WITH_IMM);
			for (unsigned j = 0; ok && j < LEN; j++)
				ok = p[j] == pat(i, j);
			sends++;
			bad += !ok;
		}
		if (qp[q])
			post_recv(q, slot);
	}
}

/* the client: one iteration at a time (WRITE, READ, SEND of pattern(i)),
 * then a pause of 2 ms; completion errors end the traffic */
static unsigned long peer_va;
static uint32_t peer_rkey;
static int outstanding;
static struct timespec next_at;

static int post3(void)
{
	unsigned long off = 4096 * (iter % 8);
	struct ibv_sge s0 = {.addr = (uintptr_t)lbuf, .length = LEN, .lkey = lmr->lkey};
	struct ibv_sge s1 = {.addr = (uintptr_t)lbuf + 4096, .length = LEN, .lkey = lmr->lkey};
	struct ibv_send_wr w[3], *b;
	for (unsigned j = 0; j < LEN; j++)
		lbuf[j] = pat(iter, j);
	memset(lbuf + 4096, 0, LEN);
	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){.wr_id = 0, .next = &w[1], .sg_list = &s0, .num_sge = 1,
				    .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};
	w[0].wr.rdma.remote_addr = peer_va + off;
	w[0].wr.rdma.rkey = peer_rkey;
	w[1] = w[0];
	w[1].wr_id = 1;
	w[1].next = &w[2];
	w[1].sg_list = &s1;
	w[1].opcode = IBV_WR_RDMA_READ;
	w[2] = (struct ibv_send_wr){.wr_id = 2, .sg_list = &s0, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
				    .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl((uint32_t)iter)};
	return ibv_post_send(qp[Q_T], w, &b);
}

static long ms_until(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000;
}

/* returns the poll timeout (ms) the main loop may sleep */
static int client_step(void)
{
	struct ibv_wc wc[4];
	if (first_status)
		return 100;
	if (!outstanding) {
		if (ms_until(&next_at) > 0)
			return 1;
		if (post3()) {
			first_status = -1;
			return 100;
		}
		outstanding = 3;
	}
	int n = ibv_poll_cq(cq, 4, wc);
	for (int k = 0; k < n; k++) {
		if (wc[k].status != IBV_WC_SUCCESS) {
			first_status = wc[k].status;
			return 100;
		}
		outstanding--;
	}
	if (outstanding)
		return 0;
	for (unsigned j = 0; j < LEN; j++)
		if (lbuf[4096 + j] != pat(iter, j)) {
			bad++;
			break;
		}
	iter++;
	clock_gettime(CLOCK_MONOTONIC, &next_at);
	next_at.tv_nsec += 2000000;
	if (next_at.tv_nsec >= 1000000000) {
		next_at.tv_sec++;
		next_at.tv_nsec -= 1000000000;
	}
	return 1;
}

static int qstate(int q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	return !qp[q] || ibv_query_qp(qp[q], &a, IBV_QP_STATE, &ia) ? -1 : (int)a.qp_state;
}

static int guards_ok(void)
{
	for (int j = 0; j < 4096; j++)
		if (hpage[j] != 0xa5 || hpage[8192 + j] != 0xa5)
			return 0;
	return 1;
}

static int canary_ok(void)
{
	for (int j = 0; j < 4096; j++)
		if (tbuf[8 * 4096 + j] != 0xc3)
			return 0;
	return 1;
}

static void command(const char *l)
{
	int v;
	int is_stat = !strncmp(l, "stat", 4) && (l[4] == '\n' || l[4] == ' ' || !l[4]);
	if (is_stat && !server)
		printf("stat %lu %lu %d %ld\n", iter, bad, first_status, rss_kb());
	else if (is_stat)
		printf("stat %lu %lu %lu %lu %lu %ld\n", sends, bad, cnt[Q_H], cnt[Q_U], cnt[Q_D], rss_kb());
	else if (!strncmp(l, "targets", 7))
		printf("targets h=%u u=%u d=%u reset=%u init=%u err=%u hva=%llu hrkey=%u tva=%llu trkey=%u dead=%u\n",
		       qp[Q_H]->qp_num, qp[Q_U]->qp_num, qp[Q_D]->qp_num, qp[Q_RESET]->qp_num, qp[Q_INIT]->qp_num,
		       qp[Q_ERR]->qp_num, (unsigned long long)(uintptr_t)(hpage + 4096), hmr->rkey,
		       (unsigned long long)(uintptr_t)tbuf, tmr->rkey, dead_rkey);
	else if (!strncmp(l, "arm", 3)) {
		/* (arm() first: the QPNs printed are the new QPs') */
		if (arm())
			printf("error arm\n");
		else
			printf("armed %u %u\n", qp[Q_H]->qp_num, qp[Q_U]->qp_num);
	}
	else if (!strncmp(l, "check", 5))
		printf("check %d %d\n", guards_ok(), canary_ok());
	else if (!strncmp(l, "states", 6))
		printf("states %d %d %d %d %d %d %d\n", qstate(Q_H), qstate(Q_U), qstate(Q_D), qstate(Q_RESET),
		       qstate(Q_INIT), qstate(Q_ERR), qstate(Q_T));
	else if (sscanf(l, "peek %d", &v) == 1 && v >= 0 && v <= 4088) {
		printf("peek %d ", v);
		for (int i = 0; i < 8; i++)
			printf("%02x", hpage[4096 + v + i]);
		printf("\n");
	} else
		printf("error unknown command\n");
	fflush(stdout);
}

static int open_dev(const char *name, const char *local)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	for (int i = 0; l && i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	return !ctx || (gid = gid_of(local)) < 0 ? -1 : 0;
}

static int common_setup(void)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	pd_t = ibv_alloc_pd(ctx);
	pd_h = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	tbuf = aligned_alloc(4096, PAGES * 4096);
	rbuf = aligned_alloc(4096, NQ * 16 * 4096);
	lbuf = aligned_alloc(4096, 2 * 4096);
	if (!pd_t || !pd_h || !cq || !tbuf || !rbuf || !lbuf)
		return -1;
	memset(tbuf, 0, PAGES * 4096);
	memset(tbuf + 8 * 4096, 0xc3, 4096);
	tmr = ibv_reg_mr(pd_t, tbuf, PAGES * 4096, acc);
	/* the receives of every QP: registered in both PDs */
	rmr = ibv_reg_mr(pd_t, rbuf, NQ * 16 * 4096, IBV_ACCESS_LOCAL_WRITE);
	rmr_h = ibv_reg_mr(pd_h, rbuf, NQ * 16 * 4096, IBV_ACCESS_LOCAL_WRITE);
	lmr = ibv_reg_mr(pd_t, lbuf, 2 * 4096, IBV_ACCESS_LOCAL_WRITE);
	qp[Q_T] = mkqp(pd_t, IBV_QPT_RC);
	return tmr && rmr && rmr_h && lmr && qp[Q_T] ? 0 : -1;
}

int main(int argc, char **argv)
{
	char line[256];
	unsigned qpn;
	unsigned long long va;
	unsigned rkey;

	/* No transparent huge pages for this process: khugepaged may collapse
	 * 40 kB of its small pages into one 2 MB page at any moment (VmRSS
	 * +2008 kB once, then flat, seen in vm-hostile's rss/client), which is
	 * no growth of what the library uses; the rss checks measure that. */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	server = argc == 6 && !strcmp(argv[1], "server");
	if (!server && !(argc == 5 && !strcmp(argv[1], "client")))
		return 2;
	peer_ip = argv[4];
	att_ip = server ? argv[5] : NULL;
	if (open_dev(argv[2], argv[3]) || common_setup() || (server && server_setup())) {
		printf("error: set-up failed (device %s, GID of %s)\n", argv[2], argv[3]);
		return 1;
	}
	printf("qpn %u %u %llu\n", qp[Q_T]->qp_num, tmr->rkey, (unsigned long long)(uintptr_t)tbuf);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) ||
	    sscanf(line, "peer %u %u %llu", &qpn, &rkey, &va) != 3) {
		if (!(server && sscanf(line, "peer %u", &qpn) == 1)) {
			printf("error: no peer line\n");
			return 1;
		}
	}
	peer_rkey = rkey;
	peer_va = va;
	if (to_rts(Q_T, peer_ip, qpn, server ? 16 : 0)) {
		printf("error: T to RTS\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &next_at);
	for (;;) {
		int wait = server ? 1 : client_step();
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (server)
			server_poll();
		if (poll(&p, 1, wait) > 0) {
			if (!fgets(line, sizeof(line), stdin) || !strncmp(line, "quit", 4))
				break;
			command(line);
		}
	}
	return 0;
}
