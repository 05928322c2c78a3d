//! Shared receive queues (basic, XRC, tag matching).

use std::os::raw::c_int;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::builder::{req, resp, Cmd};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::state;
use crate::kernel::uapi::*;

use super::cq::Compat;
use super::{outer, write_cmd, write_req};

unsafe fn set_vsrq(vsrq: *mut verbs_srq, a: &ibv_srq_init_attr_ex, srq_num: u32) {
    (*vsrq).srq_type = if a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE != 0 {
        a.srq_type
    } else {
        IBV_SRQT_BASIC
    };
    if (*vsrq).srq_type == IBV_SRQT_XRC {
        (*vsrq).srq_num = srq_num;
        (*vsrq).xrcd = outer(a.xrcd);
    }
    if a.comp_mask & IBV_SRQ_INIT_ATTR_CQ != 0 {
        (*vsrq).cq = a.cq;
    }
}

fn err(e: c_int) -> c_int {
    set_errno(e);
    e
}

/// Upstream's `ibv_icmd_create_srq`.
unsafe fn icmd_create_srq(
    pd: *mut ibv_pd,
    vsrq: *mut verbs_srq,
    srq_in: *mut ibv_srq,
    attr_ex: *mut ibv_srq_init_attr_ex,
    compat: Compat,
) -> c_int {
    let srq: *mut ibv_srq = if vsrq.is_null() { srq_in } else { vsrq.cast() };
    let a = &mut *attr_ex;
    let ctx = (*pd).context;
    (*srq).context = ctx;
    libc::pthread_mutex_init(core::ptr::addr_of_mut!((*srq).mutex), core::ptr::null());
    libc::pthread_cond_init(core::ptr::addr_of_mut!((*srq).cond), core::ptr::null());

    let srq_type = if a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE != 0 {
        a.srq_type
    } else {
        IBV_SRQT_BASIC
    };
    // The write() fallback picks its command from the caller's srq_type
    // member as it stands (upstream does the same) and the kernel ABI.
    let xsrq = a.srq_type != IBV_SRQT_BASIC;
    let form = if xsrq {
        m::CREATE_XSRQ
    } else if state::abi_ver() > 5 {
        m::CREATE_SRQ.write.expect("create_srq write form")
    } else {
        m::CREATE_SRQ_V5
    };
    let mut c = compat.apply(Cmd::new(ctx, &m::CREATE_SRQ, 13, core::ptr::null_mut()));
    c.set_write(Some(form));
    macro_rules! rq {
        ($f:ident) => {
            if xsrq {
                req!(ib_uverbs_create_xsrq, $f)
            } else {
                req!(ib_uverbs_create_srq, $f)
            }
        };
    }

    let mut vxrcd: *mut verbs_xrcd = core::ptr::null_mut();
    let mut srq_num: u32 = 0;
    let (mut max_wr, mut max_sge) = (a.attr.max_wr, a.attr.max_sge);
    match srq_type {
        IBV_SRQT_XRC => {
            if a.comp_mask & IBV_SRQ_INIT_ATTR_XRCD == 0 || a.comp_mask & IBV_SRQ_INIT_ATTR_CQ == 0 {
                return err(libc::EINVAL);
            }
            vxrcd = outer(a.xrcd);
            c.in_obj(attr::CREATE_SRQ_XRCD_HANDLE, (*vxrcd).handle);
            c.in_obj(attr::CREATE_SRQ_CQ_HANDLE, (*a.cq).handle);
            c.out(attr::CREATE_SRQ_RESP_SRQ_NUM, &mut srq_num);
        }
        IBV_SRQT_TM => {
            if a.comp_mask & IBV_SRQ_INIT_ATTR_CQ == 0
                || a.comp_mask & IBV_SRQ_INIT_ATTR_TM == 0
                || a.tm_cap.max_num_tags == 0
            {
                return err(libc::EINVAL);
            }
            c.in_obj(attr::CREATE_SRQ_CQ_HANDLE, (*a.cq).handle);
            c.in_u32(attr::CREATE_SRQ_MAX_NUM_TAGS, a.tm_cap.max_num_tags);
        }
        _ => {}
    }
    if xsrq {
        // The XSRQ request's own members (upstream fills them from the
        // caller's attributes, whatever the attribute mask says).
        c.wonly(Some(req!(ib_uverbs_create_xsrq, srq_type)), None, a.srq_type as u64);
        if !a.cq.is_null() {
            c.wonly(
                Some(req!(ib_uverbs_create_xsrq, cq_handle)),
                None,
                (*a.cq).handle as u64,
            );
        }
        if a.srq_type == IBV_SRQT_TM {
            c.wonly(
                Some(req!(ib_uverbs_create_xsrq, max_num_tags)),
                None,
                a.tm_cap.max_num_tags as u64,
            );
        } else if !vxrcd.is_null() {
            c.wonly(
                Some(req!(ib_uverbs_create_xsrq, xrcd_handle)),
                None,
                (*vxrcd).handle as u64,
            );
        }
    }

    let h = c
        .out_obj(attr::CREATE_SRQ_HANDLE)
        .w(resp!(ib_uverbs_create_srq_resp, srq_handle))
        .idx();
    c.in_u64(attr::CREATE_SRQ_TYPE, srq_type as u64);
    c.in_u64(attr::CREATE_SRQ_USER_HANDLE, srq as usize as u64)
        .w(rq!(user_handle));
    c.in_obj(attr::CREATE_SRQ_PD_HANDLE, (*pd).handle).w(rq!(pd_handle));
    c.in_u32(attr::CREATE_SRQ_MAX_WR, a.attr.max_wr).w(rq!(max_wr));
    c.in_u32(attr::CREATE_SRQ_MAX_SGE, a.attr.max_sge).w(rq!(max_sge));
    c.in_u32(attr::CREATE_SRQ_LIMIT, a.attr.srq_limit).w(rq!(srq_limit));
    c.in_fd(attr::CREATE_SRQ_EVENT_FD, (*ctx).async_fd);
    c.out(attr::CREATE_SRQ_RESP_MAX_WR, &mut max_wr)
        .w(resp!(ib_uverbs_create_srq_resp, max_wr));
    c.out(attr::CREATE_SRQ_RESP_MAX_SGE, &mut max_sge)
        .w(resp!(ib_uverbs_create_srq_resp, max_sge));
    if state::imported(ctx) {
        c.ioctl_only();
    }

    let path = match c.exec() {
        Ok(p) => p,
        Err(e) => return e,
    };
    (*srq).handle = c.obj(h);
    // Unchanged where the form's response has no such member (ABI 5).
    a.attr.max_wr = max_wr;
    a.attr.max_sge = max_sge;
    match path {
        crate::kernel::builder::Path::Ioctl if !vsrq.is_null() => {
            set_vsrq(vsrq, a, srq_num);
        }
        _ if xsrq && !vsrq.is_null() => {
            let r: ib_uverbs_create_srq_resp = c.resp_as();
            set_vsrq(vsrq, a, r.srqn);
        }
        _ => {}
    }
    0
}

/// `ibv_cmd_create_srq`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_srq(
    pd: *mut ibv_pd,
    srq: *mut ibv_srq,
    attr: *mut ibv_srq_init_attr,
    cmd: *mut ibv_create_srq,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_srq_resp,
    resp_size: usize,
) -> c_int {
    let mut ax: ibv_srq_init_attr_ex = core::mem::zeroed();
    ax.srq_context = (*attr).srq_context;
    ax.attr = (*attr).attr;
    let ret = icmd_create_srq(
        pd,
        core::ptr::null_mut(),
        srq,
        &mut ax,
        Compat::of(cmd, cmd_size, resp, resp_size),
    );
    if ret == 0 {
        (*attr).attr.max_wr = ax.attr.max_wr;
        (*attr).attr.max_sge = ax.attr.max_sge;
    }
    ret
}

/// `ibv_cmd_create_srq_ex`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_srq_ex(
    _ctx: *mut ibv_context,
    srq: *mut verbs_srq,
    attr_ex: *mut ibv_srq_init_attr_ex,
    cmd: *mut ibv_create_xsrq,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_srq_resp,
    resp_size: usize,
) -> c_int {
    let a = &*attr_ex;
    if a.comp_mask >= IBV_SRQ_INIT_ATTR_RESERVED {
        return err(libc::EOPNOTSUPP);
    }
    if a.comp_mask & IBV_SRQ_INIT_ATTR_PD == 0 {
        return err(libc::EINVAL);
    }
    icmd_create_srq(
        a.pd,
        srq,
        core::ptr::null_mut(),
        attr_ex,
        Compat::of(cmd, cmd_size, resp, resp_size),
    )
}

/// `ibv_cmd_modify_srq` (the ABI 3 layout on such kernels).
///
/// # Safety
/// Provider arguments.
pub unsafe fn modify_srq(
    srq: *mut ibv_srq,
    srq_attr: *mut ibv_srq_attr,
    srq_attr_mask: c_int,
    cmd: *mut ibv_modify_srq,
    cmd_size: usize,
) -> c_int {
    let a = &*srq_attr;
    if state::abi_ver() == 3 {
        let new_core = core::mem::size_of::<ibv_modify_srq>();
        let old_core = core::mem::size_of::<ibv_modify_srq_v3>();
        let drv = cmd_size.saturating_sub(new_core);
        let mut buf = vec![0u64; (old_core + drv).div_ceil(8)];
        let p = buf.as_mut_ptr().cast::<u8>();
        core::ptr::copy_nonoverlapping(cmd.cast::<u8>().add(new_core), p.add(old_core), drv);
        let v3 = &mut *p.cast::<ibv_modify_srq_v3>();
        v3.core = ib_uverbs_modify_srq_v3 {
            srq_handle: (*srq).handle,
            attr_mask: srq_attr_mask as u32,
            max_wr: a.max_wr,
            srq_limit: a.srq_limit,
            ..Default::default()
        };
        let mut c = Cmd::write_only(
            (*srq).context,
            &m::MODIFY_SRQ,
            p,
            old_core,
            old_core + drv,
            core::ptr::null_mut(),
            0,
            0,
        );
        c.set_write(Some(m::MODIFY_SRQ_V3));
        return super::ok(c.exec());
    }
    let k = &mut (*cmd).core;
    k.srq_handle = (*srq).handle;
    k.attr_mask = srq_attr_mask as u32;
    k.max_wr = a.max_wr;
    k.srq_limit = a.srq_limit;
    write_req((*srq).context, &m::MODIFY_SRQ, cmd, cmd_size)
}

/// `ibv_cmd_query_srq`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn query_srq(
    srq: *mut ibv_srq,
    srq_attr: *mut ibv_srq_attr,
    cmd: *mut ibv_query_srq,
    cmd_size: usize,
) -> c_int {
    (*cmd).core.srq_handle = (*srq).handle;
    (*cmd).core.reserved = 0;
    let mut r: ib_uverbs_query_srq_resp = zeroed();
    let sz = core::mem::size_of_val(&r);
    if let Err(e) = write_cmd((*srq).context, &m::QUERY_SRQ, cmd, cmd_size, &mut r, sz) {
        return e;
    }
    (*srq_attr).max_wr = r.max_wr;
    (*srq_attr).max_sge = r.max_sge;
    (*srq_attr).srq_limit = r.srq_limit;
    0
}

/// `ibv_cmd_destroy_srq`: waits for the application to acknowledge the
/// kernel's reported events.
///
/// # Safety
/// Provider arguments.
pub unsafe fn destroy_srq(srq: *mut ibv_srq) -> c_int {
    let mut r: ib_uverbs_destroy_srq_resp = zeroed();
    let mut c = Cmd::new((*srq).context, &m::DESTROY_SRQ, 2, core::ptr::null_mut());
    c.out(attr::DESTROY_SRQ_RESP, &mut r)
        .w(resp!(ib_uverbs_destroy_srq_resp, events_reported));
    c.in_obj(attr::DESTROY_SRQ_HANDLE, (*srq).handle)
        .w(req!(ib_uverbs_destroy_srq, srq_handle));
    let mut ret = super::ok(c.exec());
    if state::is_destroy_err(&mut ret) {
        return ret;
    }
    super::wait_events(
        core::ptr::addr_of_mut!((*srq).mutex),
        core::ptr::addr_of_mut!((*srq).cond),
        || core::ptr::addr_of!((*srq).events_completed).read_volatile() == r.events_reported,
    );
    0
}
