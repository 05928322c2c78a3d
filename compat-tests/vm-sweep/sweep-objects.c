/*
 * vm-sweep cases (included by sweep.c): objects handed to the verbs with
 * their kernel handle altered or from another context.  Written for this project (not from rdma-core).
 *
 * An altered handle is the object's `handle` + 1000 (no object of the
 * context has that handle).  A "foreign" object comes from a second context
 * of the same device, made after 40 PDs there, so that its handle is none of
 * the first context's (the kernel numbers each context's objects from 0: a
 * foreign handle that happened to name an object of the first context would
 * act on that object, which is no question of validation).
 */

#define BAD_HANDLE 1000u

static struct ibv_pd *fresh_pd(E *e)
{
	struct ibv_pd *p = ibv_alloc_pd(e->ctx);
	if (!p)
		setup_fail("alloc_pd");
	return p;
}

static struct ibv_cq *fresh_cq(struct ibv_context *c)
{
	struct ibv_cq *q = ibv_create_cq(c, 16, NULL, NULL, 0);
	if (!q)
		setup_fail("create_cq");
	return q;
}

static struct ibv_qp *fresh_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 8, .max_recv_wr = srq ? 0 : 8, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	struct ibv_qp *q = ibv_create_qp(pd, &a);
	if (!q)
		setup_fail("create_qp");
	return q;
}

static struct ibv_srq *fresh_srq(struct ibv_pd *pd)
{
	struct ibv_srq_init_attr a = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq *s = ibv_create_srq(pd, &a);
	if (!s)
		setup_fail("create_srq");
	return s;
}

static struct ibv_mw *fresh_mw(struct ibv_pd *pd, enum ibv_mw_type t)
{
	struct ibv_mw *m = ibv_alloc_mw(pd, t);
	if (!m)
		setup_fail("alloc_mw");
	return m;
}

/* ---- altered handles: destroy verbs */
C(dealloc_pd_bad_handle, 0) { struct ibv_pd *p = fresh_pd(e); p->handle += BAD_HANDLE; CODE(ibv_dealloc_pd(p)); }
C(destroy_cq_bad_handle, 0) { struct ibv_cq *q = fresh_cq(e->ctx); q->handle += BAD_HANDLE; CODE(ibv_destroy_cq(q)); }
C(destroy_srq_bad_handle, 0) { struct ibv_srq *s = fresh_srq(e->pd); s->handle += BAD_HANDLE; CODE(ibv_destroy_srq(s)); }
C(destroy_qp_bad_handle, 0) { struct ibv_qp *q = fresh_qp(e->pd, e->cq, NULL); q->handle += BAD_HANDLE; CODE(ibv_destroy_qp(q)); }
C(dereg_mr_bad_handle, 0) { e->mr->handle += BAD_HANDLE; CODE(ibv_dereg_mr(e->mr)); }
C(dealloc_mw_bad_handle, 0) { struct ibv_mw *m = fresh_mw(e->pd, IBV_MW_TYPE_2); m->handle += BAD_HANDLE; CODE(ibv_dealloc_mw(m)); }
C(destroy_ah_bad_handle, 0) { e->ah->handle += BAD_HANDLE; CODE(ibv_destroy_ah(e->ah)); }

/* ---- objects still in use by another (the kernel: EBUSY), and a refused
 * modify that must change nothing */
C(destroy_srq_busy, 0)
{
	struct ibv_srq *s = fresh_srq(e->pd);
	(void)fresh_qp(e->pd, e->cq, s);
	CODE(ibv_destroy_srq(s));
}
C(destroy_srq_after_its_qp, 0)
{
	struct ibv_srq *s = fresh_srq(e->pd);
	if (ibv_destroy_qp(fresh_qp(e->pd, e->cq, s)))
		setup_fail("destroy_qp");
	CODE(ibv_destroy_srq(s));
}
/* max_wr and an impossible limit at once: refused, and the max_wr stays */
C(modify_srq_wr_and_bad_limit, 0)
{
	struct ibv_srq_attr a = {.max_wr = 32, .srq_limit = 100000};
	CODE(ibv_modify_srq(e->srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT));
}
C(modify_srq_wr_and_bad_limit_max_wr_moved, 0)
{
	struct ibv_srq_attr b, a = {.max_wr = 32, .srq_limit = 100000}, q;
	if (ibv_query_srq(e->srq, &b))
		setup_fail("query_srq");
	(void)ibv_modify_srq(e->srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
	if (ibv_query_srq(e->srq, &q))
		setup_fail("query_srq");
	VAL((long)q.max_wr - (long)b.max_wr);
}
C(close_xrcd_busy, 0)
{
	struct ibv_xrcd_init_attr xa = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1,
					.oflags = O_CREAT};
	struct ibv_xrcd *x = ibv_open_xrcd(e->ctx, &xa);
	if (!x)
		setup_fail("open_xrcd");
	struct ibv_srq_init_attr_ex sa = {.attr = {.max_wr = 16, .max_sge = 1},
					  .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
						       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
					  .srq_type = IBV_SRQT_XRC, .pd = e->pd, .xrcd = x, .cq = e->cq};
	if (!ibv_create_srq_ex(e->ctx, &sa))
		setup_fail("create_srq_ex");
	CODE(ibv_close_xrcd(x));
}

/* ---- altered handles: an object used to make another, or modified */
C(create_qp_bad_cq_handle, 0)
{
	struct ibv_cq *q = fresh_cq(e->ctx);
	q->handle += BAD_HANDLE;
	struct ibv_qp_init_attr a = good_qp_attr(e);
	a.send_cq = a.recv_cq = q;
	PTR(ibv_create_qp(e->pd, &a));
}
C(create_qp_bad_srq_handle, 0)
{
	struct ibv_qp_init_attr a = good_qp_attr(e);
	e->srq->handle += BAD_HANDLE;
	a.srq = e->srq;
	a.cap.max_recv_wr = 0;
	PTR(ibv_create_qp(e->pd, &a));
}
C(create_qp_bad_pd_handle, 0) { struct ibv_qp_init_attr a = good_qp_attr(e); e->pd->handle += BAD_HANDLE; PTR(ibv_create_qp(e->pd, &a)); }
C(create_srq_bad_pd_handle, 0)
{
	struct ibv_srq_init_attr a = {.attr = {.max_wr = 16, .max_sge = 1}};
	e->pd->handle += BAD_HANDLE;
	PTR(ibv_create_srq(e->pd, &a));
}
C(create_ah_bad_pd_handle, 0) { struct ibv_ah_attr a = good_ah_attr(e); e->pd->handle += BAD_HANDLE; PTR(ibv_create_ah(e->pd, &a)); }
C(reg_mr_bad_pd_handle, 0) { e->pd->handle += BAD_HANDLE; PTR(ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE)); }
C(alloc_mw_bad_pd_handle, 0) { e->pd->handle += BAD_HANDLE; PTR(ibv_alloc_mw(e->pd, IBV_MW_TYPE_2)); }
C(modify_qp_bad_handle, 0) { e->qp->handle += BAD_HANDLE; CODE(to_init(e, 1, 0, 0)); }
C(query_qp_bad_handle, 0)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	e->qp->handle += BAD_HANDLE;
	CODE(ibv_query_qp(e->qp, &a, IBV_QP_STATE, &ia));
}
C(modify_srq_bad_handle, 0)
{
	struct ibv_srq_attr a = {.srq_limit = 4};
	e->srq->handle += BAD_HANDLE;
	CODE(ibv_modify_srq(e->srq, &a, IBV_SRQ_LIMIT));
}
C(query_srq_bad_handle, 0) { struct ibv_srq_attr a; e->srq->handle += BAD_HANDLE; CODE(ibv_query_srq(e->srq, &a)); }
C(resize_cq_bad_handle, 0) { e->cq->handle += BAD_HANDLE; CODE(ibv_resize_cq(e->cq, 32)); }
/* arming a CQ whose handle names nothing (rxe: the kernel's REQ_NOTIFY_CQ
 * command finds no CQ: ENOENT) */
C(req_notify_cq_bad_handle, 0) { e->cq->handle += BAD_HANDLE; CODE(ibv_req_notify_cq(e->cq, 0)); }
C(req_notify_cq_solicited_bad_handle, 0) { e->cq->handle += BAD_HANDLE; CODE(ibv_req_notify_cq(e->cq, 1)); }
C(req_notify_cq_pd_handle, 0)
{
	/* the handle of another kind of object (the context's PD) */
	e->cq->handle = e->pd->handle;
	CODE(ibv_req_notify_cq(e->cq, 0));
}

/* ---- objects of another context */
static struct ibv_context *second_ctx(E *e, struct ibv_pd **pd2)
{
	struct ibv_context *c = ibv_open_device(e->dev);
	if (!c)
		setup_fail("open_device 2");
	for (int i = 0; i < 40; i++)
		if (!ibv_alloc_pd(c))
			setup_fail("alloc_pd 2");
	if (!(*pd2 = ibv_alloc_pd(c)))
		setup_fail("alloc_pd 2");
	return c;
}

C(create_qp_foreign_cq, 0)
{
	struct ibv_pd *pd2;
	struct ibv_context *c2 = second_ctx(e, &pd2);
	struct ibv_qp_init_attr a = good_qp_attr(e);
	a.send_cq = a.recv_cq = fresh_cq(c2);
	PTR(ibv_create_qp(e->pd, &a));
}
C(create_qp_foreign_srq, 0)
{
	struct ibv_pd *pd2;
	second_ctx(e, &pd2);
	struct ibv_qp_init_attr a = good_qp_attr(e);
	a.srq = fresh_srq(pd2);
	a.cap.max_recv_wr = 0;
	PTR(ibv_create_qp(e->pd, &a));
}
C(create_qp_foreign_pd, 0)
{
	struct ibv_pd *pd2;
	second_ctx(e, &pd2);
	struct ibv_qp_init_attr a = good_qp_attr(e);
	PTR(ibv_create_qp(pd2, &a));
}
C(dealloc_pd_foreign_ctx, 0)
{
	struct ibv_pd *pd2;
	second_ctx(e, &pd2);
	pd2->context = e->ctx;
	CODE(ibv_dealloc_pd(pd2));
}
C(dereg_mr_foreign_ctx, 0)
{
	struct ibv_pd *pd2;
	second_ctx(e, &pd2);
	struct ibv_mr *m = ibv_reg_mr(pd2, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!m)
		setup_fail("reg_mr 2");
	m->context = e->ctx;
	CODE(ibv_dereg_mr(m));
}
C(destroy_cq_foreign_ctx, 0)
{
	struct ibv_pd *pd2;
	struct ibv_cq *q = fresh_cq(second_ctx(e, &pd2));
	q->context = e->ctx;
	CODE(ibv_destroy_cq(q));
}
C(destroy_qp_foreign_ctx, 0)
{
	struct ibv_pd *pd2;
	struct ibv_context *c2 = second_ctx(e, &pd2);
	struct ibv_qp *q = fresh_qp(pd2, fresh_cq(c2), NULL);
	q->context = e->ctx;
	CODE(ibv_destroy_qp(q));
}
C(destroy_ah_foreign_ctx, 0)
{
	struct ibv_pd *pd2;
	second_ctx(e, &pd2);
	struct ibv_ah_attr aa = good_ah_attr(e);
	struct ibv_ah *ah = ibv_create_ah(pd2, &aa);
	if (!ah)
		setup_fail("create_ah 2");
	ah->context = e->ctx;
	CODE(ibv_destroy_ah(ah));
}

