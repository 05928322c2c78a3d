//! Each greeted client's control session (HOSTWIRE-DESIGN.md section 4,
//! "Control path"; plan step 2): the agent answers the verbs' requests
//! (`ctl::msg`) that come on the client's connection after its welcome,
//! from the client's object tables (`ctl::tables`), and keeps the work
//! queues whose memfds come with them (`wq`).  The agent's event loop
//! (`agent.rs`) calls [`Control::serve`] when a greeted client's
//! connection holds a control message ([`next_is_ctl`]), and
//! [`Control::close`] when the client goes.
//!
//! * **One request, one reply.**  A request is received with its
//!   descriptors (`msg::recv_request`), its queues are attached, the
//!   tables answer it ([`Tables::exec`]) with the agent's [`Hooks`], and
//!   the reply goes back (`msg::send_reply`).  A queue that does not
//!   attach (not a sealed memfd of exactly the size its geometry gives) is
//!   `EINVAL` and nothing is created, as the provider answers a value it
//!   refuses.
//! * **Protocol violations end the connection**: a message that does not
//!   decode, comes with another number of descriptors than it names, or is
//!   cut short, and a client whose socket is full when its reply goes (it
//!   does not read its replies).  [`Control::serve`] says why; the caller
//!   drops the client (one line in the log).  Nothing a client sends can
//!   cause a panic or touch another client's objects.
//! * **The queues** are kept by the handle of their object: a CQ's CQE
//!   queue (the agent produces), a QP's SQ and RQ and an SRQ's queue (the
//!   agent consumes), and a CQ's doorbell eventfd and completion channel.
//!   Destroying the object, or the client's end, unmaps and closes them.
//!   Nothing runs on them yet: the engine is a later step.
//! * **A budget per client** ([`Budget`]): the descriptors and mappings
//!   the agent keeps for one client's objects are bounded, so that one
//!   client cannot use up the agent's `RLIMIT_NOFILE` or the system's
//!   `vm.max_map_count` and fail every other client's requests.  A
//!   request that would keep more is `EINVAL` (what the tables answer for
//!   one object more than `Limits::max_objects`, as the provider's
//!   `registry.rs` does), checked before anything is attached: nothing is
//!   mapped and its descriptors are closed.  A destroy, and the client's
//!   end, give the budget back.
//!
//! The hooks' answers:
//! * QP and SRQ numbers: a counter of the agent's, unique in the agent
//!   (from a start derived from the agent's pid, skipping 0, 1 and numbers
//!   in use).  They are not yet unique with the numbers of the provider's
//!   per-process wire contexts of the same user; that comes with the step
//!   that moves the transport in.
//! * `gid_count` and `path_ok`: the interface's GID table and addresses
//!   ([`crate::gids`]), read again for each request that names a GID.
//! * `check_mapped`: `/proc/<pid>/maps` of the client, read as the
//!   provider's `mem::check_mapped` reads its own (readable, and writable
//!   when asked); then the client's pidfd must still be unreadable, so the
//!   pid named the client.  When the agent cannot read the client's map
//!   (no pid in its PID namespace, a non-dumpable client) the answer is
//!   the provider's without procfs: mapped.
//! * `cq_pending`: the CQEs in the CQ's queue that the client has not
//!   taken; `srq_posted`: the WQEs the client put in the SRQ's queue that
//!   the agent has not taken (the client's own count, bounded by the
//!   queue's depth; at most the depth when it is out of range).
//! * `join_group` and `leave_group`: the transport's group sockets
//!   (`Transport::join_group`, `Sock::join_group`: one socket per group for
//!   all the clients' QPs); without a transport, `join_group` is
//!   `EOPNOTSUPP` (no datagrams would reach the QP).

use crate::ctl::msg::{self, AhAttr, MsgError, QpType, Queue, Reply, Request, MAX_NUM};
use crate::ctl::tables::{ClientId, Hooks, Limits, Tables};
use crate::data::{ClientData, DataPath, DataQp, SrqQueue};
use crate::gids::Gids;
use crate::place::ClientMem;
use crate::transport::Transport;
use crate::wire::host::HostQp;
use crate::wq::format::{QpKind, SendShape};
use crate::wq::{AttachError, Consumer, Producer, Slots};
use ibverbs_abi::verbs::*;
use libc::{EAGAIN, EFAULT, EINVAL, ENOMEM, EOPNOTSUPP, ESRCH};
use rustix::io::Errno;
use rustix::net::RecvFlags;
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

/// The page size `check_mapped` rounds to (as the provider's).
const PAGE: u64 = 4096;

/// Every client's objects and the agent's numbers: the agent's side of
/// the control path.
pub struct Control {
    tables: Tables,
    nums: Nums,
    ifindex: u32,
    /// What each client may keep.
    budget: Budget,
    /// Each client's data path: the queues of its objects, its QPs as the
    /// engine runs them (`data.rs`).
    data: DataPath,
}

/// What a request changed that the engine must hear of (the caller runs
/// it: `transport.rs`).
#[derive(Clone)]
pub enum Changed {
    /// QP `qpn` was made.
    NewQp(u32),
    /// `modify_qp` moved QP `qpn` to state `new` with attributes `mask`
    /// (its state and attributes copied into its `DataQp`, except the
    /// error state, which the engine enters with its flushes).
    Modified { qpn: u32, new: u32, mask: u32 },
    /// The QP was destroyed: no longer in the data path.
    QpGone(Arc<DataQp>),
}

/// Descriptors and mappings that the agent keeps for a client's objects:
/// what one object, one request or one session costs, or the most one
/// client may keep (its [`Budget`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// Descriptors: a CQ's doorbell eventfd and its completion channel.
    pub fds: u32,
    /// Mappings: a CQ's CQE queue, a QP's SQ and RQ, an SRQ's queue.
    pub maps: u32,
}

/// The most that the agent keeps for one client's objects (README.md,
/// "Serving clients", "Budgets").  The connection itself (its socket,
/// pidfd and async pipe, and the mapping of its access page) is not
/// counted: [`crate::agent::MAX_CLIENTS`] bounds those.
pub type Budget = Kept;

impl Kept {
    /// The least a client is given, whatever the agent's limits: 1024
    /// descriptors (512 CQs, each with a doorbell and a completion
    /// channel) and 4096 mappings (for example 1024 RC QPs with an SQ and
    /// an RQ, 1024 CQs and 1024 SRQs), so that a verbs program of hundreds
    /// of QPs and CQs is never refused for its budget.
    pub const FLOOR: Budget = Kept { fds: 1024, maps: 4096 };

    /// The share of the agent's limits that one client may keep: a
    /// quarter, so that a client that takes all it may leaves three
    /// quarters to the user's other processes and to the agent itself.
    pub const SHARE: u64 = 4;

    /// The budget of a client of an agent whose descriptor limit is
    /// `nofile` (its soft `RLIMIT_NOFILE`, after raising it to the hard
    /// one) under a `vm.max_map_count` of `max_map_count`: a quarter
    /// ([`Kept::SHARE`]) of each, at least [`Kept::FLOOR`].  Where the
    /// limits are so low that the floor is more than that share, the floor
    /// wins: a normal program then still runs, and the agent's own limits
    /// refuse what is beyond them.
    pub fn from_limits(nofile: u64, max_map_count: u64) -> Budget {
        let part = |total: u64, floor: u32| u32::try_from(total / Self::SHARE).unwrap_or(u32::MAX).max(floor);
        Kept {
            fds: part(nofile, Self::FLOOR.fds),
            maps: part(max_map_count, Self::FLOOR.maps),
        }
    }

    /// What request `req` keeps when it succeeds, from the queues and
    /// descriptors it names (as `attach` takes them).  A `ResizeCq`'s
    /// new queue replaces the old one: no more is kept.
    pub fn of_request(req: &Request) -> Kept {
        match req {
            Request::CreateCq(c) => Kept {
                fds: c.doorbell as u32 + c.channel as u32,
                maps: 1,
            },
            Request::CreateQp(c) => Kept {
                fds: 0,
                maps: c.sq.is_some() as u32 + c.rq.is_some() as u32,
            },
            Request::CreateSrq(_) => Kept { fds: 0, maps: 1 },
            _ => Kept::default(),
        }
    }

    /// Whether `more` on top of `self` stays within `budget`.
    pub fn fits(self, more: Kept, budget: Budget) -> bool {
        let ok = |have: u32, add: u32, max: u32| have.checked_add(add).is_some_and(|n| n <= max);
        ok(self.fds, more.fds, budget.fds) && ok(self.maps, more.maps, budget.maps)
    }

    fn add(&mut self, k: Kept) {
        self.fds = self.fds.saturating_add(k.fds);
        self.maps = self.maps.saturating_add(k.maps);
    }

    fn sub(&mut self, k: Kept) {
        self.fds = self.fds.saturating_sub(k.fds);
        self.maps = self.maps.saturating_sub(k.maps);
    }
}

/// A CQ's queue and descriptors.
struct Cq {
    /// The CQE queue (the agent produces).
    queue: Producer,
    /// The eventfd to write when the client sleeps on the queue.
    doorbell: Option<OwnedFd>,
    /// The completion channel.
    channel: Option<OwnedFd>,
}

impl Cq {
    /// What it keeps: its queue, and its doorbell and channel when given.
    fn kept(&self) -> Kept {
        Kept {
            fds: self.doorbell.is_some() as u32 + self.channel.is_some() as u32,
            maps: 1,
        }
    }
}

/// A QP's queues (the agent consumes both).
struct QpQueues {
    sq: Option<Consumer>,
    rq: Option<Consumer>,
}

impl QpQueues {
    /// What it keeps: a mapping per queue.
    fn kept(&self) -> Kept {
        Kept {
            fds: 0,
            maps: self.sq.is_some() as u32 + self.rq.is_some() as u32,
        }
    }
}

/// What an SRQ keeps: its queue's mapping.
const SRQ_KEPT: Kept = Kept { fds: 0, maps: 1 };

/// One greeted client: its number in the tables, its pid, and the queues
/// of its objects by handle.
pub struct Session {
    id: ClientId,
    pid: i32,
    /// What each object with queues or descriptors keeps, by handle (the
    /// queues themselves are in the client's `ClientData`).
    held: HashMap<u32, Kept>,
    /// What `held` adds up to (kept as objects come and go, checked
    /// against the budget before each request).
    kept: Kept,
}

impl Session {
    /// Its number (the welcome's `client_id`).
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// How many queues it holds mapped.
    pub fn queues(&self) -> usize {
        self.held.values().map(|k| k.maps as usize).sum()
    }

    /// The descriptors and mappings it keeps for its objects.
    pub fn kept(&self) -> Kept {
        self.kept
    }

    /// Object `handle` keeps `k` (replacing what it kept before).
    fn hold(&mut self, handle: u32, k: Kept) {
        self.kept.add(k);
        if let Some(old) = self.held.insert(handle, k) {
            self.kept.sub(old);
        }
    }

    /// Object `handle` is gone: what it kept is given back.
    fn release(&mut self, handle: u32) {
        if let Some(k) = self.held.remove(&handle) {
            self.kept.sub(k);
        }
    }
}

/// What the descriptors of a request became.
enum Attached {
    Nothing,
    Cq(Cq),
    NewCqQueue(Producer),
    Qp(QpQueues),
    Srq(Consumer),
}

/// The errno of a queue that does not attach: `EINVAL` for a file the
/// request's geometry does not describe, the call's own for a failed
/// system call (`ENOMEM` from `mmap`).
fn attach_errno(e: &AttachError) -> i32 {
    match e {
        AttachError::Sys(_, io) => io.raw_os_error().unwrap_or(ENOMEM),
        _ => EINVAL,
    }
}

/// Maps the next descriptor of `fds` as a queue of geometry `q`.
fn map(fds: &mut impl Iterator<Item = OwnedFd>, q: Queue) -> Result<Slots, i32> {
    let fd = fds.next().ok_or(EINVAL)?;
    Slots::attach(fd.as_fd(), q.depth as usize, q.slot_size as usize).map_err(|e| attach_errno(&e))
}

/// Attaches the queues whose descriptors came with `req` (in its order:
/// `Request::fd_count`) and takes its other descriptors.
fn attach(req: &Request, fds: Vec<OwnedFd>) -> Result<Attached, i32> {
    let mut it = fds.into_iter();
    Ok(match req {
        Request::CreateCq(c) => {
            let queue = map(&mut it, c.queue)?.into_producer();
            let mut more = |want: bool| {
                if want {
                    it.next().ok_or(EINVAL).map(Some)
                } else {
                    Ok(None)
                }
            };
            // The agent writes both: an eventfd and a pipe's write end,
            // non-blocking (anything else could block or signal it).
            let doorbell = more(c.doorbell)?;
            if doorbell.as_ref().is_some_and(|d| !crate::is_eventfd(d.as_fd())) {
                return Err(EINVAL);
            }
            let channel = more(c.channel)?;
            if channel
                .as_ref()
                .is_some_and(|c| crate::fifo_writer(c.as_fd(), "channel").is_err())
            {
                return Err(EINVAL);
            }
            Attached::Cq(Cq {
                queue,
                doorbell,
                channel,
            })
        }
        Request::ResizeCq { queue: Some(q), .. } => Attached::NewCqQueue(map(&mut it, *q)?.into_producer()),
        Request::CreateSrq(c) => Attached::Srq(map(&mut it, c.queue)?.into_consumer()),
        Request::CreateQp(c) => {
            let sq = c.sq.map(|q| map(&mut it, q)).transpose()?;
            let rq = c.rq.map(|q| map(&mut it, q)).transpose()?;
            Attached::Qp(QpQueues {
                sq: sq.map(Slots::into_consumer),
                rq: rq.map(Slots::into_consumer),
            })
        }
        _ => Attached::Nothing,
    })
}

/// The agent's QP and SRQ numbers: 24 bits, not 0 or 1, unique among
/// those in use in this agent.
struct Nums {
    next: u32,
    used: HashSet<u32>,
    /// Where numbers come from instead of `next` (`Control::number_from`).
    source: Option<Box<dyn FnMut() -> u32>>,
}

impl Nums {
    /// Starts at a number derived from the agent's pid, so that an agent
    /// started again does not give out its predecessor's numbers first.
    fn new() -> Nums {
        let seed = std::process::id().wrapping_mul(0x9e37_79b9) >> 8;
        Nums {
            next: 2 + seed % (MAX_NUM - 1),
            used: HashSet::new(),
            source: None,
        }
    }

    /// A number not in use (`EAGAIN` when every one is).
    fn alloc(&mut self) -> Result<u32, i32> {
        if self.used.len() >= (MAX_NUM - 1) as usize {
            return Err(EAGAIN);
        }
        if let Some(src) = self.source.as_mut() {
            // (A bounded number of tries: a counter that keeps giving
            // numbers in use or out of range is no source.)
            for _ in 0..64 {
                let n = src();
                if (2..=MAX_NUM).contains(&n) && self.used.insert(n) {
                    return Ok(n);
                }
            }
            return Err(EAGAIN);
        }
        loop {
            let n = self.next;
            self.next = if n >= MAX_NUM { 2 } else { n + 1 };
            if self.used.insert(n) {
                return Ok(n);
            }
        }
    }

    fn free(&mut self, n: u32) {
        self.used.remove(&n);
    }
}

/// The agent's answers to the tables for one request of one client.
struct AgentHooks<'a> {
    nums: &'a mut Nums,
    /// The GID table, read for a request that names a GID.
    gids: Option<&'a Gids>,
    pid: i32,
    /// The client's data path (its queues).
    data: Option<&'a ClientData>,
    pidfd: BorrowedFd<'a>,
    /// The agent's transport (None: it serves the control path only).
    engine: Option<&'a Transport>,
}

impl Hooks for AgentHooks<'_> {
    fn alloc_num(&mut self) -> Result<u32, i32> {
        self.nums.alloc()
    }

    fn free_num(&mut self, num: u32) {
        self.nums.free(num)
    }

    fn gid_count(&self) -> usize {
        self.gids.map_or(0, |g| g.table.len())
    }

    fn path_ok(&self, ah: &AhAttr) -> bool {
        self.gids.is_some_and(|g| g.path_ok(ah.sgid_index, &ah.dgid))
    }

    fn check_mapped(&self, _client: ClientId, addr: u64, len: u64, writable: bool) -> Result<(), i32> {
        client_mapped(self.pid, self.pidfd, addr, len, writable)
    }

    fn cq_pending(&self, _client: ClientId, cq: u32) -> u32 {
        let n = self.data.map_or(0, |d| d.cq_pending(cq));
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn srq_posted(&self, _client: ClientId, srq: u32) -> u32 {
        let n = self.data.map_or(0, |d| d.srq_posted(srq));
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn join_group(&mut self, qpn: u32, mgid: &[u8; 16]) -> Result<(), i32> {
        match self.engine {
            Some(t) => t.join_group(mgid, qpn),
            None => Err(EOPNOTSUPP),
        }
    }

    fn leave_group(&mut self, qpn: u32, mgid: &[u8; 16]) {
        if let Some(t) = self.engine {
            t.leave_group(mgid, qpn);
        }
    }
}

/// The hooks of a client's removal: only numbers given back.
struct Freeing<'a>(&'a mut Nums);

impl Hooks for Freeing<'_> {
    fn alloc_num(&mut self) -> Result<u32, i32> {
        Err(EAGAIN)
    }

    fn free_num(&mut self, num: u32) {
        self.0.free(num)
    }

    fn gid_count(&self) -> usize {
        0
    }
}

/// Whether [addr, addr+len) is mapped in process `pid` (whose pidfd is
/// `pidfd`), and writable when `writable`: what `ibv_reg_mr` of that range
/// gives on a kernel provider, as the provider's `mem::check_mapped`
/// answers for itself (`EINVAL`: the range wraps; `EFAULT`: a hole or a
/// mapping without the rights).  Mapped when the map cannot be read.
fn client_mapped(pid: i32, pidfd: BorrowedFd<'_>, addr: u64, len: u64, writable: bool) -> Result<(), i32> {
    if len == 0 {
        return Ok(());
    }
    let end = addr.checked_add(len).filter(|e| e.checked_add(PAGE - 1).is_some());
    let end = end.ok_or(EINVAL)?;
    if pid <= 0 {
        return Ok(()); // no number in our PID namespace
    }
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Ok(());
    };
    // The map read was the client's, unless it has exited since (its pid
    // could name another process by now).
    if crate::pidfd_exited(pidfd) {
        return Err(ESRCH);
    }
    covered(&maps, addr & !(PAGE - 1), end, writable)
}

/// Whether the mappings listed in `maps` (a `/proc/<pid>/maps` text, in
/// address order) cover [start, end) without a hole, each readable and,
/// when `writable`, writable: Ok, or `EFAULT`.
fn covered(maps: &str, start: u64, end: u64, writable: bool) -> Result<(), i32> {
    let mut need = start;
    for line in maps.lines() {
        let mut words = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (words.next(), words.next()) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if hi <= need {
            continue;
        }
        let p = perms.as_bytes();
        if lo > need || p.first() != Some(&b'r') || (writable && p.get(1) != Some(&b'w')) {
            return Err(EFAULT);
        }
        need = hi;
        if need >= end {
            return Ok(());
        }
    }
    Err(EFAULT)
}

/// Whether a request needs the GID table: an address vector to check.
fn needs_gids(req: &Request) -> bool {
    match req {
        Request::ModifyQp { attr, .. } => attr.mask & IBV_QP_AV != 0,
        Request::CreateAh { .. } => true,
        _ => false,
    }
}

/// Whether the next message waiting on `sock` is a control message
/// (`msg::is_ctl`), without taking it.  False when none waits, or when it
/// is another (the hello protocol's `QUERY`, bytes of no protocol, the
/// connection's end): the caller reads that one as before.
pub fn next_is_ctl(sock: BorrowedFd<'_>) -> bool {
    let mut b = [0u8; 2];
    let r = rustix::net::recv(sock, &mut b, RecvFlags::PEEK | RecvFlags::DONTWAIT);
    matches!(r, Ok((n, _)) if n >= 2 && msg::is_ctl(&b))
}

impl Control {
    /// No clients; objects are checked against a wire device's limits on
    /// interface `ifindex`, and what each client keeps against `budget`.
    pub fn new(ifindex: u32, budget: Budget) -> Control {
        Control {
            tables: Tables::new(Limits::WIRE),
            nums: Nums::new(),
            ifindex,
            budget,
            data: DataPath::default(),
        }
    }

    /// QP and SRQ numbers come from `source` from now on (the user's id
    /// counter, shared with the provider's contexts, when the agent is a
    /// wire context of its user: `transport.rs`); a number it gives that is
    /// 0, 1, over 24 bits or in use is skipped.
    pub fn number_from(&mut self, source: Box<dyn FnMut() -> u32>) {
        self.nums.source = Some(source);
    }

    /// The clients' data path and their key tables, for the engine's turn
    /// (`data::Serving`).
    pub fn data_and_keys(&mut self) -> (&DataPath, &mut Tables) {
        (&self.data, &mut self.tables)
    }

    /// The user handle of client `id`'s CQ, QP or SRQ `handle` (the
    /// client's name of it, given when it made it): the `element` of its
    /// async events.  None: no such object.
    pub fn user_handle(&self, id: ClientId, handle: u32) -> Option<u64> {
        self.tables.client(id)?.user_handle(handle)
    }

    /// The clients' data path.
    pub fn data(&self) -> &DataPath {
        &self.data
    }

    /// Client `id`'s SRQ `srq` fired its limit event: disarmed in the
    /// tables too (`query_srq` says 0, as on rxe).
    pub fn srq_limit_reached(&mut self, id: ClientId, srq: u32) {
        if let Some(c) = self.tables.client_mut(id) {
            c.srq_limit_reached(srq);
        }
    }

    /// Client `id`'s QP `qpn` is in state `state` now (the engine moved it
    /// to the error state): the tables follow, as `query_qp` answers.
    pub fn engine_moved(&mut self, id: ClientId, qpn: u32, state: u32) {
        if let Some(c) = self.tables.client_mut(id) {
            if let Some((h, _)) = c.qp_by_qpn(qpn) {
                c.set_qp_state(h, state);
            }
        }
    }

    /// What each client may keep.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// A session for client `id` (process `pid` in our PID namespace, 0:
    /// none), with no objects.  None: that number has one already.
    pub fn open(&mut self, id: ClientId, pid: i32, mem: ClientMem) -> Option<Session> {
        if !self.tables.add_client(id) {
            return None;
        }
        self.data.add_client(id, mem);
        Some(Session {
            id,
            pid,
            held: HashMap::new(),
            kept: Kept::default(),
        })
    }

    /// Client `s` is gone: its objects go, its numbers are given back.
    /// Its data path, for the engine's last words of its QPs (then its
    /// queues are unmapped and its descriptors closed with it).
    pub fn close(&mut self, s: Session) -> Option<ClientData> {
        self.tables.remove_client(s.id, &mut Freeing(&mut self.nums));
        self.data.remove_client(s.id)
    }

    /// How many sessions there are.
    pub fn sessions(&self) -> usize {
        self.tables.clients()
    }

    /// After the tables answered `req` of session `s` with `rep`: the
    /// session counts what `att` keeps ([`Kept`]), the client's data path
    /// takes its queues and descriptors (what is not taken is unmapped and
    /// closed here), and a QP made, changed or destroyed is followed in
    /// the data path (`gone`: the QP number a `DestroyQp` named).  What
    /// the engine must hear of.
    fn keep(
        &mut self,
        s: &mut Session,
        req: &Request,
        rep: &Reply,
        att: Attached,
        gone: Option<u32>,
    ) -> Option<Changed> {
        let id = s.id;
        match (req, rep, att) {
            (_, Reply::Cq { handle, .. }, Attached::Cq(c)) => {
                s.hold(*handle, c.kept());
                if let Some(d) = self.data.client_mut(id) {
                    d.add_cq(*handle, c.queue, c.doorbell, c.channel);
                }
            }
            (Request::ResizeCq { cq, .. }, Reply::Done, Attached::NewCqQueue(p)) => {
                // One queue for another: the same mapping count; an arm
                // left on the old queue goes on with the new one.
                if let Some(d) = self.data.client_mut(id) {
                    let mut p = p;
                    let cqs = d.cqs.get_mut();
                    if let Some(old) = cqs.get_mut(cq) {
                        p.carry_arm(old.take_any_arm());
                    }
                    cqs.insert(*cq, p);
                }
            }
            (Request::DestroyCq { cq }, Reply::Done, _) => {
                s.release(*cq);
                if let Some(d) = self.data.client_mut(id) {
                    d.remove_cq(*cq);
                }
            }
            (_, Reply::Qp { handle, qpn, cap }, Attached::Qp(q)) => {
                s.hold(*handle, q.kept());
                let t = self.tables.client(id)?.qp(*handle).ok()?;
                let (qpt, kind) = match t.qp_type {
                    QpType::Rc => (IBV_QPT_RC, QpKind::Connected),
                    QpType::Uc => (IBV_QPT_UC, QpKind::Connected),
                    QpType::Ud => (IBV_QPT_UD, QpKind::Ud),
                    // (XRC is not on wire devices: no engine.)
                    _ => return None,
                };
                let dq = DataQp::new(
                    id,
                    *qpn,
                    qpt,
                    t.pd_id,
                    *handle,
                    t.send_cq,
                    t.recv_cq,
                    t.srq,
                    t.sq_sig_all,
                    cap.max_recv_sge,
                );
                let shape = SendShape {
                    kind,
                    max_sge: cap.max_send_sge,
                    max_inline: cap.max_inline_data,
                };
                let d = self.data.client_mut(id)?;
                if let Some(sq) = q.sq {
                    d.sqs.get_mut().insert(*qpn, (sq, shape));
                }
                if let Some(rq) = q.rq {
                    d.rqs.get_mut().insert(*qpn, rq);
                }
                self.data.add_qp(Arc::new(dq));
                return Some(Changed::NewQp(*qpn));
            }
            (Request::ModifyQp { qp, attr }, Reply::Done, _) => {
                let t = self.tables.client(id)?.qp(*qp).ok()?;
                let dq = self.data.qp(t.qpn)?;
                let mut st = dq.lock();
                st.attr = t.attr.to_verbs();
                if t.state != IBV_QPS_ERR {
                    st.state = t.state;
                }
                return Some(Changed::Modified {
                    qpn: t.qpn,
                    new: t.state,
                    mask: attr.mask,
                });
            }
            (Request::DestroyQp { qp }, Reply::Done, _) => {
                s.release(*qp);
                let qpn = gone?;
                if let Some(d) = self.data.client_mut(id) {
                    d.sqs.get_mut().remove(&qpn);
                    d.rqs.get_mut().remove(&qpn);
                }
                return self.data.remove_qp(qpn).map(Changed::QpGone);
            }
            (_, Reply::Srq { handle, .. }, Attached::Srq(c)) => {
                s.hold(*handle, SRQ_KEPT);
                let t = self.tables.client(id)?.srq(*handle).ok()?;
                let q = SrqQueue {
                    queue: c,
                    pd: t.pd_id,
                    max_sge: t.max_sge,
                    limit: t.limit,
                };
                self.data.client_mut(id)?.srqs.get_mut().insert(*handle, q);
            }
            (Request::ModifySrq { srq, .. }, Reply::Done, _) => {
                // (Armed or moved: the data path takes the tables' limit.)
                let limit = self.tables.client(id)?.srq(*srq).ok()?.limit;
                if let Some(q) = self.data.client_mut(id)?.srqs.get_mut().get_mut(srq) {
                    q.limit = limit;
                }
            }
            (Request::DestroySrq { srq }, Reply::Done, _) => {
                s.release(*srq);
                self.data.client_mut(id)?.srqs.get_mut().remove(srq);
            }
            _ => {}
        }
        None
    }

    /// Serves one request of session `s` on its connection `sock` (the
    /// client's pidfd is `pidfd`): receives it, answers it, sends the
    /// reply.  A request that would keep more than the client's budget
    /// is `EINVAL` before anything is attached (its descriptors are
    /// closed).  Before a request that changes the client's keys
    /// (`DeregMr`, `ReregMr`, `DeallocMw`), `engine` takes the WQEs the
    /// client posted before it (`Transport::take_client`).  A QP made,
    /// changed or destroyed reaches `engine` (the
    /// agent's transport, when it has one) before the reply goes.  Err:
    /// why the connection must end (the client closed it, or broke the
    /// protocol).
    pub fn serve(
        &mut self,
        s: &mut Session,
        sock: BorrowedFd<'_>,
        pidfd: BorrowedFd<'_>,
        engine: Option<&Transport>,
    ) -> Result<(), String> {
        let (id, req, fds) = match msg::recv_request(sock) {
            Ok(r) => r,
            Err(MsgError::Io(Errno::AGAIN)) => return Ok(()),
            Err(MsgError::Closed) => return Err("connection closed".into()),
            Err(e) => return Err(format!("a bad control message: {e}")),
        };
        let att = if s.kept.fits(Kept::of_request(&req), self.budget) {
            attach(&req, fds)
        } else {
            // Over the budget: its descriptors are closed now, before the
            // reply, and nothing is mapped.
            drop(fds);
            Err(EINVAL)
        };
        // The WQEs the client posted before a request that changes its
        // keys are done first, with the keys as they were
        // (`Transport::take_client`).
        if let (Ok(_), Some(t), Request::DeregMr { .. } | Request::ReregMr(_) | Request::DeallocMw { .. }) =
            (&att, engine, &req)
        {
            t.take_client(self, s.id);
        }
        let rep = match att {
            Ok(att) => {
                let gids = needs_gids(&req).then(|| Gids::read(self.ifindex));
                let gone = match req {
                    Request::DestroyQp { qp } => self.tables.client(s.id).and_then(|c| c.qp(qp).ok()).map(|q| q.qpn),
                    _ => None,
                };
                let mut hooks = AgentHooks {
                    nums: &mut self.nums,
                    gids: gids.as_ref(),
                    pid: s.pid,
                    data: self.data.client(s.id),
                    pidfd,
                    engine,
                };
                let rep = self.tables.exec(s.id, &req, &mut hooks);
                let changed = self.keep(s, &req, &rep, att, gone);
                // The engine hears of it before the client does: a QP's
                // link is there once its number is known, gone once its
                // destroy returns.
                if let (Some(t), Some(ch)) = (engine, changed) {
                    t.changed(self, ch);
                }
                rep
            }
            Err(errno) => Reply::Err(errno),
        };
        match msg::send_reply(sock, id, &rep) {
            Ok(()) => Ok(()),
            Err(MsgError::Io(Errno::AGAIN)) => Err("it does not read its replies (its socket is full)".into()),
            Err(e) => Err(format!("its reply: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cross-memory attach on ourselves (a client's data path's memory).
    fn own_mem() -> ClientMem {
        let fd = crate::client::access_page().unwrap();
        let page = crate::place::AccessPage::map(fd.as_fd()).unwrap();
        ClientMem::new(std::process::id() as libc::pid_t, None, false, page)
    }

    #[test]
    fn numbers_unique_and_in_range() {
        let mut n = Nums::new();
        n.next = MAX_NUM - 1;
        let a: Vec<u32> = (0..4).map(|_| n.alloc().unwrap()).collect();
        assert_eq!(a, vec![MAX_NUM - 1, MAX_NUM, 2, 3], "wraps past 0 and 1");
        n.next = MAX_NUM;
        assert_eq!(n.alloc(), Ok(4), "skips those in use");
        n.free(MAX_NUM);
        n.next = MAX_NUM;
        assert_eq!(n.alloc(), Ok(MAX_NUM));
    }

    #[test]
    fn cq_pending_is_what_the_client_has_not_taken() {
        let (q, _fd) = Slots::create(4, 64).unwrap();
        let (mut p, mut c) = q.split();
        for _ in 0..3 {
            let _ = p.try_push(b"cqe").unwrap();
        }
        let mut b = [0u8; 48];
        assert_eq!(c.try_pop(&mut b), Ok(Some(3)));
        assert_eq!((p.len(), p.unconsumed()), (3, 2));
    }

    #[test]
    fn a_session_keeps_its_queues_until_destroyed() {
        use crate::ctl::msg::CreateCq;
        use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
        let (a, b) = socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap();
        let me = rustix::process::getpid();
        let pidfd = rustix::process::pidfd_open(me, rustix::process::PidfdFlags::empty()).unwrap();
        let mut ctl = Control::new(1, Budget::FLOOR);
        let mut s = ctl.open(7, me.as_raw_nonzero().get(), own_mem()).unwrap();
        assert!(ctl.open(7, 0, own_mem()).is_none(), "one session per number");
        let (_q, fd) = Slots::create(8, 64).unwrap();
        let queue = Queue {
            depth: 8,
            slot_size: 64,
        };
        let c = CreateCq {
            user_handle: 0x7f00_dead_beef,
            cqe: 8,
            queue,
            doorbell: false,
            channel: false,
        };
        msg::send_request(a.as_fd(), 1, &Request::CreateCq(c), &[fd.as_fd()]).unwrap();
        ctl.serve(&mut s, b.as_fd(), pidfd.as_fd(), None).unwrap();
        let (id, rep) = msg::recv_reply(a.as_fd()).unwrap();
        let Reply::Cq { handle, .. } = rep else {
            panic!("{rep:?}")
        };
        assert_eq!((id, s.queues(), ctl.sessions()), (1, 1, 1));
        assert_eq!(
            ctl.user_handle(7, handle),
            Some(0x7f00_dead_beef),
            "its events' element"
        );
        assert_eq!(ctl.user_handle(8, handle), None, "another client's");
        msg::send_request(a.as_fd(), 2, &Request::DestroyCq { cq: handle }, &[]).unwrap();
        ctl.serve(&mut s, b.as_fd(), pidfd.as_fd(), None).unwrap();
        assert_eq!(msg::recv_reply(a.as_fd()).unwrap(), (2, Reply::Done));
        assert_eq!(s.queues(), 0);
        assert_eq!(ctl.user_handle(7, handle), None, "gone");
        rustix::net::send(a.as_fd(), b"\x01\x01", rustix::net::SendFlags::empty()).unwrap();
        assert!(
            ctl.serve(&mut s, b.as_fd(), pidfd.as_fd(), None).is_err(),
            "a bad message"
        );
        ctl.close(s);
        assert_eq!(ctl.sessions(), 0);
    }

    #[test]
    fn budgets_from_the_limits() {
        let k = |fds, maps| Kept { fds, maps };
        // A quarter of each ...
        assert_eq!(Budget::from_limits(524_288, 262_144), k(131_072, 65_536));
        assert_eq!(Budget::from_limits(20_000, 65_530), k(5_000, 16_382));
        // ... at least the floor ...
        assert_eq!(Budget::from_limits(1024, 65_530), k(1024, 16_382));
        assert_eq!(Budget::from_limits(0, 0), Budget::FLOOR);
        // ... and no limit stays a number.
        assert_eq!(Budget::from_limits(u64::MAX, u64::MAX), k(u32::MAX, u32::MAX));
        let b = k(2, 3);
        assert!(k(1, 1).fits(k(1, 2), b));
        assert!(!k(1, 1).fits(k(2, 0), b));
        assert!(!k(0, 3).fits(k(0, 1), b));
        assert!(k(2, 3).fits(Kept::default(), b), "nothing more always fits");
        assert!(!k(u32::MAX, 0).fits(k(1, 0), Budget::from_limits(u64::MAX, 0)));
    }

    #[test]
    fn a_session_keeps_within_its_budget() {
        use crate::ctl::msg::CreateCq;
        use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
        let (a, b) = socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap();
        let me = rustix::process::getpid();
        let pidfd = rustix::process::pidfd_open(me, rustix::process::PidfdFlags::empty()).unwrap();
        let mut ctl = Control::new(1, Kept { fds: 1, maps: 2 });
        let mut s = ctl.open(7, me.as_raw_nonzero().get(), own_mem()).unwrap();
        let mut id = 0;
        // A CQ of 8, with a doorbell or not: its handle, or the errno.
        let mut cq = |ctl: &mut Control, s: &mut Session, doorbell: bool| {
            let (_q, fd) = Slots::create(8, 64).unwrap();
            let bell = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).unwrap();
            let c = CreateCq {
                user_handle: id as u64,
                cqe: 8,
                queue: Queue {
                    depth: 8,
                    slot_size: 64,
                },
                doorbell,
                channel: false,
            };
            let fds = [fd.as_fd(), bell.as_fd()];
            id += 1;
            msg::send_request(a.as_fd(), id, &Request::CreateCq(c), &fds[..1 + doorbell as usize]).unwrap();
            ctl.serve(s, b.as_fd(), pidfd.as_fd(), None).unwrap();
            match msg::recv_reply(a.as_fd()).unwrap().1 {
                Reply::Cq { handle, .. } => Ok(handle),
                Reply::Err(e) => Err(e),
                r => panic!("{r:?}"),
            }
        };
        let first = cq(&mut ctl, &mut s, true).unwrap();
        assert_eq!(s.kept(), Kept { fds: 1, maps: 1 });
        assert_eq!(cq(&mut ctl, &mut s, true), Err(EINVAL), "a descriptor too many");
        assert_eq!(s.kept(), Kept { fds: 1, maps: 1 }, "nothing kept of the refused");
        let second = cq(&mut ctl, &mut s, false).unwrap();
        assert_eq!(second, first + 1, "the refused CQ took no handle");
        assert_eq!(cq(&mut ctl, &mut s, false), Err(EINVAL), "a mapping too many");
        assert_eq!((s.kept(), s.queues()), (Kept { fds: 1, maps: 2 }, 2));
        // A destroy gives its part back.
        msg::send_request(a.as_fd(), 99, &Request::DestroyCq { cq: first }, &[]).unwrap();
        ctl.serve(&mut s, b.as_fd(), pidfd.as_fd(), None).unwrap();
        assert_eq!(msg::recv_reply(a.as_fd()).unwrap(), (99, Reply::Done));
        assert_eq!(s.kept(), Kept { fds: 0, maps: 1 });
        assert!(cq(&mut ctl, &mut s, true).is_ok(), "room again");
        assert_eq!(s.kept(), Kept { fds: 1, maps: 2 });
        ctl.close(s);
        // A new session starts with nothing kept.
        let s = ctl.open(8, 0, own_mem()).unwrap();
        assert_eq!(s.kept(), Kept::default());
        ctl.close(s);
    }

    #[test]
    fn map_coverage() {
        let maps = "1000-3000 rw-p 00000000 00:00 0\n\
                    3000-4000 r--p 00000000 00:00 0\n\
                    6000-7000 rw-p 00000000 00:00 0 [heap]\n";
        assert_eq!(covered(maps, 0x1000, 0x3000, true), Ok(()));
        assert_eq!(covered(maps, 0x2000, 0x4000, false), Ok(()));
        assert_eq!(covered(maps, 0x2000, 0x4000, true), Err(EFAULT), "read-only part");
        assert_eq!(covered(maps, 0x3000, 0x6800, false), Err(EFAULT), "a hole");
        assert_eq!(covered(maps, 0x6000, 0x8000, false), Err(EFAULT), "past the end");
        assert_eq!(covered(maps, 0x0, 0x1000, false), Err(EFAULT), "before the first");
        assert_eq!(covered("garbage\n\n1-", 0x1000, 0x2000, false), Err(EFAULT));
    }

    #[test]
    fn our_own_memory_is_mapped() {
        let pidfd =
            rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::empty()).unwrap();
        let pid = std::process::id() as i32;
        let v = vec![1u8; 3 * PAGE as usize];
        let a = v.as_ptr() as u64;
        assert_eq!(client_mapped(pid, pidfd.as_fd(), a, v.len() as u64, true), Ok(()));
        assert_eq!(client_mapped(pid, pidfd.as_fd(), PAGE, PAGE, false), Err(EFAULT));
        assert_eq!(client_mapped(pid, pidfd.as_fd(), u64::MAX - 10, 5, false), Err(EINVAL));
        assert_eq!(
            client_mapped(0, pidfd.as_fd(), PAGE, PAGE, false),
            Ok(()),
            "no pid: placeholder"
        );
    }
}
