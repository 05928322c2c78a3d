//! The agent's object tables: each client's PDs, CQs, SRQs, QPs, MRs,
//! memory windows, AHs and XRC domains, and the rules of their lives.
//! Pure data: no I/O, no threads, no clock.  What only the engine knows
//! (completions not yet polled, the WQEs an SRQ holds, the client's
//! memory map, the wire's paths) comes through [`Hooks`].
//!
//! Every object belongs to exactly one client.  A handle is a number
//! unique in its client (1, 2, ...; never 0), one sequence for every kind,
//! so a handle names at most one object.  QP and SRQ numbers come from
//! [`Hooks::alloc_num`] (the agent makes them unique for the user) and
//! are indexed across clients ([`Tables::qp_owner`]).  Memory keys are an
//! index unique in the client and an 8-bit tag, as the provider's
//! `Ctx::new_key`; the client's MRs and bound windows are a
//! `swrdma_rc::keys::Keys` ([`Client::keys`]) that the engine checks
//! lkeys and rkeys against.
//!
//! # The answers (as `ops.rs` and `registry.rs` give them today)
//!
//! * A handle that names no object of the client (never given, destroyed,
//!   or another client's: each client has its own) is `ENOENT`; one that
//!   names an object of another kind is `EINVAL` (`Registry::check`).
//! * One object more than [`Limits::max_objects`] of a kind is `EINVAL`
//!   (`Registry::reserve`: rxe's pools answer so).
//! * `DeallocPd` while a QP, SRQ, MR, MW, AH or parent domain uses the PD,
//!   `DestroyCq` while a QP or SRQ completes into it: `EBUSY`.
//! * `DestroySrq` while QPs use the SRQ and `DeallocXrcd` while objects
//!   name it succeed, as the provider's do (the kernel says `EBUSY`).
//! * Multicast attachments are the QP's (`Qp::mcast`, a list of (GID,
//!   LID) as the kernel's uverbs keeps it): the agent joins a group for a
//!   QP with its first attachment to it ([`Hooks::join_group`]) and leaves
//!   it with its last ([`Hooks::leave_group`]); a destroyed QP's groups
//!   are the engine's to forget (`Transport::changed`, `Transport::gone`).
//! * The rest is each verb's own, in `ops.rs`'s order: see the functions.

use super::msg::{
    AhAttr, Caps, CreateCq, CreateQp, CreateSrq, MwType, QpAttr, QpType, Queue, RegMr, Reply, Request, ReregMr,
    SrqType, MAX_NUM, QP_ATTR_FIELDS,
};
use ibverbs_abi::verbs::*;
use libc::{EAGAIN, EBUSY, EINVAL, ENOENT, EOPNOTSUPP};
use std::collections::HashSet;
use swrdma_rc::keys::{Keys, MrEnt, WindowBind};
use swrdma_rc::nummap::NumMap;

/// A client's number at the agent (`proto::Welcome::client_id`).
pub type ClientId = u32;

/// The kinds of objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Protection domains and parent domains.
    Pd = 0,
    /// Completion queues.
    Cq,
    /// Shared receive queues.
    Srq,
    /// Queue pairs.
    Qp,
    /// Memory regions.
    Mr,
    /// Memory windows.
    Mw,
    /// Address handles.
    Ah,
    /// XRC domains.
    Xrcd,
}

const KINDS: usize = 8;

/// The device's limits and capabilities the tables check against (the
/// provider's: `handles.rs`, `registry.rs`, `ops.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Objects of each kind per client (`registry::limit`).
    pub max_objects: u32,
    /// `max_qp_wr`, `max_srq_wr` (`MAX_WR`).
    pub max_wr: u32,
    /// `max_sge`, `max_srq_sge` (`MAX_SGE`).
    pub max_sge: u32,
    /// Inline bytes (`MAX_INLINE`).
    pub max_inline: u32,
    /// `max_cqe` (`MAX_CQE`).
    pub max_cqe: u32,
    /// `max_qp_rd_atom` (`MAX_QP_RD_ATOM`).
    pub max_qp_rd_atom: u32,
    /// Inline bytes every sending QP gets at least.
    pub min_inline: u32,
    /// XRC QPs are offered (false on a wire device: `EOPNOTSUPP`, as rxe
    /// has no XRCETH).
    pub xrc: bool,
    /// Address vectors without a GRH are taken (`SWRDMA_LID_ROUTING=1`).
    pub lid_routing: bool,
}

impl Limits {
    /// A wire device's limits (today's provider on `rw0`).
    pub const WIRE: Limits = Limits {
        max_objects: 16384,
        max_wr: 16384,
        max_sge: 32,
        max_inline: 1024,
        max_cqe: 1 << 20,
        max_qp_rd_atom: 128,
        min_inline: 256,
        xrc: false,
        lid_routing: false,
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::WIRE
    }
}

/// What the tables ask of the agent: numbers, and what only the engine or
/// the device knows.  Each answer that refuses gives the verb's errno.
pub trait Hooks {
    /// A fresh QP or SRQ number, unique for the user (`Ctx::alloc_id`), or
    /// an errno.  A number of 0, 1, over 24 bits or in use is refused
    /// (`EAGAIN`).
    fn alloc_num(&mut self) -> Result<u32, i32>;

    /// QP or SRQ number `num` is no longer used (destroyed, or its client
    /// gone).
    fn free_num(&mut self, _num: u32) {}

    /// The number of used entries of the port's GID table: a source GID
    /// index at or past it is `EINVAL`.
    fn gid_count(&self) -> usize;

    /// Whether the wire can carry connected QP path `ah`: a RoCE v2 GID of
    /// ours and a destination of the same family (`wire::engine::ud_path`).
    /// False: `modify_qp` is `EINVAL`.
    fn path_ok(&self, _ah: &AhAttr) -> bool {
        true
    }

    /// Whether [addr, addr+len) is mapped in client `client` (and writable
    /// when `writable`): `reg_mr`'s and `rereg_mr`'s `EFAULT`, as
    /// `mem::check_mapped` answers for the process itself.
    fn check_mapped(&self, _client: ClientId, _addr: u64, _len: u64, _writable: bool) -> Result<(), i32> {
        Ok(())
    }

    /// The completions CQ `cq` of client `client` holds, not yet polled:
    /// `resize_cq` to fewer is `EINVAL`.
    fn cq_pending(&self, _client: ClientId, _cq: u32) -> u32 {
        0
    }

    /// The receive WQEs SRQ `srq` of client `client` holds: `modify_srq`
    /// to a smaller `max_wr` is `EINVAL`.
    fn srq_posted(&self, _client: ClientId, _srq: u32) -> u32 {
        0
    }

    /// QP `qpn` is attached to multicast group `mgid` for the first time
    /// (whatever the LID): the agent takes the group's datagrams for it
    /// (`Sock::join_group`).  An errno is `attach_mcast`'s answer, and
    /// nothing is recorded.
    fn join_group(&mut self, _qpn: u32, _mgid: &[u8; 16]) -> Result<(), i32> {
        Ok(())
    }

    /// QP `qpn`'s last attachment to multicast group `mgid` went
    /// (`detach_mcast`).
    fn leave_group(&mut self, _qpn: u32, _mgid: &[u8; 16]) {}
}

/// Whether `g` is a multicast GID (the kernel's `rdma_is_multicast_addr`,
/// as the provider's `Ctx::is_multicast_gid`): an IPv6 multicast address
/// (ff00::/8), or an IPv4-mapped one of 224.0.0.0/4.
pub fn is_multicast_gid(g: &[u8; 16]) -> bool {
    let v4_mapped = g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    g[0] == 0xff || (v4_mapped && g[12] & 0xf0 == 0xe0)
}

/// The most multicast attachments a client's QPs have in all: the
/// device's `max_total_mcast_qp_attach` on a wire device (`ops.rs`:
/// `mcast::MAX_GROUPS` groups, 56 QPs each).  One more is `ENOMEM`, as
/// rxe answers past its limits; it bounds what a client keeps in the
/// agent (an attachment per LID otherwise has no bound).
pub const MAX_MCAST_ATTACH: u32 = crate::wire::mcast::MAX_GROUPS as u32 * 56;

/// A PD or a parent domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pd {
    /// The protection domain its objects are checked against: its own
    /// handle, or for a parent domain its PD's.
    pub pd_id: u32,
    /// A parent domain's PD.
    pub parent: Option<u32>,
    users: u32,
}

impl Pd {
    /// The objects that use it (QPs, SRQs, MRs, MWs, AHs, parent domains).
    pub fn users(&self) -> u32 {
        self.users
    }
}

/// A CQ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cq {
    /// The client's name of it (`CreateCq::user_handle`): its async
    /// events' `element`.
    pub user_handle: u64,
    /// Its depth (`cqe`).
    pub cqe: u32,
    /// Its CQE queue's geometry.
    pub queue: Queue,
    /// The client gave a doorbell eventfd.
    pub doorbell: bool,
    /// The client gave a completion channel.
    pub channel: bool,
    users: u32,
}

impl Cq {
    /// The QPs and SRQs that complete into it (a QP whose send and receive
    /// CQ are this one counts twice).
    pub fn users(&self) -> u32 {
        self.users
    }
}

/// An SRQ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srq {
    /// The client's name of it (`CreateSrq::user_handle`): its async
    /// events' `element`.
    pub user_handle: u64,
    /// Its number.
    pub srqn: u32,
    /// Basic or XRC.
    pub ty: SrqType,
    /// Its PD's handle.
    pub pd: u32,
    /// Its protection domain.
    pub pd_id: u32,
    /// An XRC SRQ's domain.
    pub xrcd: Option<u32>,
    /// An XRC SRQ's CQ.
    pub cq: Option<u32>,
    /// `max_wr`
    pub max_wr: u32,
    /// `max_sge` (at least 1)
    pub max_sge: u32,
    /// `srq_limit` (0: not armed)
    pub limit: u32,
    /// Its queue's geometry.
    pub queue: Queue,
}

/// A QP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qp {
    /// The client's name of it (`CreateQp::user_handle`): its async
    /// events' `element`.
    pub user_handle: u64,
    /// Its number.
    pub qpn: u32,
    /// Its transport.
    pub qp_type: QpType,
    /// Its PD's handle (None: an XRC target without one).
    pub pd: Option<u32>,
    /// Its protection domain (0: none).
    pub pd_id: u32,
    /// Its XRC domain.
    pub xrcd: Option<u32>,
    /// The send CQ.
    pub send_cq: Option<u32>,
    /// The receive CQ.
    pub recv_cq: Option<u32>,
    /// The SRQ.
    pub srq: Option<u32>,
    /// Every send WR completes.
    pub sq_sig_all: bool,
    /// The capabilities granted.
    pub cap: Caps,
    /// The send queue's geometry.
    pub sq: Option<Queue>,
    /// The receive queue's geometry.
    pub rq: Option<Queue>,
    /// Its state (`IBV_QPS_*`).
    pub state: u32,
    /// The attributes `modify_qp` set (the others are 0).
    pub attr: QpAttr,
    /// Its multicast attachments, (GID, LID), each once, in the order
    /// they came.
    pub mcast: Vec<([u8; 16], u16)>,
}

/// An MR (what it covers is its [`MrEnt`] in [`Client::keys`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mr {
    /// Its PD's handle.
    pub pd: u32,
    /// Its lkey and rkey.
    pub key: u32,
}

/// A memory window (bound, it is an entry of [`Client::keys`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mw {
    /// Its PD's handle.
    pub pd: u32,
    /// Its protection domain.
    pub pd_id: u32,
    /// Type 1 or 2.
    pub ty: MwType,
    /// Its rkey now (a bind changes the tag).
    pub rkey: u32,
}

/// An address handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ah {
    /// Its PD's handle.
    pub pd: u32,
    /// Its address vector.
    pub attr: AhAttr,
}

/// An object of a client.  (A QP, the largest by far, is boxed: every
/// entry of the map is as large as the largest variant.)
#[derive(Clone, Debug)]
enum Obj {
    Pd(Pd),
    Cq(Cq),
    Srq(Srq),
    Qp(Box<Qp>),
    Mr(Mr),
    Mw(Mw),
    Ah(Ah),
    Xrcd,
}

impl Obj {
    fn kind(&self) -> Kind {
        match self {
            Obj::Pd(_) => Kind::Pd,
            Obj::Cq(_) => Kind::Cq,
            Obj::Srq(_) => Kind::Srq,
            Obj::Qp(_) => Kind::Qp,
            Obj::Mr(_) => Kind::Mr,
            Obj::Mw(_) => Kind::Mw,
            Obj::Ah(_) => Kind::Ah,
            Obj::Xrcd => Kind::Xrcd,
        }
    }
}

/// The access bits a registration may carry (`ops.rs` `MR_ACCESS_KNOWN`).
const MR_ACCESS_KNOWN: u32 = 0x3ff | IBV_ACCESS_OPTIONAL_RANGE;
/// The page size of a pinned registration.
const PAGE: u64 = 4096;
/// The remote rights that need `IBV_ACCESS_LOCAL_WRITE`.
const REMOTE_WRITES: u32 = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
/// The rights under which the memory will be written.
const WRITABLE: u32 = IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITES | IBV_ACCESS_MW_BIND;
/// The largest key index (24 bits; the low 8 bits of a key are its tag).
const KEY_INDEX_MAX: u32 = 0xff_ffff;

/// One client's objects.
pub struct Client {
    id: ClientId,
    limits: Limits,
    objs: NumMap<Obj>,
    counts: [u32; KINDS],
    next_handle: u32,
    next_key: u32,
    key_used: HashSet<u32>,
    keys: Keys,
    qpns: NumMap<u32>,
    srqns: NumMap<u32>,
    /// The multicast attachments of all its QPs.
    attached: u32,
}

/// Typed lookups: `$get` (public) and, when named, `$get_mut` give the
/// object of kind `$var` that handle `h` names, or the errno of a handle
/// that names none (`ENOENT`) or one of another kind (`EINVAL`).  (The
/// variant holds a `$t` or a `Box<$t>`: `Borrow` gives the `$t` of
/// either.)
macro_rules! lookup {
    ($get:ident, $var:ident, $t:ty) => {
        /// The object that handle `h` names: `ENOENT` when none of the
        /// client's does, `EINVAL` when it is of another kind.
        pub fn $get(&self, h: u32) -> Result<&$t, i32> {
            match self.objs.get(&h) {
                Some(Obj::$var(o)) => Ok(std::borrow::Borrow::borrow(o)),
                Some(_) => Err(EINVAL),
                None => Err(ENOENT),
            }
        }
    };
    ($get:ident, $get_mut:ident, $var:ident, $t:ty) => {
        lookup!($get, $var, $t);

        fn $get_mut(&mut self, h: u32) -> Result<&mut $t, i32> {
            match self.objs.get_mut(&h) {
                Some(Obj::$var(o)) => Ok(std::borrow::BorrowMut::borrow_mut(o)),
                Some(_) => Err(EINVAL),
                None => Err(ENOENT),
            }
        }
    };
}

impl Client {
    /// An empty client `id` under `limits`.
    pub fn new(id: ClientId, limits: Limits) -> Client {
        Client {
            id,
            limits,
            objs: NumMap::default(),
            counts: [0; KINDS],
            next_handle: 1,
            next_key: 1,
            key_used: HashSet::new(),
            keys: Keys::default(),
            qpns: NumMap::default(),
            srqns: NumMap::default(),
            attached: 0,
        }
    }

    /// Its number.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// How many objects of kind `k` it has.
    pub fn count(&self, k: Kind) -> u32 {
        self.counts[k as usize]
    }

    /// How many objects it has in all.
    pub fn len(&self) -> usize {
        self.objs.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.objs.is_empty()
    }

    /// The kind of the object handle `h` names.
    pub fn kind_of(&self, h: u32) -> Option<Kind> {
        self.objs.get(&h).map(Obj::kind)
    }

    /// Its MRs and bound windows by key: what the engine checks lkeys and
    /// rkeys against.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The user handle (the client's name, given when it made the object)
    /// of the CQ, QP or SRQ that handle `h` names: what its async events
    /// carry as their `element`.  None: no such object, or one of another
    /// kind.
    pub fn user_handle(&self, h: u32) -> Option<u64> {
        match self.objs.get(&h)? {
            Obj::Cq(c) => Some(c.user_handle),
            Obj::Qp(q) => Some(q.user_handle),
            Obj::Srq(s) => Some(s.user_handle),
            _ => None,
        }
    }

    /// The QP numbered `qpn`: its handle and the QP.
    pub fn qp_by_qpn(&self, qpn: u32) -> Option<(u32, &Qp)> {
        let h = *self.qpns.get(&qpn)?;
        self.qp(h).ok().map(|q| (h, q))
    }

    /// The SRQ numbered `srqn`: its handle and the SRQ.
    pub fn srq_by_srqn(&self, srqn: u32) -> Option<(u32, &Srq)> {
        let h = *self.srqns.get(&srqn)?;
        self.srq(h).ok().map(|s| (h, s))
    }

    lookup!(pd, pd_mut, Pd, Pd);
    lookup!(cq, cq_mut, Cq, Cq);
    lookup!(srq, srq_mut, Srq, Srq);
    lookup!(qp, qp_mut, Qp, Qp);
    lookup!(mr, mr_mut, Mr, Mr);
    lookup!(mw, mw_mut, Mw, Mw);
    lookup!(ah, Ah, Ah);

    /// The XRC domain that handle `h` names (`ENOENT`, `EINVAL` as the
    /// others).
    pub fn xrcd(&self, h: u32) -> Result<(), i32> {
        match self.objs.get(&h) {
            Some(Obj::Xrcd) => Ok(()),
            Some(_) => Err(EINVAL),
            None => Err(ENOENT),
        }
    }

    /// The engine moved QP `qp` to `state` by itself (a fatal error: ERR;
    /// a UC or UD send error: SQE).  False: no such QP, or no state.
    pub fn set_qp_state(&mut self, qp: u32, state: u32) -> bool {
        match self.qp_mut(qp) {
            Ok(q) if state <= IBV_QPS_ERR => {
                q.state = state;
                true
            }
            _ => false,
        }
    }

    /// SRQ `srq`'s limit event went out: the SRQ is no longer armed
    /// (`srq_limit` 0, as rxe leaves it).  False: no such SRQ.
    pub fn srq_limit_reached(&mut self, srq: u32) -> bool {
        match self.srq_mut(srq) {
            Ok(s) => {
                s.limit = 0;
                true
            }
            Err(_) => false,
        }
    }

    /// Binds (without a range: unbinds) window `mw` through QP `qp` (a
    /// `BIND_MW` work request, or `ibv_bind_mw`): `access`, and for a type
    /// 2 window the 8-bit key `rkey` the consumer chose, over `range`
    /// (lkey, address, length) of an MR.  Ok: the window's new rkey; Err:
    /// the completion status (`MW_BIND_ERR`), as `send/local.rs` answers.
    pub fn bind_mw(
        &mut self,
        qp: u32,
        mw: u32,
        access: u32,
        rkey: u32,
        range: Option<(u32, u64, u64)>,
    ) -> Result<u32, u32> {
        let (qpn, qp_pd) = match self.qp(qp) {
            Ok(q) => (q.qpn, q.pd_id),
            Err(_) => return Err(IBV_WC_MW_BIND_ERR),
        };
        let Ok(w) = self.mw(mw) else {
            return Err(IBV_WC_MW_BIND_ERR);
        };
        let b = WindowBind {
            ty: w.ty.ibv(),
            old: w.rkey,
            pd: w.pd_id,
            access,
            rkey,
            range,
        };
        let new = self.keys.bind_window(qpn, qp_pd, &b)?;
        if let Ok(w) = self.mw_mut(mw) {
            w.rkey = new;
        }
        Ok(new)
    }

    /// Invalidates type 2 window `rkey` (`LOCAL_INV`, `qpn` 0; a
    /// `SEND_WITH_INV` that came in on QP `qpn`).  False: no such window,
    /// or not through that QP.
    pub fn invalidate(&mut self, rkey: u32, qpn: u32) -> bool {
        self.keys.invalidate(rkey, qpn)
    }

    // ----- handles, counts, keys ------------------------------------------

    /// (Tests) the next handle and key index to try, to reach the wraps.
    #[cfg(test)]
    pub(crate) fn set_next(&mut self, handle: u32, key_index: u32) {
        self.next_handle = handle;
        self.next_key = key_index;
    }

    /// Room for one more object of kind `k`: `EINVAL` at the limit.
    fn reserve(&self, k: Kind) -> Result<(), i32> {
        if self.counts[k as usize] >= self.limits.max_objects {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// A handle no object has (0 never).
    fn new_handle(&mut self) -> u32 {
        loop {
            let h = self.next_handle;
            self.next_handle = h.wrapping_add(1);
            if h != 0 && !self.objs.contains_key(&h) {
                return h;
            }
        }
    }

    fn insert(&mut self, h: u32, o: Obj) {
        self.counts[o.kind() as usize] += 1;
        self.objs.insert(h, o);
    }

    fn remove(&mut self, h: u32) -> Option<Obj> {
        let o = self.objs.remove(&h)?;
        self.counts[o.kind() as usize] -= 1;
        Some(o)
    }

    /// A fresh MR/MW key: an index unique among the client's keys (24
    /// bits, from 1, skipping those in use after a wrap) and an 8-bit tag
    /// (the provider's `new_key`).  `ENOMEM` when every index is in use
    /// (only under a [`Limits::max_objects`] of 2^23 or more).
    fn new_key(&mut self) -> Result<u32, i32> {
        for _ in 0..=KEY_INDEX_MAX {
            let n = self.next_key;
            self.next_key = if n >= KEY_INDEX_MAX { 1 } else { n + 1 };
            if n != 0 && self.key_used.insert(n) {
                return Ok((n << 8) | ((n.wrapping_mul(0x9e37_79b9) >> 24) & 0xff));
            }
        }
        Err(libc::ENOMEM)
    }

    fn free_key(&mut self, key: u32) {
        self.key_used.remove(&(key >> 8));
    }

    /// One use more (`up`) or less of PD `pd`.
    fn pd_use(&mut self, pd: Option<u32>, up: bool) {
        if let Some(p) = pd.and_then(|h| self.pd_mut(h).ok()) {
            p.users = if up { p.users + 1 } else { p.users.saturating_sub(1) };
        }
    }

    /// One use more (`up`) or less of CQ `cq`.
    fn cq_use(&mut self, cq: Option<u32>, up: bool) {
        if let Some(c) = cq.and_then(|h| self.cq_mut(h).ok()) {
            c.users = if up { c.users + 1 } else { c.users.saturating_sub(1) };
        }
    }

    /// A fresh QP or SRQ number from `hooks`, checked: 24 bits, not 0 or 1
    /// (QP0, QP1), not in use in this client.
    fn new_num(&mut self, hooks: &mut dyn Hooks) -> Result<u32, i32> {
        let n = hooks.alloc_num()?;
        if !(2..=MAX_NUM).contains(&n) || self.qpns.contains_key(&n) || self.srqns.contains_key(&n) {
            return Err(EAGAIN);
        }
        Ok(n)
    }

    // ----- the verbs --------------------------------------------------------

    /// Answers request `req` (the agent's part of the verb), changing the
    /// tables as the verb does (through [`Tables::exec`], which keeps the
    /// index of numbers).
    fn exec(&mut self, req: &Request, hooks: &mut dyn Hooks) -> Reply {
        let r = match *req {
            Request::AllocPd { parent } => self.alloc_pd(parent),
            Request::DeallocPd { pd } => self.dealloc_pd(pd),
            Request::CreateCq(c) => self.create_cq(&c),
            Request::ResizeCq { cq, cqe, queue } => self.resize_cq(cq, cqe, queue, hooks),
            Request::DestroyCq { cq } => self.destroy_cq(cq),
            Request::CreateSrq(c) => self.create_srq(&c, hooks),
            Request::ModifySrq {
                srq,
                mask,
                max_wr,
                srq_limit,
            } => self.modify_srq(srq, mask, max_wr, srq_limit, hooks),
            Request::QuerySrq { srq } => self.srq(srq).map(|s| Reply::SrqAttr {
                max_wr: s.max_wr,
                max_sge: s.max_sge,
                srq_limit: s.limit,
            }),
            Request::DestroySrq { srq } => self.destroy_srq(srq, hooks),
            Request::CreateQp(c) => self.create_qp(&c, hooks),
            Request::ModifyQp { qp, attr } => self.modify_qp(qp, &attr, hooks),
            Request::QueryQp { qp, .. } => self.query_qp(qp),
            Request::DestroyQp { qp } => self.destroy_qp(qp, hooks),
            Request::RegMr(m) => self.reg_mr(&m, hooks),
            Request::ReregMr(m) => self.rereg_mr(&m, hooks),
            Request::DeregMr { mr } => self.dereg_mr(mr),
            Request::AllocMw { pd, ty } => self.alloc_mw(pd, ty),
            Request::DeallocMw { mw } => self.dealloc_mw(mw),
            Request::CreateAh { pd, attr } => self.create_ah(pd, &attr, hooks),
            Request::DestroyAh { ah } => self.destroy_ah(ah),
            Request::AllocXrcd => self.alloc_xrcd(),
            Request::DeallocXrcd { xrcd } => self.xrcd(xrcd).map(|()| {
                self.remove(xrcd);
                Reply::Done
            }),
            Request::AttachMcast { qp, gid, lid } => self.attach_mcast(qp, gid, lid, hooks),
            Request::DetachMcast { qp, gid, lid } => self.detach_mcast(qp, gid, lid, hooks),
        };
        r.into()
    }

    /// `alloc_pd`, or `alloc_parent_domain` of `parent`: a parent domain's
    /// PD that is not one of the client's is `EINVAL` (whatever the lookup
    /// says), then the limit.
    fn alloc_pd(&mut self, parent: Option<u32>) -> Result<Reply, i32> {
        let inner = match parent {
            Some(p) => Some(self.pd(p).map_err(|_| EINVAL)?.pd_id),
            None => None,
        };
        self.reserve(Kind::Pd)?;
        let h = self.new_handle();
        let pd = Pd {
            pd_id: inner.unwrap_or(h),
            parent,
            users: 0,
        };
        self.insert(h, Obj::Pd(pd));
        self.pd_use(parent, true);
        Ok(Reply::Pd { handle: h })
    }

    /// `dealloc_pd`: the lookup, then `EBUSY` while anything uses it.
    fn dealloc_pd(&mut self, pd: u32) -> Result<Reply, i32> {
        let p = self.pd(pd)?;
        if p.users != 0 {
            return Err(EBUSY);
        }
        let parent = p.parent;
        self.remove(pd);
        self.pd_use(parent, false);
        Ok(Reply::Done)
    }

    /// `create_cq`: a depth of 1..=`max_cqe` (`EINVAL`), then the limit.
    fn create_cq(&mut self, c: &CreateCq) -> Result<Reply, i32> {
        if !(1..=self.limits.max_cqe).contains(&c.cqe) {
            return Err(EINVAL);
        }
        self.reserve(Kind::Cq)?;
        let h = self.new_handle();
        let cq = Cq {
            user_handle: c.user_handle,
            cqe: c.cqe,
            queue: c.queue,
            doorbell: c.doorbell,
            channel: c.channel,
            users: 0,
        };
        self.insert(h, Obj::Cq(cq));
        Ok(Reply::Cq { handle: h, cqe: c.cqe })
    }

    /// `resize_cq`: the depth's range (`EINVAL`) before the lookup, then
    /// the completions not yet polled must fit (`EINVAL`; the engine's
    /// count).
    fn resize_cq(&mut self, cq: u32, cqe: u32, queue: Option<Queue>, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        if !(1..=self.limits.max_cqe).contains(&cqe) {
            return Err(EINVAL);
        }
        self.cq(cq)?;
        if hooks.cq_pending(self.id, cq) > cqe {
            return Err(EINVAL);
        }
        let c = self.cq_mut(cq)?;
        c.cqe = cqe;
        if let Some(q) = queue {
            c.queue = q;
        }
        Ok(Reply::Done)
    }

    /// `destroy_cq`: the lookup, then `EBUSY` while a QP or SRQ completes
    /// into it.
    fn destroy_cq(&mut self, cq: u32) -> Result<Reply, i32> {
        if self.cq(cq)?.users != 0 {
            return Err(EBUSY);
        }
        self.remove(cq);
        Ok(Reply::Done)
    }

    /// `create_srq(_ex)`: a PD (`EINVAL` without), an XRC SRQ's domain and
    /// CQ (`EINVAL` without); the PD's and CQ's lookups (then the XRC
    /// domain's); `max_wr` in 1..=`max_wr` and `max_sge` up to `max_sge`
    /// (`EINVAL`); the limit.  `max_sge` 0 is granted as 1.
    fn create_srq(&mut self, c: &CreateSrq, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        let Some(pd) = c.pd else { return Err(EINVAL) };
        if c.ty == SrqType::Xrc && (c.xrcd.is_none() || c.cq.is_none()) {
            return Err(EINVAL);
        }
        let pd_id = self.pd(pd)?.pd_id;
        if let Some(cq) = c.cq {
            self.cq(cq)?;
        }
        if let Some(x) = c.xrcd {
            self.xrcd(x)?;
        }
        let l = &self.limits;
        if c.max_wr == 0 || c.max_wr > l.max_wr || c.max_sge > l.max_sge {
            return Err(EINVAL);
        }
        self.reserve(Kind::Srq)?;
        let srqn = self.new_num(hooks)?;
        let h = self.new_handle();
        let s = Srq {
            user_handle: c.user_handle,
            srqn,
            ty: c.ty,
            pd,
            pd_id,
            xrcd: c.xrcd,
            cq: c.cq,
            max_wr: c.max_wr,
            max_sge: c.max_sge.max(1),
            limit: c.srq_limit,
            queue: c.queue,
        };
        let reply = Reply::Srq {
            handle: h,
            srqn,
            max_wr: s.max_wr,
            max_sge: s.max_sge,
        };
        self.insert(h, Obj::Srq(s));
        self.srqns.insert(srqn, h);
        self.pd_use(Some(pd), true);
        self.cq_use(c.cq, true);
        Ok(reply)
    }

    /// `modify_srq`: the lookup; `IBV_SRQ_MAX_WR` in 1..=`max_wr` and not
    /// below the WQEs it holds (the engine's count); `IBV_SRQ_LIMIT` not
    /// above `max_wr` (the new one): `EINVAL`.  Other mask bits are
    /// ignored.  Nothing changes unless all is well.
    fn modify_srq(
        &mut self,
        srq: u32,
        mask: u32,
        max_wr: u32,
        limit: u32,
        hooks: &mut dyn Hooks,
    ) -> Result<Reply, i32> {
        let mut new_max = self.srq(srq)?.max_wr;
        if mask & IBV_SRQ_MAX_WR != 0 {
            if max_wr == 0 || max_wr > self.limits.max_wr || max_wr < hooks.srq_posted(self.id, srq) {
                return Err(EINVAL);
            }
            new_max = max_wr;
        }
        if mask & IBV_SRQ_LIMIT != 0 && limit > new_max {
            return Err(EINVAL);
        }
        let s = self.srq_mut(srq)?;
        s.max_wr = new_max;
        if mask & IBV_SRQ_LIMIT != 0 {
            s.limit = limit;
        }
        Ok(Reply::Done)
    }

    /// `destroy_srq`: the lookup (QPs that use it do not stop it, as in
    /// the provider).
    fn destroy_srq(&mut self, srq: u32, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        self.srq(srq)?;
        if let Some(Obj::Srq(s)) = self.remove(srq) {
            self.srqns.remove(&s.srqn);
            self.cq_use(s.cq, false);
            self.pd_use(Some(s.pd), false);
            hooks.free_num(s.srqn);
        }
        Ok(Reply::Done)
    }

    /// `create_qp(_ex)` (`check_qp_init_attr`, the lookups, `grant_qp_caps`,
    /// the limit): an XRC QP where the device has none (`EOPNOTSUPP`); a PD
    /// (an XRC target: an XRC domain) (`EINVAL` without); the lookups of the
    /// PD, the send CQ, the receive CQ, the SRQ (then the XRC domain); the
    /// caps ([`grant_qp_caps`]); the queues the QP uses, no more
    /// (`EINVAL`); the limit.
    fn create_qp(&mut self, c: &CreateQp, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        let xrc = matches!(c.qp_type, QpType::XrcSend | QpType::XrcRecv);
        if xrc && !self.limits.xrc {
            return Err(EOPNOTSUPP);
        }
        if (c.qp_type == QpType::XrcRecv && c.xrcd.is_none()) || (c.qp_type != QpType::XrcRecv && c.pd.is_none()) {
            return Err(EINVAL);
        }
        let pd_id = match c.pd {
            Some(p) => self.pd(p)?.pd_id,
            None => 0,
        };
        for cq in [c.send_cq, c.recv_cq].into_iter().flatten() {
            self.cq(cq)?;
        }
        if let Some(s) = c.srq {
            self.srq(s)?;
        }
        if let Some(x) = c.xrcd {
            self.xrcd(x)?;
        }
        let cap = grant_qp_caps(&self.limits, c)?;
        let (sends, recvs) = qp_queues(c.qp_type, c.srq.is_some());
        if c.sq.is_some() != sends || c.rq.is_some() != recvs {
            return Err(EINVAL);
        }
        self.reserve(Kind::Qp)?;
        let qpn = self.new_num(hooks)?;
        let h = self.new_handle();
        let qp = Qp {
            user_handle: c.user_handle,
            qpn,
            qp_type: c.qp_type,
            pd: c.pd,
            pd_id,
            xrcd: c.xrcd,
            send_cq: c.send_cq,
            recv_cq: c.recv_cq,
            srq: c.srq,
            sq_sig_all: c.sq_sig_all,
            cap,
            sq: c.sq,
            rq: c.rq,
            state: IBV_QPS_RESET,
            attr: QpAttr::default(),
            mcast: Vec::new(),
        };
        self.insert(h, Obj::Qp(Box::new(qp)));
        self.qpns.insert(qpn, h);
        self.pd_use(c.pd, true);
        self.cq_use(c.send_cq, true);
        self.cq_use(c.recv_cq, true);
        Ok(Reply::Qp { handle: h, qpn, cap })
    }

    /// `modify_qp`, in `ops.rs`'s order: the lookup; the transition
    /// ([`valid_transition`]; without `IBV_QP_STATE` from the state to
    /// itself); `IBV_QP_CUR_STATE` that is neither the state nor
    /// `UNKNOWN`; a port other than 1; an address vector
    /// ([`check_av`]); a path MTU out of 256..4096; `max_rd_atomic` over
    /// the device's, a timeout over 31; a connected QP's path the wire
    /// cannot carry ([`Hooks::path_ok`]); with `IBV_QP_STATE`, the
    /// attributes the transition requires and allows
    /// ([`required_attrs`], [`optional_attrs`]).  Each is `EINVAL`.  Then
    /// the attributes are taken and the state changes (what the change
    /// means for the queues is the engine's).
    fn modify_qp(&mut self, qp: u32, a: &QpAttr, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        let q = self.qp(qp)?;
        let mask = a.mask;
        let cur = q.state;
        let new = if mask & IBV_QP_STATE != 0 {
            a.qp_state as u32
        } else {
            cur
        };
        if new > IBV_QPS_ERR || !valid_transition(cur, new) {
            return Err(EINVAL);
        }
        let cur_given = a.cur_qp_state as u32;
        if mask & IBV_QP_CUR_STATE != 0 && cur_given != cur && cur_given != IBV_QPS_UNKNOWN {
            return Err(EINVAL);
        }
        if mask & IBV_QP_PORT != 0 && a.port_num != 1 {
            return Err(EINVAL);
        }
        if mask & IBV_QP_AV != 0 {
            check_av(&a.ah_attr, hooks.gid_count(), self.limits.lid_routing)?;
        }
        if mask & IBV_QP_PATH_MTU != 0 && !(IBV_MTU_256..=IBV_MTU_4096).contains(&a.path_mtu) {
            return Err(EINVAL);
        }
        if (mask & IBV_QP_MAX_QP_RD_ATOMIC != 0 && a.max_rd_atomic as u32 > self.limits.max_qp_rd_atom)
            || (mask & IBV_QP_TIMEOUT != 0 && a.timeout > 31)
        {
            return Err(EINVAL);
        }
        if mask & IBV_QP_AV != 0 && matches!(q.qp_type, QpType::Rc | QpType::Uc) && !hooks.path_ok(&a.ah_attr) {
            return Err(EINVAL);
        }
        let need = required_attrs(q.qp_type, cur, new);
        let may = need | optional_attrs(q.qp_type, cur, new) | IBV_QP_STATE;
        if mask & IBV_QP_STATE != 0 && (mask & need != need || mask & !may != 0) {
            return Err(EINVAL);
        }
        let q = self.qp_mut(qp)?;
        let take = QpAttr {
            mask: mask & !(IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_CAP),
            ..*a
        };
        take.apply_to(&mut q.attr);
        q.state = new;
        Ok(Reply::Done)
    }

    /// `query_qp`: the lookup, then every attribute (the state as both
    /// states, the granted caps, port 1 until one is set).
    fn query_qp(&self, qp: u32) -> Result<Reply, i32> {
        let q = self.qp(qp)?;
        let mut a = q.attr;
        a.mask = QP_ATTR_FIELDS;
        a.qp_state = q.state as u8;
        a.cur_qp_state = q.state as u8;
        a.cap = q.cap;
        if a.port_num == 0 {
            a.port_num = 1;
        }
        Ok(Reply::QpAttr(a))
    }

    /// `destroy_qp`: the lookup (what the engine does for it, its last
    /// ACK, the completions it leaves, the groups it was in, is the
    /// caller's, before).
    fn destroy_qp(&mut self, qp: u32, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        self.qp(qp)?;
        if let Some(Obj::Qp(q)) = self.remove(qp) {
            self.attached = self.attached.saturating_sub(q.mcast.len() as u32);
            self.qpns.remove(&q.qpn);
            self.cq_use(q.send_cq, false);
            self.cq_use(q.recv_cq, false);
            self.pd_use(q.pd, false);
            hooks.free_num(q.qpn);
        }
        Ok(Reply::Done)
    }

    /// `attach_mcast`, in `ops.rs`'s order: the QP's lookup; a GID that is
    /// not multicast ([`is_multicast_gid`]) or a QP that is not UD
    /// (`EINVAL`); the same GID and LID again is no change; past
    /// [`MAX_MCAST_ATTACH`] attachments of the client's, `ENOMEM`; the
    /// QP's first attachment to the GID joins the group
    /// ([`Hooks::join_group`]: its errno, and nothing recorded).
    fn attach_mcast(&mut self, qp: u32, gid: [u8; 16], lid: u16, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        let q = self.qp(qp)?;
        if !is_multicast_gid(&gid) || q.qp_type != QpType::Ud {
            return Err(EINVAL);
        }
        if q.mcast.contains(&(gid, lid)) {
            return Ok(Reply::Done);
        }
        if self.attached >= MAX_MCAST_ATTACH {
            return Err(libc::ENOMEM);
        }
        if !q.mcast.iter().any(|(g, _)| *g == gid) {
            hooks.join_group(q.qpn, &gid)?;
        }
        self.qp_mut(qp)?.mcast.push((gid, lid));
        self.attached += 1;
        Ok(Reply::Done)
    }

    /// `detach_mcast`: the QP's lookup; an attachment the QP does not have
    /// (that GID with that LID) is `EINVAL`.  With its last LID for the
    /// GID the QP leaves the group ([`Hooks::leave_group`]).
    fn detach_mcast(&mut self, qp: u32, gid: [u8; 16], lid: u16, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        let q = self.qp_mut(qp)?;
        let i = q.mcast.iter().position(|e| *e == (gid, lid)).ok_or(EINVAL)?;
        q.mcast.remove(i);
        let last = !q.mcast.iter().any(|(g, _)| *g == gid);
        let qpn = q.qpn;
        self.attached = self.attached.saturating_sub(1);
        if last {
            hooks.leave_group(qpn, &gid);
        }
        Ok(Reply::Done)
    }

    /// `reg_mr`, in `ops.rs`'s order: the PD's lookup; remote write or
    /// atomic rights without local write, access bits it does not know, a
    /// range that covers no page (`EINVAL`); on-demand paging: a range that
    /// wraps (`EINVAL`; an implicit MR, address 0 and length `u64::MAX`,
    /// is whole memory), otherwise memory not mapped ([`Hooks::check_mapped`]:
    /// `EFAULT`); the limit.
    fn reg_mr(&mut self, m: &RegMr, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        let pd_id = self.pd(m.pd)?.pd_id;
        let access = m.access;
        if access & REMOTE_WRITES != 0 && access & IBV_ACCESS_LOCAL_WRITE == 0 {
            return Err(EINVAL);
        }
        let odp = access & IBV_ACCESS_ON_DEMAND != 0;
        let no_page = m.length == 0 && (m.addr.is_multiple_of(PAGE) || odp);
        if access & !MR_ACCESS_KNOWN != 0 || no_page {
            return Err(EINVAL);
        }
        let writable = access & WRITABLE != 0;
        if odp {
            let implicit = m.addr == 0 && m.length == u64::MAX;
            if !implicit && m.addr.checked_add(m.length).is_none() {
                return Err(EINVAL);
            }
        } else if m.length == 0 {
            hooks.check_mapped(self.id, m.addr / PAGE * PAGE, PAGE, writable)?;
        } else {
            hooks.check_mapped(self.id, m.addr, m.length, writable)?;
        }
        self.reserve(Kind::Mr)?;
        let key = self.new_key()?;
        let h = self.new_handle();
        let ent = MrEnt {
            pd: pd_id,
            va: m.addr,
            addr: m.iova,
            len: m.length,
            access,
            mw: 0,
            parent: 0,
            qpn: 0,
        };
        self.keys.insert(key, ent);
        self.insert(h, Obj::Mr(Mr { pd: m.pd, key }));
        self.pd_use(Some(m.pd), true);
        Ok(Reply::Mr {
            handle: h,
            lkey: key,
            rkey: key,
        })
    }

    /// `rereg_mr`: the MR's lookup; with `CHANGE_ACCESS`, remote write or
    /// atomic rights without local write (`EINVAL`); with `CHANGE_PD`, no
    /// PD (`EINVAL`), then the new PD's lookup; with `CHANGE_TRANSLATION`,
    /// the new range as `reg_mr` checks it (with the new rights, or the
    /// old).  The keys stay; every later access sees the change.
    fn rereg_mr(&mut self, m: &ReregMr, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        let key = self.mr(m.mr)?.key;
        let f = m.flags;
        let new_access = f & IBV_REREG_MR_CHANGE_ACCESS != 0;
        if new_access && m.access & REMOTE_WRITES != 0 && m.access & IBV_ACCESS_LOCAL_WRITE == 0 {
            return Err(EINVAL);
        }
        let new_pd = if f & IBV_REREG_MR_CHANGE_PD != 0 {
            let p = m.pd.ok_or(EINVAL)?;
            Some((p, self.pd(p)?.pd_id))
        } else {
            None
        };
        let old = self.keys.get(key).ok_or(EINVAL)?;
        if f & IBV_REREG_MR_CHANGE_TRANSLATION != 0 {
            let acc = if new_access { m.access } else { old.access };
            if acc & IBV_ACCESS_ON_DEMAND != 0 {
                m.addr.checked_add(m.length).ok_or(EINVAL)?;
            } else {
                hooks.check_mapped(self.id, m.addr, m.length, acc & WRITABLE != 0)?;
            }
        }
        self.keys.update(key, |e| {
            if f & IBV_REREG_MR_CHANGE_TRANSLATION != 0 {
                e.va = m.addr;
                e.addr = m.addr;
                e.len = m.length;
            }
            if let Some((_, id)) = new_pd {
                e.pd = id;
            }
            if new_access {
                e.access = m.access;
            }
        });
        if let Some((p, _)) = new_pd {
            let old_pd = self.mr(m.mr)?.pd;
            self.pd_use(Some(old_pd), false);
            self.pd_use(Some(p), true);
            self.mr_mut(m.mr)?.pd = p;
        }
        Ok(Reply::Done)
    }

    /// `dereg_mr`: the lookup.  (The engine waits for the copies in flight
    /// on it before the agent calls this, and starts none after.)
    fn dereg_mr(&mut self, mr: u32) -> Result<Reply, i32> {
        self.mr(mr)?;
        if let Some(Obj::Mr(m)) = self.remove(mr) {
            self.keys.remove(m.key);
            self.free_key(m.key);
            self.pd_use(Some(m.pd), false);
        }
        Ok(Reply::Done)
    }

    /// `alloc_mw` (the type was checked by the client): the PD's lookup,
    /// the limit.  The window is unbound: its rkey is in no table yet.
    fn alloc_mw(&mut self, pd: u32, ty: MwType) -> Result<Reply, i32> {
        let pd_id = self.pd(pd)?.pd_id;
        self.reserve(Kind::Mw)?;
        let key = self.new_key()?;
        let h = self.new_handle();
        self.insert(
            h,
            Obj::Mw(Mw {
                pd,
                pd_id,
                ty,
                rkey: key,
            }),
        );
        self.pd_use(Some(pd), true);
        Ok(Reply::Mw { handle: h, rkey: key })
    }

    /// `dealloc_mw`: the lookup; a bound window's rkey goes.
    fn dealloc_mw(&mut self, mw: u32) -> Result<Reply, i32> {
        self.mw(mw)?;
        if let Some(Obj::Mw(w)) = self.remove(mw) {
            self.keys.unbind_window(w.rkey);
            self.free_key(w.rkey);
            self.pd_use(Some(w.pd), false);
        }
        Ok(Reply::Done)
    }

    /// `create_ah`: the PD's lookup, the address vector ([`check_av`]:
    /// `EINVAL`), the limit.
    fn create_ah(&mut self, pd: u32, attr: &AhAttr, hooks: &mut dyn Hooks) -> Result<Reply, i32> {
        self.pd(pd)?;
        check_av(attr, hooks.gid_count(), self.limits.lid_routing)?;
        self.reserve(Kind::Ah)?;
        let h = self.new_handle();
        self.insert(h, Obj::Ah(Ah { pd, attr: *attr }));
        self.pd_use(Some(pd), true);
        Ok(Reply::Ah { handle: h })
    }

    /// `destroy_ah`: the lookup.
    fn destroy_ah(&mut self, ah: u32) -> Result<Reply, i32> {
        self.ah(ah)?;
        if let Some(Obj::Ah(a)) = self.remove(ah) {
            self.pd_use(Some(a.pd), false);
        }
        Ok(Reply::Done)
    }

    /// `open_xrcd` (its file and flags were checked by the client): the
    /// limit (the provider has none; the agent bounds every kind).
    fn alloc_xrcd(&mut self) -> Result<Reply, i32> {
        self.reserve(Kind::Xrcd)?;
        let h = self.new_handle();
        self.insert(h, Obj::Xrcd);
        Ok(Reply::Xrcd { handle: h })
    }

    /// Every QP and SRQ number the client holds.
    fn nums(&self) -> impl Iterator<Item = u32> + '_ {
        self.qpns.keys().chain(self.srqns.keys()).copied()
    }
}

/// Which queues a QP of type `qpt` has: (a send queue, a receive queue of
/// its own).  XRC targets have neither; a QP with an SRQ has no receive
/// queue, and neither has an XRC initiator.
pub fn qp_queues(qpt: QpType, has_srq: bool) -> (bool, bool) {
    let sends = qpt != QpType::XrcRecv;
    let recvs = matches!(qpt, QpType::Rc | QpType::Uc | QpType::Ud) && !has_srq;
    (sends, recvs)
}

/// The capabilities a QP created by `c` gets (`ops.rs` `grant_qp_caps`):
/// each within the device's limits and the CQs its queues need
/// (`EINVAL`), then at least one SGE and [`Limits::min_inline`] inline
/// bytes for a queue it has, 0 for one it has not.  The client sizes the
/// queues it sends by this.
pub fn grant_qp_caps(l: &Limits, c: &CreateQp) -> Result<Caps, i32> {
    let mut cap = c.cap;
    let (sends, recvs) = qp_queues(c.qp_type, c.srq.is_some());
    if cap.max_send_wr > l.max_wr
        || cap.max_recv_wr > l.max_wr
        || cap.max_send_sge > l.max_sge
        || cap.max_recv_sge > l.max_sge
        || cap.max_inline_data > l.max_inline
    {
        return Err(EINVAL);
    }
    if (sends && c.send_cq.is_none()) || (recvs && c.recv_cq.is_none()) {
        return Err(EINVAL);
    }
    if sends {
        cap.max_send_sge = cap.max_send_sge.max(1);
        cap.max_inline_data = cap.max_inline_data.max(l.min_inline);
    } else {
        cap.max_send_wr = 0;
        cap.max_send_sge = 0;
        cap.max_inline_data = 0;
    }
    if recvs {
        cap.max_recv_sge = cap.max_recv_sge.max(1);
    } else {
        cap.max_recv_wr = 0;
        cap.max_recv_sge = 0;
    }
    Ok(cap)
}

/// An address vector as a RoCE port takes it (`ops.rs` `check_av`): port
/// 1; a GRH (or LID routing allowed); a source GID index below `gids`; a
/// destination GID that is not 0.  Otherwise `EINVAL`.
pub fn check_av(a: &AhAttr, gids: usize, lid_routing: bool) -> Result<(), i32> {
    if a.port_num != 1 {
        return Err(EINVAL);
    }
    if a.is_global == 0 {
        return if lid_routing { Ok(()) } else { Err(EINVAL) };
    }
    if a.sgid_index as usize >= gids || a.dgid == [0; 16] {
        return Err(EINVAL);
    }
    Ok(())
}

/// Whether `modify_qp` may move a QP from state `cur` to `new` (the
/// provider's table: any state to RESET and ERR, RESET to INIT, INIT to
/// INIT and RTR, RTR to RTS, RTS to RTS and SQD, SQD to SQD and RTS, SQE
/// to RTS).
pub fn valid_transition(cur: u32, new: u32) -> bool {
    new == IBV_QPS_RESET
        || new == IBV_QPS_ERR
        || matches!(
            (cur, new),
            (IBV_QPS_RESET, IBV_QPS_INIT)
                | (IBV_QPS_INIT, IBV_QPS_INIT | IBV_QPS_RTR)
                | (IBV_QPS_RTR, IBV_QPS_RTS)
                | (IBV_QPS_RTS, IBV_QPS_RTS | IBV_QPS_SQD)
                | (IBV_QPS_SQD, IBV_QPS_SQD | IBV_QPS_RTS)
                | (IBV_QPS_SQE, IBV_QPS_RTS)
        )
}

/// The attributes a transition of a QP of type `qpt` must name (the IB
/// specification's QP state table, as `ib_modify_qp_is_ok` checks it).
pub fn required_attrs(qpt: QpType, cur: u32, new: u32) -> u32 {
    match (cur, new) {
        (IBV_QPS_RESET, IBV_QPS_INIT) => {
            let key = if qpt == QpType::Ud {
                IBV_QP_QKEY
            } else {
                IBV_QP_ACCESS_FLAGS
            };
            IBV_QP_PKEY_INDEX | IBV_QP_PORT | key
        }
        (IBV_QPS_INIT, IBV_QPS_RTR) if qpt != QpType::Ud => {
            let path = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
            if matches!(qpt, QpType::Rc | QpType::XrcRecv) {
                path | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
            } else {
                path
            }
        }
        (IBV_QPS_RTR, IBV_QPS_RTS) => match qpt {
            QpType::Rc | QpType::XrcSend => {
                IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC
            }
            QpType::XrcRecv => IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
            QpType::Uc | QpType::Ud => IBV_QP_SQ_PSN,
        },
        _ => 0,
    }
}

/// The attributes a transition of a QP of type `qpt` may name besides the
/// required ones (the same table); any other is `EINVAL`.
pub fn optional_attrs(qpt: QpType, cur: u32, new: u32) -> u32 {
    let ud = qpt == QpType::Ud;
    let path = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
    let to_rts = match qpt {
        QpType::Ud => IBV_QP_CUR_STATE | IBV_QP_QKEY,
        QpType::Uc | QpType::XrcSend => path,
        QpType::Rc | QpType::XrcRecv => path | IBV_QP_MIN_RNR_TIMER,
    };
    match (cur, new) {
        (IBV_QPS_INIT, IBV_QPS_INIT) if ud => IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
        (IBV_QPS_INIT, IBV_QPS_INIT) => IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
        (IBV_QPS_INIT, IBV_QPS_RTR) if ud => IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
        (IBV_QPS_INIT, IBV_QPS_RTR) => IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
        (IBV_QPS_RTR, IBV_QPS_RTS) | (IBV_QPS_RTS, IBV_QPS_RTS) | (IBV_QPS_SQD, IBV_QPS_RTS) => to_rts,
        (IBV_QPS_RTS, IBV_QPS_SQD) => IBV_QP_EN_SQD_ASYNC_NOTIFY,
        (IBV_QPS_SQD, IBV_QPS_SQD) => sqd_attrs(qpt),
        (IBV_QPS_SQE, IBV_QPS_RTS) if ud => IBV_QP_CUR_STATE | IBV_QP_QKEY,
        (IBV_QPS_SQE, IBV_QPS_RTS) if qpt == QpType::Uc => IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
        _ => 0,
    }
}

/// What SQD to SQD may change, by QP type.
fn sqd_attrs(qpt: QpType) -> u32 {
    let common = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE;
    let rc_paths = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT;
    match qpt {
        QpType::Ud => IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
        QpType::Uc => common | IBV_QP_AV,
        QpType::Rc => {
            common
                | rc_paths
                | IBV_QP_RETRY_CNT
                | IBV_QP_RNR_RETRY
                | IBV_QP_MAX_QP_RD_ATOMIC
                | IBV_QP_MAX_DEST_RD_ATOMIC
                | IBV_QP_MIN_RNR_TIMER
        }
        QpType::XrcSend => common | rc_paths | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
        QpType::XrcRecv => common | rc_paths | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
    }
}

/// Every client's objects, and which client holds each QP and SRQ number.
pub struct Tables {
    limits: Limits,
    clients: NumMap<Client>,
    /// QP number -> (client, handle).
    qpns: NumMap<(ClientId, u32)>,
    /// SRQ number -> (client, handle).
    srqns: NumMap<(ClientId, u32)>,
}

/// The hooks of [`Tables::exec`]: a number another client holds is
/// refused too (`EAGAIN`), so each is one client's.
struct Unique<'a> {
    inner: &'a mut dyn Hooks,
    qpns: &'a NumMap<(ClientId, u32)>,
    srqns: &'a NumMap<(ClientId, u32)>,
}

impl Hooks for Unique<'_> {
    fn alloc_num(&mut self) -> Result<u32, i32> {
        let n = self.inner.alloc_num()?;
        if self.qpns.contains_key(&n) || self.srqns.contains_key(&n) {
            return Err(EAGAIN);
        }
        Ok(n)
    }

    fn free_num(&mut self, num: u32) {
        self.inner.free_num(num)
    }

    fn gid_count(&self) -> usize {
        self.inner.gid_count()
    }

    fn path_ok(&self, ah: &AhAttr) -> bool {
        self.inner.path_ok(ah)
    }

    fn check_mapped(&self, client: ClientId, addr: u64, len: u64, writable: bool) -> Result<(), i32> {
        self.inner.check_mapped(client, addr, len, writable)
    }

    fn cq_pending(&self, client: ClientId, cq: u32) -> u32 {
        self.inner.cq_pending(client, cq)
    }

    fn srq_posted(&self, client: ClientId, srq: u32) -> u32 {
        self.inner.srq_posted(client, srq)
    }

    fn join_group(&mut self, qpn: u32, mgid: &[u8; 16]) -> Result<(), i32> {
        self.inner.join_group(qpn, mgid)
    }

    fn leave_group(&mut self, qpn: u32, mgid: &[u8; 16]) {
        self.inner.leave_group(qpn, mgid)
    }
}

impl Tables {
    /// No clients; each will have `limits`.
    pub fn new(limits: Limits) -> Tables {
        Tables {
            limits,
            clients: NumMap::default(),
            qpns: NumMap::default(),
            srqns: NumMap::default(),
        }
    }

    /// A new client `id` with no objects.  False: it exists already.
    pub fn add_client(&mut self, id: ClientId) -> bool {
        if self.clients.contains_key(&id) {
            return false;
        }
        self.clients.insert(id, Client::new(id, self.limits));
        true
    }

    /// Client `id` is gone (its connection closed, its process exited):
    /// all its objects go at once, whatever uses what, and its QP and SRQ
    /// numbers are given back ([`Hooks::free_num`]).  The client's tables,
    /// for the engine's own cleanup (its QPs' last words, its queues).
    pub fn remove_client(&mut self, id: ClientId, hooks: &mut dyn Hooks) -> Option<Client> {
        let c = self.clients.remove(&id)?;
        for n in c.nums() {
            self.qpns.remove(&n);
            self.srqns.remove(&n);
            hooks.free_num(n);
        }
        Some(c)
    }

    /// Client `id`'s objects.
    pub fn client(&self, id: ClientId) -> Option<&Client> {
        self.clients.get(&id)
    }

    /// Client `id`'s objects, for the engine's changes ([`Client::bind_mw`],
    /// [`Client::set_qp_state`], ...).
    pub fn client_mut(&mut self, id: ClientId) -> Option<&mut Client> {
        self.clients.get_mut(&id)
    }

    /// How many clients there are.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// Who holds QP number `qpn`: the client and the QP's handle.
    pub fn qp_owner(&self, qpn: u32) -> Option<(ClientId, u32)> {
        self.qpns.get(&qpn).copied()
    }

    /// Who holds SRQ number `srqn`: the client and the SRQ's handle.
    pub fn srq_owner(&self, srqn: u32) -> Option<(ClientId, u32)> {
        self.srqns.get(&srqn).copied()
    }

    /// Answers request `req` of client `id` ([`Client::exec`]); an unknown
    /// client is `ENOENT`.
    pub fn exec(&mut self, id: ClientId, req: &Request, hooks: &mut dyn Hooks) -> Reply {
        let Some(c) = self.clients.get_mut(&id) else {
            return Reply::Err(ENOENT);
        };
        let gone = match *req {
            Request::DestroyQp { qp } => c.qp(qp).ok().map(|q| q.qpn),
            Request::DestroySrq { srq } => c.srq(srq).ok().map(|s| s.srqn),
            _ => None,
        };
        let mut h = Unique {
            inner: hooks,
            qpns: &self.qpns,
            srqns: &self.srqns,
        };
        let rep = c.exec(req, &mut h);
        match rep {
            Reply::Qp { handle, qpn, .. } => {
                self.qpns.insert(qpn, (id, handle));
            }
            Reply::Srq { handle, srqn, .. } => {
                self.srqns.insert(srqn, (id, handle));
            }
            Reply::Done => {
                if let Some(n) = gone {
                    self.qpns.remove(&n);
                    self.srqns.remove(&n);
                }
            }
            _ => {}
        }
        rep
    }
}
