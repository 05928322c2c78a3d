//! The library's own entries in every context's op tables (upstream's
//! `set_lib_ops`) and the per-object initialisation shared with providers.

use std::os::raw::{c_int, c_void};

use super::ops_of;
use crate::abi::*;
use crate::ffi::set_errno;

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
    (*cq).context = context;
    (*cq).channel = channel;
    if !channel.is_null() {
        libc::pthread_mutex_lock(std::ptr::addr_of_mut!((*context).mutex));
        (*channel).refcnt += 1;
        libc::pthread_mutex_unlock(std::ptr::addr_of_mut!((*context).mutex));
    }
    (*cq).cq_context = cq_context;
    (*cq).comp_events_completed = 0;
    (*cq).async_events_completed = 0;
    libc::pthread_mutex_init(std::ptr::addr_of_mut!((*cq).mutex), std::ptr::null());
    libc::pthread_cond_init(std::ptr::addr_of_mut!((*cq).cond), std::ptr::null());
}

/// `verbs_context.create_cq_ex` as the library publishes it: checks the
/// requested completion fields, then lets the provider create the CQ.
unsafe extern "C" fn lib_create_cq_ex(context: *mut ibv_context, attr: *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex {
    crate::ffi::guard(std::ptr::null_mut(), || {
        if (*attr).wc_flags & !(IBV_CREATE_CQ_SUP_WC_FLAGS as u64) != 0 {
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        }
        let Some(f) = ops_of(context).create_cq_ex else {
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        };
        let cq = f(context, attr);
        if !cq.is_null() {
            init_cq(cq.cast(), context, (*attr).channel, (*attr).cq_context);
        }
        cq
    })
}

/// `verbs_context.query_port`: hides the size of the caller's
/// `ibv_port_attr` (older binaries have a shorter one) from the provider.
pub unsafe extern "C" fn lib_query_port(
    context: *mut ibv_context,
    port_num: u8,
    port_attr: *mut ibv_port_attr,
    len: usize,
) -> c_int {
    crate::ffi::guard(libc::EIO, || {
        let Some(q) = ops_of(context).query_port else {
            return libc::EOPNOTSUPP;
        };
        if len < std::mem::size_of::<ibv_port_attr>() {
            let mut tmp: ibv_port_attr = std::mem::zeroed();
            let rc = q(context, port_num, &mut tmp);
            if rc != 0 {
                return rc;
            }
            std::ptr::copy_nonoverlapping((&tmp as *const ibv_port_attr).cast::<u8>(), port_attr.cast::<u8>(), len);
            return 0;
        }
        std::ptr::write_bytes(port_attr.cast::<u8>(), 0, len);
        q(context, port_num, port_attr)
    })
}

extern "C" {
    // Our own exported entry points (bound by .symver in src/compat.rs).
    fn __ibv_query_port_1_1(context: *mut ibv_context, port_num: u8, port_attr: *mut c_void) -> c_int;
    fn __ibv_query_device_1_1(context: *mut ibv_context, device_attr: *mut ibv_device_attr) -> c_int;
}

/// Upstream's `set_lib_ops`, run on every new context after the provider's
/// `alloc_context`/`import_context`.
///
/// # Safety
/// `vctx` is a freshly allocated, initialised context.
pub unsafe fn set_lib_ops(vctx: *mut verbs_context) {
    (*vctx).create_cq_ex = Some(lib_create_cq_ex);
    let ctxops = &mut (*vctx).context.ops;
    ctxops._compat_query_port = Some(std::mem::transmute::<
        unsafe extern "C" fn(*mut ibv_context, u8, *mut c_void) -> c_int,
        unsafe extern "C" fn(*mut ibv_context, u8, *mut _compat_ibv_port_attr) -> c_int,
    >(__ibv_query_port_1_1));
    (*vctx).query_port = Some(lib_query_port);
    ctxops._compat_query_device = Some(__ibv_query_device_1_1);
    // Binaries built against libibverbs 1.1.8 look for the flow entry points
    // in these two slots.
    (*vctx).ABI_placeholder1 = (*vctx)
        .ibv_create_flow
        .map(|f| std::mem::transmute::<_, unsafe extern "C" fn()>(f));
    (*vctx).ABI_placeholder2 = (*vctx)
        .ibv_destroy_flow
        .map(|f| std::mem::transmute::<_, unsafe extern "C" fn()>(f));
}
