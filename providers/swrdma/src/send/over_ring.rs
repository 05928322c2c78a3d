//! The ring transport: a request to a QP of a process on this host goes as
//! a message on the link to that process (swrdma_ring), or - a one-sided
//! request of an RC QP - is executed by the initiator itself on the peer's
//! memory (direct.rs).

use super::complete::{finish_locked, finish_now};
use super::request::{LocalData, Operation, QpView, SendRequest};
use crate::context::*;
use crate::direct;
use crate::handles::ah_attr_of;
use ibverbs_abi::*;
use std::os::raw::c_int;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use swrdma_ring::*;

/// A request of a ring device's QP (checked by `post_one`): to the peer
/// it is addressed to.
///
/// # Safety
/// `req` was read from a valid send request (for UD, a live `ah` of ours);
/// `data` passed `check_local` (or is inline data readable for the call).
pub unsafe fn post(c: &Ctx, qp: &Arc<Qp>, req: &SendRequest, data: &LocalData, view: QpView) -> Result<(), c_int> {
    let len = data.len;
    let pmtu = view.pmtu;
    // Destination.
    let mut m = Msg {
        src_qpn: qp.qpn,
        total: len,
        ..Default::default()
    };
    // SAFETY: forwarded to our caller (a UD request's AH).
    let (dest, link) = unsafe { address(c, qp, req, view, &mut m) }?;
    if dest == MULTICAST_QPN && qp.qpt == IBV_QPT_UD && Ctx::is_multicast_gid(&m.dgid) {
        // SAFETY: forwarded to our caller (the local data).
        unsafe { post_multicast(c, qp, req, data, &mut m) };
        return Ok(());
    }
    m.dst_qpn = dest;
    let reliable = qp.qpt == IBV_QPT_RC || qp.qpt == IBV_QPT_XRC_SEND;
    let Some(link) = link else {
        unreachable_peer(c, qp, req, len, reliable);
        return Ok(());
    };
    if execute_directly(c, qp, req, data, &link, dest) {
        return Ok(());
    }
    // SAFETY: forwarded to our caller (the local data).
    if !unsafe { fill_header(&mut m, qp.qpt, req, data) } {
        // (An ATOMIC_WRITE whose registered 8 bytes are no longer mapped.)
        finish_now(
            c,
            qp,
            req.wr_id,
            req.op.wc_opcode(),
            len as u32,
            req.signaled(),
            IBV_WC_LOC_PROT_ERR,
        );
        return Ok(());
    }
    if qp.qpt != IBV_QPT_UD && (m.kind == K_SEND || m.kind == K_WRITE) {
        // A request's `status` (only responses have one) carries our path
        // MTU: the responder refuses a message whose first packet would be
        // longer than its own (swrdma_rc::responder::first_packet_fits).
        m.status = pmtu;
    }
    let tx = link.producer();
    // SAFETY: forwarded to our caller (the local data).
    if reliable && !unsafe { queue_reliable(c, qp, req, data, &mut m, link.tx().produced()) } {
        return Ok(());
    }
    // SAFETY: forwarded to our caller (the local data).
    let sent = unsafe { send_message(c, &link, &m, data) };
    drop(tx);
    // A payload we could not read (our registered source unmapped since):
    // the request completes with LOC_PROT_ERR and the QP goes to the error
    // state, as for a bad lkey; the responder dropped the message.
    let status = match sent {
        Sent::Whole => 0,
        Sent::Aborted => IBV_WC_LOC_PROT_ERR,
        // (Unreliable: dropped, as on the wire.)
        Sent::LinkDied if !reliable => 0,
        Sent::LinkDied => IBV_WC_RETRY_EXC_ERR,
    };
    if !reliable {
        finish_now(c, qp, req.wr_id, req.op.wc_opcode(), len as u32, req.signaled(), status);
    } else if status != 0 {
        let mut st = lock(&qp.st);
        if let Some(w) = st.sq.iter_mut().find(|w| w.seq == m.seq) {
            if w.done.is_none() {
                w.done = Some(status);
            }
        }
        c.to_err(qp, &mut st);
    }
    Ok(())
}

/// The QPN a UD datagram to a multicast group is addressed to.
const MULTICAST_QPN: u32 = 0xff_ffff;

/// A UD datagram to multicast group `m.dgid`: a copy to each QP of the
/// user's attached to the group (a member whose QP is gone is forgotten),
/// as rxe delivers to every QP attached; the send completes once, as sent.
///
/// # Safety
/// As `post`.
unsafe fn post_multicast(c: &Ctx, qp: &Qp, req: &SendRequest, data: &LocalData, m: &mut Msg) {
    // SAFETY: forwarded to our caller (the local data).
    let mut status = if unsafe { fill_header(m, qp.qpt, req, data) } {
        0
    } else {
        IBV_WC_LOC_PROT_ERR
    };
    let mgid = m.dgid;
    for member in c.group_members(&mgid) {
        if status != 0 {
            break;
        }
        let Some(link) = c.link_to(member) else {
            c.forget_member(&mgid, member);
            continue;
        };
        m.dst_qpn = member;
        let tx = link.producer();
        // SAFETY: forwarded to our caller (the local data).
        if unsafe { send_message(c, &link, m, data) } == Sent::Aborted {
            // (Our source is gone: that member dropped the datagram, the
            // others get none.)
            status = IBV_WC_LOC_PROT_ERR;
        }
        drop(tx);
    }
    finish_now(
        c,
        qp,
        req.wr_id,
        req.op.wc_opcode(),
        data.len as u32,
        req.signaled(),
        status,
    );
}

/// Where the request goes: the destination QPN and the link to its process
/// (None: it cannot be reached); in `m` the GIDs and, for UD, the Q_Key.
///
/// # Safety
/// A UD request's `ah` is null or one of our live `SwAh`s.
unsafe fn address(
    c: &Ctx,
    qp: &Qp,
    req: &SendRequest,
    view: QpView,
    m: &mut Msg,
) -> Result<(u32, Option<OutLink>), c_int> {
    if let Some(ud) = req.ud {
        // SAFETY: `ud.ah` is null or one of our live `SwAh`s (the contract).
        let Some(aa) = (unsafe { ah_attr_of(ud.ah) }) else {
            return Err(libc::EINVAL);
        };
        m.qkey = ud.qkey(view.own_qkey);
        if aa.is_global != 0 {
            // SAFETY: `ibv_gid` is a union of 16 bytes and two `u64`s: any
            // bits are a value.
            m.dgid = unsafe { aa.grh.dgid.raw };
            m.sgid = c.gid(aa.grh.sgid_index as usize);
            // (for the receiver's GRH)
            m.set_ud_grh(aa.grh.traffic_class, aa.grh.hop_limit);
        } else {
            m.sgid = c.gid(0);
        }
        let d = ud.remote_qpn;
        return Ok((d, c.link_to(d)));
    }
    m.sgid = c.gid(view.av_sgid as usize);
    let l = match view.link {
        Some(l) if !l.dead.load(Ordering::Relaxed) => Some(l),
        _ => {
            let l = c.link_to(view.dest_qpn);
            if let Some(l) = &l {
                lock(&qp.st).link = Some(l.clone());
            }
            l
        }
    };
    Ok((view.dest_qpn, l))
}

/// The peer's process cannot be reached.
fn unreachable_peer(c: &Ctx, qp: &Qp, req: &SendRequest, len: u64, reliable: bool) {
    let op = req.op.wc_opcode();
    if !reliable {
        // (Dropped, as on the wire.)
        finish_now(c, qp, req.wr_id, op, len as u32, req.signaled(), 0);
        return;
    }
    // The peer cannot be reached: the request goes unanswered and fails
    // with RETRY_EXC_ERR after the QP's transport timeout.
    let mut st = lock(&qp.st);
    let seq = st.next_seq;
    st.next_seq += 1;
    st.sq
        .push_back(SWqe::local(seq, req.wr_id, op, req.signaled(), len as u32, None));
    c.peer_lost(&mut st);
}

/// One-sided requests the initiator may execute itself (direct.rs):
/// none in flight before it on this QP (it must not overtake them).
/// true: executed and completed.
fn execute_directly(c: &Ctx, qp: &Qp, req: &SendRequest, data: &LocalData, link: &Link, dest: u32) -> bool {
    let len = data.len;
    if qp.qpt != IBV_QPT_RC || len == 0 || link.dead.load(Ordering::Relaxed) {
        return false;
    }
    let sges = data.sges();
    let (remote, dop) = match req.op {
        Operation::RdmaWrite(r) => (r, direct::Op::Write(sges)),
        Operation::RdmaRead(r) => (r, direct::Op::Read(sges)),
        Operation::CompareAndSwap(r, a) => (r, direct::Op::Cas(a.compare_add, a.swap, sges)),
        Operation::FetchAndAdd(r, a) => (r, direct::Op::Faa(a.compare_add, sges)),
        _ => return false,
    };
    let Some(peer) = c.peer_dir(link.peer) else {
        return false;
    };
    let mut st = lock(&qp.st);
    if st.state == IBV_QPS_RTS && st.sq.is_empty() && st.resend.is_none() && st.probe.is_none() && st.lost_at.is_none()
    {
        let at = (remote.rkey, remote.addr, len);
        let pmtu = swrdma_rc::responder::pmtu_bytes(st.attr.path_mtu) as u64;
        if let Some(status) = direct::execute(&peer, qp.qpn, dest, at, dop, pmtu) {
            let op = req.op.wc_opcode();
            finish_locked(c, qp, &mut st, req.wr_id, op, len as u32, req.signaled(), status);
            return true;
        }
    }
    false
}

/// The message kind of `op` (not a local operation).
fn ring_kind(op: &Operation) -> u16 {
    match op {
        Operation::Send | Operation::SendWithImm { .. } | Operation::SendWithInv { .. } => K_SEND,
        Operation::RdmaWrite(_) | Operation::RdmaWriteWithImm(..) => K_WRITE,
        Operation::RdmaRead(_) => K_READ,
        Operation::CompareAndSwap(..) => K_CAS,
        Operation::AtomicWrite(_) => K_AWRITE,
        _ => K_FAA,
    }
}

/// The rest of the header: the XRC target SRQ, the flags, the immediate
/// data (or the rkey to invalidate), the kind, the remote address and the
/// operands.  False: an ATOMIC_WRITE's registered 8 bytes could not be read
/// (unmapped since they were registered).
///
/// # Safety
/// `data` passed `check_local` or is inline data readable for the call.
unsafe fn fill_header(m: &mut Msg, qpt: u32, req: &SendRequest, data: &LocalData) -> bool {
    if let Some(srqn) = req.xrc_srqn {
        m.srqn = srqn;
    }
    let mut flags = if qpt == IBV_QPT_UD || qpt == IBV_QPT_XRC_SEND {
        F_EXT
    } else {
        0
    } | transport_flag(qpt);
    if req.solicited() {
        flags |= F_SOLICITED;
    }
    if let Some(imm) = req.op.imm() {
        flags |= F_IMM;
        m.imm = imm;
    }
    if let Some(rkey) = req.op.invalidated_rkey() {
        flags |= F_INV;
        m.imm = rkey;
    }
    m.kind = ring_kind(&req.op);
    if let Some(r) = req.op.remote() {
        m.raddr = r.addr;
        m.rkey = r.rkey;
    }
    if let Some(a) = req.op.atomic_args() {
        m.cmp = a.compare_add;
        m.swap = a.swap;
    }
    if m.kind == K_AWRITE {
        let mut v = [0u8; 8];
        // SAFETY: `v` has room for the 8 bytes (len == 8, checked) of the
        // SGE list.  Inline data the application provides readable for the
        // call (its own pointer: read as rxe's provider reads it); a
        // registered list, which passed `check_local`, is read fault-safe.
        let read = unsafe {
            if data.inline {
                gather(data.sges(), 0, v.as_mut_ptr(), 8);
                true
            } else {
                gather_safe(data.sges(), 0, v.as_mut_ptr(), 8)
            }
        };
        if !read {
            return false;
        }
        m.swap = u64::from_ne_bytes(v);
    }
    m.flags = flags;
    true
}

/// Whether reliable request `req`, about to enter `st`'s send queue, asks
/// for its ACK (`F_ACKREQ`): a request that completes, or one that leaves
/// the send queue half full (its answer also completes the unanswered
/// requests before it, so their slots come back in time).
pub(super) fn ack_wanted(qp: &Qp, st: &QpSt, req: &SendRequest) -> bool {
    req.signaled() || qp.sq_sig_all || 2 * (st.sq.len() + 1) >= qp.cap.max_send_wr as usize
}

/// A reliable request goes into the send queue (numbered: `m.seq`) before
/// it is sent.  false: it is not to be sent now (see below).
///
/// # Safety
/// `data` passed `check_local` or is inline data readable for the call.
unsafe fn queue_reliable(c: &Ctx, qp: &Qp, req: &SendRequest, data: &LocalData, m: &mut Msg, start: u64) -> bool {
    let (len, inline) = (data.len, data.inline);
    let mut st = lock(&qp.st);
    if st.state == IBV_QPS_ERR {
        // The QP went to error since post_send looked (a NAK or a timeout
        // of an earlier request): flushed, like any request posted in ERR.
        let (op, signaled) = (req.op.wc_opcode(), req.signaled());
        finish_locked(c, qp, &mut st, req.wr_id, op, len as u32, signaled, IBV_WC_WR_FLUSH_ERR);
        return false;
    }
    let seq = st.next_seq;
    st.next_seq += 1;
    m.seq = seq;
    // Requests wait behind a NAKed one (sent again in order): this one
    // goes on the wire with them, never before them.
    let held = st.resend.is_some() || st.probe.is_some();
    if ack_wanted(qp, &st, req) {
        m.flags |= F_ACKREQ;
    }
    let keep = if req.op.is_read() || req.op.is_atomic() {
        data.sges().to_vec()
    } else {
        Vec::new()
    };
    // What a retransmission needs: the data is gathered anew from the
    // registered memory (the gather list as posted), or inline data
    // from a copy (at most `max_inline_data` bytes).
    let sends_data = m.kind == K_SEND || m.kind == K_WRITE;
    let copy = if inline && sends_data && len > 0 {
        // SAFETY: inline data is readable for the call (the contract);
        // `InlineCopy::new` gives room for `len` bytes.
        InlineCopy::new(len as usize, |d| unsafe { gather(data.sges(), 0, d, len as usize) })
    } else {
        InlineCopy::NONE
    };
    st.sq.push_back(SWqe {
        seq,
        wr_id: req.wr_id,
        op: req.op.wc_opcode(),
        signaled: req.signaled(),
        len: len as u32,
        done: None,
        sges: keep,
        hdr: *m,
        gsges: if sends_data && !inline {
            KeptSges::new(data.posted)
        } else {
            KeptSges::NONE
        },
        data: copy,
        // (Held: not sent now, it goes with the requests sent again.)
        start: if held { NOT_SENT } else { start },
    });
    if held {
        if st.resend.is_none() {
            st.resend = Some(seq);
            st.resend_off = 0;
        }
        return false;
    }
    true
}

/// Sends the message on `link`: a SEND or WRITE with its payload, gathered
/// from `data`, in fragments.  A registered source is read fault-safe: when
/// the application unmapped it after registering, the fragment that could
/// not be read goes as the message's abort (`Sent::Aborted`: the responder
/// drops the message).  Inline data is the application's own pointer, read
/// in its thread during `ibv_post_send` as rxe's provider reads it (memory
/// it unmapped faults there as it would without us).
///
/// # Safety
/// `data` passed `check_local` or is inline data readable for the call.
unsafe fn send_message(c: &Ctx, link: &Link, m: &Msg, data: &LocalData) -> Sent {
    if m.kind != K_SEND && m.kind != K_WRITE {
        let (h, _) = frag(m, 0, 0);
        return c.send_msg(link, &h, 0, &mut |_| true);
    }
    let (len, sges, inline) = (data.len, data.sges(), data.inline);
    let mut off = 0u64;
    loop {
        let (h, plen) = frag(m, len, off);
        let o = off;
        let mut fill = |d: *mut u8| {
            // SAFETY: `d` is the `plen` bytes of ring space `send_msg`
            // reserved; bytes [o, o+plen) of the SGE list (o + plen <= len,
            // its total) are inline data readable for the call, or passed
            // `check_local` and are read fault-safe.
            unsafe {
                if inline {
                    gather(sges, o, d, plen);
                    true
                } else {
                    gather_safe(sges, o, d, plen)
                }
            }
        };
        match c.send_msg(link, &h, plen, &mut fill) {
            Sent::Whole => {}
            other => return other,
        }
        off += plen as u64;
        if off >= len {
            return Sent::Whole;
        }
    }
}
