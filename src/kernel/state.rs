//! Per-context state of the command layer.
//!
//! Upstream keeps, in the library-private `verbs_ex_private` of every
//! `verbs_context`: the kernel driver id (sent in every ioctl header),
//! whether `write()` commands travel as the `INVOKE_WRITE` ioctl method,
//! whether the context was imported, and a bitmap of the
//! `verbs_context_ops` slots whose ioctl the kernel turned down (ENOTTY /
//! EPROTONOSUPPORT), after which only the `write()` form is tried.  Here
//! that is the context layer's [`ContextPrivate`]; this module is the
//! command layer's only way in.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::abi::{ibv_context, verbs_context_ops};
use crate::context::ContextPrivate;

/// `VERBS_OPS_NUM`: number of operation slots in `verbs_context_ops`.
pub const VERBS_OPS_NUM: usize = core::mem::size_of::<verbs_context_ops>() / core::mem::size_of::<usize>();

// The context layer's bitmap must have a bit for every operation slot.
const _: () = assert!(VERBS_OPS_NUM <= crate::context::VERBS_OPS_NUM);

/// The command layer's view of a context's private data.
#[derive(Clone, Copy)]
pub struct CmdState<'a>(&'a ContextPrivate);

impl CmdState<'_> {
    pub fn driver_id(&self) -> u32 {
        self.0.driver_id
    }
    pub fn use_ioctl_write(&self) -> bool {
        self.0.use_ioctl_write
    }
    pub fn imported(&self) -> bool {
        self.0.imported
    }
    /// Was the ioctl of operation slot `bit` turned down before?
    pub fn unsupported(&self, bit: usize) -> bool {
        self.0.is_unsupported(bit)
    }
    pub fn mark_unsupported(&self, bit: usize) {
        self.0.set_unsupported(bit)
    }
    /// ENOTTY: no ioctl framework at all, so no slot has an ioctl.
    pub fn mark_all_unsupported(&self) {
        for bit in 0..VERBS_OPS_NUM {
            self.0.set_unsupported(bit);
        }
    }
}

/// The state of `ctx`, or `None` for a context without private data (then:
/// driver id 0, raw `write()` commands, every ioctl tried, not imported).
///
/// # Safety
/// `ctx` is null or the `context` member of a live `verbs_context`
/// initialised by the context layer.
pub unsafe fn of<'a>(ctx: *mut ibv_context) -> Option<CmdState<'a>> {
    if ctx.is_null() {
        return None;
    }
    let p = crate::context::priv_of(ctx);
    if p.is_null() {
        None
    } else {
        Some(CmdState(&*p))
    }
}

/// Was `ctx` imported (`ibv_import_device`)?  Such contexts never fall
/// back to `write()` for object creation.
///
/// # Safety
/// As for [`of`].
pub unsafe fn imported(ctx: *mut ibv_context) -> bool {
    of(ctx).is_some_and(|s| s.imported())
}

/// The slot index of a `verbs_context_ops` member: upstream's `_CMD_BIT`.
#[macro_export]
#[doc(hidden)]
macro_rules! op_bit {
    ($op:ident) => {
        core::mem::offset_of!($crate::abi::verbs_context_ops, $op) / core::mem::size_of::<usize>()
    };
}
pub use crate::op_bit;

/// Upstream's `has_ioctl_write()`: does the kernel take `write()` commands
/// through the `INVOKE_WRITE` ioctl method?  Probed once per context, with a
/// QUERY_DEVICE whose request is too short (the kernel answers ENOSPC when
/// the method exists).
///
/// # Safety
/// `ctx` must be an open context (valid `cmd_fd`).
pub unsafe fn has_ioctl_write(ctx: *mut ibv_context) -> bool {
    use super::uapi::{attr, cmd, method, obj};
    let mut b = super::ioctl::OwnedCmdBuf::new(obj::DEVICE, method::INVOKE_WRITE, 1, core::ptr::null_mut());
    b.fill_in_u64(attr::WRITE_CMD, cmd::QUERY_DEVICE as u64);
    let rc = super::ioctl::execute(ctx, b.as_ptr());
    !(rc == libc::EPROTONOSUPPORT || rc == libc::ENOTTY)
}

/// Upstream's `verbs_is_destroy_err()`: does `ret` end a destroy command?
/// An EIO is forgiven (and `ret` becomes 0, still ending the command
/// before it waits for events) when destroying after a device
/// disassociation is allowed (`RDMAV_ALLOW_DISASSOC_DESTROY`).
pub fn is_destroy_err(ret: &mut c_int) -> bool {
    if *ret == libc::EIO && allow_disassociate_destroy() {
        *ret = 0;
        return true;
    }
    *ret != 0
}

/// Upstream's global `abi_ver`, the kernel's uverbs ABI version: recorded
/// by discovery (6 once netlink answered a char-device request, else what
/// `class/infiniband_verbs/abi_version` said); 0 until then.  The one copy:
/// discovery checks it, the command layer picks command layouts by it.
static ABI_VER: AtomicI32 = AtomicI32::new(0);

/// The recorded ABI version, 0 before discovery recorded one (as upstream,
/// whose command layer reads the same global).
pub fn abi_ver() -> c_int {
    ABI_VER.load(Ordering::Relaxed)
}

/// Records the ABI version discovery read (or a test's choice).
pub fn set_abi_ver(v: c_int) {
    ABI_VER.store(v, Ordering::Relaxed);
}

/// `verbs_allow_disassociate_destroy`, exported for providers (a C `bool`;
/// `AtomicBool` has its size and alignment): destroying objects after the
/// device was disassociated succeeds (`RDMAV_ALLOW_DISASSOC_DESTROY`).
/// Written once at library initialisation, before any provider runs.
#[no_mangle]
pub static verbs_allow_disassociate_destroy: AtomicBool = AtomicBool::new(false);

fn allow_disassociate_destroy() -> bool {
    verbs_allow_disassociate_destroy.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_num_and_bits() {
        // rdma-core 44: 76 operations.
        assert_eq!(VERBS_OPS_NUM, 76);
        assert_eq!(op_bit!(advise_mr), 0);
        assert_eq!(op_bit!(destroy_ah), 29);
        assert_eq!(op_bit!(unimport_pd), VERBS_OPS_NUM - 1);
    }
}
