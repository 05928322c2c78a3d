//! The wire device's network side, without the protocol engine: its UDP
//! sockets on port 4791 (flows, forwarding, multicast groups, batched
//! sends), the QP's wire state the engine drives, the flight recorder and
//! fault injection.  Issue 33 moves the transport into the agent
//! (HOSTWIRE-DESIGN.md, plan step 2): these modules are here for it, and
//! the provider's per-process wire (`../src/wire/engine.rs`) uses them
//! meanwhile.

pub mod faults;
pub mod mcast;
pub mod opt;
pub mod record;
pub mod sock;
pub mod state;
