//! RoCE L2 address resolution for `ibv_resolve_eth_l2_from_gid`, with
//! upstream's behaviour (`neigh.c`, there built on libnl) and a small
//! rtnetlink client of our own:
//!
//! 1. the outgoing interface is the one that owns the source GID's IP
//!    address (`getifaddrs`);
//! 2. the kernel is asked for the route to the destination through that
//!    interface (`RTM_GETROUTE`); a gateway replaces the destination;
//!    blackhole/unreachable/prohibit/throw routes fail;
//! 3. a local route answers with the interface's own MAC; multicast and
//!    IPv6 link-local destinations have their MAC computed from the
//!    address; otherwise the neighbour table is consulted, and if the
//!    neighbour is unknown a UDP datagram to the discard port provokes
//!    ARP/ND while neighbour events are watched, re-reading the table and
//!    re-sending every 3000/11 ms, for up to 11 periods;
//! 4. the VLAN id is that of the outgoing interface when it is a VLAN
//!    device, else 0xffff.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::raw::c_int;

use crate::ffi::{errno, set_errno};

const NETLINK_ROUTE: c_int = 0;
const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_MULTI: u16 = 2;
const NLM_F_ACK: u16 = 4;
const NLM_F_DUMP: u16 = 0x300;

const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const RTM_NEWNEIGH: u16 = 28;
const RTM_DELNEIGH: u16 = 29;
const RTM_GETNEIGH: u16 = 30;
const RTNLGRP_NEIGH: u32 = 3;

const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PREFSRC: u16 = 7;
const RTA_MULTIPATH: u16 = 9;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;
const IFLA_ADDRESS: u16 = 1;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const IFLA_VLAN_ID: u16 = 1;
const NLA_TYPE_MASK: u16 = 0x3fff;

const RTN_LOCAL: u8 = 2;
const RTN_BLACKHOLE: u8 = 6;
const RTN_UNREACHABLE: u8 = 7;
const RTN_PROHIBIT: u8 = 8;
const RTN_THROW: u8 = 9;

/// `NEIGH_GET_DEFAULT_TIMEOUT_MS`.
pub const DEFAULT_TIMEOUT_MS: u64 = 3000;
/// `NUM_OF_RETRIES` / `NUM_OF_TRIES`.
const NUM_OF_RETRIES: u32 = 10;
const NUM_OF_TRIES: u32 = NUM_OF_RETRIES + 1;
/// `UDP_SOCKET_MAX_SENDTO`.
const UDP_SOCKET_MAX_SENDTO: u64 = 100_000;
/// The discard port the probe datagram goes to.
const PORT_DISCARD: u16 = 9;
/// `SEND_PAYLOAD` with its terminating NUL (`sizeof("H")`).
const SEND_PAYLOAD: &[u8; 2] = b"H\0";

/// A network address (`nl_addr`): family and bytes; the prefix length is
/// always the full length, as for every address built here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addr {
    pub family: c_int,
    pub bytes: Vec<u8>,
}

impl Addr {
    fn prefix_bits(&self) -> u8 {
        (self.bytes.len() * 8) as u8
    }
}

/// Upstream's `ipv6_addr_v4mapped`: ::ffff:a.b.c.d, or the IPv4-encoded
/// multicast form ff0e::ffff:a.b.c.d.
pub fn is_v4mapped(gid: &[u8; 16]) -> bool {
    let mapped = gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff;
    let mcast =
        gid[..4] == [0xff, 0x0e, 0, 0] && gid[4..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff;
    mapped || mcast
}

/// `create_peer_from_gid`: the IPv4 address in the last 4 bytes, or the
/// whole GID as IPv6 address.
pub fn peer_from_gid(gid: &[u8; 16]) -> Addr {
    if is_v4mapped(gid) {
        Addr {
            family: libc::AF_INET,
            bytes: gid[12..].to_vec(),
        }
    } else {
        Addr {
            family: libc::AF_INET6,
            bytes: gid.to_vec(),
        }
    }
}

/// `nl_addr_cmp_prefix_msb`: the first `bits` bits equal.
fn prefix_matches(addr: &[u8], prefix: &[u8], bits: usize) -> bool {
    let bytes = bits / 8;
    if addr.len() < bytes || prefix.len() < bytes || addr[..bytes] != prefix[..bytes] {
        return false;
    }
    let rem = bits % 8;
    if rem == 0 {
        return true;
    }
    let mask = (((1u32 << rem) - 1) << (8 - rem)) as u8;
    (addr.get(bytes).copied().unwrap_or(0) & mask) == (prefix.get(bytes).copied().unwrap_or(0) & mask)
}

/// `handle_encoded_mac`: the MAC address implied by an IPv4 multicast
/// (01:00:5e + low 23 bits), IPv6 multicast (33:33 + low 32 bits) or IPv6
/// link-local (EUI-64 interface id with the U/L bit flipped) address.
pub fn encoded_mac(dst: &Addr) -> Option<[u8; 6]> {
    let b = &dst.bytes;
    let bits = dst.prefix_bits() as usize;
    match dst.family {
        libc::AF_INET if b.len() == 4 && prefix_matches(b, &[0xe0], bits.min(4)) => {
            let a = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            Some([0x01, 0x00, 0x5e, ((a >> 16) & 0x7f) as u8, (a >> 8) as u8, a as u8])
        }
        libc::AF_INET6 if b.len() == 16 && prefix_matches(b, &[0xff], bits.min(8)) => {
            Some([0x33, 0x33, b[12], b[13], b[14], b[15]])
        }
        libc::AF_INET6 if b.len() == 16 && prefix_matches(b, &[0xfe, 0x80, 0, 0, 0, 0, 0, 0], bits.min(64)) => {
            Some([b[8] ^ 2, b[9], b[10], b[13], b[14], b[15]])
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn push_attr(buf: &mut Vec<u8>, kind: u16, data: &[u8]) {
    let len = 4 + data.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(data);
    buf.resize(align4(buf.len()), 0);
}

/// A request: header, fixed family header, attributes.
fn build_msg(kind: u16, flags: u16, seq: u32, fixed: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut m = vec![0u8; NLMSG_HDRLEN];
    m.extend_from_slice(fixed);
    m.resize(align4(m.len()), 0);
    for (k, d) in attrs {
        push_attr(&mut m, *k, d);
    }
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m[4..6].copy_from_slice(&kind.to_ne_bytes());
    m[6..8].copy_from_slice(&flags.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    m
}

/// `process_get_neigh`'s `RTM_GETROUTE` request: `struct rtmsg` with the
/// family and prefix length of `dst`, `RTA_DST`, and `RTA_OIF` when known.
pub fn route_request(dst: &Addr, oif: i32, seq: u32) -> Vec<u8> {
    let mut rtm = [0u8; 12];
    rtm[0] = dst.family as u8;
    rtm[1] = dst.prefix_bits();
    let oif_b = (oif as u32).to_ne_bytes();
    let mut attrs: Vec<(u16, &[u8])> = vec![(RTA_DST, &dst.bytes)];
    if oif > 0 {
        attrs.push((RTA_OIF, &oif_b));
    }
    build_msg(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_ACK, seq, &rtm, &attrs)
}

/// One netlink message of a received datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

/// Splits a datagram into messages, never trusting the lengths.
pub fn parse_msgs(mut b: &[u8]) -> Vec<Msg<'_>> {
    let mut out = Vec::new();
    while b.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if len < NLMSG_HDRLEN || len > b.len() {
            break;
        }
        out.push(Msg {
            kind: u16::from_ne_bytes([b[4], b[5]]),
            flags: u16::from_ne_bytes([b[6], b[7]]),
            seq: u32::from_ne_bytes([b[8], b[9], b[10], b[11]]),
            payload: &b[NLMSG_HDRLEN..len],
        });
        b = &b[align4(len).min(b.len())..];
    }
    out
}

/// The attributes in `b`, as (type, data).
pub fn parse_attrs(mut b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        if len < 4 || len > b.len() {
            break;
        }
        out.push((u16::from_ne_bytes([b[2], b[3]]) & NLA_TYPE_MASK, &b[4..len]));
        b = &b[align4(len).min(b.len())..];
    }
    out
}

fn attr<'a>(attrs: &[(u16, &'a [u8])], kind: u16) -> Option<&'a [u8]> {
    attrs.iter().find(|(k, _)| *k == kind).map(|(_, d)| *d)
}

fn u32_of(d: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(d.get(..4)?.try_into().ok()?))
}

/// The error of an `NLMSG_ERROR` payload (negative errno; 0 is an ACK).
fn nlmsg_error(payload: &[u8]) -> c_int {
    payload
        .get(..4)
        .map(|e| i32::from_ne_bytes([e[0], e[1], e[2], e[3]]))
        .unwrap_or(-libc::EPROTO)
}

/// The parts of a route reply upstream looks at (its first next hop).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Route {
    pub family: c_int,
    pub rtype: u8,
    pub gateway: Option<Vec<u8>>,
    pub oif: i32,
    pub prefsrc: Option<Vec<u8>>,
}

pub fn parse_route(p: &[u8]) -> Option<Route> {
    if p.len() < 12 {
        return None;
    }
    let attrs = parse_attrs(&p[12..]);
    let mut r = Route {
        family: p[0] as c_int,
        rtype: p[7],
        ..Default::default()
    };
    r.prefsrc = attr(&attrs, RTA_PREFSRC).map(|d| d.to_vec());
    // Next hop 0: the first of RTA_MULTIPATH when present, else the
    // single-path RTA_OIF / RTA_GATEWAY.
    if let Some(mp) = attr(&attrs, RTA_MULTIPATH).filter(|mp| mp.len() >= 8) {
        let len = (u16::from_ne_bytes([mp[0], mp[1]]) as usize).clamp(8, mp.len());
        r.oif = i32::from_ne_bytes([mp[4], mp[5], mp[6], mp[7]]);
        r.gateway = attr(&parse_attrs(&mp[8..len]), RTA_GATEWAY).map(|d| d.to_vec());
    } else {
        r.oif = attr(&attrs, RTA_OIF).and_then(u32_of).unwrap_or(0) as i32;
        r.gateway = attr(&attrs, RTA_GATEWAY).map(|d| d.to_vec());
    }
    Some(r)
}

/// A neighbour table entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Neigh {
    pub family: c_int,
    pub ifindex: i32,
    pub dst: Option<Vec<u8>>,
    pub lladdr: Option<Vec<u8>>,
}

pub fn parse_neigh(p: &[u8]) -> Option<Neigh> {
    if p.len() < 12 {
        return None;
    }
    let attrs = parse_attrs(&p[12..]);
    Some(Neigh {
        family: p[0] as c_int,
        ifindex: i32::from_ne_bytes([p[4], p[5], p[6], p[7]]),
        dst: attr(&attrs, NDA_DST).map(|d| d.to_vec()),
        lladdr: attr(&attrs, NDA_LLADDR).map(|d| d.to_vec()),
    })
}

impl Neigh {
    /// The filter upstream matches neighbours with: interface and address.
    fn matches(&self, oif: i32, dst: &Addr) -> bool {
        self.ifindex == oif && self.family == dst.family && self.dst.as_deref() == Some(&dst.bytes[..])
    }
}

/// A network interface: its hardware address and, for VLAN devices, the
/// VLAN id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Link {
    pub addr: Option<Vec<u8>>,
    pub is_vlan: bool,
    pub vlan_id: u16,
}

pub fn parse_link(p: &[u8]) -> Option<Link> {
    if p.len() < 16 {
        return None;
    }
    let attrs = parse_attrs(&p[16..]);
    let mut l = Link {
        addr: attr(&attrs, IFLA_ADDRESS).map(|d| d.to_vec()),
        ..Default::default()
    };
    if let Some(info) = attr(&attrs, IFLA_LINKINFO) {
        let info = parse_attrs(info);
        let kind = attr(&info, IFLA_INFO_KIND).map(super::cstr_bytes);
        if kind == Some(b"vlan") {
            l.is_vlan = true;
            if let Some(data) = attr(&info, IFLA_INFO_DATA) {
                if let Some(id) = attr(&parse_attrs(data), IFLA_VLAN_ID).and_then(|d| d.get(..2)) {
                    l.vlan_id = u16::from_ne_bytes([id[0], id[1]]);
                }
            }
        }
    }
    Some(l)
}

// ---------------------------------------------------------------------------
// The socket
// ---------------------------------------------------------------------------

struct Nl {
    fd: OwnedFd,
    seq: u32,
}

impl Nl {
    /// A bound `NETLINK_ROUTE` socket, or a negative errno value.
    fn open() -> Result<Nl, c_int> {
        // SAFETY: plain socket calls with valid arguments.
        unsafe {
            let fd = libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_ROUTE);
            if fd < 0 {
                return Err(-errno());
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let mut sa: libc::sockaddr_nl = std::mem::zeroed();
            sa.nl_family = libc::AF_NETLINK as u16;
            if libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            ) != 0
            {
                return Err(-errno());
            }
            let seq = libc::time(std::ptr::null_mut()) as u32;
            Ok(Nl { fd, seq })
        }
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    fn send(&self, msg: &[u8]) -> Result<(), c_int> {
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: msg and sa are valid for the call.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if n < 0 {
            Err(-errno())
        } else {
            Ok(())
        }
    }

    /// One datagram (sized with MSG_PEEK|MSG_TRUNC first), retrying EINTR.
    fn recv(&self) -> Result<Vec<u8>, c_int> {
        loop {
            // SAFETY: a zero-length peek into a valid (empty) buffer.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    [0u8; 1].as_mut_ptr().cast(),
                    0,
                    libc::MSG_PEEK | libc::MSG_TRUNC,
                )
            };
            if n < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return Err(-errno());
            }
            let mut buf = vec![0u8; (n as usize).max(4096)];
            // SAFETY: buf is writable for its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return Err(-errno());
            }
            buf.truncate(n as usize);
            return Ok(buf);
        }
    }

    /// A dump: the payloads of every message of type `want`.
    fn dump(&mut self, kind: u16, fixed: &[u8], want: u16) -> Result<Vec<Vec<u8>>, c_int> {
        let seq = self.next_seq();
        self.send(&build_msg(kind, NLM_F_REQUEST | NLM_F_DUMP, seq, fixed, &[]))?;
        let mut out = Vec::new();
        loop {
            let buf = self.recv()?;
            let msgs = parse_msgs(&buf);
            if msgs.is_empty() {
                return Err(-libc::EPROTO);
            }
            for m in msgs {
                if m.seq != seq {
                    continue;
                }
                match m.kind {
                    NLMSG_DONE => return Ok(out),
                    NLMSG_ERROR => {
                        let e = nlmsg_error(m.payload);
                        if e != 0 {
                            return Err(e);
                        }
                        return Ok(out);
                    }
                    k if k == want => out.push(m.payload.to_vec()),
                    _ => {}
                }
            }
        }
    }

    /// A request with one reply of type `want` (plus the ACK).
    fn request_one(&mut self, kind: u16, fixed: &[u8], attrs: &[(u16, &[u8])], want: u16) -> Result<Vec<u8>, c_int> {
        let seq = self.next_seq();
        self.send(&build_msg(kind, NLM_F_REQUEST | NLM_F_ACK, seq, fixed, attrs))?;
        let mut found = None;
        loop {
            let buf = self.recv()?;
            let msgs = parse_msgs(&buf);
            if msgs.is_empty() {
                return Err(-libc::EPROTO);
            }
            for m in msgs {
                if m.seq != seq {
                    continue;
                }
                match m.kind {
                    NLMSG_ERROR => {
                        let e = nlmsg_error(m.payload);
                        if e != 0 {
                            return Err(e);
                        }
                        return found.ok_or(-libc::ENODATA);
                    }
                    NLMSG_DONE => return found.ok_or(-libc::ENODATA),
                    k if k == want && found.is_none() => found = Some(m.payload.to_vec()),
                    _ => {}
                }
            }
        }
    }

    fn add_membership(&self, group: u32) -> Result<(), c_int> {
        // SAFETY: setsockopt with a valid u32 option value.
        let r = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_NETLINK,
                libc::NETLINK_ADD_MEMBERSHIP,
                (&group as *const u32).cast(),
                4,
            )
        };
        if r != 0 {
            Err(-errno())
        } else {
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------
// The resolution (upstream's get_neigh_handler)
// ---------------------------------------------------------------------------

struct Handler {
    nl: Nl,
    oif: i32,
    found: Option<Vec<u8>>,
    dst: Addr,
    src: Option<Addr>,
    timeout_ms: u64,
}

/// Why the route step failed (upstream only distinguishes zero/non-zero).
struct Failed;

impl Handler {
    /// The interface `ifindex`, as the link cache would give it.
    fn link(&mut self, ifindex: i32) -> Option<Link> {
        let mut ifi = [0u8; 16];
        ifi[4..8].copy_from_slice(&ifindex.to_ne_bytes());
        let p = self.nl.request_one(RTM_GETLINK, &ifi, &[], RTM_NEWLINK).ok()?;
        parse_link(&p)
    }

    /// `neigh_get_vlan_id_from_dev`.
    fn vlan_id_from_dev(&mut self) -> u16 {
        let Some(link) = self.link(self.oif) else {
            set_errno(libc::EINVAL);
            return 0xffff;
        };
        let vid: u32 = if link.is_vlan { link.vlan_id as u32 } else { 0xffff };
        if vid <= 0xfff {
            vid as u16
        } else {
            0xffff
        }
    }

    /// `get_neigh_mac`: the link-layer address of the (oif, dst) neighbour
    /// from the kernel's neighbour table.
    fn neigh_from_table(&mut self) -> Option<Vec<u8>> {
        let ndm = [0u8; 12];
        let all = self.nl.dump(RTM_GETNEIGH, &ndm, RTM_NEWNEIGH).ok()?;
        all.iter()
            .filter_map(|p| parse_neigh(p))
            .find(|n| n.matches(self.oif, &self.dst))
            .and_then(|n| n.lladdr)
    }

    /// `process_get_neigh`: the route lookup; Ok when a link-layer
    /// address was found.
    fn process_get_neigh(&mut self) -> Result<(), Failed> {
        let seq = self.nl.next_seq();
        self.nl
            .send(&route_request(&self.dst, self.oif, seq))
            .map_err(|_| Failed)?;
        loop {
            let buf = self.nl.recv().map_err(|_| Failed)?;
            let msgs = parse_msgs(&buf);
            let mut multi = false;
            for m in &msgs {
                multi |= m.flags & NLM_F_MULTI != 0;
                match m.kind {
                    // An error fails the lookup; the ACK or the end of a
                    // dump ends it (without a route: no address found).
                    NLMSG_ERROR => {
                        return if nlmsg_error(m.payload) != 0 {
                            Err(Failed)
                        } else {
                            Ok(())
                        };
                    }
                    NLMSG_DONE => return Ok(()),
                    RTM_NEWROUTE => self.route_cb(m.payload)?,
                    _ => {}
                }
            }
            if !multi {
                return Ok(());
            }
        }
    }

    /// `get_route_cb` with `get_route_cb_parser`.
    fn route_cb(&mut self, payload: &[u8]) -> Result<(), Failed> {
        let Some(r) = parse_route(payload) else {
            set_errno(libc::ENOMSG);
            return Err(Failed);
        };
        if let Some(gw) = &r.gateway {
            self.dst = Addr {
                family: r.family,
                bytes: gw.clone(),
            };
        }
        if matches!(r.rtype, RTN_BLACKHOLE | RTN_UNREACHABLE | RTN_PROHIBIT | RTN_THROW) {
            set_errno(libc::ENETUNREACH);
            self.src = None;
        } else {
            if self.src.is_none() {
                if let Some(s) = &r.prefsrc {
                    self.src = Some(Addr {
                        family: r.family,
                        bytes: s.clone(),
                    });
                }
            }
            if self.oif < 0 && r.oif > 0 {
                self.oif = r.oif;
            }
            if r.rtype == RTN_LOCAL {
                // The destination is this host: the interface's own MAC.
                match self.link(self.oif).and_then(|l| l.addr) {
                    Some(a) => self.found = Some(a),
                    None => self.src = None,
                }
            } else if let Some(mac) = encoded_mac(&self.dst) {
                self.found = Some(mac.to_vec());
            }
        }
        if self.src.is_none() || self.oif <= 0 {
            set_errno(libc::EINVAL);
            return Err(Failed);
        }
        if self.found.is_none() {
            self.found = self.process_get_neigh_mac();
        }
        if self.found.is_some() {
            Ok(())
        } else {
            Err(Failed)
        }
    }

    /// `process_get_neigh_mac`: the neighbour table, else provoke ARP/ND
    /// with a datagram and wait for the neighbour to appear.
    fn process_get_neigh_mac(&mut self) -> Option<Vec<u8>> {
        if let Some(ll) = self.neigh_from_table() {
            return Some(ll);
        }
        let events = Nl::open().ok()?;
        events.add_membership(RTNLGRP_NEIGH).ok()?;
        let src = self.src.clone()?;
        let (sock, dst_sa, dst_len) = create_socket(&src, &self.dst, self.oif)?;
        if try_send_to(&sock, &dst_sa, dst_len) != 0 {
            return None;
        }
        let timer = create_timer(self.timeout_ms)?;
        let mut found: Option<Vec<u8>> = None;
        let mut retries = 0u32;
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: events.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: timer.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfds.
            let ret = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if ret == -1 {
                break;
            }
            if ret == 0 {
                continue;
            }
            let nl_ready = fds[0].revents != 0;
            let timer_ready = fds[1].revents != 0;
            if nl_ready {
                if let Ok(buf) = events.recv() {
                    for m in parse_msgs(&buf) {
                        if m.kind != RTM_NEWNEIGH && m.kind != RTM_DELNEIGH {
                            continue;
                        }
                        if let Some(n) = parse_neigh(m.payload) {
                            if found.is_none() && n.matches(self.oif, &self.dst) {
                                if let Some(ll) = n.lladdr {
                                    found = Some(ll);
                                }
                            }
                        }
                    }
                }
                if found.is_some() {
                    break;
                }
            } else if let Some(ll) = self.neigh_from_table() {
                found = Some(ll);
                break;
            } else if timer_ready && retries < NUM_OF_RETRIES {
                try_send_to(&sock, &dst_sa, dst_len);
            }
            if timer_ready {
                let mut v = 0u64;
                // SAFETY: reading the 8-byte expiry count of a timerfd.
                unsafe { libc::read(timer.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
                retries += 1;
                if retries >= NUM_OF_TRIES {
                    if errno() == 0 {
                        set_errno(libc::EDESTADDRREQ);
                    }
                    break;
                }
            }
        }
        found
    }
}

/// `sockaddr_in`/`sockaddr_in6` of an address (`nl_addr_fill_sockaddr`).
fn sockaddr_of(a: &Addr, port: u16, scope: u32) -> Option<(libc::sockaddr_storage, u32)> {
    // SAFETY: all-zero sockaddr_storage is valid; the casts stay inside it.
    unsafe {
        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
        match a.family {
            libc::AF_INET if a.bytes.len() == 4 => {
                let s = (&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                (*s).sin_family = libc::AF_INET as u16;
                (*s).sin_port = port.to_be();
                (*s).sin_addr.s_addr = u32::from_ne_bytes([a.bytes[0], a.bytes[1], a.bytes[2], a.bytes[3]]);
                Some((ss, std::mem::size_of::<libc::sockaddr_in>() as u32))
            }
            libc::AF_INET6 if a.bytes.len() == 16 => {
                let s = (&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                (*s).sin6_family = libc::AF_INET6 as u16;
                (*s).sin6_port = port.to_be();
                (*s).sin6_addr.s6_addr.copy_from_slice(&a.bytes);
                (*s).sin6_scope_id = scope;
                Some((ss, std::mem::size_of::<libc::sockaddr_in6>() as u32))
            }
            _ => None,
        }
    }
}

/// `create_socket`: a UDP socket bound to the source address, and the
/// discard-port destination (scoped to the outgoing interface for IPv6).
fn create_socket(src: &Addr, dst: &Addr, oif: i32) -> Option<(OwnedFd, libc::sockaddr_storage, u32)> {
    let Some((src_sa, src_len)) = sockaddr_of(src, 0, 0) else {
        set_errno(libc::EADDRNOTAVAIL);
        return None;
    };
    let Some((dst_sa, dst_len)) = sockaddr_of(dst, PORT_DISCARD, oif as u32) else {
        set_errno(libc::EADDRNOTAVAIL);
        return None;
    };
    // SAFETY: plain socket calls with valid addresses.
    unsafe {
        let fd = libc::socket(dst.family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd == -1 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(fd);
        if libc::bind(
            fd.as_raw_fd(),
            (&src_sa as *const libc::sockaddr_storage).cast(),
            src_len,
        ) != 0
        {
            return None;
        }
        Some((fd, dst_sa, dst_len))
    }
}

/// `try_send_to`: 0 or -1 (retrying while the source address is not yet
/// usable).
fn try_send_to(sock: &OwnedFd, dst: &libc::sockaddr_storage, len: u32) -> c_int {
    let mut count = UDP_SOCKET_MAX_SENDTO;
    loop {
        // SAFETY: valid payload and destination.
        let r = unsafe {
            libc::sendto(
                sock.as_raw_fd(),
                SEND_PAYLOAD.as_ptr().cast(),
                SEND_PAYLOAD.len(),
                0,
                (dst as *const libc::sockaddr_storage).cast(),
                len,
            )
        };
        if r >= 0 {
            return 0;
        }
        count -= 1;
        if errno() != libc::EADDRNOTAVAIL || count == 0 {
            return -1;
        }
    }
}

/// `create_timer`: a periodic timer of `timeout / NUM_OF_TRIES`.
fn create_timer(timeout_ms: u64) -> Option<OwnedFd> {
    let per = timeout_ms / NUM_OF_TRIES as u64;
    let ts = libc::timespec {
        tv_sec: (per / 1000) as libc::time_t,
        tv_nsec: ((per % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: plain timerfd calls.
    unsafe {
        let fd = libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC);
        if fd == -1 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(fd);
        if timeout_ms != 0 {
            let spec = libc::itimerspec {
                it_interval: ts,
                it_value: ts,
            };
            if libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) != 0 {
                return None;
            }
        }
        Some(fd)
    }
}

/// `neigh_get_oif_from_src` / `get_ifindex`: the index of the interface
/// owning `src`; -ENODEV when none does.  (When `getifaddrs` itself fails,
/// upstream returns the positive errno value; kept as is.)
fn oif_from_src(src: &Addr) -> c_int {
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list freed below.
    if unsafe { libc::getifaddrs(&mut ifap) } == -1 {
        return errno();
    }
    let mut index = -libc::ENODEV;
    let mut p = ifap;
    // SAFETY: walking the list getifaddrs returned.
    unsafe {
        while !p.is_null() {
            let sa = (*p).ifa_addr;
            if !sa.is_null() && (*sa).sa_family as c_int == src.family {
                let same = match src.family {
                    libc::AF_INET => {
                        let a = (*sa.cast::<libc::sockaddr_in>()).sin_addr.s_addr.to_ne_bytes();
                        a[..] == src.bytes[..]
                    }
                    libc::AF_INET6 => {
                        let a = (*sa.cast::<libc::sockaddr_in6>()).sin6_addr.s6_addr;
                        a[..] == src.bytes[..]
                    }
                    _ => false,
                };
                if same {
                    index = libc::if_nametoindex((*p).ifa_name) as c_int;
                    break;
                }
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(ifap);
    }
    index
}

/// `ibv_resolve_eth_l2_from_gid` after the source GID was read: 0 with
/// the MAC (and VLAN id when asked) filled, `-EINVAL` when the source
/// address is not on a local interface, `-EHOSTUNREACH` when no
/// link-layer address could be found, or a negative errno value when no
/// rtnetlink socket could be opened (upstream: libnl's error code).
pub fn resolve(sgid: &[u8; 16], dgid: &[u8; 16], mac: &mut [u8; 6], vid: Option<&mut u16>) -> c_int {
    let nl = match Nl::open() {
        Ok(n) => n,
        Err(e) => return e,
    };
    let src = peer_from_gid(sgid);
    let oif = oif_from_src(&src);
    if oif <= 0 {
        return -libc::EINVAL;
    }
    let mut h = Handler {
        nl,
        oif,
        found: None,
        dst: peer_from_gid(dgid),
        src: Some(src),
        timeout_ms: DEFAULT_TIMEOUT_MS,
    };
    if h.process_get_neigh().is_err() {
        return -libc::EHOSTUNREACH;
    }
    if let Some(v) = vid {
        *v = h.vlan_id_from_dev();
    }
    match &h.found {
        Some(ll) if !ll.is_empty() && ll.len() <= mac.len() => {
            mac[..ll.len()].copy_from_slice(ll);
            0
        }
        _ => -libc::EHOSTUNREACH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(s: &str) -> [u8; 16] {
        let a: std::net::Ipv6Addr = s.parse().unwrap();
        a.octets()
    }

    #[test]
    fn v4mapped() {
        assert!(is_v4mapped(&gid("::ffff:192.168.1.2")));
        assert!(is_v4mapped(&gid("ff0e::ffff:239.1.2.3")));
        assert!(!is_v4mapped(&gid("fe80::1")));
        assert!(!is_v4mapped(&gid("ff0e::1:ffff:239.1.2.3")));
        assert_eq!(
            peer_from_gid(&gid("::ffff:10.1.2.3")),
            Addr {
                family: libc::AF_INET,
                bytes: vec![10, 1, 2, 3]
            }
        );
        assert_eq!(peer_from_gid(&gid("fe80::1")).family, libc::AF_INET6);
    }

    #[test]
    fn macs_from_addresses() {
        let v4 = |a: [u8; 4]| Addr {
            family: libc::AF_INET,
            bytes: a.to_vec(),
        };
        let v6 = |s: &str| Addr {
            family: libc::AF_INET6,
            bytes: gid(s).to_vec(),
        };
        assert_eq!(
            encoded_mac(&v4([239, 129, 2, 3])),
            Some([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03])
        );
        assert_eq!(
            encoded_mac(&v4([224, 0, 0, 251])),
            Some([0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb])
        );
        assert_eq!(encoded_mac(&v4([192, 168, 0, 1])), None);
        assert_eq!(
            encoded_mac(&v6("ff02::1:ff00:1234")),
            Some([0x33, 0x33, 0xff, 0x00, 0x12, 0x34])
        );
        assert_eq!(
            encoded_mac(&v6("fe80::0211:22ff:fe33:4455")),
            Some([0x00, 0x11, 0x22, 0x33, 0x44, 0x55])
        );
        assert_eq!(
            encoded_mac(&v6("fe80::0011:22ff:fe33:4455")),
            Some([0x02, 0x11, 0x22, 0x33, 0x44, 0x55])
        );
        // Only fe80::/64 is link-local here.
        assert_eq!(encoded_mac(&v6("fe80:0:0:1::1")), None);
        assert_eq!(encoded_mac(&v6("2001:db8::1")), None);
    }

    #[test]
    fn request_layout() {
        let dst = Addr {
            family: libc::AF_INET6,
            bytes: gid("2001:db8::1").to_vec(),
        };
        let m = route_request(&dst, 3, 42);
        assert_eq!(m.len(), 16 + 12 + 20 + 8);
        assert_eq!(u32::from_ne_bytes(m[0..4].try_into().unwrap()) as usize, m.len());
        assert_eq!(u16::from_ne_bytes(m[4..6].try_into().unwrap()), RTM_GETROUTE);
        assert_eq!(
            u16::from_ne_bytes(m[6..8].try_into().unwrap()),
            NLM_F_REQUEST | NLM_F_ACK
        );
        assert_eq!(u32::from_ne_bytes(m[8..12].try_into().unwrap()), 42);
        assert_eq!((m[16], m[17]), (libc::AF_INET6 as u8, 128));
        let msgs = parse_msgs(&m);
        assert_eq!(msgs.len(), 1);
        let attrs = parse_attrs(&msgs[0].payload[12..]);
        assert_eq!(attrs[0], (RTA_DST, &dst.bytes[..]));
        assert_eq!(attrs[1], (RTA_OIF, &3u32.to_ne_bytes()[..]));
        let m = route_request(&dst, -1, 1);
        assert_eq!(parse_attrs(&parse_msgs(&m)[0].payload[12..]).len(), 1);
    }

    #[test]
    fn parse_replies() {
        // A route with a gateway, an interface and a preferred source.
        let mut rtm = [0u8; 12];
        rtm[0] = libc::AF_INET as u8;
        rtm[7] = 1;
        let m = build_msg(
            RTM_NEWROUTE,
            0,
            5,
            &rtm,
            &[
                (RTA_GATEWAY, &[10, 0, 0, 1]),
                (RTA_OIF, &7u32.to_ne_bytes()),
                (RTA_PREFSRC, &[10, 0, 0, 9]),
            ],
        );
        let msgs = parse_msgs(&m);
        let r = parse_route(msgs[0].payload).unwrap();
        assert_eq!(
            r,
            Route {
                family: libc::AF_INET,
                rtype: 1,
                gateway: Some(vec![10, 0, 0, 1]),
                oif: 7,
                prefsrc: Some(vec![10, 0, 0, 9])
            }
        );

        // Multipath: the first next hop wins.
        let mut nh = vec![0u8; 8];
        nh[4..8].copy_from_slice(&9i32.to_ne_bytes());
        push_attr(&mut nh, RTA_GATEWAY, &[10, 0, 0, 2]);
        let l = nh.len() as u16;
        nh[0..2].copy_from_slice(&l.to_ne_bytes());
        let m = build_msg(
            RTM_NEWROUTE,
            0,
            5,
            &rtm,
            &[(RTA_MULTIPATH, &nh), (RTA_OIF, &7u32.to_ne_bytes())],
        );
        let r = parse_route(parse_msgs(&m)[0].payload).unwrap();
        assert_eq!((r.oif, r.gateway), (9, Some(vec![10, 0, 0, 2])));

        // A neighbour.
        let mut ndm = [0u8; 12];
        ndm[0] = libc::AF_INET as u8;
        ndm[4..8].copy_from_slice(&7i32.to_ne_bytes());
        let m = build_msg(
            RTM_NEWNEIGH,
            0,
            0,
            &ndm,
            &[(NDA_DST, &[10, 0, 0, 1]), (NDA_LLADDR, &[1, 2, 3, 4, 5, 6])],
        );
        let n = parse_neigh(parse_msgs(&m)[0].payload).unwrap();
        assert!(n.matches(
            7,
            &Addr {
                family: libc::AF_INET,
                bytes: vec![10, 0, 0, 1]
            }
        ));
        assert!(!n.matches(
            8,
            &Addr {
                family: libc::AF_INET,
                bytes: vec![10, 0, 0, 1]
            }
        ));
        assert!(!n.matches(
            7,
            &Addr {
                family: libc::AF_INET,
                bytes: vec![10, 0, 0, 2]
            }
        ));
        assert_eq!(n.lladdr, Some(vec![1, 2, 3, 4, 5, 6]));

        // A VLAN link.
        let mut vlan_data = Vec::new();
        push_attr(&mut vlan_data, IFLA_VLAN_ID, &100u16.to_ne_bytes());
        let mut info = Vec::new();
        push_attr(&mut info, IFLA_INFO_KIND, b"vlan\0");
        push_attr(&mut info, IFLA_INFO_DATA, &vlan_data);
        let ifi = [0u8; 16];
        let m = build_msg(
            RTM_NEWLINK,
            0,
            0,
            &ifi,
            &[(IFLA_ADDRESS, &[2, 0, 0, 0, 0, 1]), (IFLA_LINKINFO, &info)],
        );
        let l = parse_link(parse_msgs(&m)[0].payload).unwrap();
        assert_eq!(
            l,
            Link {
                addr: Some(vec![2, 0, 0, 0, 0, 1]),
                is_vlan: true,
                vlan_id: 100
            }
        );
    }

    #[test]
    fn parsers_survive_garbage() {
        for n in 0..64 {
            let junk: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            for m in parse_msgs(&junk) {
                let _ = parse_route(m.payload);
                let _ = parse_neigh(m.payload);
                let _ = parse_link(m.payload);
            }
            let _ = parse_attrs(&junk);
            let _ = parse_route(&junk);
            let _ = parse_neigh(&junk);
            let _ = parse_link(&junk);
        }
    }

    #[test]
    fn resolves_local_destination() {
        // Source and destination on "lo": the route is RTN_LOCAL and the
        // answer is lo's own (all-zero) hardware address, without VLAN.
        if Nl::open().is_err() {
            return; // no rtnetlink in this sandbox
        }
        let lo = gid("::ffff:127.0.0.1");
        let mut mac = [0xaau8; 6];
        let mut vid = 0u16;
        let r = resolve(&lo, &lo, &mut mac, Some(&mut vid));
        if r == -libc::EINVAL {
            return; // 127.0.0.1 not configured here
        }
        assert_eq!(r, 0);
        assert_eq!(mac, [0; 6]);
        assert_eq!(vid, 0xffff);
        // A source address no interface owns.
        let r = resolve(&gid("::ffff:192.0.2.254"), &lo, &mut mac, None);
        assert_eq!(r, -libc::EINVAL);
    }

    #[test]
    fn loopback_is_found() {
        // 127.0.0.1 lives on "lo" in every network namespace.
        let oif = oif_from_src(&Addr {
            family: libc::AF_INET,
            bytes: vec![127, 0, 0, 1],
        });
        if oif != -libc::ENODEV {
            // SAFETY: a valid C string.
            assert_eq!(oif as u32, unsafe { libc::if_nametoindex(c"lo".as_ptr()) });
        }
        assert_eq!(
            oif_from_src(&Addr {
                family: libc::AF_INET,
                bytes: vec![192, 0, 2, 254]
            }),
            -libc::ENODEV
        );
    }
}
