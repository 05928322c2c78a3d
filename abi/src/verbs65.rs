//! Rust mirrors of the public types that rdma-core 65's `<infiniband/verbs.h>`
//! added after rdma-core 44 (the `IBVERBS_1.15`–`1.18` surface), with the
//! conventions of [`crate::verbs`].  Kept apart from `verbs.rs`, whose test
//! checks every definition against rdma-core 44's header: these are checked
//! against rdma-core 65's.

use crate::verbs::ibv_context;
use libc::{c_int, c_void, size_t};

/// `struct ibv_dmah`: a DMA handle (TPH steering hints for memory).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_dmah {
    pub context: *mut ibv_context,
}

/// `struct ibv_dmah_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_dmah_init_attr {
    pub comp_mask: u32,
    pub cpu_id: u32,
    pub ph: u8,
    pub tph_mem_type: u8,
}

/// `enum ibv_tph_mem_type`
pub type ibv_tph_mem_type = u32;
pub const IBV_TPH_MEM_TYPE_VM: ibv_tph_mem_type = 0;
pub const IBV_TPH_MEM_TYPE_PM: ibv_tph_mem_type = 1;

/// `enum ibv_dmah_init_attr_mask`
pub type ibv_dmah_init_attr_mask = u32;
pub const IBV_DMAH_INIT_ATTR_MASK_CPU_ID: ibv_dmah_init_attr_mask = 1 << 0;
pub const IBV_DMAH_INIT_ATTR_MASK_PH: ibv_dmah_init_attr_mask = 1 << 1;
pub const IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE: ibv_dmah_init_attr_mask = 1 << 2;

/// `struct ibv_buf` (opaque to applications; defined in the provider ABI,
/// [`crate::driver::ibv_buf`]).
pub use crate::driver::ibv_buf;

/// `struct ibv_mr_init_attr`: the arguments of `ibv_reg_mr_ex`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_mr_init_attr {
    pub length: size_t,
    pub access: c_int,
    pub comp_mask: u64,
    pub iova: u64,
    pub addr: *mut c_void,
    pub fd: c_int,
    pub fd_offset: u64,
    pub dmah: *mut ibv_dmah,
    pub buf: *mut ibv_buf,
}

/// `enum ibv_mr_init_attr_mask`
pub type ibv_mr_init_attr_mask = u32;
pub const IBV_REG_MR_MASK_IOVA: ibv_mr_init_attr_mask = 1 << 0;
pub const IBV_REG_MR_MASK_ADDR: ibv_mr_init_attr_mask = 1 << 1;
pub const IBV_REG_MR_MASK_FD: ibv_mr_init_attr_mask = 1 << 2;
pub const IBV_REG_MR_MASK_FD_OFFSET: ibv_mr_init_attr_mask = 1 << 3;
pub const IBV_REG_MR_MASK_DMAH: ibv_mr_init_attr_mask = 1 << 4;
pub const IBV_REG_MR_MASK_BUF: ibv_mr_init_attr_mask = 1 << 5;

/// `struct ibv_comp_cntr`: a completion counter.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_comp_cntr {
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `enum ibv_comp_cntr_type`
pub type ibv_comp_cntr_type = u32;
pub const IBV_COMP_CNTR_TYPE_WRS: ibv_comp_cntr_type = 0;
pub const IBV_COMP_CNTR_TYPE_BYTES: ibv_comp_cntr_type = 1;

/// `struct ibv_comp_cntr_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_comp_cntr_init_attr {
    pub comp_mask: u32,
    pub r#type: ibv_comp_cntr_type,
    pub flags: u32,
}

/// `struct ibv_comp_cntr_caps`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_comp_cntr_caps {
    pub max_value: u64,
    pub max_counters: u32,
    pub supported_qp_attach_ops: u32,
}

/// `struct ibv_qp_attach_comp_cntr_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_attach_comp_cntr_attr {
    pub comp_mask: u32,
    pub op_mask: u32,
}

/// `enum ibv_qp_attach_comp_cntr_op`
pub type ibv_qp_attach_comp_cntr_op = u32;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_SEND: ibv_qp_attach_comp_cntr_op = 1 << 0;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RECV: ibv_qp_attach_comp_cntr_op = 1 << 1;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ: ibv_qp_attach_comp_cntr_op = 1 << 2;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ: ibv_qp_attach_comp_cntr_op = 1 << 3;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE: ibv_qp_attach_comp_cntr_op = 1 << 4;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE: ibv_qp_attach_comp_cntr_op = 1 << 5;

/// `struct ibv_fd_arr`: file descriptors passed to `ibv_cmd_get_context`
/// (rdma-core 65's provider ABI takes it; public in `verbs.h`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_fd_arr {
    pub arr: *mut c_int,
    pub count: u32,
}
