/*
 * vm-sweep cases (included by sweep.c, last: they take longest): the
 * device's advertised object limits.  Written for this project (not from
 * rdma-core).
 */

/* ---- advertised limits: making one more object than ibv_query_device's
 * max_* (counting only the ones made here, so objects the device made for
 * itself or the set-up made only bring the refusal earlier) must fail.
 * "limited ERRNO": refused at or before max; "unlimited": max + 1 made;
 * "huge": a limit over 65536, not tried (rxe's 2^20 PDs, CQs, QPs, MRs ...
 * take minutes under TCG, and its CQs, QPs, SRQs and MRs exhaust the VM's
 * 2 GB first: ENOMEM, or the OOM killer). */
static void limit_case(E *e, int max, int (*mk)(E *))
{
	int n;
	if (max <= 0 || max > (1 << 16)) {
		fprintf(stderr, "%s: max %d, not tried\n", cur, max);
		out("huge", "-");
		return;
	}
	errno = 0;
	for (n = 0; n <= max; n++)
		if (!mk(e))
			break;
	int err = errno;
	fprintf(stderr, "%s: max %d, made %d, errno %s\n", cur, max, n, ename(err));
	if (n > max)
		out("unlimited", "-");
	else
		out("limited", ename(err));
}

static struct ibv_device_attr dev_attr(E *e)
{
	struct ibv_device_attr a;
	if (ibv_query_device(e->ctx, &a))
		setup_fail("query_device");
	return a;
}

static int mk_pd(E *e) { return ibv_alloc_pd(e->ctx) != NULL; }
static int mk_cq(E *e) { return ibv_create_cq(e->ctx, 1, NULL, NULL, 0) != NULL; }
static int mk_qp(E *e)
{
	struct ibv_qp_init_attr a = {.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_UD,
				     .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	return ibv_create_qp(e->pd, &a) != NULL;
}
static int mk_srq(E *e)
{
	struct ibv_srq_init_attr a = {.attr = {.max_wr = 1, .max_sge = 1}};
	return ibv_create_srq(e->pd, &a) != NULL;
}
static int mk_mr(E *e) { return ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE) != NULL; }
static int mk_mw(E *e) { return ibv_alloc_mw(e->pd, IBV_MW_TYPE_2) != NULL; }
static int mk_ah(E *e)
{
	struct ibv_ah_attr a = good_ah_attr(e);
	return ibv_create_ah(e->pd, &a) != NULL;
}

C(limit_max_pd, F_SLOW) { limit_case(e, dev_attr(e).max_pd, mk_pd); }
C(limit_max_cq, F_SLOW) { limit_case(e, dev_attr(e).max_cq, mk_cq); }
C(limit_max_qp, F_SLOW) { limit_case(e, dev_attr(e).max_qp, mk_qp); }
C(limit_max_srq, F_SLOW) { limit_case(e, dev_attr(e).max_srq, mk_srq); }
C(limit_max_mr, F_SLOW) { limit_case(e, dev_attr(e).max_mr, mk_mr); }
C(limit_max_mw, F_SLOW) { limit_case(e, dev_attr(e).max_mw, mk_mw); }
C(limit_max_ah, F_SLOW) { limit_case(e, dev_attr(e).max_ah, mk_ah); }
