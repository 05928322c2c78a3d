//! Receive WQEs: taken and checked, SEND data placed piece by piece (after
//! the GRH area on UD), completions (immediate data, invalidation, errors),
//! and the GRH a UD receive starts with.

use super::{ctx, mr, sge, sges, snapshot, FakeMem, Holed, Untouched, ALL, BASE};
use crate::fault::Fault;
use crate::keys::{Keys, MrEnt, WindowBind};
use crate::recv::{accept, gid_ip, grh, ud_udp_len, Completion, GidKind, Receive};
use ibverbs_abi::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn completion(len: u64) -> Completion {
    Completion {
        qpn: 7,
        src_qp: 9,
        opcode: IBV_WC_RECV,
        len,
        imm: None,
        inv: None,
    }
}

/// Completes `r` with an invalidation callback that must not be called.
fn complete_no_inv<C>(r: Receive<C>, c: &Completion) -> (ibv_wc, C) {
    r.complete(c, &mut |k, q| panic!("invalidation of {k:#x} through {q} asked"))
}

fn imm_data(wc: &ibv_wc) -> u32 {
    // SAFETY: both members of the union are a u32: any bits are valid.
    unsafe { wc.imm.imm_data }
}

fn invalidated_rkey(wc: &ibv_wc) -> u32 {
    // SAFETY: both members of the union are a u32: any bits are valid.
    unsafe { wc.imm.invalidated_rkey }
}

// ---- accept ----------------------------------------------------------------

#[test]
fn accept_a_good_list() {
    let (_, keys) = ctx(ALL);
    let list = vec![sge(BASE, 16, 0x100), sge(BASE + 64, 8, 0x100)];
    let r = accept(&keys, 1, 42, list.clone(), "cq");
    assert_eq!(r.err, 0);
    assert_eq!(sges(&r.sges), sges(&list), "no IOVA: the list as given");
    assert_eq!((r.wr_id, r.cq, r.base), (42, "cq", 0));
}

#[test]
fn accept_translates_an_iova_list() {
    let (_, mut keys) = ctx(ALL);
    keys.insert(
        0x200,
        MrEnt {
            va: BASE + 128,
            ..mr(1, 0x4000, 64, ALL)
        },
    );
    let r = accept(&keys, 1, 1, vec![sge(BASE, 4, 0x100), sge(0x4010, 4, 0x200)], ());
    assert_eq!(r.err, 0);
    assert_eq!(sges(&r.sges), vec![(BASE, 4, 0x100), (BASE + 144, 4, 0x200)]);
}

#[test]
fn a_receive_given_back_is_the_wqe_as_posted() {
    // (A message its requester aborted after its first fragment gives the
    // WQE it took back to its queue: to be checked and translated anew.)
    let (mem, mut keys) = ctx(ALL);
    keys.insert(
        0x200,
        MrEnt {
            va: BASE + 128,
            ..mr(1, 0x4000, 64, ALL)
        },
    );
    let posted = vec![sge(BASE, 4, 0x100), sge(0x4010, 4, 0x200)];
    let r = accept(&keys, 1, 5, posted.clone(), ());
    assert_ne!(sges(&r.sges), sges(&posted), "translated");
    let (wr_id, back) = r.posted();
    assert_eq!(
        (wr_id, sges(&back)),
        (5, sges(&posted)),
        "an IOVA list: as posted, not translated"
    );
    let plain = vec![sge(BASE, 16, 0x100)];
    let mut r = accept(&keys, 1, 6, plain.clone(), ());
    r.place(&mem, 0, b"partial");
    assert_eq!(&mem.bytes.borrow()[..7], b"partial");
    let (wr_id, back) = r.posted();
    assert_eq!(
        (wr_id, sges(&back)),
        (6, sges(&plain)),
        "a list without IOVA, data placed in it"
    );
    let bad = vec![sge(BASE, 8, 0x999)];
    let r = accept(&keys, 1, 7, bad.clone(), ());
    assert_eq!(r.err, IBV_WC_LOC_PROT_ERR);
    let (wr_id, back) = r.posted();
    assert_eq!(
        (wr_id, sges(&back)),
        (7, sges(&bad)),
        "a bad list: as posted (its error not kept)"
    );
}

#[test]
fn accept_a_bad_list_places_nothing() {
    let (_, mut keys) = ctx(ALL);
    keys.insert(0x300, mr(1, BASE, 256, IBV_ACCESS_REMOTE_READ));
    keys.insert(0x400, mr(2, BASE, 256, ALL));
    for (list, why) in [
        (vec![sge(BASE, 8, 0x999)], "unknown lkey"),
        (vec![sge(BASE, 8, 0x300)], "no LOCAL_WRITE"),
        (vec![sge(BASE, 8, 0x400)], "another PD"),
        (
            vec![sge(BASE, 8, 0x100), sge(BASE + 250, 8, 0x100)],
            "the second SGE past the end",
        ),
    ] {
        let mut r = accept(&keys, 1, 3, list, ());
        assert_eq!(r.err, IBV_WC_LOC_PROT_ERR, "{why}");
        r.place(&Untouched, 0, b"data");
        let (wc, ()) = complete_no_inv(r, &completion(4));
        assert_eq!(wc.status, IBV_WC_LOC_PROT_ERR, "{why}");
        assert_eq!(Fault::of_receive(wc.status), Some(Fault::RemoteOperational));
    }
}

// ---- placing SEND data -------------------------------------------------------

#[test]
fn place_in_pieces_across_sges() {
    let (mem, keys) = ctx(ALL);
    let list = vec![
        sge(BASE, 3, 0x100),
        sge(BASE + 100, 5, 0x100),
        sge(BASE + 200, 4, 0x100),
    ];
    let mut r = accept(&keys, 1, 1, list, ());
    // out of order, and each piece crossing an SGE boundary
    r.place(&mem, 7, b"hijkl");
    r.place(&mem, 0, b"ab");
    r.place(&mem, 2, b"cdefg");
    assert_eq!(r.err, 0);
    let mut want = vec![0u8; 256];
    want[0..3].copy_from_slice(b"abc");
    want[100..105].copy_from_slice(b"defgh");
    want[200..204].copy_from_slice(b"ijkl");
    assert_eq!(snapshot(&mem), want);
    let (wc, ()) = complete_no_inv(r, &completion(12));
    assert_eq!((wc.status, wc.byte_len), (0, 12));
}

#[test]
fn place_skips_zero_length_sges() {
    let (mem, keys) = ctx(ALL);
    let list = vec![sge(BASE, 2, 0x100), sge(0, 0, 0x999), sge(BASE + 10, 2, 0x100)];
    let mut r = accept(&keys, 1, 1, list, ());
    assert_eq!(r.err, 0);
    r.place(&mem, 0, b"wxyz");
    assert_eq!(r.err, 0);
    assert_eq!(&mem.bytes.borrow()[..12], b"wx\0\0\0\0\0\0\0\0yz");
}

#[test]
fn exactly_full_is_no_overflow() {
    let (mem, keys) = ctx(ALL);
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 4, 0x100), sge(BASE + 8, 4, 0x100)], ());
    r.place(&mem, 0, b"12345678");
    let (wc, ()) = complete_no_inv(r, &completion(8));
    assert_eq!(wc.status, IBV_WC_SUCCESS);
}

#[test]
fn overflow_is_loc_len_err_and_the_completion_carries_it() {
    let (mem, keys) = ctx(ALL);
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 4, 0x100), sge(BASE + 8, 4, 0x100)], ());
    r.place(&mem, 0, b"1234");
    r.place(&mem, 4, b"56789");
    assert_eq!(r.err, IBV_WC_LOC_LEN_ERR);
    let before = snapshot(&mem);
    r.place(&mem, 4, b"ab");
    assert_eq!(snapshot(&mem), before, "nothing placed after the error");
    assert_eq!(r.err, IBV_WC_LOC_LEN_ERR);
    let c = Completion {
        inv: Some(0x542),
        ..completion(9)
    };
    let (wc, ()) = complete_no_inv(r, &c);
    assert_eq!(wc.status, IBV_WC_LOC_LEN_ERR);
    assert_eq!(wc.byte_len, 9, "the message's length");
    assert_eq!(wc.wc_flags & IBV_WC_WITH_INV, 0);
    assert_eq!(Fault::of_receive(wc.status), Some(Fault::ReceiveTooLong));
}

#[test]
fn a_piece_wholly_past_the_list_is_an_overflow() {
    let (mem, keys) = ctx(ALL);
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 4, 0x100)], ());
    r.place(&mem, 4, b"x");
    assert_eq!(r.err, IBV_WC_LOC_LEN_ERR);
    assert_eq!(snapshot(&mem), vec![0; 256]);
}

#[test]
fn empty_pieces_are_no_overflow() {
    let (_, keys) = ctx(ALL);
    let mut r = accept(&keys, 1, 1, vec![], ());
    r.place(&Untouched, 0, b"");
    r.place(&Untouched, 1 << 40, b"");
    let (wc, ()) = complete_no_inv(r, &completion(0));
    assert_eq!(
        (wc.status, wc.byte_len),
        (0, 0),
        "a zero-length SEND into an empty receive"
    );
    let mut r = accept(&keys, 1, 1, vec![], ());
    r.place(&Untouched, 0, b"x");
    assert_eq!(r.err, IBV_WC_LOC_LEN_ERR, "one byte is too many");
}

/// A receive whose memory the owner no longer maps is a protection error,
/// as the completer says for a READ response (`place_read`: LOC_PROT_ERR)
/// and the responder for a WRITE (RemoteAccess): not a message too long
/// for its receive (which NAKs the requester with Invalid Request).
#[test]
fn unmapped_receive_memory_is_not_a_length_error() {
    let (_, keys) = ctx(ALL);
    let mem = Holed {
        mem: FakeMem::new(BASE, 256),
        hole: BASE..BASE + 256,
    };
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 16, 0x100)], ());
    r.place(&mem, 0, b"fits");
    assert_eq!(r.err, IBV_WC_LOC_PROT_ERR);
}

#[test]
fn unmapped_receive_memory_fails_the_receive() {
    let (_, keys) = ctx(ALL);
    let mem = Holed {
        mem: FakeMem::new(BASE, 256),
        hole: BASE + 8..BASE + 256,
    };
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 16, 0x100)], ());
    r.place(&mem, 0, b"ok");
    assert_eq!(r.err, 0);
    r.place(&mem, 8, b"gone");
    assert_ne!(r.err, 0, "the copy failed");
    let (wc, ()) = complete_no_inv(r, &completion(12));
    assert_ne!(wc.status, IBV_WC_SUCCESS);
}

// ---- completions ---------------------------------------------------------------

#[test]
fn the_completion_says_what_came() {
    let (_, keys) = ctx(ALL);
    let r = accept(&keys, 1, 0xfeed, vec![sge(BASE, 16, 0x100)], 5u8);
    let c = Completion {
        qpn: 0x12_3456,
        src_qp: 0xab_cdef,
        opcode: IBV_WC_RECV,
        len: 16,
        imm: None,
        inv: None,
    };
    let (wc, cq) = complete_no_inv(r, &c);
    assert_eq!(cq, 5, "the receive's CQ");
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.qp_num, wc.src_qp),
        (0xfeed, 0, IBV_WC_RECV, 16, 0x12_3456, 0xab_cdef)
    );
    assert_eq!(wc.wc_flags, 0, "no immediate, no invalidation, no GRH");
    assert_eq!(wc.vendor_err, 0);
}

#[test]
fn immediate_data_is_carried() {
    let (_, keys) = ctx(ALL);
    let r = accept(&keys, 1, 1, vec![], ());
    let c = Completion {
        opcode: IBV_WC_RECV_RDMA_WITH_IMM,
        imm: Some(0x1234_5678),
        ..completion(0)
    };
    let (wc, ()) = complete_no_inv(r, &c);
    assert_eq!(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    assert_eq!(wc.wc_flags, IBV_WC_WITH_IMM);
    assert_eq!(imm_data(&wc), 0x1234_5678);
    let r = accept(&keys, 1, 1, vec![], ());
    let c = Completion {
        imm: Some(0),
        ..completion(0)
    };
    let (wc, ()) = complete_no_inv(r, &c);
    assert_eq!(wc.wc_flags, IBV_WC_WITH_IMM, "immediate data 0 is still immediate data");
}

#[test]
fn immediate_data_is_carried_on_a_failed_receive_too() {
    let (_, keys) = ctx(ALL);
    let r = accept(&keys, 1, 1, vec![sge(BASE, 4, 0x999)], ());
    let c = Completion {
        imm: Some(7),
        ..completion(0)
    };
    let (wc, ()) = complete_no_inv(r, &c);
    assert_eq!(wc.status, IBV_WC_LOC_PROT_ERR);
    assert_eq!(imm_data(&wc), 7);
}

/// Keys with a type 2 window bound through QP 7 (rkey 0x542).
fn keys_with_window() -> Keys {
    let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
    let b = WindowBind {
        ty: IBV_MW_TYPE_2,
        old: 0x500,
        pd: 1,
        access: IBV_ACCESS_REMOTE_WRITE,
        rkey: 0x42,
        range: Some((0x100, BASE, 64)),
    };
    assert_eq!(keys.bind_window(7, 1, &b), Ok(0x542));
    keys
}

#[test]
fn send_with_invalidate_accepted() {
    let mut keys = keys_with_window();
    let r = accept(&keys, 1, 1, vec![sge(BASE + 128, 8, 0x100)], ());
    let c = Completion {
        inv: Some(0x542),
        ..completion(8)
    };
    let mut asked = Vec::new();
    let (wc, ()) = r.complete(&c, &mut |k, q| {
        asked.push((k, q));
        keys.invalidate(k, q)
    });
    assert_eq!(asked, vec![(0x542, 7)], "once, through the receiving QP");
    assert_eq!(wc.status, IBV_WC_SUCCESS);
    assert_eq!(wc.wc_flags, IBV_WC_WITH_INV);
    assert_eq!(invalidated_rkey(&wc), 0x542);
    assert_eq!(keys.get(0x542), None, "the window is gone");
}

#[test]
fn send_with_invalidate_refused() {
    let mut keys = keys_with_window();
    let r = accept(&keys, 1, 1, vec![sge(BASE + 128, 8, 0x100)], ());
    let c = Completion {
        qpn: 8,
        inv: Some(0x542),
        ..completion(8)
    };
    let (wc, ()) = r.complete(&c, &mut |k, q| keys.invalidate(k, q));
    assert_eq!(wc.status, IBV_WC_REM_INV_REQ_ERR, "the window is QP 7's");
    assert_eq!(wc.wc_flags & IBV_WC_WITH_INV, 0);
    assert_eq!(Fault::of_receive(wc.status), Some(Fault::BadInvalidation));
    assert!(keys.get(0x542).is_some(), "still bound");
    for bad in [0x100, 0x999] {
        let r = accept(&keys, 1, 1, vec![], ());
        let c = Completion {
            inv: Some(bad),
            ..completion(0)
        };
        let (wc, ()) = r.complete(&c, &mut |k, q| keys.invalidate(k, q));
        assert_eq!(wc.status, IBV_WC_REM_INV_REQ_ERR, "rkey {bad:#x}");
    }
    assert!(keys.get(0x100).is_some(), "an MR is not invalidated");
}

#[test]
fn no_invalidation_when_the_receive_already_failed() {
    let keys = keys_with_window();
    let c = Completion {
        inv: Some(0x542),
        ..completion(8)
    };
    // a bad list
    let r = accept(&keys, 1, 1, vec![sge(BASE, 8, 0x999)], ());
    let (wc, ()) = complete_no_inv(r, &c);
    assert_eq!(wc.status, IBV_WC_LOC_PROT_ERR, "its own status, not REM_INV_REQ_ERR");
    assert_eq!(wc.wc_flags & IBV_WC_WITH_INV, 0);
    // too long
    let mut r = accept(&keys, 1, 1, vec![sge(BASE + 128, 4, 0x100)], ());
    r.place(&FakeMem::new(BASE, 256), 0, b"12345678");
    let (wc, ()) = complete_no_inv(r, &c);
    assert_eq!(wc.status, IBV_WC_LOC_LEN_ERR);
    assert_eq!(wc.wc_flags & IBV_WC_WITH_INV, 0);
}

// ---- UD: the GRH area --------------------------------------------------------------

fn v4_gid(a: [u8; 4]) -> [u8; 16] {
    Ipv4Addr::from(a).to_ipv6_mapped().octets()
}

fn v6_gid(s: &str) -> [u8; 16] {
    s.parse::<Ipv6Addr>().unwrap().octets()
}

#[test]
fn ud_data_follows_the_grh_area() {
    let (mem, keys) = ctx(ALL);
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 40, 0x100), sge(BASE + 100, 8, 0x100)], ());
    let g: [u8; 40] = std::array::from_fn(|i| i as u8 + 1);
    r.place_grh(&mem, &g);
    assert_eq!(r.base, 40);
    r.place(&mem, 0, b"hel");
    r.place(&mem, 3, b"lo");
    let (wc, ()) = complete_no_inv(r, &completion(5));
    assert_eq!(wc.status, 0);
    assert_eq!(wc.byte_len, 45, "the 40 bytes of the GRH count");
    assert_eq!(wc.wc_flags, IBV_WC_GRH);
    let b = snapshot(&mem);
    assert_eq!(&b[..40], &g[..]);
    assert_eq!(&b[40..100], &[0; 60][..]);
    assert_eq!(&b[100..105], b"hello");
}

#[test]
fn ud_overflow_counts_the_grh_area() {
    let (mem, keys) = ctx(ALL);
    let g = [0xaa; 40];
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 50, 0x100)], ());
    r.place_grh(&mem, &g);
    r.place(&mem, 0, &[1; 10]);
    assert_eq!(r.err, 0, "40 + 10 fit");
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 50, 0x100)], ());
    r.place_grh(&mem, &g);
    r.place(&mem, 0, &[1; 11]);
    assert_eq!(r.err, IBV_WC_LOC_LEN_ERR, "40 + 11 do not");
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 39, 0x100)], ());
    r.place_grh(&mem, &g);
    assert_eq!(r.err, IBV_WC_LOC_LEN_ERR, "not even the GRH");
    let (wc, ()) = complete_no_inv(r, &completion(0));
    assert_eq!(
        (wc.status, wc.byte_len, wc.wc_flags),
        (IBV_WC_LOC_LEN_ERR, 40, IBV_WC_GRH)
    );
}

#[test]
fn ud_grh_on_a_bad_list_places_nothing() {
    let (_, keys) = ctx(ALL);
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 64, 0x999)], ());
    r.place_grh(&Untouched, &[0; 40]);
    r.place(&Untouched, 0, b"x");
    assert_eq!(r.err, IBV_WC_LOC_PROT_ERR);
}

#[test]
fn ipv4_mapped_gids_give_an_ipv4_header_in_the_last_20_bytes() {
    let (s, d) = (v4_gid([192, 168, 1, 2]), v4_gid([10, 0, 0, 9]));
    let g = grh(GidKind::RoceV2, &s, &d, 0x28, 33, 100, true);
    assert_eq!(&g[..20], &[0; 20], "the first 20 bytes are unused");
    let h = &g[20..];
    assert_eq!(h[0], 0x45, "version 4, IHL 5");
    assert_eq!(h[1], 0x28, "TOS: the traffic class");
    assert_eq!(
        u16::from_be_bytes([h[2], h[3]]) as usize,
        20 + 8 + ud_udp_len(100, true),
        "total length: IP + UDP + BTH..ICRC"
    );
    assert_eq!(h[8], 33, "TTL: the hop limit");
    assert_eq!(h[9], 17, "UDP");
    assert_eq!(&h[12..16], &[192, 168, 1, 2]);
    assert_eq!(&h[16..20], &[10, 0, 0, 9]);
    let mut sum: u32 = h.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    assert_eq!(sum, 0xffff, "the header checksum holds");
}

#[test]
fn ipv6_gids_give_an_ipv6_header() {
    let (s, d) = (v6_gid("fe80::1"), v6_gid("2001:db8::2"));
    let g = grh(GidKind::RoceV2, &s, &d, 0xab, 64, 5, false);
    assert_eq!(g[0] >> 4, 6, "version 6");
    assert_eq!((g[0] & 0xf, g[1] >> 4), (0xa, 0xb), "the traffic class");
    assert_eq!(
        u16::from_be_bytes([g[4], g[5]]) as usize,
        8 + ud_udp_len(5, false),
        "UDP + BTH..ICRC"
    );
    assert_eq!(g[6], 17, "next header: UDP");
    assert_eq!(g[7], 64, "hop limit");
    assert_eq!(&g[8..24], &s);
    assert_eq!(&g[24..40], &d);
}

#[test]
fn one_ipv6_gid_makes_it_ipv6() {
    let (s, d) = (v4_gid([10, 0, 0, 1]), v6_gid("fe80::2"));
    let g = grh(GidKind::RoceV2, &s, &d, 0, 1, 0, false);
    assert_eq!(g[0] >> 4, 6);
    assert_eq!(&g[8..24], &s, "the mapped address as it is");
    assert_eq!(&g[24..40], &d);
}

#[test]
fn roce_v1_gives_an_ib_grh() {
    let (s, d) = (v6_gid("fe80::a"), v6_gid("fe80::b"));
    let g = grh(GidKind::RoceV1, &s, &d, 0x5c, 7, 9, true);
    assert_eq!((g[0], g[1]), (0x65, 0xc0), "IP version 6, traffic class 0x5c");
    assert_eq!((g[2], g[3]), (0, 0), "no flow label");
    assert_eq!(
        u16::from_be_bytes([g[4], g[5]]) as usize,
        ud_udp_len(9, true),
        "no UDP header"
    );
    assert_eq!(g[6], 0x1b, "next header: the BTH");
    assert_eq!(g[7], 7);
    assert_eq!(&g[8..24], &s);
    assert_eq!(&g[24..40], &d);
    // IPv4-mapped GIDs are GIDs to RoCE v1: no IPv4 header.
    let (s4, d4) = (v4_gid([10, 0, 0, 1]), v4_gid([10, 0, 0, 2]));
    let g = grh(GidKind::RoceV1, &s4, &d4, 0, 7, 9, true);
    assert_eq!(g[6], 0x1b);
    assert_eq!(&g[8..24], &s4);
    assert_eq!(&g[24..40], &d4);
}

#[test]
fn gid_ip_maps_only_ipv4_mapped_gids_to_ipv4() {
    assert_eq!(gid_ip(&v4_gid([1, 2, 3, 4])), IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4)));
    assert_eq!(gid_ip(&v6_gid("fe80::1")), IpAddr::V6("fe80::1".parse().unwrap()));
    assert_eq!(
        gid_ip(&v6_gid("::1.2.3.4")),
        IpAddr::V6("::1.2.3.4".parse().unwrap()),
        "IPv4-compatible is not IPv4-mapped"
    );
}

#[test]
fn ud_udp_len_pads_to_four() {
    // BTH 12 + DETH 8 + payload + pad + ICRC 4
    for (payload, want) in [
        (0, 24),
        (1, 28),
        (2, 28),
        (3, 28),
        (4, 28),
        (5, 32),
        (1024, 1048),
        (1025, 1052),
    ] {
        assert_eq!(ud_udp_len(payload, false), want, "payload {payload}");
        assert_eq!(
            ud_udp_len(payload, true),
            want + 4,
            "payload {payload} and immediate data"
        );
    }
}
