//! The pure parts of memory registration: `ibv_rereg_mr`'s argument checks
//! and the access flags a device is given.

use std::os::raw::c_int;

use crate::abi::*;

/// `ibv_rereg_mr`'s input checks, in upstream's order: only plain MRs can
/// be re-registered, only known flags, a new translation needs an address
/// and a length, and access flags only come with CHANGE_ACCESS.  `true`
/// when the request may proceed (else IBV_REREG_MR_ERR_INPUT / EINVAL).
pub fn rereg_input_ok(mr_type: ibv_mr_type, flags: c_int, addr_is_null: bool, length: usize, access: c_int) -> bool {
    if mr_type != IBV_MR_TYPE_MR {
        return false;
    }
    if flags & !(IBV_REREG_MR_FLAGS_SUPPORTED as c_int) != 0 {
        return false;
    }
    if flags & IBV_REREG_MR_CHANGE_TRANSLATION as c_int != 0 && (length == 0 || addr_is_null) {
        return false;
    }
    if access != 0 && flags & IBV_REREG_MR_CHANGE_ACCESS as c_int == 0 {
        return false;
    }
    true
}

/// The access flags passed to the provider: the optional range is dropped
/// when the kernel does not advertise support for optional MR access bits.
pub fn effective_access(access: u32, core_support: u64) -> u32 {
    if core_support & IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS as u64 == 0 {
        access & !IBV_ACCESS_OPTIONAL_RANGE
    } else {
        access
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: c_int = IBV_REREG_MR_CHANGE_TRANSLATION as c_int;
    const P: c_int = IBV_REREG_MR_CHANGE_PD as c_int;
    const A: c_int = IBV_REREG_MR_CHANGE_ACCESS as c_int;

    #[test]
    fn rereg_checks() {
        assert!(rereg_input_ok(IBV_MR_TYPE_MR, T | P | A, false, 4096, 1));
        assert!(rereg_input_ok(IBV_MR_TYPE_MR, P, true, 0, 0));
        assert!(rereg_input_ok(IBV_MR_TYPE_MR, 0, true, 0, 0));
        // Not a plain MR.
        for t in [IBV_MR_TYPE_NULL_MR, IBV_MR_TYPE_IMPORTED_MR, IBV_MR_TYPE_DMABUF_MR] {
            assert!(!rereg_input_ok(t, P, false, 1, 0));
        }
        // Unknown flag bits.
        assert!(!rereg_input_ok(IBV_MR_TYPE_MR, 8, false, 1, 0));
        assert!(!rereg_input_ok(IBV_MR_TYPE_MR, -1, false, 1, 0));
        // Translation without address or length.
        assert!(!rereg_input_ok(IBV_MR_TYPE_MR, T, true, 4096, 0));
        assert!(!rereg_input_ok(IBV_MR_TYPE_MR, T, false, 0, 0));
        // Access without CHANGE_ACCESS.
        assert!(!rereg_input_ok(IBV_MR_TYPE_MR, T, false, 1, 1));
        assert!(!rereg_input_ok(IBV_MR_TYPE_MR, 0, false, 0, 1));
    }

    #[test]
    fn optional_access() {
        let a = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING;
        assert_eq!(effective_access(a, 0), IBV_ACCESS_LOCAL_WRITE);
        assert_eq!(effective_access(a, IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS as u64), a);
        assert_eq!(effective_access(IBV_ACCESS_ON_DEMAND, 0), IBV_ACCESS_ON_DEMAND);
    }
}
