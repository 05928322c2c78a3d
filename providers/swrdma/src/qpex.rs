//! The extended CQ (ibv_cq_ex poll callbacks) and QP (ibv_qp_ex work
//! request builders) interfaces.

use crate::handles::{qp_of, SwCq, SwQp, WrList};
use crate::poll::poll_cq;
use crate::send::post_one;
use ibverbs_abi::*;
use std::os::raw::{c_int, c_uint, c_void};

// ----- CQ ------------------------------------------------------------------
//
// The cursor works from a completion it is given: `ExCq::poll` takes one
// off the CQ's queue into the CQ's `ExCq::cursor`, which the readers
// read.  These callbacks are installed by `fill_cq_ex_of::<T>` only into
// the `ibv_cq_ex` at the start of a `T` (the per-process `SwCq`, the
// agent's CQ), so every `cq` they get is the first field of a live `T`:
// the library calls them between `ibv_start_poll` and `ibv_end_poll` on a
// CQ the application has not destroyed.

/// A CQ whose `ibv_cq_ex` (its first field) gets the poll cursor.
pub trait ExCq {
    /// Where the completion the cursor is on is kept.
    ///
    /// # Safety
    /// `cq` is the `ibv_cq_ex` at the start of a live `Self`.
    unsafe fn cursor(cq: *mut ibv_cq_ex) -> *mut ibv_wc;

    /// `ibv_poll_cq` of the CQ: up to `n` completions into `wc`.
    ///
    /// # Safety
    /// `cq` is the `ibv_cq` view of a live `Self`; `wc` has room for `n`.
    unsafe fn poll(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int;
}

impl ExCq for SwCq {
    unsafe fn cursor(cq: *mut ibv_cq_ex) -> *mut ibv_wc {
        // SAFETY: `cq` is the first field of a live `SwCq` (the contract).
        unsafe { std::ptr::addr_of_mut!((*(cq as *mut SwCq)).cur) }
    }

    unsafe fn poll(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
        // SAFETY: forwarded (the contract).
        unsafe { poll_cq(cq, n, wc) }
    }
}

/// The completion the poll cursor is on.
///
/// # Safety
/// `cq` is the `ibv_cq_ex` of a live `T` (see above), not being polled by
/// another thread meanwhile (the library's contract for the extended poll
/// interface).
unsafe fn cur<'a, T: ExCq>(cq: *mut ibv_cq_ex) -> &'a ibv_wc {
    // SAFETY: `cq` is the first field of a live `T` (this function's
    // contract), whose cursor is valid, written only by `next_poll`.
    unsafe { &*T::cursor(cq) }
}

unsafe extern "C" fn start_poll<T: ExCq>(cq: *mut ibv_cq_ex, _attr: *mut ibv_poll_cq_attr) -> c_int {
    // SAFETY: `cq` is one of our CQs (installed only there, see above).
    unsafe { next_poll::<T>(cq) }
}

unsafe extern "C" fn next_poll<T: ExCq>(cq: *mut ibv_cq_ex) -> c_int {
    let mut wc = crate::context::wc_zero();
    // SAFETY: `cq` is the `ibv_cq_ex` (= `ibv_cq` prefix) of a live `T`,
    // which is what its poll expects; `wc` is room for one completion.
    if unsafe { T::poll(cq as *mut ibv_cq, 1, &mut wc) } != 1 {
        return libc::ENOENT;
    }
    // SAFETY: as above, `cq` is the public part of our live `T`; the
    // poller is the only one touching the cursor (extended poll interface
    // contract).
    unsafe {
        *T::cursor(cq) = wc;
        (*cq).wr_id = wc.wr_id;
        (*cq).status = wc.status;
    }
    0
}

unsafe extern "C" fn end_poll(_cq: *mut ibv_cq_ex) {}

/// The readers: one field of the current completion each.
macro_rules! reader {
    ($name:ident -> $t:ty, |$w:ident| $e:expr) => {
        unsafe extern "C" fn $name<T: ExCq>(cq: *mut ibv_cq_ex) -> $t {
            // SAFETY: `cq` is one of our CQs, inside a poll (see above).
            let $w = unsafe { cur::<T>(cq) };
            $e
        }
    };
}
reader!(read_opcode -> ibv_wc_opcode, |w| w.opcode);
reader!(read_vendor_err -> u32, |w| w.vendor_err);
reader!(read_byte_len -> u32, |w| w.byte_len);
unsafe extern "C" fn read_imm_data<T: ExCq>(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: `cq` is one of our CQs, inside a poll (see above).
    let w = unsafe { cur::<T>(cq) };
    // SAFETY: `imm` is a union of two `u32`s: every bit pattern is valid.
    unsafe { w.imm.imm_data }
}
reader!(read_qp_num -> u32, |w| w.qp_num);
reader!(read_src_qp -> u32, |w| w.src_qp);
reader!(read_wc_flags -> c_uint, |w| w.wc_flags);
reader!(read_slid -> u32, |w| w.slid as u32);
reader!(read_sl -> u8, |w| w.sl);
reader!(read_dlid_path_bits -> u8, |w| w.dlid_path_bits);

unsafe extern "C" fn read_wallclock(_cq: *mut ibv_cq_ex) -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    t.as_secs() * 1_000_000_000 + t.subsec_nanos() as u64
}

/// Installs the extended poll callbacks.  `ex` must be the `ibv_cq_ex` at
/// the start of an `SwCq` (the callbacks rely on it).
pub fn fill_cq_ex(ex: &mut ibv_cq_ex) {
    fill_cq_ex_of::<SwCq>(ex)
}

/// Installs the extended poll callbacks of a `T`.  `ex` must be the
/// `ibv_cq_ex` at the start of a `T` (the callbacks rely on it).
pub fn fill_cq_ex_of<T: ExCq>(ex: &mut ibv_cq_ex) {
    ex.start_poll = Some(start_poll::<T>);
    ex.next_poll = Some(next_poll::<T>);
    ex.end_poll = Some(end_poll);
    ex.read_opcode = Some(read_opcode::<T>);
    ex.read_vendor_err = Some(read_vendor_err::<T>);
    ex.read_byte_len = Some(read_byte_len::<T>);
    ex.read_imm_data = Some(read_imm_data::<T>);
    ex.read_qp_num = Some(read_qp_num::<T>);
    ex.read_src_qp = Some(read_src_qp::<T>);
    ex.read_wc_flags = Some(read_wc_flags::<T>);
    ex.read_slid = Some(read_slid::<T>);
    ex.read_sl = Some(read_sl::<T>);
    ex.read_dlid_path_bits = Some(read_dlid_path_bits::<T>);
    ex.read_completion_wallclock_ns = Some(read_wallclock);
}

// ----- QP ------------------------------------------------------------------

/// A QP whose `ibv_qp_ex` (the `qp_ex` of its `verbs_qp`, its first
/// field) gets the work request builders, which build `ibv_send_wr`s in
/// its `WrList` and post them at `wr_complete`.
pub trait ExQp {
    /// The work requests being built on the QP.
    ///
    /// # Safety
    /// `q` is the `ibv_qp_ex` at the start of a live `Self`, used by one
    /// thread between `wr_start` and `wr_complete`/`wr_abort` (the
    /// interface's contract), so no other reference to its `WrList` exists.
    unsafe fn wr_list<'a>(q: *mut ibv_qp_ex) -> &'a mut WrList;

    /// Posts `wrs` (each with its own SGE list, `next` null) in order,
    /// stopping at the first one refused: 0, or that one's errno.
    ///
    /// # Safety
    /// As for `wr_list`; the requests are valid as `ibv_post_send`'s.
    unsafe fn post(q: *mut ibv_qp_ex, wrs: &mut [ibv_send_wr]) -> c_int;
}

impl ExQp for SwQp {
    unsafe fn wr_list<'a>(q: *mut ibv_qp_ex) -> &'a mut WrList {
        let s = q as *mut SwQp;
        // SAFETY: `s` is our live `SwQp` (the contract); `wrs` is null or the
        // `Box` made here, freed only by destroy_qp.
        unsafe {
            if (*s).wrs.is_null() {
                (*s).wrs = Box::into_raw(Box::default());
            }
            &mut *(*s).wrs
        }
    }

    unsafe fn post(q: *mut ibv_qp_ex, wrs: &mut [ibv_send_wr]) -> c_int {
        // SAFETY: `q` is the `ibv_qp_ex` = `ibv_qp` prefix of our live `SwQp`.
        let (c, qp) = unsafe { qp_of(q as *mut ibv_qp) };
        crate::send::execute_deferred(c, None, false);
        for w in wrs.iter() {
            // SAFETY: valid requests (the contract).
            if let Err(e) = unsafe { post_one(c, &qp, w) } {
                return e;
            }
        }
        0
    }
}

/// The work requests being built on QP `q`.
///
/// # Safety
/// As for [`ExQp::wr_list`].
unsafe fn list<'a, T: ExQp>(q: *mut ibv_qp_ex) -> &'a mut WrList {
    // SAFETY: forwarded to our caller.
    unsafe { T::wr_list(q) }
}

/// Appends a new work request with the QP's current `wr_id`/`wr_flags`.
///
/// # Safety
/// As for [`list`].
unsafe fn new_wr<'a, T: ExQp>(q: *mut ibv_qp_ex, opcode: u32) -> &'a mut ibv_send_wr {
    // SAFETY: forwarded to our caller.
    let l = unsafe { list::<T>(q) };
    // SAFETY: `q` is valid (our contract); an all-zero `ibv_send_wr` is
    // valid (integers, null pointers, `None` callbacks).
    let mut w: ibv_send_wr = unsafe { std::mem::zeroed() };
    // SAFETY: as above, `q` is a live `ibv_qp_ex`.
    let (wr_id, flags) = unsafe { ((*q).wr_id, (*q).wr_flags) };
    w.wr_id = wr_id;
    w.send_flags = flags;
    w.opcode = opcode;
    l.wrs.push(w);
    l.sges.push(Vec::new());
    l.wrs.last_mut().expect("just pushed")
}

/// The last work request and its scatter/gather list.
///
/// # Safety
/// As for [`list`].
unsafe fn last<'a, T: ExQp>(q: *mut ibv_qp_ex) -> Option<(&'a mut ibv_send_wr, &'a mut Vec<ibv_sge>)> {
    // SAFETY: forwarded to our caller.
    let l = unsafe { list::<T>(q) };
    Some((l.wrs.last_mut()?, l.sges.last_mut()?))
}

// The builders below are installed only into the `ibv_qp_ex` at the start
// of a `T` (`fill_qp_ex_of::<T>`): `q` is always one of them (a per-process
// `SwQp` or a QP through the agent), and the application calls
// them from one thread between `ibv_wr_start` and `ibv_wr_complete`.

unsafe extern "C" fn wr_start<T: ExQp>(q: *mut ibv_qp_ex) {
    // SAFETY: `q` is one of our QPs (see above).
    let l = unsafe { list::<T>(q) };
    l.wrs.clear();
    l.sges.clear();
    l.bufs.clear();
}
unsafe extern "C" fn wr_abort<T: ExQp>(q: *mut ibv_qp_ex) {
    // SAFETY: `q` is one of our QPs (see above).
    unsafe { wr_start::<T>(q) }
}
unsafe extern "C" fn wr_complete<T: ExQp>(q: *mut ibv_qp_ex) -> c_int {
    // SAFETY: `q` is one of our QPs (see above).
    let l = unsafe { list::<T>(q) };
    for (w, s) in l.wrs.iter_mut().zip(l.sges.iter_mut()) {
        w.sg_list = s.as_mut_ptr();
        w.num_sge = s.len() as c_int;
        w.next = std::ptr::null_mut();
    }
    // SAFETY: the requests were built by the builders: their SGE lists are
    // the Vecs just above (alive until the clear below), inline data points
    // into `l.bufs`, and `ah`/`mw` are what the application passed to
    // `wr_set_ud_addr`/`wr_bind_mw`, as with `ibv_post_send`.
    let rc = unsafe { T::post(q, &mut l.wrs) };
    l.wrs.clear();
    l.sges.clear();
    l.bufs.clear();
    rc
}

/// The builders that only start a work request.
macro_rules! builder {
    ($name:ident($($a:ident: $t:ty),*), $op:expr, |$w:ident| $body:block) => {
        unsafe extern "C" fn $name<T: ExQp>(q: *mut ibv_qp_ex $(, $a: $t)*) {
            // SAFETY: `q` is one of our QPs, inside wr_start/wr_complete.
            let $w = unsafe { new_wr::<T>(q, $op) };
            $body
        }
    };
}
builder!(wr_send(), IBV_WR_SEND, |_w| {});
builder!(wr_send_imm(imm: u32), IBV_WR_SEND_WITH_IMM, |w| {
    w.imm.imm_data = imm;
});
builder!(wr_rdma_write(rkey: u32, addr: u64), IBV_WR_RDMA_WRITE, |w| {
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
});
builder!(wr_rdma_write_imm(rkey: u32, addr: u64, imm: u32), IBV_WR_RDMA_WRITE_WITH_IMM, |w| {
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
    w.imm.imm_data = imm;
});
builder!(wr_rdma_read(rkey: u32, addr: u64), IBV_WR_RDMA_READ, |w| {
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
});
builder!(wr_cas(rkey: u32, addr: u64, compare: u64, swap: u64), IBV_WR_ATOMIC_CMP_AND_SWP, |w| {
    w.wr.atomic.rkey = rkey;
    w.wr.atomic.remote_addr = addr;
    w.wr.atomic.compare_add = compare;
    w.wr.atomic.swap = swap;
});
builder!(wr_faa(rkey: u32, addr: u64, add: u64), IBV_WR_ATOMIC_FETCH_AND_ADD, |w| {
    w.wr.atomic.rkey = rkey;
    w.wr.atomic.remote_addr = addr;
    w.wr.atomic.compare_add = add;
});
builder!(wr_send_inv(rkey: u32), IBV_WR_SEND_WITH_INV, |w| {
    w.imm.invalidate_rkey = rkey;
});
builder!(wr_local_inv(rkey: u32), IBV_WR_LOCAL_INV, |w| {
    w.imm.invalidate_rkey = rkey;
});

unsafe extern "C" fn wr_atomic_write<T: ExQp>(q: *mut ibv_qp_ex, rkey: u32, addr: u64, atomic_wr: *const c_void) {
    // SAFETY: `q` is one of our QPs, inside wr_start/wr_complete.
    let w = unsafe { new_wr::<T>(q, IBV_WR_ATOMIC_WRITE) };
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = addr;
    // The 8 bytes are taken now (the caller's buffer may change before
    // wr_complete), as inline data.
    // SAFETY: `ibv_wr_atomic_write` takes a pointer to the 8 bytes to write.
    let data = unsafe { std::slice::from_raw_parts(atomic_wr as *const u8, 8) }.to_vec();
    set_inline::<T>(q, data);
}
unsafe extern "C" fn wr_bind_mw<T: ExQp>(q: *mut ibv_qp_ex, mw: *mut ibv_mw, rkey: u32, info: *const ibv_mw_bind_info) {
    // SAFETY: `q` is one of our QPs, inside wr_start/wr_complete.
    let w = unsafe { new_wr::<T>(q, IBV_WR_BIND_MW) };
    // SAFETY: `ibv_wr_bind_mw` takes a valid bind description.
    let bind_info = unsafe { *info };
    w.bind_mw_tso.bind_mw = ibv_send_wr_bind_mw { mw, rkey, bind_info };
}
unsafe extern "C" fn wr_set_ud_addr<T: ExQp>(q: *mut ibv_qp_ex, ah: *mut ibv_ah, qpn: u32, qkey: u32) {
    // SAFETY: `q` is one of our QPs, inside wr_start/wr_complete.
    if let Some((w, _)) = unsafe { last::<T>(q) } {
        w.wr.ud.ah = ah;
        w.wr.ud.remote_qpn = qpn;
        w.wr.ud.remote_qkey = qkey;
    }
}
unsafe extern "C" fn wr_set_xrc_srqn<T: ExQp>(q: *mut ibv_qp_ex, srqn: u32) {
    // SAFETY: `q` is one of our QPs, inside wr_start/wr_complete.
    if let Some((w, _)) = unsafe { last::<T>(q) } {
        w.qp_type.xrc.remote_srqn = srqn;
    }
}
unsafe extern "C" fn wr_set_sge<T: ExQp>(q: *mut ibv_qp_ex, lkey: u32, addr: u64, length: u32) {
    // SAFETY: `q` is one of our QPs, inside wr_start/wr_complete.
    if let Some((_, s)) = unsafe { last::<T>(q) } {
        s.clear();
        s.push(ibv_sge { addr, length, lkey });
    }
}
unsafe extern "C" fn wr_set_sge_list<T: ExQp>(q: *mut ibv_qp_ex, n: usize, sg: *const ibv_sge) {
    // SAFETY: `q` is one of our QPs, inside wr_start/wr_complete.
    if let Some((_, s)) = unsafe { last::<T>(q) } {
        s.clear();
        if n > 0 {
            // SAFETY: `ibv_wr_set_sge_list` takes `n` SGEs at `sg`.
            s.extend_from_slice(unsafe { std::slice::from_raw_parts(sg, n) });
        }
    }
}
unsafe extern "C" fn wr_set_inline_data<T: ExQp>(q: *mut ibv_qp_ex, addr: *mut c_void, length: usize) {
    let buf = ibv_data_buf { addr, length };
    // SAFETY: `q` is one of our QPs; `buf` is one buffer description, of
    // the `length` readable bytes at `addr` the application passed.
    unsafe { wr_set_inline_data_list::<T>(q, 1, &buf) }
}
unsafe extern "C" fn wr_set_inline_data_list<T: ExQp>(q: *mut ibv_qp_ex, n: usize, bl: *const ibv_data_buf) {
    let mut data = Vec::new();
    for i in 0..n {
        // SAFETY: `ibv_wr_set_inline_data_list` takes `n` descriptions at
        // `bl`, each of `length` readable bytes at `addr` (copied now: the
        // application may reuse them before wr_complete).
        unsafe {
            let b = &*bl.add(i);
            data.extend_from_slice(std::slice::from_raw_parts(b.addr as *const u8, b.length));
        }
    }
    set_inline::<T>(q, data);
}

/// Makes `data` the inline payload of the last work request of `q` (kept
/// in the QP's `WrList` until wr_complete).
fn set_inline<T: ExQp>(q: *mut ibv_qp_ex, data: Vec<u8>) {
    // SAFETY: only called by the builders above, with their `q` (one of
    // our QPs, inside wr_start/wr_complete).
    let l = unsafe { list::<T>(q) };
    let sge = ibv_sge {
        addr: data.as_ptr() as u64,
        length: data.len() as u32,
        lkey: 0,
    };
    l.bufs.push(data);
    if let (Some(w), Some(s)) = (l.wrs.last_mut(), l.sges.last_mut()) {
        w.send_flags |= IBV_SEND_INLINE;
        s.clear();
        s.push(sge);
    }
}

/// Installs the work request builders.
///
/// # Safety
/// `s` points to a live `SwQp` (its `vqp` gets the callbacks, which rely on
/// being installed only there).
pub unsafe fn fill_qp_ex(s: *mut SwQp, _flags: u64) {
    // SAFETY: `s` is live (the contract); `qp_ex` is the member of the
    // `verbs_qp` union that an extended QP uses, and no other reference to
    // it exists while we fill it.
    let q = unsafe { &mut *(std::ptr::addr_of_mut!((*s).vqp.u.qp_ex) as *mut ibv_qp_ex) };
    fill_qp_ex_of::<SwQp>(q);
}

/// Installs the work request builders of a `T` into `q`, which must be the
/// `ibv_qp_ex` at the start of a `T` (the callbacks rely on it).
pub fn fill_qp_ex_of<T: ExQp>(q: &mut ibv_qp_ex) {
    q.wr_start = Some(wr_start::<T>);
    q.wr_complete = Some(wr_complete::<T>);
    q.wr_abort = Some(wr_abort::<T>);
    q.wr_send = Some(wr_send::<T>);
    q.wr_send_imm = Some(wr_send_imm::<T>);
    q.wr_rdma_write = Some(wr_rdma_write::<T>);
    q.wr_rdma_write_imm = Some(wr_rdma_write_imm::<T>);
    q.wr_rdma_read = Some(wr_rdma_read::<T>);
    q.wr_atomic_cmp_swp = Some(wr_cas::<T>);
    q.wr_atomic_fetch_add = Some(wr_faa::<T>);
    q.wr_atomic_write = Some(wr_atomic_write::<T>);
    q.wr_send_inv = Some(wr_send_inv::<T>);
    q.wr_local_inv = Some(wr_local_inv::<T>);
    q.wr_bind_mw = Some(wr_bind_mw::<T>);
    q.wr_set_ud_addr = Some(wr_set_ud_addr::<T>);
    q.wr_set_xrc_srqn = Some(wr_set_xrc_srqn::<T>);
    q.wr_set_sge = Some(wr_set_sge::<T>);
    q.wr_set_sge_list = Some(wr_set_sge_list::<T>);
    q.wr_set_inline_data = Some(wr_set_inline_data::<T>);
    q.wr_set_inline_data_list = Some(wr_set_inline_data_list::<T>);
}
