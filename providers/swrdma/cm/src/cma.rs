//! The kernel rdma_cm's semantics, as its character device (`ucma`) shows
//! them to librdmacm: ids in port spaces, binding and ephemeral ports,
//! listening with a backlog, address and route resolution, the connection
//! handshake (through [`crate::conn`] and [`crate::mad`]), the events each
//! step queues on a channel with their statuses, and the QP attributes
//! `INIT_QP_ATTR` answers.
//!
//! No I/O: the caller passes the time, and the [`Host`] it implements
//! claims ports, finds devices and carries messages.  Errors are the
//! kernel's errno values (positive).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::conn::{self, CmState, Conn};
use crate::ipcm::{self, IpCmHdr, IPCM_HDR_LEN};
use crate::mad::{self, Mad, Msg};
use crate::timers::{Timers, Tracked};
use ibverbs_abi::*;

pub type Handle = u32;
pub type ChanId = u64;

/// Port spaces (IBTA Annex A11 service ID bytes 4 and 5).
pub mod ps {
    pub const IPOIB: u16 = 0x0002;
    pub const IB: u16 = 0x013F;
    pub const TCP: u16 = 0x0106;
    pub const UDP: u16 = 0x0111;
}

/// `enum rdma_cm_event_type`.
pub mod ev {
    pub const ADDR_RESOLVED: u32 = 0;
    pub const ADDR_ERROR: u32 = 1;
    pub const ROUTE_RESOLVED: u32 = 2;
    pub const ROUTE_ERROR: u32 = 3;
    pub const CONNECT_REQUEST: u32 = 4;
    pub const CONNECT_RESPONSE: u32 = 5;
    pub const CONNECT_ERROR: u32 = 6;
    pub const UNREACHABLE: u32 = 7;
    pub const REJECTED: u32 = 8;
    pub const ESTABLISHED: u32 = 9;
    pub const DISCONNECTED: u32 = 10;
    pub const DEVICE_REMOVAL: u32 = 11;
    pub const MULTICAST_JOIN: u32 = 12;
    pub const MULTICAST_ERROR: u32 = 13;
    pub const ADDR_CHANGE: u32 = 14;
    pub const TIMEWAIT_EXIT: u32 = 15;
}

/// `enum ibv_qp_type` values the CM deals in.
pub mod qpt {
    pub const RC: u8 = 2;
    pub const UC: u8 = 3;
    pub const UD: u8 = 4;
}

/// The Q_Key of the UDP and IB port spaces (`RDMA_UDP_QKEY`).
pub const UDP_QKEY: u32 = 0x0123_4567;
/// The largest backlog a listen gets (the kernel's `max_backlog` default).
pub const MAX_BACKLOG: u32 = 1024;
/// The ephemeral port range (Linux `ip_local_port_range` default).
pub const EPHEMERAL: (u16, u16) = (32768, 60999);

pub use libc_errno::*;
/// The errno values this model answers with (Linux, x86_64 and arm64).
pub mod libc_errno {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const EINTR: i32 = 4;
    pub const EAGAIN: i32 = 11;
    pub const ENOMEM: i32 = 12;
    pub const EFAULT: i32 = 14;
    pub const EBUSY: i32 = 16;
    pub const ENODEV: i32 = 19;
    pub const EINVAL: i32 = 22;
    pub const ENOSPC: i32 = 28;
    pub const ENOSYS: i32 = 38;
    pub const ENODATA: i32 = 61;
    pub const EPROTO: i32 = 71;
    pub const EOPNOTSUPP: i32 = 95;
    pub const EAFNOSUPPORT: i32 = 97;
    pub const EADDRINUSE: i32 = 98;
    pub const EADDRNOTAVAIL: i32 = 99;
    pub const ENETUNREACH: i32 = 101;
    pub const ECONNRESET: i32 = 104;
    pub const EISCONN: i32 = 106;
    pub const ETIMEDOUT: i32 = 110;
    pub const ECONNREFUSED: i32 = 111;
    pub const EHOSTUNREACH: i32 = 113;
}

/// What the CM needs to know of the device an address belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dev {
    pub name: String,
    /// The node GUID as the kernel reports it (network-order bytes as u64
    /// read big-endian).
    pub guid: u64,
    pub ibdev_index: u32,
    pub port_num: u8,
    /// The GID index of the address and the GID itself.
    pub gid_index: u8,
    pub gid: [u8; 16],
    /// The port's active MTU (IBTA enum: 1 = 256 ... 5 = 4096).
    pub mtu: u8,
    pub pkey: u16,
    /// `local_ca_ack_delay` of the device.
    pub ack_delay: u8,
    /// `max_qp_rd_atom` / `max_qp_init_rd_atom`.
    pub max_rd_atomic: u8,
}

/// Where a message goes, as the host understands it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dest {
    /// A listener: a REQ or SIDR_REQ to (port space, port) at `ip` through
    /// `dev`.
    Listener {
        dev: String,
        ps: u16,
        port: u16,
        ip: IpAddr,
    },
    /// The sender of a message we received (the host's own address form).
    Peer(Vec<u8>),
}

/// The machine around the model.
pub trait Host {
    /// Claims (port space, port) for a bind to `ip` (port 0: any free
    /// ephemeral port).  The port or the errno.
    fn claim_port(&mut self, ps: u16, ip: IpAddr, port: u16, reuse: bool) -> Result<u16, i32>;
    fn release_port(&mut self, ps: u16, port: u16);
    /// A port about to be listened on: the host makes it reachable by
    /// requests (an ephemeral port taken without that is made so now).
    fn listen_port(&mut self, ps: u16, port: u16) -> Result<(), i32>;
    /// The soft device that answers for local address `ip` (`None`: no
    /// device; the caller's ENODEV).
    fn device_for(&mut self, ip: IpAddr) -> Option<Dev>;
    /// The device and the local address that reach `dst` (ENETUNREACH /
    /// EADDRNOTAVAIL / ENODEV as the kernel's address resolution).
    /// (`dst` with its scope: a link-local IPv6 one names its interface.)
    fn route(&mut self, src: Option<IpAddr>, dst: SocketAddr) -> Result<(Dev, IpAddr), i32>;
    /// Sends (or queues) a message; false when nothing is there to receive
    /// it at all (no listener on that port, a process gone): the machine's
    /// own answer, as the kernel's CM would give it, is then the caller's.
    fn send(&mut self, to: &Dest, mad: &[u8; mad::MAD_LEN]) -> bool;
    /// Is the process behind `to` still there (true when the host cannot
    /// tell)?
    fn alive(&mut self, to: &Dest) -> bool;
    fn random(&mut self) -> u32;
}

/// Private data and parameters of a connection event or command
/// (`struct rdma_ucm_conn_param`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnParam {
    pub qp_num: u32,
    pub qkey: u32,
    pub private_data: Vec<u8>,
    pub srq: u8,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub valid: bool,
}

/// `struct ib_uverbs_ah_attr` as the CM fills it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ah {
    pub dgid: [u8; 16],
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub dlid: u16,
    pub sl: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param {
    Conn(ConnParam),
    Ud {
        qp_num: u32,
        qkey: u32,
        ah: Ah,
        private_data: Vec<u8>,
    },
}

/// One event as `GET_EVENT` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub uid: u64,
    pub id: Handle,
    pub event: u32,
    pub status: i32,
    pub param: Param,
    pub ece: (u32, u32),
    /// The id the event counts on (`events_reported`): the listener for a
    /// CONNECT_REQUEST.
    pub owner: Handle,
}

/// `INIT_QP_ATTR`'s answer: `struct ib_uverbs_qp_attr`'s fields that the CM
/// sets, with the mask.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QpAttr {
    pub mask: u32,
    pub qp_state: u32,
    pub path_mtu: u32,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: u32,
    pub ah: Ah,
    pub pkey_index: u16,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
}

/// An AF_IB address as `QUERY` answers it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IbAddr {
    pub pkey: u16,
    pub gid: [u8; 16],
    pub sid: u64,
    pub mask: u64,
}

/// `QUERY` GID's answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GidInfo {
    pub src: IbAddr,
    pub dst: IbAddr,
    /// The P_Key field (0 on RoCE: the kernel's Ethernet device address has
    /// none).
    pub pkey: u16,
}

/// An id's device, source and destination (`QUERY` ADDR).
pub type AddrInfo = (Option<Dev>, Option<Addr>, Option<SocketAddr>);

/// The rdma_cm state of an id (`enum rdma_cm_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdState {
    Idle,
    AddrBound,
    AddrResolved,
    RouteResolved,
    Connect,
    Disconnect,
    Listen,
}

/// The address an id is bound to or resolved to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    Ip(SocketAddr),
    /// An AF_IB address (only the wildcard one: librdmacm's probe).
    Ib {
        pkey: u16,
        gid: [u8; 16],
        sid: u64,
        sid_mask: u64,
    },
}

impl Addr {
    fn ip(&self) -> Option<SocketAddr> {
        match self {
            Addr::Ip(a) => Some(*a),
            Addr::Ib { .. } => None,
        }
    }
}

#[derive(Clone, Debug)]
struct Id {
    uid: u64,
    chan: ChanId,
    ps: u16,
    qp_type: u8,
    state: IdState,
    src: Option<Addr>,
    dst: Option<SocketAddr>,
    /// The claimed port (released on destroy), with its port space.
    port: Option<u16>,
    dev: Option<Dev>,
    backlog: u32,
    /// For a child of a listener: the listener (its backlog counts the
    /// undelivered CONNECT_REQUESTs).
    parent: Option<Handle>,
    conn: Option<Conn>,
    peer: Option<Dest>,
    /// The id's own starting PSN (random; its REQ's or REP's, and its
    /// QP's receive PSN); the peer's, `qp.rq_psn`, is its QP's send PSN.
    seq: u32,
    tos: Option<u8>,
    reuse: bool,
    afonly: bool,
    ack_timeout: Option<u8>,
    events_reported: u32,
    /// What our REQ or the peer's REQ said of the path.
    path_mtu: u8,
    packet_life_time: u8,
    remote_gid: [u8; 16],
    hop_limit: u8,
    flow_label: u32,
    /// Negotiated resources (see [`conn::QpParams`]).
    qp: conn::QpParams,
    /// UD: the remote QPN and Q_Key from SIDR.
    qkey: u32,
}

impl Id {
    fn new(uid: u64, chan: ChanId, ps: u16, qp_type: u8, seq: u32) -> Id {
        Id {
            uid,
            chan,
            ps,
            qp_type,
            state: IdState::Idle,
            src: None,
            dst: None,
            port: None,
            dev: None,
            backlog: 0,
            parent: None,
            conn: None,
            peer: None,
            seq,
            tos: None,
            reuse: false,
            afonly: false,
            ack_timeout: None,
            events_reported: 0,
            path_mtu: 0,
            packet_life_time: conn::IBOE_PACKET_LIFETIME,
            remote_gid: [0; 16],
            hop_limit: 64,
            flow_label: 0,
            qp: conn::QpParams::default(),
            qkey: 0,
        }
    }
}

/// A multicast join (the kernel's `ucma_multicast`): its own handle, in a
/// space of its own.
#[derive(Clone, Debug)]
struct Mc {
    /// The joined id.
    id: Handle,
    events_reported: u32,
}

/// Is an event a multicast one (its `id` is a multicast handle, not an
/// id's).
fn is_mc_event(e: &Event) -> bool {
    e.event == ev::MULTICAST_JOIN || e.event == ev::MULTICAST_ERROR
}

/// The model: every id and channel of one process.
pub struct Cma<H: Host> {
    pub host: H,
    ids: Tracked<Id>,
    /// The ids' deadlines (see `timers.rs`).
    timers: Timers,
    mcs: BTreeMap<u32, Mc>,
    /// Our local comm ID -> id.
    by_comm: HashMap<u32, Handle>,
    /// (peer, remote comm ID) -> id: duplicate REQs.
    by_remote: HashMap<(Dest, u32), Handle>,
    queues: HashMap<ChanId, VecDeque<Event>>,
    /// Channels whose queue changed since the caller last asked.
    dirty: Vec<ChanId>,
    /// `SWRDMA_CM_TIMEOUT_MS`: replaces every CM response wait.
    pub timeout_override_ms: Option<u64>,
    /// When the peers of connections are next looked for (see
    /// [`Cma::check_peers`]).
    next_peer_check: u64,
    /// Every handle below this one is in use: where [`Cma::alloc_handle`]
    /// starts looking for the lowest free one.
    free_from: Handle,
}

/// How often the peers of connections are looked for.
pub const PEER_CHECK_NS: u64 = 500_000_000;

fn v4mapped(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

fn is_any(ip: IpAddr) -> bool {
    ip.is_unspecified()
}

impl<H: Host> Cma<H> {
    pub fn new(host: H) -> Cma<H> {
        Cma {
            host,
            ids: Tracked::default(),
            timers: Timers::default(),
            mcs: BTreeMap::new(),
            by_comm: HashMap::new(),
            by_remote: HashMap::new(),
            queues: HashMap::new(),
            dirty: Vec::new(),
            timeout_override_ms: None,
            next_peer_check: 0,
            free_from: 0,
        }
    }

    /// Channels whose event queue changed (emptied or filled) since the
    /// last call.
    pub fn take_dirty(&mut self) -> Vec<ChanId> {
        std::mem::take(&mut self.dirty)
    }

    pub fn pending(&self, chan: ChanId) -> usize {
        self.queues.get(&chan).map_or(0, |q| q.len())
    }

    fn push(&mut self, chan: ChanId, e: Event) {
        self.queues.entry(chan).or_default().push_back(e);
        self.dirty.push(chan);
    }

    fn event(&mut self, h: Handle, event: u32, status: i32, param: Param) {
        let Some(id) = self.ids.get(&h) else { return };
        let e = Event {
            uid: id.uid,
            id: h,
            event,
            status,
            param,
            ece: (0, 0),
            owner: h,
        };
        let chan = id.chan;
        self.push(chan, e);
    }

    /// The kernel's `ucma_get_ctx`: ENOENT for no such id, EINVAL for an id
    /// of another channel.
    pub fn check(&self, chan: ChanId, h: Handle) -> Result<(), i32> {
        match self.ids.get(&h) {
            None => Err(ENOENT),
            Some(id) if id.chan != chan => Err(EINVAL),
            Some(_) => Ok(()),
        }
    }

    /// The lowest free handle, as the kernel's `xa_alloc` hands ids out.
    /// The lowest handle no id has (as the kernel's xarray gives), looked
    /// for from `free_from` on rather than from 0.
    fn alloc_handle(&mut self) -> Handle {
        let mut h = self.free_from;
        for k in self.ids.range(h..).map(|(k, _)| *k) {
            if k != h {
                break;
            }
            h += 1;
        }
        // Taken by the caller's insert.
        self.free_from = h + 1;
        h
    }

    fn id(&mut self, h: Handle) -> Result<&mut Id, i32> {
        self.ids.get_mut(&h).ok_or(ENOENT)
    }

    // ---------------------------------------------------------------- commands

    pub fn create_id(&mut self, chan: ChanId, uid: u64, ps: u16, qp_type: u8) -> Result<Handle, i32> {
        let qp_type = match ps {
            ps::TCP => qpt::RC,
            ps::UDP | ps::IPOIB => qpt::UD,
            ps::IB => qp_type,
            _ => return Err(EINVAL),
        };
        let seq = self.host.random() & 0xff_ffff;
        let h = self.alloc_handle();
        self.ids.insert(h, Id::new(uid, chan, ps, qp_type, seq));
        Ok(h)
    }

    /// `JOIN_MCAST` / `JOIN_IP_MCAST` on RoCE (the kernel's
    /// `rdma_join_multicast` and `cma_iboe_join_multicast`): a UD id with a
    /// device, bound or resolved; an IPv4 group becomes the MGID
    /// `::ffff:a.b.c.d` (RoCE v2), an IPv6 group is `ENOTSUPP` (524) as on
    /// Linux 6.1.  The join completes at once: MULTICAST_JOIN with the
    /// group's address handle (QPN 0xffffff, the port space's Q_Key, hop
    /// limit 64, the id's source GID).  The multicast handle is returned.
    pub fn join(&mut self, h: Handle, uid: u64, group: IpAddr, join_flags: u16) -> Result<u32, i32> {
        if join_flags > 1 {
            return Err(EINVAL);
        }
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        let dev = id.dev.clone().ok_or(EINVAL)?;
        let chan = id.chan;
        if !matches!(id.state, IdState::AddrBound | IdState::AddrResolved) || id.qp_type != qpt::UD {
            return Err(EINVAL);
        }
        let mgid = match group {
            IpAddr::V4(a) if !a.is_unspecified() => a.to_ipv6_mapped().octets(),
            IpAddr::V4(_) => return Err(EINVAL),
            IpAddr::V6(a) if a.is_unspecified() => return Err(EINVAL),
            // ENOTSUPP: RoCE v2 has no IPv6 multicast in Linux 6.1's rdma_cm
            IpAddr::V6(_) => return Err(524),
        };
        let qkey = if id.ps == ps::UDP { UDP_QKEY } else { 0 };
        let mc = self.reserve_mc(h);
        let param = Param::Ud {
            qp_num: 0xff_ffff,
            qkey,
            ah: Ah {
                dgid: mgid,
                sgid_index: dev.gid_index,
                hop_limit: 64,
                is_global: 1,
                port_num: dev.port_num,
                ..Ah::default()
            },
            private_data: Vec::new(),
        };
        self.push(
            chan,
            Event {
                uid,
                id: mc,
                event: ev::MULTICAST_JOIN,
                status: 0,
                param,
                ece: (0, 0),
                owner: h,
            },
        );
        Ok(mc)
    }

    /// A multicast handle for id `h` (the lowest free, as the kernel's
    /// `xa_alloc`), also for a join another rdma_cm made.
    pub fn reserve_mc(&mut self, h: Handle) -> u32 {
        let mut n = 0;
        for k in self.mcs.keys() {
            if *k != n {
                break;
            }
            n += 1;
        }
        self.mcs.insert(
            n,
            Mc {
                id: h,
                events_reported: 0,
            },
        );
        n
    }

    /// The id a multicast handle belongs to.
    pub fn mc_owner(&self, mc: u32) -> Option<Handle> {
        self.mcs.get(&mc).map(|m| m.id)
    }

    /// `LEAVE_MCAST`: ENOENT for no such handle, EINVAL for one of another
    /// channel; its undelivered events go; the events reported for it.
    pub fn leave_mcast(&mut self, chan: ChanId, mc: u32) -> Result<u32, i32> {
        let owner = self.mcs.get(&mc).ok_or(ENOENT)?.id;
        if self.ids.get(&owner).is_none_or(|id| id.chan != chan) {
            return Err(EINVAL);
        }
        let m = self.mcs.remove(&mc).ok_or(ENOENT)?;
        if let Some(q) = self.queues.get_mut(&chan) {
            let before = q.len();
            q.retain(|e| !(is_mc_event(e) && e.id == mc));
            if q.len() != before {
                self.dirty.push(chan);
            }
        }
        Ok(m.events_reported)
    }

    /// What an id was created with (its user context, port space and QP
    /// type) and whether it is still idle: what another rdma_cm needs to
    /// take it over before it is bound.
    pub fn id_info(&self, h: Handle) -> Option<(u64, u16, u8, bool)> {
        self.ids
            .get(&h)
            .map(|id| (id.uid, id.ps, id.qp_type, id.state == IdState::Idle))
    }

    /// Destroys an id (and, for a listener, the children whose requests
    /// were not delivered): the events reported for it.
    pub fn destroy_id(&mut self, chan: ChanId, h: Handle) -> Result<u32, i32> {
        match self.ids.get(&h) {
            Some(id) if id.chan == chan => {}
            _ => return Err(ENOENT),
        }
        Ok(self.destroy(h))
    }

    fn destroy(&mut self, h: Handle) -> u32 {
        let Some(mut id) = self.ids.remove(&h) else { return 0 };
        self.free_from = self.free_from.min(h);
        // Its multicast joins go with it (their events are the id's).
        self.mcs.retain(|_, mc| mc.id != h);
        // Queued events of this id go with it; undelivered requests to a
        // listener take their child ids.
        let mut orphans = Vec::new();
        if let Some(q) = self.queues.get_mut(&id.chan) {
            let before = q.len();
            q.retain(|e| {
                if e.owner == h && e.event == ev::CONNECT_REQUEST && e.id != h {
                    orphans.push(e.id);
                }
                e.owner != h && (is_mc_event(e) || e.id != h)
            });
            if q.len() != before {
                self.dirty.push(id.chan);
            }
        }
        for o in orphans {
            self.destroy(o);
        }
        // Children of a listener that were delivered live on.
        if let Some(c) = id.conn.take() {
            self.by_comm.remove(&c.local_comm_id);
            if let Some(p) = &id.peer {
                self.by_remote.remove(&(p.clone(), c.remote_comm_id));
            }
            if let Some(peer) = id.peer.clone() {
                self.leave(&mut id, c, &peer);
            }
        }
        if let (Some(p), None) = (id.port, id.parent) {
            self.host.release_port(id.ps, p);
        }
        id.events_reported
    }

    /// What a connection says to its peer when its id goes away (the IB
    /// CM's `cm_destroy_id`).
    fn leave(&mut self, id: &mut Id, c: Conn, peer: &Dest) {
        match c.state {
            // (the kernel's cm_destroy_id: REJ consumer defined, naming
            // the message rejected as cm_format_rej does: REQ, REP, other)
            CmState::ReqRcvd | CmState::MraReqSent | CmState::RepRcvd | CmState::MraRepRcvd | CmState::RepSent => {
                let which = match c.state {
                    CmState::RepRcvd | CmState::MraRepRcvd => 1,
                    CmState::RepSent => 2,
                    _ => 0,
                };
                let m = self.rej(&c, mad::rej_reason::CONSUMER_DEFINED, which, &[]);
                self.host.send(peer, &m.encode());
            }
            CmState::ReqSent => {
                let mut m = self.rej(&c, mad::rej_reason::TIMEOUT, 0, &[]);
                if let Msg::Rej(r) = &mut m.msg {
                    r.reject_info_length = 8;
                    r.ari[..8].copy_from_slice(&id.dev.as_ref().map_or(0, |d| d.guid).to_be_bytes());
                }
                self.host.send(peer, &m.encode());
            }
            CmState::Established => {
                let m = self.dreq(&c, id.qp.remote_qpn, &[]);
                self.host.send(peer, &m.encode());
            }
            CmState::DreqRcvd => {
                let m = self.drep(&c, &[]);
                self.host.send(peer, &m.encode());
            }
            _ => {}
        }
    }

    fn rej(&self, c: &Conn, reason: u16, msg_rejected: u8, pd: &[u8]) -> Mad {
        let mut r = mad::Rej {
            local_comm_id: c.local_comm_id,
            remote_comm_id: c.remote_comm_id,
            ..Default::default()
        };
        r.message_rejected = msg_rejected;
        r.reason = reason;
        let n = pd.len().min(mad::REJ_PRIVATE_DATA);
        r.private_data[..n].copy_from_slice(&pd[..n]);
        Mad {
            tid: c.tid,
            msg: Msg::Rej(r),
        }
    }

    fn dreq(&self, c: &Conn, remote_qpn: u32, pd: &[u8]) -> Mad {
        let mut r = mad::Dreq {
            local_comm_id: c.local_comm_id,
            remote_comm_id: c.remote_comm_id,
            ..Default::default()
        };
        r.remote_qpn_eecn = remote_qpn;
        let n = pd.len().min(mad::DREQ_PRIVATE_DATA);
        r.private_data[..n].copy_from_slice(&pd[..n]);
        Mad {
            tid: c.tid,
            msg: Msg::Dreq(r),
        }
    }

    fn drep(&self, c: &Conn, pd: &[u8]) -> Mad {
        let mut r = mad::Drep {
            local_comm_id: c.local_comm_id,
            remote_comm_id: c.remote_comm_id,
            ..Default::default()
        };
        let n = pd.len().min(mad::DREP_PRIVATE_DATA);
        r.private_data[..n].copy_from_slice(&pd[..n]);
        Mad {
            tid: c.tid,
            msg: Msg::Drep(r),
        }
    }

    /// `BIND` / `BIND_IP`.
    pub fn bind(&mut self, h: Handle, addr: Addr) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        if id.state != IdState::Idle {
            return Err(EINVAL);
        }
        let (ps, reuse) = (id.ps, id.reuse);
        match addr {
            Addr::Ib {
                pkey,
                gid,
                sid,
                sid_mask,
            } => {
                if gid != [0; 16] {
                    return Err(ENODEV);
                }
                // librdmacm's AF_IB probe: an IP port space in the service
                // ID, port from its low 16 bits (0: ephemeral).
                let sps = ((sid & sid_mask) >> 16) as u16;
                let sps = if sps == 0 { ps } else { sps };
                let port = (sid & !sid_mask & 0xffff) as u16;
                let p = self
                    .host
                    .claim_port(sps, IpAddr::V6(Ipv6Addr::UNSPECIFIED), port, reuse)?;
                let id = self.id(h)?;
                id.port = Some(p);
                // The caller's P_Key; the whole service ID once the port is
                // known (as the kernel answers QUERY).
                id.src = Some(Addr::Ib {
                    pkey,
                    gid,
                    sid: (sid & sid_mask) | p as u64,
                    sid_mask: u64::MAX,
                });
                id.state = IdState::AddrBound;
                Ok(())
            }
            Addr::Ip(sa) => {
                let dev = if is_any(sa.ip()) {
                    None
                } else {
                    Some(self.host.device_for(sa.ip()).ok_or(EADDRNOTAVAIL)?)
                };
                let p = self.host.claim_port(ps, sa.ip(), sa.port(), reuse)?;
                let id = self.id(h)?;
                let mut sa = sa;
                sa.set_port(p);
                id.src = Some(Addr::Ip(sa));
                id.port = Some(p);
                id.dev = dev;
                id.state = IdState::AddrBound;
                Ok(())
            }
        }
    }

    /// `RESOLVE_ADDR` / `RESOLVE_IP`: binds to an ephemeral port if needed
    /// and queues ADDR_RESOLVED (or ADDR_ERROR with the reason).
    pub fn resolve_addr(&mut self, h: Handle, src: Option<SocketAddr>, dst: SocketAddr) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        if !matches!(id.state, IdState::Idle | IdState::AddrBound) {
            return Err(EINVAL);
        }
        if matches!(id.src, Some(Addr::Ib { .. })) {
            return Err(EINVAL);
        }
        let bound_ip = id.src.and_then(|a| a.ip()).map(|a| a.ip()).filter(|ip| !is_any(*ip));
        let want_src = bound_ip.or(src.map(|s| s.ip()).filter(|ip| !is_any(*ip)));
        let routed = self.host.route(want_src, dst);
        let (dev, local) = match routed {
            Ok(x) => x,
            Err(e) => {
                // The kernel fails the command when no device can serve the
                // source at all, and reports other failures as an event.
                if id.state == IdState::Idle && e == ENODEV {
                    return Err(ENODEV);
                }
                let id = self.id(h)?;
                id.dst = Some(dst);
                self.event(h, ev::ADDR_ERROR, -e, Param::Conn(ConnParam::default()));
                return Ok(());
            }
        };
        if id.state == IdState::Idle {
            let port = src.map_or(0, |s| s.port());
            self.bind(h, Addr::Ip(SocketAddr::new(local, port)))?;
        }
        let id = self.id(h)?;
        if let Some(Addr::Ip(mut s)) = id.src {
            if is_any(s.ip()) {
                s.set_ip(local);
                id.src = Some(Addr::Ip(s));
            }
        }
        id.dev = Some(dev);
        id.dst = Some(dst);
        id.remote_gid = v4mapped(dst.ip());
        id.state = IdState::AddrResolved;
        self.event(h, ev::ADDR_RESOLVED, 0, Param::Conn(ConnParam::default()));
        Ok(())
    }

    /// `RESOLVE_ROUTE`: RoCE needs no path query (the kernel's
    /// `cma_resolve_iboe_route`).
    pub fn resolve_route(&mut self, h: Handle) -> Result<(), i32> {
        let id = self.id(h)?;
        if id.state != IdState::AddrResolved {
            return Err(EINVAL);
        }
        let dev = id.dev.clone().ok_or(EINVAL)?;
        id.path_mtu = dev.mtu;
        id.hop_limit = 64;
        id.packet_life_time = id
            .ack_timeout
            .map_or(conn::IBOE_PACKET_LIFETIME, |t| t.saturating_sub(1));
        let (sp, dp) = (
            id.src.and_then(|a| a.ip()).map_or(0, |a| a.port()),
            id.dst.map_or(0, |a| a.port()),
        );
        id.flow_label = (sp as u32 * 31 + dp as u32) & 0xf_ffff;
        id.state = IdState::RouteResolved;
        self.event(h, ev::ROUTE_RESOLVED, 0, Param::Conn(ConnParam::default()));
        Ok(())
    }

    pub fn set_option(&mut self, h: Handle, level: u32, name: u32, val: &[u8]) -> Result<(), i32> {
        let id = self.id(h)?;
        let u8v = |v: &[u8]| v.first().copied().ok_or(EINVAL);
        let int = |v: &[u8]| {
            if v.len() != 4 {
                Err(EINVAL)
            } else {
                Ok(i32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
            }
        };
        match (level, name) {
            // RDMA_OPTION_ID_TOS: a u8
            (0, 0) => {
                if val.len() != 1 {
                    return Err(EINVAL);
                }
                id.tos = Some(u8v(val)?);
            }
            // REUSEADDR: an int; turned on in any state but listening, off
            // only before bind (the kernel's rdma_set_reuseaddr)
            (0, 1) => {
                let reuse = int(val)? != 0;
                if !((reuse && id.state != IdState::Listen) || id.state == IdState::Idle) {
                    return Err(EINVAL);
                }
                id.reuse = reuse;
            }
            // AFONLY: an int, until the id is bound (rdma_set_afonly: idle
            // or bound)
            (0, 2) => {
                let v = int(val)?;
                if !matches!(id.state, IdState::Idle | IdState::AddrBound) {
                    return Err(EINVAL);
                }
                id.afonly = v != 0;
            }
            // ACK_TIMEOUT: a u8
            (0, 3) => {
                if val.len() != 1 {
                    return Err(EINVAL);
                }
                id.ack_timeout = Some(u8v(val)?);
            }
            // RDMA_OPTION_IB_PATH: not on RoCE
            (1, 1) => return Err(EINVAL),
            _ => return Err(ENOSYS),
        }
        Ok(())
    }

    pub fn listen(&mut self, h: Handle, backlog: u32) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        let backlog = if backlog > 0 && backlog < MAX_BACKLOG {
            backlog
        } else {
            MAX_BACKLOG
        };
        match id.state {
            // Linux 6.1: a second listen on a listening id is EINVAL.
            IdState::Listen => return Err(EINVAL),
            IdState::Idle => {
                let any = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
                self.bind(h, Addr::Ip(any))?;
            }
            IdState::AddrBound => {}
            _ => return Err(EINVAL),
        }
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        if let (Some(p), Some(Addr::Ip(_))) = (id.port, id.src) {
            let ps = id.ps;
            self.host.listen_port(ps, p)?;
        }
        let id = self.id(h)?;
        id.backlog = backlog;
        id.state = IdState::Listen;
        Ok(())
    }

    /// `QUERY` ADDR: (node GUID, port, pkey, src, dst, ibdev index).
    pub fn query_addr(&self, h: Handle) -> Result<AddrInfo, i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        Ok((id.dev.clone(), id.src, id.dst))
    }

    /// What `QUERY` GID answers: both ends as AF_IB addresses, as the
    /// kernel converts an IP id's (pkey 0 on RoCE, the service IDs of the
    /// two ports, no mask) or gives an AF_IB id's own.
    pub fn query_gid(&self, h: Handle) -> Result<GidInfo, i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        let sgid = id.dev.as_ref().map_or([0; 16], |d| d.gid);
        Ok(match id.src {
            Some(Addr::Ib {
                pkey,
                gid,
                sid,
                sid_mask,
            }) => GidInfo {
                src: IbAddr {
                    pkey,
                    gid,
                    sid,
                    mask: sid_mask,
                },
                dst: IbAddr::default(),
                pkey: 0,
            },
            src => {
                let sport = src.and_then(|a| a.ip()).map_or(0, |a| a.port());
                let dgid = match (id.dst, src.and_then(|a| a.ip())) {
                    (Some(d), _) => v4mapped(d.ip()),
                    // no device (a wildcard bind): the kernel reads no GIDs
                    (None, _) if id.dev.is_none() => [0; 16],
                    (None, Some(s)) => v4mapped(if s.is_ipv4() {
                        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
                    } else {
                        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
                    }),
                    (None, None) => [0; 16],
                };
                let dport = id.dst.map_or(0, |d| d.port());
                GidInfo {
                    src: IbAddr {
                        pkey: 0,
                        gid: sgid,
                        sid: ipcm::service_id(id.ps, sport),
                        mask: 0,
                    },
                    dst: IbAddr {
                        pkey: 0,
                        gid: dgid,
                        sid: ipcm::service_id(id.ps, dport),
                        mask: 0,
                    },
                    pkey: 0,
                }
            }
        })
    }

    /// The path of an id, once its route is known (`QUERY` PATH): a
    /// 64-byte SA PathRecord as the kernel packs a RoCE path.
    pub fn query_path(&self, h: Handle) -> Result<Vec<[u8; 64]>, i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        if !matches!(
            id.state,
            IdState::RouteResolved | IdState::Connect | IdState::Disconnect
        ) || id.dev.is_none()
        {
            return Ok(Vec::new());
        }
        // A UD id made by a SIDR_REQ has no path record (the kernel's
        // route of such an id has none).
        if id.parent.is_some() && id.qp_type == qpt::UD {
            return Ok(Vec::new());
        }
        let dev = id.dev.as_ref().ok_or(EINVAL)?;
        let mut p = [0u8; 64];
        p[8..24].copy_from_slice(&id.remote_gid);
        p[24..40].copy_from_slice(&dev.gid);
        // The LID fields (a union with the RoCE route's resolved flag and
        // MAC in the kernel) and the raw-traffic bit stay 0 here.
        let flhl = (id.flow_label & 0xf_ffff) << 8 | id.hop_limit as u32;
        p[44..48].copy_from_slice(&flhl.to_be_bytes());
        p[48] = id.tos.unwrap_or(0);
        // reversible, number of paths 0 (as the kernel packs a RoCE path)
        p[49] = 0x80;
        p[50..52].copy_from_slice(&0xffffu16.to_be_bytes());
        // selectors "exactly"; rate 0: the port's current rate
        p[54] = 2 << 6 | id.path_mtu;
        p[55] = 2 << 6;
        p[56] = 2 << 6 | id.packet_life_time;
        Ok(vec![p])
    }

    fn cm_wait(&self, id: &Id) -> u64 {
        conn::response_wait_ns(id.packet_life_time, conn::CM_RESPONSE_TIMEOUT, self.timeout_override_ms)
    }

    fn new_comm_id(&mut self, h: Handle) -> u32 {
        loop {
            let c = self.host.random();
            if c != 0 && !self.by_comm.contains_key(&c) {
                self.by_comm.insert(c, h);
                return c;
            }
        }
    }

    /// `CONNECT`: REQ (RC/UC) or SIDR_REQ (UD).
    pub fn connect(&mut self, now: u64, h: Handle, p: &ConnParam) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        if id.state != IdState::RouteResolved {
            return Err(EINVAL);
        }
        let ud = id.qp_type == qpt::UD;
        let max_pd = if ud {
            mad::SIDR_REQ_PRIVATE_DATA
        } else {
            mad::REQ_PRIVATE_DATA
        } - IPCM_HDR_LEN;
        if p.private_data.len() > max_pd {
            return Err(EINVAL);
        }
        let (Some(Addr::Ip(src)), Some(dst), Some(dev)) = (id.src, id.dst, id.dev.clone()) else {
            return Err(EINVAL);
        };
        let hdr = IpCmHdr {
            src_port: src.port(),
            src: src.ip(),
            dst: dst.ip(),
        };
        let mut pd = vec![0u8; IPCM_HDR_LEN];
        hdr.encode(&mut pd);
        pd.extend_from_slice(&p.private_data);
        let ps = id.ps;
        let tid = ((self.host.random() as u64) << 32) | self.host.random() as u64;
        let comm = self.new_comm_id(h);
        let dest = Dest::Listener {
            dev: dev.name.clone(),
            ps,
            port: dst.port(),
            ip: dst.ip(),
        };
        let id = self.ids.get_mut(&h).ok_or(ENOENT)?;
        let mut c = Conn::new(comm, tid);
        let sid = ipcm::service_id(ps, dst.port());
        let m = if ud {
            let mut r = mad::SidrReq {
                request_id: comm,
                partition_key: 0xffff,
                service_id: sid,
                ..Default::default()
            };
            r.private_data[..pd.len()].copy_from_slice(&pd);
            c.state = CmState::SidrReqSent;
            Mad {
                tid,
                msg: Msg::SidrReq(r),
            }
        } else {
            let mut r = mad::Req {
                local_comm_id: comm,
                service_id: sid,
                ..Default::default()
            };
            r.local_ca_guid = dev.guid;
            r.local_qpn = p.qp_num & 0xff_ffff;
            r.responder_resources = p.responder_resources;
            r.initiator_depth = p.initiator_depth;
            r.remote_cm_response_timeout = conn::CM_RESPONSE_TIMEOUT;
            r.transport_type = if id.qp_type == qpt::UC { 1 } else { 0 };
            r.end_to_end_flow_control = p.flow_control != 0;
            r.starting_psn = id.seq;
            r.local_cm_response_timeout = conn::CM_RESPONSE_TIMEOUT;
            r.retry_count = p.retry_count & 7;
            r.partition_key = 0xffff;
            r.path_mtu = id.path_mtu;
            r.rnr_retry_count = p.rnr_retry_count & 7;
            r.max_cm_retries = conn::MAX_CM_RETRIES;
            r.srq = p.srq != 0;
            r.primary.local_lid = 0xffff;
            r.primary.remote_lid = 0xffff;
            r.primary.local_gid = dev.gid;
            r.primary.remote_gid = id.remote_gid;
            r.primary.flow_label = id.flow_label;
            // 0 (the port's current rate): what the kernel's rdma_cm puts in
            // its REQs on RoCE (vm-rdmacm's MAD capture against rxe).
            r.primary.packet_rate = 0;
            r.primary.traffic_class = id.tos.unwrap_or(0);
            r.primary.hop_limit = id.hop_limit;
            r.primary.sl = 0;
            r.primary.subnet_local = false;
            r.primary.local_ack_timeout = conn::ack_timeout(dev.ack_delay, id.packet_life_time);
            r.private_data[..pd.len()].copy_from_slice(&pd);
            c.state = CmState::ReqSent;
            id.qp.local_qpn = r.local_qpn;
            id.qp.sq_psn = id.seq;
            id.qp.path_mtu = id.path_mtu;
            id.qp.retry_count = r.retry_count;
            id.qp.srq = r.srq;
            Mad { tid, msg: Msg::Req(r) }
        };
        let wait = conn::response_wait_ns(id.packet_life_time, conn::CM_RESPONSE_TIMEOUT, self.timeout_override_ms);
        c.arm(m.clone(), now, wait, conn::MAX_CM_RETRIES);
        id.conn = Some(c);
        id.peer = Some(dest.clone());
        id.state = IdState::Connect;
        if !self.host.send(&dest, &m.encode()) {
            // No listener on that port: the kernel's CM there answers a REQ
            // with REJ 8 (invalid service ID), a SIDR_REQ with status 1
            // (unsupported).
            let id = self.id(h)?;
            id.conn = None;
            self.by_comm.remove(&comm);
            if ud {
                self.event(
                    h,
                    ev::UNREACHABLE,
                    mad::sidr_status::UNSUPPORTED as i32,
                    Param::Conn(ConnParam::default()),
                );
            } else {
                let param = ConnParam {
                    private_data: vec![0; mad::REJ_PRIVATE_DATA],
                    ..Default::default()
                };
                self.event(
                    h,
                    ev::REJECTED,
                    mad::rej_reason::INVALID_SERVICE_ID as i32,
                    Param::Conn(param),
                );
            }
        }
        Ok(())
    }

    /// `ACCEPT`: on a child in REQ_RCVD (passive) sends REP; on an active id
    /// whose REP came (librdmacm after moving its QP) sends RTU; UD: SIDR_REP.
    pub fn accept(&mut self, now: u64, h: Handle, uid: Option<u64>, p: Option<&ConnParam>) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        let Some(c) = id.conn.as_ref() else { return Err(EINVAL) };
        let state = c.state;
        let peer = id.peer.clone().ok_or(EINVAL)?;
        match (state, p) {
            (CmState::SidrReqRcvd, Some(p)) => {
                if p.private_data.len() > mad::SIDR_REP_PRIVATE_DATA {
                    return Err(EINVAL);
                }
                let qkey = if p.qkey != 0 { p.qkey } else { UDP_QKEY };
                let c = id.conn.clone().ok_or(EINVAL)?;
                let mut r = mad::SidrRep {
                    request_id: c.remote_comm_id,
                    ..Default::default()
                };
                r.status = mad::sidr_status::SUCCESS;
                r.qpn = p.qp_num & 0xff_ffff;
                r.qkey = qkey;
                r.service_id = match id.src {
                    Some(Addr::Ip(a)) => ipcm::service_id(id.ps, a.port()),
                    _ => 0,
                };
                r.private_data[..p.private_data.len()].copy_from_slice(&p.private_data);
                let m = Mad {
                    tid: c.tid,
                    msg: Msg::SidrRep(r),
                };
                self.host.send(&peer, &m.encode());
                let id = self.id(h)?;
                if let Some(u) = uid {
                    id.uid = u;
                }
                id.qkey = qkey;
                id.conn = None;
                id.state = IdState::Connect;
                Ok(())
            }
            (CmState::ReqRcvd | CmState::MraReqSent, Some(p)) => {
                if p.private_data.len() > mad::REP_PRIVATE_DATA {
                    // The kernel's rdma_accept: a REP that cannot be sent
                    // rejects the request (REJ consumer defined).
                    let c = id.conn.clone().ok_or(EINVAL)?;
                    let m = self.rej(&c, mad::rej_reason::CONSUMER_DEFINED, 0, &[]);
                    self.host.send(&peer, &m.encode());
                    let id = self.id(h)?;
                    id.conn = None;
                    self.by_comm.remove(&c.local_comm_id);
                    self.by_remote.remove(&(peer, c.remote_comm_id));
                    return Err(EINVAL);
                }
                let dev = id.dev.clone().ok_or(EINVAL)?;
                let mut c = id.conn.clone().ok_or(EINVAL)?;
                let mut r = mad::Rep {
                    local_comm_id: c.local_comm_id,
                    remote_comm_id: c.remote_comm_id,
                    ..Default::default()
                };
                r.local_qpn = p.qp_num & 0xff_ffff;
                r.starting_psn = id.seq;
                r.responder_resources = p.responder_resources;
                r.initiator_depth = p.initiator_depth;
                r.target_ack_delay = dev.ack_delay;
                // 0, as the kernel's rdma_cm (its REP's failover_accepted is
                // never set: vm-rdmacm's MAD capture against rxe).
                r.failover_accepted = 0;
                r.end_to_end_flow_control = p.flow_control != 0;
                r.rnr_retry_count = p.rnr_retry_count & 7;
                r.srq = p.srq != 0;
                r.local_ca_guid = dev.guid;
                r.private_data[..p.private_data.len()].copy_from_slice(&p.private_data);
                let m = Mad {
                    tid: c.tid,
                    msg: Msg::Rep(r),
                };
                let wait = self.cm_wait(id);
                c.arm(m.clone(), now, wait, conn::MAX_CM_RETRIES);
                c.last_sent = Some(m.clone());
                c.state = CmState::RepSent;
                self.host.send(&peer, &m.encode());
                let id = self.id(h)?;
                id.qp.local_qpn = p.qp_num & 0xff_ffff;
                id.qp.sq_psn = id.seq;
                id.qp.initiator_depth = p.initiator_depth;
                id.qp.responder_resources = p.responder_resources;
                if let Some(u) = uid {
                    id.uid = u;
                }
                id.conn = Some(c);
                id.state = IdState::Connect;
                Ok(())
            }
            (CmState::RepRcvd | CmState::MraRepRcvd, None) => {
                let mut c = id.conn.clone().ok_or(EINVAL)?;
                let r = mad::Rtu {
                    local_comm_id: c.local_comm_id,
                    remote_comm_id: c.remote_comm_id,
                    ..Default::default()
                };
                let m = Mad {
                    tid: c.tid,
                    msg: Msg::Rtu(r),
                };
                c.state = CmState::Established;
                c.last_sent = Some(m.clone());
                c.disarm();
                self.host.send(&peer, &m.encode());
                self.id(h)?.conn = Some(c);
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }

    /// `REJECT`: REJ (consumer defined unless `reason` says otherwise) or a
    /// SIDR_REP with status REJECT.
    pub fn reject(&mut self, h: Handle, reason: u8, pd: &[u8]) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        let Some(c) = id.conn.clone() else { return Err(EINVAL) };
        let peer = id.peer.clone().ok_or(EINVAL)?;
        match c.state {
            CmState::SidrReqRcvd => {
                if pd.len() > mad::SIDR_REP_PRIVATE_DATA {
                    return Err(EINVAL);
                }
                let mut r = mad::SidrRep {
                    request_id: c.remote_comm_id,
                    ..Default::default()
                };
                r.status = mad::sidr_status::REJECT;
                r.private_data[..pd.len()].copy_from_slice(pd);
                self.host.send(
                    &peer,
                    &Mad {
                        tid: c.tid,
                        msg: Msg::SidrRep(r),
                    }
                    .encode(),
                );
            }
            CmState::ReqRcvd | CmState::MraReqSent | CmState::RepRcvd | CmState::MraRepRcvd => {
                if pd.len() > mad::REJ_PRIVATE_DATA {
                    return Err(EINVAL);
                }
                let why = if reason == 0 {
                    mad::rej_reason::CONSUMER_DEFINED
                } else {
                    reason as u16
                };
                let which = if matches!(c.state, CmState::RepRcvd | CmState::MraRepRcvd) {
                    1
                } else {
                    0
                };
                let m = self.rej(&c, why, which, pd);
                self.host.send(&peer, &m.encode());
            }
            _ => return Err(EINVAL),
        }
        let id = self.id(h)?;
        if let Some(c) = id.conn.take() {
            self.by_comm.remove(&c.local_comm_id);
            self.by_remote.remove(&(peer, c.remote_comm_id));
        }
        Ok(())
    }

    /// `DISCONNECT`: DREQ when established, DREP when the peer's DREQ came.
    pub fn disconnect(&mut self, now: u64, h: Handle) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        let Some(mut c) = id.conn.clone() else {
            return Err(EINVAL);
        };
        let peer = id.peer.clone().ok_or(EINVAL)?;
        match c.state {
            CmState::Established => {
                let m = self.dreq(&c, id.qp.remote_qpn, &[]);
                let wait = self.cm_wait(id);
                if self.host.send(&peer, &m.encode()) {
                    c.arm(m, now, wait, conn::MAX_CM_RETRIES);
                    c.state = CmState::DreqSent;
                } else {
                    // The peer's process is gone (its ids with it): nothing
                    // to wait for.
                    c.state = CmState::Timewait;
                    c.timewait_end = now;
                    self.id(h)?.conn = Some(c);
                    self.disconnected(h, 0);
                    return Ok(());
                }
            }
            CmState::DreqRcvd => {
                let m = self.drep(&c, &[]);
                c.last_sent = Some(m.clone());
                c.state = CmState::Timewait;
                c.timewait_end = now + self.cm_wait(id);
                self.host.send(&peer, &m.encode());
            }
            // A REP came but was never accepted: the kernel rejects it.
            CmState::RepRcvd | CmState::MraRepRcvd => {
                let m = self.rej(&c, mad::rej_reason::CONSUMER_DEFINED, 1, &[]);
                c.state = CmState::Idle;
                self.host.send(&peer, &m.encode());
            }
            CmState::DreqSent | CmState::Timewait => {}
            _ => return Err(EINVAL),
        }
        self.id(h)?.conn = Some(c);
        Ok(())
    }

    /// `NOTIFY` with IBV_EVENT_COMM_EST: the passive side takes traffic
    /// before the RTU as the RTU.
    pub fn notify(&mut self, h: Handle, event: u32) -> Result<(), i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        if event != 4 {
            return Ok(());
        }
        let est = matches!(id.conn.as_ref().map(|c| c.state), Some(CmState::RepSent));
        if est {
            self.established(h);
        }
        Ok(())
    }

    fn established(&mut self, h: Handle) {
        let Some(id) = self.ids.get_mut(&h) else { return };
        if let Some(c) = id.conn.as_mut() {
            c.state = CmState::Established;
            c.disarm();
        }
        self.event(h, ev::ESTABLISHED, 0, Param::Conn(ConnParam::default()));
    }

    /// `INIT_QP_ATTR`.
    pub fn init_qp_attr(&self, h: Handle, state: u32) -> Result<QpAttr, i32> {
        let id = self.ids.get(&h).ok_or(ENOENT)?;
        let dev = id.dev.as_ref().ok_or(EINVAL)?;
        // Only INIT names the port (the kernel leaves it 0 in RTR and RTS).
        let mut a = QpAttr {
            qp_state: state,
            ..Default::default()
        };
        let cm_state = id.conn.as_ref().map(|c| c.state);
        let ud = id.qp_type == qpt::UD;
        // No CM connection yet (or a UD id): the kernel's
        // cma_ib_init_qp_attr, whatever the state asked: the port, P_Key
        // index and Q_Key (UD) or no remote access (RC/UC); for RTR the id's
        // own PSN as the receive PSN.
        if (cm_state.is_none() || ud) && state <= 3 {
            a.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
            a.port_num = dev.port_num;
            if ud {
                a.qkey = if id.qkey != 0 { id.qkey } else { UDP_QKEY };
                a.mask |= IBV_QP_QKEY;
            } else {
                a.mask |= IBV_QP_ACCESS_FLAGS;
            }
            if state == 2 {
                a.rq_psn = id.seq;
            }
            return Ok(a);
        }
        // RTR and RTS need the peer's REQ or REP (the kernel's
        // ib_cm_init_qp_attr refuses other CM states).
        let ready = matches!(
            cm_state,
            Some(
                CmState::ReqRcvd
                    | CmState::MraReqSent
                    | CmState::RepSent
                    | CmState::RepRcvd
                    | CmState::MraRepRcvd
                    | CmState::Established
            )
        );
        if (state == 2 || state == 3) && !ready {
            return Err(EINVAL);
        }
        match state {
            // INIT: remote write, and read/atomic when the peer may read
            1 => {
                a.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
                a.port_num = dev.port_num;
                a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
                if id.qp.responder_resources > 0 {
                    a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
                }
            }
            // RTR
            2 => {
                a.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
                a.ah = self.ah(id, dev);
                a.path_mtu = id.path_mtu as u32;
                a.dest_qp_num = id.qp.remote_qpn;
                // Each side receives from the PSN it announced (its REQ's
                // or REP's starting PSN: the kernel's rdma_init_qp_attr
                // gives RTR its own seq_num) and sends from the one its
                // peer announced (ib_cm's sq_psn), so that the kernel's
                // rdma_cm and ours meet on the wire.
                a.rq_psn = id.seq;
                if id.qp_type == qpt::RC {
                    a.mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
                    a.max_dest_rd_atomic = id.qp.responder_resources;
                    a.min_rnr_timer = 0;
                }
            }
            // RTS
            3 => {
                a.mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
                a.sq_psn = id.qp.rq_psn;
                if id.qp_type == qpt::RC {
                    a.mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
                    // the ACK_TIMEOUT option, when set, is the QP's timeout
                    // (the end of the kernel's rdma_init_qp_attr)
                    a.timeout = id.ack_timeout.unwrap_or(id.qp.ack_timeout);
                    a.retry_cnt = id.qp.retry_count;
                    a.rnr_retry = id.qp.rnr_retry_count;
                    a.max_rd_atomic = id.qp.initiator_depth;
                }
            }
            _ => return Err(EINVAL),
        }
        Ok(a)
    }

    fn ah(&self, id: &Id, dev: &Dev) -> Ah {
        Ah {
            dgid: id.remote_gid,
            flow_label: id.flow_label,
            sgid_index: dev.gid_index,
            hop_limit: id.hop_limit,
            traffic_class: id.tos.unwrap_or(0),
            dlid: 0,
            sl: 0,
            static_rate: 0,
            is_global: 1,
            port_num: dev.port_num,
        }
    }

    /// `MIGRATE_ID`: moves an id and its queued events to `to`; the events
    /// reported for it so far.
    pub fn migrate(&mut self, h: Handle, from: ChanId, to: ChanId) -> Result<u32, i32> {
        let id = self.ids.get_mut(&h).ok_or(ENOENT)?;
        if id.chan != from {
            return Err(ENOENT);
        }
        id.chan = to;
        let reported = id.events_reported;
        let mut moved = Vec::new();
        if let Some(q) = self.queues.get_mut(&from) {
            let mut keep = VecDeque::new();
            for e in q.drain(..) {
                if e.owner == h || (!is_mc_event(&e) && e.id == h) {
                    moved.push(e);
                } else {
                    keep.push_back(e);
                }
            }
            *q = keep;
        }
        if !moved.is_empty() {
            self.dirty.push(from);
            for e in moved {
                self.push(to, e);
            }
        }
        Ok(reported)
    }

    /// `GET_EVENT`: the oldest event of `chan`.
    pub fn get_event(&mut self, chan: ChanId) -> Option<Event> {
        let q = self.queues.get_mut(&chan)?;
        let e = q.pop_front()?;
        if q.is_empty() {
            self.dirty.push(chan);
        }
        if let Some(id) = self.ids.get_mut(&e.owner) {
            id.events_reported += 1;
            if e.event == ev::CONNECT_REQUEST {
                id.backlog += 1;
            }
        }
        if is_mc_event(&e) {
            if let Some(mc) = self.mcs.get_mut(&e.id) {
                mc.events_reported += 1;
            }
        }
        Some(e)
    }

    /// A channel closed: every id on it goes.
    pub fn close_channel(&mut self, chan: ChanId) {
        let hs: Vec<Handle> = self
            .ids
            .iter()
            .filter(|(_, id)| id.chan == chan)
            .map(|(h, _)| *h)
            .collect();
        for h in hs {
            self.destroy(h);
        }
        self.queues.remove(&chan);
    }

    // ---------------------------------------------------------------- timers

    pub fn next_deadline(&mut self) -> Option<u64> {
        self.sync_timers();
        let ids = &self.ids;
        let mut min = self
            .timers
            .earliest(|h| ids.get(&h).and_then(|id| id.conn.as_ref()?.deadline()));
        if self.timers.any_watched() {
            min = Some(min.map_or(self.next_peer_check, |m| m.min(self.next_peer_check)));
        }
        debug_assert_eq!(
            min,
            self.next_deadline_by_pass(),
            "the timer heap agrees with a pass over the ids"
        );
        min
    }

    /// `next_deadline` the slow way: one pass over every id (what the
    /// heap must agree with; debug builds check it).
    fn next_deadline_by_pass(&self) -> Option<u64> {
        let mut min: Option<u64> = None;
        let mut peers = false;
        for (_, id) in self.ids.iter() {
            let Some(c) = id.conn.as_ref() else { continue };
            if let Some(d) = c.deadline() {
                min = Some(min.map_or(d, |m| m.min(d)));
            }
            peers = peers || Self::watched(id).is_some();
        }
        if peers {
            min = Some(min.map_or(self.next_peer_check, |m| m.min(self.next_peer_check)));
        }
        min
    }

    /// Brings the timer heap up to date with the ids changed since.
    fn sync_timers(&mut self) {
        let touched = self.ids.take_touched();
        if touched.is_empty() {
            return;
        }
        let ids = &self.ids;
        self.timers.sync(
            touched,
            ids.len(),
            |h| {
                ids.get(&h)
                    .map(|id| (id.conn.as_ref().and_then(|c| c.deadline()), Self::watched(id).is_some()))
            },
            || {
                ids.iter()
                    .map(|(h, id)| (*h, id.conn.as_ref().and_then(|c| c.deadline())))
                    .collect()
            },
        );
    }

    /// The peer of a connection whose state waits on it, when the host
    /// can tell whether it is still there.
    fn watched(id: &Id) -> Option<&Dest> {
        let st = id.conn.as_ref()?.state;
        let waits = matches!(
            st,
            CmState::Established
                | CmState::DreqSent
                | CmState::RepSent
                | CmState::RepRcvd
                | CmState::MraRepRcvd
                | CmState::ReqSent
        );
        match &id.peer {
            Some(d @ Dest::Peer(_)) if waits => Some(d),
            _ => None,
        }
    }

    /// A peer process that is gone (killed, or ended without destroying
    /// its ids) cannot say so; the kernel's CM says it for a killed
    /// process (its ids are destroyed with the file: DREQ, or REJ consumer
    /// defined before the connection was established).  So the peers of
    /// waiting connections are looked for every [`PEER_CHECK_NS`], and a
    /// vanished one counts as that DREQ or REJ.
    pub fn check_peers(&mut self, now: u64) {
        if now < self.next_peer_check {
            return;
        }
        self.next_peer_check = now + PEER_CHECK_NS;
        let watched: Vec<(Handle, Dest)> = self
            .ids
            .iter()
            .filter_map(|(h, id)| Self::watched(id).map(|d| (*h, d.clone())))
            .collect();
        let mut gone: Vec<Dest> = Vec::new();
        // Each peer is asked once a round, however many connections it has.
        let mut live: Vec<Dest> = Vec::new();
        for (h, d) in watched {
            if live.contains(&d) {
                continue;
            }
            if !gone.contains(&d) && self.host.alive(&d) {
                live.push(d);
                continue;
            }
            if !gone.contains(&d) {
                gone.push(d.clone());
            }
            let Some(id) = self.ids.get_mut(&h) else { continue };
            let Some(c) = id.conn.as_mut() else { continue };
            match c.state {
                CmState::Established | CmState::DreqSent => {
                    c.state = CmState::Timewait;
                    c.timewait_end = now;
                    c.disarm();
                    self.disconnected(h, 0);
                }
                _ => {
                    let comm = c.local_comm_id;
                    id.conn = None;
                    self.by_comm.remove(&comm);
                    let param = ConnParam {
                        private_data: vec![0; mad::REJ_PRIVATE_DATA],
                        ..Default::default()
                    };
                    self.event(
                        h,
                        ev::REJECTED,
                        mad::rej_reason::CONSUMER_DEFINED as i32,
                        Param::Conn(param),
                    );
                }
            }
        }
    }

    pub fn tick(&mut self, now: u64) {
        self.check_peers(now);
        self.sync_timers();
        let ids = &self.ids;
        let due = self
            .timers
            .due(now, |h| ids.get(&h).and_then(|id| id.conn.as_ref()?.deadline()));
        for h in due {
            let Some(id) = self.ids.get_mut(&h) else { continue };
            let Some(c) = id.conn.as_mut() else { continue };
            if c.state == CmState::Timewait {
                if now >= c.timewait_end {
                    let comm = c.local_comm_id;
                    id.conn = None;
                    self.by_comm.remove(&comm);
                }
                continue;
            }
            let state = c.state;
            match c.expire(now) {
                None => {}
                Some(Ok(m)) => {
                    if let Some(p) = id.peer.clone() {
                        self.host.send(&p, &m.encode());
                    }
                }
                Some(Err(())) => self.timed_out(now, h, state),
            }
        }
    }

    fn timed_out(&mut self, now: u64, h: Handle, state: CmState) {
        let Some(id) = self.ids.get_mut(&h) else { return };
        let peer = id.peer.clone();
        let Some(c) = id.conn.as_mut() else { return };
        match state {
            CmState::ReqSent | CmState::RepSent | CmState::SidrReqSent => {
                let comm = c.local_comm_id;
                let cc = c.clone();
                id.conn = None;
                self.by_comm.remove(&comm);
                if state != CmState::SidrReqSent {
                    if let Some(p) = peer {
                        let m = self.rej(
                            &cc,
                            mad::rej_reason::TIMEOUT,
                            if state == CmState::RepSent { 1 } else { 0 },
                            &[],
                        );
                        self.host.send(&p, &m.encode());
                    }
                }
                self.event(h, ev::UNREACHABLE, -ETIMEDOUT, Param::Conn(ConnParam::default()));
            }
            CmState::DreqSent => {
                c.state = CmState::Timewait;
                c.timewait_end = now;
                self.disconnected(h, -ETIMEDOUT);
            }
            _ => {}
        }
    }

    fn disconnected(&mut self, h: Handle, status: i32) {
        let Some(id) = self.ids.get_mut(&h) else { return };
        if id.state != IdState::Connect {
            return;
        }
        id.state = IdState::Disconnect;
        self.event(h, ev::DISCONNECTED, status, Param::Conn(ConnParam::default()));
    }

    // ---------------------------------------------------------------- messages

    /// A CM MAD from `from` (the host's address of the sender), received on
    /// a port `(ps, port)` socket (`to_port`) or on the process's own one.
    pub fn recv(&mut self, now: u64, from: &Dest, to_port: Option<(u16, u16)>, bytes: &[u8]) {
        let Ok(m) = Mad::decode(bytes) else { return };
        match m.msg.clone() {
            Msg::Req(r) => self.on_req(from, to_port, m.tid, r),
            Msg::SidrReq(r) => self.on_sidr_req(from, to_port, m.tid, r),
            msg => {
                let (_, ours) = conn::comm_ids(&msg);
                let Some(&h) = self.by_comm.get(&ours) else {
                    self.stale(from, &m);
                    return;
                };
                // Only the peer of the connection may speak for it; until
                // the first answer to a REQ or SIDR_REQ (sent to a
                // listener's address), whoever answers for that comm ID is
                // the peer, as for the kernel's CM.
                let Some(id) = self.ids.get_mut(&h) else { return };
                let first = matches!(id.peer, Some(Dest::Listener { .. }))
                    && matches!(
                        id.conn.as_ref().map(|c| c.state),
                        Some(CmState::ReqSent | CmState::SidrReqSent)
                    );
                if first {
                    id.peer = Some(from.clone());
                } else if id.peer.as_ref() != Some(from) {
                    return;
                }
                match msg {
                    Msg::Mra(r) => self.on_mra(now, h, r),
                    Msg::Rej(r) => self.on_rej(h, r),
                    Msg::Rep(r) => self.on_rep(h, from, r),
                    Msg::Rtu(r) => self.on_rtu(h, r),
                    Msg::Dreq(r) => self.on_dreq(now, h, from, r),
                    Msg::Drep(r) => self.on_drep(now, h, r),
                    Msg::SidrRep(r) => self.on_sidr_rep(h, r),
                    Msg::Req(_) | Msg::SidrReq(_) => {}
                }
            }
        }
    }

    /// A message for no connection of ours: a DREQ gets a DREP (the peer
    /// may have missed ours; the kernel's `cm_issue_drep`); anything else
    /// is dropped (a REP too: Linux 6.1 answers it with nothing).
    fn stale(&mut self, from: &Dest, m: &Mad) {
        if let Msg::Dreq(r) = &m.msg {
            let d = mad::Drep {
                local_comm_id: r.remote_comm_id,
                remote_comm_id: r.local_comm_id,
                ..Default::default()
            };
            self.host.send(
                from,
                &Mad {
                    tid: m.tid,
                    msg: Msg::Drep(d),
                }
                .encode(),
            );
        }
    }

    fn find_listener(&self, ps: u16, port: u16, dst: IpAddr) -> Option<Handle> {
        let mut wildcard = None;
        for (h, id) in self.ids.iter() {
            if id.state != IdState::Listen || id.ps != ps || id.port != Some(port) {
                continue;
            }
            match id.src {
                Some(Addr::Ip(a)) if a.ip() == dst => return Some(*h),
                Some(Addr::Ip(a)) if is_any(a.ip()) => {
                    let fam_ok = !id.afonly || a.is_ipv4() == dst.is_ipv4();
                    if fam_ok {
                        wildcard = Some(*h);
                    }
                }
                Some(Addr::Ib { .. }) => wildcard = Some(*h),
                _ => {}
            }
        }
        wildcard
    }

    fn reject_req(&mut self, from: &Dest, tid: u64, remote_comm: u32, reason: u16) {
        let mut j = mad::Rej {
            local_comm_id: 0,
            remote_comm_id: remote_comm,
            ..Default::default()
        };
        j.reason = reason;
        self.host.send(from, &Mad { tid, msg: Msg::Rej(j) }.encode());
    }

    fn on_req(&mut self, from: &Dest, to_port: Option<(u16, u16)>, tid: u64, r: mad::Req) {
        // A duplicate of a REQ we hold: MRA again, or the REP again.
        if let Some(&h) = self.by_remote.get(&(from.clone(), r.local_comm_id)) {
            if let Some(c) = self.ids.get(&h).and_then(|id| id.conn.as_ref()) {
                match c.state {
                    CmState::ReqRcvd | CmState::MraReqSent => {
                        let m = self.mra(c, 0);
                        self.host.send(from, &m.encode());
                    }
                    CmState::RepSent => {
                        if let Some(m) = c.last_sent.clone() {
                            self.host.send(from, &m.encode());
                        }
                    }
                    _ => {}
                }
            }
            return;
        }
        let Some((ps, port)) = ipcm::service_id_parts(r.service_id) else {
            self.reject_req(from, tid, r.local_comm_id, mad::rej_reason::INVALID_SERVICE_ID);
            return;
        };
        if to_port.is_some_and(|tp| tp != (ps, port)) {
            return;
        }
        let Some(hdr) = IpCmHdr::decode(&r.private_data) else {
            self.reject_req(from, tid, r.local_comm_id, mad::rej_reason::INVALID_SERVICE_ID);
            return;
        };
        let Some(lh) = self.find_listener(ps, port, hdr.dst) else {
            self.reject_req(from, tid, r.local_comm_id, mad::rej_reason::INVALID_SERVICE_ID);
            return;
        };
        let Some(dev) = self.host.device_for(hdr.dst) else {
            self.reject_req(from, tid, r.local_comm_id, mad::rej_reason::INVALID_SERVICE_ID);
            return;
        };
        let Some(l) = self.ids.get_mut(&lh) else { return };
        if l.backlog == 0 {
            // The kernel's ucma refuses the request (ENOMEM from its event
            // handler): the CM rejects it.
            self.reject_req(from, tid, r.local_comm_id, mad::rej_reason::CONSUMER_DEFINED);
            return;
        }
        l.backlog -= 1;
        let (luid, lchan, lps, lqpt) = (l.uid, l.chan, l.ps, l.qp_type);
        let h = self.alloc_handle();
        let seq = self.host.random() & 0xff_ffff;
        let mut id = Id::new(0, lchan, lps, lqpt, seq);
        id.state = IdState::Connect;
        id.parent = Some(lh);
        id.port = Some(port);
        id.src = Some(Addr::Ip(SocketAddr::new(hdr.dst, port)));
        id.dst = Some(SocketAddr::new(hdr.src, hdr.src_port));
        id.remote_gid = r.primary.local_gid;
        id.hop_limit = r.primary.hop_limit;
        id.flow_label = r.primary.flow_label;
        id.tos = Some(r.primary.traffic_class);
        id.path_mtu = r.path_mtu.min(dev.mtu);
        id.packet_life_time = r.primary.local_ack_timeout.saturating_sub(1);
        id.qp.remote_qpn = r.local_qpn;
        id.qp.rq_psn = r.starting_psn;
        id.qp.path_mtu = id.path_mtu;
        id.qp.responder_resources = r.initiator_depth;
        id.qp.initiator_depth = r.responder_resources;
        id.qp.retry_count = r.retry_count;
        id.qp.rnr_retry_count = r.rnr_retry_count;
        id.qp.ack_timeout = conn::ack_timeout(dev.ack_delay, id.packet_life_time);
        id.qp.srq = r.srq;
        id.dev = Some(dev);
        id.peer = Some(from.clone());
        self.ids.insert(h, id);
        let comm = self.new_comm_id(h);
        let mut c = Conn::new(comm, tid);
        c.remote_comm_id = r.local_comm_id;
        c.state = CmState::ReqRcvd;
        // The MRA for a REQ handed to user space is only prepared (the
        // kernel's CMA_CM_MRA_SETTING has IB_CM_MRA_FLAG_DELAY): it is sent
        // in answer to a duplicate REQ, not at once (Debian's 6.1.0-57 sends
        // none for a REQ answered in time: vm-rdmacm's MAD capture; earlier
        // 6.1 kernels sent it at once).
        c.state = CmState::MraReqSent;
        self.by_remote.insert((from.clone(), r.local_comm_id), h);
        if let Some(id) = self.ids.get_mut(&h) {
            id.conn = Some(c);
        }
        let user = r.private_data[IPCM_HDR_LEN..].to_vec();
        let param = ConnParam {
            qp_num: r.local_qpn,
            private_data: user,
            srq: r.srq as u8,
            responder_resources: r.responder_resources,
            initiator_depth: r.initiator_depth,
            flow_control: r.end_to_end_flow_control as u8,
            retry_count: r.retry_count,
            rnr_retry_count: r.rnr_retry_count,
            ..Default::default()
        };
        let e = Event {
            uid: luid,
            id: h,
            event: ev::CONNECT_REQUEST,
            status: 0,
            param: Param::Conn(param),
            ece: (r.vendor_id, 0),
            owner: lh,
        };
        self.push(lchan, e);
    }

    fn mra(&self, c: &Conn, which: u8) -> Mad {
        let r = mad::Mra {
            local_comm_id: c.local_comm_id,
            remote_comm_id: c.remote_comm_id,
            message_mraed: which,
            service_timeout: conn::MRA_SERVICE_TIMEOUT,
            ..Default::default()
        };
        Mad {
            tid: c.tid,
            msg: Msg::Mra(r),
        }
    }

    fn on_sidr_req(&mut self, from: &Dest, to_port: Option<(u16, u16)>, tid: u64, r: mad::SidrReq) {
        let refuse = |this: &mut Self, status: u8| {
            let mut s = mad::SidrRep {
                request_id: r.request_id,
                service_id: r.service_id,
                ..Default::default()
            };
            s.status = status;
            this.host.send(
                from,
                &Mad {
                    tid,
                    msg: Msg::SidrRep(s),
                }
                .encode(),
            );
        };
        if self.by_remote.contains_key(&(from.clone(), r.request_id)) {
            return;
        }
        let Some((ps, port)) = ipcm::service_id_parts(r.service_id) else {
            refuse(self, mad::sidr_status::UNSUPPORTED);
            return;
        };
        if to_port.is_some_and(|tp| tp != (ps, port)) {
            return;
        }
        let Some(hdr) = IpCmHdr::decode(&r.private_data) else {
            refuse(self, mad::sidr_status::UNSUPPORTED);
            return;
        };
        let (Some(lh), Some(dev)) = (self.find_listener(ps, port, hdr.dst), self.host.device_for(hdr.dst)) else {
            refuse(self, mad::sidr_status::UNSUPPORTED);
            return;
        };
        let Some(l) = self.ids.get_mut(&lh) else { return };
        if l.backlog == 0 {
            refuse(self, mad::sidr_status::REJECT);
            return;
        }
        l.backlog -= 1;
        let (luid, lchan, lps, lqpt) = (l.uid, l.chan, l.ps, l.qp_type);
        let h = self.alloc_handle();
        let mut id = Id::new(0, lchan, lps, lqpt, 0);
        id.state = IdState::Connect;
        id.parent = Some(lh);
        id.port = Some(port);
        id.src = Some(Addr::Ip(SocketAddr::new(hdr.dst, port)));
        id.dst = Some(SocketAddr::new(hdr.src, hdr.src_port));
        id.remote_gid = v4mapped(hdr.src);
        id.dev = Some(dev);
        id.peer = Some(from.clone());
        let mut c = Conn::new(0, tid);
        c.remote_comm_id = r.request_id;
        c.state = CmState::SidrReqRcvd;
        id.conn = Some(c);
        // The kernel hands a SIDR request to user space with no address
        // handle (the reply goes back through the CM).
        let ah = Ah::default();
        self.ids.insert(h, id);
        self.by_remote.insert((from.clone(), r.request_id), h);
        let e = Event {
            uid: luid,
            id: h,
            event: ev::CONNECT_REQUEST,
            status: 0,
            param: Param::Ud {
                qp_num: 0,
                qkey: 0,
                ah,
                private_data: r.private_data[IPCM_HDR_LEN..].to_vec(),
            },
            ece: (0, 0),
            owner: lh,
        };
        self.push(lchan, e);
    }

    fn on_mra(&mut self, now: u64, h: Handle, r: mad::Mra) {
        let ovr = self.timeout_override_ms;
        let Some(id) = self.ids.get_mut(&h) else { return };
        let plt = id.packet_life_time;
        let Some(c) = id.conn.as_mut() else { return };
        match (c.state, r.message_mraed) {
            (CmState::ReqSent, 0) | (CmState::RepSent, 1) => {
                c.extend(now, r.service_timeout, plt, ovr);
            }
            _ => {}
        }
    }

    fn on_rej(&mut self, h: Handle, r: mad::Rej) {
        let Some(id) = self.ids.get_mut(&h) else { return };
        let Some(c) = id.conn.as_ref() else { return };
        if !matches!(
            c.state,
            CmState::ReqSent | CmState::RepSent | CmState::RepRcvd | CmState::MraRepRcvd | CmState::Established
        ) {
            return;
        }
        let comm = c.local_comm_id;
        let remote = c.remote_comm_id;
        id.conn = None;
        let peer = id.peer.clone();
        self.by_comm.remove(&comm);
        if let Some(p) = peer {
            self.by_remote.remove(&(p, remote));
        }
        let pd = r.private_data.to_vec();
        self.event(
            h,
            ev::REJECTED,
            r.reason as i32,
            Param::Conn(ConnParam {
                private_data: pd,
                ..Default::default()
            }),
        );
    }

    fn on_rep(&mut self, h: Handle, from: &Dest, r: mad::Rep) {
        let Some(id) = self.ids.get_mut(&h) else { return };
        let Some(c) = id.conn.as_mut() else { return };
        match c.state {
            CmState::ReqSent => {}
            // A duplicate REP: our RTU (or MRA) again.
            CmState::RepRcvd | CmState::MraRepRcvd | CmState::Established => {
                if c.remote_comm_id == r.local_comm_id {
                    let m = match c.last_sent.clone() {
                        Some(m) => m,
                        None => self.mra_rep(h),
                    };
                    self.host.send(from, &m.encode());
                }
                return;
            }
            _ => return,
        }
        c.remote_comm_id = r.local_comm_id;
        c.state = CmState::RepRcvd;
        c.disarm();
        id.peer = Some(from.clone());
        id.qp.remote_qpn = r.local_qpn;
        id.qp.responder_resources = r.initiator_depth;
        id.qp.initiator_depth = r.responder_resources;
        id.qp.rnr_retry_count = r.rnr_retry_count;
        id.qp.ack_timeout = conn::ack_timeout(r.target_ack_delay, id.packet_life_time);
        id.qp.rq_psn = r.starting_psn;
        self.by_remote.insert((from.clone(), r.local_comm_id), h);
        // The REP handed to user space: an MRA prepared, sent only for a
        // duplicate REP (as for a REQ, above).
        if let Some(c) = self.ids.get_mut(&h).and_then(|id| id.conn.as_mut()) {
            c.state = CmState::MraRepRcvd;
        }
        let param = ConnParam {
            qp_num: r.local_qpn,
            private_data: r.private_data.to_vec(),
            srq: r.srq as u8,
            responder_resources: r.responder_resources,
            initiator_depth: r.initiator_depth,
            flow_control: r.end_to_end_flow_control as u8,
            rnr_retry_count: r.rnr_retry_count,
            ..Default::default()
        };
        let Some(id) = self.ids.get(&h) else { return };
        let e = Event {
            uid: id.uid,
            id: h,
            event: ev::CONNECT_RESPONSE,
            status: 0,
            param: Param::Conn(param),
            ece: (r.vendor_id, 0),
            owner: h,
        };
        let chan = id.chan;
        self.push(chan, e);
    }

    fn mra_rep(&self, h: Handle) -> Mad {
        let c = self
            .ids
            .get(&h)
            .and_then(|id| id.conn.clone())
            .unwrap_or_else(|| Conn::new(0, 0));
        self.mra(&c, 1)
    }

    fn on_rtu(&mut self, h: Handle, _r: mad::Rtu) {
        let st = self.ids.get(&h).and_then(|id| id.conn.as_ref()).map(|c| c.state);
        if st == Some(CmState::RepSent) {
            self.established(h);
        }
    }

    fn on_dreq(&mut self, now: u64, h: Handle, from: &Dest, _r: mad::Dreq) {
        let wait = self.ids.get(&h).map_or(0, |id| self.cm_wait(id));
        let Some(id) = self.ids.get_mut(&h) else { return };
        let Some(c) = id.conn.as_mut() else { return };
        match c.state {
            CmState::RepSent | CmState::Established | CmState::DreqSent => {
                if c.state == CmState::DreqSent {
                    // Both sides disconnected at once: answer and end.
                    let d = mad::Drep {
                        local_comm_id: c.local_comm_id,
                        remote_comm_id: c.remote_comm_id,
                        ..Default::default()
                    };
                    let m = Mad {
                        tid: c.tid,
                        msg: Msg::Drep(d),
                    };
                    c.state = CmState::Timewait;
                    c.timewait_end = now + wait;
                    c.disarm();
                    self.host.send(from, &m.encode());
                } else {
                    c.state = CmState::DreqRcvd;
                    c.disarm();
                }
                self.disconnected(h, 0);
            }
            CmState::Timewait => {
                if let Some(m) = c.last_sent.clone() {
                    self.host.send(from, &m.encode());
                }
            }
            _ => {}
        }
    }

    fn on_drep(&mut self, now: u64, h: Handle, _r: mad::Drep) {
        let wait = self.ids.get(&h).map_or(0, |id| self.cm_wait(id));
        let Some(id) = self.ids.get_mut(&h) else { return };
        let Some(c) = id.conn.as_mut() else { return };
        if c.state == CmState::DreqSent {
            c.state = CmState::Timewait;
            c.timewait_end = now + wait;
            c.disarm();
            self.disconnected(h, 0);
        }
    }

    fn on_sidr_rep(&mut self, h: Handle, r: mad::SidrRep) {
        let Some(id) = self.ids.get_mut(&h) else { return };
        let Some(c) = id.conn.as_ref() else { return };
        if c.state != CmState::SidrReqSent {
            return;
        }
        let comm = c.local_comm_id;
        id.conn = None;
        self.by_comm.remove(&comm);
        let Some(id) = self.ids.get(&h) else { return };
        let pd = r.private_data.to_vec();
        if r.status != mad::sidr_status::SUCCESS {
            // The kernel reports the SIDR status itself (cma_sidr_rep_handler).
            let param = Param::Conn(ConnParam {
                private_data: pd,
                ..Default::default()
            });
            self.event(h, ev::UNREACHABLE, r.status as i32, param);
            return;
        }
        let Some(dev) = id.dev.as_ref() else { return };
        let ah = self.ah(id, dev);
        let param = Param::Ud {
            qp_num: r.qpn,
            qkey: r.qkey,
            ah,
            private_data: pd,
        };
        self.event(h, ev::ESTABLISHED, 0, param);
    }
}
