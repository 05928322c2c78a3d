//! Queue pairs, shared receive queues, address handles, multicast.
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
    fn __ibv_attach_mcast_1_1(qp: *mut c_void, gid: *const c_void, lid: u16) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_create_ah_1_1(pd: *mut c_void, attr: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_create_ah_from_wc(pd: *mut c_void, wc: *mut c_void, grh: *mut c_void, port_num: u8) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_create_qp_1_1(pd: *mut c_void, qp_init_attr: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_create_srq_1_1(pd: *mut c_void, srq_init_attr: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_destroy_ah_1_1(ah: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_destroy_qp_1_1(qp: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_destroy_srq_1_1(srq: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_detach_mcast_1_1(qp: *mut c_void, gid: *const c_void, lid: u16) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_init_ah_from_wc(context: *mut c_void, port_num: u8, wc: *mut c_void, grh: *mut c_void, ah_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_modify_qp_1_1(qp: *mut c_void, attr: *mut c_void, attr_mask: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_modify_srq_1_1(srq: *mut c_void, srq_attr: *mut c_void, srq_attr_mask: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_qp_to_qp_ex(qp: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn ibv_query_ece(qp: *mut c_void, ece: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_qp_1_1(qp: *mut c_void, attr: *mut c_void, attr_mask: c_int, init_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_query_qp_data_in_order(qp: *mut c_void, op: u32, flags: u32) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_srq_1_1(srq: *mut c_void, srq_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_resolve_eth_l2_from_gid(context: *mut c_void, attr: *mut c_void, eth_mac: *mut c_void, vid: *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn ibv_set_ece(qp: *mut c_void, ece: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
}
