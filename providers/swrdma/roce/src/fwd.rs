//! The header of a datagram handed from one holder of a wire device's UDP
//! sockets to another (a process to the QP's owner, a process to the
//! wire agent for QP1): what the receiving socket learnt of the datagram
//! that the UDP payload does not say.  44 bytes, then the UDP payload:
//!
//! | bytes  | field                                            |
//! |--------|--------------------------------------------------|
//! | 0..4   | magic and version `SWw\x01`                      |
//! | 4..20  | source address (IPv4 as `::ffff:a.b.c.d`)        |
//! | 20..36 | destination address (one of the receiver's)      |
//! | 36..38 | UDP source port, big endian                      |
//! | 38     | IPv4 TOS / IPv6 traffic class                    |
//! | 39     | IPv4 TTL / IPv6 hop limit                        |
//! | 40..44 | interface index it arrived on, big endian        |

use std::net::{IpAddr, Ipv6Addr};

const MAGIC: [u8; 4] = *b"SWw\x01";

/// Size of the header.
pub const HDR: usize = 44;

/// Metadata of a received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxMeta {
    /// Source IP address (IPv4 as `V4`).
    pub src: IpAddr,
    /// Destination IP address (one of ours).
    pub dst: IpAddr,
    /// UDP source port.
    pub sport: u16,
    /// IPv4 TOS / IPv6 traffic class.
    pub tclass: u8,
    /// IPv4 TTL / IPv6 hop limit.
    pub hop: u8,
}

fn v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

fn take<const N: usize>(s: &[u8], at: usize) -> Option<[u8; N]> {
    s.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// The header for a datagram of metadata `m` received on interface
/// `ifindex`.
pub fn header(m: &RxMeta, ifindex: u32) -> [u8; HDR] {
    let mut h = [0u8; HDR];
    h[0..4].copy_from_slice(&MAGIC);
    h[4..20].copy_from_slice(&v6(m.src));
    h[20..36].copy_from_slice(&v6(m.dst));
    h[36..38].copy_from_slice(&m.sport.to_be_bytes());
    h[38] = m.tclass;
    h[39] = m.hop;
    h[40..44].copy_from_slice(&ifindex.to_be_bytes());
    h
}

/// Parses a header at the start of `p`: the metadata and the interface
/// index; `None` for a wrong magic or a short buffer.
pub fn parse(p: &[u8]) -> Option<(RxMeta, u32)> {
    if take::<4>(p, 0)? != MAGIC {
        return None;
    }
    let m = RxMeta {
        src: Ipv6Addr::from(take::<16>(p, 4)?).to_canonical(),
        dst: Ipv6Addr::from(take::<16>(p, 20)?).to_canonical(),
        sport: u16::from_be_bytes(take(p, 36)?),
        tclass: *p.get(38)?,
        hop: *p.get(39)?,
    };
    Some((m, u32::from_be_bytes(take(p, 40)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back() {
        for (s, d) in [("169.254.1.1", "169.254.1.2"), ("fe80::1", "fe80::2")] {
            let m = RxMeta {
                src: s.parse().unwrap(),
                dst: d.parse().unwrap(),
                sport: 0xc123,
                tclass: 0x28,
                hop: 64,
            };
            let h = header(&m, 7);
            assert_eq!(parse(&h), Some((m, 7)));
            let mut bad = h;
            bad[3] = 2;
            assert_eq!(parse(&bad), None);
            assert_eq!(parse(&h[..HDR - 1]), None);
        }
    }
}
