//! Queue pairs, shared receive queues, address handles, multicast, ECE and
//! RoCE L2 address resolution (upstream's `verbs.c`).
//!
//! Where upstream would crash on a NULL object pointer these functions fail
//! cleanly with EINVAL in the function's error convention.

use std::os::raw::{c_int, c_uint};
use std::ptr::null_mut;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::verbs::{ah, neigh, null_errno};

use super::device::{__ibv_query_gid_1_1, ibv_query_gid_type};

/// Upstream's `ibv_find_gid_index`: the first index of `port_num`'s GID
/// table holding `gid` with the given type, or the failure (-1) of the
/// first query that fails (the end of the table).
///
/// # Safety
/// `context` is an open context.
unsafe fn find_gid_index(
    context: *mut ibv_context,
    port_num: u8,
    gid: &ibv_gid,
    gid_type: ibv_gid_type_sysfs,
) -> c_int {
    let mut sgid_type: ibv_gid_type_sysfs = 0;
    let mut i: c_int = 0;
    loop {
        let mut sgid = ibv_gid { raw: [0; 16] };
        // SAFETY: `context` is an open context (caller's contract); `sgid`
        // is a writable local.
        let mut ret = unsafe { __ibv_query_gid_1_1(context, port_num, i, &mut sgid) };
        if ret == 0 {
            // SAFETY: as above; `sgid_type` is a writable local.
            ret = unsafe { ibv_query_gid_type(context, port_num, i as c_uint, &mut sgid_type) };
        }
        i = i.wrapping_add(1);
        if ret != 0 {
            return ret;
        }
        // SAFETY: both views of `ibv_gid` are 16 plain bytes, so reading
        // `raw` is valid whichever view was written.
        let same_gid = unsafe { sgid.raw == gid.raw };
        if same_gid && gid_type == sgid_type {
            return i - 1;
        }
    }
}

crate::export! {
    fn __ibv_create_srq_1_1(pd: *mut ibv_pd, srq_init_attr: *mut ibv_srq_init_attr) -> *mut ibv_srq [on_panic: null_mut()] {
        if pd.is_null() || srq_init_attr.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context and the caller's attributes.
        unsafe {
            let context = (*pd).context;
            let f = crate::op!(context, create_srq);
            let srq = f(pd, srq_init_attr);
            if !srq.is_null() {
                (*srq).context = context;
                (*srq).srq_context = (*srq_init_attr).srq_context;
                (*srq).pd = pd;
                (*srq).events_completed = 0;
                libc::pthread_mutex_init(&mut (*srq).mutex, std::ptr::null());
                libc::pthread_cond_init(&mut (*srq).cond, std::ptr::null());
            }
            srq
        }
    }

    /// 0 or an errno value.
    fn __ibv_modify_srq_1_1(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr, srq_attr_mask: c_int) -> c_int [on_panic: libc::EIO] {
        // Upstream's providers read *srq_attr unchecked (a crash); refused.
        if srq.is_null() || srq_attr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: an SRQ of an open context.
        unsafe {
            let f = crate::op!((*srq).context, modify_srq);
            f(srq, srq_attr, srq_attr_mask)
        }
    }

    /// 0 or an errno value.
    fn __ibv_query_srq_1_1(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr) -> c_int [on_panic: libc::EIO] {
        // Upstream's providers write *srq_attr unchecked (a crash); refused.
        if srq.is_null() || srq_attr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: an SRQ of an open context.
        unsafe {
            let f = crate::op!((*srq).context, query_srq);
            f(srq, srq_attr)
        }
    }

    /// 0 or an errno value.
    fn __ibv_destroy_srq_1_1(srq: *mut ibv_srq) -> c_int [on_panic: libc::EIO] {
        if srq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: an SRQ of an open context.
        unsafe {
            let f = crate::op!((*srq).context, destroy_srq);
            f(srq)
        }
    }

    /// The provider creates the QP (its `ibv_cmd_create_qp*` fills the
    /// library's fields, as upstream).
    fn __ibv_create_qp_1_1(pd: *mut ibv_pd, qp_init_attr: *mut ibv_qp_init_attr) -> *mut ibv_qp [on_panic: null_mut()] {
        // Upstream's providers read *qp_init_attr unchecked (a crash); refused.
        if pd.is_null() || qp_init_attr.is_null() {
            return null_errno(libc::EINVAL);
        }
        // So are the CQs the kernel's command needs (upstream's command
        // layer reads their handles unchecked): a send CQ for every type but
        // XRC_RECV, a receive CQ for every type but the two XRC ones.
        // SAFETY: the caller's attributes, non-NULL (checked above).
        let (qp_type, send_cq, recv_cq) =
            unsafe { ((*qp_init_attr).qp_type, (*qp_init_attr).send_cq, (*qp_init_attr).recv_cq) };
        if (send_cq.is_null() && qp_type != IBV_QPT_XRC_RECV)
            || (recv_cq.is_null() && qp_type != IBV_QPT_XRC_SEND && qp_type != IBV_QPT_XRC_RECV)
        {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context.
        unsafe {
            let f = crate::op!((*pd).context, create_qp);
            f(pd, qp_init_attr)
        }
    }

    /// The extended view of a QP created with `ibv_create_qp_ex`, else NULL.
    fn ibv_qp_to_qp_ex(qp: *mut ibv_qp) -> *mut ibv_qp_ex [on_panic: null_mut()] {
        if qp.is_null() {
            return null_errno(libc::EINVAL);
        }
        // The provider's verbs_qp layout, when its registration tells
        // (crate::generation::qp_is_ex looks at both places otherwise).
        // SAFETY: a live QP's context is open.
        let grown = unsafe { crate::kernel::state::of((*qp).context) }
            .and_then(|s| s.registration().qp_ex_grown)
            .filter(|&g| g);
        // SAFETY: every QP is the first member of a provider's verbs_qp.
        if unsafe { crate::generation::qp_is_ex(qp, grown) } {
            qp.cast::<ibv_qp_ex>()
        } else {
            null_mut()
        }
    }

    /// 0 or an errno value; `qp->state` follows a queried state.
    fn __ibv_query_qp_1_1(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int, init_attr: *mut ibv_qp_init_attr) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() || attr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context and the caller's attributes.
        unsafe {
            let f = crate::op!((*qp).context, query_qp);
            let ret = f(qp, attr, attr_mask, init_attr);
            if ret != 0 {
                return ret;
            }
            if attr_mask & IBV_QP_STATE as c_int != 0 {
                (*qp).state = (*attr).qp_state;
            }
            0
        }
    }

    /// The `IBV_QUERY_QP_DATA_IN_ORDER_*` guarantees of the QP (only asked
    /// of the provider on x86, as upstream; 0 elsewhere).
    fn ibv_query_qp_data_in_order(qp: *mut ibv_qp, op: ibv_wr_opcode, flags: u32) -> c_int [on_panic: 0] {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        {
            if qp.is_null() {
                set_errno(libc::EINVAL);
                return 0;
            }
            // SAFETY: a QP of an open context.
            unsafe {
                crate::op!((*qp).context, query_qp_data_in_order)(qp, op, flags)
            }
        }
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        {
            0
        }
    }

    /// 0 or an errno value; `qp->state` follows a successful state change.
    fn __ibv_modify_qp_1_1(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int) -> c_int [on_panic: libc::EIO] {
        // With an empty mask upstream reads nothing of attr, and the kernel
        // accepts the no-op: a NULL attr is refused only with a mask.
        if qp.is_null() || (attr.is_null() && attr_mask != 0) {
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context and the caller's attributes.
        unsafe {
            let f = crate::op!((*qp).context, modify_qp);
            let ret = f(qp, attr, attr_mask);
            if ret != 0 {
                return ret;
            }
            if attr_mask & IBV_QP_STATE as c_int != 0 {
                (*qp).state = (*attr).qp_state;
            }
            0
        }
    }

    /// 0 or an errno value.
    fn __ibv_destroy_qp_1_1(qp: *mut ibv_qp) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context.
        unsafe {
            let f = crate::op!((*qp).context, destroy_qp);
            f(qp)
        }
    }

    fn __ibv_create_ah_1_1(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah [on_panic: null_mut()] {
        // Upstream's providers read *attr unchecked (a crash); refused.
        if pd.is_null() || attr.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context.
        unsafe {
            let context = (*pd).context;
            let f = crate::op!(context, create_ah);
            let ah = f(pd, attr);
            if !ah.is_null() {
                (*ah).context = context;
                (*ah).pd = pd;
            }
            ah
        }
    }

    /// Fills `ah_attr` for replying to the sender of `wc` (GRH in `grh`);
    /// 0, or -1 with errno.
    fn ibv_init_ah_from_wc(context: *mut ibv_context, port_num: u8, wc: *mut ibv_wc, grh: *mut ibv_grh, ah_attr: *mut ibv_ah_attr) -> c_int [on_panic: -1] {
        // Upstream reads grh's first word even without IBV_WC_GRH, so a
        // NULL grh is refused along with the other NULL pointers.
        if context.is_null() || wc.is_null() || grh.is_null() || ah_attr.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: the caller's completion, receive buffer and attributes;
        // an open context for the GID lookups.
        unsafe {
            let raw = ah::grh_bytes(&*grh);
            let mut find = |gid: &ibv_gid, ty: ibv_gid_type_sysfs| find_gid_index(context, port_num, gid, ty);
            ah::init_ah_from_wc(port_num, &*wc, &raw, &mut *ah_attr, &mut find)
        }
    }

    fn ibv_create_ah_from_wc(pd: *mut ibv_pd, wc: *mut ibv_wc, grh: *mut ibv_grh, port_num: u8) -> *mut ibv_ah [on_panic: null_mut()] {
        if pd.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: our own exports on a PD of an open context.
        unsafe {
            let mut ah_attr: ibv_ah_attr = std::mem::zeroed();
            if ibv_init_ah_from_wc((*pd).context, port_num, wc, grh, &mut ah_attr) != 0 {
                return null_mut();
            }
            __ibv_create_ah_1_1(pd, &mut ah_attr)
        }
    }

    /// 0 or an errno value.
    fn __ibv_destroy_ah_1_1(ah: *mut ibv_ah) -> c_int [on_panic: libc::EIO] {
        if ah.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: an AH of an open context.
        unsafe {
            let f = crate::op!((*ah).context, destroy_ah);
            f(ah)
        }
    }

    /// 0 or an errno value.
    fn __ibv_attach_mcast_1_1(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        // Upstream's command copies *gid unchecked (a crash); refused.
        if qp.is_null() || gid.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context.
        unsafe {
            let f = crate::op!((*qp).context, attach_mcast);
            f(qp, gid, lid)
        }
    }

    /// 0 or an errno value.
    fn __ibv_detach_mcast_1_1(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        // Upstream's command copies *gid unchecked (a crash); refused.
        if qp.is_null() || gid.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context.
        unsafe {
            let f = crate::op!((*qp).context, detach_mcast);
            f(qp, gid, lid)
        }
    }

    /// The Ethernet MAC (and VLAN id) to reach `attr`'s destination GID
    /// from its source GID; 0, -1 when the source GID cannot be read, or a
    /// negative errno value (-EINVAL, -EHOSTUNREACH).
    fn ibv_resolve_eth_l2_from_gid(context: *mut ibv_context, attr: *mut ibv_ah_attr, eth_mac: *mut u8, vid: *mut u16) -> c_int [on_panic: -libc::EIO] {
        if context.is_null() || attr.is_null() || eth_mac.is_null() {
            return -libc::EINVAL;
        }
        // SAFETY: an open context, the caller's address vector, a 6-byte
        // MAC buffer and an optional VLAN id.
        unsafe {
            let mut sgid = ibv_gid { raw: [0; 16] };
            let err = __ibv_query_gid_1_1(context, (*attr).port_num, (*attr).grh.sgid_index as c_int, &mut sgid);
            if err != 0 {
                return err;
            }
            let dgid = (*attr).grh.dgid.raw;
            let mac = &mut *eth_mac.cast::<[u8; ETHERNET_LL_SIZE]>();
            neigh::resolve(&sgid.raw, &dgid, mac, vid.as_mut())
        }
    }

    /// 0 or an errno value (EOPNOTSUPP, with errno, for a zero vendor id).
    fn ibv_set_ece(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() || ece.is_null() {
            set_errno(libc::EINVAL);
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context and the caller's options.
        unsafe {
            if (*ece).vendor_id == 0 {
                set_errno(libc::EOPNOTSUPP);
                return libc::EOPNOTSUPP;
            }
            let f = crate::op!((*qp).context, set_ece);
            f(qp, ece)
        }
    }

    /// 0 or an errno value.
    fn ibv_query_ece(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context.
        unsafe {
            let f = crate::op!((*qp).context, query_ece);
            f(qp, ece)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_arguments_fail_cleanly() {
        // SAFETY: NULL arguments are refused before any use.
        unsafe {
            assert!(__ibv_create_srq_1_1(null_mut(), null_mut()).is_null());
            assert_eq!(crate::ffi::errno(), libc::EINVAL);
            assert_eq!(__ibv_modify_srq_1_1(null_mut(), null_mut(), 0), libc::EINVAL);
            assert_eq!(__ibv_query_srq_1_1(null_mut(), null_mut()), libc::EINVAL);
            assert_eq!(__ibv_destroy_srq_1_1(null_mut()), libc::EINVAL);
            assert!(__ibv_create_qp_1_1(null_mut(), null_mut()).is_null());
            assert!(ibv_qp_to_qp_ex(null_mut()).is_null());
            assert_eq!(__ibv_query_qp_1_1(null_mut(), null_mut(), 0, null_mut()), libc::EINVAL);
            assert_eq!(__ibv_modify_qp_1_1(null_mut(), null_mut(), 0), libc::EINVAL);
            assert_eq!(__ibv_destroy_qp_1_1(null_mut()), libc::EINVAL);
            assert_eq!(ibv_query_qp_data_in_order(null_mut(), IBV_WR_SEND, 0), 0);
            assert!(__ibv_create_ah_1_1(null_mut(), null_mut()).is_null());
            assert!(ibv_create_ah_from_wc(null_mut(), null_mut(), null_mut(), 1).is_null());
            assert_eq!(
                ibv_init_ah_from_wc(null_mut(), 1, null_mut(), null_mut(), null_mut()),
                -1
            );
            assert_eq!(__ibv_destroy_ah_1_1(null_mut()), libc::EINVAL);
            assert_eq!(__ibv_attach_mcast_1_1(null_mut(), std::ptr::null(), 0), libc::EINVAL);
            assert_eq!(__ibv_detach_mcast_1_1(null_mut(), std::ptr::null(), 0), libc::EINVAL);
            assert_eq!(
                ibv_resolve_eth_l2_from_gid(null_mut(), null_mut(), null_mut(), null_mut()),
                -libc::EINVAL
            );
            assert_eq!(ibv_set_ece(null_mut(), null_mut()), libc::EINVAL);
            assert_eq!(ibv_query_ece(null_mut(), null_mut()), libc::EINVAL);
        }
    }

    #[test]
    fn qp_ex_view() {
        // SAFETY: a zeroed verbs_qp is a valid plain-data value.
        unsafe {
            let mut vqp: verbs_qp = std::mem::zeroed();
            let qp = (&mut vqp as *mut verbs_qp).cast::<ibv_qp>();
            assert!(ibv_qp_to_qp_ex(qp).is_null());
            (*qp.cast::<verbs_qp>()).comp_mask = VERBS_QP_EX;
            assert_eq!(ibv_qp_to_qp_ex(qp) as usize, qp as usize);
        }
    }

    #[test]
    fn set_ece_needs_vendor() {
        // SAFETY: the vendor check runs before the QP's context is used.
        unsafe {
            let mut vqp: verbs_qp = std::mem::zeroed();
            let qp = (&mut vqp as *mut verbs_qp).cast::<ibv_qp>();
            let mut ece = ibv_ece {
                vendor_id: 0,
                options: 0,
                comp_mask: 0,
            };
            assert_eq!(ibv_set_ece(qp, &mut ece), libc::EOPNOTSUPP);
            assert_eq!(crate::ffi::errno(), libc::EOPNOTSUPP);
        }
    }
}
