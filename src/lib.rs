//! A drop-in replacement for rdma-core's `libibverbs.so.1`, written in Rust.
//!
//! Layering (one concern per module, data flows downwards):
//!
//! * [`api`] — the exported C functions: pointer checks, the panic boundary,
//!   errno conventions.  Nothing else is `extern "C"`.
//! * [`enum_strs`], [`rate`], [`fork`], [`env`], [`sysfs`] — safe internals.
//! * [`device`] — the device list (discovery, reference counts).
//! * [`kernel`] — syscalls towards the kernel: RDMA netlink.
//! * [`abi`] — `#[repr(C)]` mirrors of the public and provider ABI types.
//! * [`compat`] — the `.symver` bindings for names that have two versions.
//!
//! The shared object is linked by the Makefile from this crate's staticlib
//! with `symbols.map` as the version script.

// A panic must never unwind into a C caller: the library is built with
// `panic = "abort"` in every profile (Cargo.toml).  Unit tests are the one
// exception (the test harness always unwinds; `ffi::guard` catches there).
#[cfg(all(not(panic = "abort"), not(test)))]
compile_error!("libibverbs must be built with panic = \"abort\" (see the profiles in Cargo.toml)");

pub use ibverbs_abi as abi;
pub mod api;
pub mod compat;
pub mod context;
pub mod device;
pub mod enum_strs;
pub mod env;
pub mod ffi;
pub mod fork;
pub mod generation;
pub mod kernel;
pub mod log;
pub mod provider;
pub mod rate;
pub mod soft;
pub mod sysfs;
pub mod verbs;
