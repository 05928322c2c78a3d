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

crate::export! {
    fn _verbs_init_and_alloc_context(device: *mut ibv_device, cmd_fd: c_int, alloc_size: usize, context_offset: *mut verbs_context, driver_id: u32) -> *mut c_void [on_panic: std::ptr::null_mut()] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // The "pointer" is the byte offset of the verbs_context in the
        // provider's wrapper (upstream passes offsetof as a pointer).
        // SAFETY: called by a provider's alloc_context with its listed
        // device (non-NULL, checked above) and the layout of its own
        // context wrapper, which is init_and_alloc's contract.
        unsafe { crate::context::init_and_alloc(device, cmd_fd, alloc_size, context_offset as usize, driver_id) }
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
    fn verbs_set_ops(vctx: *mut verbs_context, ops: *const verbs_context_ops) -> () [on_panic: ()] {
        // SAFETY: the provider passes the verbs_context of the context it
        // is initialising (non-NULL, checked first).
        if vctx.is_null() || ops.is_null() || unsafe { (*vctx).r#priv.is_null() } {
            return;
        }
        // SAFETY: `vctx` has private data, so init_context initialised it;
        // `ops` is the provider's (non-NULL) op table.
        unsafe { crate::context::set_ops(vctx, ops) }
    }
    fn verbs_uninit_context(context: *mut verbs_context) -> () [on_panic: ()] {
        if context.is_null() {
            return;
        }
        // SAFETY: a provider calls this on the verbs_context that
        // init_and_alloc initialised, just before freeing it.
        unsafe { crate::context::uninit_context(context) }
    }
}

crate::export! {
    /// Called from a provider's constructor (`PROVIDER_DRIVER`).
    fn verbs_register_driver_34(ops: *const crate::abi::verbs_device_ops) -> () [on_panic: ()] {
        if ops.is_null() {
            return;
        }
        crate::provider::register(ops);
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
