//! The wire device: RoCE v2 over a network interface.  The engine is here;
//! the sockets, the QP's wire state, the flight recorder and fault
//! injection are in the agent's crate (`swrdma_wired::wire`), which the
//! transport moves into (issue 33, HOSTWIRE-DESIGN.md plan step 2).

pub mod engine;
pub use swrdma_wired::wire::{faults, mcast, record, sock, state};
