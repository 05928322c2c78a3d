//! Completion queues.

use std::os::raw::c_int;

use crate::abi::*;
use crate::kernel::builder::{req, resp, Cmd, Field, Place, WriteForm};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::state;
use crate::kernel::uapi::*;

use super::{write_cmd, write_req};

/// The provider's compatibility buffers of a create call.
pub(crate) struct Compat {
    pub cmd: *mut u8,
    pub cmd_core: usize,
    pub cmd_size: usize,
    pub resp: *mut u8,
    pub resp_core: usize,
    pub resp_size: usize,
}

impl Compat {
    pub fn of<C, R>(cmd: *mut C, cmd_size: usize, resp: *mut R, resp_size: usize) -> Self {
        Compat {
            cmd: cmd.cast(),
            cmd_core: core::mem::size_of::<C>(),
            cmd_size,
            resp: resp.cast(),
            resp_core: core::mem::size_of::<R>(),
            resp_size,
        }
    }
    pub fn apply(&self, c: Cmd) -> Cmd {
        c.compat(
            self.cmd,
            self.cmd_core,
            self.cmd_size,
            self.resp,
            self.resp_core,
            self.resp_size,
        )
    }
}

/// Upstream's `ibv_icmd_create_cq`.
///
/// # Safety
/// `ctx` is an open context; `cq` the provider's CQ object (writable);
/// `channel` null or a live completion channel; the compat buffers valid
/// for their sizes.
#[allow(clippy::too_many_arguments)] // mirrors upstream's ibv_icmd_create_cq
unsafe fn icmd_create_cq(
    ctx: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
    flags: u32,
    cq: *mut ibv_cq,
    compat: Compat,
    cmd_flags: u32,
    prov_attr: *const verbs_create_cq_prov_attr,
    link: *mut ibv_command_buffer,
) -> c_int {
    let with_mem = cmd_flags & (CREATE_CQ_CMD_FLAGS_WITH_MEM_VA | CREATE_CQ_CMD_FLAGS_WITH_MEM_DMABUF);
    if with_mem != 0 && prov_attr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: `ctx` is open (contract); `link` is null or the provider's
    // attribute chain (contract).
    let mut c = compat.apply(unsafe { Cmd::new(ctx, &m::CREATE_CQ, 12, link) });
    let mut resp_cqe: u32 = 0;
    // SAFETY: `cq` is the provider's writable CQ object (contract).
    unsafe { (*cq).context = ctx };

    let h = c
        .out_obj(attr::CREATE_CQ_HANDLE)
        .w(resp!(ib_uverbs_create_cq_resp, cq_handle))
        .wx(resp!(ib_uverbs_ex_create_cq_resp, base.cq_handle))
        .idx();
    c.out(attr::CREATE_CQ_RESP_CQE, &mut resp_cqe)
        .w(resp!(ib_uverbs_create_cq_resp, cqe))
        .wx(resp!(ib_uverbs_ex_create_cq_resp, base.cqe));
    c.in_u32(attr::CREATE_CQ_CQE, cqe as u32)
        .w(req!(ib_uverbs_create_cq, cqe))
        .wx(req!(ib_uverbs_ex_create_cq, cqe));
    c.in_u64(attr::CREATE_CQ_USER_HANDLE, cq as usize as u64)
        .w(req!(ib_uverbs_create_cq, user_handle))
        .wx(req!(ib_uverbs_ex_create_cq, user_handle));
    let chan_fd: c_int = if channel.is_null() {
        -1
    } else {
        // SAFETY: a non-null `channel` is a live completion channel
        // (contract).
        unsafe { (*channel).fd }
    };
    if !channel.is_null() {
        c.in_fd(attr::CREATE_CQ_COMP_CHANNEL, chan_fd);
    }
    c.wonly(
        Some(req!(ib_uverbs_create_cq, comp_channel)),
        Some(req!(ib_uverbs_ex_create_cq, comp_channel)),
        chan_fd as u32 as u64,
    );
    c.in_u32(attr::CREATE_CQ_COMP_VECTOR, comp_vector as u32)
        .w(req!(ib_uverbs_create_cq, comp_vector))
        .wx(req!(ib_uverbs_ex_create_cq, comp_vector));
    // SAFETY: `ctx` is an open context of the context layer (contract).
    let (imported, async_fd) = unsafe { (state::imported(ctx), (*ctx).async_fd) };
    let afd = c.in_fd(attr::CREATE_CQ_EVENT_FD, async_fd).map(|a| a.idx());
    if imported {
        c.ioctl_only();
    } else if let Some(i) = afd {
        // Keeps the write() fallback possible on kernels without it.
        c.make_optional(i);
    }
    if with_mem != 0 {
        // SAFETY: non-null (checked first) and readable (contract).
        let b = unsafe { (*prov_attr).buffer };
        if cmd_flags & CREATE_CQ_CMD_FLAGS_WITH_MEM_VA != 0 {
            // SAFETY: the VA form of the union is the one the flag names.
            c.in_u64(attr::CREATE_CQ_BUFFER_VA, unsafe { b.u.ptr } as usize as u64);
        } else {
            // SAFETY: the dmabuf form of the union is the one the flag names.
            let d = unsafe { b.u.dmabuf };
            c.in_fd(attr::CREATE_CQ_BUFFER_FD, d.fd);
            c.in_u64(attr::CREATE_CQ_BUFFER_OFFSET, d.offset);
        }
        c.in_u64(attr::CREATE_CQ_BUFFER_LENGTH, b.length);
        c.ioctl_only();
    }
    if flags != 0 {
        if flags & !IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION != 0 || cmd_flags & CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX == 0 {
            c.require_ex();
        }
        c.in_u32(attr::CREATE_CQ_FLAGS, flags)
            .wx(req!(ib_uverbs_ex_create_cq, flags));
    }

    // SAFETY: the only pointers in `c` are `resp_cqe` (a local that outlives
    // the call) and the compat buffers (valid, contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: `cq` is writable (contract).
    unsafe {
        (*cq).handle = handle;
        (*cq).cqe = resp_cqe as c_int;
    }
    0
}

/// `ibv_cmd_create_cq`.
///
/// # Safety
/// `ctx` is an open context; `cq` the provider's CQ object; `channel` null
/// or a live completion channel; `cmd` / `resp` have `cmd_size` /
/// `resp_size` bytes (at least their core structs).
#[allow(clippy::too_many_arguments)] // mirrors the C prototype of ibv_cmd_create_cq
pub unsafe fn create_cq(
    ctx: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
    cq: *mut ibv_cq,
    cmd: *mut ibv_create_cq,
    cmd_size: usize,
    resp: *mut ib_uverbs_create_cq_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: the caller's contract is icmd_create_cq's.
    unsafe {
        icmd_create_cq(
            ctx,
            cqe,
            channel,
            comp_vector,
            0,
            cq,
            Compat::of(cmd, cmd_size, resp, resp_size),
            0,
            core::ptr::null(),
            core::ptr::null_mut(),
        )
    }
}

/// `ibv_cmd_create_cq_ex`.
///
/// # Safety
/// `ctx` is an open context; `cq_attr` a readable attribute struct whose
/// `channel` is null or live; `cq` the provider's `verbs_cq`; `cmd` / `resp`
/// have `cmd_size` / `resp_size` bytes (at least their core structs);
/// `prov_attr` null or readable (required by the memory flags of
/// `cmd_flags`); `driver` null or the provider's attribute chain.
/// Serves `ibv_cmd_create_cq_ex` and `ibv_cmd_create_cq_ex2` of every
/// generation (the older prototypes pass NULL for what they lack).
#[allow(clippy::too_many_arguments)] // mirrors the C prototype of ibv_cmd_create_cq_ex
pub unsafe fn create_cq_ex(
    ctx: *mut ibv_context,
    cq_attr: *const ibv_cq_init_attr_ex,
    prov_attr: *const verbs_create_cq_prov_attr,
    cq: *mut verbs_cq,
    cmd: *mut ibv_create_cq_ex,
    cmd_size: usize,
    resp: *mut ib_uverbs_ex_create_cq_resp,
    resp_size: usize,
    cmd_flags: u32,
    driver: *mut ibv_command_buffer,
) -> c_int {
    // SAFETY: `cq_attr` is readable (contract) and not written meanwhile.
    let a = unsafe { &*cq_attr };
    if !super::check_comp_mask(a.comp_mask, IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD) {
        return libc::EOPNOTSUPP;
    }
    let mut flags = 0;
    if a.wc_flags & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP as u64 | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK as u64)
        != 0
    {
        flags |= IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
    }
    if a.comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS != 0 && a.flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN != 0 {
        flags |= IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN;
    }
    // SAFETY: `verbs_cq` begins with its `ibv_cq`; the other arguments are
    // the caller's, under the same contract.
    unsafe {
        icmd_create_cq(
            ctx,
            a.cqe as c_int,
            a.channel,
            a.comp_vector as c_int,
            flags,
            cq.cast::<ibv_cq>(),
            Compat::of(cmd, cmd_size, resp, resp_size),
            cmd_flags,
            prov_attr,
            driver,
        )
    }
}

/// `ibv_cmd_destroy_cq`: after the kernel destroyed it, waits until the
/// application acknowledged every event the kernel reported for it.
///
/// # Safety
/// `cq` is a live CQ created through the command layer on an open context
/// (its `mutex` and `cond` initialised).
pub unsafe fn destroy_cq(cq: *mut ibv_cq) -> c_int {
    let mut r: ib_uverbs_destroy_cq_resp = zeroed();
    // SAFETY: `cq` is live (contract), so its context is open and its
    // handle readable.
    let (ctx, handle) = unsafe { ((*cq).context, (*cq).handle) };
    // SAFETY: `ctx` is open; no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::DESTROY_CQ, 2, core::ptr::null_mut()) };
    c.out(attr::DESTROY_CQ_RESP, &mut r).w(Place::Resp(Field {
        off: 0,
        len: core::mem::size_of::<ib_uverbs_destroy_cq_resp>(),
    }));
    c.in_obj(attr::DESTROY_CQ_HANDLE, handle)
        .w(req!(ib_uverbs_destroy_cq, cq_handle));
    // SAFETY: the only pointer in `c` is the local `r`, live until the end.
    let mut ret = super::ok(unsafe { c.exec() });
    if state::is_destroy_err(&mut ret) {
        return ret;
    }
    // SAFETY: `cq` is live with initialised `mutex` / `cond` (contract); the
    // event counters are read volatile because other threads acknowledge
    // events under that mutex, which `wait_events` holds while calling us.
    unsafe {
        super::wait_events(
            core::ptr::addr_of_mut!((*cq).mutex),
            core::ptr::addr_of_mut!((*cq).cond),
            || {
                core::ptr::addr_of!((*cq).comp_events_completed).read_volatile() == r.comp_events_reported
                    && core::ptr::addr_of!((*cq).async_events_completed).read_volatile() == r.async_events_reported
            },
        )
    };
    0
}

/// `ibv_cmd_resize_cq`.
///
/// # Safety
/// `cq` is a live CQ on an open context; `cmd` / `resp` have `cmd_size` /
/// `resp_size` bytes (at least their core structs).
pub unsafe fn resize_cq(
    cq: *mut ibv_cq,
    cqe: c_int,
    cmd: *mut ibv_resize_cq,
    cmd_size: usize,
    resp: *mut ib_uverbs_resize_cq_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `cq` is live and `cmd` holds at least its core request
    // (contract).
    let ctx = unsafe {
        (*cmd).core.cq_handle = (*cq).handle;
        (*cmd).core.cqe = cqe as u32;
        (*cq).context
    };
    // SAFETY: `ctx` is open; the buffers are the caller's, valid for their
    // sizes.
    let c = match unsafe { write_cmd(ctx, &m::RESIZE_CQ, cmd, cmd_size, resp, resp_size) } {
        Ok(c) => c,
        Err(e) => return e,
    };
    let r: ib_uverbs_resize_cq_resp = c.resp_as();
    // SAFETY: `cq` is live and writable (contract).
    unsafe { (*cq).cqe = r.cqe as c_int };
    0
}

/// `ibv_cmd_poll_cq`: the kernel-side poll (`write()` only).  Returns the
/// number of completions, or -1.
///
/// # Safety
/// `cq` is a live CQ on an open context; `wc` has room for `ne` entries.
pub unsafe fn poll_cq(cq: *mut ibv_cq, ne: c_int, wc: *mut ibv_wc) -> c_int {
    if ne < 0 {
        return -1;
    }
    let wsz = core::mem::size_of::<ib_uverbs_wc>();
    let hsz = core::mem::size_of::<ib_uverbs_poll_cq_resp>();
    let rsize = hsz + ne as usize * wsz;
    let mut buf: Vec<u64> = Vec::new();
    if buf.try_reserve_exact(rsize.div_ceil(8)).is_err() {
        return -1;
    }
    buf.resize(rsize.div_ceil(8), 0);
    let rp = buf.as_mut_ptr().cast::<u8>();
    let mut cmd: ibv_poll_cq = Default::default();
    // SAFETY: `cq` is live (contract).
    let (ctx, handle) = unsafe { ((*cq).context, (*cq).handle) };
    cmd.core.cq_handle = handle;
    cmd.core.ne = ne as u32;
    let csz = core::mem::size_of_val(&cmd);
    // SAFETY: `cmd` (a local of `csz` bytes) and `buf` (`rsize` bytes at
    // `rp`) outlive `c`.
    let mut c = unsafe {
        Cmd::write_only(
            ctx,
            &m::POLL_CQ,
            (&mut cmd as *mut ibv_poll_cq).cast(),
            csz,
            csz,
            rp,
            rsize,
            rsize,
        )
    };
    c.set_write(Some(WriteForm {
        cmd: cmd::POLL_CQ,
        req: core::mem::size_of::<ib_uverbs_poll_cq>(),
        resp: rsize,
    }));
    // SAFETY: `ctx` is open; the buffers are the locals above.
    if unsafe { c.exec() }.is_err() {
        return -1;
    }
    // SAFETY: `buf` is u64-aligned and holds at least the response header.
    let count = unsafe { rp.cast::<ib_uverbs_poll_cq_resp>().read() }.count;
    let n = (count as usize).min(ne as usize);
    for i in 0..n {
        // SAFETY: `i < ne`, so entry `i` lies inside the `hsz + ne * wsz`
        // bytes of `buf`; read unaligned.
        let k: ib_uverbs_wc = unsafe { rp.add(hsz + i * wsz).cast::<ib_uverbs_wc>().read_unaligned() };
        // SAFETY: `wc` has room for `ne > i` entries (contract).
        let w = unsafe { &mut *wc.add(i) };
        w.wr_id = k.wr_id;
        w.status = k.status;
        w.opcode = k.opcode;
        w.vendor_err = k.vendor_err;
        w.byte_len = k.byte_len;
        w.imm.imm_data = k.ex;
        w.qp_num = k.qp_num;
        w.src_qp = k.src_qp;
        w.wc_flags = k.wc_flags;
        w.pkey_index = k.pkey_index;
        w.slid = k.slid;
        w.sl = k.sl;
        w.dlid_path_bits = k.dlid_path_bits;
    }
    count as c_int
}

/// `ibv_cmd_req_notify_cq`.
///
/// # Safety
/// `cq` is a live CQ on an open context.
pub unsafe fn req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    let mut r: ibv_req_notify_cq = Default::default();
    // SAFETY: `cq` is live (contract).
    let (ctx, handle) = unsafe { ((*cq).context, (*cq).handle) };
    r.core.cq_handle = handle;
    r.core.solicited_only = (solicited_only != 0) as u32;
    let sz = core::mem::size_of_val(&r);
    // SAFETY: `ctx` is open; `r` is a local request of `sz` bytes.
    unsafe { write_req(ctx, &m::REQ_NOTIFY_CQ, &mut r, sz) }
}

/// `ibv_cmd_modify_cq` (extended `write()`).
///
/// # Safety
/// `cq` is a live CQ on an open context; `attr` readable; `cmd` has
/// `cmd_size` bytes (at least its core struct).
pub unsafe fn modify_cq(
    cq: *mut ibv_cq,
    attr: *const ibv_modify_cq_attr,
    cmd: *mut ibv_modify_cq,
    cmd_size: usize,
) -> c_int {
    // SAFETY: `attr` is readable (contract).
    let a = unsafe { &*attr };
    if a.attr_mask >= IBV_CQ_ATTR_RESERVED {
        return libc::EINVAL;
    }
    // SAFETY: `cq` is live; `cmd` holds its core request (contract).
    let (ctx, k) = unsafe { ((*cq).context, &mut (*cmd).core) };
    // SAFETY: as above.
    k.cq_handle = unsafe { (*cq).handle };
    k.attr_mask = a.attr_mask;
    k.attr.cq_count = a.moderate.cq_count;
    k.attr.cq_period = a.moderate.cq_period;
    k.reserved = 0;
    // SAFETY: `ctx` is open; `cmd` has `cmd_size` bytes (contract).
    unsafe { write_req(ctx, &m::MODIFY_CQ, cmd, cmd_size) }
}
