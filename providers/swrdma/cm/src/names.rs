//! The abstract Unix socket names (without their leading NUL byte) that
//! carry CM MADs between the processes of a user, and between them and the
//! wire agent (`swrdma-wired`, which owns a wire device's QP1).  Abstract
//! names belong to the network namespace, as the addresses do.

use std::net::IpAddr;

/// The socket holding port `port` of port space `ps` (`RDMA_PS_*`) for
/// user `uid`: it receives the REQs and SIDR_REQs of the listener on it.
pub fn port(uid: u32, ps: u16, port: u16) -> Vec<u8> {
    format!("swrdma-cm/{uid}/{ps:04x}/{port}").into_bytes()
}

/// The wire agent's socket for the CM messages a process sends first to
/// another host (a REQ, a SIDR_REQ): each datagram is the destination and
/// the source address (16 bytes each, IPv4 as `::ffff:a.b.c.d`), then the
/// 256-byte MAD.  `scope` as the agent's (`SWRDMA_WIRED_SCOPE`).
pub fn wire_in(uid: u32, ifindex: u32, scope: &str) -> Vec<u8> {
    let mut s = format!("swrdma-cm/{uid}/wire/{ifindex}");
    if !scope.is_empty() {
        s.push('/');
        s.push_str(scope);
    }
    s.into_bytes()
}

/// The wire agent's socket standing for the CM of host `ip`: the agent
/// hands that host's messages to our processes from it, and what a process
/// sends to it (one 256-byte MAD) goes to that host.
pub fn wire_peer(uid: u32, ifindex: u32, scope: &str, ip: IpAddr) -> Vec<u8> {
    let mut s = wire_in(uid, ifindex, scope);
    s.extend_from_slice(format!("/{ip}").as_bytes());
    s
}

/// The length of the prefix of a [`wire_in`] datagram.
pub const WIRE_IN_PREFIX: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_a_sockaddr_un() {
        let ip: IpAddr = "fe80::1234:5678:9abc:def0".parse().unwrap();
        let n = wire_peer(u32::MAX, u32::MAX, "scope-of-a-test.0123456789", ip);
        assert!(n.len() < 107, "{}", n.len());
        assert_eq!(port(1000, 0x106, 7471), b"swrdma-cm/1000/0106/7471");
        assert_eq!(
            wire_peer(5, 2, "", "169.254.3.4".parse().unwrap()),
            b"swrdma-cm/5/wire/2/169.254.3.4"
        );
    }
}
