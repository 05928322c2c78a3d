/* compat-tests/soft-wire/errnos.c: the verbs' answers on rw0, one line
 * per step ("step: result"), so that two runs can be compared: the
 * per-process wire against the same device through the transport agent
 * (SWRDMA_WIRE_AGENT=1, issue 33).  One process, two RC QPs connected to
 * each other over 127.0.0.1 (GID index argv[1]).  Bad input and objects in
 * use: the errnos; good input: success and the values the verbs give back.
 * ERRNOS_NODUMP=1: the process makes itself non-dumpable first (the agent
 * cannot reach its memory: it carries its own QPs, or with
 * SWRDMA_WIRE_AGENT=1 cannot open the device).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <infiniband/verbs.h>

#include <time.h>
#include <poll.h>
#include <arpa/inet.h>

/* One completion of `cq` within 2 s: 1, or 0. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000000L);
	return 0;
}

static void say(const char *step, int rc)
{
	printf("%s: %s\n", step, rc == 0 ? "ok" : strerror(rc));
}

/* A create verb's result: ok, or its errno. */
static void made(const char *step, void *p)
{
	say(step, p ? 0 : (errno ? errno : -1));
}

static int to_init(struct ibv_qp *qp, int mask_extra)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | mask_extra);
}

static int to_rtr(struct ibv_qp *qp, uint32_t dest, int gid, int mask)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest,
		.rq_psn = 0x100,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .sgid_index = gid, .hop_limit = 64 },
		},
	};
	memset(a.ah_attr.grh.dgid.raw, 0, 16);
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 127;
	a.ah_attr.grh.dgid.raw[15] = 1;
	return ibv_modify_qp(qp, &a, mask);
}

static int to_rts(struct ibv_qp *qp, int mask)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = 0x100,
		.max_rd_atomic = 1,
	};
	return ibv_modify_qp(qp, &a, mask);
}

/* A QP (in any state) to RESET, then INIT, RTR (connected to `dest`) and
 * RTS: 0, or the first errno. */
static int reconnect(struct ibv_qp *qp, uint32_t dest, int gid)
{
	struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };
	int e = ibv_modify_qp(qp, &r, IBV_QP_STATE);
	if (!e)
		e = to_init(qp, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (!e)
		e = to_rtr(qp, dest, gid,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (!e)
		e = to_rts(qp, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC);
	return e;
}

/* One completion of `cq` within 2 s, printed as `step: n status wr_id
 * opcode`. */
static void completion(const char *step, struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int got = poll_one(cq, &wc);
	printf("%s: %d status %s wr_id %lu opcode %d\n", step, got, got > 0 ? ibv_wc_status_str(wc.status) : "-",
	       got > 0 ? (unsigned long)wc.wr_id : 0UL, got > 0 ? (int)wc.opcode : -1);
}

/* A QP's state, as query_qp gives it. */
static void state_of(const char *step, struct ibv_qp *qp)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	int r = ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi);
	printf("%s: %s state %d\n", step, r ? strerror(r) : "ok", r ? -1 : (int)qa.qp_state);
}

/* A signaled RDMA WRITE of `len` bytes at `src` (lkey `lkey`) to `dst`
 * through `rkey` on `qp`, and its completion. */
static void write_through(const char *step, struct ibv_qp *qp, struct ibv_cq *cq, char *src, uint32_t lkey,
			  char *dst, uint32_t rkey, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge s = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr w = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED, .wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = rkey },
	}, *bad = NULL;
	char what[128];
	snprintf(what, sizeof what, "post_send %s", step);
	say(what, ibv_post_send(qp, &w, &bad));
	completion(step, cq);
}

/* A memory window bind posted with ibv_post_send (type 2). */
static int post_bind(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr, char *addr,
		     uint64_t len, uint64_t wr_id, struct ibv_send_wr **bad)
{
	static struct ibv_send_wr w;
	memset(&w, 0, sizeof w);
	w.wr_id = wr_id;
	w.opcode = IBV_WR_BIND_MW;
	w.send_flags = IBV_SEND_SIGNALED;
	w.bind_mw.mw = mw;
	w.bind_mw.rkey = rkey;
	w.bind_mw.bind_info.mr = mr;
	w.bind_mw.bind_info.addr = (uintptr_t)addr;
	w.bind_mw.bind_info.length = len;
	w.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	*bad = NULL;
	int r = ibv_post_send(qp, &w, bad);
	if (r && *bad != &w)
		printf("bad_wr is not the bind\n");
	return r;
}

/* A LOCAL_INV of `rkey` posted on `qp`. */
static int post_local_inv(struct ibv_qp *qp, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_send_wr w = { .wr_id = wr_id, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED },
			   *bad = NULL;
	w.invalidate_rkey = rkey;
	return ibv_post_send(qp, &w, &bad);
}

/* Memory windows on two RC QPs c and d connected to each other (d writes
 * into windows bound through c).  Only what both modes must give alike is
 * printed: whether an rkey changed, never its value. */
static void windows(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_qp_init_attr *ia, char *buf,
		    struct ibv_mr *mr, int gid)
{
	struct ibv_context *ctx = pd->context;
	errno = 0;
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	made("alloc_mw type 1", mw1);
	errno = 0;
	struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	made("alloc_mw type 2", mw2);
	printf("alloc_mw types: %d %d\n", mw1 ? (int)mw1->type : -1, mw2 ? (int)mw2->type : -1);
	errno = 0;
	made("alloc_mw type 3", ibv_alloc_mw(pd, (enum ibv_mw_type)3));
	struct ibv_pd notpd = { .context = ctx, .handle = 0x7777 };
	errno = 0;
	made("alloc_mw bad pd", ibv_alloc_mw(&notpd, IBV_MW_TYPE_1));
	errno = 0;
	struct ibv_mr *wmr = ibv_reg_mr(pd, buf, 1 << 16,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	made("reg_mr mw_bind", wmr);
	struct ibv_qp *c = ibv_create_qp(pd, ia);
	made("create_qp c", c);
	struct ibv_qp *d = ibv_create_qp(pd, ia);
	made("create_qp d", d);
	if (!mw1 || !mw2 || !wmr || !c || !d)
		return;
	say("connect c", reconnect(c, d->qp_num, gid));
	say("connect d", reconnect(d, c->qp_num, gid));
	char *w1 = buf + 16384, *w2 = buf + 20480, *src = buf + 32768;
	memcpy(src, "through a window", 16);

	/* Type 1, bound with ibv_bind_mw; d writes through it. */
	struct ibv_mw_bind mb = {
		.wr_id = 31, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = wmr, .addr = (uintptr_t)w1, .length = 4096,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	uint32_t k = mw1->rkey;
	say("bind_mw type 1", ibv_bind_mw(c, mw1, &mb));
	printf("bind_mw type 1 rkey: changed %d index kept %d\n", mw1->rkey != k, (mw1->rkey >> 8) == (k >> 8));
	completion("bind_mw type 1 completion", cq);
	write_through("write through window 1", d, cq, src, mr->lkey, w1, mw1->rkey, 16, 41);
	printf("window 1 placed: %d\n", !memcmp(w1, src, 16));
	/* Type 2, bound with a BIND_MW work request; d writes through it. */
	struct ibv_send_wr *bad;
	uint32_t asked = ibv_inc_rkey(mw2->rkey);
	say("post_send bind_mw type 2", post_bind(c, mw2, asked, wmr, w2, 4096, 32, &bad));
	completion("bind_mw type 2 completion", cq);
	printf("bind_mw type 2 rkey is the one asked: %d\n", mw2->rkey == asked);
	write_through("write through window 2", d, cq, src, mr->lkey, w2, mw2->rkey, 16, 42);
	printf("window 2 placed: %d\n", !memcmp(w2, src, 16));
	/* The other ways round: refused at post. */
	mb.wr_id = 33;
	say("bind_mw of a type 2 window", ibv_bind_mw(c, mw2, &mb));
	say("post_send bind_mw of a type 1 window", post_bind(c, mw1, ibv_inc_rkey(mw1->rkey), wmr, w1, 64, 34, &bad));
	say("post_send bind_mw of no window", post_bind(c, NULL, 0, wmr, w1, 64, 35, &bad));
	/* LOCAL_INV, then bound again and invalidated by d's SEND with
	 * invalidate, then bound again. */
	say("post_send local_inv", post_local_inv(c, mw2->rkey, 36));
	completion("local_inv completion", cq);
	k = mw2->rkey;
	asked = ibv_inc_rkey(mw2->rkey);
	say("post_send bind_mw type 2 again", post_bind(c, mw2, asked, wmr, w2, 4096, 37, &bad));
	completion("bind_mw type 2 again completion", cq);
	printf("bind_mw type 2 again rkey: changed %d is the one asked %d\n", mw2->rkey != k, mw2->rkey == asked);
	struct ibv_sge rs = { .addr = (uintptr_t)buf + 40000, .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 51, .sg_list = &rs, .num_sge = 1 }, *rbad = NULL;
	say("post_recv c", ibv_post_recv(c, &rw, &rbad));
	struct ibv_sge ss = { .addr = (uintptr_t)src, .length = 16, .lkey = mr->lkey };
	struct ibv_send_wr inv = { .wr_id = 43, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
				   .send_flags = IBV_SEND_SIGNALED };
	inv.invalidate_rkey = mw2->rkey;
	say("post_send send_with_inv", ibv_post_send(d, &inv, &bad));
	struct ibv_wc two[2];
	int n2 = poll_one(cq, &two[0]);
	n2 += n2 ? poll_one(cq, &two[1]) : 0;
	for (int i = 0; i < n2; i++) {
		/* (the send's and the receive's, in wr_id order) */
		struct ibv_wc *e = &two[n2 == 2 && two[0].wr_id > two[1].wr_id ? 1 - i : i];
		printf("send_with_inv completion: wr_id %lu status %s opcode %d with_inv %d rkey is the window's %d\n",
		       (unsigned long)e->wr_id, ibv_wc_status_str(e->status), (int)e->opcode,
		       !!(e->wc_flags & IBV_WC_WITH_INV),
		       (e->wc_flags & IBV_WC_WITH_INV) && e->invalidated_rkey == mw2->rkey);
	}
	printf("send_with_inv completions: %d\n", n2);
	asked = ibv_inc_rkey(mw2->rkey);
	say("post_send bind_mw type 2 after the peer's invalidation", post_bind(c, mw2, asked, wmr, w2, 4096, 38, &bad));
	completion("bind_mw type 2 after the peer's invalidation completion", cq);
	printf("rkey is the one asked: %d\n", mw2->rkey == asked);
	/* Type 1 unbound (no MR, no range): its rkey moves on. */
	mb.wr_id = 39;
	mb.bind_info.mr = NULL;
	mb.bind_info.addr = 0;
	mb.bind_info.length = 0;
	k = mw1->rkey;
	say("bind_mw unbind", ibv_bind_mw(c, mw1, &mb));
	printf("bind_mw unbind rkey changed: %d\n", mw1->rkey != k);
	completion("bind_mw unbind completion", cq);
	/* Bound again and deallocated while bound: d's WRITE through its rkey
	 * is refused, both QPs go to the error state. */
	mb.wr_id = 40;
	mb.bind_info.mr = wmr;
	mb.bind_info.addr = (uintptr_t)w1;
	mb.bind_info.length = 4096;
	say("bind_mw type 1 again", ibv_bind_mw(c, mw1, &mb));
	completion("bind_mw type 1 again completion", cq);
	uint32_t gone = mw1->rkey;
	say("dealloc_mw bound", ibv_dealloc_mw(mw1));
	memset(w1, 0, 16);
	write_through("write through a deallocated window", d, cq, src, mr->lkey, w1, gone, 16, 44);
	printf("nothing placed: %d\n", w1[0] == 0);
	state_of("c after", c);
	state_of("d after", d);
	/* A bind in the error state: flushed, the rkey as it was. */
	errno = 0;
	struct ibv_mw *mw3 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	made("alloc_mw type 1 again", mw3);
	if (!mw3)
		return;
	mb.wr_id = 61;
	k = mw3->rkey;
	say("bind_mw in the error state", ibv_bind_mw(c, mw3, &mb));
	printf("bind_mw in the error state rkey changed: %d\n", mw3->rkey != k);
	completion("bind_mw in the error state completion", cq);
	/* Binds that fail: MW_BIND_ERR, the rkey as it was, the QP in the
	 * error state. */
	say("reconnect c", reconnect(c, d->qp_num, gid));
	mb.wr_id = 62;
	mb.bind_info.addr = (uintptr_t)buf + (1 << 16) - 64;
	say("bind_mw beyond the mr", ibv_bind_mw(c, mw3, &mb));
	printf("bind_mw beyond the mr rkey changed: %d\n", mw3->rkey != k);
	completion("bind_mw beyond the mr completion", cq);
	state_of("c after a bind beyond the mr", c);
	say("reconnect c", reconnect(c, d->qp_num, gid));
	mb.wr_id = 63;
	mb.bind_info.mr = mr;
	mb.bind_info.addr = (uintptr_t)buf;
	say("bind_mw without mw_bind access", ibv_bind_mw(c, mw3, &mb));
	printf("bind_mw without mw_bind access rkey changed: %d\n", mw3->rkey != k);
	completion("bind_mw without mw_bind access completion", cq);
	state_of("c after a bind without mw_bind access", c);
	say("reconnect c", reconnect(c, d->qp_num, gid));
	say("post_send local_inv of a window not bound", post_local_inv(c, mw3->rkey, 64));
	completion("local_inv of a window not bound completion", cq);
	state_of("c after a local_inv of a window not bound", c);
	say("dealloc_mw type 2 bound", ibv_dealloc_mw(mw2));
	say("dealloc_mw never bound", ibv_dealloc_mw(mw3));
	say("destroy_qp c", ibv_destroy_qp(c));
	say("destroy_qp d", ibv_destroy_qp(d));
	say("dereg_mr mw_bind", ibv_dereg_mr(wmr));
}

/* One completion of the extended CQ `cq` through its cursor within 2 s
 * (ibv_start_poll until it has one), printed as `step: rc status wr_id
 * opcode byte_len qp imm`: its byte count, the QP's number compared with
 * `qp`'s, its immediate data (with IBV_WC_WITH_IMM) only where `recv`. */
static void cursor(const char *step, struct ibv_cq_ex *cq, struct ibv_qp *qp, int recv)
{
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	struct timespec t0, t;
	int rc;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		rc = ibv_start_poll(cq, &pa);
		if (rc != ENOENT)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) >= 2000000000L)
			break;
	}
	if (rc) {
		printf("%s: start_poll %s\n", step, strerror(rc));
		return;
	}
	printf("%s: ok status %s wr_id %lu opcode %d", step, ibv_wc_status_str(cq->status), (unsigned long)cq->wr_id,
	       (int)ibv_wc_read_opcode(cq));
	if (recv) {
		uint32_t flags = (uint32_t)ibv_wc_read_wc_flags(cq);
		printf(" byte_len %u qp %s imm %s %#x", ibv_wc_read_byte_len(cq),
		       ibv_wc_read_qp_num(cq) == qp->qp_num ? "same" : "differs",
		       flags & IBV_WC_WITH_IMM ? "with" : "without",
		       flags & IBV_WC_WITH_IMM ? ntohl(ibv_wc_read_imm_data(cq)) : 0);
	} else {
		printf(" qp %s", ibv_wc_read_qp_num(cq) == qp->qp_num ? "same" : "differs");
	}
	printf("\n");
	/* Nothing else is there: next_poll's answer, then the end. */
	rc = ibv_next_poll(cq);
	printf("%s next_poll: %s\n", step, rc ? strerror(rc) : "one more");
	ibv_end_poll(cq);
}

/* An RDMA WRITE built with the ibv_wr_* functions on `qx`: its
 * wr_complete's answer. */
static int wr_write(struct ibv_qp_ex *qx, uint64_t wr_id, uint32_t lkey, char *src, uint32_t rkey, char *dst,
		    uint32_t len)
{
	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, rkey, (uintptr_t)dst);
	ibv_wr_set_sge(qx, lkey, (uintptr_t)src, len);
	return ibv_wr_complete(qx);
}

/* Extended CQs and QPs (ibv_create_cq_ex, ibv_create_qp_ex): their
 * checks, then two RC QPs e and f connected to each other, whose sends
 * complete in `scq` and receives in `rcq` (with a completion channel),
 * both extended: a WRITE and a SEND_WITH_IMM built with ibv_wr_*, their
 * completions through the cursor and ibv_poll_cq, an aborted request. */
static void extended(struct ibv_context *ctx, struct ibv_pd *pd, char *buf, struct ibv_mr *mr, int gid)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_cq_ex *x;
	errno = 0;
	x = ibv_create_cq_ex(ctx, &ca);
	made("create_cq_ex standard flags", x);
	if (x)
		say("destroy_cq ex", ibv_destroy_cq(ibv_cq_ex_to_cq(x)));
	ca.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	errno = 0;
	x = ibv_create_cq_ex(ctx, &ca);
	made("create_cq_ex wallclock", x);
	if (x)
		say("destroy_cq ex wallclock", ibv_destroy_cq(ibv_cq_ex_to_cq(x)));
	ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	made("create_cq_ex timestamp", ibv_create_cq_ex(ctx, &ca));
	ca.wc_flags = 1ULL << 40;
	errno = 0;
	made("create_cq_ex unknown wc flag", ibv_create_cq_ex(ctx, &ca));
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = 0;
	errno = 0;
	x = ibv_create_cq_ex(ctx, &ca);
	made("create_cq_ex mask flags", x);
	if (x)
		say("destroy_cq ex mask flags", ibv_destroy_cq(ibv_cq_ex_to_cq(x)));
	ca.comp_mask = 1 << 7;
	errno = 0;
	made("create_cq_ex unknown comp_mask", ibv_create_cq_ex(ctx, &ca));
	ca.comp_mask = 0;
	ca.cqe = 0;
	errno = 0;
	made("create_cq_ex 0", ibv_create_cq_ex(ctx, &ca));
	ca.cqe = 16;
	ca.comp_vector = 1;
	errno = 0;
	made("create_cq_ex comp_vector 1", ibv_create_cq_ex(ctx, &ca));
	ca.comp_vector = 0;

	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	made("create_comp_channel ex", ch);
	errno = 0;
	struct ibv_cq_ex *scq = ibv_create_cq_ex(ctx, &ca);
	made("create_cq_ex send", scq);
	ca.channel = ch;
	errno = 0;
	struct ibv_cq_ex *rcq = ibv_create_cq_ex(ctx, &ca);
	made("create_cq_ex recv with channel", rcq);
	if (!ch || !scq || !rcq)
		return;
	printf("cq_ex cqe >= 16: %d\n", ibv_cq_ex_to_cq(rcq)->cqe >= 16);

	uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = ibv_cq_ex_to_cq(scq),
		.recv_cq = ibv_cq_ex_to_cq(rcq),
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = ops,
	};
	struct ibv_qp_init_attr_ex t = qa;
	t.send_ops_flags = IBV_QP_EX_WITH_TSO;
	errno = 0;
	made("create_qp_ex rc tso", ibv_create_qp_ex(ctx, &t));
	t = qa;
	t.send_ops_flags = 1ULL << 40;
	errno = 0;
	made("create_qp_ex unknown send op", ibv_create_qp_ex(ctx, &t));
	t = qa;
	t.qp_type = IBV_QPT_UD;
	t.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	errno = 0;
	made("create_qp_ex ud write", ibv_create_qp_ex(ctx, &t));
	t.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	errno = 0;
	struct ibv_qp *ud = ibv_create_qp_ex(ctx, &t);
	made("create_qp_ex ud send", ud);
	if (ud) {
		printf("create_qp_ex ud qp_ex: %s\n", ibv_qp_to_qp_ex(ud) ? "yes" : "no");
		say("destroy_qp ex ud", ibv_destroy_qp(ud));
	}
	t = qa;
	t.qp_type = IBV_QPT_UC;
	t.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ;
	errno = 0;
	made("create_qp_ex uc read", ibv_create_qp_ex(ctx, &t));
	t = qa;
	t.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	t.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	made("create_qp_ex create flags", ibv_create_qp_ex(ctx, &t));
	t = qa;
	t.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	errno = 0;
	made("create_qp_ex no pd", ibv_create_qp_ex(ctx, &t));
	t = qa;
	t.qp_type = IBV_QPT_XRC_SEND;
	errno = 0;
	made("create_qp_ex xrc send", ibv_create_qp_ex(ctx, &t));
	t = qa;
	t.cap.max_send_wr = 1 << 30;
	errno = 0;
	made("create_qp_ex max_send_wr 2^30", ibv_create_qp_ex(ctx, &t));
	t = qa;
	t.comp_mask = IBV_QP_INIT_ATTR_PD;
	errno = 0;
	struct ibv_qp *plain = ibv_create_qp_ex(ctx, &t);
	made("create_qp_ex without send ops", plain);
	if (plain) {
		printf("create_qp_ex plain qp_ex: %s\n", ibv_qp_to_qp_ex(plain) ? "yes" : "no");
		say("destroy_qp ex plain", ibv_destroy_qp(plain));
	}

	errno = 0;
	struct ibv_qp *e = ibv_create_qp_ex(ctx, &qa);
	made("create_qp_ex e", e);
	printf("create_qp_ex caps: wr %u/%u sge %u/%u inline %s\n", qa.cap.max_send_wr, qa.cap.max_recv_wr,
	       qa.cap.max_send_sge, qa.cap.max_recv_sge, qa.cap.max_inline_data > 0 ? ">0" : "0");
	errno = 0;
	struct ibv_qp *f = ibv_create_qp_ex(ctx, &qa);
	made("create_qp_ex f", f);
	if (!e || !f)
		return;
	struct ibv_qp_ex *ex = ibv_qp_to_qp_ex(e);
	printf("create_qp_ex qp_ex: %s\n", ex ? "yes" : "no");
	say("connect e", reconnect(e, f->qp_num, gid));
	say("connect f", reconnect(f, e->qp_num, gid));
	if (!ex)
		return;

	/* A WRITE from e into f's memory. */
	char *src = buf + 16384, *dst = buf + 20480, *rbuf = buf + 24576;
	memset(src, 'e', 64);
	memset(dst, 0, 64);
	say("wr_complete write", wr_write(ex, 21, mr->lkey, src, mr->rkey, dst, 64));
	cursor("write completion through the cursor", scq, e, 0);
	printf("wr write placed: %d\n", !memcmp(dst, src, 64));

	/* An aborted WRITE: not posted (the next completion is the next one). */
	ibv_wr_start(ex);
	ex->wr_id = 22;
	ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(ex, mr->rkey, (uintptr_t)dst);
	ibv_wr_set_sge(ex, mr->lkey, (uintptr_t)src, 64);
	ibv_wr_abort(ex);
	memset(src, 'f', 64);
	say("wr_complete write after an abort", wr_write(ex, 23, mr->lkey, src, mr->rkey, dst, 64));
	completion("write after an abort (poll_cq of the cq_ex)", ibv_cq_ex_to_cq(scq));
	printf("wr write after an abort placed: %d\n", !memcmp(dst, src, 64));

	/* Two SGEs on a QP of one: wr_complete's errno. */
	struct ibv_sge two[2] = {
		{ .addr = (uintptr_t)src, .length = 8, .lkey = mr->lkey },
		{ .addr = (uintptr_t)src + 8, .length = 8, .lkey = mr->lkey },
	};
	ibv_wr_start(ex);
	ex->wr_id = 24;
	ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(ex, mr->rkey, (uintptr_t)dst);
	ibv_wr_set_sge_list(ex, 2, two);
	say("wr_complete 2 sges on 1", ibv_wr_complete(ex));

	/* A SEND_WITH_IMM into a receive of f, whose CQ is armed. */
	struct ibv_sge rs = { .addr = (uintptr_t)rbuf, .length = 256, .lkey = mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 31, .sg_list = &rs, .num_sge = 1 }, *rbad = NULL;
	say("post_recv f", ibv_post_recv(f, &rw, &rbad));
	say("req_notify_cq cq_ex", ibv_req_notify_cq(ibv_cq_ex_to_cq(rcq), 0));
	memset(src, 's', 48);
	ibv_wr_start(ex);
	ex->wr_id = 25;
	ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(ex, htonl(0x1234abcd));
	ibv_wr_set_sge(ex, mr->lkey, (uintptr_t)src, 48);
	say("wr_complete send_imm", ibv_wr_complete(ex));
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int pr = poll(&pfd, 1, 2000);
	printf("channel readable: %d\n", pr == 1);
	if (pr == 1) {
		struct ibv_cq *ecq = NULL;
		void *ectx = NULL;
		say("get_cq_event cq_ex", ibv_get_cq_event(ch, &ecq, &ectx) ? errno : 0);
		printf("event cq is the cq_ex: %d\n", ecq == ibv_cq_ex_to_cq(rcq));
		if (ecq)
			ibv_ack_cq_events(ecq, 1);
	}
	cursor("send_imm receive through the cursor", rcq, f, 1);
	printf("send_imm placed: %d\n", !memcmp(rbuf, src, 48));
	cursor("send_imm send through the cursor", scq, e, 0);

	say("destroy_cq ex in use", ibv_destroy_cq(ibv_cq_ex_to_cq(scq)));
	say("destroy_qp e", ibv_destroy_qp(e));
	say("destroy_qp f", ibv_destroy_qp(f));
	say("destroy_cq ex send", ibv_destroy_cq(ibv_cq_ex_to_cq(scq)));
	say("destroy_cq ex recv", ibv_destroy_cq(ibv_cq_ex_to_cq(rcq)));
	say("destroy_comp_channel ex", ibv_destroy_comp_channel(ch));
}

/* Parent domains, extended SRQs, device memory MRs and advise_mr, with a
 * CQ and PDs of their own: their checks; a parent domain that holds its PD
 * and is held by its objects; an RC QP on a parent domain writing from
 * memory registered on its PD into memory registered on the parent domain
 * and from device memory (zero-based), its peer writing into device
 * memory, and a SEND received through a basic SRQ made with
 * ibv_create_srq_ex. */
static void domains(struct ibv_context *ctx, int gid)
{
	errno = 0;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	made("create_cq for domains", cq);
	errno = 0;
	struct ibv_pd *p = ibv_alloc_pd(ctx);
	made("alloc_pd for a parent domain", p);
	errno = 0;
	struct ibv_pd *other = ibv_alloc_pd(ctx);
	made("alloc_pd other", other);
	if (!cq || !p || !other)
		return;

	/* Parent domains. */
	struct ibv_parent_domain_init_attr pa = { .pd = p };
	errno = 0;
	struct ibv_pd *pdom = ibv_alloc_parent_domain(ctx, &pa);
	made("alloc_parent_domain", pdom);
	printf("parent domain is its own pd: %d\n", pdom && pdom != p && pdom->context == ctx);
	pa.pd = NULL;
	errno = 0;
	made("alloc_parent_domain no pd", ibv_alloc_parent_domain(ctx, &pa));
	struct ibv_pd notpd = { .context = ctx, .handle = 0x7777 };
	pa.pd = &notpd;
	errno = 0;
	made("alloc_parent_domain bad pd", ibv_alloc_parent_domain(ctx, &pa));
	pa.pd = p;
	pa.comp_mask = 1 << 5;
	errno = 0;
	made("alloc_parent_domain unknown comp_mask", ibv_alloc_parent_domain(ctx, &pa));
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.pd_context = &pa;
	errno = 0;
	struct ibv_pd *pd2 = ibv_alloc_parent_domain(ctx, &pa);
	made("alloc_parent_domain pd_context", pd2);
	if (pd2)
		say("dealloc_pd parent domain pd_context", ibv_dealloc_pd(pd2));
	pa.comp_mask = 0;
	struct ibv_td_init_attr ta = { .comp_mask = 0 };
	errno = 0;
	struct ibv_td *td = ibv_alloc_td(ctx, &ta);
	made("alloc_td", td);
	pa.td = td;
	errno = 0;
	pd2 = ibv_alloc_parent_domain(ctx, &pa);
	made("alloc_parent_domain with a td", pd2);
	if (pd2)
		say("dealloc_pd parent domain with a td", ibv_dealloc_pd(pd2));
	if (td)
		say("dealloc_td", ibv_dealloc_td(td));
	struct ibv_td faketd = { .context = (struct ibv_context *)&notpd };
	pa.td = &faketd;
	errno = 0;
	made("alloc_parent_domain td of another context", ibv_alloc_parent_domain(ctx, &pa));
	pa.td = NULL;
	say("dealloc_pd under a parent domain", ibv_dealloc_pd(p));
	if (!pdom)
		return;
	pa.pd = pdom;
	errno = 0;
	pd2 = ibv_alloc_parent_domain(ctx, &pa);
	made("alloc_parent_domain of a parent domain", pd2);
	say("dealloc_pd parent domain under a parent domain", ibv_dealloc_pd(pdom));
	if (pd2)
		say("dealloc_pd parent domain of a parent domain", ibv_dealloc_pd(pd2));

	/* Extended SRQs (a CQ in the mask: the provider's create_srq_ex). */
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_BASIC,
		.pd = pdom,
		.cq = cq,
	};
	struct ibv_srq_init_attr_ex t = sa;
	t.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
	errno = 0;
	made("create_srq_ex no pd in the mask", ibv_create_srq_ex(ctx, &t));
	t = sa;
	t.pd = NULL;
	errno = 0;
	made("create_srq_ex null pd", ibv_create_srq_ex(ctx, &t));
	t = sa;
	t.srq_type = IBV_SRQT_XRC;
	errno = 0;
	made("create_srq_ex xrc without xrcd", ibv_create_srq_ex(ctx, &t));
	t.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD;
	errno = 0;
	made("create_srq_ex xrc without cq", ibv_create_srq_ex(ctx, &t));
	t = sa;
	t.srq_type = IBV_SRQT_TM;
	errno = 0;
	made("create_srq_ex tm", ibv_create_srq_ex(ctx, &t));
	t.srq_type = (enum ibv_srq_type)7;
	errno = 0;
	made("create_srq_ex type 7", ibv_create_srq_ex(ctx, &t));
	t = sa;
	t.attr.max_wr = 0;
	errno = 0;
	made("create_srq_ex max_wr 0", ibv_create_srq_ex(ctx, &t));
	t = sa;
	t.attr.max_sge = 33;
	errno = 0;
	made("create_srq_ex max_sge 33", ibv_create_srq_ex(ctx, &t));
	t = sa;
	t.pd = &notpd;
	errno = 0;
	made("create_srq_ex bad pd", ibv_create_srq_ex(ctx, &t));
	errno = 0;
	struct ibv_srq *srq = ibv_create_srq_ex(ctx, &sa);
	made("create_srq_ex basic on a parent domain", srq);
	printf("create_srq_ex attr: wr %u sge %u\n", sa.attr.max_wr, sa.attr.max_sge);
	if (srq) {
		struct ibv_srq_attr q;
		int r = ibv_query_srq(srq, &q);
		printf("query_srq ex: %s wr %u sge %u\n", r ? strerror(r) : "ok", r ? 0 : q.max_wr, r ? 0 : q.max_sge);
		printf("srq ex: pd is the parent domain %d\n", srq->pd == pdom);
	}
	say("dealloc_pd parent domain with an srq", ibv_dealloc_pd(pdom));

	/* Memory: `lmr` on the PD, `rmr` on the parent domain, `omr` on
	 * another PD; device memory. */
	char *pbuf = malloc(1 << 16);
	memset(pbuf, 0, 1 << 16);
	errno = 0;
	struct ibv_mr *lmr = ibv_reg_mr(p, pbuf, 1 << 15, IBV_ACCESS_LOCAL_WRITE);
	made("reg_mr on the pd", lmr);
	errno = 0;
	struct ibv_mr *rmr = ibv_reg_mr(pdom, pbuf + (1 << 15), 1 << 15,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	made("reg_mr on the parent domain", rmr);
	printf("reg_mr on the parent domain: pd is it %d\n", rmr && rmr->pd == pdom);
	errno = 0;
	struct ibv_alloc_dm_attr da = { .length = 4096 };
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &da);
	made("alloc_dm", dm);
	int zb = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *dmr = NULL;
	if (dm) {
		errno = 0;
		made("reg_dm_mr without zero_based", ibv_reg_dm_mr(p, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE));
		errno = 0;
		made("reg_dm_mr on_demand", ibv_reg_dm_mr(p, dm, 0, 4096, zb | IBV_ACCESS_ON_DEMAND));
		errno = 0;
		made("reg_dm_mr remote write without local write",
		     ibv_reg_dm_mr(p, dm, 0, 4096, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE));
		errno = 0;
		made("reg_dm_mr past the end", ibv_reg_dm_mr(p, dm, 4096 - 64, 128, zb));
		errno = 0;
		made("reg_dm_mr offset past the end", ibv_reg_dm_mr(p, dm, 8192, 0, zb));
		errno = 0;
		struct ibv_mr *z = ibv_reg_dm_mr(p, dm, 0, 0, zb);
		made("reg_dm_mr of no bytes", z);
		if (z)
			say("dereg_mr dm of no bytes", ibv_dereg_mr(z));
		errno = 0;
		z = ibv_reg_dm_mr(pdom, dm, 1024, 1024, zb);
		made("reg_dm_mr on the parent domain", z);
		if (z)
			say("dereg_mr dm on the parent domain", ibv_dereg_mr(z));
		errno = 0;
		dmr = ibv_reg_dm_mr(p, dm, 0, 4096, zb);
		made("reg_dm_mr", dmr);
		if (dmr)
			printf("reg_dm_mr: addr null %d length %zu lkey==rkey %d\n", dmr->addr == NULL, dmr->length,
			       dmr->lkey == dmr->rkey);
		say("free_dm with an mr", ibv_free_dm(dm));
	}

	/* advise_mr: an on-demand MR (`odp`, local write), a read-only one. */
	errno = 0;
	struct ibv_mr *odp = ibv_reg_mr(p, pbuf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	made("reg_mr on_demand", odp);
	errno = 0;
	struct ibv_mr *odpro = ibv_reg_mr(p, pbuf, 8192, IBV_ACCESS_ON_DEMAND);
	made("reg_mr on_demand read-only", odpro);
	if (odp && odpro && lmr) {
		struct ibv_sge g = { .addr = (uintptr_t)pbuf, .length = 4096, .lkey = odp->lkey };
		say("advise_mr prefetch", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &g, 1));
		say("advise_mr prefetch_write", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &g, 1));
		say("advise_mr prefetch_no_fault flush",
		    ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH, &g, 1));
		say("advise_mr through the parent domain", ibv_advise_mr(pdom, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &g, 1));
		say("advise_mr another pd", ibv_advise_mr(other, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &g, 1));
		say("advise_mr advice 7", ibv_advise_mr(p, (enum ibv_advise_mr_advice)7, 0, &g, 1));
		say("advise_mr flag 2", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &g, 1));
		say("advise_mr no sge", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &g, 0));
		say("advise_mr null sg_list", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 1));
		struct ibv_sge two[2] = { g, g };
		two[1].addr = (uintptr_t)pbuf + 8000;
		say("advise_mr past the mr", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, two, 2));
		two[1] = g;
		two[1].lkey = lmr->lkey;
		say("advise_mr not on_demand", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, two, 2));
		two[1].lkey = odp->lkey ^ 0x80;
		say("advise_mr no such lkey", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, two, 2));
		two[1] = g;
		two[1].lkey = odpro->lkey;
		say("advise_mr read-only prefetch", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, two, 2));
		say("advise_mr read-only prefetch_write",
		    ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, two, 2));
		if (dmr) {
			struct ibv_sge ds = { .addr = 0, .length = 64, .lkey = dmr->lkey };
			say("advise_mr dm mr", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &ds, 1));
		}
	}
	if (odp)
		say("dereg_mr on_demand", ibv_dereg_mr(odp));
	if (odpro)
		say("dereg_mr on_demand read-only", ibv_dereg_mr(odpro));
	if (odp) {
		struct ibv_sge g = { .addr = (uintptr_t)pbuf, .length = 64, .lkey = odp->lkey };
		say("advise_mr deregistered", ibv_advise_mr(p, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &g, 1));
	}

	/* x on the parent domain, y on its PD receiving through the SRQ. */
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	errno = 0;
	struct ibv_qp *x = ibv_create_qp(pdom, &ia);
	made("create_qp on a parent domain", x);
	printf("create_qp on a parent domain: pd is it %d\n", x && x->pd == pdom);
	ia.srq = srq;
	errno = 0;
	struct ibv_qp *y = ibv_create_qp(p, &ia);
	made("create_qp with the srq ex", y);
	if (x && y && lmr && rmr) {
		say("connect x", reconnect(x, y->qp_num, gid));
		say("connect y", reconnect(y, x->qp_num, gid));
		char *src = pbuf + 256, *dst = pbuf + (1 << 15) + 256;
		memcpy(src, "from the pd's mr", 16);
		write_through("write from a parent domain's qp", x, cq, src, lmr->lkey, dst, rmr->rkey, 16, 71);
		printf("parent domain write placed: %d\n", !memcmp(dst, src, 16));
		if (dmr) {
			say("memcpy_to_dm", ibv_memcpy_to_dm(dm, 64, "device memory!!!", 16));
			/* (zero-based: the DM MR's addresses start at 0) */
			write_through("write from device memory", x, cq, (char *)64, dmr->lkey, dst + 64, rmr->rkey, 16,
				      72);
			printf("device memory write placed: %d\n", !memcmp(dst + 64, "device memory!!!", 16));
			memcpy(src, "into the device!", 16);
			write_through("write into device memory", y, cq, src, lmr->lkey, (char *)128, dmr->rkey, 16,
				      73);
			char back[16] = { 0 };
			say("memcpy_from_dm", ibv_memcpy_from_dm(back, dm, 128, 16));
			printf("device memory placed: %d\n", !memcmp(back, src, 16));
		}
		if (srq) {
			struct ibv_sge rs = { .addr = (uintptr_t)dst + 512, .length = 64, .lkey = rmr->lkey };
			struct ibv_recv_wr rw = { .wr_id = 81, .sg_list = &rs, .num_sge = 1 }, *rbad = NULL;
			say("post_srq_recv ex", ibv_post_srq_recv(srq, &rw, &rbad));
			memcpy(src, "through the srq!", 16);
			struct ibv_sge ss = { .addr = (uintptr_t)src, .length = 16, .lkey = lmr->lkey };
			struct ibv_send_wr sw = { .wr_id = 74, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED },
					   *sbad = NULL;
			say("post_send send to the srq ex", ibv_post_send(x, &sw, &sbad));
			struct ibv_wc two[2];
			int n2 = poll_one(cq, &two[0]);
			n2 += n2 ? poll_one(cq, &two[1]) : 0;
			for (int i = 0; i < n2; i++) {
				/* (the send's and the receive's, in wr_id order) */
				struct ibv_wc *e = &two[n2 == 2 && two[0].wr_id > two[1].wr_id ? 1 - i : i];
				printf("send to the srq ex completion: wr_id %lu status %s opcode %d byte_len %u\n",
				       (unsigned long)e->wr_id, ibv_wc_status_str(e->status), (int)e->opcode,
				       e->opcode == IBV_WC_RECV ? e->byte_len : 0);
			}
			printf("send to the srq ex completions: %d placed %d\n", n2, !memcmp(dst + 512, src, 16));
		}
	}
	if (x)
		say("dealloc_pd parent domain with a qp", ibv_dealloc_pd(pdom));
	if (x)
		say("destroy_qp on a parent domain", ibv_destroy_qp(x));
	if (y)
		say("destroy_qp with the srq ex", ibv_destroy_qp(y));
	if (srq)
		say("destroy_srq ex", ibv_destroy_srq(srq));
	if (dmr)
		say("dereg_mr dm", ibv_dereg_mr(dmr));
	if (dm)
		say("free_dm", ibv_free_dm(dm));
	say("dealloc_pd parent domain with an mr", ibv_dealloc_pd(pdom));
	if (rmr)
		say("dereg_mr on the parent domain", ibv_dereg_mr(rmr));
	if (lmr)
		say("dereg_mr on the pd", ibv_dereg_mr(lmr));
	say("dealloc_pd parent domain", ibv_dealloc_pd(pdom));
	say("dealloc_pd of the parent domain", ibv_dealloc_pd(p));
	say("dealloc_pd other", ibv_dealloc_pd(other));
	say("destroy_cq for domains", ibv_destroy_cq(cq));
	free(pbuf);
}

/* Small SENDs and WRITEs (through the agent, one of at most 256 bytes
 * posted to an empty send queue carries its data in the queue's entry,
 * read by the client at post): the data placed from several SGEs, at and
 * over the 256-byte bound, with a zero-length SGE, and the completions of
 * one whose lkey is not a live MR's and of one whose memory was unmapped
 * after it was registered, each alike on the per-process wire. */
static void small(struct ibv_pd *pd, struct ibv_cq *cq, int gid)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 3, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	char *buf = calloc(1, 1 << 16);
	char *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	made("small: reg_mr", mr);
	struct ibv_mr *gmr = gone == MAP_FAILED ? NULL : ibv_reg_mr(pd, gone, 4096, IBV_ACCESS_LOCAL_WRITE);
	made("small: reg_mr to be unmapped", gmr);
	struct ibv_qp *e = ibv_create_qp(pd, &ia);
	made("small: create_qp e", e);
	struct ibv_qp *f = ibv_create_qp(pd, &ia);
	made("small: create_qp f", f);
	if (!mr || !gmr || !e || !f)
		return;
	say("small: connect e", reconnect(e, f->qp_num, gid));
	say("small: connect f", reconnect(f, e->qp_num, gid));
	char *src = buf, *dst = buf + 32768;
	for (int i = 0; i < 1024; i++)
		src[i] = (char)(i * 7 + 1);
	/* WRITEs from three SGEs (one of them empty in the last), 3 .. 300 bytes. */
	static const uint32_t lens[][3] = { { 1, 1, 1 }, { 4, 5, 7 }, { 100, 100, 56 }, { 100, 100, 57 },
					    { 200, 0, 50 }, { 120, 150, 30 } };
	for (unsigned k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		struct ibv_sge s[3];
		uint32_t at = 0, total = 0;
		for (int j = 0; j < 3; j++) {
			/* (the SGEs out of order in src: 512, 0, 256 ...) */
			uint32_t from = (uint32_t)((j + 2) % 3) * 256 + at % 7;
			s[j] = (struct ibv_sge){ .addr = (uintptr_t)src + from, .length = lens[k][j], .lkey = mr->lkey };
			total += lens[k][j];
			at += 3;
		}
		memset(dst, 0, 1024);
		struct ibv_send_wr w = {
			.wr_id = 80 + k, .sg_list = s, .num_sge = 3, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED, .wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = mr->rkey },
		}, *bad = NULL;
		char what[96];
		snprintf(what, sizeof what, "small: write %u+%u+%u", lens[k][0], lens[k][1], lens[k][2]);
		say(what, ibv_post_send(e, &w, &bad));
		completion(what, cq);
		int ok = 1;
		uint32_t o = 0;
		for (int j = 0; j < 3; j++) {
			ok &= !memcmp(dst + o, (char *)(uintptr_t)s[j].addr, s[j].length);
			o += s[j].length;
		}
		ok &= dst[total] == 0;
		printf("%s placed: %d\n", what, ok);
	}
	/* A SEND of 200 bytes from two SGEs into f's receive. */
	struct ibv_sge rs = { .addr = (uintptr_t)dst, .length = 1024, .lkey = mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 90, .sg_list = &rs, .num_sge = 1 }, *rbad = NULL;
	say("small: post_recv f", ibv_post_recv(f, &r, &rbad));
	memset(dst, 0, 1024);
	struct ibv_sge ss[2] = { { .addr = (uintptr_t)src + 300, .length = 150, .lkey = mr->lkey },
				 { .addr = (uintptr_t)src + 10, .length = 50, .lkey = mr->lkey } };
	struct ibv_send_wr sw = { .wr_id = 91, .sg_list = ss, .num_sge = 2, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	say("small: send 150+50", ibv_post_send(e, &sw, &bad));
	struct ibv_wc wc[2];
	int got = 0;
	for (int i = 0; i < 2 && poll_one(cq, &wc[got]) > 0; i++)
		got++;
	int sent = 0, recvd = 0;
	for (int i = 0; i < got; i++) {
		if (wc[i].wr_id == 91)
			sent = wc[i].status == IBV_WC_SUCCESS;
		if (wc[i].wr_id == 90)
			recvd = wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == 200;
	}
	printf("small: send 150+50: sent %d received %d placed %d\n", sent, recvd,
	       !memcmp(dst, src + 300, 150) && !memcmp(dst + 150, src + 10, 50));
	/* An lkey that names no MR: the requester's completion and state. */
	struct ibv_sge bs = { .addr = (uintptr_t)src, .length = 16, .lkey = mr->lkey ^ 0x100 };
	struct ibv_send_wr bw = { .wr_id = 92, .sg_list = &bs, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = mr->rkey } };
	say("small: write with a bad lkey", ibv_post_send(e, &bw, &bad));
	completion("small: write with a bad lkey", cq);
	state_of("small: e after a bad lkey", e);
	say("small: reconnect e", reconnect(e, f->qp_num, gid));
	say("small: reconnect f", reconnect(f, e->qp_num, gid));
	/* Registered memory the application unmapped: not read (no crash),
	 * the request fails. */
	munmap(gone, 4096);
	bs = (struct ibv_sge){ .addr = (uintptr_t)gone, .length = 16, .lkey = gmr->lkey };
	bw.wr_id = 93;
	say("small: write from unmapped memory", ibv_post_send(e, &bw, &bad));
	completion("small: write from unmapped memory", cq);
	state_of("small: e after unmapped memory", e);
	say("small: destroy_qp e", ibv_destroy_qp(e));
	say("small: destroy_qp f", ibv_destroy_qp(f));
	say("small: dereg_mr unmapped", ibv_dereg_mr(gmr));
	say("small: dereg_mr", ibv_dereg_mr(mr));
	free(buf);
}

int main(int argc, char **argv)
{
	int gid = argc > 1 ? atoi(argv[1]) : 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("ERRNOS_NODUMP") && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) {
		perror("prctl(PR_SET_DUMPABLE)");
		return 2;
	}
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_device *dev = NULL;
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rw0"))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "no rw0\n");
		return 2;
	}
	struct ibv_context *ctx = ibv_open_device(dev);
	if (!ctx) {
		fprintf(stderr, "open rw0: %s\n", strerror(errno));
		return 2;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	made("alloc_pd", pd);
	char *buf = malloc(1 << 16);
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	made("reg_mr", mr);
	printf("reg_mr lkey==rkey: %d\n", mr && mr->lkey == mr->rkey);
	errno = 0;
	made("reg_mr remote write without local write", ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE));
	errno = 0;
	made("reg_mr nothing mapped", ibv_reg_mr(pd, (void *)4096, 4096, IBV_ACCESS_LOCAL_WRITE));
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = 0;
	made("reg_mr read-only memory writable", ibv_reg_mr(pd, ro, 4096, IBV_ACCESS_LOCAL_WRITE));
	errno = 0;
	struct ibv_mr *romr = ibv_reg_mr(pd, ro, 4096, 0);
	made("reg_mr read-only memory read-only", romr);
	if (romr)
		say("dereg_mr read-only", ibv_dereg_mr(romr));

	{
		struct ibv_mr *rm = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE);
		made("reg_mr for rereg", rm);
		if (rm) {
			int r = ibv_rereg_mr(rm, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
					     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
			printf("rereg_mr access: %d\n", r);
			r = ibv_rereg_mr(rm, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE);
			printf("rereg_mr remote write without local write: %d errno %s\n", r, strerror(errno));
			r = ibv_rereg_mr(rm, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, (void *)4096, 4096, 0);
			printf("rereg_mr nothing mapped: %d errno %s\n", r, strerror(errno));
			r = ibv_rereg_mr(rm, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf + 4096, 4096, 0);
			printf("rereg_mr translation: %d range ok %d\n", r, rm->addr == buf + 4096 && rm->length == 4096);
			r = ibv_rereg_mr(rm, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0);
			printf("rereg_mr no pd: %d errno %s\n", r, strerror(errno));
			r = ibv_rereg_mr(rm, 0x80, NULL, NULL, 0, 0);
			printf("rereg_mr unknown flag: %d errno %s\n", r, strerror(errno));
			say("dereg_mr rereg'd", ibv_dereg_mr(rm));
		}
	}

	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	made("create_cq 16", cq);
	errno = 0;
	made("create_cq 0", ibv_create_cq(ctx, 0, NULL, NULL, 0));
	errno = 0;
	made("create_cq 2^30", ibv_create_cq(ctx, 1 << 30, NULL, NULL, 0));
	errno = 0;
	made("create_cq comp_vector 1", ibv_create_cq(ctx, 16, NULL, NULL, 1));
	errno = 0;
	made("create_cq comp_vector -1", ibv_create_cq(ctx, 16, NULL, NULL, -1));
	errno = 0;
	struct ibv_cq *deep = ibv_create_cq(ctx, 100000, NULL, NULL, 0);
	made("create_cq 100000", deep);
	if (deep) {
		say("resize_cq 200000", ibv_resize_cq(deep, 200000));
		say("destroy_cq 100000", ibv_destroy_cq(deep));
	}
	errno = 0;
	made("create_cq 2^20+1", ibv_create_cq(ctx, (1 << 20) + 1, NULL, NULL, 0));
	say("resize_cq 32", ibv_resize_cq(cq, 32));
	printf("cqe after resize: %d\n", cq->cqe);
	say("resize_cq 0", ibv_resize_cq(cq, 0));
	say("resize_cq 2^30", ibv_resize_cq(cq, 1 << 30));

	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *a = ibv_create_qp(pd, &ia);
	made("create_qp a", a);
	printf("create_qp caps: wr %u/%u sge %u/%u inline %s\n", ia.cap.max_send_wr, ia.cap.max_recv_wr,
	       ia.cap.max_send_sge, ia.cap.max_recv_sge, ia.cap.max_inline_data > 0 ? ">0" : "0");
	struct ibv_qp *b = ibv_create_qp(pd, &ia);
	made("create_qp b", b);
	struct ibv_qp_init_attr big = ia;
	big.cap.max_send_wr = 1 << 30;
	errno = 0;
	made("create_qp max_send_wr 2^30", ibv_create_qp(pd, &big));
	struct ibv_qp_init_attr nocq = ia;
	nocq.send_cq = NULL;
	errno = 0;
	made("create_qp no send cq", ibv_create_qp(pd, &nocq));
	if (!a || !b)
		return 1;

	say("destroy_cq in use", ibv_destroy_cq(cq));
	say("dealloc_pd in use", ibv_dealloc_pd(pd));
	say("modify RESET->INIT missing attrs", to_init(a, 0));
	say("modify RESET->RTR", to_rtr(a, b->qp_num, gid, IBV_QP_STATE));
	int init = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	say("modify a RESET->INIT", to_init(a, init));
	say("modify b RESET->INIT", to_init(b, init));
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	say("modify INIT->RTR missing attrs", to_rtr(a, b->qp_num, gid, IBV_QP_STATE | IBV_QP_AV));
	say("modify INIT->RTR bad gid index", to_rtr(a, b->qp_num, 250, rtr));
	say("modify a INIT->RTR", to_rtr(a, b->qp_num, gid, rtr));
	say("modify b INIT->RTR", to_rtr(b, a->qp_num, gid, rtr));
	int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		  IBV_QP_MAX_QP_RD_ATOMIC;
	say("modify RTR->RTS missing attrs", to_rts(a, IBV_QP_STATE));
	say("modify a RTR->RTS", to_rts(a, rts));
	say("modify b RTR->RTS", to_rts(b, rts));
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	say("query_qp", ibv_query_qp(a, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi));
	printf("query_qp: state %d dest is b %d sq_psn %#x timeout %d mtu %d\n", qa.qp_state,
	       qa.dest_qp_num == b->qp_num, qa.sq_psn, qa.timeout, qa.path_mtu);

	/* A WRITE from a into b's memory, completed. */
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	memset(buf, 'x', 64);
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)buf + 4096, .rkey = mr->rkey },
	}, *bad = NULL;
	say("post_send write", ibv_post_send(a, &wr, &bad));
	struct ibv_wc wc;
	int got = poll_one(cq, &wc);
	printf("write completion: %d status %s wr_id %lu opcode %d\n", got, got > 0 ? ibv_wc_status_str(wc.status) : "-",
	       got > 0 ? (unsigned long)wc.wr_id : 0UL, got > 0 ? (int)wc.opcode : -1);
	printf("write placed: %d\n", !memcmp(buf + 4096, buf, 64));
	/* A completion waiting in the CQ through a resize: still there. */
	wr.wr_id = 8;
	say("post_send write 2", ibv_post_send(a, &wr, &bad));
	for (long i = 0; i < 100000000L; i++) {
		struct ibv_qp_attr x;
		struct ibv_qp_init_attr y;
		/* (a control call: time for the completion to be written) */
		if (i % 1000000 == 0 && ibv_query_qp(a, &x, IBV_QP_STATE, &y) == 0 && i > 3000000)
			break;
	}
	say("resize_cq 64 with a completion waiting", ibv_resize_cq(cq, 64));
	got = poll_one(cq, &wc);
	printf("completion after resize: %d wr_id %lu\n", got, got > 0 ? (unsigned long)wc.wr_id : 0UL);
	/* Bad work requests: the errno and *bad_wr. */
	struct ibv_sge two[2] = { sge, sge };
	struct ibv_send_wr wr2 = wr;
	wr2.sg_list = two;
	wr2.num_sge = 2;
	bad = NULL;
	say("post_send 2 sges on 1", ibv_post_send(a, &wr2, &bad));
	printf("bad_wr is it: %d\n", bad == &wr2);
	struct ibv_send_wr inl = wr;
	inl.send_flags |= IBV_SEND_INLINE;
	sge.length = 60000;
	bad = NULL;
	say("post_send inline too long", ibv_post_send(a, &inl, &bad));
	sge.length = 64;
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = two, .num_sge = 2 }, *rbad = NULL;
	say("post_recv 2 sges on 1", ibv_post_recv(a, &rwr, &rbad));
	printf("bad recv wr is it: %d\n", rbad == &rwr);

	/* A fetch-and-add whose local buffer is not 8 bytes: its completion. */
	struct ibv_sge four = { .addr = (uintptr_t)buf + 8192, .length = 4, .lkey = mr->lkey };
	struct ibv_send_wr faa = {
		.wr_id = 11, .sg_list = &four, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = (uintptr_t)buf + 4096, .rkey = mr->rkey, .compare_add = 1 },
	};
	say("post_send fetch-and-add of 4 bytes", ibv_post_send(a, &faa, &bad));
	got = poll_one(cq, &wc);
	printf("fetch-and-add of 4 bytes: %d status %s\n", got, got > 0 ? ibv_wc_status_str(wc.status) : "-");
	say("query_qp after", ibv_query_qp(a, &qa, IBV_QP_STATE, &qi));
	printf("a's state: %d\n", qa.qp_state);

	/* A UD QP given an RDMA WRITE: taken, completed with an error. */
	struct ibv_qp_init_attr ua = ia;
	ua.qp_type = IBV_QPT_UD;
	struct ibv_qp *u = ibv_create_qp(pd, &ua);
	made("create_qp ud", u);
	if (u) {
		struct ibv_qp_attr x = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = 0x11 };
		say("ud INIT", ibv_modify_qp(u, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
		x.qp_state = IBV_QPS_RTR;
		say("ud RTR", ibv_modify_qp(u, &x, IBV_QP_STATE));
		x.qp_state = IBV_QPS_RTS;
		x.sq_psn = 1;
		say("ud RTS", ibv_modify_qp(u, &x, IBV_QP_STATE | IBV_QP_SQ_PSN));
		struct ibv_send_wr uw = wr;
		uw.wr_id = 12;
		say("post_send write on ud", ibv_post_send(u, &uw, &bad));
		got = poll_one(cq, &wc);
		printf("write on ud: %d status %s wr_id %lu\n", got, got > 0 ? ibv_wc_status_str(wc.status) : "-",
		       got > 0 ? (unsigned long)wc.wr_id : 0UL);
		say("query_qp ud", ibv_query_qp(u, &qa, IBV_QP_STATE, &qi));
		printf("ud's state: %d\n", qa.qp_state);
		/* Multicast attachments: a group GID (IPv4-mapped 239.1.2.3), a
		 * unicast one, again, detached twice, and an RC QP. */
		union ibv_gid grp = { .raw = { [10] = 0xff, [11] = 0xff, [12] = 239, [13] = 1, [14] = 2, [15] = 3 } };
		union ibv_gid uni = grp;
		uni.raw[12] = 10;
		say("attach_mcast unicast gid", ibv_attach_mcast(u, &uni, 0));
		say("attach_mcast group", ibv_attach_mcast(u, &grp, 0));
		say("attach_mcast group again", ibv_attach_mcast(u, &grp, 0));
		say("attach_mcast group lid 7", ibv_attach_mcast(u, &grp, 7));
		say("attach_mcast rc qp", ibv_attach_mcast(a, &grp, 0));
		say("detach_mcast group", ibv_detach_mcast(u, &grp, 0));
		say("detach_mcast group again", ibv_detach_mcast(u, &grp, 0));
		say("detach_mcast never attached", ibv_detach_mcast(u, &uni, 0));
		/* (still attached with LID 7: the QP is destroyed attached) */
		say("destroy_qp ud", ibv_destroy_qp(u));
	}

	/* A WRITE with an rkey b's side does not have: the requester's
	 * completion, and both QPs' states after it. */
	struct ibv_send_wr bw = wr;
	bw.wr_id = 13;
	bw.wr.rdma.rkey = mr->rkey + 0x100;
	say("post_send write with a bad rkey", ibv_post_send(a, &bw, &bad));
	got = poll_one(cq, &wc);
	printf("write with a bad rkey: %d status %s wr_id %lu\n", got, got > 0 ? ibv_wc_status_str(wc.status) : "-",
	       got > 0 ? (unsigned long)wc.wr_id : 0UL);
	say("query_qp a after", ibv_query_qp(a, &qa, IBV_QP_STATE, &qi));
	printf("a's state: %d\n", qa.qp_state);
	say("query_qp b after", ibv_query_qp(b, &qa, IBV_QP_STATE, &qi));
	printf("b's state: %d\n", qa.qp_state);
	/* In the error state: a send completes flushed. */
	bw.wr_id = 14;
	say("post_send in the error state", ibv_post_send(a, &bw, &bad));
	got = poll_one(cq, &wc);
	printf("send in the error state: %d status %s wr_id %lu\n", got,
	       got > 0 ? ibv_wc_status_str(wc.status) : "-", got > 0 ? (unsigned long)wc.wr_id : 0UL);

	windows(pd, cq, &ia, buf, mr, gid);
	extended(ctx, pd, buf, mr, gid);
	domains(ctx, gid);
	small(pd, cq, gid);

	say("destroy_qp a", ibv_destroy_qp(a));
	say("destroy_qp b", ibv_destroy_qp(b));
	say("destroy_cq", ibv_destroy_cq(cq));
	say("dealloc_pd with mr", ibv_dealloc_pd(pd));
	say("dereg_mr", ibv_dereg_mr(mr));
	say("dealloc_pd", ibv_dealloc_pd(pd));
	say("close_device", ibv_close_device(ctx));
	ibv_free_device_list(list);
	return 0;
}
