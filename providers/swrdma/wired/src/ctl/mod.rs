//! The control path between a client context and the agent
//! (HOSTWIRE-DESIGN.md section 4, plan step 2; not used yet): the verbs a
//! kernel driver would answer through uverbs travel as one request and one
//! reply each over the client's `SOCK_SEQPACKET` connection ([`msg`]), and
//! the agent answers them from each client's object tables ([`tables`]),
//! with the errnos of today's provider (`ops.rs`).
//!
//! Nothing calls these yet: a later session makes the provider's wire
//! paths send the requests and the agent answer them (and attach the
//! queues whose memfds come with them, `wq`).

pub mod msg;
pub mod tables;

pub use msg::{MsgError, Reply, Request};
pub use tables::{Client, Hooks, Limits, Tables};

#[cfg(test)]
mod tests;
