//! The reliable-connection engine of the software RDMA device: what RC, UC
//! and UD mean, written once and used by both of its transports (the
//! same-machine link, `swrdma::core`, and RoCE v2 on the wire,
//! `swrdma::wire`).  Each transport keeps its own framing (ring records,
//! packets with PSNs) and calls here for every decision a verbs device
//! makes about a request or a response:
//!
//! | concern | module |
//! |---|---|
//! | the operation kinds (one enum for both transports) | [`op`] |
//! | memory keys: MRs, windows, binding, invalidation, grants | [`keys`] |
//! | tables keyed by numbers the context gave out (QPN, key) | [`nummap`] |
//! | the responder's checks of a remote access, in order | [`responder`] |
//! | error classes: NAK code, completion status, async event, QP to error | [`fault`] |
//! | receive WQEs: checking, placing SEND data, the UD GRH, completions | [`recv`] |
//! | the completer: responses placed, NAKs to completion status | [`completer`] |
//! | retry and RNR budgets, RNR and ACK timers | [`budget`], [`timers`] |
//! | which QP states take requests and responses | [`qpstate`] |
//!
//! Memory is reached through the [`memory::Memory`] trait (the provider's
//! fault-safe copies; a byte vector in the unit tests), so nothing here
//! does I/O, reads a clock or starts a thread: the unit tests feed it
//! requests and responses and check what it answers.

pub mod budget;
pub mod completer;
pub mod fault;
pub mod keys;
pub mod memory;
pub mod nummap;
pub mod op;
pub mod qpstate;
pub mod recv;
pub mod responder;
pub mod timers;

#[cfg(test)]
mod semantics;
#[cfg(test)]
mod tests;
