//! A local command builder for the few kernel commands the public verbs
//! issue themselves (QUERY_GID_ENTRY / QUERY_GID_TABLE, CREATE_COMP_CHANNEL).
//!
//! It mirrors upstream's `DECLARE_COMMAND_BUFFER` + `fill_attr_*` +
//! `execute_ioctl_fallback` + `execute_cmd_write` and goes through the
//! exported `execute_ioctl` entry point, so it works with whatever the
//! kernel command layer implements behind it.  Meant to be replaced by the
//! shared builder of that layer once it exists.

use std::os::raw::{c_int, c_void};

use crate::abi::*;
use crate::context::{priv_of, VERBS_OPS_NUM};

extern "C" {
    fn execute_ioctl(context: *mut ibv_context, cmd: *mut ibv_command_buffer) -> c_int;
}

pub const UVERBS_ATTR_F_MANDATORY: u16 = 1;
pub const UVERBS_OBJECT_DEVICE: u16 = 0;
pub const UVERBS_METHOD_INVOKE_WRITE: u16 = 0;
pub const UVERBS_METHOD_QUERY_GID_TABLE: u16 = 5;
pub const UVERBS_METHOD_QUERY_GID_ENTRY: u16 = 6;
pub const UVERBS_ATTR_CORE_IN: u16 = 0;
pub const UVERBS_ATTR_CORE_OUT: u16 = 1;
pub const UVERBS_ATTR_WRITE_CMD: u16 = 2;
pub const UVERBS_ATTR_UHW_IN: u16 = 0x1000;
pub const UVERBS_ATTR_UHW_OUT: u16 = 0x1001;

/// `_UHW_NO_INDEX`.
const UHW_NO_INDEX: u8 = 0xff;
/// `ibv_command_buffer` flag bits.
const FLAG_BUFFER_ERROR: u8 = 1 << 0;
const FLAG_FALLBACK_REQUIRE_EX: u8 = 1 << 1;
const FLAG_FALLBACK_IOCTL_ONLY: u8 = 1 << 2;

/// A command buffer with room for `N` attributes, laid out like upstream's
/// `DECLARE_COMMAND_BUFFER(…, N)` (the attribute array continues the
/// header's flexible array).  The attribute cursor pointers are set right
/// before execution, so the value may be moved while being filled.
#[repr(C)]
pub struct CmdBuf<const N: usize> {
    cmd: ibv_command_buffer,
    attrs: [ib_uverbs_attr; N],
    used: usize,
}

impl<const N: usize> CmdBuf<N> {
    pub fn new(object_id: u16, method_id: u16) -> Self {
        CmdBuf {
            cmd: ibv_command_buffer {
                next: std::ptr::null_mut(),
                next_attr: std::ptr::null_mut(),
                last_attr: std::ptr::null_mut(),
                uhw_in_idx: UHW_NO_INDEX,
                uhw_out_idx: UHW_NO_INDEX,
                uhw_in_headroom_dwords: 0,
                uhw_out_headroom_dwords: 0,
                flags: 0,
                hdr: ib_uverbs_ioctl_hdr {
                    object_id,
                    method_id,
                    ..Default::default()
                },
            },
            attrs: [ib_uverbs_attr::default(); N],
            used: 0,
        }
    }

    /// `_ioctl_next_attr`: a fresh mandatory attribute.
    fn next(&mut self, attr_id: u16) -> &mut ib_uverbs_attr {
        assert!(self.used < N, "command buffer too small");
        let a = &mut self.attrs[self.used];
        self.used += 1;
        *a = ib_uverbs_attr {
            attr_id,
            flags: UVERBS_ATTR_F_MANDATORY,
            ..Default::default()
        };
        a
    }

    /// `fill_attr_const_in` / `fill_attr_in_uint64`.
    pub fn const_in(&mut self, attr_id: u16, v: u64) {
        let a = self.next(attr_id);
        a.len = 8;
        a.data = v;
    }

    /// `fill_attr_in_uint32`.
    pub fn in_u32(&mut self, attr_id: u16, v: u32) {
        let a = self.next(attr_id);
        a.len = 4;
        let mut d = [0u8; 8];
        d[..4].copy_from_slice(&v.to_ne_bytes());
        a.data = u64::from_ne_bytes(d);
    }

    /// `fill_attr_in`: data up to 8 bytes travels inline, longer data by
    /// pointer.
    ///
    /// # Safety
    /// `data` points to `len` readable bytes that outlive the execution.
    pub unsafe fn in_bytes(&mut self, attr_id: u16, data: *const c_void, len: usize) {
        if len > u16::MAX as usize {
            self.cmd.flags |= FLAG_BUFFER_ERROR;
        }
        let a = self.next(attr_id);
        a.len = len as u16;
        if len <= 8 {
            let mut d = [0u8; 8];
            std::ptr::copy_nonoverlapping(data.cast::<u8>(), d.as_mut_ptr(), len);
            a.data = u64::from_ne_bytes(d);
        } else {
            a.data = data as u64;
        }
    }

    /// `fill_attr_out`.
    pub fn out(&mut self, attr_id: u16, data: *mut c_void, len: usize) {
        if len > u16::MAX as usize {
            self.cmd.flags |= FLAG_BUFFER_ERROR;
        }
        let a = self.next(attr_id);
        a.len = len as u16;
        a.data = data as u64;
    }

    /// `execute_ioctl`: 0 or an errno value.
    ///
    /// # Safety
    /// `ctx` is an open context; every pointer filled in is still valid.
    pub unsafe fn execute(&mut self, ctx: *mut ibv_context) -> c_int {
        let first = self.attrs.as_mut_ptr();
        self.cmd.next_attr = first.add(self.used);
        self.cmd.last_attr = first.add(N);
        execute_ioctl(ctx, &mut self.cmd)
    }
}

/// Result of `execute_ioctl_fallback`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// The ioctl ran and succeeded.
    Success,
    /// The kernel lacks the ioctl: use the legacy path.
    TryWrite,
    /// The legacy path must be the extended write() command.
    TryWriteEx,
    /// Failure with this errno value.
    Error(c_int),
}

/// The bit of `unsupported_ioctls` upstream uses for an op: its slot index
/// in `verbs_context_ops`.
pub const fn cmd_bit(offset: usize) -> usize {
    offset / std::mem::size_of::<usize>()
}

/// `_check_legacy` for a buffer without links.
fn check_legacy(flags: u8) -> Fallback {
    if flags & FLAG_FALLBACK_IOCTL_ONLY != 0 {
        crate::ffi::set_errno(libc::EOPNOTSUPP);
        return Fallback::Error(libc::EOPNOTSUPP);
    }
    if flags & FLAG_FALLBACK_REQUIRE_EX != 0 {
        return Fallback::TryWriteEx;
    }
    Fallback::TryWrite
}

/// Upstream's `execute_ioctl_fallback`: remembers per context which ioctl
/// methods the kernel lacks (ENOTTY: the whole ioctl interface;
/// EPROTONOSUPPORT: this method) and sends callers to their legacy path.
///
/// # Safety
/// `ctx` is an open context created through the provider ABI.
pub unsafe fn execute_ioctl_fallback<const N: usize>(
    ctx: *mut ibv_context,
    bit: usize,
    cmd: &mut CmdBuf<N>,
) -> Fallback {
    let p = priv_of(ctx);
    if !p.is_null() && (*p).is_unsupported(bit) {
        return check_legacy(cmd.cmd.flags);
    }
    // A software device (no kernel command fd) has no ioctl interface: take
    // the legacy path (its sysfs-shaped description) as for an old kernel.
    if (*ctx).cmd_fd < 0 {
        return check_legacy(cmd.cmd.flags);
    }
    let ret = cmd.execute(ctx);
    if ret == 0 {
        return Fallback::Success;
    }
    if ret == libc::ENOTTY {
        if !p.is_null() {
            for b in 0..VERBS_OPS_NUM {
                (*p).set_unsupported(b);
            }
        }
        return check_legacy(cmd.cmd.flags);
    }
    if ret == libc::EPROTONOSUPPORT {
        if !p.is_null() {
            (*p).set_unsupported(bit);
        }
        return check_legacy(cmd.cmd.flags);
    }
    Fallback::Error(ret)
}

/// `struct ib_uverbs_cmd_hdr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ib_uverbs_cmd_hdr {
    pub command: u32,
    pub in_words: u16,
    pub out_words: u16,
}

/// Upstream's `_execute_cmd_write`: `req` starts with an
/// `ib_uverbs_cmd_hdr`; the core request is `core_req_size` bytes of it
/// (header included), the whole request `req_size`.  Goes through the
/// ioctl "invoke write" method when the kernel has it, else write() on the
/// command fd.  0 or an errno value (errno is set as well).
///
/// # Safety
/// `ctx` is an open context; the buffers hold the sizes given.
#[allow(clippy::too_many_arguments)]
pub unsafe fn execute_cmd_write(
    ctx: *mut ibv_context,
    write_method: u32,
    req: *mut u8,
    core_req_size: usize,
    req_size: usize,
    resp: *mut u8,
    core_resp_size: usize,
    resp_size: usize,
) -> c_int {
    let hdr = std::mem::size_of::<ib_uverbs_cmd_hdr>();
    let p = priv_of(ctx);
    if !p.is_null() && (*p).use_ioctl_write {
        let mut cmd = CmdBuf::<5>::new(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
        cmd.const_in(UVERBS_ATTR_WRITE_CMD, write_method as u64);
        let body = req.add(hdr);
        let core_in = core_req_size - hdr;
        let all_in = req_size - hdr;
        if core_in != 0 {
            cmd.in_bytes(UVERBS_ATTR_CORE_IN, body.cast(), core_in);
        }
        if core_resp_size != 0 {
            cmd.out(UVERBS_ATTR_CORE_OUT, resp.cast(), core_resp_size);
        }
        if all_in - core_in != 0 {
            cmd.in_bytes(UVERBS_ATTR_UHW_IN, body.add(core_in).cast(), all_in - core_in);
        }
        if resp_size - core_resp_size != 0 {
            cmd.out(
                UVERBS_ATTR_UHW_OUT,
                resp.add(core_resp_size).cast(),
                resp_size - core_resp_size,
            );
        }
        return cmd.execute(ctx);
    }
    let h = req.cast::<ib_uverbs_cmd_hdr>();
    (*h).command = write_method;
    (*h).in_words = (req_size / 4) as u16;
    (*h).out_words = (resp_size / 4) as u16;
    if libc::write((*ctx).cmd_fd, req.cast(), req_size) != req_size as isize {
        return crate::ffi::errno();
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layout_continues_header() {
        // The attributes must start where the header's flexible array does.
        assert_eq!(offset_of!(CmdBuf<4>, attrs), size_of::<ibv_command_buffer>());
        assert_eq!(size_of::<ib_uverbs_cmd_hdr>(), 8);
    }

    #[test]
    fn fill() {
        let mut c = CmdBuf::<4>::new(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY);
        c.const_in(0, 7);
        c.in_u32(2, 0xdead_beef);
        let mut out = [0u8; 32];
        c.out(3, out.as_mut_ptr().cast(), out.len());
        assert_eq!(c.used, 3);
        assert_eq!(c.attrs[0].data, 7);
        assert_eq!(c.attrs[0].flags, UVERBS_ATTR_F_MANDATORY);
        assert_eq!(c.attrs[1].len, 4);
        assert_eq!(c.attrs[1].data as u32, 0xdead_beef);
        assert_eq!(c.attrs[2].data, out.as_ptr() as u64);
        assert_eq!(c.cmd.flags, 0);
        assert_eq!(c.cmd.uhw_in_idx, 0xff);
        c.out(3, std::ptr::null_mut(), 70000);
        assert_eq!(c.cmd.flags & FLAG_BUFFER_ERROR, FLAG_BUFFER_ERROR);
    }

    #[test]
    fn inline_in() {
        let mut c = CmdBuf::<2>::new(0, 0);
        let v = 0x1122_3344_5566_7788u64;
        // SAFETY: a local value of 8 bytes.
        unsafe { c.in_bytes(0, (&v as *const u64).cast(), 8) };
        assert_eq!(c.attrs[0].data, v);
        let big = [0u8; 16];
        // SAFETY: a local array.
        unsafe { c.in_bytes(1, big.as_ptr().cast(), 16) };
        assert_eq!(c.attrs[1].data, big.as_ptr() as u64);
    }

    #[test]
    fn legacy() {
        assert_eq!(check_legacy(0), Fallback::TryWrite);
        assert_eq!(check_legacy(FLAG_FALLBACK_REQUIRE_EX), Fallback::TryWriteEx);
        assert_eq!(
            check_legacy(FLAG_FALLBACK_IOCTL_ONLY),
            Fallback::Error(libc::EOPNOTSUPP)
        );
    }
}
