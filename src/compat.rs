//! The names that exist in two versions: the `IBVERBS_1.0` originals
//! (compat, `name@IBVERBS_1.0`) beside the `IBVERBS_1.1` defaults
//! (`name@@IBVERBS_1.1`), plus `ibv_register_driver@IBVERBS_1.1`.
//!
//! Both definitions of each name are bound with `.symver`; the Rust symbols
//! behind them (`__<name>_1_0`, `__<name>_1_1`) are local to the shared
//! object (symbols.map ends IBVERBS_1.0 with `local: *`).  `.symver` needs the
//! definitions in the same object file as this assembly, which the release
//! profile guarantees (one codegen unit, LTO).
//!
//! # The IBVERBS_1.0 ABI
//!
//! Binaries linked against libibverbs 1.0 know older object layouts: every
//! object they see is a small wrapper (`ibv_context_1_0`, `ibv_pd_1_0`,
//! `ibv_cq_1_0` …, below) that points at the real object, and the wrappers
//! are what the 1.0 entry points take and return.  The translation follows
//! upstream's compat layer:
//!
//! * every 1.0 constructor allocates the wrapper, creates the real object
//!   through the current entry point and links the two; the real CQ's
//!   `cq_context`, QP's `qp_context` and SRQ's `srq_context` are pointed at
//!   the wrapper (the application's own context pointer lives in the
//!   wrapper), which is how completion and asynchronous events find their
//!   way back to the 1.0 objects;
//! * `ibv_context_1_0.ops` carries the data-path entries that 1.0's inline
//!   functions call (`poll_cq`, `req_notify_cq`, `post_send`, `post_recv`,
//!   `post_srq_recv`): wrappers that translate the old CQ/QP/SRQ and the old
//!   work-request lists (`next` before `wr_id`, no XRC/bind/TSO members, UD
//!   address handles that are 1.0 wrappers) to the real ones, and a failed
//!   real work request back to the caller's;
//! * a destructor frees the wrapper only when the real object went away.
//!
//! Where upstream leaves a wrapper field uninitialised (the handles, the
//! context's fds and vector count, the QP state, the unused op slots) the
//! wrappers here are zeroed and carry the real object's value, and NULL
//! arguments fail with `EINVAL` instead of crashing.

use std::mem::size_of;
use std::os::raw::{c_char, c_int, c_uint, c_void};
use std::ptr::null_mut;

use crate::abi::*;
use crate::api::{cq as api_cq, device as api_dev, list as api_list, mr as api_mr, qp as api_qp};
use crate::ffi::{guard, set_errno};
// IBVERBS_1.0 knows the same QP and SRQ events; WQ events postdate it and
// have no class (passed through).
use crate::verbs::event::{is_qp_event, is_srq_event};
use crate::verbs::null_errno;

// Not in unit-test builds: they link no shared object, and the test
// harness splits the crate into several object files.
#[cfg(not(test))]
std::arch::global_asm!(
    ".symver __ibv_ack_async_event_1_0, ibv_ack_async_event@IBVERBS_1.0",
    ".symver __ibv_ack_async_event_1_1, ibv_ack_async_event@@IBVERBS_1.1",
    ".symver __ibv_ack_cq_events_1_0, ibv_ack_cq_events@IBVERBS_1.0",
    ".symver __ibv_ack_cq_events_1_1, ibv_ack_cq_events@@IBVERBS_1.1",
    ".symver __ibv_alloc_pd_1_0, ibv_alloc_pd@IBVERBS_1.0",
    ".symver __ibv_alloc_pd_1_1, ibv_alloc_pd@@IBVERBS_1.1",
    ".symver __ibv_attach_mcast_1_0, ibv_attach_mcast@IBVERBS_1.0",
    ".symver __ibv_attach_mcast_1_1, ibv_attach_mcast@@IBVERBS_1.1",
    ".symver __ibv_close_device_1_0, ibv_close_device@IBVERBS_1.0",
    ".symver __ibv_close_device_1_1, ibv_close_device@@IBVERBS_1.1",
    ".symver __ibv_create_ah_1_0, ibv_create_ah@IBVERBS_1.0",
    ".symver __ibv_create_ah_1_1, ibv_create_ah@@IBVERBS_1.1",
    ".symver __ibv_create_cq_1_0, ibv_create_cq@IBVERBS_1.0",
    ".symver __ibv_create_cq_1_1, ibv_create_cq@@IBVERBS_1.1",
    ".symver __ibv_create_qp_1_0, ibv_create_qp@IBVERBS_1.0",
    ".symver __ibv_create_qp_1_1, ibv_create_qp@@IBVERBS_1.1",
    ".symver __ibv_create_srq_1_0, ibv_create_srq@IBVERBS_1.0",
    ".symver __ibv_create_srq_1_1, ibv_create_srq@@IBVERBS_1.1",
    ".symver __ibv_dealloc_pd_1_0, ibv_dealloc_pd@IBVERBS_1.0",
    ".symver __ibv_dealloc_pd_1_1, ibv_dealloc_pd@@IBVERBS_1.1",
    ".symver __ibv_dereg_mr_1_0, ibv_dereg_mr@IBVERBS_1.0",
    ".symver __ibv_dereg_mr_1_1, ibv_dereg_mr@@IBVERBS_1.1",
    ".symver __ibv_destroy_ah_1_0, ibv_destroy_ah@IBVERBS_1.0",
    ".symver __ibv_destroy_ah_1_1, ibv_destroy_ah@@IBVERBS_1.1",
    ".symver __ibv_destroy_cq_1_0, ibv_destroy_cq@IBVERBS_1.0",
    ".symver __ibv_destroy_cq_1_1, ibv_destroy_cq@@IBVERBS_1.1",
    ".symver __ibv_destroy_qp_1_0, ibv_destroy_qp@IBVERBS_1.0",
    ".symver __ibv_destroy_qp_1_1, ibv_destroy_qp@@IBVERBS_1.1",
    ".symver __ibv_destroy_srq_1_0, ibv_destroy_srq@IBVERBS_1.0",
    ".symver __ibv_destroy_srq_1_1, ibv_destroy_srq@@IBVERBS_1.1",
    ".symver __ibv_detach_mcast_1_0, ibv_detach_mcast@IBVERBS_1.0",
    ".symver __ibv_detach_mcast_1_1, ibv_detach_mcast@@IBVERBS_1.1",
    ".symver __ibv_free_device_list_1_0, ibv_free_device_list@IBVERBS_1.0",
    ".symver __ibv_free_device_list_1_1, ibv_free_device_list@@IBVERBS_1.1",
    ".symver __ibv_get_async_event_1_0, ibv_get_async_event@IBVERBS_1.0",
    ".symver __ibv_get_async_event_1_1, ibv_get_async_event@@IBVERBS_1.1",
    ".symver __ibv_get_cq_event_1_0, ibv_get_cq_event@IBVERBS_1.0",
    ".symver __ibv_get_cq_event_1_1, ibv_get_cq_event@@IBVERBS_1.1",
    ".symver __ibv_get_device_guid_1_0, ibv_get_device_guid@IBVERBS_1.0",
    ".symver __ibv_get_device_guid_1_1, ibv_get_device_guid@@IBVERBS_1.1",
    ".symver __ibv_get_device_list_1_0, ibv_get_device_list@IBVERBS_1.0",
    ".symver __ibv_get_device_list_1_1, ibv_get_device_list@@IBVERBS_1.1",
    ".symver __ibv_get_device_name_1_0, ibv_get_device_name@IBVERBS_1.0",
    ".symver __ibv_get_device_name_1_1, ibv_get_device_name@@IBVERBS_1.1",
    ".symver __ibv_modify_qp_1_0, ibv_modify_qp@IBVERBS_1.0",
    ".symver __ibv_modify_qp_1_1, ibv_modify_qp@@IBVERBS_1.1",
    ".symver __ibv_modify_srq_1_0, ibv_modify_srq@IBVERBS_1.0",
    ".symver __ibv_modify_srq_1_1, ibv_modify_srq@@IBVERBS_1.1",
    ".symver __ibv_open_device_1_0, ibv_open_device@IBVERBS_1.0",
    ".symver __ibv_open_device_1_1, ibv_open_device@@IBVERBS_1.1",
    ".symver __ibv_query_device_1_0, ibv_query_device@IBVERBS_1.0",
    ".symver __ibv_query_device_1_1, ibv_query_device@@IBVERBS_1.1",
    ".symver __ibv_query_gid_1_0, ibv_query_gid@IBVERBS_1.0",
    ".symver __ibv_query_gid_1_1, ibv_query_gid@@IBVERBS_1.1",
    ".symver __ibv_query_pkey_1_0, ibv_query_pkey@IBVERBS_1.0",
    ".symver __ibv_query_pkey_1_1, ibv_query_pkey@@IBVERBS_1.1",
    ".symver __ibv_query_port_1_0, ibv_query_port@IBVERBS_1.0",
    ".symver __ibv_query_port_1_1, ibv_query_port@@IBVERBS_1.1",
    ".symver __ibv_query_qp_1_0, ibv_query_qp@IBVERBS_1.0",
    ".symver __ibv_query_qp_1_1, ibv_query_qp@@IBVERBS_1.1",
    ".symver __ibv_query_srq_1_0, ibv_query_srq@IBVERBS_1.0",
    ".symver __ibv_query_srq_1_1, ibv_query_srq@@IBVERBS_1.1",
    ".symver __ibv_reg_mr_1_0, ibv_reg_mr@IBVERBS_1.0",
    ".symver __ibv_reg_mr_1_1, ibv_reg_mr@@IBVERBS_1.1",
    ".symver __ibv_resize_cq_1_0, ibv_resize_cq@IBVERBS_1.0",
    ".symver __ibv_resize_cq_1_1, ibv_resize_cq@@IBVERBS_1.1",
    ".symver __ibv_register_driver_1_1, ibv_register_driver@IBVERBS_1.1",
);

// ---------------------------------------------------------------------------
// The 1.0 object layouts
// ---------------------------------------------------------------------------

/// `struct ibv_device_1_0`: two obsolete pointers, the real device, and the
/// old two-entry ops table.
#[repr(C)]
pub struct ibv_device_1_0 {
    pub obsolete_sysfs_dev: *mut c_void,
    pub obsolete_sysfs_ibdev: *mut c_void,
    pub real_device: *mut ibv_device,
    pub _ops: [*mut c_void; 2],
}

/// An op slot of `ibv_context_ops_1_0` that the 1.0 ABI never filled.
pub type UnusedOp = Option<unsafe extern "C" fn()>;

/// `struct ibv_context_ops_1_0`: the op table 1.0's inline functions call.
/// Only the five data-path entries are set (as upstream).
#[repr(C)]
pub struct ibv_context_ops_1_0 {
    pub query_device: UnusedOp,
    pub query_port: UnusedOp,
    pub alloc_pd: UnusedOp,
    pub dealloc_pd: UnusedOp,
    pub reg_mr: UnusedOp,
    pub dereg_mr: UnusedOp,
    pub create_cq: UnusedOp,
    pub poll_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq_1_0, num_entries: c_int, wc: *mut ibv_wc) -> c_int>,
    pub req_notify_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq_1_0, solicited_only: c_int) -> c_int>,
    pub cq_event: UnusedOp,
    pub resize_cq: UnusedOp,
    pub destroy_cq: UnusedOp,
    pub create_srq: UnusedOp,
    pub modify_srq: UnusedOp,
    pub query_srq: UnusedOp,
    pub destroy_srq: UnusedOp,
    pub post_srq_recv: Option<
        unsafe extern "C" fn(
            srq: *mut ibv_srq_1_0,
            wr: *mut ibv_recv_wr_1_0,
            bad_wr: *mut *mut ibv_recv_wr_1_0,
        ) -> c_int,
    >,
    pub create_qp: UnusedOp,
    pub query_qp: UnusedOp,
    pub modify_qp: UnusedOp,
    pub destroy_qp: UnusedOp,
    pub post_send: Option<
        unsafe extern "C" fn(qp: *mut ibv_qp_1_0, wr: *mut ibv_send_wr_1_0, bad_wr: *mut *mut ibv_send_wr_1_0) -> c_int,
    >,
    pub post_recv: Option<
        unsafe extern "C" fn(qp: *mut ibv_qp_1_0, wr: *mut ibv_recv_wr_1_0, bad_wr: *mut *mut ibv_recv_wr_1_0) -> c_int,
    >,
    pub create_ah: UnusedOp,
    pub destroy_ah: UnusedOp,
    pub attach_mcast: UnusedOp,
    pub detach_mcast: UnusedOp,
}

/// `struct ibv_context_1_0`; `real_context` sits where 1.0 had `abi_compat`.
#[repr(C)]
pub struct ibv_context_1_0 {
    pub device: *mut ibv_device_1_0,
    pub ops: ibv_context_ops_1_0,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
    pub real_context: *mut ibv_context,
}

/// `struct ibv_pd_1_0`
#[repr(C)]
pub struct ibv_pd_1_0 {
    pub context: *mut ibv_context_1_0,
    pub handle: u32,
    pub real_pd: *mut ibv_pd,
}

/// `struct ibv_mr_1_0`
#[repr(C)]
pub struct ibv_mr_1_0 {
    pub context: *mut ibv_context_1_0,
    pub pd: *mut ibv_pd_1_0,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
    pub real_mr: *mut ibv_mr,
}

/// `struct ibv_srq_1_0`
#[repr(C)]
pub struct ibv_srq_1_0 {
    pub context: *mut ibv_context_1_0,
    pub srq_context: *mut c_void,
    pub pd: *mut ibv_pd_1_0,
    pub handle: u32,
    pub mutex: libc::pthread_mutex_t,
    pub cond: libc::pthread_cond_t,
    pub events_completed: u32,
    pub real_srq: *mut ibv_srq,
}

/// `struct ibv_qp_init_attr_1_0`: CQs and SRQ are 1.0 wrappers.
#[repr(C)]
pub struct ibv_qp_init_attr_1_0 {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq_1_0,
    pub recv_cq: *mut ibv_cq_1_0,
    pub srq: *mut ibv_srq_1_0,
    pub cap: ibv_qp_cap,
    pub qp_type: ibv_qp_type,
    pub sq_sig_all: c_int,
}

/// `wr.ud` of a 1.0 send work request: the address handle is a 1.0 wrapper.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr_1_0_ud {
    pub ah: *mut ibv_ah_1_0,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
}

/// `wr` of a 1.0 send work request (same size and offsets as today's).
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_send_wr_1_0_wr {
    pub rdma: ibv_send_wr_wr_rdma,
    pub atomic: ibv_send_wr_wr_atomic,
    pub ud: ibv_send_wr_1_0_ud,
}

/// `struct ibv_send_wr_1_0`: `next` comes before `wr_id`, and the list
/// ends after `wr`.
#[repr(C)]
pub struct ibv_send_wr_1_0 {
    pub next: *mut ibv_send_wr_1_0,
    pub wr_id: u64,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: ibv_wr_opcode,
    pub send_flags: c_int,
    pub imm_data: u32,
    pub wr: ibv_send_wr_1_0_wr,
}

/// `struct ibv_recv_wr_1_0`: `next` comes before `wr_id`.
#[repr(C)]
pub struct ibv_recv_wr_1_0 {
    pub next: *mut ibv_recv_wr_1_0,
    pub wr_id: u64,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
}

/// `struct ibv_qp_1_0`
#[repr(C)]
pub struct ibv_qp_1_0 {
    pub context: *mut ibv_context_1_0,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd_1_0,
    pub send_cq: *mut ibv_cq_1_0,
    pub recv_cq: *mut ibv_cq_1_0,
    pub srq: *mut ibv_srq_1_0,
    pub handle: u32,
    pub qp_num: u32,
    pub state: ibv_qp_state,
    pub qp_type: ibv_qp_type,
    pub mutex: libc::pthread_mutex_t,
    pub cond: libc::pthread_cond_t,
    pub events_completed: u32,
    pub real_qp: *mut ibv_qp,
}

/// `struct ibv_cq_1_0`
#[repr(C)]
pub struct ibv_cq_1_0 {
    pub context: *mut ibv_context_1_0,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
    pub mutex: libc::pthread_mutex_t,
    pub cond: libc::pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
    pub real_cq: *mut ibv_cq,
}

/// `struct ibv_ah_1_0`
#[repr(C)]
pub struct ibv_ah_1_0 {
    pub context: *mut ibv_context_1_0,
    pub pd: *mut ibv_pd_1_0,
    pub handle: u32,
    pub real_ah: *mut ibv_ah,
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// A zeroed wrapper from the C allocator (the 1.0 objects were malloc'ed),
/// or NULL with errno = ENOMEM.
fn alloc_zeroed<T>() -> *mut T {
    // SAFETY: calloc of one T; zero is a valid bit pattern for every
    // wrapper (pointers, integers, a zeroed mutex/cond is the static
    // initialiser in glibc).
    let p = unsafe { libc::calloc(1, size_of::<T>()) }.cast::<T>();
    if p.is_null() {
        set_errno(libc::ENOMEM);
    }
    p
}

/// Frees a wrapper from [`alloc_zeroed`].
///
/// # Safety
/// `p` came from [`alloc_zeroed`] and is not used afterwards.
unsafe fn free_wrapper<T>(p: *mut T) {
    // SAFETY: `p` is a calloc'ed block from `alloc_zeroed` that nothing uses
    // afterwards (caller's contract).
    unsafe { libc::free(p.cast()) };
}

/// The real context behind a 1.0 object's context (NULL-safe).
///
/// # Safety
/// `ctx` is NULL or a live `ibv_context_1_0`.
unsafe fn real_ctx(ctx: *mut ibv_context_1_0) -> *mut ibv_context {
    if ctx.is_null() {
        null_mut()
    } else {
        // SAFETY: non-NULL, so a live 1.0 context (caller's contract).
        unsafe { (*ctx).real_context }
    }
}

/// The real CQ behind a 1.0 CQ (NULL-safe).
///
/// # Safety
/// `cq` is NULL or a live `ibv_cq_1_0`.
unsafe fn real_cq_of(cq: *mut ibv_cq_1_0) -> *mut ibv_cq {
    if cq.is_null() {
        null_mut()
    } else {
        // SAFETY: non-NULL, so a live 1.0 CQ (caller's contract).
        unsafe { (*cq).real_cq }
    }
}

/// The real SRQ behind a 1.0 SRQ (NULL-safe).
///
/// # Safety
/// `srq` is NULL or a live `ibv_srq_1_0`.
unsafe fn real_srq_of(srq: *mut ibv_srq_1_0) -> *mut ibv_srq {
    if srq.is_null() {
        null_mut()
    } else {
        // SAFETY: non-NULL, so a live 1.0 SRQ (caller's contract).
        unsafe { (*srq).real_srq }
    }
}

/// The real AH behind a 1.0 AH (NULL-safe).
///
/// # Safety
/// `ah` is NULL or a live `ibv_ah_1_0`.
unsafe fn real_ah_of(ah: *mut ibv_ah_1_0) -> *mut ibv_ah {
    if ah.is_null() {
        null_mut()
    } else {
        // SAFETY: non-NULL, so a live 1.0 AH (caller's contract).
        unsafe { (*ah).real_ah }
    }
}

// ---------------------------------------------------------------------------
// The data-path entries of ibv_context_ops_1_0
// ---------------------------------------------------------------------------

/// The legacy op table of the real context a 1.0 object belongs to.
///
/// # Safety
/// `ctx` is NULL or a live `ibv_context_1_0` with an open real context.
unsafe fn real_ops<'a>(ctx: *mut ibv_context_1_0) -> Option<&'a ibv_context_ops> {
    // SAFETY: `ctx` is NULL or a live 1.0 context (caller's contract).
    let real = unsafe { real_ctx(ctx) };
    if real.is_null() {
        None
    } else {
        // SAFETY: the real context of a live 1.0 context is open, and its
        // legacy op table lives as long as it does.
        Some(unsafe { &(*real).ops })
    }
}

/// `ibv_context_ops_1_0.poll_cq`, called by 1.0's inline `ibv_poll_cq`.
///
/// # Safety
/// `cq` is NULL or a live 1.0 CQ; `wc` holds `num_entries` completions.
unsafe extern "C" fn poll_cq_wrapper_1_0(cq: *mut ibv_cq_1_0, num_entries: c_int, wc: *mut ibv_wc) -> c_int {
    guard(-1, || {
        if cq.is_null() {
            return -libc::EINVAL;
        }
        // SAFETY: `cq` is a live 1.0 CQ (non-NULL, caller's contract) whose
        // context is a live 1.0 context around an open real one.
        let Some(f) = (unsafe { real_ops((*cq).context) }).and_then(|o| o.poll_cq) else {
            return -libc::EOPNOTSUPP;
        };
        // SAFETY: the provider's poll_cq on the real CQ behind the wrapper,
        // with the caller's completion array.
        unsafe { f((*cq).real_cq, num_entries, wc) }
    })
}

/// `ibv_context_ops_1_0.req_notify_cq`.
///
/// # Safety
/// `cq` is NULL or a live 1.0 CQ.
unsafe extern "C" fn req_notify_cq_wrapper_1_0(cq: *mut ibv_cq_1_0, solicited_only: c_int) -> c_int {
    guard(libc::EIO, || {
        if cq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `cq` is a live 1.0 CQ (non-NULL, caller's contract) whose
        // context is a live 1.0 context around an open real one.
        let Some(f) = (unsafe { real_ops((*cq).context) }).and_then(|o| o.req_notify_cq) else {
            return libc::EOPNOTSUPP;
        };
        // SAFETY: the provider's req_notify_cq on the real CQ behind the
        // wrapper.
        unsafe { f((*cq).real_cq, solicited_only) }
    })
}

/// The real receive list for a 1.0 one (same order; linked once the vector
/// no longer moves).
///
/// # Safety
/// `wr` is NULL or a NULL-terminated list of 1.0 receive requests.
unsafe fn real_recv_list(wr: *mut ibv_recv_wr_1_0) -> (Vec<ibv_recv_wr>, Vec<*mut ibv_recv_wr_1_0>) {
    let mut old = Vec::new();
    let mut w = wr;
    while !w.is_null() {
        old.push(w);
        // SAFETY: a non-NULL element of the caller's NULL-terminated list.
        w = unsafe { (*w).next };
    }
    let mut real: Vec<ibv_recv_wr> = old
        .iter()
        .map(|&w| {
            // SAFETY: every element of `old` is a live request of the list
            // walked above.
            let w = unsafe { &*w };
            ibv_recv_wr {
                wr_id: w.wr_id,
                next: null_mut(),
                sg_list: w.sg_list,
                num_sge: w.num_sge,
            }
        })
        .collect();
    link(&mut real, |r, n| r.next = n);
    (real, old)
}

/// Chains `v[i].next = &v[i + 1]`.
fn link<T>(v: &mut [T], set_next: impl Fn(&mut T, *mut T)) {
    let base = v.as_mut_ptr();
    for i in 1..v.len() {
        // SAFETY: i - 1 and i are in bounds; the element pointer stays valid
        // while `v` is neither moved nor resized.
        unsafe { set_next(&mut *base.add(i - 1), base.add(i)) };
    }
}

/// Head of a translated list (NULL for an empty one).
fn head<T>(v: &mut [T]) -> *mut T {
    if v.is_empty() {
        null_mut()
    } else {
        v.as_mut_ptr()
    }
}

/// Reports the 1.0 request behind the real one the provider refused.
///
/// # Safety
/// `bad` is NULL or a valid out-parameter.
unsafe fn map_bad<T, U>(real: &[T], old: &[*mut U], real_bad: *mut T, bad: *mut *mut U) {
    if bad.is_null() {
        return;
    }
    if let Some(i) = real.iter().position(|r| std::ptr::eq(r, real_bad)) {
        // SAFETY: `bad` is a non-NULL, valid out-parameter (caller's
        // contract).
        unsafe { *bad = old[i] };
    }
}

/// `ibv_context_ops_1_0.post_srq_recv`.
///
/// # Safety
/// `srq` is NULL or a live 1.0 SRQ; `wr` is NULL or a NULL-terminated list
/// of 1.0 receive requests; `bad_wr` is NULL or writable.
unsafe extern "C" fn post_srq_recv_wrapper_1_0(
    srq: *mut ibv_srq_1_0,
    wr: *mut ibv_recv_wr_1_0,
    bad_wr: *mut *mut ibv_recv_wr_1_0,
) -> c_int {
    guard(libc::EIO, || {
        if srq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `srq` is a live 1.0 SRQ (non-NULL, caller's contract)
        // whose context is a live 1.0 context around an open real one.
        let Some(f) = (unsafe { real_ops((*srq).context) }).and_then(|o| o.post_srq_recv) else {
            return libc::EOPNOTSUPP;
        };
        // SAFETY: `wr` is NULL or a NULL-terminated 1.0 list (caller's
        // contract).
        let (mut real, old) = unsafe { real_recv_list(wr) };
        let mut real_bad: *mut ibv_recv_wr = null_mut();
        // SAFETY: the provider's post_srq_recv on the real SRQ behind the
        // wrapper, with the translated list (alive until the end of this
        // closure) and a local out-parameter.
        let ret = unsafe { f((*srq).real_srq, head(&mut real), &mut real_bad) };
        if ret != 0 {
            // SAFETY: `bad_wr` is NULL or writable (caller's contract).
            unsafe { map_bad(&real, &old, real_bad, bad_wr) };
        }
        ret
    })
}

/// `ibv_context_ops_1_0.post_recv`.
///
/// # Safety
/// `qp` is NULL or a live 1.0 QP; `wr` is NULL or a NULL-terminated list
/// of 1.0 receive requests; `bad_wr` is NULL or writable.
unsafe extern "C" fn post_recv_wrapper_1_0(
    qp: *mut ibv_qp_1_0,
    wr: *mut ibv_recv_wr_1_0,
    bad_wr: *mut *mut ibv_recv_wr_1_0,
) -> c_int {
    guard(libc::EIO, || {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `qp` is a live 1.0 QP (non-NULL, caller's contract) whose
        // context is a live 1.0 context around an open real one.
        let Some(f) = (unsafe { real_ops((*qp).context) }).and_then(|o| o.post_recv) else {
            return libc::EOPNOTSUPP;
        };
        // SAFETY: `wr` is NULL or a NULL-terminated 1.0 list (caller's
        // contract).
        let (mut real, old) = unsafe { real_recv_list(wr) };
        let mut real_bad: *mut ibv_recv_wr = null_mut();
        // SAFETY: the provider's post_recv on the real QP behind the
        // wrapper, with the translated list (alive until the end of this
        // closure) and a local out-parameter.
        let ret = unsafe { f((*qp).real_qp, head(&mut real), &mut real_bad) };
        if ret != 0 {
            // SAFETY: `bad_wr` is NULL or writable (caller's contract).
            unsafe { map_bad(&real, &old, real_bad, bad_wr) };
        }
        ret
    })
}

/// One real send request from a 1.0 one.  The members that 1.0 lacks
/// (XRC SRQ number, bind/TSO) are zero; on a UD QP the address handle is
/// the real one behind the 1.0 wrapper.
///
/// # Safety
/// `w` is a live 1.0 send request; for UD its `wr.ud.ah` is NULL or a live
/// 1.0 address handle.
unsafe fn real_send_wr(w: *const ibv_send_wr_1_0, is_ud: bool) -> ibv_send_wr {
    // SAFETY: `ibv_send_wr` is a C struct of integers, pointers and unions
    // of those, for which all-zero (NULL pointers) is a valid value.
    let mut r: ibv_send_wr = unsafe { std::mem::zeroed() };
    // SAFETY: `w` is a live 1.0 send request (caller's contract).
    let w = unsafe { &*w };
    r.wr_id = w.wr_id;
    r.sg_list = w.sg_list;
    r.num_sge = w.num_sge;
    r.opcode = w.opcode;
    r.send_flags = w.send_flags as c_uint;
    r.imm.imm_data = w.imm_data;
    // The unions have the same size and member offsets: copy all of it.
    // SAFETY: both are distinct, live unions of `size_of::<ibv_send_wr_wr>()`
    // bytes (the layout test checks the 1.0 one has the same size); any
    // bytes are valid for their integer and pointer members.
    unsafe {
        std::ptr::copy_nonoverlapping(
            std::ptr::addr_of!(w.wr).cast::<u8>(),
            std::ptr::addr_of_mut!(r.wr).cast::<u8>(),
            size_of::<ibv_send_wr_wr>(),
        );
    }
    if is_ud {
        // SAFETY: on a UD QP the caller filled `wr.ud`, whose `ah` is NULL or
        // a live 1.0 AH (caller's contract).
        r.wr.ud.ah = unsafe { real_ah_of(w.wr.ud.ah) };
    }
    r
}

/// `ibv_context_ops_1_0.post_send`.
///
/// # Safety
/// `qp` is NULL or a live 1.0 QP; `wr` is NULL or a NULL-terminated list
/// of 1.0 send requests (UD ones with NULL or live 1.0 address handles);
/// `bad_wr` is NULL or writable.
unsafe extern "C" fn post_send_wrapper_1_0(
    qp: *mut ibv_qp_1_0,
    wr: *mut ibv_send_wr_1_0,
    bad_wr: *mut *mut ibv_send_wr_1_0,
) -> c_int {
    guard(libc::EIO, || {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `qp` is a live 1.0 QP (non-NULL, caller's contract) whose
        // context is a live 1.0 context around an open real one.
        let Some(f) = (unsafe { real_ops((*qp).context) }).and_then(|o| o.post_send) else {
            return libc::EOPNOTSUPP;
        };
        // SAFETY: `qp` is a live 1.0 QP, as above.
        let is_ud = unsafe { (*qp).qp_type } == IBV_QPT_UD;
        let mut old = Vec::new();
        let mut w = wr;
        while !w.is_null() {
            old.push(w);
            // SAFETY: a non-NULL element of the caller's NULL-terminated
            // list.
            w = unsafe { (*w).next };
        }
        // SAFETY: every element of `old` is a live request of that list.
        let mut real: Vec<ibv_send_wr> = old.iter().map(|&w| unsafe { real_send_wr(w, is_ud) }).collect();
        link(&mut real, |r, n| r.next = n);
        let mut real_bad: *mut ibv_send_wr = null_mut();
        // SAFETY: the provider's post_send on the real QP behind the
        // wrapper, with the translated list (alive until the end of this
        // closure) and a local out-parameter.
        let ret = unsafe { f((*qp).real_qp, head(&mut real), &mut real_bad) };
        if ret != 0 {
            // SAFETY: `bad_wr` is NULL or writable (caller's contract).
            unsafe { map_bad(&real, &old, real_bad, bad_wr) };
        }
        ret
    })
}

// ---------------------------------------------------------------------------
// The entry points
// ---------------------------------------------------------------------------

crate::export! {
    fn __ibv_get_device_list_1_0(num: *mut c_int) -> *mut *mut ibv_device_1_0 [on_panic: null_mut()] {
        let mut n: c_int = 0;
        // SAFETY: our own exported function with a valid out-parameter.
        let real = unsafe { api_list::__ibv_get_device_list_1_1(&mut n) };
        if real.is_null() {
            return null_mut();
        }
        let n = n.max(0) as usize;
        // Slot 0 remembers the real list; the caller sees slots 1..=n and a
        // NULL terminator.
        // SAFETY: calloc of n + 2 pointers.
        let l = unsafe { libc::calloc(n + 2, size_of::<*mut ibv_device_1_0>()) }.cast::<*mut ibv_device_1_0>();
        if l.is_null() {
            // SAFETY: list from our own ibv_get_device_list.
            unsafe { api_list::__ibv_free_device_list_1_1(real) };
            set_errno(libc::ENOMEM);
            return null_mut();
        }
        // SAFETY: slot 0 of n + 2.
        unsafe { *l = real.cast() };
        for i in 0..n {
            let d = alloc_zeroed::<ibv_device_1_0>();
            if d.is_null() {
                for j in 1..=n {
                    // SAFETY: slots are NULL or our allocations.
                    unsafe { libc::free((*l.add(j)).cast()) };
                }
                // SAFETY: as above.
                unsafe {
                    libc::free(l.cast());
                    api_list::__ibv_free_device_list_1_1(real);
                }
                set_errno(libc::ENOMEM);
                return null_mut();
            }
            // SAFETY: d is fresh; real has n entries; i + 1 <= n < n + 2.
            unsafe {
                (*d).real_device = *real.add(i);
                *l.add(i + 1) = d;
            }
        }
        if !num.is_null() {
            // SAFETY: caller's out-parameter.
            unsafe { *num = n as c_int };
        }
        // SAFETY: within the allocation.
        unsafe { l.add(1) }
    }

    fn __ibv_free_device_list_1_0(list: *mut *mut ibv_device_1_0) -> () [on_panic: ()] {
        if list.is_null() {
            return;
        }
        // SAFETY: list came from __ibv_get_device_list_1_0: NULL-terminated,
        // with the real list in the slot before it.
        unsafe {
            let mut p = list;
            while !(*p).is_null() {
                libc::free((*p).cast());
                p = p.add(1);
            }
            api_list::__ibv_free_device_list_1_1((*list.sub(1)).cast());
            libc::free(list.sub(1).cast());
        }
    }

    fn __ibv_get_device_name_1_0(device: *mut ibv_device_1_0) -> *const c_char [on_panic: std::ptr::null()] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null();
        }
        // SAFETY: a 1.0 device from our list.
        unsafe { api_list::__ibv_get_device_name_1_1((*device).real_device) }
    }

    fn __ibv_get_device_guid_1_0(device: *mut ibv_device_1_0) -> u64 [on_panic: 0] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return 0;
        }
        // SAFETY: as above.
        unsafe { api_list::__ibv_get_device_guid_1_1((*device).real_device) }
    }

    /// Kept for old libfabric usnic providers; upstream does nothing either.
    fn __ibv_register_driver_1_1(name: *const c_char, init_func: *mut c_void) -> () [on_panic: ()] { }

    // --- contexts -------------------------------------------------------

    /// A 1.0 context around a newly opened real one, with the data-path
    /// wrappers in its op table.
    fn __ibv_open_device_1_0(device: *mut ibv_device_1_0) -> *mut ibv_context_1_0 [on_panic: null_mut()] {
        if device.is_null() {
            return null_errno(libc::EINVAL);
        }
        let ctx = alloc_zeroed::<ibv_context_1_0>();
        if ctx.is_null() {
            return null_mut();
        }
        // SAFETY: a 1.0 device from our list; ctx is fresh.
        unsafe {
            let real = api_dev::__ibv_open_device_1_1((*device).real_device);
            if real.is_null() {
                free_wrapper(ctx);
                return null_mut();
            }
            (*ctx).device = device;
            (*ctx).real_context = real;
            (*ctx).cmd_fd = (*real).cmd_fd;
            (*ctx).async_fd = (*real).async_fd;
            (*ctx).num_comp_vectors = (*real).num_comp_vectors;
            (*ctx).ops.poll_cq = Some(poll_cq_wrapper_1_0);
            (*ctx).ops.req_notify_cq = Some(req_notify_cq_wrapper_1_0);
            (*ctx).ops.post_send = Some(post_send_wrapper_1_0);
            (*ctx).ops.post_recv = Some(post_recv_wrapper_1_0);
            (*ctx).ops.post_srq_recv = Some(post_srq_recv_wrapper_1_0);
        }
        ctx
    }

    fn __ibv_close_device_1_0(context: *mut ibv_context_1_0) -> c_int [on_panic: -1] {
        if context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: a 1.0 context from __ibv_open_device_1_0.
        unsafe {
            let ret = api_dev::__ibv_close_device_1_1((*context).real_context);
            if ret != 0 {
                return ret;
            }
            free_wrapper(context);
        }
        0
    }

    /// The real event, with its CQ/QP/SRQ replaced by the 1.0 wrapper (the
    /// real object's context pointer).
    fn __ibv_get_async_event_1_0(context: *mut ibv_context_1_0, event: *mut ibv_async_event) -> c_int [on_panic: -1] {
        if context.is_null() || event.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: a 1.0 context; the real call filled `event` with a live
        // object of the type its event type implies.
        unsafe {
            let ret = api_dev::__ibv_get_async_event_1_1((*context).real_context, event);
            if ret != 0 {
                return ret;
            }
            let t = (*event).event_type;
            let el = &mut (*event).element;
            if t == IBV_EVENT_CQ_ERR {
                if !el.cq.is_null() {
                    el.cq = (*el.cq).cq_context.cast();
                }
            } else if is_qp_event(t) {
                if !el.qp.is_null() {
                    el.qp = (*el.qp).qp_context.cast();
                }
            } else if is_srq_event(t) && !el.srq.is_null() {
                el.srq = (*el.srq).srq_context.cast();
            }
            0
        }
    }

    /// Acknowledges a 1.0 event on the real object behind its wrapper.
    fn __ibv_ack_async_event_1_0(event: *mut ibv_async_event) -> () [on_panic: ()] {
        if event.is_null() {
            return;
        }
        // SAFETY: an event from __ibv_get_async_event_1_0: its element is a
        // 1.0 wrapper of the type the event implies.
        unsafe {
            let mut real = *event;
            let t = real.event_type;
            if t == IBV_EVENT_CQ_ERR {
                real.element.cq = real_cq_of((*event).element.cq.cast());
            } else if is_qp_event(t) {
                let qp = (*event).element.qp.cast::<ibv_qp_1_0>();
                real.element.qp = if qp.is_null() { null_mut() } else { (*qp).real_qp };
            } else if is_srq_event(t) {
                real.element.srq = real_srq_of((*event).element.srq.cast());
            }
            api_dev::__ibv_ack_async_event_1_1(&mut real);
        }
    }

    fn __ibv_query_device_1_0(context: *mut ibv_context_1_0, device_attr: *mut ibv_device_attr) -> c_int [on_panic: libc::EIO] {
        if context.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `context` is non-NULL (checked above), so the application's live
        // 1.0 context from __ibv_open_device_1_0; its real object is live with it.
        unsafe { api_dev::__ibv_query_device_1_1((*context).real_context, device_attr) }
    }

    /// What the header's inline `ibv_query_port` does: the context's
    /// size-aware query for a whole current `ibv_port_attr`, else the
    /// IBVERBS_1.1 entry on a zeroed one.
    fn __ibv_query_port_1_0(context: *mut ibv_context_1_0, port_num: u8, port_attr: *mut ibv_port_attr) -> c_int [on_panic: libc::EIO] {
        if context.is_null() || port_attr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a 1.0 context around an open real one; the caller's
        // buffer is an ibv_port_attr.
        unsafe {
            let real = (*context).real_context;
            if real.is_null() {
                return libc::EINVAL;
            }
            if (*real).abi_compat == usize::MAX as *mut c_void {
                let vctx = crate::context::vctx_of(real);
                if let Some(q) = (*vctx).query_port {
                    return q(real, port_num, port_attr, size_of::<ibv_port_attr>());
                }
            }
            std::ptr::write_bytes(port_attr, 0, 1);
            api_dev::__ibv_query_port_1_1(real, port_num, port_attr.cast())
        }
    }

    fn __ibv_query_gid_1_0(context: *mut ibv_context_1_0, port_num: u8, index: c_int, gid: *mut ibv_gid) -> c_int [on_panic: -1] {
        if context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: `context` is non-NULL (checked above), so the application's live
        // 1.0 context from __ibv_open_device_1_0; its real object is live with it.
        unsafe { api_dev::__ibv_query_gid_1_1((*context).real_context, port_num, index, gid) }
    }

    fn __ibv_query_pkey_1_0(context: *mut ibv_context_1_0, port_num: u8, index: c_int, pkey: *mut u16) -> c_int [on_panic: -1] {
        if context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: `context` is non-NULL (checked above), so the application's live
        // 1.0 context from __ibv_open_device_1_0; its real object is live with it.
        unsafe { api_dev::__ibv_query_pkey_1_1((*context).real_context, port_num, index, pkey) }
    }

    // --- protection domains and memory regions ----------------------------

    fn __ibv_alloc_pd_1_0(context: *mut ibv_context_1_0) -> *mut ibv_pd_1_0 [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        let pd = alloc_zeroed::<ibv_pd_1_0>();
        if pd.is_null() {
            return null_mut();
        }
        // SAFETY: a 1.0 context; pd is fresh.
        unsafe {
            let real = api_mr::__ibv_alloc_pd_1_1((*context).real_context);
            if real.is_null() {
                free_wrapper(pd);
                return null_mut();
            }
            (*pd).context = context;
            (*pd).handle = (*real).handle;
            (*pd).real_pd = real;
        }
        pd
    }

    fn __ibv_dealloc_pd_1_0(pd: *mut ibv_pd_1_0) -> c_int [on_panic: libc::EIO] {
        if pd.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `pd` is non-NULL (checked above), so the application's live
        // 1.0 PD from __ibv_alloc_pd_1_0; its real object is live with it.
        unsafe {
            let ret = api_mr::__ibv_dealloc_pd_1_1((*pd).real_pd);
            if ret != 0 {
                return ret;
            }
            free_wrapper(pd);
        }
        0
    }

    /// As the header's `ibv_reg_mr` with a run-time access value: the
    /// region's I/O virtual address is its address.
    fn __ibv_reg_mr_1_0(pd: *mut ibv_pd_1_0, addr: *mut c_void, length: usize, access: c_int) -> *mut ibv_mr_1_0 [on_panic: null_mut()] {
        if pd.is_null() {
            return null_errno(libc::EINVAL);
        }
        let mr = alloc_zeroed::<ibv_mr_1_0>();
        if mr.is_null() {
            return null_mut();
        }
        // SAFETY: a 1.0 PD; mr is fresh.
        unsafe {
            let real = api_mr::ibv_reg_mr_iova2((*pd).real_pd, addr, length, addr as usize as u64, access as c_uint);
            if real.is_null() {
                free_wrapper(mr);
                return null_mut();
            }
            (*mr).context = (*pd).context;
            (*mr).pd = pd;
            (*mr).handle = (*real).handle;
            (*mr).lkey = (*real).lkey;
            (*mr).rkey = (*real).rkey;
            (*mr).real_mr = real;
        }
        mr
    }

    fn __ibv_dereg_mr_1_0(mr: *mut ibv_mr_1_0) -> c_int [on_panic: libc::EIO] {
        if mr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `mr` is non-NULL (checked above), so the application's live
        // 1.0 MR from __ibv_reg_mr_1_0; its real object is live with it.
        unsafe {
            let ret = api_mr::__ibv_dereg_mr_1_1((*mr).real_mr);
            if ret != 0 {
                return ret;
            }
            free_wrapper(mr);
        }
        0
    }

    // --- completion queues ------------------------------------------------

    /// The real CQ's `cq_context` is the wrapper; the application's
    /// `cq_context` is kept in the wrapper.
    fn __ibv_create_cq_1_0(context: *mut ibv_context_1_0, cqe: c_int, cq_context: *mut c_void, channel: *mut ibv_comp_channel, comp_vector: c_int) -> *mut ibv_cq_1_0 [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        let cq = alloc_zeroed::<ibv_cq_1_0>();
        if cq.is_null() {
            return null_mut();
        }
        // SAFETY: a 1.0 context; cq is fresh.
        unsafe {
            let real = api_cq::__ibv_create_cq_1_1((*context).real_context, cqe, cq_context, channel, comp_vector);
            if real.is_null() {
                free_wrapper(cq);
                return null_mut();
            }
            (*cq).context = context;
            (*cq).cq_context = cq_context;
            (*cq).handle = (*real).handle;
            (*cq).cqe = cqe;
            (*cq).real_cq = real;
            (*real).cq_context = cq.cast();
        }
        cq
    }

    fn __ibv_resize_cq_1_0(cq: *mut ibv_cq_1_0, cqe: c_int) -> c_int [on_panic: libc::EIO] {
        if cq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `cq` is non-NULL (checked above), so the application's live
        // 1.0 CQ from __ibv_create_cq_1_0; its real object is live with it.
        unsafe { api_cq::__ibv_resize_cq_1_1((*cq).real_cq, cqe) }
    }

    fn __ibv_destroy_cq_1_0(cq: *mut ibv_cq_1_0) -> c_int [on_panic: libc::EIO] {
        if cq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `cq` is non-NULL (checked above), so the application's live
        // 1.0 CQ from __ibv_create_cq_1_0; its real object is live with it.
        unsafe {
            let ret = api_cq::__ibv_destroy_cq_1_1((*cq).real_cq);
            if ret != 0 {
                return ret;
            }
            free_wrapper(cq);
        }
        0
    }

    /// The event's CQ is the real CQ's context pointer (the 1.0 wrapper);
    /// its context, the one the application gave.
    fn __ibv_get_cq_event_1_0(channel: *mut ibv_comp_channel, cq: *mut *mut ibv_cq_1_0, cq_context: *mut *mut c_void) -> c_int [on_panic: -1] {
        if cq.is_null() || cq_context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        let mut real: *mut ibv_cq = null_mut();
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: the caller's channel and out-parameters.
        unsafe {
            let ret = api_cq::__ibv_get_cq_event_1_1(channel, &mut real, &mut ptr);
            if ret != 0 {
                return ret;
            }
            let w = ptr.cast::<ibv_cq_1_0>();
            *cq = w;
            *cq_context = if w.is_null() { null_mut() } else { (*w).cq_context };
        }
        0
    }

    fn __ibv_ack_cq_events_1_0(cq: *mut ibv_cq_1_0, nevents: c_uint) -> () [on_panic: ()] {
        if cq.is_null() {
            return;
        }
        // SAFETY: `cq` is non-NULL (checked above), so the application's live
        // 1.0 CQ from __ibv_create_cq_1_0; its real object is live with it.
        unsafe { api_cq::__ibv_ack_cq_events_1_1((*cq).real_cq, nevents) }
    }

    // --- shared receive queues --------------------------------------------

    fn __ibv_create_srq_1_0(pd: *mut ibv_pd_1_0, srq_init_attr: *mut ibv_srq_init_attr) -> *mut ibv_srq_1_0 [on_panic: null_mut()] {
        if pd.is_null() || srq_init_attr.is_null() {
            return null_errno(libc::EINVAL);
        }
        let srq = alloc_zeroed::<ibv_srq_1_0>();
        if srq.is_null() {
            return null_mut();
        }
        // SAFETY: a 1.0 PD and the caller's attributes; srq is fresh.
        unsafe {
            let real = api_qp::__ibv_create_srq_1_1((*pd).real_pd, srq_init_attr);
            if real.is_null() {
                free_wrapper(srq);
                return null_mut();
            }
            (*srq).context = (*pd).context;
            (*srq).srq_context = (*srq_init_attr).srq_context;
            (*srq).pd = pd;
            (*srq).handle = (*real).handle;
            (*srq).real_srq = real;
            (*real).srq_context = srq.cast();
        }
        srq
    }

    fn __ibv_modify_srq_1_0(srq: *mut ibv_srq_1_0, srq_attr: *mut ibv_srq_attr, srq_attr_mask: c_int) -> c_int [on_panic: libc::EIO] {
        if srq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `srq` is non-NULL (checked above), so the application's live
        // 1.0 SRQ from __ibv_create_srq_1_0; its real object is live with it.
        unsafe { api_qp::__ibv_modify_srq_1_1((*srq).real_srq, srq_attr, srq_attr_mask) }
    }

    fn __ibv_query_srq_1_0(srq: *mut ibv_srq_1_0, srq_attr: *mut ibv_srq_attr) -> c_int [on_panic: libc::EIO] {
        if srq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `srq` is non-NULL (checked above), so the application's live
        // 1.0 SRQ from __ibv_create_srq_1_0; its real object is live with it.
        unsafe { api_qp::__ibv_query_srq_1_1((*srq).real_srq, srq_attr) }
    }

    fn __ibv_destroy_srq_1_0(srq: *mut ibv_srq_1_0) -> c_int [on_panic: libc::EIO] {
        if srq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `srq` is non-NULL (checked above), so the application's live
        // 1.0 SRQ from __ibv_create_srq_1_0; its real object is live with it.
        unsafe {
            let ret = api_qp::__ibv_destroy_srq_1_1((*srq).real_srq);
            if ret != 0 {
                return ret;
            }
            free_wrapper(srq);
        }
        0
    }

    // --- queue pairs --------------------------------------------------------

    /// The real QP is created from the translated attributes; the
    /// capabilities it got are written back to the caller's.
    fn __ibv_create_qp_1_0(pd: *mut ibv_pd_1_0, qp_init_attr: *mut ibv_qp_init_attr_1_0) -> *mut ibv_qp_1_0 [on_panic: null_mut()] {
        if pd.is_null() || qp_init_attr.is_null() {
            return null_errno(libc::EINVAL);
        }
        let qp = alloc_zeroed::<ibv_qp_1_0>();
        if qp.is_null() {
            return null_mut();
        }
        // SAFETY: a 1.0 PD and the caller's 1.0 attributes (CQs and SRQ are
        // 1.0 wrappers or NULL); qp is fresh.
        unsafe {
            let a = &mut *qp_init_attr;
            let mut real_attr = ibv_qp_init_attr {
                qp_context: a.qp_context,
                send_cq: real_cq_of(a.send_cq),
                recv_cq: real_cq_of(a.recv_cq),
                srq: real_srq_of(a.srq),
                cap: a.cap,
                qp_type: a.qp_type,
                sq_sig_all: a.sq_sig_all,
            };
            let real = api_qp::__ibv_create_qp_1_1((*pd).real_pd, &mut real_attr);
            if real.is_null() {
                free_wrapper(qp);
                return null_mut();
            }
            (*qp).context = (*pd).context;
            (*qp).qp_context = a.qp_context;
            (*qp).pd = pd;
            (*qp).send_cq = a.send_cq;
            (*qp).recv_cq = a.recv_cq;
            (*qp).srq = a.srq;
            (*qp).handle = (*real).handle;
            (*qp).qp_num = (*real).qp_num;
            (*qp).state = (*real).state;
            (*qp).qp_type = a.qp_type;
            (*qp).real_qp = real;
            a.cap = real_attr.cap;
            (*real).qp_context = qp.cast();
        }
        qp
    }

    /// The real attributes, with the initial attributes translated back to
    /// the 1.0 wrappers.
    fn __ibv_query_qp_1_0(qp: *mut ibv_qp_1_0, attr: *mut ibv_qp_attr, attr_mask: c_int, init_attr: *mut ibv_qp_init_attr_1_0) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() || init_attr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a 1.0 QP; the real CQs/SRQ of a 1.0 QP carry their
        // wrappers as context pointers.
        unsafe {
            let mut real_attr: ibv_qp_init_attr = std::mem::zeroed();
            let ret = api_qp::__ibv_query_qp_1_1((*qp).real_qp, attr, attr_mask, &mut real_attr);
            if ret != 0 {
                return ret;
            }
            let ia = &mut *init_attr;
            ia.qp_context = (*qp).qp_context;
            ia.send_cq = if real_attr.send_cq.is_null() { null_mut() } else { (*real_attr.send_cq).cq_context.cast() };
            ia.recv_cq = if real_attr.recv_cq.is_null() { null_mut() } else { (*real_attr.recv_cq).cq_context.cast() };
            ia.srq = if real_attr.srq.is_null() { null_mut() } else { (*real_attr.srq).srq_context.cast() };
            ia.qp_type = real_attr.qp_type;
            ia.cap = real_attr.cap;
            ia.sq_sig_all = real_attr.sq_sig_all;
            if attr_mask & IBV_QP_STATE as c_int != 0 && !attr.is_null() {
                (*qp).state = (*attr).qp_state;
            }
        }
        0
    }

    fn __ibv_modify_qp_1_0(qp: *mut ibv_qp_1_0, attr: *mut ibv_qp_attr, attr_mask: c_int) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `qp` is non-NULL (checked above), so the application's live
        // 1.0 QP from __ibv_create_qp_1_0; its real object is live with it.
        unsafe {
            let ret = api_qp::__ibv_modify_qp_1_1((*qp).real_qp, attr, attr_mask);
            if ret == 0 {
                (*qp).state = (*(*qp).real_qp).state;
            }
            ret
        }
    }

    fn __ibv_destroy_qp_1_0(qp: *mut ibv_qp_1_0) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `qp` is non-NULL (checked above), so the application's live
        // 1.0 QP from __ibv_create_qp_1_0; its real object is live with it.
        unsafe {
            let ret = api_qp::__ibv_destroy_qp_1_1((*qp).real_qp);
            if ret != 0 {
                return ret;
            }
            free_wrapper(qp);
        }
        0
    }

    fn __ibv_attach_mcast_1_0(qp: *mut ibv_qp_1_0, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `qp` is non-NULL (checked above), so the application's live
        // 1.0 QP from __ibv_create_qp_1_0; its real object is live with it.
        unsafe { api_qp::__ibv_attach_mcast_1_1((*qp).real_qp, gid, lid) }
    }

    fn __ibv_detach_mcast_1_0(qp: *mut ibv_qp_1_0, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `qp` is non-NULL (checked above), so the application's live
        // 1.0 QP from __ibv_create_qp_1_0; its real object is live with it.
        unsafe { api_qp::__ibv_detach_mcast_1_1((*qp).real_qp, gid, lid) }
    }

    // --- address handles ------------------------------------------------------

    fn __ibv_create_ah_1_0(pd: *mut ibv_pd_1_0, attr: *mut ibv_ah_attr) -> *mut ibv_ah_1_0 [on_panic: null_mut()] {
        if pd.is_null() {
            return null_errno(libc::EINVAL);
        }
        let ah = alloc_zeroed::<ibv_ah_1_0>();
        if ah.is_null() {
            return null_mut();
        }
        // SAFETY: a 1.0 PD; ah is fresh.
        unsafe {
            let real = api_qp::__ibv_create_ah_1_1((*pd).real_pd, attr);
            if real.is_null() {
                free_wrapper(ah);
                return null_mut();
            }
            (*ah).context = (*pd).context;
            (*ah).pd = pd;
            (*ah).handle = (*real).handle;
            (*ah).real_ah = real;
        }
        ah
    }

    fn __ibv_destroy_ah_1_0(ah: *mut ibv_ah_1_0) -> c_int [on_panic: libc::EIO] {
        if ah.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `ah` is non-NULL (checked above), so the application's live
        // 1.0 AH from __ibv_create_ah_1_0; its real object is live with it.
        unsafe {
            let ret = api_qp::__ibv_destroy_ah_1_1((*ah).real_ah);
            if ret != 0 {
                return ret;
            }
            free_wrapper(ah);
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// The 1.0 layouts as x86-64 / LP64 lays out upstream's declarations.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn layouts_1_0() {
        assert_eq!(size_of::<ibv_device_1_0>(), 40);
        assert_eq!(offset_of!(ibv_device_1_0, real_device), 16);

        assert_eq!(size_of::<ibv_context_ops_1_0>(), 27 * 8);
        assert_eq!(offset_of!(ibv_context_ops_1_0, poll_cq), 7 * 8);
        assert_eq!(offset_of!(ibv_context_ops_1_0, req_notify_cq), 8 * 8);
        assert_eq!(offset_of!(ibv_context_ops_1_0, post_srq_recv), 16 * 8);
        assert_eq!(offset_of!(ibv_context_ops_1_0, post_send), 21 * 8);
        assert_eq!(offset_of!(ibv_context_ops_1_0, post_recv), 22 * 8);
        assert_eq!(offset_of!(ibv_context_ops_1_0, detach_mcast), 26 * 8);

        assert_eq!(offset_of!(ibv_context_1_0, ops), 8);
        assert_eq!(offset_of!(ibv_context_1_0, cmd_fd), 224);
        assert_eq!(offset_of!(ibv_context_1_0, async_fd), 228);
        assert_eq!(offset_of!(ibv_context_1_0, num_comp_vectors), 232);
        assert_eq!(offset_of!(ibv_context_1_0, real_context), 240);
        assert_eq!(size_of::<ibv_context_1_0>(), 248);

        assert_eq!(
            (
                offset_of!(ibv_pd_1_0, handle),
                offset_of!(ibv_pd_1_0, real_pd),
                size_of::<ibv_pd_1_0>()
            ),
            (8, 16, 24)
        );
        assert_eq!(
            (
                offset_of!(ibv_mr_1_0, lkey),
                offset_of!(ibv_mr_1_0, rkey),
                offset_of!(ibv_mr_1_0, real_mr),
                size_of::<ibv_mr_1_0>()
            ),
            (20, 24, 32, 40)
        );
        assert_eq!(
            (
                offset_of!(ibv_ah_1_0, handle),
                offset_of!(ibv_ah_1_0, real_ah),
                size_of::<ibv_ah_1_0>()
            ),
            (16, 24, 32)
        );

        assert_eq!(offset_of!(ibv_cq_1_0, cqe), 20);
        assert_eq!(offset_of!(ibv_cq_1_0, mutex), 24);
        assert_eq!(offset_of!(ibv_cq_1_0, cond), 64);
        assert_eq!(offset_of!(ibv_cq_1_0, comp_events_completed), 112);
        assert_eq!(offset_of!(ibv_cq_1_0, async_events_completed), 116);
        assert_eq!((offset_of!(ibv_cq_1_0, real_cq), size_of::<ibv_cq_1_0>()), (120, 128));

        assert_eq!(offset_of!(ibv_srq_1_0, handle), 24);
        assert_eq!(offset_of!(ibv_srq_1_0, mutex), 32);
        assert_eq!(offset_of!(ibv_srq_1_0, events_completed), 120);
        assert_eq!(
            (offset_of!(ibv_srq_1_0, real_srq), size_of::<ibv_srq_1_0>()),
            (128, 136)
        );

        assert_eq!(offset_of!(ibv_qp_1_0, handle), 48);
        assert_eq!(offset_of!(ibv_qp_1_0, qp_num), 52);
        assert_eq!(offset_of!(ibv_qp_1_0, state), 56);
        assert_eq!(offset_of!(ibv_qp_1_0, qp_type), 60);
        assert_eq!(offset_of!(ibv_qp_1_0, mutex), 64);
        assert_eq!(offset_of!(ibv_qp_1_0, events_completed), 152);
        assert_eq!((offset_of!(ibv_qp_1_0, real_qp), size_of::<ibv_qp_1_0>()), (160, 168));

        assert_eq!(offset_of!(ibv_qp_init_attr_1_0, cap), 32);
        assert_eq!(offset_of!(ibv_qp_init_attr_1_0, qp_type), 52);
        assert_eq!(
            (
                offset_of!(ibv_qp_init_attr_1_0, sq_sig_all),
                size_of::<ibv_qp_init_attr_1_0>()
            ),
            (56, 64)
        );

        assert_eq!(offset_of!(ibv_send_wr_1_0, wr_id), 8);
        assert_eq!(offset_of!(ibv_send_wr_1_0, sg_list), 16);
        assert_eq!(offset_of!(ibv_send_wr_1_0, imm_data), 36);
        assert_eq!(
            (offset_of!(ibv_send_wr_1_0, wr), size_of::<ibv_send_wr_1_0>()),
            (40, 72)
        );
        assert_eq!(size_of::<ibv_send_wr_1_0_wr>(), size_of::<ibv_send_wr_wr>());
        assert_eq!(
            (offset_of!(ibv_recv_wr_1_0, wr_id), size_of::<ibv_recv_wr_1_0>()),
            (8, 32)
        );
    }

    #[test]
    fn send_wr_translation() {
        // SAFETY: ibv_ah is plain data (integers and pointers); all-zero is
        // a valid value.
        let mut ah_real: ibv_ah = unsafe { std::mem::zeroed() };
        let mut ah = ibv_ah_1_0 {
            context: null_mut(),
            pd: null_mut(),
            handle: 0,
            real_ah: &mut ah_real,
        };
        // SAFETY: as above, plain data.
        let mut w: ibv_send_wr_1_0 = unsafe { std::mem::zeroed() };
        w.wr_id = 7;
        w.num_sge = 2;
        w.opcode = IBV_WR_SEND_WITH_IMM;
        w.send_flags = IBV_SEND_SIGNALED as c_int;
        w.imm_data = 0x1234_5678;
        w.wr.atomic = ibv_send_wr_wr_atomic {
            remote_addr: 1,
            compare_add: 2,
            swap: 3,
            rkey: 4,
        };
        // SAFETY: `w` is a live local request; not UD, so its AH is unused.
        let r = unsafe { real_send_wr(&w, false) };
        assert_eq!(
            (r.wr_id, r.num_sge, r.opcode, r.send_flags),
            (7, 2, IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED as c_uint)
        );
        // SAFETY: reads of union members the translation just copied, all
        // plain integers.
        unsafe {
            assert_eq!(r.imm.imm_data, 0x1234_5678);
            assert_eq!(
                (
                    r.wr.atomic.remote_addr,
                    r.wr.atomic.compare_add,
                    r.wr.atomic.swap,
                    r.wr.atomic.rkey
                ),
                (1, 2, 3, 4)
            );
            assert!(r.next.is_null());
        }
        w.wr.ud = ibv_send_wr_1_0_ud {
            ah: &mut ah,
            remote_qpn: 9,
            remote_qkey: 10,
        };
        // SAFETY: `w` is a live local UD request whose AH is the live local
        // 1.0 wrapper `ah`.
        let r = unsafe { real_send_wr(&w, true) };
        // SAFETY: `wr.ud` is the member the translation filled.
        unsafe {
            assert_eq!(r.wr.ud.ah, &mut ah_real as *mut ibv_ah);
            assert_eq!((r.wr.ud.remote_qpn, r.wr.ud.remote_qkey), (9, 10));
        }
    }

    #[test]
    fn recv_list_translation_and_bad_wr() {
        // SAFETY: ibv_recv_wr_1_0 is plain data; all-zero (a NULL `next`)
        // is a valid value.
        let mut c: ibv_recv_wr_1_0 = unsafe { std::mem::zeroed() };
        c.wr_id = 3;
        let mut b = ibv_recv_wr_1_0 {
            next: &mut c,
            wr_id: 2,
            sg_list: null_mut(),
            num_sge: 1,
        };
        let mut a = ibv_recv_wr_1_0 {
            next: &mut b,
            wr_id: 1,
            sg_list: null_mut(),
            num_sge: 0,
        };
        // SAFETY: `a` -> `b` -> `c` is a NULL-terminated list of live locals.
        let (mut real, old) = unsafe { real_recv_list(&mut a) };
        assert_eq!(real.len(), 3);
        let h = head(&mut real);
        // SAFETY: `h` heads the linked translated list, alive in `real`.
        unsafe {
            assert_eq!((*h).wr_id, 1);
            assert_eq!((*(*h).next).wr_id, 2);
            assert_eq!((*(*h).next).num_sge, 1);
            assert_eq!((*(*(*h).next).next).wr_id, 3);
            assert!((*(*(*h).next).next).next.is_null());
        }
        let mut bad: *mut ibv_recv_wr_1_0 = null_mut();
        // SAFETY: as above.
        let second = unsafe { (*h).next };
        // SAFETY: `bad` is a writable local out-parameter.
        unsafe { map_bad(&real, &old, second, &mut bad) };
        assert_eq!(bad, &mut b as *mut ibv_recv_wr_1_0);
        // SAFETY: an empty (NULL) list is allowed.
        let (mut empty, _) = unsafe { real_recv_list(null_mut()) };
        assert!(head(&mut empty).is_null());
    }

    #[test]
    fn null_arguments_fail_cleanly() {
        // SAFETY: NULL arguments are refused before any use.
        unsafe {
            assert!(__ibv_open_device_1_0(null_mut()).is_null());
            assert_eq!(__ibv_close_device_1_0(null_mut()), -1);
            assert!(__ibv_alloc_pd_1_0(null_mut()).is_null());
            assert_eq!(__ibv_dealloc_pd_1_0(null_mut()), libc::EINVAL);
            assert!(__ibv_create_qp_1_0(null_mut(), null_mut()).is_null());
            assert_eq!(__ibv_query_port_1_0(null_mut(), 1, null_mut()), libc::EINVAL);
            assert_eq!(__ibv_get_cq_event_1_0(null_mut(), null_mut(), null_mut()), -1);
            __ibv_ack_cq_events_1_0(null_mut(), 1);
            __ibv_ack_async_event_1_0(null_mut());
        }
    }
}
