//! The provider-facing helpers of the private ABI (IBVERBS_PRIVATE_34) that need an open context.
//!
//! Every function here is exported with upstream's prototype.  Until the part
//! of the project that implements it lands, it returns upstream's documented
//! failure for an unsupported operation: NULL with errno = EOPNOTSUPP, the
//! errno code EOPNOTSUPP, or -1 with errno (per the function's convention).
//! Functions returning void cannot report failure; no object they could act
//! on can exist before the device layer (no context can be opened yet).

#[allow(unused_imports)]
use std::os::raw::{c_char, c_int, c_uint, c_void};

use crate::abi::*;
#[allow(unused_imports)]
use crate::ffi::{set_errno, NOT_SUPPORTED};
use crate::generation::Pabi;

/// The provider's `verbs_context` pointer checks of `verbs_set_ops` and
/// `verbs_uninit_context`: the view of a context the library initialised,
/// or None.
fn initialised_view(real: *mut c_void, pabi: Pabi) -> Option<*mut verbs_context> {
    if real.is_null() {
        return None;
    }
    let view = pabi.view(real);
    // SAFETY: a provider passes the verbs_context of the context it is
    // initialising or freeing (non-NULL, checked above); its `priv` is set
    // exactly while init_context's private data lives.
    (!unsafe { (*view).r#priv.is_null() }).then_some(view)
}

crate::export! {
    fn _verbs_init_and_alloc_context(device: *mut ibv_device, cmd_fd: c_int, alloc_size: usize, context_offset: *mut verbs_context_65, driver_id: u32) -> *mut c_void [on_panic: std::ptr::null_mut()] {
        init_and_alloc(device, cmd_fd, alloc_size, context_offset.cast(), driver_id, Pabi::P65)
    }
    fn __ibvrs_p34__verbs_init_and_alloc_context(device: *mut ibv_device, cmd_fd: c_int, alloc_size: usize, context_offset: *mut c_void, driver_id: u32) -> *mut c_void [on_panic: std::ptr::null_mut()] {
        init_and_alloc(device, cmd_fd, alloc_size, context_offset, driver_id, Pabi::P34)
    }
    fn verbs_init_cq(cq: *mut ibv_cq, context: *mut ibv_context, channel: *mut ibv_comp_channel, cq_context: *mut c_void) -> () [on_panic: ()] {
        // SAFETY: called by a provider's create_cq on the CQ it just
        // allocated for `context`, with the application's channel (NULL or
        // a channel of that context), which is init_cq's contract.
        unsafe { crate::context::ops::init_cq(cq, context, channel, cq_context) }
    }
    fn verbs_open_device(device: *mut ibv_device, private_data: *mut c_void) -> *mut ibv_context [on_panic: std::ptr::null_mut()] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: a non-NULL device (checked above) handed to us by the
        // application from the device list, hence the first member of a
        // provider's verbs_device.
        unsafe { crate::context::open_device(device, private_data) }
    }
    fn verbs_set_ops(vctx: *mut verbs_context_65, ops: *const verbs_context_ops_65) -> () [on_panic: ()] {
        if let (Some(view), false) = (initialised_view(vctx.cast(), Pabi::P65), ops.is_null()) {
            // SAFETY: a context init_context initialised; `ops` is the
            // provider's (non-NULL) PABI 65 op table.
            unsafe { crate::context::set_ops(view, ops) }
        }
    }
    fn __ibvrs_p34_verbs_set_ops(vctx: *mut c_void, ops: *const verbs_context_ops) -> () [on_panic: ()] {
        if let (Some(view), false) = (initialised_view(vctx, Pabi::P34), ops.is_null()) {
            // SAFETY: a context init_context initialised; `ops` is the
            // provider's (non-NULL) PABI 34 op table.
            unsafe { crate::context::set_ops_34(view, ops) }
        }
    }
    fn verbs_uninit_context(context: *mut verbs_context_65) -> () [on_panic: ()] {
        if let Some(view) = initialised_view(context.cast(), Pabi::P65) {
            // SAFETY: a provider calls this on the verbs_context that
            // init_and_alloc initialised, just before freeing it.
            unsafe { crate::context::uninit_context(view) }
        }
    }
    fn __ibvrs_p34_verbs_uninit_context(context: *mut c_void) -> () [on_panic: ()] {
        if let Some(view) = initialised_view(context, Pabi::P34) {
            // SAFETY: as verbs_uninit_context.
            unsafe { crate::context::uninit_context(view) }
        }
    }
}

/// `_verbs_init_and_alloc_context` of either generation.
fn init_and_alloc(
    device: *mut ibv_device,
    cmd_fd: c_int,
    alloc_size: usize,
    context_offset: *mut c_void,
    driver_id: u32,
    pabi: Pabi,
) -> *mut c_void {
    if device.is_null() {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // The "pointer" is the byte offset of the verbs_context in the
    // provider's wrapper (upstream passes offsetof as a pointer).
    // SAFETY: called by a provider's alloc_context with its listed device
    // (non-NULL, checked above) and the layout of its own context wrapper,
    // which is init_and_alloc's contract.
    unsafe { crate::context::init_and_alloc(device, cmd_fd, alloc_size, context_offset as usize, driver_id, pabi) }
}

crate::export! {
    /// Called from a provider's constructor (`PROVIDER_DRIVER`).
    fn verbs_register_driver_34(ops: *const crate::abi::verbs_device_ops) -> () [on_panic: ()] {
        crate::provider::register(ops, Pabi::P34);
    }
    /// The same for a provider of private ABI 65 (rdma-core 65).
    fn verbs_register_driver_65(ops: *const crate::abi::verbs_device_ops) -> () [on_panic: ()] {
        crate::provider::register(ops, Pabi::P65);
    }

    /// Number of ioctl attributes of a command buffer chain: `num_attrs`
    /// plus the attributes already written in each linked buffer.
    fn __ioctl_final_num_attrs(num_attrs: c_uint, link: *mut crate::abi::ibv_command_buffer) -> c_uint [on_panic: num_attrs] {
        let mut n = num_attrs;
        let mut l = link;
        while !l.is_null() {
            // SAFETY: a provider-built chain of command buffers; next_attr
            // points into the same buffer's attribute array.
            unsafe {
                let first = std::ptr::addr_of_mut!((*l).hdr).cast::<u8>()
                    .add(std::mem::size_of::<crate::abi::ib_uverbs_ioctl_hdr>())
                    .cast::<crate::abi::ib_uverbs_attr>();
                n = n.wrapping_add((*l).next_attr.offset_from(first) as c_uint);
                l = (*l).next;
            }
        }
        n
    }
}
