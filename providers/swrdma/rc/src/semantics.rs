//! The engine's semantics, row by row (see the table in lib.rs): requests
//! and responses fed in, what the engine answers and completes checked —
//! no process, socket or thread.

use crate::budget::{Budget, RNR_INFINITE};
use crate::completer::{nak_status, place_atomic, place_read};
use crate::fault::{Fault, NAK_INVALID_REQUEST, NAK_REMOTE_ACCESS, NAK_REMOTE_OPERATIONAL};
use crate::keys::{Keys, MrEnt, WindowBind};
use crate::memory::{gather, scatter, Atomic};
use crate::op::Op;
use crate::qpstate::{intake, takes_responses, Intake};
use crate::recv::{accept, grh, l3_type, ud_udp_len, Completion, GidKind};
use crate::responder::{AtomicHistory, ReadHistory, ReadRes, Target};
use crate::tests::{mr, FakeMem};
use crate::timers::{ack_timeout_ns, give_up_ns, rnr_timer_ns};
use ibverbs_abi::*;

const BASE: u64 = 0x10_000;
const RW: u32 = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
const QP_ALL: u32 = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/// `Keys::check_local` as comparable values: Ok(translated?) or the status.
fn cl(keys: &Keys, pd: u32, list: &[ibv_sge], write: bool) -> Result<bool, u32> {
    keys.check_local(pd, list, write).map(|t| t.is_some())
}

fn sge(addr: u64, length: u32, lkey: u32) -> ibv_sge {
    ibv_sge { addr, length, lkey }
}

/// A context with one MR (key 0x100, PD 1) over the whole fake memory.
fn setup(access: u32) -> (FakeMem, Keys) {
    let mem = FakeMem::new(BASE, 256);
    let mut keys = Keys::default();
    keys.insert(0x100, mr(1, BASE, 256, access));
    (mem, keys)
}

fn target(keys: &Keys, qp_access: u32) -> Target<'_> {
    Target {
        qpn: 7,
        pd: 1,
        qp_access,
        keys,
    }
}

// ---- memory keys ----------------------------------------------------------

#[test]
fn grant_checks_pd_rights_and_range() {
    let (_, keys) = setup(IBV_ACCESS_REMOTE_READ);
    assert_eq!(keys.grant(7, 1, 0x100, BASE, 256, IBV_ACCESS_REMOTE_READ), Some(BASE));
    assert_eq!(
        keys.grant(7, 2, 0x100, BASE, 8, IBV_ACCESS_REMOTE_READ),
        None,
        "another PD"
    );
    assert_eq!(
        keys.grant(7, 1, 0x100, BASE, 8, IBV_ACCESS_REMOTE_WRITE),
        None,
        "no such right"
    );
    assert_eq!(
        keys.grant(7, 1, 0x100, BASE + 250, 8, IBV_ACCESS_REMOTE_READ),
        None,
        "past the end"
    );
    assert_eq!(
        keys.grant(7, 1, 0x100, BASE - 1, 8, IBV_ACCESS_REMOTE_READ),
        None,
        "before the start"
    );
    assert_eq!(
        keys.grant(7, 1, 0x100, u64::MAX - 2, 8, IBV_ACCESS_REMOTE_READ),
        None,
        "addr + len overflows"
    );
    assert_eq!(
        keys.grant(7, 1, 0x101, BASE, 8, IBV_ACCESS_REMOTE_READ),
        None,
        "unknown key"
    );
}

#[test]
fn iova_translates_to_the_process_address() {
    let mut keys = Keys::default();
    keys.insert(
        0x200,
        MrEnt {
            va: BASE,
            addr: 0,
            ..mr(1, 0, 64, RW)
        },
    );
    assert_eq!(keys.grant(7, 1, 0x200, 16, 8, IBV_ACCESS_REMOTE_WRITE), Some(BASE + 16));
    let out = keys.check_local(1, &[sge(8, 8, 0x200)], true).unwrap().unwrap();
    assert_eq!(out[0].addr, BASE + 8);
}

#[test]
fn check_local_rules() {
    let (_, mut keys) = setup(IBV_ACCESS_REMOTE_READ);
    keys.insert(0x300, mr(1, BASE, 256, IBV_ACCESS_LOCAL_WRITE));
    assert_eq!(cl(&keys, 1, &[sge(BASE, 8, 0x100)], false), Ok(false));
    assert_eq!(
        cl(&keys, 1, &[sge(BASE, 8, 0x100)], true),
        Err(IBV_WC_LOC_PROT_ERR),
        "no LOCAL_WRITE"
    );
    assert_eq!(cl(&keys, 1, &[sge(BASE, 8, 0x300)], true), Ok(false));
    assert_eq!(
        cl(&keys, 2, &[sge(BASE, 8, 0x300)], true),
        Err(IBV_WC_LOC_PROT_ERR),
        "PD"
    );
    assert_eq!(
        cl(&keys, 1, &[sge(BASE + 250, 8, 0x300)], true),
        Err(IBV_WC_LOC_PROT_ERR)
    );
    assert_eq!(
        cl(&keys, 1, &[sge(0, 0, 0xdead)], true),
        Ok(false),
        "zero-length SGE: no key"
    );
}

fn bind(ty: u32, old: u32, rkey: u32, access: u32, range: Option<(u32, u64, u64)>) -> WindowBind {
    WindowBind {
        ty,
        old,
        pd: 1,
        access,
        rkey,
        range,
    }
}

#[test]
fn windows_bind_grant_and_invalidate() {
    let (_, mut keys) = setup(RW | IBV_ACCESS_MW_BIND);
    let b = bind(
        IBV_MW_TYPE_2,
        0x500,
        0x42,
        IBV_ACCESS_REMOTE_WRITE,
        Some((0x100, BASE + 64, 32)),
    );
    let rkey = keys.bind_window(7, 1, &b).unwrap();
    assert_eq!(rkey, 0x542, "type 2: the consumer's 8-bit key");
    assert_eq!(
        keys.grant(7, 1, rkey, BASE + 64, 32, IBV_ACCESS_REMOTE_WRITE),
        Some(BASE + 64)
    );
    assert_eq!(
        keys.grant(8, 1, rkey, BASE + 64, 8, IBV_ACCESS_REMOTE_WRITE),
        None,
        "only through its QP"
    );
    assert_eq!(
        keys.grant(7, 1, rkey, BASE + 60, 8, IBV_ACCESS_REMOTE_WRITE),
        None,
        "outside the window"
    );
    assert_eq!(
        cl(&keys, 1, &[sge(BASE + 64, 8, rkey)], false),
        Err(IBV_WC_LOC_PROT_ERR),
        "a window is no lkey"
    );
    assert!(!keys.invalidate(rkey, 8), "remote invalidation through another QP");
    assert!(keys.invalidate(rkey, 7));
    assert_eq!(keys.grant(7, 1, rkey, BASE + 64, 8, IBV_ACCESS_REMOTE_WRITE), None);
    assert!(!keys.invalidate(rkey, 0), "already gone");
    assert!(!keys.invalidate(0x100, 0), "an MR is not invalidated");
}

#[test]
fn window_bind_errors() {
    let (_, mut keys) = setup(RW);
    let no_bind = bind(IBV_MW_TYPE_1, 0x500, 0, IBV_ACCESS_REMOTE_READ, Some((0x100, BASE, 8)));
    assert_eq!(
        keys.bind_window(7, 1, &no_bind),
        Err(IBV_WC_MW_BIND_ERR),
        "MR without MW_BIND"
    );
    keys.insert(0x600, mr(1, BASE, 256, IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ));
    let write = bind(IBV_MW_TYPE_1, 0x500, 0, IBV_ACCESS_REMOTE_WRITE, Some((0x600, BASE, 8)));
    assert_eq!(
        keys.bind_window(7, 1, &write),
        Err(IBV_WC_MW_BIND_ERR),
        "REMOTE_WRITE on an MR without LOCAL_WRITE"
    );
    let outside = bind(
        IBV_MW_TYPE_1,
        0x500,
        0,
        IBV_ACCESS_REMOTE_READ,
        Some((0x600, BASE + 250, 8)),
    );
    assert_eq!(keys.bind_window(7, 1, &outside), Err(IBV_WC_MW_BIND_ERR));
    let bits = bind(IBV_MW_TYPE_1, 0x500, 0, IBV_ACCESS_MW_BIND, Some((0x600, BASE, 8)));
    assert_eq!(
        keys.bind_window(7, 1, &bits),
        Err(IBV_WC_MW_BIND_ERR),
        "zero-based / bind rights refused"
    );
    let other_pd = bind(IBV_MW_TYPE_2, 0x500, 1, IBV_ACCESS_REMOTE_READ, Some((0x600, BASE, 8)));
    assert_eq!(
        keys.bind_window(7, 2, &other_pd),
        Err(IBV_WC_MW_BIND_ERR),
        "type 2: QP of another PD"
    );
    let ok = bind(IBV_MW_TYPE_1, 0x500, 0, IBV_ACCESS_REMOTE_READ, Some((0x600, BASE, 8)));
    let k1 = keys.bind_window(7, 1, &ok).unwrap();
    assert_eq!(k1, 0x501, "type 1: the next 8-bit key");
    let unbind = bind(IBV_MW_TYPE_1, k1, 0, 0, None);
    assert_eq!(keys.bind_window(7, 1, &unbind), Ok(0x502));
    assert_eq!(keys.grant(7, 1, k1, BASE, 8, IBV_ACCESS_REMOTE_READ), None, "unbound");
}

#[test]
fn window_dies_with_its_mr() {
    let (_, mut keys) = setup(RW | IBV_ACCESS_MW_BIND);
    let b = bind(IBV_MW_TYPE_1, 0x500, 0, IBV_ACCESS_REMOTE_READ, Some((0x100, BASE, 8)));
    let k = keys.bind_window(7, 1, &b).unwrap();
    assert!(keys.grant(7, 1, k, BASE, 8, IBV_ACCESS_REMOTE_READ).is_some());
    keys.remove(0x100);
    assert_eq!(keys.grant(7, 1, k, BASE, 8, IBV_ACCESS_REMOTE_READ), None);
}

// ---- responder: checks in order, execution, error classes ---------------

#[test]
fn responder_check_order() {
    let (_, keys) = setup(RW);
    let none = target(&keys, 0);
    // 1. the QP's rights come first: even a zero-length access needs them;
    // an operation the QP does not enable is an invalid request (as rxe)
    assert_eq!(none.check(Op::Write, 0, 0, 0), Err(Fault::InvalidRequest));
    assert_eq!(none.check(Op::FetchAdd, 0x100, BASE + 4, 8), Err(Fault::InvalidRequest));
    assert_eq!(none.check(Op::Read, 0x100, BASE, 8), Err(Fault::InvalidRequest));
    let rd = target(&keys, IBV_ACCESS_REMOTE_READ);
    assert_eq!(rd.enabled(Op::Write), Err(Fault::InvalidRequest));
    assert_eq!(rd.enabled(Op::Read), Ok(()));
    assert_eq!(rd.enabled(Op::Send), Ok(()), "SEND needs no right");
    assert_eq!(rd.check(Op::Write, 0x100, BASE, 8), Err(Fault::InvalidRequest));
    assert_eq!(rd.check(Op::AtomicWrite, 0x100, BASE, 8), Err(Fault::InvalidRequest));
    assert_eq!(rd.check(Op::CmpSwap, 0x100, BASE, 8), Err(Fault::InvalidRequest));
    assert_eq!(rd.check(Op::Read, 0x100, BASE, 8), Ok(Some(BASE)));
    let t = target(&keys, QP_ALL);
    // 2. an atomic's alignment, before its key
    assert_eq!(t.check(Op::FetchAdd, 0xbad, BASE + 4, 8), Err(Fault::InvalidRequest));
    assert_eq!(t.check(Op::AtomicWrite, 0x100, BASE + 4, 8), Err(Fault::InvalidRequest));
    // 3. C9-88: zero-length READ / WRITE check no key and no address
    assert_eq!(t.check(Op::Write, 0, 0, 0), Ok(None));
    assert_eq!(t.check(Op::Read, 0xbad, u64::MAX, 0), Ok(None));
    // 4. the key's grant
    assert_eq!(t.check(Op::Write, 0xbad, BASE, 8), Err(Fault::RemoteAccess));
    assert_eq!(t.check(Op::Write, 0x100, BASE, 8), Ok(Some(BASE)));
    assert_eq!(t.check(Op::CmpSwap, 0x100, BASE + 8, 8), Ok(Some(BASE + 8)));
}

#[test]
fn path_mtu_rules() {
    use crate::responder::{first_packet_fits, pmtu_bytes};
    assert_eq!([1, 2, 3, 4, 5].map(pmtu_bytes), [256, 512, 1024, 2048, 4096]);
    assert_eq!(pmtu_bytes(0), 4096, "not set: the largest");
    assert!(first_packet_fits(712, 1024, 1024));
    assert!(
        !first_packet_fits(712, 1024, 256),
        "one packet of 712 bytes for a 256-byte MTU"
    );
    assert!(first_packet_fits(712, 256, 256), "cut at 256: fits");
    assert!(first_packet_fits(200, 1024, 256), "short enough at any MTU");
    assert!(first_packet_fits(1 << 20, 0, 256), "sender's MTU not known: no check");
}

#[test]
fn key_rights_per_operation() {
    let (_, keys) = setup(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    let t = target(&keys, QP_ALL);
    assert!(t.check(Op::Read, 0x100, BASE, 8).is_ok());
    assert_eq!(t.check(Op::Write, 0x100, BASE, 8), Err(Fault::RemoteAccess));
    assert_eq!(t.check(Op::FetchAdd, 0x100, BASE, 8), Err(Fault::RemoteAccess));
}

#[test]
fn write_read_and_copy_failures() {
    let (mem, mut keys) = setup(RW);
    // An MR over memory the fake does not have (the owner unmapped it).
    keys.insert(0x700, mr(1, BASE + 4096, 64, RW));
    let t = target(&keys, QP_ALL);
    assert_eq!(t.write(&mem, 0x100, BASE + 10, b"hello"), Ok(()));
    let mut out = [0u8; 5];
    assert_eq!(t.read(&mem, 0x100, BASE + 10, &mut out), Ok(()));
    assert_eq!(&out, b"hello");
    assert_eq!(t.write(&mem, 0x700, BASE + 4096, b"x"), Err(Fault::RemoteAccess));
    assert_eq!(t.read(&mem, 0x700, BASE + 4096, &mut out), Err(Fault::RemoteAccess));
    assert_eq!(t.write(&mem, 0, 0, b""), Ok(()), "zero length: nothing touched");
}

#[test]
fn atomics_execute_once() {
    let (mem, keys) = setup(RW);
    let t = target(&keys, QP_ALL);
    assert_eq!(t.atomic(&mem, Op::FetchAdd, 0x100, BASE + 8, Atomic::Add(5)), Ok(0));
    assert_eq!(t.atomic(&mem, Op::FetchAdd, 0x100, BASE + 8, Atomic::Add(5)), Ok(5));
    assert_eq!(
        t.atomic(&mem, Op::CmpSwap, 0x100, BASE + 8, Atomic::Cas(1, 9)),
        Ok(10),
        "no match: unchanged"
    );
    assert_eq!(t.atomic(&mem, Op::CmpSwap, 0x100, BASE + 8, Atomic::Cas(10, 9)), Ok(10));
    assert_eq!(
        t.atomic(&mem, Op::AtomicWrite, 0x100, BASE + 8, Atomic::Store(77)),
        Ok(9)
    );
    assert_eq!(t.atomic(&mem, Op::FetchAdd, 0x100, BASE + 8, Atomic::Add(0)), Ok(77));
    assert_eq!(
        t.atomic(&mem, Op::FetchAdd, 0x100, BASE + 12, Atomic::Add(1)),
        Err(Fault::InvalidRequest)
    );
    assert_eq!(
        t.atomic(&mem, Op::FetchAdd, 0x100, BASE + 256, Atomic::Add(1)),
        Err(Fault::RemoteAccess)
    );
}

#[test]
fn error_classes_one_table() {
    let rows = [
        (
            Fault::InvalidRequest,
            NAK_INVALID_REQUEST,
            IBV_WC_REM_INV_REQ_ERR,
            Some(IBV_EVENT_QP_REQ_ERR),
        ),
        (
            Fault::RemoteAccess,
            NAK_REMOTE_ACCESS,
            IBV_WC_REM_ACCESS_ERR,
            Some(IBV_EVENT_QP_ACCESS_ERR),
        ),
        (
            Fault::RemoteOperational,
            NAK_REMOTE_OPERATIONAL,
            IBV_WC_REM_OP_ERR,
            None,
        ),
        (Fault::ReceiveTooLong, NAK_INVALID_REQUEST, IBV_WC_REM_INV_REQ_ERR, None),
        (
            Fault::BadInvalidation,
            NAK_INVALID_REQUEST,
            IBV_WC_REM_INV_REQ_ERR,
            None,
        ),
    ];
    for (f, code, status, ev) in rows {
        assert_eq!(f.nak_code(), code, "{f:?}");
        assert_eq!(f.requester_status(), status, "{f:?}");
        assert_eq!(
            nak_status(f.nak_code()),
            status,
            "{f:?}: the wire says the same as the ring"
        );
        assert_eq!(f.async_event(), ev, "{f:?}");
    }
    assert_eq!(nak_status(4), IBV_WC_REM_INV_RD_REQ_ERR);
    // a WRITE with immediate's receive, taken before the fault was found
    assert_eq!(Fault::RemoteAccess.imm_receive_status(), IBV_WC_REM_ACCESS_ERR);
    assert_eq!(Fault::InvalidRequest.imm_receive_status(), IBV_WC_REM_INV_REQ_ERR);
    assert_eq!(Fault::of_receive(IBV_WC_SUCCESS), None);
    assert_eq!(Fault::of_receive(IBV_WC_LOC_PROT_ERR), Some(Fault::RemoteOperational));
    assert_eq!(Fault::of_receive(IBV_WC_LOC_LEN_ERR), Some(Fault::ReceiveTooLong));
    assert_eq!(Fault::of_receive(IBV_WC_REM_INV_REQ_ERR), Some(Fault::BadInvalidation));
}

#[test]
fn duplicate_atomics_replay_the_saved_result() {
    let mut h = AtomicHistory::default();
    for psn in 0..40 {
        h.save(psn, 1000 + psn as u64, 0);
    }
    assert_eq!(h.replay(39), Some(1039));
    assert_eq!(h.replay(8), Some(1008), "32 kept");
    assert_eq!(
        h.replay(7),
        None,
        "older than what is kept: dropped, never executed again"
    );
    h.save(39, 5, 0);
    assert_eq!(h.replay(39), Some(5), "the latest result for a PSN");
    let mut big = AtomicHistory::default();
    for psn in 0..100 {
        big.save(psn, psn as u64, 64);
    }
    assert_eq!(big.replay(36), Some(36), "max_dest_rd_atomic 64 keeps 64");
    assert_eq!(big.replay(35), None);
}

#[test]
fn duplicate_reads_only_from_saved_reads() {
    let mut h = ReadHistory::default();
    let r = ReadRes {
        psn: 100,
        npkts: 4,
        va: BASE,
        rkey: 0x100,
        len: 4000,
    };
    h.save(r, 0);
    // the whole READ again, or its rest from packet 2
    assert_eq!(h.replay(100, BASE, 4000, 1024), Some(r));
    let rest = h.replay(102, BASE + 2048, 4000 - 2048, 1024).unwrap();
    assert_eq!(
        (rest.psn, rest.npkts, rest.va, rest.len, rest.rkey),
        (102, 2, BASE + 2048, 1952, 0x100)
    );
    // anything else is dropped: another range, a PSN no READ had
    assert_eq!(h.replay(100, BASE + 8, 4000, 1024), None);
    assert_eq!(h.replay(100, BASE, 1 << 30, 1024), None, "no amplification");
    assert_eq!(h.replay(104, BASE + 4096, 0, 1024), None);
    assert_eq!(h.replay(99, BASE, 4000, 1024), None);
    // PSNs wrap at 24 bits
    let w = ReadRes {
        psn: 0xff_ffff,
        npkts: 2,
        va: BASE,
        rkey: 1,
        len: 2048,
    };
    h.save(w, 0);
    assert!(h.replay(0, BASE + 1024, 1024, 1024).is_some());
    // bounded
    for i in 0..20 {
        h.save(ReadRes { psn: 1000 + i, ..r }, 0);
    }
    assert_eq!(h.replay(100, BASE, 4000, 1024), None, "evicted");
}

// ---- receive placement and completions --------------------------------

#[test]
fn send_payload_across_sges_and_completion() {
    let (mem, keys) = setup(RW);
    let list = vec![sge(BASE, 4, 0x100), sge(BASE + 100, 8, 0x100)];
    let mut r = accept(&keys, 1, 42, list, "cq");
    r.place(&mem, 0, b"abc");
    r.place(&mem, 3, b"defghi");
    let c = Completion {
        qpn: 7,
        src_qp: 9,
        opcode: IBV_WC_RECV,
        len: 9,
        imm: Some(0x1234_5678),
        inv: None,
    };
    let (wc, cq) = r.complete(&c, &mut |_, _| panic!("no invalidation asked"));
    assert_eq!(cq, "cq");
    assert_eq!(
        (wc.wr_id, wc.status, wc.byte_len, wc.qp_num, wc.src_qp),
        (42, 0, 9, 7, 9)
    );
    assert_eq!(wc.opcode, IBV_WC_RECV);
    assert_eq!(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
    // SAFETY: the union's imm_data member was written.
    assert_eq!(unsafe { wc.imm.imm_data }, 0x1234_5678);
    let b = mem.bytes.borrow();
    assert_eq!(&b[0..4], b"abcd");
    assert_eq!(&b[100..105], b"efghi");
}

#[test]
fn too_long_and_bad_lists() {
    let (mem, keys) = setup(RW);
    let mut r = accept(&keys, 1, 1, vec![sge(BASE, 4, 0x100)], ());
    r.place(&mem, 0, b"abcdef");
    let c = Completion {
        qpn: 7,
        src_qp: 9,
        opcode: IBV_WC_RECV,
        len: 6,
        imm: None,
        inv: Some(0x542),
    };
    let (wc, _) = r.complete(&c, &mut |_, _| panic!("a failed receive invalidates nothing"));
    assert_eq!(wc.status, IBV_WC_LOC_LEN_ERR);
    assert_eq!(Fault::of_receive(wc.status), Some(Fault::ReceiveTooLong));
    // a list with a bad lkey: LOC_PROT_ERR, nothing placed
    let mut r = accept(&keys, 1, 2, vec![sge(BASE + 200, 4, 0x999)], ());
    r.place(&mem, 0, b"zz");
    let (wc, _) = r.complete(&c, &mut |_, _| true);
    assert_eq!(wc.status, IBV_WC_LOC_PROT_ERR);
    assert_eq!(&mem.bytes.borrow()[200..202], &[0, 0]);
    // another PD's MR
    let r = accept(&keys, 2, 3, vec![sge(BASE, 4, 0x100)], ());
    assert_eq!(r.err, IBV_WC_LOC_PROT_ERR);
}

#[test]
fn send_with_invalidate() {
    let (_, keys) = setup(RW);
    let c = Completion {
        qpn: 7,
        src_qp: 9,
        opcode: IBV_WC_RECV,
        len: 0,
        imm: None,
        inv: Some(0x542),
    };
    let r = accept(&keys, 1, 1, vec![], ());
    let mut asked = None;
    let (wc, _) = r.complete(&c, &mut |k, q| {
        asked = Some((k, q));
        true
    });
    assert_eq!(asked, Some((0x542, 7)), "invalidated through the receiving QP");
    assert_eq!(wc.status, 0);
    assert_eq!(wc.wc_flags & IBV_WC_WITH_INV, IBV_WC_WITH_INV);
    // SAFETY: the union's invalidated_rkey member was written.
    assert_eq!(unsafe { wc.imm.invalidated_rkey }, 0x542);
    let r = accept(&keys, 1, 1, vec![], ());
    let (wc, _) = r.complete(&c, &mut |_, _| false);
    assert_eq!(wc.status, IBV_WC_REM_INV_REQ_ERR);
    assert_eq!(Fault::of_receive(wc.status), Some(Fault::BadInvalidation));
}

#[test]
fn ud_receive_has_the_grh_first() {
    let (mem, keys) = setup(RW);
    let mut r = accept(&keys, 1, 5, vec![sge(BASE, 64, 0x100)], ());
    let v4 = |d: u8| {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&[169, 254, 0, d]);
        g
    };
    let g = grh(GidKind::RoceV2, &v4(1), &v4(2), 0, 64, 5, false);
    r.place_grh(&mem, &g);
    r.place(&mem, 0, b"hello");
    let c = Completion {
        qpn: 7,
        src_qp: 3,
        opcode: IBV_WC_RECV,
        len: 5,
        imm: None,
        inv: None,
    };
    let (wc, _) = r.complete(&c, &mut |_, _| false);
    assert_eq!(wc.byte_len, 45, "the GRH area counts");
    assert_eq!(wc.wc_flags & IBV_WC_GRH, IBV_WC_GRH);
    assert_eq!(wc.sl, 2, "sl: the GRH area holds an IPv4 header (as mlx5 reports it)");
    let b = mem.bytes.borrow();
    assert_eq!(&b[40..45], b"hello");
    assert_eq!(b[20], 0x45, "IPv4 header in the last 20 bytes");
    assert_eq!(b[29], 17, "UDP");
    assert_eq!(&b[32..36], &[169, 254, 0, 1]);
    assert_eq!(&b[36..40], &[169, 254, 0, 2]);
    drop(b);
    // a GRH that does not fit: LOC_LEN_ERR
    let mut r = accept(&keys, 1, 6, vec![sge(BASE, 16, 0x100)], ());
    r.place_grh(&mem, &g);
    let (wc, _) = r.complete(&c, &mut |_, _| false);
    assert_eq!(wc.status, IBV_WC_LOC_LEN_ERR);
}

#[test]
fn grh_layouts() {
    let s6: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0xff, 0xfe, 0, 0, 1];
    let d6: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0xff, 0xfe, 0, 0, 2];
    let v2 = grh(GidKind::RoceV2, &s6, &d6, 0x20, 64, 100, true);
    assert_eq!(v2[0] >> 4, 6, "IPv6");
    assert_eq!(v2[6], 17, "next header UDP");
    assert_eq!(v2[7], 64);
    assert_eq!(&v2[8..24], &s6);
    assert_eq!(&v2[24..40], &d6);
    assert_eq!(u16::from_be_bytes([v2[4], v2[5]]) as usize, 8 + ud_udp_len(100, true));
    let v1 = grh(GidKind::RoceV1, &s6, &d6, 0, 64, 100, false);
    assert_eq!(v1[6], 0x1b, "next header: the BTH");
    assert_eq!(&v1[24..40], &d6, "the destination GID at byte 24");
    assert_eq!((l3_type(&v1), l3_type(&v2)), (0, 1), "sl: GRH 0, IPv6 1");
    let mut m4 = [0u8; 16];
    m4[10] = 0xff;
    m4[11] = 0xff;
    m4[12..].copy_from_slice(&[127, 0, 0, 1]);
    let v4 = grh(GidKind::RoceV2, &m4, &m4, 0x20, 64, 100, false);
    assert_eq!(&v4[..20], &[0; 20]);
    assert_eq!((v4[20], v4[21]), (0x45, 0x20), "IPv4 header, TOS the traffic class");
    assert_eq!(l3_type(&v4), 2, "sl: IPv4 2");
    assert_eq!(ud_udp_len(1, false), 12 + 8 + 1 + 3 + 4);
    assert_eq!(ud_udp_len(4, true), 12 + 8 + 4 + 4 + 4);
}

// ---- completer ---------------------------------------------------------

#[test]
fn read_responses_are_placed_where_they_belong() {
    let mem = FakeMem::new(BASE, 64);
    let list = [sge(BASE, 8, 1), sge(BASE + 32, 8, 1)];
    assert_eq!(place_read(&mem, &list, 16, 6, b"wxyz"), Ok(()));
    let b = mem.bytes.borrow().clone();
    assert_eq!(&b[6..8], b"wx");
    assert_eq!(&b[32..34], b"yz");
    assert_eq!(
        place_read(&mem, &list, 16, 14, b"abc"),
        Err(IBV_WC_LOC_LEN_ERR),
        "past the READ"
    );
    let gone = [sge(BASE + 4096, 8, 1)];
    assert_eq!(place_read(&mem, &gone, 8, 0, b"a"), Err(IBV_WC_LOC_PROT_ERR));
    assert_eq!(place_atomic(&mem, &[sge(BASE + 48, 8, 1)], 0x0102_0304), Ok(()));
    assert_eq!(&mem.bytes.borrow()[48..56], &0x0102_0304u64.to_ne_bytes());
    assert_eq!(place_atomic(&mem, &gone, 1), Err(IBV_WC_LOC_PROT_ERR));
}

#[test]
fn retry_budget_runs_out_after_retry_cnt() {
    let mut b = Budget::default();
    for _ in 0..3 {
        assert_eq!(b.timed_out(3, 14), Ok(ack_timeout_ns(14)));
    }
    assert_eq!(b.timed_out(3, 14), Err(IBV_WC_RETRY_EXC_ERR));
    b.refill();
    assert!(b.timed_out(3, 14).is_ok(), "progress fills it again");
    let mut z = Budget::default();
    assert_eq!(z.timed_out(0, 14), Err(IBV_WC_RETRY_EXC_ERR), "retry_cnt 0: no retry");
}

#[test]
fn rnr_budget_and_infinite_retry() {
    let mut b = Budget::default();
    assert_eq!(b.rnr_nak(2, 1), Ok(10_000));
    assert_eq!(b.rnr_nak(2, 31), Ok(491_520_000));
    assert_eq!(b.rnr_nak(2, 1), Err(IBV_WC_RNR_RETRY_EXC_ERR));
    let mut inf = Budget::default();
    for _ in 0..1000 {
        assert!(inf.rnr_nak(RNR_INFINITE, 0).is_ok());
    }
    // RNR NAKs and timeouts are counted apart
    let mut m = Budget::default();
    assert!(m.rnr_nak(1, 0).is_ok());
    assert!(m.timed_out(1, 0).is_ok());
    assert!(m.rnr_nak(1, 0).is_err());
    assert!(m.timed_out(1, 0).is_err());
}

#[test]
fn timer_tables() {
    assert_eq!(rnr_timer_ns(0), 655_360_000);
    assert_eq!(rnr_timer_ns(1), 10_000);
    assert_eq!(rnr_timer_ns(13), 960_000);
    assert_eq!(rnr_timer_ns(14), 1_280_000);
    assert_eq!(rnr_timer_ns(31), 491_520_000);
    assert_eq!(rnr_timer_ns(32 + 1), 10_000, "5 bits");
    assert_eq!(ack_timeout_ns(0), ack_timeout_ns(14), "0 waits as 14");
    assert_eq!(ack_timeout_ns(1), 8192);
    assert_eq!(ack_timeout_ns(31), ack_timeout_ns(20), "capped");
    assert_eq!(give_up_ns(31, 7), 2_000_000_000, "at most 2 s");
    assert_eq!(give_up_ns(1, 3), 4 * 8192);
}

// ---- QP states, operations, memory walks ---------------------------------

#[test]
fn qp_state_rules() {
    for s in [IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE] {
        assert_eq!(intake(s), Intake::Take, "state {s}");
    }
    assert_eq!(intake(IBV_QPS_RESET), Intake::NotReady);
    assert_eq!(intake(IBV_QPS_INIT), Intake::NotReady);
    assert_eq!(intake(IBV_QPS_ERR), Intake::Drop);
    assert!(takes_responses(IBV_QPS_RTS) && takes_responses(IBV_QPS_SQD) && takes_responses(IBV_QPS_SQE));
    assert!(!takes_responses(IBV_QPS_RTR) && !takes_responses(IBV_QPS_ERR) && !takes_responses(IBV_QPS_INIT));
}

#[test]
fn operations() {
    assert_eq!(Op::Send.remote_access(), 0);
    assert_eq!(Op::Write.remote_access(), IBV_ACCESS_REMOTE_WRITE);
    assert_eq!(Op::AtomicWrite.remote_access(), IBV_ACCESS_REMOTE_WRITE);
    assert_eq!(Op::Read.remote_access(), IBV_ACCESS_REMOTE_READ);
    assert_eq!(Op::CmpSwap.remote_access(), IBV_ACCESS_REMOTE_ATOMIC);
    assert!(Op::FetchAdd.is_atomic() && !Op::Read.is_atomic());
    assert!(Op::Read.has_response() && Op::CmpSwap.has_response() && !Op::Write.has_response());
    assert_eq!(Op::Read.wc_opcode(), IBV_WC_RDMA_READ);
    assert_eq!(Op::AtomicWrite.wc_opcode(), IBV_WC_ATOMIC_WRITE);
}

#[test]
fn scatter_gather_walk_the_list() {
    let mem = FakeMem::new(BASE, 32);
    let list = [sge(BASE, 2, 1), sge(BASE + 10, 3, 1), sge(BASE + 20, 4, 1)];
    assert!(scatter(&mem, &list, 1, b"abcdefg"));
    let mut out = [0u8; 7];
    assert!(gather(&mem, &list, 1, &mut out));
    assert_eq!(&out, b"abcdefg");
    assert!(
        !scatter(&mem, &list, 3, b"too long for the rest"),
        "the list is too short"
    );
    assert!(!gather(&mem, &[sge(BASE + 30, 8, 1)], 0, &mut out), "not mapped");
}
