//! The wire device's transport: the RoCE v2 engine (`engine.rs`, over the
//! objects of a host: `host.rs`), its UDP sockets on port 4791 (flows,
//! forwarding, multicast groups, batched sends), the QP's wire state the
//! engine drives, the flight recorder and fault injection.  Issue 33 moves
//! the transport into the agent (HOSTWIRE-DESIGN.md, plan step 2): these
//! modules are here for it, and the provider's per-process wire runs them
//! over its own objects meanwhile (`../src/wire/host.rs` of the provider).

pub mod engine;
pub mod faults;
pub mod host;
pub mod mcast;
pub mod opt;
pub mod record;
pub mod sock;
pub mod state;
