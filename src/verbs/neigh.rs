//! RoCE L2 address resolution for `ibv_resolve_eth_l2_from_gid`, with
//! upstream's behaviour (`neigh.c`, there built on libnl), on top of the
//! library's netlink client ([`crate::kernel::netlink`]):
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
use crate::kernel::netlink::{self as nl, Link, Neigh, ReplyRules, RtMsg, Socket};

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

/// `process_get_neigh`'s `RTM_GETROUTE` request: `struct rtmsg` with the
/// family and prefix length of `dst`, `RTA_DST`, and `RTA_OIF` when known.
pub fn route_request(dst: &Addr, oif: i32, seq: u32) -> Vec<u8> {
    let rtm = RtMsg {
        family: dst.family as u8,
        dst_len: dst.prefix_bits(),
        ..Default::default()
    };
    let oif_b = (oif as u32).to_ne_bytes();
    let mut attrs: Vec<(u16, &[u8])> = vec![(nl::RTA_DST, &dst.bytes)];
    if oif > 0 {
        attrs.push((nl::RTA_OIF, &oif_b));
    }
    nl::encode_request(
        nl::RTM_GETROUTE,
        nl::NLM_F_REQUEST | nl::NLM_F_ACK,
        seq,
        &rtm.to_bytes(),
        &attrs,
    )
}

/// The filter upstream matches neighbours with: interface and address.
fn neigh_matches(n: &Neigh, oif: i32, dst: &Addr) -> bool {
    n.ifindex == oif && n.family == dst.family && n.dst.as_deref() == Some(&dst.bytes[..])
}

// ---------------------------------------------------------------------------
// The resolution (upstream's get_neigh_handler)
// ---------------------------------------------------------------------------

struct Handler<'s> {
    /// The rtnetlink socket of this resolution.
    nl: &'s Socket,
    oif: i32,
    found: Option<Vec<u8>>,
    dst: Addr,
    src: Option<Addr>,
    timeout_ms: u64,
}

/// Why the route step failed (upstream only distinguishes zero/non-zero).
struct Failed;

impl Handler<'_> {
    /// The interface `ifindex`, as the link cache would give it.
    fn link(&self, ifindex: i32) -> Option<Link> {
        self.nl.link(ifindex).ok()
    }

    /// `neigh_get_vlan_id_from_dev`.
    fn vlan_id_from_dev(&self) -> u16 {
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
    fn neigh_from_table(&self) -> Option<Vec<u8>> {
        let all = self.nl.neighbours().ok()?;
        all.into_iter()
            .find(|n| neigh_matches(n, self.oif, &self.dst))
            .and_then(|n| n.lladdr)
    }

    /// `process_get_neigh`: the route lookup; Ok when a link-layer
    /// address was found.  The reply is single-part: its first datagram
    /// without `NLM_F_MULTI` ends the lookup, an error fails it, the ACK
    /// or the end of a dump ends it (without a route: no address found).
    fn process_get_neigh(&mut self) -> Result<(), Failed> {
        let nl = self.nl;
        let seq = nl.next_seq();
        nl.send_bytes(&route_request(&self.dst, self.oif, seq))
            .map_err(|_| Failed)?;
        nl.receive(ReplyRules::single_part(), |m| {
            if m.kind == nl::RTM_NEWROUTE {
                self.route_cb(m.payload).map_err(|Failed| libc::EHOSTUNREACH)
            } else {
                Ok(())
            }
        })
        .map_err(|_| Failed)
    }

    /// `get_route_cb` with `get_route_cb_parser`.
    fn route_cb(&mut self, payload: &[u8]) -> Result<(), Failed> {
        let Some(r) = nl::parse_route(payload) else {
            set_errno(libc::ENOMSG);
            return Err(Failed);
        };
        if let Some(gw) = &r.gateway {
            self.dst = Addr {
                family: r.family,
                bytes: gw.clone(),
            };
        }
        if matches!(
            r.rtype,
            nl::RTN_BLACKHOLE | nl::RTN_UNREACHABLE | nl::RTN_PROHIBIT | nl::RTN_THROW
        ) {
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
            if r.rtype == nl::RTN_LOCAL {
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
        let events = Socket::connect(nl::NETLINK_ROUTE).ok()?;
        events.add_membership(nl::RTNLGRP_NEIGH).ok()?;
        let src = self.src.clone()?;
        let (sock, dst_sa) = create_socket(&src, &self.dst, self.oif)?;
        if try_send_to(&sock, &dst_sa) != 0 {
            return None;
        }
        let timer = create_timer(self.timeout_ms)?;
        let mut found: Option<Vec<u8>> = None;
        let mut retries = 0u32;
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: events.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: timer.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: fds is an array of 2 initialised pollfds, alive and
            // exclusively borrowed across the call; nfds is its length.
            let ret = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if ret == -1 {
                break;
            }
            if ret == 0 {
                continue;
            }
            let nl_ready = fds[0].revents != 0;
            let timer_ready = fds[1].revents != 0;
            if nl_ready {
                let (oif, dst) = (self.oif, &self.dst);
                let _ = events.recv_each(|m| {
                    if m.kind != nl::RTM_NEWNEIGH && m.kind != nl::RTM_DELNEIGH {
                        return;
                    }
                    if let Some(n) = nl::parse_neigh(m.payload) {
                        if found.is_none() && neigh_matches(&n, oif, dst) {
                            if let Some(ll) = n.lladdr {
                                found = Some(ll);
                            }
                        }
                    }
                });
                if found.is_some() {
                    break;
                }
            } else if let Some(ll) = self.neigh_from_table() {
                found = Some(ll);
                break;
            } else if timer_ready && retries < NUM_OF_RETRIES {
                try_send_to(&sock, &dst_sa);
            }
            if timer_ready {
                let mut v = 0u64;
                // SAFETY: v is 8 writable bytes living across the call, the
                // size of a timerfd's expiry count.
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

/// A socket address of the probe socket (`nl_addr_fill_sockaddr`).
enum SockAddr {
    V4(libc::sockaddr_in),
    V6(libc::sockaddr_in6),
}

impl SockAddr {
    /// The address as the socket calls take it: pointer and length.  The
    /// pointer is valid as long as `self` is.
    fn as_raw(&self) -> (*const libc::sockaddr, libc::socklen_t) {
        match self {
            SockAddr::V4(s) => (
                (s as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ),
            SockAddr::V6(s) => (
                (s as *const libc::sockaddr_in6).cast(),
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            ),
        }
    }
}

/// `sockaddr_in`/`sockaddr_in6` of an address (`nl_addr_fill_sockaddr`).
fn sockaddr_of(a: &Addr, port: u16, scope: u32) -> Option<SockAddr> {
    match (a.family, a.bytes.len()) {
        (libc::AF_INET, 4) => Some(SockAddr::V4(libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([a.bytes[0], a.bytes[1], a.bytes[2], a.bytes[3]]),
            },
            sin_zero: [0; 8],
        })),
        (libc::AF_INET6, 16) => {
            let mut s6_addr = [0u8; 16];
            s6_addr.copy_from_slice(&a.bytes);
            Some(SockAddr::V6(libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: port.to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr },
                sin6_scope_id: scope,
            }))
        }
        _ => None,
    }
}

/// `create_socket`: a UDP socket bound to the source address, and the
/// discard-port destination (scoped to the outgoing interface for IPv6).
fn create_socket(src: &Addr, dst: &Addr, oif: i32) -> Option<(OwnedFd, SockAddr)> {
    let Some(src_sa) = sockaddr_of(src, 0, 0) else {
        set_errno(libc::EADDRNOTAVAIL);
        return None;
    };
    let Some(dst_sa) = sockaddr_of(dst, PORT_DISCARD, oif as u32) else {
        set_errno(libc::EADDRNOTAVAIL);
        return None;
    };
    // SAFETY: socket(2) takes only integers and touches no memory of ours.
    let fd = unsafe { libc::socket(dst.family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd == -1 {
        return None;
    }
    // SAFETY: fd is the descriptor socket(2) just returned: open, and owned
    // by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let (sa, len) = src_sa.as_raw();
    // SAFETY: sa points to src_sa, a sockaddr_in/sockaddr_in6 of len bytes
    // that lives across the call.
    if unsafe { libc::bind(fd.as_raw_fd(), sa, len) } != 0 {
        return None;
    }
    Some((fd, dst_sa))
}

/// `try_send_to`: 0 or -1 (retrying while the source address is not yet
/// usable).
fn try_send_to(sock: &OwnedFd, dst: &SockAddr) -> c_int {
    let (sa, len) = dst.as_raw();
    let mut count = UDP_SOCKET_MAX_SENDTO;
    loop {
        // SAFETY: SEND_PAYLOAD is readable for its length (static), and sa
        // points to dst, a socket address of len bytes borrowed across the
        // call.
        let r = unsafe {
            libc::sendto(
                sock.as_raw_fd(),
                SEND_PAYLOAD.as_ptr().cast(),
                SEND_PAYLOAD.len(),
                0,
                sa,
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
    // SAFETY: timerfd_create(2) takes only integers.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
    if fd == -1 {
        return None;
    }
    // SAFETY: fd is the descriptor timerfd_create just returned: open, and
    // owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if timeout_ms != 0 {
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: spec is a valid itimerspec living across the call; a null
        // old-value pointer is allowed (the old setting is not returned).
        if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
            return None;
        }
    }
    Some(fd)
}

/// Whether the interface address `sa` (possibly null) is `src`.
///
/// # Safety
///
/// `sa` is null or points to a socket address that is valid for its
/// family (a `sockaddr_in` for `AF_INET`, a `sockaddr_in6` for
/// `AF_INET6`), as `getifaddrs` gives them.
unsafe fn sockaddr_is(sa: *const libc::sockaddr, src: &Addr) -> bool {
    if sa.is_null() {
        return false;
    }
    // SAFETY: sa is non-null and points to a socket address (caller);
    // every one starts with its family.
    let family = c_int::from(unsafe { (*sa).sa_family });
    if family != src.family {
        return false;
    }
    match family {
        libc::AF_INET => {
            // SAFETY: an AF_INET address is a sockaddr_in (caller).
            let a = unsafe { (*sa.cast::<libc::sockaddr_in>()).sin_addr.s_addr }.to_ne_bytes();
            a[..] == src.bytes[..]
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 address is a sockaddr_in6 (caller).
            let a = unsafe { (*sa.cast::<libc::sockaddr_in6>()).sin6_addr.s6_addr };
            a[..] == src.bytes[..]
        }
        _ => false,
    }
}

/// `neigh_get_oif_from_src` / `get_ifindex`: the index of the interface
/// owning `src`; -ENODEV when none does.  (When `getifaddrs` itself fails,
/// upstream returns the positive errno value; kept as is.)
fn oif_from_src(src: &Addr) -> c_int {
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: &mut ifap is a valid out-pointer for the list head.
    if unsafe { libc::getifaddrs(&mut ifap) } == -1 {
        return errno();
    }
    let mut index = -libc::ENODEV;
    let mut p = ifap;
    while !p.is_null() {
        // SAFETY: p is a non-null node of the list getifaddrs returned,
        // which stays allocated (and unmodified) until freeifaddrs below.
        let ifa = unsafe { &*p };
        // SAFETY: ifa_addr is null or an address getifaddrs filled in,
        // valid for its family.
        if unsafe { sockaddr_is(ifa.ifa_addr, src) } {
            // SAFETY: ifa_name is the NUL-terminated interface name
            // getifaddrs stored with the node.
            index = unsafe { libc::if_nametoindex(ifa.ifa_name) } as c_int;
            break;
        }
        p = ifa.ifa_next;
    }
    // SAFETY: ifap came from a successful getifaddrs and is freed once; no
    // reference into the list is used after this.
    unsafe { libc::freeifaddrs(ifap) };
    index
}

/// `ibv_resolve_eth_l2_from_gid` after the source GID was read: 0 with
/// the MAC (and VLAN id when asked) filled, `-EINVAL` when the source
/// address is not on a local interface, `-EHOSTUNREACH` when no
/// link-layer address could be found, or a negative errno value when no
/// rtnetlink socket could be opened (upstream: libnl's error code).
pub fn resolve(sgid: &[u8; 16], dgid: &[u8; 16], mac: &mut [u8; 6], vid: Option<&mut u16>) -> c_int {
    let nl = match Socket::connect(nl::NETLINK_ROUTE) {
        Ok(n) => n,
        Err(e) => return -e,
    };
    let src = peer_from_gid(sgid);
    let oif = oif_from_src(&src);
    if oif <= 0 {
        return -libc::EINVAL;
    }
    let mut h = Handler {
        nl: &nl,
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
    use crate::kernel::netlink::{
        encode_request as build_msg, parse_link, parse_neigh, parse_route, push_attr, Route, IFLA_ADDRESS,
        IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO, IFLA_VLAN_ID, NDA_DST, NDA_LLADDR, NLM_F_ACK, NLM_F_REQUEST,
        RTA_DST, RTA_GATEWAY, RTA_MULTIPATH, RTA_OIF, RTA_PREFSRC, RTM_GETROUTE, RTM_NEWLINK, RTM_NEWNEIGH,
        RTM_NEWROUTE,
    };

    /// The messages of a datagram, as a list.
    fn parse_msgs(b: &[u8]) -> Vec<nl::Msg<'_>> {
        nl::split_messages(b).collect()
    }

    /// The attributes in `b`, as (type, data).
    fn parse_attrs(b: &[u8]) -> Vec<(u16, &[u8])> {
        nl::parse_attrs(b).into_iter().map(|a| (a.kind, a.data)).collect()
    }

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
        assert!(neigh_matches(
            &n,
            7,
            &Addr {
                family: libc::AF_INET,
                bytes: vec![10, 0, 0, 1]
            }
        ));
        assert!(!neigh_matches(
            &n,
            8,
            &Addr {
                family: libc::AF_INET,
                bytes: vec![10, 0, 0, 1]
            }
        ));
        assert!(!neigh_matches(
            &n,
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
        if Socket::connect(nl::NETLINK_ROUTE).is_err() {
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
