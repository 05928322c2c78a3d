/*
 * compat-tests/common/qpsetup.h: taking a QP from RESET to RTS, shared by
 * the compat-tests programs (bench/vm_bench.c, compat10/compat10.c,
 * vm-fault/faultprog.c, load/load.c, vm/fork-mr.c, soft/semantics.c,
 * soft/wakeup.c, soft/acks.c).
 *
 * Header only (static inline), so that a program needs no second .c file:
 * it includes "../common/qpsetup.h" and every build of it (the suites build
 * on the host with Debian's headers or ours: rdma-core 44, 56, 65 and
 * include/infiniband/) finds the header beside its source.  Nothing here
 * prints, allocates or touches errno: a program reports a failure as it
 * always did (ibv_modify_qp's return value, errno, the state it failed at).
 *
 *   struct qps_conn c;
 *   qps_defaults(&c);            port 1, MTU 1024, no GRH, PSNs 0, RC timers
 *   c.access = ...;              what differs: access flags, peer, GID, ...
 *   c.dest_qpn = peer_qpn;
 *   c.sgid_index = gid_index;    >= 0: a GRH to c.dgid (RoCE)
 *   c.dgid = peer_gid;
 *   rc = qps_to_rts(qp, &c, &failed);     INIT, RTR, RTS in turn
 *
 * or one step at a time, for a program that does something between the
 * steps (posts receives, times each modify):
 *   rc = qps_modify(qp, IBV_QPS_INIT, &c);
 * or, for a program that calls another ibv_modify_qp (compat10's
 * ibv_modify_qp@IBVERBS_1.0), just the attributes and the mask:
 *   mask = qps_attr(IBV_QPS_RTR, IBV_QPT_RC, &c, &attr);
 *
 * The attributes and masks of each step (what the programs always used):
 *   INIT  RC, UC: pkey_index, port_num, qp_access_flags
 *         UD:     pkey_index, port_num, qkey
 *   RTR   RC: address vector, path_mtu, dest_qp_num, rq_psn,
 *             max_dest_rd_atomic, min_rnr_timer
 *         UC: address vector, path_mtu, dest_qp_num, rq_psn
 *         UD: the state alone
 *   RTS   RC: timeout, retry_cnt, rnr_retry, sq_psn, max_rd_atomic
 *         UC, UD: sq_psn
 * The address vector: port_num, dlid, and with sgid_index >= 0 a GRH
 * (dgid, sgid_index, hop limit 1); everything else 0.
 */
#ifndef COMPAT_TESTS_QPSETUP_H
#define COMPAT_TESTS_QPSETUP_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

struct qps_conn {
	/* INIT */
	uint8_t port;                /* port_num; the address vector's port too */
	uint16_t pkey_index;
	unsigned int access;         /* qp_access_flags (RC, UC) */
	uint32_t qkey;               /* UD */
	/* RTR */
	enum ibv_mtu mtu;            /* RC, UC */
	uint32_t dest_qpn;           /* RC, UC */
	uint32_t rq_psn;             /* RC, UC: the peer's first PSN */
	uint16_t dlid;               /* address vector (0 on RoCE) */
	int sgid_index;              /* >= 0: GRH from this GID index to dgid; < 0: no GRH */
	union ibv_gid dgid;
	uint8_t max_dest_rd_atomic;  /* RC */
	uint8_t min_rnr_timer;       /* RC */
	/* RTS */
	uint8_t timeout;             /* RC */
	uint8_t retry_cnt;           /* RC */
	uint8_t rnr_retry;           /* RC */
	uint8_t max_rd_atomic;       /* RC */
	uint32_t sq_psn;             /* our first PSN */
};

/* port 1, pkey index 0, no access flags, qkey 0, MTU 1024, QPN 0, PSNs 0,
 * LID 0, no GRH, one RDMA read/atomic each way, RNR timer 12 (0.64 ms),
 * timeout 14 (67 ms), 7 retries, 7 RNR retries (infinite) */
static inline void qps_defaults(struct qps_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->port = 1;
	c->mtu = IBV_MTU_1024;
	c->sgid_index = -1;
	c->max_dest_rd_atomic = 1;
	c->min_rnr_timer = 12;
	c->timeout = 14;
	c->retry_cnt = 7;
	c->rnr_retry = 7;
	c->max_rd_atomic = 1;
}

/* the address vector towards the peer (RTR's, or one for ibv_create_ah) */
static inline void qps_ah_attr(const struct qps_conn *c, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = c->port;
	ah->dlid = c->dlid;
	if (c->sgid_index >= 0) {
		ah->is_global = 1;
		ah->grh.dgid = c->dgid;
		ah->grh.sgid_index = (uint8_t)c->sgid_index;
		ah->grh.hop_limit = 1;
	}
}

/* fills *a for the step to state TO of a QP of type TYPE; returns the
 * attr_mask, or 0 for a state or type it does not know (INIT, RTR, RTS of
 * RC, UC, UD) */
static inline int qps_attr(enum ibv_qp_state to, enum ibv_qp_type type, const struct qps_conn *c,
			   struct ibv_qp_attr *a)
{
	int is_rc = type == IBV_QPT_RC;

	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	if (type != IBV_QPT_RC && type != IBV_QPT_UC && type != IBV_QPT_UD)
		return 0;
	switch (to) {
	case IBV_QPS_INIT:
		a->pkey_index = c->pkey_index;
		a->port_num = c->port;
		if (type == IBV_QPT_UD) {
			a->qkey = c->qkey;
			return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		}
		a->qp_access_flags = c->access;
		return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	case IBV_QPS_RTR:
		if (type == IBV_QPT_UD)
			return IBV_QP_STATE;
		a->path_mtu = c->mtu;
		a->dest_qp_num = c->dest_qpn;
		a->rq_psn = c->rq_psn;
		qps_ah_attr(c, &a->ah_attr);
		if (!is_rc)
			return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		a->max_dest_rd_atomic = c->max_dest_rd_atomic;
		a->min_rnr_timer = c->min_rnr_timer;
		return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	case IBV_QPS_RTS:
		a->sq_psn = c->sq_psn;
		if (!is_rc)
			return IBV_QP_STATE | IBV_QP_SQ_PSN;
		a->timeout = c->timeout;
		a->retry_cnt = c->retry_cnt;
		a->rnr_retry = c->rnr_retry;
		a->max_rd_atomic = c->max_rd_atomic;
		return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		       IBV_QP_MAX_QP_RD_ATOMIC;
	default:
		return 0;
	}
}

/* one step: ibv_modify_qp's return value (0, or an errno value; EINVAL
 * without a call for a step qps_attr does not know) */
static inline int qps_modify(struct ibv_qp *qp, enum ibv_qp_state to, const struct qps_conn *c)
{
	struct ibv_qp_attr a;
	int mask = qps_attr(to, qp->qp_type, c, &a);

	return mask ? ibv_modify_qp(qp, &a, mask) : EINVAL;
}

/* RESET -> INIT -> RTR -> RTS: 0, or the failed step's return value with
 * *failed (when not NULL) the state it did not reach */
static inline int qps_to_rts(struct ibv_qp *qp, const struct qps_conn *c, enum ibv_qp_state *failed)
{
	static const enum ibv_qp_state steps[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	unsigned i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int ret = qps_modify(qp, steps[i], c);

		if (ret) {
			if (failed)
				*failed = steps[i];
			return ret;
		}
	}
	return 0;
}

/* "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" (for messages) */
static inline const char *qps_state_name(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "UNKNOWN";
	}
}

#endif
