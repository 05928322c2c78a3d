//! Each client's data path in the agent (issue 33, plan step 2; not yet run
//! by the agent's loop, nor fed by the provider): the wire engine's host
//! (`wire::host`) over one client's objects, its work queues (`wq`) and its
//! memory (`place`), and the send WQEs of its queues turned into the
//! engine's requests.
//!
//! * **Objects.**  A [`DataQp`] is a QP as the engine drives it: its
//!   numbers, the CQs and SRQ it completes into and takes from (by the
//!   client's handles), and its state under a lock ([`DataSt`]: the verbs
//!   state and attributes as the control path set them, the wire state,
//!   the budgets, the receive being filled, the send queue's entries).
//!   [`ClientData`] holds a client's QPs by number and the queues the agent
//!   keeps for it: each CQ's CQE queue (the agent produces), each QP's
//!   receive queue and each SRQ's queue (the agent consumes).
//! * **The host** ([`Serving`]) is a client's data with its key table and
//!   the interface's GIDs, for one turn of the engine: the agent is single
//!   threaded here, so the key table is borrowed from the control path's
//!   tables for the turn (`RefCell`: the engine reads it, a SEND with
//!   invalidate writes it, never both at once).
//! * **Completions** are CQEs in the CQ's queue (`wq::format::Cqe`).  A
//!   queue with no room (the client does not poll, or lied about its
//!   count) overruns the CQ as a NIC's does: the completion is lost, the
//!   client gets `IBV_EVENT_CQ_ERR`, and nothing more is written to it.
//! * **Receives** come from the QP's receive queue or its SRQ's, decoded
//!   and checked by `swrdma_rc::recv::accept` (a bad lkey completes the
//!   receive with `LOC_PROT_ERR`, as in the provider).  A queue that holds
//!   something that is not a receive WQE gives no receive (RNR, dropped)
//!   and the QP's owner gets `IBV_EVENT_QP_FATAL` once.
//! * **Send WQEs** become the engine's requests in [`request`], with the
//!   checks the provider makes at post on a wire device (what a wire QP
//!   carries, the UD size, the path of a UD address) and the ones it makes
//!   when reading the data (the lkeys: `LOC_PROT_ERR`).
//! * **Local operations** (`BIND_MW`, `LOCAL_INV`) are done when the WQE
//!   is taken ([`run_local`]), against the client's tables (its windows
//!   and keys, [`KeyTables`]), and complete in send queue order, as the
//!   provider does them at post; a remote `SEND_WITH_INV` invalidates
//!   through the same tables when its receive completes.
//! * **Async events** are collected ([`ClientData::take_events`]) for the
//!   caller to write into the client's async pipe.

use crate::ctl::tables::{ClientId, Tables};
use crate::place::ClientMem;
use crate::wire::engine::{ud_path, Wire};
use crate::wire::host::{Host, HostQp, HostSt};
use crate::wire::state::{Req, WQp};
use crate::wq::format::{
    decode_recv, decode_send, encode_cqe, is_direct, Cqe, Data, MwBind, SendOp, SendShape, SendWqe, UdAddr, CQE_SLOT,
};
use crate::wq::{Consumer, Producer};
use ibverbs_abi::*;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard};
use swrdma_rc::budget::Budget;
use swrdma_rc::keys::Keys;
use swrdma_rc::memory::Memory;
use swrdma_rc::op::Op;
use swrdma_rc::recv::{accept, Completion, Receive};

#[cfg(test)]
mod tests;

/// Where a receive completes: its client and the client's CQ handle
/// (None: nowhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvCq {
    pub client: ClientId,
    pub cq: Option<u32>,
}

/// The largest receive WQE a queue carries (`wq::slots::MAX_SLOT`).
const RECV_BUF: usize = crate::wq::slots::MAX_SLOT;

/// One entry of a QP's send queue, from its WQE until its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqEntry {
    /// The engine's request number (`Req::seq`).
    pub seq: u64,
    pub wr_id: u64,
    /// The completion's opcode (`IBV_WC_*`).
    pub opcode: u32,
    /// The completion's byte count.
    pub len: u32,
    /// Completed with a CQE even when it succeeds.
    pub signaled: bool,
    /// Its status once done (0: success).
    pub done: Option<u32>,
}

impl SqEntry {
    /// The entry of WQE `w` (request number `seq`) that completes with
    /// `status` without going on the wire (signaled: an error always has a
    /// CQE).
    fn failed(seq: u64, w: &SendWqe<'_>, status: u32) -> SqEntry {
        SqEntry {
            seq,
            wr_id: w.wr_id,
            opcode: wc_opcode_of(&w.op),
            len: 0,
            signaled: true,
            done: Some(status),
        }
    }
}

/// A QP's state as the engine drives it (under [`DataQp`]'s lock).
pub struct DataSt {
    /// `IBV_QPS_*`, as the control path moved it (the engine moves it to
    /// the error state).
    pub state: u32,
    /// The attributes the control path set.
    pub attr: ibv_qp_attr,
    pub wq: WQp,
    pub budget: Budget,
    /// The receive being filled.
    pub cur: Option<Receive<RecvCq>>,
    /// The send queue's entries not completed yet, in order.
    pub sq: VecDeque<SqEntry>,
    /// The next request number.
    pub next_seq: u64,
    /// Its receive queue held something that is not a receive WQE (the
    /// fatal event went out).
    pub bad_rq: bool,
}

/// A QP of a client as the engine drives it.
pub struct DataQp {
    /// The client it is of.
    pub client: ClientId,
    pub qpn: u32,
    /// `IBV_QPT_RC`, `_UC` or `_UD`.
    pub qpt: u32,
    pub pd: u32,
    /// The client's handle of the QP (its async events name it).
    pub handle: u32,
    /// The client's CQ handles its completions go to.
    pub send_cq: Option<u32>,
    pub recv_cq: Option<u32>,
    /// The client's SRQ handle it takes receives from (None: its own
    /// receive queue).
    pub srq: Option<u32>,
    /// Every request completes with a CQE.
    pub sq_sig_all: bool,
    /// The most SGEs of a receive WQE.
    pub max_recv_sge: u32,
    pub st: Mutex<DataSt>,
}

impl DataQp {
    /// A QP in the RESET state.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: ClientId,
        qpn: u32,
        qpt: u32,
        pd: u32,
        handle: u32,
        send_cq: Option<u32>,
        recv_cq: Option<u32>,
        srq: Option<u32>,
        sq_sig_all: bool,
        max_recv_sge: u32,
    ) -> DataQp {
        DataQp {
            client,
            qpn,
            qpt,
            pd,
            handle,
            send_cq,
            recv_cq,
            srq,
            sq_sig_all,
            max_recv_sge,
            st: Mutex::new(DataSt {
                state: IBV_QPS_RESET,
                // SAFETY: `ibv_qp_attr` is integers and plain structures of
                // integers: all-zero is a valid value.
                attr: unsafe { std::mem::zeroed() },
                wq: WQp::default(),
                budget: Budget::default(),
                cur: None,
                sq: VecDeque::new(),
                next_seq: 0,
                bad_rq: false,
            }),
        }
    }
}

impl HostQp for DataQp {
    type St = DataSt;
    fn qpn(&self) -> u32 {
        self.qpn
    }
    fn qpt(&self) -> u32 {
        self.qpt
    }
    fn pd(&self) -> u32 {
        self.pd
    }
    fn lock(&self) -> MutexGuard<'_, DataSt> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl HostSt for DataSt {
    type RecvCq = RecvCq;
    fn state(&self) -> u32 {
        self.state
    }
    fn attr(&self) -> &ibv_qp_attr {
        &self.attr
    }
    fn wq(&self) -> &WQp {
        &self.wq
    }
    fn wq_mut(&mut self) -> &mut WQp {
        &mut self.wq
    }
    fn budget(&mut self) -> &mut Budget {
        &mut self.budget
    }
    fn cur(&mut self) -> &mut Option<Receive<RecvCq>> {
        &mut self.cur
    }
    fn sq_mark(&mut self, seq: u64) -> Option<&mut Option<u32>> {
        self.sq.iter_mut().find(|w| w.seq == seq).map(|w| &mut w.done)
    }
}

/// What the CQEs written call for ([`ClientData::take_doorbells`]): the
/// CQs (by handle) whose doorbells and completion channels to write.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Wakeups {
    pub bells: Vec<u32>,
    pub channels: Vec<u32>,
}

/// An SRQ's queue as the data path takes from it.
pub struct SrqQueue {
    pub queue: Consumer,
    /// The SRQ's PD (its receives' lkeys are checked against it).
    pub pd: u32,
    /// The most SGEs of a WQE.
    pub max_sge: u32,
    /// `srq_limit` (0: not armed): when a receive taken leaves fewer WQEs
    /// than this, the client gets `IBV_EVENT_SRQ_LIMIT_REACHED` and the
    /// SRQ is disarmed (rxe's `get_srq_wqe`).
    pub limit: u32,
}

/// An asynchronous event for the client: the object's handle, the event
/// (`IBV_EVENT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Qp(u32, u32),
    Cq(u32, u32),
    Srq(u32, u32),
}

/// One client's data path: its QPs and the queues the agent keeps for it.
pub struct ClientData {
    /// Its memory.
    pub mem: ClientMem,
    /// Its QPs by number.
    pub qps: HashMap<u32, Arc<DataQp>>,
    /// Each CQ's CQE queue, by the client's CQ handle.
    pub cqs: RefCell<HashMap<u32, Producer>>,
    /// Each QP's receive queue, by QP number.
    pub rqs: RefCell<HashMap<u32, Consumer>>,
    /// Each QP's send queue and the shape of its WQEs, by QP number.
    pub sqs: RefCell<HashMap<u32, (Consumer, SendShape)>>,
    /// Each CQ's doorbell (an eventfd the client sleeps on), by handle.
    pub bells: HashMap<u32, OwnedFd>,
    /// Each CQ's completion channel, by handle.
    pub channels: HashMap<u32, OwnedFd>,
    /// Each SRQ's queue, by the client's SRQ handle.
    pub srqs: RefCell<HashMap<u32, SrqQueue>>,
    events: RefCell<Vec<Event>>,
    /// CQs that overran: nothing more is written to them.
    overrun: RefCell<HashSet<u32>>,
    /// CQs written since [`ClientData::take_doorbells`] (their consumers
    /// may sleep, or have armed them), each with whether a solicited or
    /// failed completion was among what was written.
    written: RefCell<HashMap<u32, bool>>,
    /// QPs the engine moved to the error state since
    /// [`ClientData::take_moved`].
    moved: RefCell<Vec<u32>>,
    /// SRQs whose limit event went out since
    /// [`ClientData::take_limits_reached`].
    limits_reached: RefCell<Vec<u32>>,
}

impl ClientData {
    pub fn new(mem: ClientMem) -> ClientData {
        ClientData {
            mem,
            qps: HashMap::new(),
            cqs: RefCell::new(HashMap::new()),
            rqs: RefCell::new(HashMap::new()),
            sqs: RefCell::new(HashMap::new()),
            bells: HashMap::new(),
            channels: HashMap::new(),
            srqs: RefCell::new(HashMap::new()),
            events: RefCell::new(Vec::new()),
            overrun: RefCell::new(HashSet::new()),
            written: RefCell::new(HashMap::new()),
            moved: RefCell::new(Vec::new()),
            limits_reached: RefCell::new(Vec::new()),
        }
    }

    /// CQ `h`'s CQE queue, and its doorbell and completion channel when
    /// the client gave them.
    pub fn add_cq(&mut self, h: u32, queue: Producer, bell: Option<OwnedFd>, channel: Option<OwnedFd>) {
        self.cqs.get_mut().insert(h, queue);
        self.overrun.get_mut().remove(&h);
        self.written.get_mut().remove(&h);
        self.bells.remove(&h);
        self.channels.remove(&h);
        if let Some(b) = bell {
            self.bells.insert(h, b);
        }
        if let Some(c) = channel {
            self.channels.insert(h, c);
        }
    }

    /// CQ `h` is destroyed: its queue unmapped, its descriptors closed.
    pub fn remove_cq(&mut self, h: u32) {
        self.cqs.get_mut().remove(&h);
        self.overrun.get_mut().remove(&h);
        self.written.get_mut().remove(&h);
        self.bells.remove(&h);
        self.channels.remove(&h);
    }

    /// The CQEs in CQ `h`'s queue that the client has not taken.
    pub fn cq_pending(&self, h: u32) -> usize {
        self.cqs.borrow().get(&h).map_or(0, |q| q.unconsumed())
    }

    /// The WQEs the client put in SRQ `h`'s queue that the agent has not
    /// taken (the client's own count, bounded by the depth; the depth when
    /// it is out of range).
    pub fn srq_posted(&self, h: u32) -> usize {
        (self.srqs.borrow().get(&h)).map_or(0, |q| q.queue.pending_hint().unwrap_or(q.queue.depth()))
    }

    /// The SRQs disarmed by their limit event since the last call (for the
    /// control path's tables).
    pub fn take_limits_reached(&self) -> Vec<u32> {
        std::mem::take(&mut self.limits_reached.borrow_mut())
    }

    /// The QPs that went to the error state since the last call (for the
    /// control path's tables).
    pub fn take_moved(&self) -> Vec<u32> {
        std::mem::take(&mut self.moved.borrow_mut())
    }

    /// The async events since the last call, oldest first.
    pub fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut self.events.borrow_mut())
    }

    /// After the CQEs written since the last call: the CQs whose consumer
    /// sleeps (the caller writes their doorbells), and the CQs with a
    /// completion channel that their consumer armed for what was written
    /// (the caller writes their channels; each arm is taken, as one
    /// `ibv_req_notify_cq` gives one event).
    pub fn take_doorbells(&self) -> Wakeups {
        let written: Vec<(u32, bool)> = self.written.borrow_mut().drain().collect();
        let mut cqs = self.cqs.borrow_mut();
        let mut w = Wakeups::default();
        for (h, solicited) in written {
            if let Some(q) = cqs.get_mut(&h) {
                if q.doorbell() == crate::wq::Push::Ring {
                    w.bells.push(h);
                }
                if self.channels.contains_key(&h) && q.take_arm(solicited) {
                    w.channels.push(h);
                }
            }
        }
        w.bells.sort_unstable();
        w.channels.sort_unstable();
        w
    }

    /// Writes `wc` into CQ `cq` (None: the QP has none; `solicited`: a
    /// receive of a solicited message): false when it overran (now or
    /// before).
    pub fn push_cqe(&self, cq: Option<u32>, wc: &ibv_wc, solicited: bool) -> bool {
        let Some(h) = cq else { return true };
        if self.overrun.borrow().contains(&h) {
            return false;
        }
        let mut buf = [0u8; CQE_SLOT];
        let Ok(n) = encode_cqe(&Cqe::from_wc(wc), &mut buf) else {
            return false; // (every completion made here encodes)
        };
        let pushed = match self.cqs.borrow_mut().get_mut(&h) {
            Some(q) => q.try_push_quiet(&buf[..n]).is_ok(),
            None => return false, // (destroyed while a QP names it)
        };
        if pushed {
            *self.written.borrow_mut().entry(h).or_default() |= solicited || wc.status != IBV_WC_SUCCESS;
            return true;
        }
        self.overrun.borrow_mut().insert(h);
        self.events.borrow_mut().push(Event::Cq(h, IBV_EVENT_CQ_ERR));
        false
    }

    /// Where `qp`'s receives complete.
    fn recv_cq(qp: &DataQp) -> RecvCq {
        RecvCq {
            client: qp.client,
            cq: qp.recv_cq,
        }
    }

    /// The next receive WQE of `qp` (from its own queue or its SRQ's):
    /// its id and list, with the PD its lkeys are checked against.  None:
    /// nothing there, or not a WQE (then `bad` is set).
    fn next_recv(&self, qp: &DataQp, bad: &mut bool) -> Option<(u64, Vec<ibv_sge>, u32)> {
        let mut buf = [0u8; RECV_BUF];
        let (n, max_sge, pd) = match qp.srq {
            Some(s) => {
                let mut srqs = self.srqs.borrow_mut();
                let q = srqs.get_mut(&s)?;
                let n = match q.queue.try_pop(&mut buf) {
                    Ok(Some(n)) => n,
                    Ok(None) => return None,
                    Err(_) => {
                        *bad = true;
                        return None;
                    }
                };
                // (What is left: the client's own count, at most the depth.)
                let left = q.queue.pending_hint().unwrap_or(q.queue.depth());
                if q.limit > 0 && left < q.limit as usize {
                    q.limit = 0;
                    self.events
                        .borrow_mut()
                        .push(Event::Srq(s, IBV_EVENT_SRQ_LIMIT_REACHED));
                    self.limits_reached.borrow_mut().push(s);
                }
                (n, q.max_sge, q.pd)
            }
            None => {
                let mut rqs = self.rqs.borrow_mut();
                let q = rqs.get_mut(&qp.qpn)?;
                match q.try_pop(&mut buf) {
                    Ok(Some(n)) => (n, qp.max_recv_sge, qp.pd),
                    Ok(None) => return None,
                    Err(_) => {
                        *bad = true;
                        return None;
                    }
                }
            }
        };
        let Ok(w) = decode_recv(&buf[..n], max_sge) else {
            *bad = true;
            return None;
        };
        Some((w.wr_id, w.sges.to_verbs(), pd))
    }
}

/// Every client's data path: each client's [`ClientData`] and which client
/// holds each QP number.
#[derive(Default)]
pub struct DataPath {
    clients: HashMap<ClientId, ClientData>,
    qpns: HashMap<u32, ClientId>,
}

impl DataPath {
    /// Client `id`'s data path starts with its memory `mem` (replacing
    /// any it had).
    pub fn add_client(&mut self, id: ClientId, mem: ClientMem) {
        if let Some(old) = self.clients.insert(id, ClientData::new(mem)) {
            self.forget(&old);
        }
    }

    /// Client `id` is gone: its data path, for the caller's last words of
    /// its QPs.
    pub fn remove_client(&mut self, id: ClientId) -> Option<ClientData> {
        let d = self.clients.remove(&id)?;
        self.forget(&d);
        Some(d)
    }

    fn forget(&mut self, d: &ClientData) {
        for n in d.qps.keys() {
            self.qpns.remove(n);
        }
    }

    pub fn client(&self, id: ClientId) -> Option<&ClientData> {
        self.clients.get(&id)
    }

    pub fn client_mut(&mut self, id: ClientId) -> Option<&mut ClientData> {
        self.clients.get_mut(&id)
    }

    /// QP `qp` of its client (`qp.client`, which must be here) is run by
    /// the engine from now on.  False: no such client.
    pub fn add_qp(&mut self, qp: Arc<DataQp>) -> bool {
        let Some(c) = self.clients.get_mut(&qp.client) else {
            return false;
        };
        self.qpns.insert(qp.qpn, qp.client);
        c.qps.insert(qp.qpn, qp);
        true
    }

    /// QP `qpn` goes: the QP, for the caller's last words.
    pub fn remove_qp(&mut self, qpn: u32) -> Option<Arc<DataQp>> {
        let c = self.qpns.remove(&qpn)?;
        self.clients.get_mut(&c)?.qps.remove(&qpn)
    }

    /// QP `qpn`, whoever's it is.
    pub fn qp(&self, qpn: u32) -> Option<&Arc<DataQp>> {
        self.clients.get(self.qpns.get(&qpn)?)?.qps.get(&qpn)
    }

    /// Every client's QPs.
    pub fn all_qps(&self) -> impl Iterator<Item = &Arc<DataQp>> {
        self.clients.values().flat_map(|c| c.qps.values())
    }

    /// The clients' numbers.
    pub fn ids(&self) -> Vec<ClientId> {
        self.clients.keys().copied().collect()
    }
}

/// Each client's memory keys, where the engine checks them: the control
/// path's tables in the agent (a test gives a map).
pub trait KeyTables {
    /// Client `id`'s keys (None: no such client).
    fn keys(&self, id: ClientId) -> Option<&Keys>;
    /// Invalidates client `id`'s window `rkey` through QP `qpn` (a SEND
    /// with invalidate; 0: a `LOCAL_INV`): false when it is not one to
    /// invalidate.
    fn invalidate(&mut self, id: ClientId, rkey: u32, qpn: u32) -> bool;
    /// Binds client `id`'s window `b.mw` through its QP `qp` (the client's
    /// handle) as a `BIND_MW` WQE asks (`rkey`: the new rkey the WQE
    /// carries, whose 8-bit key a type 2 window takes; a length of 0
    /// unbinds): the window's new rkey, or the completion status
    /// (`MW_BIND_ERR`).
    fn bind_mw(&mut self, id: ClientId, qp: u32, rkey: u32, b: &MwBind) -> Result<u32, u32>;
}

impl KeyTables for Tables {
    fn keys(&self, id: ClientId) -> Option<&Keys> {
        Some(self.client(id)?.keys())
    }
    fn invalidate(&mut self, id: ClientId, rkey: u32, qpn: u32) -> bool {
        self.client_mut(id).is_some_and(|c| c.invalidate(rkey, qpn))
    }
    fn bind_mw(&mut self, id: ClientId, qp: u32, rkey: u32, b: &MwBind) -> Result<u32, u32> {
        let range = (b.length > 0).then_some((b.mr_lkey, b.addr, b.length));
        match self.client_mut(id) {
            Some(c) => c.bind_mw(qp, b.mw, b.access, rkey, range),
            None => Err(IBV_WC_MW_BIND_ERR),
        }
    }
}

/// (Tests: bare key tables, which have no window objects: every bind is
/// `MW_BIND_ERR`.)
impl KeyTables for HashMap<ClientId, Keys> {
    fn keys(&self, id: ClientId) -> Option<&Keys> {
        self.get(&id)
    }
    fn invalidate(&mut self, id: ClientId, rkey: u32, qpn: u32) -> bool {
        self.get_mut(&id).is_some_and(|k| k.invalidate(rkey, qpn))
    }
    fn bind_mw(&mut self, _id: ClientId, _qp: u32, _rkey: u32, _b: &MwBind) -> Result<u32, u32> {
        Err(IBV_WC_MW_BIND_ERR)
    }
}

/// The memory of a client that is gone: nothing is mapped.
struct NoMemory;

impl Memory for NoMemory {
    fn write(&self, _dst: u64, _src: &[u8]) -> bool {
        false
    }
    fn read(&self, _src: u64, _dst: &mut [u8]) -> bool {
        false
    }
    fn atomic(&self, _addr: u64, _op: swrdma_rc::memory::Atomic) -> Option<u64> {
        None
    }
}

/// The clients' data with their key tables and the interface's GIDs: the
/// engine's host for one turn.
pub struct Serving<'a> {
    pub data: &'a DataPath,
    pub keys: RefCell<&'a mut dyn KeyTables>,
    /// The port's GID table (its used entries).
    pub gids: &'a [[u8; 16]],
}

impl Serving<'_> {
    /// The client `qp` is of (None: gone, while the engine still holds
    /// the QP).
    fn of(&self, qp: &DataQp) -> Option<&ClientData> {
        self.data.client(qp.client)
    }

    /// Completes flushed (`WR_FLUSH_ERR`) what was posted to `qp`'s own
    /// receive queue while it is in the error state, as the provider's
    /// own engine does when the receive is posted (IBTA: a receive posted
    /// in the error state completes flushed; `to_err` flushed those posted
    /// before): the number flushed, at most one queue's depth.
    pub fn flush_late_recvs(&self, qp: &DataQp) -> usize {
        if qp.srq.is_some() {
            return 0;
        }
        let st = qp.lock();
        if st.state != IBV_QPS_ERR {
            return 0;
        }
        let Some(data) = self.of(qp) else { return 0 };
        let n = flush_own_rq(data, qp);
        drop(st);
        n
    }

    /// Runs `f` with the keys of client `id` (none: an empty table, which
    /// grants nothing).
    fn keys_of<R>(&self, id: ClientId, f: impl FnOnce(&Keys) -> R) -> R {
        let k = self.keys.borrow();
        match k.keys(id) {
            Some(keys) => f(keys),
            None => f(&Keys::default()),
        }
    }
}

/// Completes flushed every WQE in `qp`'s own receive queue (at most one
/// queue's depth: a client writing more meanwhile waits): the number.
/// The caller holds the QP's lock.
fn flush_own_rq(data: &ClientData, qp: &DataQp) -> usize {
    let depth = data.rqs.borrow().get(&qp.qpn).map_or(0, |q| q.depth());
    let mut bad = false;
    let mut n = 0;
    while n < depth {
        let Some((wr_id, _, _)) = data.next_recv(qp, &mut bad) else {
            break;
        };
        let wc = wc_of(wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, qp.qpn);
        data.push_cqe(qp.recv_cq, &wc, false);
        n += 1;
    }
    n
}

/// A completion with the fields every one has.
fn wc_of(wr_id: u64, status: u32, opcode: u32, len: u32, qpn: u32) -> ibv_wc {
    // SAFETY: `ibv_wc` is integers and a union of integers: all-zero is
    // a valid value.
    let mut wc: ibv_wc = unsafe { std::mem::zeroed() };
    wc.wr_id = wr_id;
    wc.status = status;
    wc.opcode = opcode;
    wc.byte_len = len;
    wc.qp_num = qpn;
    wc
}

impl Host for Serving<'_> {
    type Qp = DataQp;
    type St = DataSt;

    fn mem(&self, qp: &DataQp) -> &dyn Memory {
        match self.of(qp) {
            Some(c) => &c.mem,
            None => &NoMemory,
        }
    }

    fn qp(&self, qpn: u32) -> Option<Arc<DataQp>> {
        self.data.qp(qpn).cloned()
    }

    fn all_qps(&self) -> Vec<Arc<DataQp>> {
        self.data.all_qps().cloned().collect()
    }

    fn gid(&self, index: usize) -> [u8; 16] {
        match self.gids.len() {
            0 => [0; 16],
            n => self.gids[index.min(n - 1)],
        }
    }

    fn with_keys<R>(&self, qp: &DataQp, f: impl FnOnce(&Keys) -> R) -> R {
        self.keys_of(qp.client, f)
    }

    fn complete_sq(&self, qp: &DataQp, st: &mut DataSt) {
        let Some(data) = self.of(qp) else {
            st.sq.clear();
            return;
        };
        while st.sq.front().is_some_and(|w| w.done.is_some()) {
            let Some(w) = st.sq.pop_front() else { break };
            let status = w.done.unwrap_or(0);
            if w.signaled || qp.sq_sig_all || status != 0 {
                let wc = wc_of(w.wr_id, status, w.opcode, w.len, qp.qpn);
                data.push_cqe(qp.send_cq, &wc, false);
            }
        }
    }

    fn to_err(&self, qp: &DataQp, st: &mut DataSt) {
        if st.state != IBV_QPS_ERR {
            if let Some(c) = self.of(qp) {
                c.moved.borrow_mut().push(qp.qpn);
            }
        }
        st.state = IBV_QPS_ERR;
        for w in st.sq.iter_mut() {
            w.done.get_or_insert(IBV_WC_WR_FLUSH_ERR);
        }
        self.complete_sq(qp, st);
        let Some(data) = self.of(qp) else {
            st.cur = None;
            return;
        };
        let flush = |wr_id| wc_of(wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, qp.qpn);
        if let Some(c) = st.cur.take() {
            data.push_cqe(c.cq.cq, &flush(c.wr_id), false);
        }
        if qp.srq.is_some() {
            return; // (an SRQ's receives stay for its other QPs)
        }
        flush_own_rq(data, qp);
    }

    fn accept_recv(&self, qp: &DataQp, st: &mut DataSt) -> Option<Receive<RecvCq>> {
        let data = self.of(qp)?;
        let mut bad = false;
        let got = data.next_recv(qp, &mut bad);
        if bad && !st.bad_rq {
            st.bad_rq = true;
            data.events.borrow_mut().push(Event::Qp(qp.handle, IBV_EVENT_QP_FATAL));
        }
        let (wr_id, sges, pd) = got?;
        Some(self.with_keys(qp, |k| accept(k, pd, wr_id, sges, ClientData::recv_cq(qp))))
    }

    fn finish_recv(&self, cur: Receive<RecvCq>, done: &Completion) -> (ibv_wc, RecvCq) {
        let id = cur.cq.client;
        cur.complete(done, &mut |rkey, qpn| self.keys.borrow_mut().invalidate(id, rkey, qpn))
    }

    fn push_recv(&self, cq: &RecvCq, wc: ibv_wc, solicited: bool) {
        if let Some(c) = self.data.client(cq.client) {
            c.push_cqe(cq.cq, &wc, solicited);
        }
    }

    fn qp_event(&self, qp: &DataQp, ev: u32) {
        if let Some(c) = self.of(qp) {
            c.events.borrow_mut().push(Event::Qp(qp.handle, ev));
        }
    }
}

/// Why a send WQE does not become a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The operation is not one of the wire's for this QP type, or a UD
    /// request longer than the port's MTU, or a UD address with no path:
    /// what the provider refuses at post with `EINVAL`.  (The client's
    /// provider refuses these before they reach the queue; one that
    /// arrives anyway completes with `LOC_QP_OP_ERR`.)
    Op,
    /// The local data's keys: `LOC_PROT_ERR`.
    Local(u32),
}

/// The engine's kind of request for `op` (None: not on the wire).
fn kind_of(op: &SendOp) -> Option<Op> {
    Some(match op {
        SendOp::Send | SendOp::SendWithImm { .. } | SendOp::SendWithInv { .. } => Op::Send,
        SendOp::RdmaWrite(_) | SendOp::RdmaWriteWithImm(..) => Op::Write,
        SendOp::RdmaRead(_) => Op::Read,
        SendOp::CompareAndSwap { .. } => Op::CmpSwap,
        SendOp::FetchAndAdd { .. } => Op::FetchAdd,
        _ => return None, // (ATOMIC_WRITE, local operations: not on the wire)
    })
}

/// The completion opcode of send WQE operation `op` (the wire's, or a
/// local operation's).
fn wc_opcode_of(op: &SendOp) -> u32 {
    match op {
        SendOp::BindMw { .. } => IBV_WC_BIND_MW,
        SendOp::LocalInv { .. } => IBV_WC_LOCAL_INV,
        op => kind_of(op).map_or(IBV_WC_SEND, wc_opcode),
    }
}

/// The completion opcode of a request of kind `k`.
fn wc_opcode(k: Op) -> u32 {
    match k {
        Op::Send => IBV_WC_SEND,
        Op::Write => IBV_WC_RDMA_WRITE,
        Op::Read => IBV_WC_RDMA_READ,
        Op::CmpSwap => IBV_WC_COMP_SWAP,
        _ => IBV_WC_FETCH_ADD,
    }
}

/// What [`request`] needs of the QP and the port.
pub struct SendCtx<'a> {
    /// `IBV_QPT_*`.
    pub qpt: u32,
    /// The QP's PD (the lkeys are checked against it).
    pub pd: u32,
    /// The QP's Q_Key (UD: used when a request's has its high bit set).
    pub qkey: u32,
    /// The port's active MTU in bytes (a UD request's limit).
    pub mtu: u32,
    pub keys: &'a Keys,
}

/// Send WQE `w` as the engine's request and its send queue entry (request
/// number `seq`), after the checks of its local data against the keys
/// (READ and atomics write into it).  `path`: our address and the peer's
/// for a UD address (None: no path).  Local operations (`LOCAL_INV`,
/// `BIND_MW`: they change the key table) are not the wire's ([`run_local`]).
pub fn request(
    w: &SendWqe<'_>,
    q: &SendCtx<'_>,
    seq: u64,
    path: impl Fn(&crate::wq::format::UdAddr) -> Option<(IpAddr, IpAddr)>,
) -> Result<(Req, SqEntry), Refused> {
    let (qpt, pd, keys) = (q.qpt, q.pd, q.keys);
    let kind = kind_of(&w.op).ok_or(Refused::Op)?;
    let ud = qpt == IBV_QPT_UD;
    if (ud || qpt == IBV_QPT_UC) && kind != Op::Send && !(qpt == IBV_QPT_UC && kind == Op::Write) {
        return Err(Refused::Op); // (UD sends only; UC sends and writes)
    }
    let (sges, data, len) = match w.data {
        Data::Inline(b) => (Vec::new(), Some(b.to_vec()), b.len() as u64),
        Data::Sges(l) => {
            let list = l.to_verbs();
            let writes = matches!(kind, Op::Read | Op::CmpSwap | Op::FetchAdd);
            let checked = keys.check_local(pd, &list, writes).map_err(Refused::Local)?;
            (checked.unwrap_or(list), None, l.total())
        }
    };
    if ud && len > q.mtu as u64 {
        return Err(Refused::Op);
    }
    let mut r = Req::new(seq, kind, len, w.send_flags & IBV_SEND_SOLICITED != 0);
    (r.sges, r.data) = (sges, data);
    operands(&mut r, &w.op);
    if ud {
        let a = w.ud.ok_or(Refused::Op)?;
        let (s, d) = path(&a).ok_or(Refused::Op)?;
        let tc = if a.is_global { a.traffic_class } else { 0 };
        // (A Q_Key with its high bit set: the QP's own, IBTA C10-15.)
        let qkey = if a.remote_qkey & 0x8000_0000 != 0 {
            q.qkey
        } else {
            a.remote_qkey
        };
        r.ud = Some((s, d, a.remote_qpn, qkey, tc));
    }
    let entry = SqEntry {
        seq,
        wr_id: w.wr_id,
        opcode: wc_opcode(kind),
        len: r.len as u32,
        signaled: w.send_flags & IBV_SEND_SIGNALED != 0,
        done: None,
    };
    Ok((r, entry))
}

/// The request a client sends itself through the direct-transmit window
/// (`wq/mod.rs`), as [`request`] makes it (number 0): an RC SEND (with
/// immediate data) or WRITE (with immediate data) whose data, `b`, is its
/// inline data or what its SGEs hold (`len` bytes), or an RC READ of `len`
/// bytes or an atomic (`b` empty: their SGEs are written, not sent); None
/// for any other.
pub fn direct_request(w: &SendWqe<'_>, b: &[u8], len: u64) -> Option<Req> {
    let sends = matches!(
        w.op,
        SendOp::Send | SendOp::SendWithImm { .. } | SendOp::RdmaWrite(_) | SendOp::RdmaWriteWithImm(..)
    );
    let asks = matches!(
        w.op,
        SendOp::RdmaRead(_) | SendOp::CompareAndSwap { .. } | SendOp::FetchAndAdd { .. }
    );
    let data_ok = if sends {
        b.len() as u64 == len
    } else {
        asks && b.is_empty()
    };
    if !data_ok || w.ud.is_some() || w.xrc_srqn.is_some() {
        return None;
    }
    let kind = kind_of(&w.op)?;
    let mut r = Req::new(0, kind, len, w.send_flags & IBV_SEND_SOLICITED != 0);
    r.data = sends.then(|| b.to_vec());
    operands(&mut r, &w.op);
    Some(r)
}

/// A request's operands from its WQE's operation.
fn operands(r: &mut Req, op: &SendOp) {
    match *op {
        // (`imm` as `ibv_send_wr` holds it: the ImmDt bytes in order.)
        SendOp::SendWithImm { imm } => r.imm = Some(u32::from_be(imm)),
        SendOp::SendWithInv { rkey } => r.inv = Some(rkey),
        SendOp::RdmaWrite(m) | SendOp::RdmaRead(m) => (r.raddr, r.rkey) = (m.addr, m.rkey),
        SendOp::RdmaWriteWithImm(m, imm) => {
            (r.raddr, r.rkey) = (m.addr, m.rkey);
            r.imm = Some(u32::from_be(imm));
        }
        SendOp::CompareAndSwap { remote, compare, swap } => {
            (r.raddr, r.rkey, r.cmp, r.swap) = (remote.addr, remote.rkey, compare, swap);
        }
        SendOp::FetchAndAdd { remote, add } => (r.raddr, r.rkey, r.cmp) = (remote.addr, remote.rkey, add),
        _ => {}
    }
}

/// A UD address as the verbs' address vector (for `ud_path`).
fn ah_attr(a: &UdAddr) -> ibv_ah_attr {
    // SAFETY: `ibv_ah_attr` is integers and a union of bytes: all-zero is
    // a valid value.
    let mut ah: ibv_ah_attr = unsafe { std::mem::zeroed() };
    ah.is_global = a.is_global as u8;
    ah.grh.dgid.raw = a.dgid;
    ah.grh.sgid_index = a.sgid_index;
    ah.grh.hop_limit = a.hop_limit;
    ah.grh.traffic_class = a.traffic_class;
    ah.grh.flow_label = a.flow_label;
    ah.port_num = 1;
    ah
}

/// Takes up to `max` send WQEs of `qp` from its send queue `sq` (of
/// `shape`) onto the wire, in order: the number taken.  A local operation
/// is done as it is taken ([`run_local`]).  A WQE that does not become a
/// request ([`Refused`]) completes with its status and moves the QP to the
/// error state, as the provider's engine fails a request it cannot read; a
/// queue entry that is not a WQE does too (`LOC_QP_OP_ERR`), with
/// `IBV_EVENT_QP_FATAL` for the client.  In the error state every WQE
/// completes flushed.
pub fn take_sends(
    h: &Serving<'_>,
    wire: &Wire,
    qp: &Arc<DataQp>,
    sq: &mut Consumer,
    shape: &SendShape,
    max: usize,
) -> usize {
    let mut buf = vec![0u8; sq.capacity()];
    let mut st = qp.lock();
    let mut taken = 0;
    while taken < max {
        let n = match sq.try_pop(&mut buf) {
            Ok(Some(n)) => n,
            Ok(None) => break,
            Err(_) => {
                fatal(h, qp, &mut st);
                break;
            }
        };
        taken += 1;
        // (The window's PSN goes with the next entry only, when it is
        // marked direct.)
        let direct = sq.dtx_taken().filter(|_| is_direct(&buf[..n]));
        let Ok(w) = decode_send(&buf[..n], shape) else {
            fatal(h, qp, &mut st);
            break;
        };
        let seq = st.next_seq;
        st.next_seq += 1;
        if st.state == IBV_QPS_ERR {
            st.sq.push_back(SqEntry::failed(seq, &w, IBV_WC_WR_FLUSH_ERR));
            h.complete_sq(qp, &mut st);
            continue;
        }
        if run_local(h, qp, &mut st, &w, seq) {
            continue;
        }
        let made = h.keys_of(qp.client, |keys| {
            let q = SendCtx {
                qpt: qp.qpt,
                pd: qp.pd,
                qkey: st.attr.qkey,
                mtu: wire.mtu,
                keys,
            };
            request(&w, &q, seq, |a| ud_path(wire, h, &ah_attr(a)))
        });
        match made {
            Ok((r, e)) => {
                st.sq.push_back(e);
                match direct {
                    Some((psn, sent)) => wire.post_direct(h, qp, &mut st, r, psn, sent),
                    None => wire.post(h, qp, &mut st, r),
                }
            }
            Err(why) => {
                let status = match why {
                    Refused::Op => IBV_WC_LOC_QP_OP_ERR,
                    Refused::Local(s) => s,
                };
                st.sq.push_back(SqEntry::failed(seq, &w, status));
                h.to_err(qp, &mut st);
            }
        }
    }
    taken
}

/// Runs send WQE `w` of `qp` (request number `seq`) when it is a local
/// operation, as the provider runs one at post (`send/local.rs`): a
/// `BIND_MW` binds (or, of length 0, unbinds) the client's window in its
/// tables ([`KeyTables::bind_mw`]: its MR's rights and range, a type 2
/// window's QP and PD, the window's rkey kept in step), a `LOCAL_INV`
/// invalidates a type 2 window of the client's (else `LOC_QP_OP_ERR`).  It
/// is done now, before the WQEs after it reach the wire, and completes in
/// send queue order, after the WQEs before it (`IBV_WC_BIND_MW`,
/// `IBV_WC_LOCAL_INV`; signaled or failed only).  A failure moves the QP to
/// the error state: what is outstanding and what comes after completes
/// flushed.  (On a QP that is neither RC nor UC, which the provider
/// refuses at post: `LOC_QP_OP_ERR`.)  False: `w` is not a local operation.
pub fn run_local(h: &Serving<'_>, qp: &DataQp, st: &mut DataSt, w: &SendWqe<'_>, seq: u64) -> bool {
    if !matches!(w.op, SendOp::BindMw { .. } | SendOp::LocalInv { .. }) {
        return false;
    }
    let status = if !matches!(qp.qpt, IBV_QPT_RC | IBV_QPT_UC) {
        IBV_WC_LOC_QP_OP_ERR
    } else {
        let mut k = h.keys.borrow_mut();
        match w.op {
            SendOp::BindMw { rkey, bind } => k.bind_mw(qp.client, qp.handle, rkey, &bind).err().unwrap_or(0),
            SendOp::LocalInv { rkey } if k.invalidate(qp.client, rkey, 0) => 0,
            _ => IBV_WC_LOC_QP_OP_ERR,
        }
    };
    st.sq.push_back(SqEntry {
        seq,
        wr_id: w.wr_id,
        opcode: wc_opcode_of(&w.op),
        len: 0,
        signaled: w.send_flags & IBV_SEND_SIGNALED != 0,
        done: Some(status),
    });
    if status != 0 {
        h.to_err(qp, st);
    } else {
        h.complete_sq(qp, st);
    }
    true
}

/// A send queue that holds something that is not a WQE: the client's
/// `IBV_EVENT_QP_FATAL`, and the QP to the error state.
fn fatal(h: &Serving<'_>, qp: &DataQp, st: &mut DataSt) {
    h.qp_event(qp, IBV_EVENT_QP_FATAL);
    h.to_err(qp, st);
}

/// Local operations ([`run_local`]) against a client's real tables: the
/// windows' binds, invalidations and their completions in order.
#[cfg(test)]
mod local_ops {
    use super::*;
    use crate::ctl::msg::{Caps, CreateCq, CreateQp, MwType, QpType, Queue, RegMr, Reply, Request};
    use crate::ctl::tables::{Hooks, Limits};
    use crate::place::AccessPage;
    use crate::wq::format::{decode_cqe, SgeList};
    use crate::wq::Slots;
    use std::os::fd::AsFd;

    const ID: ClientId = 3;
    const CQ_UH: u64 = 0xC0;

    /// QP numbers 0x100, 0x101, ...
    struct Nums(u32);

    impl Hooks for Nums {
        fn alloc_num(&mut self) -> Result<u32, i32> {
            self.0 += 1;
            Ok(self.0)
        }
        fn gid_count(&self) -> usize {
            1
        }
    }

    /// A client's tables (a PD, a CQ, an RC and a UD QP, an MR that
    /// windows may be bound to and one they may not, a window of each
    /// type) and its data path (the QPs, the CQ's queue: our half).
    struct Setup {
        t: Tables,
        d: DataPath,
        cq: Consumer,
        buf: Vec<u8>,
        pd_id: u32,
        rc: Arc<DataQp>,
        ud: Arc<DataQp>,
        /// The MR's key (`MW_BIND`), the other's (no `MW_BIND`).
        key: u32,
        no_bind: u32,
        /// The windows' handles and first rkeys.
        mw1: (u32, u32),
        mw2: (u32, u32),
    }

    fn x(t: &mut Tables, n: &mut Nums, r: Request) -> Reply {
        t.exec(ID, &r, n)
    }

    fn setup() -> Setup {
        let mut t = Tables::new(Limits::WIRE);
        let mut n = Nums(0x100);
        assert!(t.add_client(ID));
        let Reply::Pd { handle: pd } = x(&mut t, &mut n, Request::AllocPd { parent: None }) else {
            panic!("alloc_pd")
        };
        let q = Queue {
            depth: 16,
            slot_size: CQE_SLOT as u32,
        };
        let c = CreateCq {
            user_handle: CQ_UH,
            cqe: 15,
            queue: q,
            doorbell: false,
            channel: false,
        };
        let Reply::Cq { handle: cq_h, .. } = x(&mut t, &mut n, Request::CreateCq(c)) else {
            panic!("create_cq")
        };
        let mut qp = |ty| {
            let c = CreateQp {
                user_handle: 0,
                pd: Some(pd),
                xrcd: None,
                qp_type: ty,
                send_cq: Some(cq_h),
                recv_cq: Some(cq_h),
                srq: None,
                sq_sig_all: false,
                cap: Caps {
                    max_send_wr: 8,
                    max_recv_wr: 8,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq: Some(q),
                rq: Some(q),
            };
            match x(&mut t, &mut n, Request::CreateQp(c)) {
                Reply::Qp { handle, qpn, .. } => (handle, qpn),
                r => panic!("create_qp: {r:?}"),
            }
        };
        let (rc_h, rc_n) = qp(QpType::Rc);
        let (ud_h, ud_n) = qp(QpType::Ud);
        let pd_id = t.client(ID).unwrap().qp(rc_h).unwrap().pd_id;
        let buf = vec![0u8; 8192];
        let base = buf.as_ptr() as u64;
        let mut mr = |access| {
            let r = RegMr {
                pd,
                access,
                addr: base,
                length: 4096,
                iova: 0x10_0000,
            };
            match x(&mut t, &mut n, Request::RegMr(r)) {
                Reply::Mr { lkey, .. } => lkey,
                r => panic!("reg_mr: {r:?}"),
            }
        };
        let rights = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        let key = mr(rights | IBV_ACCESS_MW_BIND);
        let no_bind = mr(rights);
        let mut mw = |ty| match x(&mut t, &mut n, Request::AllocMw { pd, ty }) {
            Reply::Mw { handle, rkey } => (handle, rkey),
            r => panic!("alloc_mw: {r:?}"),
        };
        let (mw1, mw2) = (mw(MwType::One), mw(MwType::Two));
        let mut d = DataPath::default();
        let fd = crate::client::access_page().unwrap();
        let page = AccessPage::map(fd.as_fd()).unwrap();
        d.add_client(ID, ClientMem::new(std::process::id() as libc::pid_t, None, false, page));
        let (q, _) = Slots::create(16, CQE_SLOT).unwrap();
        let (agent, client) = q.split();
        d.client_mut(ID).unwrap().cqs.get_mut().insert(cq_h, agent);
        let dq = |qpn, qpt, h| {
            Arc::new(DataQp::new(
                ID,
                qpn,
                qpt,
                pd_id,
                h,
                Some(cq_h),
                Some(cq_h),
                None,
                false,
                1,
            ))
        };
        let (rc, ud) = (dq(rc_n, IBV_QPT_RC, rc_h), dq(ud_n, IBV_QPT_UD, ud_h));
        assert!(d.add_qp(rc.clone()) && d.add_qp(ud.clone()));
        rc.lock().state = IBV_QPS_RTS;
        ud.lock().state = IBV_QPS_RTS;
        Setup {
            t,
            d,
            cq: client,
            buf,
            pd_id,
            rc,
            ud,
            key,
            no_bind,
            mw1,
            mw2,
        }
    }

    fn cqes(q: &mut Consumer) -> Vec<(u64, u32, u32)> {
        let mut out = Vec::new();
        let mut b = [0u8; CQE_SLOT];
        while let Ok(Some(n)) = q.try_pop(&mut b) {
            let e = decode_cqe(&b[..n]).unwrap();
            out.push((e.wr_id, e.status, e.opcode));
        }
        out
    }

    fn wqe(wr_id: u64, op: SendOp, signaled: bool) -> SendWqe<'static> {
        SendWqe {
            wr_id,
            op,
            send_flags: if signaled { IBV_SEND_SIGNALED } else { 0 },
            ud: None,
            xrc_srqn: None,
            data: Data::Sges(SgeList::new(&[])),
        }
    }

    /// A bind of `mw` over [`off`, `off` + `len`) of the MR's IOVAs.
    fn bind(mw: u32, rkey: u32, lkey: u32, off: u64, len: u64, access: u32) -> SendOp {
        SendOp::BindMw {
            rkey,
            bind: MwBind {
                mw,
                mr_lkey: lkey,
                addr: 0x10_0000 + off,
                length: len,
                access,
            },
        }
    }

    fn inc(rkey: u32) -> u32 {
        (rkey & !0xff) | (rkey.wrapping_add(1) & 0xff)
    }

    #[test]
    fn windows_are_bound_and_invalidated_in_send_queue_order() {
        let mut s = setup();
        let (mw1, r1) = s.mw1;
        let (mw2, r2) = s.mw2;
        let (key, pd, qpn) = (s.key, s.pd_id, s.rc.qpn);
        let wr = IBV_ACCESS_REMOTE_WRITE;
        let h = Serving {
            data: &s.d,
            keys: RefCell::new(&mut s.t),
            gids: &[],
        };
        let qp = s.rc.clone();
        let mut st = qp.lock();
        // A WRITE in flight, then a type 1 bind: done at once (its rkey
        // grants now), completed after the WRITE.
        st.sq.push_back(SqEntry {
            seq: 0,
            wr_id: 10,
            opcode: IBV_WC_RDMA_WRITE,
            len: 4,
            signaled: true,
            done: None,
        });
        assert!(run_local(
            &h,
            &qp,
            &mut st,
            &wqe(11, bind(mw1, inc(r1), key, 0x100, 64, wr), true),
            1
        ));
        let n1 = inc(r1);
        let va = s.buf.as_ptr() as u64;
        let grant = |h: &Serving<'_>, qpn: u32, rkey: u32, off: u64| {
            h.keys_of(ID, |k| {
                k.grant(qpn, pd, rkey, 0x10_0000 + off, 8, IBV_ACCESS_REMOTE_WRITE)
            })
        };
        assert_eq!(grant(&h, qpn, n1, 0x100), Some(va + 0x100), "bound at once");
        assert_eq!(
            grant(&h, 0x999, n1, 0x100),
            Some(va + 0x100),
            "type 1: any QP of the PD"
        );
        assert_eq!(grant(&h, qpn, n1, 0x140), None, "outside the window");
        assert!(cqes(&mut s.cq).is_empty(), "the WRITE before it is not done");
        st.sq_done(0, 0);
        h.complete_sq(&qp, &mut st);
        assert_eq!(
            cqes(&mut s.cq),
            vec![(10, 0, IBV_WC_RDMA_WRITE), (11, 0, IBV_WC_BIND_MW)],
            "in send queue order"
        );
        // Type 2: the consumer's key, this QP only; unsignaled: no CQE.
        let n2 = (r2 & !0xff) | 0x5a;
        assert!(run_local(
            &h,
            &qp,
            &mut st,
            &wqe(12, bind(mw2, 0x5a, key, 0x200, 64, wr), false),
            2
        ));
        assert!(cqes(&mut s.cq).is_empty(), "unsignaled success");
        assert_eq!(grant(&h, qpn, n2, 0x200), Some(va + 0x200));
        assert_eq!(grant(&h, 0x999, n2, 0x200), None, "another QP");
        // LOCAL_INV: it grants no more.
        assert!(run_local(
            &h,
            &qp,
            &mut st,
            &wqe(13, SendOp::LocalInv { rkey: n2 }, true),
            3
        ));
        assert_eq!(cqes(&mut s.cq), vec![(13, 0, IBV_WC_LOCAL_INV)]);
        assert_eq!(grant(&h, qpn, n2, 0x200), None, "invalidated");
        // Bound again (another key), then invalidated by a SEND with
        // invalidate that came in on the QP (the engine's receive path):
        // through another QP it is refused.
        let n3 = (r2 & !0xff) | 0x5b;
        assert!(run_local(
            &h,
            &qp,
            &mut st,
            &wqe(14, bind(mw2, 0x5b, key, 0, 64, wr), true),
            4
        ));
        assert_eq!(cqes(&mut s.cq), vec![(14, 0, IBV_WC_BIND_MW)]);
        let to = RecvCq {
            client: ID,
            cq: qp.recv_cq,
        };
        let recv = |wr_id| swrdma_rc::recv::accept(&Keys::default(), pd, wr_id, Vec::new(), to);
        let sent = |qpn| Completion {
            qpn,
            src_qp: 0x77,
            opcode: IBV_WC_RECV,
            len: 0,
            imm: None,
            inv: Some(n3),
        };
        let (wc, _) = h.finish_recv(recv(20), &sent(0x999));
        assert_eq!(wc.status, IBV_WC_REM_INV_REQ_ERR, "not through its QP");
        assert_eq!(grant(&h, qpn, n3, 0), Some(va));
        let (wc, _) = h.finish_recv(recv(21), &sent(qpn));
        assert_eq!(wc.status, 0);
        assert_ne!(wc.wc_flags & IBV_WC_WITH_INV, 0);
        // SAFETY: the union's member a completion WITH_INV has.
        assert_eq!(unsafe { wc.imm.invalidated_rkey }, n3);
        assert_eq!(grant(&h, qpn, n3, 0), None, "invalidated by the peer");
        // Type 1 unbound (length 0): the next tag, nothing granted.
        assert!(run_local(&h, &qp, &mut st, &wqe(15, bind(mw1, 0, 0, 0, 0, 0), true), 5));
        assert_eq!(cqes(&mut s.cq), vec![(15, 0, IBV_WC_BIND_MW)]);
        assert_eq!(grant(&h, qpn, n1, 0x100), None, "unbound");
        drop(st);
        let n4 = inc(n1);
        assert_eq!(
            s.t.client(ID).unwrap().mw(mw1).unwrap().rkey,
            n4,
            "the tables' rkey in step"
        );
        // Bound again, then deallocated: its rkey goes with it.
        let h = Serving {
            data: &s.d,
            keys: RefCell::new(&mut s.t),
            gids: &[],
        };
        let mut st = qp.lock();
        assert!(run_local(
            &h,
            &qp,
            &mut st,
            &wqe(16, bind(mw1, 0, key, 0, 64, wr), true),
            6
        ));
        assert_eq!(cqes(&mut s.cq), vec![(16, 0, IBV_WC_BIND_MW)]);
        let n5 = inc(n4);
        assert_eq!(grant(&h, qpn, n5, 0), Some(va));
        drop(st);
        assert_eq!(s.t.exec(ID, &Request::DeallocMw { mw: mw1 }, &mut Nums(0)), Reply::Done);
        assert!(s.t.client(ID).unwrap().keys().get(n5).is_none(), "dealloc unbinds");
        assert_eq!(qp.lock().state, IBV_QPS_RTS, "no failure");
        assert!(s.d.client(ID).unwrap().take_moved().is_empty());
    }

    #[test]
    fn a_failed_local_operation_moves_the_qp_to_the_error_state() {
        let mut s = setup();
        let (mw1, r1) = s.mw1;
        let (mw2, _) = s.mw2;
        let (key, no_bind) = (s.key, s.no_bind);
        let wr = IBV_ACCESS_REMOTE_WRITE;
        let h = Serving {
            data: &s.d,
            keys: RefCell::new(&mut s.t),
            gids: &[],
        };
        let qp = s.rc.clone();
        let f = IBV_WC_WR_FLUSH_ERR;
        // Each failure: its status (signaled or not), what was outstanding
        // flushed, the QP in the error state and moved for the tables.
        let cases = [
            (bind(mw1, 0, key, 4000, 200, wr), IBV_WC_MW_BIND_ERR, "beyond the MR"),
            (
                bind(mw1, 0, no_bind, 0, 64, wr),
                IBV_WC_MW_BIND_ERR,
                "an MR without MW_BIND",
            ),
            (bind(mw1, 0, 0, 0, 64, wr), IBV_WC_MW_BIND_ERR, "no MR"),
            (bind(0x999, 0, key, 0, 64, wr), IBV_WC_MW_BIND_ERR, "no such window"),
            (
                bind(mw1, 0, key, 0, 64, IBV_ACCESS_ZERO_BASED),
                IBV_WC_MW_BIND_ERR,
                "zero based",
            ),
            (
                bind(mw2, 1, key, 0, 0, wr),
                IBV_WC_MW_BIND_ERR,
                "a type 2 window unbound",
            ),
            (
                SendOp::LocalInv { rkey: r1 },
                IBV_WC_LOC_QP_OP_ERR,
                "a window not bound",
            ),
            (SendOp::LocalInv { rkey: 0x1234 }, IBV_WC_LOC_QP_OP_ERR, "no such key"),
        ];
        for (i, (op, status, why)) in cases.into_iter().enumerate() {
            let mut st = qp.lock();
            st.state = IBV_QPS_RTS;
            st.sq.push_back(SqEntry {
                seq: 0,
                wr_id: 1,
                opcode: IBV_WC_SEND,
                len: 0,
                signaled: false,
                done: None,
            });
            assert!(run_local(&h, &qp, &mut st, &wqe(100 + i as u64, op, false), 1));
            let opcode = wc_opcode_of(&op);
            assert_eq!(
                cqes(&mut s.cq),
                vec![(1, f, IBV_WC_SEND), (100 + i as u64, status, opcode)],
                "{why}"
            );
            assert_eq!(st.state, IBV_QPS_ERR, "{why}");
            assert!(st.sq.is_empty());
            assert_eq!(s.d.client(ID).unwrap().take_moved(), vec![qp.qpn], "{why}");
            // What comes next is flushed, with its own opcode.
            let e = SqEntry::failed(2, &wqe(200, op, false), f);
            assert_eq!((e.opcode, e.done), (opcode, Some(f)));
        }
        // A type 1 window is not invalidated (LOCAL_INV is for type 2): it
        // stays bound.
        let mut st = qp.lock();
        st.state = IBV_QPS_RTS;
        assert!(run_local(
            &h,
            &qp,
            &mut st,
            &wqe(150, bind(mw1, 0, key, 0, 64, wr), false),
            2
        ));
        let n1 = inc(r1);
        assert!(run_local(
            &h,
            &qp,
            &mut st,
            &wqe(151, SendOp::LocalInv { rkey: n1 }, false),
            3
        ));
        assert_eq!(cqes(&mut s.cq), vec![(151, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOCAL_INV)]);
        assert!(h.keys_of(ID, |k| k.get(n1)).is_some(), "still bound");
        assert_eq!(st.state, IBV_QPS_ERR);
        drop(st);
        // On a UD QP (which the provider refuses at post).
        let ud = s.ud.clone();
        let mut st = ud.lock();
        assert!(run_local(
            &h,
            &ud,
            &mut st,
            &wqe(300, bind(mw1, 0, key, 0, 64, wr), false),
            0
        ));
        assert_eq!(cqes(&mut s.cq), vec![(300, IBV_WC_LOC_QP_OP_ERR, IBV_WC_BIND_MW)]);
        // Not a local operation: not run.
        assert!(!run_local(&h, &ud, &mut st, &wqe(301, SendOp::Send, true), 1));
        drop(st);
        // What failed bound nothing: the type 2 window's rkey is as
        // allocated, the type 1 window's moved once (its one bind).
        let c = s.t.client(ID).unwrap();
        assert_eq!(
            (c.mw(mw1).unwrap().rkey, c.mw(mw2).unwrap().rkey),
            (inc(s.mw1.1), s.mw2.1)
        );
        // Bare key tables have no windows.
        let mut bare: HashMap<ClientId, Keys> = HashMap::new();
        assert_eq!(bare.bind_mw(ID, 1, 0, &MwBind::default()), Err(IBV_WC_MW_BIND_ERR));
    }
}
