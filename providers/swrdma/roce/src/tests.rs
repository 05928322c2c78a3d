//! Tests of the whole crate: the opcode table, encode/decode, ICRC, GRH.

use super::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// xorshift64*: deterministic pseudo-random numbers for the tests.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn valid_opcodes() -> Vec<u8> {
    (0..=255u8).filter(|&o| op_info(o).valid).collect()
}

// ---------------------------------------------------------------- opcode table

#[test]
fn opcode_table_matches_ibta() {
    let v = valid_opcodes();
    let mut want: Vec<u8> = (0x00..=0x14).chain([0x16, 0x17]).collect();
    want.extend(0x20..=0x2b);
    want.extend([0x64, 0x65]);
    assert_eq!(v, want);
    // Header lengths of IBTA table 38 (BTH 12 + extension headers).
    let len = |o| op_info(o).hdr_len;
    assert_eq!(len(op::RC_SEND_FIRST), 12);
    assert_eq!(len(op::RC_SEND_LAST_IMM), 16);
    assert_eq!(len(op::RC_WRITE_FIRST), 28);
    assert_eq!(len(op::RC_WRITE_MIDDLE), 12);
    assert_eq!(len(op::RC_WRITE_ONLY_IMM), 32);
    assert_eq!(len(op::RC_READ_REQUEST), 28);
    assert_eq!(len(op::RC_READ_RESPONSE_FIRST), 16);
    assert_eq!(len(op::RC_READ_RESPONSE_MIDDLE), 12);
    assert_eq!(len(op::RC_ACK), 16);
    assert_eq!(len(op::RC_ATOMIC_ACK), 24);
    assert_eq!(len(op::RC_CMP_SWAP), 40);
    assert_eq!(len(op::RC_FETCH_ADD), 40);
    assert_eq!(len(op::RC_SEND_ONLY_INV), 16);
    assert_eq!(len(op::UC_WRITE_ONLY_IMM), 32);
    assert_eq!(len(op::UD_SEND_ONLY), 20);
    assert_eq!(len(op::UD_SEND_ONLY_IMM), 24);
    assert_eq!(MAX_HDR, v.iter().map(|&o| len(o)).max().unwrap());
    for o in v {
        let i = op_info(o);
        assert_eq!(i.only, i.first && i.last, "{o:#x}");
        assert!(!(i.middle && (i.first || i.last)), "{o:#x}");
        assert_eq!(i.deth, o >= 0x60);
        let t = match o >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            _ => Transport::Ud,
        };
        assert_eq!(i.transport, t);
        // UC opcodes are the RC ones + 0x20 (same headers).
        if (0x20..=0x2b).contains(&o) {
            let rc = op_info(o - 0x20);
            assert_eq!(
                (i.hdr_len, i.first, i.middle, i.last, i.kind),
                (rc.hdr_len, rc.first, rc.middle, rc.last, rc.kind)
            );
        }
    }
    assert!(!op_info(op::RC_READ_RESPONSE_MIDDLE).aeth);
    assert!(op_info(op::RC_READ_RESPONSE_LAST).aeth && op_info(op::RC_READ_RESPONSE_LAST).last);
    assert!(!op_info(op::RC_READ_REQUEST).has_payload && !op_info(op::RC_ACK).has_payload);
    assert!(op_info(op::RC_SEND_ONLY_INV).ieth && op_info(op::RC_SEND_ONLY_INV).only);
    assert_eq!(op_info(op::RC_FETCH_ADD).kind, Kind::FetchAdd);
    assert!(!op_info(0x15).valid && !op_info(0x18).valid && !op_info(0x2c).valid && !op_info(op::CNP).valid);
    assert!(!op_info(0x40).valid && !op_info(0x60).valid && !op_info(0x66).valid && !op_info(0xff).valid);
}

#[test]
fn pad_and_psn() {
    assert_eq!([0, 1, 2, 3, 4, 5, 4096, 4097].map(pad_for), [0, 3, 2, 1, 0, 3, 0, 3]);
    assert_eq!(psn_add(0xFF_FFFF, 1), 0);
    assert_eq!(psn_add(0xFF_FFFE, 5), 3);
    assert_eq!(psn_add(7, 0x100_0000), 7);
    assert_eq!(psn_diff(0, 0xFF_FFFF), 1);
    assert_eq!(psn_diff(0xFF_FFFF, 0), -1);
    assert_eq!(psn_diff(5, 5), 0);
    assert_eq!(psn_diff(0x7F_FFFF, 0), 0x7F_FFFF);
    assert_eq!(psn_diff(0x80_0000, 0), -0x80_0000);
    let mut r = Rng(7);
    for _ in 0..10000 {
        let a = r.next() as u32 & PSN_MASK;
        let n = (r.next() as u32 & PSN_MASK) >> 1;
        assert_eq!(psn_diff(psn_add(a, n), a), n as i32);
        assert_eq!(psn_diff(a, psn_add(a, n)), -(n as i32));
    }
}

#[test]
fn aeth_helpers() {
    assert_eq!(Aeth::ack(5), Aeth { syndrome: 0x1f, msn: 5 });
    assert_eq!(Aeth::ack(5).kind(), AethKind::Ack);
    assert_eq!(Aeth::ack(5).credits(), CREDITS_INVALID);
    assert_eq!(Aeth::rnr_nak(14, 9), Aeth { syndrome: 0x2e, msn: 9 });
    assert_eq!(Aeth::rnr_nak(14, 9).kind(), AethKind::RnrNak(14));
    assert_eq!(Aeth::nak(nak::REMOTE_ACCESS_ERROR, 1).syndrome, 0x62);
    assert_eq!(Aeth::nak(nak::PSN_SEQ_ERROR, 1).kind(), AethKind::Nak(0));
    assert_eq!(Aeth { syndrome: 0x45, msn: 0 }.kind(), AethKind::Reserved);
    assert_eq!(Aeth { syndrome: 0x80, msn: 0 }.kind(), AethKind::Ack);
    assert_eq!(
        (rnr_timer_us(0), rnr_timer_us(1), rnr_timer_us(14), rnr_timer_us(31)),
        (655_360, 10, 1_280, 491_520)
    );
}

// ---------------------------------------------------------------- encode/decode

fn random_hdr(r: &mut Rng, opcode: u8) -> Hdr {
    let i = op_info(opcode);
    Hdr {
        bth: Bth {
            opcode,
            se: r.next() & 1 != 0,
            mig: r.next() & 1 != 0,
            pad: 0,
            tver: 0,
            pkey: r.next() as u16,
            fecn: r.next() & 1 != 0,
            becn: r.next() & 1 != 0,
            dqpn: r.next() as u32 & QPN_MASK,
            ackreq: r.next() & 1 != 0,
            psn: r.next() as u32 & PSN_MASK,
        },
        reth: i.reth.then(|| Reth {
            va: r.next(),
            rkey: r.next() as u32,
            len: r.next() as u32,
        }),
        aeth: i.aeth.then(|| Aeth {
            syndrome: r.next() as u8,
            msn: r.next() as u32 & 0xFF_FFFF,
        }),
        atomic: i.atomic.then(|| AtomicEth {
            va: r.next(),
            rkey: r.next() as u32,
            swap_add: r.next(),
            cmp: r.next(),
        }),
        atomic_ack: i.atomic_ack.then(|| r.next()),
        deth: i.deth.then(|| Deth {
            qkey: r.next() as u32,
            sqpn: r.next() as u32 & QPN_MASK,
        }),
        imm: i.imm.then(|| r.next() as u32),
        ieth: i.ieth.then(|| r.next() as u32),
    }
}

/// A whole UDP payload: headers, payload, pad, ICRC (for `ip`).
fn packet(h: &Hdr, payload: &[u8], ip: &IpInfo) -> Vec<u8> {
    let mut out = [0u8; MAX_HDR];
    let n = encode(h, payload.len(), &mut out).expect("encode");
    let pad = [0u8; 3];
    let pad = &pad[..usize::from(pad_for(payload.len()))];
    let mut p = out[..n].to_vec();
    p.extend_from_slice(payload);
    p.extend_from_slice(pad);
    let c = icrc(ip, &[&out[..n], payload, pad]);
    p.extend_from_slice(&c);
    p
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn ip4() -> IpInfo {
    IpInfo {
        src: v4([192, 168, 1, 2]),
        dst: v4([192, 168, 1, 3]),
        sport: 0xC123,
        dport: ROCE_PORT,
        flow: 0,
    }
}

fn ip6() -> IpInfo {
    IpInfo {
        src: "fe80::1:2".parse().unwrap(),
        dst: "2001:db8::77".parse().unwrap(),
        sport: 0xD00D,
        dport: ROCE_PORT,
        flow: 0x12345,
    }
}

#[test]
fn round_trip_every_opcode() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let mut n = 0;
    for o in valid_opcodes() {
        let i = op_info(o);
        let lens: &[usize] = if i.has_payload {
            &[0, 1, 2, 3, 4, 5, 255, 1024, 4093]
        } else {
            &[0]
        };
        for &len in lens {
            for _ in 0..4 {
                let h = random_hdr(&mut r, o);
                let payload = r.bytes(len);
                let p = packet(&h, &payload, &ip4());
                assert_eq!(p.len(), i.hdr_len + len + usize::from(pad_for(len)) + ICRC_LEN);
                let (d, pl) = decode(&p).expect("decode");
                let mut want = h;
                want.bth.pad = pad_for(len);
                assert_eq!(d, want, "opcode {o:#x} len {len}");
                assert_eq!(pl, &payload[..]);
                n += 1;
            }
        }
    }
    assert!(n > 37 * 4);
}

#[test]
fn encode_wire_layout() {
    // RDMA WRITE Only with Immediate: BTH, RETH, ImmDt, byte by byte.
    let h = Hdr {
        bth: Bth {
            opcode: op::RC_WRITE_ONLY_IMM,
            se: true,
            mig: false,
            pkey: 0xFFFF,
            fecn: false,
            becn: true,
            dqpn: 0x01_0203,
            ackreq: true,
            psn: 0xAB_CDEF,
            ..Bth::default()
        },
        reth: Some(Reth {
            va: 0x1122_3344_5566_7788,
            rkey: 0x99AA_BBCC,
            len: 5,
        }),
        imm: Some(0xDEAD_BEEF),
        ..Hdr::default()
    };
    let mut out = [0u8; MAX_HDR];
    let n = encode(&h, 5, &mut out).unwrap();
    assert_eq!(
        out[..n],
        [
            0x0b, 0xB0, 0xFF, 0xFF, 0x40, 0x01, 0x02, 0x03, 0x80, 0xAB, 0xCD, 0xEF, // BTH (pad 3)
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0, 0, 0, 5, // RETH
            0xDE, 0xAD, 0xBE, 0xEF, // ImmDt
        ]
    );
    // UD: DETH right after the BTH, then ImmDt; atomic ack: AETH then AtomicAckETH.
    let h = Hdr {
        bth: Bth {
            opcode: op::UD_SEND_ONLY_IMM,
            pkey: 0x8001,
            dqpn: 1,
            ..Bth::default()
        },
        deth: Some(Deth {
            qkey: 0x8001_1234,
            sqpn: 0xAB_CDEF,
        }),
        imm: Some(0x0102_0304),
        ..Hdr::default()
    };
    let n = encode(&h, 4, &mut out).unwrap();
    assert_eq!(out[12..n], [0x80, 0x01, 0x12, 0x34, 0x00, 0xAB, 0xCD, 0xEF, 1, 2, 3, 4]);
    let h = Hdr {
        bth: Bth {
            opcode: op::RC_ATOMIC_ACK,
            ..Bth::default()
        },
        aeth: Some(Aeth::ack(0x12_3456)),
        atomic_ack: Some(0x0102_0304_0506_0708),
        ..Hdr::default()
    };
    let n = encode(&h, 0, &mut out).unwrap();
    assert_eq!(out[12..n], [0x1f, 0x12, 0x34, 0x56, 1, 2, 3, 4, 5, 6, 7, 8]);
    let h = Hdr {
        bth: Bth {
            opcode: op::RC_CMP_SWAP,
            ..Bth::default()
        },
        atomic: Some(AtomicEth {
            va: 1,
            rkey: 2,
            swap_add: 3,
            cmp: 4,
        }),
        ..Hdr::default()
    };
    let n = encode(&h, 0, &mut out).unwrap();
    assert_eq!(n, 40);
    assert_eq!(
        out[12..40],
        [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4]
    );
}

#[test]
fn encode_refuses_mismatched_headers() {
    let mut r = Rng(99);
    let mut out = [0u8; MAX_HDR];
    for o in valid_opcodes() {
        let good = random_hdr(&mut r, o);
        assert!(encode(&good, 0, &mut out).is_ok());
        // Toggle each extension header in turn: present <-> absent.
        let toggles: [fn(&mut Hdr); 7] = [
            |h| h.reth = if h.reth.is_some() { None } else { Some(Reth::default()) },
            |h| h.aeth = if h.aeth.is_some() { None } else { Some(Aeth::default()) },
            |h| {
                h.atomic = if h.atomic.is_some() {
                    None
                } else {
                    Some(AtomicEth::default())
                }
            },
            |h| h.atomic_ack = if h.atomic_ack.is_some() { None } else { Some(0) },
            |h| h.deth = if h.deth.is_some() { None } else { Some(Deth::default()) },
            |h| h.imm = if h.imm.is_some() { None } else { Some(0) },
            |h| h.ieth = if h.ieth.is_some() { None } else { Some(0) },
        ];
        for t in toggles {
            let mut h = good;
            t(&mut h);
            let e = encode(&h, 0, &mut out).unwrap_err();
            assert!(matches!(e, Error::MissingHeader | Error::ExtraHeader), "{o:#x}: {e:?}");
        }
        if !op_info(o).has_payload {
            assert_eq!(encode(&good, 1, &mut out), Err(Error::Payload));
        }
        let mut h = good;
        h.bth.psn = 1 << 24;
        assert_eq!(encode(&h, 0, &mut out), Err(Error::Field));
        let mut h = good;
        h.bth.dqpn = 1 << 24;
        assert_eq!(encode(&h, 0, &mut out), Err(Error::Field));
    }
    let h = Hdr {
        bth: Bth {
            opcode: 0x15,
            ..Bth::default()
        },
        ..Hdr::default()
    };
    assert_eq!(encode(&h, 0, &mut out), Err(Error::Opcode(0x15)));
}

#[test]
fn decode_rejects_bad_input() {
    let mut r = Rng(5);
    for o in 0..=255u8 {
        let mut p = vec![0u8; 64];
        p[0] = o;
        if !op_info(o).valid {
            assert_eq!(decode(&p).unwrap_err(), Error::Opcode(o));
        }
    }
    for o in valid_opcodes() {
        let i = op_info(o);
        let h = random_hdr(&mut r, o);
        let len = if i.has_payload { 7 } else { 0 };
        let p = packet(&h, &r.bytes(len), &ip6());
        assert!(decode(&p).is_ok());
        // Every truncation.
        for cut in 0..p.len() {
            let e = decode(&p[..cut]);
            if i.has_payload && cut >= i.hdr_len + usize::from(pad_for(len)) + ICRC_LEN && cut.is_multiple_of(4) {
                assert!(e.is_ok()); // a shorter payload: the engine checks lengths
            } else {
                assert!(
                    matches!(e, Err(Error::Short | Error::Payload | Error::Length)),
                    "{o:#x} cut {cut}: {e:?}"
                );
            }
        }
        // TVer.
        let mut q = p.clone();
        q[1] |= 0x01;
        assert_eq!(decode(&q).unwrap_err(), Error::TVer(1));
        // Trailing bytes on an opcode without payload, or a pad count.
        if !i.has_payload {
            let mut q = p.clone();
            q.push(0);
            assert_eq!(decode(&q).unwrap_err(), Error::Payload);
            let mut q = p.clone();
            q[1] |= 0x10;
            assert!(decode(&q).is_err());
        }
    }
    // A pad count larger than the payload.
    let h = random_hdr(&mut r, op::RC_SEND_ONLY);
    let mut p = packet(&h, &[], &ip4());
    p[1] |= 0x30;
    assert_eq!(decode(&p).unwrap_err(), Error::Short);
}

/// Header bytes compared with reserved fields cleared.
fn clear_reserved(o: u8, h: &mut [u8]) {
    h[4] &= 0xC0; // resv6
    h[8] &= 0x80; // resv7
    if op_info(o).deth {
        h[BTH_LEN + 4] = 0; // DETH reserved byte
    }
}

#[test]
fn random_bytes_never_panic_and_decode_reencodes() {
    let mut r = Rng(0xfeed_f00d);
    let mut ok = 0usize;
    let valid = valid_opcodes();
    for round in 0..300_000 {
        let len = r.below(96) as usize;
        let mut p = r.bytes(len);
        if round % 2 == 0 && len > 0 {
            // Bias towards valid opcodes and TVer 0 so that decode gets further.
            p[0] = valid[r.below(valid.len() as u64) as usize];
            if len > 1 {
                p[1] &= 0xF0;
            }
        }
        let ip = if round % 3 == 0 { ip6() } else { ip4() };
        let _ = icrc_ok(&ip, &p);
        let _ = icrc_ipv4_ident(&ip, &p);
        if let Ok((h, pl)) = decode(&p) {
            ok += 1;
            let mut out = [0u8; MAX_HDR];
            let n = encode(&h, pl.len(), &mut out).expect("re-encode");
            let mut a = p[..n].to_vec();
            clear_reserved(p[0], &mut a);
            assert_eq!(&a[..], &out[..n]);
            assert_eq!(pl, &p[n..n + pl.len()]);
            assert_eq!(n + pl.len() + usize::from(h.bth.pad) + ICRC_LEN, p.len());
        }
    }
    assert!(ok > 10_000, "only {ok} decodable inputs");
}

// ---------------------------------------------------------------- ICRC

/// Bit-at-a-time CRC-32 (no tables), register started at all ones.
fn crc_ref(data: &[u8]) -> u32 {
    let mut reg = !0u32;
    for &b in data {
        reg ^= u32::from(b);
        for _ in 0..8 {
            reg = if reg & 1 != 0 {
                (reg >> 1) ^ 0xEDB8_8320
            } else {
                reg >> 1
            };
        }
    }
    reg
}

/// IPv4 header with every field explicit (checksum computed).
fn ipv4_header(tos: u8, id: u16, frag: u16, ttl: u8, src: [u8; 4], dst: [u8; 4], udp_payload: usize) -> [u8; 20] {
    let tot = (20 + 8 + udp_payload) as u16;
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&tot.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6..8].copy_from_slice(&frag.to_be_bytes());
    h[8] = ttl;
    h[9] = 17;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let mut s = 0u32;
    for w in h.chunks(2) {
        s += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    h[10..12].copy_from_slice(&(!(s as u16)).to_be_bytes());
    h
}

/// Reference ICRC from the real IP and UDP headers of a datagram, masking
/// by position as IBTA A17.8.1 says; returns the wire bytes.
fn icrc_ref(ip_hdr: &[u8], udp_hdr: &[u8; 8], udp_payload_without_icrc: &[u8]) -> [u8; 4] {
    let mut m = vec![0xFFu8; 8];
    let mut iph = ip_hdr.to_vec();
    if iph[0] >> 4 == 4 {
        iph[1] = 0xFF; // TOS
        iph[8] = 0xFF; // TTL
        iph[10] = 0xFF; // header checksum
        iph[11] = 0xFF;
    } else {
        iph[0] |= 0x0F; // traffic class, flow label
        iph[1] = 0xFF;
        iph[2] = 0xFF;
        iph[3] = 0xFF;
        iph[7] = 0xFF; // hop limit
    }
    m.extend_from_slice(&iph);
    let mut u = *udp_hdr;
    u[6] = 0xFF;
    u[7] = 0xFF;
    m.extend_from_slice(&u);
    let mut b = udp_payload_without_icrc.to_vec();
    b[4] = 0xFF;
    m.extend_from_slice(&b);
    (!crc_ref(&m)).to_le_bytes()
}

fn udp_header(sport: u16, dport: u16, udp_payload: usize, check: u16) -> [u8; 8] {
    let mut u = [0u8; 8];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&((8 + udp_payload) as u16).to_be_bytes());
    u[6..8].copy_from_slice(&check.to_be_bytes());
    u
}

#[test]
fn seed_is_rxe_constant() {
    // rxe starts its CRC from 0xdebb20e3: the register after 8 bytes of 0xFF.
    assert_eq!(icrc::SEED, 0xDEBB_20E3);
    assert_eq!(crc_ref(&[0xFF; 8]), 0xDEBB_20E3);
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A CNP (opcode 0x81) captured on a Mellanox ConnectX-4 Lx, as published in
/// scapy's test suite (secdev/scapy, test/contrib/roce.uts, "RoCE CNP
/// captured on ConnectX-4 Lx"): Ethernet frame, IPv4 with identification
/// 0x718c and DF, ICRC 82 fd 00 2a on the wire.
#[test]
fn vector_connectx4_cnp_capture() {
    let frame = hex("e41d2dab2bc2 7cfe90643b32 0800 \
         45c2003c718c400040119161 0a001101 0a001201 \
         000012b700280000 \
         8100ffff40000118 00000000 00000000000000000000000000000000 \
         82fd002a");
    let iph = &frame[14..34];
    let udp: [u8; 8] = frame[34..42].try_into().unwrap();
    let payload = &frame[42..];
    assert_eq!(payload.len(), 40 - 8);
    let ip = IpInfo {
        src: v4([10, 0, 17, 1]),
        dst: v4([10, 0, 18, 1]),
        sport: 0,
        dport: ROCE_PORT,
        flow: 0,
    };
    // The reference (masking the captured header by position) agrees with the NIC.
    assert_eq!(
        icrc_ref(iph, &udp, &payload[..payload.len() - 4]),
        [0x82, 0xfd, 0x00, 0x2a]
    );
    // The closed-form search accepts it and finds the identification and DF.
    assert!(icrc_ok(&ip, payload));
    assert_eq!(icrc_ipv4_ident(&ip, payload), Some((0x718c, true)));
    // Our GRH with that identification is the captured IPv4 header, checksum included.
    let g = grh_ident(ip.src, ip.dst, 0xc2, 0x40, payload.len(), 0x718c, true);
    assert_eq!(g[..20], [0u8; 20]);
    assert_eq!(&g[20..], iph);
    // One flipped bit (outside BTH byte 4) is refused.
    let mut bad = payload.to_vec();
    bad[20] ^= 0x08;
    assert!(!icrc_ok(&ip, &bad));
    // CNP is not in the opcode table.
    assert_eq!(decode(payload).unwrap_err(), Error::Opcode(op::CNP));
}

/// A UC SEND Only packet from scapy's test suite (secdev/scapy,
/// test/contrib/roce.uts, "RoCE layer": IPv4 192.168.0.7 -> 192.168.0.7,
/// TOS 1, identification 1144, DF, TTL 64, UDP 49152 -> 4791, MigReq, pad 2,
/// DQPN 211, PSN 13571856), whose ICRC scapy computes as 0x78f353f3 (wire
/// bytes 78 f3 53 f3).
#[test]
fn vector_scapy_uc_send_only() {
    let mut udp_payload = hex("2460ffff000000d300cf1710");
    udp_payload.extend_from_slice(b"F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P\x00\x00");
    udp_payload.extend_from_slice(&[0x78, 0xf3, 0x53, 0xf3]);
    assert_eq!(udp_payload.len(), 36);
    let ip = IpInfo {
        src: v4([192, 168, 0, 7]),
        dst: v4([192, 168, 0, 7]),
        sport: 49152,
        dport: ROCE_PORT,
        flow: 0,
    };
    let iph = ipv4_header(1, 1144, 0x4000, 64, [192, 168, 0, 7], [192, 168, 0, 7], 36);
    assert_eq!(u16::from_be_bytes([iph[10], iph[11]]), 0xb4d5); // the checksum scapy's test expects
    let udp = udp_header(49152, ROCE_PORT, 36, 0xaca2);
    assert_eq!(icrc_ref(&iph, &udp, &udp_payload[..32]), [0x78, 0xf3, 0x53, 0xf3]);
    assert!(icrc_ok(&ip, &udp_payload));
    assert_eq!(icrc_ipv4_ident(&ip, &udp_payload), Some((1144, true)));
    let (h, pl) = decode(&udp_payload).unwrap();
    assert_eq!(h.bth.opcode, op::UC_SEND_ONLY);
    assert!(h.bth.mig && !h.bth.se && !h.bth.ackreq);
    assert_eq!(
        (h.bth.pad, h.bth.pkey, h.bth.dqpn, h.bth.psn),
        (2, 0xFFFF, 211, 13_571_856)
    );
    assert_eq!(pl.len(), 18);
}

#[test]
fn icrc_is_what_we_send_and_parts_split_anywhere() {
    let mut r = Rng(42);
    for round in 0..200 {
        let ops = valid_opcodes();
        let o = ops[r.below(ops.len() as u64) as usize];
        let h = random_hdr(&mut r, o);
        let len = if op_info(o).has_payload {
            r.below(300) as usize
        } else {
            0
        };
        let payload = r.bytes(len);
        let ip = if round % 2 == 0 { ip4() } else { ip6() };
        let p = packet(&h, &payload, &ip);
        let body = &p[..p.len() - 4];
        // As one part, and cut in three anywhere (even inside the BTH).
        assert_eq!(icrc(&ip, &[body]), p[p.len() - 4..]);
        let a = r.below(body.len() as u64 + 1) as usize;
        let b = a + r.below((body.len() - a) as u64 + 1) as usize;
        assert_eq!(icrc(&ip, &[&body[..a], &body[a..b], &body[b..]]), p[p.len() - 4..]);
        // Against the reference over the real headers the kernel would send
        // (IPv4: id 0, DF; arbitrary TOS/TTL/checksums, which are masked).
        let udp = udp_header(ip.sport, ip.dport, p.len(), r.next() as u16);
        let want = match (ip.src, ip.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let iph = ipv4_header(
                    r.next() as u8,
                    0,
                    0x4000,
                    r.next() as u8,
                    s.octets(),
                    d.octets(),
                    p.len(),
                );
                icrc_ref(&iph, &udp, body)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let mut iph = vec![
                    0x60 | (r.next() as u8 & 0xF),
                    r.next() as u8,
                    r.next() as u8,
                    r.next() as u8,
                ];
                iph.extend_from_slice(&((8 + p.len()) as u16).to_be_bytes());
                iph.extend_from_slice(&[17, r.next() as u8]);
                iph.extend_from_slice(&s.octets());
                iph.extend_from_slice(&d.octets());
                icrc_ref(&iph, &udp, body)
            }
            _ => unreachable!(),
        };
        assert_eq!(want, p[p.len() - 4..]);
        assert!(icrc_ok(&ip, &p));
        // FECN/BECN/resv6 are masked: any value of BTH byte 4 passes.
        let mut q = p.clone();
        q[4] ^= (r.next() as u8) | 1;
        assert!(icrc_ok(&ip, &q));
    }
}

/// IPv4 datagrams with any identification and DF value, ICRC made by the
/// reference over the explicit header: the closed form accepts them and
/// finds the identification and DF bit.
#[test]
fn ipv4_any_ident_accepted_and_found() {
    let mut r = Rng(0xabcdef);
    let ops = valid_opcodes();
    for round in 0..400 {
        let o = ops[r.below(ops.len() as u64) as usize];
        let h = random_hdr(&mut r, o);
        let len = if op_info(o).has_payload {
            r.below(4200) as usize
        } else {
            0
        };
        let payload = r.bytes(len);
        let ip = IpInfo {
            src: v4(r.next().to_be_bytes()[..4].try_into().unwrap()),
            dst: v4(r.next().to_be_bytes()[..4].try_into().unwrap()),
            sport: r.next() as u16,
            dport: ROCE_PORT,
            flow: 0,
        };
        let mut p = packet(&h, &payload, &ip);
        let n = p.len();
        let id = match round {
            0 => 0,
            1 => 0xFFFF,
            _ => r.next() as u16,
        };
        let df = r.next() & 1 != 0;
        let iph = ipv4_header(
            r.next() as u8,
            id,
            if df { 0x4000 } else { 0 },
            64,
            ip_octets(ip.src),
            ip_octets(ip.dst),
            n,
        );
        let c = icrc_ref(&iph, &udp_header(ip.sport, ip.dport, n, 0), &p[..n - 4]);
        assert_eq!(icrc_ident(&ip, &[&p[..n - 4]], id, df), c);
        p[n - 4..].copy_from_slice(&c);
        assert!(icrc_ok(&ip, &p), "round {round}");
        assert_eq!(icrc_ipv4_ident(&ip, &p), Some((id, df)), "round {round}");
        // The same bytes as IPv4-mapped IPv6 addresses are the same IPv4 datagram.
        let mapped = IpInfo {
            src: as_mapped(ip.src),
            dst: as_mapped(ip.dst),
            ..ip
        };
        assert!(icrc_ok(&mapped, &p));
        // As IPv6 it is a different datagram.
        let other = IpInfo { src: ip6().src, ..ip };
        assert!(!icrc_ok(&other, &p));
        // A different port is refused.
        let other = IpInfo {
            sport: ip.sport ^ 1,
            ..ip
        };
        assert!(!icrc_ok(&other, &p));
    }
}

fn ip_octets(a: IpAddr) -> [u8; 4] {
    match a {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(_) => unreachable!(),
    }
}

fn as_mapped(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V4(a) => IpAddr::V6(a.to_ipv6_mapped()),
        b => b,
    }
}

/// One flipped bit anywhere in the UDP payload (outside BTH byte 4) is
/// refused: always for IPv6; for IPv4, where 17 bits of the ICRC are spent
/// on the unknown identification and DF, a flip that passes must be a real
/// CRC collision (some other identification/DF makes the ICRC match), and
/// those are rare (2^-15 expected).
#[test]
fn flipped_bits_are_refused() {
    let mut r = Rng(77);
    let ops = valid_opcodes();
    let (mut flips, mut collisions) = (0usize, 0usize);
    for round in 0..60 {
        let o = ops[r.below(ops.len() as u64) as usize];
        let h = random_hdr(&mut r, o);
        let len = if op_info(o).has_payload {
            r.below(200) as usize
        } else {
            0
        };
        let payload = r.bytes(len);
        let ip = if round % 2 == 0 { ip4() } else { ip6() };
        let p = packet(&h, &payload, &ip);
        for byte in 0..p.len() {
            if byte == 4 {
                continue;
            }
            for bit in 0..8 {
                let mut q = p.clone();
                q[byte] ^= 1 << bit;
                flips += 1;
                if icrc_ok(&ip, &q) {
                    assert!(round % 2 == 0, "IPv6 accepted a flipped bit at {byte}.{bit}");
                    // A genuine collision: verify it with the reference.
                    let (id, df) = icrc_ipv4_ident(&ip, &q).unwrap();
                    assert_ne!((id, df), (0, true));
                    let n = q.len();
                    let iph = ipv4_header(
                        0,
                        id,
                        if df { 0x4000 } else { 0 },
                        1,
                        ip_octets(ip.src),
                        ip_octets(ip.dst),
                        n,
                    );
                    let c = icrc_ref(&iph, &udp_header(ip.sport, ip.dport, n, 0), &q[..n - 4]);
                    assert_eq!(c, q[n - 4..]);
                    collisions += 1;
                    eprintln!("collision: len {} byte {byte} bit {bit} id {id:#x} df {df}", q.len());
                }
            }
        }
    }
    assert!(flips > 20_000);
    assert!(collisions * 2000 < flips, "{collisions} collisions in {flips} flips");
    eprintln!("flipped bits: {flips}, IPv4 collisions: {collisions}");
}

// ---------------------------------------------------------------- GRH

#[test]
fn grh_layout() {
    let g = grh(v4([10, 1, 2, 3]), v4([10, 4, 5, 6]), 0x12, 33, 100);
    assert_eq!(g[..20], [0u8; 20]);
    let h = &g[20..];
    assert_eq!(h[0], 0x45);
    assert_eq!(h[1], 0x12);
    assert_eq!(u16::from_be_bytes([h[2], h[3]]), 128);
    assert_eq!(h[4..8], [0, 0, 0x40, 0]);
    assert_eq!((h[8], h[9]), (33, 17));
    assert_eq!(h[12..20], [10, 1, 2, 3, 10, 4, 5, 6]);
    assert_eq!(
        h,
        &ipv4_header(0x12, 0, 0x4000, 33, [10, 1, 2, 3], [10, 4, 5, 6], 100)[..]
    );
    // IPv4-mapped addresses give the IPv4 form.
    let m = grh(
        as_mapped(v4([10, 1, 2, 3])),
        as_mapped(v4([10, 4, 5, 6])),
        0x12,
        33,
        100,
    );
    assert_eq!(m, g);

    let s: Ipv6Addr = "fe80::1".parse().unwrap();
    let d: Ipv6Addr = "fe80::2".parse().unwrap();
    let g = grh(IpAddr::V6(s), IpAddr::V6(d), 0xAB, 64, 1000);
    assert_eq!(g[..8], [0x6A, 0xB0, 0, 0, 0x03, 0xF0, 17, 64]);
    assert_eq!(g[8..24], s.octets());
    assert_eq!(g[24..40], d.octets());
}

// ---------------------------------------------------------------- rxe captures

/// Checks one captured Ethernet frame carrying a RoCE v2 IPv4 packet: the
/// ICRC passes and its identification/DF are found, the IPv4 header is the
/// one `grh_ident` builds, the packet decodes and re-encodes to its bytes.
fn check_ipv4_frame(frame: &[u8]) -> Hdr {
    assert_eq!(frame[12..14], [0x08, 0x00]);
    let iph = &frame[14..34];
    assert_eq!(iph[0], 0x45);
    let udp = &frame[34..42];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    let pkt = &frame[42..34 + udp_len];
    let ip = IpInfo {
        src: v4(iph[12..16].try_into().unwrap()),
        dst: v4(iph[16..20].try_into().unwrap()),
        sport: u16::from_be_bytes([udp[0], udp[1]]),
        dport: u16::from_be_bytes([udp[2], udp[3]]),
        flow: 0,
    };
    assert_eq!(ip.dport, ROCE_PORT);
    let id = u16::from_be_bytes([iph[4], iph[5]]);
    let df = iph[6] & 0x40 != 0;
    let udp_hdr: [u8; 8] = udp.try_into().unwrap();
    assert_eq!(icrc_ref(iph, &udp_hdr, &pkt[..pkt.len() - 4]), pkt[pkt.len() - 4..]);
    assert_eq!(icrc_ident(&ip, &[&pkt[..pkt.len() - 4]], id, df), pkt[pkt.len() - 4..]);
    assert!(icrc_ok(&ip, pkt));
    assert_eq!(icrc_ipv4_ident(&ip, pkt), Some((id, df)));
    let g = grh_ident(ip.src, ip.dst, iph[1], iph[8], pkt.len(), id, df);
    assert_eq!(&g[20..], iph);
    let (h, payload) = decode(pkt).expect("decode");
    let mut out = [0u8; MAX_HDR];
    let n = encode(&h, payload.len(), &mut out).unwrap();
    assert_eq!(out[..n], pkt[..n]);
    let mut bad = pkt.to_vec();
    let last = bad.len() - 5;
    bad[last] ^= 0x01;
    assert!(!icrc_ok(&ip, &bad));
    h
}

/// As [`check_ipv4_frame`] for IPv6: the ICRC passes exactly, the IPv6
/// header is the one `grh` builds (when the flow label is 0).
fn check_ipv6_frame(frame: &[u8]) -> Hdr {
    assert_eq!(frame[12..14], [0x86, 0xdd]);
    let iph = &frame[14..54];
    assert_eq!((iph[0] >> 4, iph[6]), (6, 17));
    let udp = &frame[54..62];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    let pkt = &frame[62..54 + udp_len];
    let src: [u8; 16] = iph[8..24].try_into().unwrap();
    let dst: [u8; 16] = iph[24..40].try_into().unwrap();
    let ip = IpInfo {
        src: IpAddr::V6(Ipv6Addr::from(src)),
        dst: IpAddr::V6(Ipv6Addr::from(dst)),
        sport: u16::from_be_bytes([udp[0], udp[1]]),
        dport: u16::from_be_bytes([udp[2], udp[3]]),
        flow: 0,
    };
    assert_eq!(ip.dport, ROCE_PORT);
    let udp_hdr: [u8; 8] = udp.try_into().unwrap();
    assert_eq!(icrc_ref(iph, &udp_hdr, &pkt[..pkt.len() - 4]), pkt[pkt.len() - 4..]);
    assert!(icrc_ok(&ip, pkt));
    assert_eq!(icrc(&ip, &[&pkt[..pkt.len() - 4]]), pkt[pkt.len() - 4..]);
    let tclass = (iph[0] << 4) | (iph[1] >> 4);
    let flow = u32::from_be_bytes([0, iph[1] & 0x0f, iph[2], iph[3]]);
    if flow == 0 {
        assert_eq!(&grh(ip.src, ip.dst, tclass, iph[7], pkt.len())[..], iph);
    }
    let (h, payload) = decode(pkt).expect("decode");
    let mut out = [0u8; MAX_HDR];
    let n = encode(&h, payload.len(), &mut out).unwrap();
    assert_eq!(out[..n], pkt[..n]);
    for byte in (0..pkt.len()).filter(|&b| b != 4) {
        let mut bad = pkt.to_vec();
        bad[byte] ^= 0x10;
        assert!(!icrc_ok(&ip, &bad), "flip at {byte}");
    }
    h
}

/// RoCE v2 frames (Ethernet) sent by the Linux kernel's Soft-RoCE driver
/// (rxe of Debian bookworm's 6.1 kernel) between rxe0 and rxe1 in the
/// project's VM (compat-tests/vm), captured on veth1 with an AF_PACKET
/// socket by capture-rxe-guest.sh while ibv_rc_pingpong and ibv_ud_pingpong
/// ran over IPv4 (192.0.2.1/2) and IPv6 (2001:db8::1/2): RC SEND Only, RC
/// ACK and UD SEND Only, the shortest capture of each.  rxe numbers its
/// IPv4 datagrams with hashed identifications (__ip_select_ident), sets DF
/// and leaves the UDP checksum 0.
const RXE_IPV4: &[&str] = &[
    // opcode 0x04, 158 bytes
    concat!(
        "0a5b51ca555c3efecdad1b4d080045000090086440004011adf5c0000202c0000201c12112b7007c00000400ffff0000",
        "001180e0ed567b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b8155453c",
    ),
    // opcode 0x11, 62 bytes
    concat!(
        "3efecdad1b4d0a5b51ca555c0800450000307de84000401138d1c0000201c0000202c12112b7001c00001100ffff0000",
        "001100e0ed561f0000014c224df6",
    ),
    // opcode 0x64, 166 bytes
    concat!(
        "0a5b51ca555c3efecdad1b4d0800450000980c6140004011a9f0c0000202c0000201f80612b7008400006410ffff0000",
        "00120094e49d11111111000000127b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b00c2cbc044",
    ),
];
const RXE_IPV6: &[&str] = &[
    // opcode 0x04, 178 bytes
    concat!(
        "0a5b51ca555c3efecdad1b4d86dd60000000007c114020010db800000000000000000000000220010db8000000000000",
        "000000000001c16912b7007c00000400ffff00000013802b4dbf7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b568d3cbf",
    ),
    // opcode 0x11, 82 bytes
    concat!(
        "3efecdad1b4d0a5b51ca555c86dd60000000001c114020010db800000000000000000000000120010db8000000000000",
        "000000000002c16912b7001c00001100ffff00000013002b4dbf1f00000149ba0592",
    ),
    // opcode 0x64, 186 bytes
    concat!(
        "0a5b51ca555c3efecdad1b4d86dd600000000084114020010db800000000000000000000000220010db8000000000000",
        "000000000001e8ea12b7008400006410ffff00000014009b080e11111111000000147b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b",
        "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b001f01a4a9",
    ),
];

#[test]
fn rxe_captured_ipv4_frames() {
    let mut ops: Vec<u8> = RXE_IPV4.iter().map(|f| check_ipv4_frame(&hex(f)).bth.opcode).collect();
    ops.sort_unstable();
    assert_eq!(ops, [op::RC_SEND_ONLY, op::RC_ACK, op::UD_SEND_ONLY]);
}

#[test]
fn rxe_captured_ipv6_frames() {
    let mut ops: Vec<u8> = RXE_IPV6.iter().map(|f| check_ipv6_frame(&hex(f)).bth.opcode).collect();
    ops.sort_unstable();
    assert_eq!(ops, [op::RC_SEND_ONLY, op::RC_ACK, op::UD_SEND_ONLY]);
}

// ---------------------------------------------------------------- path MTU

#[test]
fn payload_fits_the_path_mtu_as_rxe_checks_it() {
    let only = op_info(op::RC_SEND_ONLY);
    let first = op_info(op::RC_SEND_FIRST);
    let middle = op_info(op::RC_SEND_MIDDLE);
    let last = op_info(op::RC_SEND_LAST);
    let wfirst = op_info(0x06);
    for pmtu in [256u32, 1024, 4096] {
        let m = pmtu as usize;
        assert!(payload_fits(&only, 0, pmtu) && payload_fits(&only, m, pmtu));
        assert!(!payload_fits(&only, m + 1, pmtu) && !payload_fits(&only, 4097, pmtu));
        for f in [first, middle, wfirst] {
            assert!(payload_fits(&f, m, pmtu));
            assert!(!payload_fits(&f, m - 1, pmtu) && !payload_fits(&f, m + 4, pmtu) && !payload_fits(&f, 0, pmtu));
        }
        assert!(payload_fits(&last, 1, pmtu) && payload_fits(&last, m, pmtu));
        assert!(!payload_fits(&last, 0, pmtu) && !payload_fits(&last, m + 1, pmtu));
    }
    // Packets that are no part of a request message are not its business.
    assert!(payload_fits(&op_info(op::RC_ACK), 0, 256));
}

/// The identification solved from packets whose lengths come back after
/// others (the solver keeps the last few lengths' bases): each is the one
/// the ICRC was computed with, whatever came between.
#[test]
fn ipv4_ident_solved_across_returning_lengths() {
    let ip = IpInfo {
        src: IpAddr::V4(Ipv4Addr::new(169, 254, 25, 2)),
        dst: IpAddr::V4(Ipv4Addr::new(169, 254, 25, 1)),
        sport: 0xc123,
        dport: ROCE_PORT,
        flow: 0,
    };
    let lens = [4112usize, 4128, 4112, 1036, 300, 64, 28, 4112, 1036, 4128, 64];
    for (i, &n) in lens.iter().enumerate() {
        let mut p: Vec<u8> = (0..n).map(|j| (j * 31 + i) as u8).collect();
        let id = (i as u16).wrapping_mul(7919).wrapping_add(1);
        let c = icrc_ident(&ip, &[&p[..n - 4]], id, true);
        p[n - 4..].copy_from_slice(&c);
        assert_eq!(icrc_ipv4_ident(&ip, &p), Some((id, true)), "packet {i} of {n} bytes");
    }
}
