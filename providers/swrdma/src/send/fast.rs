//! The most common request of a latency-bound program, posted in one go:
//! a SEND (with or without immediate data) of at most `SHORT_MAX` bytes
//! on an RC QP of a ring device in RTS, with room in its send queue and
//! in the link's ring, nothing waiting to be sent again, and the link to
//! its peer made and alive.  It takes the QP's lock once and the link's
//! producer side with it (`try_lock`: the posting order is producer side
//! first, so only a lock that is free now may be taken here), and writes
//! the request as one short record.  What it does is what the general path
//! (`post_read`, `over_ring::post`, `queue_reliable`, `send_message`) does
//! for such a request, step for step, but for one order: the record is
//! written before the send queue's entry is booked (the general path books
//! first; here the QP's lock, under which the ACK is taken, is held over
//! both); any other
//! request, or any condition not met, goes the general way before anything
//! is changed.

use super::request::{Operation, SendRequest};
use crate::context::*;
use ibverbs_abi::*;
use std::os::raw::c_int;
use std::sync::atomic::Ordering;
use swrdma_ring::*;

/// Posts `req` when it is the common case; None: nothing was done (the
/// general path takes it).
///
/// # Safety
/// `req` was read from a valid send request: `num_sge` SGEs at `sg_list`,
/// inline data readable for the call.
pub unsafe fn try_post(c: &Ctx, qp: &Qp, req: &SendRequest) -> Option<Result<(), c_int>> {
    if qp.qpt != IBV_QPT_RC || !matches!(req.op, Operation::Send | Operation::SendWithImm { .. }) {
        return None;
    }
    let inline = req.inline_flag();
    if req.num_sge < 0 || (!inline && req.num_sge as u32 > qp.cap.max_send_sge) || c.wire_rt().is_some() {
        return None;
    }
    // SAFETY: `num_sge` (not negative) SGEs at `sg_list` (the contract).
    let sges = unsafe { req.gather_list() };
    let len: u64 = sges.iter().map(|s| s.length as u64).sum();
    if len > SHORT_MAX as u64 || (inline && len > qp.cap.max_inline_data as u64) {
        return None;
    }
    let mut st = lock(&qp.st);
    let free = st.sq.len() < qp.cap.max_send_wr as usize;
    if st.state != IBV_QPS_RTS || !free || st.resend.is_some() || st.probe.is_some() {
        return None;
    }
    // (The link is lent out of the QP's state for the call, and back: no
    // reference count taken.)
    let link = st.link.take()?;
    // SAFETY: forwarded (the contract); `st` is the QP's state, locked.
    let r = unsafe { post_locked(c, qp, &mut st, &link, req, (sges, len, inline)) };
    st.link = Some(link);
    if r == Some(false) {
        // (Our registered source unmapped since: LOC_PROT_ERR, the QP to
        // error, as the general path.)
        c.to_err(qp, &mut st);
    }
    r.map(|_| Ok(()))
}

/// `try_post` with the QP's lock held and its link lent out: None, nothing
/// done; Some(true) posted; Some(false) posted and failed at once (the
/// request is done with LOC_PROT_ERR; the caller moves the QP to error).
///
/// # Safety
/// As `try_post`; `sges`, `len` and `inline` describe `req`'s data.
unsafe fn post_locked(
    c: &Ctx,
    qp: &Qp,
    st: &mut QpSt,
    link: &OutLink,
    req: &SendRequest,
    (sges, len, inline): (&[ibv_sge], u64, bool),
) -> Option<bool> {
    if link.dead.load(Ordering::Relaxed) {
        return None;
    }
    let translated = if inline {
        None
    } else {
        // (A key the table refuses: the general path completes the request
        // with the error.)
        c.check_local(qp.pd, sges, false).ok()?
    };
    let tx = link.try_producer()?;
    let start = link.tx().produced();
    // SAFETY: we hold the link's producer side; 64 bytes is a record.
    let (p, nh) = unsafe { link.tx().try_reserve(64) }?;
    // From here on the request is posted: nothing returns None.
    let mut m = Msg {
        kind: K_SEND,
        src_qpn: qp.qpn,
        dst_qpn: st.attr.dest_qp_num,
        total: len,
        status: swrdma_rc::responder::pmtu_bytes(st.attr.path_mtu),
        sgid: c.gid(st.attr.ah_attr.grh.sgid_index as usize),
        ..Default::default()
    };
    if req.solicited() {
        m.flags |= F_SOLICITED;
    }
    if let Some(imm) = req.op.imm() {
        m.flags |= F_IMM;
        m.imm = imm;
    }
    let seq = st.next_seq;
    st.next_seq += 1;
    m.seq = seq;
    if super::over_ring::ack_wanted(qp, st, req) {
        m.flags |= F_ACKREQ;
    }
    let from = translated.as_deref().unwrap_or(sges);
    let mut fill = |d: *mut u8| {
        // SAFETY: `d` is the record's payload space (`len` <= SHORT_MAX
        // bytes); inline data is readable for the call, a registered list
        // passed `check_local` and is read fault-safe.
        unsafe {
            if inline {
                gather(from, 0, d, len as usize);
                true
            } else {
                gather_safe(from, 0, d, len as usize)
            }
        }
    };
    // (The send queue keeps the message's header; its one record is its
    // first and last, as `frag` makes it.)
    let rec = Msg {
        flags: m.flags | F_FIRST | F_LAST,
        ..m
    };
    // The record first, the send queue's entry after it: the peer reads
    // the record while this thread books the request (its ACK is taken
    // under the QP's lock, which we hold, so it finds the entry).
    // SAFETY: `p`/`nh` reserved just above for a 64-byte record, by the
    // ring's only producer (we hold `tx`).
    let sent = unsafe { put_at(link, (p, nh, Form::Short), &rec, len as usize, &mut fill) };
    drop(tx);
    let copy = if inline && len > 0 {
        // SAFETY: inline data is readable for the call (the contract).
        InlineCopy::new(len as usize, |d| unsafe { gather(from, 0, d, len as usize) })
    } else {
        InlineCopy::NONE
    };
    st.sq.push_back(SWqe {
        seq,
        wr_id: req.wr_id,
        op: IBV_WC_SEND,
        signaled: req.signaled(),
        len: len as u32,
        done: (!sent).then_some(IBV_WC_LOC_PROT_ERR),
        sges: Vec::new(),
        hdr: m,
        gsges: if inline { KeptSges::NONE } else { KeptSges::new(sges) },
        data: copy,
        start,
    });
    Some(sent)
}
