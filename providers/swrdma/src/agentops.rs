//! A wire device's verbs as a client of the user's transport agent
//! (`swrdma-wired`, issue 33, HOSTWIRE-DESIGN.md plan step 2), chosen with
//! `SWRDMA_WIRE_AGENT=1`: the agent owns the QPs' transport, this process
//! owns only its memory and its queues.
//!
//! * **The context** opens its connection to the agent of its interface
//!   (started on demand, `client::connect_or_start`) with the process's
//!   access page (`locks.rs`) and the write end of the context's async
//!   event pipe: the agent writes the kernel's async event records there
//!   (element = the object's address, given as its `user_handle`).
//! * **Objects** (PD, MR, CQ, SRQ, QP, AH) are made by control requests
//!   (`swrdma_wired::ctl::msg`), answered with the errnos the provider's
//!   own verbs give.  Each starts with the libibverbs structure the
//!   application holds and is in the context's registry under its kind,
//!   so a verb given another object (an altered handle, another context's,
//!   one destroyed) is refused before it is read.
//! * **The data path** writes WQEs into the QP's send and receive queues
//!   (memfds shared with the agent, `swrdma_wired::wq`) and reads CQEs from
//!   the CQ's queue; a send queue whose consumer sleeps gets a `DOORBELL`
//!   message.  No thread of ours carries the QPs: a stopped or busy
//!   process keeps its connections, and a peer's WRITE, READ or atomic
//!   needs nothing of it (the agent places by cross-memory attach).
//! * **Multicast**: `attach_mcast` and `detach_mcast` are requests; the
//!   agent keeps each QP's attachments and joins (leaves) the group on
//!   its transport's sockets with a QP's first (last) attachment to it, so
//!   a UD datagram to the group reaches every attached QP of its clients.
//! * **Memory windows** are the agent's (`AllocMw`, `DeallocMw`); a bind
//!   (`ibv_bind_mw` of a type 1 window, `IBV_WR_BIND_MW` of a type 2) and
//!   `IBV_WR_LOCAL_INV` are WQEs of the send queue, done by the agent as it
//!   takes them and completed in order; `mw->rkey` changes at post when
//!   the bind will succeed, as the provider's own verbs change it (see
//!   "memory windows" below).
//! * **Parent domains** (`alloc_parent_domain`) are the agent's PDs of a
//!   PD (`AllocPd` with its PD): PDs of their own in the registry, taken
//!   wherever a PD is, in their PD's protection domain (`APd::dom`, as
//!   the agent's `pd_id`), holding a use of it (`dealloc_pd` of it:
//!   `EBUSY`).
//! * **Extended SRQs** (`create_srq_ex`): the provider's own checks
//!   (ops.rs), then the SRQ of `create_srq` for a basic one; an XRC one
//!   that passes them is `EOPNOTSUPP` (XRC is not carried).
//! * **Device memory**: the DM itself is `ops.rs`'s (memory of this
//!   process, which the agent reaches as any other); `reg_dm_mr` registers
//!   its range with the agent at I/O virtual address 0, counted by the DM
//!   until `dereg_mr` (`free_dm`: `EBUSY` meanwhile).
//! * **`advise_mr`**: `ops.rs`'s checks, against the MRs this process
//!   registered (by lkey: `MR_KEYS`); nothing to prefetch.
//! * **Not yet** (each answers the documented failure, `EOPNOTSUPP` or
//!   NULL with it): XRC (`open_xrcd`, `close_xrcd`, `get_srq_num`, XRC
//!   SRQs and QPs).
//! * **Extended CQs and QPs** (`create_cq_ex`, `create_qp_ex`): the
//!   provider's own checks (ops.rs), the objects of `create_cq` and
//!   `create_qp`; the CQ's poll cursor and the QP's work request builders
//!   are qpex.rs's, over `poll_cq` and `post_send`.
//! * **Completion channels**: the agent gets a write end of the channel's
//!   pipe with the CQ and writes the CQ's address there (the kernel's
//!   event: its user handle) when a completion it was armed for comes;
//!   `req_notify_cq` arms the CQ's queue (`wq::Consumer::arm`).

use crate::agentconn::Conn;
use crate::context::Ctx;
use crate::handles::*;
use ibverbs_abi::*;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::os::fd::{AsFd, OwnedFd};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use swrdma_wired::ctl::msg::{
    AhAttr, Caps, CreateCq, CreateQp, CreateSrq, MwType, QpAttr, QpType, Queue, RegMr, Reply, Request, ReregMr, SrqType,
};
use swrdma_wired::ctl::tables::{grant_qp_caps, Limits};
use swrdma_wired::wq::format::{
    decode_cqe, encode_recv, encode_send, mark_direct, recv_slot_size, send_slot_size, Data, MwBind, QpKind, RecvWqe,
    Remote, SendOp, SendShape, SendWqe, SgeList, UdAddr, CQE_SLOT, SEND_FLAGS,
};
use swrdma_wired::wq::{Consumer, Producer, Push, Slots};

/// The connection of context `c` (None: not an agent context).
///
/// # Safety
/// `c` is the `ibv_context` inside a live `SwCtx` made by `alloc_context`.
unsafe fn conn_of<'a>(c: *mut ibv_context) -> Option<&'a Conn> {
    // SAFETY: as `ctx_of` (the contract); `agent` is null or the
    // `Arc::into_raw` of the context's `Conn`, released only by
    // `free_context`.
    unsafe {
        let v = (c as *mut u8).sub(std::mem::offset_of!(verbs_context, context)) as *mut SwCtx;
        (*v).agent.as_ref()
    }
}

/// The context and its connection, for a verb given `context`.
///
/// # Safety
/// As [`conn_of`].
unsafe fn both<'a>(context: *mut ibv_context) -> Result<(&'a Ctx, &'a Conn), c_int> {
    // SAFETY: the contract.
    unsafe { Ok((ctx_of(context), conn_of(context).ok_or(libc::EINVAL)?)) }
}

/// A PD or a parent domain (`alloc_parent_domain`): the `ibv_pd` the
/// application holds (its `handle` is the registry's), the agent's handle.
#[repr(C)]
struct APd {
    pd: ibv_pd,
    /// The agent's handle.
    h: u32,
    /// The protection domain its objects are checked against (the agent's
    /// `pd_id`): its own handle, or for a parent domain its PD's.
    dom: u32,
}

#[repr(C)]
struct AMr {
    vmr: verbs_mr,
    h: u32,
    /// What a window bind and `advise_mr` check of it, as the agent's
    /// tables have it.
    view: Mutex<MrView>,
    /// A device memory MR (`reg_dm_mr`): its DM, which counts it (`SwDm`'s
    /// `mrs`: `free_dm` is `EBUSY` while it lives); else null.
    dm: *mut SwDm,
}

/// An MR as the agent's key table holds it (`ctl::tables` `reg_mr`,
/// `rereg_mr`): its range in its I/O virtual addresses and its rights.
#[derive(Clone, Copy)]
struct MrView {
    iova: u64,
    len: u64,
    access: u32,
}

/// A memory window: the `ibv_mw` the application holds (its `handle` is
/// the registry's), the agent's handle.
#[repr(C)]
struct AMw {
    mw: ibv_mw,
    h: u32,
}

/// A CQ: its `ibv_cq_ex` (whose `ibv_cq` prefix is what `ibv_create_cq`
/// gives; the whole is the extended CQ of `ibv_create_cq_ex`, with the
/// poll cursor of qpex.rs).
#[repr(C)]
struct ACq {
    cq: ibv_cq_ex,
    h: u32,
    /// The completion the extended poll cursor is on (`qpex::ExCq`),
    /// written by the one poller between `ibv_start_poll` and
    /// `ibv_end_poll`.
    cur: std::cell::UnsafeCell<ibv_wc>,
    /// Our half of its CQE queue.
    q: Mutex<CqQueue>,
    /// The eventfd the agent writes when we sleep on the queue (kept: the
    /// agent holds the other end).
    _bell: OwnedFd,
}

/// A CQ's completions on our side: its queue, and what a `resize_cq`
/// took out of the queue it replaced (polled first).
struct CqQueue {
    q: Consumer,
    left: std::collections::VecDeque<ibv_wc>,
}

impl CqQueue {
    /// The next completion (the old queue's first), if any; Err: a CQE the
    /// agent wrote that does not decode.
    fn next(&mut self) -> Result<Option<ibv_wc>, ()> {
        if let Some(w) = self.left.pop_front() {
            return Ok(Some(w));
        }
        Self::pop(&mut self.q)
    }

    fn pop(q: &mut Consumer) -> Result<Option<ibv_wc>, ()> {
        let mut b = [0u8; CQE_SLOT];
        match q.try_pop(&mut b) {
            Ok(Some(len)) => decode_cqe(&b[..len]).map(|e| Some(e.to_wc())).map_err(|_| ()),
            Ok(None) => Ok(None),
            Err(_) => Err(()),
        }
    }
}

/// A QP: its `verbs_qp` (the `ibv_qp` of `ibv_create_qp`; an extended QP
/// of `ibv_create_qp_ex` with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS` has
/// `VERBS_QP_EX` and the work request builders of qpex.rs in its
/// `ibv_qp_ex`).
#[repr(C)]
struct AQp {
    vqp: verbs_qp,
    h: u32,
    /// The work requests being built (`ibv_wr_start` .. `ibv_wr_complete`,
    /// one thread at a time: the interface's contract).
    wrs: std::cell::UnsafeCell<WrList>,
    shape: SendShape,
    cap: Caps,
    sq_sig_all: bool,
    sq: Mutex<Option<Producer>>,
    rq: Mutex<Option<Producer>>,
    /// `IBV_QPS_*` as the last `modify_qp` left it.
    state: AtomicU32,
}

impl AQp {
    /// Its `ibv_qp`.
    fn qp(&self) -> &ibv_qp {
        // SAFETY: `ibv_qp` is the prefix of both members of the union
        // (integers, pointers, pthread objects: any bits the QP holds are
        // valid for it).
        unsafe { &self.vqp.u.qp }
    }

    /// Its `ibv_qp`, to fill in.
    fn qp_mut(&mut self) -> &mut ibv_qp {
        // SAFETY: as `qp`.
        unsafe { &mut self.vqp.u.qp }
    }
}

#[repr(C)]
struct ASrq {
    srq: ibv_srq,
    h: u32,
    max_sge: u32,
    /// Our half of its receive queue.
    q: Mutex<Producer>,
}

#[repr(C)]
struct AAh {
    ah: ibv_ah,
    attr: ibv_ah_attr,
    /// The agent's handle.
    h: u32,
}

fn null_errno<T>(e: c_int) -> *mut T {
    set_errno(e);
    std::ptr::null_mut()
}

/// # Safety
/// libibverbs calls the verbs below only with objects of this provider
/// that the application has not destroyed (each is checked against the
/// context's registry before it is read as ours) and with argument
/// pointers valid as each verb's contract says.
unsafe extern "C" fn alloc_pd(context: *mut ibv_context) -> *mut ibv_pd {
    // SAFETY: `context` is one of ours (the contract).
    let Ok((c, conn)) = (unsafe { both(context) }) else {
        return null_errno(libc::EINVAL);
    };
    let slot = match c.reg.reserve(Kind::Pd) {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    let h = match conn.call(&Request::AllocPd { parent: None }, &[]) {
        Ok(Reply::Pd { handle }) => handle,
        Ok(_) => return null_errno(libc::EIO),
        Err(e) => return null_errno(e),
    };
    let id = c.new_obj_id();
    let p = Box::into_raw(Box::new(APd {
        pd: ibv_pd { context, handle: id },
        h,
        dom: h,
    }));
    slot.commit(id, p as *const u8);
    p as *mut ibv_pd
}

/// `ibv_alloc_parent_domain`: `ops.rs`'s checks (no PD, one that is not a
/// live PD of `context`, a thread domain of another context, a `comp_mask`
/// bit it does not know: `EINVAL`; then the limit), then the agent's
/// `AllocPd` of the PD.  A parent domain is a PD of its own (a registry
/// slot and handle of `Kind::Pd`, so every verb that takes a PD takes it)
/// in its PD's protection domain; it holds a use of its PD (the agent's
/// `DeallocPd` of the PD is `EBUSY` meanwhile).  The thread domain and the
/// allocators are not needed (as `ops.rs`: no queue buffer is a device's).
///
/// # Safety
/// As every verb: `attr` is null or a valid init attribute whose `td` is
/// null or a thread domain of ours (`alloc_td`, `ops.rs`).
unsafe extern "C" fn alloc_parent_domain(
    context: *mut ibv_context,
    attr: *mut ibv_parent_domain_init_attr,
) -> *mut ibv_pd {
    // SAFETY: `context` is one of ours (the contract).
    let Ok((c, conn)) = (unsafe { both(context) }) else {
        return null_errno(libc::EINVAL);
    };
    if attr.is_null() {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a valid init attribute (the contract).
    let a = unsafe { &*attr };
    // SAFETY: the PD is null or the application's, read as ours only once
    // it is a live PD of `context`.
    let inner = unsafe { apd_of(context, a.pd) }.ok();
    // SAFETY: the TD is null (not read) or one of ours (the contract).
    let bad_td = !a.td.is_null() && unsafe { (*a.td).context } != context;
    let known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    let Some(inner) = inner.filter(|_| !bad_td && a.comp_mask & !known == 0) else {
        return null_errno(libc::EINVAL);
    };
    let slot = match c.reg.reserve(Kind::Pd) {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    let h = match conn.call(&Request::AllocPd { parent: Some(inner.h) }, &[]) {
        Ok(Reply::Pd { handle }) => handle,
        Ok(_) => return null_errno(libc::EIO),
        Err(e) => return null_errno(e),
    };
    let id = c.new_obj_id();
    let p = Box::into_raw(Box::new(APd {
        pd: ibv_pd { context, handle: id },
        h,
        dom: inner.dom,
    }));
    slot.commit(id, p as *const u8);
    p as *mut ibv_pd
}

/// Our PD (or parent domain) `pd`, checked: one of `context`'s live PDs
/// (null: `EINVAL`; not live: `ENOENT`; else `valid_pd`'s errno).
///
/// # Safety
/// `pd` is null or readable as an `ibv_pd`; `context` is one of ours.
unsafe fn apd_of<'a>(context: *mut ibv_context, pd: *mut ibv_pd) -> Result<&'a APd, c_int> {
    if pd.is_null() {
        return Err(libc::EINVAL);
    }
    if !crate::registry::live(pd as *const u8) {
        return Err(libc::ENOENT); // (`valid`'s answer: not read)
    }
    // SAFETY: the contract; once valid it is one of our `APd`s.
    unsafe {
        valid_pd(context, pd)?;
        Ok(&*(pd as *const APd))
    }
}

/// The protection domain of `pd` (`APd::dom`) when it is a live PD of its
/// own context.
///
/// # Safety
/// `pd` is null or readable as an `ibv_pd`.
unsafe fn dom_of(pd: *mut ibv_pd) -> Option<u32> {
    // SAFETY: the contract; read only once it is a live object of ours.
    unsafe { ours::<APd>(pd as *const u8, Kind::Pd, || ((*pd).context, (*pd).handle)) }
        .ok()
        .map(|a| a.dom)
}

/// Whether PDs `x` and `y` are live PDs of ours in the same protection
/// domain (a parent domain is in its PD's): how the agent's tables compare
/// them (`pd_id`).
///
/// # Safety
/// Each is null or readable as an `ibv_pd`.
unsafe fn same_dom(x: *mut ibv_pd, y: *mut ibv_pd) -> bool {
    // SAFETY: the contract.
    let (a, b) = unsafe { (dom_of(x), dom_of(y)) };
    a.is_some() && a == b
}

/// The agent's handle of PD `pd` (checked: one of `context`'s live PDs or
/// parent domains).
///
/// # Safety
/// `pd` is null or readable as an `ibv_pd`; `context` is one of ours.
unsafe fn pd_h(context: *mut ibv_context, pd: *mut ibv_pd) -> Result<u32, c_int> {
    if pd.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: the contract; once valid it is one of our `APd`s.
    unsafe {
        valid_pd(context, pd)?;
        Ok((*(pd as *mut APd)).h)
    }
}

unsafe extern "C" fn dealloc_pd(pd: *mut ibv_pd) -> c_int {
    // SAFETY: the contract; read only once it is a live object of ours.
    let a: &APd = match unsafe { ours(pd as *const u8, Kind::Pd, || ((*pd).context, (*pd).handle)) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    // SAFETY: checked: our `APd`, made by alloc_pd.
    unsafe {
        destroy(
            pd as *mut APd,
            Kind::Pd,
            a.pd.context,
            a.pd.handle,
            Request::DeallocPd { pd: a.h },
        )
    }
}

unsafe extern "C" fn reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
) -> *mut ibv_mr {
    if pd.is_null() || !crate::registry::live(pd as *const u8) {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a live object of ours (checked).
    let context = unsafe { (*pd).context };
    // SAFETY: as above.
    let (c, conn, h) = match unsafe { both(context).and_then(|(c, n)| Ok((c, n, pd_h(context, pd)?))) } {
        Ok(v) => v,
        Err(e) => return null_errno(e),
    };
    let req = RegMr {
        pd: h,
        access: access as u32,
        addr: addr as u64,
        length: length as u64,
        iova: hca_va,
    };
    // SAFETY: `pd` is a live PD of `context`, which is ours (checked).
    unsafe { new_mr(c, conn, pd, req, addr, length, std::ptr::null_mut()) }
}

/// The MR the agent registers for `req` (in PD `pd`, whose handle `req`
/// names), as the application sees it: at `addr` (its `ibv_mr`'s), of
/// `length` bytes, with `req`'s rights; `dm`: the device memory it lies in
/// (counted by it from now on), or null.  Null with the errno (the
/// limit's, the agent's).
///
/// # Safety
/// `pd` is a live PD of ours, of the context `c` and `conn` are; `dm` is
/// null or a live `SwDm` of that context.
unsafe fn new_mr(
    c: &Ctx,
    conn: &Conn,
    pd: *mut ibv_pd,
    req: RegMr,
    addr: *mut c_void,
    length: usize,
    dm: *mut SwDm,
) -> *mut ibv_mr {
    let slot = match c.reg.reserve(Kind::Mr) {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    let (mh, lkey, rkey) = match conn.call(&Request::RegMr(req), &[]) {
        Ok(Reply::Mr { handle, lkey, rkey }) => (handle, lkey, rkey),
        Ok(_) => return null_errno(libc::EIO),
        Err(e) => return null_errno(e),
    };
    if !dm.is_null() {
        // SAFETY: a live `SwDm` (the contract); its count is atomic.
        unsafe { (*dm).mrs.fetch_add(1, Ordering::SeqCst) };
    }
    // SAFETY: `pd` is ours (the contract).
    let context = unsafe { (*pd).context };
    let id = c.new_obj_id();
    let m = Box::into_raw(Box::new(AMr {
        // SAFETY: `verbs_mr` is integers and pointers: all-zero is valid.
        vmr: unsafe { std::mem::zeroed() },
        h: mh,
        view: Mutex::new(MrView {
            iova: req.iova,
            len: req.length,
            access: req.access,
        }),
        dm,
    }));
    // SAFETY: the fresh box, not yet visible to anyone.
    let v = unsafe { &mut (*m).vmr };
    // (As `ops.rs` makes it: the library reads them at `dereg_mr`.)
    v.mr_type = IBV_MR_TYPE_MR;
    v.access = req.access as c_int;
    let mr = &mut v.ibv_mr;
    mr.context = context;
    mr.pd = pd;
    mr.addr = addr;
    mr.length = length;
    mr.handle = id;
    mr.lkey = lkey;
    mr.rkey = rkey;
    slot.commit(id, m as *const u8);
    crate::sys::lock(&MR_KEYS).insert((context as usize, lkey), (id, m as usize));
    m as *mut ibv_mr
}

/// The MRs of the agent's contexts by context and lkey (`advise_mr` names
/// MRs by lkey): each one's registry handle and address, checked against
/// the context's registry before it is read (`mr_by_lkey`).  An MR leaves
/// it with its `dereg_mr`, the rest of a context's with the context
/// (`free_context`).
static MR_KEYS: Mutex<BTreeMap<(usize, u32), (u32, usize)>> = Mutex::new(BTreeMap::new());

/// The live MR of `context` whose lkey is `lkey`.
///
/// # Safety
/// `context` is one of ours.
unsafe fn mr_by_lkey<'a>(context: *mut ibv_context, lkey: u32) -> Option<&'a AMr> {
    let (id, p) = *crate::sys::lock(&MR_KEYS).get(&(context as usize, lkey))?;
    // SAFETY: `context` is ours (the contract); once its registry has the
    // MR `id` at `p`, `p` is a live `AMr` of ours.
    unsafe {
        valid(context, Kind::Mr, id, p as *const u8).ok()?;
        let m = &*(p as *const AMr);
        (m.vmr.ibv_mr.lkey == lkey).then_some(m)
    }
}

unsafe extern "C" fn dereg_mr(vmr: *mut verbs_mr) -> c_int {
    // SAFETY: the contract; read only once it is a live object of ours.
    let m: &AMr = match unsafe {
        ours(vmr as *const u8, Kind::Mr, || {
            ((*vmr).ibv_mr.context, (*vmr).ibv_mr.handle)
        })
    } {
        Ok(m) => m,
        Err(e) => return e,
    };
    let mr = &m.vmr.ibv_mr;
    let (context, lkey, dm) = (mr.context, mr.lkey, m.dm);
    // SAFETY: checked: our `AMr`, made by new_mr.
    let r = unsafe {
        destroy(
            vmr as *mut AMr,
            Kind::Mr,
            mr.context,
            mr.handle,
            Request::DeregMr { mr: m.h },
        )
    };
    if r == 0 {
        let mut k = crate::sys::lock(&MR_KEYS);
        if k.get(&(context as usize, lkey))
            .is_some_and(|&(_, p)| p == vmr as usize)
        {
            k.remove(&(context as usize, lkey));
        }
        drop(k);
        if !dm.is_null() {
            // SAFETY: a DM MR's DM is live: `free_dm` refuses while its
            // count (which this MR held, until now) is not zero.
            unsafe { (*dm).mrs.fetch_sub(1, Ordering::SeqCst) };
        }
    }
    r
}

unsafe extern "C" fn rereg_mr(
    vmr: *mut verbs_mr,
    flags: c_int,
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> c_int {
    // SAFETY: the contract; read only once it is a live object of ours.
    let m: &AMr = match unsafe {
        ours(vmr as *const u8, Kind::Mr, || {
            ((*vmr).ibv_mr.context, (*vmr).ibv_mr.handle)
        })
    } {
        Ok(m) => m,
        Err(e) => return e,
    };
    let context = m.vmr.ibv_mr.context;
    // SAFETY: a live object's context is ours.
    let Ok((_, conn)) = (unsafe { both(context) }) else {
        return libc::EINVAL;
    };
    let flags = flags as u32;
    let new_pd = if flags & IBV_REREG_MR_CHANGE_PD != 0 && !pd.is_null() {
        // SAFETY: the application's PD (the contract), checked as ours.
        match unsafe { pd_h(context, pd) } {
            Ok(h) => Some(h),
            Err(e) => return e,
        }
    } else {
        None
    };
    let req = Request::ReregMr(ReregMr {
        mr: m.h,
        flags,
        pd: new_pd,
        access: access as u32,
        addr: addr as u64,
        length: length as u64,
    });
    let r = conn.done(&req);
    if r == 0 {
        // (As the agent's tables change it: a new range is at its address.)
        let mut v = crate::sys::lock(&m.view);
        if flags & IBV_REREG_MR_CHANGE_TRANSLATION != 0 {
            (v.iova, v.len) = (addr as u64, length as u64);
        }
        if flags & IBV_REREG_MR_CHANGE_ACCESS != 0 {
            v.access = access as u32;
        }
    }
    if r == 0 && flags & IBV_REREG_MR_CHANGE_ACCESS != 0 {
        // SAFETY: our live MR; the application does not use it meanwhile
        // (the verb's contract).  (The library records the new PD and
        // range in the `ibv_mr` after we return, as for every provider.)
        unsafe { (*vmr).access = access };
    }
    if r != 0 {
        set_errno(r);
    }
    r
}

/// The depth of the CQE queue of a CQ of `cqe`: room for them, at most
/// the largest queue (a CQ deeper than that overruns at that depth).
fn cq_depth(cqe: u32) -> u32 {
    depth_for(cqe.saturating_add(1)).map_or(MAX_DEPTH, |d| d.min(MAX_DEPTH))
}

/// The largest queue.
const MAX_DEPTH: u32 = swrdma_wired::wq::slots::MAX_DEPTH as u32;

/// The depth of a queue that holds `n` entries: a power of two, at least 2.
fn depth_for(n: u32) -> Option<u32> {
    n.max(1).checked_next_power_of_two().map(|d| d.max(2))
}

unsafe extern "C" fn create_cq(
    context: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ibv_cq {
    // SAFETY: `context` is one of ours (the contract).
    let Ok((c, conn)) = (unsafe { both(context) }) else {
        return null_errno(libc::EINVAL);
    };
    // (The provider's own checks: ops.rs `create_cq`.)
    // SAFETY: `context` is one of ours (the contract).
    let vectors = unsafe { (*context).num_comp_vectors };
    if !(1..=MAX_CQE).contains(&cqe) || comp_vector < 0 || comp_vector >= vectors {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: the contract.
    (unsafe { new_cq(c, conn, context, cqe, channel) }) as *mut ibv_cq
}

/// `ibv_create_cq_ex`: the checks of the provider's own (ops.rs
/// `create_cq_ex`), then the CQ `create_cq` makes, with the extended poll
/// cursor of qpex.rs over its queue.
unsafe extern "C" fn create_cq_ex(context: *mut ibv_context, attr: *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex {
    // SAFETY: `context` is one of ours (the contract).
    let Ok((c, conn)) = (unsafe { both(context) }) else {
        return null_errno(libc::EINVAL);
    };
    // SAFETY: `context` is ours and `attr` a valid init attribute (the
    // verb's contract).
    let (a, vectors) = unsafe { (&*attr, (*context).num_comp_vectors) };
    if let Err(e) = crate::ops::check_cq_init_attr_ex(a, vectors) {
        return null_errno(e);
    }
    // SAFETY: `context` is ours and `a.channel` null or live (the contract).
    let q = unsafe { new_cq(c, conn, context, a.cqe as c_int, a.channel) };
    if !q.is_null() {
        // SAFETY: our fresh CQ, not yet the application's; its `cq` is the
        // `ibv_cq_ex` at its start, as the cursor needs.
        unsafe {
            (*q).cq.cq_context = a.cq_context;
            crate::qpex::fill_cq_ex_of::<ACq>(&mut (*q).cq);
        }
    }
    q as *mut ibv_cq_ex
}

impl crate::qpex::ExCq for ACq {
    unsafe fn cursor(cq: *mut ibv_cq_ex) -> *mut ibv_wc {
        // SAFETY: `cq` is the first field of a live `ACq` (the contract).
        unsafe { (*(cq as *mut ACq)).cur.get() }
    }

    unsafe fn poll(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
        // SAFETY: forwarded (the contract): a CQ of ours, room for `n`.
        unsafe { poll_cq(cq, n, wc) }
    }
}

/// The CQ of `cqe` entries (checked) of `context` (`c`, `conn` its context
/// and connection): its queue, the agent's `CreateCq`.  Null: errno set.
///
/// # Safety
/// `context` is one of ours; `channel` is null or a live completion channel.
unsafe fn new_cq(
    c: &Ctx,
    conn: &Conn,
    context: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
) -> *mut ACq {
    let depth = cq_depth(cqe as u32);
    let slot = match c.reg.reserve(Kind::Cq) {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    let Ok((q, fd)) = Slots::create(depth as usize, CQE_SLOT) else {
        return null_errno(libc::ENOMEM);
    };
    let flags = rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK;
    let Ok(bell) = rustix::event::eventfd(0, flags) else {
        return null_errno(libc::EMFILE);
    };
    // The channel's pipe (its read end is the application's): a write end
    // of our own for the agent, which writes the CQ's events into it.
    let chan_w = if channel.is_null() {
        None
    } else {
        use std::os::unix::fs::OpenOptionsExt;
        // SAFETY: a completion channel of the application's (the contract).
        let fd = unsafe { (*channel).fd };
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(format!("/proc/self/fd/{fd}"))
        {
            Ok(f) => Some(OwnedFd::from(f)),
            Err(e) => return null_errno(e.raw_os_error().unwrap_or(libc::EINVAL)),
        }
    };
    let a = Box::into_raw(Box::new(ACq {
        // SAFETY: `ibv_cq_ex` is integers, pointers, `Option<fn>`s and
        // pthread objects the library initialises: all-zero is valid.
        cq: unsafe { std::mem::zeroed() },
        h: 0,
        cur: std::cell::UnsafeCell::new(crate::context::wc_zero()),
        q: Mutex::new(CqQueue {
            q: q.into_consumer(),
            left: Default::default(),
        }),
        _bell: bell,
    }));
    // SAFETY: the fresh box, not yet visible to anyone.
    let bell_fd = unsafe { (*a)._bell.as_fd() };
    let req = Request::CreateCq(CreateCq {
        cqe: cqe as u32,
        queue: Queue {
            depth,
            slot_size: CQE_SLOT as u32,
        },
        doorbell: true,
        channel: chan_w.is_some(),
        user_handle: a as u64,
    });
    let mut fds = vec![fd.as_fd(), bell_fd];
    fds.extend(chan_w.as_ref().map(|c| c.as_fd()));
    match conn.call(&req, &fds) {
        Ok(Reply::Cq { handle, cqe }) => {
            let id = c.new_obj_id();
            // SAFETY: the fresh box, not yet visible to anyone.
            unsafe {
                (*a).h = handle;
                (*a).cq.context = context;
                (*a).cq.cqe = cqe as c_int;
                (*a).cq.channel = channel;
                (*a).cq.handle = id;
            }
            slot.commit(id, a as *const u8);
            a
        }
        // SAFETY: the box made above, never seen by anyone.
        r => unsafe { refused(a, r) },
    }
}

/// A create verb whose request did not make its object: the object's box
/// freed, NULL with the errno (the agent's, or `EIO` for a reply of
/// another kind).
///
/// # Safety
/// `b` is the `Box::into_raw` of the object being made, never seen by
/// anyone.
unsafe fn refused<T, U>(b: *mut T, r: Result<Reply, c_int>) -> *mut U {
    // SAFETY: the contract.
    drop(unsafe { Box::from_raw(b) });
    null_errno(match r {
        Err(e) => e,
        Ok(_) => libc::EIO,
    })
}

/// Our object of kind `k` at `p` (null: `EINVAL`; not live: `ENOENT`): checked
/// against its context's registry by the handle its verbs structure
/// holds (`context_handle` reads the two) before it is read as a `T`.
///
/// # Safety
/// `p` is null or readable as the verbs structure `context_handle` reads.
unsafe fn ours<'a, T>(
    p: *const u8,
    k: Kind,
    context_handle: impl FnOnce() -> (*mut ibv_context, u32),
) -> Result<&'a T, c_int> {
    if p.is_null() {
        return Err(libc::EINVAL);
    }
    if !crate::registry::live(p) {
        return Err(libc::ENOENT); // (destroyed already: not read)
    }
    // (Live, so one of ours: its verbs structure may be read.)
    let (context, handle) = context_handle();
    // SAFETY: `context` is one of ours (a live object's); once `handle`
    // names `p` there, `p` is a `T` of ours.
    unsafe {
        valid(context, k, handle, p)?;
        Ok(&*(p as *const T))
    }
}

/// A destroy verb of object `p` (our `T`, of kind `k`, named `handle` in
/// `context`, checked by the caller): the agent's `req`, then the object
/// out of the registry and its box retired (`registry::retire`); the
/// agent's errno (`EBUSY`: still in use) leaves it as it was.
///
/// # Safety
/// `p` is the `Box::into_raw` of a live object of ours of kind `k`.
unsafe fn destroy<T>(p: *mut T, k: Kind, context: *mut ibv_context, handle: u32, req: Request) -> c_int {
    // SAFETY: a live object's context is ours (the contract).
    let Ok((c, conn)) = (unsafe { both(context) }) else {
        return libc::EINVAL;
    };
    let r = conn.done(&req);
    if r != 0 {
        return r;
    }
    if c.reg.remove(k, handle, p as *const u8).is_ok() {
        // SAFETY: the contract; out of the registry now: freed once.
        crate::registry::retire(unsafe { Box::from_raw(p) });
    }
    0
}

/// Our CQ `cq` (checked against `context`'s registry, or its own).
///
/// # Safety
/// `cq` is null or readable as an `ibv_cq`.
unsafe fn acq<'a>(cq: *mut ibv_cq) -> Result<&'a ACq, c_int> {
    // SAFETY: the contract; read only once it is a live object of ours.
    unsafe { ours(cq as *const u8, Kind::Cq, || ((*cq).context, (*cq).handle)) }
}

unsafe extern "C" fn poll_cq(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
    // SAFETY: the contract (a CQ of ours, `wc` room for `n`).
    let a = unsafe { &*(cq as *mut ACq) };
    let mut q = crate::sys::lock(&a.q);
    let mut got = 0;
    while got < n.max(0) {
        match q.next() {
            Ok(Some(w)) => {
                // SAFETY: `wc` has room for `n` completions (the contract).
                unsafe { *wc.add(got as usize) = w };
                got += 1;
            }
            Ok(None) => break,
            Err(()) => return -1,
        }
    }
    drop(q);
    // (An application spinning on an empty CQ gives its CPU to the agent
    // once its run of empty polls is long: `poll.rs`.)
    crate::poll::note_empty(got == 0);
    got
}

unsafe extern "C" fn destroy_cq(cq: *mut ibv_cq) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let a = match unsafe { acq(cq) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    // SAFETY: checked: our `ACq`, made by create_cq.
    unsafe {
        destroy(
            cq as *mut ACq,
            Kind::Cq,
            a.cq.context,
            a.cq.handle,
            Request::DestroyCq { cq: a.h },
        )
    }
}

unsafe extern "C" fn create_qp(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp {
    if pd.is_null() || attr.is_null() || !crate::registry::live(pd as *const u8) {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a live object of ours (checked); `attr` is the application's.
    let (context, a) = unsafe { ((*pd).context, &mut *attr) };
    // SAFETY: as above.
    let (c, conn, pdh) = match unsafe { both(context).and_then(|(c, n)| Ok((c, n, pd_h(context, pd)?))) } {
        Ok(v) => v,
        Err(e) => return null_errno(e),
    };
    let (qp_type, kind) = match a.qp_type {
        IBV_QPT_RC => (QpType::Rc, QpKind::Connected),
        IBV_QPT_UC => (QpType::Uc, QpKind::Connected),
        IBV_QPT_UD => (QpType::Ud, QpKind::Ud),
        _ => return null_errno(libc::EOPNOTSUPP),
    };
    // SAFETY: the SRQ is null or the application's (checked as ours).
    let srq = match unsafe { asrq_opt(a.srq) } {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    // SAFETY: the CQs are null or the application's CQs (the contract),
    // checked before they are read as ours.
    let (scq, rcq) = match unsafe { (acq(a.send_cq), acq(a.recv_cq)) } {
        (Ok(s), Ok(r)) => (s, r),
        _ => return null_errno(libc::EINVAL),
    };
    let mut cq_req = CreateQp {
        pd: Some(pdh),
        xrcd: None,
        qp_type,
        send_cq: Some(scq.h),
        recv_cq: Some(rcq.h),
        srq: srq.map(|s| s.h),
        sq_sig_all: a.sq_sig_all != 0,
        cap: Caps::from(a.cap),
        sq: None,
        rq: None,
        user_handle: 0,
    };
    // The queues' slots by the caps the agent will grant (the same rule).
    let cap = match grant_qp_caps(&Limits::WIRE, &cq_req) {
        Ok(cap) => cap,
        Err(e) => return null_errno(e),
    };
    let (Some(ss), Some(rs), Some(sd), Some(rd)) = (
        send_slot_size(cap.max_send_sge, cap.max_inline_data),
        recv_slot_size(cap.max_recv_sge),
        depth_for(cap.max_send_wr),
        depth_for(cap.max_recv_wr),
    ) else {
        return null_errno(libc::EINVAL);
    };
    let (Ok((sq, sq_fd)), Ok((rq, rq_fd))) = (Slots::create(sd as usize, ss), Slots::create(rd as usize, rs)) else {
        return null_errno(libc::ENOMEM);
    };
    // (A QP with an SRQ has no receive queue of its own.)
    let (rq, rq_fd) = if srq.is_some() {
        (None, None)
    } else {
        (Some(rq), Some(rq_fd))
    };
    let slot = match c.reg.reserve(Kind::Qp) {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    let q = Box::into_raw(Box::new(AQp {
        // SAFETY: `verbs_qp` is integers, pointers, `Option<fn>`s and
        // pthread objects the library initialises: all-zero is valid.
        vqp: unsafe { std::mem::zeroed() },
        h: 0,
        wrs: Default::default(),
        shape: SendShape {
            kind,
            max_sge: cap.max_send_sge,
            max_inline: cap.max_inline_data,
        },
        cap,
        sq_sig_all: a.sq_sig_all != 0,
        sq: Mutex::new(Some(sq.into_producer())),
        rq: Mutex::new(rq.map(Slots::into_producer)),
        state: AtomicU32::new(IBV_QPS_RESET),
    }));
    let geometry = |depth: u32, slot: usize| Queue {
        depth,
        slot_size: slot as u32,
    };
    cq_req.sq = Some(geometry(sd, ss));
    cq_req.rq = rq_fd.as_ref().map(|_| geometry(rd, rs));
    cq_req.user_handle = q as u64;
    let mut fds = vec![sq_fd.as_fd()];
    fds.extend(rq_fd.as_ref().map(|f| f.as_fd()));
    match conn.call(&Request::CreateQp(cq_req), &fds) {
        Ok(Reply::Qp { handle, qpn, cap }) => {
            // SAFETY: the fresh box, not yet visible to anyone.
            let s = unsafe { &mut *q };
            s.h = handle;
            s.qp_mut().context = context;
            s.qp_mut().qp_context = a.qp_context;
            s.qp_mut().pd = pd;
            s.qp_mut().send_cq = a.send_cq;
            s.qp_mut().recv_cq = a.recv_cq;
            s.qp_mut().srq = a.srq;
            s.qp_mut().handle = qpn;
            s.qp_mut().qp_num = qpn;
            s.qp_mut().state = IBV_QPS_RESET;
            s.qp_mut().qp_type = a.qp_type;
            a.cap = cap.into();
            slot.commit(qpn, q as *const u8);
            q as *mut ibv_qp
        }
        // SAFETY: the box made above, never seen by anyone.
        r => unsafe { refused(q, r) },
    }
}

/// `ibv_create_qp_ex`: the checks of the provider's own (ops.rs
/// `create_qp_ex`) for the QP types the agent carries (XRC: `EOPNOTSUPP`,
/// as `create_qp` answers it), then the QP `create_qp` makes; with
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`, an extended QP whose work request
/// builders (qpex.rs) post through `post_send`.
unsafe extern "C" fn create_qp_ex(context: *mut ibv_context, attr: *mut ibv_qp_init_attr_ex) -> *mut ibv_qp {
    // SAFETY: `context` is one of ours (the contract).
    let Ok((c, _)) = (unsafe { both(context) }) else {
        return null_errno(libc::EINVAL);
    };
    if attr.is_null() {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a valid, writable init attribute (the verb's contract), not
    // otherwise referenced during the call.
    let a = unsafe { &mut *attr };
    if matches!(a.qp_type, IBV_QPT_XRC_SEND | IBV_QPT_XRC_RECV) {
        return null_errno(libc::EOPNOTSUPP);
    }
    let pd = match crate::ops::check_qp_init_attr(c, a) {
        Ok((pd, _)) => pd,
        Err(e) => return null_errno(e),
    };
    // (Not XRC: the check gave a PD.)  It must be one of `context`'s.
    // SAFETY: the application's PD, checked before it is read as ours.
    if let Err(e) = unsafe { valid_pd(context, pd) } {
        return null_errno(e);
    }
    let mut init = ibv_qp_init_attr {
        qp_context: a.qp_context,
        send_cq: a.send_cq,
        recv_cq: a.recv_cq,
        srq: a.srq,
        cap: a.cap,
        qp_type: a.qp_type,
        sq_sig_all: a.sq_sig_all,
    };
    // SAFETY: `pd` is a live PD of ours; `init` a complete init attribute.
    let qp = unsafe { create_qp(pd, &mut init) };
    if qp.is_null() {
        return qp;
    }
    a.cap = init.cap;
    // SAFETY: our fresh QP (made by create_qp: an `AQp`), not yet the
    // application's; the pthread objects are initialised in place where
    // the library expects them (`ibv_create_qp_ex` does not).
    unsafe {
        let q = &mut *(qp as *mut AQp);
        libc::pthread_mutex_init(&mut q.qp_mut().mutex, std::ptr::null());
        libc::pthread_cond_init(&mut q.qp_mut().cond, std::ptr::null());
        if a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 {
            q.vqp.comp_mask |= VERBS_QP_EX;
            crate::qpex::fill_qp_ex_of::<AQp>(&mut q.vqp.u.qp_ex);
        }
    }
    qp
}

impl crate::qpex::ExQp for AQp {
    unsafe fn wr_list<'a>(q: *mut ibv_qp_ex) -> &'a mut WrList {
        // SAFETY: `q` is the start of a live `AQp`, used by one thread
        // between wr_start and wr_complete (the contract): no other
        // reference to its list exists.
        unsafe { &mut *(*(q as *mut AQp)).wrs.get() }
    }

    unsafe fn post(q: *mut ibv_qp_ex, wrs: &mut [ibv_send_wr]) -> c_int {
        if wrs.is_empty() {
            return 0;
        }
        // One list, posted as `ibv_post_send`'s (stopping at the first
        // refused, whose errno is the answer).
        for i in 1..wrs.len() {
            let next: *mut ibv_send_wr = &mut wrs[i];
            wrs[i - 1].next = next;
        }
        let mut bad = std::ptr::null_mut();
        // SAFETY: `q` is the `ibv_qp_ex` = `ibv_qp` prefix of our live
        // `AQp`; the requests are valid (the contract) and linked above.
        unsafe { post_list(q as *mut ibv_qp, wrs.as_mut_ptr(), &mut bad, false) }
    }
}

unsafe extern "C" fn resize_cq(cq: *mut ibv_cq, cqe: c_int) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let (a, conn) = match unsafe { acq(cq).and_then(|a| Ok((a, both(a.cq.context)?.1))) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    if !(1..=MAX_CQE).contains(&cqe) {
        return libc::EINVAL;
    }
    let depth = cq_depth(cqe as u32);
    let Ok((nq, fd)) = Slots::create(depth as usize, CQE_SLOT) else {
        return libc::ENOMEM;
    };
    // (Polls wait meanwhile: the agent writes the old queue until it has
    // answered, and none of it is lost.)
    let mut q = crate::sys::lock(&a.q);
    let req = Request::ResizeCq {
        cq: a.h,
        cqe: cqe as u32,
        queue: Some(Queue {
            depth,
            slot_size: CQE_SLOT as u32,
        }),
    };
    match conn.call(&req, &[fd.as_fd()]) {
        Ok(Reply::Done) => {}
        Ok(_) => return libc::EIO,
        Err(e) => return e,
    }
    // What the agent wrote into the old queue is polled first.
    while let Ok(Some(w)) = CqQueue::pop(&mut q.q) {
        q.left.push_back(w);
    }
    q.q = nq.into_consumer();
    // SAFETY: our CQ (checked); the library serializes its resize with
    // nothing that writes `cqe` (as every provider writes it here).
    unsafe { (*cq).cqe = cqe };
    0
}

/// Our QP `qp` (checked against its context's registry).
///
/// # Safety
/// `qp` is null or readable as an `ibv_qp`.
unsafe fn aqp<'a>(qp: *mut ibv_qp) -> Result<&'a AQp, c_int> {
    // SAFETY: the contract; read only once it is a live object of ours.
    unsafe { ours(qp as *const u8, Kind::Qp, || ((*qp).context, (*qp).handle)) }
}

unsafe extern "C" fn modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let (a, conn) = match unsafe { aqp(qp).and_then(|a| Ok((a, both(a.qp().context)?.1))) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    if attr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the application's attributes (the contract).
    let at = unsafe { &*attr };
    let Ok(m) = QpAttr::from_verbs(mask as u32, at) else {
        return libc::EINVAL;
    };
    let r = conn.done(&Request::ModifyQp { qp: a.h, attr: m });
    if r == 0 && mask as u32 & IBV_QP_STATE != 0 {
        a.state.store(at.qp_state, Ordering::Release);
    }
    r
}

unsafe extern "C" fn query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
    init: *mut ibv_qp_init_attr,
) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let (a, conn) = match unsafe { aqp(qp).and_then(|a| Ok((a, both(a.qp().context)?.1))) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    if attr.is_null() || init.is_null() {
        return libc::EINVAL;
    }
    let got = match conn.call(
        &Request::QueryQp {
            qp: a.h,
            mask: mask as u32,
        },
        &[],
    ) {
        Ok(Reply::QpAttr(q)) => q,
        Ok(_) => return libc::EIO,
        Err(e) => return e,
    };
    // SAFETY: the application's structures (the contract).
    unsafe {
        *attr = got.to_verbs();
        let i = &mut *init;
        i.qp_context = a.qp().qp_context;
        i.send_cq = a.qp().send_cq;
        i.recv_cq = a.qp().recv_cq;
        i.srq = a.qp().srq;
        i.cap = a.cap.into();
        i.qp_type = a.qp().qp_type;
        i.sq_sig_all = a.sq_sig_all as c_int;
    }
    a.state.store(got.qp_state as u32, Ordering::Release);
    0
}

unsafe extern "C" fn destroy_qp(qp: *mut ibv_qp) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let a = match unsafe { aqp(qp) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    // SAFETY: checked: our `AQp`, made by create_qp.
    unsafe {
        destroy(
            qp as *mut AQp,
            Kind::Qp,
            a.qp().context,
            a.qp().handle,
            Request::DestroyQp { qp: a.h },
        )
    }
}

/// `ibv_attach_mcast`: the agent answers as `ops.rs` does (a GID that is
/// not multicast, a QP that is not UD: `EINVAL`; the same group and LID
/// again: no change) and has its transport take the group's datagrams for
/// the QP (the kernel's errno if it cannot).
///
/// # Safety
/// As every verb; `gid` is readable (the library checked it is not null,
/// as for `ops.rs`).
unsafe extern "C" fn attach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { mcast(qp, gid, lid, true) }
}

/// `ibv_detach_mcast`: `EINVAL` for an attachment the QP does not have;
/// the QP leaves the group with its last LID for it.
///
/// # Safety
/// As `attach_mcast`.
unsafe extern "C" fn detach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { mcast(qp, gid, lid, false) }
}

/// # Safety
/// As `attach_mcast`.
unsafe fn mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16, attach: bool) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let (a, conn) = match unsafe { aqp(qp).and_then(|a| Ok((a, both(a.qp().context)?.1))) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    // SAFETY: 16 readable bytes (the contract), read once the QP is ours,
    // as `ops.rs` reads them.
    let gid = unsafe { (*gid).raw };
    conn.done(&if attach {
        Request::AttachMcast { qp: a.h, gid, lid }
    } else {
        Request::DetachMcast { qp: a.h, gid, lid }
    })
}

unsafe extern "C" fn post_recv(qp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    // SAFETY: the contract (a QP of ours).
    let a = unsafe { &*(qp as *mut AQp) };
    let mut rq = crate::sys::lock(&a.rq);
    let Some(rq) = rq.as_mut() else { return libc::EINVAL };
    // SAFETY: the application's chain and out pointer (the contract).
    let r = unsafe { push_recvs(rq, a.cap.max_recv_sge, wr, bad) };
    // In the error state the agent completes them flushed at its next
    // turn (otherwise it reads the queue when a SEND arrives): wake it.
    if a.state.load(Ordering::Acquire) == IBV_QPS_ERR {
        // SAFETY: our QP's context (the contract).
        if let Some(conn) = unsafe { conn_of(a.qp().context) } {
            conn.doorbell();
        }
    }
    r
}

/// A WQE's bytes being encoded before they go into a queue's slot: the
/// thread's buffer, lent for the call and given back when dropped (a post
/// allocates nothing once the thread has posted before).
struct Scratch(Vec<u8>);

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Scratch {
    /// The thread's buffer, `n` zeroed bytes (as a fresh one: what an
    /// encoder leaves out reads 0).
    fn of(n: usize) -> Scratch {
        let mut v = SCRATCH.with(|s| s.take());
        v.clear();
        v.resize(n, 0);
        Scratch(v)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        SCRATCH.with(|s| s.set(v));
    }
}

impl std::ops::Deref for Scratch {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

/// Writes the receive work requests of chain `wr` into the receive queue
/// `q` (of WQEs of at most `max_sge` SGEs): 0, or the errno with `*bad`
/// the first one not taken (`EINVAL`: too many SGEs; `ENOMEM`: the queue
/// is full).
///
/// # Safety
/// `wr` is null or the application's chain of work requests, `bad` null
/// or its out pointer.
unsafe fn push_recvs(q: &mut Producer, max_sge: u32, mut wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    let mut b = Scratch::of(q.capacity());
    while !wr.is_null() {
        // SAFETY: the application's chain of work requests (the contract).
        let w = unsafe { &*wr };
        let fail = |e: c_int| {
            if !bad.is_null() {
                // SAFETY: the application's out pointer (the contract).
                unsafe { *bad = wr };
            }
            e
        };
        if w.num_sge < 0 || w.num_sge as u32 > max_sge || (w.num_sge > 0 && w.sg_list.is_null()) {
            return fail(libc::EINVAL);
        }
        // SAFETY: `sg_list` holds `num_sge` entries (the contract).
        let sges = unsafe { sge_slice(w.sg_list, w.num_sge) };
        let wqe = RecvWqe {
            wr_id: w.wr_id,
            sges: SgeList::from_verbs(sges),
        };
        let Ok(n) = encode_recv(&wqe, max_sge, &mut b) else {
            return fail(libc::EINVAL);
        };
        if q.try_push_quiet(&b[..n]).is_err() {
            return fail(libc::ENOMEM);
        }
        wr = w.next;
    }
    0
}

/// The `n` SGEs at `p` (none when `n` is 0).
///
/// # Safety
/// `p` holds `n` readable `ibv_sge`s when `n > 0`.
unsafe fn sge_slice<'a>(p: *const ibv_sge, n: c_int) -> &'a [ibv_sge] {
    if n <= 0 || p.is_null() {
        return &[];
    }
    // SAFETY: the contract.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
}

/// The operation of send work request `w` on a QP of type `qpt`: None
/// for one this device does not carry on it (`EINVAL`).
fn send_op(w: &ibv_send_wr, qpt: u32) -> Option<SendOp> {
    // SAFETY: the union's member the opcode names (read as plain data).
    let (rdma, atomic) = unsafe { (w.wr.rdma, w.wr.atomic) };
    let remote = Remote {
        addr: rdma.remote_addr,
        rkey: rdma.rkey,
    };
    let aremote = Remote {
        addr: atomic.remote_addr,
        rkey: atomic.rkey,
    };
    // SAFETY: `imm_data` and `invalidate_rkey` share a 32-bit union.
    let imm = unsafe { w.imm.imm_data };
    let op = match w.opcode {
        IBV_WR_SEND => SendOp::Send,
        IBV_WR_SEND_WITH_IMM => SendOp::SendWithImm { imm },
        // (The same 32 bits: `invalidate_rkey`.)
        IBV_WR_SEND_WITH_INV => SendOp::SendWithInv { rkey: imm },
        IBV_WR_RDMA_WRITE => SendOp::RdmaWrite(remote),
        IBV_WR_RDMA_WRITE_WITH_IMM => SendOp::RdmaWriteWithImm(remote, imm),
        IBV_WR_RDMA_READ => SendOp::RdmaRead(remote),
        IBV_WR_ATOMIC_CMP_AND_SWP => SendOp::CompareAndSwap {
            remote: aremote,
            compare: atomic.compare_add,
            swap: atomic.swap,
        },
        IBV_WR_ATOMIC_FETCH_AND_ADD => SendOp::FetchAndAdd {
            remote: aremote,
            add: atomic.compare_add,
        },
        _ => return None,
    };
    // (An operation a UD or UC QP does not carry is taken, and the agent
    // completes it with `LOC_QP_OP_ERR`, as rxe and the provider's own
    // wire do.)
    let _ = qpt;
    Some(op)
}

unsafe extern "C" fn post_send(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad: *mut *mut ibv_send_wr) -> c_int {
    // SAFETY: forwarded (the contract).
    unsafe { post_list(qp, wr, bad, true) }
}

/// Posts a chain of send work requests; `verb`: through `ibv_post_send`,
/// which first makes the check rxe's provider makes there (`send/mod.rs`
/// `post_verb`): an atomic whose remote address is not aligned to 8 is
/// `EINVAL`.  The `ibv_wr_*` builders' requests (`verb` false) take it to
/// the responder, which NAKs it as an invalid request.
///
/// # Safety
/// As `post_send`'s contract.
unsafe fn post_list(qp: *mut ibv_qp, mut wr: *mut ibv_send_wr, bad: *mut *mut ibv_send_wr, verb: bool) -> c_int {
    // SAFETY: the contract (a QP of ours).
    let a = unsafe { &*(qp as *mut AQp) };
    // SAFETY: as above: its context is ours.
    let Some(conn) = (unsafe { conn_of(a.qp().context) }) else {
        return libc::EINVAL;
    };
    let mut sq = crate::sys::lock(&a.sq);
    let Some(sq) = sq.as_mut() else { return libc::EINVAL };
    let mut b = Scratch::of(sq.capacity());
    let (mut inline, mut copied) = (Vec::new(), Vec::new());
    let mut ring = false;
    let mut r = 0;
    while !wr.is_null() {
        // SAFETY: the application's chain of work requests (the contract).
        let w = unsafe { &*wr };
        // (rxe: a QP that is not ready to send refuses; one in the error
        // state takes the request and completes it flushed.)
        let st = a.state.load(Ordering::Acquire);
        let ready = matches!(st, IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_ERR);
        if matches!(w.opcode, IBV_WR_BIND_MW | IBV_WR_LOCAL_INV) {
            // A local operation (`ops.rs` `post_read`: refused on a QP that
            // does not offer it, whatever its state; its gather list and
            // inline flag are not looked at).
            if !matches!(a.qp().qp_type, IBV_QPT_RC | IBV_QPT_UC) || !ready {
                r = libc::EINVAL;
                break;
            }
            // SAFETY: the application's request (the contract).
            let (op, then) = match unsafe { local_op(a, w, st) } {
                Ok(v) => v,
                Err(e) => {
                    r = e;
                    break;
                }
            };
            let wqe = SendWqe {
                wr_id: w.wr_id,
                op,
                send_flags: wqe_flags(a, w.send_flags & !IBV_SEND_INLINE),
                ud: None,
                xrc_srqn: None,
                data: Data::Sges(SgeList::from_verbs(&[])),
            };
            match push_send(a, sq, &mut b, &wqe) {
                Ok(rings) => {
                    ring |= rings;
                    // SAFETY: its window is our live one (checked), the
                    // application's to change once the verb returns.
                    unsafe { then.apply(a) };
                }
                Err(e) => {
                    r = e;
                    break;
                }
            }
            wr = w.next;
            continue;
        }
        let op = send_op(w, a.qp().qp_type);
        let bad_sges = w.num_sge < 0 || (w.num_sge > 0 && w.sg_list.is_null());
        if !ready || op.is_none() || bad_sges {
            r = libc::EINVAL;
            break;
        }
        // SAFETY: `sg_list` holds `num_sge` entries (the contract).
        let sges = unsafe { sge_slice(w.sg_list, w.num_sge) };
        if let Some(SendOp::CompareAndSwap { remote, .. } | SendOp::FetchAndAdd { remote, .. }) = op {
            if verb && !remote.addr.is_multiple_of(8) {
                r = libc::EINVAL;
                break;
            }
        }
        let data = if w.send_flags & IBV_SEND_INLINE != 0 {
            let total: u64 = sges.iter().map(|s| s.length as u64).sum();
            if total > a.cap.max_inline_data as u64 {
                r = libc::EINVAL;
                break;
            }
            inline.clear();
            for s in sges {
                // SAFETY: inline data is read from the application's
                // buffers at post, as every provider does (the contract:
                // each SGE names `length` readable bytes).
                inline.extend_from_slice(unsafe { std::slice::from_raw_parts(s.addr as *const u8, s.length as usize) });
            }
            Data::Inline(&inline)
        } else {
            let atomic = matches!(op, Some(SendOp::CompareAndSwap { .. } | SendOp::FetchAndAdd { .. }));
            let len: u64 = sges.iter().map(|s| s.length as u64).sum();
            // (An atomic's local buffer is 8 bytes: the provider's own
            // wire refuses another length at post.)
            if sges.len() > a.cap.max_send_sge as usize || (atomic && len != 8) {
                r = libc::EINVAL;
                break;
            }
            carry_small(a, sq, op, sges, Data::Sges(SgeList::from_verbs(sges)), &mut copied)
        };
        let is_send = matches!(
            op,
            Some(SendOp::Send | SendOp::SendWithImm { .. } | SendOp::SendWithInv { .. })
        );
        let ud = if a.qp().qp_type == IBV_QPT_UD && !is_send {
            // (An operation UD does not carry: the agent completes it with
            // `LOC_QP_OP_ERR` before it looks at an address.)
            Some(UdAddr::default())
        } else if a.qp().qp_type == IBV_QPT_UD {
            // SAFETY: the UD member of the union (a UD QP's contract).
            let u = unsafe { w.wr.ud };
            // SAFETY: the AH is null or the application's (checked).
            match unsafe { ud_addr(u.ah, u.remote_qpn, u.remote_qkey) } {
                Some(x) => Some(x),
                None => {
                    r = libc::EINVAL;
                    break;
                }
            }
        } else {
            None
        };
        let wqe = SendWqe {
            wr_id: w.wr_id,
            op: op.unwrap_or(SendOp::Send),
            send_flags: wqe_flags(a, w.send_flags) | inline_bit(&data),
            ud,
            xrc_srqn: None,
            data,
        };
        let pushed = match direct(conn, a, st, sq, &mut b, &wqe) {
            Some(x) => x.map(|()| false),
            None => push_send(a, sq, &mut b, &wqe),
        };
        match pushed {
            Ok(rings) => ring |= rings,
            Err(e) => {
                r = e;
                break;
            }
        }
        wr = w.next;
    }
    if ring {
        conn.doorbell();
    }
    if r != 0 && !bad.is_null() {
        // SAFETY: the application's out pointer (the contract).
        unsafe { *bad = wr };
    }
    r
}

/// The UD address of AH `ah` for a request to `qpn` with Q_Key `qkey`.
///
/// # Safety
/// `ah` is null or readable as an `ibv_ah`.
unsafe fn ud_addr(ah: *mut ibv_ah, qpn: u32, qkey: u32) -> Option<UdAddr> {
    // SAFETY: the contract; read only once it is a live AH of ours.
    let a: &AAh = unsafe { ours(ah as *const u8, Kind::Ah, || ((*ah).context, (*ah).handle)) }.ok()?;
    let x = &a.attr;
    // SAFETY: the GID's bytes (every member of the union is 16 bytes).
    let dgid = unsafe { x.grh.dgid.raw };
    Some(UdAddr {
        remote_qpn: qpn & 0xff_ffff,
        remote_qkey: qkey,
        dgid,
        flow_label: x.grh.flow_label & 0xf_ffff,
        sgid_index: x.grh.sgid_index,
        hop_limit: x.grh.hop_limit,
        traffic_class: x.grh.traffic_class,
        is_global: x.is_global != 0,
    })
}

unsafe extern "C" fn create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    if pd.is_null() || attr.is_null() || !crate::registry::live(pd as *const u8) {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a live object of ours (checked); `attr` is the application's.
    let (context, at) = unsafe { ((*pd).context, *attr) };
    // SAFETY: as above.
    let (c, conn, h) = match unsafe { both(context).and_then(|(c, n)| Ok((c, n, pd_h(context, pd)?))) } {
        Ok(v) => v,
        Err(e) => return null_errno(e),
    };
    // The agent checks the address as the provider does (and keeps it).
    let ah_h = match conn.call(
        &Request::CreateAh {
            pd: h,
            attr: AhAttr::from(&at),
        },
        &[],
    ) {
        Ok(Reply::Ah { handle }) => handle,
        Ok(_) => return null_errno(libc::EIO),
        Err(e) => return null_errno(e),
    };
    let slot = match c.reg.reserve(Kind::Ah) {
        Ok(s) => s,
        Err(e) => {
            let _ = conn.done(&Request::DestroyAh { ah: ah_h });
            return null_errno(e);
        }
    };
    let id = c.new_obj_id();
    let b = Box::into_raw(Box::new(AAh {
        ah: ibv_ah {
            context,
            pd,
            handle: id,
        },
        attr: at,
        h: ah_h,
    }));
    slot.commit(id, b as *const u8);
    b as *mut ibv_ah
}

unsafe extern "C" fn destroy_ah(ah: *mut ibv_ah) -> c_int {
    // SAFETY: the contract; read only once it is a live object of ours.
    let a: &AAh = match unsafe { ours(ah as *const u8, Kind::Ah, || ((*ah).context, (*ah).handle)) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    // SAFETY: checked: our `AAh`, made by create_ah.
    unsafe {
        destroy(
            ah as *mut AAh,
            Kind::Ah,
            a.ah.context,
            a.ah.handle,
            Request::DestroyAh { ah: a.h },
        )
    }
}

/// Our SRQ `srq` (null: None), checked against its context's registry.
///
/// # Safety
/// `srq` is null or readable as an `ibv_srq`.
unsafe fn asrq_opt<'a>(srq: *mut ibv_srq) -> Result<Option<&'a ASrq>, c_int> {
    if srq.is_null() {
        return Ok(None);
    }
    // SAFETY: the contract; read only once it is a live object of ours.
    unsafe { ours(srq as *const u8, Kind::Srq, || ((*srq).context, (*srq).handle)).map(Some) }
}

/// Our SRQ `srq` (checked).
///
/// # Safety
/// As [`asrq_opt`].
unsafe fn asrq<'a>(srq: *mut ibv_srq) -> Result<&'a ASrq, c_int> {
    // SAFETY: the contract.
    unsafe { asrq_opt(srq) }?.ok_or(libc::EINVAL)
}

unsafe extern "C" fn create_srq(pd: *mut ibv_pd, attr: *mut ibv_srq_init_attr) -> *mut ibv_srq {
    if pd.is_null() || attr.is_null() || !crate::registry::live(pd as *const u8) {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a live object of ours (checked); `attr` is the application's.
    let (context, a) = unsafe { ((*pd).context, &mut *attr) };
    // SAFETY: as above.
    let (c, conn, pdh) = match unsafe { both(context).and_then(|(c, n)| Ok((c, n, pd_h(context, pd)?))) } {
        Ok(v) => v,
        Err(e) => return null_errno(e),
    };
    let l = Limits::WIRE;
    if a.attr.max_wr == 0 || a.attr.max_wr > l.max_wr || a.attr.max_sge > l.max_sge {
        return null_errno(libc::EINVAL);
    }
    let max_sge = a.attr.max_sge.max(1);
    let (Some(slot_size), Some(depth)) = (recv_slot_size(max_sge), depth_for(a.attr.max_wr)) else {
        return null_errno(libc::EINVAL);
    };
    let slot = match c.reg.reserve(Kind::Srq) {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    let Ok((q, fd)) = Slots::create(depth as usize, slot_size) else {
        return null_errno(libc::ENOMEM);
    };
    let b = Box::into_raw(Box::new(ASrq {
        // SAFETY: `ibv_srq` is integers, pointers and pthread objects the
        // library initialises: all-zero is valid.
        srq: unsafe { std::mem::zeroed() },
        h: 0,
        max_sge,
        q: Mutex::new(q.into_producer()),
    }));
    let req = Request::CreateSrq(CreateSrq {
        user_handle: b as u64,
        pd: Some(pdh),
        ty: SrqType::Basic,
        xrcd: None,
        cq: None,
        max_wr: a.attr.max_wr,
        max_sge: a.attr.max_sge,
        srq_limit: a.attr.srq_limit,
        queue: Queue {
            depth,
            slot_size: slot_size as u32,
        },
    });
    match conn.call(&req, &[fd.as_fd()]) {
        Ok(Reply::Srq {
            handle,
            srqn: _,
            max_wr,
            max_sge,
        }) => {
            let id = c.new_obj_id();
            // SAFETY: the fresh box, not yet visible to anyone.
            unsafe {
                (*b).h = handle;
                (*b).srq.context = context;
                (*b).srq.srq_context = a.srq_context;
                (*b).srq.pd = pd;
                (*b).srq.handle = id;
            }
            a.attr.max_wr = max_wr;
            a.attr.max_sge = max_sge;
            slot.commit(id, b as *const u8);
            b as *mut ibv_srq
        }
        // SAFETY: the box made above, never seen by anyone.
        r => unsafe { refused(b, r) },
    }
}

unsafe extern "C" fn modify_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr, mask: c_int) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let (s, conn) = match unsafe { asrq(srq).and_then(|s| Ok((s, both(s.srq.context)?.1))) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    if attr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the application's attributes (the contract).
    let a = unsafe { &*attr };
    conn.done(&Request::ModifySrq {
        srq: s.h,
        mask: mask as u32,
        max_wr: a.max_wr,
        srq_limit: a.srq_limit,
    })
}

unsafe extern "C" fn query_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let (s, conn) = match unsafe { asrq(srq).and_then(|s| Ok((s, both(s.srq.context)?.1))) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    if attr.is_null() {
        return libc::EINVAL;
    }
    match conn.call(&Request::QuerySrq { srq: s.h }, &[]) {
        Ok(Reply::SrqAttr {
            max_wr,
            max_sge,
            srq_limit,
        }) => {
            // SAFETY: the application's attributes (the contract).
            unsafe {
                (*attr).max_wr = max_wr;
                (*attr).max_sge = max_sge;
                (*attr).srq_limit = srq_limit;
            }
            0
        }
        Ok(_) => libc::EIO,
        Err(e) => e,
    }
}

unsafe extern "C" fn destroy_srq(srq: *mut ibv_srq) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let a = match unsafe { asrq(srq) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    // SAFETY: checked: our `ASrq`, made by create_srq.
    unsafe {
        destroy(
            srq as *mut ASrq,
            Kind::Srq,
            a.srq.context,
            a.srq.handle,
            Request::DestroySrq { srq: a.h },
        )
    }
}

unsafe extern "C" fn post_srq_recv(srq: *mut ibv_srq, wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    // SAFETY: the contract (an SRQ of ours).
    let s = unsafe { &*(srq as *mut ASrq) };
    let mut q = crate::sys::lock(&s.q);
    // SAFETY: the application's chain and out pointer (the contract).
    unsafe { push_recvs(&mut q, s.max_sge, wr, bad) }
}

// ----- memory windows ------------------------------------------------------
//
// A window is the agent's (`AllocMw`, `DeallocMw`); a bind or an
// invalidation is a WQE of the QP's send queue, done by the agent when it
// takes it, against the client's tables, and completed in send queue order
// (`swrdma_wired::data::run_local`), as `send/local.rs` does it at post.
// The rkey the application sees in `ibv_mw` changes at post, as `ops.rs`
// changes it, when the bind will succeed: the agent's checks
// (`Keys::bind_window`), made here first with what this process knows
// (`bind_check`); a bind that will fail leaves it, and the QP is in the
// error state for this process's verbs as it will be at the agent.

/// `ibv_alloc_mw`: `ops.rs`'s answers (a type other than 1 or 2:
/// `EINVAL`; a PD that is not a live one of ours: its errno), then the
/// agent's (`AllocMw`: the PD, the limit).
///
/// # Safety
/// As every verb: `pd` is readable as an `ibv_pd` (the library read its
/// context).
unsafe extern "C" fn alloc_mw(pd: *mut ibv_pd, ty: u32) -> *mut ibv_mw {
    let Some(mt) = MwType::from_ibv(ty) else {
        return null_errno(libc::EINVAL);
    };
    if pd.is_null() || !crate::registry::live(pd as *const u8) {
        return null_errno(libc::ENOENT); // (`valid_pd`: not read)
    }
    // SAFETY: a live object of ours (checked).
    let context = unsafe { (*pd).context };
    // SAFETY: as above.
    let (c, conn, h) = match unsafe { both(context).and_then(|(c, n)| Ok((c, n, pd_h(context, pd)?))) } {
        Ok(v) => v,
        Err(e) => return null_errno(e),
    };
    let slot = match c.reg.reserve(Kind::Mw) {
        Ok(s) => s,
        Err(e) => return null_errno(e),
    };
    let (mh, rkey) = match conn.call(&Request::AllocMw { pd: h, ty: mt }, &[]) {
        Ok(Reply::Mw { handle, rkey }) => (handle, rkey),
        Ok(_) => return null_errno(libc::EIO),
        Err(e) => return null_errno(e),
    };
    let id = c.new_obj_id();
    let m = Box::into_raw(Box::new(AMw {
        mw: ibv_mw {
            context,
            pd,
            rkey,
            handle: id,
            r#type: ty,
        },
        h: mh,
    }));
    slot.commit(id, m as *const u8);
    m as *mut ibv_mw
}

/// Our window `mw` (checked against its context's registry).
///
/// # Safety
/// `mw` is null or readable as an `ibv_mw`.
unsafe fn amw<'a>(mw: *mut ibv_mw) -> Result<&'a AMw, c_int> {
    // SAFETY: the contract; read only once it is a live object of ours.
    unsafe { ours(mw as *const u8, Kind::Mw, || ((*mw).context, (*mw).handle)) }
}

/// `ibv_dealloc_mw`: a bound window's rkey goes with it (the agent's
/// `DeallocMw`, once the WQEs posted before it are done).
///
/// # Safety
/// As every verb.
unsafe extern "C" fn dealloc_mw(mw: *mut ibv_mw) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let a = match unsafe { amw(mw) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    // SAFETY: checked: our `AMw`, made by alloc_mw.
    unsafe {
        destroy(
            mw as *mut AMw,
            Kind::Mw,
            a.mw.context,
            a.mw.handle,
            Request::DeallocMw { mw: a.h },
        )
    }
}

/// Whether `[addr, addr + len)` lies in `[start, start + size)`
/// (`swrdma_rc::keys`'s `inside`).
fn inside(addr: u64, len: u64, start: u64, size: u64) -> bool {
    addr >= start && addr.checked_add(len).is_some_and(|e| e <= start.saturating_add(size))
}

/// The `BIND_MW` WQE's bind of window `w` (whose fields are `mw`, read
/// once) through QP `a` as `info` asks, and whether the agent will do it
/// (`Keys::bind_window` and `window_entry`, from what this process knows:
/// the rights asked, a type 2 window's PD and range, the MR's PD, rights
/// and range as the agent has them).  A window or MR of another context
/// than the QP's is handle or lkey 0, which the agent has not: the bind
/// fails there as `send/local.rs` fails it.
///
/// # Safety
/// `info.mr` is null or readable as an `ibv_mr` (the verb's contract).
unsafe fn bind_check(a: &AQp, w: &AMw, mw: &ibv_mw, info: &ibv_mw_bind_info) -> (MwBind, bool) {
    let remote = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
    let access = info.mw_access_flags;
    let mine = mw.context == a.qp().context;
    let mut ok = mine && access & !(remote | IBV_ACCESS_LOCAL_WRITE) == 0;
    if mw.r#type == IBV_MW_TYPE_2 {
        // (Bound already, it would fail too: a peer's SEND with invalidate
        // unbinds it where this process does not see it, so the agent's
        // tables say.)
        // SAFETY: the QP's and the window's PDs are live PDs of ours (each
        // holds a use of its PD), read as ours once checked.
        ok &= unsafe { same_dom(a.qp().pd, mw.pd) } && info.length > 0;
    }
    let mut lkey = 0;
    if info.length > 0 {
        // SAFETY: null or the application's MR (the contract), read once
        // it is a live one of ours.
        match unsafe {
            ours::<AMr>(info.mr as *const u8, Kind::Mr, || {
                ((*info.mr).context, (*info.mr).handle)
            })
        } {
            Ok(m) if m.vmr.ibv_mr.context == a.qp().context => {
                let v = *crate::sys::lock(&m.view);
                lkey = m.vmr.ibv_mr.lkey;
                let writes = access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0;
                // SAFETY: the MR's and the window's PDs are live PDs of ours
                // (each holds a use of its PD), read as ours once checked.
                ok &= unsafe { same_dom(m.vmr.ibv_mr.pd, mw.pd) }
                    && v.access & IBV_ACCESS_MW_BIND != 0
                    && inside(info.addr, info.length, v.iova, v.len)
                    && !(writes && v.access & IBV_ACCESS_LOCAL_WRITE == 0);
            }
            _ => ok = false,
        }
    }
    let bind = MwBind {
        mw: if mine { w.h } else { 0 },
        mr_lkey: lkey,
        addr: info.addr,
        length: info.length,
        access,
    };
    // (A range that wraps does not encode: it is outside any MR.)
    if info.addr.checked_add(info.length).is_none() {
        return (MwBind { addr: 0, ..bind }, false);
    }
    (bind, ok)
}

/// What a posted bind does to the application's objects once its WQE is
/// in the queue.
enum Then {
    Nothing,
    /// The bind will succeed: the window's new rkey.
    Rkey(*mut ibv_mw, u32),
    /// It will fail: the QP goes to the error state at the agent.
    QpErr,
}

impl Then {
    /// # Safety
    /// A window named is a live one of ours, not used by the application
    /// meanwhile (the verb's contract).
    unsafe fn apply(self, a: &AQp) {
        match self {
            Then::Nothing => {}
            // SAFETY: the contract.
            Then::Rkey(mw, rkey) => unsafe { (*mw).rkey = rkey },
            Then::QpErr => a.state.store(IBV_QPS_ERR, Ordering::Release),
        }
    }
}

/// A small SEND or WRITE posted to an empty queue carries its data in the
/// entry, read now from this process into `copied` (one system call here,
/// while the agent may still be busy with the message this one answers),
/// so that the agent sends it without reading this process: one system
/// call fewer on a ping-pong's path.  Only SGEs the agent's own checks
/// pass ([`gather_direct`]; else it fails the request as before); a queue
/// with entries waiting is the agent's to read, a batch's payloads in one
/// call.  Else `data` as it is.
fn carry_small<'d>(
    a: &AQp,
    sq: &Producer,
    op: Option<SendOp>,
    sges: &[ibv_sge],
    data: Data<'d>,
    copied: &'d mut Vec<u8>,
) -> Data<'d> {
    let carries = matches!(
        op,
        Some(
            SendOp::Send
                | SendOp::SendWithImm { .. }
                | SendOp::SendWithInv { .. }
                | SendOp::RdmaWrite(_)
                | SendOp::RdmaWriteWithImm(..)
        )
    );
    if !matches!(data, Data::Sges(_)) || !carries || sq.unconsumed() != 0 {
        return data;
    }
    match gather_direct(a, sges, a.cap.max_inline_data.min(SMALL_COPY)) {
        Some(v) => {
            *copied = v;
            Data::Inline(copied)
        }
        None => data,
    }
}

/// `IBV_SEND_INLINE` exactly when the entry carries the data.
fn inline_bit(d: &Data<'_>) -> u32 {
    if matches!(d, Data::Inline(_)) {
        IBV_SEND_INLINE
    } else {
        0
    }
}

/// The most bytes of a SEND or WRITE that [`post_send`] copies into the
/// entry itself (the QP's inline room permitting: every send queue of the
/// agent has at least `Limits::min_inline`, 256).
const SMALL_COPY: u32 = 256;

/// Direct transmit (`swrdma_wired::wq`, "Direct transmit"): when the
/// agent sleeps with QP `a`'s window open (an RC QP, in RTS as `state`
/// says) and `w` is a request whose only
/// packet may go that way (an RC SEND or WRITE within the path MTU, of
/// inline data or from SGEs [`gather_direct`] can read; an RC READ of at
/// most the path MTU or an atomic of 8 bytes into SGEs [`direct_ranges`]
/// finds writable: its response comes to the agent, which places it), takes the
/// window's PSN, writes the entry marked direct (no
/// doorbell: the agent takes it when the ACK wakes it, or at the latest
/// after the ACK timeout) and sends the packet from this process.  None:
/// not this way (the caller posts as usual); Some(Err): the entry could not
/// be written, as [`push_send`]'s errors.
fn direct(
    conn: &Conn,
    a: &AQp,
    state: u32,
    sq: &mut Producer,
    b: &mut [u8],
    w: &SendWqe<'_>,
) -> Option<Result<(), c_int>> {
    if a.qp().qp_type != IBV_QPT_RC || state != IBV_QPS_RTS {
        return None;
    }
    let o = sq.dtx_offer()?;
    let p = o.path;
    let gathered;
    let (data, len) = match (w.op, w.data) {
        (SendOp::RdmaRead(_) | SendOp::CompareAndSwap { .. } | SendOp::FetchAndAdd { .. }, Data::Sges(l)) => {
            let read = matches!(w.op, SendOp::RdmaRead(_));
            let (_, len) = direct_ranges(a, &l.to_verbs(), p.pmtu, true)?;
            if !read && len != 8 {
                return None;
            }
            (&[][..], len)
        }
        (_, Data::Inline(d)) => (d, d.len() as u64),
        (_, Data::Sges(l)) => {
            gathered = gather_direct(a, &l.to_verbs(), p.pmtu)?;
            (&gathered[..], gathered.len() as u64)
        }
    };
    if len > p.pmtu as u64 {
        return None;
    }
    let r = swrdma_wired::data::direct_request(w, data, len)?;
    let sport = conn.direct_port(p.src, p.ifindex)?;
    let mut pkt = Vec::with_capacity(r.len as usize + 64);
    if !swrdma_wired::wire::engine::direct_packet(&r, p.dqpn, o.psn, p.pmtu, (p.src, sport, p.dst), &mut pkt) {
        return None;
    }
    let n = encode_send(w, &a.shape, b).ok()?;
    mark_direct(&mut b[..n]);
    if !sq.dtx_claim(&o) {
        return None;
    }
    // (The queue was empty: only a corrupt count refuses the entry.  The
    // agent then takes the window's PSN for the next entry, as nothing
    // was sent with it.)
    if sq.try_push_quiet(&b[..n]).is_err() {
        return Some(Err(libc::ENOMEM));
    }
    conn.direct_send(p.src, p.dst, p.ifindex, &pkt);
    Some(Ok(()))
}

/// The data of SGE list `sges` of QP `a` for direct transmit, at most
/// `max` bytes: each SGE of length > 0 within a live MR of the QP's
/// context and PD, not a device memory one, whose lkey it names (the
/// agent's `check_local`: a request that fails it must not reach the
/// wire), read with `process_vm_readv` from this process (an address the
/// application unmapped fails the read, not the process).  None: not this
/// way.
fn gather_direct(a: &AQp, sges: &[ibv_sge], max: u32) -> Option<Vec<u8>> {
    let (remote, total) = direct_ranges(a, sges, max, false)?;
    let mut out = vec![0u8; total as usize];
    if total == 0 {
        return Some(out);
    }
    let local = libc::iovec {
        iov_base: out.as_mut_ptr() as *mut c_void,
        iov_len: out.len(),
    };
    // SAFETY: `local` is our buffer of its length; the remote ranges are
    // read by the kernel, which fails the call for an unmapped one.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), remote.len() as _, 0) };
    (n == total as isize).then_some(out)
}

/// Where the SGE list `sges` of QP `a` lies in this process, and its
/// length, for direct transmit: at most `max` bytes, each SGE of length > 0
/// within a live MR of the QP's context and PD, not a device memory one,
/// whose lkey it names, and (`write`: a READ's or atomic's, which the
/// response is placed into) that allows local writes: the agent's
/// `check_local`, which a request must pass before it reaches the wire.
/// None: not this way.
fn direct_ranges(a: &AQp, sges: &[ibv_sge], max: u32, write: bool) -> Option<(Vec<libc::iovec>, u64)> {
    let total: u64 = sges.iter().map(|s| s.length as u64).sum();
    if total > max as u64 {
        return None;
    }
    let mut ranges = Vec::with_capacity(sges.len());
    for s in sges.iter().filter(|s| s.length > 0) {
        // SAFETY: the QP's context is one of ours (checked by the caller).
        let m = unsafe { mr_by_lkey(a.qp().context, s.lkey) }?;
        let v = *crate::sys::lock(&m.view);
        let inside = s.addr >= v.iova && s.addr.checked_add(s.length as u64)? <= v.iova.checked_add(v.len)?;
        let writable = !write || v.access & IBV_ACCESS_LOCAL_WRITE != 0;
        if !m.dm.is_null() || m.vmr.ibv_mr.pd != a.qp().pd || !inside || !writable {
            return None;
        }
        let at = s.addr - v.iova + m.vmr.ibv_mr.addr as u64;
        ranges.push(libc::iovec {
            iov_base: at as *mut c_void,
            iov_len: s.length as usize,
        });
    }
    Some((ranges, total))
}

/// Writes send WQE `w` into QP `a`'s queue `sq` (`b`: room for one):
/// whether the agent must be rung; `EINVAL` (it does not encode) or
/// `ENOMEM` (the queue is full).
fn push_send(a: &AQp, sq: &mut Producer, b: &mut [u8], w: &SendWqe<'_>) -> Result<bool, c_int> {
    let n = encode_send(w, &a.shape, b).map_err(|_| libc::EINVAL)?;
    match sq.try_push(&b[..n]) {
        Ok(Push::Ring) => Ok(true),
        Ok(Push::Quiet) => Ok(false),
        Err(_) => Err(libc::ENOMEM),
    }
}

/// The send flags of a WQE of QP `a` for request flags `flags` (signaled
/// when the QP signals all).
fn wqe_flags(a: &AQp, flags: u32) -> u32 {
    let mut f = flags & SEND_FLAGS;
    if a.sq_sig_all {
        f |= IBV_SEND_SIGNALED;
    }
    f
}

/// `ibv_bind_mw` (type 1 windows; the library refused the rest): `ops.rs`'s
/// answers (another type, a QP that is neither RC nor UC: `EINVAL`; in the
/// error state a completion flushed; not in RTS: `EINVAL`), then a
/// `BIND_MW` WQE with the window's next rkey (`ibv_inc_rkey`), which
/// `mw->rkey` is from now on when the bind will succeed.
///
/// # Safety
/// As every verb: `mw` readable as an `ibv_mw`, `b` as an `ibv_mw_bind`
/// whose MR is null or readable as an `ibv_mr`.
unsafe extern "C" fn bind_mw(qp: *mut ibv_qp, mw: *mut ibv_mw, b: *mut ibv_mw_bind) -> c_int {
    // SAFETY: the contract; each checked before it is read as ours.
    let (a, w, conn) = match unsafe { aqp(qp).and_then(|a| Ok((a, amw(mw)?, both(a.qp().context)?.1))) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    if b.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the application's bind (the contract).
    let b = unsafe { &*b };
    let m = w.mw;
    if m.r#type != IBV_MW_TYPE_1 || !matches!(a.qp().qp_type, IBV_QPT_RC | IBV_QPT_UC) {
        return libc::EINVAL;
    }
    let state = a.state.load(Ordering::Acquire);
    if state != IBV_QPS_RTS && state != IBV_QPS_ERR {
        return libc::EINVAL;
    }
    // SAFETY: the bind's MR is null or the application's (the contract).
    let (bind, ok) = unsafe { bind_check(a, w, &m, &b.bind_info) };
    let rkey = (m.rkey & !0xff) | (m.rkey.wrapping_add(1) & 0xff);
    let then = match (state, ok) {
        (IBV_QPS_ERR, _) => Then::Nothing, // (flushed by the agent)
        (_, true) => Then::Rkey(mw, rkey),
        (_, false) => Then::QpErr,
    };
    let wqe = SendWqe {
        wr_id: b.wr_id,
        op: SendOp::BindMw { rkey, bind },
        send_flags: wqe_flags(a, b.send_flags & IBV_SEND_SIGNALED),
        ud: None,
        xrc_srqn: None,
        data: Data::Sges(SgeList::from_verbs(&[])),
    };
    let mut sq = crate::sys::lock(&a.sq);
    let Some(sq) = sq.as_mut() else { return libc::EINVAL };
    let mut buf = Scratch::of(sq.capacity());
    match push_send(a, sq, &mut buf, &wqe) {
        Ok(ring) => {
            // SAFETY: `mw` is our live window (checked), the application's
            // to change only after the verb returns.
            unsafe { then.apply(a) };
            if ring {
                conn.doorbell();
            }
            0
        }
        Err(e) => e,
    }
}

/// The WQE operation of a local work request `w` (`LOCAL_INV`, `BIND_MW`)
/// on QP `a` in state `state` (RTS, SQD or ERR), with what it does to the
/// application's objects: `ops.rs`'s `post_read` and `send/local.rs`
/// (a window that is null or not of type 2: `EINVAL`, unless the QP is in
/// the error state, where the request is taken and flushed).
///
/// # Safety
/// `w` is the application's request: its window null or readable as an
/// `ibv_mw`, its MR null or readable as an `ibv_mr`.
unsafe fn local_op(a: &AQp, w: &ibv_send_wr, state: u32) -> Result<(SendOp, Then), c_int> {
    if w.opcode == IBV_WR_LOCAL_INV {
        // SAFETY: the 32 bits of `invalidate_rkey` (a union of integers).
        let rkey = unsafe { w.imm.invalidate_rkey };
        return Ok((SendOp::LocalInv { rkey }, Then::Nothing));
    }
    // SAFETY: the bind member of the union (its opcode's; plain data).
    let b = unsafe { w.bind_mw_tso.bind_mw };
    // SAFETY: the window is null or the application's (the contract),
    // read once it is a live one of ours.
    let win = unsafe { amw(b.mw) }.ok().filter(|x| x.mw.r#type == IBV_MW_TYPE_2);
    let Some(x) = win else {
        if state == IBV_QPS_ERR {
            let bind = MwBind::default();
            return Ok((SendOp::BindMw { rkey: 0, bind }, Then::Nothing));
        }
        return Err(libc::EINVAL);
    };
    let m = x.mw;
    // SAFETY: the bind's MR is null or the application's (the contract).
    let (bind, ok) = unsafe { bind_check(a, x, &m, &b.bind_info) };
    let rkey = (m.rkey & !0xff) | (b.rkey & 0xff);
    let then = match (state, ok) {
        (IBV_QPS_ERR, _) => Then::Nothing,
        (_, true) => Then::Rkey(b.mw, rkey),
        (_, false) => Then::QpErr,
    };
    Ok((SendOp::BindMw { rkey, bind }, then))
}

unsafe extern "C" fn req_notify_cq(cq: *mut ibv_cq, solicited: c_int) -> c_int {
    // SAFETY: the contract; checked before it is read as ours.
    let a = match unsafe { acq(cq) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    // (Without a channel the arm notifies nothing, as on the kernel.)
    crate::sys::lock(&a.q).q.arm(solicited != 0);
    0
}

// ----- extended SRQs, device memory MRs, advise_mr ------------------------

/// `ibv_create_srq_ex` (the library gives the provider's `create_srq` a
/// plain basic SRQ on a PD; this verb the rest): `ops.rs`'s checks (no
/// `IBV_SRQ_INIT_ATTR_PD` or no PD: `EINVAL`; an XRC SRQ without its
/// domain or CQ: `EINVAL`; tag matching: `EOPNOTSUPP`; a type that is
/// none: `EINVAL`; the PD: one of `context`'s, its errno), then the SRQ
/// `create_srq` makes, with the granted `attr` written back.  An XRC SRQ
/// with its domain and CQ is `EOPNOTSUPP` (XRC is not carried: no XRC
/// domain is made in this mode).
///
/// # Safety
/// As every verb: `attr` is null or a valid, writable init attribute.
unsafe extern "C" fn create_srq_ex(context: *mut ibv_context, attr: *mut ibv_srq_init_attr_ex) -> *mut ibv_srq {
    // SAFETY: `context` is one of ours (the contract).
    if unsafe { both(context) }.is_err() || attr.is_null() {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a valid, writable init attribute (the contract), not
    // otherwise referenced during the call.
    let a = unsafe { &mut *attr };
    let ty = if a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE != 0 {
        a.srq_type
    } else {
        IBV_SRQT_BASIC
    };
    if a.comp_mask & IBV_SRQ_INIT_ATTR_PD == 0 || a.pd.is_null() {
        return null_errno(libc::EINVAL);
    }
    match ty {
        IBV_SRQT_BASIC => {}
        IBV_SRQT_XRC => {
            let parts = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
            let e = if a.comp_mask & parts != parts || a.xrcd.is_null() || a.cq.is_null() {
                libc::EINVAL
            } else {
                libc::EOPNOTSUPP
            };
            return null_errno(e);
        }
        IBV_SRQT_TM => return null_errno(libc::EOPNOTSUPP),
        _ => return null_errno(libc::EINVAL),
    }
    // (`ops.rs` `new_srq`: the PD is one of `context`'s.)
    // SAFETY: the application's PD, checked before it is read as ours.
    if let Err(e) = unsafe { apd_of(context, a.pd) } {
        return null_errno(e);
    }
    let mut init = ibv_srq_init_attr {
        srq_context: a.srq_context,
        attr: a.attr,
    };
    // SAFETY: `a.pd` is a live PD of `context`; `init` a complete init
    // attribute.
    let srq = unsafe { create_srq(a.pd, &mut init) };
    if srq.is_null() {
        return srq;
    }
    a.attr = init.attr;
    // SAFETY: our fresh SRQ (made by create_srq: an `ASrq`), not yet the
    // application's; its pthread objects are initialised in place, where
    // the library expects them (`ibv_create_srq_ex` does not; `create_srq`
    // had the library's `ibv_create_srq` do it).
    unsafe {
        libc::pthread_mutex_init(&mut (*srq).mutex, std::ptr::null());
        libc::pthread_cond_init(&mut (*srq).cond, std::ptr::null());
    }
    srq
}

/// `ibv_reg_dm_mr`: `ops.rs`'s checks in its order (the PD: a live one of
/// ours, its errno; no `IBV_ACCESS_ZERO_BASED`, a right a DM MR does not
/// take, a DM of another context; remote write or atomic rights without
/// local write; a range past the DM's end: `EINVAL`; the limit), then the
/// agent's `RegMr` of the DM's memory (an anonymous mapping of this
/// process, `ops.rs` `alloc_dm`, which the agent reaches as any other) at
/// I/O virtual address 0: the MR's users name it from 0.  The DM counts
/// the MR until its `dereg_mr` (`free_dm`: `EBUSY` meanwhile).
///
/// # Safety
/// As every verb: `dm` is null or a live DM of ours (`ops.rs` `alloc_dm`).
unsafe extern "C" fn reg_dm_mr(pd: *mut ibv_pd, dm: *mut ibv_dm, off: u64, length: usize, access: u32) -> *mut ibv_mr {
    if pd.is_null() {
        return null_errno(libc::EINVAL);
    }
    if !crate::registry::live(pd as *const u8) {
        return null_errno(libc::ENOENT); // (`valid_pd`: not read)
    }
    // SAFETY: a live object of ours (checked).
    let context = unsafe { (*pd).context };
    // SAFETY: as above.
    let (c, conn, h) = match unsafe { both(context).and_then(|(c, n)| Ok((c, n, pd_h(context, pd)?))) } {
        Ok(v) => v,
        Err(e) => return null_errno(e),
    };
    if dm.is_null() {
        return null_errno(libc::EINVAL);
    }
    // SAFETY: a live DM of ours (the contract): the start of an `SwDm`.
    let d = unsafe { &*(dm as *const SwDm) };
    let allowed = IBV_ACCESS_ZERO_BASED
        | IBV_ACCESS_LOCAL_WRITE
        | IBV_ACCESS_REMOTE_WRITE
        | IBV_ACCESS_REMOTE_READ
        | IBV_ACCESS_REMOTE_ATOMIC;
    if access & IBV_ACCESS_ZERO_BASED == 0 || access & !allowed != 0 || d.dm.context != context {
        return null_errno(libc::EINVAL);
    }
    if access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0 && access & IBV_ACCESS_LOCAL_WRITE == 0 {
        return null_errno(libc::EINVAL);
    }
    if off.checked_add(length as u64).is_none_or(|e| e > d.len as u64) {
        return null_errno(libc::EINVAL);
    }
    // (A range of no bytes covers no page: the agent's `reg_mr` refuses
    // one at a page boundary, as a kernel pinning pages would; a DM MR
    // pins nothing, and `ops.rs` takes it.  It is given at the DM's second
    // byte, inside its mapping, where it covers nothing either.)
    let at = if length == 0 { 1 } else { off };
    let req = RegMr {
        pd: h,
        access: access & !IBV_ACCESS_ZERO_BASED,
        addr: d.base as u64 + at,
        length: length as u64,
        iova: 0,
    };
    // SAFETY: `pd` is a live PD of `context` (checked), `dm` a live `SwDm`
    // of it (the contract, and checked).
    unsafe { new_mr(c, conn, pd, req, std::ptr::null_mut(), length, dm as *mut SwDm) }
}

/// `ibv_advise_mr`: nothing to prefetch (the owner's page faults do it),
/// but `ops.rs`'s checks: an advice or flag it does not know, no SGE
/// (`EINVAL`); the PD, a live one of ours (its errno); then each SGE: its
/// lkey an MR of the PD's protection domain registered with
/// `IBV_ACCESS_ON_DEMAND`, its range inside the MR's, and local write
/// rights for `PREFETCH_WRITE` (else `EINVAL`).
///
/// # Safety
/// As every verb: `sg` is null or holds `n` readable SGEs.
unsafe extern "C" fn advise_mr(pd: *mut ibv_pd, advice: u32, flags: u32, sg: *mut ibv_sge, n: u32) -> c_int {
    if !matches!(
        advice,
        IBV_ADVISE_MR_ADVICE_PREFETCH | IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE | IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
    ) || flags & !IBV_ADVISE_MR_FLAG_FLUSH != 0
        || n == 0
        || sg.is_null()
    {
        return libc::EINVAL;
    }
    // SAFETY: the application's PD, checked before it is read as ours.
    let p = match unsafe { ours::<APd>(pd as *const u8, Kind::Pd, || ((*pd).context, (*pd).handle)) } {
        Ok(p) => p,
        Err(e) => return e,
    };
    // SAFETY: `sg` (checked non-null) holds `n` SGEs (the contract).
    let sgl = unsafe { std::slice::from_raw_parts(sg, n as usize) };
    for s in sgl {
        // SAFETY: the PD's context is ours (a live object's).
        let Some(m) = (unsafe { mr_by_lkey(p.pd.context, s.lkey) }) else {
            return libc::EINVAL;
        };
        let v = *crate::sys::lock(&m.view);
        // SAFETY: the MR's PD is a live PD of ours (the MR holds a use).
        if unsafe { dom_of(m.vmr.ibv_mr.pd) } != Some(p.dom) || v.access & IBV_ACCESS_ON_DEMAND == 0 {
            return libc::EINVAL;
        }
        if !inside(s.addr, s.length as u64, v.iova, v.len) {
            return libc::EINVAL;
        }
        if advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE && v.access & IBV_ACCESS_LOCAL_WRITE == 0 {
            return libc::EINVAL;
        }
    }
    0
}

/// The provider's `free_context` (`ops.rs`), once the context's MRs left
/// in the lkey table (an application need not deregister them) are out
/// of it.
///
/// # Safety
/// As `ops.rs`'s: the library calls it once, last, with one of our
/// contexts.
unsafe extern "C" fn free_context(context: *mut ibv_context) {
    crate::sys::lock(&MR_KEYS).retain(|&(c, _), _| c != context as usize);
    if let Some(f) = crate::ops::OPS.free_context {
        // SAFETY: the contract, forwarded.
        unsafe { f(context) };
    }
}

// ----- what is not carried through the agent yet ---------------------------

unsafe extern "C" fn no_xrcd(_c: *mut ibv_context, _a: *mut ibv_xrcd_init_attr) -> *mut ibv_xrcd {
    null_errno(libc::EOPNOTSUPP)
}

unsafe extern "C" fn no_close_xrcd(_x: *mut ibv_xrcd) -> c_int {
    libc::EOPNOTSUPP
}

unsafe extern "C" fn no_srq_num(_s: *mut ibv_srq, _n: *mut u32) -> c_int {
    libc::EOPNOTSUPP
}

/// The verbs of a wire context through the agent: the provider's own
/// table (`ops::OPS`) for what needs no object of the agent's (device,
/// port, thread domains, device memory itself, the context's end, after
/// `free_context` above), the verbs above for the objects, and the
/// documented failure for the rest (never an object of the other table).
pub fn ops() -> verbs_context_ops {
    let mut o = crate::ops::OPS;
    o.alloc_pd = Some(alloc_pd);
    o.dealloc_pd = Some(dealloc_pd);
    o.alloc_parent_domain = Some(alloc_parent_domain);
    o.reg_mr = Some(reg_mr);
    o.dereg_mr = Some(dereg_mr);
    o.rereg_mr = Some(rereg_mr);
    o.reg_dm_mr = Some(reg_dm_mr);
    o.alloc_mw = Some(alloc_mw);
    o.dealloc_mw = Some(dealloc_mw);
    o.bind_mw = Some(bind_mw);
    o.advise_mr = Some(advise_mr);
    o.create_ah = Some(create_ah);
    o.destroy_ah = Some(destroy_ah);
    o.attach_mcast = Some(attach_mcast);
    o.detach_mcast = Some(detach_mcast);
    o.open_xrcd = Some(no_xrcd);
    o.close_xrcd = Some(no_close_xrcd);
    o.create_cq = Some(create_cq);
    o.create_cq_ex = Some(create_cq_ex);
    o.poll_cq = Some(poll_cq);
    o.req_notify_cq = Some(req_notify_cq);
    o.destroy_cq = Some(destroy_cq);
    o.resize_cq = Some(resize_cq);
    o.create_srq = Some(create_srq);
    o.create_srq_ex = Some(create_srq_ex);
    o.modify_srq = Some(modify_srq);
    o.query_srq = Some(query_srq);
    o.destroy_srq = Some(destroy_srq);
    o.get_srq_num = Some(no_srq_num);
    o.post_srq_recv = Some(post_srq_recv);
    o.create_qp = Some(create_qp);
    o.create_qp_ex = Some(create_qp_ex);
    o.modify_qp = Some(modify_qp);
    o.query_qp = Some(query_qp);
    o.destroy_qp = Some(destroy_qp);
    o.post_send = Some(post_send);
    o.post_recv = Some(post_recv);
    o.free_context = Some(free_context);
    o
}

/// The agent's table, made once.
static AGENT_OPS: std::sync::LazyLock<verbs_context_ops> = std::sync::LazyLock::new(ops);

extern "C" {
    #[link_name = "verbs_set_ops@IBVERBS_PRIVATE_34"]
    fn verbs_set_ops(vctx: *mut verbs_context, ops: *const verbs_context_ops);
}

/// The provider's `alloc_context` (`ops::alloc_context`), then, for a
/// wire context through the agent, this module's verbs over the table
/// (every one of its object verbs is set: `verbs_set_ops` only replaces
/// what a table names).
///
/// # Safety
/// As `ops::alloc_context`.
pub unsafe extern "C" fn alloc_context(
    device: *mut ibv_device,
    cmd_fd: c_int,
    private: *mut c_void,
) -> *mut verbs_context {
    // SAFETY: the contract.
    let v = unsafe { crate::ops::alloc_context(device, cmd_fd, private) };
    // SAFETY: a context `ops::alloc_context` made: the `verbs_context` at
    // the start of a live `SwCtx`, not yet the application's.
    unsafe {
        if !v.is_null() && !(*(v as *mut SwCtx)).agent.is_null() {
            verbs_set_ops(v, &*AGENT_OPS);
        }
    }
    v
}
