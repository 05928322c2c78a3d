//! Memory keys: what a remote access is granted, what a local list may
//! touch, window binding and invalidation, the table itself.

use super::{ctx, mr, sge, sges, ALL, BASE};
use crate::keys::{Keys, MrEnt, WindowBind};
use ibverbs_abi::ibv_sge;
use ibverbs_abi::*;

const R: u32 = IBV_ACCESS_REMOTE_READ;
const W: u32 = IBV_ACCESS_REMOTE_WRITE;
const A: u32 = IBV_ACCESS_REMOTE_ATOMIC;
const LW: u32 = IBV_ACCESS_LOCAL_WRITE;

/// `Keys::check_local` as comparable values.
#[allow(clippy::type_complexity)]
fn cl(keys: &Keys, pd: u32, list: &[ibv_sge], write: bool) -> Result<Option<Vec<(u64, u32, u32)>>, u32> {
    keys.check_local(pd, list, write).map(|t| t.map(|v| sges(&v)))
}

/// An MR whose I/O virtual addresses [iova, iova + len) are the process's
/// [va, va + len).
fn iova_mr(pd: u32, iova: u64, va: u64, len: u64, access: u32) -> MrEnt {
    MrEnt {
        va,
        ..mr(pd, iova, len, access)
    }
}

/// A bind of window `old` (PD 1) over MR `lkey`'s [addr, addr + len).
fn bind(ty: u32, old: u32, access: u32, lkey: u32, addr: u64, len: u64) -> WindowBind {
    WindowBind {
        ty,
        old,
        pd: 1,
        access,
        rkey: 0,
        range: Some((lkey, addr, len)),
    }
}

fn unbind(ty: u32, old: u32) -> WindowBind {
    WindowBind {
        ty,
        old,
        pd: 1,
        access: 0,
        rkey: 0,
        range: None,
    }
}

/// Keys with MR 0x100 (PD 1, [BASE, BASE + 256), everything and MW_BIND)
/// and a window of `ty` bound through QP 7 over [BASE + 64, BASE + 96)
/// with `access`: the keys and the window's rkey.
fn with_window(ty: u32, access: u32) -> (Keys, u32) {
    let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
    let b = WindowBind {
        rkey: 0x42,
        ..bind(ty, 0x500, access, 0x100, BASE + 64, 32)
    };
    let k = keys.bind_window(7, 1, &b).expect("the bind is good");
    (keys, k)
}

// ---- grant ---------------------------------------------------------------

#[test]
fn grant_translates_inside_the_mr() {
    let (_, keys) = ctx(R);
    assert_eq!(keys.grant(7, 1, 0x100, BASE, 256, R), Some(BASE), "the whole MR");
    assert_eq!(keys.grant(7, 1, 0x100, BASE + 17, 3, R), Some(BASE + 17));
    assert_eq!(
        keys.grant(7, 1, 0x100, BASE + 255, 1, R),
        Some(BASE + 255),
        "the last byte"
    );
    assert_eq!(
        keys.grant(9, 1, 0x100, BASE, 1, R),
        Some(BASE),
        "an MR: any QP of its PD"
    );
}

#[test]
fn grant_refuses_another_pd_or_an_unknown_key() {
    let (_, keys) = ctx(R);
    assert_eq!(keys.grant(7, 2, 0x100, BASE, 8, R), None, "PD 2");
    assert_eq!(keys.grant(7, 0, 0x100, BASE, 8, R), None, "PD 0");
    assert_eq!(keys.grant(7, 1, 0x101, BASE, 8, R), None, "no such key");
    assert_eq!(keys.grant(7, 1, 0x200, BASE, 8, R), None, "another index");
    assert_eq!(Keys::default().grant(7, 1, 0x100, BASE, 8, R), None, "no keys at all");
}

#[test]
fn grant_needs_every_right_asked() {
    for (has, asked, ok) in [
        (R, R, true),
        (R, W, false),
        (R, A, false),
        (LW | W, W, true),
        (LW | W, R, false),
        (LW | A, A, true),
        (LW | A, W, false),
        (LW, W, false),
        (LW | R | W, R | W, true),
        (LW | R, R | W, false),
        (ALL, A, true),
    ] {
        let (_, keys) = ctx(has);
        assert_eq!(
            keys.grant(7, 1, 0x100, BASE, 8, asked).is_some(),
            ok,
            "MR rights {has:#x}, asked {asked:#x}"
        );
    }
}

#[test]
fn grant_range_edges() {
    let (_, keys) = ctx(R);
    assert_eq!(keys.grant(7, 1, 0x100, BASE, 257, R), None, "one byte too long");
    assert_eq!(keys.grant(7, 1, 0x100, BASE + 256, 1, R), None, "just past the end");
    assert_eq!(keys.grant(7, 1, 0x100, BASE + 250, 7, R), None, "crosses the end");
    assert_eq!(
        keys.grant(7, 1, 0x100, BASE + 250, 6, R),
        Some(BASE + 250),
        "ends at the end"
    );
    assert_eq!(keys.grant(7, 1, 0x100, BASE - 1, 1, R), None, "just before the start");
    assert_eq!(keys.grant(7, 1, 0x100, BASE - 1, 2, R), None, "crosses the start");
    assert_eq!(keys.grant(7, 1, 0x100, 0, 8, R), None);
}

#[test]
fn grant_addr_plus_len_overflow_is_refused() {
    let (_, keys) = ctx(R);
    // BASE + 8 + (u64::MAX - 7) wraps to BASE: inside the MR if the end
    // were computed with wrapping arithmetic.
    assert_eq!(keys.grant(7, 1, 0x100, BASE + 8, u64::MAX - 7, R), None);
    assert_eq!(keys.grant(7, 1, 0x100, BASE, u64::MAX, R), None);
    assert_eq!(keys.grant(7, 1, 0x100, u64::MAX - 2, 8, R), None);
    // An MR over the whole top of the address space: the wrap still fails.
    let mut top = Keys::default();
    top.insert(0x100, mr(1, u64::MAX - 255, 255, R));
    assert_eq!(top.grant(7, 1, 0x100, u64::MAX - 255, 8, R), Some(u64::MAX - 255));
    assert_eq!(top.grant(7, 1, 0x100, u64::MAX - 3, 8, R), None);
}

#[test]
fn grant_translates_an_iova_mr() {
    let mut keys = Keys::default();
    keys.insert(0x200, iova_mr(1, 0x1000, BASE, 64, R));
    assert_eq!(keys.grant(7, 1, 0x200, 0x1000, 64, R), Some(BASE));
    assert_eq!(keys.grant(7, 1, 0x200, 0x1010, 8, R), Some(BASE + 0x10));
    assert_eq!(
        keys.grant(7, 1, 0x200, BASE, 8, R),
        None,
        "the process address is not an IOVA"
    );
    assert_eq!(keys.grant(7, 1, 0x200, 0x1039, 8, R), None, "past the IOVA range");
}

#[test]
fn grant_through_windows() {
    let (keys, k1) = with_window(IBV_MW_TYPE_1, R);
    assert_eq!(keys.grant(7, 1, k1, BASE + 64, 32, R), Some(BASE + 64));
    assert_eq!(
        keys.grant(8, 1, k1, BASE + 64, 32, R),
        Some(BASE + 64),
        "type 1: any QP of its PD"
    );
    assert_eq!(keys.grant(7, 2, k1, BASE + 64, 8, R), None, "another PD");
    assert_eq!(keys.grant(7, 1, k1, BASE + 64, 33, R), None, "past the window");
    assert_eq!(keys.grant(7, 1, k1, BASE + 63, 2, R), None, "before the window");
    assert_eq!(
        keys.grant(7, 1, k1, BASE + 64, 8, W),
        None,
        "the window's rights, not the MR's"
    );

    let (keys, k2) = with_window(IBV_MW_TYPE_2, R | W);
    assert_eq!(keys.grant(7, 1, k2, BASE + 64, 8, R | W), Some(BASE + 64));
    assert_eq!(keys.grant(8, 1, k2, BASE + 64, 8, R), None, "type 2: only through QP 7");
    assert_eq!(keys.grant(0, 1, k2, BASE + 64, 8, R), None);
}

#[test]
fn a_window_whose_mr_is_gone_grants_nothing() {
    for ty in [IBV_MW_TYPE_1, IBV_MW_TYPE_2] {
        let (mut keys, k) = with_window(ty, R);
        assert!(keys.grant(7, 1, k, BASE + 64, 8, R).is_some(), "type {ty}");
        assert!(keys.remove(0x100).is_some());
        assert_eq!(keys.grant(7, 1, k, BASE + 64, 8, R), None, "type {ty}");
        assert!(keys.get(k).is_some(), "the window itself is still there");
    }
}

// ---- check_local -----------------------------------------------------------

#[test]
fn check_local_accepts_a_good_list_as_it_is() {
    let (_, mut keys) = ctx(LW);
    keys.insert(0x300, mr(1, BASE + 0x1000, 16, 0));
    let list = [
        sge(BASE, 8, 0x100),
        sge(BASE + 248, 8, 0x100),
        sge(BASE + 0x1000, 16, 0x300),
    ];
    assert_eq!(cl(&keys, 1, &list[..2], true), Ok(None));
    assert_eq!(cl(&keys, 1, &list, false), Ok(None));
    assert_eq!(cl(&keys, 1, &[], true), Ok(None), "an empty list");
}

#[test]
fn check_local_refuses_bad_sges() {
    let (_, mut keys) = ctx(LW);
    keys.insert(0x300, mr(2, BASE, 256, LW));
    let good = sge(BASE, 8, 0x100);
    for (bad, why) in [
        (sge(BASE, 8, 0x999), "unknown lkey"),
        (sge(BASE, 8, 0x300), "an MR of PD 2"),
        (sge(BASE + 249, 8, 0x100), "past the end"),
        (sge(BASE + 256, 1, 0x100), "just past the end"),
        (sge(BASE - 1, 8, 0x100), "before the start"),
        (sge(u64::MAX - 3, 8, 0x100), "addr + length wraps"),
    ] {
        assert_eq!(cl(&keys, 1, &[bad], false), Err(IBV_WC_LOC_PROT_ERR), "{why}");
        assert_eq!(
            cl(&keys, 1, &[good, bad], true),
            Err(IBV_WC_LOC_PROT_ERR),
            "{why}, after a good one"
        );
        assert_eq!(
            cl(&keys, 1, &[bad, good], true),
            Err(IBV_WC_LOC_PROT_ERR),
            "{why}, before a good one"
        );
    }
}

#[test]
fn check_local_skips_zero_length_sges() {
    let (_, keys) = ctx(LW);
    let empty_bad = sge(0xdead_0000, 0, 0x999);
    assert_eq!(cl(&keys, 1, &[empty_bad], true), Ok(None));
    assert_eq!(cl(&keys, 1, &[empty_bad, sge(BASE, 8, 0x100)], true), Ok(None));
    assert_eq!(cl(&keys, 2, &[sge(BASE, 0, 0x100)], true), Ok(None), "no PD either");
    // ... but only those: a bad one after it is still refused.
    assert_eq!(
        cl(&keys, 1, &[empty_bad, sge(BASE, 8, 0x999)], true),
        Err(IBV_WC_LOC_PROT_ERR)
    );
}

#[test]
fn check_local_refuses_a_window_rkey() {
    for ty in [IBV_MW_TYPE_1, IBV_MW_TYPE_2] {
        let (keys, k) = with_window(ty, R | W);
        assert_eq!(
            cl(&keys, 1, &[sge(BASE + 64, 8, k)], false),
            Err(IBV_WC_LOC_PROT_ERR),
            "type {ty} window as an lkey"
        );
        assert_eq!(cl(&keys, 1, &[sge(BASE + 64, 8, 0x100)], false), Ok(None), "its MR is");
    }
}

#[test]
fn check_local_needs_local_write_for_writing() {
    let (_, keys) = ctx(R);
    let list = [sge(BASE, 8, 0x100)];
    assert_eq!(cl(&keys, 1, &list, false), Ok(None), "gathering from it is fine");
    assert_eq!(cl(&keys, 1, &list, true), Err(IBV_WC_LOC_PROT_ERR));
    let (_, keys) = ctx(LW);
    assert_eq!(cl(&keys, 1, &list, true), Ok(None));
}

#[test]
fn check_local_translates_iova_sges_into_a_new_list() {
    let (_, mut keys) = ctx(LW);
    keys.insert(0x200, iova_mr(1, 0x1000, BASE + 128, 64, LW));
    let list = [
        sge(BASE, 8, 0x100),
        sge(0x1008, 16, 0x200),
        sge(0x7777, 0, 0x999),
        sge(0x1000, 8, 0x200),
    ];
    assert_eq!(
        cl(&keys, 1, &list, true),
        Ok(Some(vec![
            (BASE, 8, 0x100),
            (BASE + 128 + 8, 16, 0x200),
            (0x7777, 0, 0x999),
            (BASE + 128, 8, 0x200)
        ])),
        "a new list"
    );
    assert_eq!(list[1].addr, 0x1008, "the given list is left as it was");
    assert_eq!(
        cl(&keys, 1, &[sge(BASE + 128, 8, 0x200)], true),
        Err(IBV_WC_LOC_PROT_ERR),
        "an SGE holds an IOVA, not the process address"
    );
    assert_eq!(cl(&keys, 1, &list[..1], true), Ok(None), "nothing to translate");
}

// ---- bind_window -------------------------------------------------------------

#[test]
fn bind_refuses_access_bits_other_than_remote_and_local_write() {
    for bad in [
        IBV_ACCESS_MW_BIND,
        IBV_ACCESS_ZERO_BASED,
        IBV_ACCESS_ON_DEMAND,
        R | IBV_ACCESS_ZERO_BASED,
        1 << 20,
    ] {
        let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
        let b = bind(IBV_MW_TYPE_1, 0x500, bad, 0x100, BASE, 8);
        assert_eq!(keys.bind_window(7, 1, &b), Err(IBV_WC_MW_BIND_ERR), "access {bad:#x}");
        assert_eq!(keys.get(0x501), None);
    }
    for good in [0, R, W, A, LW | R | W | A] {
        let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
        let b = bind(IBV_MW_TYPE_1, 0x500, good, 0x100, BASE, 8);
        assert_eq!(keys.bind_window(7, 1, &b), Ok(0x501), "access {good:#x}");
    }
}

#[test]
fn bind_needs_an_mr_with_mw_bind() {
    let (_, mut keys) = ctx(ALL);
    let b = bind(IBV_MW_TYPE_1, 0x500, R, 0x100, BASE, 8);
    assert_eq!(keys.bind_window(7, 1, &b), Err(IBV_WC_MW_BIND_ERR));
    let b2 = bind(IBV_MW_TYPE_2, 0x500, R, 0x100, BASE, 8);
    assert_eq!(keys.bind_window(7, 1, &b2), Err(IBV_WC_MW_BIND_ERR));
    keys.update(0x100, |m| m.access |= IBV_ACCESS_MW_BIND);
    assert_eq!(keys.bind_window(7, 1, &b), Ok(0x501));
}

#[test]
fn bind_needs_a_real_mr_of_the_windows_pd() {
    let (mut keys, k) = with_window(IBV_MW_TYPE_1, R);
    let on_window = bind(IBV_MW_TYPE_1, 0x600, R, k, BASE + 64, 8);
    assert_eq!(
        keys.bind_window(7, 1, &on_window),
        Err(IBV_WC_MW_BIND_ERR),
        "a window is no MR"
    );
    let unknown = bind(IBV_MW_TYPE_1, 0x600, R, 0x999, BASE, 8);
    assert_eq!(keys.bind_window(7, 1, &unknown), Err(IBV_WC_MW_BIND_ERR));
    let other_pd = WindowBind {
        pd: 2,
        ..bind(IBV_MW_TYPE_1, 0x600, R, 0x100, BASE, 8)
    };
    assert_eq!(keys.bind_window(7, 2, &other_pd), Err(IBV_WC_MW_BIND_ERR), "MR of PD 1");
    assert_eq!(keys.get(0x601), None);
}

#[test]
fn bind_range_must_lie_in_the_mr() {
    for (addr, len, ok) in [
        (BASE, 256, true),
        (BASE + 255, 1, true),
        (BASE, 257, false),
        (BASE - 1, 8, false),
        (BASE + 256, 1, false),
        (BASE + 8, u64::MAX - 7, false),
    ] {
        let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
        let b = bind(IBV_MW_TYPE_1, 0x500, R, 0x100, addr, len);
        assert_eq!(keys.bind_window(7, 1, &b).is_ok(), ok, "[{addr:#x}, +{len:#x})");
    }
}

#[test]
fn bind_remote_write_or_atomic_needs_local_write_on_the_mr() {
    let (_, mut keys) = ctx(R | IBV_ACCESS_MW_BIND);
    for access in [W, A, R | W] {
        let b = bind(IBV_MW_TYPE_1, 0x500, access, 0x100, BASE, 8);
        assert_eq!(
            keys.bind_window(7, 1, &b),
            Err(IBV_WC_MW_BIND_ERR),
            "access {access:#x}"
        );
    }
    let b = bind(IBV_MW_TYPE_1, 0x500, R, 0x100, BASE, 8);
    assert_eq!(keys.bind_window(7, 1, &b), Ok(0x501), "REMOTE_READ alone is fine");
    let (_, mut keys) = ctx(LW | IBV_ACCESS_MW_BIND);
    let b = bind(IBV_MW_TYPE_1, 0x500, W | A, 0x100, BASE, 8);
    assert_eq!(
        keys.bind_window(7, 1, &b),
        Ok(0x501),
        "LOCAL_WRITE on the MR: the window may be written"
    );
}

#[test]
fn bind_records_the_window() {
    let mut keys = Keys::default();
    keys.insert(0x100, iova_mr(1, 0x1000, BASE, 256, LW | IBV_ACCESS_MW_BIND));
    let b1 = bind(IBV_MW_TYPE_1, 0x500, LW | R | W, 0x100, 0x1010, 32);
    let k1 = keys.bind_window(7, 1, &b1).unwrap();
    assert_eq!(
        keys.get(k1),
        Some(MrEnt {
            pd: 1,
            va: BASE + 0x10,
            addr: 0x1010,
            len: 32,
            access: R | W,
            mw: IBV_MW_TYPE_1,
            parent: 0x100,
            qpn: 0,
        }),
        "type 1: no QP, LOCAL_WRITE dropped, the IOVA translated"
    );
    let b2 = WindowBind {
        rkey: 0x33,
        ..bind(IBV_MW_TYPE_2, 0x700, A, 0x100, 0x1000, 8)
    };
    let k2 = keys.bind_window(9, 1, &b2).unwrap();
    assert_eq!(
        keys.get(k2),
        Some(MrEnt {
            pd: 1,
            va: BASE,
            addr: 0x1000,
            len: 8,
            access: A,
            mw: IBV_MW_TYPE_2,
            parent: 0x100,
            qpn: 9,
        }),
        "type 2: bound to the QP it was bound through"
    );
    assert_eq!(keys.grant(9, 1, k2, 0x1000, 8, A), Some(BASE));
}

#[test]
fn bind_new_keys() {
    let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
    // type 1: the index stays, the 8-bit key is the next one (and wraps)
    for (old, new) in [
        (0x500, 0x501),
        (0x5fe, 0x5ff),
        (0x5ff, 0x500),
        (0xffff_ffff, 0xffff_ff00),
    ] {
        let b = bind(IBV_MW_TYPE_1, old, R, 0x100, BASE, 8);
        assert_eq!(keys.bind_window(7, 1, &b), Ok(new), "type 1 from {old:#x}");
        assert!(keys.remove(new).is_some(), "bound under its new key");
    }
    // type 2: the index stays, the 8-bit key is the consumer's
    for (old, rkey, new) in [
        (0x500, 0x42, 0x542),
        (0x5ff, 0x00, 0x500),
        (0x1234_5678, 0x1ab, 0x1234_56ab),
    ] {
        let b = WindowBind {
            rkey,
            ..bind(IBV_MW_TYPE_2, old, R, 0x100, BASE, 8)
        };
        assert_eq!(
            keys.bind_window(7, 1, &b),
            Ok(new),
            "type 2 from {old:#x} with {rkey:#x}"
        );
        assert!(keys.remove(new).is_some());
    }
}

#[test]
fn type_1_rebind_moves_the_window() {
    let (mut keys, k1) = with_window(IBV_MW_TYPE_1, R);
    assert_eq!(k1, 0x501);
    let again = bind(IBV_MW_TYPE_1, k1, W, 0x100, BASE, 16);
    let k2 = keys.bind_window(7, 1, &again).unwrap();
    assert_eq!(k2, 0x502);
    assert_eq!(keys.get(k1), None, "the old key is gone");
    assert_eq!(keys.grant(7, 1, k1, BASE + 64, 8, R), None);
    assert_eq!(
        keys.grant(7, 1, k2, BASE, 16, W),
        Some(BASE),
        "the new range and rights"
    );
    assert_eq!(keys.grant(7, 1, k2, BASE + 64, 8, W), None, "not the old range");
}

#[test]
fn a_failed_rebind_leaves_the_old_binding() {
    let (mut keys, k1) = with_window(IBV_MW_TYPE_1, R);
    let bad = bind(IBV_MW_TYPE_1, k1, R, 0x100, BASE + 250, 8);
    assert_eq!(keys.bind_window(7, 1, &bad), Err(IBV_WC_MW_BIND_ERR));
    assert_eq!(keys.grant(7, 1, k1, BASE + 64, 8, R), Some(BASE + 64));
    assert_eq!(keys.get(k1 + 1), None);
}

#[test]
fn type_1_unbind() {
    let (mut keys, k1) = with_window(IBV_MW_TYPE_1, R);
    let k2 = keys.bind_window(7, 1, &unbind(IBV_MW_TYPE_1, k1)).unwrap();
    assert_eq!(k2, k1 + 1, "the key moves on");
    assert_eq!(keys.get(k1), None);
    assert_eq!(keys.get(k2), None, "nothing is bound under the new key");
    assert!(keys.get(0x100).is_some(), "the MR stays");
}

#[test]
fn type_2_already_bound_is_refused() {
    let (mut keys, k) = with_window(IBV_MW_TYPE_2, R);
    let again = WindowBind {
        rkey: 0x43,
        ..bind(IBV_MW_TYPE_2, k, R | W, 0x100, BASE, 8)
    };
    assert_eq!(keys.bind_window(7, 1, &again), Err(IBV_WC_MW_BIND_ERR));
    assert_eq!(
        keys.grant(7, 1, k, BASE + 64, 8, R),
        Some(BASE + 64),
        "still bound as before"
    );
    assert_eq!(keys.get((k & !0xff) | 0x43), None);
    // once invalidated it may be bound again
    assert!(keys.invalidate(k, 0));
    assert_eq!(keys.bind_window(7, 1, &again), Ok((k & !0xff) | 0x43));
}

#[test]
fn type_2_through_a_qp_of_another_pd_is_refused() {
    let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
    let b = bind(IBV_MW_TYPE_2, 0x500, R, 0x100, BASE, 8);
    assert_eq!(keys.bind_window(7, 2, &b), Err(IBV_WC_MW_BIND_ERR));
    assert_eq!(keys.bind_window(7, 1, &b), Ok(0x500), "through a QP of its PD");
}

/// o10-37.2.40 (rxe: "attempt to invalidate type 2 MW by binding with NULL
/// or zero length MR"): a type 2 window is unbound only by invalidation; a
/// bind without a range (the provider passes length 0 as None) is refused.
#[test]
fn type_2_bind_without_a_range_is_refused() {
    let (_, mut keys) = ctx(ALL | IBV_ACCESS_MW_BIND);
    let b = WindowBind {
        rkey: 0x42,
        ..unbind(IBV_MW_TYPE_2, 0x500)
    };
    assert_eq!(keys.bind_window(7, 1, &b), Err(IBV_WC_MW_BIND_ERR));
}

// ---- invalidate and unbind_window --------------------------------------------

#[test]
fn invalidate_type_2_only() {
    let (mut keys, k1) = with_window(IBV_MW_TYPE_1, R);
    assert!(!keys.invalidate(k1, 0), "type 1");
    assert!(!keys.invalidate(k1, 7), "type 1, remotely");
    assert!(keys.grant(7, 1, k1, BASE + 64, 8, R).is_some(), "still bound");
    assert!(!keys.invalidate(0x100, 0), "an MR");
    assert!(keys.get(0x100).is_some());
    assert!(!keys.invalidate(0x999, 0), "nothing");
}

#[test]
fn invalidate_remotely_only_through_the_bound_qp() {
    let (mut keys, k) = with_window(IBV_MW_TYPE_2, R);
    assert!(!keys.invalidate(k, 8));
    assert!(keys.grant(7, 1, k, BASE + 64, 8, R).is_some(), "still bound");
    assert!(keys.invalidate(k, 7));
    assert_eq!(keys.get(k), None);
    assert!(!keys.invalidate(k, 7), "once");
}

#[test]
fn invalidate_locally() {
    let (mut keys, k) = with_window(IBV_MW_TYPE_2, R);
    assert!(keys.invalidate(k, 0));
    assert_eq!(keys.grant(7, 1, k, BASE + 64, 8, R), None);
    assert!(!keys.invalidate(k, 0));
}

#[test]
fn unbind_window_forgets_windows_only() {
    for ty in [IBV_MW_TYPE_1, IBV_MW_TYPE_2] {
        let (mut keys, k) = with_window(ty, R);
        keys.unbind_window(k);
        assert_eq!(keys.get(k), None, "type {ty}");
        keys.unbind_window(0x100);
        assert!(keys.get(0x100).is_some(), "not an MR");
        keys.unbind_window(0x999);
    }
}

// ---- the table ----------------------------------------------------------------

#[test]
fn update_changes_an_mr_in_place() {
    let (_, mut keys) = ctx(R);
    let e = keys.update(0x100, |m| {
        m.len = 16;
        m.access = W | LW;
    });
    assert_eq!(e, Some(mr(1, BASE, 16, W | LW)));
    assert_eq!(keys.get(0x100), e);
    assert_eq!(keys.grant(7, 1, 0x100, BASE, 8, R), None, "the old rights");
    assert_eq!(keys.grant(7, 1, 0x100, BASE, 32, W), None, "the old length");
    assert_eq!(keys.grant(7, 1, 0x100, BASE, 16, W), Some(BASE));
    let mut called = false;
    assert_eq!(keys.update(0x999, |_| called = true), None);
    assert!(!called, "nothing to change");
    assert_eq!(keys.get(0x999), None, "nor is one made");
}

#[test]
fn insert_get_and_remove() {
    let mut keys = Keys::default();
    assert_eq!(keys.get(0x100), None);
    keys.insert(0x100, mr(1, BASE, 8, R));
    keys.insert(0x100, mr(1, BASE, 16, R));
    assert_eq!(keys.get(0x100), Some(mr(1, BASE, 16, R)), "the last insert wins");
    assert_eq!(keys.remove(0x100), Some(mr(1, BASE, 16, R)));
    assert_eq!(keys.remove(0x100), None);
    assert_eq!(keys.get(0x100), None);
    assert_eq!(keys.grant(7, 1, 0x100, BASE, 8, R), None);
    assert_eq!(cl(&keys, 1, &[sge(BASE, 8, 0x100)], false), Err(IBV_WC_LOC_PROT_ERR));
}
