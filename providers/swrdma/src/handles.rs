//! The provider's objects behind the verbs handles (each starts with the
//! libibverbs structure the application holds, so a handle is a pointer to
//! its object), the device's limits, and the accessors from a handle to
//! its object.  The bottom layer of the verbs: it uses no other module of
//! the verbs (ops, qpex, send, poll).

use crate::context::{Cq, Ctx, Qp, Srq};
pub use crate::registry::Kind;
use ibverbs_abi::*;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

// The device's limits: query_device_ex reports them, the create verbs hold
// the application to them.
pub const MAX_WR: u32 = 16384;
pub const MAX_SGE: u32 = 32;
pub const MAX_INLINE: u32 = 1024;
pub const MTU_BYTES: u64 = 4096;
pub const MAX_CQE: c_int = 1 << 20;
pub const MAX_DM: usize = 256 * 1024;

#[repr(C)]
pub struct SwCtx {
    pub vctx: verbs_context,
    pub ctx: *const Ctx,
    pub thread: *mut Option<std::thread::JoinHandle<()>>,
    /// A wire context through the transport agent: the `Arc::into_raw` of
    /// its connection (`agentops.rs`); null otherwise.
    pub agent: *const crate::agentconn::Conn,
}

#[repr(C)]
pub struct SwPd {
    pub pd: ibv_pd,
    pub id: u32,
    /// The objects made in this PD and not destroyed (MRs, MWs, QPs, AHs,
    /// SRQs, parent domains over it): dealloc_pd refuses with EBUSY while
    /// any lives, as the kernel's use counts make it.
    pub users: AtomicU32,
    /// A parent domain: the PD it wraps (and holds a use of); else null.
    pub parent: *mut ibv_pd,
}

/// One more (`up`) or one fewer object lives in PD `pd` (null: none).
///
/// # Safety
/// `pd` is null or one of our live `SwPd`s.
pub unsafe fn pd_use(pd: *mut ibv_pd, up: bool) {
    if pd.is_null() {
        return;
    }
    // SAFETY: a live `SwPd` (the contract); `users` is atomic.
    let u = unsafe { &(*(pd as *mut SwPd)).users };
    if up {
        u.fetch_add(1, Ordering::SeqCst);
    } else {
        u.fetch_sub(1, Ordering::SeqCst);
    }
}

#[repr(C)]
pub struct SwMr {
    pub vmr: verbs_mr,
    pub dm: *mut SwDm,
}

/// Device memory: memory of the provider (no other way in than
/// ibv_memcpy_to/from_dm and zero-based DM MRs).
#[repr(C)]
pub struct SwDm {
    pub dm: ibv_dm,
    pub base: *mut u8,
    pub len: usize,
    pub mrs: AtomicU32,
}

#[repr(C)]
pub struct SwCq {
    pub vcq: verbs_cq,
    pub cq: *const Cq,
    pub ctx: *const Ctx,
    pub cur: ibv_wc,
}

#[repr(C)]
pub struct SwSrq {
    pub vsrq: verbs_srq,
    pub srq: *const Srq,
}

#[repr(C)]
pub struct SwXrcd {
    pub vx: verbs_xrcd,
    pub id: u32,
    /// XRC SRQs and XRC target QPs made in it and not destroyed: while any
    /// is, the domain cannot be closed (EBUSY, as the kernel's
    /// `ib_uverbs_dealloc_xrcd`).
    pub users: std::sync::atomic::AtomicU32,
}

#[repr(C)]
pub struct SwQp {
    pub vqp: verbs_qp,
    pub qp: *const Qp,
    pub ctx: *const Ctx,
    pub wrs: *mut WrList,
}

#[repr(C)]
pub struct SwAh {
    pub ah: ibv_ah,
    pub attr: ibv_ah_attr,
}

/// # Safety
/// `c` is the `ibv_context` inside a live `SwCtx` made by `alloc_context`.
pub unsafe fn ctx_of<'a>(c: *mut ibv_context) -> &'a Ctx {
    // SAFETY: `c` lies `offset_of!(verbs_context, context)` bytes into the `SwCtx`'s `vctx` (its
    // first field), so stepping back gives the live `SwCtx`; its `ctx` is the `Arc<Ctx>` raw
    // pointer stored by `make_ctx`, released only by `free_context`.
    unsafe {
        let v = (c as *mut u8).sub(std::mem::offset_of!(verbs_context, context)) as *mut SwCtx;
        &*(*v).ctx
    }
}
/// # Safety
/// `pd` is the `ibv_pd` of a live `SwPd` (alloc_pd / alloc_parent_domain).
pub unsafe fn pd_id(pd: *mut ibv_pd) -> u32 {
    // SAFETY: `pd` is the first field of a live `SwPd` (the contract).
    unsafe { (*(pd as *mut SwPd)).id }
}
/// # Safety
/// `cq` is the `ibv_cq` of a live `SwCq` (new_cq).
pub unsafe fn cq_of<'a>(cq: *mut ibv_cq) -> &'a SwCq {
    // SAFETY: `cq` is the start of a live `SwCq` (`vcq` is its first field, and `ibv_cq` the prefix
    // of `verbs_cq`).
    unsafe { &*(cq as *mut SwCq) }
}
/// # Safety
/// `cq` is null or the `ibv_cq` of a live `SwCq`.
pub unsafe fn cq_arc(cq: *mut ibv_cq) -> Option<Arc<Cq>> {
    // SAFETY: `cq` is non-null, so a live `SwCq` whose `cq` is the `Arc::into_raw` of new_cq, still
    // owned by it: adding a count before `from_raw` leaves that reference intact.
    unsafe {
        if cq.is_null() {
            return None;
        }
        let p = (*(cq as *mut SwCq)).cq;
        Arc::increment_strong_count(p);
        Some(Arc::from_raw(p))
    }
}
/// # Safety
/// `srq` is null or the `ibv_srq` of a live `SwSrq`.
pub unsafe fn srq_arc(srq: *mut ibv_srq) -> Option<Arc<Srq>> {
    // SAFETY: `srq` is non-null, so a live `SwSrq` whose `srq` is the `Arc::into_raw` of new_srq,
    // still owned by it: adding a count before `from_raw` leaves that reference intact.
    unsafe {
        if srq.is_null() {
            return None;
        }
        let p = (*(srq as *mut SwSrq)).srq;
        Arc::increment_strong_count(p);
        Some(Arc::from_raw(p))
    }
}
/// # Safety
/// `qp` is the `ibv_qp` of a live `SwQp` (create_qp_ex), whose context outlives the returned reference.
pub unsafe fn qp_of<'a>(qp: *mut ibv_qp) -> (&'a Ctx, Arc<Qp>) {
    // SAFETY: `qp` is the start of a live `SwQp` (`vqp` first, `ibv_qp` the prefix of `verbs_qp`);
    // its `qp` is the `Arc::into_raw` of create_qp_ex (a count is added, so the SwQp keeps its own)
    // and `ctx` the context's `Ctx`, alive until free_context, after the QP is gone.
    unsafe {
        let s = &*(qp as *mut SwQp);
        Arc::increment_strong_count(s.qp);
        (&*s.ctx, Arc::from_raw(s.qp))
    }
}

/// `qp_of` without taking a count: for the verbs that post work, called
/// for every request (the count's two atomic operations are a tenth of a
/// small send).  The `Arc` is borrowed from the `SwQp`, which keeps its
/// own count until `destroy_qp`, and the application may not destroy a
/// QP while a verb on it runs; it is never dropped (`ManuallyDrop`), and a
/// clone of it takes a count of its own.
///
/// # Safety
/// As `qp_of`, and the returned value is not kept past the verb's call.
pub unsafe fn qp_ref<'a>(qp: *mut ibv_qp) -> (&'a Ctx, std::mem::ManuallyDrop<Arc<Qp>>) {
    // SAFETY: as in `qp_of`; no count is added, so the result must not be
    // dropped (ManuallyDrop) nor outlive the `SwQp` (the contract).
    unsafe {
        let s = &*(qp as *mut SwQp);
        (&*s.ctx, std::mem::ManuallyDrop::new(Arc::from_raw(s.qp)))
    }
}

/// Sets this thread's `errno` (how the verbs that return a pointer say why
/// they returned null).
pub fn set_errno(e: c_int) {
    // SAFETY: `__errno_location` returns this thread's errno slot, always
    // valid for writing.
    unsafe { *libc::__errno_location() = e };
}

/// # Safety
/// `srq` is the `ibv_srq` of a live `SwSrq`.
pub unsafe fn srq_of<'a>(srq: *mut ibv_srq) -> &'a Srq {
    // SAFETY: `srq` is the start of a live `SwSrq` whose `srq` is its live `Arc<Srq>` (the
    // contract).
    unsafe { &*(*(srq as *mut SwSrq)).srq }
}

/// The address vector of the address handle `ah` (None: `ah` is null).
///
/// # Safety
/// `ah` is null or the `ibv_ah` of a live `SwAh` (create_ah) that outlives
/// the returned reference.
pub unsafe fn ah_attr_of<'a>(ah: *mut ibv_ah) -> Option<&'a ibv_ah_attr> {
    let ah = ah as *mut SwAh;
    if ah.is_null() {
        return None;
    }
    // SAFETY: `ah` is non-null, so one of our `SwAh`s (the contract:
    // `ibv_ah` is its first field), live during the call.
    Some(unsafe { &(*ah).attr })
}

/// The work requests being built on an extended QP (`ibv_wr_start` ..
/// `ibv_wr_complete`, qpex.rs), with their scatter/gather lists and the
/// copies of their inline data; kept in the `SwQp` (`wrs`).
#[derive(Default)]
pub struct WrList {
    pub wrs: Vec<ibv_send_wr>,
    pub sges: Vec<Vec<ibv_sge>>,
    pub bufs: Vec<Vec<u8>>,
}

/// Whether the object at `p` (of kind `k`, whose verbs structure says
/// `context` and `handle`) is one of `context`'s live objects; else the
/// errno the kernel's lookup of the handle gives (registry.rs).
///
/// # Safety
/// `context` is one of our contexts.
pub unsafe fn valid(context: *mut ibv_context, k: Kind, handle: u32, p: *const u8) -> Result<(), c_int> {
    if !crate::registry::live(p) {
        return Err(libc::ENOENT);
    }
    // SAFETY: `context` is ours (the contract).
    unsafe { ctx_of(context) }.reg.check(k, handle, p)
}

/// `valid` for `pd` (non-null), in `context` (its own context when
/// `context` is null).
///
/// # Safety
/// `pd` is non-null and readable as an `ibv_pd`; `context` is null or one of ours, and so is the PD's.
pub unsafe fn valid_pd(context: *mut ibv_context, pd: *mut ibv_pd) -> Result<(), c_int> {
    // SAFETY: `pd` is readable and the contexts ours (the contract).
    unsafe {
        let c = if context.is_null() { (*pd).context } else { context };
        valid(c, Kind::Pd, (*pd).handle, pd as *const u8)
    }
}

/// `valid` for `cq` (null: Ok).
///
/// # Safety
/// `cq` is null or readable as an `ibv_cq`; `context` is one of ours.
pub unsafe fn valid_cq(context: *mut ibv_context, cq: *mut ibv_cq) -> Result<(), c_int> {
    if cq.is_null() {
        return Ok(());
    }
    // SAFETY: as the contract says.
    unsafe { valid(context, Kind::Cq, (*cq).handle, cq as *const u8) }
}

/// `valid` for `srq` (null: Ok).
///
/// # Safety
/// `srq` is null or readable as an `ibv_srq`; `context` is one of ours.
pub unsafe fn valid_srq(context: *mut ibv_context, srq: *mut ibv_srq) -> Result<(), c_int> {
    if srq.is_null() {
        return Ok(());
    }
    // SAFETY: as the contract says.
    unsafe { valid(context, Kind::Srq, (*srq).handle, srq as *const u8) }
}
