//! The "not supported" defaults a context starts with (upstream's
//! `verbs_dummy_ops`): every op returns EOPNOTSUPP (pointer-returning ones
//! NULL with errno = EOPNOTSUPP) or does nothing; `query_qp_data_in_order`
//! answers 0 and `rereg_mr` IBV_REREG_MR_ERR_INPUT, as upstream.
//! `verbs_set_ops` overwrites them with whatever the provider implements.

#![allow(unused_variables)]

use libc::size_t;
use std::os::raw::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::ffi::set_errno;

const E: c_int = libc::EOPNOTSUPP;

unsafe extern "C" fn advise_mr(
    _pd: *mut ibv_pd,
    _advice: ibv_advise_mr_advice,
    _flags: u32,
    _sg_list: *mut ibv_sge,
    _num_sges: u32,
) -> c_int {
    E
}

unsafe extern "C" fn alloc_dm(_context: *mut ibv_context, _attr: *mut ibv_alloc_dm_attr) -> *mut ibv_dm {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn alloc_mw(_pd: *mut ibv_pd, _type_: ibv_mw_type) -> *mut ibv_mw {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn alloc_null_mr(_pd: *mut ibv_pd) -> *mut ibv_mr {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn alloc_parent_domain(
    _context: *mut ibv_context,
    _attr: *mut ibv_parent_domain_init_attr,
) -> *mut ibv_pd {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn alloc_pd(_context: *mut ibv_context) -> *mut ibv_pd {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn alloc_td(_context: *mut ibv_context, _init_attr: *mut ibv_td_init_attr) -> *mut ibv_td {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn async_event(_context: *mut ibv_context, _event: *mut ibv_async_event) {}

unsafe extern "C" fn attach_counters_point_flow(
    _counters: *mut ibv_counters,
    _attr: *mut ibv_counter_attach_attr,
    _flow: *mut ibv_flow,
) -> c_int {
    E
}

unsafe extern "C" fn attach_mcast(_qp: *mut ibv_qp, _gid: *const ibv_gid, _lid: u16) -> c_int {
    E
}

unsafe extern "C" fn bind_mw(_qp: *mut ibv_qp, _mw: *mut ibv_mw, _mw_bind: *mut ibv_mw_bind) -> c_int {
    E
}

unsafe extern "C" fn close_xrcd(_xrcd: *mut ibv_xrcd) -> c_int {
    E
}

unsafe extern "C" fn cq_event(_cq: *mut ibv_cq) {}

unsafe extern "C" fn create_ah(_pd: *mut ibv_pd, _attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_counters(
    _context: *mut ibv_context,
    _init_attr: *mut ibv_counters_init_attr,
) -> *mut ibv_counters {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_cq(
    _context: *mut ibv_context,
    _cqe: c_int,
    _channel: *mut ibv_comp_channel,
    _comp_vector: c_int,
) -> *mut ibv_cq {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_cq_ex(_context: *mut ibv_context, _init_attr: *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_flow(_qp: *mut ibv_qp, _flow_attr: *mut ibv_flow_attr) -> *mut ibv_flow {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_flow_action_esp(
    _context: *mut ibv_context,
    _attr: *mut ibv_flow_action_esp_attr,
) -> *mut ibv_flow_action {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_qp(_pd: *mut ibv_pd, _attr: *mut ibv_qp_init_attr) -> *mut ibv_qp {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_qp_ex(
    _context: *mut ibv_context,
    _qp_init_attr_ex: *mut ibv_qp_init_attr_ex,
) -> *mut ibv_qp {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_rwq_ind_table(
    _context: *mut ibv_context,
    _init_attr: *mut ibv_rwq_ind_table_init_attr,
) -> *mut ibv_rwq_ind_table {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_srq(_pd: *mut ibv_pd, _srq_init_attr: *mut ibv_srq_init_attr) -> *mut ibv_srq {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_srq_ex(
    _context: *mut ibv_context,
    _srq_init_attr_ex: *mut ibv_srq_init_attr_ex,
) -> *mut ibv_srq {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn create_wq(_context: *mut ibv_context, _wq_init_attr: *mut ibv_wq_init_attr) -> *mut ibv_wq {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn dealloc_mw(_mw: *mut ibv_mw) -> c_int {
    E
}

unsafe extern "C" fn dealloc_pd(_pd: *mut ibv_pd) -> c_int {
    E
}

unsafe extern "C" fn dealloc_td(_td: *mut ibv_td) -> c_int {
    E
}

unsafe extern "C" fn dereg_mr(_vmr: *mut verbs_mr) -> c_int {
    E
}

unsafe extern "C" fn destroy_ah(_ah: *mut ibv_ah) -> c_int {
    E
}

unsafe extern "C" fn destroy_counters(_counters: *mut ibv_counters) -> c_int {
    E
}

unsafe extern "C" fn destroy_cq(_cq: *mut ibv_cq) -> c_int {
    E
}

unsafe extern "C" fn destroy_flow(_flow: *mut ibv_flow) -> c_int {
    E
}

unsafe extern "C" fn destroy_flow_action(_action: *mut ibv_flow_action) -> c_int {
    E
}

unsafe extern "C" fn destroy_qp(_qp: *mut ibv_qp) -> c_int {
    E
}

unsafe extern "C" fn destroy_rwq_ind_table(_rwq_ind_table: *mut ibv_rwq_ind_table) -> c_int {
    E
}

unsafe extern "C" fn destroy_srq(_srq: *mut ibv_srq) -> c_int {
    E
}

unsafe extern "C" fn destroy_wq(_wq: *mut ibv_wq) -> c_int {
    E
}

unsafe extern "C" fn detach_mcast(_qp: *mut ibv_qp, _gid: *const ibv_gid, _lid: u16) -> c_int {
    E
}

unsafe extern "C" fn free_context(_context: *mut ibv_context) {}

unsafe extern "C" fn free_dm(_dm: *mut ibv_dm) -> c_int {
    E
}

unsafe extern "C" fn get_srq_num(_srq: *mut ibv_srq, _srq_num: *mut u32) -> c_int {
    E
}

unsafe extern "C" fn import_dm(_context: *mut ibv_context, _dm_handle: u32) -> *mut ibv_dm {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn import_mr(_pd: *mut ibv_pd, _mr_handle: u32) -> *mut ibv_mr {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn import_pd(_context: *mut ibv_context, _pd_handle: u32) -> *mut ibv_pd {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn modify_cq(_cq: *mut ibv_cq, _attr: *mut ibv_modify_cq_attr) -> c_int {
    E
}

unsafe extern "C" fn modify_flow_action_esp(
    _action: *mut ibv_flow_action,
    _attr: *mut ibv_flow_action_esp_attr,
) -> c_int {
    E
}

unsafe extern "C" fn modify_qp(_qp: *mut ibv_qp, _attr: *mut ibv_qp_attr, _attr_mask: c_int) -> c_int {
    E
}

unsafe extern "C" fn modify_qp_rate_limit(_qp: *mut ibv_qp, _attr: *mut ibv_qp_rate_limit_attr) -> c_int {
    E
}

unsafe extern "C" fn modify_srq(_srq: *mut ibv_srq, _srq_attr: *mut ibv_srq_attr, _srq_attr_mask: c_int) -> c_int {
    E
}

unsafe extern "C" fn modify_wq(_wq: *mut ibv_wq, _wq_attr: *mut ibv_wq_attr) -> c_int {
    E
}

unsafe extern "C" fn open_qp(_context: *mut ibv_context, _attr: *mut ibv_qp_open_attr) -> *mut ibv_qp {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn open_xrcd(_context: *mut ibv_context, _xrcd_init_attr: *mut ibv_xrcd_init_attr) -> *mut ibv_xrcd {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn poll_cq(_cq: *mut ibv_cq, _num_entries: c_int, _wc: *mut ibv_wc) -> c_int {
    E
}

unsafe extern "C" fn post_recv(_qp: *mut ibv_qp, _wr: *mut ibv_recv_wr, _bad_wr: *mut *mut ibv_recv_wr) -> c_int {
    E
}

unsafe extern "C" fn post_send(_qp: *mut ibv_qp, _wr: *mut ibv_send_wr, _bad_wr: *mut *mut ibv_send_wr) -> c_int {
    E
}

unsafe extern "C" fn post_srq_ops(_srq: *mut ibv_srq, _op: *mut ibv_ops_wr, _bad_op: *mut *mut ibv_ops_wr) -> c_int {
    E
}

unsafe extern "C" fn post_srq_recv(
    _srq: *mut ibv_srq,
    _recv_wr: *mut ibv_recv_wr,
    _bad_recv_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    E
}

unsafe extern "C" fn query_device_ex(
    _context: *mut ibv_context,
    _input: *const ibv_query_device_ex_input,
    _attr: *mut ibv_device_attr_ex,
    _attr_size: size_t,
) -> c_int {
    E
}

unsafe extern "C" fn query_ece(_qp: *mut ibv_qp, _ece: *mut ibv_ece) -> c_int {
    E
}

unsafe extern "C" fn query_port(_context: *mut ibv_context, _port_num: u8, _port_attr: *mut ibv_port_attr) -> c_int {
    E
}

unsafe extern "C" fn query_qp(
    _qp: *mut ibv_qp,
    _attr: *mut ibv_qp_attr,
    _attr_mask: c_int,
    _init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    E
}

unsafe extern "C" fn query_qp_data_in_order(_qp: *mut ibv_qp, _op: ibv_wr_opcode, _flags: u32) -> c_int {
    0
}

unsafe extern "C" fn query_rt_values(_context: *mut ibv_context, _values: *mut ibv_values_ex) -> c_int {
    E
}

unsafe extern "C" fn query_srq(_srq: *mut ibv_srq, _srq_attr: *mut ibv_srq_attr) -> c_int {
    E
}

unsafe extern "C" fn read_counters(
    _counters: *mut ibv_counters,
    _counters_value: *mut u64,
    _ncounters: u32,
    _flags: u32,
) -> c_int {
    E
}

unsafe extern "C" fn reg_dm_mr(
    _pd: *mut ibv_pd,
    _dm: *mut ibv_dm,
    _dm_offset: u64,
    _length: size_t,
    _access: c_uint,
) -> *mut ibv_mr {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn reg_dmabuf_mr(
    _pd: *mut ibv_pd,
    _offset: u64,
    _length: size_t,
    _iova: u64,
    _fd: c_int,
    _access: c_int,
) -> *mut ibv_mr {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn reg_mr(
    _pd: *mut ibv_pd,
    _addr: *mut c_void,
    _length: size_t,
    _hca_va: u64,
    _access: c_int,
) -> *mut ibv_mr {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn req_notify_cq(_cq: *mut ibv_cq, _solicited_only: c_int) -> c_int {
    E
}

unsafe extern "C" fn rereg_mr(
    _vmr: *mut verbs_mr,
    _flags: c_int,
    _pd: *mut ibv_pd,
    _addr: *mut c_void,
    _length: size_t,
    _access: c_int,
) -> c_int {
    set_errno(E);
    IBV_REREG_MR_ERR_INPUT as c_int
}

unsafe extern "C" fn resize_cq(_cq: *mut ibv_cq, _cqe: c_int) -> c_int {
    E
}

unsafe extern "C" fn set_ece(_qp: *mut ibv_qp, _ece: *mut ibv_ece) -> c_int {
    E
}

unsafe extern "C" fn unimport_dm(_dm: *mut ibv_dm) {}

unsafe extern "C" fn unimport_mr(_mr: *mut ibv_mr) {}

unsafe extern "C" fn unimport_pd(_pd: *mut ibv_pd) {}

// The ops rdma-core 65 added.

unsafe extern "C" fn alloc_buf(pd: *mut ibv_pd, size: size_t, buf: *mut *mut ibv_buf) -> *mut c_void {
    // Upstream's default: page-aligned memory from the C allocator, with
    // its handle (freed by free_buf).
    if buf.is_null() {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: plain allocation of a zeroed handle.
    let b = unsafe { libc::calloc(1, std::mem::size_of::<ibv_buf>()) }.cast::<ibv_buf>();
    if b.is_null() {
        set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    }
    let mut mem: *mut c_void = std::ptr::null_mut();
    // SAFETY: sysconf has no preconditions; posix_memalign writes `mem`.
    let rc = unsafe { libc::posix_memalign(&mut mem, libc::sysconf(libc::_SC_PAGESIZE) as usize, size) };
    if rc != 0 {
        // SAFETY: the handle allocated above, not handed out.
        unsafe { libc::free(b.cast()) };
        set_errno(rc);
        return std::ptr::null_mut();
    }
    // SAFETY: `b` is a fresh handle; `buf` was checked non-NULL and is the
    // caller's out pointer.
    unsafe {
        *b = ibv_buf {
            addr: mem,
            size,
            pd,
            dmabuf_fd: -1,
        };
        *buf = b;
    }
    mem
}

unsafe extern "C" fn free_buf(buf: *mut ibv_buf) {
    if buf.is_null() {
        return;
    }
    // SAFETY: a handle alloc_buf above made (the only way to get one from
    // this default), freed once by its owner.
    unsafe {
        libc::free((*buf).addr);
        libc::free(buf.cast());
    }
}

unsafe extern "C" fn alloc_dmah(_context: *mut ibv_context, _attr: *mut ibv_dmah_init_attr) -> *mut ibv_dmah {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn dealloc_dmah(_dmah: *mut ibv_dmah) -> c_int {
    E
}

unsafe extern "C" fn create_comp_cntr(
    _context: *mut ibv_context,
    _attr: *mut ibv_comp_cntr_init_attr,
) -> *mut ibv_comp_cntr {
    set_errno(E);
    std::ptr::null_mut()
}

unsafe extern "C" fn destroy_comp_cntr(_c: *mut ibv_comp_cntr) -> c_int {
    E
}

unsafe extern "C" fn dm_export_dmabuf_fd(_dm: *mut ibv_dm) -> c_int {
    set_errno(E);
    -1
}

unsafe extern "C" fn comp_cntr_u64(_c: *mut ibv_comp_cntr, _v: u64) -> c_int {
    E
}

unsafe extern "C" fn comp_cntr_read(_c: *mut ibv_comp_cntr, _v: *mut u64) -> c_int {
    E
}

unsafe extern "C" fn qp_attach_comp_cntr(
    _qp: *mut ibv_qp,
    _c: *mut ibv_comp_cntr,
    _attr: *mut ibv_qp_attach_comp_cntr_attr,
) -> c_int {
    E
}

unsafe extern "C" fn query_comp_cntr_caps(
    _context: *mut ibv_context,
    _caps: *mut ibv_comp_cntr_caps,
    _caps_size: size_t,
) -> c_int {
    E
}

unsafe extern "C" fn query_port_speed(_context: *mut ibv_context, _port_num: u32, _speed: *mut u64) -> c_int {
    E
}

/// The default `reg_mr_ex` (upstream's): a request the legacy ops can
/// express goes to `reg_dmabuf_mr` (fd-based: FD, FD_OFFSET and IOVA, no
/// ADDR) or `reg_mr` (ADDR, no FD_OFFSET; the iova defaults to the
/// address); other combinations are EINVAL, and anything the legacy ops
/// cannot carry (a DMA handle, a buffer handle) EOPNOTSUPP.  Fork handling
/// and the MR's common members are `ibv_reg_mr_ex`'s.
unsafe extern "C" fn reg_mr_ex(pd: *mut ibv_pd, attr: *mut ibv_mr_init_attr) -> *mut ibv_mr {
    // SAFETY: the library passes its own copy of the attribute and a PD of
    // an open context.
    let (a, context) = unsafe { (*attr, (*pd).context) };
    match legacy_reg(&a) {
        Err(e) => {
            set_errno(e);
            std::ptr::null_mut()
        }
        // SAFETY: an open context; the provider gets the caller's values.
        Ok(LegacyReg::Dmabuf) => unsafe {
            crate::op!(context, reg_dmabuf_mr)(pd, a.fd_offset, a.length, a.iova, a.fd, a.access)
        },
        // SAFETY: as above.
        Ok(LegacyReg::Mr { iova }) => unsafe { crate::op!(context, reg_mr)(pd, a.addr, a.length, iova, a.access) },
    }
}

/// Which legacy op serves a `reg_mr_ex` request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LegacyReg {
    Dmabuf,
    Mr { iova: u64 },
}

/// The default `reg_mr_ex`'s decision (upstream's checks, in its order).
pub(crate) fn legacy_reg(a: &ibv_mr_init_attr) -> Result<LegacyReg, c_int> {
    let m = a.comp_mask;
    let has = |b: u32| m & b as u64 != 0;
    let supported =
        (IBV_REG_MR_MASK_IOVA | IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET) as u64;
    if m & !supported != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    if has(IBV_REG_MR_MASK_FD) {
        if has(IBV_REG_MR_MASK_ADDR) || !has(IBV_REG_MR_MASK_FD_OFFSET) || !has(IBV_REG_MR_MASK_IOVA) {
            return Err(libc::EINVAL);
        }
        return Ok(LegacyReg::Dmabuf);
    }
    if !has(IBV_REG_MR_MASK_ADDR) || has(IBV_REG_MR_MASK_FD_OFFSET) {
        return Err(libc::EINVAL);
    }
    let iova = if has(IBV_REG_MR_MASK_IOVA) {
        a.iova
    } else {
        a.addr as usize as u64
    };
    Ok(LegacyReg::Mr { iova })
}

/// The default op table.
pub static DUMMY_OPS: verbs_context_ops_65 = verbs_context_ops_65 {
    alloc_buf: Some(alloc_buf),
    alloc_dmah: Some(alloc_dmah),
    create_comp_cntr: Some(create_comp_cntr),
    dealloc_dmah: Some(dealloc_dmah),
    destroy_comp_cntr: Some(destroy_comp_cntr),
    dm_export_dmabuf_fd: Some(dm_export_dmabuf_fd),
    free_buf: Some(free_buf),
    inc_comp_cntr: Some(comp_cntr_u64),
    inc_err_comp_cntr: Some(comp_cntr_u64),
    qp_attach_comp_cntr: Some(qp_attach_comp_cntr),
    query_comp_cntr_caps: Some(query_comp_cntr_caps),
    query_port_speed: Some(query_port_speed),
    read_comp_cntr: Some(comp_cntr_read),
    read_err_comp_cntr: Some(comp_cntr_read),
    reg_mr_ex: Some(reg_mr_ex),
    set_comp_cntr: Some(comp_cntr_u64),
    set_err_comp_cntr: Some(comp_cntr_u64),
    advise_mr: Some(advise_mr),
    alloc_dm: Some(alloc_dm),
    alloc_mw: Some(alloc_mw),
    alloc_null_mr: Some(alloc_null_mr),
    alloc_parent_domain: Some(alloc_parent_domain),
    alloc_pd: Some(alloc_pd),
    alloc_td: Some(alloc_td),
    async_event: Some(async_event),
    attach_counters_point_flow: Some(attach_counters_point_flow),
    attach_mcast: Some(attach_mcast),
    bind_mw: Some(bind_mw),
    close_xrcd: Some(close_xrcd),
    cq_event: Some(cq_event),
    create_ah: Some(create_ah),
    create_counters: Some(create_counters),
    create_cq: Some(create_cq),
    create_cq_ex: Some(create_cq_ex),
    create_flow: Some(create_flow),
    create_flow_action_esp: Some(create_flow_action_esp),
    create_qp: Some(create_qp),
    create_qp_ex: Some(create_qp_ex),
    create_rwq_ind_table: Some(create_rwq_ind_table),
    create_srq: Some(create_srq),
    create_srq_ex: Some(create_srq_ex),
    create_wq: Some(create_wq),
    dealloc_mw: Some(dealloc_mw),
    dealloc_pd: Some(dealloc_pd),
    dealloc_td: Some(dealloc_td),
    dereg_mr: Some(dereg_mr),
    destroy_ah: Some(destroy_ah),
    destroy_counters: Some(destroy_counters),
    destroy_cq: Some(destroy_cq),
    destroy_flow: Some(destroy_flow),
    destroy_flow_action: Some(destroy_flow_action),
    destroy_qp: Some(destroy_qp),
    destroy_rwq_ind_table: Some(destroy_rwq_ind_table),
    destroy_srq: Some(destroy_srq),
    destroy_wq: Some(destroy_wq),
    detach_mcast: Some(detach_mcast),
    free_context: Some(free_context),
    free_dm: Some(free_dm),
    get_srq_num: Some(get_srq_num),
    import_dm: Some(import_dm),
    import_mr: Some(import_mr),
    import_pd: Some(import_pd),
    modify_cq: Some(modify_cq),
    modify_flow_action_esp: Some(modify_flow_action_esp),
    modify_qp: Some(modify_qp),
    modify_qp_rate_limit: Some(modify_qp_rate_limit),
    modify_srq: Some(modify_srq),
    modify_wq: Some(modify_wq),
    open_qp: Some(open_qp),
    open_xrcd: Some(open_xrcd),
    poll_cq: Some(poll_cq),
    post_recv: Some(post_recv),
    post_send: Some(post_send),
    post_srq_ops: Some(post_srq_ops),
    post_srq_recv: Some(post_srq_recv),
    query_device_ex: Some(query_device_ex),
    query_ece: Some(query_ece),
    query_port: Some(query_port),
    query_qp: Some(query_qp),
    query_qp_data_in_order: Some(query_qp_data_in_order),
    query_rt_values: Some(query_rt_values),
    query_srq: Some(query_srq),
    read_counters: Some(read_counters),
    reg_dm_mr: Some(reg_dm_mr),
    reg_dmabuf_mr: Some(reg_dmabuf_mr),
    reg_mr: Some(reg_mr),
    req_notify_cq: Some(req_notify_cq),
    rereg_mr: Some(rereg_mr),
    resize_cq: Some(resize_cq),
    set_ece: Some(set_ece),
    unimport_dm: Some(unimport_dm),
    unimport_mr: Some(unimport_mr),
    unimport_pd: Some(unimport_pd),
};
