//! The exported C functions, one file per object family.  This is the only
//! place (with `compat` and the log/sysfs callbacks of the C shim) where
//! `extern "C"` functions are defined.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

// The `allow`s below: modules not yet converted to the lints above (their
// own files).  An inner `#![deny]` in such a module overrides the `allow`,
// so converting one needs no change here; the `allow` can then go.
#[allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
pub mod cmd;
#[allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
pub mod cq;
#[allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
pub mod device;
pub mod list;
#[allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
pub mod marshall;
pub mod misc;
pub mod mr;
pub mod provider;
pub mod qp;
