//! The wire device's sockets: RoCE v2 packets (UDP port 4791) shared by
//! several processes of one user.
//!
//! # The problem
//!
//! A RoCE v2 NIC has one UDP port, 4791, per IP address, and the packet's
//! BTH destination QPN (the 24 bits at bytes 5..8 of the UDP payload, big
//! endian) selects the QP.  Our QPs live in processes: several processes of
//! one user own QPs on the same wire device at once, without root, and the
//! isolation model is that only the owner process touches its memory.  So
//! every packet must end up in the process that owns its destination QP.
//! QPNs are unique per user on the machine (`ipc.rs` allocates them from a
//! counter in the user's private directory and publishes `q<qpn>` links that
//! say which context owns which QPN).
//!
//! # The design
//!
//! * Every wire context opens, for each local IP address of its interface,
//!   a UDP socket bound to `addr:4791` with `SO_REUSEPORT`: the sockets of
//!   all processes of the same uid share the port (the kernel refuses a
//!   different uid, and refuses everybody with `EADDRINUSE` when something
//!   without `SO_REUSEPORT`, e.g. the kernel's rxe, holds it).  The kernel
//!   spreads the incoming datagrams over the group by a hash of the flow
//!   (addresses and ports), which knows nothing about QPs.
//! * The sockets are nonblocking and close-on-exec.  IPv4 sockets set
//!   `IP_MTU_DISCOVER = IP_PMTUDISC_DO`: the datagrams leave with DF set and,
//!   the socket being unconnected, IP identification 0, which the ICRC
//!   depends on (the ICRC covers the IP header with only TTL, TOS and the
//!   checksum masked).  They ask for `IP_PKTINFO` (the destination address),
//!   `IP_RECVTOS` and `IP_RECVTTL`.  IPv6 sockets set `IPV6_V6ONLY`,
//!   `IPV6_DONTFRAG` and ask for `IPV6_RECVPKTINFO`, `IPV6_RECVTCLASS` and
//!   `IPV6_RECVHOPLIMIT`; a link-local address is bound with the interface
//!   index as its scope id (and datagrams to link-local destinations are
//!   sent with it).
//! * Every context also listens on a unix `SOCK_SEQPACKET` socket
//!   `w<ctx_id>` in the private directory (mode 0700, so only the user
//!   reaches it), removing a stale file of that name first and unlinking it
//!   when the [`Sock`] is dropped.  The listener and the connections it
//!   accepts sit in an epoll set of the [`Sock`], whose descriptor
//!   [`Sock::fds`] hands out with the UDP sockets.
//! * A UDP datagram whose destination QPN the context does not own is
//!   forwarded to the owner over a connection to its `w<owner>` (made on
//!   first use, kept): one message of a fixed header of [`FWD_HDR`] bytes
//!   (magic and version, source and destination address as 16 bytes each,
//!   IPv4 as v4-mapped, source port, traffic class, hop limit or TTL,
//!   interface index) followed by the UDP payload.  When nobody owns the
//!   QPN, or the forward cannot be sent (the owner is that far behind, it
//!   has gone), the datagram is dropped, as a NIC drops a packet for an
//!   unknown QP; RC retransmits.  The forward is never forwarded again: a
//!   forwarded datagram is accepted only if its destination address is one
//!   of this context's addresses (and, for a link-local one, the interface
//!   is ours) and the QPN is ours, else dropped.
//! * A forwarded datagram for one of our QPs also gets its flow a socket
//!   of its own in the owner ([`Flow`]): a UDP socket in the same group,
//!   bound the same way and connected to the datagram's source address and
//!   port.  The kernel gives a connected member every datagram of its
//!   4-tuple (Linux 5.4 and later), so a flow is forwarded only until its
//!   owner has seen one of its datagrams: from then on a peer QP's packets
//!   (rxe sends each QP's from a source port of its own) reach the owner
//!   without waiting for another process to run.  At most [`MAX_FLOWS`]
//!   per context, the oldest closed first.
//! * Steering from the first packet: a connected QP sends from a
//!   [`Sender`], a socket bound to its own source port ([`src_port`] of
//!   its QPN, as rxe derives its own), and holds a [`FlowPin`], the flow
//!   socket for its peer's port (from the peer's QPN), opened at RTR.  So
//!   between two of ours, and between ours and rxe, no datagram of a
//!   connected QP is forwarded, and no process's state delays another's
//!   QPs.  Where either cannot be had, forwarding serves as above.
//! * Why connections, not one unix datagram socket per context: a unix
//!   datagram socket takes at most `net.unix.max_dgram_qlen` (10 by default,
//!   only root can raise it) unread datagrams from senders it is not
//!   connected to, and RoCE traffic comes in bursts (a 64 KiB message is 16
//!   packets; the flow hash sends a whole flow to one socket, so every
//!   packet of a misplaced flow is forwarded): measured on loopback with two
//!   processes and about 2 000 packets per second, 14 to 24 % of the
//!   forwards were refused with `EAGAIN`.  A connected pair is not subject
//!   to that limit, only to the sender's send buffer ([`FWD_SNDBUF`] asked
//!   for); no loss in the same test.
//! * Datagrams shorter than a BTH (12 bytes), truncated ones (longer than
//!   [`BUF`]) and malformed forwards are dropped.
//!
//! Sending a burst uses `sendmmsg`: the engine builds the packets in place
//! in the slots of a [`TxBatch`] and [`Sock::send_batch`] hands them to the
//! kernel together (what the kernel refuses for lack of room is lost, as a
//! single [`Sock::send`] that fails; RC retransmits).
//!
//! Receiving uses `recvmmsg` into buffers owned by the [`Sock`] (behind a
//! mutex: whichever thread makes progress calls [`Sock::recv`]; a second
//! thread finding it busy returns at once).  Ancillary data and addresses
//! are parsed from bytes, without casts.

use super::mcast::{self, Group};
use super::opt::set_int;
use super::record::{self, Ev};
use rustix::event::epoll;
use rustix::io::Errno;
use rustix::net::{
    accept_with, bind, connect, ipproto, listen, sendmsg, sendmsg_addr, socket_with, sockopt, AddressFamily,
    SendAncillaryBuffer, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use std::io::{self, IoSlice};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, TryLockError, Weak};

/// The RoCE v2 UDP destination port.
#[allow(dead_code)] // used by the wire engine (being written)
pub const PORT: u16 = 4791;

/// The shortest datagram we look at: a base transport header.
const MIN_LEN: usize = 12;

/// Size of a forwarded datagram's header (`swrdma_roce::fwd`).
pub const FWD_HDR: usize = swrdma_roce::fwd::HDR;

/// The general services QP (the CM's MADs), which the wire agent owns.
const GSI_QPN: u32 = 1;

/// Bytes per receive buffer: a jumbo frame's UDP payload (9000-byte MTU)
/// plus the forward header, rounded up; larger datagrams are dropped (the
/// largest RoCE packet, 4096 bytes of payload plus headers, fits easily).
pub const BUF: usize = 10240;

/// Datagrams per `recvmmsg`.
const BATCH: usize = 32;

/// Ancillary bytes per datagram (the three control messages we ask for take
/// at most 40 + 24 + 24 bytes).
const CTRL: usize = 128;

/// Bytes of a socket address buffer (a `sockaddr_in6`).
const NAME: usize = 28;

/// Most forwarding connections kept each way.
const MAX_CONNS: usize = 1024;

/// Events taken from the forwarding epoll set at a time (level triggered:
/// what is left is reported again at the next call).
const EP_EVENTS: usize = 32;

/// The forwarding epoll set's tag of the listener.
const LISTENER_TAG: u64 = 0;

/// The forwarding epoll set's tag of an accepted connection: its
/// descriptor number plus one (never the listener's 0; unique among the
/// open connections).
fn conn_tag(fd: BorrowedFd<'_>) -> u64 {
    fd.as_raw_fd() as u64 + 1
}

/// The forwarding epoll set's tag of a flow socket (see [`Flow`]): this
/// bit and its descriptor number (never a connection's tag).
const FLOW_TAG: u64 = 1 << 40;

/// The forwarding epoll set's tag of a socket of an address the interface
/// gained after [`Sock::open`] ([`Sock::add_addrs`]): this bit and its
/// descriptor number.
const LATE_TAG: u64 = 1 << 42;

/// Most addresses added after [`Sock::open`].
const LATE_MAX: usize = 16;

/// Most flow sockets of a context (the oldest is closed for a new one).
const MAX_FLOWS: usize = 64;

/// Send buffer asked for a forwarding connection (the forwards the owner
/// has not read yet are charged to it).
const FWD_SNDBUF: usize = 1 << 20;

/// Receive buffer asked for a UDP socket (best effort, capped by
/// `net.core.rmem_max`): a burst of a few hundred packets must not overflow
/// the default 208 KiB while the context thread is busy.
const UDP_RCVBUF: usize = 4 << 20;

/// Most iovecs [`Sock::send`] takes.
const MAX_PARTS: usize = 16;

/// Datagrams per `sendmmsg` (a [`TxBatch`]).
pub const TX_BATCH: usize = 32;

/// Most datagrams one segmentation-offload send carries (the kernel's
/// `UDP_MAX_SEGMENTS` before 6.9; later kernels take 128).
const GSO_SEGS: usize = 64;

/// Most UDP payload bytes of one segmentation-offload send (an IPv4
/// datagram's: 65535 less the IPv4 and UDP headers).
const GSO_BYTES: usize = 65507;

/// Set once the kernel refused a segmentation-offload send (or
/// `SWRDMA_WIRE_GSO=0`): from then on every packet is a datagram of its own.
static GSO_OFF: LazyLock<AtomicBool> =
    LazyLock::new(|| AtomicBool::new(std::env::var("SWRDMA_WIRE_GSO").is_ok_and(|v| v == "0")));

/// Packets built in place for one `sendmmsg` ([`Sock::send_batch`]): up to
/// [`TX_BATCH`] slots of `slot` bytes each in one buffer, kept by the
/// caller between bursts (no allocation per packet).  All packets of a
/// batch leave from one local address and socket (the caller sends the
/// batch before changing them: [`TxBatch::same_source`]); each has its own
/// destination.
///
/// Consecutive packets to one destination with one traffic class, of one
/// length (the last of them may be shorter), leave as one send with UDP
/// segmentation offload (`UDP_SEGMENT`): the kernel takes them through its
/// stack as one buffer and cuts them into the same datagrams at the end
/// (on a veth or `lo`, at the receiving socket), a fraction of the cost of
/// one send per datagram.  The one thing that differs on the wire is the
/// IPv4 identification: the group's first datagram leaves with 0, as a
/// datagram sent alone from our unconnected sockets with DF set, and each
/// next one with the previous one's plus one.  The ICRC covers it, so a
/// packet's place in its group ([`TxBatch::seg_for`]) is known before its
/// ICRC is computed.
pub struct TxBatch {
    data: Vec<u8>,
    slot: usize,
    /// Slots (at most [`TX_BATCH`]).
    cap: usize,
    src: Option<IpAddr>,
    /// The [`Sender`] of the packets (None: the address's port 4791 socket).
    via: Option<Arc<Sender>>,
    /// (destination, start in its slot, length, traffic class, place in
    /// its segmentation group) of each packet built.
    pkts: Vec<(IpAddr, usize, usize, u8, u16)>,
}

impl TxBatch {
    /// A batch whose slots hold `slot` bytes each.
    pub fn new(slot: usize) -> TxBatch {
        TxBatch::with_slots(slot, TX_BATCH)
    }

    /// A batch of `n` (1 ..= [`TX_BATCH`]) slots of `slot` bytes.
    fn with_slots(slot: usize, n: usize) -> TxBatch {
        let cap = n.clamp(1, TX_BATCH);
        TxBatch {
            data: vec![0; cap * slot],
            slot,
            cap,
            src: None,
            via: None,
            pkts: Vec::with_capacity(cap),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    /// The batch is empty, or its packets leave from `src` through `via`.
    pub fn same_source(&self, src: &IpAddr, via: Option<&Arc<Sender>>) -> bool {
        let same_via = match (&self.via, via) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        self.src.is_none() || (self.src == Some(*src) && same_via)
    }

    pub fn is_full(&self) -> bool {
        self.pkts.len() >= self.cap
    }

    /// The next free slot, to build a packet in (the batch must not be full).
    pub fn slot_mut(&mut self) -> &mut [u8] {
        let i = self.pkts.len().min(self.cap - 1);
        &mut self.data[i * self.slot..(i + 1) * self.slot]
    }

    /// The place that a packet to `dst` of `len` bytes with traffic class
    /// `tclass`, pushed next, takes in its segmentation group: 0 when it
    /// starts one (or offload is off), k when it is the group's (k+1)th
    /// datagram.  An IPv4 packet leaves with identification k, so its
    /// ICRC is computed with it ([`swrdma_roce::icrc_ident`]).
    pub fn seg_for(&self, dst: &IpAddr, len: usize, tclass: u8) -> u16 {
        let Some(&(d, _, last_len, t, last_seg)) = self.pkts.last() else {
            return 0;
        };
        if d != *dst || t != tclass || GSO_OFF.load(Ordering::Relaxed) {
            return 0;
        }
        let n = usize::from(last_seg) + 1;
        let glen = self.pkts[self.pkts.len() - n].2;
        // A group ends with its first shorter datagram; each must be
        // longer than a BTH, as the kernel's segment size must be.
        let open = last_len == glen && len <= glen && len > MIN_LEN;
        if !open || n >= GSO_SEGS || n * glen + len > GSO_BYTES {
            return 0;
        }
        n as u16
    }

    /// The packet built in the next slot at `start..start + len` goes from
    /// `src` (through `via`) to `dst` with IP traffic class (TOS) `tclass`
    /// (the batch must be empty or of the same source: [`TxBatch::same_source`]);
    /// it takes the place in a segmentation group that
    /// [`TxBatch::seg_for`] said just before.
    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, src: IpAddr, via: Option<&Arc<Sender>>, dst: IpAddr, start: usize, len: usize, tclass: u8) {
        debug_assert!(!self.is_full() && start + len <= self.slot && self.same_source(&src, via));
        if self.src.is_none() {
            self.via = via.cloned();
        }
        self.src = Some(src);
        let seg = self.seg_for(&dst, len, tclass);
        self.pkts.push((dst, start, len, tclass, seg));
    }

    fn clear(&mut self) {
        self.pkts.clear();
        self.src = None;
        self.via = None;
    }
}

/// Bytes of the control messages of one send: a traffic class (an `int`)
/// and a segment size (a `u16`), 16 + 8 bytes of header and data each.
const SEND_CTRL: usize = 64;

/// Appends to `buf` at `at` (a multiple of the header's alignment) a
/// control message of `level`/`ty` carrying `data`; returns where the
/// next one begins.
fn put_cmsg(buf: &mut [u8; SEND_CTRL], at: usize, level: c_int, ty: c_int, data: &[u8]) -> usize {
    // SAFETY: CMSG_LEN/CMSG_SPACE only compute sizes.
    let (len, space, head) = unsafe {
        (
            libc::CMSG_LEN(data.len() as u32) as usize,
            libc::CMSG_SPACE(data.len() as u32) as usize,
            libc::CMSG_LEN(0) as usize,
        )
    };
    assert!(at + space <= SEND_CTRL && head + data.len() <= space);
    let hdr = libc::cmsghdr {
        cmsg_len: len as _,
        cmsg_level: level,
        cmsg_type: ty,
    };
    buf[at..at + space].fill(0);
    // SAFETY: `buf[at..]` has room for a cmsghdr (checked above); the
    // write need not be aligned.
    unsafe { std::ptr::write_unaligned(buf[at..].as_mut_ptr().cast::<libc::cmsghdr>(), hdr) };
    buf[at + head..at + head + data.len()].copy_from_slice(data);
    at + space
}

/// The control messages of one send, written into `buf`; their length (0:
/// nothing to say).  The IP traffic class `tclass` (`IP_TOS` for IPv4,
/// `IPV6_TCLASS` for IPv6; class 0 is the socket's default, not said) and,
/// for a segmentation group of more than one datagram, the segment size
/// `seg_size` (`UDP_SEGMENT`; 0: none).
fn send_cmsgs(buf: &mut [u8; SEND_CTRL], v4: bool, tclass: u8, seg_size: u16) -> usize {
    let mut at = 0;
    if tclass != 0 {
        let (level, ty) = if v4 {
            (libc::IPPROTO_IP, libc::IP_TOS)
        } else {
            (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
        };
        at = put_cmsg(buf, at, level, ty, &c_int::from(tclass).to_ne_bytes());
    }
    if seg_size != 0 {
        at = put_cmsg(buf, at, libc::SOL_UDP, libc::UDP_SEGMENT, &seg_size.to_ne_bytes());
    }
    at
}

/// A `sockaddr_in` / `sockaddr_in6` for `dst`:[`PORT`], as raw bytes (with
/// the interface as scope of a link-local IPv6 destination) and its length.
fn raw_sockaddr(dst: IpAddr, ifindex: u32) -> ([u8; NAME], usize) {
    let mut b = [0u8; NAME];
    match dst.to_canonical() {
        IpAddr::V4(a) => {
            b[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
            b[2..4].copy_from_slice(&PORT.to_be_bytes());
            b[4..8].copy_from_slice(&a.octets());
            (b, 16)
        }
        IpAddr::V6(a) => {
            b[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
            b[2..4].copy_from_slice(&PORT.to_be_bytes());
            b[8..24].copy_from_slice(&a.octets());
            let scope = if mcast::needs_scope(&a) { ifindex } else { 0 };
            b[24..28].copy_from_slice(&scope.to_ne_bytes());
            (b, 28)
        }
    }
}

pub use swrdma_roce::fwd::RxMeta;

/// Receive buffers and per-datagram results of one `recvmmsg`.
struct Bufs {
    data: Vec<u8>,
    ctrl: Vec<u8>,
    names: Vec<u8>,
    slots: Vec<Slot>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    len: usize,
    flags: i32,
    clen: usize,
}

/// The forwarding connections of a context.
#[derive(Default)]
struct Conns {
    /// Accepted from other contexts (in [`Sock::ep`]).
    inc: Vec<OwnedFd>,
    /// Made to other contexts, by owner id.
    out: Vec<(u32, OwnedFd)>,
    /// Made to the wire agent's QP1 intake (see [`Sock::to_agent`]).
    agent: Option<OwnedFd>,
    /// Datagrams for QP1 (the forwarding header and the payload) that
    /// found no room at the agent's intake, in order, each with when it is
    /// given up: they go as soon as the intake has room, in front of any
    /// later one (see [`Sock::to_agent`]).
    agent_queue: std::collections::VecDeque<(Vec<u8>, std::time::Instant)>,
    /// The agent connection is in [`Sock::ep`] for `EPOLLOUT` (while
    /// `agent_queue` is not empty).
    agent_watched: bool,
    /// When datagrams wait with nothing to report room (no connection:
    /// the agent's backlog was full or it was not listening when the
    /// connection broke; or the connection is not in the epoll set): when
    /// [`Sock::recv`] tries again.
    agent_retry: Option<std::time::Instant>,
}

/// Most datagrams waiting for room at the agent's intake (about 1.3 MiB of
/// MADs); beyond it what finds no room is dropped, as a full socket buffer
/// would drop it.
const AGENT_QUEUE_MAX: usize = 4096;
/// How long one waits (an agent that reads nothing for a minute is gone
/// or stopped, and the peer's CM has long given up).
const AGENT_QUEUE_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// How soon datagrams waiting with no connection to the agent are tried
/// again (see `Conns::agent_retry`).
const AGENT_RETRY: std::time::Duration = std::time::Duration::from_millis(5);

/// The forwarding epoll set's tag of the connection to the agent's intake
/// (only while datagrams wait for room there).
const AGENT_TAG: u64 = 1 << 41;

/// A flow socket: a UDP socket bound to one of our addresses' port 4791
/// (in the same `SO_REUSEPORT` group) and connected to a peer's address
/// and UDP source port.  The kernel gives a connected member of a group
/// every datagram of its 4-tuple, and the unconnected members none of them
/// (Linux 5.4 and later), so once a datagram of that flow was forwarded to
/// us, the flow's next datagrams come to us directly: a peer QP's requests
/// or responses no longer wait for another process to run (rxe sends each
/// QP's packets from a source port of its own).  A datagram of the flow for
/// another process's QP (a peer that sends every QP's packets from one
/// port, as ours does) is forwarded as from any socket.
struct Flow {
    local: IpAddr,
    peer: IpAddr,
    sport: u16,
    fd: OwnedFd,
}

/// A flow socket that a connected QP holds for its peer QP's packets,
/// opened before the first of them arrives (see [`src_port`]): while the
/// QP holds it, it is never closed to make room; dropping the last holder
/// closes it (and so takes it out of the epoll set).
pub struct FlowPin {
    _flow: Arc<Flow>,
}

/// A UDP socket bound to one of our addresses and a QP's own source port
/// ([`src_port`]), used only to send that QP's packets: the peer's kernel
/// sees one 4-tuple per QP and can steer it to the peer QP's owner.
pub struct Sender {
    fd: OwnedFd,
    local: IpAddr,
    port: u16,
    count: Arc<AtomicUsize>,
}

impl Sender {
    /// Bound to our address `a`.
    pub fn is_on(&self, a: &IpAddr) -> bool {
        self.local == a.to_canonical()
    }
}

/// The UDP source port of a packet sent from `src` through `via` (as
/// [`Sock::send`] and [`Sock::send_batch`] choose the socket): the ICRC
/// covers it.
pub fn source_port(src: &IpAddr, via: Option<&Arc<Sender>>) -> u16 {
    via.filter(|v| v.is_on(src)).map_or(PORT, |v| v.port)
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

pub use swrdma_roce::src_port;

/// Senders per context at most (each a descriptor of the process).
const MAX_SENDERS: usize = 128;

/// Pinned flow sockets per context at most.
const MAX_PINNED: usize = 128;

// The room the process's descriptor table is given when a wire context
// opens (`crate::fdtable`) holds this context's sockets at most
// (senders, pinned flows, flows), and as many again for the application.
const _: () = assert!(2 * (MAX_SENDERS + MAX_PINNED + MAX_FLOWS) <= crate::fdtable::CONTEXT_ROOM);

/// Steering (per-QP source ports and pinned flows) is on unless
/// `SWRDMA_WIRE_STEER=0`.
fn steer_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("SWRDMA_WIRE_STEER").map_or(true, |v| v != "0"))
}

/// The receive state, used by one thread at a time.
struct Rx {
    bufs: Bufs,
    conns: Conns,
    /// Flow sockets, oldest first (in [`Sock::ep`]).
    flows: Vec<Flow>,
    /// Flow sockets that QPs hold ([`FlowPin`]; in [`Sock::ep`] while held).
    pinned: Vec<Weak<Flow>>,
    /// Source to start the next [`Sock::recv`] with (round robin, so that a
    /// busy socket does not starve the others when `max` is reached).
    next: usize,
}

/// The sockets of one wire context: a UDP socket per local address, and the
/// unix listener whose connections carry the datagrams forwarded by the
/// other contexts.
pub struct Sock {
    /// Bound addresses and their sockets (addresses canonical: IPv4 as `V4`).
    udp: Vec<(IpAddr, OwnedFd)>,
    addrs: Vec<IpAddr>,
    /// Addresses the interface gained later ([`Sock::add_addrs`]) and
    /// their sockets, in the forwarding epoll set: filled in order, never
    /// emptied (a send borrows one's socket as it borrows `udp`'s).
    late: [OnceLock<(IpAddr, OwnedFd)>; LATE_MAX],
    /// Held while `late` is added to.
    late_add: Mutex<()>,
    /// The `w<ctx_id>` listener.
    listener: OwnedFd,
    /// An epoll set of the listener and the accepted connections: readable
    /// when any of them is.
    ep: OwnedFd,
    dir: PathBuf,
    path: PathBuf,
    ctx_id: u32,
    ifindex: u32,
    rx: Mutex<Rx>,
    /// Live [`Sender`]s.
    senders: Arc<AtomicUsize>,
    /// The multicast groups our QPs are attached to (see `mcast.rs`).
    groups: Mutex<Vec<Group>>,
    /// The sources the next [`Sock::recv`] looks at, bit `i` for the `i`th
    /// of [`Sock::fds`] ([`ALL_SOURCES`]: every one); see
    /// [`Sock::hint_ready`].
    ready: AtomicU64,
}

/// [`Sock::recv`] looks at every source (no hint, or more sources than bits).
const ALL_SOURCES: u64 = u64::MAX;

fn is_link_local(a: &Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// The unix socket path of context `id`.
fn fwd_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("w{id}"))
}

/// Opens the UDP socket of one address (see the module documentation).
fn open_udp(addr: IpAddr, ifindex: u32) -> io::Result<OwnedFd> {
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    match addr {
        IpAddr::V4(a) => {
            let fd = socket_with(AddressFamily::INET, SocketType::DGRAM, flags, Some(ipproto::UDP))?;
            sockopt::set_socket_reuseport(&fd, true)?;
            sockopt::set_ip_mtu_discover(&fd, sockopt::Ipv4PathMtuDiscovery::DO)?;
            set_int(fd.as_fd(), libc::IPPROTO_IP, libc::IP_PKTINFO, 1)?;
            sockopt::set_ip_recvtos(&fd, true)?;
            set_int(fd.as_fd(), libc::IPPROTO_IP, libc::IP_RECVTTL, 1)?;
            bind(&fd, &SocketAddrV4::new(a, PORT))?;
            let _ = mcast::set_out_if(fd.as_fd(), &addr, ifindex);
            Ok(fd)
        }
        IpAddr::V6(a) => {
            let fd = socket_with(AddressFamily::INET6, SocketType::DGRAM, flags, Some(ipproto::UDP))?;
            sockopt::set_ipv6_v6only(&fd, true)?;
            sockopt::set_socket_reuseport(&fd, true)?;
            set_int(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, 1)?;
            set_int(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
            sockopt::set_ipv6_recvtclass(&fd, true)?;
            set_int(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, 1)?;
            let scope = if is_link_local(&a) { ifindex } else { 0 };
            bind(&fd, &SocketAddrV6::new(a, PORT, 0, scope))?;
            let _ = mcast::set_out_if(fd.as_fd(), &addr, ifindex);
            Ok(fd)
        }
    }
}

/// Opens a [`Sender`]'s socket: bound to `addr`:`port` with
/// `SO_REUSEPORT` (another context of the user may have a QP with the same
/// port), the same path MTU and scope rules as [`open_udp`]; it asks for no
/// ancillary data and a small receive buffer (nothing is sent to it).
fn open_sender(addr: IpAddr, port: u16, ifindex: u32) -> io::Result<OwnedFd> {
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    let fd = match addr {
        IpAddr::V4(a) => {
            let fd = socket_with(AddressFamily::INET, SocketType::DGRAM, flags, Some(ipproto::UDP))?;
            sockopt::set_socket_reuseport(&fd, true)?;
            sockopt::set_ip_mtu_discover(&fd, sockopt::Ipv4PathMtuDiscovery::DO)?;
            bind(&fd, &SocketAddrV4::new(a, port))?;
            fd
        }
        IpAddr::V6(a) => {
            let fd = socket_with(AddressFamily::INET6, SocketType::DGRAM, flags, Some(ipproto::UDP))?;
            sockopt::set_ipv6_v6only(&fd, true)?;
            sockopt::set_socket_reuseport(&fd, true)?;
            set_int(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, 1)?;
            let scope = if is_link_local(&a) { ifindex } else { 0 };
            bind(&fd, &SocketAddrV6::new(a, port, 0, scope))?;
            fd
        }
    };
    let _ = sockopt::set_socket_recv_buffer_size(&fd, 1);
    let _ = mcast::set_out_if(fd.as_fd(), &addr, ifindex);
    Ok(fd)
}

/// `N` bytes of `s` at `at`, if there are that many.
fn take<const N: usize>(s: &[u8], at: usize) -> Option<[u8; N]> {
    s.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// The destination QPN of a BTH at the start of `p` (`p` has at least
/// [`MIN_LEN`] bytes).
fn dest_qpn(p: &[u8]) -> Option<u32> {
    let b: [u8; 3] = take(p, 5)?;
    Some(u32::from_be_bytes([0, b[0], b[1], b[2]]))
}

/// Parses a `sockaddr_in` / `sockaddr_in6` the kernel wrote as bytes.
fn parse_name(n: &[u8]) -> Option<(IpAddr, u16)> {
    let family = u16::from_ne_bytes(take(n, 0)?);
    let port = u16::from_be_bytes(take(n, 2)?);
    match libc::c_int::from(family) {
        libc::AF_INET => Some((IpAddr::V4(Ipv4Addr::from(take::<4>(n, 4)?)), port)),
        libc::AF_INET6 => Some((IpAddr::V6(Ipv6Addr::from(take::<16>(n, 8)?)), port)),
        _ => None,
    }
}

/// Reads the control messages we asked for into `m` (the layout of a
/// `cmsghdr`: length as a `size_t`, level and type as ints, the data at the
/// header's aligned size; each message aligned to a `size_t`).
fn parse_cmsgs(ctrl: &[u8], m: &mut RxMeta) {
    const W: usize = std::mem::size_of::<usize>();
    const H: usize = std::mem::size_of::<libc::cmsghdr>();
    let mut off = 0usize;
    while let (Some(len), Some(level), Some(ty)) = (
        take::<W>(ctrl, off).map(usize::from_ne_bytes),
        take::<4>(ctrl, off + W).map(i32::from_ne_bytes),
        take::<4>(ctrl, off + W + 4).map(i32::from_ne_bytes),
    ) {
        let Some(d) = off.checked_add(len).and_then(|end| ctrl.get(off + H..end)) else {
            return;
        };
        if len < H {
            return;
        }
        let int = || take::<4>(d, 0).map(i32::from_ne_bytes);
        match (level, ty) {
            (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
                // struct in_pktinfo { int ifindex; in_addr spec_dst; in_addr addr; }
                if let Some(a) = take::<4>(d, 8) {
                    m.dst = IpAddr::V4(Ipv4Addr::from(a));
                }
            }
            (libc::IPPROTO_IP, libc::IP_TOS) => {
                if let Some(&t) = d.first() {
                    m.tclass = t;
                }
            }
            (libc::IPPROTO_IP, libc::IP_TTL) => {
                if let Some(v) = int() {
                    m.hop = v as u8;
                }
            }
            (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                // struct in6_pktinfo { in6_addr addr; unsigned ifindex; }
                if let Some(a) = take::<16>(d, 0) {
                    m.dst = IpAddr::V6(Ipv6Addr::from(a));
                }
            }
            (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
                if let Some(v) = int() {
                    m.tclass = v as u8;
                }
            }
            (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT) => {
                if let Some(v) = int() {
                    m.hop = v as u8;
                }
            }
            _ => {}
        }
        match len
            .checked_add(W - 1)
            .map(|l| l & !(W - 1))
            .and_then(|l| off.checked_add(l))
        {
            Some(n) => off = n,
            None => return,
        }
    }
}

/// Receives from `fd` into `bufs`, a batch at a time, up to `budget`
/// datagrams, calling `each(bufs, j)` for each datagram `j` of a batch;
/// returns how many, and whether the budget was spent (else the socket is
/// empty for now).
fn drain(bufs: &mut Bufs, fd: BorrowedFd<'_>, budget: usize, each: &mut dyn FnMut(&Bufs, usize)) -> (usize, bool) {
    let mut done = 0usize;
    loop {
        let want = budget.saturating_sub(done).min(BATCH);
        if want == 0 {
            return (done, true);
        }
        let got = bufs.batch(fd, want, true).unwrap_or(0);
        for j in 0..got {
            each(bufs, j);
        }
        done += got;
        if got < want {
            return (done, false);
        }
    }
}

/// The GID an IP address stands for (RoCE v2: IPv4-mapped for IPv4).
pub fn ip_gid(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

impl Bufs {
    /// Datagram `j` of the last batch (taken with `meta`): its addresses
    /// and ancillary data (the destination unspecified if the kernel gave
    /// none) and its payload; None for a truncated or short one.
    fn datagram(&self, j: usize) -> Option<(RxMeta, &[u8])> {
        let s = self.slots.get(j)?;
        if s.flags & libc::MSG_TRUNC != 0 || s.len < MIN_LEN {
            return None;
        }
        let p = self.data.get(j * BUF..j * BUF + s.len)?;
        let name = self.names.get(j * NAME..(j + 1) * NAME)?;
        let ctrl = self.ctrl.get(j * CTRL..j * CTRL + s.clen)?;
        let (src, sport) = parse_name(name)?;
        let dst = match src {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        let mut m = RxMeta {
            src,
            dst,
            sport,
            tclass: 0,
            hop: 0,
        };
        parse_cmsgs(ctrl, &mut m);
        Some((m, p))
    }

    fn new() -> Bufs {
        Bufs {
            data: vec![0; BATCH * BUF],
            ctrl: vec![0; BATCH * CTRL],
            names: vec![0; BATCH * NAME],
            slots: vec![Slot::default(); BATCH],
        }
    }

    /// One nonblocking `recvmmsg` of at most `n` datagrams (at most
    /// [`BATCH`]) from `fd` into the buffers; returns how many arrived (0 on
    /// EAGAIN), `None` on any other error.  `meta`: ask for addresses and
    /// control data.
    fn batch(&mut self, fd: BorrowedFd<'_>, n: usize, meta: bool) -> Option<usize> {
        let n = n.min(BATCH);
        if n == 0 {
            return Some(0);
        }
        // SAFETY: iovec is plain data (a pointer and a length); all zero is
        // a valid (empty) value.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: mmsghdr is plain C data (integers, pointers, padding); all
        // zero is a valid value (no name, no control, no iovecs).
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let data = self.data.as_mut_ptr();
        let ctrl = self.ctrl.as_mut_ptr();
        let names = self.names.as_mut_ptr();
        for i in 0..n {
            iov[i].iov_base = data.wrapping_add(i * BUF).cast();
            iov[i].iov_len = BUF;
            let h = &mut hdrs[i].msg_hdr;
            h.msg_iov = &mut iov[i];
            h.msg_iovlen = 1;
            if meta {
                h.msg_name = names.wrapping_add(i * NAME).cast();
                h.msg_namelen = NAME as libc::socklen_t;
                h.msg_control = ctrl.wrapping_add(i * CTRL).cast();
                h.msg_controllen = CTRL as _;
            }
        }
        // SAFETY: `fd` is an open socket; the first `n` headers point to
        // disjoint regions of `self.data` (BUF bytes each), `self.names`
        // (NAME bytes each) and `self.ctrl` (CTRL bytes each), all of which
        // live (and are not otherwise borrowed) for the duration of the
        // call; `iov` outlives the call too.  MSG_DONTWAIT: never blocks; a
        // null timeout: no timer.
        let r = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                hdrs.as_mut_ptr(),
                n as _,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error().raw_os_error();
            return if e == Some(libc::EAGAIN) || e == Some(libc::EINTR) {
                Some(0)
            } else {
                None
            };
        }
        if r == 0 {
            return None;
        }
        let got = (r as usize).min(n);
        for (s, h) in self.slots.iter_mut().zip(hdrs.iter()).take(got) {
            // msg_controllen is a size_t with glibc, a socklen_t with musl.
            #[allow(clippy::unnecessary_cast)]
            let clen = h.msg_hdr.msg_controllen as usize;
            *s = Slot {
                len: (h.msg_len as usize).min(BUF),
                flags: h.msg_hdr.msg_flags,
                clen: clen.min(CTRL),
            };
        }
        Some(got)
    }
}

#[allow(dead_code)] // called by the wire engine (being written)
impl Sock {
    /// Opens the sockets of context `ctx_id` (see the module documentation)
    /// on the interface `ifindex` with the local addresses `addrs`.  Fails
    /// if no address could be bound (with the last errno: `EADDRINUSE` when
    /// e.g. the kernel's rxe holds port 4791; `EADDRNOTAVAIL` for no
    /// address), or if the unix socket cannot be made.
    pub fn open(dir: &Path, ctx_id: u32, ifindex: u32, addrs: &[IpAddr]) -> io::Result<Sock> {
        let mut udp: Vec<(IpAddr, OwnedFd)> = Vec::new();
        let mut last = None;
        for a in addrs {
            let a = a.to_canonical();
            if udp.iter().any(|(b, _)| *b == a) {
                continue;
            }
            match open_udp(a, ifindex) {
                Ok(fd) => {
                    let _ = sockopt::set_socket_recv_buffer_size(&fd, UDP_RCVBUF);
                    udp.push((a, fd))
                }
                Err(e) => last = Some(e),
            }
        }
        if udp.is_empty() {
            return Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EADDRNOTAVAIL)));
        }
        let path = fwd_path(dir, ctx_id);
        let _ = std::fs::remove_file(&path);
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        let listener = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, flags, None)?;
        bind(&listener, &SocketAddrUnix::new(&path)?)?;
        let sock = Sock {
            addrs: udp.iter().map(|(a, _)| *a).collect(),
            udp,
            late: std::array::from_fn(|_| OnceLock::new()),
            late_add: Mutex::new(()),
            listener,
            ep: epoll::create(epoll::CreateFlags::CLOEXEC)?,
            dir: dir.to_path_buf(),
            path,
            ctx_id,
            ifindex,
            senders: Arc::new(AtomicUsize::new(0)),
            groups: Mutex::new(Vec::new()),
            ready: AtomicU64::new(ALL_SOURCES),
            rx: Mutex::new(Rx {
                bufs: Bufs::new(),
                conns: Conns::default(),
                flows: Vec::new(),
                pinned: Vec::new(),
                next: 0,
            }),
        };
        // (From here on, dropping `sock` unlinks the path.)
        listen(&sock.listener, 64)?;
        epoll::add(
            &sock.ep,
            &sock.listener,
            epoll::EventData::new_u64(LISTENER_TAG),
            epoll::EventFlags::IN,
        )?;
        Ok(sock)
    }

    /// The descriptors to wait on, for the context thread's epoll set: the
    /// UDP sockets and an epoll descriptor holding the forwarding listener
    /// and connections (readable when any of them is).  Level triggered:
    /// [`Sock::recv`] drains what makes them readable.
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        self.udp
            .iter()
            .map(|(_, fd)| fd.as_fd())
            .chain(std::iter::once(self.ep.as_fd()))
            .collect()
    }

    /// Which of [`Sock::fds`] an `epoll_wait` that returned just now found
    /// readable (bit `i`: the `i`th): the next [`Sock::recv`] looks only at
    /// those, and the one after at every source again.  For a caller whose
    /// own epoll set holds each of [`Sock::fds`] under its own token (the
    /// agent): a datagram that comes after that `epoll_wait` leaves its
    /// socket readable for the next one (level triggered), so nothing
    /// waits longer than one more turn; and an idle socket costs no
    /// `recvmmsg` that finds nothing (one system call per socket per turn
    /// otherwise, each turn of a round trip).
    pub fn hint_ready(&self, mask: u64) {
        let n = self.udp.len() + 1;
        let all = n >= 64 || mask == ALL_SOURCES;
        self.ready
            .store(if all { ALL_SOURCES } else { mask }, Ordering::Relaxed);
    }

    /// The addresses bound (canonical: IPv4 as `V4`), in the order given to
    /// [`Sock::open`], without those that failed, then those of
    /// [`Sock::add_addrs`].
    pub fn addrs(&self) -> Vec<IpAddr> {
        self.addrs
            .iter()
            .copied()
            .chain(self.late_addrs().map(|(a, _)| *a))
            .collect()
    }

    /// Whether `a` (canonical) is one of the addresses bound.
    pub fn has_addr(&self, a: &IpAddr) -> bool {
        self.addrs.contains(a) || self.late_addrs().any(|(b, _)| b == a)
    }

    /// The addresses added after [`Sock::open`] and their sockets.
    fn late_addrs(&self) -> impl Iterator<Item = &(IpAddr, OwnedFd)> {
        self.late.iter().map_while(OnceLock::get)
    }

    /// Binds those of `addrs` that are not bound yet (an address the
    /// interface gained after [`Sock::open`]: an IPv6 address out of
    /// duplicate address detection, one added by its owner), as `open`
    /// binds its own; a context that lives long (the user's agent) takes
    /// them when a client arrives.  The addresses bound now; one that
    /// cannot be bound is left for a later call.
    pub fn add_addrs(&self, addrs: &[IpAddr]) -> Vec<IpAddr> {
        let _g = self.late_add.lock().unwrap_or_else(|p| p.into_inner());
        let mut added = Vec::new();
        for a in addrs.iter().map(IpAddr::to_canonical) {
            if self.has_addr(&a) {
                continue;
            }
            let Some(slot) = self.late.iter().find(|l| l.get().is_none()) else {
                break;
            };
            let Ok(fd) = open_udp(a, self.ifindex) else { continue };
            let _ = sockopt::set_socket_recv_buffer_size(&fd, UDP_RCVBUF);
            let tag = LATE_TAG | fd.as_raw_fd() as u64;
            if epoll::add(&self.ep, &fd, epoll::EventData::new_u64(tag), epoll::EventFlags::IN).is_err() {
                continue;
            }
            if slot.set((a, fd)).is_ok() {
                added.push(a);
            }
        }
        added
    }

    /// The socket that sends from `src` (canonical): `via` when it is bound
    /// to `src`, else the address's port 4791 socket.
    fn source_fd<'a>(&'a self, src: &IpAddr, via: Option<&'a Arc<Sender>>) -> Option<BorrowedFd<'a>> {
        if let Some(v) = via.filter(|v| v.is_on(src)) {
            return Some(v.fd.as_fd());
        }
        self.udp
            .iter()
            .chain(self.late_addrs())
            .find(|(a, _)| a == src)
            .map(|(_, fd)| fd.as_fd())
    }

    /// Sends one datagram made of `parts` (at most 16) from local address
    /// `src` (one of [`Sock::addrs`]; v4-mapped IPv6 taken as IPv4) to
    /// `dst`:4791, through `via` (a QP's [`Sender`] on `src`) or else the
    /// address's port 4791 socket.  Nonblocking: EAGAIN/ENOBUFS is returned
    /// as an error (the caller treats it as a lost packet, RC retransmits);
    /// EMSGSIZE when the datagram exceeds the path MTU (DF).
    pub fn send(
        &self,
        src: &IpAddr,
        via: Option<&Arc<Sender>>,
        dst: &IpAddr,
        parts: &[&[u8]],
        tclass: u8,
    ) -> io::Result<()> {
        if tclass != 0 {
            return self.send_with_tos(src, via, dst, parts, tclass);
        }
        let (src, dst) = (src.to_canonical(), dst.to_canonical());
        let Some(fd) = self.source_fd(&src, via) else {
            return Err(io::Error::from_raw_os_error(libc::EADDRNOTAVAIL));
        };
        if parts.len() > MAX_PARTS {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut iov = [IoSlice::new(&[]); MAX_PARTS];
        for (v, p) in iov.iter_mut().zip(parts) {
            *v = IoSlice::new(p);
        }
        let iov = &iov[..parts.len()];
        let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
        let mut ctl = SendAncillaryBuffer::default();
        match (src, dst) {
            (IpAddr::V4(_), IpAddr::V4(d)) => sendmsg_addr(fd, &SocketAddrV4::new(d, PORT), iov, &mut ctl, flags)?,
            (IpAddr::V6(_), IpAddr::V6(d)) => {
                let scope = if mcast::needs_scope(&d) { self.ifindex } else { 0 };
                sendmsg_addr(fd, &SocketAddrV6::new(d, PORT, 0, scope), iov, &mut ctl, flags)?
            }
            _ => return Err(io::Error::from_raw_os_error(libc::EAFNOSUPPORT)),
        };
        if let Some(p) = parts.first() {
            record::note(Ev::Tx, p);
        }
        Ok(())
    }

    /// [`Sock::send`] with a traffic class: one packet through
    /// [`Sock::send_batch`]'s path, which carries it.
    fn send_with_tos(
        &self,
        src: &IpAddr,
        via: Option<&Arc<Sender>>,
        dst: &IpAddr,
        parts: &[&[u8]],
        tclass: u8,
    ) -> io::Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut b = TxBatch::with_slots(len, 1);
        let mut at = 0;
        for p in parts {
            b.data[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        b.push(*src, via, *dst, 0, len, tclass);
        if self.send_batch(&mut b) == 1 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(libc::EAGAIN))
        }
    }

    /// Sends the packets of `b` with `sendmmsg` (as few calls as the
    /// kernel takes them in; each segmentation group of the batch as one
    /// message) and empties it.  Nonblocking, as [`Sock::send`]: packets
    /// the kernel refuses (EAGAIN, ENOBUFS …) are dropped, as a lost packet
    /// (RC retransmits); returns how many left.  A group that the kernel
    /// refuses for another reason turns segmentation offload off for good
    /// (its packets are lost: their ICRCs hold identifications that only
    /// the group gives them; the retransmissions leave one by one).
    pub fn send_batch(&self, b: &mut TxBatch) -> usize {
        let src = b.src.map(|a| a.to_canonical());
        let fd = src.and_then(|s| self.source_fd(&s, b.via.as_ref()));
        let (Some(src), Some(fd)) = (src, fd) else {
            b.clear();
            return 0;
        };
        let mut names = [([0u8; NAME], 0usize); TX_BATCH];
        let mut ctrl = [[0u8; SEND_CTRL]; TX_BATCH];
        let mut clen = [0usize; TX_BATCH];
        // SAFETY: iovec and mmsghdr are plain C data; all zero is valid.
        let mut iov: [libc::iovec; TX_BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut hdrs: [libc::mmsghdr; TX_BATCH] = unsafe { std::mem::zeroed() };
        // Per message: its first packet (index into b.pkts and iov) and count.
        let mut groups = [(0usize, 0usize); TX_BATCH];
        let mut k = 0;
        for (i, &(dst, st, len, _, seg)) in b.pkts.iter().enumerate() {
            iov[i].iov_base = b.data[i * b.slot + st..].as_mut_ptr().cast();
            iov[i].iov_len = len;
            if seg == 0 || k == 0 {
                // (a family mismatch is never sent, as in `send`)
                if src.is_ipv4() != dst.to_canonical().is_ipv4() {
                    groups[k] = (i, 0);
                } else {
                    groups[k] = (i, 1);
                }
                k += 1;
            } else if groups[k - 1].1 > 0 {
                groups[k - 1].1 += 1;
            }
        }
        let mut m = 0;
        for g in 0..k {
            let (first, n) = groups[g];
            if n == 0 {
                continue;
            }
            let (dst, _, len, tclass, _) = b.pkts[first];
            let seg_size = if n > 1 { len as u16 } else { 0 };
            names[m] = raw_sockaddr(dst, self.ifindex);
            clen[m] = send_cmsgs(&mut ctrl[m], src.is_ipv4(), tclass, seg_size);
            groups[m] = (first, n);
            m += 1;
        }
        for i in 0..m {
            let h = &mut hdrs[i].msg_hdr;
            h.msg_iov = &mut iov[groups[i].0];
            h.msg_iovlen = groups[i].1 as _;
            h.msg_name = names[i].0.as_mut_ptr().cast();
            h.msg_namelen = names[i].1 as libc::socklen_t;
            if clen[i] > 0 {
                h.msg_control = ctrl[i].as_mut_ptr().cast();
                h.msg_controllen = clen[i] as _;
            }
        }
        let mut left = [false; TX_BATCH];
        let mut sent = 0;
        while sent < m {
            // SAFETY: `fd` is an open UDP socket; headers `sent..m` point to
            // their iovecs (into `b.data`, inside their slots), socket
            // address and control messages (or none), all alive and not
            // otherwise borrowed during the call.
            let r = unsafe {
                libc::sendmmsg(
                    fd.as_raw_fd(),
                    hdrs[sent..].as_mut_ptr(),
                    (m - sent) as _,
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if r <= 0 {
                let e = io::Error::last_os_error().raw_os_error();
                if r < 0 && e == Some(libc::EINTR) {
                    continue;
                }
                if r < 0 && (e == Some(libc::EAGAIN) || e == Some(libc::ENOBUFS)) {
                    break; // no room: the rest is lost (RC retransmits)
                }
                // This message is refused (e.g. EMSGSIZE): dropped, the rest
                // tried; a group's refusal ends segmentation offload.
                if groups[sent].1 > 1 {
                    GSO_OFF.store(true, Ordering::Relaxed);
                }
                sent += 1;
                continue;
            }
            for &(first, n) in &groups[sent..sent + r as usize] {
                left[first..first + n].fill(true);
            }
            sent += r as usize;
        }
        if record::on() {
            for (i, &(_, st, len, _, _)) in b.pkts.iter().enumerate() {
                let p = &b.data[i * b.slot + st..i * b.slot + st + len];
                record::note(if left[i] { Ev::Tx } else { Ev::TxFail }, p);
            }
        }
        b.clear();
        left.iter().filter(|&&l| l).count()
    }

    /// A new forwarding connection to context `owner`, if it listens.
    fn connect_to(&self, owner: u32) -> Option<OwnedFd> {
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        let fd = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, flags, None).ok()?;
        // Best effort (capped by net.core.wmem_max): the forwards in flight.
        let _ = sockopt::set_socket_send_buffer_size(&fd, FWD_SNDBUF);
        connect(&fd, &SocketAddrUnix::new(fwd_path(&self.dir, owner)).ok()?).ok()?;
        Some(fd)
    }

    /// Forwards a datagram to the context owning its QPN; failures drop it.
    fn forward(&self, conns: &mut Conns, owner: u32, m: &RxMeta, payload: &[u8]) {
        let h = swrdma_roce::fwd::header(m, self.ifindex);
        let iov = [IoSlice::new(&h), IoSlice::new(payload)];
        let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
        // A second try with a new connection if the cached one is broken.
        for _ in 0..2 {
            let i = match conns.out.iter().position(|(o, _)| *o == owner) {
                Some(i) => i,
                None => {
                    let Some(fd) = self.connect_to(owner) else {
                        return record::note(Ev::UdpFwdErr, payload);
                    };
                    if conns.out.len() >= MAX_CONNS {
                        conns.out.remove(0);
                    }
                    conns.out.push((owner, fd));
                    conns.out.len() - 1
                }
            };
            match sendmsg(&conns.out[i].1, &iov, &mut SendAncillaryBuffer::default(), flags) {
                Ok(_) => return record::note(Ev::UdpFwd, payload),
                // EAGAIN: the owner is that far behind; dropped.
                Err(Errno::AGAIN) => return record::note(Ev::UdpFwdFull, payload),
                Err(_) => {
                    conns.out.swap_remove(i);
                }
            }
        }
        record::note(Ev::UdpFwdErr, payload);
    }

    /// Hands a datagram for QP1 (a CM MAD) to the wire agent of our user
    /// and interface, which owns QP1 and its flows (it connects a flow
    /// socket of its own to the sender, so only a peer's first MAD comes
    /// this way).  Dropped when no agent runs: nobody on this interface
    /// uses rdma_cm then (the interposer starts the agent for its ids).
    fn to_agent(&self, conns: &mut Conns, m: &RxMeta, payload: &[u8]) {
        let h = swrdma_roce::fwd::header(m, self.ifindex);
        // Behind what waits already, if anything does (it goes first).
        let sent = if conns.agent_queue.is_empty() {
            self.send_to_agent(conns, &[IoSlice::new(&h), IoSlice::new(payload)])
        } else {
            Err(Errno::AGAIN)
        };
        match sent {
            Ok(()) => record::note(Ev::UdpFwd, payload),
            // No room: a burst of first MADs from a host the agent has no
            // flow socket for yet (cmtime's 200 REQs) came this way faster
            // than the agent reads, or the agent waits for a CPU.  One
            // dropped costs the peer's CM its retry timer (6.1 s for a
            // REQ), and waiting here would hold this context's own QPs up:
            // it waits in the queue, sent on the connection's EPOLLOUT.
            Err(Errno::AGAIN) => {
                if conns.agent_queue.len() >= AGENT_QUEUE_MAX {
                    record::note(Ev::UdpFwdFull, payload);
                } else {
                    let until = std::time::Instant::now() + AGENT_QUEUE_FOR;
                    conns.agent_queue.push_back(([&h[..], payload].concat(), until));
                }
                self.flush_agent(conns);
            }
            // No agent listens: nobody owns QP1 here.
            Err(Errno::CONNREFUSED) => record::note(Ev::UdpNoOwner, payload),
            Err(_) => record::note(Ev::UdpFwdErr, payload),
        }
    }

    /// The connection to the agent's intake, made if need be (the
    /// connect's error when it cannot be).
    fn agent_conn<'a>(&self, conns: &'a mut Conns) -> Result<&'a OwnedFd, Errno> {
        if conns.agent.is_none() {
            let name = crate::proto::qp1_name(
                rustix::process::geteuid().as_raw(),
                self.ifindex,
                &std::env::var("SWRDMA_WIRED_SCOPE").unwrap_or_default(),
            );
            let fl = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
            let fd = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, fl, None)?;
            let a = SocketAddrUnix::new_abstract_name(&name)?;
            connect(&fd, &a)?;
            conns.agent_watched = false;
            return Ok(conns.agent.insert(fd));
        }
        conns.agent.as_ref().ok_or(Errno::NOTCONN)
    }

    /// One datagram to the agent's intake (a connection made again once
    /// if the one there broke); `AGAIN` when it has no room,
    /// `CONNREFUSED` when no agent listens.
    fn send_to_agent(&self, conns: &mut Conns, iov: &[IoSlice<'_>]) -> Result<(), Errno> {
        let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
        for _ in 0..2 {
            let fd = self.agent_conn(conns)?;
            match sendmsg(fd, iov, &mut SendAncillaryBuffer::default(), flags) {
                Ok(_) => return Ok(()),
                Err(Errno::AGAIN) => return Err(Errno::AGAIN),
                // (closing it takes it out of the epoll set)
                Err(_) => {
                    conns.agent = None;
                    conns.agent_watched = false;
                }
            }
        }
        Err(Errno::PIPE)
    }

    /// Sends what waits for the agent's intake, in order, while it has
    /// room (what waited too long goes); watches the connection for room
    /// while something is left, and no longer once nothing is.  The
    /// recorder notes each by its payload, as [`Sock::to_agent`] does.
    fn flush_agent(&self, conns: &mut Conns) {
        let now = std::time::Instant::now();
        while let Some((msg, until)) = conns.agent_queue.pop_front() {
            let payload = &msg[swrdma_roce::fwd::HDR..];
            if until <= now {
                record::note(Ev::UdpFwdFull, payload);
                continue;
            }
            match self.send_to_agent(conns, &[IoSlice::new(&msg)]) {
                Ok(()) => record::note(Ev::UdpFwd, payload),
                // No room, or no agent to take it: left for the next try
                // (EPOLLOUT, or the next datagram for QP1), until it is
                // given up.
                Err(_) => {
                    conns.agent_queue.push_front((msg, until));
                    break;
                }
            }
        }
        let want = !conns.agent_queue.is_empty();
        if want != conns.agent_watched {
            if let Some(fd) = conns.agent.as_ref() {
                if want {
                    let (data, ev) = (epoll::EventData::new_u64(AGENT_TAG), epoll::EventFlags::OUT);
                    conns.agent_watched = epoll::add(&self.ep, fd, data, ev).is_ok();
                } else {
                    // (a connection not in the set is not watched either)
                    let _ = epoll::delete(&self.ep, fd);
                    conns.agent_watched = false;
                }
            }
        }
        // Waiting with no connection whose EPOLLOUT would say when (its
        // connect found the intake's backlog full, or no agent listened
        // when the connection broke): `recv` tries again after a while,
        // not only when the next datagram for QP1 comes (there may be none:
        // a peer's last REP waits for its retry, 4 s and more).
        conns.agent_retry = (want && !conns.agent_watched).then(|| now + AGENT_RETRY);
    }

    /// Accepts the pending forwarding connections (called only when the
    /// listener is readable: see [`Sock::recv_forwards`]).
    fn accept_all(&self, conns: &mut Conns) {
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        while let Ok(fd) = accept_with(&self.listener, flags) {
            // Beyond the limit, closed at once (the listener must not stay
            // readable).
            if conns.inc.len() < MAX_CONNS
                && epoll::add(
                    &self.ep,
                    &fd,
                    epoll::EventData::new_u64(conn_tag(fd.as_fd())),
                    epoll::EventFlags::IN,
                )
                .is_ok()
            {
                conns.inc.push(fd);
            }
        }
    }

    /// Drains up to `max` datagrams from all sockets, calling `f(meta,
    /// udp_payload)` for those whose destination QPN is ours (`mine`),
    /// forwarding the others to their owner (`owner`; dropped if `None`);
    /// returns how many datagrams it handled (ours, forwarded and dropped).
    /// Returns 0 at once if another thread is receiving.
    pub fn recv(
        &self,
        max: usize,
        mine: &dyn Fn(u32) -> bool,
        owner: &dyn Fn(u32) -> Option<u32>,
        f: &mut dyn FnMut(&RxMeta, &[u8]),
    ) -> usize {
        let mut guard = match self.rx.try_lock() {
            Ok(g) => g,
            Err(TryLockError::WouldBlock) => return 0,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
        };
        let rx = &mut *guard;
        let ready = self.ready.swap(ALL_SOURCES, Ordering::Relaxed);
        let nsrc = self.udp.len() + 1;
        let start = rx.next % nsrc;
        rx.next = (start + 1) % nsrc;
        let mut done = 0usize;
        for k in 0..nsrc {
            let i = (start + k) % nsrc;
            if ready != ALL_SOURCES && ready & (1 << i) == 0 {
                // (A forward to the agent that is due again still goes.)
                if i == nsrc - 1 && rx.conns.agent_retry.is_some_and(|t| std::time::Instant::now() >= t) {
                    self.flush_agent(&mut rx.conns);
                }
                continue;
            }
            let Some((addr, fd)) = self.udp.get(i) else {
                done += self.recv_forwards(rx, max.saturating_sub(done), mine, owner, f);
                continue;
            };
            let conns = &mut rx.conns;
            let mut each = |b: &Bufs, j| self.handle_udp(b, conns, j, *addr, mine, owner, f);
            let (n, spent) = drain(&mut rx.bufs, fd.as_fd(), max.saturating_sub(done), &mut each);
            done += n;
            if spent {
                return done;
            }
        }
        done
    }

    /// Accepts new forwarding connections and drains up to `max` forwarded
    /// datagrams from those that are readable, and from the flow sockets
    /// that are; closes the connections that ended, and opens a flow socket
    /// for a forwarded datagram's flow (see [`Flow`]).
    ///
    /// Only what the epoll set of the listener and the connections reports
    /// ready is touched (one `epoll_wait` that does not wait): an `accept`
    /// that finds no connection still makes and frees a socket in the
    /// kernel (its inode freed after an RCU grace period), and this runs at
    /// every poll of the application's CQ.  Measured with an `accept` per
    /// poll: 13 % of all CPU time of 4 ping-pong pairs in `accept4`, and
    /// the RCU callbacks freeing those sockets kept both CPUs in softirq
    /// for 0.2-1 s at a time, during which no datagram was delivered to
    /// anyone: the RC retry budget (7 x 67 ms) ran out (`wire-soak`
    /// `pairs/clean`, issue 23).
    fn recv_forwards(
        &self,
        rx: &mut Rx,
        max: usize,
        mine: &dyn Fn(u32) -> bool,
        owner: &dyn Fn(u32) -> Option<u32>,
        f: &mut dyn FnMut(&RxMeta, &[u8]),
    ) -> usize {
        let none = epoll::Event {
            flags: epoll::EventFlags::empty(),
            data: epoll::EventData::new_u64(0),
        };
        if rx.conns.agent_retry.is_some_and(|t| std::time::Instant::now() >= t) {
            self.flush_agent(&mut rx.conns);
        }
        let mut evs = [none; EP_EVENTS];
        let zero = rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 };
        let n = epoll::wait(&self.ep, &mut evs, Some(&zero)).unwrap_or(0);
        let mut ready = [0u64; EP_EVENTS];
        let mut nready = 0;
        for e in evs.iter().take(n) {
            match e.data.u64() {
                LISTENER_TAG => self.accept_all(&mut rx.conns),
                AGENT_TAG => self.flush_agent(&mut rx.conns),
                t => {
                    ready[nready] = t;
                    nready += 1;
                }
            }
        }
        let ready = &ready[..nready];
        let mut done = self.recv_flows(rx, ready, max, mine, owner, f);
        done += self.recv_groups(rx, ready, max.saturating_sub(done), f);
        done += self.recv_late(rx, ready, max.saturating_sub(done), mine, owner, f);
        let mut new_flows: Vec<(IpAddr, IpAddr, u16)> = Vec::new();
        let mut c = 0usize;
        while c < rx.conns.inc.len() {
            if !ready.contains(&conn_tag(rx.conns.inc[c].as_fd())) {
                c += 1;
                continue;
            }
            let mut dead = false;
            loop {
                let want = max.saturating_sub(done).min(BATCH);
                if want == 0 {
                    break;
                }
                let got = match rx.bufs.batch(rx.conns.inc[c].as_fd(), want, false) {
                    Some(g) => g,
                    None => {
                        dead = true;
                        0
                    }
                };
                for j in 0..got {
                    // We never send an empty message: this is the end.
                    if rx.bufs.slots.get(j).is_none_or(|s| s.len == 0) {
                        dead = true;
                        break;
                    }
                    if let Some(flow) = self.handle_fwd(&rx.bufs, j, mine, f) {
                        new_flows.push(flow);
                    }
                    done += 1;
                }
                if dead || got < want {
                    break;
                }
            }
            if dead {
                // Closing removes it from the epoll set.
                rx.conns.inc.swap_remove(c);
            } else {
                c += 1;
            }
        }
        for (local, peer, sport) in new_flows {
            self.open_flow(rx, local, peer, sport);
        }
        done
    }

    /// Drains the sockets of late addresses that `ready` names, up to
    /// `max` datagrams in all, as the first addresses' sockets are drained.
    fn recv_late(
        &self,
        rx: &mut Rx,
        ready: &[u64],
        max: usize,
        mine: &dyn Fn(u32) -> bool,
        owner: &dyn Fn(u32) -> Option<u32>,
        f: &mut dyn FnMut(&RxMeta, &[u8]),
    ) -> usize {
        let mut done = 0usize;
        let Rx { bufs, conns, .. } = rx;
        for &t in ready.iter().filter(|&&t| t & LATE_TAG != 0) {
            let Some((addr, fd)) = self.late_addrs().find(|(_, fd)| LATE_TAG | fd.as_raw_fd() as u64 == t) else {
                continue;
            };
            let mut each = |b: &Bufs, j| self.handle_udp(b, conns, j, *addr, mine, owner, f);
            let (n, spent) = drain(bufs, fd.as_fd(), max.saturating_sub(done), &mut each);
            done += n;
            if spent {
                break;
            }
        }
        done
    }

    /// Drains the flow sockets that `ready` names, up to `max` datagrams
    /// in all, as the UDP sockets are drained.
    fn recv_flows(
        &self,
        rx: &mut Rx,
        ready: &[u64],
        max: usize,
        mine: &dyn Fn(u32) -> bool,
        owner: &dyn Fn(u32) -> Option<u32>,
        f: &mut dyn FnMut(&RxMeta, &[u8]),
    ) -> usize {
        let mut done = 0usize;
        let Rx {
            bufs,
            conns,
            flows,
            pinned,
            ..
        } = rx;
        let tag = |f: &Flow| FLOW_TAG | f.fd.as_raw_fd() as u64;
        for &t in ready.iter().filter(|&&t| t & FLOW_TAG != 0) {
            // The ready flow: one of ours, or one a QP holds (kept alive
            // while it is drained).
            let held;
            let fl = match flows.iter().find(|f| tag(f) == t) {
                Some(f) => f,
                None => match pinned.iter().filter_map(Weak::upgrade).find(|f| tag(f) == t) {
                    Some(f) => {
                        held = f;
                        &*held
                    }
                    None => continue,
                },
            };
            let mut each = |b: &Bufs, j| self.handle_udp(b, conns, j, fl.local, mine, owner, f);
            let (n, spent) = drain(bufs, fl.fd.as_fd(), max.saturating_sub(done), &mut each);
            done += n;
            if spent {
                return done;
            }
        }
        done
    }

    /// A flow socket for datagrams from `peer`:`sport` to `local`:4791
    /// (see [`Flow`]), unless there is one; best effort (a datagram that
    /// cannot have one keeps being forwarded).
    fn open_flow(&self, rx: &mut Rx, local: IpAddr, peer: IpAddr, sport: u16) {
        let same = |f: &Flow| f.local == local && f.peer == peer && f.sport == sport;
        if rx.flows.iter().any(same) || rx.pinned.iter().any(|w| w.upgrade().is_some_and(|f| same(&f))) {
            return;
        }
        let Some(fd) = self.flow_socket(local, peer, sport) else {
            return;
        };
        if rx.flows.len() >= MAX_FLOWS {
            // (Closing removes it from the epoll set; what it held is lost,
            // as a datagram the kernel drops: RC retransmits.)
            rx.flows.remove(0);
        }
        rx.flows.push(Flow { local, peer, sport, fd });
    }

    /// A UDP socket of `local`:4791's group connected to `peer`:`sport`,
    /// in the epoll set.
    fn flow_socket(&self, local: IpAddr, peer: IpAddr, sport: u16) -> Option<OwnedFd> {
        let fd = open_udp(local, self.ifindex).ok()?;
        let _ = sockopt::set_socket_recv_buffer_size(&fd, UDP_RCVBUF);
        let connected = match peer {
            IpAddr::V4(a) => connect(&fd, &SocketAddrV4::new(a, sport)),
            IpAddr::V6(a) => {
                let scope = if is_link_local(&a) { self.ifindex } else { 0 };
                connect(&fd, &SocketAddrV6::new(a, sport, 0, scope))
            }
        };
        let tag = FLOW_TAG | fd.as_raw_fd() as u64;
        connected.ok()?;
        epoll::add(&self.ep, &fd, epoll::EventData::new_u64(tag), epoll::EventFlags::IN).ok()?;
        Some(fd)
    }

    /// The flow socket that a connected QP on `local` holds for its peer
    /// `peer` sending from `sport` (see [`FlowPin`]): the one the context
    /// has for that flow, else a new one; None when steering is off, the
    /// context holds [`MAX_PINNED`] already or the socket cannot be made
    /// (the QP's packets are then forwarded as any).
    pub fn pin_flow(&self, local: IpAddr, peer: IpAddr, sport: u16) -> Option<FlowPin> {
        if !steer_on() {
            return None;
        }
        let (local, peer) = (local.to_canonical(), peer.to_canonical());
        let mut g = self.rx.lock().unwrap_or_else(|p| p.into_inner());
        let rx = &mut *g;
        rx.pinned.retain(|w| w.strong_count() > 0);
        let same = |f: &Flow| f.local == local && f.peer == peer && f.sport == sport;
        if let Some(f) = rx.pinned.iter().filter_map(Weak::upgrade).find(|f| same(f)) {
            return Some(FlowPin { _flow: f });
        }
        if rx.pinned.len() >= MAX_PINNED {
            return None;
        }
        let flow = match rx.flows.iter().position(same) {
            Some(i) => rx.flows.remove(i),
            None => Flow {
                local,
                peer,
                sport,
                fd: self.flow_socket(local, peer, sport)?,
            },
        };
        let f = Arc::new(flow);
        rx.pinned.push(Arc::downgrade(&f));
        Some(FlowPin { _flow: f })
    }

    /// A [`Sender`] on `local` (one of ours) for source port `port`; None
    /// when steering is off, the context has [`MAX_SENDERS`] or the port
    /// cannot be bound (e.g. a program of another user holds it): the QP's
    /// packets then leave from port 4791, as every QP's did before.
    pub fn sender(&self, local: IpAddr, port: u16) -> Option<Arc<Sender>> {
        let local = local.to_canonical();
        if !steer_on() || !self.has_addr(&local) {
            return None;
        }
        if self.senders.fetch_add(1, Ordering::Relaxed) >= MAX_SENDERS {
            self.senders.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        // (From here on, dropping the Sender gives the count back.)
        let fd = match open_sender(local, port, self.ifindex) {
            Ok(fd) => fd,
            Err(_) => {
                self.senders.fetch_sub(1, Ordering::Relaxed);
                return None;
            }
        };
        Some(Arc::new(Sender {
            fd,
            local,
            port,
            count: self.senders.clone(),
        }))
    }

    /// Attaches QP `qpn` to the group of `mgid` (see `mcast.rs`): the
    /// context joins it on first use.  EINVAL for an MGID that is not a
    /// multicast group of our address family; ENOMEM beyond
    /// [`mcast::MAX_GROUPS`]; the kernel's errno if the socket cannot be
    /// made or joined.
    pub fn join_group(&self, mgid: &[u8; 16], qpn: u32) -> Result<(), i32> {
        let group = mcast::group_addr(mgid).ok_or(libc::EINVAL)?;
        let mut g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = g.iter_mut().find(|e| e.mgid == *mgid) {
            if !e.qpns.contains(&qpn) {
                e.qpns.push(qpn);
            }
            return Ok(());
        }
        if g.len() >= mcast::MAX_GROUPS {
            return Err(libc::ENOMEM);
        }
        let err = |e: io::Error| e.raw_os_error().unwrap_or(libc::EINVAL);
        let fd = mcast::open(group, self.ifindex).map_err(err)?;
        let tag = mcast::tag(fd.as_fd());
        epoll::add(&self.ep, &fd, epoll::EventData::new_u64(tag), epoll::EventFlags::IN)
            .map_err(|e| e.raw_os_error())?;
        g.push(Group {
            mgid: *mgid,
            fd: Arc::new(fd),
            qpns: vec![qpn],
        });
        Ok(())
    }

    /// QP `qpn` leaves the group of `mgid`; its socket goes with the last
    /// (closing it leaves the group and the epoll set).
    pub fn leave_group(&self, mgid: &[u8; 16], qpn: u32) {
        let mut g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = g.iter().position(|e| e.mgid == *mgid) {
            g[i].qpns.retain(|q| *q != qpn);
            if g[i].qpns.is_empty() {
                g.swap_remove(i);
            }
        }
    }

    /// QP `qpn` leaves every group it is in (it is destroyed, or its
    /// client gone); a group's socket goes with its last QP, as in
    /// [`Sock::leave_group`].
    pub fn leave_all(&self, qpn: u32) {
        let mut g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        for e in g.iter_mut() {
            e.qpns.retain(|q| *q != qpn);
        }
        g.retain(|e| !e.qpns.is_empty());
    }

    /// Our QPs attached to the group of `mgid`.
    pub fn group_members(&self, mgid: &[u8; 16]) -> Vec<u32> {
        let g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        g.iter()
            .find(|e| e.mgid == *mgid)
            .map_or(Vec::new(), |e| e.qpns.clone())
    }

    /// Drains the group sockets that `ready` names, up to `max` datagrams
    /// in all: each datagram to QPN 0xffffff is handed to `f` once (the
    /// engine gives it to every QP attached), anything else is dropped.
    fn recv_groups(&self, rx: &mut Rx, ready: &[u64], max: usize, f: &mut dyn FnMut(&RxMeta, &[u8])) -> usize {
        let mut done = 0usize;
        for &t in ready.iter().filter(|&&t| t & mcast::GROUP_TAG != 0) {
            // (Held without the lock: `f` looks the members up.)
            let fd = {
                let g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
                match g.iter().find(|e| e.tag() == t) {
                    Some(e) => e.fd.clone(),
                    None => continue,
                }
            };
            let mut each = |b: &Bufs, j| {
                if let Some((m, p)) = b.datagram(j) {
                    if dest_qpn(p) == Some(mcast::MCAST_QPN) && m.dst.to_canonical().is_multicast() {
                        record::note(Ev::UdpMine, p);
                        f(&m, p);
                    }
                }
            };
            let (n, spent) = drain(&mut rx.bufs, fd.as_fd(), max.saturating_sub(done), &mut each);
            done += n;
            if spent {
                return done;
            }
        }
        done
    }

    /// Handles datagram `j` of a batch from the UDP socket of `addr`.
    #[allow(clippy::too_many_arguments)]
    fn handle_udp(
        &self,
        bufs: &Bufs,
        conns: &mut Conns,
        j: usize,
        addr: IpAddr,
        mine: &dyn Fn(u32) -> bool,
        owner: &dyn Fn(u32) -> Option<u32>,
        f: &mut dyn FnMut(&RxMeta, &[u8]),
    ) {
        let Some((mut m, p)) = bufs.datagram(j) else { return };
        if m.dst.is_unspecified() {
            m.dst = addr;
        }
        let Some(qpn) = dest_qpn(p) else { return };
        if mine(qpn) {
            record::note(Ev::UdpMine, p);
            f(&m, p);
        } else if qpn == GSI_QPN {
            self.to_agent(conns, &m, p);
        } else if let Some(o) = owner(qpn) {
            if o != self.ctx_id {
                self.forward(conns, o, &m, p);
            }
        } else {
            record::note(Ev::UdpNoOwner, p);
        }
    }

    /// Handles datagram `j` of a batch from a forwarding connection;
    /// returns the flow (our address, the peer's address and source port)
    /// of a datagram for one of our QPs: one we may take directly.
    fn handle_fwd(
        &self,
        bufs: &Bufs,
        j: usize,
        mine: &dyn Fn(u32) -> bool,
        f: &mut dyn FnMut(&RxMeta, &[u8]),
    ) -> Option<(IpAddr, IpAddr, u16)> {
        let s = bufs.slots.get(j)?;
        if s.flags & libc::MSG_TRUNC != 0 || s.len < FWD_HDR + MIN_LEN {
            return None;
        }
        let d = bufs.data.get(j * BUF..j * BUF + s.len)?;
        let (m, ifindex) = swrdma_roce::fwd::parse(d)?;
        if !self.has_addr(&m.dst) {
            return None;
        }
        if let IpAddr::V6(a) = m.dst {
            if is_link_local(&a) && ifindex != self.ifindex {
                return None;
            }
        }
        let p = d.get(FWD_HDR..)?;
        match dest_qpn(p) {
            Some(qpn) if mine(qpn) => {
                record::note(Ev::FwdIn, p);
                f(&m, p);
                Some((m.dst, m.src, m.sport))
            }
            _ => None,
        }
    }
}

// Whichever thread makes progress receives and sends: `Sock` is shared.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Sock>()
};

impl Drop for Sock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// These tests bind the same loopback addresses' port 4791 (one
    /// `SO_REUSEPORT` group per address, whatever the test): run at once,
    /// they would take each other's datagrams.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static ONE: Mutex<()> = Mutex::new(());
        ONE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The inode number the kernel gives a new socket: socket inodes are
    /// numbered by one counter (batches per CPU), so the difference between
    /// two new sockets' numbers counts the sockets made in between.
    fn next_sock_ino() -> u64 {
        let s = socket_with(AddressFamily::UNIX, SocketType::DGRAM, SocketFlags::CLOEXEC, None).unwrap();
        let f = std::fs::File::from(s);
        f.metadata().unwrap().ino()
    }

    /// A fresh private directory, lo's index and context 1's sockets on
    /// `a`:4791; None (the test skips) when the port is held by another
    /// user or the kernel's rxe: nothing to measure then.
    fn first_context(test: &str, a: IpAddr) -> Option<(PathBuf, u32, Sock)> {
        let dir = std::env::temp_dir().join(format!("swrdma-{test}-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        // SAFETY: a NUL-terminated name.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        match Sock::open(&dir, 1, lo, &[a]) {
            Ok(s) => Some((dir, lo, s)),
            Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => {
                eprintln!("skipped: {a}:4791 is held by another user or the kernel's rxe");
                None
            }
            Err(e) => panic!("Sock::open: {e}"),
        }
    }

    /// A datagram to a multicast group (QPN 0xffffff) reaches every
    /// context that joined the group, once each, and no other; leaving
    /// stops it; the group socket goes with the last QP.
    #[test]
    fn a_group_datagram_reaches_each_context_joined_once() {
        let _one = one_at_a_time();
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        let Some((dir, lo, s1)) = first_context("mcast", a) else {
            return;
        };
        let s2 = Sock::open(&dir, 2, lo, &[a]).unwrap();
        let s3 = Sock::open(&dir, 3, lo, &[a]).unwrap();
        let g = Ipv4Addr::new(239, 255, 77, 1);
        let mgid = g.to_ipv6_mapped().octets();
        if let Err(e) = s1.join_group(&mgid, 7) {
            eprintln!("skipped: cannot join a group on lo here (errno {e})");
            return;
        }
        s1.join_group(&mgid, 8).unwrap();
        s1.join_group(&mgid, 8).unwrap();
        s2.join_group(&mgid, 9).unwrap();
        assert_eq!(s1.group_members(&mgid), vec![7, 8]);
        assert_eq!(s1.join_group(&[0; 16], 7), Err(libc::EINVAL));
        let mut pkt = [0u8; 40];
        pkt[5..8].copy_from_slice(&[0xff; 3]);
        // What each context takes in 150 ms (a copy too many would show).
        let count = |socks: &[&Sock]| {
            let mut n = vec![0usize; socks.len()];
            for _ in 0..150 {
                for (i, s) in socks.iter().enumerate() {
                    s.recv(64, &|_| false, &|_| None, &mut |m, p| {
                        if m.dst == IpAddr::V4(g) && dest_qpn(p) == Some(mcast::MCAST_QPN) {
                            n[i] += 1;
                        }
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            n
        };
        s3.send(&a, None, &IpAddr::V4(g), &[&pkt], 0).unwrap();
        assert_eq!(count(&[&s1, &s2, &s3]), vec![1, 1, 0]);
        s2.leave_group(&mgid, 9);
        assert!(s2.group_members(&mgid).is_empty());
        s3.send(&a, None, &IpAddr::V4(g), &[&pkt], 0).unwrap();
        assert_eq!(count(&[&s1, &s2, &s3]), vec![1, 0, 0]);
        drop((s1, s2, s3));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A QP that goes leaves every group it is in at once: a group whose
    /// last member it was loses its socket (and its datagrams), the others
    /// keep their other members.
    #[test]
    fn leave_all_takes_a_qp_out_of_every_group() {
        let _one = one_at_a_time();
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        let Some((dir, _lo, s)) = first_context("leave-all", a) else {
            return;
        };
        let g1 = Ipv4Addr::new(239, 255, 77, 2);
        let g2 = Ipv4Addr::new(239, 255, 77, 3);
        let (m1, m2) = (g1.to_ipv6_mapped().octets(), g2.to_ipv6_mapped().octets());
        if let Err(e) = s.join_group(&m1, 7) {
            eprintln!("skipped: cannot join a group on lo here (errno {e})");
            return;
        }
        s.join_group(&m1, 8).unwrap();
        s.join_group(&m2, 7).unwrap();
        let groups = |s: &Sock| s.groups.lock().unwrap().len();
        assert_eq!(groups(&s), 2);
        s.leave_all(9);
        assert_eq!(
            (s.group_members(&m1), s.group_members(&m2)),
            (vec![7, 8], vec![7]),
            "not a member: no change"
        );
        s.leave_all(7);
        assert_eq!(s.group_members(&m1), vec![8]);
        assert!(s.group_members(&m2).is_empty());
        assert_eq!(groups(&s), 1, "g2's socket went with its last QP");
        // What still comes to g2 reaches nobody; g1's still comes.
        let mut pkt = [0u8; 40];
        pkt[5..8].copy_from_slice(&[0xff; 3]);
        s.send(&a, None, &IpAddr::V4(g2), &[&pkt], 0).unwrap();
        s.send(&a, None, &IpAddr::V4(g1), &[&pkt], 0).unwrap();
        let mut got = Vec::new();
        for _ in 0..150 {
            s.recv(64, &|_| false, &|_| None, &mut |m, p| {
                if dest_qpn(p) == Some(mcast::MCAST_QPN) {
                    got.push(m.dst);
                }
            });
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(got, vec![IpAddr::V4(g1)]);
        s.leave_all(8);
        assert_eq!(groups(&s), 0);
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Receives on both contexts until `owner_ctx` (context 1, which owns
    /// QP `qpn`) has taken `want` datagrams (or 0.5 s passed): (taken,
    /// handled by `other`, the source ports of those taken).
    fn take(owner_ctx: &Sock, other: &Sock, qpn: u32, want: usize) -> (usize, usize, Vec<u16>) {
        let mine = |q: u32| q == qpn;
        let owner = |q: u32| (q == qpn).then_some(1);
        let (mut fwd, mut got, mut sports) = (0, 0, Vec::new());
        for _ in 0..500 {
            fwd += other.recv(64, &|_| false, &owner, &mut |_, _| {});
            owner_ctx.recv(64, &mine, &owner, &mut |m, _| {
                got += 1;
                sports.push(m.sport)
            });
            if got >= want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        (got, fwd, sports)
    }

    /// The agent's hint (`Sock::hint_ready`): a source it leaves out is not
    /// asked (its datagram waits), the receive after asks every source
    /// again, and a source it names is asked.
    #[test]
    fn a_hint_leaves_a_source_out_for_one_receive() {
        let _one = one_at_a_time();
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        let Some((dir, _lo, s)) = first_context("hint", a) else {
            return;
        };
        const QPN: u32 = 0x321;
        let mine = |q: u32| q == QPN;
        let owner = |_: u32| None;
        let mut pkt = [0u8; 16];
        pkt[5..8].copy_from_slice(&QPN.to_be_bytes()[1..]);
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = std::net::SocketAddr::new(a, PORT);
        // Sends one datagram and waits until the UDP socket has it.
        let send = || {
            peer.send_to(&pkt, to).unwrap();
            let fds = s.fds();
            let mut p = [rustix::event::PollFd::new(&fds[0], rustix::event::PollFlags::IN)];
            let t = rustix::event::Timespec { tv_sec: 5, tv_nsec: 0 };
            assert_eq!(rustix::event::poll(&mut p, Some(&t)), Ok(1));
        };
        let mut got = 0;
        let mut recv = |s: &Sock| s.recv(64, &mine, &owner, &mut |_, _| got += 1);
        send();
        s.hint_ready(0);
        assert_eq!(recv(&s), 0, "no source readable: none asked");
        assert_eq!(recv(&s), 1, "the next receive asks every source");
        send();
        s.hint_ready(1 << 1);
        assert_eq!(recv(&s), 0, "only the forwarding set asked");
        s.hint_ready(1);
        assert_eq!(recv(&s), 1, "the UDP socket asked");
        send();
        s.hint_ready(u64::MAX);
        assert_eq!(recv(&s), 1);
        assert_eq!(got, 3);
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Where a packet goes in a segmentation group: one destination, one
    /// traffic class, one length (a shorter one ends the group), at most
    /// [`GSO_SEGS`] datagrams and [`GSO_BYTES`] bytes.
    #[test]
    fn segmentation_groups_follow_the_kernels_rules() {
        let (a, b) = (
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
        );
        let mut t = TxBatch::with_slots(64, TX_BATCH);
        let put = |t: &mut TxBatch, dst, len, tc| {
            let k = t.seg_for(&dst, len, tc);
            t.push(a, None, dst, 0, len, tc);
            k
        };
        let got: Vec<u16> = [
            (b, 40, 0),
            (b, 40, 0),
            (b, 30, 0),
            (b, 30, 0),
            (a, 30, 0),
            (a, 30, 4),
            (a, 30, 4),
            (a, 31, 4),
        ]
        .iter()
        .map(|&(d, l, tc)| put(&mut t, d, l, tc))
        .collect();
        assert_eq!(got, [0, 1, 2, 0, 0, 0, 1, 0]);
        let mut t = TxBatch::with_slots(4200, TX_BATCH);
        let got: Vec<u16> = (0..TX_BATCH).map(|_| put(&mut t, b, 4112, 0)).collect();
        // 15 of 4112 bytes fit in 65507, a 16th does not
        assert_eq!(got[..17], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 1]);
    }

    /// A segmentation group leaves as its datagrams, each as built, with
    /// its traffic class, and the kernel gives the IPv4 ones the
    /// identifications their ICRCs were computed with (the group's place:
    /// 0, 1, 2 …), which a receiver such as rxe checks.  Received by a
    /// second context, as the wire receives.
    #[test]
    fn a_segmentation_group_arrives_as_its_datagrams_with_their_icrcs() {
        let _one = one_at_a_time();
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        let to = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9));
        let Some((dir, lo, s)) = first_context("gso", a) else {
            return;
        };
        let Ok(rx) = Sock::open(&dir, 2, lo, &[to]) else {
            return eprintln!("skipped: {to}:{PORT} is held");
        };
        let ip = swrdma_roce::IpInfo {
            src: a,
            dst: to,
            sport: PORT,
            dport: PORT,
            flow: 0,
        };
        let lens = [1036usize, 1036, 1036, 1036, 700];
        for tclass in [0u8, 0x68] {
            let mut b = TxBatch::with_slots(1100, TX_BATCH);
            for (i, &len) in lens.iter().enumerate() {
                let seg = b.seg_for(&to, len, tclass);
                assert_eq!(usize::from(seg), i);
                let slot = b.slot_mut();
                for (j, x) in slot[..len - 4].iter_mut().enumerate() {
                    *x = (i * 7 + j + usize::from(tclass)) as u8;
                }
                let icrc = swrdma_roce::icrc_ident(&ip, &[&slot[..len - 4]], seg, true);
                slot[len - 4..len].copy_from_slice(&icrc);
                b.push(a, None, to, 0, len, tclass);
            }
            assert_eq!(s.send_batch(&mut b), lens.len());
            let mut got: Vec<(u8, Vec<u8>)> = Vec::new();
            let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while got.len() < lens.len() && std::time::Instant::now() < end {
                rx.recv(64, &|_| true, &|_| None, &mut |m, p| got.push((m.tclass, p.to_vec())));
            }
            assert_eq!(got.len(), lens.len());
            for (i, (tc, p)) in got.iter().enumerate() {
                assert_eq!((*tc, p.len()), (tclass, lens[i]), "datagram {i}");
                let n = p.len();
                assert!(p[..n - 4]
                    .iter()
                    .enumerate()
                    .all(|(j, &x)| x == (i * 7 + j + usize::from(tclass)) as u8));
                assert_eq!(
                    swrdma_roce::icrc_ipv4_ident(&ip, p),
                    Some((i as u16, true)),
                    "datagram {i}"
                );
            }
        }
        drop((s, rx));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Polling an idle wire context (what every `ibv_poll_cq` does) makes
    /// no socket in the kernel: it used to `accept` on the forwarding
    /// listener at every call, and each `accept` that finds no connection
    /// still makes and frees a socket (freed after an RCU grace period;
    /// millions of them kept both CPUs in softirq for up to a second,
    /// issue 23's soak failure).  And a forwarded datagram still arrives.
    #[test]
    fn idle_recv_makes_no_sockets_and_forwards_arrive() {
        let _one = one_at_a_time();
        // One CPU, so that the inode numbers come from one batch counter.
        // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it;
        // sched_setaffinity(0) changes only this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(libc::sched_getcpu().max(0) as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        let Some((dir, lo, s)) = first_context("sock", a) else {
            return;
        };
        let mine = |_: u32| true;
        let owner = |_: u32| None;
        let mut got = Vec::new();
        let before = next_sock_ino();
        const CALLS: u64 = 20_000;
        for _ in 0..CALLS {
            s.recv(64, &mine, &owner, &mut |_, p| got.push(p.to_vec()));
        }
        let made = next_sock_ino().wrapping_sub(before);
        assert!(made < CALLS / 4, "{made} sockets made by {CALLS} idle receives");
        // A forward from another context of ours arrives and is taken.
        let other = Sock::open(&dir, 2, lo, &[a]).unwrap();
        let m = RxMeta {
            src: a,
            dst: a,
            sport: PORT,
            tclass: 0,
            hop: 64,
        };
        let mut pkt = [0u8; 16];
        pkt[5..8].copy_from_slice(&[0, 1, 0x23]);
        let mut conns = Conns::default();
        other.forward(&mut conns, 1, &m, &pkt);
        for _ in 0..100 {
            s.recv(64, &mine, &owner, &mut |_, p| got.push(p.to_vec()));
            if !got.is_empty() {
                break;
            }
        }
        assert_eq!(got, vec![pkt.to_vec()]);
        drop((s, other));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An address bound after the context opened (`add_addrs`, as the
    /// agent does when the interface gains one) is one of its addresses:
    /// a datagram sent from it leaves, one sent to it is received with it
    /// as the destination; binding it again adds nothing.
    #[test]
    fn an_address_added_later_sends_and_receives() {
        let _one = one_at_a_time();
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 4));
        let b = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 5));
        let Some((dir, _lo, s)) = first_context("late", a) else {
            return;
        };
        assert!(!s.has_addr(&b));
        let added = s.add_addrs(&[a, b]);
        if added.is_empty() {
            eprintln!("skipped: {b}:4791 is held by another user or the kernel's rxe");
            return;
        }
        assert_eq!(added, vec![b]);
        assert!(s.has_addr(&b) && s.has_addr(&a));
        assert_eq!(s.addrs(), vec![a, b]);
        assert!(s.add_addrs(&[a, b]).is_empty());
        let mut pkt = [0u8; 64];
        pkt[5..8].copy_from_slice(&[0, 1, 0x24]);
        s.send(&b, None, &b, &[&pkt], 0).unwrap();
        let mine = |_: u32| true;
        let owner = |_: u32| None;
        let mut got = Vec::new();
        for _ in 0..1000 {
            s.recv(64, &mine, &owner, &mut |m, p| got.push((m.src, m.dst, p.to_vec())));
            if !got.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(got, vec![(b, b, pkt.to_vec())]);
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A datagram for QP1 from another host (127.0.0.9) to `a`, as the
    /// receive path hands it on: its metadata and a 300-byte payload whose
    /// BTH names QPN 1.
    fn qp1_datagram(a: IpAddr) -> (RxMeta, [u8; 300]) {
        let m = RxMeta {
            src: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9)),
            dst: a,
            sport: 0xd872,
            tclass: 0,
            hop: 64,
        };
        let mut pkt = [0u8; 300];
        pkt[5..8].copy_from_slice(&[0, 0, 1]);
        (m, pkt)
    }

    /// A burst of datagrams for QP1 that the wire agent does not read at
    /// once (its intake's room is the sender's buffer) waits in the
    /// context's queue rather than being dropped, and goes, in order, when
    /// the intake has room (on the connection's EPOLLOUT, which the
    /// context's `recv` takes); the sends never wait, for an agent that
    /// reads nothing either, and the queue is bounded.
    #[test]
    fn datagrams_for_qp1_wait_for_room_at_the_agent_in_order() {
        let _one = one_at_a_time();
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
        let Some((dir, lo, s)) = first_context("qp1", a) else {
            return;
        };
        let name = crate::proto::qp1_name(rustix::process::geteuid().as_raw(), lo, "");
        let intake = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap();
        if rustix::net::bind(&intake, &SocketAddrUnix::new_abstract_name(&name).unwrap()).is_err() {
            eprintln!("skipped: a wire agent of lo runs");
            return;
        }
        rustix::net::listen(&intake, 8).unwrap();
        const N: usize = 600;
        // The agent: takes the connection, reads nothing for 50 ms, then
        // everything, noting the order (giving up 2 s after the last).
        let agent = std::thread::spawn(move || {
            let c = rustix::net::accept(&intake).unwrap();
            let two = Some(std::time::Duration::from_secs(2));
            rustix::net::sockopt::set_socket_timeout(&c, rustix::net::sockopt::Timeout::Recv, two).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut buf = [0u8; 2048];
            let mut seq = Vec::new();
            while seq.len() < N {
                match rustix::net::recv(&c, &mut buf, rustix::net::RecvFlags::empty()) {
                    Ok((len, _)) if len >= 300 => {
                        let p = &buf[len - 300..len];
                        seq.push(u16::from_be_bytes([p[8], p[9]]) as usize);
                    }
                    _ => break,
                }
            }
            (seq, c)
        });
        let (m, mut pkt) = qp1_datagram(a);
        // The context's receive path owns the connections (as handle_udp
        // does, under the rx lock).
        let t0 = std::time::Instant::now();
        {
            let mut rx = s.rx.lock().unwrap();
            for i in 0..N {
                pkt[8..10].copy_from_slice(&(i as u16).to_be_bytes());
                s.to_agent(&mut rx.conns, &m, &pkt);
            }
            assert!(
                !rx.conns.agent_queue.is_empty(),
                "600 datagrams fit in the intake at once"
            );
            assert!(rx.conns.agent_watched);
        }
        let sent_in = t0.elapsed();
        assert!(
            sent_in < std::time::Duration::from_millis(40),
            "the sends waited ({sent_in:?})"
        );
        let none = |_: u32| false;
        let nobody = |_: u32| None;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !agent.is_finished() && std::time::Instant::now() < deadline {
            s.recv(64, &none, &nobody, &mut |_, _| {});
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (seq, c) = agent.join().unwrap();
        assert_eq!(
            seq,
            (0..N).collect::<Vec<_>>(),
            "every datagram for QP1 reached the agent, in order"
        );
        {
            let rx = s.rx.lock().unwrap();
            assert!(rx.conns.agent_queue.is_empty());
            assert!(!rx.conns.agent_watched, "watched for room with nothing waiting");
        }
        // An agent that reads nothing: nothing waits, the queue is bounded.
        let t0 = std::time::Instant::now();
        {
            let mut rx = s.rx.lock().unwrap();
            for _ in 0..AGENT_QUEUE_MAX + N {
                s.to_agent(&mut rx.conns, &m, &pkt);
            }
            assert_eq!(rx.conns.agent_queue.len(), AGENT_QUEUE_MAX);
        }
        let took = t0.elapsed();
        assert!(
            took < std::time::Duration::from_secs(1),
            "{took:?} waited for an agent that does not read"
        );
        drop((c, s));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A datagram for QP1 whose connect to the agent's intake finds the
    /// backlog full (no connection, so no EPOLLOUT to wait for) is not left
    /// until the next datagram: `recv` tries again, and it arrives.
    #[test]
    fn a_datagram_for_qp1_waits_out_a_full_intake_backlog() {
        let _one = one_at_a_time();
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
        let Some((dir, _lo, mut s)) = first_context("backlog", a) else {
            return;
        };
        // (An interface index of no interface: an intake name of its own,
        // apart from the other test's agent of lo.)
        s.ifindex = 0x7ff0_0003;
        let name = crate::proto::qp1_name(rustix::process::geteuid().as_raw(), s.ifindex, "");
        let intake = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap();
        rustix::net::bind(&intake, &SocketAddrUnix::new_abstract_name(&name).unwrap()).unwrap();
        rustix::net::listen(&intake, 0).unwrap();
        // One connection not yet accepted fills a backlog of 0.
        let filler = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::NONBLOCK, None).unwrap();
        rustix::net::connect(&filler, &SocketAddrUnix::new_abstract_name(&name).unwrap()).unwrap();
        let (m, mut pkt) = qp1_datagram(a);
        pkt[8] = 0xab;
        {
            let mut rx = s.rx.lock().unwrap();
            s.to_agent(&mut rx.conns, &m, &pkt);
            assert!(rx.conns.agent.is_none(), "connected through a full backlog");
            assert_eq!(rx.conns.agent_queue.len(), 1);
            assert!(rx.conns.agent_retry.is_some());
        }
        // The agent takes the first connection (room again), then ours.
        let first = rustix::net::accept(&intake).unwrap();
        let none = |_: u32| false;
        let nobody = |_: u32| None;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while s.rx.lock().unwrap().conns.agent.is_none() && std::time::Instant::now() < deadline {
            s.recv(64, &none, &nobody, &mut |_, _| {});
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(
            s.rx.lock().unwrap().conns.agent.is_some(),
            "the waiting datagram was not tried again in 5 s"
        );
        let c = rustix::net::accept(&intake).unwrap();
        let one = Some(std::time::Duration::from_secs(1));
        rustix::net::sockopt::set_socket_timeout(&c, rustix::net::sockopt::Timeout::Recv, one).unwrap();
        let mut buf = [0u8; 2048];
        let (len, _) = rustix::net::recv(&c, &mut buf, rustix::net::RecvFlags::empty()).unwrap();
        assert!(len >= 300 && buf[len - 300 + 8] == 0xab, "the waiting datagram arrived");
        {
            let rx = s.rx.lock().unwrap();
            assert!(rx.conns.agent_queue.is_empty() && rx.conns.agent_retry.is_none());
        }
        drop((first, filler, c, s));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A flow whose datagram had to be forwarded comes to its owner
    /// directly from then on ([`Flow`]): the other context handles none of
    /// its next datagrams.
    #[test]
    fn a_forwarded_flow_comes_directly_next() {
        let _one = one_at_a_time();
        // (127.0.0.2: the other test's sockets hold 127.0.0.1:4791, in the
        // same process and uid, so they would share its datagrams.)
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let Some((dir, lo, owner_ctx)) = first_context("flow", a) else {
            return;
        };
        let other = Sock::open(&dir, 2, lo, &[a]).unwrap();
        const QPN: u32 = 0x123;
        let mine = |q: u32| q == QPN;
        let not_mine = |_: u32| false;
        let owner = |q: u32| (q == QPN).then_some(1);
        let mut pkt = [0u8; 16];
        pkt[5..8].copy_from_slice(&QPN.to_be_bytes()[1..]);
        let to = std::net::SocketAddr::new(a, PORT);
        // A peer socket whose flow the kernel gives the other context.
        let mut found = None;
        for _ in 0..64 {
            let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            peer.send_to(&pkt, to).unwrap();
            let (mut fwd, mut got) = (0, 0);
            for _ in 0..200 {
                fwd += other.recv(64, &not_mine, &owner, &mut |_, _| {});
                owner_ctx.recv(64, &mine, &owner, &mut |_, _| got += 1);
                if got > 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(got, 1, "the datagram reached its owner");
            if fwd > 0 {
                found = Some(peer);
                break;
            }
        }
        let peer = found.expect("no flow went to the other context in 64 tries");
        for _ in 0..20 {
            peer.send_to(&pkt, to).unwrap();
        }
        let (got, fwd, _) = take(&owner_ctx, &other, QPN, 20);
        assert_eq!(
            (got, fwd),
            (20, 0),
            "(taken by the owner, handled by the other context)"
        );
        drop((owner_ctx, other));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// rxe's source port of a QP (`hash_32` of the QPN into 0xc000..):
    /// worked by hand for QPN 17: 17 x 0x61c88647 = 0x6_7e52_eb77, its low
    /// 32 bits' top 14 bits 0x1f94.
    #[test]
    fn src_port_is_rxes() {
        let _one = one_at_a_time();
        assert_eq!(src_port(17), 0xc000 | 0x1f94);
        assert!((0..1 << 24).step_by(4099).all(|q| src_port(q) >= 0xc000));
    }

    /// A QP's sender and its peer's pinned flow: the peer's packets, sent
    /// from the peer QP's own port, reach the QP's context directly from
    /// the first one, whichever member of the port's group the kernel's
    /// hash would have chosen (8 peer QPs: each lands on the other context
    /// half the time when unpinned).
    #[test]
    fn a_pinned_flow_takes_its_peer_qp_from_the_first_packet() {
        let _one = one_at_a_time();
        let (a, b) = (
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)),
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 4)),
        );
        let Some((dir, lo, owner_ctx)) = first_context("pin", a) else {
            return;
        };
        let other = Sock::open(&dir, 2, lo, &[a]).unwrap();
        let peer = Sock::open(&dir, 3, lo, &[b]).unwrap();
        for k in 0..8u32 {
            let (qpn, peer_qpn) = (0x300 + k, 0x500 + 7 * k);
            let pin = owner_ctx.pin_flow(a, b, src_port(peer_qpn)).expect("a flow socket");
            let via = peer.sender(b, src_port(peer_qpn)).expect("a sender");
            let mut pkt = [0u8; 16];
            pkt[5..8].copy_from_slice(&qpn.to_be_bytes()[1..]);
            for _ in 0..5 {
                peer.send(&b, Some(&via), &a, &[&pkt], 0).unwrap();
            }
            let (got, fwd, sports) = take(&owner_ctx, &other, qpn, 5);
            assert_eq!(
                (got, fwd),
                (5, 0),
                "peer QP {peer_qpn}: (taken by the owner, forwarded)"
            );
            assert!(sports.iter().all(|&p| p == src_port(peer_qpn)), "{sports:?}");
            drop((pin, via));
        }
        assert!(owner_ctx
            .rx
            .lock()
            .unwrap()
            .pinned
            .iter()
            .all(|w| w.strong_count() == 0));
        assert_eq!(peer.senders.load(Ordering::Relaxed), 0);
        drop((owner_ctx, other, peer));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
