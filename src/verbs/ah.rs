//! Address-handle attributes from a received work completion (upstream's
//! `ibv_init_ah_from_wc` and helpers): recognising the GRH as an IB/RoCE v1
//! GRH or a RoCE v2 IPv4/IPv6 header, and filling the reply path.
//!
//! The GID-table search is passed in as a closure so that the address
//! math can be tested without a device.

use std::os::raw::c_int;

use crate::abi::*;
use crate::ffi::set_errno;

/// `IPPROTO_UDP`: RoCE v2.
const NEXT_HDR_UDP: u8 = 17;
/// IB transport header following a GRH: RoCE v1 / IB.
const IB_NEXT_HDR: u8 = 0x1b;

/// The raw 40 bytes of an `ibv_grh`.
pub fn grh_bytes(grh: &ibv_grh) -> [u8; 40] {
    // SAFETY: ibv_grh is 40 bytes of plain data without padding.
    unsafe { std::mem::transmute_copy(grh) }
}

/// Upstream's `ipv4_calc_hdr_csum` over the 10 native 16-bit words of an
/// IPv4 header (one fold, as upstream).
pub fn ipv4_hdr_csum(hdr: &[u8; 20]) -> u16 {
    let mut sum: u32 = 0;
    for w in hdr.chunks_exact(2) {
        sum += u16::from_ne_bytes([w[0], w[1]]) as u32;
    }
    sum = (sum & 0xffff) + (sum >> 16);
    !sum as u16
}

/// Upstream's `get_grh_header_version`: 4 or 6, or `None` (errno
/// EPROTONOSUPPORT) when the header is neither.
///
/// A RoCE v2 IPv4 packet arrives with its 20-byte IPv4 header in the last
/// 20 bytes of the 40-byte GRH buffer.
pub fn grh_version(raw: &[u8; 40]) -> Option<c_int> {
    let vtf = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
    let ip6_version = (vtf >> 28) & 0xf;
    let ip4: [u8; 20] = raw[20..40].try_into().unwrap_or([0; 20]);
    let ip4_version = ip4[0] >> 4;
    let ip4_ihl = ip4[0] & 0xf;
    if ip6_version != 6 {
        if ip4_version == 4 {
            return Some(4);
        }
        set_errno(libc::EPROTONOSUPPORT);
        return None;
    }
    // Version 6 in the first word: still IPv4 if a well-formed IPv4 header
    // (length 5 words, correct checksum) sits at offset 20.
    if ip4_ihl != 5 {
        return Some(6);
    }
    let mut checked = ip4;
    checked[10] = 0;
    checked[11] = 0;
    let csum = ipv4_hdr_csum(&checked);
    if u16::from_ne_bytes([ip4[10], ip4[11]]) == csum {
        Some(4)
    } else {
        Some(6)
    }
}

/// `map_ipv4_addr_to_ipv6`: ::ffff:a.b.c.d from an address in network
/// byte order.
pub fn v4_mapped(ipv4: [u8; 4]) -> ibv_gid {
    let mut raw = [0u8; 16];
    raw[10] = 0xff;
    raw[11] = 0xff;
    raw[12..].copy_from_slice(&ipv4);
    ibv_gid { raw }
}

/// The GID search: `(gid, sysfs gid type)` → index ≥ 0, or a negative
/// value (errno set) when the GID is not in the port's table.
pub type FindGid<'a> = dyn FnMut(&ibv_gid, ibv_gid_type_sysfs) -> c_int + 'a;

/// Upstream's `ibv_init_ah_from_wc` on already-read inputs: fills `ah` and
/// returns 0, or -1 / the search's negative value with errno set.
pub fn init_ah_from_wc(
    port_num: u8,
    wc: &ibv_wc,
    raw: &[u8; 40],
    ah: &mut ibv_ah_attr,
    find: &mut FindGid<'_>,
) -> c_int {
    // SAFETY: ibv_ah_attr is plain data; all-zero is a valid value.
    *ah = unsafe { std::mem::zeroed() };
    let flow_class = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
    ah.grh.flow_label = flow_class & 0xFFFFF;
    ah.dlid = wc.slid;
    ah.sl = wc.sl;
    ah.src_path_bits = wc.dlid_path_bits;
    ah.port_num = port_num;

    if wc.wc_flags & IBV_WC_GRH == 0 {
        return 0;
    }
    ah.is_global = 1;
    match grh_version(raw) {
        Some(4) => by_ipv4(ah, raw[20..40].try_into().unwrap_or([0; 20]), find),
        Some(6) => by_ipv6(ah, raw, find),
        _ => -1,
    }
}

/// `set_ah_attr_by_ipv4`.
fn by_ipv4(ah: &mut ibv_ah_attr, ip4: [u8; 20], find: &mut FindGid<'_>) -> c_int {
    let saddr: [u8; 4] = [ip4[12], ip4[13], ip4[14], ip4[15]];
    let daddr: [u8; 4] = [ip4[16], ip4[17], ip4[18], ip4[19]];
    // Multicast destinations are not in the GID table.
    if daddr[0] & 0xf0 == 0xe0 {
        set_errno(libc::EINVAL);
        return -1;
    }
    let sgid = v4_mapped(daddr);
    let ret = find(&sgid, IBV_GID_TYPE_SYSFS_ROCE_V2);
    if ret < 0 {
        return ret;
    }
    ah.grh.dgid = v4_mapped(saddr);
    ah.grh.sgid_index = ret as u8;
    ah.grh.hop_limit = ip4[8];
    ah.grh.traffic_class = ip4[1];
    0
}

/// `set_ah_attr_by_ipv6`.
fn by_ipv6(ah: &mut ibv_ah_attr, raw: &[u8; 40], find: &mut FindGid<'_>) -> c_int {
    let mut sgid = [0u8; 16];
    sgid.copy_from_slice(&raw[8..24]);
    let mut dgid = [0u8; 16];
    dgid.copy_from_slice(&raw[24..40]);
    if dgid[0] == 0xff {
        set_errno(libc::EINVAL);
        return -1;
    }
    ah.grh.dgid = ibv_gid { raw: sgid };
    let next_hdr = raw[6];
    let sgid_type = if next_hdr == NEXT_HDR_UDP {
        IBV_GID_TYPE_SYSFS_ROCE_V2
    } else if next_hdr == IB_NEXT_HDR {
        IBV_GID_TYPE_SYSFS_IB_ROCE_V1
    } else {
        set_errno(libc::EPROTONOSUPPORT);
        return -1;
    };
    let ret = find(&ibv_gid { raw: dgid }, sgid_type);
    if ret < 0 {
        return ret;
    }
    ah.grh.sgid_index = ret as u8;
    let flow_class = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
    ah.grh.hop_limit = raw[7];
    ah.grh.traffic_class = ((flow_class >> 20) & 0xff) as u8;
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wc(flags: u32) -> ibv_wc {
        // SAFETY: plain data.
        let mut w: ibv_wc = unsafe { std::mem::zeroed() };
        w.wc_flags = flags;
        w.slid = 0x1234;
        w.sl = 3;
        w.dlid_path_bits = 5;
        w
    }

    fn ipv4_grh(saddr: [u8; 4], daddr: [u8; 4], ttl: u8, tos: u8) -> [u8; 40] {
        let mut raw = [0u8; 40];
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2..4].copy_from_slice(&60u16.to_be_bytes());
        ip[8] = ttl;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&saddr);
        ip[16..20].copy_from_slice(&daddr);
        let c = ipv4_hdr_csum(&ip);
        ip[10..12].copy_from_slice(&c.to_ne_bytes());
        raw[20..].copy_from_slice(&ip);
        raw
    }

    fn ipv6_grh(tclass: u8, flow: u32, next_hdr: u8, hop: u8, sgid: [u8; 16], dgid: [u8; 16]) -> [u8; 40] {
        let mut raw = [0u8; 40];
        let vtf = (6u32 << 28) | ((tclass as u32) << 20) | (flow & 0xfffff);
        raw[0..4].copy_from_slice(&vtf.to_be_bytes());
        raw[6] = next_hdr;
        raw[7] = hop;
        raw[8..24].copy_from_slice(&sgid);
        raw[24..40].copy_from_slice(&dgid);
        raw
    }

    #[test]
    fn checksum_matches_known_header() {
        // A textbook IPv4 header (checksum 0xb861 on the wire).
        let mut h: [u8; 20] = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
            0x00, 0xc7,
        ];
        let c = ipv4_hdr_csum(&h);
        assert_eq!(c.to_ne_bytes(), [0xb8, 0x61]);
        h[10..12].copy_from_slice(&c.to_ne_bytes());
        let mut raw = [0u8; 40];
        raw[20..].copy_from_slice(&h);
        assert_eq!(grh_version(&raw), Some(4));
    }

    #[test]
    fn versions() {
        let raw = ipv6_grh(0, 0, 0x1b, 64, [1; 16], [2; 16]);
        assert_eq!(grh_version(&raw), Some(6));
        let raw = [0u8; 40];
        assert_eq!(grh_version(&raw), None);
        assert_eq!(crate::ffi::errno(), libc::EPROTONOSUPPORT);
    }

    #[test]
    fn no_grh_fills_generic_fields_only() {
        // SAFETY: ibv_ah_attr is plain data; all-zero is a valid value.
        let mut ah: ibv_ah_attr = unsafe { std::mem::zeroed() };
        let raw = ipv6_grh(0, 0xabcde, 0x1b, 1, [0; 16], [0; 16]);
        let mut calls = 0;
        let r = init_ah_from_wc(2, &wc(0), &raw, &mut ah, &mut |_, _| {
            calls += 1;
            0
        });
        assert_eq!(r, 0);
        assert_eq!(calls, 0);
        assert_eq!(
            (ah.dlid, ah.sl, ah.src_path_bits, ah.port_num, ah.is_global),
            (0x1234, 3, 5, 2, 0)
        );
        assert_eq!(ah.grh.flow_label, 0xabcde);
    }

    #[test]
    fn roce_v2_ipv4() {
        // SAFETY: ibv_ah_attr is plain data; all-zero is a valid value.
        let mut ah: ibv_ah_attr = unsafe { std::mem::zeroed() };
        let raw = ipv4_grh([10, 0, 0, 1], [10, 0, 0, 2], 63, 0x28);
        let mut seen = None;
        let r = init_ah_from_wc(1, &wc(IBV_WC_GRH), &raw, &mut ah, &mut |g, t| {
            // SAFETY: both views of ibv_gid are 16 plain bytes.
            let raw = unsafe { g.raw };
            seen = Some((raw, t));
            3
        });
        assert_eq!(r, 0);
        let (g, t) = seen.unwrap();
        // SAFETY: both views of ibv_gid are 16 plain bytes.
        let (src, dst, dgid) = unsafe {
            (
                v4_mapped([10, 0, 0, 2]).raw,
                v4_mapped([10, 0, 0, 1]).raw,
                ah.grh.dgid.raw,
            )
        };
        assert_eq!(g, src);
        assert_eq!(t, IBV_GID_TYPE_SYSFS_ROCE_V2);
        assert_eq!(dgid, dst);
        assert_eq!(
            (ah.grh.sgid_index, ah.grh.hop_limit, ah.grh.traffic_class, ah.is_global),
            (3, 63, 0x28, 1)
        );
        assert_eq!(ah.grh.flow_label, 0);
    }

    #[test]
    fn ipv4_multicast_refused() {
        // SAFETY: ibv_ah_attr is plain data; all-zero is a valid value.
        let mut ah: ibv_ah_attr = unsafe { std::mem::zeroed() };
        let raw = ipv4_grh([10, 0, 0, 1], [224, 0, 0, 5], 1, 0);
        assert_eq!(init_ah_from_wc(1, &wc(IBV_WC_GRH), &raw, &mut ah, &mut |_, _| 0), -1);
        assert_eq!(crate::ffi::errno(), libc::EINVAL);
    }

    #[test]
    fn ipv6_roce_v1_and_v2() {
        let s = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let d = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1];
        for (nh, ty) in [(0x1b, IBV_GID_TYPE_SYSFS_IB_ROCE_V1), (17, IBV_GID_TYPE_SYSFS_ROCE_V2)] {
            // SAFETY: ibv_ah_attr is plain data; all-zero is a valid value.
            let mut ah: ibv_ah_attr = unsafe { std::mem::zeroed() };
            let raw = ipv6_grh(0x5a, 0x12345, nh, 9, s, d);
            let mut seen = None;
            let r = init_ah_from_wc(1, &wc(IBV_WC_GRH), &raw, &mut ah, &mut |g, t| {
                // SAFETY: both views of ibv_gid are 16 plain bytes.
                let raw = unsafe { g.raw };
                seen = Some((raw, t));
                7
            });
            assert_eq!(r, 0);
            assert_eq!(seen, Some((d, ty)));
            // SAFETY: both views of ibv_gid are 16 plain bytes.
            let dgid = unsafe { ah.grh.dgid.raw };
            assert_eq!(dgid, s);
            assert_eq!(
                (ah.grh.sgid_index, ah.grh.hop_limit, ah.grh.traffic_class),
                (7, 9, 0x5a)
            );
            assert_eq!(ah.grh.flow_label, 0x12345);
        }
    }

    #[test]
    fn ipv6_errors() {
        // SAFETY: ibv_ah_attr is plain data; all-zero is a valid value.
        let mut ah: ibv_ah_attr = unsafe { std::mem::zeroed() };
        let raw = ipv6_grh(0, 0, 0x1b, 1, [1; 16], [0xff; 16]);
        assert_eq!(init_ah_from_wc(1, &wc(IBV_WC_GRH), &raw, &mut ah, &mut |_, _| 0), -1);
        assert_eq!(crate::ffi::errno(), libc::EINVAL);
        let raw = ipv6_grh(0, 0, 6, 1, [1; 16], [2; 16]);
        assert_eq!(init_ah_from_wc(1, &wc(IBV_WC_GRH), &raw, &mut ah, &mut |_, _| 0), -1);
        assert_eq!(crate::ffi::errno(), libc::EPROTONOSUPPORT);
        // The search's failure is passed through.
        let raw = ipv6_grh(0, 0, 17, 1, [1; 16], [2; 16]);
        assert_eq!(init_ah_from_wc(1, &wc(IBV_WC_GRH), &raw, &mut ah, &mut |_, _| -1), -1);
    }
}
