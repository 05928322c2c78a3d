//! The `ibv_cmd_*` operations of provider ABI 34, on top of the one builder
//! ([`super::builder::Cmd`]) and the method table ([`super::methods`]).
//!
//! Each function has upstream's contract: it returns 0 or an errno value,
//! fills in the object fields upstream fills (handles, context pointers, the
//! `verbs_*` wrapper fields, `cqe`, `qp_num`, keys …), and leaves the same
//! things in the provider's command and response buffers.  Pointers are the
//! provider's; they are trusted as upstream trusts them.

pub mod cq;
pub mod device;
pub mod flow;
pub mod misc;
pub mod qp;
pub mod srq;
pub mod v65;
pub mod wq;

use std::os::raw::c_int;

use crate::abi::ibv_context;

use super::builder::{Cmd, Method, Path};

/// Runs a write-only command whose request the caller filled in place:
/// `cmd` is `[header][core][driver data]` of `cmd_size` bytes, its first
/// `size_of::<Req>()` bytes the library's; `resp` likewise.
///
/// # Safety
/// `ctx` is an open context; `cmd` has `cmd_size` and `resp` `resp_size`
/// bytes, valid until this returns.
pub(crate) unsafe fn write_cmd<Req, Resp>(
    ctx: *mut ibv_context,
    m: &'static Method,
    cmd: *mut Req,
    cmd_size: usize,
    resp: *mut Resp,
    resp_size: usize,
) -> Result<Cmd, c_int> {
    // SAFETY: the buffers are valid for their sizes until this returns
    // (caller's contract), and `c` runs before that.
    let mut c = unsafe {
        Cmd::write_only(
            ctx,
            m,
            cmd.cast(),
            core::mem::size_of::<Req>(),
            cmd_size,
            resp.cast(),
            core::mem::size_of::<Resp>(),
            resp_size,
        )
    };
    // SAFETY: as above; `ctx` is open.
    unsafe { c.exec() }?;
    Ok(c)
}

/// As [`write_cmd`] for commands without a response.
///
/// # Safety
/// As for [`write_cmd`].
pub(crate) unsafe fn write_req<Req>(
    ctx: *mut ibv_context,
    m: &'static Method,
    cmd: *mut Req,
    cmd_size: usize,
) -> c_int {
    // SAFETY: `cmd` has `cmd_size` bytes until this returns (caller's
    // contract); there is no response buffer.
    let mut c = unsafe {
        Cmd::write_only(
            ctx,
            m,
            cmd.cast(),
            core::mem::size_of::<Req>(),
            cmd_size,
            core::ptr::null_mut(),
            0,
            0,
        )
    };
    // SAFETY: as above; `ctx` is open.
    match unsafe { c.exec() } {
        Ok(_) => 0,
        Err(e) => e,
    }
}

/// A destroy command: one handle attribute, the legacy request's only
/// member (or the extended request's handle member), upstream's treatment
/// of EIO after disassociation.
///
/// # Safety
/// `ctx` is an open context.
pub(crate) unsafe fn destroy(
    ctx: *mut ibv_context,
    m: &'static Method,
    attr_id: u16,
    handle: u32,
    place: super::builder::Place,
) -> c_int {
    // SAFETY: `ctx` is open (caller's contract); no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, m, 1, core::ptr::null_mut()) };
    if m.write.is_some() {
        c.in_obj(attr_id, handle).w(place);
    } else {
        c.in_obj(attr_id, handle).wx(place);
    }
    // SAFETY: the command holds only a handle value, no pointers.
    let mut ret = match unsafe { c.exec() } {
        Ok(_) => 0,
        Err(e) => e,
    };
    if super::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

/// Upstream's `check_comp_mask`: no bits outside `supported`.
pub(crate) fn check_comp_mask(input: u32, supported: u32) -> bool {
    input & !supported == 0
}

/// `container_of` for the `verbs_*` wrappers, whose public object is their
/// first member.
pub(crate) fn outer<T, U>(p: *mut U) -> *mut T {
    p.cast()
}

/// Waits, under the object's mutex, until `done()` (the kernel's event
/// count has been acknowledged by the application).
///
/// # Safety
/// `mutex` and `cond` belong to a live object.
pub(crate) unsafe fn wait_events(
    mutex: *mut libc::pthread_mutex_t,
    cond: *mut libc::pthread_cond_t,
    done: impl Fn() -> bool,
) {
    // SAFETY: `mutex` and `cond` are the initialised pthread objects of a
    // live object (caller's contract); the mutex is held around every wait
    // and released at the end, as pthread_cond_wait requires.
    unsafe {
        libc::pthread_mutex_lock(mutex);
        while !done() {
            libc::pthread_cond_wait(cond, mutex);
        }
        libc::pthread_mutex_unlock(mutex);
    }
}

pub(crate) fn ok(r: Result<Path, c_int>) -> c_int {
    match r {
        Ok(_) => 0,
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests;
