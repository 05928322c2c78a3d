//! The local operations of the send queue: binding a memory window and
//! invalidating one.  Done at once (nothing goes to the peer), completed in
//! order.

use super::complete::finish_now;
use super::request::{MwBind, SendRequest};
use crate::context::{Ctx, Qp, WindowBind};
use crate::handles::pd_id;
use ibverbs_abi::*;
use std::os::raw::c_int;

/// Binds (or, with length 0, unbinds) `mw` to the range of `info`; the
/// window's new rkey is `rkey`.  Err: the completion status.
///
/// # Safety
/// `mw` is null or one of our windows, `qp.ibqp` the `ibv_qp` of a live `SwQp`, and `info.mr` null or one of our MRs.
pub unsafe fn bind_window(c: &Ctx, qp: &Qp, mw: *mut ibv_mw, rkey: u32, info: &ibv_mw_bind_info) -> Result<(), u32> {
    if mw.is_null() {
        return Err(IBV_WC_MW_BIND_ERR);
    }
    // SAFETY: `mw` is non-null, so one of our live windows (the contract),
    // not used concurrently by the application during the bind; its PD is
    // one of ours; `qp.ibqp` is the live `ibv_qp` of `qp`.
    let (mwpd, qctx, w) = unsafe { (pd_id((*mw).pd), (*(qp.ibqp as *mut ibv_qp)).context, &mut *mw) };
    if w.context != qctx {
        return Err(IBV_WC_MW_BIND_ERR);
    }
    let range = if info.length > 0 {
        if info.mr.is_null() {
            return Err(IBV_WC_MW_BIND_ERR);
        }
        // SAFETY: `info.mr` is non-null, so one of our MRs (the contract).
        Some((unsafe { (*info.mr).lkey }, info.addr, info.length))
    } else {
        None
    };
    let bind = WindowBind {
        ty: w.r#type,
        old: w.rkey,
        pd: mwpd,
        access: info.mw_access_flags,
        rkey,
        range,
    };
    w.rkey = c.bind_window(qp, &bind)?;
    Ok(())
}

/// BIND_MW: binds a type 2 window (type 1 windows are bound by
/// ibv_bind_mw).  Err: the request is refused (EINVAL).
///
/// # Safety
/// `b.mw` is null or one of our windows, `qp.ibqp` the `ibv_qp` of a live
/// `SwQp`, and `b.info.mr` null or one of our MRs.
pub unsafe fn post_bind_mw(c: &Ctx, qp: &Qp, req: &SendRequest, b: &MwBind) -> Result<(), c_int> {
    // SAFETY: `b.mw` is checked non-null first; then it is one of our
    // windows (the contract).
    if b.mw.is_null() || unsafe { (*b.mw).r#type } != IBV_MW_TYPE_2 {
        return Err(libc::EINVAL);
    }
    // SAFETY: `b.mw` is a live window of ours, `qp` is live, and
    // `info.mr` is null or one of our MRs (the contract).
    let status = match unsafe { bind_window(c, qp, b.mw, b.rkey, &b.info) } {
        Ok(()) => 0,
        Err(s) => s,
    };
    finish_now(c, qp, req.wr_id, req.op.wc_opcode(), 0, req.signaled(), status);
    Ok(())
}

/// LOCAL_INV: invalidates the (type 2) window `rkey`.
pub fn post_local_inv(c: &Ctx, qp: &Qp, req: &SendRequest, rkey: u32) {
    let status = if c.invalidate(rkey, 0) { 0 } else { IBV_WC_LOC_QP_OP_ERR };
    finish_now(c, qp, req.wr_id, req.op.wc_opcode(), 0, req.signaled(), status);
}
