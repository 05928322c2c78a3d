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
/// Provider arguments: `ctx` is an open context; `pd` a writable `ibv_pd`;
/// `cmd`/`resp` valid for `cmd_size`/`resp_size` bytes.
pub unsafe fn alloc_pd(
    ctx: *mut ibv_context,
    pd: *mut ibv_pd,
    cmd: *mut ibv_alloc_pd,
    cmd_size: usize,
    resp: *mut ib_uverbs_alloc_pd_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `ctx` is open and `cmd`/`resp` are valid for their sizes
    // (contract).
    let c = match unsafe { write_cmd(ctx, &m::ALLOC_PD, cmd, cmd_size, resp, resp_size) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_alloc_pd_resp = c.resp_as();
    // SAFETY: `pd` is a writable `ibv_pd` (contract).
    unsafe {
        (*pd).handle = r.pd_handle;
        (*pd).context = ctx;
    }
    0
}

/// `ibv_cmd_dealloc_pd`.
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context.
pub unsafe fn dealloc_pd(pd: *mut ibv_pd) -> c_int {
    // SAFETY: `pd` is live, so its context is open and its handle valid
    // (contract).
    unsafe {
        destroy(
            (*pd).context,
            &m::DEALLOC_PD,
            attr::DESTROY_PD_HANDLE,
            (*pd).handle,
            req!(ib_uverbs_dealloc_pd, pd_handle),
        )
    }
}

// --- XRCD -----------------------------------------------------------------

/// `ibv_cmd_open_xrcd`.
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `xrcd` a writable
/// `verbs_xrcd` of `vxrcd_size` bytes (at least up to its `comp_mask`);
/// `attr` a valid `ibv_xrcd_init_attr`; `cmd` a writable `ibv_open_xrcd`
/// valid for `cmd_size` bytes; `resp` valid for `resp_size` bytes.
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
    // SAFETY: `attr` is a valid `ibv_xrcd_init_attr` (contract).
    let a = unsafe { &*attr };
    if a.comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED {
        return libc::EOPNOTSUPP;
    }
    if a.comp_mask & IBV_XRCD_INIT_ATTR_FD == 0 || a.comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS == 0 {
        return libc::EINVAL;
    }
    // SAFETY: `cmd` is a writable `ibv_open_xrcd` (contract).
    unsafe {
        (*cmd).core.fd = a.fd as u32;
        (*cmd).core.oflags = a.oflags as u32;
    }
    // SAFETY: `ctx` is open and `cmd`/`resp` are valid for their sizes
    // (contract).
    let c = match unsafe { write_cmd(ctx, &m::OPEN_XRCD, cmd, cmd_size, resp, resp_size) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_open_xrcd_resp = c.resp_as();
    // SAFETY: `xrcd` is writable up to its `comp_mask` (contract); `handle`
    // is written only when the provider's struct of `vxrcd_size` bytes
    // reaches it.
    unsafe {
        (*xrcd).xrcd.context = ctx;
        (*xrcd).comp_mask = 0;
        if vext_field_avail(core::mem::offset_of!(verbs_xrcd, handle), vxrcd_size) {
            (*xrcd).comp_mask = VERBS_XRCD_HANDLE;
            (*xrcd).handle = r.xrcd_handle;
        }
    }
    0
}

/// `ibv_cmd_close_xrcd`.
///
/// # Safety
/// Provider arguments: `xrcd` is a live XRCD of an open context, opened
/// with its handle recorded.
pub unsafe fn close_xrcd(xrcd: *mut verbs_xrcd) -> c_int {
    // SAFETY: `xrcd` is live, so its context is open and its handle valid
    // (contract).
    unsafe {
        destroy(
            (*xrcd).xrcd.context,
            &m::CLOSE_XRCD,
            attr::DESTROY_XRCD_HANDLE,
            (*xrcd).handle,
            req!(ib_uverbs_close_xrcd, xrcd_handle),
        )
    }
}

// --- MR -------------------------------------------------------------------

/// `ibv_cmd_reg_mr`.
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `vmr` a
/// writable `verbs_mr`; `cmd` a writable `ibv_reg_mr` valid for `cmd_size`
/// bytes; `resp` valid for `resp_size` bytes.
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
    // SAFETY: `cmd` is a writable `ibv_reg_mr`, not otherwise borrowed
    // while `k` is used (contract).
    let k = unsafe { &mut (*cmd).core };
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
    // SAFETY: `pd` is a live PD (contract).
    let (pd_handle, ctx) = unsafe { ((*pd).handle, (*pd).context) };
    k.pd_handle = pd_handle;
    k.access_flags = access as u32;
    // SAFETY: `ctx` is open and `cmd`/`resp` are valid for their sizes
    // (contract).
    let c = match unsafe { write_cmd(ctx, &m::REG_MR, cmd, cmd_size, resp, resp_size) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_reg_mr_resp = c.resp_as();
    // SAFETY: `vmr` is a writable `verbs_mr` (contract).
    unsafe {
        let mr = &mut (*vmr).ibv_mr;
        mr.handle = r.mr_handle;
        mr.lkey = r.lkey;
        mr.rkey = r.rkey;
        mr.context = ctx;
        (*vmr).mr_type = IBV_MR_TYPE_MR;
        (*vmr).access = access;
    }
    0
}

/// `ibv_cmd_rereg_mr`.
///
/// # Safety
/// Provider arguments: `vmr` is a live, writable MR of an open context;
/// `pd` a live PD when `flags` has IBV_REREG_MR_CHANGE_PD; `cmd` a
/// writable `ibv_rereg_mr` valid for `cmd_sz` bytes; `resp` valid for
/// `resp_sz` bytes.
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
    // SAFETY: `cmd` is a writable `ibv_rereg_mr` and `vmr` a live MR
    // (contract); `pd` is read only with IBV_REREG_MR_CHANGE_PD, when it is
    // a live PD (contract).
    unsafe {
        let k = &mut (*cmd).core;
        k.mr_handle = (*vmr).ibv_mr.handle;
        k.flags = flags;
        k.start = addr as usize as u64;
        k.length = length as u64;
        k.hca_va = hca_va;
        k.pd_handle = if change_pd { (*pd).handle } else { 0 };
        k.access_flags = access as u32;
    }
    // SAFETY: the MR's context is open and `cmd`/`resp` are valid for their
    // sizes (contract).
    let c = match unsafe { write_cmd((*vmr).ibv_mr.context, &m::REREG_MR, cmd, cmd_sz, resp, resp_sz) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_rereg_mr_resp = c.resp_as();
    // SAFETY: `vmr` is writable; `pd` is live with IBV_REREG_MR_CHANGE_PD
    // (contract).
    unsafe {
        (*vmr).ibv_mr.lkey = r.lkey;
        (*vmr).ibv_mr.rkey = r.rkey;
        if change_pd {
            (*vmr).ibv_mr.context = (*pd).context;
        }
    }
    0
}

/// `ibv_cmd_dereg_mr`.
///
/// # Safety
/// Provider arguments: `vmr` is a live MR of an open context.
pub unsafe fn dereg_mr(vmr: *mut verbs_mr) -> c_int {
    // SAFETY: `vmr` is live, so its context is open and its handle valid
    // (contract).
    unsafe {
        destroy(
            (*vmr).ibv_mr.context,
            &m::DEREG_MR,
            attr::DESTROY_MR_HANDLE,
            (*vmr).ibv_mr.handle,
            req!(ib_uverbs_dereg_mr, mr_handle),
        )
    }
}

/// `ibv_cmd_query_mr` (ioctl only): an MR imported by handle.
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `vmr` a
/// writable `verbs_mr`.
pub unsafe fn query_mr(pd: *mut ibv_pd, vmr: *mut verbs_mr, mr_handle: u32) -> c_int {
    // SAFETY: `vmr` is a writable `verbs_mr` (contract); only the address
    // of its member is taken.
    let mr = unsafe { core::ptr::addr_of_mut!((*vmr).ibv_mr) };
    // SAFETY: `pd` is a live PD (contract).
    let ctx = unsafe { (*pd).context };
    // SAFETY: `ctx` is open; no provider chain is linked.
    let mut c = unsafe { Cmd::new(ctx, &m::QUERY_MR, 4, core::ptr::null_mut()) };
    c.in_obj(attr::QUERY_MR_HANDLE, mr_handle);
    // SAFETY: `mr` points into the writable `*vmr`; only member addresses
    // are taken, for the kernel to write through.
    unsafe {
        c.out(attr::QUERY_MR_RESP_LKEY, core::ptr::addr_of_mut!((*mr).lkey));
        c.out(attr::QUERY_MR_RESP_RKEY, core::ptr::addr_of_mut!((*mr).rkey));
        c.out(attr::QUERY_MR_RESP_LENGTH, core::ptr::addr_of_mut!((*mr).length));
    }
    // SAFETY: the output pointers are members of `*vmr`, writable until
    // this call returns (contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    // SAFETY: `mr` points into the writable `*vmr` (contract).
    unsafe {
        (*mr).handle = mr_handle;
        (*mr).context = ctx;
        (*mr).pd = pd;
        (*mr).addr = core::ptr::null_mut();
        (*vmr).mr_type = IBV_MR_TYPE_IMPORTED_MR;
    }
    0
}

/// `ibv_cmd_advise_mr` (ioctl only).
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `sg_list` is
/// valid for `num_sge` entries.
pub unsafe fn advise_mr(pd: *mut ibv_pd, advice: u32, flags: u32, sg_list: *mut ibv_sge, num_sge: u32) -> c_int {
    // SAFETY: `pd` is a live PD (contract).
    let (ctx, pd_handle) = unsafe { ((*pd).context, (*pd).handle) };
    // SAFETY: `ctx` is open; no provider chain is linked.
    let mut c = unsafe { Cmd::new(ctx, &m::ADVISE_MR, 4, core::ptr::null_mut()) };
    c.in_obj(attr::ADVISE_MR_PD_HANDLE, pd_handle);
    c.in_u64(attr::ADVISE_MR_ADVICE, advice as u64);
    c.in_u32(attr::ADVISE_MR_FLAGS, flags);
    // SAFETY: `sg_list` holds `num_sge` readable entries (contract) for the
    // whole call, so the byte length given is readable.
    unsafe {
        c.in_bytes(
            attr::ADVISE_MR_SGE_LIST,
            sg_list.cast(),
            core::mem::size_of::<ibv_sge>().saturating_mul(num_sge as usize),
        )
    };
    // SAFETY: the only pointer given to `c` is `sg_list`, valid as above.
    super::ok(unsafe { c.exec() })
}

/// `ibv_cmd_reg_dmabuf_mr` (ioctl only).
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `vmr` a
/// writable `verbs_mr`; `driver` null or the provider's attribute chain.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reg_dmabuf_mr(
    pd: *mut ibv_pd,
    offset: u64,
    length: usize,
    iova: u64,
    fd: c_int,
    access: c_int,
    vmr: *mut verbs_mr,
    driver: *mut ibv_command_buffer,
) -> c_int {
    let (mut lkey, mut rkey) = (0u32, 0u32);
    // SAFETY: `pd` is a live PD (contract).
    let (ctx, pd_handle) = unsafe { ((*pd).context, (*pd).handle) };
    // SAFETY: `ctx` is open; `driver` is null or the provider's chain
    // (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::REG_DMABUF_MR, 9, driver) };
    let h = c.out_obj(attr::REG_DMABUF_MR_HANDLE).idx();
    c.out(attr::REG_DMABUF_MR_RESP_LKEY, &mut lkey);
    c.out(attr::REG_DMABUF_MR_RESP_RKEY, &mut rkey);
    c.in_obj(attr::REG_DMABUF_MR_PD_HANDLE, pd_handle);
    c.in_u64(attr::REG_DMABUF_MR_OFFSET, offset);
    c.in_u64(attr::REG_DMABUF_MR_LENGTH, length as u64);
    c.in_u64(attr::REG_DMABUF_MR_IOVA, iova);
    c.in_u32(attr::REG_DMABUF_MR_FD, fd as u32);
    c.in_u32(attr::REG_DMABUF_MR_ACCESS_FLAGS, access as u32);
    // SAFETY: the pointers given to `c` are the locals `lkey` and `rkey`.
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    // SAFETY: `vmr` is a writable `verbs_mr` (contract).
    unsafe {
        set_mr(vmr, c.obj(h), ctx, lkey, rkey, IBV_MR_TYPE_DMABUF_MR);
        let mr = &mut (*vmr).ibv_mr;
        mr.pd = pd;
        mr.addr = offset as usize as *mut c_void;
        mr.length = length;
    }
    0
}

/// `ibv_cmd_reg_dm_mr` (ioctl only): an MR over device memory, always
/// zero-based.
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `dm` live
/// device memory; `vmr` a writable `verbs_mr`; `link` null or a valid
/// chain of the provider's attribute blocks.
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
    // SAFETY: `pd` is a live PD and `dm` live device memory (contract).
    let (ctx, pd_handle, dm_handle) = unsafe { ((*pd).context, (*pd).handle, (*dm).handle) };
    // SAFETY: `ctx` is open and `link` null or a valid chain (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::REG_DM_MR, 8, link) };
    let h = c.out_obj(attr::REG_DM_MR_HANDLE).idx();
    c.out(attr::REG_DM_MR_RESP_LKEY, &mut lkey);
    c.out(attr::REG_DM_MR_RESP_RKEY, &mut rkey);
    c.in_obj(attr::REG_DM_MR_PD_HANDLE, pd_handle);
    c.in_obj(attr::REG_DM_MR_DM_HANDLE, dm_handle);
    c.in_u64(attr::REG_DM_MR_OFFSET, offset);
    c.in_u64(attr::REG_DM_MR_LENGTH, length as u64);
    c.in_u32(attr::REG_DM_MR_ACCESS_FLAGS, access);
    // SAFETY: the pointers given to `c` are the locals `lkey` and `rkey`
    // and the provider's chain `link`, valid for the call (contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    // SAFETY: `vmr` is a writable `verbs_mr` (contract).
    unsafe {
        set_mr(vmr, c.obj(h), ctx, lkey, rkey, IBV_MR_TYPE_MR);
        let mr = &mut (*vmr).ibv_mr;
        mr.length = length;
        mr.pd = pd;
        mr.addr = core::ptr::null_mut();
    }
    0
}

/// What every MR-creating command writes into the provider's `verbs_mr`
/// once the kernel answered: handle, context, keys and type.
///
/// # Safety
/// `vmr` is a writable `verbs_mr`.
pub(crate) unsafe fn set_mr(
    vmr: *mut verbs_mr,
    handle: u32,
    ctx: *mut ibv_context,
    lkey: u32,
    rkey: u32,
    mr_type: ibv_mr_type,
) {
    // SAFETY: writable (contract).
    unsafe {
        let mr = &mut (*vmr).ibv_mr;
        mr.handle = handle;
        mr.context = ctx;
        mr.lkey = lkey;
        mr.rkey = rkey;
        (*vmr).mr_type = mr_type;
    }
}

// --- MW -------------------------------------------------------------------

/// `ibv_cmd_alloc_mw`.
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `mw` a
/// writable `ibv_mw`; `cmd` a writable `ibv_alloc_mw` valid for `cmd_size`
/// bytes; `resp` valid for `resp_size` bytes.
pub unsafe fn alloc_mw(
    pd: *mut ibv_pd,
    type_: u32,
    mw: *mut ibv_mw,
    cmd: *mut ibv_alloc_mw,
    cmd_size: usize,
    resp: *mut ib_uverbs_alloc_mw_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `pd` is a live PD (contract).
    let (ctx, pd_handle) = unsafe { ((*pd).context, (*pd).handle) };
    // SAFETY: `cmd` is a writable `ibv_alloc_mw` (contract).
    unsafe {
        (*cmd).core.pd_handle = pd_handle;
        (*cmd).core.mw_type = type_ as u8;
        (*cmd).core.reserved = [0; 3];
    }
    // SAFETY: `ctx` is open and `cmd`/`resp` are valid for their sizes
    // (contract).
    let c = match unsafe { write_cmd(ctx, &m::ALLOC_MW, cmd, cmd_size, resp, resp_size) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_alloc_mw_resp = c.resp_as();
    // SAFETY: `mw` is a writable `ibv_mw` (contract).
    unsafe {
        (*mw).context = ctx;
        (*mw).pd = pd;
        (*mw).rkey = r.rkey;
        (*mw).handle = r.mw_handle;
        (*mw).r#type = type_;
    }
    0
}

/// `ibv_cmd_dealloc_mw`.
///
/// # Safety
/// Provider arguments: `mw` is a live MW of an open context.
pub unsafe fn dealloc_mw(mw: *mut ibv_mw) -> c_int {
    // SAFETY: `mw` is live, so its context is open and its handle valid
    // (contract).
    unsafe {
        destroy(
            (*mw).context,
            &m::DEALLOC_MW,
            attr::DESTROY_MW_HANDLE,
            (*mw).handle,
            req!(ib_uverbs_dealloc_mw, mw_handle),
        )
    }
}

// --- DM -------------------------------------------------------------------

/// `ibv_cmd_alloc_dm` (ioctl only).
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `dm_attr` a valid
/// `ibv_alloc_dm_attr`; `dm` a writable `verbs_dm`; `link` null or a valid
/// chain of the provider's attribute blocks.
pub unsafe fn alloc_dm(
    ctx: *mut ibv_context,
    dm_attr: *const ibv_alloc_dm_attr,
    dm: *mut verbs_dm,
    link: *mut ibv_command_buffer,
) -> c_int {
    // SAFETY: `ctx` is open and `link` null or a valid chain (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::ALLOC_DM, 3, link) };
    let h = c.out_obj(attr::ALLOC_DM_HANDLE).idx();
    // SAFETY: `dm_attr` is a valid `ibv_alloc_dm_attr` (contract).
    let (length, log_align_req) = unsafe { ((*dm_attr).length, (*dm_attr).log_align_req) };
    c.in_u64(attr::ALLOC_DM_LENGTH, length as u64);
    c.in_u32(attr::ALLOC_DM_ALIGNMENT, log_align_req);
    // SAFETY: the only pointers given to `c` are in the provider's chain
    // `link`, valid for the call (contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: `dm` is a writable `verbs_dm` (contract).
    unsafe {
        (*dm).handle = handle;
        (*dm).dm.handle = (*dm).handle;
        (*dm).dm.comp_mask = IBV_DM_MASK_HANDLE;
        (*dm).dm.context = ctx;
    }
    0
}

/// `ibv_cmd_free_dm` (ioctl only).
///
/// # Safety
/// Provider arguments: `dm` is live device memory of an open context.
pub unsafe fn free_dm(dm: *mut verbs_dm) -> c_int {
    // SAFETY: `dm` is live (contract).
    let (ctx, handle) = unsafe { ((*dm).dm.context, (*dm).handle) };
    // SAFETY: `ctx` is open; no provider chain is linked.
    let mut c = unsafe { Cmd::new(ctx, &m::FREE_DM, 1, core::ptr::null_mut()) };
    c.in_obj(attr::FREE_DM_HANDLE, handle);
    // SAFETY: the command carries no pointers.
    let mut ret = super::ok(unsafe { c.exec() });
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
/// Provider arguments: `pd` is a live PD of an open context; `ah` a
/// writable `ibv_ah`; `attr` a valid `ibv_ah_attr`; `resp` valid for
/// `resp_size` bytes.
pub unsafe fn create_ah(
    pd: *mut ibv_pd,
    ah: *mut ibv_ah,
    attr: *const ibv_ah_attr,
    resp: *mut ib_uverbs_create_ah_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `attr` is a valid `ibv_ah_attr` (contract).
    let a = unsafe { &*attr };
    // SAFETY: `pd` is a live PD (contract).
    let (ctx, pd_handle) = unsafe { ((*pd).context, (*pd).handle) };
    let mut cmd: ibv_create_ah = Default::default();
    let k = &mut cmd.core;
    k.user_handle = ah as usize as u64;
    k.pd_handle = pd_handle;
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
    // SAFETY: every member of the `ibv_gid` union is plain bytes of the
    // same 16-byte storage, so reading `raw` is valid whichever was written.
    k.attr.grh.dgid = unsafe { a.grh.dgid.raw };
    let sz = core::mem::size_of_val(&cmd);
    // SAFETY: `ctx` is open and `resp` valid for `resp_size` bytes
    // (contract); `cmd` is a local of `sz` bytes.
    let c = match unsafe { write_cmd(ctx, &m::CREATE_AH, &mut cmd, sz, resp, resp_size) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_create_ah_resp = c.resp_as();
    // SAFETY: `ah` is a writable `ibv_ah` (contract).
    unsafe {
        (*ah).handle = r.ah_handle;
        (*ah).context = ctx;
    }
    0
}

/// `ibv_cmd_destroy_ah`.
///
/// # Safety
/// Provider arguments: `ah` is a live AH of an open context.
pub unsafe fn destroy_ah(ah: *mut ibv_ah) -> c_int {
    // SAFETY: `ah` is live, so its context is open and its handle valid
    // (contract).
    unsafe {
        destroy(
            (*ah).context,
            &m::DESTROY_AH,
            attr::DESTROY_AH_HANDLE,
            (*ah).handle,
            req!(ib_uverbs_destroy_ah, ah_handle),
        )
    }
}

// --- multicast ------------------------------------------------------------

/// `ibv_cmd_attach_mcast`.
///
/// # Safety
/// Provider arguments: `qp` is a live QP of an open context; `gid` a valid
/// `ibv_gid`.
pub unsafe fn attach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    let mut r: ibv_attach_mcast = Default::default();
    // SAFETY: `qp` is a live QP and `gid` a valid `ibv_gid`, whose union
    // members all are its 16 plain bytes (contract).
    let (ctx, qp_handle, raw) = unsafe { ((*qp).context, (*qp).handle, (*gid).raw) };
    r.core.qp_handle = qp_handle;
    r.core.mlid = lid;
    r.core.gid = raw;
    let sz = core::mem::size_of_val(&r);
    // SAFETY: `ctx` is open (contract) and `r` a local of `sz` bytes.
    unsafe { write_req(ctx, &m::ATTACH_MCAST, &mut r, sz) }
}

/// `ibv_cmd_detach_mcast`.
///
/// # Safety
/// As for [`attach_mcast`].
pub unsafe fn detach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    let mut r: ibv_detach_mcast = Default::default();
    // SAFETY: `qp` is a live QP and `gid` a valid `ibv_gid`, whose union
    // members all are its 16 plain bytes (contract).
    let (ctx, qp_handle, raw) = unsafe { ((*qp).context, (*qp).handle, (*gid).raw) };
    r.core.qp_handle = qp_handle;
    r.core.mlid = lid;
    r.core.gid = raw;
    let sz = core::mem::size_of_val(&r);
    // SAFETY: `ctx` is open (contract) and `r` a local of `sz` bytes.
    let mut ret = unsafe { write_req(ctx, &m::DETACH_MCAST, &mut r, sz) };

    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}
