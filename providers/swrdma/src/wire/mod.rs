//! The wire device: RoCE v2 over a network interface.

pub mod sock;
