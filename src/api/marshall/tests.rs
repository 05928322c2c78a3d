//! The marshalling helpers against Debian's libibverbs (dlopen'ed), on
//! random inputs, and `ibv_sa_path_rec` against `<infiniband/sa.h>`.

use super::*;
use core::mem::{offset_of, size_of};

/// xorshift: deterministic pseudo-random bytes.
fn fill(buf: &mut [u8], seed: &mut u64) {
    for b in buf {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *b = *seed as u8;
    }
}

/// Debian's library, if installed.
fn upstream() -> Option<*mut libc::c_void> {
    for name in [c"/usr/lib/x86_64-linux-gnu/libibverbs.so.1", c"libibverbs.so.1"] {
        // SAFETY: dlopen with a valid C string.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if !h.is_null() {
            return Some(h);
        }
    }
    None
}

type Copy2 = unsafe extern "C" fn(*mut u8, *mut u8);

/// Runs ours and upstream's `name` on the same random source and the same
/// random initial destination; the destinations must end up identical.
fn differential(name: &core::ffi::CStr, ours: Copy2, dst_size: usize, src_size: usize) {
    let Some(h) = upstream() else {
        eprintln!("skipped: Debian's libibverbs.so.1 not installed");
        return;
    };
    // SAFETY: dlsym on a live handle; the symbol has the Copy2 ABI.
    let theirs: Copy2 = unsafe {
        let p = libc::dlsym(h, name.as_ptr());
        assert!(!p.is_null(), "{name:?} missing upstream");
        core::mem::transmute::<*mut libc::c_void, Copy2>(p)
    };
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200 {
        let mut src = vec![0u8; src_size];
        let mut d1 = vec![0u8; dst_size];
        fill(&mut src, &mut seed);
        fill(&mut d1, &mut seed);
        let mut d2 = d1.clone();
        let mut s2 = src.clone();
        // SAFETY: the destinations have `dst_size` and the sources `src_size`
        // bytes, the sizes of the structs both functions take (callers pass
        // them with the matching function); the byte vectors come from
        // glibc malloc, 16-byte aligned on x86-64, enough for every struct.
        unsafe {
            ours(d1.as_mut_ptr(), src.as_mut_ptr());
            theirs(d2.as_mut_ptr(), s2.as_mut_ptr());
        }
        assert_eq!(d1, d2, "{name:?}");
        assert_eq!(src, s2, "{name:?} modified its source");
    }
}

#[test]
fn copy_helpers_match_upstream() {
    // SAFETY: each helper is `extern "C" fn(*mut A, *mut B)`; as
    // `fn(*mut u8, *mut u8)` only the pointee types are forgotten, the C
    // ABI (two pointer arguments, no result) is identical.
    unsafe {
        differential(
            c"ibv_copy_ah_attr_from_kern",
            core::mem::transmute::<unsafe extern "C" fn(*mut ibv_ah_attr, *mut ib_uverbs_ah_attr), Copy2>(
                ibv_copy_ah_attr_from_kern,
            ),
            size_of::<ibv_ah_attr>(),
            size_of::<ib_uverbs_ah_attr>(),
        );
        differential(
            c"ibv_copy_qp_attr_from_kern",
            core::mem::transmute::<unsafe extern "C" fn(*mut ibv_qp_attr, *mut ib_uverbs_qp_attr), Copy2>(
                ibv_copy_qp_attr_from_kern,
            ),
            size_of::<ibv_qp_attr>(),
            size_of::<ib_uverbs_qp_attr>(),
        );
        differential(
            c"ibv_copy_path_rec_from_kern",
            core::mem::transmute::<unsafe extern "C" fn(*mut ibv_sa_path_rec, *mut ib_user_path_rec), Copy2>(
                ibv_copy_path_rec_from_kern,
            ),
            size_of::<ibv_sa_path_rec>(),
            size_of::<ib_user_path_rec>(),
        );
        differential(
            c"ibv_copy_path_rec_to_kern",
            core::mem::transmute::<unsafe extern "C" fn(*mut ib_user_path_rec, *mut ibv_sa_path_rec), Copy2>(
                ibv_copy_path_rec_to_kern,
            ),
            size_of::<ib_user_path_rec>(),
            size_of::<ibv_sa_path_rec>(),
        );
    }
}

#[test]
fn sa_path_rec_matches_header() {
    macro_rules! probes {
        ($($f:ident),*) => {{
            let mut v = vec![("sizeof(struct ibv_sa_path_rec)".to_string(), size_of::<ibv_sa_path_rec>() as i64)];
            $( v.push((format!("offsetof(struct ibv_sa_path_rec, {})", stringify!($f)), offset_of!(ibv_sa_path_rec, $f) as i64)); )*
            v
        }};
    }
    let p = probes!(
        dgid,
        sgid,
        dlid,
        slid,
        raw_traffic,
        flow_label,
        hop_limit,
        traffic_class,
        reversible,
        numb_path,
        pkey,
        sl,
        mtu_selector,
        mtu,
        rate_selector,
        rate,
        packet_life_time_selector,
        packet_life_time,
        preference
    );
    let exprs: Vec<String> = p.iter().map(|(e, _)| e.clone()).collect();
    if let Some(got) = crate::kernel::testutil::c_values(&["infiniband/sa.h"], &exprs) {
        let want: Vec<i64> = p.iter().map(|(_, v)| *v).collect();
        assert_eq!(want, got);
    }
}
