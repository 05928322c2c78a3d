//! The layer that talks to the kernel: RDMA netlink, and the uverbs command
//! layer behind every `ibv_cmd_*` (ioctl, `write()`, and the fallback
//! between them).
//!
//! * [`uapi`] — the kernel's uverbs ABI (structs, command/object/method/
//!   attribute numbers).
//! * [`pabi34`] — how provider ABI 34 frames those commands (kern-abi.h).
//! * [`ioctl`], [`write`] — the two transports.
//! * [`state`] — the per-context part (driver id, ioctl-write, fallbacks).
//! * [`builder`] + [`methods`] — the one table-driven builder/executor and
//!   its table of methods; [`slots`] its fixed-capacity storage.
//! * [`verbs`] — the `ibv_cmd_*` operations built on it.

pub mod builder;
pub mod ioctl;
pub mod methods;
pub mod netlink;
pub mod slots;
pub mod state;
pub mod verbs;
pub mod write;

#[cfg(test)]
pub use ibverbs_abi::testutil;
pub use ibverbs_abi::{pabi34, uapi};

/// Copies the named members of `$src` to the members of the same names of
/// `$dst`, in the order given (`name as T` converts on the way): the
/// members a kernel struct and its verbs counterpart share under one name.
macro_rules! copy_fields {
    ($dst:expr, $src:expr; $($f:ident $(as $t:ty)?),+ $(,)?) => {
        { $( $dst.$f = $src.$f $(as $t)?; )+ }
    };
}

pub(crate) use copy_fields;
