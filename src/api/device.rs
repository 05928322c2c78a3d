//! Device-level verbs whose implementation arrives with real devices (issue: real devices): opening and closing contexts, queries, async events.
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
    fn _ibv_query_gid_ex(context: *mut c_void, port_num: u32, gid_index: u32, entry: *mut c_void, flags: u32, entry_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn _ibv_query_gid_table(context: *mut c_void, entries: *mut c_void, max_entries: usize, flags: u32, entry_size: usize) -> isize [on_panic: -(libc::EIO as isize)] { -(NOT_SUPPORTED as isize) }
    fn __ibv_ack_async_event_1_1(event: *mut c_void) -> () [on_panic: ()] { }
    fn __ibv_close_device_1_1(context: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_get_async_event_1_1(context: *mut c_void, event: *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn ibv_get_pkey_index(context: *mut c_void, port_num: u8, pkey: u16) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn ibv_import_device(cmd_fd: c_int) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_open_device_1_1(device: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_query_device_1_1(context: *mut c_void, device_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_gid_1_1(context: *mut c_void, port_num: u8, index: c_int, gid: *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn ibv_query_gid_type(context: *mut c_void, port_num: u8, index: c_uint, type_: *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn __ibv_query_pkey_1_1(context: *mut c_void, port_num: u8, index: c_int, pkey: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_port_1_1(context: *mut c_void, port_num: u8, port_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
}
