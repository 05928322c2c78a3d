//! The exported C functions, one file per object family.  This is the only
//! place (with `compat` and the log/sysfs callbacks of the C shim) where
//! `extern "C"` functions are defined.
pub mod cmd;
pub mod cq;
pub mod device;
pub mod list;
pub mod marshall;
pub mod misc;
pub mod mr;
pub mod provider;
pub mod qp;
pub mod v65;
