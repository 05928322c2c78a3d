//! The invariant CRC (IBTA Annex A17.8.1 and 9.2 / 7.8.1) and the GRH area
//! of a UD receive.
//!
//! The ICRC is the CRC-32 of IEEE 802.3 (reflected, register started at
//! all ones, complemented at the end) over a pseudo packet:
//!
//! 1. 8 bytes of 0xFF standing for the (absent, masked) LRH;
//! 2. the IP header with its variant fields set to all ones: IPv4 type of
//!    service, TTL and header checksum; IPv6 traffic class, flow label and
//!    hop limit;
//! 3. the UDP header with its checksum set to 0xFFFF;
//! 4. the BTH with its byte 4 (FECN, BECN and 6 reserved bits, the
//!    "Resv8a" of older IBTA releases) set to 0xFF;
//! 5. the rest of the UDP payload up to the ICRC (extension headers,
//!    payload, pad).
//!
//! It is appended in the byte order of the CRC-32 of Ethernet: the
//! complemented register, least significant byte first (rxe stores the
//! 32-bit `~crc` of `crc32_le` in host order, which on little-endian hosts
//! is this; RoCE NICs and Wireshark agree).  Unlike the IPv4 header's
//! checksum, the identification and the flags/fragment-offset fields are
//! NOT masked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::crc;

const BTH_LEN: usize = 12;
const ICRC_LEN: usize = 4;
const UDP_HDR: usize = 8;
const IPV4_HDR: usize = 20;
const LRH: usize = 8;
/// The BTH byte that is masked (FECN, BECN, resv6).
const BTH_MASKED: usize = 4;
/// IPv4 "don't fragment" in the flags/fragment-offset field's first byte.
const DF: u8 = 0x40;

/// The CRC register after the masked LRH: 8 bytes of 0xFF fed into the
/// all-ones initial register.  Equals 0xDEBB20E3, the constant rxe starts
/// from (a test checks it).
pub const SEED: u32 = crc::update_const(!0, &[0xFF; LRH]);

/// The IP and UDP fields of a RoCE v2 datagram that the ICRC covers.
///
/// IPv4 is used when both addresses are IPv4 or IPv4-mapped IPv6 addresses
/// (`::ffff:a.b.c.d`, what a dual-stack socket reports and what a RoCE v2
/// IPv4 GID is); otherwise IPv6 (an IPv4 address then counts as its mapped
/// IPv6 form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpInfo {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    /// IPv6 flow label: masked in the ICRC, so ignored.
    pub flow: u32,
}

enum Fam {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

fn as_v4(a: IpAddr) -> Option<Ipv4Addr> {
    match a {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(a) => a.to_ipv4_mapped(),
    }
}

fn as_v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

fn family(src: IpAddr, dst: IpAddr) -> Fam {
    match (as_v4(src), as_v4(dst)) {
        (Some(s), Some(d)) => Fam::V4(s.octets(), d.octets()),
        _ => Fam::V6(as_v6(src).octets(), as_v6(dst).octets()),
    }
}

/// The register after the masked LRH, IP header and UDP header of a
/// datagram whose UDP payload (ICRC included) is `udp_payload_len` bytes;
/// IPv4 with identification `id` and flags byte `flags`.  Lengths beyond
/// 16 bits wrap (no such datagram exists).
fn prefix(ip: &IpInfo, udp_payload_len: usize, id: u16, flags: u8) -> u32 {
    let udp_len = (UDP_HDR + udp_payload_len) as u16;
    let reg = match family(ip.src, ip.dst) {
        Fam::V4(s, d) => {
            let tot = (IPV4_HDR as u16).wrapping_add(udp_len).to_be_bytes();
            let id = id.to_be_bytes();
            let h = [
                0x45, 0xFF, tot[0], tot[1], id[0], id[1], flags, 0, 0xFF, 17, 0xFF, 0xFF, s[0], s[1], s[2], s[3], d[0],
                d[1], d[2], d[3],
            ];
            crc::update(SEED, &h)
        }
        Fam::V6(s, d) => {
            let plen = udp_len.to_be_bytes();
            let h = [0x6F, 0xFF, 0xFF, 0xFF, plen[0], plen[1], 17, 0xFF];
            let reg = crc::update(SEED, &h);
            let reg = crc::update(reg, &s);
            crc::update(reg, &d)
        }
    };
    let sp = ip.sport.to_be_bytes();
    let dp = ip.dport.to_be_bytes();
    let ul = udp_len.to_be_bytes();
    crc::update(reg, &[sp[0], sp[1], dp[0], dp[1], ul[0], ul[1], 0xFF, 0xFF])
}

/// Feeds the UDP payload (ICRC excluded) in pieces, BTH byte 4 masked.
fn body(mut reg: u32, parts: &[&[u8]]) -> u32 {
    let mut off = 0usize;
    for p in parts {
        if off <= BTH_MASKED && BTH_MASKED < off + p.len() {
            let i = BTH_MASKED - off;
            reg = crc::update(reg, &p[..i]);
            reg = crc::update(reg, &[0xFF]);
            reg = crc::update(reg, &p[i + 1..]);
        } else {
            reg = crc::update(reg, p);
        }
        off += p.len();
    }
    reg
}

/// The ICRC of a packet we send: the UDP payload given in pieces (headers,
/// payload, pad zeros), ICRC not included.  IPv4 datagrams are taken to
/// leave with identification 0 and DF set and no IP options: what the
/// kernel gives a datagram of an UNCONNECTED UDP socket with
/// IP_MTU_DISCOVER = IP_PMTUDISC_DO (ip_select_ident_segs: a connected
/// socket numbers its datagrams, IP_PMTUDISC_PROBE or no DF draws a hashed
/// identification, and this ICRC would then be wrong).  Returns the 4
/// bytes to append, in wire order.
pub fn icrc(ip: &IpInfo, parts: &[&[u8]]) -> [u8; 4] {
    icrc_ident(ip, parts, 0, true)
}

/// [`icrc`] for an IPv4 datagram that leaves with identification `id` and
/// the DF bit `df` (MF 0, offset 0, no options); both unused for IPv6.
pub fn icrc_ident(ip: &IpInfo, parts: &[&[u8]], id: u16, df: bool) -> [u8; 4] {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let reg = body(prefix(ip, len + ICRC_LEN, id, if df { DF } else { 0 }), parts);
    (!reg).to_le_bytes()
}

/// The register the received ICRC stands for.
fn received(pkt: &[u8]) -> u32 {
    let n = pkt.len();
    !u32::from_le_bytes([pkt[n - 4], pkt[n - 3], pkt[n - 2], pkt[n - 1]])
}

/// Checks the ICRC of a received UDP payload (ICRC last).  IPv6: exactly.
/// IPv4: a UDP socket does not learn the identification and flags of the
/// datagram, so the packet passes when SOME identification and DF bit
/// (MF 0, offset 0, no options) make the ICRC match; see
/// [`icrc_ipv4_ident`].  This leaves 17 of the 32 bits of the ICRC to
/// detect a corrupted IPv4 packet: a random corruption passes with
/// probability 2^-15 (corruptions of up to 4 bits in packets up to 2974
/// bits in total never pass, the Hamming distance of CRC-32).
pub fn icrc_ok(ip: &IpInfo, pkt: &[u8]) -> bool {
    if pkt.len() < BTH_LEN + ICRC_LEN {
        return false;
    }
    match family(ip.src, ip.dst) {
        Fam::V6(..) => {
            let body_bytes = &pkt[..pkt.len() - ICRC_LEN];
            body(prefix(ip, pkt.len(), 0, 0), &[body_bytes]) == received(pkt)
        }
        Fam::V4(..) => icrc_ipv4_ident(ip, pkt).is_some(),
    }
}

/// For an IPv4 packet (UDP payload, ICRC last): an identification and DF
/// bit that make its ICRC match, or None (also for IPv6 or a packet too
/// short to have a BTH).  Solved in closed form: the CRC is affine in the
/// message bits, so the register difference that flipping one bit of the
/// identification or DF makes is a fixed vector, carried over the rest of
/// the packet by the "feed n zero bytes" operator x^(8n) mod P; whether the
/// difference between the received register and the one computed with
/// identification 0 and DF set lies in the span of those 17 vectors is a
/// Gaussian elimination over GF(2)^32, which also yields the solution
/// (unique when the 17 vectors are independent, as for every length tried).
pub fn icrc_ipv4_ident(ip: &IpInfo, pkt: &[u8]) -> Option<(u16, bool)> {
    if pkt.len() < BTH_LEN + ICRC_LEN {
        return None;
    }
    if let Fam::V6(..) = family(ip.src, ip.dst) {
        return None;
    }
    let body_bytes = &pkt[..pkt.len() - ICRC_LEN];
    // The base is identification 0 with DF set, what our own datagrams carry
    // (an unconnected socket with IP_PMTUDISC_DO): they match at once, with
    // no elimination (which costs about as much as the CRC of 4 KiB).
    let reg0 = body(prefix(ip, pkt.len(), 0, DF), &[body_bytes]);
    let mut diff = reg0 ^ received(pkt);
    if diff == 0 {
        return Some((0, true));
    }

    let rest = (LRH + IPV4_HDR + UDP_HDR + body_bytes.len() - IDENT_END) as u64;
    let basis = ident_basis(rest);
    let mut sol = 0u32;
    while diff != 0 {
        let top = 31 - diff.leading_zeros() as usize;
        if basis[top].0 == 0 {
            return None;
        }
        diff ^= basis[top].0;
        sol ^= basis[top].1;
    }
    // variable 16 flips DF from the base's DF set
    Some(((sol & 0xFFFF) as u16, sol & (1 << 16) == 0))
}

/// `basis[pivot] = (vector, combination of variables)` ([`ident_basis`]).
type Basis = [(u32, u32); 32];

/// A basis kept by [`ident_basis`] with the `rest` it is for.
type Kept = Option<(u64, Basis)>;

/// Pseudo-packet bytes up to and including the IPv4 flags byte: where the
/// identification and DF of [`icrc_ipv4_ident`]'s variables lie.
const IDENT_END: usize = LRH + 7;

/// A basis of the register differences that the identification's 16 bits
/// and DF make, carried over the `rest` bytes after the flags byte:
/// `basis[pivot] = (vector, combination of variables)`, `pivot` its top
/// bit.  It depends on the length alone, so the last few are kept per
/// thread: a segmentation group's datagrams (identifications 1, 2 …) come
/// in runs of one length, and computing it costs about as much as the CRC
/// of 4 KiB.
fn ident_basis(rest: u64) -> Basis {
    const KEEP: usize = 4;
    thread_local! {
        /// (the next to replace, the last bases and their `rest`)
        static KEPT: std::cell::RefCell<(usize, [Kept; KEEP])> =
            const { std::cell::RefCell::new((0, [None; KEEP])) };
    }
    if let Some(b) = KEPT.with_borrow(|(_, k)| k.iter().flatten().find(|(r, _)| *r == rest).map(|(_, b)| *b)) {
        return b;
    }
    // Variables 0..16: identification bit i (value 1 << i); 16: DF.  Their
    // bytes lie at IP header offsets 4, 5 (identification) and 6 (flags):
    // each variable's effect is first taken up to the end of offset 6, then
    // carried over the remaining bytes in one step.
    let shift = crc::x_pow_8n(rest);
    let mut basis = [(0u32, 0u32); 32];
    for var in 0..17u32 {
        let (off, val) = match var {
            0..=7 => (5, 1u8 << var),
            8..=15 => (4, 1u8 << (var - 8)),
            _ => (6, DF),
        };
        let mut e = [0u8; IDENT_END];
        e[LRH + off] = val;
        let mut v = crc::mul_mod(shift, crc::update(0, &e));
        let mut comb = 1u32 << var;
        while v != 0 {
            let top = 31 - v.leading_zeros() as usize;
            if basis[top].0 == 0 {
                basis[top] = (v, comb);
                break;
            }
            v ^= basis[top].0;
            comb ^= basis[top].1;
        }
    }
    KEPT.with_borrow_mut(|(next, k)| {
        k[*next % KEEP] = Some((rest, basis));
        *next += 1;
    });
    basis
}

/// The 16-bit one's complement checksum of an IPv4 header (checksum field 0).
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// The 40-byte GRH area a UD receive gets in front of the data, as rxe
/// fills it (a copy of the received IP header, `union rdma_network_hdr`):
/// IPv4: 20 zero bytes, then the IPv4 header (0x45, `tclass` as TOS, total
/// length 20 + 8 + `udp_payload_len`, identification 0, DF, `hop_limit` as
/// TTL, protocol 17, a correct header checksum, source, destination);
/// IPv6: the IPv6 header (version 6, `tclass`, flow label 0, payload
/// length 8 + `udp_payload_len`, next header 17, `hop_limit`, source,
/// destination).  `udp_payload_len` counts the whole UDP payload, ICRC
/// included.  The family is chosen as for [`IpInfo`].
pub fn grh(src: IpAddr, dst: IpAddr, tclass: u8, hop_limit: u8, udp_payload_len: usize) -> [u8; 40] {
    grh_ident(src, dst, tclass, hop_limit, udp_payload_len, 0, true)
}

/// [`grh`] with the IPv4 identification and DF bit given (e.g. found by
/// [`icrc_ipv4_ident`]); they are unused for IPv6.
pub fn grh_ident(
    src: IpAddr,
    dst: IpAddr,
    tclass: u8,
    hop_limit: u8,
    udp_payload_len: usize,
    id: u16,
    df: bool,
) -> [u8; 40] {
    let mut g = [0u8; 40];
    let udp_len = (UDP_HDR + udp_payload_len) as u16;
    match family(src, dst) {
        Fam::V4(s, d) => {
            let h = &mut g[20..];
            h[0] = 0x45;
            h[1] = tclass;
            h[2..4].copy_from_slice(&(IPV4_HDR as u16).wrapping_add(udp_len).to_be_bytes());
            h[4..6].copy_from_slice(&id.to_be_bytes());
            h[6] = if df { DF } else { 0 };
            h[8] = hop_limit;
            h[9] = 17;
            h[12..16].copy_from_slice(&s);
            h[16..20].copy_from_slice(&d);
            let c = ipv4_checksum(h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
        }
        Fam::V6(s, d) => {
            g[0] = 0x60 | (tclass >> 4);
            g[1] = tclass << 4;
            g[4..6].copy_from_slice(&udp_len.to_be_bytes());
            g[6] = 17;
            g[7] = hop_limit;
            g[8..24].copy_from_slice(&s);
            g[24..40].copy_from_slice(&d);
        }
    }
    g
}
