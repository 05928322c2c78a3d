/*
 * compat-tests/wire-strict/victim.c: the QPs that crafted packets are sent
 * at.  On device DEV it creates an RC and a UC QP (and a UD QP), each with
 * an address vector to ::ffff:PEER (RoCE v2 GID of ours for LOCAL),
 * destination QPN 0x111, PSNs 0, path MTU 1024, two receives of 4096 bytes
 * posted, and one 4096-byte MR (local write, remote write/read) that the
 * packets may aim at.  It prints
 *   ready RCQPN UCQPN UDQPN RKEY VA
 * then answers commands on stdin, one a line:
 *   peek OFF     "peek OFF <8 bytes hex>": the MR at OFF
 *   poll MS      every completion within MS ms: "wc <rc|uc|ud> STATUS LEN",
 *                then "state RC UC UD" (ibv_query_qp) and "end"
 *   post 1|2     an RDMA READ on the UC QP (1) or WRITE on the UD QP (2):
 *                "posted <ibv_post_send's return>"
 *   limits       "limits R1 R2 R3": RTS with max_rd_atomic 129, timeout 32,
 *                then 128 and 31 (ibv_modify_qp's returns)
 *   quit
 *   victim DEV LOCAL PEER
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../common/qpsetup.h"

static struct ibv_qp *qp[3];
static const char *names[3] = {"rc", "uc", "ud"};

static int gid_of(struct ibv_context *ctx, const char *ip)
{
	struct in_addr a;
	union ibv_gid g;
	if (inet_pton(AF_INET, ip, &a) != 1)
		return -1;
	for (int i = 0; i < 1024; i++) {
		if (ibv_query_gid(ctx, 1, i, &g))
			break;
		static const unsigned char pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (!memcmp(g.raw, pfx, 12) && !memcmp(g.raw + 12, &a, 4))
			return i;
	}
	return -1;
}

static int setup(struct ibv_pd *pd, struct ibv_cq *cq, int i, enum ibv_qp_type t, int gid,
		 const char *peer, struct ibv_mr *rmr)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = t,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct qps_conn c;
	enum ibv_qp_state failed;
	struct ibv_sge sge = {.addr = (uintptr_t)rmr->addr + 4096 * i, .length = 4096, .lkey = rmr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	qp[i] = ibv_create_qp(pd, &ia);
	if (!qp[i])
		return -1;
	qps_defaults(&c);
	c.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	c.dest_qpn = 0x111;
	c.qkey = 0x11111111;
	c.sgid_index = gid;
	memcpy(c.dgid.raw, (unsigned char[12]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 12);
	if (inet_pton(AF_INET, peer, c.dgid.raw + 12) != 1)
		return -1;
	if (qps_to_rts(qp[i], &c, &failed))
		return -1;
	return ibv_post_recv(qp[i], &wr, &bad) || ibv_post_recv(qp[i], &wr, &bad);
}

static void poll_for(struct ibv_cq *cq, int ms)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		while (ibv_poll_cq(cq, 1, &wc) == 1)
			printf("wc %s %d %u\n", names[wc.wr_id < 3 ? wc.wr_id : 0], wc.status, wc.byte_len);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	printf("state");
	for (int i = 0; i < 3; i++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		printf(" %d", ibv_query_qp(qp[i], &a, IBV_QP_STATE, &ia) ? -1 : (int)a.qp_state);
	}
	printf("\nend\n");
}

int main(int argc, char **argv)
{
	struct ibv_device **l;
	struct ibv_context *ctx = NULL;
	char line[128];
	int n, gid;

	if (argc != 4)
		return 2;
	l = ibv_get_device_list(&n);
	for (int i = 0; l && i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), argv[1]))
			ctx = ibv_open_device(l[i]);
	if (!ctx || (gid = gid_of(ctx, argv[2])) < 0) {
		printf("error: no device %s or no GID for %s\n", argv[1], argv[2]);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	unsigned char *buf = aligned_alloc(4096, 4096), *rbuf = aligned_alloc(4096, 3 * 4096);
	memset(buf, 0, 4096);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, 3 * 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!pd || !cq || !mr || !rmr || setup(pd, cq, 0, IBV_QPT_RC, gid, argv[3], rmr) ||
	    setup(pd, cq, 1, IBV_QPT_UC, gid, argv[3], rmr) || setup(pd, cq, 2, IBV_QPT_UD, gid, argv[3], rmr)) {
		printf("error: set-up failed\n");
		return 1;
	}
	printf("ready %u %u %u %u %llu\n", qp[0]->qp_num, qp[1]->qp_num, qp[2]->qp_num, mr->rkey,
	       (unsigned long long)(uintptr_t)buf);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int v;
		if (sscanf(line, "peek %d", &v) == 1 && v >= 0 && v <= 4088) {
			printf("peek %d ", v);
			for (int i = 0; i < 8; i++)
				printf("%02x", buf[v + i]);
			printf("\n");
		} else if (sscanf(line, "poll %d", &v) == 1) {
			poll_for(cq, v);
		} else if (sscanf(line, "post %d", &v) == 1 && v >= 1 && v <= 2) {
			/* an RDMA READ on the UC QP (1), an RDMA WRITE on the UD QP (2) */
			struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
			struct ibv_send_wr wr = {.wr_id = v, .sg_list = &sge, .num_sge = 1,
						 .opcode = v == 1 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
						 .send_flags = IBV_SEND_SIGNALED}, *bad;
			wr.wr.rdma.remote_addr = (uintptr_t)buf;
			wr.wr.rdma.rkey = mr->rkey;
			printf("posted %d\n", ibv_post_send(qp[v], &wr, &bad));
		} else if (!strncmp(line, "limits", 6)) {
			/* RTR -> RTS of a new RC QP with timeout 32, then with
			 * max_rd_atomic 129 (over the device's max_qp_rd_atom 128),
			 * then with 128 and 31 (each only if the one before was
			 * refused): "limits <max_rd_atomic> <timeout> <both good>" */
			struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
						      .cap = {.max_send_wr = 1, .max_recv_wr = 1,
							      .max_send_sge = 1, .max_recv_sge = 1}};
			struct ibv_qp *q = ibv_create_qp(pd, &ia);
			struct qps_conn c;
			struct ibv_qp_attr a;
			int r[3] = {-1, -1, -1}, m;
			qps_defaults(&c);
			c.sgid_index = gid;
			c.dgid.raw[10] = c.dgid.raw[11] = 0xff;
			inet_pton(AF_INET, argv[3], c.dgid.raw + 12);
			if (q && !qps_modify(q, IBV_QPS_INIT, &c) && !qps_modify(q, IBV_QPS_RTR, &c)) {
				m = qps_attr(IBV_QPS_RTS, IBV_QPT_RC, &c, &a);
				a.timeout = 32;
				r[1] = ibv_modify_qp(q, &a, m);
				a.timeout = 31;
				a.max_rd_atomic = 129;
				r[0] = ibv_modify_qp(q, &a, m);
				a.max_rd_atomic = 128;
				r[2] = ibv_modify_qp(q, &a, m);
			}
			printf("limits %d %d %d\n", r[0], r[1], r[2]);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
		fflush(stdout);
	}
	return 0;
}
