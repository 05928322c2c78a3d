//! A context: its endpoint and thread (epoll: connections, links, peers'
//! deaths, the wire's sockets), and the same-machine transport over the
//! shared-memory links (ring framing, backlog, retransmission after a NAK),
//! which calls the engine (`swrdma_rc`) for what each request and response
//! means.  The tables it works on are `Objects` (objects.rs).

use crate::ipc;
pub use crate::mem::{gather, gather_safe};
use crate::mem::{Atomic, ProcessMemory};
pub use crate::sys::{lock, now_ns};
use ibverbs_abi::*;
use rustix::event::epoll;
use rustix::event::Timespec;
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::raw::c_int;
use std::path::PathBuf;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use swrdma_rc::completer;
use swrdma_rc::fault::Fault;
use swrdma_rc::op::Op;
use swrdma_rc::qpstate::{self, Intake};
use swrdma_rc::recv::GidKind;
use swrdma_rc::responder::Target;
use swrdma_ring::*;

pub use crate::links::{InLink, OutLink};
pub use crate::objects::*;
pub use swrdma_rc::keys::{Keys, MrEnt, WindowBind};

/// The status of a K_ACK that is a NAK asking for a retransmission (no
/// completion): RNR (the responder had no receive WQE; `imm` carries its
/// `min_rnr_timer`) ...
pub const NAK_RNR: u32 = 0x1_0000;
/// ... and "not ready" (the responder QP is not in RTR yet: the wire would
/// drop the packet and the requester retry after its transport timeout).
pub const NAK_NOT_READY: u32 = 0x1_0001;

/// How long a requester whose requests go unanswered waits before
/// RETRY_EXC_ERR (see `swrdma_rc::timers::give_up_ns`).
pub fn give_up_ns(attr: &ibv_qp_attr) -> u64 {
    swrdma_rc::timers::give_up_ns(attr.timeout, attr.retry_cnt)
}

/// Fragment of a message starting at byte `off` (SEND/WRITE: a chunk of at
/// most `MAX_CHUNK` bytes, F_FIRST/F_LAST and the message's last-fragment
/// flags set as it stands; other requests: the one header) and its payload
/// length.  `hdr.flags` are the flags of the whole message.
pub fn frag(hdr: &Msg, len: u64, off: u64) -> (Msg, usize) {
    let mut h = *hdr;
    if hdr.kind != K_SEND && hdr.kind != K_WRITE {
        h.flags = F_FIRST | F_LAST | (hdr.flags & (F_EXT | F_TRANSPORT));
        return (h, 0);
    }
    let tail = F_SOLICITED | F_IMM | F_INV;
    let plen = (len - off).min(MAX_CHUNK as u64) as usize;
    h.off = off;
    h.flags = hdr.flags & !tail;
    if off == 0 {
        h.flags |= F_FIRST;
    }
    if off + plen as u64 >= len {
        h.flags |= F_LAST | (hdr.flags & tail);
    }
    (h, plen)
}

/// The first packet of request `m` (cut at the requester's path MTU, which
/// the request carries in `status`) fits the path MTU of our QP.
fn fits_path_mtu(st: &QpSt, m: &Msg) -> bool {
    swrdma_rc::responder::first_packet_fits(m.total, m.status, swrdma_rc::responder::pmtu_bytes(st.attr.path_mtu))
}

pub enum RecvErr {
    Rnr,
    /// The receive completed in error (its status went to `ack`).
    Failed,
}

// ---------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------

/// How many QPNs/SRQNs a context takes from the user's counter file at a
/// time (see [`Ctx::alloc_id`]).
pub const ID_BLOCK: u32 = 8;

/// The counter file of a context's process and the numbers taken from it
/// that the context has not handed out yet (`next..end`).
struct IdBlock {
    pid: u32,
    file: std::fs::File,
    next: u32,
    end: u32,
}

impl IdBlock {
    /// This process's use of the counter `file`, no block taken yet.
    fn new(file: std::fs::File) -> IdBlock {
        IdBlock {
            pid: std::process::id(),
            file,
            next: 0,
            end: 0,
        }
    }
}

pub struct Ctx {
    /// The tables of QPs, SRQs, CQs' arming, keys (objects.rs): `Ctx`
    /// derefs to them.
    objects: Objects,
    id: u32,
    dir: PathBuf,
    guid: u64,
    /// A wire device's interface, as read when the context was opened.
    wire: Option<crate::device::WireCfg>,
    #[allow(dead_code)] // the `ibv_context` this is the device state of (for debuggers)
    ibctx: usize,
    links: crate::linklist::LinkList,
    /// Accepted connections whose hello has not come yet, with their
    /// deadlines (in the epoll set, tagged `TAG_HELLO | fd`).
    hellos: Mutex<Vec<(OwnedFd, u64)>>,
    /// A pidfd of each link's peer process (in the epoll set, tagged
    /// `TAG_PID | fd`): readable when the peer died, even if a child it
    /// forked keeps the link's socket open.
    pidfds: Mutex<Vec<(OwnedFd, Arc<Link>)>>,
    out: Mutex<HashMap<u32, Arc<Link>>>,
    qpn_cache: Mutex<HashMap<u32, u32>>,
    /// The id counter file, open (with the process that opened it), and
    /// the numbers taken from it not handed out yet (see `alloc_id`).
    ids: Mutex<Option<IdBlock>>,
    /// The multicast attachments of this context's QPs: (QPN, MGID, LID),
    /// as the kernel's uverbs lists them per QP.
    groups: Mutex<Vec<(u32, [u8; 16], u16)>>,
    /// The context's eventfd: kicks its thread (peers get a copy).
    efd: OwnedFd,
    /// The listening socket `c<id>`.
    lfd: OwnedFd,
    /// The thread's epoll set: `lfd`, `efd` and every link's socket.
    epfd: OwnedFd,
    /// The application's polls: +1 for a poll that found completions,
    /// +`EMPTY_POLL` for one that found none (or a wait for ring room in
    /// `post_send`, which drives progress as a poll does).
    last_poll: AtomicU64,
    /// `last_poll` when a CQ was last armed (see `app_drives`).
    arm_mark: AtomicU64,
    /// The thread leaves progress to the polling application (and sleeps
    /// up to `BACKOFF_MS` at a time).
    thread_backs_off: AtomicBool,
    /// Some QP has requests to send again (see `QpSt::resend`).
    pending: AtomicBool,
    stop: AtomicBool,
    next_key: AtomicU32,
    next_obj: AtomicU32,
    /// Peer contexts' directories, by context id (direct.rs).
    peers: Mutex<HashMap<u32, Arc<crate::direct::Peer>>>,
    /// A wire device's RoCE v2 transport (swrdma_wired::wire::engine).
    wire_rt: std::sync::OnceLock<Arc<crate::wire::engine::Wire>>,
    /// The QPs with RDMA requests kept for one system call (send/defer.rs).
    pub(crate) defers: crate::deferq::DeferTable,
}

impl std::ops::Deref for Ctx {
    type Target = Objects;
    fn deref(&self) -> &Objects {
        &self.objects
    }
}

// (`Ctx` is `Send` and `Sync` by its fields: descriptors are `OwnedFd`s,
// shared state is behind locks and atomics, links are `Send + Sync`.)

const SPIN_CHECK: u32 = 256;

/// While the application polls, its context's thread looks at most this
/// often (ms) whether it still does.
const BACKOFF_MS: i64 = 1;

/// What an empty poll adds to `Ctx::last_poll` (a poll with completions
/// adds 1): the count of empty polls is `last_poll / EMPTY_POLL`.
const EMPTY_POLL: u64 = 1 << 32;

/// Empty polls after the last arm of a CQ from which on the application is
/// taken to busy-poll (see `Ctx::app_drives`).
const POLLING_AFTER_ARM: u64 = 64;

/// The context's thread, when idle, gives back the unused ring pages of
/// its links at most this often (see `Ctx::trim_links`).
const TRIM_EVERY_NS: u64 = 1_000_000_000;

/// At most this many responses wait for room in a link's response ring
/// (about 40 MiB); a peer that lets more pile up loses the link.
const MAX_BACKLOG: usize = 256 * 1024;

/// epoll tags of the listening socket and the eventfd (links are tagged
/// with their socket's descriptor number).
const TAG_LISTEN: u64 = u64::MAX;
const TAG_EFD: u64 = u64::MAX - 1;
/// A socket of the wire transport.
const TAG_WIRE: u64 = u64::MAX - 2;
/// Tags of connections waiting for their hello: this bit and the socket.
const TAG_HELLO: u64 = 1 << 32;
/// Tags of the peers' pidfds: this bit and the pidfd.
const TAG_PID: u64 = 1 << 33;
/// At most this many connections wait for their hello at once (the oldest
/// is dropped to make room): a peer that opens connections and says
/// nothing costs a bounded number of descriptors.
const MAX_HELLOS: usize = 64;
/// At most this many links from peers (incoming) per context: a further
/// peer's connection is closed before its hello is taken (its connect
/// fails at once: RC work to this context completes with RETRY_EXC_ERR).
/// With the process-wide bound (`MAX_LINKS_PER_PROCESS` links of
/// `LINK_BYTES`) this bounds what peers can make a context map.
pub const MAX_LINKS_IN: usize = 256;

/// A context that never got to `close` (its opening failed after the
/// socket was made) leaves no socket file behind.
impl Drop for Ctx {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(ipc::ctx_sock_path(&self.dir, self.id));
        ipc::unpublish_fds(&self.dir, self.id);
    }
}

impl Ctx {
    /// Opens context `id`'s endpoint in `dir` (its listening socket,
    /// eventfd, epoll set and async-event pipe).  Returns the context and
    /// the read end of the async-event pipe, for `ibv_context.async_fd`.
    pub fn open(
        id: u32,
        dir: PathBuf,
        gids: Vec<[u8; 16]>,
        guid: u64,
        wire: Option<crate::device::WireCfg>,
        ibctx: usize,
    ) -> Result<(Arc<Ctx>, OwnedFd), c_int> {
        use rustix::event::{eventfd, EventfdFlags};
        let efd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).map_err(|_| libc::EMFILE)?;
        let epfd = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|_| libc::EMFILE)?;
        let (async_r, async_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|_| libc::EMFILE)?;
        // Last: its socket file must not outlive a failure (Drop removes it).
        let lfd = ipc::listen(&dir, id)?;
        // Events are dropped rather than block the writer on a full pipe.
        let _ = rustix::io::ioctl_fionbio(&async_w, true);
        for (fd, tag) in [(&lfd, TAG_LISTEN), (&efd, TAG_EFD)] {
            let _ = epoll::add(&epfd, fd, epoll::EventData::new_u64(tag), epoll::EventFlags::IN);
        }
        let access = crate::locks::Access::hold();
        let c = Arc::new(Ctx {
            objects: Objects {
                gids,
                qps: RwLock::new(NumMap::default()),
                qps_number: AtomicU64::new(0),
                srqs: RwLock::new(NumMap::default()),
                mrs: RwLock::new(Keys::default()),
                async_w,
                armed_cqs: Arc::new(AtomicU32::new(0)),
                reg: Default::default(),
                // (No access page, no direct accesses.)
                dir_tbl: if crate::direct::enabled() && access.page().is_some() {
                    crate::direct::Dir::new(id)
                } else {
                    None
                },
                access,
            },
            id,
            dir,
            guid,
            wire,
            ibctx,
            links: crate::linklist::LinkList::new(),
            hellos: Mutex::new(Vec::new()),
            pidfds: Mutex::new(Vec::new()),
            out: Mutex::new(HashMap::new()),
            qpn_cache: Mutex::new(HashMap::new()),
            ids: Mutex::new(None),
            groups: Mutex::new(Vec::new()),
            efd,
            lfd,
            epfd,
            last_poll: AtomicU64::new(0),
            arm_mark: AtomicU64::new(0),
            thread_backs_off: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            next_key: AtomicU32::new(1),
            next_obj: AtomicU32::new(1),
            peers: Mutex::new(HashMap::new()),
            wire_rt: std::sync::OnceLock::new(),
            defers: Default::default(),
        });
        if let Some((d, a)) = c.direct_fds() {
            ipc::publish_fds(&c.dir, id, [c.efd.as_fd(), d, a]);
        }
        Ok((c, async_r))
    }

    /// The RoCE v2 transport of a wire device's context.
    pub fn wire_rt(&self) -> Option<&Arc<crate::wire::engine::Wire>> {
        self.wire_rt.get()
    }

    /// Makes this context's QPs speak RoCE v2 through `w` (once, right
    /// after `open`): its sockets join the thread's epoll set.
    pub fn set_wire(&self, w: Arc<crate::wire::engine::Wire>) {
        for fd in w.sock.fds() {
            let _ = epoll::add(
                &self.epfd,
                fd,
                epoll::EventData::new_u64(TAG_WIRE),
                epoll::EventFlags::IN,
            );
        }
        let _ = self.wire_rt.set(w);
    }

    /// Whether the wire sockets are in the thread's epoll set (readable
    /// wakes it) or not.
    fn wire_wakes(&self, on: bool) {
        let Some(w) = self.wire_rt.get() else { return };
        let flags = if on {
            epoll::EventFlags::IN
        } else {
            epoll::EventFlags::empty()
        };
        for fd in w.sock.fds() {
            let _ = epoll::modify(&self.epfd, fd, epoll::EventData::new_u64(TAG_WIRE), flags);
        }
    }

    pub fn guid(&self) -> u64 {
        self.guid
    }

    /// A wire device's interface (`None`: a plain device).
    pub fn wire(&self) -> Option<&crate::device::WireCfg> {
        self.wire.as_ref()
    }

    /// A fresh id for a PD, XRCD or DM (unique in the context).
    pub fn new_obj_id(&self) -> u32 {
        self.next_obj.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh MR/MW key: an index (unique in the context) and an 8-bit tag.
    pub fn new_key(&self) -> u32 {
        let n = self.next_key.fetch_add(1, Ordering::Relaxed);
        (n << 8) | ((n.wrapping_mul(0x9e37_79b9) >> 24) & 0xff)
    }

    /// A fresh QPN/SRQN, unique for the user.  The counter file stays
    /// open with the context (one open, check and close less per QP); the
    /// lock held meanwhile keeps the context's threads from sharing its
    /// `flock`, and a forked child opens its own (and takes no number of
    /// its parent's block).  Numbers are taken from the file
    /// [`ID_BLOCK`] at a time (its lock, read and write once per block
    /// rather than per QP: about 1 us each on a tmpfs); those a context
    /// leaves unused are never anyone's.
    pub fn alloc_id(&self) -> Result<u32, c_int> {
        let pid = std::process::id();
        let mut g = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if !matches!(&*g, Some(b) if b.pid == pid) {
            // (The context opened it with itself: only a forked child
            // opens its own, and fails, rather than take a number that may
            // be someone else's, where no descriptor is left.)
            let file = ipc::open_ids(&self.dir).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
            *g = Some(IdBlock::new(file));
        }
        let b = g.as_mut().expect("set above");
        if b.next == b.end {
            b.next = ipc::alloc_ids_in(&b.file, ID_BLOCK);
            b.end = b.next + ID_BLOCK;
        }
        b.next += 1;
        Ok(b.next - 1)
    }

    /// Keeps the id counter `file` (of `ipc::open_ids`, opened with the
    /// context) for `alloc_id`.
    pub fn keep_ids(&self, file: std::fs::File) {
        *self.ids.lock().unwrap_or_else(|p| p.into_inner()) = Some(IdBlock::new(file));
    }

    /// Changes at every poll of the application (`note_poll`).
    pub fn poll_epoch(&self) -> u64 {
        self.last_poll.load(Ordering::Relaxed)
    }

    /// The application is polling its CQs (the context's thread backs off,
    /// looking every `BACKOFF_MS` whether it still does).
    pub fn app_polls(&self) -> bool {
        self.thread_backs_off.load(Ordering::Relaxed)
    }

    /// The application polled (or otherwise drives progress itself): the
    /// context's thread stays in the background.  `empty`: the poll found
    /// nothing (see `app_drives`).
    #[inline]
    pub fn note_poll(&self, empty: bool) {
        // (A load and a store, not a locked add: this runs at every poll.
        // Two threads polling at once may count their polls as one, or
        // even step the count back by the other's: `app_drives` reads a
        // count below its mark as no polling since the arm.)
        let v = self.last_poll.load(Ordering::Relaxed);
        self.last_poll
            .store(v.wrapping_add(if empty { EMPTY_POLL } else { 1 }), Ordering::Relaxed);
    }

    /// The application armed a CQ (it may be about to wait for an event
    /// rather than poll): the context's thread takes over progress at once,
    /// until the application shows it keeps polling (`app_drives`).
    pub fn note_arm(&self) {
        self.arm_mark
            .store(self.last_poll.load(Ordering::Relaxed), Ordering::SeqCst);
        // (`Cq::arm` counted it in `armed_cqs` just before: with the
        // thread's store of `thread_backs_off` and load of `armed_cqs` and
        // `arm_mark`, one of the two sees the other.)
        fence(Ordering::SeqCst);
        if self.thread_backs_off.load(Ordering::SeqCst) {
            self.kick();
        }
    }

    /// Whether the application drives progress itself (it polls: every
    /// poll makes progress on every link of the context, so completions
    /// reach armed CQs too, and their events are written, by the polling
    /// thread): no CQ is armed, or the application went on polling empty
    /// CQs `POLLING_AFTER_ARM` times since its last arm.  An application
    /// that arms a CQ and then waits for the event polls a few times at
    /// most in between (to drain the CQ: `ibv_rc_pingpong -e`, qperf); one
    /// that busy-polls while a CQ stays armed — UCX arms CQs of its UD
    /// transport (`uct_ib_iface_arm_cq`, for its async thread) and its main
    /// thread polls all its CQs — would otherwise have the context's thread
    /// spin and take wake-ups on the application's own CPU (`tag_lat` over
    /// `rc_verbs` on swr0: p50 62-75 us, 1.1-1.5 us without it).
    fn app_drives(&self) -> bool {
        if self.armed_cqs.load(Ordering::SeqCst) == 0 {
            return true;
        }
        let since = self.last_poll.load(Ordering::Relaxed) / EMPTY_POLL;
        let mark = self.arm_mark.load(Ordering::SeqCst) / EMPTY_POLL;
        since.saturating_sub(mark) >= POLLING_AFTER_ARM
    }

    /// A new QP: findable by its QPN, here and (the symlink) by peers.
    pub fn add_qp(&self, qp: Arc<Qp>) {
        let qpn = qp.qpn;
        self.change_qps(|t| t.insert(qpn, qp));
        ipc::publish(&self.dir, qpn, self.id);
    }

    /// Is `g` a multicast GID (the kernel's `rdma_is_multicast_addr`): an
    /// IPv6 multicast address, or an IPv4-mapped one of 224.0.0.0/4 (the
    /// MGID rdma_cm gives an IPv4 group on RoCE v2).
    pub fn is_multicast_gid(g: &[u8; 16]) -> bool {
        let v4mapped = g[..10].iter().all(|b| *b == 0) && g[10] == 0xff && g[11] == 0xff;
        g[0] == 0xff || (v4mapped && g[12] & 0xf0 == 0xe0)
    }

    /// Attaches QP `qpn` to multicast group `mgid` (another attachment of
    /// the same group and LID is no change, as the kernel's list of a QP's
    /// attachments).
    /// On a wire device the context joins the IP group (`wired/src/wire/mcast.rs`;
    /// the kernel's errno if it cannot).
    pub fn attach_mcast(&self, qpn: u32, mgid: [u8; 16], lid: u16) -> Result<(), i32> {
        let mut g = lock(&self.groups);
        if !g.contains(&(qpn, mgid, lid)) {
            match self.wire_rt.get() {
                Some(w) => w.sock.join_group(&mgid, qpn)?,
                None => ipc::join_group(&self.dir, &mgid, qpn, self.id),
            }
            g.push((qpn, mgid, lid));
        }
        Ok(())
    }

    /// QP `qpn` is no longer a member of `mgid`.
    fn leave_group(&self, mgid: &[u8; 16], qpn: u32) {
        match self.wire_rt.get() {
            Some(w) => w.sock.leave_group(mgid, qpn),
            None => ipc::leave_group(&self.dir, mgid, qpn),
        }
    }

    /// Detaches an attachment: false when there is none (the kernel's
    /// EINVAL).  The group's file goes with the QP's last LID for it.
    pub fn detach_mcast(&self, qpn: u32, mgid: [u8; 16], lid: u16) -> bool {
        let mut g = lock(&self.groups);
        let Some(i) = g.iter().position(|e| *e == (qpn, mgid, lid)) else {
            return false;
        };
        g.remove(i);
        if !g.iter().any(|e| e.0 == qpn && e.1 == mgid) {
            self.leave_group(&mgid, qpn);
        }
        true
    }

    /// Every attachment of QP `qpn` (or, with None, of every QP) ends.
    fn leave_groups(&self, qpn: Option<u32>) {
        let mut g = lock(&self.groups);
        g.retain(|(q, mgid, _)| {
            let drop = qpn.is_none_or(|n| n == *q);
            if drop {
                self.leave_group(mgid, *q);
            }
            !drop
        });
    }

    /// The QPNs of the user's QPs attached to `mgid`: a datagram to the
    /// group goes to each.
    pub fn group_members(&self, mgid: &[u8; 16]) -> Vec<u32> {
        ipc::group_members(&self.dir, mgid)
    }

    /// A member whose QP is gone (its process ended without detaching):
    /// its file goes.
    pub fn forget_member(&self, mgid: &[u8; 16], qpn: u32) {
        if ipc::resolve(&self.dir, qpn).is_none() {
            ipc::leave_group(&self.dir, mgid, qpn);
        }
    }

    /// A QP is destroyed: no longer found, here or by peers.
    pub fn remove_qp(&self, qpn: u32) {
        self.leave_groups(Some(qpn));
        if let Some(d) = &self.dir_tbl {
            d.publish_qp(qpn, None);
        }
        self.change_qps(|t| t.remove(&qpn));
        ipc::unpublish(&self.dir, qpn);
    }

    pub fn add_srq(&self, srq: Arc<Srq>) {
        self.srqs.write().unwrap().insert(srq.num, srq);
    }

    pub fn remove_srq(&self, num: u32) {
        self.srqs.write().unwrap().remove(&num);
    }

    /// Registers key `key` (an MR) with what it covers.
    pub fn insert_mr(&self, key: u32, ent: MrEnt) {
        // (What backs the memory is looked up before the table is taken:
        // /proc and, for a shared file, the process's descriptors.)
        let obj = self.backing(&ent);
        let mut g = self.mrs.write().unwrap();
        g.insert(key, ent);
        self.publish_mr(key, &ent, obj);
    }

    /// The shared object behind MR entry `e` when peers may reach it
    /// directly (shared.rs).
    fn backing(&self, e: &MrEnt) -> Option<crate::shared::Backing> {
        self.dir_tbl.as_ref().filter(|_| e.mw == 0)?;
        crate::direct::Dir::backing(e.access, e.va, e.len)
    }

    /// A memory region (not a window) peers may reach directly.
    fn publish_mr(&self, key: u32, e: &MrEnt, obj: Option<crate::shared::Backing>) {
        if let Some(d) = &self.dir_tbl {
            if e.mw == 0 {
                d.publish_mr(key, (e.pd, e.access), (e.addr, e.len, e.va), obj);
            }
        }
    }

    /// Peers can no longer reach MR `key` directly once this returns (it
    /// may wait for one in a copy: never with the MR table held).
    fn retract_mr(&self, key: u32) {
        if let Some(d) = &self.dir_tbl {
            d.retract_mr(key);
        }
    }

    pub fn remove_mr(&self, key: u32) {
        self.retract_mr(key);
        self.mrs.write().unwrap().remove(key);
    }

    /// Changes MR `key` in place (rereg); false when there is none.
    pub fn update_mr(&self, key: u32, f: impl FnOnce(&mut MrEnt)) -> bool {
        self.retract_mr(key);
        let mut g = self.mrs.write().unwrap();
        let Some(e) = g.update(key, f) else { return false };
        self.publish_mr(key, &e, self.backing(&e));
        true
    }

    /// What peers need for direct accesses to us: our directory and our
    /// process's access page.
    fn direct_fds(&self) -> Option<(BorrowedFd<'_>, BorrowedFd<'_>)> {
        Some((self.dir_tbl.as_ref()?.fd(), self.access.page()?.fd()))
    }

    /// Peer context `id`'s directory, if it gave one.
    pub fn peer_dir(&self, id: u32) -> Option<Arc<crate::direct::Peer>> {
        lock(&self.peers).get(&id).cloned()
    }

    /// Kicks the context's thread out of its sleep.
    fn kick(&self) {
        let _ = rustix::io::write(&self.efd, &1u64.to_ne_bytes());
    }

    /// Tells the context's thread to end (the caller joins it).
    pub fn stop_thread(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.kick();
    }

    /// The context goes away (its thread has ended): its socket path and
    /// QPN symlinks disappear, QPs forget their links and every link is
    /// dropped (closing its socket, which tells the peers).  The
    /// descriptors of the context close when the last `Arc` is dropped.
    pub fn close(&self) {
        if let Some(w) = self.wire_rt.get() {
            // Datagrams the kernel queued on our port-4791 socket for other
            // processes' QPs die with it: hand them on first.
            w.flush::<Objects>(self);
        }
        let _ = std::fs::remove_file(ipc::ctx_sock_path(&self.dir, self.id));
        ipc::unpublish_fds(&self.dir, self.id);
        self.leave_groups(None);
        for qpn in self.qps.read().unwrap().keys() {
            ipc::unpublish(&self.dir, *qpn);
        }
        self.change_qps(|t| {
            for qp in t.drain() {
                lock(&qp.1.st).link = None;
            }
        });
        Objects::forget_last_qp();
        self.links.change(|_| Vec::new());
        crate::linklist::LinkList::forget();
        lock(&self.out).clear();
        lock(&self.hellos).clear();
        lock(&self.pidfds).clear();
    }

    pub fn links(&self) -> Arc<Vec<Arc<Link>>> {
        self.links.get()
    }

    /// A new link, with a pidfd of its peer's process (watched: its death
    /// is the link's, as a hangup is).
    pub fn add_link(&self, l: Arc<Link>, pidfd: OwnedFd, direct: Option<ipc::DirectFds>) {
        if let (Some(_), Some((dir, access))) = (&self.dir_tbl, direct) {
            if let std::collections::hash_map::Entry::Vacant(v) = lock(&self.peers).entry(l.peer) {
                let pid = rustix::net::sockopt::socket_peercred(l.sock()).map_or(0, |c| c.pid.as_raw_nonzero().get());
                let who = (pid, pidfd.try_clone().ok());
                if let Some(d) = crate::direct::Peer::new(dir.as_fd(), access, who, l.peer) {
                    v.insert(Arc::new(d));
                }
            }
        }
        let tag = TAG_PID | pidfd.as_raw_fd() as u64;
        if epoll::add(
            &self.epfd,
            &pidfd,
            epoll::EventData::new_u64(tag),
            epoll::EventFlags::IN,
        )
        .is_ok()
        {
            lock(&self.pidfds).push((pidfd, l.clone()));
        }
        self.links.change(|v| {
            let mut v = v.to_vec();
            v.push(l.clone());
            v
        });
        // The context's thread may be asleep: make it look at the new link.
        l.rx().set_sleeping(true);
        self.kick();
        let _ = epoll::add(
            &self.epfd,
            l.sock(),
            epoll::EventData::new_u64(l.sock().as_raw_fd() as u64),
            epoll::EventFlags::IN | epoll::EventFlags::RDHUP,
        );
    }

    pub fn remove_link(&self, l: &Arc<Link>) {
        self.links
            .change(|v| v.iter().filter(|x| !Arc::ptr_eq(x, l)).cloned().collect());
        let _ = epoll::delete(&self.epfd, l.sock());
        lock(&self.pidfds).retain(|(p, x)| {
            let keep = !Arc::ptr_eq(x, l);
            if !keep {
                let _ = epoll::delete(&self.epfd, p);
            }
            keep
        });
        let mut o = lock(&self.out);
        if let Some(x) = o.get(&l.peer) {
            if Arc::ptr_eq(x, l) {
                o.remove(&l.peer);
            }
        }
        drop(o);
        if !self.links().iter().any(|x| x.peer == l.peer) {
            lock(&self.peers).remove(&l.peer);
        }
    }

    // ----- progress ------------------------------------------------------

    /// The context's thread: makes progress when the application does not
    /// (it polls its CQ), accepts connections and notices dead peers.
    /// `pass`: executes the RDMA requests an application left deferred for
    /// long (send/defer.rs).
    pub fn run_thread(&self, pass: fn(&Ctx)) {
        // Short sleeps must stay short (default timer slack is 50 us).
        // SAFETY: PR_SET_TIMERSLACK takes its value in the second argument and
        // ignores the rest; it only changes this thread's timer slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64, 0u64, 0u64, 0u64) };
        let mut idle_since = 0u64;
        let mut seen_poll = 0u64;
        let mut poll_change = 0u64;
        let mut iter = 0u64;
        let mut last_trim = 0u64;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            iter += 1;
            let now = now_ns();
            let pc = self.last_poll.load(Ordering::Relaxed);
            if pc != seen_poll {
                seen_poll = pc;
                poll_change = now;
            }
            if now.saturating_sub(poll_change) < 200_000 && self.app_drives() {
                // The application polls and drives progress itself: stay off
                // its CPU and the ring locks (no wake-ups that would preempt
                // it), but look again every `BACKOFF_MS`: if it did not poll
                // meanwhile (it may wait on memory, as RDMA-write users do)
                // take over.  Arming a CQ (the application may be about to
                // wait for an event) or a new link wakes us at once.
                self.thread_backs_off.store(true, Ordering::SeqCst);
                // A link added while we were here is flagged "sleeping"
                // (`add_link`, for the idle sleep's sake): its producer would
                // kick us at every message, a wake-up on the application's
                // CPU each time (UCT am_lat over rc_verbs on swr0: 1.1 us,
                // or 15-20 us when the link came while we backed off).
                for l in self.links().iter() {
                    if l.rx().is_sleeping() {
                        l.rx().set_sleeping(false);
                    }
                }
                let before = self.last_poll.load(Ordering::Relaxed);
                if self.app_drives() {
                    // (A wire context's sockets do not wake us meanwhile:
                    // the polling application receives, and a wake-up per
                    // packet would only compete with it for the CPU.)
                    self.wire_wakes(false);
                    self.handle_epoll(BACKOFF_MS);
                    self.wire_wakes(true);
                }
                // (Requests the application left deferred for long: it made
                // no call since, and may be waiting for them: send/defer.rs.)
                pass(self);
                self.thread_backs_off.store(false, Ordering::SeqCst);
                if self.last_poll.load(Ordering::Relaxed) == before {
                    self.progress();
                }
                idle_since = 0;
                continue;
            }
            // (The application stopped polling: nothing is deferred for
            // long here, send/defer.rs.)
            pass(self);
            let armed_before = self.armed_cqs.load(Ordering::Relaxed);
            let n = self.progress();
            if n > 0 {
                if self.armed_cqs.load(Ordering::Relaxed) < armed_before {
                    // This progress triggered an armed CQ: the completion
                    // event is in its channel and the application that
                    // waits for it is runnable, often on this CPU.  Give
                    // it the CPU now rather than spinning on until the
                    // scheduler preempts us (ibv_rc_pingpong -e on swr0,
                    // CPUs 0/1: 62.6-63.7 -> 55.3-56.2 us per round trip).
                    // SAFETY: sched_yield takes no arguments.
                    unsafe { libc::sched_yield() };
                }
                idle_since = 0;
                if iter.is_multiple_of(256) {
                    self.handle_epoll(0);
                }
                continue;
            }
            if idle_since == 0 {
                idle_since = now;
            }
            if now - idle_since >= 50_000 && now.saturating_sub(last_trim) >= TRIM_EVERY_NS {
                last_trim = now;
                self.trim_links();
            }
            // (Requests deferred: no sleep before they execute, above.)
            if now - idle_since < 50_000 || self.defers.waiting() > 0 {
                std::hint::spin_loop();
                if iter.is_multiple_of(256) {
                    self.handle_epoll(0);
                }
                continue;
            }
            let links = self.links();
            for l in links.iter() {
                l.rx().set_sleeping(true);
            }
            // (The rare side of the handshake with the producers' `publish`,
            // swrdma_ring::barrier; then one more look.)
            swrdma_ring::barrier::heavy();
            if !self.any_rx() {
                // (Retransmissions waiting for their timer: look again soon;
                // and where the barrier cannot be had, a kick may never
                // come: a millisecond at most.)
                let soon = self.pending.load(Ordering::Relaxed)
                    || self.wire_rt.get().is_some_and(|w| w.busy())
                    || swrdma_ring::barrier::heavy_failed();
                self.handle_epoll(if soon { 1 } else { 100 });
            }
            for l in self.links().iter() {
                l.rx().set_sleeping(false);
            }
            idle_since = 0;
        }
    }

    /// Gives back the ring pages beyond `RING_KEEP` of every outgoing ring
    /// that is empty now (see `Ring::trim`): a link that carried a burst
    /// costs its working set again once idle.
    fn trim_links(&self) {
        // (and drops mappings of peers' shared objects no longer published)
        let peers: Vec<_> = lock(&self.peers).values().cloned().collect();
        for p in peers {
            p.sweep();
        }
        for l in self.links().iter() {
            let Some(bl) = crate::links::idle_producer(l) else {
                continue;
            };
            if bl.is_empty() {
                // SAFETY: we hold `l.tx_lock`: the ring's only producer.
                unsafe { l.tx().trim() };
            }
        }
    }

    /// Handles what the epoll set reports within `timeout_ms` (0: only what
    /// is ready now).
    fn handle_epoll(&self, timeout_ms: i64) {
        let none = epoll::Event {
            flags: epoll::EventFlags::empty(),
            data: epoll::EventData::new_u64(0),
        };
        let mut evs = [none; 16];
        let t = Timespec {
            tv_sec: timeout_ms / 1000,
            tv_nsec: (timeout_ms % 1000) * 1_000_000,
        };
        let n = epoll::wait(&self.epfd, &mut evs, Some(&t)).unwrap_or(0);
        self.expire_hellos();
        for e in evs.iter().take(n) {
            let (tag, flags) = (e.data.u64(), e.flags);
            if tag == TAG_LISTEN {
                while let Some(fd) = ipc::accept(self.lfd.as_fd()) {
                    if let Some(fd) = fd {
                        self.take_hello(fd, now_ns() + ipc::HELLO_DEADLINE_NS);
                    }
                }
            } else if tag == TAG_WIRE {
                if let Some(w) = self.wire_rt.get() {
                    w.progress::<Objects>(self);
                }
            } else if tag & TAG_HELLO != 0 && tag < TAG_WIRE {
                let fd = (tag & !TAG_HELLO) as RawFd;
                let mut hs = lock(&self.hellos);
                let Some(i) = hs.iter().position(|(s, _)| s.as_raw_fd() == fd) else {
                    continue;
                };
                let (s, deadline) = hs.swap_remove(i);
                drop(hs);
                let _ = epoll::delete(&self.epfd, &s);
                self.take_hello(s, deadline);
            } else if tag & TAG_PID != 0 && tag < TAG_WIRE {
                // A peer process exited: its link is dead, as on a hangup.
                let fd = (tag & !TAG_PID) as RawFd;
                let l = lock(&self.pidfds)
                    .iter()
                    .find(|(p, _)| p.as_raw_fd() == fd && ipc::exited(p.as_fd()))
                    .map(|(_, l)| l.clone());
                if let Some(l) = l {
                    self.drain_final(&l);
                    self.progress();
                    self.link_died(&l);
                }
            } else if tag == TAG_EFD {
                let mut v = [0u8; 8];
                let _ = rustix::io::read(&self.efd, &mut v);
            } else {
                let fd = tag as RawFd;
                let links = self.links();
                let Some(l) = links.iter().find(|l| l.sock().as_raw_fd() == fd) else {
                    continue;
                };
                let mut gone = flags.intersects(epoll::EventFlags::HUP | epoll::EventFlags::RDHUP);
                // (Nothing is sent on a link's socket after the handshake:
                // anything there is read and dropped; end of file is the
                // peer going away.)
                if !ipc::drain(l.sock()) {
                    gone = true;
                }
                if gone {
                    // Take in what the peer wrote before it went away.
                    self.drain_final(l);
                    self.progress();
                    self.link_died(l);
                }
            }
        }
    }

    /// Takes the hello on accepted connection `fd` if it has come (a link),
    /// else keeps the connection until it is readable or `deadline` passes.
    /// Never waits: a peer that connects and says nothing stalls no one.
    fn take_hello(&self, fd: OwnedFd, deadline: u64) {
        // (Refused: the connection is closed before the hello is answered.
        // `Link::new` enforces the process bound in any case.)
        if live_links() >= MAX_LINKS_PER_PROCESS || self.links().iter().filter(|l| !l.outgoing).count() >= MAX_LINKS_IN
        {
            return;
        }
        match ipc::hello(fd, self.id, self.efd.as_fd(), self.direct_fds()) {
            ipc::Handshake::Link(l, pidfd, dir) => self.add_link(Arc::new(l), pidfd, dir),
            ipc::Handshake::Refused => {}
            ipc::Handshake::Later(fd) => {
                if now_ns() >= deadline {
                    return;
                }
                let mut hs = lock(&self.hellos);
                if hs.len() >= MAX_HELLOS {
                    let (old, _) = hs.remove(0);
                    let _ = epoll::delete(&self.epfd, &old);
                }
                let tag = TAG_HELLO | fd.as_raw_fd() as u64;
                if epoll::add(&self.epfd, &fd, epoll::EventData::new_u64(tag), epoll::EventFlags::IN).is_ok() {
                    hs.push((fd, deadline));
                }
            }
        }
    }

    /// Drops the connections whose hello did not come in time.
    fn expire_hellos(&self) {
        let now = now_ns();
        let mut hs = lock(&self.hellos);
        if hs.is_empty() {
            return;
        }
        hs.retain(|(fd, deadline)| {
            let keep = *deadline > now;
            if !keep {
                let _ = epoll::delete(&self.epfd, fd);
            }
            keep
        });
    }

    /// Processes incoming messages on every link (whoever gets there first:
    /// the application in poll_cq or the context's thread), and sends the
    /// responses that did not fit into their rings before.
    ///
    /// Each ring has exactly one producer and one consumer at any time: the
    /// consumer holds the link's `rx_lock` (taken with `try_lock`: whoever
    /// has it drains), the producer its `tx_lock`.  Nothing waits for ring
    /// space while holding a QP's lock: requests wait in `post_send` (which
    /// holds none, and keeps making progress meanwhile), responses go to the
    /// link's backlog.
    pub fn progress(&self) -> usize {
        let mut n = self.links.walk(|links| {
            let mut n = 0;
            for l in links {
                if l.backlogged.load(Ordering::Acquire) {
                    if let Some(il) = InLink::new(l) {
                        self.flush_backlog(il);
                    }
                }
                if l.rx().has_data() {
                    n += self.drain(l, 512);
                }
            }
            n
        });
        if self.pending.load(Ordering::Relaxed) {
            self.retry_pending();
        }
        if let Some(w) = self.wire_rt.get() {
            n += w.progress::<Objects>(self);
        }
        n
    }

    /// Incoming messages wait (the context's thread must not sleep; a
    /// backlog needs no check: its consumer kicks us when it made room).
    pub fn any_rx(&self) -> bool {
        self.links().iter().any(|l| l.rx().has_data())
    }

    fn drain(&self, l: &Arc<Link>, max: usize) -> usize {
        let Some(_g) = l.rx_lock.try_lock() else { return 0 };
        self.drain_locked(l, max)
    }

    /// The peer went away: takes in everything it wrote before, waiting for
    /// a thread that is draining the link now (else its last ACKs would be
    /// overtaken by `link_died`'s RETRY_EXC_ERR).
    pub fn drain_final(&self, l: &Arc<Link>) {
        let _g = l.rx_lock.lock();
        while self.drain_locked(l, 512) > 0 {}
    }

    fn drain_locked(&self, l: &Arc<Link>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            // SAFETY: we hold `l.rx_lock` (the callers' contract): the only
            // consumer of this ring.
            match unsafe { l.rx().peek() } {
                Err(Corrupt) => {
                    l.dead.store(true, Ordering::SeqCst);
                    break;
                }
                Ok(None) => break,
                Ok(Some((rec, nt, len))) => {
                    // SAFETY: `peek` returned a record of `len` bytes inside
                    // the mapped ring, 64-aligned.
                    let Ok((m, payload)) = (unsafe { read_record(rec, len) }) else {
                        l.dead.store(true, Ordering::SeqCst);
                        break;
                    };
                    // (`read_record` checked that `m.plen` bytes at
                    // `payload` lie inside the record; `handle` reads no
                    // more.)
                    self.handle(l, &m, payload);
                    l.rx().consume(nt);
                    n += 1;
                }
            }
        }
        // The producer may be waiting for room (responses in its backlog).
        if n > 0 && l.rx().room_made() {
            l.wake_peer();
        }
        n
    }

    fn handle(&self, l: &Arc<Link>, m: &Msg, payload: *const u8) {
        match m.kind {
            K_SEND | K_WRITE | K_READ | K_CAS | K_FAA | K_AWRITE => {
                // (Requests only travel on the initiator's ring.)
                if let Some(il) = InLink::new(l) {
                    self.responder(il, m, payload)
                }
            }
            K_ACK | K_READ_RESP | K_ATOMIC_RESP => {
                if !l.outgoing {
                    return;
                }
                self.completer(m, payload)
            }
            _ => {}
        }
    }

    // ----- sending on a link ----------------------------------------------

    /// Writes one message (header + payload produced by `fill`) if it fits
    /// now.  The caller holds `l.tx_lock`.  (`fill` false: see `put_at`.)
    fn try_put(&self, l: &Link, m: &Msg, plen: usize, fill: &mut dyn FnMut(*mut u8) -> bool) -> bool {
        let f = Form::of(m, plen);
        // SAFETY: the caller holds `l.tx_lock`: we are the ring's only
        // producer; the length is 64-aligned and at most MSG_HDR + MAX_CHUNK.
        let Some((p, nh)) = (unsafe { l.tx().try_reserve(f.record_len(plen)) }) else {
            return false;
        };
        // SAFETY: `p` is the space just reserved for the record.
        unsafe { put_at(l, (p, nh, f), m, plen, fill) };
        true
    }

    /// Writes one request (header + payload produced by `fill`), waiting for
    /// room: the caller (post_send) holds `l.tx_lock` and no QP lock, and
    /// makes progress on every link meanwhile.  `fill` false: it could not
    /// read the payload; the record went as the message's abort (`put_at`).
    pub fn send_msg(&self, l: &Link, m: &Msg, plen: usize, fill: &mut dyn FnMut(*mut u8) -> bool) -> Sent {
        let f = Form::of(m, plen);
        let need = f.record_len(plen);
        let mut spins = 0u32;
        let mut wait = || {
            if l.dead.load(Ordering::Relaxed) {
                return false;
            }
            spins += 1;
            if spins.is_multiple_of(SPIN_CHECK) {
                // The application drives progress itself meanwhile, as in
                // poll_cq: the context's thread (on the same CPU, often)
                // must keep napping, not spin beside it.
                self.note_poll(true);
                self.progress();
                if spins > 1 << 20 {
                    std::thread::yield_now();
                }
            }
            std::hint::spin_loop();
            true
        };
        // SAFETY: the caller (post_send) holds `l.tx_lock`: the ring's only
        // producer; `need` is 64-aligned and at most MSG_HDR + MAX_CHUNK.
        let Some((p, nh)) = (unsafe { l.tx().reserve(need, &mut wait) }) else {
            return Sent::LinkDied;
        };
        // SAFETY: `p` is the space just reserved for the record.
        if unsafe { put_at(l, (p, nh, f), m, plen, fill) } {
            Sent::Whole
        } else {
            Sent::Aborted
        }
    }

    /// Sends as much of response `r` as fits now; true when all of it went.
    /// A READ's range is checked before every chunk: a backlogged READ may
    /// go on after its MR is gone.
    fn put_resp(&self, l: InLink<'_>, r: &mut Resp) -> bool {
        loop {
            match r {
                Resp::Hdr(m) => return self.try_put(&l, m, 0, &mut |_| true),
                Resp::Read { hdr, qpn, pd, off } => {
                    let total = hdr.total;
                    let plen = (total - *off).min(MAX_CHUNK as u64) as usize;
                    let mut h = *hdr;
                    h.off = *off;
                    h.flags = if *off + plen as u64 >= total { F_LAST } else { 0 };
                    if total == 0 {
                        // A zero-length READ: no MR to check (C9-88), the
                        // response carries no data.
                        return self.try_put(&l, &h, 0, &mut |_| true);
                    }
                    let mut copied = true;
                    // Checked and copied with the MR table held: a dereg
                    // waits for this chunk, and a chunk never starts after it.
                    // (The QP's rights were checked when the request came.)
                    let put = self.with_keys(|keys| {
                        let t = Target {
                            qpn: *qpn,
                            pd: *pd,
                            qp_access: IBV_ACCESS_REMOTE_READ,
                            keys,
                        };
                        let src = t.check(Op::Read, hdr.rkey, hdr.raddr + *off, plen as u64).ok()??;
                        Some({
                            let mut copy = |d: *mut u8| {
                                // SAFETY: `d` is `plen` bytes of reserved ring
                                // space; the source is read by the kernel
                                // (EFAULT, not a fault, for memory the owner
                                // no longer maps).
                                copied = unsafe { crate::mem::copy_out(d, src, plen) };
                                copied
                            };
                            self.try_put(&l, &h, plen, &mut copy)
                        })
                    });
                    match put {
                        None => {
                            // Deregistered meanwhile: the READ fails.
                            let nak = Msg {
                                kind: K_ACK,
                                flags: F_LAST,
                                status: IBV_WC_REM_ACCESS_ERR,
                                total: 0,
                                ..*hdr
                            };
                            *r = Resp::Hdr(nak);
                            continue;
                        }
                        Some(false) => return false,
                        Some(true) if !copied => return true, // the NAK went instead
                        Some(true) => {}
                    }
                    *off += plen as u64;
                    if *off >= total {
                        return true;
                    }
                }
            }
        }
    }

    /// Sends a response: now if it fits (and nothing older waits), else
    /// later (the backlog).  Never waits.
    fn respond(&self, l: InLink<'_>, mut r: Resp) {
        let mut bl = l.producer();
        if l.dead.load(Ordering::Relaxed) {
            return;
        }
        if !bl.is_empty() {
            self.flush_locked(l, &mut bl);
        }
        if bl.is_empty() && self.put_resp(l, &mut r) {
            return;
        }
        if bl.len() >= MAX_BACKLOG {
            // The peer sends requests but does not take its responses: the
            // link is given up (its socket shut down: both sides see the
            // hang-up, RC work on it fails) rather than grow without bound.
            l.dead.store(true, Ordering::SeqCst);
            bl.clear();
            l.backlogged.store(false, Ordering::Release);
            let _ = rustix::net::shutdown(l.sock(), rustix::net::Shutdown::Both);
            return;
        }
        if !matches!(&r, Resp::Hdr(h) if h.kind == K_ACK && h.status == 0) {
            // (Before the request is consumed: see `Delivered`.)
            l.tx().set_answers_kept(true);
        }
        bl.push_back(r);
        self.backlog_wait(l, &mut bl);
    }

    /// Sends what it can of the backlog of link `l` (skipped when another
    /// thread holds the link's producer side: that one flushes it).
    fn flush_backlog(&self, l: InLink<'_>) {
        let Some(mut bl) = l.try_producer() else { return };
        if l.dead.load(Ordering::Relaxed) {
            bl.clear();
            l.backlogged.store(false, Ordering::Release);
            return;
        }
        self.flush_locked(l, &mut bl);
        if !bl.is_empty() {
            self.backlog_wait(l, &mut bl);
        }
    }

    fn flush_locked(&self, l: InLink<'_>, bl: &mut VecDeque<Resp>) {
        while let Some(r) = bl.front_mut() {
            if !self.put_resp(l, r) {
                return;
            }
            bl.pop_front();
        }
        l.backlogged.store(false, Ordering::Release);
        if l.tx().answers_kept() {
            l.tx().set_answers_kept(false);
        }
    }

    /// The backlog is not empty: ask the consumer for a kick when it has
    /// made room, then try once more (it may have made room just before).
    fn backlog_wait(&self, l: InLink<'_>, bl: &mut VecDeque<Resp>) {
        l.backlogged.store(true, Ordering::Release);
        // (False: the barrier could not be had and the kick may not come;
        // the context's thread then naps a millisecond at most, and its
        // passes flush backlogs.)
        let _ = l.tx().want_space();
        self.flush_locked(l, bl);
        if !bl.is_empty() {
            l.backlogged.store(true, Ordering::Release);
        }
    }

    /// A NAK asking the requester to send `req` again (`NAK_RNR` with the
    /// RNR timer code in `imm`, or `NAK_NOT_READY`).
    fn nak(&self, l: InLink<'_>, req: &Msg, status: u32, timer: u32) {
        let m = Msg {
            imm: timer,
            ..answer_to(req, K_ACK, status)
        };
        self.respond(l, Resp::Hdr(m));
    }

    /// The ACK of a SEND or WRITE that succeeded (`req`, its last record):
    /// written when the requester waits for it (`F_ACKREQ`: a request that
    /// completes, one sent again, one that leaves its send queue half
    /// full), else not at all.  The requester takes such a request as done
    /// when we answer a later one of its QP (`QpSt::answered_up_to`: our
    /// answers are in order, and a failure is always answered), or when it
    /// sees that we consumed it with no answer to come
    /// (`objects::consumed_before`, when its QP goes to the error state or
    /// our process ends: `Delivered`).  A NIC ACKs every message; here an
    /// ACK nobody waits for would be a record written, carried and read
    /// beside the next message.
    fn ack_done(&self, l: InLink<'_>, req: &Msg) {
        if req.flags & F_ACKREQ != 0 {
            self.reply(l, req, K_ACK, 0);
        }
    }

    fn reply(&self, l: InLink<'_>, req: &Msg, kind: u16, status: u32) {
        self.respond(l, Resp::Hdr(answer_to(req, kind, status)));
    }

    // ----- responder --------------------------------------------------------

    fn responder(&self, l: InLink<'_>, m: &Msg, payload: *const u8) {
        if m.flags & F_ABORT != 0 {
            self.aborted(&l, m);
            return;
        }
        if self
            .with_qp(m.dst_qpn, |qp| self.responder_qp(l, qp, m, payload))
            .is_none()
        {
            // No such QP (destroyed, or never was): the wire drops the
            // packet; the requester retries after its timeout and gives up
            // with RETRY_EXC_ERR after retry_cnt tries.
            if m.flags & F_FIRST != 0 {
                self.nak(l, m, NAK_NOT_READY, 0);
            }
        }
    }

    /// The responder, for a request to our QP `qp`.
    fn responder_qp(&self, l: InLink<'_>, qp: &Arc<Qp>, m: &Msg, payload: *const u8) {
        if m.flags & F_TRANSPORT != transport_flag(qp.qpt) {
            // A request of another transport than the QP's (a UD SEND to
            // an RC QP's number ...): dropped, as rxe drops a packet whose
            // opcode is not of its QP's transport.  An RC requester hears
            // nothing and runs into its retry limit, as on the wire.
            if m.flags & F_TRANSPORT == 0 {
                // (A reliable request consumed and not delivered: see
                // `Delivered`.)
                l.tx().set_dropped();
            }
            return;
        }
        let mut st = lock(&qp.st);
        match qp.qpt {
            IBV_QPT_RC | IBV_QPT_XRC_RECV => {
                let intake = qpstate::intake(st.state);
                if intake == Intake::Drop {
                    // Dropped, as by a QP in error on the wire (see above).
                    if m.flags & F_FIRST != 0 {
                        self.nak(l, m, NAK_NOT_READY, 0);
                    }
                    return;
                }
                let ready = intake == Intake::Take;
                if ready && qp.qpt == IBV_QPT_RC && !from_connected_peer(&l, &st, m) {
                    // (rc_exec answers a QP we are not connected to.)
                    let _ = self.rc_exec(l, qp, &mut st, m, payload);
                    return;
                }
                // After a NAK, everything but the NAKed request coming again
                // is dropped: nothing overtakes it, nothing is kept.
                if let Some(x) = st.nakd {
                    if m.seq != x || m.flags & F_FIRST == 0 {
                        return;
                    }
                    st.nakd = None;
                }
                if !ready {
                    // Not yet RTR: the wire would drop it and the sender
                    // retry after its timeout.
                    if m.flags & F_FIRST != 0 {
                        st.nakd = Some(m.seq);
                        self.nak(l, m, NAK_NOT_READY, 0);
                    }
                    return;
                }
                if let Err(()) = self.rc_exec(l, qp, &mut st, m, payload) {
                    // No receive WQE: RNR NAK (the sender waits our
                    // min_rnr_timer and sends it again).
                    st.nakd = Some(m.seq);
                    self.nak(l, m, NAK_RNR, st.attr.min_rnr_timer as u32);
                }
            }
            IBV_QPT_UC => {
                if qpstate::intake(st.state) != Intake::Take {
                    return;
                }
                if !from_connected_peer(&l, &st, m) {
                    return; // dropped, as on the wire
                }
                match m.kind {
                    K_SEND => {
                        if m.flags & F_FIRST != 0 {
                            st.dropping = false;
                        }
                        if st.dropping {
                            return;
                        }
                        if let Err(RecvErr::Rnr) = self.recv_data(qp, &mut st, m, payload, &mut |_| {}) {
                            st.dropping = m.flags & F_LAST == 0;
                        }
                    }
                    K_WRITE => {
                        if m.flags & F_FIRST != 0 {
                            st.dropping = st.attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE == 0;
                        }
                        if st.dropping {
                            return;
                        }
                        // SAFETY: `payload` holds `m.plen` bytes (a
                        // validated record or its copy).
                        let data = unsafe { bytes(payload, m.plen as usize) };
                        let done = m.off + m.plen as u64 <= m.total
                            && self
                                .with_target(qp, &st, m, |t| t.write(&ProcessMemory, m.rkey, m.raddr + m.off, data))
                                .is_ok();
                        if !done {
                            st.dropping = m.flags & F_LAST == 0;
                            return;
                        }
                        if m.flags & F_LAST != 0 && m.flags & F_IMM != 0 {
                            let _ = self.recv_data(qp, &mut st, m, std::ptr::null(), &mut |_| {});
                        }
                    }
                    _ => {}
                }
            }
            IBV_QPT_UD => {
                if qpstate::intake(st.state) != Intake::Take {
                    return;
                }
                if m.kind != K_SEND || m.qkey != st.attr.qkey {
                    return;
                }
                let _ = self.recv_data(qp, &mut st, m, payload, &mut |_| {});
            }
            _ => {}
        }
    }

    /// A message its requester aborted (`F_ABORT`: it could not read its
    /// own registered memory, unmapped since, and completed the request
    /// with LOC_PROT_ERR): dropped whole, nothing answered, the QP's state
    /// as if the message had not come.  A receive WQE its earlier fragments
    /// took (a SEND aborted after its first fragment: `st.cur`) goes back to
    /// the head of its queue, to be completed by the next message or
    /// flushed, never completed for this one; the bytes placed in its buffer
    /// stay (a receive buffer holds anything until it completes), as the
    /// data of a WRITE's earlier fragments stays in the target MR (a WRITE
    /// that fails midway on the wire leaves the same).  A message aborted in
    /// its first fragment placed nothing.
    fn aborted(&self, l: &Link, m: &Msg) {
        let Some(qp) = self.qp(m.dst_qpn) else { return };
        if m.flags & F_TRANSPORT != transport_flag(qp.qpt) {
            return;
        }
        let mut st = lock(&qp.st);
        // (Only the connected peer's messages are placed in an RC or UC QP.)
        let connected = !matches!(qp.qpt, IBV_QPT_RC | IBV_QPT_UC) || from_connected_peer(l, &st, m);
        if !connected {
            return;
        }
        if m.flags & F_FIRST == 0 && m.kind == K_SEND {
            if let Some(cur) = st.cur.take() {
                self.give_back_recv(&qp, &mut st, m, cur);
            }
        }
        if st.nakd == Some(m.seq) && m.flags & F_FIRST != 0 {
            // (The NAKed request came again, aborted: nothing more of it
            // will come.)
            st.nakd = None;
        }
    }

    /// One RC request; Err(()) = receiver not ready (no receive WQE: RNR).
    fn rc_exec(&self, l: InLink<'_>, qp: &Arc<Qp>, st: &mut QpSt, m: &Msg, payload: *const u8) -> Result<(), ()> {
        if qp.qpt == IBV_QPT_RC && !from_connected_peer(&l, st, m) {
            // Not from the QP this one is connected to: the wire would drop
            // it (rxe checks the source of every packet of a connected QP)
            // and the sender would retry in vain.
            if needs_ack(m) {
                self.reply(l, m, K_ACK, IBV_WC_RETRY_EXC_ERR);
            }
            return Ok(());
        }
        let done = match m.kind {
            K_SEND => return self.rc_send(l, qp, st, m, payload),
            K_WRITE => return self.rc_write(l, qp, st, m, payload),
            K_READ => self.rc_read(l, qp, st, m),
            K_AWRITE | K_CAS | K_FAA => self.rc_atomic(l, qp, st, m),
            _ => Ok(()),
        };
        if let Err(f) = done {
            self.responder_fault(l, qp, st, m, f);
        }
        Ok(())
    }

    /// A request failed the responder's checks: the requester hears the
    /// fault's status, the owner its async event, the QP goes to error
    /// (the table in `swrdma_rc::fault`).
    fn responder_fault(&self, l: InLink<'_>, qp: &Qp, st: &mut QpSt, m: &Msg, f: Fault) {
        self.reply(l, m, K_ACK, f.requester_status());
        self.fault_answered(qp, st, f);
    }

    /// What follows the answer to a fault: the event, the QP to error.
    fn fault_answered(&self, qp: &Qp, st: &mut QpSt, f: Fault) {
        if let Some(ev) = f.async_event() {
            self.async_event(qp.ibqp as u64, ev);
        }
        self.to_err(qp, st);
    }

    /// A WRITE with immediate failed the checks after it took its receive
    /// WQE: that receive completes with the fault's status (as rxe's).
    fn fail_imm_receive(&self, qp: &Qp, st: &mut QpSt, m: &Msg, f: Fault) {
        let mut h = *m;
        h.flags |= F_FIRST;
        let Some(mut cur) = self.accept_recv(qp, st, &h) else {
            return;
        };
        cur.err = f.imm_receive_status();
        let c = swrdma_rc::recv::Completion {
            qpn: qp.qpn,
            src_qp: m.src_qpn,
            opcode: IBV_WC_RECV_RDMA_WITH_IMM,
            len: m.total,
            imm: Some(m.imm),
            inv: None,
        };
        let (wc, cq) = self.finish_recv(cur, &c);
        if let Some(cq) = &cq {
            cq.push(wc, false);
        }
    }

    /// The engine's view of `qp` for the checks of request `m`, with the
    /// key table held while `f` runs (a dereg waits for the copy).
    fn with_target<R>(&self, qp: &Qp, st: &QpSt, m: &Msg, f: impl FnOnce(&Target) -> R) -> R {
        let pd = self.resp_pd(qp, m);
        let qp_access = st.attr.qp_access_flags;
        self.with_keys(|keys| {
            f(&Target {
                qpn: qp.qpn,
                pd,
                qp_access,
                keys,
            })
        })
    }

    fn rc_send(&self, l: InLink<'_>, qp: &Arc<Qp>, st: &mut QpSt, m: &Msg, payload: *const u8) -> Result<(), ()> {
        // The ACK (or NAK) goes out before the receive completes: an
        // application that polls the completion and exits must not take the
        // ACK with it (the sender saw RETRY_EXC_ERR).
        if m.flags & F_FIRST != 0 && !fits_path_mtu(st, m) {
            // (rxe: the receive WQE first - none: RNR - then the length)
            if !self.recv_ready(qp, st, m) {
                return Err(());
            }
            self.responder_fault(l, qp, st, m, Fault::InvalidRequest);
            return Ok(());
        }
        let mut ack = |s: u32| match Fault::of_receive(s).map_or(0, |f| f.requester_status()) {
            0 => self.ack_done(l, m),
            status => self.reply(l, m, K_ACK, status),
        };
        match self.recv_data(qp, st, m, payload, &mut ack) {
            Ok(()) => {}
            Err(RecvErr::Rnr) => return Err(()),
            Err(RecvErr::Failed) => self.to_err(qp, st),
        }
        Ok(())
    }

    fn rc_write(&self, l: InLink<'_>, qp: &Arc<Qp>, st: &mut QpSt, m: &Msg, payload: *const u8) -> Result<(), ()> {
        let last = m.flags & F_LAST != 0;
        let imm = last && m.flags & F_IMM != 0;
        // The QP's rights first, then (with immediate) the receive WQE,
        // then the rest (swrdma_rc::responder).
        if let Err(f) = self.with_target(qp, st, m, |t| t.enabled(Op::Write)) {
            self.responder_fault(l, qp, st, m, f);
            return Ok(());
        }
        if imm && !self.recv_ready(qp, st, m) {
            return Err(());
        }
        let done = if m.off + m.plen as u64 > m.total || (m.flags & F_FIRST != 0 && !fits_path_mtu(st, m)) {
            Err(Fault::InvalidRequest)
        } else {
            // SAFETY: `payload` holds `m.plen` bytes (a validated record or
            // its copy), or is null with `m.plen` 0.
            let data = unsafe { bytes(payload, m.plen as usize) };
            self.with_target(qp, st, m, |t| t.write(&ProcessMemory, m.rkey, m.raddr + m.off, data))
        };
        if let Err(f) = done {
            self.reply(l, m, K_ACK, f.requester_status());
            if imm && m.off == 0 {
                // (one piece: the WQE was taken before the checks)
                self.fail_imm_receive(qp, st, m, f);
            }
            self.fault_answered(qp, st, f);
            return Ok(());
        }
        if last {
            // (ACKed before the receive completes, as SENDs are.)
            self.ack_done(l, m);
            if m.flags & F_IMM != 0 {
                let mut h = *m;
                h.flags |= F_FIRST;
                h.plen = 0;
                h.off = 0;
                let _ = self.recv_data(qp, st, &h, std::ptr::null(), &mut |_| {});
            }
        }
        Ok(())
    }

    fn rc_read(&self, l: InLink<'_>, qp: &Arc<Qp>, st: &mut QpSt, m: &Msg) -> Result<(), Fault> {
        self.with_target(qp, st, m, |t| t.check(Op::Read, m.rkey, m.raddr, m.total))?;
        let hdr = Msg {
            kind: K_READ_RESP,
            dst_qpn: m.src_qpn,
            src_qpn: m.dst_qpn,
            seq: m.seq,
            total: m.total,
            raddr: m.raddr,
            rkey: m.rkey,
            ..Default::default()
        };
        let pd = self.resp_pd(qp, m);
        self.respond(
            l,
            Resp::Read {
                hdr,
                qpn: qp.qpn,
                pd,
                off: 0,
            },
        );
        Ok(())
    }

    fn rc_atomic(&self, l: InLink<'_>, qp: &Arc<Qp>, st: &mut QpSt, m: &Msg) -> Result<(), Fault> {
        let (op, a) = match m.kind {
            // The 8 bytes land at once, as the value was sent (its byte
            // order is the requester's memory, ours).
            K_AWRITE => (Op::AtomicWrite, Atomic::Store(m.swap)),
            K_CAS => (Op::CmpSwap, Atomic::Cas(m.cmp, m.swap)),
            _ => (Op::FetchAdd, Atomic::Add(m.cmp)),
        };
        let orig = self.with_target(qp, st, m, |t| t.atomic(&ProcessMemory, op, m.rkey, m.raddr, a))?;
        if op == Op::AtomicWrite {
            self.reply(l, m, K_ACK, 0);
            return Ok(());
        }
        let r = Msg {
            kind: K_ATOMIC_RESP,
            flags: F_LAST,
            dst_qpn: m.src_qpn,
            src_qpn: m.dst_qpn,
            seq: m.seq,
            cmp: orig,
            ..Default::default()
        };
        self.respond(l, Resp::Hdr(r));
        Ok(())
    }

    /// SEND data (and the receive side of WRITE_WITH_IMM, payload NULL):
    /// consumes a receive WQE on the first fragment, completes it on the
    /// last, calling `ack` with the completion's status just before.
    fn recv_data(
        &self,
        qp: &Qp,
        st: &mut QpSt,
        m: &Msg,
        payload: *const u8,
        ack: &mut dyn FnMut(u32),
    ) -> Result<(), RecvErr> {
        if m.flags & F_FIRST != 0 {
            let Some(mut cur) = self.accept_recv(qp, st, m) else {
                return Err(RecvErr::Rnr);
            };
            if qp.qpt == IBV_QPT_UD {
                // The GRH area as rxe fills it (the IPv4 header in its
                // last 20 bytes for IPv4-mapped GIDs, its TOS the traffic
                // class; else an IPv6 header) though the link has no IP
                // header: the sender's traffic class and hop limit come in
                // the record.  GID 0 (fe80::<GUID>) is RoCE v1: a GRH.  The
                // completion's `sl` says which layout (recv::l3_type), as
                // mlx5 says it, for UCX's UD transport.
                let imm = m.flags & F_IMM != 0;
                let (tclass, hop) = m.ud_grh();
                let kind = if m.sgid[..2] == [0xfe, 0x80] {
                    GidKind::RoceV1
                } else {
                    GidKind::RoceV2
                };
                let g = swrdma_rc::recv::grh(kind, &m.sgid, &m.dgid, tclass, hop, m.total as usize, imm);
                cur.place_grh(&ProcessMemory, &g);
            }
            st.cur = Some(cur);
        }
        let Some(cur) = st.cur.as_mut() else { return Ok(()) };
        // SAFETY: `payload` holds `m.plen` bytes (a validated record or its
        // copy), or is null (WRITE_WITH_IMM's receive side).
        let data = unsafe { bytes(payload, if payload.is_null() { 0 } else { m.plen as usize }) };
        cur.place(&ProcessMemory, m.off, data);
        if m.flags & F_LAST == 0 {
            return Ok(());
        }
        let Some(cur) = st.cur.take() else { return Ok(()) };
        let c = swrdma_rc::recv::Completion {
            qpn: qp.qpn,
            src_qp: m.src_qpn,
            opcode: if m.kind == K_WRITE {
                IBV_WC_RECV_RDMA_WITH_IMM
            } else {
                IBV_WC_RECV
            },
            len: m.total,
            imm: (m.flags & F_IMM != 0).then_some(m.imm),
            inv: (m.flags & F_INV != 0).then_some(m.imm),
        };
        let mut cur = cur;
        if st.spare.len() < SPARE_LISTS {
            st.spare.push(cur.recycle());
        }
        let (wc, cq) = self.finish_recv(cur, &c);
        ack(wc.status);
        if let Some(cq) = &cq {
            cq.push(wc, m.flags & F_SOLICITED != 0);
        }
        if wc.status != 0 {
            return Err(RecvErr::Failed);
        }
        Ok(())
    }

    /// Sends again what waits for it (after a NAK, once its timer has
    /// passed), on every QP of the context.  Never waits: a link whose
    /// producer side is busy, or whose ring is full, is tried again later.
    pub fn retry_pending(&self) {
        self.pending.store(false, Ordering::Relaxed);
        let qps: Vec<Arc<Qp>> = self.qps.read().unwrap().values().cloned().collect();
        let now = now_ns();
        for qp in qps {
            let link = {
                let mut st = lock(&qp.st);
                if let Some(t) = st.lost_at {
                    if t <= now {
                        self.fail_lost(&qp, &mut st);
                    } else {
                        self.pending.store(true, Ordering::Relaxed);
                    }
                    continue;
                }
                if st.resend.is_none() || st.probe.is_some() {
                    continue;
                }
                if st.resend_at > now {
                    self.pending.store(true, Ordering::Relaxed);
                    continue;
                }
                match &st.link {
                    Some(l) => l.clone(),
                    None => continue, // (the link died: link_died failed the work)
                }
            };
            // The link's producer lock, then the QP's: post_send's order.
            let Some(_tx) = link.try_producer() else {
                self.pending.store(true, Ordering::Relaxed);
                continue;
            };
            let mut st = lock(&qp.st);
            if !self.resend_locked(&link, &qp, &mut st) {
                self.pending.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Puts the requests of `qp` from `st.resend` on the wire again, in
    /// order, gathering their data anew from the requester's memory.  The
    /// caller holds `l.tx_lock`.  False: the ring is full (try again later).
    fn resend_locked(&self, l: &Link, qp: &Qp, st: &mut QpSt) -> bool {
        loop {
            let Some(seq) = st.resend else { return true };
            if st.probe.is_some() {
                return true;
            }
            let Some(front) = st.sq.front() else {
                st.resend = None;
                return true;
            };
            let idx = seq.wrapping_sub(front.seq) as usize;
            if idx >= st.sq.len() {
                st.resend = None;
                return true;
            }
            let next = st.sq.get(idx + 1).map(|w| w.seq);
            if st.sq[idx].done.is_some() {
                // (Completed locally, or flushed.)
                st.resend = next;
                st.resend_off = 0;
                continue;
            }
            let w = &st.sq[idx];
            let len = w.len as u64;
            let translated;
            let mut src: &[ibv_sge] = w.gsges.as_slice();
            let inline = !w.data.is_empty();
            if !inline && !src.is_empty() {
                match self.check_local(qp.pd, src, false) {
                    Ok(None) => {}
                    Ok(Some(t)) => {
                        translated = t;
                        src = &translated;
                    }
                    Err(e) => {
                        // Deregistered since it was posted.
                        st.sq[idx].done = Some(e);
                        self.to_err(qp, st);
                        return true;
                    }
                }
            }
            let mut off = st.resend_off;
            let mut copied = true;
            // (Where this try's first record goes: `SWqe::start`.)
            let mut first_at = None;
            loop {
                let (mut h, plen) = frag(&w.hdr, len, off);
                // (A request sent again is waited for: its ACK at once.)
                h.flags |= F_ACKREQ;
                let at = l.tx().produced();
                let o = off;
                let mut fill = |d: *mut u8| {
                    copied = if inline {
                        // SAFETY: `d` is `plen` bytes of reserved ring space;
                        // [o, o+plen) lies in the inline copy (o + plen <= len
                        // = its length).
                        unsafe { std::ptr::copy_nonoverlapping(w.data.as_slice().as_ptr().add(o as usize), d, plen) };
                        true
                    } else {
                        // SAFETY: `d` is `plen` bytes of reserved ring space;
                        // the sources passed `check_local` just now and are
                        // read fault-safe (memory no longer mapped fails).
                        unsafe { gather_safe(src, o, d, plen) }
                    };
                    copied
                };
                if !self.try_put(l, &h, plen, &mut fill) {
                    st.resend_off = off;
                    if let Some(at) = first_at {
                        st.sq[idx].start = at;
                    }
                    return false;
                }
                if off == 0 {
                    first_at = Some(at);
                }
                if !copied {
                    st.sq[idx].done = Some(IBV_WC_LOC_PROT_ERR);
                    self.to_err(qp, st);
                    return true;
                }
                off += plen as u64;
                // (A READ or an atomic is one message of no payload, its
                // length that of the data it asks for.)
                if off >= len || plen == 0 {
                    break;
                }
            }
            if let Some(at) = first_at {
                st.sq[idx].start = at;
            }
            // (Sent again with F_ACKREQ: never claimed by `Delivered`.)
            st.sq[idx].hdr.flags |= F_ACKREQ;
            st.resend = next;
            st.resend_off = 0;
            if st.probing {
                st.probing = false;
                st.probe = Some(seq);
            }
        }
    }

    /// A NAK for request `idx` of the send queue: it and what follows are
    /// sent again after the responder's RNR timer (RNR) or our timeout (not
    /// ready), or it fails when its retries are used up.
    fn on_nak(&self, qp: &Qp, st: &mut QpSt, idx: usize, m: &Msg) {
        if st.resend.is_some_and(|r| m.seq >= r) || st.probe.is_some_and(|p| m.seq > p) {
            return; // (not on the wire: already going back)
        }
        let spent = if m.status == NAK_RNR {
            let rnr_retry = st.attr.rnr_retry;
            st.budget.rnr_nak(rnr_retry, m.imm)
        } else {
            let (retry_cnt, timeout) = (st.attr.retry_cnt, st.attr.timeout);
            st.budget.timed_out(retry_cnt, timeout)
        };
        let delay = match spent {
            Ok(d) => d,
            Err(status) => {
                st.sq[idx].done = Some(status);
                self.to_err(qp, st);
                self.complete_sq(qp, st);
                return;
            }
        };
        st.resend = Some(m.seq);
        st.resend_off = 0;
        st.resend_at = now_ns() + delay;
        st.probing = true;
        st.probe = None;
        self.pending.store(true, Ordering::Relaxed);
    }

    // ----- completer --------------------------------------------------------

    /// A response for one of our requests (ACK/NAK, READ data, atomic
    /// result): the request is done, sent again or failed.
    fn completer(&self, m: &Msg, payload: *const u8) {
        let _ = self.with_qp(m.dst_qpn, |qp| self.completer_qp(qp, m, payload));
    }

    /// The completer, for a response to a request of our QP `qp`.
    fn completer_qp(&self, qp: &Arc<Qp>, m: &Msg, payload: *const u8) {
        let mut st = lock(&qp.st);
        let Some(front) = st.sq.front() else { return };
        let idx = m.seq.wrapping_sub(front.seq) as usize;
        if idx >= st.sq.len() || st.sq[idx].seq != m.seq || st.sq[idx].done.is_some() {
            return;
        }
        st.answered_up_to(m.seq);
        let mut status = m.status;
        if m.kind == K_ACK && (status == NAK_RNR || status == NAK_NOT_READY) {
            self.on_nak(qp, &mut st, idx, m);
            return;
        }
        {
            let w = &mut st.sq[idx];
            // SAFETY: the response record holds `m.plen` bytes at `payload`.
            let data = unsafe { bytes(payload, m.plen as usize) };
            // (The local lists passed `check_local` for writing when the
            // request was posted; kept translated in the WQE.)
            // Err(status): the request is done with that status.
            let placed = match m.kind {
                K_ACK => Err(status),
                K_READ_RESP => completer::place_read(&ProcessMemory, &w.sges, w.len as u64, m.off, data),
                K_ATOMIC_RESP => completer::place_atomic(&ProcessMemory, &w.sges, m.cmp).and(Err(status)),
                _ => Ok(()),
            };
            match placed {
                Err(s) => {
                    status = s;
                    w.done = Some(s);
                }
                Ok(()) if m.kind == K_READ_RESP && m.flags & F_LAST != 0 => w.done = Some(0),
                Ok(()) => {}
            }
            if w.done == Some(0) {
                st.budget.refill();
            }
        }
        if st.probe == Some(m.seq) && st.sq[idx].done.is_some() {
            // The probe went through: the rest follows now.
            st.probe = None;
            if st.resend.is_some() {
                self.pending.store(true, Ordering::Relaxed);
            }
        }
        if status != 0 {
            self.to_err(qp, &mut st);
        }
        self.complete_sq(qp, &mut st);
    }

    /// A full send queue of `qp` (ring device): its requests the responder
    /// took with no answer to come are done (see `ack_done`); the answers
    /// that came are taken first.  True when the queue has room now.
    pub fn make_room(&self, qp: &Qp) -> bool {
        self.progress();
        let mut st = lock(&qp.st);
        if st.claim_consumed() {
            self.complete_sq(qp, &mut st);
        }
        st.sq.len() < qp.cap.max_send_wr as usize
    }

    /// A link to the context owning QPN `dqpn` (connecting on first use).
    pub fn link_to(&self, dqpn: u32) -> Option<OutLink> {
        let cached = lock(&self.qpn_cache).get(&dqpn).copied();
        let peer = match cached {
            Some(p) => p,
            None => {
                let p = ipc::resolve(&self.dir, dqpn)?;
                lock(&self.qpn_cache).insert(dqpn, p);
                p
            }
        };
        let mut o = lock(&self.out);
        if let Some(l) = o.get(&peer) {
            if !l.dead.load(Ordering::Relaxed) {
                return OutLink::new(l.clone());
            }
        }
        if live_links() >= MAX_LINKS_PER_PROCESS {
            return None; // (the process has all the links it may have)
        }
        let (l, pidfd, dir) = ipc::connect(&self.dir, self.id, self.efd.as_fd(), self.direct_fds(), peer)?;
        let l = Arc::new(l);
        o.insert(peer, l.clone());
        drop(o);
        self.add_link(l.clone(), pidfd, dir);
        OutLink::new(l)
    }

    /// The peer of `qp` cannot be reached: its outstanding work fails (the
    /// first request with RETRY_EXC_ERR, the rest flushed) once `give_up_ns`
    /// has passed, as when the wire drops every packet.
    pub fn peer_lost(&self, st: &mut QpSt) {
        if st.lost_at.is_none() {
            st.lost_at = Some(now_ns() + give_up_ns(&st.attr));
        }
        self.pending.store(true, Ordering::Relaxed);
    }

    fn fail_lost(&self, qp: &Qp, st: &mut QpSt) {
        st.lost_at = None;
        let mut first = true;
        let mut any = false;
        for w in st.sq.iter_mut() {
            if w.done.is_none() {
                w.done = Some(if first {
                    IBV_WC_RETRY_EXC_ERR
                } else {
                    IBV_WC_WR_FLUSH_ERR
                });
                first = false;
                any = true;
            }
        }
        if any {
            self.to_err(qp, st);
        }
    }

    /// A peer went away: its links are dead; RC work waiting for it fails
    /// after the QP's transport timeout (`peer_lost`).
    pub fn link_died(&self, l: &Arc<Link>) {
        l.dead.store(true, Ordering::SeqCst);
        self.remove_link(l);
        if !l.outgoing {
            return;
        }
        let qps: Vec<Arc<Qp>> = self.qps.read().unwrap().values().cloned().collect();
        let delivered = Delivered::on(l, &qps);
        for qp in qps {
            let mut st = lock(&qp.st);
            let uses = st.link.as_ref().is_some_and(|x| x.is(l));
            if !uses {
                continue;
            }
            st.link = None;
            if qp.qpt == IBV_QPT_RC || qp.qpt == IBV_QPT_XRC_SEND {
                if delivered.claim(&mut st) {
                    st.budget.refill();
                    self.complete_sq(&qp, &mut st);
                }
                if st.sq.iter().any(|w| w.done.is_none()) {
                    self.peer_lost(&mut st);
                }
            }
        }
    }
}

/// The header of a one-record answer (`kind`, `status`) to request `req`:
/// back to its QP, with its sequence number.
fn answer_to(req: &Msg, kind: u16, status: u32) -> Msg {
    Msg {
        kind,
        flags: F_LAST,
        dst_qpn: req.src_qpn,
        src_qpn: req.dst_qpn,
        seq: req.seq,
        status,
        ..Default::default()
    }
}

/// What the responder at the other end of a dead outgoing link had taken
/// of our requests (its answers, in order before, are all in: the caller
/// drained the link).  A SEND or WRITE with no answer of its own — the
/// responder answers one nobody waits for (no `F_ACKREQ`) only by
/// answering a later request of its QP (`Ctx::ack_done`) — was delivered
/// when the responder consumed a record we wrote after it: it consumes in
/// order and answers a failure before it consumes the request.  Unless its
/// backlog held answers other than ACKs when it died
/// (`Ring::answers_kept`), or it ever dropped a reliable request without
/// an answer (`Ring::dropped`): then nothing is claimed, and those
/// requests fail after the transport timeout, as any whose answer was
/// lost.
struct Delivered {
    /// Requests that start before this position were consumed (0: none).
    before: u64,
}

impl Delivered {
    fn on(l: &Arc<Link>, qps: &[Arc<Qp>]) -> Delivered {
        let tail = l.tx().consumed();
        if l.rx().answers_kept() || l.rx().dropped() {
            return Delivered { before: 0 };
        }
        if tail == l.tx().produced() {
            // (Everything written was consumed.)
            return Delivered { before: u64::MAX };
        }
        // The last request of ours, of any QP on this link, that starts at
        // or before what the responder consumed: everything before it was.
        let mut before = 0;
        for qp in qps {
            let st = lock(&qp.st);
            if !st.link.as_ref().is_some_and(|x| x.is(l)) {
                continue;
            }
            for w in st.sq.iter() {
                if w.start != NOT_SENT && w.start <= tail {
                    before = before.max(w.start);
                }
            }
        }
        Delivered { before }
    }

    /// Marks the SENDs and WRITEs of `st`'s send queue known delivered as
    /// done (`QpSt::claim_delivered`); true when it marked any.
    fn claim(&self, st: &mut QpSt) -> bool {
        st.claim_delivered(self.before)
    }
}

/// Request `m` came from the QP a connected (RC/UC) QP is connected to: its
/// source QPN is the QP's destination and, once the QP has its own link to
/// that QP's context, it came from that context.
/// The transport bits (`F_UD`, `F_UC`, none) of the requests a QP of type
/// `qpt` sends and takes.
pub fn transport_flag(qpt: u32) -> u16 {
    match qpt {
        IBV_QPT_UD => F_UD,
        IBV_QPT_UC => F_UC,
        _ => 0,
    }
}

fn from_connected_peer(l: &Link, st: &QpSt, m: &Msg) -> bool {
    m.src_qpn == st.attr.dest_qp_num && st.link.as_ref().is_none_or(|o| o.peer == l.peer)
}

fn needs_ack(m: &Msg) -> bool {
    m.flags & F_LAST != 0 || m.kind == K_READ || m.kind == K_CAS || m.kind == K_FAA || m.kind == K_AWRITE
}

/// Writes header `m` (with its `len`/`plen` set) and `plen` payload bytes
/// produced by `fill` at `p`, in the record form `f` (`Form::of(m, plen)`),
/// then publishes the record.  False: `fill` could not read the payload
/// (memory no longer mapped): the record went without it, as the answer
/// the two sides give to that (below).
///
/// # Safety
/// `p` and `nh` come from `try_reserve`/`reserve` on `l.tx()` for
/// `f.record_len(plen)` bytes, by the ring's only producer (the holder of
/// `l.tx_lock`); `fill` writes at most `plen` bytes at its argument.
pub unsafe fn put_at(
    l: &Link,
    (p, nh, f): (*mut u8, u64, Form),
    m: &Msg,
    plen: usize,
    fill: &mut dyn FnMut(*mut u8) -> bool,
) -> bool {
    let mut h = *m;
    let len = f.record_len(plen);
    h.len = len as u32;
    h.plen = plen as u32;
    // (The payload space follows the header, inside the reservation.)
    let filled = plen == 0 || fill(p.wrapping_add(f.payload_at()));
    if !filled {
        // (The record keeps its reserved length; no payload is sent.)
        h.plen = 0;
        if h.kind == K_SEND || h.kind == K_WRITE {
            // The requester's side: its registered source is gone (unmapped
            // after registering).  The record aborts the message: the
            // responder drops it (`aborted`); the caller completes the
            // request with LOC_PROT_ERR.
            h.flags |= F_ABORT;
        } else {
            // The responder's side (a READ from memory the owner no longer
            // maps): the record becomes the request's remote-access NAK.
            h.kind = K_ACK;
            h.flags = F_LAST;
            h.status = IBV_WC_REM_ACCESS_ERR;
            h.total = 0;
        }
    }
    // SAFETY: `p` is reserved space of `len` bytes in form `f`, 64-aligned,
    // that no one reads until it is published (the contract).
    unsafe { write_header(p, &h, f) };
    if l.tx().publish(nh, len) {
        l.wake_peer();
    }
    filled
}

/// What became of a request record `Ctx::send_msg` was to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Written with its payload.
    Whole,
    /// Its payload could not be read (the requester's registered memory
    /// was unmapped since): written as the message's abort (`F_ABORT`).
    Aborted,
    /// Not written: the link died.
    LinkDied,
}

/// The `n` bytes at `p` as a slice (none when `n` is 0: `p` may be null).
///
/// # Safety
/// When `n` > 0, `p` points to `n` readable bytes that stay unchanged for
/// the slice's life.
pub unsafe fn bytes<'a>(p: *const u8, n: usize) -> &'a [u8] {
    if n == 0 || p.is_null() {
        return &[];
    }
    // SAFETY: the contract.
    unsafe { std::slice::from_raw_parts(p, n) }
}
