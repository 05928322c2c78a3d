//! The kernel's uverbs ABI, as `#[repr(C)]` Rust mirrors: the `write()`
//! command structs of `<rdma/ib_user_verbs.h>`, the `RDMA_VERBS_IOCTL`
//! object/method/attribute ids of `<rdma/ib_user_ioctl_cmds.h>` and
//! `<rdma/rdma_user_ioctl_cmds.h>`, and the few structs of
//! `<rdma/ib_user_ioctl_verbs.h>` / `<rdma/ib_user_sa.h>` the command layer
//! needs.  This is the *kernel* interface; it does not depend on the
//! provider ABI generation (see [`super::pabi34`] for that).
//!
//! Conventions: a C flexible array member `__aligned_u64 driver_data[]` is
//! not mirrored, but its alignment is (`_align: [u64; 0]`), so sizes and the
//! offsets of structs embedding these ones match C.  `__beNN` members are
//! plain integers holding network-order bytes.  Every size and offset is
//! checked by the tests below against rdma-core 44's pinned table and
//! against the installed kernel headers.
#![allow(non_camel_case_types, non_upper_case_globals, dead_code)]

// ---------------------------------------------------------------------------
// rdma_user_ioctl_cmds.h
// ---------------------------------------------------------------------------

pub const RDMA_IOCTL_MAGIC: u32 = 0x1b;

/// `_IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)`.
pub const RDMA_VERBS_IOCTL: u64 = {
    const IOC_READ_WRITE: u64 = 3;
    (IOC_READ_WRITE << 30) | ((24u64) << 16) | ((RDMA_IOCTL_MAGIC as u64) << 8) | 1
};

pub const UVERBS_ATTR_F_MANDATORY: u16 = 1 << 0;
pub const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 1 << 1;

// ---------------------------------------------------------------------------
// ib_user_ioctl_cmds.h
// ---------------------------------------------------------------------------

pub const UVERBS_ID_NS_MASK: u16 = 0xF000;
pub const UVERBS_ID_NS_SHIFT: u16 = 12;
pub const UVERBS_UDATA_DRIVER_DATA_NS: u16 = 1;
pub const UVERBS_UDATA_DRIVER_DATA_FLAG: u16 = 1 << UVERBS_ID_NS_SHIFT;

/// `enum uverbs_default_objects`.
pub mod obj {
    pub const DEVICE: u16 = 0;
    pub const PD: u16 = 1;
    pub const COMP_CHANNEL: u16 = 2;
    pub const CQ: u16 = 3;
    pub const QP: u16 = 4;
    pub const SRQ: u16 = 5;
    pub const AH: u16 = 6;
    pub const MR: u16 = 7;
    pub const MW: u16 = 8;
    pub const FLOW: u16 = 9;
    pub const XRCD: u16 = 10;
    pub const RWQ_IND_TBL: u16 = 11;
    pub const WQ: u16 = 12;
    pub const FLOW_ACTION: u16 = 13;
    pub const DM: u16 = 14;
    pub const COUNTERS: u16 = 15;
    pub const ASYNC_EVENT: u16 = 16;
    // added after rdma-core 44 (kernel 6.17 and later)
    pub const DMAH: u16 = 17;
    pub const DMABUF: u16 = 18;
    pub const COMP_CNTR: u16 = 19;
}

pub const UVERBS_ATTR_UHW_IN: u16 = UVERBS_UDATA_DRIVER_DATA_FLAG;
pub const UVERBS_ATTR_UHW_OUT: u16 = UVERBS_UDATA_DRIVER_DATA_FLAG + 1;

/// Method ids, per object (`enum uverbs_methods_*`).
pub mod method {
    // device
    pub const INVOKE_WRITE: u16 = 0;
    pub const INFO_HANDLES: u16 = 1;
    pub const QUERY_PORT: u16 = 2;
    pub const GET_CONTEXT: u16 = 3;
    pub const QUERY_CONTEXT: u16 = 4;
    pub const QUERY_GID_TABLE: u16 = 5;
    pub const QUERY_GID_ENTRY: u16 = 6;
    // qp, srq, cq, wq
    pub const QP_CREATE: u16 = 0;
    pub const QP_DESTROY: u16 = 1;
    pub const SRQ_CREATE: u16 = 0;
    pub const SRQ_DESTROY: u16 = 1;
    pub const CQ_CREATE: u16 = 0;
    pub const CQ_DESTROY: u16 = 1;
    pub const WQ_CREATE: u16 = 0;
    pub const WQ_DESTROY: u16 = 1;
    // flow action
    pub const FLOW_ACTION_ESP_CREATE: u16 = 0;
    pub const FLOW_ACTION_DESTROY: u16 = 1;
    pub const FLOW_ACTION_ESP_MODIFY: u16 = 2;
    // dm
    pub const DM_ALLOC: u16 = 0;
    pub const DM_FREE: u16 = 1;
    // mr
    pub const DM_MR_REG: u16 = 0;
    pub const MR_DESTROY: u16 = 1;
    pub const ADVISE_MR: u16 = 2;
    pub const QUERY_MR: u16 = 3;
    pub const REG_DMABUF_MR: u16 = 4;
    // counters
    pub const COUNTERS_CREATE: u16 = 0;
    pub const COUNTERS_DESTROY: u16 = 1;
    pub const COUNTERS_READ: u16 = 2;
    // single-method objects
    pub const PD_DESTROY: u16 = 0;
    pub const MW_DESTROY: u16 = 0;
    pub const XRCD_DESTROY: u16 = 0;
    pub const AH_DESTROY: u16 = 0;
    pub const RWQ_IND_TBL_DESTROY: u16 = 0;
    pub const FLOW_DESTROY: u16 = 0;
    pub const ASYNC_EVENT_ALLOC: u16 = 0;
    // added after rdma-core 44: device, qp, mr
    pub const QUERY_PORT_SPEED: u16 = 7;
    pub const QUERY_COMP_CNTR_CAPS: u16 = 8;
    pub const QP_ATTACH_COMP_CNTR: u16 = 2;
    pub const REG_MR: u16 = 5;
    // dmah
    pub const DMAH_ALLOC: u16 = 0;
    pub const DMAH_FREE: u16 = 1;
    // dmabuf
    pub const DMABUF_ALLOC: u16 = 0;
    // completion counters
    pub const COMP_CNTR_CREATE: u16 = 0;
    pub const COMP_CNTR_DESTROY: u16 = 1;
    pub const COMP_CNTR_MODIFY: u16 = 2;
    pub const COMP_CNTR_READ: u16 = 3;
}

/// Attribute ids, per method (`enum uverbs_attrs_*`).
pub mod attr {
    // INVOKE_WRITE
    pub const CORE_IN: u16 = 0;
    pub const CORE_OUT: u16 = 1;
    pub const WRITE_CMD: u16 = 2;
    // QUERY_PORT
    pub const QUERY_PORT_PORT_NUM: u16 = 0;
    pub const QUERY_PORT_RESP: u16 = 1;
    // GET_CONTEXT / QUERY_CONTEXT
    pub const GET_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
    pub const GET_CONTEXT_CORE_SUPPORT: u16 = 1;
    /// Kernel 6.18 and later (rdma-core 65).
    pub const GET_CONTEXT_FD_ARR: u16 = 2;
    pub const QUERY_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
    pub const QUERY_CONTEXT_CORE_SUPPORT: u16 = 1;
    // CQ_CREATE
    pub const CREATE_CQ_HANDLE: u16 = 0;
    pub const CREATE_CQ_CQE: u16 = 1;
    pub const CREATE_CQ_USER_HANDLE: u16 = 2;
    pub const CREATE_CQ_COMP_CHANNEL: u16 = 3;
    pub const CREATE_CQ_COMP_VECTOR: u16 = 4;
    pub const CREATE_CQ_FLAGS: u16 = 5;
    pub const CREATE_CQ_RESP_CQE: u16 = 6;
    pub const CREATE_CQ_EVENT_FD: u16 = 7;
    // Provider-supplied CQ memory (rdma-core 65; newer kernels than 6.1).
    pub const CREATE_CQ_BUFFER_VA: u16 = 8;
    pub const CREATE_CQ_BUFFER_LENGTH: u16 = 9;
    pub const CREATE_CQ_BUFFER_FD: u16 = 10;
    pub const CREATE_CQ_BUFFER_OFFSET: u16 = 11;
    // CQ_DESTROY
    pub const DESTROY_CQ_HANDLE: u16 = 0;
    pub const DESTROY_CQ_RESP: u16 = 1;
    // FLOW_ACTION_ESP
    pub const CREATE_FLOW_ACTION_ESP_HANDLE: u16 = 0;
    pub const FLOW_ACTION_ESP_ATTRS: u16 = 1;
    pub const FLOW_ACTION_ESP_ESN: u16 = 2;
    pub const FLOW_ACTION_ESP_KEYMAT: u16 = 3;
    pub const FLOW_ACTION_ESP_REPLAY: u16 = 4;
    pub const FLOW_ACTION_ESP_ENCAP: u16 = 5;
    pub const MODIFY_FLOW_ACTION_ESP_HANDLE: u16 = CREATE_FLOW_ACTION_ESP_HANDLE;
    pub const DESTROY_FLOW_ACTION_HANDLE: u16 = 0;
    // QP_CREATE
    pub const CREATE_QP_HANDLE: u16 = 0;
    pub const CREATE_QP_XRCD_HANDLE: u16 = 1;
    pub const CREATE_QP_PD_HANDLE: u16 = 2;
    pub const CREATE_QP_SRQ_HANDLE: u16 = 3;
    pub const CREATE_QP_SEND_CQ_HANDLE: u16 = 4;
    pub const CREATE_QP_RECV_CQ_HANDLE: u16 = 5;
    pub const CREATE_QP_IND_TABLE_HANDLE: u16 = 6;
    pub const CREATE_QP_USER_HANDLE: u16 = 7;
    pub const CREATE_QP_CAP: u16 = 8;
    pub const CREATE_QP_TYPE: u16 = 9;
    pub const CREATE_QP_FLAGS: u16 = 10;
    pub const CREATE_QP_SOURCE_QPN: u16 = 11;
    pub const CREATE_QP_EVENT_FD: u16 = 12;
    pub const CREATE_QP_RESP_CAP: u16 = 13;
    pub const CREATE_QP_RESP_QP_NUM: u16 = 14;
    // QP_DESTROY
    pub const DESTROY_QP_HANDLE: u16 = 0;
    pub const DESTROY_QP_RESP: u16 = 1;
    // SRQ_CREATE
    pub const CREATE_SRQ_HANDLE: u16 = 0;
    pub const CREATE_SRQ_PD_HANDLE: u16 = 1;
    pub const CREATE_SRQ_XRCD_HANDLE: u16 = 2;
    pub const CREATE_SRQ_CQ_HANDLE: u16 = 3;
    pub const CREATE_SRQ_USER_HANDLE: u16 = 4;
    pub const CREATE_SRQ_MAX_WR: u16 = 5;
    pub const CREATE_SRQ_MAX_SGE: u16 = 6;
    pub const CREATE_SRQ_LIMIT: u16 = 7;
    pub const CREATE_SRQ_MAX_NUM_TAGS: u16 = 8;
    pub const CREATE_SRQ_TYPE: u16 = 9;
    pub const CREATE_SRQ_EVENT_FD: u16 = 10;
    pub const CREATE_SRQ_RESP_MAX_WR: u16 = 11;
    pub const CREATE_SRQ_RESP_MAX_SGE: u16 = 12;
    pub const CREATE_SRQ_RESP_SRQ_NUM: u16 = 13;
    // SRQ_DESTROY
    pub const DESTROY_SRQ_HANDLE: u16 = 0;
    pub const DESTROY_SRQ_RESP: u16 = 1;
    // WQ_CREATE
    pub const CREATE_WQ_HANDLE: u16 = 0;
    pub const CREATE_WQ_PD_HANDLE: u16 = 1;
    pub const CREATE_WQ_CQ_HANDLE: u16 = 2;
    pub const CREATE_WQ_USER_HANDLE: u16 = 3;
    pub const CREATE_WQ_TYPE: u16 = 4;
    pub const CREATE_WQ_EVENT_FD: u16 = 5;
    pub const CREATE_WQ_MAX_WR: u16 = 6;
    pub const CREATE_WQ_MAX_SGE: u16 = 7;
    pub const CREATE_WQ_FLAGS: u16 = 8;
    pub const CREATE_WQ_RESP_MAX_WR: u16 = 9;
    pub const CREATE_WQ_RESP_MAX_SGE: u16 = 10;
    pub const CREATE_WQ_RESP_WQ_NUM: u16 = 11;
    // WQ_DESTROY
    pub const DESTROY_WQ_HANDLE: u16 = 0;
    pub const DESTROY_WQ_RESP: u16 = 1;
    // DM
    pub const ALLOC_DM_HANDLE: u16 = 0;
    pub const ALLOC_DM_LENGTH: u16 = 1;
    pub const ALLOC_DM_ALIGNMENT: u16 = 2;
    pub const FREE_DM_HANDLE: u16 = 0;
    // DM_MR_REG
    pub const REG_DM_MR_HANDLE: u16 = 0;
    pub const REG_DM_MR_OFFSET: u16 = 1;
    pub const REG_DM_MR_LENGTH: u16 = 2;
    pub const REG_DM_MR_PD_HANDLE: u16 = 3;
    pub const REG_DM_MR_ACCESS_FLAGS: u16 = 4;
    pub const REG_DM_MR_DM_HANDLE: u16 = 5;
    pub const REG_DM_MR_RESP_LKEY: u16 = 6;
    pub const REG_DM_MR_RESP_RKEY: u16 = 7;
    // MR
    pub const DESTROY_MR_HANDLE: u16 = 0;
    pub const ADVISE_MR_PD_HANDLE: u16 = 0;
    pub const ADVISE_MR_ADVICE: u16 = 1;
    pub const ADVISE_MR_FLAGS: u16 = 2;
    pub const ADVISE_MR_SGE_LIST: u16 = 3;
    pub const QUERY_MR_HANDLE: u16 = 0;
    pub const QUERY_MR_RESP_LKEY: u16 = 1;
    pub const QUERY_MR_RESP_RKEY: u16 = 2;
    pub const QUERY_MR_RESP_LENGTH: u16 = 3;
    pub const QUERY_MR_RESP_IOVA: u16 = 4;
    pub const REG_DMABUF_MR_HANDLE: u16 = 0;
    pub const REG_DMABUF_MR_PD_HANDLE: u16 = 1;
    pub const REG_DMABUF_MR_OFFSET: u16 = 2;
    pub const REG_DMABUF_MR_LENGTH: u16 = 3;
    pub const REG_DMABUF_MR_IOVA: u16 = 4;
    pub const REG_DMABUF_MR_FD: u16 = 5;
    pub const REG_DMABUF_MR_ACCESS_FLAGS: u16 = 6;
    pub const REG_DMABUF_MR_RESP_LKEY: u16 = 7;
    pub const REG_DMABUF_MR_RESP_RKEY: u16 = 8;
    // COUNTERS
    pub const CREATE_COUNTERS_HANDLE: u16 = 0;
    pub const DESTROY_COUNTERS_HANDLE: u16 = 0;
    pub const READ_COUNTERS_HANDLE: u16 = 0;
    pub const READ_COUNTERS_BUFF: u16 = 1;
    pub const READ_COUNTERS_FLAGS: u16 = 2;
    // single-method objects
    pub const DESTROY_PD_HANDLE: u16 = 0;
    pub const DESTROY_MW_HANDLE: u16 = 0;
    pub const DESTROY_XRCD_HANDLE: u16 = 0;
    pub const DESTROY_AH_HANDLE: u16 = 0;
    pub const DESTROY_RWQ_IND_TBL_HANDLE: u16 = 0;
    pub const DESTROY_FLOW_HANDLE: u16 = 0;
    pub const ASYNC_EVENT_ALLOC_FD_HANDLE: u16 = 0;
    // QUERY_GID_TABLE / QUERY_GID_ENTRY
    pub const QUERY_GID_TABLE_ENTRY_SIZE: u16 = 0;
    pub const QUERY_GID_TABLE_FLAGS: u16 = 1;
    pub const QUERY_GID_TABLE_RESP_ENTRIES: u16 = 2;
    pub const QUERY_GID_TABLE_RESP_NUM_ENTRIES: u16 = 3;
    pub const QUERY_GID_ENTRY_PORT: u16 = 0;
    pub const QUERY_GID_ENTRY_GID_INDEX: u16 = 1;
    pub const QUERY_GID_ENTRY_FLAGS: u16 = 2;
    pub const QUERY_GID_ENTRY_RESP_ENTRY: u16 = 3;
    // added after rdma-core 44
    // QUERY_PORT_SPEED
    pub const QUERY_PORT_SPEED_PORT_NUM: u16 = 0;
    pub const QUERY_PORT_SPEED_RESP: u16 = 1;
    // QUERY_COMP_CNTR_CAPS
    pub const QUERY_COMP_CNTR_CAPS_MAX_COUNTERS: u16 = 0;
    pub const QUERY_COMP_CNTR_CAPS_MAX_VALUE: u16 = 1;
    pub const QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS: u16 = 2;
    // QP_ATTACH_COMP_CNTR
    pub const QP_ATTACH_COMP_CNTR_HANDLE: u16 = 0;
    pub const QP_ATTACH_COMP_CNTR_CNTR_HANDLE: u16 = 1;
    pub const QP_ATTACH_COMP_CNTR_OP_MASK: u16 = 2;
    // DMAH_ALLOC / DMAH_FREE
    pub const ALLOC_DMAH_HANDLE: u16 = 0;
    pub const ALLOC_DMAH_CPU_ID: u16 = 1;
    pub const ALLOC_DMAH_TPH_MEM_TYPE: u16 = 2;
    pub const ALLOC_DMAH_PH: u16 = 3;
    pub const FREE_DMA_HANDLE: u16 = 0;
    // DMABUF_ALLOC
    pub const ALLOC_DMABUF_HANDLE: u16 = 0;
    pub const ALLOC_DMABUF_PGOFF: u16 = 1;
    // REG_MR
    pub const REG_MR_HANDLE: u16 = 0;
    pub const REG_MR_PD_HANDLE: u16 = 1;
    pub const REG_MR_DMA_HANDLE: u16 = 2;
    pub const REG_MR_IOVA: u16 = 3;
    pub const REG_MR_ADDR: u16 = 4;
    pub const REG_MR_LENGTH: u16 = 5;
    pub const REG_MR_ACCESS_FLAGS: u16 = 6;
    pub const REG_MR_FD: u16 = 7;
    pub const REG_MR_FD_OFFSET: u16 = 8;
    pub const REG_MR_RESP_LKEY: u16 = 9;
    pub const REG_MR_RESP_RKEY: u16 = 10;
    // COMP_CNTR_*
    pub const CREATE_COMP_CNTR_HANDLE: u16 = 0;
    pub const DESTROY_COMP_CNTR_HANDLE: u16 = 0;
    pub const MODIFY_COMP_CNTR_HANDLE: u16 = 0;
    pub const MODIFY_COMP_CNTR_ENTRY: u16 = 1;
    pub const MODIFY_COMP_CNTR_OP: u16 = 2;
    pub const MODIFY_COMP_CNTR_VALUE: u16 = 3;
    pub const READ_COMP_CNTR_HANDLE: u16 = 0;
    pub const READ_COMP_CNTR_ENTRY: u16 = 1;
    pub const READ_COMP_CNTR_RESP_VALUE: u16 = 2;
}

// ib_user_ioctl_verbs.h values added after rdma-core 44.

/// `enum ib_uverbs_comp_cntr_entry`.
pub const IB_UVERBS_COMP_CNTR_ENTRY_COMP: u8 = 0;
pub const IB_UVERBS_COMP_CNTR_ENTRY_ERR: u8 = 1;
/// `enum ib_uverbs_comp_cntr_modify_op`.
pub const IB_UVERBS_COMP_CNTR_MODIFY_OP_SET: u8 = 0;
pub const IB_UVERBS_COMP_CNTR_MODIFY_OP_INC: u8 = 1;
/// `enum ib_uverbs_qp_attach_comp_cntr_op`.
pub const IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_SEND: u32 = 1 << 0;
pub const IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RECV: u32 = 1 << 1;
pub const IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_READ: u32 = 1 << 2;
pub const IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ: u32 = 1 << 3;
pub const IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE: u32 = 1 << 4;
pub const IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE: u32 = 1 << 5;

/// The ids above, as the uAPI header of rdma-core 65 names them (checked
/// against those headers when they are installed, see the tests).
pub const IDS_AFTER_44: &[(&str, i64)] = &[
    ("UVERBS_OBJECT_DMAH", obj::DMAH as i64),
    ("UVERBS_OBJECT_DMABUF", obj::DMABUF as i64),
    ("UVERBS_OBJECT_COMP_CNTR", obj::COMP_CNTR as i64),
    ("UVERBS_METHOD_QUERY_PORT_SPEED", method::QUERY_PORT_SPEED as i64),
    (
        "UVERBS_METHOD_QUERY_COMP_CNTR_CAPS",
        method::QUERY_COMP_CNTR_CAPS as i64,
    ),
    ("UVERBS_METHOD_QP_ATTACH_COMP_CNTR", method::QP_ATTACH_COMP_CNTR as i64),
    ("UVERBS_METHOD_REG_MR", method::REG_MR as i64),
    ("UVERBS_METHOD_DMAH_ALLOC", method::DMAH_ALLOC as i64),
    ("UVERBS_METHOD_DMAH_FREE", method::DMAH_FREE as i64),
    ("UVERBS_METHOD_DMABUF_ALLOC", method::DMABUF_ALLOC as i64),
    ("UVERBS_METHOD_COMP_CNTR_CREATE", method::COMP_CNTR_CREATE as i64),
    ("UVERBS_METHOD_COMP_CNTR_DESTROY", method::COMP_CNTR_DESTROY as i64),
    ("UVERBS_METHOD_COMP_CNTR_MODIFY", method::COMP_CNTR_MODIFY as i64),
    ("UVERBS_METHOD_COMP_CNTR_READ", method::COMP_CNTR_READ as i64),
    (
        "UVERBS_ATTR_QUERY_PORT_SPEED_PORT_NUM",
        attr::QUERY_PORT_SPEED_PORT_NUM as i64,
    ),
    ("UVERBS_ATTR_QUERY_PORT_SPEED_RESP", attr::QUERY_PORT_SPEED_RESP as i64),
    (
        "UVERBS_ATTR_QUERY_COMP_CNTR_CAPS_MAX_COUNTERS",
        attr::QUERY_COMP_CNTR_CAPS_MAX_COUNTERS as i64,
    ),
    (
        "UVERBS_ATTR_QUERY_COMP_CNTR_CAPS_MAX_VALUE",
        attr::QUERY_COMP_CNTR_CAPS_MAX_VALUE as i64,
    ),
    (
        "UVERBS_ATTR_QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS",
        attr::QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS as i64,
    ),
    (
        "UVERBS_ATTR_QP_ATTACH_COMP_CNTR_HANDLE",
        attr::QP_ATTACH_COMP_CNTR_HANDLE as i64,
    ),
    (
        "UVERBS_ATTR_QP_ATTACH_COMP_CNTR_CNTR_HANDLE",
        attr::QP_ATTACH_COMP_CNTR_CNTR_HANDLE as i64,
    ),
    (
        "UVERBS_ATTR_QP_ATTACH_COMP_CNTR_OP_MASK",
        attr::QP_ATTACH_COMP_CNTR_OP_MASK as i64,
    ),
    ("UVERBS_ATTR_ALLOC_DMAH_HANDLE", attr::ALLOC_DMAH_HANDLE as i64),
    ("UVERBS_ATTR_ALLOC_DMAH_CPU_ID", attr::ALLOC_DMAH_CPU_ID as i64),
    (
        "UVERBS_ATTR_ALLOC_DMAH_TPH_MEM_TYPE",
        attr::ALLOC_DMAH_TPH_MEM_TYPE as i64,
    ),
    ("UVERBS_ATTR_ALLOC_DMAH_PH", attr::ALLOC_DMAH_PH as i64),
    ("UVERBS_ATTR_FREE_DMA_HANDLE", attr::FREE_DMA_HANDLE as i64),
    ("UVERBS_ATTR_ALLOC_DMABUF_HANDLE", attr::ALLOC_DMABUF_HANDLE as i64),
    ("UVERBS_ATTR_ALLOC_DMABUF_PGOFF", attr::ALLOC_DMABUF_PGOFF as i64),
    ("UVERBS_ATTR_REG_MR_HANDLE", attr::REG_MR_HANDLE as i64),
    ("UVERBS_ATTR_REG_MR_PD_HANDLE", attr::REG_MR_PD_HANDLE as i64),
    ("UVERBS_ATTR_REG_MR_DMA_HANDLE", attr::REG_MR_DMA_HANDLE as i64),
    ("UVERBS_ATTR_REG_MR_IOVA", attr::REG_MR_IOVA as i64),
    ("UVERBS_ATTR_REG_MR_ADDR", attr::REG_MR_ADDR as i64),
    ("UVERBS_ATTR_REG_MR_LENGTH", attr::REG_MR_LENGTH as i64),
    ("UVERBS_ATTR_REG_MR_ACCESS_FLAGS", attr::REG_MR_ACCESS_FLAGS as i64),
    ("UVERBS_ATTR_REG_MR_FD", attr::REG_MR_FD as i64),
    ("UVERBS_ATTR_REG_MR_FD_OFFSET", attr::REG_MR_FD_OFFSET as i64),
    ("UVERBS_ATTR_REG_MR_RESP_LKEY", attr::REG_MR_RESP_LKEY as i64),
    ("UVERBS_ATTR_REG_MR_RESP_RKEY", attr::REG_MR_RESP_RKEY as i64),
    (
        "UVERBS_ATTR_CREATE_COMP_CNTR_HANDLE",
        attr::CREATE_COMP_CNTR_HANDLE as i64,
    ),
    (
        "UVERBS_ATTR_DESTROY_COMP_CNTR_HANDLE",
        attr::DESTROY_COMP_CNTR_HANDLE as i64,
    ),
    (
        "UVERBS_ATTR_MODIFY_COMP_CNTR_HANDLE",
        attr::MODIFY_COMP_CNTR_HANDLE as i64,
    ),
    (
        "UVERBS_ATTR_MODIFY_COMP_CNTR_ENTRY",
        attr::MODIFY_COMP_CNTR_ENTRY as i64,
    ),
    ("UVERBS_ATTR_MODIFY_COMP_CNTR_OP", attr::MODIFY_COMP_CNTR_OP as i64),
    (
        "UVERBS_ATTR_MODIFY_COMP_CNTR_VALUE",
        attr::MODIFY_COMP_CNTR_VALUE as i64,
    ),
    ("UVERBS_ATTR_READ_COMP_CNTR_HANDLE", attr::READ_COMP_CNTR_HANDLE as i64),
    ("UVERBS_ATTR_READ_COMP_CNTR_ENTRY", attr::READ_COMP_CNTR_ENTRY as i64),
    (
        "UVERBS_ATTR_READ_COMP_CNTR_RESP_VALUE",
        attr::READ_COMP_CNTR_RESP_VALUE as i64,
    ),
    ("IB_UVERBS_COMP_CNTR_ENTRY_COMP", IB_UVERBS_COMP_CNTR_ENTRY_COMP as i64),
    ("IB_UVERBS_COMP_CNTR_ENTRY_ERR", IB_UVERBS_COMP_CNTR_ENTRY_ERR as i64),
    (
        "IB_UVERBS_COMP_CNTR_MODIFY_OP_SET",
        IB_UVERBS_COMP_CNTR_MODIFY_OP_SET as i64,
    ),
    (
        "IB_UVERBS_COMP_CNTR_MODIFY_OP_INC",
        IB_UVERBS_COMP_CNTR_MODIFY_OP_INC as i64,
    ),
    (
        "IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_SEND",
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_SEND as i64,
    ),
    (
        "IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RECV",
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RECV as i64,
    ),
    (
        "IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_READ",
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_READ as i64,
    ),
    (
        "IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ",
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ as i64,
    ),
    (
        "IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE",
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE as i64,
    ),
    (
        "IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE",
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE as i64,
    ),
];

/// `struct dma_heap_allocation_data` of `<linux/dma-heap.h>`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct dma_heap_allocation_data {
    pub len: u64,
    pub fd: u32,
    pub fd_flags: u32,
    pub heap_flags: u64,
}

/// `DMA_HEAP_IOCTL_ALLOC`: `_IOWR('H', 0, struct dma_heap_allocation_data)`.
pub const DMA_HEAP_IOCTL_ALLOC: u64 = {
    const IOC_READ_WRITE: u64 = 3;
    (IOC_READ_WRITE << 30) | ((core::mem::size_of::<dma_heap_allocation_data>() as u64) << 16) | ((b'H' as u64) << 8)
};

// ---------------------------------------------------------------------------
// ib_user_ioctl_verbs.h (the parts the command layer uses)
// ---------------------------------------------------------------------------

pub const IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION: u32 = 1 << 0;
pub const IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN: u32 = 1 << 1;
pub const IB_UVERBS_CREATE_QP_MASK_IND_TABLE: u32 = 1 << 0;

/// `struct ib_uverbs_query_port_resp_ex`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ib_uverbs_query_port_resp_ex {
    pub legacy_resp: ib_uverbs_query_port_resp,
    pub port_cap_flags2: u16,
    pub reserved: [u8; 6],
}

// ---------------------------------------------------------------------------
// ib_user_verbs.h: command numbers and headers
// ---------------------------------------------------------------------------

pub const IB_USER_VERBS_ABI_VERSION: u32 = 6;
pub const IB_USER_VERBS_CMD_THRESHOLD: u32 = 50;
pub const IB_USER_VERBS_CMD_COMMAND_MASK: u32 = 0xff;
pub const IB_USER_VERBS_CMD_FLAG_EXTENDED: u32 = 0x8000_0000;

/// `enum ib_uverbs_write_cmds` and the extended command numbers.
pub mod cmd {
    pub const GET_CONTEXT: u32 = 0;
    pub const QUERY_DEVICE: u32 = 1;
    pub const QUERY_PORT: u32 = 2;
    pub const ALLOC_PD: u32 = 3;
    pub const DEALLOC_PD: u32 = 4;
    pub const CREATE_AH: u32 = 5;
    pub const MODIFY_AH: u32 = 6;
    pub const QUERY_AH: u32 = 7;
    pub const DESTROY_AH: u32 = 8;
    pub const REG_MR: u32 = 9;
    pub const REG_SMR: u32 = 10;
    pub const REREG_MR: u32 = 11;
    pub const QUERY_MR: u32 = 12;
    pub const DEREG_MR: u32 = 13;
    pub const ALLOC_MW: u32 = 14;
    pub const BIND_MW: u32 = 15;
    pub const DEALLOC_MW: u32 = 16;
    pub const CREATE_COMP_CHANNEL: u32 = 17;
    pub const CREATE_CQ: u32 = 18;
    pub const RESIZE_CQ: u32 = 19;
    pub const DESTROY_CQ: u32 = 20;
    pub const POLL_CQ: u32 = 21;
    pub const PEEK_CQ: u32 = 22;
    pub const REQ_NOTIFY_CQ: u32 = 23;
    pub const CREATE_QP: u32 = 24;
    pub const QUERY_QP: u32 = 25;
    pub const MODIFY_QP: u32 = 26;
    pub const DESTROY_QP: u32 = 27;
    pub const POST_SEND: u32 = 28;
    pub const POST_RECV: u32 = 29;
    pub const ATTACH_MCAST: u32 = 30;
    pub const DETACH_MCAST: u32 = 31;
    pub const CREATE_SRQ: u32 = 32;
    pub const MODIFY_SRQ: u32 = 33;
    pub const QUERY_SRQ: u32 = 34;
    pub const DESTROY_SRQ: u32 = 35;
    pub const POST_SRQ_RECV: u32 = 36;
    pub const OPEN_XRCD: u32 = 37;
    pub const CLOSE_XRCD: u32 = 38;
    pub const CREATE_XSRQ: u32 = 39;
    pub const OPEN_QP: u32 = 40;

    pub const EX_QUERY_DEVICE: u32 = QUERY_DEVICE;
    pub const EX_CREATE_CQ: u32 = CREATE_CQ;
    pub const EX_CREATE_QP: u32 = CREATE_QP;
    pub const EX_MODIFY_QP: u32 = MODIFY_QP;
    pub const EX_CREATE_FLOW: u32 = super::IB_USER_VERBS_CMD_THRESHOLD;
    pub const EX_DESTROY_FLOW: u32 = EX_CREATE_FLOW + 1;
    pub const EX_CREATE_WQ: u32 = EX_CREATE_FLOW + 2;
    pub const EX_MODIFY_WQ: u32 = EX_CREATE_FLOW + 3;
    pub const EX_DESTROY_WQ: u32 = EX_CREATE_FLOW + 4;
    pub const EX_CREATE_RWQ_IND_TBL: u32 = EX_CREATE_FLOW + 5;
    pub const EX_DESTROY_RWQ_IND_TBL: u32 = EX_CREATE_FLOW + 6;
    pub const EX_MODIFY_CQ: u32 = EX_CREATE_FLOW + 7;
}

/// `struct ib_uverbs_cmd_hdr`: leads every `write()` command.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ib_uverbs_cmd_hdr {
    pub command: u32,
    pub in_words: u16,
    pub out_words: u16,
}

/// `struct ib_uverbs_ex_cmd_hdr`: follows the header of an extended command.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ib_uverbs_ex_cmd_hdr {
    pub response: u64,
    pub provider_in_words: u16,
    pub provider_out_words: u16,
    pub cmd_hdr_reserved: u32,
}

/// kern-abi.h's `struct ex_hdr`: both headers of an extended command.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ex_hdr {
    pub hdr: ib_uverbs_cmd_hdr,
    pub ex_hdr: ib_uverbs_ex_cmd_hdr,
}

/// kern-abi.h's `struct empty`: the request/response of commands without one.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct empty {}

// ---------------------------------------------------------------------------
// ib_user_verbs.h: request and response payloads
// ---------------------------------------------------------------------------

macro_rules! kstruct {
    ($( $(#[$m:meta])* $name:ident { $($f:ident : $t:ty),* $(,)? } )*) => {$(
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Default, Debug)]
        pub struct $name { $(pub $f: $t),* }
    )*};
}

kstruct! {
    ib_uverbs_async_event_desc { element: u64, event_type: u32, reserved: u32 }
    ib_uverbs_comp_event_desc { cq_handle: u64 }
    ib_uverbs_cq_moderation_caps { max_cq_moderation_count: u16, max_cq_moderation_period: u16, reserved: u32 }

    ib_uverbs_get_context { response: u64, _align: [u64; 0] }
    ib_uverbs_get_context_resp { async_fd: u32, num_comp_vectors: u32, _align: [u64; 0] }
    ib_uverbs_query_device { response: u64, _align: [u64; 0] }
    ib_uverbs_query_device_resp {
        fw_ver: u64, node_guid: u64, sys_image_guid: u64, max_mr_size: u64, page_size_cap: u64,
        vendor_id: u32, vendor_part_id: u32, hw_ver: u32, max_qp: u32, max_qp_wr: u32,
        device_cap_flags: u32, max_sge: u32, max_sge_rd: u32, max_cq: u32, max_cqe: u32,
        max_mr: u32, max_pd: u32, max_qp_rd_atom: u32, max_ee_rd_atom: u32, max_res_rd_atom: u32,
        max_qp_init_rd_atom: u32, max_ee_init_rd_atom: u32, atomic_cap: u32, max_ee: u32,
        max_rdd: u32, max_mw: u32, max_raw_ipv6_qp: u32, max_raw_ethy_qp: u32, max_mcast_grp: u32,
        max_mcast_qp_attach: u32, max_total_mcast_qp_attach: u32, max_ah: u32, max_fmr: u32,
        max_map_per_fmr: u32, max_srq: u32, max_srq_wr: u32, max_srq_sge: u32, max_pkeys: u16,
        local_ca_ack_delay: u8, phys_port_cnt: u8, reserved: [u8; 4],
    }
    ib_uverbs_ex_query_device { comp_mask: u32, reserved: u32 }
    ib_uverbs_odp_caps_per_transport { rc_odp_caps: u32, uc_odp_caps: u32, ud_odp_caps: u32 }
    ib_uverbs_odp_caps { general_caps: u64, per_transport_caps: ib_uverbs_odp_caps_per_transport, reserved: u32 }
    ib_uverbs_rss_caps { supported_qpts: u32, max_rwq_indirection_tables: u32, max_rwq_indirection_table_size: u32, reserved: u32 }
    ib_uverbs_tm_caps { max_rndv_hdr_size: u32, max_num_tags: u32, flags: u32, max_ops: u32, max_sge: u32, reserved: u32 }
    ib_uverbs_ex_query_device_resp {
        base: ib_uverbs_query_device_resp, comp_mask: u32, response_length: u32,
        odp_caps: ib_uverbs_odp_caps, timestamp_mask: u64, hca_core_clock: u64,
        device_cap_flags_ex: u64, rss_caps: ib_uverbs_rss_caps, max_wq_type_rq: u32,
        raw_packet_caps: u32, tm_caps: ib_uverbs_tm_caps,
        cq_moderation_caps: ib_uverbs_cq_moderation_caps, max_dm_size: u64,
        xrc_odp_caps: u32, reserved: u32,
    }
    ib_uverbs_query_port { response: u64, port_num: u8, reserved: [u8; 7], _align: [u64; 0] }
    ib_uverbs_query_port_resp {
        port_cap_flags: u32, max_msg_sz: u32, bad_pkey_cntr: u32, qkey_viol_cntr: u32,
        gid_tbl_len: u32, pkey_tbl_len: u16, lid: u16, sm_lid: u16, state: u8, max_mtu: u8,
        active_mtu: u8, lmc: u8, max_vl_num: u8, sm_sl: u8, subnet_timeout: u8,
        init_type_reply: u8, active_width: u8, active_speed: u8, phys_state: u8,
        link_layer: u8, flags: u8, reserved: u8,
    }
    ib_uverbs_alloc_pd { response: u64, _align: [u64; 0] }
    ib_uverbs_alloc_pd_resp { pd_handle: u32 }
    ib_uverbs_dealloc_pd { pd_handle: u32 }
    ib_uverbs_open_xrcd { response: u64, fd: u32, oflags: u32, _align: [u64; 0] }
    ib_uverbs_open_xrcd_resp { xrcd_handle: u32 }
    ib_uverbs_close_xrcd { xrcd_handle: u32 }
    ib_uverbs_reg_mr { response: u64, start: u64, length: u64, hca_va: u64, pd_handle: u32, access_flags: u32, _align: [u64; 0] }
    ib_uverbs_reg_mr_resp { mr_handle: u32, lkey: u32, rkey: u32 }
    ib_uverbs_rereg_mr {
        response: u64, mr_handle: u32, flags: u32, start: u64, length: u64, hca_va: u64,
        pd_handle: u32, access_flags: u32, _align: [u64; 0],
    }
    ib_uverbs_rereg_mr_resp { lkey: u32, rkey: u32, _align: [u64; 0] }
    ib_uverbs_dereg_mr { mr_handle: u32 }
    ib_uverbs_alloc_mw { response: u64, pd_handle: u32, mw_type: u8, reserved: [u8; 3], _align: [u64; 0] }
    ib_uverbs_alloc_mw_resp { mw_handle: u32, rkey: u32, _align: [u64; 0] }
    ib_uverbs_dealloc_mw { mw_handle: u32 }
    ib_uverbs_create_comp_channel { response: u64 }
    ib_uverbs_create_comp_channel_resp { fd: u32 }
    ib_uverbs_create_cq { response: u64, user_handle: u64, cqe: u32, comp_vector: u32, comp_channel: i32, reserved: u32, _align: [u64; 0] }
    ib_uverbs_ex_create_cq { user_handle: u64, cqe: u32, comp_vector: u32, comp_channel: i32, comp_mask: u32, flags: u32, reserved: u32 }
    ib_uverbs_create_cq_resp { cq_handle: u32, cqe: u32, _align: [u64; 0] }
    ib_uverbs_ex_create_cq_resp { base: ib_uverbs_create_cq_resp, comp_mask: u32, response_length: u32 }
    ib_uverbs_resize_cq { response: u64, cq_handle: u32, cqe: u32, _align: [u64; 0] }
    ib_uverbs_resize_cq_resp { cqe: u32, reserved: u32, _align: [u64; 0] }
    ib_uverbs_poll_cq { response: u64, cq_handle: u32, ne: u32 }
    /// `struct ib_uverbs_wc` (`ex` is the union `{ __be32 imm_data; __u32 invalidate_rkey; }`).
    ib_uverbs_wc {
        wr_id: u64, status: u32, opcode: u32, vendor_err: u32, byte_len: u32,
        ex: u32,
        qp_num: u32, src_qp: u32, wc_flags: u32, pkey_index: u16, slid: u16, sl: u8,
        dlid_path_bits: u8, port_num: u8, reserved: u8,
    }
    ib_uverbs_poll_cq_resp { count: u32, reserved: u32, _align: [u64; 0] }
    ib_uverbs_req_notify_cq { cq_handle: u32, solicited_only: u32 }
    ib_uverbs_destroy_cq { response: u64, cq_handle: u32, reserved: u32 }
    ib_uverbs_destroy_cq_resp { comp_events_reported: u32, async_events_reported: u32 }
    ib_uverbs_global_route { dgid: [u8; 16], flow_label: u32, sgid_index: u8, hop_limit: u8, traffic_class: u8, reserved: u8 }
    ib_uverbs_ah_attr {
        grh: ib_uverbs_global_route, dlid: u16, sl: u8, src_path_bits: u8, static_rate: u8,
        is_global: u8, port_num: u8, reserved: u8,
    }
    ib_uverbs_qp_attr {
        qp_attr_mask: u32, qp_state: u32, cur_qp_state: u32, path_mtu: u32, path_mig_state: u32,
        qkey: u32, rq_psn: u32, sq_psn: u32, dest_qp_num: u32, qp_access_flags: u32,
        ah_attr: ib_uverbs_ah_attr, alt_ah_attr: ib_uverbs_ah_attr,
        max_send_wr: u32, max_recv_wr: u32, max_send_sge: u32, max_recv_sge: u32, max_inline_data: u32,
        pkey_index: u16, alt_pkey_index: u16, en_sqd_async_notify: u8, sq_draining: u8,
        max_rd_atomic: u8, max_dest_rd_atomic: u8, min_rnr_timer: u8, port_num: u8, timeout: u8,
        retry_cnt: u8, rnr_retry: u8, alt_port_num: u8, alt_timeout: u8, reserved: [u8; 5],
    }
    ib_uverbs_create_qp {
        response: u64, user_handle: u64, pd_handle: u32, send_cq_handle: u32, recv_cq_handle: u32,
        srq_handle: u32, max_send_wr: u32, max_recv_wr: u32, max_send_sge: u32, max_recv_sge: u32,
        max_inline_data: u32, sq_sig_all: u8, qp_type: u8, is_srq: u8, reserved: u8, _align: [u64; 0],
    }
    ib_uverbs_ex_create_qp {
        user_handle: u64, pd_handle: u32, send_cq_handle: u32, recv_cq_handle: u32, srq_handle: u32,
        max_send_wr: u32, max_recv_wr: u32, max_send_sge: u32, max_recv_sge: u32, max_inline_data: u32,
        sq_sig_all: u8, qp_type: u8, is_srq: u8, reserved: u8, comp_mask: u32, create_flags: u32,
        rwq_ind_tbl_handle: u32, source_qpn: u32,
    }
    ib_uverbs_open_qp { response: u64, user_handle: u64, pd_handle: u32, qpn: u32, qp_type: u8, reserved: [u8; 7], _align: [u64; 0] }
    ib_uverbs_create_qp_resp {
        qp_handle: u32, qpn: u32, max_send_wr: u32, max_recv_wr: u32, max_send_sge: u32,
        max_recv_sge: u32, max_inline_data: u32, reserved: u32,
    }
    ib_uverbs_ex_create_qp_resp { base: ib_uverbs_create_qp_resp, comp_mask: u32, response_length: u32 }
    ib_uverbs_qp_dest {
        dgid: [u8; 16], flow_label: u32, dlid: u16, reserved: u16, sgid_index: u8, hop_limit: u8,
        traffic_class: u8, sl: u8, src_path_bits: u8, static_rate: u8, is_global: u8, port_num: u8,
    }
    ib_uverbs_query_qp { response: u64, qp_handle: u32, attr_mask: u32, _align: [u64; 0] }
    ib_uverbs_query_qp_resp {
        dest: ib_uverbs_qp_dest, alt_dest: ib_uverbs_qp_dest, max_send_wr: u32, max_recv_wr: u32,
        max_send_sge: u32, max_recv_sge: u32, max_inline_data: u32, qkey: u32, rq_psn: u32,
        sq_psn: u32, dest_qp_num: u32, qp_access_flags: u32, pkey_index: u16, alt_pkey_index: u16,
        qp_state: u8, cur_qp_state: u8, path_mtu: u8, path_mig_state: u8, sq_draining: u8,
        max_rd_atomic: u8, max_dest_rd_atomic: u8, min_rnr_timer: u8, port_num: u8, timeout: u8,
        retry_cnt: u8, rnr_retry: u8, alt_port_num: u8, alt_timeout: u8, sq_sig_all: u8,
        reserved: [u8; 5], _align: [u64; 0],
    }
    ib_uverbs_modify_qp {
        dest: ib_uverbs_qp_dest, alt_dest: ib_uverbs_qp_dest, qp_handle: u32, attr_mask: u32,
        qkey: u32, rq_psn: u32, sq_psn: u32, dest_qp_num: u32, qp_access_flags: u32,
        pkey_index: u16, alt_pkey_index: u16, qp_state: u8, cur_qp_state: u8, path_mtu: u8,
        path_mig_state: u8, en_sqd_async_notify: u8, max_rd_atomic: u8, max_dest_rd_atomic: u8,
        min_rnr_timer: u8, port_num: u8, timeout: u8, retry_cnt: u8, rnr_retry: u8,
        alt_port_num: u8, alt_timeout: u8, reserved: [u8; 2], _align: [u64; 0],
    }
    ib_uverbs_ex_modify_qp { base: ib_uverbs_modify_qp, rate_limit: u32, reserved: u32 }
    ib_uverbs_ex_modify_qp_resp { comp_mask: u32, response_length: u32 }
    ib_uverbs_destroy_qp { response: u64, qp_handle: u32, reserved: u32 }
    ib_uverbs_destroy_qp_resp { events_reported: u32 }
    ib_uverbs_sge { addr: u64, length: u32, lkey: u32 }
    ib_uverbs_send_wr_rdma { remote_addr: u64, rkey: u32, reserved: u32 }
    ib_uverbs_send_wr_atomic { remote_addr: u64, compare_add: u64, swap: u64, rkey: u32, reserved: u32 }
    ib_uverbs_send_wr_ud { ah: u32, remote_qpn: u32, remote_qkey: u32, reserved: u32 }
    ib_uverbs_post_send { response: u64, qp_handle: u32, wr_count: u32, sge_count: u32, wqe_size: u32 }
    ib_uverbs_post_send_resp { bad_wr: u32 }
    ib_uverbs_recv_wr { wr_id: u64, num_sge: u32, reserved: u32 }
    ib_uverbs_post_recv { response: u64, qp_handle: u32, wr_count: u32, sge_count: u32, wqe_size: u32 }
    ib_uverbs_post_recv_resp { bad_wr: u32 }
    ib_uverbs_post_srq_recv { response: u64, srq_handle: u32, wr_count: u32, sge_count: u32, wqe_size: u32 }
    ib_uverbs_post_srq_recv_resp { bad_wr: u32 }
    ib_uverbs_create_ah { response: u64, user_handle: u64, pd_handle: u32, reserved: u32, attr: ib_uverbs_ah_attr, _align: [u64; 0] }
    ib_uverbs_create_ah_resp { ah_handle: u32 }
    ib_uverbs_destroy_ah { ah_handle: u32 }
    ib_uverbs_attach_mcast { gid: [u8; 16], qp_handle: u32, mlid: u16, reserved: u16, _align: [u64; 0] }
    ib_uverbs_detach_mcast { gid: [u8; 16], qp_handle: u32, mlid: u16, reserved: u16, _align: [u64; 0] }
    ib_uverbs_flow_spec_hdr { r#type: u32, size: u16, reserved: u16, _align: [u64; 0] }
    ib_uverbs_flow_eth_filter { dst_mac: [u8; 6], src_mac: [u8; 6], ether_type: u16, vlan_tag: u16 }
    ib_uverbs_flow_spec_eth { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_eth_filter, mask: ib_uverbs_flow_eth_filter }
    ib_uverbs_flow_ipv4_filter { src_ip: u32, dst_ip: u32, proto: u8, tos: u8, ttl: u8, flags: u8 }
    ib_uverbs_flow_spec_ipv4 { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_ipv4_filter, mask: ib_uverbs_flow_ipv4_filter }
    ib_uverbs_flow_tcp_udp_filter { dst_port: u16, src_port: u16 }
    ib_uverbs_flow_spec_tcp_udp { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_tcp_udp_filter, mask: ib_uverbs_flow_tcp_udp_filter }
    ib_uverbs_flow_ipv6_filter { src_ip: [u8; 16], dst_ip: [u8; 16], flow_label: u32, next_hdr: u8, traffic_class: u8, hop_limit: u8, reserved: u8 }
    ib_uverbs_flow_spec_ipv6 { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_ipv6_filter, mask: ib_uverbs_flow_ipv6_filter }
    ib_uverbs_flow_spec_action_tag { hdr: ib_uverbs_flow_spec_hdr, tag_id: u32, reserved1: u32 }
    ib_uverbs_flow_spec_action_drop { hdr: ib_uverbs_flow_spec_hdr }
    ib_uverbs_flow_spec_action_handle { hdr: ib_uverbs_flow_spec_hdr, handle: u32, reserved1: u32 }
    ib_uverbs_flow_spec_action_count { hdr: ib_uverbs_flow_spec_hdr, handle: u32, reserved1: u32 }
    ib_uverbs_flow_tunnel_filter { tunnel_id: u32 }
    ib_uverbs_flow_spec_tunnel { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_tunnel_filter, mask: ib_uverbs_flow_tunnel_filter }
    ib_uverbs_flow_spec_esp_filter { spi: u32, seq: u32 }
    ib_uverbs_flow_spec_esp { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_spec_esp_filter, mask: ib_uverbs_flow_spec_esp_filter }
    ib_uverbs_flow_gre_filter { c_ks_res0_ver: u16, protocol: u16, key: u32 }
    ib_uverbs_flow_spec_gre { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_gre_filter, mask: ib_uverbs_flow_gre_filter }
    ib_uverbs_flow_mpls_filter { label: u32 }
    ib_uverbs_flow_spec_mpls { hdr: ib_uverbs_flow_spec_hdr, val: ib_uverbs_flow_mpls_filter, mask: ib_uverbs_flow_mpls_filter }
    ib_uverbs_flow_attr { r#type: u32, size: u16, priority: u16, num_of_specs: u8, reserved: [u8; 2], port: u8, flags: u32, _align: [u64; 0] }
    ib_uverbs_create_flow { comp_mask: u32, qp_handle: u32, flow_attr: ib_uverbs_flow_attr }
    ib_uverbs_create_flow_resp { comp_mask: u32, flow_handle: u32 }
    ib_uverbs_destroy_flow { comp_mask: u32, flow_handle: u32 }
    ib_uverbs_create_srq { response: u64, user_handle: u64, pd_handle: u32, max_wr: u32, max_sge: u32, srq_limit: u32, _align: [u64; 0] }
    ib_uverbs_create_xsrq {
        response: u64, user_handle: u64, srq_type: u32, pd_handle: u32, max_wr: u32, max_sge: u32,
        srq_limit: u32, max_num_tags: u32, xrcd_handle: u32, cq_handle: u32, _align: [u64; 0],
    }
    ib_uverbs_create_srq_resp { srq_handle: u32, max_wr: u32, max_sge: u32, srqn: u32 }
    ib_uverbs_modify_srq { srq_handle: u32, attr_mask: u32, max_wr: u32, srq_limit: u32, _align: [u64; 0] }
    ib_uverbs_query_srq { response: u64, srq_handle: u32, reserved: u32, _align: [u64; 0] }
    ib_uverbs_query_srq_resp { max_wr: u32, max_sge: u32, srq_limit: u32, reserved: u32 }
    ib_uverbs_destroy_srq { response: u64, srq_handle: u32, reserved: u32 }
    ib_uverbs_destroy_srq_resp { events_reported: u32 }
    ib_uverbs_ex_create_wq {
        comp_mask: u32, wq_type: u32, user_handle: u64, pd_handle: u32, cq_handle: u32,
        max_wr: u32, max_sge: u32, create_flags: u32, reserved: u32,
    }
    ib_uverbs_ex_create_wq_resp { comp_mask: u32, response_length: u32, wq_handle: u32, max_wr: u32, max_sge: u32, wqn: u32 }
    ib_uverbs_ex_destroy_wq { comp_mask: u32, wq_handle: u32 }
    ib_uverbs_ex_destroy_wq_resp { comp_mask: u32, response_length: u32, events_reported: u32, reserved: u32 }
    ib_uverbs_ex_modify_wq { attr_mask: u32, wq_handle: u32, wq_state: u32, curr_wq_state: u32, flags: u32, flags_mask: u32 }
    ib_uverbs_ex_create_rwq_ind_table { comp_mask: u32, log_ind_tbl_size: u32 }
    ib_uverbs_ex_create_rwq_ind_table_resp { comp_mask: u32, response_length: u32, ind_tbl_handle: u32, ind_tbl_num: u32 }
    ib_uverbs_ex_destroy_rwq_ind_table { comp_mask: u32, ind_tbl_handle: u32 }
    ib_uverbs_cq_moderation { cq_count: u16, cq_period: u16 }
    ib_uverbs_ex_modify_cq { cq_handle: u32, attr_mask: u32, attr: ib_uverbs_cq_moderation, reserved: u32 }

    /// `struct ib_user_path_rec` (ib_user_sa.h).
    ib_user_path_rec {
        dgid: [u8; 16], sgid: [u8; 16], dlid: u16, slid: u16, raw_traffic: u32, flow_label: u32,
        reversible: u32, mtu: u32, pkey: u16, hop_limit: u8, traffic_class: u8, numb_path: u8,
        sl: u8, mtu_selector: u8, rate_selector: u8, rate: u8, packet_life_time_selector: u8,
        packet_life_time: u8, preference: u8,
    }
}

/// `union { rdma; atomic; ud; } wr` of `struct ib_uverbs_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ib_uverbs_send_wr_wr {
    pub rdma: ib_uverbs_send_wr_rdma,
    pub atomic: ib_uverbs_send_wr_atomic,
    pub ud: ib_uverbs_send_wr_ud,
}

/// `struct ib_uverbs_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ib_uverbs_send_wr {
    pub wr_id: u64,
    pub num_sge: u32,
    pub opcode: u32,
    pub send_flags: u32,
    /// `union { __be32 imm_data; __u32 invalidate_rkey; } ex`
    pub ex: u32,
    pub wr: ib_uverbs_send_wr_wr,
}

/// `struct ib_uverbs_modify_srq_v3` (kern-abi.h: the ABI 3 modify-SRQ request).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ib_uverbs_modify_srq_v3 {
    pub srq_handle: u32,
    pub attr_mask: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
    pub reserved: u32,
}

/// `struct ibv_create_qp_resp_v3` (kern-abi.h).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_create_qp_resp_v3 {
    pub qp_handle: u32,
    pub qpn: u32,
}

/// `struct ibv_create_qp_resp_v4` (kern-abi.h).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_create_qp_resp_v4 {
    pub qp_handle: u32,
    pub qpn: u32,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_create_srq_resp_v5` (kern-abi.h).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_create_srq_resp_v5 {
    pub srq_handle: u32,
}

/// kern-abi.h's `struct ibv_kern_spec_ipv4`: the original (short) IPv4 spec.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_kern_ipv4_filter {
    pub src_ip: u32,
    pub dst_ip: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_kern_spec_ipv4 {
    pub r#type: u32,
    pub size: u16,
    pub reserved: u16,
    pub val: ibv_kern_ipv4_filter,
    pub mask: ibv_kern_ipv4_filter,
}

/// kern-abi.h's `struct ibv_kern_spec`: room for any one flow spec.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_kern_spec {
    pub hdr: ib_uverbs_flow_spec_hdr,
    pub eth: ib_uverbs_flow_spec_eth,
    pub ipv4: ibv_kern_spec_ipv4,
    pub ipv4_ext: ib_uverbs_flow_spec_ipv4,
    pub esp: ib_uverbs_flow_spec_esp,
    pub tcp_udp: ib_uverbs_flow_spec_tcp_udp,
    pub ipv6: ib_uverbs_flow_spec_ipv6,
    pub gre: ib_uverbs_flow_spec_gre,
    pub tunnel: ib_uverbs_flow_spec_tunnel,
    pub mpls: ib_uverbs_flow_spec_mpls,
    pub flow_tag: ib_uverbs_flow_spec_action_tag,
    pub drop: ib_uverbs_flow_spec_action_drop,
    pub handle: ib_uverbs_flow_spec_action_handle,
    pub flow_count: ib_uverbs_flow_spec_action_count,
}

/// An all-zero value of a plain-data kernel struct (integers, arrays and
/// unions of those only).
pub fn zeroed<T: Copy>() -> T {
    // SAFETY: only used for the repr(C) integer aggregates of this module,
    // for which all-zero bytes are a valid value.
    unsafe { core::mem::zeroed() }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    pub(crate) use crate::testutil::pinned_table as table;

    /// Checks every `(key, value)` against the pinned table; keys the table
    /// does not have are reported separately so typos cannot pass silently.
    pub(crate) fn check(measured: &[(String, i64)]) {
        let t = table();
        let mut bad = Vec::new();
        for (k, v) in measured {
            match t.get(k) {
                None => bad.push(format!("{k}: not in provider_abi.expected")),
                Some(w) if w != v => bad.push(format!("{k}: expected {w}, got {v}")),
                _ => {}
            }
        }
        assert!(bad.is_empty(), "{} mismatches:\n{}", bad.len(), bad.join("\n"));
    }

    /// Layout facts of a mirrored struct: name, size, alignment, members.
    pub(crate) struct Layout {
        pub name: &'static str,
        pub size: usize,
        pub align: usize,
        pub fields: Vec<(&'static str, usize)>,
    }

    macro_rules! L {
        ($v:ident, $t:ident { $($f:ident),* $(,)? }) => {
            $v.push(Layout {
                name: stringify!($t),
                size: size_of::<$t>(),
                align: align_of::<$t>(),
                fields: vec![$((stringify!($f), offset_of!($t, $f))),*],
            })
        };
    }

    /// Every mirrored struct of this module.
    pub(crate) fn layouts() -> Vec<Layout> {
        let mut v = Vec::new();
        L!(
            v,
            ib_uverbs_cmd_hdr {
                command,
                in_words,
                out_words
            }
        );
        L!(
            v,
            ib_uverbs_ex_cmd_hdr {
                response,
                provider_in_words,
                provider_out_words,
                cmd_hdr_reserved
            }
        );
        L!(v, ex_hdr { hdr, ex_hdr });
        L!(v, ib_uverbs_get_context { response });
        L!(
            v,
            ib_uverbs_get_context_resp {
                async_fd,
                num_comp_vectors
            }
        );
        L!(v, ib_uverbs_query_device { response });
        L!(
            v,
            ib_uverbs_query_device_resp {
                fw_ver,
                node_guid,
                max_srq_sge,
                max_pkeys,
                local_ca_ack_delay,
                phys_port_cnt,
                reserved
            }
        );
        L!(v, ib_uverbs_ex_query_device { comp_mask, reserved });
        L!(
            v,
            ib_uverbs_ex_query_device_resp {
                base,
                comp_mask,
                response_length,
                odp_caps,
                timestamp_mask,
                hca_core_clock,
                device_cap_flags_ex,
                rss_caps,
                max_wq_type_rq,
                raw_packet_caps,
                tm_caps,
                cq_moderation_caps,
                max_dm_size,
                xrc_odp_caps,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_query_port {
                response,
                port_num,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_query_port_resp {
                port_cap_flags,
                max_msg_sz,
                bad_pkey_cntr,
                qkey_viol_cntr,
                gid_tbl_len,
                pkey_tbl_len,
                lid,
                sm_lid,
                state,
                max_mtu,
                active_mtu,
                lmc,
                max_vl_num,
                sm_sl,
                subnet_timeout,
                init_type_reply,
                active_width,
                active_speed,
                phys_state,
                link_layer,
                flags,
                reserved
            }
        );
        L!(v, ib_uverbs_alloc_pd { response });
        L!(v, ib_uverbs_alloc_pd_resp { pd_handle });
        L!(v, ib_uverbs_dealloc_pd { pd_handle });
        L!(v, ib_uverbs_open_xrcd { response, fd, oflags });
        L!(v, ib_uverbs_open_xrcd_resp { xrcd_handle });
        L!(v, ib_uverbs_close_xrcd { xrcd_handle });
        L!(
            v,
            ib_uverbs_reg_mr {
                response,
                start,
                length,
                hca_va,
                pd_handle,
                access_flags
            }
        );
        L!(v, ib_uverbs_reg_mr_resp { mr_handle, lkey, rkey });
        L!(
            v,
            ib_uverbs_rereg_mr {
                response,
                mr_handle,
                flags,
                start,
                length,
                hca_va,
                pd_handle,
                access_flags
            }
        );
        L!(v, ib_uverbs_rereg_mr_resp { lkey, rkey });
        L!(v, ib_uverbs_dereg_mr { mr_handle });
        L!(
            v,
            ib_uverbs_alloc_mw {
                response,
                pd_handle,
                mw_type,
                reserved
            }
        );
        L!(v, ib_uverbs_alloc_mw_resp { mw_handle, rkey });
        L!(v, ib_uverbs_dealloc_mw { mw_handle });
        L!(v, ib_uverbs_create_comp_channel { response });
        L!(v, ib_uverbs_create_comp_channel_resp { fd });
        L!(
            v,
            ib_uverbs_create_cq {
                response,
                user_handle,
                cqe,
                comp_vector,
                comp_channel,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_ex_create_cq {
                user_handle,
                cqe,
                comp_vector,
                comp_channel,
                comp_mask,
                flags,
                reserved
            }
        );
        L!(v, ib_uverbs_create_cq_resp { cq_handle, cqe });
        L!(
            v,
            ib_uverbs_ex_create_cq_resp {
                base,
                comp_mask,
                response_length
            }
        );
        L!(
            v,
            ib_uverbs_resize_cq {
                response,
                cq_handle,
                cqe
            }
        );
        L!(v, ib_uverbs_resize_cq_resp { cqe, reserved });
        L!(
            v,
            ib_uverbs_poll_cq {
                response,
                cq_handle,
                ne
            }
        );
        L!(v, ib_uverbs_poll_cq_resp { count, reserved });
        L!(
            v,
            ib_uverbs_req_notify_cq {
                cq_handle,
                solicited_only
            }
        );
        L!(
            v,
            ib_uverbs_destroy_cq {
                response,
                cq_handle,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_destroy_cq_resp {
                comp_events_reported,
                async_events_reported
            }
        );
        L!(
            v,
            ib_uverbs_ah_attr {
                grh,
                dlid,
                sl,
                src_path_bits,
                static_rate,
                is_global,
                port_num,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_create_qp {
                response,
                user_handle,
                pd_handle,
                send_cq_handle,
                recv_cq_handle,
                srq_handle,
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data,
                sq_sig_all,
                qp_type,
                is_srq,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_ex_create_qp {
                user_handle,
                pd_handle,
                send_cq_handle,
                recv_cq_handle,
                srq_handle,
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data,
                sq_sig_all,
                qp_type,
                is_srq,
                reserved,
                comp_mask,
                create_flags,
                rwq_ind_tbl_handle,
                source_qpn
            }
        );
        L!(
            v,
            ib_uverbs_open_qp {
                response,
                user_handle,
                pd_handle,
                qpn,
                qp_type,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_create_qp_resp {
                qp_handle,
                qpn,
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_ex_create_qp_resp {
                base,
                comp_mask,
                response_length
            }
        );
        L!(
            v,
            ib_uverbs_qp_dest {
                dgid,
                flow_label,
                dlid,
                reserved,
                sgid_index,
                hop_limit,
                traffic_class,
                sl,
                src_path_bits,
                static_rate,
                is_global,
                port_num
            }
        );
        L!(
            v,
            ib_uverbs_query_qp {
                response,
                qp_handle,
                attr_mask
            }
        );
        L!(
            v,
            ib_uverbs_query_qp_resp {
                dest,
                alt_dest,
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data,
                qkey,
                rq_psn,
                sq_psn,
                dest_qp_num,
                qp_access_flags,
                pkey_index,
                alt_pkey_index,
                qp_state,
                cur_qp_state,
                path_mtu,
                path_mig_state,
                sq_draining,
                max_rd_atomic,
                max_dest_rd_atomic,
                min_rnr_timer,
                port_num,
                timeout,
                retry_cnt,
                rnr_retry,
                alt_port_num,
                alt_timeout,
                sq_sig_all,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_modify_qp {
                dest,
                alt_dest,
                qp_handle,
                attr_mask,
                qkey,
                rq_psn,
                sq_psn,
                dest_qp_num,
                qp_access_flags,
                pkey_index,
                alt_pkey_index,
                qp_state,
                cur_qp_state,
                path_mtu,
                path_mig_state,
                en_sqd_async_notify,
                max_rd_atomic,
                max_dest_rd_atomic,
                min_rnr_timer,
                port_num,
                timeout,
                retry_cnt,
                rnr_retry,
                alt_port_num,
                alt_timeout,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_ex_modify_qp {
                base,
                rate_limit,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_ex_modify_qp_resp {
                comp_mask,
                response_length
            }
        );
        L!(
            v,
            ib_uverbs_destroy_qp {
                response,
                qp_handle,
                reserved
            }
        );
        L!(v, ib_uverbs_destroy_qp_resp { events_reported });
        L!(
            v,
            ib_uverbs_send_wr {
                wr_id,
                num_sge,
                opcode,
                send_flags,
                ex,
                wr
            }
        );
        L!(
            v,
            ib_uverbs_post_send {
                response,
                qp_handle,
                wr_count,
                sge_count,
                wqe_size
            }
        );
        L!(v, ib_uverbs_post_send_resp { bad_wr });
        L!(
            v,
            ib_uverbs_recv_wr {
                wr_id,
                num_sge,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_post_recv {
                response,
                qp_handle,
                wr_count,
                sge_count,
                wqe_size
            }
        );
        L!(v, ib_uverbs_post_recv_resp { bad_wr });
        L!(
            v,
            ib_uverbs_post_srq_recv {
                response,
                srq_handle,
                wr_count,
                sge_count,
                wqe_size
            }
        );
        L!(v, ib_uverbs_post_srq_recv_resp { bad_wr });
        L!(
            v,
            ib_uverbs_create_ah {
                response,
                user_handle,
                pd_handle,
                reserved,
                attr
            }
        );
        L!(v, ib_uverbs_create_ah_resp { ah_handle });
        L!(v, ib_uverbs_destroy_ah { ah_handle });
        L!(
            v,
            ib_uverbs_attach_mcast {
                gid,
                qp_handle,
                mlid,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_detach_mcast {
                gid,
                qp_handle,
                mlid,
                reserved
            }
        );
        L!(v, ib_uverbs_flow_spec_hdr { size, reserved });
        L!(v, ib_uverbs_flow_spec_eth { hdr, val, mask });
        L!(v, ib_uverbs_flow_spec_ipv4 { hdr, val, mask });
        L!(v, ib_uverbs_flow_spec_tcp_udp { hdr, val, mask });
        L!(v, ib_uverbs_flow_spec_ipv6 { hdr, val, mask });
        L!(v, ib_uverbs_flow_spec_action_tag { hdr, tag_id, reserved1 });
        L!(v, ib_uverbs_flow_spec_action_drop { hdr });
        L!(v, ib_uverbs_flow_spec_action_handle { hdr, handle, reserved1 });
        L!(v, ib_uverbs_flow_spec_action_count { hdr, handle, reserved1 });
        L!(v, ib_uverbs_flow_spec_tunnel { hdr, val, mask });
        L!(v, ib_uverbs_flow_spec_esp { hdr, val, mask });
        L!(v, ib_uverbs_flow_spec_gre { hdr, val, mask });
        L!(v, ib_uverbs_flow_spec_mpls { hdr, val, mask });
        L!(
            v,
            ib_uverbs_flow_attr {
                size,
                priority,
                num_of_specs,
                reserved,
                port,
                flags
            }
        );
        L!(
            v,
            ib_uverbs_create_flow {
                comp_mask,
                qp_handle,
                flow_attr
            }
        );
        L!(v, ib_uverbs_create_flow_resp { comp_mask, flow_handle });
        L!(v, ib_uverbs_destroy_flow { comp_mask, flow_handle });
        L!(
            v,
            ib_uverbs_create_srq {
                response,
                user_handle,
                pd_handle,
                max_wr,
                max_sge,
                srq_limit
            }
        );
        L!(
            v,
            ib_uverbs_create_xsrq {
                response,
                user_handle,
                srq_type,
                pd_handle,
                max_wr,
                max_sge,
                srq_limit,
                max_num_tags,
                xrcd_handle,
                cq_handle
            }
        );
        L!(
            v,
            ib_uverbs_create_srq_resp {
                srq_handle,
                max_wr,
                max_sge,
                srqn
            }
        );
        L!(
            v,
            ib_uverbs_modify_srq {
                srq_handle,
                attr_mask,
                max_wr,
                srq_limit
            }
        );
        L!(
            v,
            ib_uverbs_modify_srq_v3 {
                srq_handle,
                attr_mask,
                max_wr,
                max_sge,
                srq_limit,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_query_srq {
                response,
                srq_handle,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_query_srq_resp {
                max_wr,
                max_sge,
                srq_limit,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_destroy_srq {
                response,
                srq_handle,
                reserved
            }
        );
        L!(v, ib_uverbs_destroy_srq_resp { events_reported });
        L!(
            v,
            ib_uverbs_ex_create_wq {
                comp_mask,
                wq_type,
                user_handle,
                pd_handle,
                cq_handle,
                max_wr,
                max_sge,
                create_flags,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_ex_create_wq_resp {
                comp_mask,
                response_length,
                wq_handle,
                max_wr,
                max_sge,
                wqn
            }
        );
        L!(v, ib_uverbs_ex_destroy_wq { comp_mask, wq_handle });
        L!(
            v,
            ib_uverbs_ex_destroy_wq_resp {
                comp_mask,
                response_length,
                events_reported,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_ex_modify_wq {
                attr_mask,
                wq_handle,
                wq_state,
                curr_wq_state,
                flags,
                flags_mask
            }
        );
        L!(
            v,
            ib_uverbs_ex_create_rwq_ind_table {
                comp_mask,
                log_ind_tbl_size
            }
        );
        L!(
            v,
            ib_uverbs_ex_create_rwq_ind_table_resp {
                comp_mask,
                response_length,
                ind_tbl_handle,
                ind_tbl_num
            }
        );
        L!(
            v,
            ib_uverbs_ex_destroy_rwq_ind_table {
                comp_mask,
                ind_tbl_handle
            }
        );
        L!(v, ib_uverbs_cq_moderation { cq_count, cq_period });
        L!(
            v,
            ib_uverbs_ex_modify_cq {
                cq_handle,
                attr_mask,
                attr,
                reserved
            }
        );
        L!(v, ibv_create_qp_resp_v3 { qp_handle, qpn });
        L!(
            v,
            ibv_create_qp_resp_v4 {
                qp_handle,
                qpn,
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data
            }
        );
        L!(v, ibv_create_srq_resp_v5 { srq_handle });
        L!(v, ibv_kern_ipv4_filter { src_ip, dst_ip });
        L!(
            v,
            ibv_kern_spec_ipv4 {
                size,
                reserved,
                val,
                mask
            }
        );
        L!(
            v,
            ib_uverbs_wc {
                wr_id,
                status,
                opcode,
                vendor_err,
                byte_len,
                ex,
                qp_num,
                src_qp,
                wc_flags,
                pkey_index,
                slid,
                sl,
                dlid_path_bits,
                port_num,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_qp_attr {
                qp_attr_mask,
                qp_state,
                cur_qp_state,
                path_mtu,
                path_mig_state,
                qkey,
                rq_psn,
                sq_psn,
                dest_qp_num,
                qp_access_flags,
                ah_attr,
                alt_ah_attr,
                max_send_wr,
                max_recv_wr,
                max_send_sge,
                max_recv_sge,
                max_inline_data,
                pkey_index,
                alt_pkey_index,
                en_sqd_async_notify,
                sq_draining,
                max_rd_atomic,
                max_dest_rd_atomic,
                min_rnr_timer,
                port_num,
                timeout,
                retry_cnt,
                rnr_retry,
                alt_port_num,
                alt_timeout,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_global_route {
                dgid,
                flow_label,
                sgid_index,
                hop_limit,
                traffic_class,
                reserved
            }
        );
        L!(v, ib_uverbs_sge { addr, length, lkey });
        L!(
            v,
            ib_uverbs_query_port_resp_ex {
                legacy_resp,
                port_cap_flags2,
                reserved
            }
        );
        L!(
            v,
            ib_user_path_rec {
                dgid,
                sgid,
                dlid,
                slid,
                raw_traffic,
                flow_label,
                reversible,
                mtu,
                pkey,
                hop_limit,
                traffic_class,
                numb_path,
                sl,
                mtu_selector,
                rate_selector,
                rate,
                packet_life_time_selector,
                packet_life_time,
                preference
            }
        );
        L!(
            v,
            ib_uverbs_odp_caps {
                general_caps,
                per_transport_caps,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_tm_caps {
                max_rndv_hdr_size,
                max_num_tags,
                flags,
                max_ops,
                max_sge,
                reserved
            }
        );
        L!(
            v,
            ib_uverbs_async_event_desc {
                element,
                event_type,
                reserved
            }
        );
        v
    }

    /// Structs that exist only in rdma-core's kern-abi.h (not in the kernel
    /// headers): checked against the pinned table.
    const KERN_ABI_ONLY: &[&str] = &[
        "ex_hdr",
        "ib_uverbs_modify_srq_v3",
        "ibv_create_qp_resp_v3",
        "ibv_create_qp_resp_v4",
        "ibv_create_srq_resp_v5",
        "ibv_kern_ipv4_filter",
        "ibv_kern_spec_ipv4",
    ];

    #[test]
    fn kern_abi_structs_match_pinned_table() {
        let mut m: Vec<(String, i64)> = Vec::new();
        for l in layouts().iter().filter(|l| KERN_ABI_ONLY.contains(&l.name)) {
            m.push((format!("sizeof struct {}", l.name), l.size as i64));
            m.push((format!("alignof struct {}", l.name), l.align as i64));
            for (f, o) in &l.fields {
                m.push((format!("offsetof struct {} {}", l.name, f), *o as i64));
            }
        }
        m.push(("sizeof struct ibv_kern_spec".into(), size_of::<ibv_kern_spec>() as i64));
        m.push((
            "alignof struct ibv_kern_spec".into(),
            align_of::<ibv_kern_spec>() as i64,
        ));
        check(&m);
    }

    /// Every other struct and the ids against the kernel headers installed
    /// on this machine (linux-libc-dev), through a compiled C probe.
    /// Skipped when no C compiler or no `<rdma/...>` headers are available.
    #[test]
    fn kernel_structs_match_installed_headers() {
        let mut c: Vec<(String, i64)> = Vec::new();
        for l in layouts().iter().filter(|l| !KERN_ABI_ONLY.contains(&l.name)) {
            c.push((format!("sizeof(struct {})", l.name), l.size as i64));
            c.push((format!("_Alignof(struct {})", l.name), l.align as i64));
            for (f, o) in &l.fields {
                c.push((format!("offsetof(struct {}, {})", l.name, f), *o as i64));
            }
        }
        c.push((
            "offsetof(struct ib_uverbs_send_wr, wr.rdma.rkey)".into(),
            (offset_of!(ib_uverbs_send_wr, wr) + offset_of!(ib_uverbs_send_wr_rdma, rkey)) as i64,
        ));
        c.push((
            "offsetof(struct ib_uverbs_send_wr, wr.atomic.swap)".into(),
            (offset_of!(ib_uverbs_send_wr, wr) + offset_of!(ib_uverbs_send_wr_atomic, swap)) as i64,
        ));
        c.push((
            "offsetof(struct ib_uverbs_send_wr, wr.atomic.rkey)".into(),
            (offset_of!(ib_uverbs_send_wr, wr) + offset_of!(ib_uverbs_send_wr_atomic, rkey)) as i64,
        ));
        c.push((
            "offsetof(struct ib_uverbs_send_wr, wr.ud.remote_qkey)".into(),
            (offset_of!(ib_uverbs_send_wr, wr) + offset_of!(ib_uverbs_send_wr_ud, remote_qkey)) as i64,
        ));
        c.push((
            "sizeof(struct ib_uverbs_send_wr)".into(),
            size_of::<ib_uverbs_send_wr>() as i64,
        ));
        c.push(("RDMA_VERBS_IOCTL".into(), RDMA_VERBS_IOCTL as i64));
        c.push(("UVERBS_ATTR_UHW_IN".into(), UVERBS_ATTR_UHW_IN as i64));
        c.push(("UVERBS_ATTR_UHW_OUT".into(), UVERBS_ATTR_UHW_OUT as i64));
        c.push(("IB_USER_VERBS_EX_CMD_MODIFY_CQ".into(), cmd::EX_MODIFY_CQ as i64));
        c.push(("IB_USER_VERBS_CMD_OPEN_QP".into(), cmd::OPEN_QP as i64));
        c.push(("UVERBS_OBJECT_ASYNC_EVENT".into(), obj::ASYNC_EVENT as i64));
        c.push((
            "UVERBS_ATTR_CREATE_QP_RESP_QP_NUM".into(),
            attr::CREATE_QP_RESP_QP_NUM as i64,
        ));
        c.push((
            "UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM".into(),
            attr::CREATE_SRQ_RESP_SRQ_NUM as i64,
        ));
        c.push((
            "UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM".into(),
            attr::CREATE_WQ_RESP_WQ_NUM as i64,
        ));
        c.push((
            "UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY".into(),
            attr::REG_DMABUF_MR_RESP_RKEY as i64,
        ));
        c.push((
            "UVERBS_ATTR_REG_DM_MR_RESP_RKEY".into(),
            attr::REG_DM_MR_RESP_RKEY as i64,
        ));
        c.push(("UVERBS_ATTR_CREATE_CQ_EVENT_FD".into(), attr::CREATE_CQ_EVENT_FD as i64));
        c.push((
            "UVERBS_ATTR_FLOW_ACTION_ESP_ENCAP".into(),
            attr::FLOW_ACTION_ESP_ENCAP as i64,
        ));
        c.push(("UVERBS_METHOD_REG_DMABUF_MR".into(), method::REG_DMABUF_MR as i64));
        c.push(("UVERBS_METHOD_QUERY_GID_ENTRY".into(), method::QUERY_GID_ENTRY as i64));
        c.push(("UVERBS_METHOD_COUNTERS_READ".into(), method::COUNTERS_READ as i64));
        c.push((
            "UVERBS_METHOD_FLOW_ACTION_ESP_MODIFY".into(),
            method::FLOW_ACTION_ESP_MODIFY as i64,
        ));
        c.push(("UVERBS_ATTR_QUERY_MR_RESP_IOVA".into(), attr::QUERY_MR_RESP_IOVA as i64));
        c.push(("UVERBS_ATTR_CREATE_WQ_FLAGS".into(), attr::CREATE_WQ_FLAGS as i64));
        c.push((
            "UVERBS_ATTR_CREATE_SRQ_EVENT_FD".into(),
            attr::CREATE_SRQ_EVENT_FD as i64,
        ));
        c.push((
            "UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES".into(),
            attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES as i64,
        ));
        let includes = [
            "rdma/ib_user_verbs.h",
            "rdma/ib_user_ioctl_cmds.h",
            "rdma/ib_user_ioctl_verbs.h",
            "rdma/rdma_user_ioctl.h",
            "rdma/ib_user_sa.h",
        ];
        if let Some(got) = crate::testutil::c_values(&includes, &c.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>()) {
            let bad: Vec<String> = c
                .iter()
                .zip(got)
                .filter(|((_, want), got)| want != got)
                .map(|((e, want), got)| format!("{e}: rust {want}, C {got}"))
                .collect();
            assert!(bad.is_empty(), "{}", bad.join("\n"));
        }
    }

    /// The ids rdma-core 65's uAPI added, against the installed kernel
    /// headers when they are new enough to have them (linux-libc-dev of
    /// kernel 6.17 or later); the dma-heap ioctl against `<linux/dma-heap.h>`.
    #[test]
    fn ids_after_44_match_installed_headers_where_present() {
        let heap = vec![
            ("DMA_HEAP_IOCTL_ALLOC".to_string(), DMA_HEAP_IOCTL_ALLOC as i64),
            (
                "sizeof(struct dma_heap_allocation_data)".to_string(),
                size_of::<dma_heap_allocation_data>() as i64,
            ),
            (
                "offsetof(struct dma_heap_allocation_data, fd_flags)".to_string(),
                offset_of!(dma_heap_allocation_data, fd_flags) as i64,
            ),
            (
                "offsetof(struct dma_heap_allocation_data, heap_flags)".to_string(),
                offset_of!(dma_heap_allocation_data, heap_flags) as i64,
            ),
        ];
        let mut checks = vec![(vec!["linux/dma-heap.h"], heap)];
        let cmds = std::fs::read_to_string("/usr/include/rdma/ib_user_ioctl_cmds.h").unwrap_or_default();
        if cmds.contains("UVERBS_OBJECT_COMP_CNTR") {
            let ids = IDS_AFTER_44.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            checks.push((vec!["rdma/ib_user_ioctl_cmds.h", "rdma/ib_user_ioctl_verbs.h"], ids));
        }
        for (includes, c) in checks {
            let exprs: Vec<String> = c.iter().map(|(e, _)| e.clone()).collect();
            if let Some(got) = crate::testutil::c_values(&includes, &exprs) {
                let bad: Vec<String> = c
                    .iter()
                    .zip(got)
                    .filter(|((_, want), got)| want != got)
                    .map(|((e, want), got)| format!("{e}: rust {want}, C {got}"))
                    .collect();
                assert!(bad.is_empty(), "{}", bad.join("\n"));
            }
        }
    }
}
