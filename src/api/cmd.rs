//! The kernel command layer entry points of the provider ABI (the
//! `ibv_cmd_*` of `IBVERBS_PRIVATE_34`), exported with upstream's
//! prototypes.  Each forwards to [`crate::kernel::verbs`]; the command
//! structs are provider ABI 34's ([`crate::kernel::pabi34`]).
//!
//! Conventions are upstream's: 0 or an errno value (`ibv_cmd_poll_cq`
//! returns the number of completions or -1).  A panic becomes EIO.

use std::os::raw::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::generation::Pabi;
use crate::kernel::pabi34::*;
use crate::kernel::uapi::*;
use crate::kernel::verbs::{cq, device, flow, misc, qp, srq, wq};

crate::export! {
    fn ibv_cmd_get_context(context: *mut verbs_context_65, cmd: *mut ibv_get_context, cmd_size: usize, fd_arr: *mut ibv_fd_arr, resp: *mut ib_uverbs_get_context_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is the provider's (PABI 65) `verbs_context` being set up by the context layer
        // (open `cmd_fd`), with the provider's command/response buffers of `cmd_size`/`resp_size` bytes and
        // `fd_arr` null or valid, as device::get_context requires (this function's C contract).
        unsafe { device::get_context(Pabi::P65.view(context.cast()), cmd, cmd_size, fd_arr, resp, resp_size) }
    }
    fn __ibvrs_p34_ibv_cmd_get_context(context: *mut c_void, cmd: *mut ibv_get_context, cmd_size: usize, resp: *mut ib_uverbs_get_context_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: as ibv_cmd_get_context, for a PABI 34 `verbs_context`, without descriptors.
        unsafe { device::get_context(Pabi::P34.view(context), cmd, cmd_size, core::ptr::null(), resp, resp_size) }
    }
    fn ibv_cmd_query_context(ctx: *mut ibv_context, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `ctx` is an open context and `driver` null or the provider's attribute chain, as
        // device::query_context requires (this function's C contract, forwarded unchanged).
        unsafe { device::query_context(ctx, driver) }
    }
    fn ibv_cmd_query_device_any(context: *mut ibv_context, input: *const ibv_query_device_ex_input, attr: *mut ibv_device_attr_ex, attr_size: usize, resp: *mut ib_uverbs_ex_query_device_resp, resp_size: *mut usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `input` null or readable, `attr` has `attr_size` bytes and
        // `resp`/`resp_size` are null or the provider's valid pair, as device::query_device_any requires
        // (this function's C contract, forwarded unchanged).
        unsafe { device::query_device_any(context, input, attr, attr_size, resp, resp_size) }
    }
    fn ibv_cmd_query_port(context: *mut ibv_context, port_num: u8, port_attr: *mut ibv_port_attr, cmd: *mut ibv_query_port, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `port_attr` writable and `cmd` has `cmd_size` bytes, as
        // device::query_port requires (this function's C contract, forwarded unchanged).
        unsafe { device::query_port(context, port_num, port_attr, cmd, cmd_size) }
    }

    fn ibv_cmd_alloc_pd(context: *mut ibv_context, pd: *mut ibv_pd, cmd: *mut ibv_alloc_pd, cmd_size: usize, resp: *mut ib_uverbs_alloc_pd_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `pd` is the provider's new PD object, with the provider's
        // command/response buffers of `cmd_size`/`resp_size` bytes (this function's C contract, forwarded
        // unchanged).
        unsafe { misc::alloc_pd(context, pd, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_dealloc_pd(pd: *mut ibv_pd) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD the provider allocated through ibv_cmd_alloc_pd (this function's C
        // contract, forwarded unchanged).
        unsafe { misc::dealloc_pd(pd) }
    }
    fn ibv_cmd_open_xrcd(context: *mut ibv_context, xrcd: *mut verbs_xrcd, vxrcd_size: c_int, attr: *mut ibv_xrcd_init_attr, cmd: *mut ibv_open_xrcd, cmd_size: usize, resp: *mut ib_uverbs_open_xrcd_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `xrcd` the provider's `verbs_xrcd` of `vxrcd_size` bytes, `attr`
        // readable, with the provider's command/response buffers of `cmd_size`/`resp_size` bytes (this
        // function's C contract, forwarded unchanged).
        unsafe { misc::open_xrcd(context, xrcd, vxrcd_size, attr, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_close_xrcd(xrcd: *mut verbs_xrcd) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `xrcd` is a live XRCD opened through ibv_cmd_open_xrcd (this function's C contract,
        // forwarded unchanged).
        unsafe { misc::close_xrcd(xrcd) }
    }

    fn ibv_cmd_reg_mr(pd: *mut ibv_pd, addr: *mut c_void, length: usize, hca_va: u64, access: c_int, vmr: *mut verbs_mr, cmd: *mut ibv_reg_mr, cmd_size: usize, resp: *mut ib_uverbs_reg_mr_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD, `vmr` the provider's new MR wrapper, `addr`/`length` the caller's region
        // (only passed to the kernel), with the provider's command/response buffers of `cmd_size`/`resp_size`
        // bytes (this function's C contract, forwarded unchanged).
        unsafe { misc::reg_mr(pd, addr, length, hca_va, access, vmr, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_rereg_mr(vmr: *mut verbs_mr, flags: u32, addr: *mut c_void, length: usize, hca_va: u64, access: c_int, pd: *mut ibv_pd, cmd: *mut ibv_rereg_mr, cmd_sz: usize, resp: *mut ib_uverbs_rereg_mr_resp, resp_sz: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `vmr` is a live MR, `pd` null or a live PD, with the provider's command/response buffers of
        // `cmd_sz`/`resp_sz` bytes (this function's C contract, forwarded unchanged).
        unsafe { misc::rereg_mr(vmr, flags, addr, length, hca_va, access, pd, cmd, cmd_sz, resp, resp_sz) }
    }
    fn ibv_cmd_dereg_mr(vmr: *mut verbs_mr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `vmr` is a live MR registered through the command layer (this function's C contract,
        // forwarded unchanged).
        unsafe { misc::dereg_mr(vmr) }
    }
    fn ibv_cmd_query_mr(pd: *mut ibv_pd, vmr: *mut verbs_mr, mr_handle: u32) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD and `vmr` the provider's writable MR wrapper (this function's C contract,
        // forwarded unchanged).
        unsafe { misc::query_mr(pd, vmr, mr_handle) }
    }
    fn ibv_cmd_advise_mr(pd: *mut ibv_pd, advice: ibv_advise_mr_advice, flags: u32, sg_list: *mut ibv_sge, num_sge: u32) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD and `sg_list` has `num_sge` readable entries (this function's C contract,
        // forwarded unchanged).
        unsafe { misc::advise_mr(pd, advice, flags, sg_list, num_sge) }
    }
    fn ibv_cmd_reg_dmabuf_mr(pd: *mut ibv_pd, offset: u64, length: usize, iova: u64, fd: c_int, access: c_int, vmr: *mut verbs_mr, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD, `vmr` the provider's new MR wrapper and `driver` null or its attribute
        // chain (the fd and range only go to the kernel) (this function's C contract, forwarded unchanged).
        unsafe { misc::reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr, driver) }
    }
    fn __ibvrs_p34_ibv_cmd_reg_dmabuf_mr(pd: *mut ibv_pd, offset: u64, length: usize, iova: u64, fd: c_int, access: c_int, vmr: *mut verbs_mr, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        if pd.is_null() {
            return libc::EINVAL;
        }
        // A provider built before rdma-core 54 passes 7 arguments: its
        // `driver` is whatever the stack held (crate::generation).
        // SAFETY: `pd` is a live PD (contract), so its context is open.
        let driver = if unsafe { crate::kernel::state::of((*pd).context) }.is_some_and(|st| st.registration().dmabuf_driver_arg) { driver } else { core::ptr::null_mut() };
        // SAFETY: as ibv_cmd_reg_dmabuf_mr.
        unsafe { misc::reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr, driver) }
    }
    fn ibv_cmd_reg_dm_mr(pd: *mut ibv_pd, dm: *mut verbs_dm, offset: u64, length: usize, access: c_uint, vmr: *mut verbs_mr, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` and `dm` are live objects, `vmr` the provider's new MR wrapper, `link` null or its
        // attribute chain (this function's C contract, forwarded unchanged).
        unsafe { misc::reg_dm_mr(pd, dm, offset, length, access, vmr, link) }
    }
    fn ibv_cmd_alloc_mw(pd: *mut ibv_pd, type_: ibv_mw_type, mw: *mut ibv_mw, cmd: *mut ibv_alloc_mw, cmd_size: usize, resp: *mut ib_uverbs_alloc_mw_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD, `mw` the provider's new MW object, with the provider's command/response
        // buffers of `cmd_size`/`resp_size` bytes (this function's C contract, forwarded unchanged).
        unsafe { misc::alloc_mw(pd, type_, mw, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_dealloc_mw(mw: *mut ibv_mw) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `mw` is a live MW allocated through ibv_cmd_alloc_mw (this function's C contract, forwarded
        // unchanged).
        unsafe { misc::dealloc_mw(mw) }
    }
    fn ibv_cmd_alloc_dm(ctx: *mut ibv_context, dm_attr: *const ibv_alloc_dm_attr, dm: *mut verbs_dm, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `ctx` is open, `dm_attr` readable, `dm` the provider's new DM wrapper, `link` null or its
        // attribute chain (this function's C contract, forwarded unchanged).
        unsafe { misc::alloc_dm(ctx, dm_attr, dm, link) }
    }
    fn ibv_cmd_free_dm(dm: *mut verbs_dm) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `dm` is a live DM allocated through ibv_cmd_alloc_dm (this function's C contract, forwarded
        // unchanged).
        unsafe { misc::free_dm(dm) }
    }

    fn ibv_cmd_create_cq(context: *mut ibv_context, cqe: c_int, channel: *mut ibv_comp_channel, comp_vector: c_int, cq: *mut ibv_cq, cmd: *mut ibv_create_cq, cmd_size: usize, resp: *mut ib_uverbs_create_cq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `cq` the provider's new CQ, `channel` null or live, with the provider's
        // command/response buffers of `cmd_size`/`resp_size` bytes, as cq::create_cq requires (this
        // function's C contract, forwarded unchanged).
        unsafe { cq::create_cq(context, cqe, channel, comp_vector, cq, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_create_cq_ex(context: *mut ibv_context, cq_attr: *const ibv_cq_init_attr_ex, prov_attr: *mut verbs_create_cq_prov_attr, cq: *mut verbs_cq, cmd: *mut ibv_create_cq_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_cq_resp, resp_size: usize, cmd_flags: u32) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `cq_attr` readable (its channel null or live), `prov_attr` null or
        // readable, `cq` the provider's new `verbs_cq`, with the provider's command/response buffers of
        // `cmd_size`/`resp_size` bytes, as cq::create_cq_ex requires (this function's C contract).
        unsafe { cq::create_cq_ex(context, cq_attr, prov_attr, cq, cmd, cmd_size, resp, resp_size, cmd_flags, core::ptr::null_mut()) }
    }
    fn ibv_cmd_create_cq_ex2(context: *mut ibv_context, cq_attr: *const ibv_cq_init_attr_ex, prov_attr: *mut verbs_create_cq_prov_attr, cq: *mut verbs_cq, cmd: *mut ibv_create_cq_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_cq_resp, resp_size: usize, cmd_flags: u32, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: as ibv_cmd_create_cq_ex, with `driver` null or the provider's attribute chain.
        unsafe { cq::create_cq_ex(context, cq_attr, prov_attr, cq, cmd, cmd_size, resp, resp_size, cmd_flags, driver) }
    }
    fn __ibvrs_p34_ibv_cmd_create_cq_ex(context: *mut ibv_context, cq_attr: *const ibv_cq_init_attr_ex, cq: *mut verbs_cq, cmd: *mut ibv_create_cq_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_cq_resp, resp_size: usize, cmd_flags: u32) -> c_int [on_panic: libc::EIO] {
        // SAFETY: as ibv_cmd_create_cq_ex (PABI 34: no provider memory).
        unsafe { cq::create_cq_ex(context, cq_attr, core::ptr::null(), cq, cmd, cmd_size, resp, resp_size, cmd_flags, core::ptr::null_mut()) }
    }
    fn __ibvrs_p34_ibv_cmd_create_cq_ex2(context: *mut ibv_context, cq_attr: *const ibv_cq_init_attr_ex, cq: *mut verbs_cq, cmd: *mut ibv_create_cq_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_cq_resp, resp_size: usize, cmd_flags: u32, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: as ibv_cmd_create_cq_ex2 (PABI 34, rdma-core 53 to 56: no provider memory).
        unsafe { cq::create_cq_ex(context, cq_attr, core::ptr::null(), cq, cmd, cmd_size, resp, resp_size, cmd_flags, driver) }
    }
    fn ibv_cmd_destroy_cq(cq: *mut ibv_cq) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `cq` is a live CQ created through ibv_cmd_create_cq(_ex), as cq::destroy_cq requires (this
        // function's C contract, forwarded unchanged).
        unsafe { cq::destroy_cq(cq) }
    }
    fn ibv_cmd_resize_cq(cq: *mut ibv_cq, cqe: c_int, cmd: *mut ibv_resize_cq, cmd_size: usize, resp: *mut ib_uverbs_resize_cq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `cq` is a live CQ, with the provider's command/response buffers of `cmd_size`/`resp_size`
        // bytes, as cq::resize_cq requires (this function's C contract, forwarded unchanged).
        unsafe { cq::resize_cq(cq, cqe, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_modify_cq(cq: *mut ibv_cq, attr: *mut ibv_modify_cq_attr, cmd: *mut ibv_modify_cq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `cq` is a live CQ, `attr` readable and `cmd` has `cmd_size` bytes, as cq::modify_cq
        // requires (this function's C contract, forwarded unchanged).
        unsafe { cq::modify_cq(cq, attr, cmd, cmd_size) }
    }
    fn ibv_cmd_poll_cq(cq: *mut ibv_cq, ne: c_int, wc: *mut ibv_wc) -> c_int [on_panic: -1] {
        // SAFETY: `cq` is a live CQ and `wc` has room for `ne` entries, as cq::poll_cq requires (this
        // function's C contract, forwarded unchanged).
        unsafe { cq::poll_cq(cq, ne, wc) }
    }
    fn ibv_cmd_req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `cq` is a live CQ, as cq::req_notify_cq requires (this function's C contract, forwarded
        // unchanged).
        unsafe { cq::req_notify_cq(cq, solicited_only) }
    }

    fn ibv_cmd_create_srq(pd: *mut ibv_pd, srq: *mut ibv_srq, attr: *mut ibv_srq_init_attr, cmd: *mut ibv_create_srq, cmd_size: usize, resp: *mut ib_uverbs_create_srq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD, `srq` the provider's new SRQ, `attr` readable and writable, with the
        // provider's command/response buffers of `cmd_size`/`resp_size` bytes, as srq::create_srq requires
        // (this function's C contract, forwarded unchanged).
        unsafe { srq::create_srq(pd, srq, attr, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_create_srq_ex(context: *mut ibv_context, srq: *mut verbs_srq, attr_ex: *mut ibv_srq_init_attr_ex, cmd: *mut ibv_create_xsrq, cmd_size: usize, resp: *mut ib_uverbs_create_srq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `srq` is the provider's new `verbs_srq`, `attr_ex` readable and writable with live PD (and
        // CQ/XRCD where its mask says), with the provider's command/response buffers of
        // `cmd_size`/`resp_size` bytes, as srq::create_srq_ex requires (this function's C contract, forwarded
        // unchanged).
        unsafe { srq::create_srq_ex(context, srq, attr_ex, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_modify_srq(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr, srq_attr_mask: c_int, cmd: *mut ibv_modify_srq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `srq` is a live SRQ, `srq_attr` readable and `cmd` has `cmd_size` bytes, as srq::modify_srq
        // requires (this function's C contract, forwarded unchanged).
        unsafe { srq::modify_srq(srq, srq_attr, srq_attr_mask, cmd, cmd_size) }
    }
    fn ibv_cmd_query_srq(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr, cmd: *mut ibv_query_srq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `srq` is a live SRQ, `srq_attr` writable and `cmd` has `cmd_size` bytes, as srq::query_srq
        // requires (this function's C contract, forwarded unchanged).
        unsafe { srq::query_srq(srq, srq_attr, cmd, cmd_size) }
    }
    fn ibv_cmd_destroy_srq(srq: *mut ibv_srq) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `srq` is a live SRQ created through ibv_cmd_create_srq(_ex), as srq::destroy_srq requires
        // (this function's C contract, forwarded unchanged).
        unsafe { srq::destroy_srq(srq) }
    }

    fn ibv_cmd_create_qp(pd: *mut ibv_pd, qp: *mut ibv_qp, attr: *mut ibv_qp_init_attr, cmd: *mut ibv_create_qp, cmd_size: usize, resp: *mut ib_uverbs_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD, `qp` the provider's new QP, `attr` readable and writable with live
        // CQs/SRQ, with the provider's command/response buffers of `cmd_size`/`resp_size` bytes (this
        // function's C contract, forwarded unchanged).
        unsafe { qp::create_qp(pd, qp, attr, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_create_qp_ex(context: *mut ibv_context, qp: *mut verbs_qp, attr_ex: *mut ibv_qp_init_attr_ex, cmd: *mut ibv_create_qp, cmd_size: usize, resp: *mut ib_uverbs_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `qp` the provider's new `verbs_qp`, `attr_ex` readable and writable with
        // live objects where its mask says, with the provider's command/response buffers of
        // `cmd_size`/`resp_size` bytes (this function's C contract, forwarded unchanged).
        unsafe { qp::create_qp_ex(context, qp, attr_ex, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_create_qp_ex2(context: *mut ibv_context, qp: *mut verbs_qp, qp_attr: *mut ibv_qp_init_attr_ex, cmd: *mut ibv_create_qp_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_qp_resp, resp_size: usize, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: as the PABI 34 form below, with `driver` null or the provider's attribute chain.
        unsafe { qp::create_qp_ex2(context, qp, qp_attr, cmd, cmd_size, resp, resp_size, driver) }
    }
    fn __ibvrs_p34_ibv_cmd_create_qp_ex2(context: *mut ibv_context, qp: *mut verbs_qp, qp_attr: *mut ibv_qp_init_attr_ex, cmd: *mut ibv_create_qp_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `qp` the provider's new `verbs_qp`, `qp_attr` readable and writable with
        // live objects where its mask says, with the provider's command/response buffers of
        // `cmd_size`/`resp_size` bytes (this function's C contract, forwarded unchanged).
        unsafe { qp::create_qp_ex2(context, qp, qp_attr, cmd, cmd_size, resp, resp_size, core::ptr::null_mut()) }
    }
    fn ibv_cmd_open_qp(context: *mut ibv_context, qp: *mut verbs_qp, vqp_sz: c_int, attr: *mut ibv_qp_open_attr, cmd: *mut ibv_open_qp, cmd_size: usize, resp: *mut ib_uverbs_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `qp` the provider's `verbs_qp` of `vqp_sz` bytes, `attr` readable with a
        // live XRCD, with the provider's command/response buffers of `cmd_size`/`resp_size` bytes (this
        // function's C contract, forwarded unchanged).
        unsafe { qp::open_qp(context, qp, vqp_sz, attr, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_query_qp(qp: *mut ibv_qp, qp_attr: *mut ibv_qp_attr, attr_mask: c_int, qp_init_attr: *mut ibv_qp_init_attr, cmd: *mut ibv_query_qp, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `qp` is a live QP, `qp_attr`/`qp_init_attr` writable and `cmd` has `cmd_size` bytes (this
        // function's C contract, forwarded unchanged).
        unsafe { qp::query_qp(qp, qp_attr, attr_mask, qp_init_attr, cmd, cmd_size) }
    }
    fn ibv_cmd_modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int, cmd: *mut ibv_modify_qp, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `qp` is a live QP, `attr` readable and `cmd` has `cmd_size` bytes (this function's C
        // contract, forwarded unchanged).
        unsafe { qp::modify_qp(qp, attr, attr_mask, cmd, cmd_size) }
    }
    fn ibv_cmd_modify_qp_ex(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int, cmd: *mut ibv_modify_qp_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_modify_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `qp` is a live QP, `attr` readable, with the provider's command/response buffers of
        // `cmd_size`/`resp_size` bytes (this function's C contract, forwarded unchanged).
        unsafe { qp::modify_qp_ex(qp, attr, attr_mask, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_destroy_qp(qp: *mut ibv_qp) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `qp` is a live QP created through the command layer (this function's C contract, forwarded
        // unchanged).
        unsafe { qp::destroy_qp(qp) }
    }
    fn ibv_cmd_post_send(ibqp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `ibqp` is a live QP and `wr` a readable, null-terminated list of work requests whose SGE
        // arrays have `num_sge` entries; `bad_wr` writable (this function's C contract, forwarded unchanged).
        unsafe { qp::post_send(ibqp, wr, bad_wr) }
    }
    fn ibv_cmd_post_recv(ibqp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `ibqp` is a live QP and `wr` a readable, null-terminated list of receive requests whose SGE
        // arrays have `num_sge` entries; `bad_wr` writable (this function's C contract, forwarded unchanged).
        unsafe { qp::post_recv(ibqp, wr, bad_wr) }
    }
    fn ibv_cmd_post_srq_recv(srq: *mut ibv_srq, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `srq` is a live SRQ and `wr` a readable, null-terminated list of receive requests whose SGE
        // arrays have `num_sge` entries; `bad_wr` writable (this function's C contract, forwarded unchanged).
        unsafe { qp::post_srq_recv(srq, wr, bad_wr) }
    }

    fn ibv_cmd_create_ah(pd: *mut ibv_pd, ah: *mut ibv_ah, attr: *mut ibv_ah_attr, resp: *mut ib_uverbs_create_ah_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `pd` is a live PD, `ah` the provider's new AH, `attr` readable, and `resp` has `resp_size`
        // bytes (this function's C contract, forwarded unchanged).
        unsafe { misc::create_ah(pd, ah, attr, resp, resp_size) }
    }
    fn ibv_cmd_destroy_ah(ah: *mut ibv_ah) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `ah` is a live AH created through ibv_cmd_create_ah (this function's C contract, forwarded
        // unchanged).
        unsafe { misc::destroy_ah(ah) }
    }
    fn ibv_cmd_attach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `qp` is a live QP and `gid` a readable GID (this function's C contract, forwarded
        // unchanged).
        unsafe { misc::attach_mcast(qp, gid, lid) }
    }
    fn ibv_cmd_detach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `qp` is a live QP and `gid` a readable GID (this function's C contract, forwarded
        // unchanged).
        unsafe { misc::detach_mcast(qp, gid, lid) }
    }

    fn ibv_cmd_create_wq(context: *mut ibv_context, wq_init_attr: *mut ibv_wq_init_attr, wq: *mut ibv_wq, cmd: *mut ibv_create_wq, cmd_size: usize, resp: *mut ib_uverbs_ex_create_wq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `wq_init_attr` readable and writable with live PD and CQ, `wq` the
        // provider's new WQ, with the provider's command/response buffers of `cmd_size`/`resp_size` bytes, as
        // wq::create_wq requires (this function's C contract, forwarded unchanged).
        unsafe { wq::create_wq(context, wq_init_attr, wq, cmd, cmd_size, resp, resp_size) }
    }
    fn ibv_cmd_modify_wq(wq: *mut ibv_wq, attr: *mut ibv_wq_attr, cmd: *mut ibv_modify_wq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `wq` is a live WQ, `attr` readable and `cmd` has `cmd_size` bytes, as wq::modify_wq
        // requires (this function's C contract, forwarded unchanged).
        unsafe { wq::modify_wq(wq, attr, cmd, cmd_size) }
    }
    fn ibv_cmd_destroy_wq(wq: *mut ibv_wq) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `wq` is a live WQ created through ibv_cmd_create_wq, as wq::destroy_wq requires (this
        // function's C contract, forwarded unchanged).
        unsafe { wq::destroy_wq(wq) }
    }
    fn ibv_cmd_create_rwq_ind_table(context: *mut ibv_context, init_attr: *mut ibv_rwq_ind_table_init_attr, rwq_ind_table: *mut ibv_rwq_ind_table, resp: *mut ib_uverbs_ex_create_rwq_ind_table_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `init_attr` readable with `2^log_ind_tbl_size` live WQs, `rwq_ind_table`
        // writable and `resp` has `resp_size` bytes, as wq::create_rwq_ind_table requires (this function's C
        // contract, forwarded unchanged).
        unsafe { wq::create_rwq_ind_table(context, init_attr, rwq_ind_table, resp, resp_size) }
    }
    fn ibv_cmd_destroy_rwq_ind_table(rwq_ind_table: *mut ibv_rwq_ind_table) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `rwq_ind_table` is a live table created through ibv_cmd_create_rwq_ind_table, as
        // wq::destroy_rwq_ind_table requires (this function's C contract, forwarded unchanged).
        unsafe { wq::destroy_rwq_ind_table(rwq_ind_table) }
    }

    fn ibv_cmd_create_flow(qp: *mut ibv_qp, flow_id: *mut ibv_flow, flow_attr: *mut ibv_flow_attr, ucmd: *mut c_void, ucmd_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `qp` is a live QP, `flow_id` the provider's new flow, `flow_attr` a readable flow spec list
        // and `ucmd` has `ucmd_size` bytes of driver data (this function's C contract, forwarded unchanged).
        unsafe { flow::create_flow(qp, flow_id, flow_attr, ucmd.cast(), ucmd_size) }
    }
    fn ibv_cmd_destroy_flow(flow_id: *mut ibv_flow) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `flow_id` is a live flow created through ibv_cmd_create_flow (this function's C contract,
        // forwarded unchanged).
        unsafe { flow::destroy_flow(flow_id) }
    }
    fn ibv_cmd_create_flow_action_esp(ctx: *mut ibv_context, attr: *mut ibv_flow_action_esp_attr, flow_action: *mut verbs_flow_action, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `ctx` is open, `attr` readable, `flow_action` the provider's new wrapper and `driver` null
        // or its attribute chain (this function's C contract, forwarded unchanged).
        unsafe { flow::create_flow_action_esp(ctx, attr, flow_action, driver) }
    }
    fn ibv_cmd_modify_flow_action_esp(flow_action: *mut verbs_flow_action, attr: *mut ibv_flow_action_esp_attr, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `flow_action` is a live flow action, `attr` readable and `driver` null or the provider's
        // attribute chain (this function's C contract, forwarded unchanged).
        unsafe { flow::modify_flow_action_esp(flow_action, attr, driver) }
    }
    fn ibv_cmd_destroy_flow_action(action: *mut verbs_flow_action) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `action` is a live flow action created through the command layer (this function's C
        // contract, forwarded unchanged).
        unsafe { flow::destroy_flow_action(action) }
    }
    fn ibv_cmd_create_counters(context: *mut ibv_context, init_attr: *mut ibv_counters_init_attr, vcounters: *mut verbs_counters, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `context` is open, `init_attr` readable, `vcounters` the provider's new wrapper and `link`
        // null or its attribute chain (this function's C contract, forwarded unchanged).
        unsafe { flow::create_counters(context, init_attr, vcounters, link) }
    }
    fn ibv_cmd_destroy_counters(vcounters: *mut verbs_counters) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `vcounters` is a live counters object created through ibv_cmd_create_counters (this
        // function's C contract, forwarded unchanged).
        unsafe { flow::destroy_counters(vcounters) }
    }
    fn ibv_cmd_read_counters(vcounters: *mut verbs_counters, counters_value: *mut u64, ncounters: u32, flags: u32, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: `vcounters` is live, `counters_value` has room for `ncounters` values and `link` is null or
        // the provider's attribute chain (this function's C contract, forwarded unchanged).
        unsafe { flow::read_counters(vcounters, counters_value, ncounters, flags, link) }
    }
}
