//! The kernel command layer entry points of the provider ABI (the
//! `ibv_cmd_*` of `IBVERBS_PRIVATE_34`), exported with upstream's
//! prototypes.  Each forwards to [`crate::kernel::verbs`]; the command
//! structs are provider ABI 34's ([`crate::kernel::pabi34`]).
//!
//! Conventions are upstream's: 0 or an errno value (`ibv_cmd_poll_cq`
//! returns the number of completions or -1).  A panic becomes EIO.

use std::os::raw::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::kernel::pabi34::*;
use crate::kernel::uapi::*;
use crate::kernel::verbs::{cq, device, flow, misc, qp, srq, wq};

crate::export! {
    fn ibv_cmd_get_context(context: *mut verbs_context, cmd: *mut ibv_get_context, cmd_size: usize, resp: *mut ib_uverbs_get_context_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        device::get_context(context, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_query_context(ctx: *mut ibv_context, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        device::query_context(ctx, driver)
    }
    fn ibv_cmd_query_device_any(context: *mut ibv_context, input: *const ibv_query_device_ex_input, attr: *mut ibv_device_attr_ex, attr_size: usize, resp: *mut ib_uverbs_ex_query_device_resp, resp_size: *mut usize) -> c_int [on_panic: libc::EIO] {
        device::query_device_any(context, input, attr, attr_size, resp, resp_size)
    }
    fn ibv_cmd_query_port(context: *mut ibv_context, port_num: u8, port_attr: *mut ibv_port_attr, cmd: *mut ibv_query_port, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        device::query_port(context, port_num, port_attr, cmd, cmd_size)
    }

    fn ibv_cmd_alloc_pd(context: *mut ibv_context, pd: *mut ibv_pd, cmd: *mut ibv_alloc_pd, cmd_size: usize, resp: *mut ib_uverbs_alloc_pd_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        misc::alloc_pd(context, pd, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_dealloc_pd(pd: *mut ibv_pd) -> c_int [on_panic: libc::EIO] {
        misc::dealloc_pd(pd)
    }
    fn ibv_cmd_open_xrcd(context: *mut ibv_context, xrcd: *mut verbs_xrcd, vxrcd_size: c_int, attr: *mut ibv_xrcd_init_attr, cmd: *mut ibv_open_xrcd, cmd_size: usize, resp: *mut ib_uverbs_open_xrcd_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        misc::open_xrcd(context, xrcd, vxrcd_size, attr, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_close_xrcd(xrcd: *mut verbs_xrcd) -> c_int [on_panic: libc::EIO] {
        misc::close_xrcd(xrcd)
    }

    fn ibv_cmd_reg_mr(pd: *mut ibv_pd, addr: *mut c_void, length: usize, hca_va: u64, access: c_int, vmr: *mut verbs_mr, cmd: *mut ibv_reg_mr, cmd_size: usize, resp: *mut ib_uverbs_reg_mr_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        misc::reg_mr(pd, addr, length, hca_va, access, vmr, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_rereg_mr(vmr: *mut verbs_mr, flags: u32, addr: *mut c_void, length: usize, hca_va: u64, access: c_int, pd: *mut ibv_pd, cmd: *mut ibv_rereg_mr, cmd_sz: usize, resp: *mut ib_uverbs_rereg_mr_resp, resp_sz: usize) -> c_int [on_panic: libc::EIO] {
        misc::rereg_mr(vmr, flags, addr, length, hca_va, access, pd, cmd, cmd_sz, resp, resp_sz)
    }
    fn ibv_cmd_dereg_mr(vmr: *mut verbs_mr) -> c_int [on_panic: libc::EIO] {
        misc::dereg_mr(vmr)
    }
    fn ibv_cmd_query_mr(pd: *mut ibv_pd, vmr: *mut verbs_mr, mr_handle: u32) -> c_int [on_panic: libc::EIO] {
        misc::query_mr(pd, vmr, mr_handle)
    }
    fn ibv_cmd_advise_mr(pd: *mut ibv_pd, advice: ibv_advise_mr_advice, flags: u32, sg_list: *mut ibv_sge, num_sge: u32) -> c_int [on_panic: libc::EIO] {
        misc::advise_mr(pd, advice, flags, sg_list, num_sge)
    }
    fn ibv_cmd_reg_dmabuf_mr(pd: *mut ibv_pd, offset: u64, length: usize, iova: u64, fd: c_int, access: c_int, vmr: *mut verbs_mr) -> c_int [on_panic: libc::EIO] {
        misc::reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr)
    }
    fn ibv_cmd_reg_dm_mr(pd: *mut ibv_pd, dm: *mut verbs_dm, offset: u64, length: usize, access: c_uint, vmr: *mut verbs_mr, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        misc::reg_dm_mr(pd, dm, offset, length, access, vmr, link)
    }
    fn ibv_cmd_alloc_mw(pd: *mut ibv_pd, type_: ibv_mw_type, mw: *mut ibv_mw, cmd: *mut ibv_alloc_mw, cmd_size: usize, resp: *mut ib_uverbs_alloc_mw_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        misc::alloc_mw(pd, type_, mw, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_dealloc_mw(mw: *mut ibv_mw) -> c_int [on_panic: libc::EIO] {
        misc::dealloc_mw(mw)
    }
    fn ibv_cmd_alloc_dm(ctx: *mut ibv_context, dm_attr: *const ibv_alloc_dm_attr, dm: *mut verbs_dm, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        misc::alloc_dm(ctx, dm_attr, dm, link)
    }
    fn ibv_cmd_free_dm(dm: *mut verbs_dm) -> c_int [on_panic: libc::EIO] {
        misc::free_dm(dm)
    }

    fn ibv_cmd_create_cq(context: *mut ibv_context, cqe: c_int, channel: *mut ibv_comp_channel, comp_vector: c_int, cq: *mut ibv_cq, cmd: *mut ibv_create_cq, cmd_size: usize, resp: *mut ib_uverbs_create_cq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        cq::create_cq(context, cqe, channel, comp_vector, cq, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_create_cq_ex(context: *mut ibv_context, cq_attr: *const ibv_cq_init_attr_ex, cq: *mut verbs_cq, cmd: *mut ibv_create_cq_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_cq_resp, resp_size: usize, cmd_flags: u32) -> c_int [on_panic: libc::EIO] {
        cq::create_cq_ex(context, cq_attr, cq, cmd, cmd_size, resp, resp_size, cmd_flags)
    }
    fn ibv_cmd_destroy_cq(cq: *mut ibv_cq) -> c_int [on_panic: libc::EIO] {
        cq::destroy_cq(cq)
    }
    fn ibv_cmd_resize_cq(cq: *mut ibv_cq, cqe: c_int, cmd: *mut ibv_resize_cq, cmd_size: usize, resp: *mut ib_uverbs_resize_cq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        cq::resize_cq(cq, cqe, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_modify_cq(cq: *mut ibv_cq, attr: *mut ibv_modify_cq_attr, cmd: *mut ibv_modify_cq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        cq::modify_cq(cq, attr, cmd, cmd_size)
    }
    fn ibv_cmd_poll_cq(cq: *mut ibv_cq, ne: c_int, wc: *mut ibv_wc) -> c_int [on_panic: -1] {
        cq::poll_cq(cq, ne, wc)
    }
    fn ibv_cmd_req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int [on_panic: libc::EIO] {
        cq::req_notify_cq(cq, solicited_only)
    }

    fn ibv_cmd_create_srq(pd: *mut ibv_pd, srq: *mut ibv_srq, attr: *mut ibv_srq_init_attr, cmd: *mut ibv_create_srq, cmd_size: usize, resp: *mut ib_uverbs_create_srq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        srq::create_srq(pd, srq, attr, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_create_srq_ex(context: *mut ibv_context, srq: *mut verbs_srq, attr_ex: *mut ibv_srq_init_attr_ex, cmd: *mut ibv_create_xsrq, cmd_size: usize, resp: *mut ib_uverbs_create_srq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        srq::create_srq_ex(context, srq, attr_ex, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_modify_srq(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr, srq_attr_mask: c_int, cmd: *mut ibv_modify_srq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        srq::modify_srq(srq, srq_attr, srq_attr_mask, cmd, cmd_size)
    }
    fn ibv_cmd_query_srq(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr, cmd: *mut ibv_query_srq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        srq::query_srq(srq, srq_attr, cmd, cmd_size)
    }
    fn ibv_cmd_destroy_srq(srq: *mut ibv_srq) -> c_int [on_panic: libc::EIO] {
        srq::destroy_srq(srq)
    }

    fn ibv_cmd_create_qp(pd: *mut ibv_pd, qp: *mut ibv_qp, attr: *mut ibv_qp_init_attr, cmd: *mut ibv_create_qp, cmd_size: usize, resp: *mut ib_uverbs_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        qp::create_qp(pd, qp, attr, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_create_qp_ex(context: *mut ibv_context, qp: *mut verbs_qp, attr_ex: *mut ibv_qp_init_attr_ex, cmd: *mut ibv_create_qp, cmd_size: usize, resp: *mut ib_uverbs_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        qp::create_qp_ex(context, qp, attr_ex, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_create_qp_ex2(context: *mut ibv_context, qp: *mut verbs_qp, qp_attr: *mut ibv_qp_init_attr_ex, cmd: *mut ibv_create_qp_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        qp::create_qp_ex2(context, qp, qp_attr, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_open_qp(context: *mut ibv_context, qp: *mut verbs_qp, vqp_sz: c_int, attr: *mut ibv_qp_open_attr, cmd: *mut ibv_open_qp, cmd_size: usize, resp: *mut ib_uverbs_create_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        qp::open_qp(context, qp, vqp_sz, attr, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_query_qp(qp: *mut ibv_qp, qp_attr: *mut ibv_qp_attr, attr_mask: c_int, qp_init_attr: *mut ibv_qp_init_attr, cmd: *mut ibv_query_qp, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        qp::query_qp(qp, qp_attr, attr_mask, qp_init_attr, cmd, cmd_size)
    }
    fn ibv_cmd_modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int, cmd: *mut ibv_modify_qp, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        qp::modify_qp(qp, attr, attr_mask, cmd, cmd_size)
    }
    fn ibv_cmd_modify_qp_ex(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int, cmd: *mut ibv_modify_qp_ex, cmd_size: usize, resp: *mut ib_uverbs_ex_modify_qp_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        qp::modify_qp_ex(qp, attr, attr_mask, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_destroy_qp(qp: *mut ibv_qp) -> c_int [on_panic: libc::EIO] {
        qp::destroy_qp(qp)
    }
    fn ibv_cmd_post_send(ibqp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int [on_panic: libc::EIO] {
        qp::post_send(ibqp, wr, bad_wr)
    }
    fn ibv_cmd_post_recv(ibqp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int [on_panic: libc::EIO] {
        qp::post_recv(ibqp, wr, bad_wr)
    }
    fn ibv_cmd_post_srq_recv(srq: *mut ibv_srq, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int [on_panic: libc::EIO] {
        qp::post_srq_recv(srq, wr, bad_wr)
    }

    fn ibv_cmd_create_ah(pd: *mut ibv_pd, ah: *mut ibv_ah, attr: *mut ibv_ah_attr, resp: *mut ib_uverbs_create_ah_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        misc::create_ah(pd, ah, attr, resp, resp_size)
    }
    fn ibv_cmd_destroy_ah(ah: *mut ibv_ah) -> c_int [on_panic: libc::EIO] {
        misc::destroy_ah(ah)
    }
    fn ibv_cmd_attach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        misc::attach_mcast(qp, gid, lid)
    }
    fn ibv_cmd_detach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int [on_panic: libc::EIO] {
        misc::detach_mcast(qp, gid, lid)
    }

    fn ibv_cmd_create_wq(context: *mut ibv_context, wq_init_attr: *mut ibv_wq_init_attr, wq: *mut ibv_wq, cmd: *mut ibv_create_wq, cmd_size: usize, resp: *mut ib_uverbs_ex_create_wq_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        wq::create_wq(context, wq_init_attr, wq, cmd, cmd_size, resp, resp_size)
    }
    fn ibv_cmd_modify_wq(wq: *mut ibv_wq, attr: *mut ibv_wq_attr, cmd: *mut ibv_modify_wq, cmd_size: usize) -> c_int [on_panic: libc::EIO] {
        wq::modify_wq(wq, attr, cmd, cmd_size)
    }
    fn ibv_cmd_destroy_wq(wq: *mut ibv_wq) -> c_int [on_panic: libc::EIO] {
        wq::destroy_wq(wq)
    }
    fn ibv_cmd_create_rwq_ind_table(context: *mut ibv_context, init_attr: *mut ibv_rwq_ind_table_init_attr, rwq_ind_table: *mut ibv_rwq_ind_table, resp: *mut ib_uverbs_ex_create_rwq_ind_table_resp, resp_size: usize) -> c_int [on_panic: libc::EIO] {
        wq::create_rwq_ind_table(context, init_attr, rwq_ind_table, resp, resp_size)
    }
    fn ibv_cmd_destroy_rwq_ind_table(rwq_ind_table: *mut ibv_rwq_ind_table) -> c_int [on_panic: libc::EIO] {
        wq::destroy_rwq_ind_table(rwq_ind_table)
    }

    fn ibv_cmd_create_flow(qp: *mut ibv_qp, flow_id: *mut ibv_flow, flow_attr: *mut ibv_flow_attr, ucmd: *mut c_void, ucmd_size: usize) -> c_int [on_panic: libc::EIO] {
        flow::create_flow(qp, flow_id, flow_attr, ucmd.cast(), ucmd_size)
    }
    fn ibv_cmd_destroy_flow(flow_id: *mut ibv_flow) -> c_int [on_panic: libc::EIO] {
        flow::destroy_flow(flow_id)
    }
    fn ibv_cmd_create_flow_action_esp(ctx: *mut ibv_context, attr: *mut ibv_flow_action_esp_attr, flow_action: *mut verbs_flow_action, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        flow::create_flow_action_esp(ctx, attr, flow_action, driver)
    }
    fn ibv_cmd_modify_flow_action_esp(flow_action: *mut verbs_flow_action, attr: *mut ibv_flow_action_esp_attr, driver: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        flow::modify_flow_action_esp(flow_action, attr, driver)
    }
    fn ibv_cmd_destroy_flow_action(action: *mut verbs_flow_action) -> c_int [on_panic: libc::EIO] {
        flow::destroy_flow_action(action)
    }
    fn ibv_cmd_create_counters(context: *mut ibv_context, init_attr: *mut ibv_counters_init_attr, vcounters: *mut verbs_counters, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        flow::create_counters(context, init_attr, vcounters, link)
    }
    fn ibv_cmd_destroy_counters(vcounters: *mut verbs_counters) -> c_int [on_panic: libc::EIO] {
        flow::destroy_counters(vcounters)
    }
    fn ibv_cmd_read_counters(vcounters: *mut verbs_counters, counters_value: *mut u64, ncounters: u32, flags: u32, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        flow::read_counters(vcounters, counters_value, ncounters, flags, link)
    }
}
