//! The wire transport: a request of a wire device's QP goes to the RoCE v2
//! engine (swrdma_wired::wire::engine), after the checks of its own.

use super::complete::finish_now;
use super::request::{LocalData, Operation, SendRequest};
use crate::context::*;
use crate::handles::ah_attr_of;
use crate::wire;
use crate::wire::engine::Req;
use ibverbs_abi::*;
use std::os::raw::c_int;
use std::sync::Arc;
use swrdma_rc::op::Op;

/// The engine's kind of request for `op` (None: not on the wire).
fn wire_kind(op: &Operation) -> Option<Op> {
    Some(match op {
        Operation::Send | Operation::SendWithImm { .. } | Operation::SendWithInv { .. } => Op::Send,
        Operation::RdmaWrite(_) | Operation::RdmaWriteWithImm(..) => Op::Write,
        Operation::RdmaRead(_) => Op::Read,
        Operation::CompareAndSwap(..) => Op::CmpSwap,
        Operation::FetchAndAdd(..) => Op::FetchAdd,
        _ => return None, // (ATOMIC_WRITE, TSO: not on the wire)
    })
}

/// A request of a wire device's QP (checked by `post_one` so far): the
/// rest of the checks, then onto the wire (swrdma_wired::wire::engine).
///
/// # Safety
/// `req` was read from a valid send request (for UD, a live `ah` of ours);
/// `data` passed `check_local` (or is inline data readable for the call).
pub unsafe fn post(
    c: &Ctx,
    w: &wire::engine::Wire,
    qp: &Arc<Qp>,
    req: &SendRequest,
    data: &LocalData,
    own_qkey: u32,
) -> Result<(), c_int> {
    let len = data.len;
    let Some(kind) = wire_kind(&req.op) else {
        return Err(libc::EINVAL);
    };
    if qp.qpt == IBV_QPT_UD && len > w.mtu as u64 {
        return Err(libc::EINVAL);
    }
    let mut r = Req::new(0, kind, len, req.solicited());
    // (`imm_data` holds the ImmDt bytes as they go on the wire.)
    r.imm = req.op.imm().map(u32::from_be);
    r.inv = req.op.invalidated_rkey();
    if let Some(remote) = req.op.remote() {
        r.raddr = remote.addr;
        r.rkey = remote.rkey;
    }
    if let Some(a) = req.op.atomic_args() {
        r.cmp = a.compare_add;
        r.swap = a.swap;
    }
    if let Some(ud) = req.ud {
        // SAFETY: `ud.ah` is null or one of our live `SwAh`s (the contract).
        let Some(aa) = (unsafe { ah_attr_of(ud.ah) }) else {
            return Err(libc::EINVAL);
        };
        let Some((s, d)) = wire::engine::ud_path::<Objects>(w, c, aa) else {
            return Err(libc::EINVAL);
        };
        let tc = if aa.is_global != 0 { aa.grh.traffic_class } else { 0 };
        r.ud = Some((s, d, ud.remote_qpn & 0xff_ffff, ud.qkey(own_qkey), tc));
    }
    if data.inline {
        let mut d = vec![0u8; len as usize];
        // SAFETY: inline data is readable for the call (the contract); `d`
        // has `len` bytes.
        unsafe { gather(data.sges(), 0, d.as_mut_ptr(), len as usize) };
        r.data = Some(d);
    } else {
        r.sges = data.sges().to_vec();
    }
    let op = req.op.wc_opcode();
    let mut st = lock(&qp.st);
    if st.state != IBV_QPS_RTS && st.state != IBV_QPS_SQD {
        drop(st);
        finish_now(c, qp, req.wr_id, op, 0, req.signaled(), IBV_WC_WR_FLUSH_ERR);
        return Ok(());
    }
    let seq = st.next_seq;
    st.next_seq += 1;
    r.seq = seq;
    let swqe = SWqe::local(seq, req.wr_id, op, req.signaled(), len as u32, None);
    st.sq.push_back(swqe);
    w.post::<Objects>(c, qp, &mut st, r);
    Ok(())
}
