//! The library's own entries in every context's op tables (upstream's
//! `set_lib_ops`) and the per-object initialisation shared with providers.

use std::os::raw::{c_int, c_void};

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::verbs::device::{with_full_port_attr, PortAttrFull};

/// `verbs_init_cq`: the fields the library owns in every CQ.
///
/// # Safety
/// `cq` points to a provider-allocated CQ; `channel` is NULL or a channel of
/// `context`.
pub unsafe fn init_cq(
    cq: *mut ibv_cq,
    context: *mut ibv_context,
    channel: *mut ibv_comp_channel,
    cq_context: *mut c_void,
) {
    // SAFETY: `cq` is a live provider CQ (contract) that nothing else uses
    // yet; its mutex and condition variable are initialised in place.
    unsafe {
        (*cq).context = context;
        (*cq).channel = channel;
        (*cq).cq_context = cq_context;
        (*cq).comp_events_completed = 0;
        (*cq).async_events_completed = 0;
        libc::pthread_mutex_init(std::ptr::addr_of_mut!((*cq).mutex), std::ptr::null());
        libc::pthread_cond_init(std::ptr::addr_of_mut!((*cq).cond), std::ptr::null());
    }
    if !channel.is_null() {
        // SAFETY: a channel of the open `context` (contract); its refcnt
        // is guarded by the context mutex, as everywhere else.
        unsafe {
            libc::pthread_mutex_lock(std::ptr::addr_of_mut!((*context).mutex));
            (*channel).refcnt += 1;
            libc::pthread_mutex_unlock(std::ptr::addr_of_mut!((*context).mutex));
        }
    }
}

/// `verbs_context.create_cq_ex` as the library publishes it: checks the
/// requested completion fields, then lets the provider create the CQ.
///
/// # Safety
/// `context` is an open context; `attr` points to a valid init attribute.
unsafe extern "C" fn lib_create_cq_ex(context: *mut ibv_context, attr: *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex {
    crate::ffi::guard(std::ptr::null_mut(), || {
        // SAFETY: `attr` is the caller's valid attribute (function contract).
        let (wc_flags, channel, cq_context) = unsafe { ((*attr).wc_flags, (*attr).channel, (*attr).cq_context) };
        if wc_flags & !(IBV_CREATE_CQ_SUP_WC_FLAGS as u64) != 0 {
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        }
        // SAFETY: an open context (function contract); the provider's op
        // gets the caller's own arguments.
        let cq = unsafe { crate::op!(context, create_cq_ex)(context, attr) };
        if !cq.is_null() {
            // SAFETY: a CQ the provider just created for `context`;
            // `channel` came with the caller's attribute.
            unsafe { init_cq(cq.cast(), context, channel, cq_context) };
        }
        cq
    })
}

/// The library's `verbs_context.query_port` (upstream's `__lib_query_port`):
/// the provider always fills the library's own full-size `ibv_port_attr`,
/// of which the caller gets its `len` bytes (zero beyond).  A provider never
/// sees a caller's shorter (older) struct, and a provider built before
/// `active_speed_ex` never gets a buffer it could overrun.
///
/// # Safety
/// `context` is an open context; `port_attr` holds `len` writable bytes.
pub unsafe extern "C" fn lib_query_port(
    context: *mut ibv_context,
    port_num: u8,
    port_attr: *mut ibv_port_attr,
    len: usize,
) -> c_int {
    crate::ffi::guard(libc::EIO, || {
        // SAFETY: an open context (function contract).
        let query = unsafe { crate::op!(context, query_port) };
        // SAFETY: plain data; all-zero bytes are valid.
        let mut tmp: PortAttrFull = unsafe { std::mem::zeroed() };
        let p = std::ptr::addr_of_mut!(tmp).cast::<ibv_port_attr>();
        // SAFETY: the provider fills an ibv_port_attr of at least its own
        // size; `tmp` is the newest, largest one.
        let rc = with_full_port_attr(p, || unsafe { query(context, port_num, p) });
        if rc != 0 {
            return rc;
        }
        let n = len.min(std::mem::size_of::<PortAttrFull>());
        // SAFETY: the caller's buffer holds `len` bytes (contract), `tmp`
        // at least `n`.
        unsafe {
            std::ptr::write_bytes(port_attr.cast::<u8>(), 0, len);
            std::ptr::copy_nonoverlapping(p.cast::<u8>(), port_attr.cast::<u8>(), n);
        }
        0
    })
}

/// The size of the `ibv_port_attr` of binaries built before
/// `port_cap_flags2` was added (the IBVERBS_1.1 `ibv_query_port`).
pub const COMPAT_PORT_ATTR_SIZE: usize = std::mem::offset_of!(ibv_port_attr, port_cap_flags2);

/// The IBVERBS_1.1 `ibv_query_port` (and `ibv_context_ops._compat_query_port`):
/// fills the old, shorter `ibv_port_attr`.  0 or an errno value.
///
/// # Safety
/// `context` is NULL or an open context; `port_attr` is NULL or holds
/// [`COMPAT_PORT_ATTR_SIZE`] writable bytes.
pub unsafe extern "C" fn compat_query_port(
    context: *mut ibv_context,
    port_num: u8,
    port_attr: *mut _compat_ibv_port_attr,
) -> c_int {
    if context.is_null() || port_attr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: an open context and a buffer of the old size (contract).
    unsafe { lib_query_port(context, port_num, port_attr.cast(), COMPAT_PORT_ATTR_SIZE) }
}

/// `ibv_query_device` (and `ibv_context_ops._compat_query_device`): the
/// provider fills the `ibv_device_attr` that starts an
/// `ibv_device_attr_ex`, told the size is that of the former.  0 or an
/// errno value.
///
/// # Safety
/// `context` is NULL or an open context; `device_attr` is NULL or writable.
pub unsafe extern "C" fn query_device(context: *mut ibv_context, device_attr: *mut ibv_device_attr) -> c_int {
    crate::ffi::guard(libc::EIO, || {
        if context.is_null() || device_attr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: an open context; the provider writes only
        // sizeof(ibv_device_attr) bytes (orig_attr is the first member).
        unsafe {
            crate::op!(context, query_device_ex)(
                context,
                std::ptr::null(),
                device_attr.cast::<ibv_device_attr_ex>(),
                std::mem::size_of::<ibv_device_attr>(),
            )
        }
    })
}

/// Upstream's `set_lib_ops`, run on every new context after the provider's
/// `alloc_context`/`import_context`.
///
/// # Safety
/// `vctx` is a freshly allocated, initialised context.
pub unsafe fn set_lib_ops(vctx: *mut verbs_context) {
    // SAFETY: a live, initialised verbs_context (contract); only its
    // function-pointer slots are written.
    let v = unsafe { &mut *vctx };
    v.create_cq_ex = Some(lib_create_cq_ex);
    v.query_port = Some(lib_query_port);
    v.context.ops._compat_query_port = Some(compat_query_port);
    v.context.ops._compat_query_device = Some(query_device);
    // Binaries built against libibverbs 1.1.8 look for the flow entry points
    // in these two slots (type-erased function pointers).
    // SAFETY: both are non-null function pointers; only their address is
    // stored, and the old binaries call them with the real prototype.
    unsafe {
        v.ABI_placeholder1 = v
            .ibv_create_flow
            .map(|f| std::mem::transmute::<_, unsafe extern "C" fn()>(f));
        v.ABI_placeholder2 = v
            .ibv_destroy_flow
            .map(|f| std::mem::transmute::<_, unsafe extern "C" fn()>(f));
    }
}
