//! What the wire engine (`engine.rs`) needs of the objects it runs for, as
//! traits: the QPs and their state, the send and receive queues, the
//! completion queues, the memory keys and the memory itself.  The
//! provider's per-process wire implements them with its own objects
//! (`../src/wire/host.rs` of the provider); the agent will with each
//! client's tables, its work queues and cross-memory attach
//! (HOSTWIRE-DESIGN.md, plan step 2).

use crate::wire::state::WQp;
use ibverbs_abi::*;
use std::sync::{Arc, MutexGuard};
use swrdma_rc::budget::Budget;
use swrdma_rc::keys::Keys;
use swrdma_rc::memory::Memory;
use swrdma_rc::recv::{Completion, Receive};

/// A QP as the engine sees it: its numbers, and its state under its lock.
pub trait HostQp {
    type St: HostSt;
    fn qpn(&self) -> u32;
    fn qpt(&self) -> u32;
    fn pd(&self) -> u32;
    /// Its state, locked: everything the wire does for a QP happens with it
    /// held.
    fn lock(&self) -> MutexGuard<'_, Self::St>;
}

/// A QP's state as the engine sees it.
pub trait HostSt {
    /// What a receive completes into (its CQ, or nothing).
    type RecvCq;
    fn state(&self) -> u32;
    fn attr(&self) -> &ibv_qp_attr;
    fn wq(&self) -> &WQp;
    fn wq_mut(&mut self) -> &mut WQp;
    fn budget(&mut self) -> &mut Budget;
    /// The receive being filled.
    fn cur(&mut self) -> &mut Option<Receive<Self::RecvCq>>;
    /// The done mark (the status once done) of send queue entry `seq`.
    fn sq_mark(&mut self, seq: u64) -> Option<&mut Option<u32>>;
    /// Send queue entry `seq` is done with `status` (0: success).
    fn sq_done(&mut self, seq: u64, status: u32) {
        if let Some(m) = self.sq_mark(seq) {
            *m = Some(status);
        }
    }
    /// Send queue entry `seq` fails with `status`, unless it is done already.
    fn sq_fail(&mut self, seq: u64, status: u32) {
        if let Some(m) = self.sq_mark(seq) {
            m.get_or_insert(status);
        }
    }
}

/// The objects the engine runs for (one context's, or one client's).
pub trait Host {
    type Qp: HostQp<St = Self::St>;
    type St: HostSt;
    /// The memory `qp`'s keys grant (its process's).
    fn mem(&self, qp: &Self::Qp) -> &dyn Memory;
    fn qp(&self, qpn: u32) -> Option<Arc<Self::Qp>>;
    fn all_qps(&self) -> Vec<Arc<Self::Qp>>;
    /// GID `index` of the port.
    fn gid(&self, index: usize) -> [u8; 16];
    /// Runs `f` with the memory keys of `qp`'s process held (a
    /// deregistration waits for it).
    fn with_keys<R>(&self, qp: &Self::Qp, f: impl FnOnce(&Keys) -> R) -> R;
    /// Completes the done entries at the front of `qp`'s send queue.
    fn complete_sq(&self, qp: &Self::Qp, st: &mut Self::St);
    /// Moves `qp` to the error state: its outstanding work is flushed.
    fn to_err(&self, qp: &Self::Qp, st: &mut Self::St);
    /// The next receive of `qp` (its own queue's or its SRQ's), checked.
    fn accept_recv(&self, qp: &Self::Qp, st: &mut Self::St) -> Option<Receive<<Self::St as HostSt>::RecvCq>>;
    /// Completes receive `cur` (an invalidation it asks for made): its
    /// completion and where it goes, pushed later by [`Host::push_recv`].
    fn finish_recv(
        &self,
        cur: Receive<<Self::St as HostSt>::RecvCq>,
        done: &Completion,
    ) -> (ibv_wc, <Self::St as HostSt>::RecvCq);
    fn push_recv(&self, cq: &<Self::St as HostSt>::RecvCq, wc: ibv_wc, solicited: bool);
    /// Asynchronous event `ev` of `qp` for its owner.
    fn qp_event(&self, qp: &Self::Qp, ev: u32);
}
