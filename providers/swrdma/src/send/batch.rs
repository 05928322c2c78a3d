//! Consecutive RDMA WRITEs or READs of one `ibv_post_send` list executed
//! by the initiator with one `process_vm_writev`/`readv` (direct.rs,
//! `execute_batch`): one system call for the list instead of one per
//! request (issue 34).
//!
//! `Batch::take` keeps a request of the list, with no effect on the QP,
//! when it would take the direct path alone: an RC QP of a ring device in
//! RTS, an RDMA WRITE (not inline) or READ of at least one byte whose
//! gather list our MR table allows, to the same peer and in the same
//! direction as the requests kept before it, with room in the send queue.
//! Anything else is posted as before, after the kept requests were
//! executed (`flush`), so requests still execute and complete in the order
//! posted.  `flush` executes the kept requests together where the direct
//! path allows each of them at that moment, completes those the copy
//! covered, and posts the others one by one as if each had been posted
//! alone: a request that fails there completes with the error its
//! responder gives (and the QP goes to the error state, flushing the ones
//! after it), the ones before it completed successfully, as on rxe.

use super::complete::finish_locked;
use super::over_ring;
use super::request::{LocalData, Operation, QpView, SendRequest};
use crate::context::*;
use crate::direct::{self, Peer};
use ibverbs_abi::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A kept request and its checked gather list.
type Kept<'a> = (SendRequest<'a>, LocalData<'a>);

/// The requests of a post_send list kept for one system call.
pub struct Batch<'a> {
    /// The first kept request (most batches keep one: no allocation for
    /// it), then the others.
    first: Option<Kept<'a>>,
    rest: Vec<Kept<'a>>,
    /// WRITEs (else READs).
    write: bool,
    peer: Option<Arc<Peer>>,
    dest: u32,
    /// The context id of the peer's process (the link's).
    peer_id: u32,
    /// Our iovecs the kept requests take.
    nlocal: usize,
    /// Requests of the QP deferred before these (defer.rs): they take
    /// room in the send queue too.
    queued: usize,
}

impl<'a> Batch<'a> {
    pub fn new() -> Batch<'a> {
        Batch {
            first: None,
            rest: Vec::new(),
            write: false,
            peer: None,
            dest: 0,
            peer_id: 0,
            nlocal: 0,
            queued: 0,
        }
    }

    /// The number of deferred requests of the QP before this batch's (they
    /// take room in the send queue too).
    pub fn set_queued(&mut self, queued: usize) {
        self.queued = queued;
    }

    /// Drops the kept requests unexecuted (a probe: nothing was done
    /// with them).
    pub fn forget(&mut self) {
        self.first = None;
        self.rest.clear();
        self.peer = None;
        self.nlocal = 0;
        self.queued = 0;
    }

    /// How many requests are kept.
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// Keeps `wr` for the batch (true), or leaves it to `post_verb` (false:
    /// nothing was done; the caller flushes the batch first).
    ///
    /// # Safety
    /// `wr` is a valid send request (`post_one`'s contract) whose gather
    /// list stays valid and unchanged until the batch is flushed.
    pub unsafe fn take(&mut self, c: &Ctx, qp: &Arc<Qp>, wr: &'a ibv_send_wr) -> bool {
        if qp.qpt != IBV_QPT_RC || !matches!(wr.opcode, IBV_WR_RDMA_WRITE | IBV_WR_RDMA_READ) {
            return false;
        }
        if !direct::enabled() || c.wire_rt().is_some() {
            return false;
        }
        let Some(req) = SendRequest::read(wr, qp.qpt) else {
            return false;
        };
        let write = match req.op {
            Operation::RdmaWrite(_) => true,
            Operation::RdmaRead(_) => false,
            _ => return false,
        };
        if req.inline_flag() || req.num_sge < 0 || req.num_sge as u32 > qp.cap.max_send_sge {
            return false;
        }
        // SAFETY: `num_sge` SGEs at `sg_list` (the contract; not negative).
        let sges = unsafe { req.gather_list() };
        let len: u64 = sges.iter().map(|s| s.length as u64).sum();
        if len == 0 || len > 0x8000_0000 {
            return false;
        }
        // (What `QpView::of` reads, without cloning the link.)
        let (peer_id, dest, peer) = {
            let mut st = lock(&qp.st);
            let Some(link) = st.link.as_ref().filter(|l| !l.dead.load(Ordering::Relaxed)) else {
                return false;
            };
            let peer_id = link.peer;
            if st.state != IBV_QPS_RTS || st.sq.len() + self.queued + self.len() + 1 > qp.cap.max_send_wr as usize {
                return false;
            }
            let peer = match &self.peer {
                Some(p) if self.first.is_some() && self.peer_id == peer_id => p.clone(),
                _ => match st
                    .direct_peer
                    .as_ref()
                    .filter(|(id, _)| *id == peer_id)
                    .and_then(|(_, w)| w.upgrade())
                {
                    Some(p) => p,
                    None => {
                        let Some(p) = c.peer_dir(peer_id) else {
                            return false;
                        };
                        st.direct_peer = Some((peer_id, Arc::downgrade(&p)));
                        p
                    }
                },
            };
            (peer_id, st.attr.dest_qp_num, peer)
        };
        let Ok(translated) = c.check_local(qp.pd, sges, !write) else {
            return false;
        };
        let same = self.peer.as_ref().is_some_and(|p| Arc::ptr_eq(p, &peer));
        if self.first.is_some()
            && (!same
                || self.write != write
                || self.dest != dest
                || self.len() >= direct::MAX_IOV
                || self.nlocal + sges.len() > direct::MAX_IOV)
        {
            self.flush(c, qp);
            // (Posting may have changed the QP: looked at again.)
            // SAFETY: our own contract.
            return unsafe { self.take(c, qp, wr) };
        }
        if sges.len() > direct::MAX_IOV {
            return false;
        }
        self.write = write;
        self.peer = Some(peer);
        self.dest = dest;
        self.peer_id = peer_id;
        self.nlocal += sges.len();
        let data = LocalData {
            posted: sges,
            translated,
            len,
            inline: false,
        };
        if self.first.is_none() {
            self.first = Some((req, data));
        } else {
            self.rest.push((req, data));
        }
        true
    }

    /// Whether the kept requests go to a shared object the peer's MR
    /// publishes and we map (`Peer::maps`): a memcpy each, with no system
    /// call to share.
    pub fn to_shared(&self) -> bool {
        let (Some(peer), Some((req, _))) = (&self.peer, &self.first) else {
            return false;
        };
        req.op.remote().is_some_and(|r| peer.maps(r.rkey))
    }

    /// Executes the kept requests (see the module's comment).
    pub fn flush(&mut self, c: &Ctx, qp: &Arc<Qp>) {
        let Some(first) = self.first.take() else {
            return;
        };
        let rest = std::mem::take(&mut self.rest);
        self.nlocal = 0;
        let peer = self.peer.take();
        let reqs = Kepts(&first, &rest);
        let done = match &peer {
            Some(peer) => self.execute(c, qp, peer, reqs),
            None => 0,
        };
        for (req, data) in (done..reqs.len()).map(|i| reqs.get(i)) {
            // SAFETY: `req` and `data` passed `post_one`'s checks in `take`
            // (the QP's may have changed since: `post` looks again).
            let _ = unsafe { over_ring::post(c, qp, req, data, QpView::of(qp)) };
        }
    }

    /// The direct execution of `reqs` with the QP's lock held, as
    /// `over_ring::execute_directly`: how many were executed and completed.
    fn execute(&self, c: &Ctx, qp: &Qp, peer: &Peer, reqs: Kepts<'_, 'a>) -> usize {
        let mut st = lock(&qp.st);
        if !(st.state == IBV_QPS_RTS
            && st.sq.is_empty()
            && st.resend.is_none()
            && st.probe.is_none()
            && st.lost_at.is_none())
        {
            return 0;
        }
        let pmtu = swrdma_rc::responder::pmtu_bytes(st.attr.path_mtu) as u64;
        let req = |i: usize| {
            let (req, data) = reqs.get(i);
            let r = req.op.remote().expect("an RDMA request");
            ((r.rkey, r.addr, data.len), data.sges())
        };
        let done = direct::execute_batch(peer, (qp.qpn, self.dest), reqs.len(), req, self.write, pmtu);
        for (req, data) in (0..done).map(|i| reqs.get(i)) {
            let (op, signaled) = (req.op.wc_opcode(), req.signaled());
            finish_locked(c, qp, &mut st, req.wr_id, op, data.len as u32, signaled, IBV_WC_SUCCESS);
        }
        done
    }
}

/// The kept requests of a batch being flushed: the first, then the rest.
#[derive(Clone, Copy)]
struct Kepts<'b, 'a>(&'b Kept<'a>, &'b [Kept<'a>]);

impl<'b, 'a> Kepts<'b, 'a> {
    fn len(&self) -> usize {
        1 + self.1.len()
    }

    fn get(&self, i: usize) -> &'b Kept<'a> {
        if i == 0 {
            self.0
        } else {
            &self.1[i - 1]
        }
    }
}
