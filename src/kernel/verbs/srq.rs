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

/// Fills the `verbs_srq` wrapper fields after a successful create.
///
/// # Safety
/// `vsrq` is the provider's writable `verbs_srq`.
unsafe fn set_vsrq(vsrq: *mut verbs_srq, a: &ibv_srq_init_attr_ex, srq_num: u32) {
    // SAFETY: `vsrq` is writable (contract); only its own fields are stored.
    unsafe {
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
}

fn err(e: c_int) -> c_int {
    set_errno(e);
    e
}

/// The objects an XRC SRQ (XRCD, returned for `set_vsrq`, CQ and the SRQ
/// number it answers into `srq_num`) or a tag-matching SRQ (CQ, tag
/// count) is created on. EINVAL (errno set) when `a` lacks one of them.
///
/// # Safety
/// `a`'s `cq` / `xrcd` are live objects where its `comp_mask` says so;
/// `srq_num` outlives the command.
unsafe fn srq_type_objects(
    c: &mut Cmd,
    a: &ibv_srq_init_attr_ex,
    srq_type: u32,
    srq_num: &mut u32,
) -> Result<*mut verbs_xrcd, c_int> {
    match srq_type {
        IBV_SRQT_XRC => {
            if a.comp_mask & IBV_SRQ_INIT_ATTR_XRCD == 0 || a.comp_mask & IBV_SRQ_INIT_ATTR_CQ == 0 {
                return Err(err(libc::EINVAL));
            }
            let vxrcd: *mut verbs_xrcd = outer(a.xrcd);
            // SAFETY: the mask names both an XRCD (a `verbs_xrcd` from the
            // command layer, hence `outer`) and a CQ: live objects (contract).
            let (xrcd_handle, cq_handle) = unsafe { ((*vxrcd).handle, (*a.cq).handle) };
            c.in_obj(attr::CREATE_SRQ_XRCD_HANDLE, xrcd_handle);
            c.in_obj(attr::CREATE_SRQ_CQ_HANDLE, cq_handle);
            c.out(attr::CREATE_SRQ_RESP_SRQ_NUM, srq_num);
            Ok(vxrcd)
        }
        IBV_SRQT_TM => {
            if a.comp_mask & IBV_SRQ_INIT_ATTR_CQ == 0
                || a.comp_mask & IBV_SRQ_INIT_ATTR_TM == 0
                || a.tm_cap.max_num_tags == 0
            {
                return Err(err(libc::EINVAL));
            }
            // SAFETY: the mask names a CQ: a live object (contract).
            c.in_obj(attr::CREATE_SRQ_CQ_HANDLE, unsafe { (*a.cq).handle });
            c.in_u32(attr::CREATE_SRQ_MAX_NUM_TAGS, a.tm_cap.max_num_tags);
            Ok(core::ptr::null_mut())
        }
        _ => Ok(core::ptr::null_mut()),
    }
}

/// The members of the XSRQ `write()` request that have no ioctl attribute.
///
/// # Safety
/// A non-null `a.cq` is a live CQ; `vxrcd` is null or a live XRCD.
unsafe fn xsrq_members(c: &mut Cmd, a: &ibv_srq_init_attr_ex, vxrcd: *mut verbs_xrcd) {
    // The XSRQ request's own members (upstream fills them from the
    // caller's attributes, whatever the attribute mask says).
    c.wonly(Some(req!(ib_uverbs_create_xsrq, srq_type)), None, a.srq_type as u64);
    if !a.cq.is_null() {
        c.wonly(
            Some(req!(ib_uverbs_create_xsrq, cq_handle)),
            None,
            // SAFETY: a non-null `cq` is a live CQ (contract).
            unsafe { (*a.cq).handle } as u64,
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
            // SAFETY: `vxrcd` is non-null only when `srq_type_objects` set
            // it from the live XRCD of an XRC request (contract).
            unsafe { (*vxrcd).handle } as u64,
        );
    }
}

/// Upstream's `ibv_icmd_create_srq`.
///
/// # Safety
/// `pd` is a live PD on an open context; exactly one of `vsrq` / `srq_in`
/// is the provider's writable SRQ object; `attr_ex` is readable and
/// writable, and its `cq` / `xrcd` are live objects where its `comp_mask`
/// (or, for `cq`, non-null) says so; the compat buffers valid for their
/// sizes.
unsafe fn icmd_create_srq(
    pd: *mut ibv_pd,
    vsrq: *mut verbs_srq,
    srq_in: *mut ibv_srq,
    attr_ex: *mut ibv_srq_init_attr_ex,
    compat: Compat,
) -> c_int {
    let srq: *mut ibv_srq = if vsrq.is_null() { srq_in } else { vsrq.cast() };
    // SAFETY: `attr_ex` is readable and writable and not otherwise accessed
    // during this call (contract).
    let a = unsafe { &mut *attr_ex };
    // SAFETY: `pd` is live (contract); `srq` is the provider's writable SRQ,
    // whose mutex and condition variable are (re)initialised here before
    // anyone can use them, as upstream does.
    let (ctx, pd_handle) = unsafe {
        let ctx = (*pd).context;
        (*srq).context = ctx;
        libc::pthread_mutex_init(core::ptr::addr_of_mut!((*srq).mutex), core::ptr::null());
        libc::pthread_cond_init(core::ptr::addr_of_mut!((*srq).cond), core::ptr::null());
        (ctx, (*pd).handle)
    };

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
    // SAFETY: `ctx` is the PD's open context; no linked blocks.
    let mut c = compat.apply(unsafe { Cmd::new(ctx, &m::CREATE_SRQ, 13, core::ptr::null_mut()) });
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

    let mut srq_num: u32 = 0;
    let (mut max_wr, mut max_sge) = (a.attr.max_wr, a.attr.max_sge);
    // SAFETY: `a`'s `cq` / `xrcd` are live where its mask says so
    // (contract); `srq_num` is a local alive until the command has run.
    let vxrcd = match unsafe { srq_type_objects(&mut c, a, srq_type, &mut srq_num) } {
        Ok(v) => v,
        Err(e) => return e,
    };
    if xsrq {
        // SAFETY: a non-null `a.cq` is a live CQ (contract); `vxrcd` is
        // null or the live XRCD of an XRC request.
        unsafe { xsrq_members(&mut c, a, vxrcd) };
    }

    let h = c
        .out_obj(attr::CREATE_SRQ_HANDLE)
        .w(resp!(ib_uverbs_create_srq_resp, srq_handle))
        .idx();
    c.in_u64(attr::CREATE_SRQ_TYPE, srq_type as u64);
    c.in_u64(attr::CREATE_SRQ_USER_HANDLE, srq as usize as u64)
        .w(rq!(user_handle));
    c.in_obj(attr::CREATE_SRQ_PD_HANDLE, pd_handle).w(rq!(pd_handle));
    c.in_u32(attr::CREATE_SRQ_MAX_WR, a.attr.max_wr).w(rq!(max_wr));
    c.in_u32(attr::CREATE_SRQ_MAX_SGE, a.attr.max_sge).w(rq!(max_sge));
    c.in_u32(attr::CREATE_SRQ_LIMIT, a.attr.srq_limit).w(rq!(srq_limit));
    // SAFETY: `ctx` is the PD's open context.
    c.in_fd(attr::CREATE_SRQ_EVENT_FD, unsafe { (*ctx).async_fd });
    c.out(attr::CREATE_SRQ_RESP_MAX_WR, &mut max_wr)
        .w(resp!(ib_uverbs_create_srq_resp, max_wr));
    c.out(attr::CREATE_SRQ_RESP_MAX_SGE, &mut max_sge)
        .w(resp!(ib_uverbs_create_srq_resp, max_sge));
    // SAFETY: as above.
    if unsafe { state::imported(ctx) } {
        c.ioctl_only();
    }

    // SAFETY: `c` points only at the locals `srq_num`, `max_wr`, `max_sge`
    // (alive until the end) and the caller's compat buffers (contract).
    let path = match unsafe { c.exec() } {
        Ok(p) => p,
        Err(e) => return e,
    };
    let handle = c.obj(h);
    // SAFETY: `srq` is the provider's writable SRQ (contract).
    unsafe { (*srq).handle = handle };
    // Unchanged where the form's response has no such member (ABI 5).
    a.attr.max_wr = max_wr;
    a.attr.max_sge = max_sge;
    match path {
        crate::kernel::builder::Path::Ioctl if !vsrq.is_null() => {
            // SAFETY: a non-null `vsrq` is the provider's writable wrapper.
            unsafe { set_vsrq(vsrq, a, srq_num) };
        }
        _ if xsrq && !vsrq.is_null() => {
            let r: ib_uverbs_create_srq_resp = c.resp_as();
            // SAFETY: as above.
            unsafe { set_vsrq(vsrq, a, r.srqn) };
        }
        _ => {}
    }
    0
}

/// `ibv_cmd_create_srq`.
///
/// # Safety
/// `pd` is a live PD on an open context; `srq` the provider's SRQ object;
/// `attr` readable and writable; `cmd` / `resp` have `cmd_size` /
/// `resp_size` bytes (at least their core structs).
pub unsafe fn create_srq(
    pd: *mut ibv_pd,
    srq: *mut ibv_srq,
    attr: *mut ibv_srq_init_attr,
    cmd: *mut ibv_create_srq,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_srq_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `ibv_srq_init_attr_ex` is plain C data (integers and raw
    // pointers): all-zero is a valid value.
    let mut ax: ibv_srq_init_attr_ex = unsafe { core::mem::zeroed() };
    // SAFETY: `attr` is readable (contract).
    unsafe {
        ax.srq_context = (*attr).srq_context;
        ax.attr = (*attr).attr;
    }
    // SAFETY: `pd`, `srq` and the buffers are the caller's (contract); `ax`
    // is a local with a zero mask (basic SRQ: no CQ or XRCD is read).
    let ret = unsafe {
        icmd_create_srq(
            pd,
            core::ptr::null_mut(),
            srq,
            &mut ax,
            Compat::of(cmd, cmd_size, resp, resp_size),
        )
    };
    if ret == 0 {
        // SAFETY: `attr` is writable (contract).
        unsafe {
            (*attr).attr.max_wr = ax.attr.max_wr;
            (*attr).attr.max_sge = ax.attr.max_sge;
        }
    }
    ret
}

/// `ibv_cmd_create_srq_ex`.
///
/// # Safety
/// `srq` is the provider's `verbs_srq`; `attr_ex` readable and writable,
/// its `pd` (and `cq` / `xrcd` where the mask names them) live objects on
/// an open context; `cmd` / `resp` have `cmd_size` / `resp_size` bytes.
pub unsafe fn create_srq_ex(
    _ctx: *mut ibv_context,
    srq: *mut verbs_srq,
    attr_ex: *mut ibv_srq_init_attr_ex,
    cmd: *mut ibv_create_xsrq,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_srq_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `attr_ex` is readable (contract); the mask and PD are copied
    // out before icmd_create_srq takes its own reference.
    let (comp_mask, pd) = unsafe { ((*attr_ex).comp_mask, (*attr_ex).pd) };
    if comp_mask >= IBV_SRQ_INIT_ATTR_RESERVED {
        return err(libc::EOPNOTSUPP);
    }
    if comp_mask & IBV_SRQ_INIT_ATTR_PD == 0 {
        return err(libc::EINVAL);
    }
    // SAFETY: the mask names a PD, live by contract; the rest is the
    // caller's, under icmd_create_srq's contract.
    unsafe {
        icmd_create_srq(
            pd,
            srq,
            core::ptr::null_mut(),
            attr_ex,
            Compat::of(cmd, cmd_size, resp, resp_size),
        )
    }
}

/// `ibv_cmd_modify_srq` (the ABI 3 layout on such kernels).
///
/// # Safety
/// `srq` is a live SRQ on an open context; `srq_attr` readable; `cmd` has
/// `cmd_size` bytes (at least its core struct).
pub unsafe fn modify_srq(
    srq: *mut ibv_srq,
    srq_attr: *mut ibv_srq_attr,
    srq_attr_mask: c_int,
    cmd: *mut ibv_modify_srq,
    cmd_size: usize,
) -> c_int {
    // SAFETY: `srq_attr` is readable and `srq` live (contract).
    let (a, ctx, handle) = unsafe { (&*srq_attr, (*srq).context, (*srq).handle) };
    if state::abi_ver() == 3 {
        let new_core = core::mem::size_of::<ibv_modify_srq>();
        let old_core = core::mem::size_of::<ibv_modify_srq_v3>();
        let drv = cmd_size.saturating_sub(new_core);
        let mut buf = vec![0u64; (old_core + drv).div_ceil(8)];
        let p = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: the provider's driver data is the `drv` bytes after the
        // core struct in its `cmd_size`-byte buffer; `buf` has room for the
        // v3 core plus `drv` and is u64-aligned for the v3 struct, which
        // the `&mut` borrows exclusively (`buf` is only used through `p`).
        let v3 = unsafe {
            core::ptr::copy_nonoverlapping(cmd.cast::<u8>().add(new_core), p.add(old_core), drv);
            &mut *p.cast::<ibv_modify_srq_v3>()
        };
        v3.core = ib_uverbs_modify_srq_v3 {
            srq_handle: handle,
            attr_mask: srq_attr_mask as u32,
            max_wr: a.max_wr,
            srq_limit: a.srq_limit,
            ..Default::default()
        };
        // SAFETY: `buf` (`old_core + drv` bytes at `p`) outlives `c`; `ctx`
        // is open.
        let mut c = unsafe {
            Cmd::write_only(
                ctx,
                &m::MODIFY_SRQ,
                p,
                old_core,
                old_core + drv,
                core::ptr::null_mut(),
                0,
                0,
            )
        };
        c.set_write(Some(m::MODIFY_SRQ_V3));
        // SAFETY: as above.
        return super::ok(unsafe { c.exec() });
    }
    // SAFETY: `cmd` holds at least its core request (contract).
    let k = unsafe { &mut (*cmd).core };
    k.srq_handle = handle;
    k.attr_mask = srq_attr_mask as u32;
    k.max_wr = a.max_wr;
    k.srq_limit = a.srq_limit;
    // SAFETY: `ctx` is open; `cmd` has `cmd_size` bytes (contract).
    unsafe { write_req(ctx, &m::MODIFY_SRQ, cmd, cmd_size) }
}

/// `ibv_cmd_query_srq`.
///
/// # Safety
/// `srq` is a live SRQ on an open context; `srq_attr` writable; `cmd` has
/// `cmd_size` bytes (at least its core struct).
pub unsafe fn query_srq(
    srq: *mut ibv_srq,
    srq_attr: *mut ibv_srq_attr,
    cmd: *mut ibv_query_srq,
    cmd_size: usize,
) -> c_int {
    // SAFETY: `srq` is live and `cmd` holds its core request (contract).
    let ctx = unsafe {
        (*cmd).core.srq_handle = (*srq).handle;
        (*cmd).core.reserved = 0;
        (*srq).context
    };
    let mut r: ib_uverbs_query_srq_resp = zeroed();
    let sz = core::mem::size_of_val(&r);
    // SAFETY: `ctx` is open; `cmd` has `cmd_size` bytes, `r` is a local of
    // `sz` bytes.
    if let Err(e) = unsafe { write_cmd(ctx, &m::QUERY_SRQ, cmd, cmd_size, &mut r, sz) } {
        return e;
    }
    // SAFETY: `srq_attr` is writable (contract).
    unsafe {
        (*srq_attr).max_wr = r.max_wr;
        (*srq_attr).max_sge = r.max_sge;
        (*srq_attr).srq_limit = r.srq_limit;
    }
    0
}

/// `ibv_cmd_destroy_srq`: waits for the application to acknowledge the
/// kernel's reported events.
///
/// # Safety
/// `srq` is a live SRQ created through the command layer on an open
/// context (its `mutex` and `cond` initialised).
pub unsafe fn destroy_srq(srq: *mut ibv_srq) -> c_int {
    let mut r: ib_uverbs_destroy_srq_resp = zeroed();
    // SAFETY: `srq` is live (contract).
    let (ctx, handle) = unsafe { ((*srq).context, (*srq).handle) };
    // SAFETY: `ctx` is open; no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::DESTROY_SRQ, 2, core::ptr::null_mut()) };
    c.out(attr::DESTROY_SRQ_RESP, &mut r)
        .w(resp!(ib_uverbs_destroy_srq_resp, events_reported));
    c.in_obj(attr::DESTROY_SRQ_HANDLE, handle)
        .w(req!(ib_uverbs_destroy_srq, srq_handle));
    // SAFETY: the only pointer in `c` is the local `r`, live until the end.
    let mut ret = super::ok(unsafe { c.exec() });
    if state::is_destroy_err(&mut ret) {
        return ret;
    }
    // SAFETY: `srq` is live with initialised `mutex` / `cond` (contract);
    // the counter is read volatile, under the mutex wait_events holds.
    unsafe {
        super::wait_events(
            core::ptr::addr_of_mut!((*srq).mutex),
            core::ptr::addr_of_mut!((*srq).cond),
            || core::ptr::addr_of!((*srq).events_completed).read_volatile() == r.events_reported,
        )
    };
    0
}
