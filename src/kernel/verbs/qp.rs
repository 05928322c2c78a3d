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

unsafe fn set_qp(vqp: *mut verbs_qp, qp: *mut ibv_qp, a: &ibv_qp_init_attr_ex, vxrcd: *mut verbs_xrcd) {
    (*qp).qp_context = a.qp_context;
    (*qp).pd = a.pd;
    (*qp).send_cq = a.send_cq;
    (*qp).recv_cq = a.recv_cq;
    (*qp).srq = a.srq;
    (*qp).qp_type = a.qp_type;
    (*qp).state = IBV_QPS_RESET;
    (*qp).events_completed = 0;
    libc::pthread_mutex_init(core::ptr::addr_of_mut!((*qp).mutex), core::ptr::null());
    libc::pthread_cond_init(core::ptr::addr_of_mut!((*qp).cond), core::ptr::null());
    if !vqp.is_null() {
        (*vqp).comp_mask = 0;
        if a.comp_mask & IBV_QP_INIT_ATTR_XRCD != 0 {
            (*vqp).comp_mask |= VERBS_QP_XRCD;
            (*vqp).xrcd = vxrcd;
        }
    }
}

fn einval() -> c_int {
    set_errno(libc::EINVAL);
    libc::EINVAL
}

/// Upstream's `ibv_icmd_create_qp`.
unsafe fn icmd_create_qp(
    ctx: *mut ibv_context,
    vqp: *mut verbs_qp,
    qp_in: *mut ibv_qp,
    attr_ex: *mut ibv_qp_init_attr_ex,
    compat: Compat,
) -> c_int {
    let qp: *mut ibv_qp = if vqp.is_null() { qp_in } else { vqp.cast() };
    let a = &mut *attr_ex;
    let mut c = compat.apply(Cmd::new(ctx, &m::CREATE_QP, 15, core::ptr::null_mut()));
    let mut vxrcd: *mut verbs_xrcd = core::ptr::null_mut();
    let mut create_flags: u32 = 0;
    let mut qp_num: u32 = 0;
    (*qp).context = ctx;

    // The legacy request depends on the kernel ABI; the layout is shared.
    let abi = state::abi_ver();
    c.set_write(Some(if abi > 4 {
        m::CREATE_QP.write.expect("create_qp write form")
    } else if abi == 4 {
        m::CREATE_QP_V4
    } else {
        m::CREATE_QP_V3
    }));

    match a.qp_type {
        IBV_QPT_XRC_RECV => {
            if a.comp_mask & IBV_QP_INIT_ATTR_XRCD == 0 {
                return einval();
            }
            vxrcd = outer(a.xrcd);
            c.in_obj(attr::CREATE_QP_XRCD_HANDLE, (*vxrcd).handle)
                .w(req!(ib_uverbs_create_qp, pd_handle))
                .wx(req!(ib_uverbs_ex_create_qp, pd_handle));
        }
        IBV_QPT_RC | IBV_QPT_UD | IBV_QPT_UC | IBV_QPT_RAW_PACKET | IBV_QPT_XRC_SEND | IBV_QPT_DRIVER => {
            if a.comp_mask & IBV_QP_INIT_ATTR_PD == 0 {
                return einval();
            }
            c.in_obj(attr::CREATE_QP_PD_HANDLE, (*a.pd).handle)
                .w(req!(ib_uverbs_create_qp, pd_handle))
                .wx(req!(ib_uverbs_ex_create_qp, pd_handle));
            if a.comp_mask & IBV_QP_INIT_ATTR_IND_TABLE != 0 {
                if a.cap.max_recv_wr != 0 || a.cap.max_recv_sge != 0 || !a.recv_cq.is_null() || !a.srq.is_null() {
                    return einval();
                }
                c.require_ex();
                c.in_obj(attr::CREATE_QP_IND_TABLE_HANDLE, (*a.rwq_ind_tbl).ind_tbl_handle as u32)
                    .wx(req!(ib_uverbs_ex_create_qp, rwq_ind_tbl_handle));
                c.wonly(
                    None,
                    Some(req!(ib_uverbs_ex_create_qp, comp_mask)),
                    IB_UVERBS_CREATE_QP_MASK_IND_TABLE as u64,
                );
                // The send CQ is optional here.
                if a.cap.max_send_wr != 0 {
                    c.in_obj(attr::CREATE_QP_SEND_CQ_HANDLE, (*a.send_cq).handle)
                        .w(req!(ib_uverbs_create_qp, send_cq_handle))
                        .wx(req!(ib_uverbs_ex_create_qp, send_cq_handle));
                }
            } else {
                c.in_obj(attr::CREATE_QP_SEND_CQ_HANDLE, (*a.send_cq).handle)
                    .w(req!(ib_uverbs_create_qp, send_cq_handle))
                    .wx(req!(ib_uverbs_ex_create_qp, send_cq_handle));
                if a.qp_type != IBV_QPT_XRC_SEND {
                    c.in_obj(attr::CREATE_QP_RECV_CQ_HANDLE, (*a.recv_cq).handle)
                        .w(req!(ib_uverbs_create_qp, recv_cq_handle))
                        .wx(req!(ib_uverbs_ex_create_qp, recv_cq_handle));
                }
            }
            // As the write() ABI always did.
            if a.qp_type == IBV_QPT_XRC_SEND {
                a.cap.max_recv_wr = 0;
                a.cap.max_recv_sge = 0;
            }
        }
        _ => return einval(),
    }

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
    c.in_ptr(attr::CREATE_QP_CAP, &a.cap)
        .w(cap_req(core::mem::offset_of!(ib_uverbs_create_qp, max_send_wr)))
        .wx(cap_req(core::mem::offset_of!(ib_uverbs_ex_create_qp, max_send_wr)));
    c.in_fd(attr::CREATE_QP_EVENT_FD, (*ctx).async_fd);
    if state::imported(ctx) {
        c.ioctl_only();
    }
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
            return einval();
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
    if !a.srq.is_null() {
        c.in_obj(attr::CREATE_QP_SRQ_HANDLE, (*a.srq).handle)
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

    if let Err(e) = c.exec() {
        return e;
    }
    (*qp).handle = c.obj(h);
    (*qp).qp_num = qp_num;
    set_qp(vqp, qp, a, vxrcd);
    0
}

/// `ibv_cmd_create_qp`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_qp(
    pd: *mut ibv_pd,
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_init_attr,
    cmd: *mut ibv_create_qp,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_qp_resp,
    resp_size: usize,
) -> c_int {
    let at = &mut *attr;
    let mut ax: ibv_qp_init_attr_ex = core::mem::zeroed();
    ax.qp_context = at.qp_context;
    ax.send_cq = at.send_cq;
    ax.recv_cq = at.recv_cq;
    ax.srq = at.srq;
    ax.cap = at.cap;
    ax.qp_type = at.qp_type;
    ax.sq_sig_all = at.sq_sig_all;
    ax.comp_mask = IBV_QP_INIT_ATTR_PD;
    ax.pd = pd;
    let ret = icmd_create_qp(
        (*pd).context,
        core::ptr::null_mut(),
        qp,
        &mut ax,
        Compat::of(cmd, cmd_size, resp, resp_size),
    );
    if ret == 0 {
        at.cap = ax.cap;
    }
    ret
}

/// `ibv_cmd_create_qp_ex`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_qp_ex(
    ctx: *mut ibv_context,
    qp: *mut verbs_qp,
    attr_ex: *mut ibv_qp_init_attr_ex,
    cmd: *mut ibv_create_qp,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_qp_resp,
    resp_size: usize,
) -> c_int {
    if !super::check_comp_mask(
        (*attr_ex).comp_mask,
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
    ) {
        return einval();
    }
    icmd_create_qp(
        ctx,
        qp,
        core::ptr::null_mut(),
        attr_ex,
        Compat::of(cmd, cmd_size, resp, resp_size),
    )
}

/// `ibv_cmd_create_qp_ex2`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_qp_ex2(
    ctx: *mut ibv_context,
    qp: *mut verbs_qp,
    attr_ex: *mut ibv_qp_init_attr_ex,
    cmd: *mut ibv_create_qp_ex,
    cmd_size: usize,
    resp: *mut ib_uverbs_ex_create_qp_resp,
    resp_size: usize,
) -> c_int {
    let sup = IBV_QP_INIT_ATTR_PD
        | IBV_QP_INIT_ATTR_XRCD
        | IBV_QP_INIT_ATTR_CREATE_FLAGS
        | IBV_QP_INIT_ATTR_MAX_TSO_HEADER
        | IBV_QP_INIT_ATTR_IND_TABLE
        | IBV_QP_INIT_ATTR_RX_HASH
        | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if !super::check_comp_mask((*attr_ex).comp_mask, sup) {
        return einval();
    }
    icmd_create_qp(
        ctx,
        qp,
        core::ptr::null_mut(),
        attr_ex,
        Compat::of(cmd, cmd_size, resp, resp_size),
    )
}

/// `ibv_cmd_destroy_qp`: waits for the application to acknowledge the
/// kernel's reported events.
///
/// # Safety
/// Provider arguments.
pub unsafe fn destroy_qp(qp: *mut ibv_qp) -> c_int {
    let mut r: ib_uverbs_destroy_qp_resp = zeroed();
    let mut c = Cmd::new((*qp).context, &m::DESTROY_QP, 2, core::ptr::null_mut());
    c.out(attr::DESTROY_QP_RESP, &mut r)
        .w(resp!(ib_uverbs_destroy_qp_resp, events_reported));
    c.in_obj(attr::DESTROY_QP_HANDLE, (*qp).handle)
        .w(req!(ib_uverbs_destroy_qp, qp_handle));
    let mut ret = super::ok(c.exec());
    if state::is_destroy_err(&mut ret) {
        return ret;
    }
    super::wait_events(
        core::ptr::addr_of_mut!((*qp).mutex),
        core::ptr::addr_of_mut!((*qp).cond),
        || core::ptr::addr_of!((*qp).events_completed).read_volatile() == r.events_reported,
    );
    0
}

/// `ibv_cmd_open_qp`: opens an XRC target QP by number.
///
/// # Safety
/// Provider arguments.
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
    let a = &*attr;
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
    let k = &mut (*cmd).core;
    k.user_handle = qp as usize as u64;
    k.pd_handle = (*xrcd).handle;
    k.qpn = a.qp_num;
    k.qp_type = a.qp_type as u8;
    let c = match write_cmd(ctx, &m::OPEN_QP, cmd, cmd_size, resp, resp_size) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_create_qp_resp = c.resp_as();
    let q: *mut ibv_qp = qp.cast();
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
    (*qp).comp_mask = 0;
    if (core::mem::offset_of!(verbs_qp, xrcd) as i64) < vqp_sz as i64 {
        (*qp).comp_mask = VERBS_QP_XRCD;
        (*qp).xrcd = xrcd;
    }
    0
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
/// Provider arguments.
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
    (*cmd).core.qp_handle = (*qp).handle;
    (*cmd).core.attr_mask = attr_mask as u32;
    let mut r: ib_uverbs_query_qp_resp = zeroed();
    let sz = core::mem::size_of_val(&r);
    if let Err(e) = write_cmd((*qp).context, &m::QUERY_QP, cmd, cmd_size, &mut r, sz) {
        return e;
    }
    let a = &mut *attr;
    a.qkey = r.qkey;
    a.rq_psn = r.rq_psn;
    a.sq_psn = r.sq_psn;
    a.dest_qp_num = r.dest_qp_num;
    a.qp_access_flags = r.qp_access_flags;
    a.pkey_index = r.pkey_index;
    a.alt_pkey_index = r.alt_pkey_index;
    a.qp_state = r.qp_state as _;
    a.cur_qp_state = r.cur_qp_state as _;
    a.path_mtu = r.path_mtu as _;
    a.path_mig_state = r.path_mig_state as _;
    a.sq_draining = r.sq_draining;
    a.max_rd_atomic = r.max_rd_atomic;
    a.max_dest_rd_atomic = r.max_dest_rd_atomic;
    a.min_rnr_timer = r.min_rnr_timer;
    a.port_num = r.port_num;
    a.timeout = r.timeout;
    a.retry_cnt = r.retry_cnt;
    a.rnr_retry = r.rnr_retry;
    a.alt_port_num = r.alt_port_num;
    a.alt_timeout = r.alt_timeout;
    a.cap.max_send_wr = r.max_send_wr;
    a.cap.max_recv_wr = r.max_recv_wr;
    a.cap.max_send_sge = r.max_send_sge;
    a.cap.max_recv_sge = r.max_recv_sge;
    a.cap.max_inline_data = r.max_inline_data;
    copy_dest_to_ah(&mut a.ah_attr, &r.dest);
    copy_dest_to_ah(&mut a.alt_ah_attr, &r.alt_dest);

    let i = &mut *init_attr;
    i.qp_context = (*qp).qp_context;
    i.send_cq = (*qp).send_cq;
    i.recv_cq = (*qp).recv_cq;
    i.srq = (*qp).srq;
    i.qp_type = (*qp).qp_type;
    i.cap.max_send_wr = r.max_send_wr;
    i.cap.max_recv_wr = r.max_recv_wr;
    i.cap.max_send_sge = r.max_send_sge;
    i.cap.max_recv_sge = r.max_recv_sge;
    i.cap.max_inline_data = r.max_inline_data;
    i.sq_sig_all = r.sq_sig_all as c_int;
    0
}

fn copy_ah_to_dest(d: &mut ib_uverbs_qp_dest, ah: &ibv_ah_attr) {
    // SAFETY: reading the raw bytes of a gid union.
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
unsafe fn copy_modify_qp_fields(qp: *mut ibv_qp, a: &ibv_qp_attr, mask: c_int, k: &mut ib_uverbs_modify_qp) {
    let mask = mask as u32;
    let has = |bit: u32| mask & bit != 0;
    k.qp_handle = (*qp).handle;
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
/// Provider arguments.
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
    copy_modify_qp_fields(qp, &*attr, attr_mask, &mut (*cmd).core);
    write_req((*qp).context, &m::MODIFY_QP, cmd, cmd_size)
}

/// `ibv_cmd_modify_qp_ex` (extended `write()`; carries the rate limit).
///
/// # Safety
/// Provider arguments.
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
    copy_modify_qp_fields(qp, &*attr, attr_mask, &mut (*cmd).core.base);
    if attr_mask as u32 & IBV_QP_RATE_LIMIT != 0 {
        let end = core::mem::offset_of!(ibv_modify_qp_ex, core)
            + core::mem::offset_of!(ib_uverbs_ex_modify_qp, rate_limit)
            + 4;
        if cmd_size >= end {
            (*cmd).core.rate_limit = (*attr).rate_limit;
        } else {
            return libc::EINVAL;
        }
    }
    match write_cmd((*qp).context, &m::MODIFY_QP_EX, cmd, cmd_size, resp, resp_size) {
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

/// Runs a post command and reports the first rejected request the way
/// upstream does (`bad_wr` is 1-based in the response).
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
    let mut c = Cmd::write_only(ctx, meth, b.ptr(), len, len, (&mut bad as *mut u32).cast(), 4, 4);
    let f = meth.write.expect("post write form");
    c.set_write(Some(WriteForm {
        cmd: f.cmd,
        req: len - core::mem::size_of::<ib_uverbs_cmd_hdr>(),
        resp: 4,
    }));
    let ret = super::ok(c.exec());
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
        *bad_wr = i;
    } else if ret != 0 {
        *bad_wr = wr;
    }
    ret
}

/// `ibv_cmd_post_send`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn post_send(ibqp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int {
    let (mut wr_count, mut sge_count) = (0usize, 0usize);
    let mut i = wr;
    while !i.is_null() {
        wr_count += 1;
        sge_count += (*i).num_sge.max(0) as usize;
        i = (*i).next;
    }
    let hdr = core::mem::size_of::<ibv_post_send>();
    let wsz = core::mem::size_of::<ib_uverbs_send_wr>();
    let ssz = core::mem::size_of::<ibv_sge>();
    let Some(mut b) = PostBuf::new(hdr + wr_count * wsz + sge_count * ssz) else {
        return libc::ENOMEM;
    };
    let base = b.ptr();
    let cmd = &mut *base.cast::<ibv_post_send>();
    cmd.core.qp_handle = (*ibqp).handle;
    cmd.core.wr_count = wr_count as u32;
    cmd.core.sge_count = sge_count as u32;
    cmd.core.wqe_size = wsz as u32;
    let mut n = base.add(hdr).cast::<ib_uverbs_send_wr>();
    let mut s = base.add(hdr + wr_count * wsz).cast::<ibv_sge>();
    let mut i = wr;
    while !i.is_null() {
        let w = &*i;
        let mut k: ib_uverbs_send_wr = zeroed();
        k.wr_id = w.wr_id;
        k.num_sge = w.num_sge.max(0) as u32;
        k.opcode = w.opcode;
        k.send_flags = w.send_flags;
        k.ex = w.imm.imm_data;
        if (*ibqp).qp_type == IBV_QPT_UD {
            k.wr.ud.ah = (*w.wr.ud.ah).handle;
            k.wr.ud.remote_qpn = w.wr.ud.remote_qpn;
            k.wr.ud.remote_qkey = w.wr.ud.remote_qkey;
        } else {
            match w.opcode {
                IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM | IBV_WR_RDMA_READ => {
                    k.wr.rdma.remote_addr = w.wr.rdma.remote_addr;
                    k.wr.rdma.rkey = w.wr.rdma.rkey;
                }
                IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD => {
                    k.wr.atomic.remote_addr = w.wr.atomic.remote_addr;
                    k.wr.atomic.compare_add = w.wr.atomic.compare_add;
                    k.wr.atomic.swap = w.wr.atomic.swap;
                    k.wr.atomic.rkey = w.wr.atomic.rkey;
                }
                _ => {}
            }
        }
        n.write_unaligned(k);
        n = n.add(1);
        if k.num_sge != 0 {
            core::ptr::copy_nonoverlapping(w.sg_list, s, k.num_sge as usize);
            s = s.add(k.num_sge as usize);
        }
        i = w.next;
    }
    run_post((*ibqp).context, &m::POST_SEND, b, wr, bad_wr, |w| (*w).next)
}

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
        wr_count += 1;
        sge_count += (*i).num_sge.max(0) as usize;
        i = (*i).next;
    }
    // ibv_post_recv and ibv_post_srq_recv share one layout.
    let hdr = core::mem::size_of::<ibv_post_recv>();
    let wsz = core::mem::size_of::<ib_uverbs_recv_wr>();
    let ssz = core::mem::size_of::<ibv_sge>();
    let Some(mut b) = PostBuf::new(hdr + wr_count * wsz + sge_count * ssz) else {
        return libc::ENOMEM;
    };
    let base = b.ptr();
    let cmd = &mut *base.cast::<ibv_post_recv>();
    cmd.core.qp_handle = handle;
    cmd.core.wr_count = wr_count as u32;
    cmd.core.sge_count = sge_count as u32;
    cmd.core.wqe_size = wsz as u32;
    let mut n = base.add(hdr).cast::<ib_uverbs_recv_wr>();
    let mut s = base.add(hdr + wr_count * wsz).cast::<ibv_sge>();
    let mut i = wr;
    while !i.is_null() {
        let w = &*i;
        let k = ib_uverbs_recv_wr {
            wr_id: w.wr_id,
            num_sge: w.num_sge.max(0) as u32,
            reserved: 0,
        };
        n.write_unaligned(k);
        n = n.add(1);
        if k.num_sge != 0 {
            core::ptr::copy_nonoverlapping(w.sg_list, s, k.num_sge as usize);
            s = s.add(k.num_sge as usize);
        }
        i = w.next;
    }
    run_post(ctx, meth, b, wr, bad_wr, |w| (*w).next)
}

/// `ibv_cmd_post_recv`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn post_recv(ibqp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int {
    post_recv_common((*ibqp).context, &m::POST_RECV, (*ibqp).handle, wr, bad_wr)
}

/// `ibv_cmd_post_srq_recv`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn post_srq_recv(srq: *mut ibv_srq, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int {
    post_recv_common((*srq).context, &m::POST_SRQ_RECV, (*srq).handle, wr, bad_wr)
}
