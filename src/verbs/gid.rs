//! GID and P_Key queries (upstream's `cmd_device.c` `__ibv_query_gid_ex`,
//! `_ibv_query_gid_table` and their sysfs fallback, `verbs.c`
//! `ibv_query_pkey`).
//!
//! The kernel's `UVERBS_METHOD_QUERY_GID_ENTRY`/`_TABLE` ioctls are tried
//! first; when the kernel lacks them the answers come from
//! `<ibdev>/ports/<port>/{gids,gid_attrs/types,gid_attrs/ndevs}/<index>`.

use std::mem::size_of;
use std::os::raw::c_int;

use super::{cstr_bytes, read_ibdev_attr, scan_hx, sysfs_of};
use crate::abi::*;
use crate::ffi::{errno, set_errno};
use crate::kernel::verbs::device as kdev;

/// All attributes the sysfs fallback can fill.
pub const ALL_ATTRS: u32 = VERBS_QUERY_GID_ATTR_GID | VERBS_QUERY_GID_ATTR_TYPE | VERBS_QUERY_GID_ATTR_NDEV_IFINDEX;

/// `IF_NAMESIZE`.
const IF_NAMESIZE: usize = 16;

fn is_zero_gid(gid: &ibv_gid) -> bool {
    // SAFETY: both union views are plain bytes.
    unsafe { gid.raw == [0u8; 16] }
}

/// Parses a sysfs GID ("xxxx:xxxx:…", eight groups read with `%hx` at
/// 5-byte steps, as upstream does).
pub fn parse_sysfs_gid(text: &[u8]) -> Option<[u8; 16]> {
    let text = cstr_bytes(text);
    let mut raw = [0u8; 16];
    for i in 0..8 {
        let v = scan_hx(text.get(i * 5..)?)?;
        raw[i * 2] = (v >> 8) as u8;
        raw[i * 2 + 1] = v as u8;
    }
    Some(raw)
}

/// `query_sysfs_gid`: 0 or -1.
///
/// # Safety
/// `ctx` is an open context; `gid` is writable.
unsafe fn query_sysfs_gid(ctx: *mut ibv_context, port_num: u8, index: c_int, gid: *mut ibv_gid) -> c_int {
    let mut attr = [0u8; 41];
    // SAFETY: `ctx` is an open context (caller's contract), so `sysfs_of`
    // gives NULL or its device's valid sysfs record.
    if unsafe { read_ibdev_attr(sysfs_of(ctx), &format!("ports/{port_num}/gids/{index}"), &mut attr) } < 0 {
        return -1;
    }
    match parse_sysfs_gid(&attr) {
        Some(raw) => {
            // SAFETY: `gid` is writable (caller's contract).
            unsafe { (*gid).raw = raw };
            0
        }
        None => -1,
    }
}

/// The GID type names of sysfs `gid_attrs/types`.
pub fn sysfs_gid_type(text: &[u8]) -> Option<ibv_gid_type_sysfs> {
    match text {
        b"IB/RoCE v1" => Some(IBV_GID_TYPE_SYSFS_IB_ROCE_V1),
        b"RoCE v2" => Some(IBV_GID_TYPE_SYSFS_ROCE_V2),
        _ => None,
    }
}

/// `query_sysfs_gid_type`: 0 or -1 with errno.
///
/// # Safety
/// `ctx` is an open context.
unsafe fn query_sysfs_gid_type(ctx: *mut ibv_context, port_num: u8, index: u32, ty: &mut ibv_gid_type_sysfs) -> c_int {
    // SAFETY: `ctx` is an open context (caller's contract).
    let sysfs = unsafe { sysfs_of(ctx) };
    let mut buff = [0u8; 11];
    // errno is reset so that its value after the read tells what failed.
    set_errno(0);
    // SAFETY: `sysfs` is NULL or the valid record of an open context's
    // device.
    let read = unsafe {
        read_ibdev_attr(
            sysfs,
            &format!("ports/{port_num}/gid_attrs/types/{}", index as c_int),
            &mut buff,
        )
    };
    if read <= 0 {
        if errno() == libc::EINVAL {
            // On IB the kernel refuses to read this file with EINVAL.
            *ty = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
            return 0;
        }
        // SAFETY: the read fails with EINVAL (handled above) when `sysfs`
        // is NULL, so here it is the device's valid sysfs record, whose
        // `ibdev_path` is a NUL-terminated array.
        let ibdev_path = unsafe { std::ffi::CStr::from_ptr((*sysfs).ibdev_path.as_ptr()) };
        let dir_path = format!(
            "{}/ports/{port_num}/gid_attrs/",
            String::from_utf8_lossy(ibdev_path.to_bytes())
        );
        match std::fs::read_dir(&dir_path) {
            Err(e) => {
                let e = e.raw_os_error().unwrap_or(libc::EIO);
                set_errno(e);
                if e == libc::ENOENT {
                    // No gid_attrs at all: an old kernel, every GID is
                    // IB/RoCE v1.
                    *ty = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
                } else {
                    return -1;
                }
            }
            Ok(_) => {
                set_errno(libc::EFAULT);
                return -1;
            }
        }
    } else {
        match sysfs_gid_type(cstr_bytes(&buff)) {
            Some(t) => *ty = t,
            None => {
                set_errno(libc::ENOTSUP);
                return -1;
            }
        }
    }
    0
}

/// `query_sysfs_gid_ndev_ifindex`: 0 or an errno value.
///
/// # Safety
/// `ctx` is an open context; `out` is writable.
unsafe fn query_sysfs_gid_ndev_ifindex(ctx: *mut ibv_context, port_num: u8, gid_index: u32, out: *mut u32) -> c_int {
    let mut buff = [0u8; IF_NAMESIZE];
    // SAFETY: `ctx` is an open context (caller's contract), so `sysfs_of`
    // gives NULL or its device's valid sysfs record.
    let read = unsafe {
        read_ibdev_attr(
            sysfs_of(ctx),
            &format!("ports/{port_num}/gid_attrs/ndevs/{}", gid_index as c_int),
            &mut buff,
        )
    };
    if read <= 0 {
        // SAFETY: `out` is writable (caller's contract).
        unsafe { *out = 0 };
        return 0;
    }
    // SAFETY: the successful read NUL-terminated the name inside `buff`.
    let ifindex = unsafe { libc::if_nametoindex(buff.as_ptr().cast()) };
    // SAFETY: `out` is writable (caller's contract).
    unsafe { *out = ifindex };
    if ifindex != 0 {
        0
    } else {
        errno()
    }
}

/// `query_sysfs_gid_entry`: 0 or an errno value.  `link_layer` < 0 means
/// "query the port when needed".
///
/// # Safety
/// `ctx` is an open context; `entry` points to a writable `ibv_gid_entry`.
unsafe fn query_sysfs_gid_entry(
    ctx: *mut ibv_context,
    port_num: u32,
    gid_index: u32,
    entry: *mut ibv_gid_entry,
    attr_mask: u32,
    mut link_layer: c_int,
) -> c_int {
    // SAFETY: `entry` is a writable `ibv_gid_entry` (caller's contract).
    unsafe {
        (*entry).gid_index = gid_index;
        (*entry).port_num = port_num;
    }
    // Upstream's helpers take the port as uint8_t.
    let port8 = port_num as u8;
    if attr_mask & VERBS_QUERY_GID_ATTR_GID != 0
        // SAFETY: `ctx` is open and `entry.gid` is a writable field of the
        // caller's entry (this function's contract).
        && unsafe { query_sysfs_gid(ctx, port8, gid_index as c_int, std::ptr::addr_of_mut!((*entry).gid)) } != 0
    {
        return libc::EINVAL;
    }
    if attr_mask & VERBS_QUERY_GID_ATTR_TYPE != 0 {
        let mut ty = 0;
        // SAFETY: `ctx` is an open context (caller's contract).
        if unsafe { query_sysfs_gid_type(ctx, port8, gid_index, &mut ty) } != 0 {
            return libc::EINVAL;
        }
        let gid_type = if ty == IBV_GID_TYPE_SYSFS_IB_ROCE_V1 {
            if link_layer < 0 {
                // SAFETY: `ibv_port_attr` is a C struct of integers, valid
                // all-zero.
                let mut pa: ibv_port_attr = unsafe { std::mem::zeroed() };
                // SAFETY: `ctx` is an open context and `pa` a local with
                // exactly the size passed.
                let ret =
                    unsafe { crate::context::ops::lib_query_port(ctx, port8, &mut pa, size_of::<ibv_port_attr>()) };
                if ret != 0 {
                    return ret;
                }
                link_layer = pa.link_layer as c_int;
            }
            if link_layer == IBV_LINK_LAYER_ETHERNET as c_int {
                IBV_GID_TYPE_ROCE_V1
            } else {
                // InfiniBand, and an unspecified link layer (IB by default).
                IBV_GID_TYPE_IB
            }
        } else {
            IBV_GID_TYPE_ROCE_V2
        };
        // SAFETY: `entry` is a writable `ibv_gid_entry` (caller's contract).
        unsafe { (*entry).gid_type = gid_type };
    }
    if attr_mask & VERBS_QUERY_GID_ATTR_NDEV_IFINDEX != 0 {
        // SAFETY: `ctx` is open and `entry.ndev_ifindex` is a writable field
        // of the caller's entry.
        return unsafe {
            query_sysfs_gid_ndev_ifindex(ctx, port8, gid_index, std::ptr::addr_of_mut!((*entry).ndev_ifindex))
        };
    }
    0
}

/// Upstream's `__ibv_query_gid_ex`: 0 or an errno value (ENODATA for an
/// empty GID when the sysfs fallback answered).
///
/// # Safety
/// `ctx` is an open context; `entry` holds `entry_size` writable bytes (and
/// a whole `ibv_gid_entry` when the sysfs fallback runs, as upstream
/// assumes).
pub unsafe fn query_gid_ex(
    ctx: *mut ibv_context,
    port_num: u32,
    gid_index: u32,
    entry: *mut ibv_gid_entry,
    flags: u32,
    entry_size: usize,
    fallback_attr_mask: u32,
) -> c_int {
    // SAFETY: `entry` holds `entry_size` writable bytes (caller's contract).
    match unsafe { kdev::query_gid_entry(ctx, port_num, gid_index, flags, entry.cast(), entry_size) } {
        Ok(true) => 0,
        Err(e) => e,
        // The kernel lacks the method: sysfs.
        Ok(false) => {
            if flags != 0 {
                return libc::EOPNOTSUPP;
            }
            // SAFETY: `ctx` is open and `entry` a whole writable
            // `ibv_gid_entry` on this path (caller's contract).
            let ret = unsafe { query_sysfs_gid_entry(ctx, port_num, gid_index, entry, fallback_attr_mask, -1) };
            if ret != 0 {
                return ret;
            }
            // SAFETY: as above; the entry was just filled.
            if fallback_attr_mask & VERBS_QUERY_GID_ATTR_GID != 0 && is_zero_gid(unsafe { &(*entry).gid }) {
                return libc::ENODATA;
            }
            0
        }
    }
}

/// `query_gid_table_fb`: walks every port's GID table through sysfs,
/// keeping the non-empty GIDs.
///
/// # Safety
/// `ctx` is an open context; `entries` holds `max_entries` slots spaced
/// `entry_size` bytes apart, each with room for a whole `ibv_gid_entry`
/// (upstream's fallback makes the same assumption).
unsafe fn query_gid_table_fb(
    ctx: *mut ibv_context,
    entries: *mut ibv_gid_entry,
    max_entries: usize,
    num_entries: &mut u64,
    entry_size: usize,
) -> c_int {
    // SAFETY: `ibv_device_attr` is a C struct of integers and byte arrays,
    // valid all-zero.
    let mut dev_attr: ibv_device_attr = unsafe { std::mem::zeroed() };
    // SAFETY: `ctx` is an open context; `dev_attr` is a writable local.
    let ret = unsafe { crate::context::ops::query_device(ctx, &mut dev_attr) };
    if ret != 0 {
        return ret;
    }
    // SAFETY: `ibv_gid_entry` is a C struct of integers and a byte union,
    // valid all-zero.
    let mut scratch: ibv_gid_entry = unsafe { std::mem::zeroed() };
    let mut tmp = entries.cast::<u8>();
    *num_entries = 0;
    for i in 0..dev_attr.phys_port_cnt as u32 {
        // SAFETY: as for `dev_attr`, valid all-zero.
        let mut pa: ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: `ctx` is an open context and `pa` a local with exactly the
        // size passed.
        let ret =
            unsafe { crate::context::ops::lib_query_port(ctx, (i + 1) as u8, &mut pa, size_of::<ibv_port_attr>()) };
        if ret != 0 {
            return ret;
        }
        for j in 0..pa.gid_tbl_len.max(0) as u32 {
            // Once the caller's array is full, keep querying into a scratch
            // entry: the call still succeeds if every remaining GID is empty.
            let full = *num_entries as usize == max_entries;
            let dst: *mut ibv_gid_entry = if full { &mut scratch } else { tmp.cast() };
            // SAFETY: `dst` is either the local scratch entry or, while fewer
            // than `max_entries` were kept, slot `num_entries` of the
            // caller's array (this function's contract).
            let ret = unsafe { query_sysfs_gid_entry(ctx, i + 1, j, dst, ALL_ATTRS, pa.link_layer as c_int) };
            if ret != 0 {
                return ret;
            }
            // SAFETY: `dst` is valid as above and was just filled.
            if is_zero_gid(unsafe { &(*dst).gid }) {
                continue;
            }
            if full {
                return libc::EINVAL;
            }
            *num_entries += 1;
            tmp = tmp.wrapping_add(entry_size);
        }
    }
    0
}

/// Upstream's `_ibv_query_gid_table`: the number of entries written, or a
/// negative errno value.  errno is left as upstream leaves it, never set
/// from the value: the failed ioctl's when the kernel refused; when the
/// sysfs fallback answered, whatever that left (ENOENT from a GID file
/// that is not there, while the value is -EINVAL).
///
/// # Safety
/// `ctx` is an open context; `entries` holds `max_entries` entries of
/// `entry_size` bytes (each with room for a whole `ibv_gid_entry` when the
/// sysfs fallback runs, as upstream assumes).
pub unsafe fn query_gid_table(
    ctx: *mut ibv_context,
    entries: *mut ibv_gid_entry,
    max_entries: usize,
    flags: u32,
    entry_size: usize,
) -> isize {
    let mut num_entries: u64 = 0;
    // SAFETY: `entries` holds `max_entries * entry_size` writable bytes
    // (caller's contract).
    let ret = match unsafe { kdev::query_gid_table(ctx, entries.cast(), max_entries, flags, entry_size) } {
        Ok(Some(n)) => {
            num_entries = n;
            0
        }
        Err(e) => e,
        // The kernel lacks the method: sysfs.
        Ok(None) => {
            if flags != 0 {
                return -(libc::EOPNOTSUPP as isize);
            }
            // SAFETY: `ctx` is open and `entries` has the layout the
            // fallback needs (caller's contract).
            unsafe { query_gid_table_fb(ctx, entries, max_entries, &mut num_entries, entry_size) }
        }
    };
    if ret != 0 {
        return -(ret as isize);
    }
    num_entries as isize
}

/// `ibv_query_gid_type`'s mapping of a GID entry type to the sysfs names.
pub fn sysfs_type_of(gid_type: u32) -> ibv_gid_type_sysfs {
    if gid_type == IBV_GID_TYPE_IB || gid_type == IBV_GID_TYPE_ROCE_V1 {
        IBV_GID_TYPE_SYSFS_IB_ROCE_V1
    } else {
        IBV_GID_TYPE_SYSFS_ROCE_V2
    }
}

/// `ibv_query_pkey`: the P_Key at `index` (network byte order), from
/// `ports/<port>/pkeys/<index>`; `None` when it cannot be read or parsed.
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn query_pkey(ctx: *mut ibv_context, port_num: u8, index: c_int) -> Option<u16> {
    let mut attr = [0u8; 8];
    // SAFETY: `ctx` is an open context (caller's contract), so `sysfs_of`
    // gives NULL or its device's valid sysfs record.
    if unsafe { read_ibdev_attr(sysfs_of(ctx), &format!("ports/{port_num}/pkeys/{index}"), &mut attr) } < 0 {
        return None;
    }
    let v = scan_hx(cstr_bytes(&attr))?;
    Some(v.to_be())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_text() {
        let g = parse_sysfs_gid(b"fe80:0000:0000:0000:0202:c9ff:fe03:0405\0").unwrap();
        assert_eq!(
            g,
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x02, 0xc9, 0xff, 0xfe, 0x03, 0x04, 0x05]
        );
        let g = parse_sysfs_gid(b"0000:0000:0000:0000:0000:ffff:c0a8:0102").unwrap();
        assert_eq!(&g[10..], &[0xff, 0xff, 0xc0, 0xa8, 0x01, 0x02]);
        assert_eq!(parse_sysfs_gid(b"fe80:0000:0000\0"), None);
        assert_eq!(parse_sysfs_gid(b""), None);
    }

    #[test]
    fn gid_types() {
        assert_eq!(sysfs_gid_type(b"IB/RoCE v1"), Some(IBV_GID_TYPE_SYSFS_IB_ROCE_V1));
        assert_eq!(sysfs_gid_type(b"RoCE v2"), Some(IBV_GID_TYPE_SYSFS_ROCE_V2));
        assert_eq!(sysfs_gid_type(b"RoCE v3"), None);
        assert_eq!(sysfs_type_of(IBV_GID_TYPE_IB), IBV_GID_TYPE_SYSFS_IB_ROCE_V1);
        assert_eq!(sysfs_type_of(IBV_GID_TYPE_ROCE_V1), IBV_GID_TYPE_SYSFS_IB_ROCE_V1);
        assert_eq!(sysfs_type_of(IBV_GID_TYPE_ROCE_V2), IBV_GID_TYPE_SYSFS_ROCE_V2);
    }

    #[test]
    fn cap_bit_is_async_event_slot() {
        // Upstream records "the kernel lacks the GID query ioctls" under the
        // bit of the `async_event` op (`query_gid_kernel_cap`).
        // (slot 9 of rdma-core 65's table, the library's layout)
        assert_eq!(crate::kernel::methods::QUERY_GID_ENTRY.op, Some(9));
        assert_eq!(crate::kernel::methods::QUERY_GID_TABLE.op, Some(9));
    }
}
