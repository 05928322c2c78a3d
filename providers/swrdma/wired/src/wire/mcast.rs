//! Multicast on the wire device: the UD QPs of a context attached to a
//! group (`ibv_attach_mcast`) take the RoCE v2 datagrams sent to it.
//!
//! A RoCE v2 multicast datagram is a UDP datagram to the group's IP
//! address (an MGID `::ffff:a.b.c.d` for an IPv4 group, as the kernel's
//! rdma_cm makes it; an IPv6 multicast MGID is its own address), port 4791,
//! destination QPN 0xffffff; the receiver hands a copy to every QP attached
//! to the MGID (rxe's `rxe_rcv_mcast_pkt`) that takes it (UD, the Q_Key).
//!
//! Here every context with a QP attached to a group has a UDP socket of its
//! own bound to `group:4791` with `SO_REUSEADDR` (any number of sockets of
//! any user share such a binding, and the kernel gives each of them a copy
//! of every datagram to the group), member of the group on the device's
//! interface only (`IP_ADD_MEMBERSHIP` with the interface index, which also
//! makes the kernel report the membership with IGMP/MLD, as rxe has the
//! kernel do through `ip_mc_inc_group`), with `IP_MULTICAST_ALL` off (only
//! what it joined).  So each process takes its own copy and no datagram to
//! a group is forwarded between processes.  The socket goes with the
//! context's last attachment to the group.
//!
//! Datagrams to a group leave from the QP's usual socket (bound to the
//! source address): the kernel picks the interface of that address for a
//! multicast destination (IPv4), or the one `IPV6_MULTICAST_IF` names, set
//! on every wire socket ([`set_out_if`]).  `IP_MULTICAST_LOOP` stays on, so
//! QPs of the same machine attached to the group take them too, as with
//! rxe.

use rustix::net::{bind, ipproto, socket_with, sockopt, AddressFamily, SocketFlags, SocketType};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use super::opt::set_int;
use swrdma_roce::ROCE_PORT as PORT;

/// The destination QPN of a multicast datagram.
pub const MCAST_QPN: u32 = 0xff_ffff;

/// Most groups a context joins (rxe's `max_mcast_grp` is per device; each
/// group costs the process one descriptor).
pub const MAX_GROUPS: usize = 1024;

/// The epoll tag of a group's socket in the wire context's set: this bit
/// and its descriptor number (never a connection's or a flow's tag).
pub const GROUP_TAG: u64 = 1 << 41;

/// One group a context takes datagrams for.
pub struct Group {
    pub mgid: [u8; 16],
    /// Shared with a receive in progress, which holds it without the lock.
    pub fd: Arc<OwnedFd>,
    /// The context's QPs attached to it (each once, whatever the LIDs).
    pub qpns: Vec<u32>,
}

impl Group {
    pub fn tag(&self) -> u64 {
        tag(self.fd.as_fd())
    }
}

/// The epoll tag of a group socket.
pub fn tag(fd: BorrowedFd<'_>) -> u64 {
    use std::os::fd::AsRawFd;
    GROUP_TAG | fd.as_raw_fd() as u64
}

/// The IP group an MGID stands for on RoCE v2: an IPv4-mapped address of
/// 224.0.0.0/4, or an IPv6 multicast address (ff00::/8); None otherwise.
pub fn group_addr(mgid: &[u8; 16]) -> Option<IpAddr> {
    let a = Ipv6Addr::from(*mgid);
    match a.to_ipv4_mapped() {
        Some(v4) if v4.is_multicast() => Some(IpAddr::V4(v4)),
        Some(_) => None,
        None if a.is_multicast() => Some(IpAddr::V6(a)),
        None => None,
    }
}

/// Does an IPv6 destination need the interface as its scope: link-local
/// unicast, or interface- or link-local multicast (ff01::/16, ff02::/16).
pub fn needs_scope(a: &Ipv6Addr) -> bool {
    let s = a.segments()[0];
    s & 0xffc0 == 0xfe80 || (s & 0xff00 == 0xff00 && matches!(s & 0x000f, 1 | 2))
}

/// Makes datagrams to a multicast group sent on `fd` (bound to `local`)
/// leave through interface `ifindex`.
pub fn set_out_if(fd: BorrowedFd<'_>, local: &IpAddr, ifindex: u32) -> io::Result<()> {
    let r = match local {
        IpAddr::V4(a) => sockopt::set_ip_multicast_if_with_ifindex(fd, &Ipv4Addr::UNSPECIFIED, a, ifindex),
        IpAddr::V6(_) => sockopt::set_ipv6_multicast_if(fd, ifindex),
    };
    Ok(r?)
}

/// Opens the socket of `group` (a multicast address) on interface
/// `ifindex`: bound to `group:4791`, joined there, asking for the same
/// ancillary data as the unicast sockets (destination, traffic class, TTL).
pub fn open(group: IpAddr, ifindex: u32) -> io::Result<OwnedFd> {
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    match group {
        IpAddr::V4(g) => {
            let fd = socket_with(AddressFamily::INET, SocketType::DGRAM, flags, Some(ipproto::UDP))?;
            sockopt::set_socket_reuseaddr(&fd, true)?;
            set_int(fd.as_fd(), libc::IPPROTO_IP, libc::IP_MULTICAST_ALL, 0)?;
            set_int(fd.as_fd(), libc::IPPROTO_IP, libc::IP_PKTINFO, 1)?;
            sockopt::set_ip_recvtos(&fd, true)?;
            set_int(fd.as_fd(), libc::IPPROTO_IP, libc::IP_RECVTTL, 1)?;
            bind(&fd, &SocketAddrV4::new(g, PORT))?;
            sockopt::set_ip_add_membership_with_ifindex(&fd, &g, &Ipv4Addr::UNSPECIFIED, ifindex)?;
            Ok(fd)
        }
        IpAddr::V6(g) => {
            let fd = socket_with(AddressFamily::INET6, SocketType::DGRAM, flags, Some(ipproto::UDP))?;
            sockopt::set_ipv6_v6only(&fd, true)?;
            sockopt::set_socket_reuseaddr(&fd, true)?;
            // IPV6_MULTICAST_ALL (29): Linux 4.20 and later; best effort.
            let _ = set_int(fd.as_fd(), libc::IPPROTO_IPV6, 29, 0);
            set_int(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
            sockopt::set_ipv6_recvtclass(&fd, true)?;
            set_int(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, 1)?;
            let scope = if needs_scope(&g) { ifindex } else { 0 };
            bind(&fd, &SocketAddrV6::new(g, PORT, 0, scope))?;
            sockopt::set_ipv6_add_membership(&fd, &g, ifindex)?;
            Ok(fd)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_addresses_of_mgids() {
        let v4 = Ipv4Addr::new(239, 1, 1, 1).to_ipv6_mapped().octets();
        assert_eq!(group_addr(&v4), Some(IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1))));
        let uni = Ipv4Addr::new(169, 254, 0, 1).to_ipv6_mapped().octets();
        assert_eq!(group_addr(&uni), None);
        let v6: Ipv6Addr = "ff0e::1234".parse().unwrap();
        assert_eq!(group_addr(&v6.octets()), Some(IpAddr::V6(v6)));
        let ll: Ipv6Addr = "fe80::1".parse().unwrap();
        assert_eq!(group_addr(&ll.octets()), None);
        assert!(needs_scope(&ll));
        assert!(needs_scope(&"ff02::1".parse().unwrap()));
        assert!(!needs_scope(&v6));
    }
}
