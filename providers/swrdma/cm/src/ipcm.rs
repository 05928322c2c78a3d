//! The RDMA IP CM Service (IBTA Vol 1 Annex A11): how an IP-addressed
//! connection rides on the InfiniBand CM.  Two pieces:
//!
//! * the service ID of an IP port space, `0x0000_0000_01PP_PORT`: 24 zero
//!   bits above, then the 16-bit port space (0x0106 TCP, 0x0111 UDP, 0x013F
//!   IB; its high byte is the 0x01 that marks an IP service ID) and the
//!   16-bit port (A11.2);
//! * the 36-byte header at the start of a REQ's (and SIDR_REQ's) private
//!   data that carries the IP addresses and the source port (A11.4), what
//!   the Linux kernel's `drivers/infiniband/core/cma.c` calls
//!   `struct cma_hdr`:
//!
//! | bytes | field |
//! |---|---|
//! | 0 | CM version, 0x00 |
//! | 1 | IP version in bits 7..4 (4 or 6), bits 3..0 reserved |
//! | 2-3 | source port, big-endian |
//! | 4-19 | source IP address |
//! | 20-35 | destination IP address |
//!
//! An IPv6 address fills its 16 bytes; an IPv4 address sits in the last 4
//! (offset 12 of the 16), the first 12 being zero.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Length of the IP CM private-data header.
pub const IPCM_HDR_LEN: usize = 36;
/// The CM version byte of the header.
pub const IPCM_VERSION: u8 = 0x00;
/// The bits every IP service ID has set (the 0x01 above the port space's
/// low byte); see [`service_id_parts`].
pub const SERVICE_ID_IP_PREFIX: u64 = 0x0000_0000_0100_0000;
/// The bits of a service ID that must match [`SERVICE_ID_IP_PREFIX`].
const SERVICE_ID_IP_MASK: u64 = 0xFFFF_FFFF_FF00_0000;

/// Port space of RDMA_PS_TCP (reliable connected).
pub const PS_TCP: u16 = 0x0106;
/// Port space of RDMA_PS_UDP (unreliable datagram).
pub const PS_UDP: u16 = 0x0111;
/// Port space of RDMA_PS_IB (any QP type).
pub const PS_IB: u16 = 0x013F;
/// Port space of RDMA_PS_IPOIB (its service IDs lack the IP prefix).
pub const PS_IPOIB: u16 = 0x0002;

const SRC_PORT: usize = 2;
const SRC_ADDR: usize = 4;
const DST_ADDR: usize = 20;
/// Where an IPv4 address sits inside its 16-byte field.
const IPV4_AT: usize = 12;

/// The service ID of port `port` in port space `ps`.
pub fn service_id(ps: u16, port: u16) -> u64 {
    (u64::from(ps) << 16) | u64::from(port)
}

/// The port space and port of an IP service ID, `None` when `sid` is not
/// one (the top 32 bits must be zero and bits 31..24 must be 0x01).  The
/// port space comes back whole, 0x01 high byte included (e.g. [`PS_TCP`]).
pub fn service_id_parts(sid: u64) -> Option<(u16, u16)> {
    if sid & SERVICE_ID_IP_MASK != SERVICE_ID_IP_PREFIX {
        return None;
    }
    Some(((sid >> 16) as u16, sid as u16))
}

/// The IP CM private-data header.  Both addresses are of one family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpCmHdr {
    pub src_port: u16,
    pub src: IpAddr,
    pub dst: IpAddr,
}

impl IpCmHdr {
    /// Writes the header to `out[..36]`; panics if `out` is shorter.  The IP
    /// version follows `src`; a `dst` of the other family is written in
    /// `src`'s: an IPv4 one as its IPv4-mapped IPv6 address, an IPv6 one as
    /// the IPv4 address it maps (0.0.0.0 when it maps none).
    pub fn encode(&self, out: &mut [u8]) {
        let out = &mut out[..IPCM_HDR_LEN];
        out.fill(0);
        out[0] = IPCM_VERSION;
        out[SRC_PORT..SRC_PORT + 2].copy_from_slice(&self.src_port.to_be_bytes());
        match self.src {
            IpAddr::V4(src) => {
                out[1] = 4 << 4;
                let dst = match self.dst {
                    IpAddr::V4(a) => a,
                    IpAddr::V6(a) => a.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
                };
                put_v4(out, SRC_ADDR, src);
                put_v4(out, DST_ADDR, dst);
            }
            IpAddr::V6(src) => {
                out[1] = 6 << 4;
                let dst = match self.dst {
                    IpAddr::V4(a) => a.to_ipv6_mapped(),
                    IpAddr::V6(a) => a,
                };
                out[SRC_ADDR..SRC_ADDR + 16].copy_from_slice(&src.octets());
                out[DST_ADDR..DST_ADDR + 16].copy_from_slice(&dst.octets());
            }
        }
    }

    /// Parses the header from the start of `b` (bytes past 36 are ignored).
    /// `None` when `b` is shorter than 36 bytes, the CM version is not 0 or
    /// the IP version is neither 4 nor 6.  Reserved bits, and the 12 bytes
    /// in front of an IPv4 address, are not checked.
    pub fn decode(b: &[u8]) -> Option<IpCmHdr> {
        if b.len() < IPCM_HDR_LEN || b[0] != IPCM_VERSION {
            return None;
        }
        let src_port = u16::from_be_bytes([b[SRC_PORT], b[SRC_PORT + 1]]);
        let (src, dst) = match b[1] >> 4 {
            4 => (IpAddr::V4(get_v4(b, SRC_ADDR)), IpAddr::V4(get_v4(b, DST_ADDR))),
            6 => (IpAddr::V6(get_v6(b, SRC_ADDR)), IpAddr::V6(get_v6(b, DST_ADDR))),
            _ => return None,
        };
        Some(IpCmHdr { src_port, src, dst })
    }
}

fn put_v4(out: &mut [u8], field: usize, a: Ipv4Addr) {
    out[field + IPV4_AT..field + 16].copy_from_slice(&a.octets());
}

fn get_v4(b: &[u8], field: usize) -> Ipv4Addr {
    let at = field + IPV4_AT;
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

fn get_v6(b: &[u8], field: usize) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&b[field..field + 16]);
    Ipv6Addr::from(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_ids() {
        assert_eq!(service_id(PS_TCP, 20049), 0x0000_0000_0106_4E51);
        assert_eq!(service_id(PS_UDP, 0xFFFF), 0x0000_0000_0111_FFFF);
        assert_eq!(service_id(PS_IB, 0), 0x0000_0000_013F_0000);
        assert_eq!(service_id_parts(0x0000_0000_0106_4E51), Some((PS_TCP, 20049)));
        assert_eq!(service_id_parts(0x0000_0000_0111_0000), Some((PS_UDP, 0)));
        assert_eq!(service_id_parts(0x0000_0000_013F_ABCD), Some((PS_IB, 0xABCD)));
        for ps in [PS_TCP, PS_UDP, PS_IB, 0x0100, 0x01FF] {
            for port in [0, 1, 4791, 0xFFFF] {
                assert_eq!(service_id_parts(service_id(ps, port)), Some((ps, port)));
            }
        }
        // Not IP service IDs.
        assert_eq!(service_id_parts(service_id(PS_IPOIB, 7)), None);
        assert_eq!(service_id_parts(0), None);
        assert_eq!(service_id_parts(0x0000_0000_0206_0001), None);
        assert_eq!(service_id_parts(0x0000_0001_0106_0001), None);
        assert_eq!(service_id_parts(0x8000_0000_0106_0001), None);
        assert_eq!(service_id_parts(0x0000_0000_00FF_FFFF), None);
        assert_eq!(SERVICE_ID_IP_PREFIX, 0x0100_0000);
    }

    #[test]
    fn v4_layout_and_round_trip() {
        let h = IpCmHdr {
            src_port: 0xC001,
            src: IpAddr::V4(Ipv4Addr::new(192, 168, 1, 10)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        };
        let mut b = [0xEEu8; 40];
        h.encode(&mut b);
        let mut want = [0u8; 36];
        want[1] = 0x40;
        want[2..4].copy_from_slice(&[0xC0, 0x01]);
        want[16..20].copy_from_slice(&[192, 168, 1, 10]);
        want[32..36].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(b[..36], want);
        assert_eq!(b[36..], [0xEE; 4], "writes 36 bytes only");
        assert_eq!(IpCmHdr::decode(&b), Some(h));
        assert_eq!(IpCmHdr::decode(&b[..36]), Some(h));
    }

    #[test]
    fn v6_layout_and_round_trip() {
        let src: Ipv6Addr = "fe80::1:2:3:4".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8::ff".parse().unwrap();
        let h = IpCmHdr {
            src_port: 18515,
            src: IpAddr::V6(src),
            dst: IpAddr::V6(dst),
        };
        let mut b = [0u8; 36];
        h.encode(&mut b);
        assert_eq!(b[0], 0);
        assert_eq!(b[1], 0x60);
        assert_eq!(b[2..4], 18515u16.to_be_bytes());
        assert_eq!(b[4..20], src.octets());
        assert_eq!(b[20..36], dst.octets());
        assert_eq!(IpCmHdr::decode(&b), Some(h));
    }

    #[test]
    fn decode_refusals_and_tolerance() {
        let h = IpCmHdr {
            src_port: 1,
            src: IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4)),
            dst: IpAddr::V4(Ipv4Addr::new(5, 6, 7, 8)),
        };
        let mut b = [0u8; 36];
        h.encode(&mut b);
        assert_eq!(IpCmHdr::decode(&b[..35]), None);
        assert_eq!(IpCmHdr::decode(&[]), None);
        let mut bad = b;
        bad[0] = 1;
        assert_eq!(IpCmHdr::decode(&bad), None);
        for v in [0x00, 0x50, 0x70, 0xF0] {
            let mut bad = b;
            bad[1] = v;
            assert_eq!(IpCmHdr::decode(&bad), None, "ip version byte {v:#x}");
        }
        // The low nibble of the version byte and the IPv4 padding are ignored.
        let mut odd = b;
        odd[1] = 0x4F;
        odd[4..16].fill(0xAA);
        odd[20..32].fill(0x55);
        assert_eq!(IpCmHdr::decode(&odd), Some(h));
    }

    #[test]
    fn mixed_families_follow_src() {
        let v4 = Ipv4Addr::new(172, 16, 0, 1);
        let v6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let mut b = [0u8; 36];
        IpCmHdr {
            src_port: 7,
            src: IpAddr::V6(v6),
            dst: IpAddr::V4(v4),
        }
        .encode(&mut b);
        let d = IpCmHdr::decode(&b).unwrap();
        assert_eq!(d.dst, IpAddr::V6(v4.to_ipv6_mapped()));
        IpCmHdr {
            src_port: 7,
            src: IpAddr::V4(v4),
            dst: IpAddr::V6(v4.to_ipv6_mapped()),
        }
        .encode(&mut b);
        assert_eq!(IpCmHdr::decode(&b).unwrap().dst, IpAddr::V4(v4));
        IpCmHdr {
            src_port: 7,
            src: IpAddr::V4(v4),
            dst: IpAddr::V6(v6),
        }
        .encode(&mut b);
        assert_eq!(IpCmHdr::decode(&b).unwrap().dst, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    }
}
