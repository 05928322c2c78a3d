//! Protection domains, memory regions, device memory, imports.
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
    fn __ibv_alloc_pd_1_1(context: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_dealloc_pd_1_1(pd: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_dereg_mr_1_1(mr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_import_dm(context: *mut c_void, dm_handle: u32) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_import_mr(pd: *mut c_void, mr_handle: u32) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_import_pd(context: *mut c_void, pd_handle: u32) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_reg_dmabuf_mr(pd: *mut c_void, offset: u64, length: usize, iova: u64, fd: c_int, access: c_int) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_reg_mr_1_1(pd: *mut c_void, addr: *mut c_void, length: usize, access: c_int) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_reg_mr_iova(pd: *mut c_void, addr: *mut c_void, length: usize, iova: u64, access: c_int) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_reg_mr_iova2(pd: *mut c_void, addr: *mut c_void, length: usize, iova: u64, access: c_uint) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_rereg_mr(mr: *mut c_void, flags: c_int, pd: *mut c_void, addr: *mut c_void, length: usize, access: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_unimport_dm(dm: *mut c_void) -> () [on_panic: ()] { }
    fn ibv_unimport_mr(mr: *mut c_void) -> () [on_panic: ()] { }
    fn ibv_unimport_pd(pd: *mut c_void) -> () [on_panic: ()] { }
}
