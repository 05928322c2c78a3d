//! Environment variables, read the way upstream reads them.

use std::ffi::{CStr, CString};

/// Raw `getenv` (the C environment, which is what C callers change with
/// `setenv`; `std::env::var` reads the same block but takes a lock we do not
/// need).
pub fn get(name: &str) -> Option<CString> {
    let key = CString::new(name).ok()?;
    // SAFETY: key is NUL-terminated; getenv returns NULL or a valid C string
    // that we copy immediately.
    let p = unsafe { libc::getenv(key.as_ptr()) };
    if p.is_null() {
        None
    } else {
        // SAFETY: non-NULL pointer from getenv is a valid C string.
        Some(unsafe { CStr::from_ptr(p) }.to_owned())
    }
}

/// Upstream's `check_env`: set, and not exactly "0".
pub fn is_enabled(name: &str) -> bool {
    matches!(get(name), Some(v) if v.as_bytes() != b"0")
}

/// Whether the process runs with different real and effective user ids
/// (then upstream ignores user-controlled paths such as `SYSFS_PATH`).
pub fn is_setuid() -> bool {
    // SAFETY: plain syscalls without arguments.
    unsafe { libc::getuid() != libc::geteuid() }
}
