//! Protection domains, memory regions, device memory, imports (upstream's
//! `verbs.c`).
//!
//! Registration keeps upstream's fork protection: the pages of a region are
//! marked MADV_DONTFORK (when `ibv_fork_init` was called) for its lifetime,
//! except for on-demand-paging regions.
//!
//! Where upstream would crash on a NULL object pointer these functions fail
//! cleanly with EINVAL in the function's error convention.

use std::os::raw::{c_int, c_uint, c_void};
use std::ptr::null_mut;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::verbs::{mr::effective_access, mr::rereg_input_ok, null_errno, vdev_of};

fn dontfork(addr: *mut c_void, length: usize) -> c_int {
    crate::fork::range(addr as usize, length, true)
}

fn dofork(addr: *mut c_void, length: usize) -> c_int {
    crate::fork::range(addr as usize, length, false)
}

crate::export! {
    fn __ibv_alloc_pd_1_1(context: *mut ibv_context) -> *mut ibv_pd [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: an open context; the provider returns NULL or a PD.
        unsafe {
            let f = crate::op!(context, alloc_pd);
            let pd = f(context);
            if !pd.is_null() {
                (*pd).context = context;
            }
            pd
        }
    }

    /// 0 or an errno value.
    fn __ibv_dealloc_pd_1_1(pd: *mut ibv_pd) -> c_int [on_panic: libc::EIO] {
        if pd.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a PD of an open context.
        unsafe {
            let f = crate::op!((*pd).context, dealloc_pd);
            f(pd)
        }
    }

    fn ibv_reg_mr_iova2(pd: *mut ibv_pd, addr: *mut c_void, length: usize, iova: u64, access: c_uint) -> *mut ibv_mr [on_panic: null_mut()] {
        if pd.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context whose device is a verbs_device.
        unsafe { reg_mr(pd, addr, length, iova, access) }
    }

    fn __ibv_reg_mr_1_1(pd: *mut ibv_pd, addr: *mut c_void, length: usize, access: c_int) -> *mut ibv_mr [on_panic: null_mut()] {
        // SAFETY: ibv_reg_mr_iova2 has this function's contract (NULL `pd`
        // refused, else a PD of an open context); only the iova is derived.
        unsafe { ibv_reg_mr_iova2(pd, addr, length, addr as usize as u64, access as c_uint) }
    }

    fn ibv_reg_mr_iova(pd: *mut ibv_pd, addr: *mut c_void, length: usize, iova: u64, access: c_int) -> *mut ibv_mr [on_panic: null_mut()] {
        // SAFETY: ibv_reg_mr_iova2 has this function's contract (NULL `pd`
        // refused, else a PD of an open context).
        unsafe { ibv_reg_mr_iova2(pd, addr, length, iova, access as c_uint) }
    }

    fn ibv_import_pd(context: *mut ibv_context, pd_handle: u32) -> *mut ibv_pd [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: an open context.
        unsafe {
            let f = crate::op!(context, import_pd);
            f(context, pd_handle)
        }
    }

    fn ibv_unimport_pd(pd: *mut ibv_pd) -> () [on_panic: ()] {
        if pd.is_null() {
            return;
        }
        // SAFETY: an imported PD of an open context.
        unsafe {
            crate::op!((*pd).context, unimport_pd)(pd);
        }
    }

    fn ibv_import_mr(pd: *mut ibv_pd, mr_handle: u32) -> *mut ibv_mr [on_panic: null_mut()] {
        if pd.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context.
        unsafe {
            let f = crate::op!((*pd).context, import_mr);
            f(pd, mr_handle)
        }
    }

    fn ibv_unimport_mr(mr: *mut ibv_mr) -> () [on_panic: ()] {
        if mr.is_null() {
            return;
        }
        // SAFETY: an imported MR of an open context.
        unsafe {
            crate::op!((*mr).context, unimport_mr)(mr);
        }
    }

    fn ibv_import_dm(context: *mut ibv_context, dm_handle: u32) -> *mut ibv_dm [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: an open context.
        unsafe {
            let f = crate::op!(context, import_dm);
            f(context, dm_handle)
        }
    }

    fn ibv_unimport_dm(dm: *mut ibv_dm) -> () [on_panic: ()] {
        if dm.is_null() {
            return;
        }
        // SAFETY: an imported DM of an open context.
        unsafe {
            crate::op!((*dm).context, unimport_dm)(dm);
        }
    }

    /// A region over `length` bytes at `offset` of a dma-buf; `mr->addr`
    /// holds the offset.
    fn ibv_reg_dmabuf_mr(pd: *mut ibv_pd, offset: u64, length: usize, iova: u64, fd: c_int, access: c_int) -> *mut ibv_mr [on_panic: null_mut()] {
        if pd.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context.
        unsafe {
            let context = (*pd).context;
            let f = crate::op!(context, reg_dmabuf_mr);
            let mr = f(pd, offset, length, iova, fd, access);
            if mr.is_null() {
                return null_mut();
            }
            (*mr).context = context;
            (*mr).pd = pd;
            (*mr).addr = offset as usize as *mut c_void;
            (*mr).length = length;
            mr
        }
    }

    /// 0, or one of the negative `IBV_REREG_MR_ERR_*` codes with errno.
    fn ibv_rereg_mr(mr: *mut ibv_mr, flags: c_int, pd: *mut ibv_pd, addr: *mut c_void, length: usize, access: c_int) -> c_int [on_panic: IBV_REREG_MR_ERR_INPUT] {
        if mr.is_null() {
            set_errno(libc::EINVAL);
            return IBV_REREG_MR_ERR_INPUT;
        }
        // SAFETY: an MR of an open context; every MR is a verbs_mr.
        unsafe { rereg_mr(mr, flags, pd, addr, length, access) }
    }

    /// 0 or an errno value.
    fn __ibv_dereg_mr_1_1(mr: *mut ibv_mr) -> c_int [on_panic: libc::EIO] {
        if mr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: an MR of an open context; every MR is a verbs_mr (its
        // fields are read before the provider frees it).
        unsafe {
            let vmr = mr.cast::<verbs_mr>();
            let addr = (*mr).addr;
            let length = (*mr).length;
            let mr_type = (*vmr).mr_type;
            let access = (*vmr).access;
            let f = crate::op!((*mr).context, dereg_mr);
            let ret = f(vmr);
            if ret == 0 && mr_type == IBV_MR_TYPE_MR && access as u32 & IBV_ACCESS_ON_DEMAND == 0 {
                dofork(addr, length);
            }
            ret
        }
    }
}

/// `ibv_reg_mr_iova2`.
///
/// # Safety
/// `pd` is a PD of an open context.
unsafe fn reg_mr(pd: *mut ibv_pd, addr: *mut c_void, length: usize, iova: u64, access: c_uint) -> *mut ibv_mr {
    // SAFETY: `pd` is a live PD (caller's contract).
    let context = unsafe { (*pd).context };
    let odp = access & IBV_ACCESS_ON_DEMAND != 0;
    // SAFETY: `context` is the PD's open context.
    let dev = unsafe { vdev_of(context) };
    let core_support = if dev.is_null() {
        0
    } else {
        // SAFETY: a non-NULL device of an open context is the provider's
        // live verbs_device.
        unsafe { (*dev).core_support }
    };
    let access = effective_access(access, core_support);
    if !odp && dontfork(addr, length) != 0 {
        return null_mut();
    }
    // SAFETY: `context` is open, so its op table is filled; the provider's
    // reg_mr takes the application's PD and buffer as they are.
    let mr = unsafe { crate::op!(context, reg_mr)(pd, addr, length, iova, access as c_int) };
    if !mr.is_null() {
        // SAFETY: the provider returned a live MR that nobody else has seen
        // yet.
        unsafe {
            (*mr).context = context;
            (*mr).pd = pd;
            (*mr).addr = addr;
            (*mr).length = length;
        }
    } else if !odp {
        dofork(addr, length);
    }
    mr
}

/// `ibv_rereg_mr`.
///
/// # Safety
/// `mr` is an MR of an open context (every MR is the first member of a
/// provider's `verbs_mr`).
unsafe fn rereg_mr(
    mr: *mut ibv_mr,
    flags: c_int,
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> c_int {
    let vmr = mr.cast::<verbs_mr>();
    // SAFETY: `mr` is the first member of a live verbs_mr (caller's
    // contract).
    let mr_type = unsafe { (*vmr).mr_type };
    if !rereg_input_ok(mr_type, flags, addr.is_null(), length, access) {
        set_errno(libc::EINVAL);
        return IBV_REREG_MR_ERR_INPUT;
    }
    let translation = flags & IBV_REREG_MR_CHANGE_TRANSLATION as c_int != 0;
    let mut dofork_onfail = false;
    if translation {
        if dontfork(addr, length) != 0 {
            return IBV_REREG_MR_ERR_DONT_FORK_NEW;
        }
        dofork_onfail = true;
    }
    // SAFETY: `mr` is a live MR (caller's contract).
    let (old_addr, old_len, context) = unsafe { ((*mr).addr, (*mr).length, (*mr).context) };
    // SAFETY: `context` is the MR's open context, so its op table is filled;
    // the provider's rereg_mr takes the application's arguments as they are.
    let err = unsafe { crate::op!(context, rereg_mr)(vmr, flags, pd, addr, length, access) };
    if err == 0 {
        if flags & IBV_REREG_MR_CHANGE_PD as c_int != 0 {
            // SAFETY: the MR is still live after a successful rereg.
            unsafe { (*mr).pd = pd };
        }
        if translation {
            // SAFETY: as above.
            unsafe {
                (*mr).addr = addr;
                (*mr).length = length;
            }
            if dofork(old_addr, old_len) != 0 {
                return IBV_REREG_MR_ERR_DO_FORK_OLD;
            }
        }
        0
    } else if dofork_onfail && dofork(addr, length) != 0 {
        IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW
    } else {
        IBV_REREG_MR_ERR_CMD
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_arguments_fail_cleanly() {
        // SAFETY: NULL arguments are refused before any use.
        unsafe {
            assert!(__ibv_alloc_pd_1_1(null_mut()).is_null());
            assert_eq!(crate::ffi::errno(), libc::EINVAL);
            assert_eq!(__ibv_dealloc_pd_1_1(null_mut()), libc::EINVAL);
            assert!(__ibv_reg_mr_1_1(null_mut(), null_mut(), 0, 0).is_null());
            assert!(ibv_reg_dmabuf_mr(null_mut(), 0, 0, 0, -1, 0).is_null());
            assert_eq!(
                ibv_rereg_mr(null_mut(), 0, null_mut(), null_mut(), 0, 0),
                IBV_REREG_MR_ERR_INPUT
            );
            assert_eq!(__ibv_dereg_mr_1_1(null_mut()), libc::EINVAL);
            assert!(ibv_import_pd(null_mut(), 1).is_null());
            assert!(ibv_import_dm(null_mut(), 1).is_null());
            ibv_unimport_pd(null_mut());
            ibv_unimport_mr(null_mut());
            ibv_unimport_dm(null_mut());
        }
    }

    #[test]
    fn rereg_refuses_bad_input_before_any_dispatch() {
        // A verbs_mr without a context: the checks must fail before the
        // op table is consulted.
        // SAFETY: verbs_mr is a C struct of integers and pointers, for
        // which all-zero (NULL pointers) is a valid value.
        let mut vmr: verbs_mr = unsafe { std::mem::zeroed() };
        vmr.mr_type = IBV_MR_TYPE_NULL_MR;
        let mr = &mut vmr.ibv_mr as *mut ibv_mr;
        // SAFETY: mr points to a local verbs_mr.
        unsafe {
            assert_eq!(
                ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD as c_int, null_mut(), null_mut(), 0, 0),
                IBV_REREG_MR_ERR_INPUT
            );
            assert_eq!(crate::ffi::errno(), libc::EINVAL);
            (*mr.cast::<verbs_mr>()).mr_type = IBV_MR_TYPE_MR;
            assert_eq!(
                ibv_rereg_mr(mr, 1 << 5, null_mut(), null_mut(), 0, 0),
                IBV_REREG_MR_ERR_INPUT
            );
            assert_eq!(
                ibv_rereg_mr(
                    mr,
                    IBV_REREG_MR_CHANGE_TRANSLATION as c_int,
                    null_mut(),
                    null_mut(),
                    4096,
                    0
                ),
                IBV_REREG_MR_ERR_INPUT
            );
            assert_eq!(
                ibv_rereg_mr(mr, 0, null_mut(), null_mut(), 0, IBV_ACCESS_LOCAL_WRITE as c_int),
                IBV_REREG_MR_ERR_INPUT
            );
        }
    }
}
