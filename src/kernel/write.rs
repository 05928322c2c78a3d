//! The `write()` command ABI: a command is `struct ib_uverbs_cmd_hdr` (or,
//! for extended commands, `ib_uverbs_cmd_hdr` + `ib_uverbs_ex_cmd_hdr`),
//! the kernel's request struct and the driver's private data (UHW), written
//! to the context's `cmd_fd`; the kernel writes the response, followed by the
//! driver's private response data, to the address carried in the request.
//!
//! On kernels that have the ioctl framework the same commands are sent as
//! the `INVOKE_WRITE` method of the device object instead (upstream's
//! `use_ioctl_write`), with the core and driver parts as separate attributes.

use std::os::raw::c_int;

use crate::abi::ibv_context;
use crate::ffi::errno;

use super::ioctl::{execute, OwnedCmdBuf};
use super::uapi::{attr, ex_hdr, ib_uverbs_cmd_hdr, method, obj, IB_USER_VERBS_CMD_FLAG_EXTENDED};

const HDR: usize = core::mem::size_of::<ib_uverbs_cmd_hdr>();
const EX_HDR: usize = core::mem::size_of::<ex_hdr>();

/// `ioctl_write`: one write command as the INVOKE_WRITE method.
/// `req` is the core request (after the header(s)), `resp` the core
/// response; the driver parts directly follow each.
#[allow(clippy::too_many_arguments)]
unsafe fn ioctl_write(
    ctx: *mut ibv_context,
    write_method: u32,
    req: *const u8,
    core_req_size: usize,
    req_size: usize,
    resp: *mut u8,
    core_resp_size: usize,
    resp_size: usize,
) -> c_int {
    let mut b = OwnedCmdBuf::new(obj::DEVICE, method::INVOKE_WRITE, 5, core::ptr::null_mut());
    b.fill_in_u64(attr::WRITE_CMD, write_method as u64);
    if core_req_size != 0 {
        b.fill_in(attr::CORE_IN, req, core_req_size);
    }
    if core_resp_size != 0 {
        b.fill_out(attr::CORE_OUT, resp, core_resp_size);
    }
    if req_size > core_req_size {
        b.fill_in(
            super::uapi::UVERBS_ATTR_UHW_IN,
            req.add(core_req_size),
            req_size - core_req_size,
        );
    }
    if resp_size > core_resp_size {
        b.fill_out(
            super::uapi::UVERBS_ATTR_UHW_OUT,
            resp.add(core_resp_size),
            resp_size - core_resp_size,
        );
    }
    execute(ctx, b.as_ptr())
}

fn use_ioctl_write(ctx: *mut ibv_context) -> bool {
    // SAFETY: ctx is a live context (callers' contract).
    unsafe { super::state::of(ctx).is_some_and(|s| s.use_ioctl_write()) }
}

/// `_execute_cmd_write`: a legacy command.  `req` points at the command
/// header; `core_req_size` and `req_size` include it (`req_size` also the
/// driver data); `core_resp_size` / `resp_size` likewise for the response.
/// The caller has already put the response address into the request.
///
/// # Safety
/// `req` has `req_size` bytes, `resp` (unless null) `resp_size` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn cmd_write(
    ctx: *mut ibv_context,
    write_method: u32,
    req: *mut u8,
    core_req_size: usize,
    req_size: usize,
    resp: *mut u8,
    core_resp_size: usize,
    resp_size: usize,
) -> c_int {
    if use_ioctl_write(ctx) {
        return ioctl_write(
            ctx,
            write_method,
            req.add(HDR),
            core_req_size - HDR,
            req_size - HDR,
            resp,
            core_resp_size,
            resp_size,
        );
    }
    let hdr = req.cast::<ib_uverbs_cmd_hdr>();
    hdr.write_unaligned(ib_uverbs_cmd_hdr {
        command: write_method,
        in_words: (req_size / 4) as u16,
        out_words: (resp_size / 4) as u16,
    });
    write_all(ctx, req, req_size)
}

/// `_execute_cmd_write_ex`: an extended command.  `req` points at the
/// `ex_hdr`; `core_req_size` is header + core request, `req_size` adds the
/// driver data; `core_resp_size` / `resp_size` are the core response and
/// core + driver response.
///
/// # Safety
/// As for [`cmd_write`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn cmd_write_ex(
    ctx: *mut ibv_context,
    write_method: u32,
    req: *mut u8,
    core_req_size: usize,
    req_size: usize,
    resp: *mut u8,
    core_resp_size: usize,
    resp_size: usize,
) -> c_int {
    if use_ioctl_write(ctx) {
        return ioctl_write(
            ctx,
            IB_USER_VERBS_CMD_FLAG_EXTENDED | write_method,
            req.add(EX_HDR),
            core_req_size - EX_HDR,
            req_size - EX_HDR,
            resp,
            core_resp_size,
            resp_size,
        );
    }
    let h = req.cast::<ex_hdr>();
    let mut v: ex_hdr = h.read_unaligned();
    v.hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | write_method;
    v.hdr.in_words = ((core_req_size - EX_HDR) / 8) as u16;
    v.hdr.out_words = (core_resp_size / 8) as u16;
    v.ex_hdr.provider_in_words = ((req_size - core_req_size) / 8) as u16;
    v.ex_hdr.provider_out_words = ((resp_size - core_resp_size) / 8) as u16;
    v.ex_hdr.response = resp as usize as u64;
    v.ex_hdr.cmd_hdr_reserved = 0;
    h.write_unaligned(v);
    // The response buffer starts zeroed, as the ioctl path guarantees.
    if !resp.is_null() {
        core::ptr::write_bytes(resp, 0, resp_size);
    }
    write_all(ctx, req, req_size)
}

unsafe fn write_all(ctx: *mut ibv_context, req: *const u8, len: usize) -> c_int {
    let n = libc::write((*ctx).cmd_fd, req.cast(), len);
    if n != len as isize {
        let e = errno();
        return if e == 0 { libc::EIO } else { e };
    }
    0
}
