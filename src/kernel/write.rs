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
///
/// # Safety
/// `ctx` is an open context; `req` has `req_size` readable bytes and `resp`
/// (unless `resp_size` is 0) `resp_size` writable bytes, until this returns.
#[allow(clippy::too_many_arguments)] // mirrors upstream's ioctl_write
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
    // SAFETY: no linked blocks (null chain).
    let mut b = unsafe { OwnedCmdBuf::new(obj::DEVICE, method::INVOKE_WRITE, 5, core::ptr::null_mut()) };
    b.fill_in_u64(attr::WRITE_CMD, write_method as u64);
    if core_req_size != 0 {
        // SAFETY: the first `core_req_size <= req_size` bytes of `req` are
        // readable (caller's contract) until the ioctl below.
        unsafe { b.fill_in(attr::CORE_IN, req, core_req_size) };
    }
    if core_resp_size != 0 {
        b.fill_out(attr::CORE_OUT, resp, core_resp_size);
    }
    if req_size > core_req_size {
        // SAFETY: `req` has `req_size` readable bytes, so the driver data
        // after the core request is in bounds and readable.
        unsafe {
            b.fill_in(
                super::uapi::UVERBS_ATTR_UHW_IN,
                req.add(core_req_size),
                req_size - core_req_size,
            )
        };
    }
    if resp_size > core_resp_size {
        // SAFETY: `resp` has `resp_size` bytes, so the offset stays in bounds.
        let uhw_out = unsafe { resp.add(core_resp_size) };
        b.fill_out(super::uapi::UVERBS_ATTR_UHW_OUT, uhw_out, resp_size - core_resp_size);
    }
    // SAFETY: `ctx` is open; `b` is a single block sized for its own five
    // attributes, whose buffers are live per the contract above.
    unsafe { execute(ctx, b.as_ptr()) }
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
/// `ctx` is an open context; `req` has `req_size` bytes (at least the
/// header), `resp` (unless null) `resp_size` bytes.
#[allow(clippy::too_many_arguments)] // mirrors upstream's _execute_cmd_write
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
        // SAFETY: `req` starts with the header (`HDR <= core_req_size <=
        // req_size`), so what follows it has `req_size - HDR` bytes; `resp`
        // as given (caller's contract).
        return unsafe {
            ioctl_write(
                ctx,
                write_method,
                req.add(HDR),
                core_req_size - HDR,
                req_size - HDR,
                resp,
                core_resp_size,
                resp_size,
            )
        };
    }
    let hdr = req.cast::<ib_uverbs_cmd_hdr>();
    // SAFETY: `req` has room for the header (caller's contract); the write is
    // unaligned-tolerant.
    unsafe {
        hdr.write_unaligned(ib_uverbs_cmd_hdr {
            command: write_method,
            in_words: (req_size / 4) as u16,
            out_words: (resp_size / 4) as u16,
        })
    };
    // SAFETY: `ctx` is open and `req` has `req_size` readable bytes.
    unsafe { write_all(ctx, req, req_size) }
}

/// `_execute_cmd_write_ex`: an extended command.  `req` points at the
/// `ex_hdr`; `core_req_size` is header + core request, `req_size` adds the
/// driver data; `core_resp_size` / `resp_size` are the core response and
/// core + driver response.
///
/// # Safety
/// As for [`cmd_write`], with the `ex_hdr` in place of the header.
#[allow(clippy::too_many_arguments)] // mirrors upstream's _execute_cmd_write_ex
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
        // SAFETY: `req` starts with the `ex_hdr` (`EX_HDR <= core_req_size
        // <= req_size`); `resp` as given (caller's contract).
        return unsafe {
            ioctl_write(
                ctx,
                IB_USER_VERBS_CMD_FLAG_EXTENDED | write_method,
                req.add(EX_HDR),
                core_req_size - EX_HDR,
                req_size - EX_HDR,
                resp,
                core_resp_size,
                resp_size,
            )
        };
    }
    let h = req.cast::<ex_hdr>();
    // SAFETY: `req` has room for the `ex_hdr` (caller's contract); read and
    // written back unaligned.
    let mut v: ex_hdr = unsafe { h.read_unaligned() };
    v.hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | write_method;
    v.hdr.in_words = ((core_req_size - EX_HDR) / 8) as u16;
    v.hdr.out_words = (core_resp_size / 8) as u16;
    v.ex_hdr.provider_in_words = ((req_size - core_req_size) / 8) as u16;
    v.ex_hdr.provider_out_words = ((resp_size - core_resp_size) / 8) as u16;
    v.ex_hdr.response = resp as usize as u64;
    v.ex_hdr.cmd_hdr_reserved = 0;
    // SAFETY: as for the read above.
    unsafe { h.write_unaligned(v) };
    // The response buffer starts zeroed, as the ioctl path guarantees.
    if !resp.is_null() {
        // SAFETY: a non-null `resp` has `resp_size` writable bytes (contract).
        unsafe { core::ptr::write_bytes(resp, 0, resp_size) };
    }
    // SAFETY: `ctx` is open and `req` has `req_size` readable bytes.
    unsafe { write_all(ctx, req, req_size) }
}

/// Writes the command to the context's `cmd_fd`.
///
/// # Safety
/// `ctx` is an open context; `req` has `len` readable bytes.
unsafe fn write_all(ctx: *mut ibv_context, req: *const u8, len: usize) -> c_int {
    // SAFETY: `ctx` is open (contract), so `cmd_fd` is readable; `req` has
    // `len` readable bytes for write(2).
    let n = unsafe { libc::write((*ctx).cmd_fd, req.cast(), len) };
    if n != len as isize {
        let e = errno();
        return if e == 0 { libc::EIO } else { e };
    }
    0
}
