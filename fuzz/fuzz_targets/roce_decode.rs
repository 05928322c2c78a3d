//! Fuzzes the RoCE v2 wire format (crate swrdma-roce) with arbitrary UDP
//! payloads, as a peer on the network may send them: `decode` must refuse
//! or return headers that re-encode to the same bytes (reserved fields
//! aside) and a payload inside the packet; `icrc_ok` and
//! `icrc_ipv4_ident` must not panic, and an identification they find must
//! indeed make `icrc_ok` agree.
//!
//! The input is [family: 1 byte][UDP payload...]; the addresses are fixed.
#![no_main]

use std::net::IpAddr;

use libfuzzer_sys::fuzz_target;
use swrdma_roce::{decode, encode, icrc_ipv4_ident, icrc_ok, op_info, IpInfo, BTH_LEN, ICRC_LEN, MAX_HDR, ROCE_PORT};

fuzz_target!(|input: &[u8]| {
    let Some((&fam, pkt)) = input.split_first() else {
        return;
    };
    let (src, dst): (IpAddr, IpAddr) = if fam & 1 == 0 {
        ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap())
    } else {
        ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap())
    };
    let ip = IpInfo {
        src,
        dst,
        sport: 0xC000 | u16::from(fam),
        dport: ROCE_PORT,
        flow: 0,
    };
    let ok = icrc_ok(&ip, pkt);
    if let Some(_ident) = icrc_ipv4_ident(&ip, pkt) {
        assert!(ok, "an identification was found but icrc_ok refused");
    }

    if let Ok((h, payload)) = decode(pkt) {
        let oi = op_info(pkt[0]);
        assert!(oi.valid);
        let mut out = [0u8; MAX_HDR];
        let n = encode(&h, payload.len(), &mut out).expect("a decoded header set re-encodes");
        assert_eq!(n, oi.hdr_len);
        assert_eq!(n + payload.len() + usize::from(h.bth.pad) + ICRC_LEN, pkt.len());
        assert_eq!(payload, &pkt[n..n + payload.len()]);
        let mut want = pkt[..n].to_vec();
        want[4] &= 0xC0; // BTH resv6
        want[8] &= 0x80; // BTH resv7
        if oi.deth {
            want[BTH_LEN + 4] = 0; // DETH reserved byte
        }
        assert_eq!(&want[..], &out[..n]);
    }
});
