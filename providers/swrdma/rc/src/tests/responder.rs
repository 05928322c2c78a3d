//! The responder: its checks in order (QP rights, atomic alignment, C9-88
//! zero length, R_Key grant, the copy), RDMA WRITE / READ and atomics
//! executed, and the duplicate-request history of atomics and READs.

use super::{ctx, mr, qp, snapshot, Holed, Strict, Untouched, ALL, BASE, QP_ALL};
use crate::fault::Fault;
use crate::keys::{Keys, MrEnt, WindowBind};
use crate::memory::{Atomic, Memory};
use crate::op::Op;
use crate::responder::{AtomicHistory, ReadHistory, ReadRes, Target};
use ibverbs_abi::*;

const R: u32 = IBV_ACCESS_REMOTE_READ;
const W: u32 = IBV_ACCESS_REMOTE_WRITE;
const A: u32 = IBV_ACCESS_REMOTE_ATOMIC;
const LW: u32 = IBV_ACCESS_LOCAL_WRITE;

const ATOMICS: [Op; 3] = [Op::CmpSwap, Op::FetchAdd, Op::AtomicWrite];
const REMOTE: [Op; 5] = [Op::Write, Op::Read, Op::CmpSwap, Op::FetchAdd, Op::AtomicWrite];

fn read_u64(mem: &impl Memory, a: u64) -> u64 {
    let mut b = [0u8; 8];
    assert!(mem.read(a, &mut b));
    u64::from_ne_bytes(b)
}

fn set_u64(mem: &impl Memory, a: u64, v: u64) {
    assert!(mem.write(a, &v.to_ne_bytes()));
}

// ---- 1. the QP's rights --------------------------------------------------

#[test]
fn each_operation_needs_its_right_on_the_qp() {
    let (_, keys) = ctx(ALL);
    for (qp_access, op, ok) in [
        (W, Op::Write, true),
        (R, Op::Write, false),
        (A, Op::Write, false),
        (R, Op::Read, true),
        (W, Op::Read, false),
        (A, Op::Read, false),
        (A, Op::CmpSwap, true),
        (A, Op::FetchAdd, true),
        (W | R, Op::CmpSwap, false),
        (W | R, Op::FetchAdd, false),
        (W, Op::AtomicWrite, true),
        (A, Op::AtomicWrite, false),
        (R, Op::AtomicWrite, false),
        (QP_ALL, Op::Write, true),
        (0, Op::Read, false),
    ] {
        let r = qp(&keys, qp_access).check(op, 0x100, BASE + 8, 8);
        if ok {
            assert_eq!(r, Ok(Some(BASE + 8)), "{op:?} on a QP with {qp_access:#x}");
        } else {
            assert_eq!(
                r,
                Err(Fault::InvalidRequest),
                "{op:?} on a QP with {qp_access:#x}: not enabled"
            );
        }
    }
}

#[test]
fn qp_rights_come_before_everything_else() {
    let (_, keys) = ctx(ALL);
    let none = qp(&keys, 0);
    for op in ATOMICS {
        assert_eq!(
            none.check(op, 0x999, BASE + 3, 8),
            Err(Fault::InvalidRequest),
            "{op:?}: misaligned with a bad key, but the QP's rights first"
        );
        assert_eq!(
            none.check(op, 0x999, BASE, 8),
            Err(Fault::InvalidRequest),
            "{op:?}: a bad key, but the QP's rights first"
        );
    }
    for op in [Op::Write, Op::Read] {
        assert_eq!(
            none.check(op, 0, 0, 0),
            Err(Fault::InvalidRequest),
            "{op:?}: even zero length"
        );
    }
}

// ---- 2. atomic alignment --------------------------------------------------

#[test]
fn a_misaligned_atomic_is_an_invalid_request_before_its_key() {
    let (_, keys) = ctx(ALL);
    let t = qp(&keys, QP_ALL);
    for op in ATOMICS {
        for off in 1..8 {
            assert_eq!(
                t.check(op, 0x100, BASE + off, 8),
                Err(Fault::InvalidRequest),
                "{op:?} +{off}"
            );
            assert_eq!(
                t.check(op, 0x999, BASE + off, 8),
                Err(Fault::InvalidRequest),
                "{op:?} +{off}, unknown key: alignment first"
            );
        }
        assert_eq!(t.check(op, 0x100, BASE + 16, 8), Ok(Some(BASE + 16)), "{op:?} aligned");
    }
}

#[test]
fn reads_and_writes_need_no_alignment() {
    let (_, keys) = ctx(ALL);
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.check(Op::Write, 0x100, BASE + 3, 5), Ok(Some(BASE + 3)));
    assert_eq!(t.check(Op::Read, 0x100, BASE + 1, 1), Ok(Some(BASE + 1)));
}

// ---- 3. C9-88: zero length ---------------------------------------------------

#[test]
fn zero_length_read_or_write_checks_no_key() {
    let (_, keys) = ctx(0);
    let t = qp(&keys, QP_ALL);
    for op in [Op::Write, Op::Read] {
        assert_eq!(t.check(op, 0, 0, 0), Ok(None), "{op:?}: UCX's flush, rkey 0 addr 0");
        assert_eq!(t.check(op, 0x999, u64::MAX, 0), Ok(None), "{op:?}: any key and address");
        assert_eq!(t.check(op, 0x100, BASE, 0), Ok(None), "{op:?}: an MR without the right");
    }
}

#[test]
fn zero_length_still_needs_the_qps_right() {
    let (_, keys) = ctx(ALL);
    assert_eq!(qp(&keys, R).check(Op::Write, 0, 0, 0), Err(Fault::InvalidRequest));
    assert_eq!(qp(&keys, W).check(Op::Read, 0, 0, 0), Err(Fault::InvalidRequest));
    assert_eq!(qp(&keys, W).check(Op::Write, 0, 0, 0), Ok(None));
    assert_eq!(qp(&keys, R).check(Op::Read, 0, 0, 0), Ok(None));
}

#[test]
fn an_atomic_is_eight_bytes_whatever_length_it_says() {
    let (_, keys) = ctx(ALL);
    let t = qp(&keys, QP_ALL);
    for op in ATOMICS {
        assert_eq!(t.check(op, 0x100, BASE, 0), Ok(Some(BASE)), "{op:?}: not C9-88");
        assert_eq!(t.check(op, 0, 0, 0), Err(Fault::RemoteAccess), "{op:?}: rkey 0 checked");
        assert_eq!(
            t.check(op, 0x100, BASE + 248, 1 << 20),
            Ok(Some(BASE + 248)),
            "{op:?}: the last 8"
        );
        assert_eq!(
            t.check(op, 0x100, BASE + 256, 0),
            Err(Fault::RemoteAccess),
            "{op:?}: past the end"
        );
    }
    // An MR whose last 8-aligned word is cut short.
    let mut keys = Keys::default();
    keys.insert(0x100, mr(1, BASE, 252, ALL));
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.check(Op::FetchAdd, 0x100, BASE + 248, 4), Err(Fault::RemoteAccess));
    assert_eq!(t.check(Op::FetchAdd, 0x100, BASE + 240, 8), Ok(Some(BASE + 240)));
}

// ---- 4. the R_Key's grant ----------------------------------------------------

#[test]
fn the_rkey_must_grant_the_right_over_the_range() {
    let (_, keys) = ctx(LW | R);
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.check(Op::Read, 0x100, BASE, 256), Ok(Some(BASE)));
    assert_eq!(t.check(Op::Read, 0x100, BASE, 257), Err(Fault::RemoteAccess), "range");
    assert_eq!(t.check(Op::Read, 0x100, BASE - 1, 1), Err(Fault::RemoteAccess), "range");
    assert_eq!(
        t.check(Op::Read, 0x101, BASE, 8),
        Err(Fault::RemoteAccess),
        "unknown key"
    );
    for op in [Op::Write, Op::CmpSwap, Op::FetchAdd, Op::AtomicWrite] {
        assert_eq!(
            t.check(op, 0x100, BASE, 8),
            Err(Fault::RemoteAccess),
            "{op:?}: the key's rights"
        );
    }
    let other_pd = Target {
        pd: 2,
        ..qp(&keys, QP_ALL)
    };
    assert_eq!(other_pd.check(Op::Read, 0x100, BASE, 8), Err(Fault::RemoteAccess), "PD");
}

#[test]
fn the_right_checked_on_the_key_is_the_operations() {
    for (key_access, op) in [
        (W, Op::Write),
        (R, Op::Read),
        (A, Op::CmpSwap),
        (A, Op::FetchAdd),
        (W, Op::AtomicWrite),
    ] {
        let (_, keys) = ctx(LW | key_access);
        let t = qp(&keys, QP_ALL);
        assert_eq!(t.check(op, 0x100, BASE, 8), Ok(Some(BASE)), "{op:?}");
        for other in REMOTE {
            if other.remote_access() != key_access {
                assert_eq!(
                    t.check(other, 0x100, BASE, 8),
                    Err(Fault::RemoteAccess),
                    "{other:?} with a key of {key_access:#x}"
                );
            }
        }
    }
}

#[test]
fn a_type_2_window_is_reached_only_through_its_qp() {
    let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
    let b = WindowBind {
        ty: IBV_MW_TYPE_2,
        old: 0x500,
        pd: 1,
        access: W,
        rkey: 1,
        range: Some((0x100, BASE + 64, 64)),
    };
    let k = keys.bind_window(7, 1, &b).unwrap();
    assert_eq!(qp(&keys, QP_ALL).check(Op::Write, k, BASE + 64, 8), Ok(Some(BASE + 64)));
    let other = Target {
        qpn: 8,
        ..qp(&keys, QP_ALL)
    };
    assert_eq!(other.check(Op::Write, k, BASE + 64, 8), Err(Fault::RemoteAccess));
}

#[test]
fn check_translates_an_iova_key() {
    let mut keys = Keys::default();
    keys.insert(
        0x200,
        MrEnt {
            va: BASE + 64,
            ..mr(1, 0x4000, 64, ALL)
        },
    );
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.check(Op::Write, 0x200, 0x4008, 8), Ok(Some(BASE + 72)));
    assert_eq!(t.check(Op::FetchAdd, 0x200, 0x4010, 8), Ok(Some(BASE + 80)));
    assert_eq!(t.check(Op::Write, 0x200, BASE + 64, 8), Err(Fault::RemoteAccess));
}

// ---- WRITE and READ -------------------------------------------------------------

#[test]
fn write_copies_exactly_the_data() {
    let (mem, keys) = ctx(ALL);
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.write(&mem, 0x100, BASE + 10, b"hello"), Ok(()));
    let mut want = vec![0u8; 256];
    want[10..15].copy_from_slice(b"hello");
    assert_eq!(snapshot(&mem), want);
    assert_eq!(
        t.write(&mem, 0x100, BASE + 251, b"tail!"),
        Ok(()),
        "up to the last byte"
    );
    want[251..].copy_from_slice(b"tail!");
    assert_eq!(snapshot(&mem), want);
}

#[test]
fn write_lands_at_the_process_address_of_an_iova() {
    let (mem, mut keys) = ctx(ALL);
    keys.insert(
        0x200,
        MrEnt {
            va: BASE + 128,
            ..mr(1, 0x4000, 128, ALL)
        },
    );
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.write(&mem, 0x200, 0x4004, b"xy"), Ok(()));
    assert_eq!(&mem.bytes.borrow()[132..134], b"xy");
    let mut out = [0u8; 2];
    assert_eq!(t.read(&mem, 0x200, 0x4004, &mut out), Ok(()));
    assert_eq!(&out, b"xy");
}

#[test]
fn read_copies_exactly_the_data() {
    let (mem, keys) = ctx(ALL);
    for (i, b) in mem.bytes.borrow_mut().iter_mut().enumerate() {
        *b = i as u8;
    }
    let t = qp(&keys, QP_ALL);
    let mut out = [0u8; 4];
    assert_eq!(t.read(&mem, 0x100, BASE + 100, &mut out), Ok(()));
    assert_eq!(out, [100, 101, 102, 103]);
    let mut last = [0u8; 3];
    assert_eq!(t.read(&mem, 0x100, BASE + 253, &mut last), Ok(()));
    assert_eq!(last, [253, 254, 255]);
}

#[test]
fn a_refused_write_or_read_touches_nothing() {
    let (_, keys) = ctx(LW | R);
    let t = qp(&keys, QP_ALL);
    assert_eq!(
        t.write(&Untouched, 0x100, BASE, b"abc"),
        Err(Fault::RemoteAccess),
        "no right on the key"
    );
    assert_eq!(t.write(&Untouched, 0x100, BASE + 3, b"a"), Err(Fault::RemoteAccess));
    let ro = qp(&keys, W);
    let mut out = [0u8; 4];
    assert_eq!(
        ro.read(&Untouched, 0x100, BASE, &mut out),
        Err(Fault::InvalidRequest),
        "no right on the QP"
    );
    assert_eq!(
        t.read(&Untouched, 0x100, BASE + 254, &mut out),
        Err(Fault::RemoteAccess),
        "range"
    );
    assert_eq!(out, [0; 4], "nothing read");
}

#[test]
fn zero_length_write_or_read_touches_nothing() {
    let (_, keys) = ctx(ALL);
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.write(&Untouched, 0, 0, b""), Ok(()));
    assert_eq!(t.read(&Untouched, 0, 0, &mut []), Ok(()));
    assert_eq!(t.write(&Untouched, 0x100, BASE, b""), Ok(()));
    assert_eq!(qp(&keys, R).write(&Untouched, 0, 0, b""), Err(Fault::InvalidRequest));
}

#[test]
fn a_failed_copy_is_a_remote_access_error() {
    let (_, mut keys) = ctx(ALL);
    // An MR over 64 bytes of which only the first 32 are still mapped.
    keys.insert(0x200, mr(1, BASE + 224, 64, ALL));
    let mem = Holed {
        mem: super::FakeMem::new(BASE, 512),
        hole: BASE + 256..BASE + 512,
    };
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.write(&mem, 0x200, BASE + 224, &[1; 32]), Ok(()), "the mapped part");
    assert_eq!(
        t.write(&mem, 0x200, BASE + 250, &[2; 8]),
        Err(Fault::RemoteAccess),
        "into the hole"
    );
    assert_eq!(t.write(&mem, 0x200, BASE + 256, &[2; 8]), Err(Fault::RemoteAccess));
    let mut out = [0u8; 8];
    assert_eq!(t.read(&mem, 0x200, BASE + 256, &mut out), Err(Fault::RemoteAccess));
    assert_eq!(t.read(&mem, 0x200, BASE + 248, &mut out), Ok(()));
    assert_eq!(out, [1; 8]);
    assert_eq!(
        t.atomic(&mem, Op::FetchAdd, 0x200, BASE + 256, Atomic::Add(1)),
        Err(Fault::RemoteAccess)
    );
}

// ---- atomics ------------------------------------------------------------------------

#[test]
fn cmp_swap_swaps_only_on_a_match() {
    let (mem, keys) = ctx(ALL);
    let t = qp(&keys, QP_ALL);
    set_u64(&mem, BASE + 8, 10);
    assert_eq!(
        t.atomic(&mem, Op::CmpSwap, 0x100, BASE + 8, Atomic::Cas(11, 99)),
        Ok(10),
        "no match"
    );
    assert_eq!(read_u64(&mem, BASE + 8), 10, "unchanged");
    assert_eq!(
        t.atomic(&mem, Op::CmpSwap, 0x100, BASE + 8, Atomic::Cas(10, 99)),
        Ok(10),
        "a match"
    );
    assert_eq!(read_u64(&mem, BASE + 8), 99, "swapped");
    assert_eq!(read_u64(&mem, BASE), 0, "the neighbours untouched");
    assert_eq!(read_u64(&mem, BASE + 16), 0);
}

#[test]
fn fetch_add_adds_and_wraps() {
    let (mem, keys) = ctx(ALL);
    let t = qp(&keys, QP_ALL);
    set_u64(&mem, BASE + 248, u64::MAX - 1);
    assert_eq!(
        t.atomic(&mem, Op::FetchAdd, 0x100, BASE + 248, Atomic::Add(1)),
        Ok(u64::MAX - 1)
    );
    assert_eq!(
        t.atomic(&mem, Op::FetchAdd, 0x100, BASE + 248, Atomic::Add(3)),
        Ok(u64::MAX)
    );
    assert_eq!(read_u64(&mem, BASE + 248), 2);
}

#[test]
fn atomic_write_stores() {
    let (mem, keys) = ctx(ALL);
    let t = qp(&keys, W);
    set_u64(&mem, BASE + 16, 5);
    assert_eq!(
        t.atomic(
            &mem,
            Op::AtomicWrite,
            0x100,
            BASE + 16,
            Atomic::Store(0x0102_0304_0506_0708)
        ),
        Ok(5)
    );
    assert_eq!(read_u64(&mem, BASE + 16), 0x0102_0304_0506_0708);
    assert_eq!(
        qp(&keys, A).atomic(&mem, Op::AtomicWrite, 0x100, BASE + 16, Atomic::Store(0)),
        Err(Fault::InvalidRequest),
        "ATOMIC_WRITE is a write: REMOTE_ATOMIC is not enough"
    );
    assert_eq!(read_u64(&mem, BASE + 16), 0x0102_0304_0506_0708);
}

#[test]
fn refused_atomics_execute_nothing() {
    let (_, keys) = ctx(LW | R | W);
    let t = qp(&keys, QP_ALL);
    for (op, a) in [
        (Op::CmpSwap, Atomic::Cas(0, 1)),
        (Op::FetchAdd, Atomic::Add(1)),
        (Op::AtomicWrite, Atomic::Store(1)),
    ] {
        assert_eq!(
            t.atomic(&Untouched, op, 0x100, BASE + 4, a),
            Err(Fault::InvalidRequest),
            "{op:?}"
        );
        assert_eq!(
            qp(&keys, 0).atomic(&Untouched, op, 0x100, BASE, a),
            Err(Fault::InvalidRequest),
            "{op:?}: the QP's rights"
        );
        assert_eq!(
            t.atomic(&Untouched, op, 0x100, BASE + 256, a),
            Err(Fault::RemoteAccess),
            "{op:?}: the range"
        );
    }
    assert_eq!(
        t.atomic(&Untouched, Op::FetchAdd, 0x100, BASE, Atomic::Add(1)),
        Err(Fault::RemoteAccess),
        "the key has no REMOTE_ATOMIC"
    );
}

#[test]
fn an_unmapped_atomic_is_a_remote_access_error() {
    let (_, mut keys) = ctx(ALL);
    keys.insert(0x200, mr(1, BASE + 0x1000, 64, ALL));
    let mem = super::FakeMem::new(BASE, 256);
    let t = qp(&keys, QP_ALL);
    assert_eq!(
        t.atomic(&mem, Op::CmpSwap, 0x200, BASE + 0x1000, Atomic::Cas(0, 1)),
        Err(Fault::RemoteAccess)
    );
    assert_eq!(
        t.atomic(&mem, Op::FetchAdd, 0x100, BASE, Atomic::Add(1)),
        Ok(0),
        "mapped"
    );
}

/// ibv_reg_mr_iova lets an MR's IOVA and process address differ; the
/// kernel (ib_uverbs_reg_mr) insists that they share their offset in the
/// page, so an 8-aligned IOVA is an 8-aligned address.  The engine checks
/// the alignment of the IOVA only, and the provider's reg_mr does not
/// insist on the page offset: an aligned atomic on such an MR reaches
/// `Memory::atomic` with a misaligned process address, which its contract
/// (and the provider's lock-prefixed instructions' SAFETY comment) rule out.
#[test]
fn an_atomic_never_reaches_memory_misaligned() {
    let mut keys = Keys::default();
    keys.insert(
        0x200,
        MrEnt {
            va: BASE + 4,
            ..mr(1, 0x4000, 64, ALL)
        },
    );
    let mem = Strict::new(BASE, 256);
    let t = qp(&keys, QP_ALL);
    let r = t.atomic(&mem, Op::FetchAdd, 0x200, 0x4000, Atomic::Add(1));
    assert_eq!(*mem.misaligned.borrow(), Vec::<u64>::new(), "{r:?}");
}

#[test]
fn atomics_reach_memory_once_at_the_translated_address() {
    let mut keys = Keys::default();
    keys.insert(
        0x200,
        MrEnt {
            va: BASE + 64,
            ..mr(1, 0x4000, 64, ALL)
        },
    );
    let mem = Strict::new(BASE, 256);
    let t = qp(&keys, QP_ALL);
    assert_eq!(t.atomic(&mem, Op::FetchAdd, 0x200, 0x4008, Atomic::Add(7)), Ok(0));
    assert_eq!(mem.log(), vec![("atomic", BASE + 72, 8)]);
    assert_eq!(read_u64(&mem.mem, BASE + 72), 7);
}

// ---- duplicate atomics --------------------------------------------------------------

#[test]
fn atomic_history_replays_saved_results() {
    let mut h = AtomicHistory::default();
    assert_eq!(h.replay(0), None, "nothing saved");
    h.save(5, 50, 1);
    h.save(6, 60, 1);
    assert_eq!(h.replay(5), Some(50));
    assert_eq!(h.replay(6), Some(60));
    assert_eq!(h.replay(7), None, "a PSN not executed");
    assert_eq!(h.replay(4), None);
}

#[test]
fn atomic_history_keeps_at_least_min_keep() {
    let keep = AtomicHistory::MIN_KEEP as u32;
    for max in [0u8, 1, 16, keep as u8] {
        let mut h = AtomicHistory::default();
        for psn in 0..keep + 1 {
            h.save(psn, u64::from(psn) + 1000, max);
        }
        assert_eq!(h.replay(0), None, "max_dest_rd_atomic {max}: the oldest is dropped");
        assert_eq!(h.replay(1), Some(1001), "max_dest_rd_atomic {max}: {keep} kept");
        assert_eq!(h.replay(keep), Some(u64::from(keep) + 1000));
    }
}

#[test]
fn atomic_history_keeps_max_dest_rd_atomic_when_more() {
    for max in [AtomicHistory::MIN_KEEP as u8 + 1, 100, u8::MAX] {
        let mut h = AtomicHistory::default();
        let n = u32::from(max) + 10;
        for psn in 0..n {
            h.save(psn, u64::from(psn), max);
        }
        let oldest = n - u32::from(max);
        assert_eq!(h.replay(oldest), Some(u64::from(oldest)), "{max} kept");
        assert_eq!(h.replay(oldest - 1), None, "the {}th is not", u32::from(max) + 1);
    }
}

#[test]
fn atomic_history_the_most_recent_result_of_a_psn_wins() {
    let mut h = AtomicHistory::default();
    h.save(9, 1, 0);
    h.save(10, 2, 0);
    h.save(9, 3, 0);
    assert_eq!(h.replay(9), Some(3));
    assert_eq!(h.replay(10), Some(2));
    h.clear();
    assert_eq!(h.replay(9), None, "cleared");
    assert_eq!(h.replay(10), None);
}

// ---- duplicate READs --------------------------------------------------------------

fn read_res(psn: u32, npkts: u32, va: u64, len: u64) -> ReadRes {
    ReadRes {
        psn,
        npkts,
        va,
        rkey: 0x100,
        len,
    }
}

#[test]
fn read_history_replays_the_rest_of_a_saved_read() {
    let mut h = ReadHistory::default();
    let r = read_res(100, 3, BASE, 2500);
    h.save(r, 0);
    assert_eq!(h.replay(100, BASE, 2500, 1024), Some(r), "all of it");
    assert_eq!(
        h.replay(101, BASE + 1024, 1476, 1024),
        Some(read_res(101, 2, BASE + 1024, 1476))
    );
    assert_eq!(
        h.replay(102, BASE + 2048, 452, 1024),
        Some(read_res(102, 1, BASE + 2048, 452)),
        "the last packet"
    );
    assert_eq!(h.replay(103, BASE + 3072, 0, 1024), None, "past its packets");
    assert_eq!(h.replay(101, BASE + 1024, 1024, 1024), None, "not the rest");
    assert_eq!(
        h.replay(101, BASE + 1000, 1476, 1024),
        None,
        "not where the packet starts"
    );
    assert_eq!(h.replay(101, BASE + 1024, 1476, 256), None, "another MTU");
}

#[test]
fn read_history_is_bounded_and_latest_first() {
    let keep = ReadHistory::MIN_KEEP as u32;
    let mut h = ReadHistory::default();
    for i in 0..=keep {
        h.save(read_res(10 * i, 1, BASE + u64::from(i), 8), 0);
    }
    assert_eq!(h.replay(0, BASE, 8, 1024), None, "evicted");
    assert!(h.replay(10, BASE + 1, 8, 1024).is_some(), "{keep} kept");
    let mut big = ReadHistory::default();
    for i in 0..=keep {
        big.save(read_res(10 * i, 1, BASE + u64::from(i), 8), keep as u8 + 1);
    }
    assert!(big.replay(0, BASE, 8, 1024).is_some(), "max_dest_rd_atomic keeps more");
    h.clear();
    assert_eq!(h.replay(10, BASE + 1, 8, 1024), None, "cleared");
}

#[test]
fn read_history_the_latest_read_of_a_psn_answers() {
    let mut h = ReadHistory::default();
    h.save(read_res(10, 1, BASE + 1, 8), 0);
    assert!(h.replay(10, BASE + 1, 8, 1024).is_some());
    // the same PSN again (after a wrap): the later READ answers
    h.save(read_res(10, 1, BASE + 99, 8), 0);
    assert!(h.replay(10, BASE + 99, 8, 1024).is_some());
    assert_eq!(h.replay(10, BASE + 1, 8, 1024), None);
}

#[test]
fn read_history_psns_wrap_at_24_bits() {
    let mut h = ReadHistory::default();
    h.save(read_res(0xff_fffe, 4, BASE, 4096), 0);
    assert_eq!(
        h.replay(1, BASE + 3072, 1024, 1024),
        Some(read_res(1, 1, BASE + 3072, 1024)),
        "PSN 1 is the 4th packet"
    );
    assert_eq!(h.replay(2, BASE + 4096, 0, 1024), None);
    assert_eq!(h.replay(0xff_fffd, BASE, 4096, 1024), None, "just before it");
}
