//! Completion channels and completion queues.
//!
//! Every function here is exported with upstream's prototype.  Until the part
//! of the project that implements it lands, it returns upstream's documented
//! failure for an unsupported operation: NULL with errno = EOPNOTSUPP, the
//! errno code EOPNOTSUPP, or -1 with errno (per the function's convention).
//! Functions returning void cannot report failure; no object they could act
//! on can exist before the device layer (no context can be opened yet).

#[allow(unused_imports)]
use std::os::raw::{c_char, c_int, c_uint, c_void};

#[allow(unused_imports)]
use crate::ffi::{set_errno, NOT_SUPPORTED};

crate::export! {
    fn __ibv_ack_cq_events_1_1(cq: *mut c_void, nevents: c_uint) -> () [on_panic: ()] { }
    fn ibv_create_comp_channel(context: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_create_cq_1_1(context: *mut c_void, cqe: c_int, cq_context: *mut c_void, channel: *mut c_void, comp_vector: c_int) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_destroy_comp_channel(channel: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_destroy_cq_1_1(cq: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_get_cq_event_1_1(channel: *mut c_void, cq: *mut *mut c_void, cq_context: *mut *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn __ibv_resize_cq_1_1(cq: *mut c_void, cqe: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
}
