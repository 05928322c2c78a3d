//! The work queues between a client (the provider in an application) and
//! the agent (HOSTWIRE-DESIGN.md, plan step 2; not used yet): the SQ, RQ
//! and SRQ carry WQEs from the client to the agent, the CQ carries CQEs
//! from the agent to the client.  [`slots`] is the queue,
//! [`format`](mod@format) the entries.
//!
//! # The queue
//!
//! One sealed memfd per queue, made by the client: a 4096-byte header page,
//! then `depth` slots of `slot_size` bytes (`depth` a power of two up to
//! 65536, `slot_size` a multiple of 64 from 64 to 4096).
//!
//! | bytes | written by | what |
//! |---|---|---|
//! | 0..8 | producer | entries produced (diagnostics only) |
//! | 64..72 | consumer | entries consumed |
//! | 128..136 | consumer (set), producer (clear) | `sleeping` |
//! | 192..200 | consumer (set), producer (clear) | `armed` (a CQ: 1 any, 2 solicited; `ibv_req_notify_cq`) |
//! | 256..264 | consumer (set), producer (open -> taken) | a send queue's direct-transmit window: next PSN (24 bits), state (8: 0 closed, 1 open, 2 taken), generation (32) |
//! | 264..272 | producer | when it sent through the window (CLOCK_MONOTONIC ns; its ACK timeout runs from then, taken within the window's open time) |
//! | 320..368 | consumer | the window's path: our address, the peer's (16 each, IPv4 mapped), peer QPN and path MTU, interface index |
//! | 4096 + i × slot_size | producer | slot i: stamp (8), length (4), unused (4), the entry |
//!
//! * **Self-stamped slots.** Entry `seq` (counting from 0, `u64`) goes to
//!   slot `seq & (depth - 1)`.  The producer writes the entry and its
//!   length, then stores the stamp `seq + 1` with Release.  The consumer
//!   of entry `seq` loads that slot's stamp with Acquire and takes the
//!   entry only when it equals `seq + 1`; stamps of earlier laps differ,
//!   so nothing is ever zeroed.  The consumer reads no count of the
//!   producer's: a small entry costs one cache line.
//! * **Cached views.** The producer keeps the consumer's count as it last
//!   read it, and reads the shared one only when that view says full.  The
//!   consumer publishes its count (Release) after every entry it takes, so
//!   the producer never sees a queue fuller than it is.
//! * **The doorbell** (an eventfd, written by the caller: [`slots::ring`]).
//!   Before it sleeps the consumer stores `sleeping = 1`, fences
//!   (`SeqCst`) and looks at the next stamp again; after a stamp the
//!   producer fences (`SeqCst`) and loads `sleeping`, and when it is set,
//!   swaps it to 0 and rings.  One of the two sees the other's store, so no
//!   wake-up is lost.
//! * **No trust.** Each side treats the mapping as written by an enemy at
//!   any time.  Every access is an atomic load or store of an aligned word
//!   within the mapping, at an index computed from our own state only; an
//!   entry is copied out before it is decoded; the consumer's count is
//!   accepted only between the last one read and what was produced; a
//!   length over the slot (or the caller's buffer) is [`Corrupt`].  No
//!   value there can cause a panic, an access outside the mapping or
//!   unbounded work per call (a caller that drains a queue in a loop caps
//!   its batch: a hostile producer can keep publishing).  `attach` maps
//!   only a shared-memory file (tmpfs, where memfds live; not hugetlbfs)
//!   sealed against shrinking, growing and further seals, of exactly the
//!   queue's size, so it cannot shrink under the mapping (`SIGBUS`).

//! * **Direct transmit** (a send queue of an RC QP; HOSTWIRE-DESIGN.md
//!   6.1).  A hand-off to a sleeping agent costs a wake-up before the
//!   request reaches the wire.  So, just before it sleeps, the agent opens
//!   the window of each RC send queue that is empty, in RTS, with nothing
//!   unacknowledged: the next PSN and the path.  A client whose queue is
//!   empty may take it once (compare-and-swap from open to taken, PSN + 1),
//!   write the request's entry marked direct (no doorbell), then send the
//!   request's only packet itself (a SEND's or WRITE's inline data, at
//!   most a path MTU; a READ of at most a path MTU; an atomic).  On
//!   waking, and before it does anything else, the agent closes every
//!   window; a taken one gives the next entry, when marked direct, that
//!   PSN, already sent (the agent keeps it for retransmission and its ACK
//!   or response as any other).  Any other word found there makes the queue corrupt.
//!   While a window is open the agent sleeps at most the QP's ACK timeout,
//!   so a lost packet is retransmitted as any other.

pub mod format;
pub mod slots;

pub use slots::{
    drain, ring, AttachError, Consumer, Corrupt, DtxOffer, DtxPath, Producer, Push, PushError, Slots, ARMED_ANY,
    ARMED_SOLICITED,
};

#[cfg(test)]
mod tests;
