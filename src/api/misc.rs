//! Pure functions of the public API: enum names, rate conversions, fork
//! support, sysfs helpers.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

use crate::ffi::set_errno;

crate::export! {
    fn ibv_node_type_str(node_type: c_int) -> *const c_char [on_panic: std::ptr::null()] {
        crate::enum_strs::node_type(node_type).as_ptr()
    }
    fn ibv_port_state_str(port_state: u32) -> *const c_char [on_panic: std::ptr::null()] {
        crate::enum_strs::port_state(port_state).as_ptr()
    }
    fn ibv_event_type_str(event: u32) -> *const c_char [on_panic: std::ptr::null()] {
        crate::enum_strs::event_type(event).as_ptr()
    }
    fn ibv_wc_status_str(status: u32) -> *const c_char [on_panic: std::ptr::null()] {
        crate::enum_strs::wc_status(status).as_ptr()
    }
    fn ibv_wr_opcode_str(opcode: u32) -> *const c_char [on_panic: std::ptr::null()] {
        crate::enum_strs::wr_opcode(opcode).map_or(std::ptr::null(), |s| s.as_ptr())
    }

    fn ibv_rate_to_mult(rate: u32) -> c_int [on_panic: -1] { crate::rate::rate_to_mult(rate) }
    fn mult_to_ibv_rate(mult: c_int) -> u32 [on_panic: 0] { crate::rate::mult_to_rate(mult) }
    fn ibv_rate_to_mbps(rate: u32) -> c_int [on_panic: -1] { crate::rate::rate_to_mbps(rate) }
    fn mbps_to_ibv_rate(mbps: c_int) -> u32 [on_panic: 0] { crate::rate::mbps_to_rate(mbps) }

    fn ibv_fork_init() -> c_int [on_panic: libc::EIO] { crate::fork::init() }
    fn ibv_is_fork_initialized() -> u32 [on_panic: 0] { crate::fork::status() }
    fn ibv_dontfork_range(base: *mut c_void, size: usize) -> c_int [on_panic: -1] {
        fork_range(base, size, true)
    }
    fn ibv_dofork_range(base: *mut c_void, size: usize) -> c_int [on_panic: -1] {
        fork_range(base, size, false)
    }

    fn ibv_get_sysfs_path() -> *const c_char [on_panic: std::ptr::null()] {
        crate::sysfs::path().as_ptr()
    }

    /// Reads `<dir>/<file>` into `buf` (at most `size` bytes), NUL-terminated
    /// with a trailing newline dropped; the length, or -1 with errno.
    fn ibv_read_sysfs_file(dir: *const c_char, file: *const c_char, buf: *mut c_char, size: usize) -> c_int [on_panic: -1] {
        // glibc's printf renders a NULL string as "(null)", which is the
        // path upstream then fails to open; do the same.
        // SAFETY: a non-NULL `dir` is a C string from the caller.
        let dir = if dir.is_null() { c"(null)" } else { unsafe { CStr::from_ptr(dir) } };
        // SAFETY: a non-NULL `file` is a C string from the caller.
        let file = if file.is_null() { c"(null)" } else { unsafe { CStr::from_ptr(file) } };
        // SAFETY: the caller promises `buf` holds `size` writable bytes.
        unsafe { crate::sysfs::read_sysfs_into(dir.to_bytes(), file.to_bytes(), buf, size) }
    }
}

/// `ibv_dontfork_range`/`ibv_dofork_range`: with fork protection on, a
/// NULL base is a no-op that succeeds, as upstream's; without it the call
/// only marks that protection comes too late (in `fork::range`).
fn fork_range(base: *mut c_void, size: usize, dont: bool) -> c_int {
    if base.is_null() && crate::fork::enabled() {
        return 0;
    }
    crate::fork::range(base as usize, size, dont)
}

/// Called by the C shim behind `ibv_read_ibdev_sysfs_file` with the file
/// name already formatted.
///
/// # Safety
/// `sysfs_dev` is NULL or a provider's valid sysfs record; `file` is a C
/// string; `buf` is NULL or holds `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ibvrs_read_ibdev_sysfs_file(
    buf: *mut c_char,
    size: usize,
    sysfs_dev: *mut crate::abi::verbs_sysfs_dev,
    file: *const c_char,
) -> c_int {
    crate::ffi::guard(-1, || {
        if sysfs_dev.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: non-NULL provider-owned sysfs record; ibdev_path is a
        // NUL-terminated array inside it.
        let dir = unsafe { CStr::from_ptr((*sysfs_dev).ibdev_path.as_ptr()) };
        // SAFETY: the shim passes a valid formatted C string.
        let file = unsafe { CStr::from_ptr(file) };
        // SAFETY: the caller promises `buf` holds `size` writable bytes.
        unsafe { crate::sysfs::read_sysfs_into(dir.to_bytes(), file.to_bytes(), buf, size) }
    })
}
