//! The device's objects and what both transports do with them: CQs,
//! SRQs, QPs and their state, the keys, the receive and send queues, the
//! QP to error, async events (one context's tables: `Objects`).  Below
//! the transports (context.rs: the same-machine links and the context's
//! thread; wire/: RoCE v2), above the engine (`swrdma_rc`).

use crate::links::OutLink;
use crate::sys::lock;
use ibverbs_abi::*;
use std::cell::Cell;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use swrdma_rc::budget::Budget;
use swrdma_rc::keys::{Keys, MrEnt, WindowBind};
use swrdma_ring::Msg;

pub use swrdma_rc::nummap::NumMap;

pub struct RWqe {
    pub wr_id: u64,
    pub sges: Vec<ibv_sge>,
}

pub struct SWqe {
    pub seq: u64,
    pub wr_id: u64,
    pub op: u32, // ibv_wc_opcode
    pub signaled: bool,
    pub len: u32,
    pub done: Option<u32>,
    pub sges: Vec<ibv_sge>, // local scatter list of READ / atomics
    /// What a retransmission needs (reliable requests): the request's
    /// header (`seq`, `flags` of the whole message: see [`frag`]) ...
    pub hdr: Msg,
    /// ... its gather list as posted (MR addresses; checked and translated
    /// again when the data is gathered anew) ...
    pub gsges: KeptSges,
    /// ... or a copy of its inline data.
    pub data: InlineCopy,
    /// Where its first record went in the link's request ring (the ring's
    /// `produced` position when it was sent; `NOT_SENT`: not on a ring):
    /// when the peer dies, a request the peer's responder had consumed
    /// before a later one is known delivered (`Ctx::link_died`).
    pub start: u64,
}

/// `SWqe::start` of a request that is on no ring.
pub const NOT_SENT: u64 = u64::MAX;

/// How many SGEs of a reliable request's gather list its send queue entry
/// keeps in place (more go to the heap).
const SGES_IN_PLACE: usize = 2;

/// A reliable request's gather list, kept for a retransmission: up to
/// `SGES_IN_PLACE` SGEs in the entry itself, so that posting a request of
/// one buffer allocates nothing (a `malloc` and a `free` were a tenth of
/// the posting of `ib_send_lat`'s SEND); more on the heap.
pub enum KeptSges {
    InPlace { n: u8, s: [ibv_sge; SGES_IN_PLACE] },
    Heap(Vec<ibv_sge>),
}

impl KeptSges {
    /// No SGE (inline data, or no data).
    pub const NONE: KeptSges = KeptSges::InPlace {
        n: 0,
        s: [ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        }; SGES_IN_PLACE],
    };

    pub fn new(sges: &[ibv_sge]) -> KeptSges {
        if sges.len() > SGES_IN_PLACE {
            return KeptSges::Heap(sges.to_vec());
        }
        let mut k = KeptSges::NONE;
        if let KeptSges::InPlace { n, s } = &mut k {
            s[..sges.len()].copy_from_slice(sges);
            *n = sges.len() as u8;
        }
        k
    }

    pub fn as_slice(&self) -> &[ibv_sge] {
        match self {
            KeptSges::InPlace { n, s } => &s[..*n as usize],
            KeptSges::Heap(v) => v,
        }
    }
}

/// How many bytes of a reliable request's inline data its send queue entry
/// keeps in place (more go to the heap).
const IN_PLACE: usize = 64;

/// A reliable request's inline data, kept for a retransmission: up to
/// `IN_PLACE` bytes in the entry itself, so that the small sends of a
/// latency-bound program allocate nothing on their path; more on the heap.
pub enum InlineCopy {
    InPlace { len: u8, buf: [u8; IN_PLACE] },
    Heap(Box<[u8]>),
}

impl InlineCopy {
    /// No data.
    pub const NONE: InlineCopy = InlineCopy::InPlace {
        len: 0,
        buf: [0; IN_PLACE],
    };

    /// `len` bytes, written by `fill` at the pointer it is given (room for
    /// exactly `len` bytes).
    pub fn new(len: usize, fill: impl FnOnce(*mut u8)) -> InlineCopy {
        if len <= IN_PLACE {
            let mut buf = [0u8; IN_PLACE];
            fill(buf.as_mut_ptr());
            InlineCopy::InPlace { len: len as u8, buf }
        } else {
            let mut v = vec![0u8; len].into_boxed_slice();
            fill(v.as_mut_ptr());
            InlineCopy::Heap(v)
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            InlineCopy::InPlace { len, buf } => &buf[..*len as usize],
            InlineCopy::Heap(v) => v,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

impl SWqe {
    /// A request completed locally (no header, nothing to retransmit).
    pub fn local(seq: u64, wr_id: u64, op: u32, signaled: bool, len: u32, done: Option<u32>) -> SWqe {
        SWqe {
            seq,
            wr_id,
            op,
            signaled,
            len,
            done,
            sges: Vec::new(),
            hdr: Msg::default(),
            gsges: KeptSges::NONE,
            data: InlineCopy::NONE,
            start: NOT_SENT,
        }
    }
}

// ---------------------------------------------------------------------------
// CQ
// ---------------------------------------------------------------------------

pub struct CqInner {
    pub wcs: VecDeque<ibv_wc>,
    pub armed: u8, // 0 no, 1 any, 2 solicited
    /// Our own descriptor for the completion channel's pipe (opened on the
    /// first event: the library's descriptor may not be written by us).
    wfd: Option<OwnedFd>,
}

pub struct Cq {
    pub ibcq: usize,
    pub chan_fd: c_int,
    pub inner: Mutex<CqInner>,
    pub has: AtomicU32,
    /// The depth `ibv_create_cq` promised (`cqe`, changed by resize): no
    /// more completions than this are ever held.
    pub depth: AtomicU32,
    /// Set when a completion found the CQ full (an overrun): the CQ is in
    /// the error state, IBV_EVENT_CQ_ERR was reported, and once what it
    /// holds has been polled, polling fails.
    pub overrun: AtomicBool,
    /// The QPs and SRQs that complete into this CQ: destroy_cq refuses with
    /// EBUSY while any lives (the kernel's use count).
    pub users: AtomicU32,
    /// The context's async-event pipe (a duplicate: the CQ may report an
    /// overrun from any thread).
    async_w: Option<OwnedFd>,
    /// The context's count of armed CQs (see `Ctx::armed_cqs`).
    armed_ctr: Arc<AtomicU32>,
}

impl Drop for Cq {
    fn drop(&mut self) {
        if lock(&self.inner).armed != 0 {
            self.armed_ctr.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Cq {
    pub fn new(ibcq: usize, chan_fd: c_int, depth: u32, async_w: Option<OwnedFd>, c: &Objects) -> Cq {
        Cq {
            armed_ctr: c.armed_cqs.clone(),
            ibcq,
            chan_fd,
            inner: Mutex::new(CqInner {
                wcs: VecDeque::new(),
                armed: 0,
                wfd: None,
            }),
            has: AtomicU32::new(0),
            depth: AtomicU32::new(depth),
            overrun: AtomicBool::new(false),
            users: AtomicU32::new(0),
            async_w,
        }
    }

    pub fn push(&self, wc: ibv_wc, solicited: bool) {
        let mut g = lock(&self.inner);
        if g.wcs.len() >= self.depth.load(Ordering::Relaxed) as usize {
            // CQ overrun (as rxe): the completion is lost, the CQ is in
            // error and the owner hears of it as an affiliated async event.
            if !self.overrun.swap(true, Ordering::SeqCst) {
                if let Some(w) = &self.async_w {
                    let mut rec = [0u8; 16];
                    rec[..8].copy_from_slice(&(self.ibcq as u64).to_ne_bytes());
                    rec[8..].copy_from_slice(&(IBV_EVENT_CQ_ERR as u64).to_ne_bytes());
                    let _ = rustix::io::write(w, &rec);
                }
            }
            return;
        }
        g.wcs.push_back(wc);
        self.has.store(g.wcs.len() as u32, Ordering::Release);
        if g.armed != 0 && (g.armed == 1 || solicited || wc.status != IBV_WC_SUCCESS) {
            g.armed = 0;
            self.armed_ctr.fetch_sub(1, Ordering::SeqCst);
            self.notify(&mut g);
        }
    }

    fn notify(&self, g: &mut CqInner) {
        if self.chan_fd < 0 {
            return;
        }
        if g.wfd.is_none() {
            use std::os::unix::fs::OpenOptionsExt;
            g.wfd = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(format!("/proc/self/fd/{}", self.chan_fd))
                .ok()
                .map(OwnedFd::from);
        }
        if let Some(w) = &g.wfd {
            let _ = rustix::io::write(w, &(self.ibcq as u64).to_ne_bytes());
        }
    }

    /// Forgets the completions of QP `qpn` not yet polled (the QP went to
    /// RESET or was destroyed; as hardware providers clean their CQs).
    pub fn clean(&self, qpn: u32) {
        let mut g = lock(&self.inner);
        g.wcs.retain(|w| w.qp_num != qpn);
        self.has.store(g.wcs.len() as u32, Ordering::Release);
    }

    /// req_notify_cq
    pub fn arm(&self, solicited: bool) {
        let mut g = lock(&self.inner);
        let want = if solicited { 2 } else { 1 };
        if g.armed == 0 {
            self.armed_ctr.fetch_add(1, Ordering::SeqCst);
        }
        if g.armed == 0 || want == 1 {
            g.armed = want;
        }
        if g.armed == 1 && !g.wcs.is_empty() {
            // Completions not yet polled: the event comes now, as a
            // Mellanox CQ's arm doorbell (it carries the consumer index)
            // fires at once.  UCX counts on it: its wakeup arms a CQ after
            // its last poll and sleeps without polling again; a completion
            // that came in between would otherwise never wake it.
            g.armed = 0;
            self.armed_ctr.fetch_sub(1, Ordering::SeqCst);
            self.notify(&mut g);
        }
    }

    /// The async-event pipe duplicate for a new CQ of context `c`.
    pub fn async_dup(c: &Objects) -> Option<OwnedFd> {
        c.async_w.try_clone().ok()
    }

    pub fn poll(&self, out: &mut [ibv_wc]) -> usize {
        if self.has.load(Ordering::Acquire) == 0 {
            return 0;
        }
        let mut g = lock(&self.inner);
        let mut n = 0;
        while n < out.len() {
            match g.wcs.pop_front() {
                Some(w) => {
                    out[n] = w;
                    n += 1;
                }
                None => break,
            }
        }
        self.has.store(g.wcs.len() as u32, Ordering::Release);
        n
    }
}

pub fn wc_zero() -> ibv_wc {
    // SAFETY: `ibv_wc` is plain integers and a union of integers: all-zero
    // is a valid value.
    unsafe { std::mem::zeroed() }
}

// ---------------------------------------------------------------------------
// SRQ
// ---------------------------------------------------------------------------

pub struct SrqSt {
    pub wqes: VecDeque<RWqe>,
    pub max_wr: u32,
    pub max_sge: u32,
    pub limit: u32,
}

pub struct Srq {
    pub num: u32,
    pub ibsrq: usize,
    pub pd: u32,
    pub xrcd: u32,
    pub cq: Option<Arc<Cq>>,
    /// QPs made with it and not destroyed: while any is, the SRQ cannot be
    /// destroyed (EBUSY, as the kernel's `ib_destroy_srq_user`).
    pub users: AtomicU32,
    pub st: Mutex<SrqSt>,
}

// ---------------------------------------------------------------------------
// QP
// ---------------------------------------------------------------------------

/// A receive being filled (the engine's), completing into its CQ.
pub type CurRecv = swrdma_rc::recv::Receive<Option<Arc<Cq>>>;

pub struct QpSt {
    pub state: u32,
    pub attr: ibv_qp_attr,
    pub link: Option<OutLink>,
    pub sq: VecDeque<SWqe>,
    pub next_seq: u64,
    pub rq: VecDeque<RWqe>,
    pub cur: Option<CurRecv>,
    pub dropping: bool,
    /// Responder: the request it RNR-NAKed (or NAKed as not ready): every
    /// other request is dropped until that one comes again (go-back-N, as
    /// a PSN sequence error on the wire).  Nothing is ever buffered.
    pub nakd: Option<u64>,
    /// Requester: the first request not (wholly) on the wire — after a NAK,
    /// it and everything after it are sent again, in order — and the bytes
    /// of it already sent again.
    pub resend: Option<u64>,
    pub resend_off: u64,
    /// Not before this time (CLOCK_MONOTONIC ns): the RNR timer / timeout.
    pub resend_at: u64,
    /// The next request sent again is a probe: nothing follows it on the
    /// wire until it is answered (`probe`), so a receiver that is still not
    /// ready costs one message per RNR timer, not the whole queue.
    pub probing: bool,
    pub probe: Option<u64>,
    /// Requester: the peer cannot be reached (its link died, or could not
    /// be made): the work outstanding then fails with RETRY_EXC_ERR at this
    /// time (CLOCK_MONOTONIC ns), as on the wire after `retry_cnt`
    /// unanswered retransmissions.
    pub lost_at: Option<u64>,
    /// Requester: the retry and RNR budgets (both transports).
    pub budget: Budget,
    /// The QP's state on the wire (a wire device's QPs only).
    pub wq: crate::wire::state::WQp,
    /// Scatter-list vectors of completed receives, for the next
    /// `ibv_post_recv` (at most `SPARE_LISTS`): the receive path neither
    /// frees nor allocates one per message.
    pub spare: Vec<Vec<ibv_sge>>,
    /// The direct path's view of the peer behind `link` (send/batch.rs),
    /// by the peer's context id: looked up once, not at each post.  Weak:
    /// the peer's mapping and descriptors go with its last link, as
    /// without it.
    pub direct_peer: Option<(u32, std::sync::Weak<crate::direct::Peer>)>,
}

/// How many spare scatter-list vectors a QP keeps.
pub const SPARE_LISTS: usize = 64;

pub struct Qp {
    pub qpn: u32,
    pub qpt: u32,
    pub ibqp: usize,
    pub pd: u32,
    pub xrcd: u32,
    pub send_cq: Option<Arc<Cq>>,
    pub recv_cq: Option<Arc<Cq>>,
    pub srq: Option<Arc<Srq>>,
    pub sq_sig_all: bool,
    pub cap: ibv_qp_cap,
    pub st: Mutex<QpSt>,
    /// RDMA WRITEs and READs posted but not executed yet, to be executed
    /// together (send/defer.rs); its lock is held while they execute.
    pub deferred: Mutex<crate::deferq::Deferred>,
}

impl QpSt {
    /// Marks as done (successful) the SENDs and WRITEs of the send queue
    /// that the responder is known to have taken, of those it answers only
    /// when asked (sent once, without `F_ACKREQ`: see `Ctx::ack_done`):
    /// those whose first record starts before ring position `before` (see
    /// [`consumed_before`]), none from a NAKed one on (the responder drops
    /// what follows a NAK until it comes again), and none never sent.
    /// True when it marked any.
    pub fn claim_delivered(&mut self, before: u64) -> bool {
        let resent = self.resend.unwrap_or(u64::MAX);
        let mut any = false;
        for w in self.sq.iter_mut() {
            if w.start >= before || w.seq >= resent {
                continue;
            }
            if w.unanswered() && w.done.is_none() && w.start != NOT_SENT {
                w.done = Some(0);
                any = true;
            }
        }
        any
    }

    /// The SENDs and WRITEs of this QP's send queue that the responder of
    /// its live link consumed with no answer of its own to come are done
    /// ([`consumed_before`], [`QpSt::claim_delivered`]); true when it
    /// marked any.
    pub fn claim_consumed(&mut self) -> bool {
        let Some(l) = self.link.clone().filter(|l| !l.dead.load(Ordering::Relaxed)) else {
            return false;
        };
        consumed_before(&l, self).is_some_and(|before| self.claim_delivered(before))
    }

    /// An answer came for request `seq` (any answer: an ACK, a NAK, an
    /// error, READ data, an atomic result): the responder took every
    /// request of this QP before it, in order, and would have answered a
    /// failure of any of them first, so the SENDs and WRITEs before it that
    /// it does not answer (no `F_ACKREQ`) are done — up to a NAKed one,
    /// whose successors it dropped.  The answers of the reliable transport
    /// acknowledge everything before them, as an ACK's PSN does on the
    /// wire.  True when it marked any.
    pub fn answered_up_to(&mut self, seq: u64) -> bool {
        let end = seq.min(self.resend.unwrap_or(u64::MAX));
        let mut any = false;
        for w in self.sq.iter_mut() {
            if w.seq >= end {
                break;
            }
            if w.unanswered() && w.done.is_none() && w.start != NOT_SENT {
                w.done = Some(0);
                any = true;
            }
        }
        any
    }
}

impl SWqe {
    /// A SEND or WRITE the responder does not answer when it succeeds:
    /// sent without `F_ACKREQ` (nobody waits for it: `Ctx::ack_done`).
    pub fn unanswered(&self) -> bool {
        (self.op == IBV_WC_SEND || self.op == IBV_WC_RDMA_WRITE) && self.hdr.flags & swrdma_ring::F_ACKREQ == 0
    }
}

/// Requests of `st`'s send queue that start before the returned ring
/// position were consumed by the responder of its live link `l`, with no
/// answer of its still to come: the responder answers a failure before it
/// consumes the request (into the response ring, or its backlog with
/// `Ring::answers_kept` set), so once the requests' consumption is seen
/// (`tail`, read first) and the response ring holds nothing after it, and
/// nothing is kept or was ever dropped unanswered (`Ring::dropped`), the
/// requests consumed succeeded.  None: nothing can be said now (answers to
/// take in first, or a request of ours being written on the link).
pub fn consumed_before(l: &OutLink, st: &QpSt) -> Option<u64> {
    // (Our records on the link are whole while we hold its producer side.)
    let _tx = l.try_producer()?;
    let tail = l.tx().consumed();
    if l.rx().has_data() || l.rx().answers_kept() || l.rx().dropped() {
        return None;
    }
    if tail == l.tx().produced() {
        return Some(u64::MAX);
    }
    // The last request of this QP that starts at or before `tail`:
    // everything before it was consumed.
    let at = st
        .sq
        .iter()
        .filter(|w| w.start != NOT_SENT && w.start <= tail)
        .map(|w| w.start)
        .max();
    Some(at.unwrap_or(0))
}

/// The numbers of the states of every context's QP table: a number names
/// one state of one table.
static QP_TABLE_NUMBERS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The QP this thread's last message went to, with the number of the
    /// table's state it was found in (`Objects::with_qp`; taken out of the
    /// cell while in use, so a lookup inside one takes the table's lock).
    /// A QP destroyed since is kept (its memory: `destroy_qp` took its link)
    /// until the thread's next lookup of the context, or its end.
    static LAST_QP: Cell<Option<(u64, Arc<Qp>)>> = const { Cell::new(None) };
}

impl Qp {
    pub fn new_st() -> QpSt {
        QpSt {
            state: IBV_QPS_RESET,
            // SAFETY: `ibv_qp_attr` is integers, integer unions and arrays
            // (no pointers, no enums with invalid zero): all-zero is valid.
            attr: unsafe { std::mem::zeroed() },
            link: None,
            direct_peer: None,
            sq: VecDeque::new(),
            next_seq: 1,
            rq: VecDeque::new(),
            cur: None,
            dropping: false,
            nakd: None,
            resend: None,
            resend_off: 0,
            resend_at: 0,
            probing: false,
            probe: None,
            lost_at: None,
            budget: Budget::default(),
            wq: Default::default(),
            spare: Vec::new(),
        }
    }
}

/// One context's tables: what its QPs, SRQs, CQs and keys are, and where
/// its async events go.
pub struct Objects {
    /// The used entries of the port's GID table (`DevInfo::gids`).
    pub(crate) gids: Vec<[u8; 16]>,
    pub(crate) qps: RwLock<NumMap<Arc<Qp>>>,
    /// The number of the QP table's present state (`change_qps`).
    pub(crate) qps_number: AtomicU64,
    pub(crate) srqs: RwLock<NumMap<Arc<Srq>>>,
    pub(crate) mrs: RwLock<Keys>,
    /// The write end of the async-event pipe (the read end is the
    /// library's `async_fd`).
    pub(crate) async_w: OwnedFd,
    /// CQs armed and not yet triggered: the application may be waiting for
    /// a completion event, so the thread must make progress itself.
    pub(crate) armed_cqs: Arc<AtomicU32>,
    /// The context's objects by kind and handle, and their counts against
    /// the device's limits (registry.rs).
    pub(crate) reg: crate::registry::Registry,
    /// What peers see of our MRs and QPs for direct accesses (None:
    /// `SWRDMA_DIRECT=0`, or no memory file could be made).
    pub(crate) dir_tbl: Option<crate::direct::Dir>,
    /// The context's hold on the process's access page (locks.rs): the
    /// page lives while a context of the process is open.
    pub(crate) access: crate::locks::Hold,
}

impl Objects {
    /// Every QP of the context.
    pub fn all_qps(&self) -> Vec<Arc<Qp>> {
        self.qps.read().unwrap().values().cloned().collect()
    }

    /// GID `index` of the port (clamped to the used entries).
    pub fn gid(&self, index: usize) -> [u8; 16] {
        self.gids[index.min(self.gids.len() - 1)]
    }

    /// The number of used GID table entries (indices `0..n`; a source GID
    /// index beyond them names an empty slot).
    pub fn gid_count(&self) -> usize {
        self.gids.len()
    }

    /// What peers see of QP `qp` (its state and attributes changed).
    pub fn publish_qp(&self, qp: &Qp, st: &QpSt) {
        if let Some(d) = &self.dir_tbl {
            d.publish_qp(
                qp.qpn,
                Some((
                    qp.qpt,
                    st.state,
                    st.attr.qp_access_flags,
                    qp.pd,
                    st.attr.dest_qp_num,
                    swrdma_rc::responder::pmtu_bytes(st.attr.path_mtu),
                )),
            );
        }
    }

    /// Forgets window `rkey` if it is bound (dealloc_mw).
    pub fn unbind_window(&self, rkey: u32) {
        self.mrs.write().unwrap().unbind_window(rkey);
    }

    /// Binds (or, without a range, unbinds) a window through `qp` (see
    /// `Keys::bind_window`): the window's new rkey, or the completion status.
    pub fn bind_window(&self, qp: &Qp, b: &WindowBind) -> Result<u32, u32> {
        self.mrs.write().unwrap().bind_window(qp.qpn, qp.pd, b)
    }

    pub fn async_event(&self, element: u64, ty: u32) {
        let mut rec = [0u8; 16];
        rec[..8].copy_from_slice(&element.to_ne_bytes());
        rec[8..].copy_from_slice(&(ty as u64).to_ne_bytes());
        let _ = rustix::io::write(&self.async_w, &rec);
    }

    pub fn qp(&self, qpn: u32) -> Option<Arc<Qp>> {
        self.qps.read().unwrap().get(&qpn).cloned()
    }

    /// Changes the QP table by `f`, held for writing; its state then takes
    /// the next number of the process (`with_qp`).
    pub fn change_qps<R>(&self, f: impl FnOnce(&mut NumMap<Arc<Qp>>) -> R) -> R {
        let mut t = self.qps.write().unwrap();
        let r = f(&mut t);
        self.qps_number
            .store(QP_TABLE_NUMBERS.fetch_add(1, Ordering::Relaxed), Ordering::Release);
        r
    }

    /// Runs `f` on QP `qpn` (None: no such QP), the one this thread's
    /// previous message went to when it is that one and the table has not
    /// changed since: the responder and the completer look up the QP of
    /// every message, and the table's lock and the `Arc`'s count were four
    /// locked instructions of each (`LAST_QP`).
    pub fn with_qp<R>(&self, qpn: u32, f: impl FnOnce(&Arc<Qp>) -> R) -> Option<R> {
        let now = self.qps_number.load(Ordering::Acquire);
        // (None too while the thread's locals are torn down.)
        let kept = LAST_QP.try_with(|k| k.take()).ok().flatten();
        let qp = match kept {
            Some((n, q)) if n == now && q.qpn == qpn => q,
            _ => {
                // (The number was read before the lookup: a QP found after
                // a change is kept under the older number, looked up again
                // next time.)
                drop(kept);
                self.qp(qpn)?
            }
        };
        let r = f(&qp);
        let _ = LAST_QP.try_with(|k| k.set(Some((now, qp))));
        Some(r)
    }

    /// The calling thread drops the QP it keeps (`with_qp`): the context
    /// closes.
    pub fn forget_last_qp() {
        let _ = LAST_QP.try_with(|k| drop(k.take()));
    }

    pub fn mr(&self, key: u32) -> Option<MrEnt> {
        self.mrs.read().unwrap().get(key)
    }

    /// Checks a local SGE list (see `Keys::check_local`).
    pub fn check_local(&self, pd: u32, sges: &[ibv_sge], write: bool) -> Result<Option<Vec<ibv_sge>>, u32> {
        self.mrs.read().unwrap().check_local(pd, sges, write)
    }

    /// Runs `f` with the key table held (read): a dereg (which takes it to
    /// write) waits for the copy `f` makes, and none starts after the
    /// dereg.  `f` must not take the MR table itself.
    pub fn with_keys<R>(&self, f: impl FnOnce(&Keys) -> R) -> R {
        f(&self.mrs.read().unwrap())
    }

    /// Invalidates the type 2 window `rkey` (LOCAL_INV, SEND_WITH_INV);
    /// `qpn`: the QP a remote invalidation came in on (0: local).
    pub fn invalidate(&self, rkey: u32, qpn: u32) -> bool {
        self.mrs.write().unwrap().invalidate(rkey, qpn)
    }

    /// The PD that remote accesses of a request are checked against: the
    /// QP's, or for an XRC target QP (which has none) the PD of the XRC SRQ
    /// the request names.
    pub fn resp_pd(&self, qp: &Qp, m: &Msg) -> u32 {
        if qp.qpt == IBV_QPT_XRC_RECV {
            return self.srq_for(qp, m).map_or(u32::MAX, |s| s.pd);
        }
        qp.pd
    }

    pub fn srq_for(&self, qp: &Qp, m: &Msg) -> Option<Arc<Srq>> {
        if qp.qpt == IBV_QPT_XRC_RECV {
            let s = self.srqs.read().unwrap().get(&m.srqn).cloned()?;
            if s.xrcd != qp.xrcd {
                return None;
            }
            return Some(s);
        }
        qp.srq.clone()
    }

    pub fn recv_ready(&self, qp: &Qp, st: &QpSt, m: &Msg) -> bool {
        match self.srq_for(qp, m) {
            Some(s) => !lock(&s.st).wqes.is_empty(),
            None => qp.qpt != IBV_QPT_XRC_RECV && !st.rq.is_empty(),
        }
    }

    pub fn take_recv(&self, qp: &Qp, st: &mut QpSt, m: &Msg) -> Option<(RWqe, Option<Arc<Cq>>, u32)> {
        if qp.srq.is_some() || qp.qpt == IBV_QPT_XRC_RECV {
            let s = self.srq_for(qp, m)?;
            let mut ss = lock(&s.st);
            let w = ss.wqes.pop_front()?;
            if ss.limit > 0 && (ss.wqes.len() as u32) < ss.limit {
                ss.limit = 0;
                self.async_event(s.ibsrq as u64, IBV_EVENT_SRQ_LIMIT_REACHED);
            }
            let cq = if qp.qpt == IBV_QPT_XRC_RECV {
                s.cq.clone()
            } else {
                qp.recv_cq.clone()
            };
            return Some((w, cq, s.pd));
        }
        let w = st.rq.pop_front()?;
        Some((w, qp.recv_cq.clone(), qp.pd))
    }

    /// Puts receive `cur`, taken for request `m` and not completed, back at
    /// the head of the queue it came from (the QP's or its SRQ's): the
    /// message was aborted by its requester.  (A queue the application
    /// filled up meanwhile holds one more than `max_wr` for a while.)
    pub fn give_back_recv(&self, qp: &Qp, st: &mut QpSt, m: &Msg, cur: CurRecv) {
        let (wr_id, sges) = cur.posted();
        let w = RWqe { wr_id, sges };
        if qp.srq.is_some() || qp.qpt == IBV_QPT_XRC_RECV {
            // (An SRQ destroyed meanwhile: the WQE went with it.)
            if let Some(s) = self.srq_for(qp, m) {
                lock(&s.st).wqes.push_front(w);
            }
            return;
        }
        st.rq.push_front(w);
    }

    /// Takes the next receive WQE for request `m` (the QP's or its
    /// SRQ's), checked for writing (see `swrdma_rc::recv::accept`).
    pub fn accept_recv(&self, qp: &Qp, st: &mut QpSt, m: &Msg) -> Option<CurRecv> {
        let (w, cq, pd) = self.take_recv(qp, st, m)?;
        Some(self.with_keys(|k| swrdma_rc::recv::accept(k, pd, w.wr_id, w.sges, cq)))
    }

    /// Completes receive `cur` (an invalidation it asks for is made here)
    /// and returns the completion, the caller answers the peer, then pushes
    /// it (`Cq::push`).
    pub fn finish_recv(&self, cur: CurRecv, c: &swrdma_rc::recv::Completion) -> (ibv_wc, Option<Arc<Cq>>) {
        cur.complete(c, &mut |k, q| self.invalidate(k, q))
    }

    pub fn complete_sq(&self, qp: &Qp, st: &mut QpSt) {
        while let Some(w) = st.sq.front() {
            let Some(status) = w.done else { break };
            let w = st.sq.pop_front().unwrap();
            if w.signaled || qp.sq_sig_all || status != 0 {
                let mut wc = wc_zero();
                wc.wr_id = w.wr_id;
                wc.status = status;
                wc.opcode = w.op;
                wc.byte_len = w.len;
                wc.qp_num = qp.qpn;
                if let Some(cq) = &qp.send_cq {
                    cq.push(wc, false);
                }
            }
        }
    }

    /// Moves the QP to the error state: outstanding work is flushed.
    pub fn to_err(&self, qp: &Qp, st: &mut QpSt) {
        // What the responder took already succeeded: not flushed (as its
        // ACKs would have completed it on a NIC).
        if qp.qpt == IBV_QPT_RC || qp.qpt == IBV_QPT_XRC_SEND {
            st.claim_consumed();
        }
        st.state = IBV_QPS_ERR;
        self.publish_qp(qp, st);
        st.lost_at = None;
        st.resend = None;
        st.probe = None;
        st.probing = false;
        for w in st.sq.iter_mut() {
            if w.done.is_none() {
                w.done = Some(IBV_WC_WR_FLUSH_ERR);
            }
        }
        self.complete_sq(qp, st);
        let mut flushed: Vec<RWqe> = st.rq.drain(..).collect();
        if let Some(c) = st.cur.take() {
            flushed.insert(
                0,
                RWqe {
                    wr_id: c.wr_id,
                    sges: Vec::new(),
                },
            );
        }
        for w in flushed {
            let mut wc = wc_zero();
            wc.wr_id = w.wr_id;
            wc.status = IBV_WC_WR_FLUSH_ERR;
            wc.opcode = IBV_WC_RECV;
            wc.qp_num = qp.qpn;
            if let Some(cq) = &qp.recv_cq {
                cq.push(wc, false);
            }
        }
    }
}
