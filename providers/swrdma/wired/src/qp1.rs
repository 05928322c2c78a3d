//! QP1 of the wire device, in the agent: the CM MADs of rdma_cm between
//! this host and others, carried as RoCE v2 (a UD SEND to QPN 1, P_Key
//! 0xffff, Q_Key 0x80010000, one 256-byte MAD), as the kernel's rdma_cm
//! carries them on rxe or a RoCE NIC.
//!
//! The agent is a relay between the wire and the connection managers of its
//! user's processes (`swrdma-cm`, run by the `ucma` interposer in each
//! process); it keeps no connection state of its own beyond where to take a
//! message:
//!
//! * **In from the wire.**  A datagram for QP1 reaches whichever process's
//!   socket of the `addr:4791` group the kernel picks; that process hands it
//!   to the agent's intake ([`crate::proto::qp1_name`], a `SOCK_SEQPACKET`
//!   listener; `swrdma_roce::fwd` header, then the UDP payload), and the
//!   agent connects a flow socket of its own to the sender's address and
//!   port, so that host's later MADs come to the agent directly (every MAD
//!   of a host comes from its QP1's one source port).  Checked as the
//!   kernel checks what reaches QP1: the ICRC, a UD SEND only to QPN 1, a
//!   default P_Key, the GSI Q_Key, exactly one MAD, of the CM class; anything
//!   else is dropped and counted.
//! * **To a process.**  A REQ or SIDR_REQ goes to the socket of the port
//!   its service ID names ([`swrdma_cm::names::port`]); any other message
//!   to the process that sent, or was sent, the comm ID it names (learnt
//!   from the messages the processes send through the agent).  It is sent
//!   from the agent's socket for the sending host
//!   ([`swrdma_cm::names::wire_peer`]), so the process's CM sees one peer
//!   per host and answers to it.  A REQ for a port nobody holds is answered
//!   REJ 8 (invalid service ID), a SIDR_REQ SIDR_REP 1 (unsupported), a
//!   DREQ for no connection DREP, as the kernel's CM answers them; other
//!   messages for no connection are dropped.
//! * **Out to the wire.**  A process sends a message it starts (REQ,
//!   SIDR_REQ) to [`swrdma_cm::names::wire_in`] with the destination and
//!   source addresses first; an answer to a host's socket.  The agent sends
//!   it from `addr`:`src_port(1)` (as rxe sends its QP1's packets) to the
//!   host's port 4791.  Only datagrams of our user are taken
//!   (`SCM_CREDENTIALS`).
//!
//! Limits: at most [`MAX_PEERS`] hosts, [`MAX_FLOWS`] flows and
//! [`MAX_ROUTES`] comm IDs at once (the oldest go first).  A host's data
//! QP whose source port is that of its QP1 (one in 16,384) has its packets
//! reach the agent's flow socket: they are dropped (counted), and that QP's
//! retransmissions fail alike.

use crate::ends::Ends;
use rustix::io::Errno;
use rustix::net::{
    bind, connect, recvmsg, sendto, socket_with, sockopt, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage,
    RecvFlags, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use std::collections::HashMap;
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;
use std::time::Instant;
use swrdma_cm::conn::comm_ids;
use swrdma_cm::mad::{self, Mad, Msg, MAD_LEN};
use swrdma_cm::names;
use swrdma_roce::{fwd, Bth, Deth, Hdr, IpInfo};

/// Receive buffer asked for a flow socket (capped by `net.core.rmem_max`).
const FLOW_RCVBUF: usize = 4 << 20;

/// How often the processes holding followed connections are looked at.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Whether a process holds abstract Unix datagram socket `name` (a
/// connect of a fresh socket, which sends nothing, is refused otherwise).
pub fn name_alive(name: &[u8]) -> bool {
    let Ok(fd) = socket_with(AddressFamily::UNIX, SocketType::DGRAM, SocketFlags::CLOEXEC, None) else {
        return true;
    };
    let Ok(a) = SocketAddrUnix::new_abstract_name(name) else {
        return true;
    };
    !matches!(connect(&fd, &a), Err(Errno::CONNREFUSED))
}

/// The GSI Q_Key.
pub const GSI_QKEY: u32 = 0x8001_0000;
/// Hosts, flows and comm IDs kept at most.
pub const MAX_PEERS: usize = 1024;
pub const MAX_FLOWS: usize = 1024;
pub const MAX_ROUTES: usize = 65536;
/// Intake connections at most (one per process with the device open).
const MAX_INTAKE: usize = 4096;

/// What the relay counted (the agent's log prints them at exit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub wire_in: u64,
    pub wire_out: u64,
    pub to_process: u64,
    pub dropped: u64,
    pub answered: u64,
    /// Connections ended for a process that was gone (DREQ or REJ sent).
    pub ended: u64,
    /// MADs that waited in the agent for a full receiver.
    pub waited: u64,
}

/// Epoll tags of the relay's descriptors: the top bit marks them apart
/// from the agent's client tags, the next byte says which kind, the low
/// 32 bits hold the descriptor.
pub const TAG: u64 = 1 << 63;
const K_INTAKE: u64 = 1;
const K_CONN: u64 = 2;
const K_CM: u64 = 3;
const K_PEER: u64 = 4;
const K_FLOW: u64 = 5;
const K_WAIT: u64 = 6;

fn tag(kind: u64, fd: BorrowedFd<'_>) -> u64 {
    TAG | kind << 40 | fd.as_raw_fd() as u32 as u64
}

/// A host we speak with: the socket standing for it, the local address it
/// reached us on (the source of what we send it).
struct Peer {
    sock: OwnedFd,
    local: Option<IpAddr>,
    used: Instant,
}

/// A flow socket: bound to `local`:4791 in the group, connected to the
/// host's QP1 address and port.
struct Flow {
    fd: OwnedFd,
    key: (IpAddr, IpAddr, u16),
    used: Instant,
}

pub struct Qp1 {
    uid: u32,
    ifindex: u32,
    scope: String,
    epoll: OwnedFd,
    intake: OwnedFd,
    conns: HashMap<i32, OwnedFd>,
    cm: OwnedFd,
    peers: HashMap<IpAddr, Peer>,
    flows: HashMap<i32, Flow>,
    senders: HashMap<IpAddr, OwnedFd>,
    /// Comm ID (ours) -> the process socket that holds it.
    routes: HashMap<u32, (Vec<u8>, Instant)>,
    psn: u32,
    /// MADs for a process whose queue was full (a Unix datagram socket
    /// takes 10 from senders it is not connected to), by receiver, in
    /// order, each with the host it came from and when it is given up:
    /// sent again by [`Qp1::flush`] (a burst such as `cmtime`'s 200 REQs
    /// or DREQs would otherwise cost the CM's retry timers).
    pending: HashMap<Vec<u8>, std::collections::VecDeque<Waiting>>,
    pending_len: usize,
    /// For each receiver with MADs in `pending`, a socket connected to it
    /// (sending nothing), watched for `EPOLLOUT`: the kernel signals it as
    /// soon as the receiver takes a datagram off its full queue (or goes),
    /// so what waits goes again at once, not on a timer.
    waiters: HashMap<Vec<u8>, OwnedFd>,
    /// The receiver each waiter watches, by its descriptor.
    waiting_on: HashMap<i32, Vec<u8>>,
    /// When [`Qp1::flush`] must run (see [`Qp1::flush_at`]).
    flush_deadline: Option<Instant>,
    /// The processes' connections, to end those of a process that exits
    /// without ending them (`ends.rs`).
    ends: Ends,
    /// When to look next whether the processes holding them still run.
    next_check: Option<Instant>,
    tid: u64,
    pub stats: Stats,
}

/// A MAD waiting for a full receiver: the host it came from, its bytes,
/// when it is given up.
type Waiting = (IpAddr, [u8; MAD_LEN], Instant);

/// How long a MAD waits for a full receiver, and how many wait at most
/// (in all; beyond, they are dropped as a full link drops them).
const PENDING_FOR: std::time::Duration = std::time::Duration::from_secs(60);
const PENDING_MAX: usize = 65536;
/// How soon what waits for a receiver that no waiter watches goes again,
/// and how often what waits for watched ones is looked at (for expiry).
const UNWATCHED_RETRY: std::time::Duration = std::time::Duration::from_millis(1);
const WAITED_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// What became of a MAD sent to a process.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sent {
    Yes,
    Full,
    Nobody,
}

fn is_link_local(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

fn sockaddr(a: IpAddr, port: u16, ifindex: u32) -> SocketAddr {
    match a {
        IpAddr::V4(v) => SocketAddr::V4(SocketAddrV4::new(v, port)),
        IpAddr::V6(v) => {
            let scope = if is_link_local(&a) { ifindex } else { 0 };
            SocketAddr::V6(SocketAddrV6::new(v, port, 0, scope))
        }
    }
}

/// A UDP socket bound to `local`:`port` in the user's `SO_REUSEPORT`
/// group, datagrams leaving with DF set (the ICRC counts on IP ID 0).
fn udp(local: IpAddr, port: u16, ifindex: u32) -> Result<OwnedFd, Errno> {
    let fam = if local.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = socket_with(
        fam,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    sockopt::set_socket_reuseport(&fd, true)?;
    if local.is_ipv4() {
        sockopt::set_ip_mtu_discover(&fd, sockopt::Ipv4PathMtuDiscovery::DO)?;
    } else {
        sockopt::set_ipv6_v6only(&fd, true)?;
        let one: libc::c_int = 1;
        // SAFETY: an int option of our own socket, `one` outlives the call.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::IPPROTO_IPV6,
                libc::IPV6_DONTFRAG,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    bind(&fd, &sockaddr(local, port, ifindex))?;
    Ok(fd)
}

/// A Unix datagram socket that receives its senders' credentials, bound
/// to abstract `name` when one is given.
fn dgram(name: Option<&[u8]>) -> Result<OwnedFd, Errno> {
    let fd = socket_with(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    sockopt::set_socket_passcred(&fd, true)?;
    if let Some(n) = name {
        bind(&fd, &SocketAddrUnix::new_abstract_name(n)?)?;
    }
    Ok(fd)
}

/// One datagram of a Unix socket: its bytes, the sender's abstract name
/// and uid (None when it carried no credentials).
fn recv_unix(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Option<(usize, Vec<u8>, Option<u32>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmCredentials(1))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let r = recvmsg(fd, &mut [IoSliceMut::new(buf)], &mut cmsg, RecvFlags::DONTWAIT).ok()?;
    let mut uid = None;
    for m in cmsg.drain() {
        if let RecvAncillaryMessage::ScmCredentials(c) = m {
            uid = Some(c.uid.as_raw());
        }
    }
    if r.flags.contains(rustix::net::ReturnFlags::TRUNC) {
        return Some((usize::MAX, Vec::new(), uid));
    }
    let name = r
        .address
        .and_then(|a| SocketAddrUnix::try_from(a).ok())
        .and_then(|u| u.abstract_name().map(|n| n.to_vec()))
        .unwrap_or_default();
    Some((r.bytes, name, uid))
}

impl Qp1 {
    /// Binds the intake and the CM socket and adds them to `epoll` (a
    /// duplicate the relay keeps).  Fails when another agent holds them.
    pub fn new(uid: u32, ifindex: u32, scope: &str, epoll: BorrowedFd<'_>) -> Result<Qp1, String> {
        let e = |what: &'static str| move |e: Errno| format!("qp1: {what}: {e}");
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        let intake = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, flags, None).map_err(e("socket"))?;
        let name = crate::proto::qp1_name(uid, ifindex, scope);
        bind(&intake, &SocketAddrUnix::new_abstract_name(&name).map_err(e("name"))?).map_err(e("bind intake"))?;
        rustix::net::listen(&intake, 128).map_err(e("listen"))?;
        let cm = dgram(Some(&names::wire_in(uid, ifindex, scope))).map_err(e("bind cm"))?;
        let epoll = rustix::io::fcntl_dupfd_cloexec(epoll, 0).map_err(e("dup"))?;
        let q = Qp1 {
            uid,
            ifindex,
            scope: scope.to_string(),
            epoll,
            intake,
            conns: HashMap::new(),
            cm,
            peers: HashMap::new(),
            flows: HashMap::new(),
            senders: HashMap::new(),
            routes: HashMap::new(),
            pending: HashMap::new(),
            pending_len: 0,
            waiters: HashMap::new(),
            waiting_on: HashMap::new(),
            flush_deadline: None,
            ends: Ends::default(),
            next_check: None,
            tid: u64::from(std::process::id()) << 32,
            psn: (std::process::id().wrapping_mul(0x9e37_79b9)) & 0xff_ffff,
            stats: Stats::default(),
        };
        q.watch(K_INTAKE, q.intake.as_fd()).map_err(e("epoll"))?;
        q.watch(K_CM, q.cm.as_fd()).map_err(e("epoll"))?;
        Ok(q)
    }

    fn watch(&self, kind: u64, fd: BorrowedFd<'_>) -> Result<(), Errno> {
        use rustix::event::epoll;
        epoll::add(
            &self.epoll,
            fd,
            epoll::EventData::new_u64(tag(kind, fd)),
            epoll::EventFlags::IN,
        )
    }

    /// An epoll event with one of our tags.
    pub fn event(&mut self, t: u64) {
        let fd = (t & 0xffff_ffff) as i32;
        match (t >> 40) & 0xff {
            K_INTAKE => self.accept_all(),
            K_CONN => self.read_conn(fd),
            K_CM => self.read_cm(),
            K_PEER => self.read_peer(fd),
            K_FLOW => self.read_flow(fd),
            K_WAIT => self.waiter_ready(fd),
            _ => {}
        }
    }

    fn accept_all(&mut self) {
        while let Ok(s) = rustix::net::accept_with(&self.intake, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC) {
            // Only our user's processes hand us datagrams.
            let ours = crate::peercred(s.as_fd()).is_some_and(|(_, uid)| uid == self.uid);
            if ours && self.conns.len() < MAX_INTAKE && self.watch(K_CONN, s.as_fd()).is_ok() {
                self.conns.insert(s.as_raw_fd(), s);
            }
        }
    }

    fn read_conn(&mut self, fd: i32) {
        let mut buf = vec![0u8; fwd::HDR + 2048];
        // At most 64 at a time (the rest on the next, level-triggered,
        // event); the loop ends early only on an end or an error.
        for _ in 0..64 {
            let Some(s) = self.conns.get(&fd) else { return };
            match rustix::net::recv(s, &mut buf, RecvFlags::DONTWAIT) {
                Ok((0, _)) | Err(Errno::CONNRESET) => {
                    self.close_conn(fd);
                    return;
                }
                Ok((n, got)) if n == got => {
                    let Some((m, _ifindex)) = fwd::parse(&buf[..n]) else {
                        self.stats.dropped += 1;
                        continue;
                    };
                    let p = buf[fwd::HDR..n].to_vec();
                    self.take_packet(m, &p, true);
                }
                Ok(_) => self.stats.dropped += 1,
                Err(Errno::AGAIN) | Err(Errno::INTR) => return,
                Err(_) => {
                    self.close_conn(fd);
                    return;
                }
            }
        }
    }

    /// A process's intake connection ended (closed or failing): forgotten.
    fn close_conn(&mut self, fd: i32) {
        if let Some(s) = self.conns.remove(&fd) {
            let _ = rustix::event::epoll::delete(&self.epoll, &s);
        }
    }

    fn read_flow(&mut self, fd: i32) {
        let mut buf = [0u8; 2048];
        for _ in 0..64 {
            let Some(f) = self.flows.get_mut(&fd) else { return };
            f.used = Instant::now();
            let (local, peer, sport) = f.key;
            match rustix::net::recv(&f.fd, &mut buf, RecvFlags::DONTWAIT | RecvFlags::TRUNC) {
                Ok((n, got)) if n == got => {
                    let m = fwd::RxMeta {
                        src: peer,
                        dst: local,
                        sport,
                        tclass: 0,
                        hop: 0,
                    };
                    let p = buf[..n].to_vec();
                    self.take_packet(m, &p, false);
                }
                Ok(_) => self.stats.dropped += 1,
                Err(Errno::INTR) => {}
                // EAGAIN, or an ICMP error queued on the connected socket.
                Err(_) => return,
            }
        }
    }

    /// A datagram for QP1, checked as the kernel checks it; `pin`: it came
    /// through the intake (its flow gets a socket of ours).
    fn take_packet(&mut self, m: fwd::RxMeta, p: &[u8], pin: bool) {
        let Some(mad_bytes) = self.check(&m, p) else {
            self.stats.dropped += 1;
            return;
        };
        let Ok(msg) = Mad::decode(&mad_bytes) else {
            self.stats.dropped += 1;
            return;
        };
        self.stats.wire_in += 1;
        // Only a host that sent a whole CM MAD gets a flow socket.
        if pin {
            self.pin(m.dst, m.src, m.sport);
        }
        if !self.peer(m.src, Some(m.dst)) {
            self.stats.dropped += 1;
            return;
        }
        self.ends.incoming(m.src, &msg.msg);
        let to = match &msg.msg {
            Msg::Req(r) => swrdma_cm::ipcm::service_id_parts(r.service_id).map(|(ps, p)| names::port(self.uid, ps, p)),
            Msg::SidrReq(r) => {
                swrdma_cm::ipcm::service_id_parts(r.service_id).map(|(ps, p)| names::port(self.uid, ps, p))
            }
            other => self.routes.get(&comm_ids(other).1).map(|r| r.0.clone()),
        };
        let delivered = match to.as_ref() {
            Some(n) => self.give_process(m.src, n, &mad_bytes),
            None => false,
        };
        if delivered {
            self.stats.to_process += 1;
            return;
        }
        if to.is_some() && !matches!(msg.msg, Msg::Req(_) | Msg::SidrReq(_)) {
            // Its process is gone.
            self.routes.remove(&comm_ids(&msg.msg).1);
        }
        if let Some(answer) = no_one_answer(&msg) {
            self.stats.answered += 1;
            self.send_wire(m.dst, m.src, &answer.encode());
        } else {
            self.stats.dropped += 1;
        }
    }

    /// The MAD of a datagram for QP1, if it passes the kernel's checks.
    fn check(&self, m: &fwd::RxMeta, p: &[u8]) -> Option<[u8; MAD_LEN]> {
        let ip = IpInfo {
            src: m.src,
            dst: m.dst,
            sport: m.sport,
            dport: swrdma_roce::ROCE_PORT,
            flow: 0,
        };
        if !swrdma_roce::icrc_ok(&ip, p) {
            return None;
        }
        let (h, payload) = swrdma_roce::decode(p).ok()?;
        let deth = h.deth?;
        if h.bth.opcode != swrdma_roce::op::UD_SEND_ONLY
            || h.bth.dqpn != 1
            || h.bth.pkey & 0x7fff != 0x7fff
            || deth.qkey != GSI_QKEY
            || payload.len() != MAD_LEN
        {
            // (a longer SEND does not fit QP1's 256-byte receive buffers:
            // the kernel's MAD layer never sees it)
            return None;
        }
        payload.try_into().ok()
    }

    /// A flow socket for `peer`:`sport` on `local` (best effort).
    fn pin(&mut self, local: IpAddr, peer: IpAddr, sport: u16) {
        let key = (local, peer, sport);
        if self.flows.values().any(|f| f.key == key) {
            return;
        }
        if self.flows.len() >= MAX_FLOWS {
            if let Some(&old) = self.flows.iter().min_by_key(|(_, f)| f.used).map(|(k, _)| k) {
                self.flows.remove(&old);
            }
        }
        let Ok(fd) = udp(local, swrdma_roce::ROCE_PORT, self.ifindex) else {
            return;
        };
        // A host's burst (cmtime's 200 REQs or DREQs, a kilobyte or more
        // each in the kernel's accounting) overflows the default 208 KiB
        // while the agent waits for a CPU: as much as the limit allows.
        let _ = sockopt::set_socket_recv_buffer_size(&fd, FLOW_RCVBUF);
        if connect(&fd, &sockaddr(peer, sport, self.ifindex)).is_err() || self.watch(K_FLOW, fd.as_fd()).is_err() {
            return;
        }
        let used = Instant::now();
        self.flows.insert(fd.as_raw_fd(), Flow { fd, key, used });
    }

    /// The socket standing for host `ip` (made on first use), noting the
    /// local address it reached us on.
    fn peer(&mut self, ip: IpAddr, local: Option<IpAddr>) -> bool {
        if !self.peers.contains_key(&ip) {
            if self.peers.len() >= MAX_PEERS {
                if let Some(&old) = self.peers.iter().min_by_key(|(_, p)| p.used).map(|(k, _)| k) {
                    self.peers.remove(&old);
                }
            }
            let Ok(sock) = dgram(Some(&names::wire_peer(self.uid, self.ifindex, &self.scope, ip))) else {
                return false;
            };
            if self.watch(K_PEER, sock.as_fd()).is_err() {
                return false;
            }
            let used = Instant::now();
            self.peers.insert(ip, Peer { sock, local, used });
        }
        let Some(p) = self.peers.get_mut(&ip) else { return false };
        p.used = Instant::now();
        if local.is_some() {
            p.local = local;
        }
        true
    }

    /// Sends (or queues behind what waits for the same receiver) a MAD of
    /// host `ip` to process socket `to`; false when nobody holds the name.
    fn give_process(&mut self, ip: IpAddr, to: &[u8], mad_bytes: &[u8; MAD_LEN]) -> bool {
        if let Some(q) = self.pending.get_mut(to) {
            self.stats.waited += 1;
            if self.pending_len < PENDING_MAX {
                q.push_back((ip, *mad_bytes, Instant::now() + PENDING_FOR));
                self.pending_len += 1;
            }
            return true;
        }
        let Some(from) = self.peers.get(&ip).map(|p| p.sock.as_fd()) else {
            return false;
        };
        match send_unix(from, to, mad_bytes) {
            Sent::Yes => true,
            Sent::Nobody => false,
            Sent::Full => {
                self.stats.waited += 1;
                if self.pending_len < PENDING_MAX {
                    let e = (ip, *mad_bytes, Instant::now() + PENDING_FOR);
                    self.pending.entry(to.to_vec()).or_default().push_back(e);
                    self.pending_len += 1;
                    self.wait_for(to);
                }
                true
            }
        }
    }

    /// When [`Qp1::end_for_gone`] is due: while connections are followed, every
    /// [`CHECK_EVERY`] (at once after [`Qp1::poke`]).
    pub fn check_at(&self) -> Option<Instant> {
        self.next_check.filter(|_| !self.ends.is_empty())
    }

    /// A client of the agent went away: look at once.
    pub fn poke(&mut self) {
        if !self.ends.is_empty() {
            self.next_check = Some(Instant::now());
        }
    }

    /// Ends, as the kernel would for a process whose file is released,
    /// the connections of processes that are gone (their socket's name is
    /// free: nobody receives there): DREQ for an established one, REJ 28
    /// for one being set up (`ends.rs`).
    pub fn end_for_gone(&mut self) {
        let mut alive: HashMap<Vec<u8>, bool> = HashMap::new();
        for ours in self.ends.ours() {
            let Some(name) = self.routes.get(&ours).map(|r| r.0.clone()) else {
                continue;
            };
            let up = *alive.entry(name.clone()).or_insert_with(|| name_alive(&name));
            if up {
                continue;
            }
            self.routes.remove(&ours);
            self.tid = self.tid.wrapping_add(1);
            let Some((host, m)) = self.ends.gone(ours, self.tid) else {
                continue;
            };
            let local = self
                .peers
                .get(&host)
                .and_then(|p| p.local)
                .or_else(|| route_source(host, self.ifindex));
            if let Some(l) = local {
                self.stats.ended += 1;
                self.send_wire(l, host, &m.encode());
            }
        }
        self.next_check = (!self.ends.is_empty()).then(|| Instant::now() + CHECK_EVERY);
    }

    /// When the agent must send again what waits, whatever else happens:
    /// in a millisecond while a receiver has MADs waiting and no waiter
    /// watching it, else in a second (what waited too long is dropped then);
    /// None when nothing waits.
    pub fn flush_at(&self) -> Option<Instant> {
        self.flush_deadline.filter(|_| self.pending_len > 0)
    }

    /// A MAD waits for receiver `to`'s full queue: watch the queue.
    fn wait_for(&mut self, to: &[u8]) {
        if self.waiters.contains_key(to) {
            return;
        }
        let made = dgram(None).and_then(|fd| {
            rustix::net::connect(&fd, &SocketAddrUnix::new_abstract_name(to)?)?;
            use rustix::event::epoll;
            let data = epoll::EventData::new_u64(tag(K_WAIT, fd.as_fd()));
            epoll::add(&self.epoll, &fd, data, epoll::EventFlags::OUT)?;
            Ok(fd)
        });
        let soon = Instant::now()
            + match made {
                Ok(fd) => {
                    self.waiting_on.insert(fd.as_raw_fd(), to.to_vec());
                    self.waiters.insert(to.to_vec(), fd);
                    WAITED_CHECK
                }
                Err(_) => UNWATCHED_RETRY,
            };
        self.flush_deadline = Some(self.flush_deadline.map_or(soon, |d| d.min(soon)));
    }

    /// Sends again, in order, what waits for receiver `to`, until it is
    /// full again; drops what waited too long or whose receiver is gone.
    /// A receiver with nothing left waiting loses its waiter (closed, which
    /// takes it out of the epoll set).
    fn flush_one(&mut self, to: &[u8], now: Instant) {
        let Some(mut q) = self.pending.remove(to) else {
            self.drop_waiter(to);
            return;
        };
        while let Some((ip, mad_bytes, until)) = q.front() {
            let from = self.peers.get(ip).map(|p| p.sock.as_fd());
            let sent = match from {
                Some(f) if *until > now => send_unix(f, to, mad_bytes),
                _ => Sent::Nobody,
            };
            if sent == Sent::Full {
                break;
            }
            q.pop_front();
            self.pending_len -= 1;
        }
        if q.is_empty() {
            self.drop_waiter(to);
        } else {
            self.pending.insert(to.to_vec(), q);
        }
    }

    fn drop_waiter(&mut self, to: &[u8]) {
        if let Some(fd) = self.waiters.remove(to) {
            self.waiting_on.remove(&fd.as_raw_fd());
        }
    }

    /// The waiter `fd` says its receiver has room again.
    fn waiter_ready(&mut self, fd: i32) {
        if let Some(to) = self.waiting_on.get(&fd).cloned() {
            self.flush_one(&to, Instant::now());
        }
    }

    /// Sends again, in order, what waits for every full receiver (when
    /// [`Qp1::flush_at`] is due), and watches the receivers that no waiter
    /// watches yet.
    pub fn flush(&mut self) {
        let now = Instant::now();
        self.flush_deadline = None;
        let names: Vec<Vec<u8>> = self.pending.keys().cloned().collect();
        for to in &names {
            self.flush_one(to, now);
        }
        let names: Vec<Vec<u8>> = self.pending.keys().cloned().collect();
        for to in &names {
            self.wait_for(to);
            let later = now + WAITED_CHECK;
            self.flush_deadline = Some(self.flush_deadline.map_or(later, |d| d.min(later)));
        }
    }

    /// Notes which process holds the comm ID a message it sends names as
    /// its own.
    fn learn(&mut self, sender: &[u8], host: IpAddr, mad_bytes: &[u8; MAD_LEN]) {
        let Ok(m) = Mad::decode(mad_bytes) else { return };
        self.ends.outgoing(host, &m.msg);
        if !self.ends.is_empty() && self.next_check.is_none() {
            self.next_check = Some(Instant::now() + CHECK_EVERY);
        }
        let ours = match &m.msg {
            Msg::SidrRep(_) => return,
            msg => comm_ids(msg).0,
        };
        if self.routes.len() >= MAX_ROUTES && !self.routes.contains_key(&ours) {
            if let Some(&old) = self.routes.iter().min_by_key(|(_, r)| r.1).map(|(k, _)| k) {
                self.routes.remove(&old);
            }
        }
        self.routes.insert(ours, (sender.to_vec(), Instant::now()));
    }

    fn read_cm(&mut self) {
        let mut buf = [0u8; names::WIRE_IN_PREFIX + MAD_LEN + 1];
        for _ in 0..64 {
            let Some((n, sender, uid)) = recv_unix(self.cm.as_fd(), &mut buf) else {
                return;
            };
            if uid != Some(self.uid) || n != names::WIRE_IN_PREFIX + MAD_LEN {
                self.stats.dropped += 1;
                continue;
            }
            let ip = |b: &[u8]| <[u8; 16]>::try_from(b).ok().map(|o| Ipv6Addr::from(o).to_canonical());
            let (Some(dst), Some(src)) = (ip(&buf[..16]), ip(&buf[16..32])) else {
                continue;
            };
            let mut mad_bytes = [0u8; MAD_LEN];
            mad_bytes.copy_from_slice(&buf[32..32 + MAD_LEN]);
            self.learn(&sender, dst, &mad_bytes);
            // Made now, so that the host's answer finds it.
            let _ = self.peer(dst, Some(src));
            self.send_wire(src, dst, &mad_bytes);
        }
    }

    fn read_peer(&mut self, fd: i32) {
        let Some(ip) = self
            .peers
            .iter()
            .find(|(_, p)| p.sock.as_raw_fd() == fd)
            .map(|(k, _)| *k)
        else {
            return;
        };
        let mut buf = [0u8; MAD_LEN + 1];
        for _ in 0..64 {
            let Some(p) = self.peers.get(&ip) else { return };
            let Some((n, sender, uid)) = recv_unix(p.sock.as_fd(), &mut buf) else {
                return;
            };
            if uid != Some(self.uid) || n != MAD_LEN {
                self.stats.dropped += 1;
                continue;
            }
            let mut mad_bytes = [0u8; MAD_LEN];
            mad_bytes.copy_from_slice(&buf[..MAD_LEN]);
            self.learn(&sender, ip, &mad_bytes);
            let local = self
                .peers
                .get(&ip)
                .and_then(|p| p.local)
                .or_else(|| route_source(ip, self.ifindex));
            match local {
                Some(l) => self.send_wire(l, ip, &mad_bytes),
                None => self.stats.dropped += 1,
            }
        }
    }

    /// Sends a MAD to host `dst`'s QP1 from our `src`.
    fn send_wire(&mut self, src: IpAddr, dst: IpAddr, mad_bytes: &[u8; MAD_LEN]) {
        let pkt = self.packet(src, dst, mad_bytes);
        if !self.senders.contains_key(&src) {
            match udp(src, swrdma_roce::src_port(1), self.ifindex) {
                Ok(fd) => {
                    let _ = sockopt::set_socket_recv_buffer_size(&fd, 1);
                    self.senders.insert(src, fd);
                }
                Err(_) => {
                    self.stats.dropped += 1;
                    return;
                }
            }
        }
        let Some(s) = self.senders.get(&src) else { return };
        let to = sockaddr(dst, swrdma_roce::ROCE_PORT, self.ifindex);
        match sendto(s, &pkt, SendFlags::DONTWAIT | SendFlags::NOSIGNAL, &to) {
            Ok(_) => self.stats.wire_out += 1,
            Err(_) => self.stats.dropped += 1,
        }
    }

    /// The RoCE v2 UDP payload carrying `mad` to QP1: BTH (UD SEND only,
    /// P_Key 0xffff, QPN 1, AckReq as rxe's), DETH (GSI Q_Key, source QP 1), the MAD, ICRC.
    fn packet(&mut self, src: IpAddr, dst: IpAddr, mad_bytes: &[u8; MAD_LEN]) -> Vec<u8> {
        self.psn = (self.psn + 1) & swrdma_roce::PSN_MASK;
        let ip = IpInfo {
            src,
            dst,
            sport: swrdma_roce::src_port(1),
            dport: swrdma_roce::ROCE_PORT,
            flow: 0,
        };
        // rxe asks for an ACK on the last packet of every message, of every
        // QP type (its MADs on QP1 too); no one answers.
        qp1_datagram(&ip, swrdma_roce::DEFAULT_PKEY, self.psn, true, mad_bytes)
    }
}

/// Sends one MAD from `from` to the process socket `to`.
fn send_unix(from: BorrowedFd<'_>, to: &[u8], mad: &[u8; MAD_LEN]) -> Sent {
    let Ok(a) = SocketAddrUnix::new_abstract_name(to) else {
        return Sent::Nobody;
    };
    match sendto(from, mad, SendFlags::DONTWAIT | SendFlags::NOSIGNAL, &a) {
        Err(Errno::CONNREFUSED) | Err(Errno::NOENT) => Sent::Nobody,
        Err(Errno::AGAIN) => Sent::Full,
        _ => Sent::Yes,
    }
}

/// The UDP payload of a UD SEND only to QPN 1 from QP 1 (GSI Q_Key) on
/// `ip`'s path: BTH (`pkey`, `psn`, `ackreq`), DETH, `payload`, its pad,
/// the ICRC.
fn qp1_datagram(ip: &IpInfo, pkey: u16, psn: u32, ackreq: bool, payload: &[u8]) -> Vec<u8> {
    let h = Hdr {
        bth: Bth {
            opcode: swrdma_roce::op::UD_SEND_ONLY,
            pkey,
            dqpn: 1,
            psn,
            ackreq,
            ..Bth::default()
        },
        deth: Some(Deth {
            qkey: GSI_QKEY,
            sqpn: 1,
        }),
        ..Hdr::default()
    };
    let mut hb = [0u8; swrdma_roce::MAX_HDR];
    let n = swrdma_roce::encode(&h, payload.len(), &mut hb).unwrap_or(0);
    let pad = [0u8; 3];
    let pad = &pad[..swrdma_roce::pad_for(payload.len()) as usize];
    let crc = swrdma_roce::icrc(ip, &[&hb[..n], payload, pad]);
    [&hb[..n], payload, pad, &crc[..]].concat()
}

/// The kernel CM's answer to a message nobody here takes: REJ 8 to a REQ,
/// SIDR_REP 1 to a SIDR_REQ, DREP to a DREQ; None for the rest.
pub fn no_one_answer(m: &Mad) -> Option<Mad> {
    let msg = match &m.msg {
        Msg::Req(r) => Msg::Rej(mad::Rej {
            remote_comm_id: r.local_comm_id,
            reason: mad::rej_reason::INVALID_SERVICE_ID,
            ..Default::default()
        }),
        Msg::SidrReq(r) => Msg::SidrRep(mad::SidrRep {
            request_id: r.request_id,
            status: mad::sidr_status::UNSUPPORTED,
            ..Default::default()
        }),
        Msg::Dreq(r) => Msg::Drep(mad::Drep {
            local_comm_id: r.remote_comm_id,
            remote_comm_id: r.local_comm_id,
            ..Default::default()
        }),
        _ => return None,
    };
    Some(Mad { tid: m.tid, msg })
}

/// The source address the kernel's routing picks for `dst` (a UDP socket
/// connected to it, no packet sent); the `ucma` interposer's too.
/// `scope`: the interface of a link-local IPv6 destination (else unused).
pub fn route_source(dst: IpAddr, scope: u32) -> Option<IpAddr> {
    let bind: SocketAddr = if dst.is_ipv4() {
        "0.0.0.0:0".parse().ok()?
    } else {
        "[::]:0".parse().ok()?
    };
    let s = std::net::UdpSocket::bind(bind).ok()?;
    s.connect(sockaddr(dst, swrdma_roce::ROCE_PORT, scope)).ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay(tag: &str) -> Qp1 {
        relay_polled(tag).1
    }

    /// A relay and the epoll set its descriptors are in.
    fn relay_polled(tag: &str) -> (OwnedFd, Qp1) {
        let ep = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC).unwrap();
        let scope = format!("t{}{tag}", std::process::id());
        let q = Qp1::new(rustix::process::geteuid().as_raw(), 1, &scope, ep.as_fd()).unwrap();
        (ep, q)
    }

    /// What arrives from `src`'s QP1 for `dst`.
    fn from_qp1(src: IpAddr, dst: IpAddr) -> fwd::RxMeta {
        fwd::RxMeta {
            src,
            dst,
            sport: swrdma_roce::src_port(1),
            tclass: 0,
            hop: 64,
        }
    }

    /// An RTU whose local comm ID is `i`.
    fn rtu(i: u32) -> [u8; MAD_LEN] {
        Mad {
            tid: u64::from(i),
            msg: Msg::Rtu(mad::Rtu {
                local_comm_id: i,
                remote_comm_id: 1,
                ..Default::default()
            }),
        }
        .encode()
    }

    /// Hands the relay the events of `ep` until `done`; fails after a
    /// second without one.
    fn drive(ep: &OwnedFd, q: &mut Qp1, mut done: impl FnMut(&mut Qp1) -> bool) {
        let mut events = Vec::with_capacity(8);
        for _ in 0..10_000 {
            if done(q) {
                return;
            }
            events.clear();
            let t = crate::agent::timespec(std::time::Duration::from_secs(1));
            rustix::event::epoll::wait(ep, rustix::buffer::spare_capacity(&mut events), Some(&t)).unwrap();
            assert!(!events.is_empty(), "no event within a second");
            for e in events.iter() {
                q.event(e.data.u64());
            }
        }
        panic!("never done");
    }

    #[test]
    fn what_we_send_passes_the_kernels_checks_and_nothing_else_does() {
        let mut q = relay("a");
        let (src, dst): (IpAddr, IpAddr) = ("169.254.9.1".parse().unwrap(), "169.254.9.2".parse().unwrap());
        let mad_bytes = Mad {
            tid: 7,
            msg: Msg::Rtu(mad::Rtu {
                local_comm_id: 1,
                remote_comm_id: 2,
                ..Default::default()
            }),
        }
        .encode();
        let p = q.packet(src, dst, &mad_bytes);
        let m = from_qp1(src, dst);
        assert_eq!(q.check(&m, &p), Some(mad_bytes));
        // the ICRC covers the addresses, the ports and the MAD
        assert_eq!(q.check(&fwd::RxMeta { sport: 4791, ..m }, &p), None);
        let mut bad = p.clone();
        bad[40] ^= 1;
        assert_eq!(q.check(&m, &bad), None);
        // another Q_Key, another QP, or a packet cut short: dropped
        for (at, v) in [(12usize, 0u8), (7, 2)] {
            let mut x = p.clone();
            x[at] = v;
            let n = x.len();
            let ip = IpInfo {
                src,
                dst,
                sport: m.sport,
                dport: 4791,
                flow: 0,
            };
            let crc = swrdma_roce::icrc(&ip, &[&x[..n - 4]]);
            x[n - 4..].copy_from_slice(&crc);
            assert_eq!(q.check(&m, &x), None, "byte {at} = {v}");
        }
        assert_eq!(q.check(&m, &p[..p.len() - 8]), None);
    }

    /// A UD SEND to QPN 1 with a valid ICRC, P_Key `pkey`, carrying `payload`.
    fn crafted(m: &fwd::RxMeta, pkey: u16, payload: &[u8]) -> Vec<u8> {
        let ip = IpInfo {
            src: m.src,
            dst: m.dst,
            sport: m.sport,
            dport: 4791,
            flow: 0,
        };
        qp1_datagram(&ip, pkey, 0, false, payload)
    }

    #[test]
    fn qp1_takes_exactly_one_mad_with_a_default_pkey() {
        let q = relay("c");
        let m = fwd::RxMeta {
            src: "169.254.9.1".parse().unwrap(),
            dst: "169.254.9.2".parse().unwrap(),
            sport: 50000,
            tclass: 0,
            hop: 64,
        };
        let mad_bytes = Mad {
            tid: 9,
            msg: Msg::Dreq(mad::Dreq {
                local_comm_id: 3,
                remote_comm_id: 4,
                ..Default::default()
            }),
        }
        .encode();
        assert_eq!(q.check(&m, &crafted(&m, 0xffff, &mad_bytes)), Some(mad_bytes));
        assert_eq!(
            q.check(&m, &crafted(&m, 0x7fff, &mad_bytes)),
            Some(mad_bytes),
            "limited default P_Key"
        );
        for pkey in [0x8001u16, 0x1234, 0, 0xfffe, 0x7ffe] {
            assert_eq!(q.check(&m, &crafted(&m, pkey, &mad_bytes)), None, "P_Key {pkey:#x}");
        }
        // a MAD and more (hostile.py's 257 and 1024 bytes), or less: not a MAD
        for n in [257usize, 260, 1024] {
            let mut long = mad_bytes.to_vec();
            long.resize(n, 0);
            assert_eq!(q.check(&m, &crafted(&m, 0xffff, &long)), None, "{n} bytes");
        }
        assert_eq!(q.check(&m, &crafted(&m, 0xffff, &mad_bytes[..255])), None);
    }

    #[test]
    fn mads_for_a_full_receiver_go_as_soon_as_it_reads_in_order() {
        let (ep, mut q) = relay_polled("w");
        let host: IpAddr = "169.254.9.1".parse().unwrap();
        assert!(q.peer(host, None));
        let name = format!("swrdma-test/{}/full", std::process::id()).into_bytes();
        let rx = dgram(Some(&name)).unwrap();
        // more than a Unix datagram queue takes (net.unix.max_dgram_qlen)
        let n = 300u32;
        for i in 0..n {
            assert!(q.give_process(host, &name, &rtu(i)));
        }
        assert!(q.stats.waited > 0, "the queue never filled");
        let due = q.flush_at().expect("MADs wait");
        assert!(
            due > Instant::now() + std::time::Duration::from_millis(100),
            "a waiter watches them, no 1 ms timer"
        );
        // the receiver reads: the waiter's event comes, and what waited goes
        // on at once, in order, until all are there
        let mut got = Vec::new();
        let mut buf = [0u8; MAD_LEN + 8];
        drive(&ep, &mut q, |_| {
            while let Ok((len, _)) = rustix::net::recv(&rx, &mut buf, RecvFlags::DONTWAIT) {
                assert_eq!(len, MAD_LEN);
                let Ok(Mad { msg: Msg::Rtu(r), .. }) = Mad::decode(&buf[..MAD_LEN]) else {
                    panic!("not the RTU sent")
                };
                got.push(r.local_comm_id);
            }
            got.len() == n as usize
        });
        assert_eq!(got, (0..n).collect::<Vec<_>>());
        assert_eq!(q.flush_at(), None, "nothing waits");
        assert!(q.waiters.is_empty() && q.waiting_on.is_empty(), "waiters closed");
    }

    #[test]
    fn a_burst_handed_over_by_a_process_is_taken_whole_and_its_connection_kept() {
        let (ep, mut q) = relay_polled("b");
        let (src, dst): (IpAddr, IpAddr) = ("169.254.9.1".parse().unwrap(), "169.254.9.2".parse().unwrap());
        let m = from_qp1(src, dst);
        // a process's context: connected to the intake, it hands over more
        // than the agent reads at one event (64) before the agent runs
        let conn = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap();
        let name = crate::proto::qp1_name(q.uid, 1, &q.scope.clone());
        rustix::net::connect(&conn, &SocketAddrUnix::new_abstract_name(&name).unwrap()).unwrap();
        let n = 150u64;
        for i in 0..n {
            let mut d = fwd::header(&m, 1).to_vec();
            d.extend_from_slice(&q.packet(src, dst, &rtu(i as u32)));
            rustix::net::send(&conn, &d, SendFlags::empty()).unwrap();
        }
        drive(&ep, &mut q, |q| q.stats.wire_in == n);
        assert_eq!(q.conns.len(), 1, "the process's connection is kept");
        // and when the process goes, its connection is forgotten
        drop(conn);
        drive(&ep, &mut q, |q| q.conns.is_empty());
    }

    #[test]
    fn nobody_answers_as_the_kernel() {
        let req = Mad {
            tid: 9,
            msg: Msg::Req(mad::Req {
                local_comm_id: 0x1234,
                ..Default::default()
            }),
        };
        let Some(Mad {
            tid: 9,
            msg: Msg::Rej(j),
        }) = no_one_answer(&req)
        else {
            panic!("no REJ")
        };
        assert_eq!((j.remote_comm_id, j.reason, j.local_comm_id), (0x1234, 8, 0));
        let rtu = Mad {
            tid: 1,
            msg: Msg::Rtu(mad::Rtu::default()),
        };
        assert!(no_one_answer(&rtu).is_none());
    }
}
