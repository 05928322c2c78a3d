//! The kernel command layer entry points used by providers (ibv_cmd_*).
//!
//! Every function here is exported with upstream's prototype.  Until the part
//! of the project that implements it lands, it returns upstream's documented
//! failure for an unsupported operation: NULL with errno = EOPNOTSUPP, the
//! errno code EOPNOTSUPP, or -1 with errno (per the function's convention).
//! Functions returning void cannot report failure; no object they could act
//! on can exist before the device layer (no context can be opened yet).

#[allow(unused_imports)]
use std::os::raw::{c_char, c_int, c_uint, c_void};

#[allow(unused_imports)]
use crate::ffi::{set_errno, NOT_SUPPORTED};

crate::export! {
    fn ibv_cmd_advise_mr(pd: *mut c_void, advice: u32, flags: u32, sg_list: *mut c_void, num_sge: u32) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_alloc_dm(ctx: *mut c_void, dm_attr: *const c_void, dm: *mut c_void, link: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_alloc_mw(pd: *mut c_void, type_: u32, mw: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_alloc_pd(context: *mut c_void, pd: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_attach_mcast(qp: *mut c_void, gid: *const c_void, lid: u16) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_close_xrcd(xrcd: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_ah(pd: *mut c_void, ah: *mut c_void, attr: *mut c_void, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_counters(context: *mut c_void, init_attr: *mut c_void, vcounters: *mut c_void, link: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_cq(context: *mut c_void, cqe: c_int, channel: *mut c_void, comp_vector: c_int, cq: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_cq_ex(context: *mut c_void, cq_attr: *const c_void, cq: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize, cmd_flags: u32) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_flow(qp: *mut c_void, flow_id: *mut c_void, flow_attr: *mut c_void, ucmd: *mut c_void, ucmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_flow_action_esp(ctx: *mut c_void, attr: *mut c_void, flow_action: *mut c_void, driver: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_qp(pd: *mut c_void, qp: *mut c_void, attr: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_qp_ex(context: *mut c_void, qp: *mut c_void, attr_ex: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_qp_ex2(context: *mut c_void, qp: *mut c_void, qp_attr: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_rwq_ind_table(context: *mut c_void, init_attr: *mut c_void, rwq_ind_table: *mut c_void, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_srq(pd: *mut c_void, srq: *mut c_void, attr: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_srq_ex(context: *mut c_void, srq: *mut c_void, attr_ex: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_create_wq(context: *mut c_void, wq_init_attr: *mut c_void, wq: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_dealloc_mw(mw: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_dealloc_pd(pd: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_dereg_mr(vmr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_ah(ah: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_counters(vcounters: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_cq(cq: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_flow(flow_id: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_flow_action(action: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_qp(qp: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_rwq_ind_table(rwq_ind_table: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_srq(srq: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_destroy_wq(wq: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_detach_mcast(qp: *mut c_void, gid: *const c_void, lid: u16) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_free_dm(dm: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_get_context(context: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_modify_cq(cq: *mut c_void, attr: *mut c_void, cmd: *mut c_void, cmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_modify_flow_action_esp(flow_action: *mut c_void, attr: *mut c_void, driver: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_modify_qp(qp: *mut c_void, attr: *mut c_void, attr_mask: c_int, cmd: *mut c_void, cmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_modify_qp_ex(qp: *mut c_void, attr: *mut c_void, attr_mask: c_int, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_modify_srq(srq: *mut c_void, srq_attr: *mut c_void, srq_attr_mask: c_int, cmd: *mut c_void, cmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_modify_wq(wq: *mut c_void, attr: *mut c_void, cmd: *mut c_void, cmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_open_qp(context: *mut c_void, qp: *mut c_void, vqp_sz: c_int, attr: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_open_xrcd(context: *mut c_void, xrcd: *mut c_void, vxrcd_size: c_int, attr: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_poll_cq(cq: *mut c_void, ne: c_int, wc: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_post_recv(ibqp: *mut c_void, wr: *mut c_void, bad_wr: *mut *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_post_send(ibqp: *mut c_void, wr: *mut c_void, bad_wr: *mut *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_post_srq_recv(srq: *mut c_void, wr: *mut c_void, bad_wr: *mut *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_query_context(ctx: *mut c_void, driver: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_query_device_any(context: *mut c_void, input: *const c_void, attr: *mut c_void, attr_size: usize, resp: *mut c_void, resp_size: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_query_mr(pd: *mut c_void, vmr: *mut c_void, mr_handle: u32) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_query_port(context: *mut c_void, port_num: u8, port_attr: *mut c_void, cmd: *mut c_void, cmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_query_qp(qp: *mut c_void, qp_attr: *mut c_void, attr_mask: c_int, qp_init_attr: *mut c_void, cmd: *mut c_void, cmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_query_srq(srq: *mut c_void, srq_attr: *mut c_void, cmd: *mut c_void, cmd_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_read_counters(vcounters: *mut c_void, counters_value: *mut c_void, ncounters: u32, flags: u32, link: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_reg_dm_mr(pd: *mut c_void, dm: *mut c_void, offset: u64, length: usize, access: c_uint, vmr: *mut c_void, link: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_reg_dmabuf_mr(pd: *mut c_void, offset: u64, length: usize, iova: u64, fd: c_int, access: c_int, vmr: *mut c_void) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_reg_mr(pd: *mut c_void, addr: *mut c_void, length: usize, hca_va: u64, access: c_int, vmr: *mut c_void, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_req_notify_cq(cq: *mut c_void, solicited_only: c_int) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_rereg_mr(vmr: *mut c_void, flags: u32, addr: *mut c_void, length: usize, hca_va: u64, access: c_int, pd: *mut c_void, cmd: *mut c_void, cmd_sz: usize, resp: *mut c_void, resp_sz: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
    fn ibv_cmd_resize_cq(cq: *mut c_void, cqe: c_int, cmd: *mut c_void, cmd_size: usize, resp: *mut c_void, resp_size: usize) -> c_int [on_panic: libc::EIO] { NOT_SUPPORTED }
}
