//! Per-context state of the command layer.
//!
//! Upstream keeps, in the library-private `verbs_ex_private` of every
//! `verbs_context`: the kernel driver id (sent in every ioctl header),
//! whether `write()` commands travel as the `INVOKE_WRITE` ioctl method,
//! whether the context was imported, and a bitmap of the
//! `verbs_context_ops` slots whose ioctl the kernel turned down (ENOTTY /
//! EPROTONOSUPPORT), after which only the `write()` form is tried.  That
//! state is [`CmdState`], owned by this layer; the context layer embeds it
//! as the first member of its private data (`verbs_context.priv`), which is
//! how [`of`] finds it without knowing the rest of that data.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use crate::abi::{ibv_context, verbs_context, verbs_context_ops_65};
use crate::generation::Registration;

/// `VERBS_OPS_NUM`: number of operation slots in `verbs_context_ops`.
pub const VERBS_OPS_NUM: usize = core::mem::size_of::<verbs_context_ops_65>() / core::mem::size_of::<usize>();

/// Bits in the "ioctl turned down" bitmap: room for every slot of every
/// provider generation's op table.
const UNSUPPORTED_BITS: usize = 128;
const _: () = assert!(VERBS_OPS_NUM <= UNSUPPORTED_BITS);

/// Works a registration out from a key (see [`CmdState::new_deferred`]).
pub type Completer = fn(usize) -> Registration;

/// The command layer's per-context state.
#[derive(Default)]
pub struct CmdState {
    unsupported_ioctls: [AtomicU64; UNSUPPORTED_BITS / 64],
    driver_id: u32,
    use_ioctl_write: AtomicBool,
    imported: AtomicBool,
    /// What the library recorded of the provider that owns the context
    /// (its generation decides some prototypes' and layouts' readings).
    reg: Registration,
    /// Completes `reg` the first time it is asked for (what is known of a
    /// provider may need a look at its file, which opening a context
    /// should not wait for); see [`CmdState::new_deferred`].
    complete: Option<(Completer, usize)>,
    completed: std::sync::OnceLock<Registration>,
}

impl CmdState {
    /// A new context's state: every ioctl still to be tried, raw `write()`
    /// until [`CmdState::set_use_ioctl_write`] says otherwise.
    pub fn new(driver_id: u32, reg: Registration) -> Self {
        CmdState {
            driver_id,
            reg,
            ..Default::default()
        }
    }
    /// A new context's state whose registration is `complete(key)`, worked
    /// out when first asked for, with the generation `pabi`.
    pub fn new_deferred(driver_id: u32, pabi: crate::generation::Pabi, complete: Completer, key: usize) -> Self {
        CmdState {
            driver_id,
            reg: Registration {
                pabi,
                ..Default::default()
            },
            complete: Some((complete, key)),
            ..Default::default()
        }
    }
    /// The owning provider's generation (known without completing the
    /// registration).
    pub fn pabi(&self) -> crate::generation::Pabi {
        self.reg.pabi
    }
    /// The owning provider's registration.
    pub fn registration(&self) -> Registration {
        match self.complete {
            None => self.reg,
            Some((f, key)) => *self.completed.get_or_init(|| Registration {
                pabi: self.reg.pabi,
                ..f(key)
            }),
        }
    }
    pub fn driver_id(&self) -> u32 {
        self.driver_id
    }
    pub fn use_ioctl_write(&self) -> bool {
        self.use_ioctl_write.load(Ordering::Relaxed)
    }
    /// Records the answer of [`has_ioctl_write`].
    pub fn set_use_ioctl_write(&self, v: bool) {
        self.use_ioctl_write.store(v, Ordering::Relaxed)
    }
    pub fn imported(&self) -> bool {
        self.imported.load(Ordering::Relaxed)
    }
    /// The context came from `ibv_import_device`.
    pub fn mark_imported(&self) {
        self.imported.store(true, Ordering::Relaxed)
    }
    /// Was the ioctl of operation slot `bit` turned down before?
    pub fn unsupported(&self, bit: usize) -> bool {
        bit < UNSUPPORTED_BITS && self.unsupported_ioctls[bit / 64].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
    }
    pub fn mark_unsupported(&self, bit: usize) {
        if bit < UNSUPPORTED_BITS {
            self.unsupported_ioctls[bit / 64].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
    }
    /// ENOTTY: no ioctl framework at all, so no slot has an ioctl.
    pub fn mark_all_unsupported(&self) {
        for bit in 0..VERBS_OPS_NUM {
            self.mark_unsupported(bit);
        }
    }
}

/// The `verbs_context` that contains `ctx` (providers always allocate the
/// extended form; `abi_compat == __VERBS_ABI_IS_EXTENDED` marks it).
///
/// # Safety
/// `ctx` is the `context` member of a `verbs_context`.
pub unsafe fn vctx_of(ctx: *mut ibv_context) -> *mut verbs_context {
    // SAFETY: `context` is a member of the `verbs_context` the caller
    // vouches for, so stepping back by its offset stays inside that object.
    unsafe { ctx.byte_sub(std::mem::offset_of!(verbs_context, context)).cast() }
}

/// The state of `ctx`, or `None` for a context without private data (then:
/// driver id 0, raw `write()` commands, every ioctl tried, not imported).
///
/// # Safety
/// `ctx` is null or the `context` member of a live `verbs_context` whose
/// `priv` is null or points to private data that starts with a [`CmdState`]
/// (what the context layer installs) and outlives `'a`.
pub unsafe fn of<'a>(ctx: *mut ibv_context) -> Option<&'a CmdState> {
    if ctx.is_null() {
        return None;
    }
    // SAFETY: a live verbs_context (caller's contract); reading its `priv`
    // member, then viewing the data as its leading CmdState, which the
    // context layer placed there (`#[repr(C)]`, first member).
    unsafe { (*vctx_of(ctx)).r#priv.cast::<CmdState>().as_ref() }
}

/// Was `ctx` imported (`ibv_import_device`)?  Such contexts never fall
/// back to `write()` for object creation.
///
/// # Safety
/// As for [`of`].
pub unsafe fn imported(ctx: *mut ibv_context) -> bool {
    // SAFETY: forwarded caller contract.
    unsafe { of(ctx) }.is_some_and(|s| s.imported())
}

/// The slot index of a `verbs_context_ops` member: upstream's `_CMD_BIT`.
#[macro_export]
#[doc(hidden)]
macro_rules! op_bit {
    ($op:ident) => {
        core::mem::offset_of!($crate::abi::verbs_context_ops_65, $op) / core::mem::size_of::<usize>()
    };
}
pub use crate::op_bit;

/// Upstream's `verbs_is_destroy_err()`: does `ret` end a destroy command?
/// An EIO is forgiven (and `ret` becomes 0, still ending the command
/// before it waits for events) when destroying after a device
/// disassociation is allowed (`RDMAV_ALLOW_DISASSOC_DESTROY`).
pub fn is_destroy_err(ret: &mut c_int) -> bool {
    destroy_err(ret, allow_disassociate_destroy())
}

/// `is_destroy_err` with the setting given: the rule itself, testable
/// without the process-wide flag.  (On Soft-RoCE the kernel never answers EIO,
/// rxe cannot disassociate: compat-tests/vm-fault makes the command fds answer
/// EIO with a seccomp filter to run this path against upstream's.)
fn destroy_err(ret: &mut c_int, allow: bool) -> bool {
    if *ret == libc::EIO && allow {
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
        // The library's table has rdma-core 65's layout: 93 operations
        // (rdma-core 44 to 56: 76).
        assert_eq!(VERBS_OPS_NUM, 93);
        assert_eq!(op_bit!(advise_mr), 0);
        assert_eq!(op_bit!(destroy_ah), 33);
        assert_eq!(op_bit!(unimport_pd), VERBS_OPS_NUM - 1);
    }

    #[test]
    fn unsupported_bitmap() {
        let st = CmdState::new(7, Default::default());
        assert_eq!(st.driver_id(), 7);
        assert!(!st.unsupported(0) && !st.unsupported(75));
        st.mark_unsupported(75);
        st.mark_unsupported(3);
        assert!(st.unsupported(75) && st.unsupported(3) && !st.unsupported(4));
        // Out of range: ignored, never set.
        st.mark_unsupported(UNSUPPORTED_BITS);
        assert!(!st.unsupported(UNSUPPORTED_BITS));
        st.mark_all_unsupported();
        assert!((0..VERBS_OPS_NUM).all(|b| st.unsupported(b)));
        assert!(!st.use_ioctl_write() && !st.imported());
        st.set_use_ioctl_write(true);
        st.mark_imported();
        assert!(st.use_ioctl_write() && st.imported());
    }

    #[test]
    fn destroy_err_forgives_only_eio_and_only_when_allowed() {
        // Not allowed: every error ends the command and is returned as is.
        for e in [libc::EIO, libc::EINVAL, libc::EBUSY] {
            let mut ret = e;
            assert!(destroy_err(&mut ret, false));
            assert_eq!(ret, e);
        }
        // Allowed: EIO (a disassociated device) ends the command as a success...
        let mut ret = libc::EIO;
        assert!(destroy_err(&mut ret, true));
        assert_eq!(ret, 0);
        // ...any other error stays an error.
        let mut ret = libc::EBUSY;
        assert!(destroy_err(&mut ret, true));
        assert_eq!(ret, libc::EBUSY);
        // Success never ends it early, whatever the setting.
        for allow in [false, true] {
            let mut ret = 0;
            assert!(!destroy_err(&mut ret, allow));
            assert_eq!(ret, 0);
        }
    }

    #[test]
    fn of_finds_state_at_start_of_private_data() {
        // SAFETY: zeroed plain C data; `priv` points to a live CmdState for
        // the whole test.
        unsafe {
            let mut v: verbs_context = core::mem::zeroed();
            let ctx = core::ptr::addr_of_mut!(v.context);
            assert!(of(ctx).is_none());
            assert!(of(core::ptr::null_mut()).is_none());
            let st = CmdState::new(42, Default::default());
            v.r#priv = (&st as *const CmdState).cast_mut().cast();
            assert_eq!(vctx_of(ctx), core::ptr::addr_of_mut!(v));
            assert_eq!(of(ctx).map(|s| s.driver_id()), Some(42));
        }
    }
}
