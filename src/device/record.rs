//! One discovered device before a provider claims it: an owned, C-allocated
//! `struct verbs_sysfs_dev` (providers keep pointers into it, and the
//! library frees it with `free()` once the device's last reference is gone),
//! plus the small C-style text conversions discovery uses.

use std::ffi::CStr;
use std::os::raw::c_char;
use std::ptr::NonNull;

use crate::abi::{self, verbs_sysfs_dev};

/// An owned `verbs_sysfs_dev` (zeroed by `calloc`, like upstream's).
pub struct SysfsDev(NonNull<verbs_sysfs_dev>);

// SAFETY: a `SysfsDev` is the sole owner of its calloc'ed record (no other
// pointer to it exists until `into_raw` hands it over), the record is plain
// C data with no thread affinity, and `free` may be called from any thread;
// so moving the owner to another thread moves the ownership, like a `Box`.
// (Not `Sync`: nothing is shared.)
unsafe impl Send for SysfsDev {}

impl SysfsDev {
    /// A zeroed record, or `None` when the C allocator fails.
    pub fn new() -> Option<Self> {
        // SAFETY: calloc has no preconditions; it returns NULL (handled
        // below) or memory for one record, zeroed, and all-zero is a valid
        // value of this plain C struct.
        let p = unsafe { libc::calloc(1, std::mem::size_of::<verbs_sysfs_dev>()) };
        NonNull::new(p.cast()).map(SysfsDev)
    }

    pub fn get(&self) -> &verbs_sysfs_dev {
        // SAFETY: the pointer is calloc's non-NULL, aligned result, owned by
        // `self` and freed only in drop; `&self` rules out a `&mut` alias.
        unsafe { self.0.as_ref() }
    }

    pub fn get_mut(&mut self) -> &mut verbs_sysfs_dev {
        // SAFETY: as in `get`; `&mut self` makes this the only reference.
        unsafe { self.0.as_mut() }
    }

    pub fn as_ptr(&self) -> *mut verbs_sysfs_dev {
        self.0.as_ptr()
    }

    /// Gives up ownership (the record now belongs to a `verbs_device`).
    pub fn into_raw(self) -> *mut verbs_sysfs_dev {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    pub fn ibdev_name(&self) -> String {
        cstr(&self.get().ibdev_name)
    }
    pub fn sysfs_name(&self) -> String {
        cstr(&self.get().sysfs_name)
    }
    pub fn ibdev_path(&self) -> String {
        cstr(&self.get().ibdev_path)
    }
}

impl Drop for SysfsDev {
    fn drop(&mut self) {
        // SAFETY: the pointer came from calloc and is still owned (into_raw
        // forgets `self`, so drop never sees a handed-over record): freed
        // exactly once.
        unsafe { libc::free(self.0.as_ptr().cast()) }
    }
}

impl std::fmt::Debug for SysfsDev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = self.get();
        f.debug_struct("SysfsDev")
            .field("ibdev_name", &self.ibdev_name())
            .field("sysfs_name", &self.sysfs_name())
            .field("ibdev_path", &self.ibdev_path())
            .field("ibdev_idx", &d.ibdev_idx)
            .field("node_type", &d.node_type)
            .field("node_guid", &d.node_guid)
            .field("driver_id", &d.driver_id)
            .field("abi_ver", &d.abi_ver)
            .field("num_ports", &d.num_ports)
            .field("flags", &d.flags)
            .finish()
    }
}

/// The text of a NUL-terminated C array (lossy; for messages and tests).
pub fn cstr(a: &[c_char]) -> String {
    String::from_utf8_lossy(cbytes(a)).into_owned()
}

/// The bytes of a NUL-terminated C array, without the terminator.
pub fn cbytes(a: &[c_char]) -> &[u8] {
    // SAFETY: the same memory as `a` (valid for `a.len()` elements and
    // borrowed for the result's lifetime), viewed as u8, which has the size
    // and alignment of c_char and accepts every bit pattern.
    let b = unsafe { std::slice::from_raw_parts(a.as_ptr().cast::<u8>(), a.len()) };
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

/// Upstream's `check_snprintf(dst, sizeof(dst), "%s", src)`: copies when the
/// text and its terminator fit, else leaves `dst` truncated and returns
/// false.  `src` stops at its first NUL, like a C string.
pub fn set_cstr(dst: &mut [c_char], src: &[u8]) -> bool {
    let src = match src.iter().position(|&c| c == 0) {
        Some(n) => &src[..n],
        None => src,
    };
    if dst.is_empty() {
        return false;
    }
    let n = src.len().min(dst.len() - 1);
    for (d, s) in dst.iter_mut().zip(&src[..n]) {
        *d = *s as c_char;
    }
    dst[n] = 0;
    src.len() < dst.len()
}

/// `CStr` view of a C array that is known to be terminated.
pub fn as_cstr(a: &[c_char]) -> &CStr {
    // SAFETY: as in `cbytes`: `a` viewed as bytes for its own lifetime;
    // from_bytes_until_nul then checks for the terminator (the empty string
    // when there is none).
    let b = unsafe { std::slice::from_raw_parts(a.as_ptr().cast::<u8>(), a.len()) };
    CStr::from_bytes_until_nul(b).unwrap_or(c"")
}

/// glibc `strtoul(s, NULL, 10)`: leading white space, an optional sign,
/// decimal digits; saturates at `u64::MAX`; a minus sign negates (mod 2^64);
/// no digits give 0.
pub fn strtoul(s: &[u8]) -> u64 {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    let start = i;
    while i < s.len() && s[i].is_ascii_digit() {
        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(s[i] - b'0'))) {
            Some(x) => v = x,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return 0;
    }
    if overflow {
        return u64::MAX;
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// glibc `strtol(s, NULL, 10)` (saturating at the `i64` range).
pub fn strtol(s: &[u8]) -> i64 {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let mut v: i128 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = (v * 10 + i128::from(s[i] - b'0')).min(i128::from(i64::MAX) + 1);
        i += 1;
    }
    let v = if neg { -v } else { v };
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// One `%u` conversion of `sscanf`: white space, optional sign, at least
/// one digit.  Returns the value (wrapped to 32 bits) and the bytes used.
fn scan_u(s: &[u8]) -> Option<(u32, usize)> {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut v: u64 = 0;
    let mut overflow = false;
    while i < s.len() && s[i].is_ascii_digit() {
        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(s[i] - b'0'))) {
            Some(x) => v = x,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return None;
    }
    let v = if overflow {
        u64::MAX
    } else if neg {
        v.wrapping_neg()
    } else {
        v
    };
    Some((v as u32, i))
}

/// `sscanf(s, "%u:%u", &major, &minor) == 2` (a uverbs `dev` attribute).
pub fn parse_dev(s: &[u8]) -> Option<(u32, u32)> {
    let (major, n) = scan_u(s)?;
    let rest = s.get(n..)?;
    if rest.first() != Some(&b':') {
        return None;
    }
    let (minor, _) = scan_u(&rest[1..])?;
    Some((major, minor))
}

/// Upstream's `decode_knode_type`: the kernel's `RDMA_NODE_*` to
/// `enum ibv_node_type`.
pub fn decode_knode_type(k: u32) -> abi::ibv_node_type {
    match k {
        1 => abi::IBV_NODE_CA,
        2 => abi::IBV_NODE_SWITCH,
        3 => abi::IBV_NODE_ROUTER,
        4 => abi::IBV_NODE_RNIC,
        5 => abi::IBV_NODE_USNIC,
        6 => abi::IBV_NODE_USNIC_UDP,
        7 => abi::IBV_NODE_UNSPECIFIED,
        _ => abi::IBV_NODE_UNKNOWN,
    }
}

/// The transport upstream assigns to a device of a node type.
pub fn transport_of(node: abi::ibv_node_type) -> abi::ibv_transport_type {
    match node {
        abi::IBV_NODE_CA | abi::IBV_NODE_SWITCH | abi::IBV_NODE_ROUTER => abi::IBV_TRANSPORT_IB,
        abi::IBV_NODE_RNIC => abi::IBV_TRANSPORT_IWARP,
        abi::IBV_NODE_USNIC => abi::IBV_TRANSPORT_USNIC,
        abi::IBV_NODE_USNIC_UDP => abi::IBV_TRANSPORT_USNIC_UDP,
        abi::IBV_NODE_UNSPECIFIED => abi::IBV_TRANSPORT_UNSPECIFIED,
        _ => abi::IBV_TRANSPORT_UNKNOWN,
    }
}

/// The sysfs root as bytes (`ibv_get_sysfs_path()`).
pub fn sysfs_root() -> &'static [u8] {
    crate::sysfs::path().to_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings() {
        let mut a = [1 as c_char; 4];
        assert!(set_cstr(&mut a, b"abc"));
        assert_eq!(cstr(&a), "abc");
        assert!(!set_cstr(&mut a, b"abcd"));
        assert_eq!(cstr(&a), "abc");
        assert!(set_cstr(&mut a, b"x\0yz"));
        assert_eq!(cstr(&a), "x");
        assert_eq!(as_cstr(&a).to_bytes(), b"x");
    }

    #[test]
    fn numbers() {
        assert_eq!(strtoul(b"6"), 6);
        assert_eq!(strtoul(b"  12abc"), 12);
        assert_eq!(strtoul(b"1: CA"), 1);
        assert_eq!(strtoul(b"x"), 0);
        assert_eq!(strtoul(b"-1") as u32, u32::MAX);
        assert_eq!(strtoul(b"99999999999999999999999"), u64::MAX);
        assert_eq!(strtol(b"7"), 7);
        assert_eq!(strtol(b"-3x"), -3);
        assert_eq!(strtol(b"99999999999999999999999"), i64::MAX);
        assert_eq!(strtol(b""), 0);
    }

    #[test]
    fn dev_numbers() {
        assert_eq!(parse_dev(b"231:192"), Some((231, 192)));
        assert_eq!(parse_dev(b" 231: 7"), Some((231, 7)));
        assert_eq!(parse_dev(b"231 :7"), None);
        assert_eq!(parse_dev(b"231"), None);
        assert_eq!(parse_dev(b"a:1"), None);
        assert_eq!(parse_dev(b"1:-1"), Some((1, u32::MAX)));
    }

    #[test]
    fn node_and_transport() {
        assert_eq!(decode_knode_type(1), abi::IBV_NODE_CA);
        assert_eq!(decode_knode_type(4), abi::IBV_NODE_RNIC);
        assert_eq!(decode_knode_type(0), abi::IBV_NODE_UNKNOWN);
        assert_eq!(decode_knode_type(8), abi::IBV_NODE_UNKNOWN);
        assert_eq!(transport_of(abi::IBV_NODE_SWITCH), abi::IBV_TRANSPORT_IB);
        assert_eq!(transport_of(abi::IBV_NODE_RNIC), abi::IBV_TRANSPORT_IWARP);
        assert_eq!(transport_of(abi::IBV_NODE_UNKNOWN), abi::IBV_TRANSPORT_UNKNOWN);
    }
}
