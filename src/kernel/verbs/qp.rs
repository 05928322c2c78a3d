//! Queue pairs: create (three entry points), open, query, modify, destroy,
//! and the kernel-side post of work requests.

use std::os::raw::c_int;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::builder::{req, resp, Cmd, Field, Place, WriteForm};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::state;
use crate::kernel::uapi::*;

use super::cq::Compat;
use super::{outer, write_cmd, write_req};

const CREATE_QP_EX_SUP_CREATE_FLAGS: u32 = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB
    | IBV_QP_CREATE_SCATTER_FCS
    | IBV_QP_CREATE_CVLAN_STRIPPING
    | IBV_QP_CREATE_SOURCE_QPN
    | IBV_QP_CREATE_PCI_WRITE_END_PADDING;

/// `ibv_qp_cap` and the kernel's five capability members have the same
/// layout (upstream asserts this too).
const CAP_LEN: usize = core::mem::size_of::<ibv_qp_cap>();
const _: () = assert!(CAP_LEN == 20);

/// Upstream's `set_qp`: the generic fields of a QP the kernel just created.
///
/// # Safety
/// `qp` points to a writable `ibv_qp` that nobody else uses yet (its mutex
/// and condition variable are not initialised or not in use); `vqp` is null
/// or the `verbs_qp` whose first member `qp` is.
unsafe fn set_qp(vqp: *mut verbs_qp, qp: *mut ibv_qp, a: &ibv_qp_init_attr_ex, vxrcd: *mut verbs_xrcd) {
    // SAFETY: `qp` is writable and not shared yet (contract), so plain
    // stores to it and initialising its mutex and condition variable in
    // place are sound; the attribute pointers are null.
    unsafe {
        crate::kernel::copy_fields!(*qp, a; qp_context, pd, send_cq, recv_cq, srq, qp_type);
        (*qp).state = IBV_QPS_RESET;

        (*qp).events_completed = 0;
        libc::pthread_mutex_init(core::ptr::addr_of_mut!((*qp).mutex), core::ptr::null());
        libc::pthread_cond_init(core::ptr::addr_of_mut!((*qp).cond), core::ptr::null());
    }
    if !vqp.is_null() {
        // In the provider's own layout (rdma-core 45 moved the tail).
        // SAFETY: the QP's context was set (to an open context) before the
        // command ran.
        let grown = unsafe { state::of((*qp).context) }.and_then(|s| s.registration().qp_ex_grown);
        // A provider of unknown layout (PABI 34 of rdma-core 44 to 52) is
        // written as 44 lays it out, but for the reset of `comp_mask`: at
        // that place a provider of 45 to 52 keeps `wr_flush`, which it may
        // have set already (mlx5 does, before the command); providers
        // allocate their QPs zeroed, so the reset is a no-op for 44's.  The
        // XRC fields land, in a provider of 45 to 52, on the `wr_flush` and
        // `comp_mask` of an XRC receive QP, which has no send operations;
        // no provider reads them, and `ibv_qp_to_qp_ex` looks at both
        // places (generation::qp_is_ex).
        let (comp_mask, xrcd) = crate::generation::qp_tail(vqp, grown.unwrap_or(false));
        // SAFETY: a non-null `vqp` is the writable `verbs_qp` around `qp`
        // (contract), in the layout its provider was built with, or one
        // pointer shorter (both places are inside either layout).
        unsafe {
            if grown.is_some() {
                *comp_mask = 0;
            }
            if a.comp_mask & IBV_QP_INIT_ATTR_XRCD != 0 {
                *comp_mask |= VERBS_QP_XRCD;
                *xrcd = vxrcd;
            }
        }
    }
}

fn einval() -> c_int {
    set_errno(libc::EINVAL);
    libc::EINVAL
}

/// The objects a QP of `a.qp_type` is created on: the XRCD of an XRC_RECV
/// QP (returned, for `set_qp`), else the PD and CQs (see [`qp_cqs`]).
/// EINVAL (errno set) when `a` lacks one its type requires.
///
/// # Safety
/// As [`icmd_create_qp`] for `a`'s object pointers.
unsafe fn qp_objects(c: &mut Cmd, a: &mut ibv_qp_init_attr_ex) -> Result<*mut verbs_xrcd, c_int> {
    match a.qp_type {
        IBV_QPT_XRC_RECV => {
            if a.comp_mask & IBV_QP_INIT_ATTR_XRCD == 0 {
                return Err(einval());
            }
            let vxrcd: *mut verbs_xrcd = outer(a.xrcd);
            // SAFETY: with IBV_QP_INIT_ATTR_XRCD (checked above) `a.xrcd` is
            // a live XRCD, the first member of its `verbs_xrcd` (contract).
            let xrcd_handle = unsafe { (*vxrcd).handle };
            c.in_obj(attr::CREATE_QP_XRCD_HANDLE, xrcd_handle)
                .w(req!(ib_uverbs_create_qp, pd_handle))
                .wx(req!(ib_uverbs_ex_create_qp, pd_handle));
            Ok(vxrcd)
        }
        IBV_QPT_RC | IBV_QPT_UD | IBV_QPT_UC | IBV_QPT_RAW_PACKET | IBV_QPT_XRC_SEND | IBV_QPT_DRIVER => {
            if a.comp_mask & IBV_QP_INIT_ATTR_PD == 0 {
                return Err(einval());
            }
            // SAFETY: with IBV_QP_INIT_ATTR_PD (checked above) `a.pd` is a
            // live PD (contract).
            let pd_handle = unsafe { (*a.pd).handle };
            c.in_obj(attr::CREATE_QP_PD_HANDLE, pd_handle)
                .w(req!(ib_uverbs_create_qp, pd_handle))
                .wx(req!(ib_uverbs_ex_create_qp, pd_handle));
            // SAFETY: `a`'s object pointers are as `icmd_create_qp` requires
            // (contract).
            unsafe { qp_cqs(c, a) }?;
            // As the write() ABI always did.
            if a.qp_type == IBV_QPT_XRC_SEND {
                a.cap.max_recv_wr = 0;
                a.cap.max_recv_sge = 0;
            }
            Ok(core::ptr::null_mut())
        }
        _ => Err(einval()),
    }
}

/// The CQs (and, with IBV_QP_INIT_ATTR_IND_TABLE, the indirection table)
/// of a QP on a PD.
///
/// # Safety
/// As [`icmd_create_qp`] for `a`'s object pointers.
unsafe fn qp_cqs(c: &mut Cmd, a: &ibv_qp_init_attr_ex) -> Result<(), c_int> {
    if a.comp_mask & IBV_QP_INIT_ATTR_IND_TABLE != 0 {
        if a.cap.max_recv_wr != 0 || a.cap.max_recv_sge != 0 || !a.recv_cq.is_null() || !a.srq.is_null() {
            return Err(einval());
        }
        c.require_ex();
        // SAFETY: with IBV_QP_INIT_ATTR_IND_TABLE `a.rwq_ind_tbl` is a
        // live indirection table (contract).
        let tbl_handle = unsafe { (*a.rwq_ind_tbl).ind_tbl_handle };
        c.in_obj(attr::CREATE_QP_IND_TABLE_HANDLE, tbl_handle as u32)
            .wx(req!(ib_uverbs_ex_create_qp, rwq_ind_tbl_handle));
        c.wonly(
            None,
            Some(req!(ib_uverbs_ex_create_qp, comp_mask)),
            IB_UVERBS_CREATE_QP_MASK_IND_TABLE as u64,
        );
        // The send CQ is optional here.
        if a.cap.max_send_wr != 0 {
            if a.send_cq.is_null() {
                return Err(einval());
            }
            // SAFETY: a QP with send WRs names a live send CQ
            // (contract; checked non-null).
            let send_cq_handle = unsafe { (*a.send_cq).handle };
            c.in_obj(attr::CREATE_QP_SEND_CQ_HANDLE, send_cq_handle)
                .w(req!(ib_uverbs_create_qp, send_cq_handle))
                .wx(req!(ib_uverbs_ex_create_qp, send_cq_handle));
        }
    } else {
        // Upstream reads both CQs unchecked (a crash); refused here.
        if a.send_cq.is_null() || (a.qp_type != IBV_QPT_XRC_SEND && a.recv_cq.is_null()) {
            return Err(einval());
        }
        // SAFETY: without an indirection table `a.send_cq` is a live
        // CQ (contract; checked non-null).
        let send_cq_handle = unsafe { (*a.send_cq).handle };
        c.in_obj(attr::CREATE_QP_SEND_CQ_HANDLE, send_cq_handle)
            .w(req!(ib_uverbs_create_qp, send_cq_handle))
            .wx(req!(ib_uverbs_ex_create_qp, send_cq_handle));
        if a.qp_type != IBV_QPT_XRC_SEND {
            // SAFETY: a non-XRC_SEND QP without an indirection table
            // has a live receive CQ (contract).
            let recv_cq_handle = unsafe { (*a.recv_cq).handle };
            c.in_obj(attr::CREATE_QP_RECV_CQ_HANDLE, recv_cq_handle)
                .w(req!(ib_uverbs_create_qp, recv_cq_handle))
                .wx(req!(ib_uverbs_ex_create_qp, recv_cq_handle));
        }
    }
    Ok(())
}

/// `sq_sig_all` and the create flags: the write() forms' own members and
/// the ioctl's CREATE_QP_FLAGS (and SOURCE_QPN). EINVAL (errno set) for
/// flags the kernel command does not support.
fn qp_create_flags(c: &mut Cmd, a: &ibv_qp_init_attr_ex) -> Result<(), c_int> {
    let mut create_flags: u32 = 0;
    c.wonly(
        Some(req!(ib_uverbs_create_qp, sq_sig_all)),
        Some(req!(ib_uverbs_ex_create_qp, sq_sig_all)),
        a.sq_sig_all as u32 as u64,
    );
    if a.sq_sig_all != 0 {
        create_flags |= IB_UVERBS_QP_CREATE_SQ_SIG_ALL;
    }
    if a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS != 0 {
        if a.create_flags & !CREATE_QP_EX_SUP_CREATE_FLAGS != 0 {
            return Err(einval());
        }
        c.require_ex();
        create_flags |= a.create_flags;
        c.wonly(
            None,
            Some(req!(ib_uverbs_ex_create_qp, create_flags)),
            a.create_flags as u64,
        );
        if a.create_flags & IBV_QP_CREATE_SOURCE_QPN != 0 {
            c.in_u32(attr::CREATE_QP_SOURCE_QPN, a.source_qpn)
                .wx(req!(ib_uverbs_ex_create_qp, source_qpn));
            // With the ioctl the source QPN is an attribute of its own.
            create_flags &= !IBV_QP_CREATE_SOURCE_QPN;
        }
    }
    if create_flags != 0 {
        c.in_u32(attr::CREATE_QP_FLAGS, create_flags);
    }
    Ok(())
}

/// Upstream's `ibv_icmd_create_qp`.
///
/// # Safety
/// `ctx` is an open context of ours; `attr_ex` points to a writable
/// `ibv_qp_init_attr_ex` not otherwise borrowed during the call, whose
/// object pointers are live where its `qp_type` and `comp_mask` make them
/// used (`xrcd` for XRC_RECV; `pd`, and `rwq_ind_tbl` with IND_TABLE;
/// `send_cq` unless IND_TABLE without send WRs; `recv_cq` unless IND_TABLE
/// or XRC_SEND; `srq` when non-null) — upstream dereferences them the same
/// way; `vqp` is null or a writable `verbs_qp`, and `qp_in` is a writable
/// `ibv_qp` when `vqp` is null; `compat`'s buffers are null or valid for
/// their sizes; `link` is null or the provider's attribute chain.
unsafe fn icmd_create_qp(
    ctx: *mut ibv_context,
    vqp: *mut verbs_qp,
    qp_in: *mut ibv_qp,
    attr_ex: *mut ibv_qp_init_attr_ex,
    compat: Compat,
    link: *mut ibv_command_buffer,
) -> c_int {
    let qp: *mut ibv_qp = if vqp.is_null() { qp_in } else { vqp.cast() };
    // SAFETY: `attr_ex` is valid, writable and not otherwise borrowed for
    // the duration of this call (contract).
    let a = unsafe { &mut *attr_ex };
    // SAFETY: `ctx` is an open context (contract); `link` is null or the
    // provider's chain (contract).
    // linked.
    let mut c = compat.apply(unsafe { Cmd::new(ctx, &m::CREATE_QP, 15, link) });
    let mut qp_num: u32 = 0;
    // SAFETY: `qp` is `vqp` (its first member is the `ibv_qp`) or, when
    // that is null, `qp_in`; either is writable (contract).
    unsafe { (*qp).context = ctx };

    // The legacy request depends on the kernel ABI; the layout is shared.
    let abi = state::abi_ver();
    c.set_write(Some(if abi > 4 {
        m::CREATE_QP.write.expect("create_qp write form")
    } else if abi == 4 {
        m::CREATE_QP_V4
    } else {
        m::CREATE_QP_V3
    }));

    // SAFETY: `a`'s object pointers are live where its type and mask make
    // them used (contract).
    let vxrcd = match unsafe { qp_objects(&mut c, a) } {
        Ok(v) => v,
        Err(e) => return e,
    };

    let h = c
        .out_obj(attr::CREATE_QP_HANDLE)
        .w(resp!(ib_uverbs_create_qp_resp, qp_handle))
        .wx(resp!(ib_uverbs_ex_create_qp_resp, base.qp_handle))
        .idx();
    c.in_u64(attr::CREATE_QP_TYPE, a.qp_type as u64)
        .w(req!(ib_uverbs_create_qp, qp_type))
        .wx(req!(ib_uverbs_ex_create_qp, qp_type));
    c.in_u64(attr::CREATE_QP_USER_HANDLE, qp as usize as u64)
        .w(req!(ib_uverbs_create_qp, user_handle))
        .wx(req!(ib_uverbs_ex_create_qp, user_handle));
    let cap_req = |off| Place::Req(Field { off, len: CAP_LEN });
    // SAFETY: `a.cap` lives in `*attr_ex`, which outlives the command (it
    // is run below, inside this call).
    unsafe { c.in_ptr(attr::CREATE_QP_CAP, &a.cap) }
        .w(cap_req(core::mem::offset_of!(ib_uverbs_create_qp, max_send_wr)))
        .wx(cap_req(core::mem::offset_of!(ib_uverbs_ex_create_qp, max_send_wr)));
    // SAFETY: `ctx` is an open context (contract).
    let async_fd = unsafe { (*ctx).async_fd };
    c.in_fd(attr::CREATE_QP_EVENT_FD, async_fd);
    // SAFETY: `ctx` is a context made by our context layer (contract).
    if unsafe { state::imported(ctx) } {
        c.ioctl_only();
    }
    if let Err(e) = qp_create_flags(&mut c, a) {
        return e;
    }
    if !a.srq.is_null() {
        // SAFETY: a non-null `a.srq` is a live SRQ (contract).
        let srq_handle = unsafe { (*a.srq).handle };
        c.in_obj(attr::CREATE_QP_SRQ_HANDLE, srq_handle)
            .w(req!(ib_uverbs_create_qp, srq_handle))
            .wx(req!(ib_uverbs_ex_create_qp, srq_handle));
    }
    c.wonly(
        Some(req!(ib_uverbs_create_qp, is_srq)),
        Some(req!(ib_uverbs_ex_create_qp, is_srq)),
        (!a.srq.is_null()) as u64,
    );
    let cap_resp = |off| Place::Resp(Field { off, len: CAP_LEN });
    c.out(attr::CREATE_QP_RESP_CAP, &mut a.cap)
        .w(cap_resp(core::mem::offset_of!(ib_uverbs_create_qp_resp, max_send_wr)))
        .wx(cap_resp(core::mem::offset_of!(
            ib_uverbs_ex_create_qp_resp,
            base.max_send_wr
        )));
    c.out(attr::CREATE_QP_RESP_QP_NUM, &mut qp_num)
        .w(resp!(ib_uverbs_create_qp_resp, qpn))
        .wx(resp!(ib_uverbs_ex_create_qp_resp, base.qpn));

    // SAFETY: the pointers given to `c` are `a.cap` (in `*attr_ex`), the
    // local `qp_num` and `compat`'s provider buffers, all live until this
    // call returns.
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: `qp` is writable (see above) and, its create having just
    // succeeded, used by nobody else yet; `vqp` is null or the `verbs_qp`
    // around it (contract).
    unsafe {
        (*qp).handle = handle;
        (*qp).qp_num = qp_num;
        set_qp(vqp, qp, a, vxrcd);
    }
    0
}

/// `ibv_cmd_create_qp`.
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `qp` a
/// writable `ibv_qp`; `attr` a writable `ibv_qp_init_attr` whose CQs (and
/// SRQ, if non-null) are live; `cmd`/`resp` null or valid for
/// `cmd_size`/`resp_size` bytes.
pub unsafe fn create_qp(
    pd: *mut ibv_pd,
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_init_attr,
    cmd: *mut ibv_create_qp,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_qp_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `attr` is a valid, writable `ibv_qp_init_attr` (contract).
    let at = unsafe { &mut *attr };
    let mut ax: ibv_qp_init_attr_ex = zeroed();
    crate::kernel::copy_fields!(ax, at; qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all);
    ax.comp_mask = IBV_QP_INIT_ATTR_PD;
    ax.pd = pd;
    // SAFETY: `pd` is a live PD of an open context and `qp` a writable QP
    // (contract); `ax` is a local whose PD, CQs and SRQ are the caller's
    // live objects; `cmd`/`resp` are valid for their sizes (contract).
    let ret = unsafe {
        icmd_create_qp(
            (*pd).context,
            core::ptr::null_mut(),
            qp,
            &mut ax,
            Compat::of(cmd, cmd_size, resp, resp_size),
            core::ptr::null_mut(),
        )
    };
    if ret == 0 {
        at.cap = ax.cap;
    }
    ret
}

/// `ibv_cmd_create_qp_ex`.
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `qp` a writable
/// `verbs_qp`; `attr_ex` a writable `ibv_qp_init_attr_ex` whose objects are
/// live as [`icmd_create_qp`] requires; `cmd`/`resp` null or valid for
/// `cmd_size`/`resp_size` bytes.
pub unsafe fn create_qp_ex(
    ctx: *mut ibv_context,
    qp: *mut verbs_qp,
    attr_ex: *mut ibv_qp_init_attr_ex,
    cmd: *mut ibv_create_qp,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_qp_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `attr_ex` is a valid `ibv_qp_init_attr_ex` (contract).
    let comp_mask = unsafe { (*attr_ex).comp_mask };
    if !super::check_comp_mask(
        comp_mask,
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
    ) {
        return einval();
    }
    // SAFETY: this function's contract is `icmd_create_qp`'s, with `vqp`
    // the non-null `qp`.
    unsafe {
        icmd_create_qp(
            ctx,
            qp,
            core::ptr::null_mut(),
            attr_ex,
            Compat::of(cmd, cmd_size, resp, resp_size),
            core::ptr::null_mut(),
        )
    }
}

/// `ibv_cmd_create_qp_ex2`.
///
/// # Safety
/// As for [`create_qp_ex`], with the extended command and response;
/// `driver` null or the provider's attribute chain (rdma-core 65).
#[allow(clippy::too_many_arguments)] // mirrors the C prototype of ibv_cmd_create_qp_ex2
pub unsafe fn create_qp_ex2(
    ctx: *mut ibv_context,
    qp: *mut verbs_qp,
    attr_ex: *mut ibv_qp_init_attr_ex,
    cmd: *mut ibv_create_qp_ex,
    cmd_size: usize,
    resp: *mut ib_uverbs_ex_create_qp_resp,
    resp_size: usize,
    driver: *mut ibv_command_buffer,
) -> c_int {
    let sup = IBV_QP_INIT_ATTR_PD
        | IBV_QP_INIT_ATTR_XRCD
        | IBV_QP_INIT_ATTR_CREATE_FLAGS
        | IBV_QP_INIT_ATTR_MAX_TSO_HEADER
        | IBV_QP_INIT_ATTR_IND_TABLE
        | IBV_QP_INIT_ATTR_RX_HASH
        | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    // SAFETY: `attr_ex` is a valid `ibv_qp_init_attr_ex` (contract).
    let comp_mask = unsafe { (*attr_ex).comp_mask };
    if !super::check_comp_mask(comp_mask, sup) {
        return einval();
    }
    // SAFETY: this function's contract is `icmd_create_qp`'s, with `vqp`
    // the non-null `qp`.
    unsafe {
        icmd_create_qp(
            ctx,
            qp,
            core::ptr::null_mut(),
            attr_ex,
            Compat::of(cmd, cmd_size, resp, resp_size),
            driver,
        )
    }
}

/// `ibv_cmd_destroy_qp`: waits for the application to acknowledge the
/// kernel's reported events.
///
/// # Safety
/// Provider arguments: `qp` is a live QP of an open context, created by
/// this layer (its mutex and condition variable initialised).
pub unsafe fn destroy_qp(qp: *mut ibv_qp) -> c_int {
    let mut r: ib_uverbs_destroy_qp_resp = zeroed();
    // SAFETY: `qp` is live (contract), so its context and handle are
    // readable and the context is open.
    let (ctx, handle) = unsafe { ((*qp).context, (*qp).handle) };
    // SAFETY: `ctx` is open; no provider chain is linked.
    let mut c = unsafe { Cmd::new(ctx, &m::DESTROY_QP, 2, core::ptr::null_mut()) };
    c.out(attr::DESTROY_QP_RESP, &mut r)
        .w(resp!(ib_uverbs_destroy_qp_resp, events_reported));
    c.in_obj(attr::DESTROY_QP_HANDLE, handle)
        .w(req!(ib_uverbs_destroy_qp, qp_handle));
    // SAFETY: the only pointer given to `c` is the local `r`.
    let mut ret = super::ok(unsafe { c.exec() });
    if state::is_destroy_err(&mut ret) {
        return ret;
    }
    // SAFETY: `qp` is still live (the provider frees it after we return),
    // and its mutex and condition variable were initialised at create;
    // `events_completed` is read under that mutex, volatile because the
    // event layer updates it from other threads.
    unsafe {
        super::wait_events(
            core::ptr::addr_of_mut!((*qp).mutex),
            core::ptr::addr_of_mut!((*qp).cond),
            || core::ptr::addr_of!((*qp).events_completed).read_volatile() == r.events_reported,
        );
    }
    0
}

/// `ibv_cmd_open_qp`: opens an XRC target QP by number.
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `qp` a writable
/// `verbs_qp` of `vqp_sz` bytes (at least up to and including its
/// `comp_mask`, as upstream writes that unconditionally); `attr` a valid
/// `ibv_qp_open_attr` whose `xrcd` is live when its mask says so; `cmd` a
/// writable `ibv_open_qp` valid for `cmd_size` bytes; `resp` valid for
/// `resp_size` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn open_qp(
    ctx: *mut ibv_context,
    qp: *mut verbs_qp,
    vqp_sz: c_int,
    attr: *mut ibv_qp_open_attr,
    cmd: *mut ibv_open_qp,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_qp_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `attr` is a valid `ibv_qp_open_attr` (contract).
    let a = unsafe { &*attr };
    if a.comp_mask >= IBV_QP_OPEN_ATTR_RESERVED {
        return libc::EOPNOTSUPP;
    }
    if a.comp_mask & IBV_QP_OPEN_ATTR_XRCD == 0
        || a.comp_mask & IBV_QP_OPEN_ATTR_NUM == 0
        || a.comp_mask & IBV_QP_OPEN_ATTR_TYPE == 0
    {
        return libc::EINVAL;
    }
    let xrcd: *mut verbs_xrcd = outer(a.xrcd);
    // SAFETY: `cmd` is a writable `ibv_open_qp` (contract); with
    // IBV_QP_OPEN_ATTR_XRCD (checked above) `a.xrcd` is a live XRCD, the
    // first member of its `verbs_xrcd`.
    unsafe {
        let k = &mut (*cmd).core;
        k.user_handle = qp as usize as u64;
        k.pd_handle = (*xrcd).handle;
        k.qpn = a.qp_num;
        k.qp_type = a.qp_type as u8;
    }
    // SAFETY: `ctx` is open and `cmd`/`resp` are valid for their sizes
    // (contract).
    let c = match unsafe { write_cmd(ctx, &m::OPEN_QP, cmd, cmd_size, resp, resp_size) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_create_qp_resp = c.resp_as();
    let q: *mut ibv_qp = qp.cast();
    // SAFETY: `q` is the `ibv_qp` at the start of the caller's writable
    // `verbs_qp`, not yet shared, so its mutex and condition variable may
    // be initialised in place.
    unsafe {
        (*q).handle = r.qp_handle;
        (*q).context = ctx;
        (*q).qp_context = a.qp_context;
        (*q).pd = core::ptr::null_mut();
        (*q).send_cq = core::ptr::null_mut();
        (*q).recv_cq = core::ptr::null_mut();
        (*q).srq = core::ptr::null_mut();
        (*q).qp_num = a.qp_num;
        (*q).qp_type = a.qp_type;
        (*q).state = IBV_QPS_UNKNOWN;
        (*q).events_completed = 0;
        libc::pthread_mutex_init(core::ptr::addr_of_mut!((*q).mutex), core::ptr::null());
        libc::pthread_cond_init(core::ptr::addr_of_mut!((*q).cond), core::ptr::null());
    }
    // SAFETY: `ctx` is an open context (contract).
    // The provider's layout: from its registration, or else from the size
    // it gives (its own `sizeof(struct verbs_qp)`, as every provider
    // passes); neither place is written when neither tells.
    let grown = unsafe { state::of(ctx) }
        .and_then(|s| s.registration().qp_ex_grown)
        .or(match vqp_sz as usize {
            n if n == core::mem::size_of::<verbs_qp>() => Some(false),
            n if n == core::mem::size_of::<verbs_qp>() + crate::generation::qp_tail_shift(true) => Some(true),
            _ => None,
        });
    let Some(grown) = grown else { return 0 };
    let shift = crate::generation::qp_tail_shift(grown);
    let (comp_mask, xrcd_at) = crate::generation::qp_tail(qp, grown);
    // SAFETY: `qp` is writable up to its `comp_mask` (contract), in the
    // layout its provider was built with; `xrcd` is written only when the
    // provider's struct of `vqp_sz` bytes reaches it (upstream's
    // `vext_field_avail`).
    unsafe {
        *comp_mask = 0;
        if ((core::mem::offset_of!(verbs_qp, xrcd) + shift) as i64) < vqp_sz as i64 {
            *comp_mask = VERBS_QP_XRCD;
            *xrcd_at = xrcd;
        }
    }
    0
}

/// The five capability members of a query response (`ibv_qp_cap` order).
fn copy_cap(cap: &mut ibv_qp_cap, r: &ib_uverbs_query_qp_resp) {
    crate::kernel::copy_fields!(cap, r; max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data);
}

fn copy_dest_to_ah(ah: &mut ibv_ah_attr, d: &ib_uverbs_qp_dest) {
    ah.grh.dgid.raw = d.dgid;
    ah.grh.flow_label = d.flow_label;
    ah.dlid = d.dlid;
    ah.grh.sgid_index = d.sgid_index;
    ah.grh.hop_limit = d.hop_limit;
    ah.grh.traffic_class = d.traffic_class;
    ah.sl = d.sl;
    ah.src_path_bits = d.src_path_bits;
    ah.static_rate = d.static_rate;
    ah.is_global = d.is_global;
    ah.port_num = d.port_num;
}

/// `ibv_cmd_query_qp`.
///
/// # Safety
/// Provider arguments: `qp` is a live QP of an open context; `attr` and
/// `init_attr` are writable; `cmd` is a writable `ibv_query_qp` valid for
/// `cmd_size` bytes.
pub unsafe fn query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    attr_mask: c_int,
    init_attr: *mut ibv_qp_init_attr,
    cmd: *mut ibv_query_qp,
    cmd_size: usize,
) -> c_int {
    // From IBV_QP_RATE_LIMIT on, attributes need the extended path.
    if attr_mask as u32 & !(IBV_QP_RATE_LIMIT - 1) != 0 {
        return libc::EOPNOTSUPP;
    }
    // SAFETY: `cmd` is a writable `ibv_query_qp` and `qp` a live QP
    // (contract).
    unsafe {
        (*cmd).core.qp_handle = (*qp).handle;
        (*cmd).core.attr_mask = attr_mask as u32;
    }
    let mut r: ib_uverbs_query_qp_resp = zeroed();
    let sz = core::mem::size_of_val(&r);
    // SAFETY: `qp`'s context is open, `cmd` is valid for `cmd_size` bytes
    // (contract) and `r` is a local of `sz` bytes.
    if let Err(e) = unsafe { write_cmd((*qp).context, &m::QUERY_QP, cmd, cmd_size, &mut r, sz) } {
        return e;
    }
    // SAFETY: `attr` is a writable `ibv_qp_attr`, not otherwise borrowed
    // during this call (contract).
    let a = unsafe { &mut *attr };
    crate::kernel::copy_fields!(a, r; qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index);
    // The kernel's states and MTU are `u8`; the verbs ones are C enums.
    crate::kernel::copy_fields!(a, r; qp_state as _, cur_qp_state as _, path_mtu as _, path_mig_state as _);
    crate::kernel::copy_fields!(a, r;
        sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry,
        alt_port_num, alt_timeout,
    );
    copy_cap(&mut a.cap, &r);
    copy_dest_to_ah(&mut a.ah_attr, &r.dest);
    copy_dest_to_ah(&mut a.alt_ah_attr, &r.alt_dest);

    // SAFETY: `init_attr` is a writable `ibv_qp_init_attr`, not otherwise
    // borrowed during this call (contract).
    let i = unsafe { &mut *init_attr };
    // SAFETY: `qp` is a live QP (contract).
    unsafe { crate::kernel::copy_fields!(i, *qp; qp_context, send_cq, recv_cq, srq, qp_type) };
    copy_cap(&mut i.cap, &r);
    i.sq_sig_all = r.sq_sig_all as c_int;
    0
}

fn copy_ah_to_dest(d: &mut ib_uverbs_qp_dest, ah: &ibv_ah_attr) {
    // SAFETY: every member of the `ibv_gid` union is plain bytes of the
    // same 16-byte storage, so reading `raw` is valid whichever was written.
    d.dgid = unsafe { ah.grh.dgid.raw };
    d.flow_label = ah.grh.flow_label;
    d.dlid = ah.dlid;
    d.reserved = 0;
    d.sgid_index = ah.grh.sgid_index;
    d.hop_limit = ah.grh.hop_limit;
    d.traffic_class = ah.grh.traffic_class;
    d.sl = ah.sl;
    d.src_path_bits = ah.src_path_bits;
    d.static_rate = ah.static_rate;
    d.is_global = ah.is_global;
    d.port_num = ah.port_num;
}

/// Upstream's `copy_modify_qp_fields`: only the members `attr_mask` names.
///
/// # Safety
/// `qp` is a live QP.
unsafe fn copy_modify_qp_fields(qp: *mut ibv_qp, a: &ibv_qp_attr, mask: c_int, k: &mut ib_uverbs_modify_qp) {
    let mask = mask as u32;
    let has = |bit: u32| mask & bit != 0;
    // SAFETY: `qp` is a live QP (contract).
    k.qp_handle = unsafe { (*qp).handle };
    k.attr_mask = mask;
    if has(IBV_QP_STATE) {
        k.qp_state = a.qp_state as u8;
    }
    if has(IBV_QP_CUR_STATE) {
        k.cur_qp_state = a.cur_qp_state as u8;
    }
    if has(IBV_QP_EN_SQD_ASYNC_NOTIFY) {
        k.en_sqd_async_notify = a.en_sqd_async_notify;
    }
    if has(IBV_QP_ACCESS_FLAGS) {
        k.qp_access_flags = a.qp_access_flags;
    }
    if has(IBV_QP_PKEY_INDEX) {
        k.pkey_index = a.pkey_index;
    }
    if has(IBV_QP_PORT) {
        k.port_num = a.port_num;
    }
    if has(IBV_QP_QKEY) {
        k.qkey = a.qkey;
    }
    if has(IBV_QP_AV) {
        copy_ah_to_dest(&mut k.dest, &a.ah_attr);
    }
    if has(IBV_QP_PATH_MTU) {
        k.path_mtu = a.path_mtu as u8;
    }
    if has(IBV_QP_TIMEOUT) {
        k.timeout = a.timeout;
    }
    if has(IBV_QP_RETRY_CNT) {
        k.retry_cnt = a.retry_cnt;
    }
    if has(IBV_QP_RNR_RETRY) {
        k.rnr_retry = a.rnr_retry;
    }
    if has(IBV_QP_RQ_PSN) {
        k.rq_psn = a.rq_psn;
    }
    if has(IBV_QP_MAX_QP_RD_ATOMIC) {
        k.max_rd_atomic = a.max_rd_atomic;
    }
    if has(IBV_QP_ALT_PATH) {
        k.alt_pkey_index = a.alt_pkey_index;
        k.alt_port_num = a.alt_port_num;
        k.alt_timeout = a.alt_timeout;
        copy_ah_to_dest(&mut k.alt_dest, &a.alt_ah_attr);
    }
    if has(IBV_QP_MIN_RNR_TIMER) {
        k.min_rnr_timer = a.min_rnr_timer;
    }
    if has(IBV_QP_SQ_PSN) {
        k.sq_psn = a.sq_psn;
    }
    if has(IBV_QP_MAX_DEST_RD_ATOMIC) {
        k.max_dest_rd_atomic = a.max_dest_rd_atomic;
    }
    if has(IBV_QP_PATH_MIG_STATE) {
        k.path_mig_state = a.path_mig_state as u8;
    }
    if has(IBV_QP_DEST_QPN) {
        k.dest_qp_num = a.dest_qp_num;
    }
    k.reserved = [0; 2];
}

/// `ibv_cmd_modify_qp`.
///
/// # Safety
/// Provider arguments: `qp` is a live QP of an open context; `attr` a valid
/// `ibv_qp_attr`; `cmd` a writable `ibv_modify_qp` valid for `cmd_size`
/// bytes.
pub unsafe fn modify_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    attr_mask: c_int,
    cmd: *mut ibv_modify_qp,
    cmd_size: usize,
) -> c_int {
    if attr_mask as u32 & !(IBV_QP_RATE_LIMIT - 1) != 0 {
        return libc::EOPNOTSUPP;
    }
    // SAFETY: `qp` is live, `attr` valid and `cmd` writable, and the two
    // are distinct objects (contract).
    unsafe {
        copy_modify_qp_fields(qp, &*attr, attr_mask, &mut (*cmd).core);
        write_req((*qp).context, &m::MODIFY_QP, cmd, cmd_size)
    }
}

/// `ibv_cmd_modify_qp_ex` (extended `write()`; carries the rate limit).
///
/// # Safety
/// Provider arguments: as for [`modify_qp`], with `cmd` a writable
/// `ibv_modify_qp_ex` of `cmd_size` bytes (its `rate_limit` member is
/// written only when `cmd_size` reaches it) and `resp` valid for
/// `resp_size` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn modify_qp_ex(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    attr_mask: c_int,
    cmd: *mut ibv_modify_qp_ex,
    cmd_size: usize,
    resp: *mut ib_uverbs_ex_modify_qp_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `qp` is live, `attr` valid and `cmd` writable, and the two
    // are distinct objects (contract).
    unsafe { copy_modify_qp_fields(qp, &*attr, attr_mask, &mut (*cmd).core.base) };
    if attr_mask as u32 & IBV_QP_RATE_LIMIT != 0 {
        let end = core::mem::offset_of!(ibv_modify_qp_ex, core)
            + core::mem::offset_of!(ib_uverbs_ex_modify_qp, rate_limit)
            + 4;
        if cmd_size >= end {
            // SAFETY: the provider's command of `cmd_size` bytes reaches
            // past `rate_limit` (just checked); `attr` is valid (contract).
            unsafe { (*cmd).core.rate_limit = (*attr).rate_limit };
        } else {
            return libc::EINVAL;
        }
    }
    // SAFETY: `qp`'s context is open and `cmd`/`resp` are valid for their
    // sizes (contract).
    match unsafe { write_cmd((*qp).context, &m::MODIFY_QP_EX, cmd, cmd_size, resp, resp_size) } {
        Ok(_) => 0,
        Err(e) => e,
    }
}

// --- posting through the kernel -------------------------------------------

/// A request `[hdr][core][wr array][sge array]` built for one post.
struct PostBuf {
    mem: Vec<u64>,
    len: usize,
}

impl PostBuf {
    fn new(len: usize) -> Option<Self> {
        let mut mem = Vec::new();
        mem.try_reserve_exact(len.div_ceil(8)).ok()?;
        mem.resize(len.div_ceil(8), 0);
        Some(PostBuf { mem, len })
    }
    fn ptr(&mut self) -> *mut u8 {
        self.mem.as_mut_ptr().cast()
    }
}

// The parts of a post request are laid out back to back in a `PostBuf`
// (8-byte aligned): each part's size is a multiple of 8, so every part, and
// every element of the arrays, starts 8-byte aligned.
const _: () = assert!(core::mem::size_of::<ibv_post_send>().is_multiple_of(8));
const _: () = assert!(core::mem::size_of::<ibv_post_recv>().is_multiple_of(8));
const _: () = assert!(core::mem::size_of::<ib_uverbs_send_wr>().is_multiple_of(8));
const _: () = assert!(core::mem::size_of::<ib_uverbs_recv_wr>().is_multiple_of(8));
const _: () = assert!(core::mem::size_of::<ibv_sge>().is_multiple_of(8));

/// Runs a post command and reports the first rejected request the way
/// upstream does (`bad_wr` is 1-based in the response).
///
/// # Safety
/// `ctx` is an open context; `b` holds the complete request; `wr` is the
/// head of a null-terminated chain of valid requests that `next` walks
/// (`next` is only called on non-null members of it); `bad_wr` is null or
/// writable.
unsafe fn run_post<W>(
    ctx: *mut ibv_context,
    meth: &'static crate::kernel::builder::Method,
    mut b: PostBuf,
    wr: *mut W,
    bad_wr: *mut *mut W,
    next: impl Fn(*mut W) -> *mut W,
) -> c_int {
    let mut bad: u32 = 0; // every post response is `{ __u32 bad_wr; }`
    let len = b.len;
    // SAFETY: `b` owns at least `len` bytes and `bad` is a local `u32`;
    // both outlive the command, which is run in this function.
    let mut c = unsafe { Cmd::write_only(ctx, meth, b.ptr(), len, len, (&mut bad as *mut u32).cast(), 4, 4) };
    let f = meth.write.expect("post write form");
    c.set_write(Some(WriteForm {
        cmd: f.cmd,
        req: len - core::mem::size_of::<ib_uverbs_cmd_hdr>(),
        resp: 4,
    }));
    // SAFETY: `ctx` is open (contract); the buffers are `b` and `bad`, as
    // above.
    let ret = super::ok(unsafe { c.exec() });
    if bad_wr.is_null() {
        return ret;
    }
    if bad != 0 {
        let mut i = wr;
        let mut n = bad;
        while n > 1 && !i.is_null() {
            i = next(i);
            n -= 1;
        }
        // SAFETY: `bad_wr` is non-null (checked above) and writable
        // (contract).
        unsafe { *bad_wr = i };
    } else if ret != 0 {
        // SAFETY: as above.
        unsafe { *bad_wr = wr };
    }
    ret
}

/// `ibv_cmd_post_send`.
///
/// # Safety
/// Provider arguments: `ibqp` is a live QP of an open context; `wr` is null
/// or the head of a null-terminated chain of valid `ibv_send_wr`s, each
/// with `sg_list` valid for `num_sge` entries (and, on a UD QP, a live
/// `wr.ud.ah`); `bad_wr` is null or writable.
pub unsafe fn post_send(ibqp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int {
    let (mut wr_count, mut sge_count) = (0usize, 0usize);
    let mut i = wr;
    while !i.is_null() {
        // SAFETY: `i` is a non-null member of the caller's valid chain.
        unsafe {
            wr_count += 1;
            sge_count += (*i).num_sge.max(0) as usize;
            i = (*i).next;
        }
    }
    let hdr = core::mem::size_of::<ibv_post_send>();
    let wsz = core::mem::size_of::<ib_uverbs_send_wr>();
    let ssz = core::mem::size_of::<ibv_sge>();
    let Some(mut b) = PostBuf::new(hdr + wr_count * wsz + sge_count * ssz) else {
        return libc::ENOMEM;
    };
    let base = b.ptr();
    // SAFETY: `ibqp` is a live QP (contract).
    let (qp_handle, qp_type, ctx) = unsafe { ((*ibqp).handle, (*ibqp).qp_type, (*ibqp).context) };
    // SAFETY: `base` is the 8-byte aligned, zeroed start of `b`, which is
    // at least `hdr` bytes long and not otherwise referenced while `cmd`
    // lives.
    let cmd = unsafe { &mut *base.cast::<ibv_post_send>() };
    cmd.core.qp_handle = qp_handle;
    cmd.core.wr_count = wr_count as u32;
    cmd.core.sge_count = sge_count as u32;
    cmd.core.wqe_size = wsz as u32;
    // SAFETY: both offsets are within `b`, whose length is
    // `hdr + wr_count * wsz + sge_count * ssz`.
    let (mut n, mut s) = unsafe {
        (
            base.add(hdr).cast::<ib_uverbs_send_wr>(),
            base.add(hdr + wr_count * wsz).cast::<ibv_sge>(),
        )
    };
    let mut i = wr;
    while !i.is_null() {
        // SAFETY: `i` is a non-null member of the caller's valid chain.
        let w = unsafe { &*i };
        let mut k: ib_uverbs_send_wr = zeroed();
        k.wr_id = w.wr_id;
        k.num_sge = w.num_sge.max(0) as u32;
        k.opcode = w.opcode;
        k.send_flags = w.send_flags;
        // SAFETY: both members of the `imm_data`/`invalidate_rkey` union
        // are `u32`s at the same place; upstream copies it either way.
        k.ex = unsafe { w.imm.imm_data };
        if qp_type == IBV_QPT_UD {
            // SAFETY: on a UD QP the `ud` member of the union is the one
            // the application filled in, and its `ah` is live (contract).
            unsafe {
                k.wr.ud.ah = (*w.wr.ud.ah).handle;
                k.wr.ud.remote_qpn = w.wr.ud.remote_qpn;
                k.wr.ud.remote_qkey = w.wr.ud.remote_qkey;
            }
        } else {
            match w.opcode {
                IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM | IBV_WR_RDMA_READ => {
                    // SAFETY: for RDMA opcodes `rdma` is the union member
                    // the application filled in; the kernel's union is
                    // plain data, so writing its `rdma` member is sound.
                    unsafe {
                        k.wr.rdma.remote_addr = w.wr.rdma.remote_addr;
                        k.wr.rdma.rkey = w.wr.rdma.rkey;
                    }
                }
                IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD => {
                    // SAFETY: for atomic opcodes `atomic` is the union
                    // member the application filled in; the kernel's union
                    // is plain data.

                    unsafe {
                        k.wr.atomic.remote_addr = w.wr.atomic.remote_addr;
                        k.wr.atomic.compare_add = w.wr.atomic.compare_add;
                        k.wr.atomic.swap = w.wr.atomic.swap;
                        k.wr.atomic.rkey = w.wr.atomic.rkey;
                    }
                }
                _ => {}
            }
        }
        // SAFETY: `n` is within the wr array of `b` (one slot per member of
        // the chain, counted above) and 8-byte aligned (the asserts above);
        // `s` has room for the `num_sge` entries counted for this request,
        // and `w.sg_list` is valid for them (contract).
        unsafe {
            n.write_unaligned(k);
            n = n.add(1);
            if k.num_sge != 0 {
                core::ptr::copy_nonoverlapping(w.sg_list, s, k.num_sge as usize);
                s = s.add(k.num_sge as usize);
            }
        }
        i = w.next;
    }
    let next_send = |w: *mut ibv_send_wr| {
        // SAFETY: `run_post` passes only non-null members of `wr`'s chain,
        // each a valid `ibv_send_wr` (contract).
        unsafe { (*w).next }
    };
    // SAFETY: `ctx` is open and `bad_wr` null or writable (contract); `wr`
    // heads a valid chain and `next_send` is only given its non-null
    // members.
    unsafe { run_post(ctx, &m::POST_SEND, b, wr, bad_wr, next_send) }
}

/// The common part of [`post_recv`] and [`post_srq_recv`].
///
/// # Safety
/// `ctx` is an open context and `handle` the object's; `wr` and `bad_wr`
/// as for [`post_recv`].
unsafe fn post_recv_common(
    ctx: *mut ibv_context,
    meth: &'static crate::kernel::builder::Method,
    handle: u32,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    let (mut wr_count, mut sge_count) = (0usize, 0usize);
    let mut i = wr;
    while !i.is_null() {
        // SAFETY: `i` is a non-null member of the caller's valid chain.
        unsafe {
            wr_count += 1;
            sge_count += (*i).num_sge.max(0) as usize;
            i = (*i).next;
        }
    }
    // ibv_post_recv and ibv_post_srq_recv share one layout.
    let hdr = core::mem::size_of::<ibv_post_recv>();
    let wsz = core::mem::size_of::<ib_uverbs_recv_wr>();
    let ssz = core::mem::size_of::<ibv_sge>();
    let Some(mut b) = PostBuf::new(hdr + wr_count * wsz + sge_count * ssz) else {
        return libc::ENOMEM;
    };
    let base = b.ptr();
    // SAFETY: `base` is the 8-byte aligned, zeroed start of `b`, which is
    // at least `hdr` bytes long and not otherwise referenced while `cmd`
    // lives.
    let cmd = unsafe { &mut *base.cast::<ibv_post_recv>() };
    cmd.core.qp_handle = handle;
    cmd.core.wr_count = wr_count as u32;
    cmd.core.sge_count = sge_count as u32;
    cmd.core.wqe_size = wsz as u32;
    // SAFETY: both offsets are within `b`, whose length is
    // `hdr + wr_count * wsz + sge_count * ssz`.
    let (mut n, mut s) = unsafe {
        (
            base.add(hdr).cast::<ib_uverbs_recv_wr>(),
            base.add(hdr + wr_count * wsz).cast::<ibv_sge>(),
        )
    };
    let mut i = wr;
    while !i.is_null() {
        // SAFETY: `i` is a non-null member of the caller's valid chain.
        let w = unsafe { &*i };
        let k = ib_uverbs_recv_wr {
            wr_id: w.wr_id,
            num_sge: w.num_sge.max(0) as u32,
            reserved: 0,
        };
        // SAFETY: `n` is within the wr array of `b` (one slot per member of
        // the chain, counted above); `s` has room for the `num_sge` entries
        // counted for this request, 8-byte aligned (the asserts above), and
        // `w.sg_list` is valid for them (contract).
        unsafe {
            n.write_unaligned(k);
            n = n.add(1);
            if k.num_sge != 0 {
                core::ptr::copy_nonoverlapping(w.sg_list, s, k.num_sge as usize);
                s = s.add(k.num_sge as usize);
            }
        }
        i = w.next;
    }
    let next_recv = |w: *mut ibv_recv_wr| {
        // SAFETY: `run_post` passes only non-null members of `wr`'s chain,
        // each a valid `ibv_recv_wr` (contract).
        unsafe { (*w).next }
    };
    // SAFETY: `ctx` is open and `bad_wr` null or writable (contract); `wr`
    // heads a valid chain and `next_recv` is only given its non-null
    // members.
    unsafe { run_post(ctx, meth, b, wr, bad_wr, next_recv) }
}

/// `ibv_cmd_post_recv`.
///
/// # Safety
/// Provider arguments: `ibqp` is a live QP of an open context; `wr` is null
/// or the head of a null-terminated chain of valid `ibv_recv_wr`s, each
/// with `sg_list` valid for `num_sge` entries; `bad_wr` is null or
/// writable.
pub unsafe fn post_recv(ibqp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int {
    // SAFETY: `ibqp` is a live QP of an open context; `wr` and `bad_wr` are
    // as `post_recv_common` requires (contract).
    unsafe { post_recv_common((*ibqp).context, &m::POST_RECV, (*ibqp).handle, wr, bad_wr) }
}

/// `ibv_cmd_post_srq_recv`.
///
/// # Safety
/// Provider arguments: `srq` is a live SRQ of an open context; `wr` and
/// `bad_wr` as for [`post_recv`].
pub unsafe fn post_srq_recv(srq: *mut ibv_srq, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int {
    // SAFETY: `srq` is a live SRQ of an open context; `wr` and `bad_wr` are
    // as `post_recv_common` requires (contract).
    unsafe { post_recv_common((*srq).context, &m::POST_SRQ_RECV, (*srq).handle, wr, bad_wr) }
}
