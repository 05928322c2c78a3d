//! Per-context state of the command layer, and how to find it from an
//! `ibv_context`.
//!
//! Upstream keeps, in the library-private `verbs_ex_private` that every
//! `verbs_context` points to: the kernel driver id (sent in every ioctl
//! header), whether `write()` commands travel as the `INVOKE_WRITE` ioctl
//! method, whether the context was imported, and a bitmap of the
//! `verbs_context_ops` slots whose ioctl method the kernel turned down
//! (ENOTTY / EPROTONOSUPPORT), after which only the `write()` form is tried.
//! [`CmdState`] is that part; the context layer embeds it as the *first*
//! field of its `#[repr(C)]` private struct, which is what [`of`] relies on.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::os::raw::c_int;
use std::sync::OnceLock;

use crate::abi::{ibv_context, verbs_context, verbs_context_ops};

/// `VERBS_OPS_NUM`: number of operation slots in `verbs_context_ops`.
pub const VERBS_OPS_NUM: usize = core::mem::size_of::<verbs_context_ops>() / core::mem::size_of::<usize>();

const BITMAP_WORDS: usize = VERBS_OPS_NUM.div_ceil(64);

/// The command layer's part of a context's private data.
#[repr(C)]
#[derive(Debug, Default)]
pub struct CmdState {
    unsupported: [AtomicU64; BITMAP_WORDS],
    driver_id: AtomicU32,
    use_ioctl_write: AtomicBool,
    imported: AtomicBool,
}

impl CmdState {
    pub fn new(driver_id: u32) -> Self {
        let s = Self::default();
        s.driver_id.store(driver_id, Ordering::Relaxed);
        s
    }
    pub fn driver_id(&self) -> u32 {
        self.driver_id.load(Ordering::Relaxed)
    }
    pub fn use_ioctl_write(&self) -> bool {
        self.use_ioctl_write.load(Ordering::Relaxed)
    }
    pub fn set_use_ioctl_write(&self, v: bool) {
        self.use_ioctl_write.store(v, Ordering::Relaxed)
    }
    pub fn imported(&self) -> bool {
        self.imported.load(Ordering::Relaxed)
    }
    pub fn set_imported(&self, v: bool) {
        self.imported.store(v, Ordering::Relaxed)
    }
    /// Was the ioctl of operation slot `bit` turned down before?
    pub fn unsupported(&self, bit: usize) -> bool {
        bit < VERBS_OPS_NUM && self.unsupported[bit / 64].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
    }
    pub fn mark_unsupported(&self, bit: usize) {
        if bit < VERBS_OPS_NUM {
            self.unsupported[bit / 64].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
    }
    /// ENOTTY: no ioctl framework at all, so no slot has an ioctl.
    pub fn mark_all_unsupported(&self) {
        for bit in 0..VERBS_OPS_NUM {
            self.mark_unsupported(bit);
        }
    }
}

/// The [`CmdState`] of `ctx`, or `None` for a context without private data
/// (then: driver id 0, raw `write()` commands, every ioctl tried).
///
/// # Safety
/// `ctx` must be the `context` member of a live `verbs_context` whose `priv`
/// is null or points to a `#[repr(C)]` struct beginning with a `CmdState`.
pub unsafe fn of<'a>(ctx: *mut ibv_context) -> Option<&'a CmdState> {
    if ctx.is_null() {
        return None;
    }
    let vctx = ctx.cast::<u8>().sub(core::mem::offset_of!(verbs_context, context)).cast::<verbs_context>();
    let p = (*vctx).r#priv;
    if p.is_null() {
        None
    } else {
        Some(&*p.cast::<CmdState>())
    }
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

/// The kernel's uverbs ABI version (`class/infiniband_verbs/abi_version`),
/// upstream's global `abi_ver`; 6 when it cannot be read (only ABI 3 to 5
/// change what the command layer sends).
pub fn abi_ver() -> c_int {
    static V: OnceLock<c_int> = OnceLock::new();
    *V.get_or_init(|| {
        let p = crate::sysfs::root().join("class/infiniband_verbs/abi_version");
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<c_int>().ok())
            .unwrap_or(super::uapi::IB_USER_VERBS_ABI_VERSION as c_int)
    })
}

/// `verbs_allow_disassociate_destroy` as seen by the destroy commands:
/// upstream's `verbs_is_destroy_err()`.  Returns the value to report
/// (EIO is forgiven when destroying after a device disassociation is
/// allowed).
pub fn destroy_result(ret: c_int) -> c_int {
    // SAFETY: a plain bool written once during library initialisation.
    let allow = unsafe { core::ptr::addr_of!(crate::device::verbs_allow_disassociate_destroy).read() };
    if ret == libc::EIO && allow {
        0
    } else {
        ret
    }
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
        let s = CmdState::new(7);
        assert_eq!(s.driver_id(), 7);
        assert!(!s.unsupported(op_bit!(create_cq)));
        s.mark_unsupported(op_bit!(create_cq));
        assert!(s.unsupported(op_bit!(create_cq)));
        assert!(!s.unsupported(op_bit!(create_qp)));
        s.mark_all_unsupported();
        assert!(s.unsupported(VERBS_OPS_NUM - 1));
        assert!(!s.unsupported(VERBS_OPS_NUM));
    }
}
