//! The send queue's work requests (ibv_post_send, and ibv_wr_complete of
//! the extended QP): the checks every request passes, the local operations,
//! then the transport - the rings between processes of this host
//! (over_ring) or the RoCE v2 engine of a wire device (over_wire).
//!
//! Layers: `request` reads a request out of `ibv_send_wr` (all the reads
//! of its unions); `complete` completes requests at once; `local` does the
//! local operations; `over_ring` and `over_wire` are the transports, `fast`
//! the ring transport's common case in one go.  None of them uses this
//! module.

mod batch;
mod complete;
mod defer;
mod fast;
mod local;
mod over_ring;
mod over_wire;
mod request;

pub use complete::finish_now;
pub use local::bind_window;

use crate::context::*;
use crate::deferq::Deferred;
use crate::handles::MTU_BYTES;
use ibverbs_abi::*;
use request::{LocalData, Operation, QpView, SendRequest};
use std::os::raw::c_int;
use std::sync::Arc;

/// `ibv_post_send`'s list: each request posted in turn (`post_verb`),
/// consecutive RDMA WRITEs or READs the initiator executes itself kept
/// together and executed with one system call (batch.rs); one such request
/// posted alone may wait for the next ones (defer.rs).  Err: the request
/// refused and why; the ones before it were posted.
///
/// # Safety
/// `wr` is null or the first of a list of valid send requests, as
/// `post_one`'s contract says of each.
pub unsafe fn post_list(c: &Ctx, qp: &Arc<Qp>, mut wr: *mut ibv_send_wr) -> Result<(), (*mut ibv_send_wr, c_int)> {
    // SAFETY: a non-null `wr` is a valid request (the contract).
    if let Some(w) = unsafe { wr.as_ref() } {
        if w.next.is_null() && c.defers.waiting() == 0 && !matches!(w.opcode, IBV_WR_RDMA_WRITE | IBV_WR_RDMA_READ) {
            // A lone request the deferral never takes, with nothing
            // deferred on the context (none of this QP's either): nothing
            // to execute before it, nothing to defer, no batch.
            c.defers.note_post(qp.qpn);
            // SAFETY: as above.
            return unsafe { post_verb(c, qp, w) }.map_err(|e| (wr, e));
        }
    }
    let mut d = lock(&qp.deferred);
    if defer::others_waiting(c, &d) {
        // (Another QP's first, without holding two QPs' locks.)
        drop(d);
        execute_deferred(c, Some(qp), false);
        d = lock(&qp.deferred);
    }
    let same = c.defers.note_post(qp.qpn);
    let mut kept = batch::Batch::new();
    // SAFETY: a non-null `wr` is a valid request (the contract).
    if !wr.is_null() && unsafe { (*wr).next.is_null() } {
        // SAFETY: as above.
        match unsafe { defer::defer(c, qp, &mut d, &*wr, same, &mut kept) } {
            defer::Deferral::Kept => {
                if defer::full(&d) {
                    execute_deferred_locked(c, qp, &mut d);
                }
                return Ok(());
            }
            defer::Deferral::Taken => {
                execute_deferred_locked(c, qp, &mut d);
                kept.flush(c, qp);
                return Ok(());
            }
            defer::Deferral::No => {}
        }
    }
    execute_deferred_locked(c, qp, &mut d);
    while !wr.is_null() {
        // SAFETY: a non-null element of the list (the contract), valid for
        // the call.
        let w = unsafe { &*wr };
        // SAFETY: as above; the batch is flushed before this returns.
        if !unsafe { kept.take(c, qp, w) } {
            kept.flush(c, qp);
            // SAFETY: as above.
            if let Err(e) = unsafe { post_verb(c, qp, w) } {
                return Err((wr, e));
            }
        }
        wr = w.next;
    }
    kept.flush(c, qp);
    Ok(())
}

/// Executes `qp`'s deferred requests (defer.rs) whose `deferred` is `d`
/// (its lock held), in order, as a post list of them would.
fn execute_deferred_locked(c: &Ctx, qp: &Arc<Qp>, d: &mut Deferred) {
    let kept = defer::take_kept(c, qp, d);
    if kept.is_empty() {
        return;
    }
    let mut batch = batch::Batch::new();
    for k in &kept {
        // SAFETY: the request as the application posted it, its gather
        // list our copy; `take` accepted it at post.
        if unsafe { batch.take(c, qp, &k.wr) } {
            continue;
        }
        batch.flush(c, qp);
        // SAFETY: as above.
        if unsafe { post_verb(c, qp, &k.wr) }.is_err() {
            // (Not seen: what `take` accepted at post posts without an
            // errno; the request completes with an error rather than
            // vanish.)
            if let Some(r) = SendRequest::read(&k.wr, qp.qpt) {
                finish_now(c, qp, r.wr_id, r.op.wc_opcode(), 0, r.signaled(), IBV_WC_LOC_QP_OP_ERR);
            }
        }
    }
    batch.flush(c, qp);
}

/// Executes the deferred requests of `qp` (defer.rs).
pub fn execute_deferred_qp(c: &Ctx, qp: &Arc<Qp>) {
    let mut d = lock(&qp.deferred);
    execute_deferred_locked(c, qp, &mut d);
}

/// Executes the deferred requests of every QP of the context but `except`
/// (whose `deferred` lock the caller may hold: never two at once here).
/// `stale_only`: only those deferred for `STALE_NS` or more (the context's
/// thread), each such QP counting as a stale one (deferral goes off).
pub fn execute_deferred(c: &Ctx, except: Option<&Arc<Qp>>, stale_only: bool) {
    if c.defers.waiting() == 0 {
        return;
    }
    for qpn in c.defers.qpns(except.map(|q| q.qpn), stale_only) {
        let Some(qp) = c.qp(qpn) else {
            // (Destroyed: `destroy_qp` executed them.)
            c.defers.remove(qpn);
            continue;
        };
        let mut d = lock(&qp.deferred);
        if stale_only && !d.kept.is_empty() {
            c.defers.stale_found();
        }
        execute_deferred_locked(c, &qp, &mut d);
    }
}

/// The context's thread: executes what an application left deferred for
/// long (`Ctx::run_thread`'s `pass`).
pub fn deferred_thread_pass(c: &Ctx) {
    execute_deferred(c, None, true);
}

/// `ibv_post_send`'s request: first the check rxe's provider makes there
/// (not in its `ibv_wr_*` interface, whose misaligned atomics reach the
/// responder and come back NAKed invalid request): CMP_AND_SWP or
/// FETCH_AND_ADD with less than 8 bytes or a remote address not aligned to
/// 8 is EINVAL; then `post_one`.
///
/// # Safety
/// As `post_one`.
pub unsafe fn post_verb(c: &Ctx, qp: &Arc<Qp>, wr: &ibv_send_wr) -> Result<(), c_int> {
    let read = SendRequest::read(wr, qp.qpt);
    if let Some(req) = &read {
        let fits = req.num_sge >= 0 && req.num_sge as u32 <= qp.cap.max_send_sge;
        if req.op.is_atomic() && fits {
            // SAFETY: `num_sge` SGEs at `sg_list` (the contract; checked
            // against the QP's maximum above).
            let len: u64 = unsafe { req.gather_list() }.iter().map(|s| s.length as u64).sum();
            if len < 8 || req.op.remote().is_some_and(|r| !r.addr.is_multiple_of(8)) {
                return Err(libc::EINVAL);
            }
        }
    }
    // SAFETY: forwarded (the contract).
    unsafe { post_read(c, qp, read) }
}

/// Posts one send work request.
///
/// # Safety
/// `wr` is a valid send request: `num_sge` SGEs at `sg_list`, and for its opcode a live `ah` (UD) or `mw` (bind) of ours; SGE ranges of inline data are readable.
pub unsafe fn post_one(c: &Ctx, qp: &Arc<Qp>, wr: &ibv_send_wr) -> Result<(), c_int> {
    // SAFETY: forwarded (the contract).
    unsafe { post_read(c, qp, SendRequest::read(wr, qp.qpt)) }
}

/// `post_one` with the request read from it (None: it reads as no
/// request: EINVAL).
///
/// # Safety
/// As `post_one`: `read` was read from such a request.
unsafe fn post_read(c: &Ctx, qp: &Arc<Qp>, read: Option<SendRequest>) -> Result<(), c_int> {
    if let Some(req) = &read {
        // SAFETY: forwarded (the contract).
        if let Some(r) = unsafe { fast::try_post(c, qp, req) } {
            return r;
        }
    }
    let view = QpView::of(qp);
    let qpt = qp.qpt;
    if qpt == IBV_QPT_XRC_RECV {
        return Err(libc::EINVAL);
    }
    // The send queue holds `max_send_wr` requests not yet completed, as
    // `ibv_create_qp` promised and no more (a hardware queue is full:
    // ENOMEM, as upstream's providers answer).
    if view.outstanding >= qp.cap.max_send_wr as usize && !c.make_room(qp) {
        return Err(libc::ENOMEM);
    }
    let Some(req) = read else {
        return Err(libc::EINVAL);
    };
    // An operation the QP's transport does not offer: a UD or UC QP takes
    // it at post and fails it (LOC_QP_OP_ERR, the QP to error), as rxe
    // (its provider posts any opcode, its requester finds no packet
    // opcode for it); other QP types refuse it at post.
    let local = matches!(req.op, Operation::BindMw(_) | Operation::LocalInv { .. });
    let op_err = !req.op.allowed_on(qpt);
    if op_err && (local || (qpt != IBV_QPT_UD && qpt != IBV_QPT_UC)) {
        return Err(libc::EINVAL);
    }
    if view.state == IBV_QPS_ERR {
        finish_now(
            c,
            qp,
            req.wr_id,
            req.op.wc_opcode(),
            0,
            req.signaled(),
            IBV_WC_WR_FLUSH_ERR,
        );
        return Ok(());
    }
    if view.state != IBV_QPS_RTS && view.state != IBV_QPS_SQD {
        return Err(libc::EINVAL);
    }
    if op_err {
        let (op, signaled) = (req.op.wc_opcode(), req.signaled());
        finish_now(c, qp, req.wr_id, op, 0, signaled, IBV_WC_LOC_QP_OP_ERR);
        return Ok(());
    }
    // Local operations: done at once, completed in order.
    match req.op {
        // SAFETY: the request's window is null or one of ours, and its
        // bind's MR null or one of ours (the contract); `qp` is live.
        Operation::BindMw(b) => return unsafe { local::post_bind_mw(c, qp, &req, &b) },
        Operation::LocalInv { rkey } => {
            local::post_local_inv(c, qp, &req, rkey);
            return Ok(());
        }
        _ => {}
    }
    // SAFETY: the request's gather list is valid (the contract).
    let Some(data) = (unsafe { check_local_data(c, qp, &req) })? else {
        return Ok(());
    };
    if let Some(w) = c.wire_rt() {
        // SAFETY: `req` was read from the application's valid request (the
        // contract); `data` passed `check_local` or is inline data.
        return unsafe { over_wire::post(c, w, qp, &req, &data, view.own_qkey) };
    }
    // SAFETY: as above.
    unsafe { over_ring::post(c, qp, &req, &data, view) }
}

/// The checks of the request's gather list (or inline data), and the
/// translation of its local keys (`check_local`).  Err: the request is
/// refused; Ok(None): it is completed already, with an error status.
///
/// # Safety
/// `req` was read from a valid request: `num_sge` SGEs at `sg_list`.
unsafe fn check_local_data<'a>(c: &Ctx, qp: &Qp, req: &SendRequest<'a>) -> Result<Option<LocalData<'a>>, c_int> {
    let inline = req.inline_flag() && req.op.takes_inline();
    if req.num_sge < 0 || (!inline && req.num_sge as u32 > qp.cap.max_send_sge) {
        return Err(libc::EINVAL);
    }
    // SAFETY: `num_sge` is not negative (checked above) and the request
    // valid (the contract).
    let sges = unsafe { req.gather_list() };
    let len: u64 = sges.iter().map(|s| s.length as u64).sum();
    if inline && len > qp.cap.max_inline_data as u64 {
        return Err(libc::EINVAL);
    }
    if len > 0x8000_0000 || (qp.qpt == IBV_QPT_UD && len > MTU_BYTES) {
        return Err(libc::EINVAL);
    }
    let (op, signaled) = (req.op.wc_opcode(), req.signaled());
    let (is_atomic, is_read) = (req.op.is_atomic(), req.op.is_read());
    if (is_atomic || req.op.is_atomic_write()) && len != 8 {
        finish_now(c, qp, req.wr_id, op, 0, signaled, IBV_WC_LOC_LEN_ERR);
        return Ok(None);
    }
    let mut translated = None;
    if !inline {
        match c.check_local(qp.pd, sges, is_atomic || is_read) {
            Ok(t) => translated = t,
            Err(s) => {
                finish_now(c, qp, req.wr_id, op, 0, signaled, s);
                return Ok(None);
            }
        }
    }
    Ok(Some(LocalData {
        posted: sges,
        translated,
        len,
        inline,
    }))
}
