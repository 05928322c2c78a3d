//! Work queues and receive-WQ indirection tables.

use std::os::raw::c_int;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::builder::{req, resp, Cmd, WriteForm};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::state;
use crate::kernel::uapi::*;

use super::cq::Compat;
use super::{destroy, write_req};

/// Upstream's `ibv_icmd_create_wq`.
///
/// # Safety
/// `ctx` is an open context; `a` readable and writable, its `pd` and `cq`
/// live objects; `wq` the provider's writable WQ; the compat buffers valid
/// for their sizes.
unsafe fn icmd_create_wq(ctx: *mut ibv_context, a: *mut ibv_wq_init_attr, wq: *mut ibv_wq, compat: Compat) -> c_int {
    // SAFETY: `a` is readable and writable, not otherwise accessed during
    // this call (contract).
    let a = unsafe { &mut *a };
    // SAFETY: `ctx` is open; no linked blocks.
    let mut c = compat.apply(unsafe { Cmd::new(ctx, &m::CREATE_WQ, 13, core::ptr::null_mut()) });
    let (mut max_wr, mut max_sge, mut wq_num) = (0u32, 0u32, 0u32);
    // SAFETY: `wq` is the provider's writable WQ; `a.pd`, `a.cq` are live
    // (contract); `ctx` is open.
    let (pd_handle, cq_handle, async_fd) = unsafe {
        (*wq).context = ctx;
        (*wq).cq = a.cq;
        (*wq).pd = a.pd;
        (*wq).wq_type = a.wq_type;
        ((*a.pd).handle, (*a.cq).handle, (*ctx).async_fd)
    };

    let h = c
        .out_obj(attr::CREATE_WQ_HANDLE)
        .wx(resp!(ib_uverbs_ex_create_wq_resp, wq_handle))
        .idx();
    c.in_u64(attr::CREATE_WQ_USER_HANDLE, wq as usize as u64)
        .wx(req!(ib_uverbs_ex_create_wq, user_handle));
    c.in_obj(attr::CREATE_WQ_PD_HANDLE, pd_handle)
        .wx(req!(ib_uverbs_ex_create_wq, pd_handle));
    c.in_obj(attr::CREATE_WQ_CQ_HANDLE, cq_handle)
        .wx(req!(ib_uverbs_ex_create_wq, cq_handle));
    c.in_u64(attr::CREATE_WQ_TYPE, a.wq_type as u64)
        .wx(req!(ib_uverbs_ex_create_wq, wq_type));
    c.in_u32(attr::CREATE_WQ_MAX_WR, a.max_wr)
        .wx(req!(ib_uverbs_ex_create_wq, max_wr));
    c.in_u32(attr::CREATE_WQ_MAX_SGE, a.max_sge)
        .wx(req!(ib_uverbs_ex_create_wq, max_sge));
    c.in_fd(attr::CREATE_WQ_EVENT_FD, async_fd);
    let mut create_flags = 0;
    if a.comp_mask & IBV_WQ_INIT_ATTR_FLAGS != 0 {
        if a.create_flags & !(IBV_WQ_FLAGS_RESERVED - 1) != 0 {
            set_errno(libc::EOPNOTSUPP);
            return libc::EOPNOTSUPP;
        }
        create_flags = a.create_flags;
    }
    c.in_u32(attr::CREATE_WQ_FLAGS, create_flags);
    // The extended write() request takes the caller's flags as they are.
    c.wonly(
        None,
        Some(req!(ib_uverbs_ex_create_wq, create_flags)),
        a.create_flags as u64,
    );
    c.out(attr::CREATE_WQ_RESP_MAX_WR, &mut max_wr)
        .wx(resp!(ib_uverbs_ex_create_wq_resp, max_wr));
    c.out(attr::CREATE_WQ_RESP_MAX_SGE, &mut max_sge)
        .wx(resp!(ib_uverbs_ex_create_wq_resp, max_sge));
    c.out(attr::CREATE_WQ_RESP_WQ_NUM, &mut wq_num)
        .wx(resp!(ib_uverbs_ex_create_wq_resp, wqn));
    // SAFETY: `ctx` is an open context of the context layer.
    if unsafe { state::imported(ctx) } {
        c.ioctl_only();
    }
    c.require_ex();

    // SAFETY: `c` points only at the locals `max_wr`, `max_sge`, `wq_num`
    // (alive until the end) and the caller's compat buffers (contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: `wq` is writable (contract).
    unsafe {
        (*wq).handle = handle;
        (*wq).wq_num = wq_num;
    }
    a.max_wr = max_wr;
    a.max_sge = max_sge;
    0
}

/// `ibv_cmd_create_wq`.
///
/// # Safety
/// `ctx` is an open context; `wq_init_attr` readable and writable, its `pd`
/// and `cq` live; `wq` the provider's WQ; `cmd` / `resp` have `cmd_size` /
/// `resp_size` bytes (at least their core structs).
pub unsafe fn create_wq(
    ctx: *mut ibv_context,
    wq_init_attr: *mut ibv_wq_init_attr,
    wq: *mut ibv_wq,
    cmd: *mut ibv_create_wq,
    cmd_size: usize,
    resp: *mut ib_uverbs_ex_create_wq_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `wq_init_attr` is readable (contract).
    if unsafe { (*wq_init_attr).comp_mask } >= IBV_WQ_INIT_ATTR_RESERVED {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    // SAFETY: the caller's contract is icmd_create_wq's.
    unsafe { icmd_create_wq(ctx, wq_init_attr, wq, Compat::of(cmd, cmd_size, resp, resp_size)) }
}

/// `ibv_cmd_destroy_wq`: waits for the application to acknowledge the
/// kernel's reported events.
///
/// # Safety
/// `wq` is a live WQ created through the command layer on an open context
/// (its `mutex` and `cond` initialised).
pub unsafe fn destroy_wq(wq: *mut ibv_wq) -> c_int {
    let mut events: u32 = 0;
    // SAFETY: `wq` is live (contract).
    let (ctx, handle) = unsafe { ((*wq).context, (*wq).handle) };
    // SAFETY: `ctx` is open; no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::DESTROY_WQ, 2, core::ptr::null_mut()) };
    c.out(attr::DESTROY_WQ_RESP, &mut events)
        .wx(resp!(ib_uverbs_ex_destroy_wq_resp, events_reported));
    c.in_obj(attr::DESTROY_WQ_HANDLE, handle)
        .wx(req!(ib_uverbs_ex_destroy_wq, wq_handle));
    // SAFETY: the only pointer in `c` is the local `events`.
    let mut ret = super::ok(unsafe { c.exec() });
    if state::is_destroy_err(&mut ret) {
        return ret;
    }
    // SAFETY: `wq` is live with initialised `mutex` / `cond` (contract); the
    // counter is read volatile, under the mutex wait_events holds.
    unsafe {
        super::wait_events(
            core::ptr::addr_of_mut!((*wq).mutex),
            core::ptr::addr_of_mut!((*wq).cond),
            || core::ptr::addr_of!((*wq).events_completed).read_volatile() == events,
        )
    };
    0
}

/// `ibv_cmd_modify_wq` (extended `write()`).
///
/// # Safety
/// `wq` is a live WQ on an open context; `attr` readable; `cmd` has
/// `cmd_size` bytes (at least its core struct).
pub unsafe fn modify_wq(wq: *mut ibv_wq, attr: *mut ibv_wq_attr, cmd: *mut ibv_modify_wq, cmd_size: usize) -> c_int {
    // SAFETY: `attr` is readable (contract).
    let a = unsafe { &*attr };
    if a.attr_mask >= IBV_WQ_ATTR_RESERVED {
        return libc::EINVAL;
    }
    // SAFETY: `cmd` holds at least an `ibv_modify_wq` (contract); zeroing
    // leaves valid integers, then the core is borrowed exclusively.
    let k = unsafe {
        core::ptr::write_bytes(cmd.cast::<u8>(), 0, core::mem::size_of::<ibv_modify_wq>());
        &mut (*cmd).core
    };
    k.curr_wq_state = a.curr_wq_state;
    k.wq_state = a.wq_state;
    if a.attr_mask & IBV_WQ_ATTR_FLAGS != 0 {
        if a.flags_mask & !(IBV_WQ_FLAGS_RESERVED - 1) != 0 {
            return libc::EOPNOTSUPP;
        }
        k.flags = a.flags;
        k.flags_mask = a.flags_mask;
    }
    // SAFETY: `wq` is live (contract).
    let (ctx, handle) = unsafe { ((*wq).context, (*wq).handle) };
    k.wq_handle = handle;
    k.attr_mask = a.attr_mask;
    // SAFETY: `ctx` is open; `cmd` has `cmd_size` bytes (contract).
    let ret = unsafe { write_req(ctx, &m::MODIFY_WQ, cmd, cmd_size) };
    if ret != 0 {
        return ret;
    }
    if a.attr_mask & IBV_WQ_ATTR_STATE != 0 {
        // SAFETY: `wq` is live and writable (contract).
        unsafe { (*wq).state = a.wq_state };
    }
    0
}

/// `ibv_cmd_create_rwq_ind_table` (extended `write()`).
///
/// # Safety
/// `ctx` is an open context; `init_attr` readable, its `ind_tbl` holding
/// `2^log_ind_tbl_size` live WQs; `table` writable; `resp` has `resp_size`
/// bytes (at least the core response).
pub unsafe fn create_rwq_ind_table(
    ctx: *mut ibv_context,
    init_attr: *mut ibv_rwq_ind_table_init_attr,
    table: *mut ibv_rwq_ind_table,
    resp: *mut ib_uverbs_ex_create_rwq_ind_table_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `init_attr` is readable (contract).
    let a = unsafe { &*init_attr };
    if a.comp_mask >= IBV_CREATE_IND_TABLE_RESERVED {
        return libc::EINVAL;
    }
    // The kernel caps the size far lower (IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE);
    // refuse sizes whose request could not even be allocated.
    if a.log_ind_tbl_size > 24 {
        return libc::EINVAL;
    }
    let n = 1usize << a.log_ind_tbl_size;
    let hdr = core::mem::size_of::<ibv_create_rwq_ind_table>();
    // The whole message is a multiple of 8 bytes.
    let cmd_size = (hdr + n * 4).div_ceil(8) * 8;
    let mut buf = vec![0u64; cmd_size / 8];
    let p = buf.as_mut_ptr().cast::<u8>();
    // SAFETY: `buf` has `hdr + n * 4` bytes (rounded up) and is u64-aligned,
    // so the `n` u32 handles after the header fit and are aligned; the
    // caller's table has `n` live WQ pointers (contract).
    unsafe {
        let handles = p.add(hdr).cast::<u32>();
        for i in 0..n {
            handles.add(i).write((**a.ind_tbl.add(i)).handle);
        }
    }
    // SAFETY: `buf` starts with room for the (u64-aligned) request header,
    // used only through this reference until `c` takes `p`.
    let cmd = unsafe { &mut *p.cast::<ibv_create_rwq_ind_table>() };
    cmd.core.log_ind_tbl_size = a.log_ind_tbl_size;
    cmd.core.comp_mask = 0;
    let rcore = core::mem::size_of::<ib_uverbs_ex_create_rwq_ind_table_resp>();
    // SAFETY: `buf` (`cmd_size` bytes) outlives `c`; `resp` has `resp_size`
    // bytes (contract); `ctx` is open.
    let mut c = unsafe {
        Cmd::write_only(
            ctx,
            &m::CREATE_RWQ_IND_TBL,
            p,
            cmd_size,
            cmd_size,
            resp.cast(),
            rcore,
            resp_size,
        )
    };
    c.set_write_ex(Some(WriteForm {
        cmd: cmd::EX_CREATE_RWQ_IND_TBL,
        req: cmd_size - core::mem::size_of::<ex_hdr>(),
        resp: rcore,
    }));
    // SAFETY: as above.
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let r: ib_uverbs_ex_create_rwq_ind_table_resp = c.resp_as();
    if (r.response_length as usize) < rcore {
        return libc::EINVAL;
    }
    // SAFETY: `table` is writable (contract).
    unsafe {
        (*table).ind_tbl_handle = r.ind_tbl_handle as c_int;
        (*table).ind_tbl_num = r.ind_tbl_num as c_int;
        (*table).context = ctx;
    }
    0
}

/// `ibv_cmd_destroy_rwq_ind_table`.
///
/// # Safety
/// `table` is a live indirection table created on an open context.
pub unsafe fn destroy_rwq_ind_table(table: *mut ibv_rwq_ind_table) -> c_int {
    // SAFETY: `table` is live (contract), so its context is open.
    unsafe {
        destroy(
            (*table).context,
            &m::DESTROY_RWQ_IND_TBL,
            attr::DESTROY_RWQ_IND_TBL_HANDLE,
            (*table).ind_tbl_handle as u32,
            req!(ib_uverbs_ex_destroy_rwq_ind_table, ind_tbl_handle),
        )
    }
}
