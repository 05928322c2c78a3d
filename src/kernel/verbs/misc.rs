//! Protection domains, XRC domains, memory regions and windows, device
//! memory, address handles, multicast.

use std::os::raw::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::builder::{req, Cmd};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::uapi::*;

use super::{destroy, write_cmd, write_req};

/// `vext_field_avail(type, field, size)`: does a provider struct of `size`
/// bytes reach `off`?
fn vext_field_avail(off: usize, size: c_int) -> bool {
    (off as i64) < size as i64
}

// --- PD -------------------------------------------------------------------

/// `ibv_cmd_alloc_pd`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn alloc_pd(
    ctx: *mut ibv_context,
    pd: *mut ibv_pd,
    cmd: *mut ibv_alloc_pd,
    cmd_size: usize,
    resp: *mut ib_uverbs_alloc_pd_resp,
    resp_size: usize,
) -> c_int {
    let c = match write_cmd(ctx, &m::ALLOC_PD, cmd, cmd_size, resp, resp_size) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_alloc_pd_resp = c.resp_as();
    (*pd).handle = r.pd_handle;
    (*pd).context = ctx;
    0
}

/// `ibv_cmd_dealloc_pd`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn dealloc_pd(pd: *mut ibv_pd) -> c_int {
    destroy(
        (*pd).context,
        &m::DEALLOC_PD,
        attr::DESTROY_PD_HANDLE,
        (*pd).handle,
        req!(ib_uverbs_dealloc_pd, pd_handle),
    )
}

// --- XRCD -----------------------------------------------------------------

/// `ibv_cmd_open_xrcd`.
///
/// # Safety
/// Provider arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe fn open_xrcd(
    ctx: *mut ibv_context,
    xrcd: *mut verbs_xrcd,
    vxrcd_size: c_int,
    attr: *mut ibv_xrcd_init_attr,
    cmd: *mut ibv_open_xrcd,
    cmd_size: usize,
    resp: *mut ib_uverbs_open_xrcd_resp,
    resp_size: usize,
) -> c_int {
    let a = &*attr;
    if a.comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED {
        return libc::EOPNOTSUPP;
    }
    if a.comp_mask & IBV_XRCD_INIT_ATTR_FD == 0 || a.comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS == 0 {
        return libc::EINVAL;
    }
    (*cmd).core.fd = a.fd as u32;
    (*cmd).core.oflags = a.oflags as u32;
    let c = match write_cmd(ctx, &m::OPEN_XRCD, cmd, cmd_size, resp, resp_size) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_open_xrcd_resp = c.resp_as();
    (*xrcd).xrcd.context = ctx;
    (*xrcd).comp_mask = 0;
    if vext_field_avail(core::mem::offset_of!(verbs_xrcd, handle), vxrcd_size) {
        (*xrcd).comp_mask = VERBS_XRCD_HANDLE;
        (*xrcd).handle = r.xrcd_handle;
    }
    0
}

/// `ibv_cmd_close_xrcd`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn close_xrcd(xrcd: *mut verbs_xrcd) -> c_int {
    destroy(
        (*xrcd).xrcd.context,
        &m::CLOSE_XRCD,
        attr::DESTROY_XRCD_HANDLE,
        (*xrcd).handle,
        req!(ib_uverbs_close_xrcd, xrcd_handle),
    )
}

// --- MR -------------------------------------------------------------------

/// `ibv_cmd_reg_mr`.
///
/// # Safety
/// Provider arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
    vmr: *mut verbs_mr,
    cmd: *mut ibv_reg_mr,
    cmd_size: usize,
    resp: *mut ib_uverbs_reg_mr_resp,
    resp_size: usize,
) -> c_int {
    let k = &mut (*cmd).core;
    k.start = addr as usize as u64;
    k.length = length as u64;
    // On-demand paging over the whole address space: an implicit MR.
    if access as u32 & IBV_ACCESS_ON_DEMAND != 0 {
        if length == usize::MAX && !addr.is_null() {
            set_errno(libc::EINVAL);
            return libc::EINVAL;
        }
        if length == usize::MAX {
            k.length = u64::MAX;
        }
    }
    k.hca_va = hca_va;
    k.pd_handle = (*pd).handle;
    k.access_flags = access as u32;
    let c = match write_cmd((*pd).context, &m::REG_MR, cmd, cmd_size, resp, resp_size) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_reg_mr_resp = c.resp_as();
    let mr = &mut (*vmr).ibv_mr;
    mr.handle = r.mr_handle;
    mr.lkey = r.lkey;
    mr.rkey = r.rkey;
    mr.context = (*pd).context;
    (*vmr).mr_type = IBV_MR_TYPE_MR;
    (*vmr).access = access;
    0
}

/// `ibv_cmd_rereg_mr`.
///
/// # Safety
/// Provider arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe fn rereg_mr(
    vmr: *mut verbs_mr,
    flags: u32,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
    pd: *mut ibv_pd,
    cmd: *mut ibv_rereg_mr,
    cmd_sz: usize,
    resp: *mut ib_uverbs_rereg_mr_resp,
    resp_sz: usize,
) -> c_int {
    let change_pd = flags & IBV_REREG_MR_CHANGE_PD != 0;
    let k = &mut (*cmd).core;
    k.mr_handle = (*vmr).ibv_mr.handle;
    k.flags = flags;
    k.start = addr as usize as u64;
    k.length = length as u64;
    k.hca_va = hca_va;
    k.pd_handle = if change_pd { (*pd).handle } else { 0 };
    k.access_flags = access as u32;
    let c = match write_cmd((*vmr).ibv_mr.context, &m::REREG_MR, cmd, cmd_sz, resp, resp_sz) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_rereg_mr_resp = c.resp_as();
    (*vmr).ibv_mr.lkey = r.lkey;
    (*vmr).ibv_mr.rkey = r.rkey;
    if change_pd {
        (*vmr).ibv_mr.context = (*pd).context;
    }
    0
}

/// `ibv_cmd_dereg_mr`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn dereg_mr(vmr: *mut verbs_mr) -> c_int {
    destroy(
        (*vmr).ibv_mr.context,
        &m::DEREG_MR,
        attr::DESTROY_MR_HANDLE,
        (*vmr).ibv_mr.handle,
        req!(ib_uverbs_dereg_mr, mr_handle),
    )
}

/// `ibv_cmd_query_mr` (ioctl only): an MR imported by handle.
///
/// # Safety
/// Provider arguments.
pub unsafe fn query_mr(pd: *mut ibv_pd, vmr: *mut verbs_mr, mr_handle: u32) -> c_int {
    let mr = core::ptr::addr_of_mut!((*vmr).ibv_mr);
    let mut c = Cmd::new((*pd).context, &m::QUERY_MR, 4, core::ptr::null_mut());
    c.in_obj(attr::QUERY_MR_HANDLE, mr_handle);
    c.out(attr::QUERY_MR_RESP_LKEY, core::ptr::addr_of_mut!((*mr).lkey));
    c.out(attr::QUERY_MR_RESP_RKEY, core::ptr::addr_of_mut!((*mr).rkey));
    c.out(attr::QUERY_MR_RESP_LENGTH, core::ptr::addr_of_mut!((*mr).length));
    if let Err(e) = c.exec() {
        return e;
    }
    (*mr).handle = mr_handle;
    (*mr).context = (*pd).context;
    (*mr).pd = pd;
    (*mr).addr = core::ptr::null_mut();
    (*vmr).mr_type = IBV_MR_TYPE_IMPORTED_MR;
    0
}

/// `ibv_cmd_advise_mr` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn advise_mr(pd: *mut ibv_pd, advice: u32, flags: u32, sg_list: *mut ibv_sge, num_sge: u32) -> c_int {
    let mut c = Cmd::new((*pd).context, &m::ADVISE_MR, 4, core::ptr::null_mut());
    c.in_obj(attr::ADVISE_MR_PD_HANDLE, (*pd).handle);
    c.in_u64(attr::ADVISE_MR_ADVICE, advice as u64);
    c.in_u32(attr::ADVISE_MR_FLAGS, flags);
    c.in_bytes(
        attr::ADVISE_MR_SGE_LIST,
        sg_list.cast(),
        core::mem::size_of::<ibv_sge>().saturating_mul(num_sge as usize),
    );
    super::ok(c.exec())
}

/// `ibv_cmd_reg_dmabuf_mr` (ioctl only).
///
/// # Safety
/// Provider arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reg_dmabuf_mr(
    pd: *mut ibv_pd,
    offset: u64,
    length: usize,
    iova: u64,
    fd: c_int,
    access: c_int,
    vmr: *mut verbs_mr,
) -> c_int {
    let (mut lkey, mut rkey) = (0u32, 0u32);
    let mut c = Cmd::new((*pd).context, &m::REG_DMABUF_MR, 9, core::ptr::null_mut());
    let h = c.out_obj(attr::REG_DMABUF_MR_HANDLE).idx();
    c.out(attr::REG_DMABUF_MR_RESP_LKEY, &mut lkey);
    c.out(attr::REG_DMABUF_MR_RESP_RKEY, &mut rkey);
    c.in_obj(attr::REG_DMABUF_MR_PD_HANDLE, (*pd).handle);
    c.in_u64(attr::REG_DMABUF_MR_OFFSET, offset);
    c.in_u64(attr::REG_DMABUF_MR_LENGTH, length as u64);
    c.in_u64(attr::REG_DMABUF_MR_IOVA, iova);
    c.in_u32(attr::REG_DMABUF_MR_FD, fd as u32);
    c.in_u32(attr::REG_DMABUF_MR_ACCESS_FLAGS, access as u32);
    if let Err(e) = c.exec() {
        return e;
    }
    let mr = &mut (*vmr).ibv_mr;
    mr.handle = c.obj(h);
    mr.context = (*pd).context;
    mr.lkey = lkey;
    mr.rkey = rkey;
    mr.pd = pd;
    mr.addr = offset as usize as *mut c_void;
    mr.length = length;
    (*vmr).mr_type = IBV_MR_TYPE_DMABUF_MR;
    0
}

/// `ibv_cmd_reg_dm_mr` (ioctl only): an MR over device memory, always
/// zero-based.
///
/// # Safety
/// Provider arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reg_dm_mr(
    pd: *mut ibv_pd,
    dm: *mut verbs_dm,
    offset: u64,
    length: usize,
    access: c_uint,
    vmr: *mut verbs_mr,
    link: *mut ibv_command_buffer,
) -> c_int {
    if access & IBV_ACCESS_ZERO_BASED == 0 {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    let (mut lkey, mut rkey) = (0u32, 0u32);
    let mut c = Cmd::new((*pd).context, &m::REG_DM_MR, 8, link);
    let h = c.out_obj(attr::REG_DM_MR_HANDLE).idx();
    c.out(attr::REG_DM_MR_RESP_LKEY, &mut lkey);
    c.out(attr::REG_DM_MR_RESP_RKEY, &mut rkey);
    c.in_obj(attr::REG_DM_MR_PD_HANDLE, (*pd).handle);
    c.in_obj(attr::REG_DM_MR_DM_HANDLE, (*dm).handle);
    c.in_u64(attr::REG_DM_MR_OFFSET, offset);
    c.in_u64(attr::REG_DM_MR_LENGTH, length as u64);
    c.in_u32(attr::REG_DM_MR_ACCESS_FLAGS, access);
    if let Err(e) = c.exec() {
        return e;
    }
    let mr = &mut (*vmr).ibv_mr;
    mr.handle = c.obj(h);
    mr.context = (*pd).context;
    mr.lkey = lkey;
    mr.rkey = rkey;
    mr.length = length;
    mr.pd = pd;
    mr.addr = core::ptr::null_mut();
    (*vmr).mr_type = IBV_MR_TYPE_MR;
    0
}

// --- MW -------------------------------------------------------------------

/// `ibv_cmd_alloc_mw`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn alloc_mw(
    pd: *mut ibv_pd,
    type_: u32,
    mw: *mut ibv_mw,
    cmd: *mut ibv_alloc_mw,
    cmd_size: usize,
    resp: *mut ib_uverbs_alloc_mw_resp,
    resp_size: usize,
) -> c_int {
    (*cmd).core.pd_handle = (*pd).handle;
    (*cmd).core.mw_type = type_ as u8;
    (*cmd).core.reserved = [0; 3];
    let c = match write_cmd((*pd).context, &m::ALLOC_MW, cmd, cmd_size, resp, resp_size) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_alloc_mw_resp = c.resp_as();
    (*mw).context = (*pd).context;
    (*mw).pd = pd;
    (*mw).rkey = r.rkey;
    (*mw).handle = r.mw_handle;
    (*mw).r#type = type_;
    0
}

/// `ibv_cmd_dealloc_mw`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn dealloc_mw(mw: *mut ibv_mw) -> c_int {
    destroy(
        (*mw).context,
        &m::DEALLOC_MW,
        attr::DESTROY_MW_HANDLE,
        (*mw).handle,
        req!(ib_uverbs_dealloc_mw, mw_handle),
    )
}

// --- DM -------------------------------------------------------------------

/// `ibv_cmd_alloc_dm` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn alloc_dm(
    ctx: *mut ibv_context,
    dm_attr: *const ibv_alloc_dm_attr,
    dm: *mut verbs_dm,
    link: *mut ibv_command_buffer,
) -> c_int {
    let mut c = Cmd::new(ctx, &m::ALLOC_DM, 3, link);
    let h = c.out_obj(attr::ALLOC_DM_HANDLE).idx();
    c.in_u64(attr::ALLOC_DM_LENGTH, (*dm_attr).length as u64);
    c.in_u32(attr::ALLOC_DM_ALIGNMENT, (*dm_attr).log_align_req);
    if let Err(e) = c.exec() {
        return e;
    }
    (*dm).handle = c.obj(h);
    (*dm).dm.handle = (*dm).handle;
    (*dm).dm.comp_mask = IBV_DM_MASK_HANDLE;
    (*dm).dm.context = ctx;
    0
}

/// `ibv_cmd_free_dm` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn free_dm(dm: *mut verbs_dm) -> c_int {
    let mut c = Cmd::new((*dm).dm.context, &m::FREE_DM, 1, core::ptr::null_mut());
    c.in_obj(attr::FREE_DM_HANDLE, (*dm).handle);
    let mut ret = super::ok(c.exec());
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

// --- AH -------------------------------------------------------------------

/// `ibv_cmd_create_ah` (the request is built here; `resp` may carry driver
/// data).
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_ah(
    pd: *mut ibv_pd,
    ah: *mut ibv_ah,
    attr: *const ibv_ah_attr,
    resp: *mut ib_uverbs_create_ah_resp,
    resp_size: usize,
) -> c_int {
    let a = &*attr;
    let mut cmd: ibv_create_ah = Default::default();
    let k = &mut cmd.core;
    k.user_handle = ah as usize as u64;
    k.pd_handle = (*pd).handle;
    k.attr.dlid = a.dlid;
    k.attr.sl = a.sl;
    k.attr.src_path_bits = a.src_path_bits;
    k.attr.static_rate = a.static_rate;
    k.attr.is_global = a.is_global;
    k.attr.port_num = a.port_num;
    k.attr.grh.flow_label = a.grh.flow_label;
    k.attr.grh.sgid_index = a.grh.sgid_index;
    k.attr.grh.hop_limit = a.grh.hop_limit;
    k.attr.grh.traffic_class = a.grh.traffic_class;
    k.attr.grh.dgid = a.grh.dgid.raw;
    let sz = core::mem::size_of_val(&cmd);
    let c = match write_cmd((*pd).context, &m::CREATE_AH, &mut cmd, sz, resp, resp_size) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_create_ah_resp = c.resp_as();
    (*ah).handle = r.ah_handle;
    (*ah).context = (*pd).context;
    0
}

/// `ibv_cmd_destroy_ah`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn destroy_ah(ah: *mut ibv_ah) -> c_int {
    destroy(
        (*ah).context,
        &m::DESTROY_AH,
        attr::DESTROY_AH_HANDLE,
        (*ah).handle,
        req!(ib_uverbs_destroy_ah, ah_handle),
    )
}

// --- multicast ------------------------------------------------------------

/// `ibv_cmd_attach_mcast`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn attach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    let mut r: ibv_attach_mcast = Default::default();
    r.core.qp_handle = (*qp).handle;
    r.core.mlid = lid;
    r.core.gid = (*gid).raw;
    let sz = core::mem::size_of_val(&r);
    write_req((*qp).context, &m::ATTACH_MCAST, &mut r, sz)
}

/// `ibv_cmd_detach_mcast`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn detach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    let mut r: ibv_detach_mcast = Default::default();
    r.core.qp_handle = (*qp).handle;
    r.core.mlid = lid;
    r.core.gid = (*gid).raw;
    let sz = core::mem::size_of_val(&r);
    let mut ret = write_req((*qp).context, &m::DETACH_MCAST, &mut r, sz);
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}
