//! Completing a send request at once: local operations, requests refused
//! at posting time with a completion status, flushes in the error state,
//! and what the initiator executed itself.

use crate::context::{lock, Ctx, Qp, QpSt, SWqe};
use ibverbs_abi::*;

/// Completes a request now, in send queue order, with `status` (an error
/// other than a flush moves the QP to the error state).
pub fn finish_now(c: &Ctx, qp: &Qp, wr_id: u64, op: u32, len: u32, signaled: bool, status: u32) {
    finish_locked(c, qp, &mut lock(&qp.st), wr_id, op, len, signaled, status);
}

/// `finish_now` with the QP's lock held.
#[allow(clippy::too_many_arguments)]
pub fn finish_locked(c: &Ctx, qp: &Qp, st: &mut QpSt, wr_id: u64, op: u32, len: u32, signaled: bool, status: u32) {
    let seq = st.next_seq;
    st.next_seq += 1;
    st.sq
        .push_back(SWqe::local(seq, wr_id, op, signaled, len, Some(status)));
    if status != 0 && status != IBV_WC_WR_FLUSH_ERR {
        c.to_err(qp, st);
    }
    c.complete_sq(qp, st);
}
