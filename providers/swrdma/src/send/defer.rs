//! RDMA WRITEs and READs on private memory posted one `ibv_post_send` at a
//! time, executed together: one `process_vm_writev`/`readv` for up to
//! `DEFER_MAX` consecutive requests of a QP instead of one per request
//! (issue 34, item 3: a system call costs 1.2-1.7 us on this machine, a
//! 4 KiB copy a tenth of that).
//!
//! When.  A request is kept back ("deferred") only when all of these hold:
//! `Batch::take` would take it (an RC QP of a ring device in RTS, an RDMA
//! WRITE or READ its gather list and the peer allow on the direct path,
//! room in the send queue counting the deferred ones), its target is not
//! memory the peer's MR publishes as a shared object (`Peer::maps`: a
//! memcpy each, no system call to share), it is posted alone
//! (a list is batched by `post_list` already), the QP had a request posted
//! since the application last polled a CQ of the context, and the
//! context's last post before this one was on the same QP (the first post
//! after a poll goes at once: a latency-bound program, which polls between
//! posts, never waits; posts that alternate between QPs go at once), the
//! application is polling (the context's thread
//! backs off: `Ctx::app_polls`), and deferral is not switched off (below).
//!
//! Until when.  The deferred requests of a QP execute, in order, before
//! anything else posted on it and at the latest at the first of: the
//! `DEFER_MAX`-th deferred request; any `ibv_post_send` of the context
//! (another QP's too: a request on one QP must not overtake one posted
//! earlier on another, which a NIC would have executed by then);
//! `ibv_poll_cq` of any CQ of the context that finds fewer completions than
//! asked for; `ibv_req_notify_cq`; `ibv_modify_qp`, `ibv_destroy_qp`,
//! `ibv_dereg_mr`, closing the context; and the context's thread, which
//! wakes at least every millisecond while it backs off.  A program that
//! posts and then waits on memory without any further call (a peer's write
//! into a polled flag) would wait for the thread: when the thread finds a
//! request deferred for `STALE_NS` or more, it executes it and switches
//! deferral off for the context, for 10 ms the first time and twice as
//! long each further time (at most a minute): such a program pays one wait
//! of about a millisecond (more when the thread waits for a CPU: 0.1-3 ms
//! measured on 2 busy CPUs, `compat-tests/soft/defer.c`), then a few more
//! over minutes.
//!
//! What does not change: the order of execution and of completions within
//! a QP; what the application's memory does (the same system calls on the
//! same addresses, later); errors (a request is deferred only when it
//! would have taken the direct path at post; at execution it goes through
//! `Batch` and, where the direct path no longer takes it, is posted as if
//! it had been posted then, completing with the error its responder
//! gives).  A request is executed "later" as it is on any device: the
//! verbs promise execution, not when; the data is at the target when the
//! request completes.  What the verbs leave undefined may come out
//! otherwise than with each request executed at its post: a source buffer
//! the application changes before the request completes is read as it is
//! at execution; one it unmaps (or an MR it deregisters — which executes
//! what waits first) fails the request with LOC_PROT_ERR, as a request
//! executed after the unmap.  A forked child that calls the library on
//! its copy of the context drops its copy of the parent's deferred
//! requests (the parent executes them).  `SWRDMA_DEFER=0` turns deferral
//! off.

use super::batch::Batch;
use crate::context::{Ctx, Qp};
use crate::deferq::{enabled, Deferred, Kept, DEFER_MAX};
use ibverbs_abi::*;
use std::sync::{Arc, MutexGuard};

/// Keeps `wr` (posted alone on `qp`, whose `deferred` is `d`) for later, if
/// the module's conditions hold: `Kept`, it is posted (the caller executes
/// the QP's deferred requests when `full`); `Taken`, a request to a shared
/// object, taken by `probe` (empty before) for the caller to flush; `No`,
/// nothing was done (`probe` is left empty).
/// `same`: the context's post before this one was on `qp` too.
///
/// # Safety
/// `wr` is a valid send request (`post_one`'s contract).
pub unsafe fn defer<'a>(
    c: &Ctx,
    qp: &Arc<Qp>,
    d: &mut Deferred,
    wr: &'a ibv_send_wr,
    same: bool,
    probe: &mut Batch<'a>,
) -> Deferral {
    let epoch = c.poll_epoch();
    let again = std::mem::replace(&mut d.epoch, epoch) == epoch && same;
    if !again || !matches!(wr.opcode, IBV_WR_RDMA_WRITE | IBV_WR_RDMA_READ) || wr.send_flags & IBV_SEND_INLINE != 0 {
        return Deferral::No;
    }
    if !enabled() || !c.app_polls() || !c.defers.on() {
        return Deferral::No;
    }
    probe.set_queued(d.kept.len());
    // SAFETY: `wr` is valid (the contract); the probe is emptied unflushed
    // or left to the caller to flush.
    if !unsafe { probe.take(c, qp, wr) } {
        probe.set_queued(0);
        return Deferral::No;
    }
    if probe.to_shared() {
        return Deferral::Taken;
    }
    probe.forget();
    let n = wr.num_sge.max(0) as usize;
    // SAFETY: `take` accepted `num_sge` SGEs at `sg_list` (the contract).
    let sges = unsafe { std::slice::from_raw_parts(wr.sg_list, n) }.to_vec();
    let mut kept = *wr;
    kept.next = std::ptr::null_mut();
    if d.kept.is_empty() {
        d.pid = crate::locks::pid();
        c.defers.add(qp.qpn);
    }
    d.kept.push(Kept { wr: kept, sges });
    Deferral::Kept
}

/// What `defer` did with a request.
pub enum Deferral {
    /// Kept for later: it is posted.
    Kept,
    /// Not kept, but taken by the caller's batch (its target is a shared
    /// object we map, `Batch::to_shared`): the caller executes the QP's
    /// deferred requests, then flushes it.
    Taken,
    /// Nothing was done.
    No,
}

/// Whether `d` holds as many requests as may wait.
pub fn full(d: &Deferred) -> bool {
    d.kept.len() >= DEFER_MAX
}

/// Takes `qp`'s deferred requests out of `d` (its lock held) to execute
/// them, in order, their `sg_list`s pointing to their copies; empty when
/// none, or when they are a forked parent's (dropped).
pub fn take_kept(c: &Ctx, qp: &Qp, d: &mut Deferred) -> Vec<Kept> {
    if d.kept.is_empty() {
        return Vec::new();
    }
    let mut kept = std::mem::take(&mut d.kept);
    c.defers.remove(qp.qpn);
    if d.pid != crate::locks::pid() {
        return Vec::new();
    }
    for k in kept.iter_mut() {
        k.wr.sg_list = k.sges.as_mut_ptr();
    }
    kept
}

/// Whether some QP of the context other than the one whose `deferred` is
/// `own` has requests deferred.
pub fn others_waiting(c: &Ctx, own: &MutexGuard<'_, Deferred>) -> bool {
    c.defers.waiting() > usize::from(!own.kept.is_empty())
}
