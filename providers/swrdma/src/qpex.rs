//! The extended CQ (ibv_cq_ex poll callbacks) and QP (ibv_qp_ex work
//! request builders) interfaces.

use crate::abi::*;
use crate::core::now_ns;
use crate::ops::{post_one, qp_of, SwCq, SwQp};
use std::os::raw::{c_int, c_uint, c_void};

// ----- CQ ------------------------------------------------------------------

unsafe fn cur<'a>(cq: *mut ibv_cq_ex) -> &'a ibv_wc {
    &(*(cq as *mut SwCq)).cur
}

unsafe extern "C" fn start_poll(cq: *mut ibv_cq_ex, _attr: *mut ibv_poll_cq_attr) -> c_int {
    next_poll(cq)
}

unsafe extern "C" fn next_poll(cq: *mut ibv_cq_ex) -> c_int {
    let s = cq as *mut SwCq;
    let mut wc = crate::core::wc_zero();
    if crate::ops::poll_cq(cq as *mut ibv_cq, 1, &mut wc) != 1 {
        return libc::ENOENT;
    }
    (*s).cur = wc;
    (*cq).wr_id = wc.wr_id;
    (*cq).status = wc.status;
    0
}

unsafe extern "C" fn end_poll(_cq: *mut ibv_cq_ex) {}
unsafe extern "C" fn read_opcode(cq: *mut ibv_cq_ex) -> ibv_wc_opcode {
    cur(cq).opcode
}
unsafe extern "C" fn read_vendor_err(cq: *mut ibv_cq_ex) -> u32 {
    cur(cq).vendor_err
}
unsafe extern "C" fn read_byte_len(cq: *mut ibv_cq_ex) -> u32 {
    cur(cq).byte_len
}
unsafe extern "C" fn read_imm_data(cq: *mut ibv_cq_ex) -> u32 {
    cur(cq).imm.imm_data
}
unsafe extern "C" fn read_qp_num(cq: *mut ibv_cq_ex) -> u32 {
    cur(cq).qp_num
}
unsafe extern "C" fn read_src_qp(cq: *mut ibv_cq_ex) -> u32 {
    cur(cq).src_qp
}
unsafe extern "C" fn read_wc_flags(cq: *mut ibv_cq_ex) -> c_uint {
    cur(cq).wc_flags
}
unsafe extern "C" fn read_slid(cq: *mut ibv_cq_ex) -> u32 {
    cur(cq).slid as u32
}
unsafe extern "C" fn read_sl(cq: *mut ibv_cq_ex) -> u8 {
    cur(cq).sl
}
unsafe extern "C" fn read_dlid_path_bits(cq: *mut ibv_cq_ex) -> u8 {
    cur(cq).dlid_path_bits
}
unsafe extern "C" fn read_wallclock(_cq: *mut ibv_cq_ex) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
    let _ = now_ns;
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub unsafe fn fill_cq_ex(ex: &mut ibv_cq_ex) {
    ex.start_poll = Some(start_poll);
    ex.next_poll = Some(next_poll);
    ex.end_poll = Some(end_poll);
    ex.read_opcode = Some(read_opcode);
    ex.read_vendor_err = Some(read_vendor_err);
    ex.read_byte_len = Some(read_byte_len);
    ex.read_imm_data = Some(read_imm_data);
    ex.read_qp_num = Some(read_qp_num);
    ex.read_src_qp = Some(read_src_qp);
    ex.read_wc_flags = Some(read_wc_flags);
    ex.read_slid = Some(read_slid);
    ex.read_sl = Some(read_sl);
    ex.read_dlid_path_bits = Some(read_dlid_path_bits);
    ex.read_completion_wallclock_ns = Some(read_wallclock);
}

// ----- QP ------------------------------------------------------------------

#[derive(Default)]
pub struct WrList {
    wrs: Vec<ibv_send_wr>,
    sges: Vec<Vec<ibv_sge>>,
    bufs: Vec<Vec<u8>>,
}

unsafe fn list<'a>(q: *mut ibv_qp_ex) -> &'a mut WrList {
    let s = q as *mut SwQp;
    if (*s).wrs.is_null() {
        (*s).wrs = Box::into_raw(Box::default());
    }
    &mut *(*s).wrs
}

unsafe fn new_wr(q: *mut ibv_qp_ex, opcode: u32) -> &'static mut ibv_send_wr {
    let l = list(q);
    let mut w: ibv_send_wr = std::mem::zeroed();
    w.wr_id = (*q).wr_id;
    w.send_flags = (*q).wr_flags;
    w.opcode = opcode;
    l.wrs.push(w);
    l.sges.push(Vec::new());
    &mut *(l.wrs.last_mut().unwrap() as *mut ibv_send_wr)
}

unsafe fn last(q: *mut ibv_qp_ex) -> Option<(&'static mut ibv_send_wr, &'static mut Vec<ibv_sge>)> {
    let l = list(q);
    let w = l.wrs.last_mut()? as *mut ibv_send_wr;
    let s = l.sges.last_mut()? as *mut Vec<ibv_sge>;
    Some((&mut *w, &mut *s))
}

unsafe extern "C" fn wr_start(q: *mut ibv_qp_ex) {
    let l = list(q);
    l.wrs.clear();
    l.sges.clear();
    l.bufs.clear();
}
unsafe extern "C" fn wr_abort(q: *mut ibv_qp_ex) {
    wr_start(q)
}
unsafe extern "C" fn wr_complete(q: *mut ibv_qp_ex) -> c_int {
    let (c, qp) = qp_of(q as *mut ibv_qp);
    let l = list(q);
    let mut rc = 0;
    for i in 0..l.wrs.len() {
        let mut w = l.wrs[i];
        w.sg_list = l.sges[i].as_mut_ptr();
        w.num_sge = l.sges[i].len() as c_int;
        w.next = std::ptr::null_mut();
        if let Err(e) = post_one(c, &qp, &w) {
            rc = e;
            break;
        }
    }
    l.wrs.clear();
    l.sges.clear();
    l.bufs.clear();
    rc
}
unsafe extern "C" fn wr_send(q: *mut ibv_qp_ex) {
    new_wr(q, IBV_WR_SEND);
}
unsafe extern "C" fn wr_send_imm(q: *mut ibv_qp_ex, imm: u32) {
    new_wr(q, IBV_WR_SEND_WITH_IMM).imm.imm_data = imm;
}
unsafe extern "C" fn wr_rdma_write(q: *mut ibv_qp_ex, rkey: u32, addr: u64) {
    let w = new_wr(q, IBV_WR_RDMA_WRITE);
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
}
unsafe extern "C" fn wr_rdma_write_imm(q: *mut ibv_qp_ex, rkey: u32, addr: u64, imm: u32) {
    let w = new_wr(q, IBV_WR_RDMA_WRITE_WITH_IMM);
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
    w.imm.imm_data = imm;
}
unsafe extern "C" fn wr_rdma_read(q: *mut ibv_qp_ex, rkey: u32, addr: u64) {
    let w = new_wr(q, IBV_WR_RDMA_READ);
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
}
unsafe extern "C" fn wr_cas(q: *mut ibv_qp_ex, rkey: u32, addr: u64, compare: u64, swap: u64) {
    let w = new_wr(q, IBV_WR_ATOMIC_CMP_AND_SWP);
    w.wr.atomic.rkey = rkey;
    w.wr.atomic.remote_addr = addr;
    w.wr.atomic.compare_add = compare;
    w.wr.atomic.swap = swap;
}
unsafe extern "C" fn wr_faa(q: *mut ibv_qp_ex, rkey: u32, addr: u64, add: u64) {
    let w = new_wr(q, IBV_WR_ATOMIC_FETCH_AND_ADD);
    w.wr.atomic.rkey = rkey;
    w.wr.atomic.remote_addr = addr;
    w.wr.atomic.compare_add = add;
}
unsafe extern "C" fn wr_atomic_write(q: *mut ibv_qp_ex, rkey: u32, addr: u64, atomic_wr: *const c_void) {
    let w = new_wr(q, IBV_WR_ATOMIC_WRITE);
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
    // The 8 bytes are taken now (the caller's buffer may change before
    // wr_complete), as inline data.
    let data = std::slice::from_raw_parts(atomic_wr as *const u8, 8).to_vec();
    let l = list(q);
    let sge = ibv_sge {
        addr: data.as_ptr() as u64,
        length: 8,
        lkey: 0,
    };
    l.bufs.push(data);
    if let Some((w, s)) = last(q) {
        w.send_flags |= IBV_SEND_INLINE;
        s.clear();
        s.push(sge);
    }
}
unsafe extern "C" fn wr_send_inv(q: *mut ibv_qp_ex, rkey: u32) {
    new_wr(q, IBV_WR_SEND_WITH_INV).imm.invalidate_rkey = rkey;
}
unsafe extern "C" fn wr_local_inv(q: *mut ibv_qp_ex, rkey: u32) {
    new_wr(q, IBV_WR_LOCAL_INV).imm.invalidate_rkey = rkey;
}
unsafe extern "C" fn wr_bind_mw(q: *mut ibv_qp_ex, mw: *mut ibv_mw, rkey: u32, info: *const ibv_mw_bind_info) {
    let w = new_wr(q, IBV_WR_BIND_MW);
    w.bind_mw_tso.bind_mw = ibv_send_wr_bind_mw {
        mw,
        rkey,
        bind_info: *info,
    };
}
unsafe extern "C" fn wr_set_ud_addr(q: *mut ibv_qp_ex, ah: *mut ibv_ah, qpn: u32, qkey: u32) {
    if let Some((w, _)) = last(q) {
        w.wr.ud.ah = ah;
        w.wr.ud.remote_qpn = qpn;
        w.wr.ud.remote_qkey = qkey;
    }
}
unsafe extern "C" fn wr_set_xrc_srqn(q: *mut ibv_qp_ex, srqn: u32) {
    if let Some((w, _)) = last(q) {
        w.qp_type.xrc.remote_srqn = srqn;
    }
}
unsafe extern "C" fn wr_set_sge(q: *mut ibv_qp_ex, lkey: u32, addr: u64, length: u32) {
    if let Some((_, s)) = last(q) {
        s.clear();
        s.push(ibv_sge { addr, length, lkey });
    }
}
unsafe extern "C" fn wr_set_sge_list(q: *mut ibv_qp_ex, n: usize, sg: *const ibv_sge) {
    if let Some((_, s)) = last(q) {
        s.clear();
        if n > 0 {
            s.extend_from_slice(std::slice::from_raw_parts(sg, n));
        }
    }
}
unsafe extern "C" fn wr_set_inline_data(q: *mut ibv_qp_ex, addr: *mut c_void, length: usize) {
    let buf = ibv_data_buf { addr, length };
    wr_set_inline_data_list(q, 1, &buf);
}
unsafe extern "C" fn wr_set_inline_data_list(q: *mut ibv_qp_ex, n: usize, bl: *const ibv_data_buf) {
    let l = list(q);
    let mut data = Vec::new();
    for i in 0..n {
        let b = &*bl.add(i);
        data.extend_from_slice(std::slice::from_raw_parts(b.addr as *const u8, b.length));
    }
    let sge = ibv_sge {
        addr: data.as_ptr() as u64,
        length: data.len() as u32,
        lkey: 0,
    };
    l.bufs.push(data);
    if let Some((w, s)) = last(q) {
        w.send_flags |= IBV_SEND_INLINE;
        s.clear();
        s.push(sge);
    }
}

pub unsafe fn fill_qp_ex(s: *mut SwQp, _flags: u64) {
    let q = &mut *(std::ptr::addr_of_mut!((*s).vqp.u.qp_ex) as *mut ibv_qp_ex);
    q.wr_start = Some(wr_start);
    q.wr_complete = Some(wr_complete);
    q.wr_abort = Some(wr_abort);
    q.wr_send = Some(wr_send);
    q.wr_send_imm = Some(wr_send_imm);
    q.wr_rdma_write = Some(wr_rdma_write);
    q.wr_rdma_write_imm = Some(wr_rdma_write_imm);
    q.wr_rdma_read = Some(wr_rdma_read);
    q.wr_atomic_cmp_swp = Some(wr_cas);
    q.wr_atomic_fetch_add = Some(wr_faa);
    q.wr_atomic_write = Some(wr_atomic_write);
    q.wr_send_inv = Some(wr_send_inv);
    q.wr_local_inv = Some(wr_local_inv);
    q.wr_bind_mw = Some(wr_bind_mw);
    q.wr_set_ud_addr = Some(wr_set_ud_addr);
    q.wr_set_xrc_srqn = Some(wr_set_xrc_srqn);
    q.wr_set_sge = Some(wr_set_sge);
    q.wr_set_sge_list = Some(wr_set_sge_list);
    q.wr_set_inline_data = Some(wr_set_inline_data);
    q.wr_set_inline_data_list = Some(wr_set_inline_data_list);
}
