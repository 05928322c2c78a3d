//! The wire device: RoCE v2 over a network interface.  The transport (the
//! engine, the sockets, the QP's wire state, the flight recorder and fault
//! injection) is in the agent's crate (`swrdma_wired::wire`), which issue
//! 33 moves it into (HOSTWIRE-DESIGN.md plan step 2); here, this process's
//! objects as the engine's host.

pub mod host;
pub use swrdma_wired::wire::{engine, mcast, sock, state};
