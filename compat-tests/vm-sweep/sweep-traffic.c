/*
 * vm-sweep cases (included by sweep.c) that need traffic: two QPs of the
 * child's context on the same device, joined to each other (loopback):
 * zero-length operations and memory regions, UD (the traffic class in the
 * receiver's GRH, a UD send to an RC QP's number, RDMA/atomics on UD), and
 * memory-window binds.  A line's DETAIL names what each side saw, e.g.
 * "post=0 send=SUCCESS recv=SUCCESS/0" (the completion status, and the
 * received byte count) or "recv=none" (no completion within 2 s).
 * Written for this project (not from rdma-core).
 */

#define QKEY 0x11111111u

typedef struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
} P;

static struct ibv_qp *traffic_qp(E *e, struct ibv_cq *cq, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = t, .sq_sig_all = 0,
				     .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2}};
	struct ibv_qp *q = ibv_create_qp(e->pd, &a);
	if (!q)
		setup_fail("create_qp");
	return q;
}

static void rc_connect(E *e, struct ibv_qp *q, uint32_t dqpn)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = RW | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND};
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
		setup_fail("to_init");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dqpn,
				 .max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = good_ah_attr(e)};
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		setup_fail("to_rtr");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
				 .max_rd_atomic = 1};
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC))
		setup_fail("to_rts");
}

static void ud_ready(struct ibv_qp *q)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_QKEY))
		setup_fail("ud_init");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE))
		setup_fail("ud_rtr");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		setup_fail("ud_rts");
}

/* two QPs of type t (a: the requester, b: the responder); RC ones connected */
static P pair(E *e, enum ibv_qp_type t)
{
	P p;
	if (!(p.cqa = ibv_create_cq(e->ctx, 32, NULL, NULL, 0)) || !(p.cqb = ibv_create_cq(e->ctx, 32, NULL, NULL, 0)))
		setup_fail("create_cq");
	p.a = traffic_qp(e, p.cqa, t);
	p.b = traffic_qp(e, p.cqb, t);
	if (t == IBV_QPT_RC) {
		rc_connect(e, p.a, p.b->qp_num);
		rc_connect(e, p.b, p.a->qp_num);
	} else {
		ud_ready(p.a);
		ud_ready(p.b);
	}
	return p;
}

/* one completion within 2 s (1), or none (0) */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int i = 0; i < 2000; i++) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			return 0;
		if (n)
			return 1;
		usleep(1000);
	}
	return 0;
}

static const char *st(int s)
{
	static const char *n[] = {"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
				  "WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
				  "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR",
				  "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
				  "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR"};
	static char b[16];
	if (s >= 0 && s < (int)(sizeof(n) / sizeof(n[0])))
		return n[s];
	snprintf(b, sizeof(b), "status%d", s);
	return b;
}

/* appends "name=STATUS[/len]" or "name=none" to b */
static void note_wc(char *b, size_t sz, const char *name, struct ibv_cq *cq, int with_len)
{
	struct ibv_wc wc;
	size_t l = strlen(b);
	if (!wait_wc(cq, &wc))
		snprintf(b + l, sz - l, " %s=none", name);
	else if (with_len && wc.status == IBV_WC_SUCCESS)
		snprintf(b + l, sz - l, " %s=%s/%u", name, st(wc.status), wc.byte_len);
	else
		snprintf(b + l, sz - l, " %s=%s", name, st(wc.status));
}

/* posts wr on p->a (signaled); DETAIL: post's return, a's completion, and
 * (recv) b's receive completion */
static void run_wr(P *p, struct ibv_send_wr *wr, int recv)
{
	struct ibv_send_wr *bad = NULL;
	char b[160];
	wr->send_flags |= IBV_SEND_SIGNALED;
	int r = ibv_post_send(p->a, wr, &bad);
	snprintf(b, sizeof(b), "post=%s", r ? ename(r) : "0");
	if (!r)
		note_wc(b, sizeof(b), "send", p->cqa, 0);
	if (recv)
		note_wc(b, sizeof(b), "recv", p->cqb, 1);
	out("wc", b);
}

static void post_recv_b(E *e, P *p, struct ibv_mr *mr, uint32_t len)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf + 2048, .length = len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 7, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	if (ibv_post_recv(p->b, &wr, &bad))
		setup_fail("post_recv");
}

/* ---- zero-length memory regions and operations */
C(reg_mr_zero_len_unaligned, 0) { PTR(ibv_reg_mr(e->pd, e->buf + 100, 0, IBV_ACCESS_LOCAL_WRITE)); }
C(reg_mr_zero_len_remote, 0) { PTR(ibv_reg_mr(e->pd, e->buf + 100, 0, RW)); }
C(rc_send_zero_len_no_sge, 0)
{
	P p = pair(e, IBV_QPT_RC);
	post_recv_b(e, &p, e->mr, 64);
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	run_wr(&p, &wr, 1);
}
C(rc_send_zero_len_sge, 0)
{
	P p = pair(e, IBV_QPT_RC);
	post_recv_b(e, &p, e->mr, 64);
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 0, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND, .sg_list = &s, .num_sge = 1};
	run_wr(&p, &wr, 1);
}
C(rc_send_zero_len_bad_lkey, 0)
{
	P p = pair(e, IBV_QPT_RC);
	post_recv_b(e, &p, e->mr, 64);
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 0, .lkey = e->mr->lkey ^ 0x5a5a00};
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND, .sg_list = &s, .num_sge = 1};
	run_wr(&p, &wr, 1);
}
C(rc_write_zero_len, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE,
				 .wr.rdma = {.remote_addr = (uintptr_t)e->buf, .rkey = e->mr->rkey}};
	run_wr(&p, &wr, 0);
}
C(rc_write_zero_len_bad_rkey, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE, .wr.rdma = {.remote_addr = 0x1000, .rkey = 0xdead5a00}};
	run_wr(&p, &wr, 0);
}
C(rc_write_imm_zero_len, 0)
{
	P p = pair(e, IBV_QPT_RC);
	post_recv_b(e, &p, e->mr, 64);
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(5),
				 .wr.rdma = {.remote_addr = (uintptr_t)e->buf, .rkey = e->mr->rkey}};
	run_wr(&p, &wr, 1);
}
C(rc_read_zero_len, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_READ,
				 .wr.rdma = {.remote_addr = (uintptr_t)e->buf, .rkey = e->mr->rkey}};
	run_wr(&p, &wr, 0);
}
C(rc_read_zero_len_bad_rkey, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_READ, .wr.rdma = {.remote_addr = 0x1000, .rkey = 0xdead5a00}};
	run_wr(&p, &wr, 0);
}
/* a zero-length MR where the device registers one (else SKIP: setup) */
static struct ibv_mr *zero_mr(E *e)
{
	struct ibv_mr *m = ibv_reg_mr(e->pd, e->buf + 100, 0, RW);
	if (!m)
		setup_fail("reg_mr zero length");
	return m;
}
C(rc_send_from_zero_mr, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_mr *z = zero_mr(e);
	post_recv_b(e, &p, e->mr, 64);
	struct ibv_sge s = {.addr = (uintptr_t)e->buf + 100, .length = 0, .lkey = z->lkey};
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND, .sg_list = &s, .num_sge = 1};
	run_wr(&p, &wr, 1);
}
C(rc_write_to_zero_mr, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_mr *z = zero_mr(e);
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE,
				 .wr.rdma = {.remote_addr = (uintptr_t)e->buf + 100, .rkey = z->rkey}};
	run_wr(&p, &wr, 0);
}
C(rc_read_from_zero_mr, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_mr *z = zero_mr(e);
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_READ,
				 .wr.rdma = {.remote_addr = (uintptr_t)e->buf + 100, .rkey = z->rkey}};
	run_wr(&p, &wr, 0);
}
C(rc_write_8_to_zero_mr, 0)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_mr *z = zero_mr(e);
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 8, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE, .sg_list = &s, .num_sge = 1,
				 .wr.rdma = {.remote_addr = (uintptr_t)e->buf + 100, .rkey = z->rkey}};
	run_wr(&p, &wr, 0);
}

/* ---- UD */
static struct ibv_ah *ah_tc(E *e, uint8_t tc)
{
	struct ibv_ah_attr a = good_ah_attr(e);
	a.grh.traffic_class = tc;
	struct ibv_ah *ah = ibv_create_ah(e->pd, &a);
	if (!ah)
		setup_fail("create_ah");
	return ah;
}

static void ud_send(E *e, P *p, struct ibv_ah *ah, uint32_t dqpn)
{
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 16, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND, .sg_list = &s, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
				 .wr.ud = {.ah = ah, .remote_qpn = dqpn, .remote_qkey = QKEY}},
			   *bad = NULL;
	if (ibv_post_send(p->a, &wr, &bad))
		setup_fail("post_send");
}

/* the traffic class (and hop limit) the receiver finds in its GRH: for
 * RoCE v2 over IPv4, the IPv4 header in the GRH's last 20 bytes */
C(ud_traffic_class_in_grh, 0)
{
	P p = pair(e, IBV_QPT_UD);
	struct ibv_wc wc;
	char b[96];
	memset(e->buf + 2048, 0xee, 40);
	post_recv_b(e, &p, e->mr, 40 + 64);
	ud_send(e, &p, ah_tc(e, 0x68), p.b->qp_num);
	if (!wait_wc(p.cqb, &wc)) {
		out("wc", "recv=none");
		return;
	}
	const unsigned char *g = (const unsigned char *)e->buf + 2048;
	if (g[20] == 0x45)
		snprintf(b, sizeof(b), "%s grh=ipv4 tos=0x%02x ttl=%u", st(wc.status), g[21], g[28]);
	else
		snprintf(b, sizeof(b), "%s grh=v%u tclass=0x%02x hop=%u", st(wc.status), g[0] >> 4,
			 ((g[0] & 15) << 4) | (g[1] >> 4), g[7]);
	out("wc", b);
}
/* an RC QP (in RTS, a receive posted) addressed by a UD send: dropped */
C(ud_send_to_rc_qpn, 0)
{
	P p = pair(e, IBV_QPT_UD);
	P r = pair(e, IBV_QPT_RC);
	char b[96] = "";
	post_recv_b(e, &r, e->mr, 64);
	ud_send(e, &p, ah_tc(e, 0), r.b->qp_num);
	note_wc(b, sizeof(b), "send", p.cqa, 0);
	note_wc(b, sizeof(b), "rc_recv", r.cqb, 1);
	out("wc", b + 1);
}
/* an RC (UC) QP connected to the UD QP's number, in RTS with a receive
 * posted, addressed by that UD QP: dropped (rxe: a UD opcode at an RC/UC
 * QP), though the source QPN is the one the QP is connected to */
static void ud_send_to_connected(E *e, enum ibv_qp_type t)
{
	P p = pair(e, IBV_QPT_UD);
	P r = pair(e, IBV_QPT_RC);
	struct ibv_qp *q = r.b;
	char b[96] = "";
	if (t == IBV_QPT_UC)
		q = traffic_qp(e, r.cqb, IBV_QPT_UC);
	if (t == IBV_QPT_UC) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
					.qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
		if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
			setup_fail("uc_init");
		a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					 .dest_qp_num = p.a->qp_num, .ah_attr = good_ah_attr(e)};
		if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
			setup_fail("uc_rtr");
		a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS};
		if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
			setup_fail("uc_rts");
	} else {
		/* r.b again from RESET, now connected to the UD QP */
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
		if (ibv_modify_qp(q, &a, IBV_QP_STATE))
			setup_fail("rc_reset");
		rc_connect(e, q, p.a->qp_num);
	}
	struct ibv_sge s = {.addr = (uintptr_t)e->buf + 2048, .length = 64, .lkey = e->mr->lkey};
	struct ibv_recv_wr rw = {.wr_id = 7, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	if (ibv_post_recv(q, &rw, &bad))
		setup_fail("post_recv");
	ud_send(e, &p, ah_tc(e, 0), q->qp_num);
	note_wc(b, sizeof(b), "send", p.cqa, 0);
	note_wc(b, sizeof(b), t == IBV_QPT_UC ? "uc_recv" : "rc_recv", r.cqb, 1);
	out("wc", b + 1);
}
C(ud_send_to_rc_qp_connected_to_it, 0) { ud_send_to_connected(e, IBV_QPT_RC); }
C(ud_send_to_uc_qp_connected_to_it, 0) { ud_send_to_connected(e, IBV_QPT_UC); }
/* the UD receive's completion beside its GRH: wc_flags and sl (for RoCE
 * the layout of the GRH area, on mlx5: 0 GRH, 1 IPv6, 2 IPv4) */
C(ud_recv_wc_sl, 0)
{
	P p = pair(e, IBV_QPT_UD);
	struct ibv_wc wc;
	char b[96];
	post_recv_b(e, &p, e->mr, 40 + 64);
	ud_send(e, &p, ah_tc(e, 0), p.b->qp_num);
	if (!wait_wc(p.cqb, &wc)) {
		out("wc", "recv=none");
		return;
	}
	snprintf(b, sizeof(b), "%s grh=%d sl=%u", st(wc.status), !!(wc.wc_flags & IBV_WC_GRH), wc.sl);
	out("wc", b);
}
static void ud_bad_op(E *e, enum ibv_wr_opcode op)
{
	P p = pair(e, IBV_QPT_UD);
	struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 8, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.opcode = op, .sg_list = &s, .num_sge = 1,
				 .wr.ud = {.ah = ah_tc(e, 0), .remote_qpn = p.b->qp_num, .remote_qkey = QKEY}};
	run_wr(&p, &wr, 0);
}
C(ud_rdma_write, 0) { ud_bad_op(e, IBV_WR_RDMA_WRITE); }
C(ud_rdma_read, 0) { ud_bad_op(e, IBV_WR_RDMA_READ); }
C(ud_atomic_fetch_add, 0) { ud_bad_op(e, IBV_WR_ATOMIC_FETCH_AND_ADD); }

/* ---- memory-window binds (on an RC QP in RTS; the MR allows binds) */
static struct ibv_mr *bind_mr(E *e)
{
	struct ibv_mr *m = ibv_reg_mr(e->pd, e->buf, 4096, RW | IBV_ACCESS_MW_BIND);
	if (!m)
		setup_fail("reg_mr mw_bind");
	return m;
}
static void bind2(E *e, uint64_t off, uint64_t len)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_mr *m = bind_mr(e);
	struct ibv_mw *mw = fresh_mw(e->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr = {.opcode = IBV_WR_BIND_MW,
				 .bind_mw = {.mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
					     .bind_info = {.mr = m, .addr = (uintptr_t)e->buf + off, .length = len,
							   .mw_access_flags = IBV_ACCESS_REMOTE_WRITE}}};
	run_wr(&p, &wr, 0);
}
static void bind1(E *e, uint64_t off, uint64_t len)
{
	P p = pair(e, IBV_QPT_RC);
	struct ibv_mr *m = bind_mr(e);
	struct ibv_mw *mw = fresh_mw(e->pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = {.send_flags = IBV_SEND_SIGNALED,
				.bind_info = {.mr = m, .addr = (uintptr_t)e->buf + off, .length = len,
					      .mw_access_flags = IBV_ACCESS_REMOTE_WRITE}};
	char d[96];
	int r = ibv_bind_mw(p.a, mw, &b);
	snprintf(d, sizeof(d), "post=%s", r ? ename(r) : "0");
	if (!r)
		note_wc(d, sizeof(d), "send", p.cqa, 0);
	out("wc", d);
}
C(mw_bind_type2_ok, 0) { bind2(e, 0, 64); }
C(mw_bind_type2_zero_len, 0) { bind2(e, 0, 0); }
C(mw_bind_type2_beyond_mr, 0) { bind2(e, 0, 8192); }
C(mw_bind_type1_ok, 0) { bind1(e, 0, 64); }
C(mw_bind_type1_zero_len, 0) { bind1(e, 0, 0); }
C(mw_bind_type1_beyond_mr, 0) { bind1(e, 0, 8192); }
