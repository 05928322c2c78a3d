//! The wire device: RoCE v2 over a network interface.

pub mod engine;
pub mod faults;
pub mod mcast;
pub mod opt;
pub mod record;
pub mod sock;
pub mod state;
