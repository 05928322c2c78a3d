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
//! The 1.0 device-list functions wrap the current ones with the old
//! `struct ibv_device_1_0` exactly as upstream does.  The translation of the
//! other 1.0 objects (contexts, CQs, QPs with their old layouts) is not
//! implemented yet: those return upstream's failure for an unsupported
//! operation (no 1.0 object can be created, so no 1.0 object can reach them).

use std::os::raw::{c_char, c_int, c_uint, c_void};

use crate::abi::ibv_device;
use crate::ffi::{set_errno, NOT_SUPPORTED};

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

/// `struct ibv_device_1_0`: two obsolete pointers, the real device, and the
/// old two-entry ops table.
#[repr(C)]
pub struct ibv_device_1_0 {
    pub obsolete_sysfs_dev: *mut c_void,
    pub obsolete_sysfs_ibdev: *mut c_void,
    pub real_device: *mut ibv_device,
    pub _ops: [*mut c_void; 2],
}

crate::export! {
    fn __ibv_get_device_list_1_0(num: *mut c_int) -> *mut *mut ibv_device_1_0 [on_panic: std::ptr::null_mut()] {
        let mut n: c_int = 0;
        // SAFETY: our own exported function with a valid out-parameter.
        let real = unsafe { crate::api::list::__ibv_get_device_list_1_1(&mut n) };
        if real.is_null() {
            return std::ptr::null_mut();
        }
        let n = n.max(0) as usize;
        // Slot 0 remembers the real list; the caller sees slots 1..=n and a
        // NULL terminator.
        // SAFETY: calloc of n + 2 pointers.
        let l = unsafe { libc::calloc(n + 2, std::mem::size_of::<*mut ibv_device_1_0>()) }
            .cast::<*mut ibv_device_1_0>();
        if l.is_null() {
            // SAFETY: list from our own ibv_get_device_list.
            unsafe { crate::api::list::__ibv_free_device_list_1_1(real) };
            return std::ptr::null_mut();
        }
        // SAFETY: slot 0 of n + 2.
        unsafe { *l = real.cast() };
        for i in 0..n {
            // SAFETY: calloc of one ibv_device_1_0; i + 1 <= n < n + 2.
            let d = unsafe { libc::calloc(1, std::mem::size_of::<ibv_device_1_0>()) }.cast::<ibv_device_1_0>();
            if d.is_null() {
                for j in 1..=n {
                    // SAFETY: slots are NULL or our allocations.
                    unsafe { libc::free((*l.add(j)).cast()) };
                }
                // SAFETY: as above.
                unsafe {
                    libc::free(l.cast());
                    crate::api::list::__ibv_free_device_list_1_1(real);
                }
                return std::ptr::null_mut();
            }
            // SAFETY: d is fresh; real has n entries.
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
            crate::api::list::__ibv_free_device_list_1_1((*list.sub(1)).cast());
            libc::free(list.sub(1).cast());
        }
    }

    fn __ibv_get_device_name_1_0(device: *mut ibv_device_1_0) -> *const c_char [on_panic: std::ptr::null()] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null();
        }
        // SAFETY: a 1.0 device from our list.
        unsafe { crate::api::list::__ibv_get_device_name_1_1((*device).real_device) }
    }

    fn __ibv_get_device_guid_1_0(device: *mut ibv_device_1_0) -> u64 [on_panic: 0] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return 0;
        }
        // SAFETY: as above.
        unsafe { crate::api::list::__ibv_get_device_guid_1_1((*device).real_device) }
    }

    /// Kept for old libfabric usnic providers; upstream does nothing either.
    fn __ibv_register_driver_1_1(name: *const c_char, init_func: *mut c_void) -> () [on_panic: ()] { }

    fn __ibv_ack_async_event_1_0(event: *mut c_void) -> () [on_panic: ()] { }
    fn __ibv_ack_cq_events_1_0(cq: *mut c_void, nevents: c_uint) -> () [on_panic: ()] { }
    fn __ibv_alloc_pd_1_0(context: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_attach_mcast_1_0(qp: *mut c_void, gid: *const c_void, lid: u16) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_close_device_1_0(context: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_create_ah_1_0(pd: *mut c_void, attr: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_create_cq_1_0(context: *mut c_void, cqe: c_int, cq_context: *mut c_void, channel: *mut c_void, comp_vector: c_int) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_create_qp_1_0(pd: *mut c_void, qp_init_attr: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_create_srq_1_0(pd: *mut c_void, srq_init_attr: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_dealloc_pd_1_0(pd: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_dereg_mr_1_0(mr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_destroy_ah_1_0(ah: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_destroy_cq_1_0(cq: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_destroy_qp_1_0(qp: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_destroy_srq_1_0(srq: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_detach_mcast_1_0(qp: *mut c_void, gid: *const c_void, lid: u16) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_get_async_event_1_0(context: *mut c_void, event: *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn __ibv_get_cq_event_1_0(channel: *mut c_void, cq: *mut *mut c_void, cq_context: *mut *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn __ibv_modify_qp_1_0(qp: *mut c_void, attr: *mut c_void, attr_mask: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_modify_srq_1_0(srq: *mut c_void, srq_attr: *mut c_void, srq_attr_mask: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_open_device_1_0(device: *mut c_void) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_query_device_1_0(context: *mut c_void, device_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_gid_1_0(context: *mut c_void, port_num: u8, index: c_int, gid: *mut c_void) -> c_int [on_panic: -1] { set_errno(NOT_SUPPORTED); -1 }
    fn __ibv_query_pkey_1_0(context: *mut c_void, port_num: u8, index: c_int, pkey: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_port_1_0(context: *mut c_void, port_num: u8, port_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_qp_1_0(qp: *mut c_void, attr: *mut c_void, attr_mask: c_int, init_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_query_srq_1_0(srq: *mut c_void, srq_attr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn __ibv_reg_mr_1_0(pd: *mut c_void, addr: *mut c_void, length: usize, access: c_int) -> *mut c_void [on_panic: std::ptr::null_mut()] { set_errno(NOT_SUPPORTED); std::ptr::null_mut() }
    fn __ibv_resize_cq_1_0(cq: *mut c_void, cqe: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
}
