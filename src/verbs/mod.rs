//! Internals of the public verbs (`src/api/{device,cq,mr,qp}.rs`): the
//! pieces of upstream's `verbs.c`, `device.c`, `cmd_device.c` and `neigh.c`
//! that are more than a dispatch through the context's op table.
//!
//! * [`gid`] — GID/P_Key queries: the kernel's `QUERY_GID_*` methods with
//!   upstream's sysfs fallback.
//! * [`ah`] — address-handle attributes from a work completion.
//! * [`event`] — which object an asynchronous event is about.
//! * [`neigh`] — RoCE L2 address resolution over rtnetlink.
//! * [`mr`] — the pure argument checks of `ibv_rereg_mr`.

pub mod ah;
pub mod event;
pub mod gid;
pub mod mr;
pub mod neigh;

use std::os::raw::c_int;

use crate::abi::*;
use crate::ffi::set_errno;

/// `verbs_get_device`: every `ibv_device` the library hands out is the
/// first member of a provider's `verbs_device`.
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn vdev_of(ctx: *mut ibv_context) -> *mut verbs_device {
    // SAFETY: `ctx` is an open context (caller's contract), so it points to
    // a live, initialised `ibv_context`.
    unsafe { (*ctx).device.cast() }
}

/// The sysfs record of a context's device (NULL for devices that do not
/// come from the kernel).
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn sysfs_of(ctx: *mut ibv_context) -> *mut verbs_sysfs_dev {
    // SAFETY: `ctx` is an open context (caller's contract).
    let d = unsafe { vdev_of(ctx) };
    if d.is_null() {
        std::ptr::null_mut()
    } else {
        // SAFETY: a non-NULL device of an open context is a live
        // `verbs_device` (see `vdev_of`).
        unsafe { (*d).sysfs }
    }
}

/// Upstream's `ibv_read_ibdev_sysfs_file(buf, size, sysfs, "%s", file)`:
/// the length read (trailing newline dropped, NUL-terminated), or -1 with
/// errno (EINVAL without a sysfs record).
///
/// # Safety
/// `sysfs` is NULL or a valid sysfs record.
pub unsafe fn read_ibdev_attr(sysfs: *mut verbs_sysfs_dev, file: &str, buf: &mut [u8]) -> c_int {
    if sysfs.is_null() {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: `sysfs` is a valid record (caller's contract, checked
    // non-NULL above); `ibdev_path` is a NUL-terminated array inside it.
    let dir = unsafe { std::ffi::CStr::from_ptr((*sysfs).ibdev_path.as_ptr()) };
    // SAFETY: `buf` is a live mutable slice, so its pointer holds
    // `buf.len()` writable bytes.
    unsafe { crate::sysfs::read_sysfs_into(dir.to_bytes(), file.as_bytes(), buf.as_mut_ptr().cast(), buf.len()) }
}

/// The bytes of a NUL-terminated buffer up to (not including) the NUL.
pub fn cstr_bytes(buf: &[u8]) -> &[u8] {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    &buf[..end]
}

/// `sscanf(s, "%hx", &val)`: skips white space, takes an optional sign and
/// `0x` prefix and the hex digits that follow; the value is reduced to 16
/// bits like glibc does (overflow saturates before the reduction, a minus
/// sign negates).  `None` when no digit can be read.
pub fn scan_hx(s: &[u8]) -> Option<u16> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    if i + 1 < s.len()
        && s[i] == b'0'
        && (s[i + 1] == b'x' || s[i + 1] == b'X')
        && s.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        i += 2;
    }
    let start = i;
    let mut v: u64 = 0;
    let mut overflow = false;
    while i < s.len() && s[i].is_ascii_hexdigit() {
        let d = (s[i] as char).to_digit(16).unwrap_or(0) as u64;
        match v.checked_mul(16).and_then(|x| x.checked_add(d)) {
            Some(n) => v = n,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return None;
    }
    if overflow {
        v = u64::MAX;
    }
    if neg {
        v = v.wrapping_neg();
    }
    Some(v as u16)
}

/// NULL with errno, the failure of the pointer-returning verbs.
pub fn null_errno<T>(e: c_int) -> *mut T {
    set_errno(e);
    std::ptr::null_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hx() {
        assert_eq!(scan_hx(b"ffff"), Some(0xffff));
        assert_eq!(scan_hx(b"  7fff\n"), Some(0x7fff));
        assert_eq!(scan_hx(b"0x8001"), Some(0x8001));
        assert_eq!(scan_hx(b"fe80:0000"), Some(0xfe80));
        assert_eq!(scan_hx(b"12345"), Some(0x2345));
        assert_eq!(scan_hx(b"-1"), Some(0xffff));
        assert_eq!(scan_hx(b"0xg"), Some(0));
        assert_eq!(scan_hx(b""), None);
        assert_eq!(scan_hx(b":1"), None);
        assert_eq!(scan_hx(b"ffffffffffffffffffff"), Some(0xffff));
    }

    #[test]
    fn cstr() {
        assert_eq!(cstr_bytes(b"abc\0def"), b"abc");
        assert_eq!(cstr_bytes(b"abc"), b"abc");
    }
}
