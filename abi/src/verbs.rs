//! Rust mirrors of the public types of rdma-core 44's `<infiniband/verbs.h>`,
//! plus the pieces of `<infiniband/verbs_api.h>` and
//! `<infiniband/ib_user_ioctl_verbs.h>` that `verbs.h` refers to.
//!
//! Conventions (kept uniform so the layout test can check everything):
//!
//! * Every C `struct X` / `union X` is a `#[repr(C)]` Rust type of the same
//!   name with the same field names, in the same order, with the same types.
//! * A C struct/union without a tag (an "anonymous" aggregate) becomes a named
//!   Rust type called `<outer type>_<member>`.  When the C member itself has
//!   no name either (a C11 anonymous member, whose fields C code reaches
//!   directly), the Rust field gets the name listed here:
//!
//!   | C location                                   | Rust field | Rust type                   |
//!   |----------------------------------------------|------------|-----------------------------|
//!   | `ibv_wc`: `union { imm_data; invalidated_rkey; }` | `imm`  | [`ibv_wc_imm`]              |
//!   | `ibv_send_wr`: `union { imm_data; invalidate_rkey; }` | `imm` | [`ibv_send_wr_imm`]    |
//!   | `ibv_send_wr`: `union { bind_mw; tso; }`     | `bind_mw_tso` | [`ibv_send_wr_bind_mw_tso`] |
//!   | `ibv_flow_spec`: `union { hdr; eth; ... }`   | `u`        | [`ibv_flow_spec_u`]         |
//!   | `RDMA_UAPI_PTR(type, name)` (64-bit form)    | `name`     | `<outer>_<name>`            |
//!
//!   So C's `wc.imm_data` is `wc.imm.imm_data` here, and C's
//!   `wr.bind_mw.mw` is `wr.bind_mw_tso.bind_mw.mw`.
//! * A C `enum E` is `pub type E = u32;` (or `i32` when one of its values is
//!   negative — the type GCC gives the enum) and every enumerator is a
//!   `pub const NAME: E = value;`.  Enumerators of tag-less enums are `u32`
//!   (or `i32` when negative).  Public integer `#define`s are `pub const`s
//!   of a type that fits their use.
//! * `__be16`/`__be32`/`__be64` are plain `u16`/`u32`/`u64` holding the
//!   big-endian bytes; `__aligned_u64` is `u64`.
//! * Function pointers are `Option<unsafe extern "C" fn(..) -> ..>` so that a
//!   NULL slot is representable.
//!
//! The `tests` module at the bottom compares the size and alignment of every
//! type here, the offset/size/alignment of every field, and the value of every
//! constant with what a C compiler reports for Debian's real headers.

use libc::{c_char, c_int, c_uint, c_void, pthread_cond_t, pthread_mutex_t, size_t, timespec};

/// `<linux/types.h>`'s big-endian 64-bit integer: the bytes in network
/// order (named where a prototype has it, so generated C says `__be64`).
pub type __be64 = u64;

// The only layouts mirrored (and checked) here are the LP64 ones.
const _: () = assert!(
    core::mem::size_of::<usize>() == 8,
    "verbs.rs mirrors the 64-bit ABI only"
);

// ---------------------------------------------------------------------------
// GIDs
// ---------------------------------------------------------------------------

/// `union ibv_gid`: a 128-bit GID, as raw bytes or as prefix + interface id.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_gid {
    pub raw: [u8; 16],
    pub global: ibv_gid_global,
}

/// The tag-less struct behind `ibv_gid.global` (both halves big-endian).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_gid_global {
    pub subnet_prefix: u64,
    pub interface_id: u64,
}

/// `enum ibv_gid_type`
pub type ibv_gid_type = u32;
pub const IBV_GID_TYPE_IB: ibv_gid_type = 0;
pub const IBV_GID_TYPE_ROCE_V1: ibv_gid_type = 1;
pub const IBV_GID_TYPE_ROCE_V2: ibv_gid_type = 2;

/// `struct ibv_gid_entry` (filled by `ibv_query_gid_ex`/`ibv_query_gid_table`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_gid_entry {
    pub gid: ibv_gid,
    pub gid_index: u32,
    pub port_num: u32,
    /// An `ibv_gid_type` value.
    pub gid_type: u32,
    pub ndev_ifindex: u32,
}

/// `__VERBS_ABI_IS_EXTENDED`: the `ibv_context.abi_compat` marker saying the
/// context is embedded in a `verbs_context`.
pub const __VERBS_ABI_IS_EXTENDED: *mut c_void = usize::MAX as *mut c_void;

// ---------------------------------------------------------------------------
// Device
// ---------------------------------------------------------------------------

/// `enum ibv_node_type` (has a negative value, hence `i32`).
pub type ibv_node_type = i32;
pub const IBV_NODE_UNKNOWN: ibv_node_type = -1;
pub const IBV_NODE_CA: ibv_node_type = 1;
pub const IBV_NODE_SWITCH: ibv_node_type = 2;
pub const IBV_NODE_ROUTER: ibv_node_type = 3;
pub const IBV_NODE_RNIC: ibv_node_type = 4;
pub const IBV_NODE_USNIC: ibv_node_type = 5;
pub const IBV_NODE_USNIC_UDP: ibv_node_type = 6;
pub const IBV_NODE_UNSPECIFIED: ibv_node_type = 7;

/// `enum ibv_transport_type` (has a negative value, hence `i32`).
pub type ibv_transport_type = i32;
pub const IBV_TRANSPORT_UNKNOWN: ibv_transport_type = -1;
pub const IBV_TRANSPORT_IB: ibv_transport_type = 0;
pub const IBV_TRANSPORT_IWARP: ibv_transport_type = 1;
pub const IBV_TRANSPORT_USNIC: ibv_transport_type = 2;
pub const IBV_TRANSPORT_USNIC_UDP: ibv_transport_type = 3;
pub const IBV_TRANSPORT_UNSPECIFIED: ibv_transport_type = 4;

/// `enum ibv_device_cap_flags` (bits of `ibv_device_attr.device_cap_flags`).
pub type ibv_device_cap_flags = u32;
pub const IBV_DEVICE_RESIZE_MAX_WR: ibv_device_cap_flags = 1;
pub const IBV_DEVICE_BAD_PKEY_CNTR: ibv_device_cap_flags = 1 << 1;
pub const IBV_DEVICE_BAD_QKEY_CNTR: ibv_device_cap_flags = 1 << 2;
pub const IBV_DEVICE_RAW_MULTI: ibv_device_cap_flags = 1 << 3;
pub const IBV_DEVICE_AUTO_PATH_MIG: ibv_device_cap_flags = 1 << 4;
pub const IBV_DEVICE_CHANGE_PHY_PORT: ibv_device_cap_flags = 1 << 5;
pub const IBV_DEVICE_UD_AV_PORT_ENFORCE: ibv_device_cap_flags = 1 << 6;
pub const IBV_DEVICE_CURR_QP_STATE_MOD: ibv_device_cap_flags = 1 << 7;
pub const IBV_DEVICE_SHUTDOWN_PORT: ibv_device_cap_flags = 1 << 8;
pub const IBV_DEVICE_INIT_TYPE: ibv_device_cap_flags = 1 << 9;
pub const IBV_DEVICE_PORT_ACTIVE_EVENT: ibv_device_cap_flags = 1 << 10;
pub const IBV_DEVICE_SYS_IMAGE_GUID: ibv_device_cap_flags = 1 << 11;
pub const IBV_DEVICE_RC_RNR_NAK_GEN: ibv_device_cap_flags = 1 << 12;
pub const IBV_DEVICE_SRQ_RESIZE: ibv_device_cap_flags = 1 << 13;
pub const IBV_DEVICE_N_NOTIFY_CQ: ibv_device_cap_flags = 1 << 14;
pub const IBV_DEVICE_MEM_WINDOW: ibv_device_cap_flags = 1 << 17;
pub const IBV_DEVICE_UD_IP_CSUM: ibv_device_cap_flags = 1 << 18;
pub const IBV_DEVICE_XRC: ibv_device_cap_flags = 1 << 20;
pub const IBV_DEVICE_MEM_MGT_EXTENSIONS: ibv_device_cap_flags = 1 << 21;
pub const IBV_DEVICE_MEM_WINDOW_TYPE_2A: ibv_device_cap_flags = 1 << 23;
pub const IBV_DEVICE_MEM_WINDOW_TYPE_2B: ibv_device_cap_flags = 1 << 24;
pub const IBV_DEVICE_RC_IP_CSUM: ibv_device_cap_flags = 1 << 25;
pub const IBV_DEVICE_RAW_IP_CSUM: ibv_device_cap_flags = 1 << 26;
pub const IBV_DEVICE_MANAGED_FLOW_STEERING: ibv_device_cap_flags = 1 << 29;

/// `enum ibv_fork_status` (result of `ibv_is_fork_initialized`).
pub type ibv_fork_status = u32;
pub const IBV_FORK_DISABLED: ibv_fork_status = 0;
pub const IBV_FORK_ENABLED: ibv_fork_status = 1;
pub const IBV_FORK_UNNEEDED: ibv_fork_status = 2;

/// `#define`d capability bits of `ibv_device_attr_ex.device_cap_flags_ex`
/// that do not fit the 32-bit enum.
pub const IBV_DEVICE_RAW_SCATTER_FCS: u64 = 1 << 34;
pub const IBV_DEVICE_PCI_WRITE_END_PADDING: u64 = 1 << 36;

/// `enum ibv_atomic_cap`
pub type ibv_atomic_cap = u32;
pub const IBV_ATOMIC_NONE: ibv_atomic_cap = 0;
pub const IBV_ATOMIC_HCA: ibv_atomic_cap = 1;
pub const IBV_ATOMIC_GLOB: ibv_atomic_cap = 2;

/// `struct ibv_alloc_dm_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_alloc_dm_attr {
    pub length: size_t,
    pub log_align_req: u32,
    pub comp_mask: u32,
}

/// `enum ibv_dm_mask`
pub type ibv_dm_mask = u32;
pub const IBV_DM_MASK_HANDLE: ibv_dm_mask = 1 << 0;

/// `struct ibv_dm`: device memory, with provider copy routines.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_dm {
    pub context: *mut ibv_context,
    pub memcpy_to_dm: Option<
        unsafe extern "C" fn(dm: *mut ibv_dm, dm_offset: u64, host_addr: *const c_void, length: size_t) -> c_int,
    >,
    pub memcpy_from_dm:
        Option<unsafe extern "C" fn(host_addr: *mut c_void, dm: *mut ibv_dm, dm_offset: u64, length: size_t) -> c_int>,
    pub comp_mask: u32,
    pub handle: u32,
}

/// `struct ibv_device_attr` (result of `ibv_query_device`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    pub atomic_cap: ibv_atomic_cap,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `struct ibv_query_device_ex_input`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_query_device_ex_input {
    pub comp_mask: u32,
}

/// `enum ibv_odp_transport_cap_bits`
pub type ibv_odp_transport_cap_bits = u32;
pub const IBV_ODP_SUPPORT_SEND: ibv_odp_transport_cap_bits = 1 << 0;
pub const IBV_ODP_SUPPORT_RECV: ibv_odp_transport_cap_bits = 1 << 1;
pub const IBV_ODP_SUPPORT_WRITE: ibv_odp_transport_cap_bits = 1 << 2;
pub const IBV_ODP_SUPPORT_READ: ibv_odp_transport_cap_bits = 1 << 3;
pub const IBV_ODP_SUPPORT_ATOMIC: ibv_odp_transport_cap_bits = 1 << 4;
pub const IBV_ODP_SUPPORT_SRQ_RECV: ibv_odp_transport_cap_bits = 1 << 5;

/// `struct ibv_odp_caps`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_odp_caps {
    pub general_caps: u64,
    pub per_transport_caps: ibv_odp_caps_per_transport_caps,
}

/// The tag-less struct behind `ibv_odp_caps.per_transport_caps`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_odp_caps_per_transport_caps {
    pub rc_odp_caps: u32,
    pub uc_odp_caps: u32,
    pub ud_odp_caps: u32,
}

/// `enum ibv_odp_general_caps`
pub type ibv_odp_general_caps = u32;
pub const IBV_ODP_SUPPORT: ibv_odp_general_caps = 1 << 0;
pub const IBV_ODP_SUPPORT_IMPLICIT: ibv_odp_general_caps = 1 << 1;

/// `struct ibv_tso_caps`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_tso_caps {
    pub max_tso: u32,
    pub supported_qpts: u32,
}

/// `enum ibv_rx_hash_function_flags`
pub type ibv_rx_hash_function_flags = u32;
pub const IBV_RX_HASH_FUNC_TOEPLITZ: ibv_rx_hash_function_flags = 1 << 0;

/// `enum ibv_rx_hash_fields`
pub type ibv_rx_hash_fields = u32;
pub const IBV_RX_HASH_SRC_IPV4: ibv_rx_hash_fields = 1 << 0;
pub const IBV_RX_HASH_DST_IPV4: ibv_rx_hash_fields = 1 << 1;
pub const IBV_RX_HASH_SRC_IPV6: ibv_rx_hash_fields = 1 << 2;
pub const IBV_RX_HASH_DST_IPV6: ibv_rx_hash_fields = 1 << 3;
pub const IBV_RX_HASH_SRC_PORT_TCP: ibv_rx_hash_fields = 1 << 4;
pub const IBV_RX_HASH_DST_PORT_TCP: ibv_rx_hash_fields = 1 << 5;
pub const IBV_RX_HASH_SRC_PORT_UDP: ibv_rx_hash_fields = 1 << 6;
pub const IBV_RX_HASH_DST_PORT_UDP: ibv_rx_hash_fields = 1 << 7;
pub const IBV_RX_HASH_IPSEC_SPI: ibv_rx_hash_fields = 1 << 8;
pub const IBV_RX_HASH_INNER: ibv_rx_hash_fields = 1 << 31;

/// `struct ibv_rss_caps`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_rss_caps {
    pub supported_qpts: u32,
    pub max_rwq_indirection_tables: u32,
    pub max_rwq_indirection_table_size: u32,
    /// Bits of `ibv_rx_hash_fields`.
    pub rx_hash_fields_mask: u64,
    /// Bits of `ibv_rx_hash_function_flags`.
    pub rx_hash_function: u8,
}

/// `struct ibv_packet_pacing_caps`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_packet_pacing_caps {
    pub qp_rate_limit_min: u32,
    /// kbps.
    pub qp_rate_limit_max: u32,
    pub supported_qpts: u32,
}

/// `enum ibv_raw_packet_caps`
pub type ibv_raw_packet_caps = u32;
pub const IBV_RAW_PACKET_CAP_CVLAN_STRIPPING: ibv_raw_packet_caps = 1 << 0;
pub const IBV_RAW_PACKET_CAP_SCATTER_FCS: ibv_raw_packet_caps = 1 << 1;
pub const IBV_RAW_PACKET_CAP_IP_CSUM: ibv_raw_packet_caps = 1 << 2;
pub const IBV_RAW_PACKET_CAP_DELAY_DROP: ibv_raw_packet_caps = 1 << 3;

/// `enum ibv_tm_cap_flags`
pub type ibv_tm_cap_flags = u32;
pub const IBV_TM_CAP_RC: ibv_tm_cap_flags = 1 << 0;

/// `struct ibv_tm_caps` (tag-matching capabilities).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_tm_caps {
    pub max_rndv_hdr_size: u32,
    pub max_num_tags: u32,
    /// Bits of `ibv_tm_cap_flags`.
    pub flags: u32,
    pub max_ops: u32,
    pub max_sge: u32,
}

/// `struct ibv_cq_moderation_caps`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_cq_moderation_caps {
    pub max_cq_count: u16,
    /// Microseconds.
    pub max_cq_period: u16,
}

/// `enum ibv_pci_atomic_op_size`
pub type ibv_pci_atomic_op_size = u32;
pub const IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP: ibv_pci_atomic_op_size = 1 << 0;
pub const IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP: ibv_pci_atomic_op_size = 1 << 1;
pub const IBV_PCI_ATOMIC_OPERATION_16_BYTE_SIZE_SUP: ibv_pci_atomic_op_size = 1 << 2;

/// `struct ibv_pci_atomic_caps` (each field: bits of `ibv_pci_atomic_op_size`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_pci_atomic_caps {
    pub fetch_add: u16,
    pub swap: u16,
    pub compare_swap: u16,
}

/// `struct ibv_device_attr_ex` (result of `ibv_query_device_ex`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_device_attr_ex {
    pub orig_attr: ibv_device_attr,
    pub comp_mask: u32,
    pub odp_caps: ibv_odp_caps,
    pub completion_timestamp_mask: u64,
    pub hca_core_clock: u64,
    pub device_cap_flags_ex: u64,
    pub tso_caps: ibv_tso_caps,
    pub rss_caps: ibv_rss_caps,
    pub max_wq_type_rq: u32,
    pub packet_pacing_caps: ibv_packet_pacing_caps,
    /// Bits of `ibv_raw_packet_caps`.
    pub raw_packet_caps: u32,
    pub tm_caps: ibv_tm_caps,
    pub cq_mod_caps: ibv_cq_moderation_caps,
    pub max_dm_size: u64,
    pub pci_atomic_caps: ibv_pci_atomic_caps,
    pub xrc_odp_caps: u32,
    pub phys_port_cnt_ex: u32,
}

// ---------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------

/// `enum ibv_mtu`
pub type ibv_mtu = u32;
pub const IBV_MTU_256: ibv_mtu = 1;
pub const IBV_MTU_512: ibv_mtu = 2;
pub const IBV_MTU_1024: ibv_mtu = 3;
pub const IBV_MTU_2048: ibv_mtu = 4;
pub const IBV_MTU_4096: ibv_mtu = 5;

/// `enum ibv_port_state`
pub type ibv_port_state = u32;
pub const IBV_PORT_NOP: ibv_port_state = 0;
pub const IBV_PORT_DOWN: ibv_port_state = 1;
pub const IBV_PORT_INIT: ibv_port_state = 2;
pub const IBV_PORT_ARMED: ibv_port_state = 3;
pub const IBV_PORT_ACTIVE: ibv_port_state = 4;
pub const IBV_PORT_ACTIVE_DEFER: ibv_port_state = 5;

// Tag-less enum: values of `ibv_port_attr.link_layer`.
pub const IBV_LINK_LAYER_UNSPECIFIED: u32 = 0;
pub const IBV_LINK_LAYER_INFINIBAND: u32 = 1;
pub const IBV_LINK_LAYER_ETHERNET: u32 = 2;

/// `enum ibv_port_cap_flags`
pub type ibv_port_cap_flags = u32;
pub const IBV_PORT_SM: ibv_port_cap_flags = 1 << 1;
pub const IBV_PORT_NOTICE_SUP: ibv_port_cap_flags = 1 << 2;
pub const IBV_PORT_TRAP_SUP: ibv_port_cap_flags = 1 << 3;
pub const IBV_PORT_OPT_IPD_SUP: ibv_port_cap_flags = 1 << 4;
pub const IBV_PORT_AUTO_MIGR_SUP: ibv_port_cap_flags = 1 << 5;
pub const IBV_PORT_SL_MAP_SUP: ibv_port_cap_flags = 1 << 6;
pub const IBV_PORT_MKEY_NVRAM: ibv_port_cap_flags = 1 << 7;
pub const IBV_PORT_PKEY_NVRAM: ibv_port_cap_flags = 1 << 8;
pub const IBV_PORT_LED_INFO_SUP: ibv_port_cap_flags = 1 << 9;
pub const IBV_PORT_SYS_IMAGE_GUID_SUP: ibv_port_cap_flags = 1 << 11;
pub const IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP: ibv_port_cap_flags = 1 << 12;
pub const IBV_PORT_EXTENDED_SPEEDS_SUP: ibv_port_cap_flags = 1 << 14;
pub const IBV_PORT_CAP_MASK2_SUP: ibv_port_cap_flags = 1 << 15;
pub const IBV_PORT_CM_SUP: ibv_port_cap_flags = 1 << 16;
pub const IBV_PORT_SNMP_TUNNEL_SUP: ibv_port_cap_flags = 1 << 17;
pub const IBV_PORT_REINIT_SUP: ibv_port_cap_flags = 1 << 18;
pub const IBV_PORT_DEVICE_MGMT_SUP: ibv_port_cap_flags = 1 << 19;
pub const IBV_PORT_VENDOR_CLASS_SUP: ibv_port_cap_flags = 1 << 20;
pub const IBV_PORT_DR_NOTICE_SUP: ibv_port_cap_flags = 1 << 21;
pub const IBV_PORT_CAP_MASK_NOTICE_SUP: ibv_port_cap_flags = 1 << 22;
pub const IBV_PORT_BOOT_MGMT_SUP: ibv_port_cap_flags = 1 << 23;
pub const IBV_PORT_LINK_LATENCY_SUP: ibv_port_cap_flags = 1 << 24;
pub const IBV_PORT_CLIENT_REG_SUP: ibv_port_cap_flags = 1 << 25;
pub const IBV_PORT_IP_BASED_GIDS: ibv_port_cap_flags = 1 << 26;

/// `enum ibv_port_cap_flags2`
pub type ibv_port_cap_flags2 = u32;
pub const IBV_PORT_SET_NODE_DESC_SUP: ibv_port_cap_flags2 = 1 << 0;
pub const IBV_PORT_INFO_EXT_SUP: ibv_port_cap_flags2 = 1 << 1;
pub const IBV_PORT_VIRT_SUP: ibv_port_cap_flags2 = 1 << 2;
pub const IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP: ibv_port_cap_flags2 = 1 << 3;
pub const IBV_PORT_LINK_WIDTH_2X_SUP: ibv_port_cap_flags2 = 1 << 4;
pub const IBV_PORT_LINK_SPEED_HDR_SUP: ibv_port_cap_flags2 = 1 << 5;
pub const IBV_PORT_LINK_SPEED_NDR_SUP: ibv_port_cap_flags2 = 1 << 10;

/// `struct ibv_port_attr` (result of `ibv_query_port`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_port_attr {
    pub state: ibv_port_state,
    pub max_mtu: ibv_mtu,
    pub active_mtu: ibv_mtu,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

// ---------------------------------------------------------------------------
// Asynchronous events
// ---------------------------------------------------------------------------

/// `enum ibv_event_type`
pub type ibv_event_type = u32;
pub const IBV_EVENT_CQ_ERR: ibv_event_type = 0;
pub const IBV_EVENT_QP_FATAL: ibv_event_type = 1;
pub const IBV_EVENT_QP_REQ_ERR: ibv_event_type = 2;
pub const IBV_EVENT_QP_ACCESS_ERR: ibv_event_type = 3;
pub const IBV_EVENT_COMM_EST: ibv_event_type = 4;
pub const IBV_EVENT_SQ_DRAINED: ibv_event_type = 5;
pub const IBV_EVENT_PATH_MIG: ibv_event_type = 6;
pub const IBV_EVENT_PATH_MIG_ERR: ibv_event_type = 7;
pub const IBV_EVENT_DEVICE_FATAL: ibv_event_type = 8;
pub const IBV_EVENT_PORT_ACTIVE: ibv_event_type = 9;
pub const IBV_EVENT_PORT_ERR: ibv_event_type = 10;
pub const IBV_EVENT_LID_CHANGE: ibv_event_type = 11;
pub const IBV_EVENT_PKEY_CHANGE: ibv_event_type = 12;
pub const IBV_EVENT_SM_CHANGE: ibv_event_type = 13;
pub const IBV_EVENT_SRQ_ERR: ibv_event_type = 14;
pub const IBV_EVENT_SRQ_LIMIT_REACHED: ibv_event_type = 15;
pub const IBV_EVENT_QP_LAST_WQE_REACHED: ibv_event_type = 16;
pub const IBV_EVENT_CLIENT_REREGISTER: ibv_event_type = 17;
pub const IBV_EVENT_GID_CHANGE: ibv_event_type = 18;
pub const IBV_EVENT_WQ_FATAL: ibv_event_type = 19;

/// `struct ibv_async_event`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_async_event {
    pub element: ibv_async_event_element,
    pub event_type: ibv_event_type,
}

/// The tag-less union behind `ibv_async_event.element`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_async_event_element {
    pub cq: *mut ibv_cq,
    pub qp: *mut ibv_qp,
    pub srq: *mut ibv_srq,
    pub wq: *mut ibv_wq,
    pub port_num: c_int,
}

// ---------------------------------------------------------------------------
// Work completions
// ---------------------------------------------------------------------------

/// `enum ibv_wc_status`
pub type ibv_wc_status = u32;
pub const IBV_WC_SUCCESS: ibv_wc_status = 0;
pub const IBV_WC_LOC_LEN_ERR: ibv_wc_status = 1;
pub const IBV_WC_LOC_QP_OP_ERR: ibv_wc_status = 2;
pub const IBV_WC_LOC_EEC_OP_ERR: ibv_wc_status = 3;
pub const IBV_WC_LOC_PROT_ERR: ibv_wc_status = 4;
pub const IBV_WC_WR_FLUSH_ERR: ibv_wc_status = 5;
pub const IBV_WC_MW_BIND_ERR: ibv_wc_status = 6;
pub const IBV_WC_BAD_RESP_ERR: ibv_wc_status = 7;
pub const IBV_WC_LOC_ACCESS_ERR: ibv_wc_status = 8;
pub const IBV_WC_REM_INV_REQ_ERR: ibv_wc_status = 9;
pub const IBV_WC_REM_ACCESS_ERR: ibv_wc_status = 10;
pub const IBV_WC_REM_OP_ERR: ibv_wc_status = 11;
pub const IBV_WC_RETRY_EXC_ERR: ibv_wc_status = 12;
pub const IBV_WC_RNR_RETRY_EXC_ERR: ibv_wc_status = 13;
pub const IBV_WC_LOC_RDD_VIOL_ERR: ibv_wc_status = 14;
pub const IBV_WC_REM_INV_RD_REQ_ERR: ibv_wc_status = 15;
pub const IBV_WC_REM_ABORT_ERR: ibv_wc_status = 16;
pub const IBV_WC_INV_EECN_ERR: ibv_wc_status = 17;
pub const IBV_WC_INV_EEC_STATE_ERR: ibv_wc_status = 18;
pub const IBV_WC_FATAL_ERR: ibv_wc_status = 19;
pub const IBV_WC_RESP_TIMEOUT_ERR: ibv_wc_status = 20;
pub const IBV_WC_GENERAL_ERR: ibv_wc_status = 21;
pub const IBV_WC_TM_ERR: ibv_wc_status = 22;
pub const IBV_WC_TM_RNDV_INCOMPLETE: ibv_wc_status = 23;

/// `enum ibv_wc_opcode`; receive completions have bit 7 (`IBV_WC_RECV`) set.
pub type ibv_wc_opcode = u32;
pub const IBV_WC_SEND: ibv_wc_opcode = 0;
pub const IBV_WC_RDMA_WRITE: ibv_wc_opcode = 1;
pub const IBV_WC_RDMA_READ: ibv_wc_opcode = 2;
pub const IBV_WC_COMP_SWAP: ibv_wc_opcode = 3;
pub const IBV_WC_FETCH_ADD: ibv_wc_opcode = 4;
pub const IBV_WC_BIND_MW: ibv_wc_opcode = 5;
pub const IBV_WC_LOCAL_INV: ibv_wc_opcode = 6;
pub const IBV_WC_TSO: ibv_wc_opcode = 7;
pub const IBV_WC_ATOMIC_WRITE: ibv_wc_opcode = 9;
pub const IBV_WC_RECV: ibv_wc_opcode = 1 << 7;
pub const IBV_WC_RECV_RDMA_WITH_IMM: ibv_wc_opcode = 129;
pub const IBV_WC_TM_ADD: ibv_wc_opcode = 130;
pub const IBV_WC_TM_DEL: ibv_wc_opcode = 131;
pub const IBV_WC_TM_SYNC: ibv_wc_opcode = 132;
pub const IBV_WC_TM_RECV: ibv_wc_opcode = 133;
pub const IBV_WC_TM_NO_TAG: ibv_wc_opcode = 134;
pub const IBV_WC_DRIVER1: ibv_wc_opcode = 135;
pub const IBV_WC_DRIVER2: ibv_wc_opcode = 136;
pub const IBV_WC_DRIVER3: ibv_wc_opcode = 137;

// Tag-less enum: bit position of `IBV_WC_IP_CSUM_OK`.
pub const IBV_WC_IP_CSUM_OK_SHIFT: u32 = 2;

/// `enum ibv_create_cq_wc_flags` (`ibv_cq_init_attr_ex.wc_flags`).
pub type ibv_create_cq_wc_flags = u32;
pub const IBV_WC_EX_WITH_BYTE_LEN: ibv_create_cq_wc_flags = 1 << 0;
pub const IBV_WC_EX_WITH_IMM: ibv_create_cq_wc_flags = 1 << 1;
pub const IBV_WC_EX_WITH_QP_NUM: ibv_create_cq_wc_flags = 1 << 2;
pub const IBV_WC_EX_WITH_SRC_QP: ibv_create_cq_wc_flags = 1 << 3;
pub const IBV_WC_EX_WITH_SLID: ibv_create_cq_wc_flags = 1 << 4;
pub const IBV_WC_EX_WITH_SL: ibv_create_cq_wc_flags = 1 << 5;
pub const IBV_WC_EX_WITH_DLID_PATH_BITS: ibv_create_cq_wc_flags = 1 << 6;
pub const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP: ibv_create_cq_wc_flags = 1 << 7;
pub const IBV_WC_EX_WITH_CVLAN: ibv_create_cq_wc_flags = 1 << 8;
pub const IBV_WC_EX_WITH_FLOW_TAG: ibv_create_cq_wc_flags = 1 << 9;
pub const IBV_WC_EX_WITH_TM_INFO: ibv_create_cq_wc_flags = 1 << 10;
pub const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK: ibv_create_cq_wc_flags = 1 << 11;

// Tag-less enum: the fields a plain `struct ibv_wc` carries.
pub const IBV_WC_STANDARD_FLAGS: u32 = IBV_WC_EX_WITH_BYTE_LEN
    | IBV_WC_EX_WITH_IMM
    | IBV_WC_EX_WITH_QP_NUM
    | IBV_WC_EX_WITH_SRC_QP
    | IBV_WC_EX_WITH_SLID
    | IBV_WC_EX_WITH_SL
    | IBV_WC_EX_WITH_DLID_PATH_BITS;

// Tag-less enum: every `wc_flags` bit `ibv_create_cq_ex` accepts.
pub const IBV_CREATE_CQ_SUP_WC_FLAGS: u32 = IBV_WC_STANDARD_FLAGS
    | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
    | IBV_WC_EX_WITH_CVLAN
    | IBV_WC_EX_WITH_FLOW_TAG
    | IBV_WC_EX_WITH_TM_INFO
    | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

/// `enum ibv_wc_flags` (`ibv_wc.wc_flags`).
pub type ibv_wc_flags = u32;
pub const IBV_WC_GRH: ibv_wc_flags = 1 << 0;
pub const IBV_WC_WITH_IMM: ibv_wc_flags = 1 << 1;
pub const IBV_WC_IP_CSUM_OK: ibv_wc_flags = 1 << IBV_WC_IP_CSUM_OK_SHIFT;
pub const IBV_WC_WITH_INV: ibv_wc_flags = 1 << 3;
pub const IBV_WC_TM_SYNC_REQ: ibv_wc_flags = 1 << 4;
pub const IBV_WC_TM_MATCH: ibv_wc_flags = 1 << 5;
pub const IBV_WC_TM_DATA_VALID: ibv_wc_flags = 1 << 6;

/// `struct ibv_wc`: one work completion, as returned by `ibv_poll_cq`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: ibv_wc_status,
    pub opcode: ibv_wc_opcode,
    pub vendor_err: u32,
    pub byte_len: u32,
    /// C's anonymous union: `imm_data` / `invalidated_rkey`.
    pub imm: ibv_wc_imm,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

/// The anonymous union inside `ibv_wc` (C accesses its members directly).
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_wc_imm {
    /// Valid with `IBV_WC_WITH_IMM`; network byte order.
    pub imm_data: u32,
    /// Valid with `IBV_WC_WITH_INV`.
    pub invalidated_rkey: u32,
}

// ---------------------------------------------------------------------------
// Memory access, PD, TD, XRCD, MR, MW
// ---------------------------------------------------------------------------

/// `enum ibv_access_flags`
pub type ibv_access_flags = u32;
pub const IBV_ACCESS_LOCAL_WRITE: ibv_access_flags = 1;
pub const IBV_ACCESS_REMOTE_WRITE: ibv_access_flags = 1 << 1;
pub const IBV_ACCESS_REMOTE_READ: ibv_access_flags = 1 << 2;
pub const IBV_ACCESS_REMOTE_ATOMIC: ibv_access_flags = 1 << 3;
pub const IBV_ACCESS_MW_BIND: ibv_access_flags = 1 << 4;
pub const IBV_ACCESS_ZERO_BASED: ibv_access_flags = 1 << 5;
pub const IBV_ACCESS_ON_DEMAND: ibv_access_flags = 1 << 6;
pub const IBV_ACCESS_HUGETLB: ibv_access_flags = 1 << 7;
pub const IBV_ACCESS_RELAXED_ORDERING: ibv_access_flags = IBV_ACCESS_OPTIONAL_FIRST;

/// `struct ibv_mw_bind_info`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_mw_bind_info {
    pub mr: *mut ibv_mr,
    pub addr: u64,
    pub length: u64,
    /// Bits of `ibv_access_flags`.
    pub mw_access_flags: c_uint,
}

/// `struct ibv_pd`: protection domain.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_pd {
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `struct ibv_td_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_td_init_attr {
    pub comp_mask: u32,
}

/// `struct ibv_td`: thread domain.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_td {
    pub context: *mut ibv_context,
}

/// `enum ibv_xrcd_init_attr_mask`
pub type ibv_xrcd_init_attr_mask = u32;
pub const IBV_XRCD_INIT_ATTR_FD: ibv_xrcd_init_attr_mask = 1 << 0;
pub const IBV_XRCD_INIT_ATTR_OFLAGS: ibv_xrcd_init_attr_mask = 1 << 1;
pub const IBV_XRCD_INIT_ATTR_RESERVED: ibv_xrcd_init_attr_mask = 1 << 2;

/// `struct ibv_xrcd_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_xrcd_init_attr {
    pub comp_mask: u32,
    pub fd: c_int,
    pub oflags: c_int,
}

/// `struct ibv_xrcd`: XRC domain.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_xrcd {
    pub context: *mut ibv_context,
}

/// `enum ibv_rereg_mr_flags`
pub type ibv_rereg_mr_flags = u32;
pub const IBV_REREG_MR_CHANGE_TRANSLATION: ibv_rereg_mr_flags = 1 << 0;
pub const IBV_REREG_MR_CHANGE_PD: ibv_rereg_mr_flags = 1 << 1;
pub const IBV_REREG_MR_CHANGE_ACCESS: ibv_rereg_mr_flags = 1 << 2;
pub const IBV_REREG_MR_FLAGS_SUPPORTED: ibv_rereg_mr_flags = (IBV_REREG_MR_CHANGE_ACCESS << 1) - 1;

/// `struct ibv_mr`: memory region.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: size_t,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `enum ibv_mw_type`
pub type ibv_mw_type = u32;
pub const IBV_MW_TYPE_1: ibv_mw_type = 1;
pub const IBV_MW_TYPE_2: ibv_mw_type = 2;

/// `struct ibv_mw`: memory window.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_mw {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub rkey: u32,
    pub handle: u32,
    pub r#type: ibv_mw_type,
}

// ---------------------------------------------------------------------------
// Addressing
// ---------------------------------------------------------------------------

/// `struct ibv_global_route`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// `struct ibv_grh`: the on-the-wire global route header.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_grh {
    pub version_tclass_flow: u32,
    pub paylen: u16,
    pub next_hdr: u8,
    pub hop_limit: u8,
    pub sgid: ibv_gid,
    pub dgid: ibv_gid,
}

/// `enum ibv_rate` (values are not ordered by speed).
pub type ibv_rate = u32;
pub const IBV_RATE_MAX: ibv_rate = 0;
pub const IBV_RATE_2_5_GBPS: ibv_rate = 2;
pub const IBV_RATE_5_GBPS: ibv_rate = 5;
pub const IBV_RATE_10_GBPS: ibv_rate = 3;
pub const IBV_RATE_20_GBPS: ibv_rate = 6;
pub const IBV_RATE_30_GBPS: ibv_rate = 4;
pub const IBV_RATE_40_GBPS: ibv_rate = 7;
pub const IBV_RATE_60_GBPS: ibv_rate = 8;
pub const IBV_RATE_80_GBPS: ibv_rate = 9;
pub const IBV_RATE_120_GBPS: ibv_rate = 10;
pub const IBV_RATE_14_GBPS: ibv_rate = 11;
pub const IBV_RATE_56_GBPS: ibv_rate = 12;
pub const IBV_RATE_112_GBPS: ibv_rate = 13;
pub const IBV_RATE_168_GBPS: ibv_rate = 14;
pub const IBV_RATE_25_GBPS: ibv_rate = 15;
pub const IBV_RATE_100_GBPS: ibv_rate = 16;
pub const IBV_RATE_200_GBPS: ibv_rate = 17;
pub const IBV_RATE_300_GBPS: ibv_rate = 18;
pub const IBV_RATE_28_GBPS: ibv_rate = 19;
pub const IBV_RATE_50_GBPS: ibv_rate = 20;
pub const IBV_RATE_400_GBPS: ibv_rate = 21;
pub const IBV_RATE_600_GBPS: ibv_rate = 22;
pub const IBV_RATE_800_GBPS: ibv_rate = 23;
pub const IBV_RATE_1200_GBPS: ibv_rate = 24;

/// `struct ibv_ah_attr`: address vector.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    /// An `ibv_rate` value.
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

// ---------------------------------------------------------------------------
// SRQ and WQ
// ---------------------------------------------------------------------------

/// `enum ibv_srq_attr_mask`
pub type ibv_srq_attr_mask = u32;
pub const IBV_SRQ_MAX_WR: ibv_srq_attr_mask = 1 << 0;
pub const IBV_SRQ_LIMIT: ibv_srq_attr_mask = 1 << 1;

/// `struct ibv_srq_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_srq_attr {
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}

/// `struct ibv_srq_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_srq_init_attr {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
}

/// `enum ibv_srq_type`
pub type ibv_srq_type = u32;
pub const IBV_SRQT_BASIC: ibv_srq_type = 0;
pub const IBV_SRQT_XRC: ibv_srq_type = 1;
pub const IBV_SRQT_TM: ibv_srq_type = 2;

/// `enum ibv_srq_init_attr_mask`
pub type ibv_srq_init_attr_mask = u32;
pub const IBV_SRQ_INIT_ATTR_TYPE: ibv_srq_init_attr_mask = 1 << 0;
pub const IBV_SRQ_INIT_ATTR_PD: ibv_srq_init_attr_mask = 1 << 1;
pub const IBV_SRQ_INIT_ATTR_XRCD: ibv_srq_init_attr_mask = 1 << 2;
pub const IBV_SRQ_INIT_ATTR_CQ: ibv_srq_init_attr_mask = 1 << 3;
pub const IBV_SRQ_INIT_ATTR_TM: ibv_srq_init_attr_mask = 1 << 4;
pub const IBV_SRQ_INIT_ATTR_RESERVED: ibv_srq_init_attr_mask = 1 << 5;

/// `struct ibv_tm_cap`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_tm_cap {
    pub max_num_tags: u32,
    pub max_ops: u32,
}

/// `struct ibv_srq_init_attr_ex`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_srq_init_attr_ex {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
    pub comp_mask: u32,
    pub srq_type: ibv_srq_type,
    pub pd: *mut ibv_pd,
    pub xrcd: *mut ibv_xrcd,
    pub cq: *mut ibv_cq,
    pub tm_cap: ibv_tm_cap,
}

/// `enum ibv_wq_type`
pub type ibv_wq_type = u32;
pub const IBV_WQT_RQ: ibv_wq_type = 0;

/// `enum ibv_wq_init_attr_mask`
pub type ibv_wq_init_attr_mask = u32;
pub const IBV_WQ_INIT_ATTR_FLAGS: ibv_wq_init_attr_mask = 1 << 0;
pub const IBV_WQ_INIT_ATTR_RESERVED: ibv_wq_init_attr_mask = 1 << 1;

/// `enum ibv_wq_flags`
pub type ibv_wq_flags = u32;
pub const IBV_WQ_FLAGS_CVLAN_STRIPPING: ibv_wq_flags = 1 << 0;
pub const IBV_WQ_FLAGS_SCATTER_FCS: ibv_wq_flags = 1 << 1;
pub const IBV_WQ_FLAGS_DELAY_DROP: ibv_wq_flags = 1 << 2;
pub const IBV_WQ_FLAGS_PCI_WRITE_END_PADDING: ibv_wq_flags = 1 << 3;
pub const IBV_WQ_FLAGS_RESERVED: ibv_wq_flags = 1 << 4;

/// `struct ibv_wq_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_wq_init_attr {
    pub wq_context: *mut c_void,
    pub wq_type: ibv_wq_type,
    pub max_wr: u32,
    pub max_sge: u32,
    pub pd: *mut ibv_pd,
    pub cq: *mut ibv_cq,
    /// Bits of `ibv_wq_init_attr_mask`.
    pub comp_mask: u32,
    /// Bits of `ibv_wq_flags`.
    pub create_flags: u32,
}

/// `enum ibv_wq_state`
pub type ibv_wq_state = u32;
pub const IBV_WQS_RESET: ibv_wq_state = 0;
pub const IBV_WQS_RDY: ibv_wq_state = 1;
pub const IBV_WQS_ERR: ibv_wq_state = 2;
pub const IBV_WQS_UNKNOWN: ibv_wq_state = 3;

/// `enum ibv_wq_attr_mask`
pub type ibv_wq_attr_mask = u32;
pub const IBV_WQ_ATTR_STATE: ibv_wq_attr_mask = 1 << 0;
pub const IBV_WQ_ATTR_CURR_STATE: ibv_wq_attr_mask = 1 << 1;
pub const IBV_WQ_ATTR_FLAGS: ibv_wq_attr_mask = 1 << 2;
pub const IBV_WQ_ATTR_RESERVED: ibv_wq_attr_mask = 1 << 3;

/// `struct ibv_wq_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_wq_attr {
    /// Bits of `ibv_wq_attr_mask`.
    pub attr_mask: u32,
    pub wq_state: ibv_wq_state,
    pub curr_wq_state: ibv_wq_state,
    /// Bits of `ibv_wq_flags`.
    pub flags: u32,
    /// Bits of `ibv_wq_flags`.
    pub flags_mask: u32,
}

/// `struct ibv_rwq_ind_table`: receive WQ indirection table.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_rwq_ind_table {
    pub context: *mut ibv_context,
    pub ind_tbl_handle: c_int,
    pub ind_tbl_num: c_int,
    pub comp_mask: u32,
}

/// `enum ibv_ind_table_init_attr_mask`
pub type ibv_ind_table_init_attr_mask = u32;
pub const IBV_CREATE_IND_TABLE_RESERVED: ibv_ind_table_init_attr_mask = 1 << 0;

/// `struct ibv_rwq_ind_table_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_rwq_ind_table_init_attr {
    pub log_ind_tbl_size: u32,
    /// `1 << log_ind_tbl_size` WQ pointers.
    pub ind_tbl: *mut *mut ibv_wq,
    pub comp_mask: u32,
}

// ---------------------------------------------------------------------------
// QP creation and attributes
// ---------------------------------------------------------------------------

/// `enum ibv_qp_type`
pub type ibv_qp_type = u32;
pub const IBV_QPT_RC: ibv_qp_type = 2;
pub const IBV_QPT_UC: ibv_qp_type = 3;
pub const IBV_QPT_UD: ibv_qp_type = 4;
pub const IBV_QPT_RAW_PACKET: ibv_qp_type = 8;
pub const IBV_QPT_XRC_SEND: ibv_qp_type = 9;
pub const IBV_QPT_XRC_RECV: ibv_qp_type = 10;
pub const IBV_QPT_DRIVER: ibv_qp_type = 0xff;

/// `struct ibv_qp_cap`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub cap: ibv_qp_cap,
    pub qp_type: ibv_qp_type,
    pub sq_sig_all: c_int,
}

/// `enum ibv_qp_init_attr_mask`
pub type ibv_qp_init_attr_mask = u32;
pub const IBV_QP_INIT_ATTR_PD: ibv_qp_init_attr_mask = 1 << 0;
pub const IBV_QP_INIT_ATTR_XRCD: ibv_qp_init_attr_mask = 1 << 1;
pub const IBV_QP_INIT_ATTR_CREATE_FLAGS: ibv_qp_init_attr_mask = 1 << 2;
pub const IBV_QP_INIT_ATTR_MAX_TSO_HEADER: ibv_qp_init_attr_mask = 1 << 3;
pub const IBV_QP_INIT_ATTR_IND_TABLE: ibv_qp_init_attr_mask = 1 << 4;
pub const IBV_QP_INIT_ATTR_RX_HASH: ibv_qp_init_attr_mask = 1 << 5;
pub const IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: ibv_qp_init_attr_mask = 1 << 6;

/// `enum ibv_qp_create_flags`
pub type ibv_qp_create_flags = u32;
pub const IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: ibv_qp_create_flags = 1 << 1;
pub const IBV_QP_CREATE_SCATTER_FCS: ibv_qp_create_flags = 1 << 8;
pub const IBV_QP_CREATE_CVLAN_STRIPPING: ibv_qp_create_flags = 1 << 9;
pub const IBV_QP_CREATE_SOURCE_QPN: ibv_qp_create_flags = 1 << 10;
pub const IBV_QP_CREATE_PCI_WRITE_END_PADDING: ibv_qp_create_flags = 1 << 11;

/// `enum ibv_qp_create_send_ops_flags`
pub type ibv_qp_create_send_ops_flags = u32;
pub const IBV_QP_EX_WITH_RDMA_WRITE: ibv_qp_create_send_ops_flags = 1 << 0;
pub const IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM: ibv_qp_create_send_ops_flags = 1 << 1;
pub const IBV_QP_EX_WITH_SEND: ibv_qp_create_send_ops_flags = 1 << 2;
pub const IBV_QP_EX_WITH_SEND_WITH_IMM: ibv_qp_create_send_ops_flags = 1 << 3;
pub const IBV_QP_EX_WITH_RDMA_READ: ibv_qp_create_send_ops_flags = 1 << 4;
pub const IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP: ibv_qp_create_send_ops_flags = 1 << 5;
pub const IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD: ibv_qp_create_send_ops_flags = 1 << 6;
pub const IBV_QP_EX_WITH_LOCAL_INV: ibv_qp_create_send_ops_flags = 1 << 7;
pub const IBV_QP_EX_WITH_BIND_MW: ibv_qp_create_send_ops_flags = 1 << 8;
pub const IBV_QP_EX_WITH_SEND_WITH_INV: ibv_qp_create_send_ops_flags = 1 << 9;
pub const IBV_QP_EX_WITH_TSO: ibv_qp_create_send_ops_flags = 1 << 10;
pub const IBV_QP_EX_WITH_ATOMIC_WRITE: ibv_qp_create_send_ops_flags = 1 << 12;

/// `struct ibv_rx_hash_conf`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_rx_hash_conf {
    /// An `ibv_rx_hash_function_flags` value.
    pub rx_hash_function: u8,
    pub rx_hash_key_len: u8,
    pub rx_hash_key: *mut u8,
    /// Bits of `ibv_rx_hash_fields`.
    pub rx_hash_fields_mask: u64,
}

/// `struct ibv_qp_init_attr_ex`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_init_attr_ex {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub cap: ibv_qp_cap,
    pub qp_type: ibv_qp_type,
    pub sq_sig_all: c_int,
    /// Bits of `ibv_qp_init_attr_mask`.
    pub comp_mask: u32,
    pub pd: *mut ibv_pd,
    pub xrcd: *mut ibv_xrcd,
    /// Bits of `ibv_qp_create_flags`.
    pub create_flags: u32,
    pub max_tso_header: u16,
    pub rwq_ind_tbl: *mut ibv_rwq_ind_table,
    pub rx_hash_conf: ibv_rx_hash_conf,
    pub source_qpn: u32,
    /// Bits of `ibv_qp_create_send_ops_flags`.
    pub send_ops_flags: u64,
}

/// `enum ibv_qp_open_attr_mask`
pub type ibv_qp_open_attr_mask = u32;
pub const IBV_QP_OPEN_ATTR_NUM: ibv_qp_open_attr_mask = 1 << 0;
pub const IBV_QP_OPEN_ATTR_XRCD: ibv_qp_open_attr_mask = 1 << 1;
pub const IBV_QP_OPEN_ATTR_CONTEXT: ibv_qp_open_attr_mask = 1 << 2;
pub const IBV_QP_OPEN_ATTR_TYPE: ibv_qp_open_attr_mask = 1 << 3;
pub const IBV_QP_OPEN_ATTR_RESERVED: ibv_qp_open_attr_mask = 1 << 4;

/// `struct ibv_qp_open_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_open_attr {
    pub comp_mask: u32,
    pub qp_num: u32,
    pub xrcd: *mut ibv_xrcd,
    pub qp_context: *mut c_void,
    pub qp_type: ibv_qp_type,
}

/// `enum ibv_qp_attr_mask` (bits 21..=24 were never exposed by libibverbs).
pub type ibv_qp_attr_mask = u32;
pub const IBV_QP_STATE: ibv_qp_attr_mask = 1 << 0;
pub const IBV_QP_CUR_STATE: ibv_qp_attr_mask = 1 << 1;
pub const IBV_QP_EN_SQD_ASYNC_NOTIFY: ibv_qp_attr_mask = 1 << 2;
pub const IBV_QP_ACCESS_FLAGS: ibv_qp_attr_mask = 1 << 3;
pub const IBV_QP_PKEY_INDEX: ibv_qp_attr_mask = 1 << 4;
pub const IBV_QP_PORT: ibv_qp_attr_mask = 1 << 5;
pub const IBV_QP_QKEY: ibv_qp_attr_mask = 1 << 6;
pub const IBV_QP_AV: ibv_qp_attr_mask = 1 << 7;
pub const IBV_QP_PATH_MTU: ibv_qp_attr_mask = 1 << 8;
pub const IBV_QP_TIMEOUT: ibv_qp_attr_mask = 1 << 9;
pub const IBV_QP_RETRY_CNT: ibv_qp_attr_mask = 1 << 10;
pub const IBV_QP_RNR_RETRY: ibv_qp_attr_mask = 1 << 11;
pub const IBV_QP_RQ_PSN: ibv_qp_attr_mask = 1 << 12;
pub const IBV_QP_MAX_QP_RD_ATOMIC: ibv_qp_attr_mask = 1 << 13;
pub const IBV_QP_ALT_PATH: ibv_qp_attr_mask = 1 << 14;
pub const IBV_QP_MIN_RNR_TIMER: ibv_qp_attr_mask = 1 << 15;
pub const IBV_QP_SQ_PSN: ibv_qp_attr_mask = 1 << 16;
pub const IBV_QP_MAX_DEST_RD_ATOMIC: ibv_qp_attr_mask = 1 << 17;
pub const IBV_QP_PATH_MIG_STATE: ibv_qp_attr_mask = 1 << 18;
pub const IBV_QP_CAP: ibv_qp_attr_mask = 1 << 19;
pub const IBV_QP_DEST_QPN: ibv_qp_attr_mask = 1 << 20;
pub const IBV_QP_RATE_LIMIT: ibv_qp_attr_mask = 1 << 25;

/// `enum ibv_qp_state`
pub type ibv_qp_state = u32;
pub const IBV_QPS_RESET: ibv_qp_state = 0;
pub const IBV_QPS_INIT: ibv_qp_state = 1;
pub const IBV_QPS_RTR: ibv_qp_state = 2;
pub const IBV_QPS_RTS: ibv_qp_state = 3;
pub const IBV_QPS_SQD: ibv_qp_state = 4;
pub const IBV_QPS_SQE: ibv_qp_state = 5;
pub const IBV_QPS_ERR: ibv_qp_state = 6;
pub const IBV_QPS_UNKNOWN: ibv_qp_state = 7;

/// `enum ibv_mig_state`
pub type ibv_mig_state = u32;
pub const IBV_MIG_MIGRATED: ibv_mig_state = 0;
pub const IBV_MIG_REARM: ibv_mig_state = 1;
pub const IBV_MIG_ARMED: ibv_mig_state = 2;

/// `struct ibv_qp_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_attr {
    pub qp_state: ibv_qp_state,
    pub cur_qp_state: ibv_qp_state,
    pub path_mtu: ibv_mtu,
    pub path_mig_state: ibv_mig_state,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    /// Bits of `ibv_access_flags`.
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

/// `struct ibv_qp_rate_limit_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_rate_limit_attr {
    /// kbps.
    pub rate_limit: u32,
    /// Bytes.
    pub max_burst_sz: u32,
    /// Bytes.
    pub typical_pkt_sz: u16,
    pub comp_mask: u32,
}

// ---------------------------------------------------------------------------
// Work requests
// ---------------------------------------------------------------------------

/// `enum ibv_wr_opcode`
pub type ibv_wr_opcode = u32;
pub const IBV_WR_RDMA_WRITE: ibv_wr_opcode = 0;
pub const IBV_WR_RDMA_WRITE_WITH_IMM: ibv_wr_opcode = 1;
pub const IBV_WR_SEND: ibv_wr_opcode = 2;
pub const IBV_WR_SEND_WITH_IMM: ibv_wr_opcode = 3;
pub const IBV_WR_RDMA_READ: ibv_wr_opcode = 4;
pub const IBV_WR_ATOMIC_CMP_AND_SWP: ibv_wr_opcode = 5;
pub const IBV_WR_ATOMIC_FETCH_AND_ADD: ibv_wr_opcode = 6;
pub const IBV_WR_LOCAL_INV: ibv_wr_opcode = 7;
pub const IBV_WR_BIND_MW: ibv_wr_opcode = 8;
pub const IBV_WR_SEND_WITH_INV: ibv_wr_opcode = 9;
pub const IBV_WR_TSO: ibv_wr_opcode = 10;
pub const IBV_WR_DRIVER1: ibv_wr_opcode = 11;
pub const IBV_WR_ATOMIC_WRITE: ibv_wr_opcode = 15;

/// `enum ibv_send_flags`
pub type ibv_send_flags = u32;
pub const IBV_SEND_FENCE: ibv_send_flags = 1 << 0;
pub const IBV_SEND_SIGNALED: ibv_send_flags = 1 << 1;
pub const IBV_SEND_SOLICITED: ibv_send_flags = 1 << 2;
pub const IBV_SEND_INLINE: ibv_send_flags = 1 << 3;
pub const IBV_SEND_IP_CSUM: ibv_send_flags = 1 << 4;

/// `struct ibv_data_buf`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_data_buf {
    pub addr: *mut c_void,
    pub length: size_t,
}

/// `struct ibv_sge`: scatter/gather element.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `struct ibv_send_wr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: ibv_wr_opcode,
    /// Bits of `ibv_send_flags`.
    pub send_flags: c_uint,
    /// C's anonymous union: `imm_data` / `invalidate_rkey`.
    pub imm: ibv_send_wr_imm,
    pub wr: ibv_send_wr_wr,
    pub qp_type: ibv_send_wr_qp_type,
    /// C's anonymous union: `bind_mw` / `tso`.
    pub bind_mw_tso: ibv_send_wr_bind_mw_tso,
}

/// First anonymous union inside `ibv_send_wr`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_send_wr_imm {
    /// For the `*_WITH_IMM` opcodes; network byte order.
    pub imm_data: u32,
    /// For the `*_INV` opcodes.
    pub invalidate_rkey: u32,
}

/// The tag-less union behind `ibv_send_wr.wr`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_send_wr_wr {
    pub rdma: ibv_send_wr_wr_rdma,
    pub atomic: ibv_send_wr_wr_atomic,
    pub ud: ibv_send_wr_wr_ud,
}

/// The tag-less struct behind `ibv_send_wr.wr.rdma`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr_wr_rdma {
    pub remote_addr: u64,
    pub rkey: u32,
}

/// The tag-less struct behind `ibv_send_wr.wr.atomic`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr_wr_atomic {
    pub remote_addr: u64,
    pub compare_add: u64,
    pub swap: u64,
    pub rkey: u32,
}

/// The tag-less struct behind `ibv_send_wr.wr.ud`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr_wr_ud {
    pub ah: *mut ibv_ah,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
}

/// The tag-less union behind `ibv_send_wr.qp_type`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_send_wr_qp_type {
    pub xrc: ibv_send_wr_qp_type_xrc,
}

/// The tag-less struct behind `ibv_send_wr.qp_type.xrc`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr_qp_type_xrc {
    pub remote_srqn: u32,
}

/// Last anonymous union inside `ibv_send_wr`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_send_wr_bind_mw_tso {
    pub bind_mw: ibv_send_wr_bind_mw,
    pub tso: ibv_send_wr_tso,
}

/// The tag-less struct behind (C) `ibv_send_wr.bind_mw`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr_bind_mw {
    pub mw: *mut ibv_mw,
    pub rkey: u32,
    pub bind_info: ibv_mw_bind_info,
}

/// The tag-less struct behind (C) `ibv_send_wr.tso`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_send_wr_tso {
    pub hdr: *mut c_void,
    pub hdr_sz: u16,
    pub mss: u16,
}

/// `struct ibv_recv_wr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_recv_wr {
    pub wr_id: u64,
    pub next: *mut ibv_recv_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
}

/// `enum ibv_ops_wr_opcode`
pub type ibv_ops_wr_opcode = u32;
pub const IBV_WR_TAG_ADD: ibv_ops_wr_opcode = 0;
pub const IBV_WR_TAG_DEL: ibv_ops_wr_opcode = 1;
pub const IBV_WR_TAG_SYNC: ibv_ops_wr_opcode = 2;

/// `enum ibv_ops_flags`
pub type ibv_ops_flags = u32;
pub const IBV_OPS_SIGNALED: ibv_ops_flags = 1 << 0;
pub const IBV_OPS_TM_SYNC: ibv_ops_flags = 1 << 1;

/// `struct ibv_ops_wr`: tag-matching list operation.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_ops_wr {
    pub wr_id: u64,
    pub next: *mut ibv_ops_wr,
    pub opcode: ibv_ops_wr_opcode,
    pub flags: c_int,
    pub tm: ibv_ops_wr_tm,
}

/// The tag-less struct behind `ibv_ops_wr.tm`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_ops_wr_tm {
    pub unexpected_cnt: u32,
    pub handle: u32,
    pub add: ibv_ops_wr_tm_add,
}

/// The tag-less struct behind `ibv_ops_wr.tm.add`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_ops_wr_tm_add {
    pub recv_wr_id: u64,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub tag: u64,
    pub mask: u64,
}

/// `struct ibv_mw_bind`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_mw_bind {
    pub wr_id: u64,
    /// Bits of `ibv_send_flags`.
    pub send_flags: c_uint,
    pub bind_info: ibv_mw_bind_info,
}

// ---------------------------------------------------------------------------
// SRQ, WQ, QP objects
// ---------------------------------------------------------------------------

/// `struct ibv_srq`: shared receive queue.
#[repr(C)]
pub struct ibv_srq {
    pub context: *mut ibv_context,
    pub srq_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub handle: u32,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub events_completed: u32,
}

/// `struct ibv_wq`: work queue.
#[repr(C)]
pub struct ibv_wq {
    pub context: *mut ibv_context,
    pub wq_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub cq: *mut ibv_cq,
    pub wq_num: u32,
    pub handle: u32,
    pub state: ibv_wq_state,
    pub wq_type: ibv_wq_type,
    pub post_recv: Option<
        unsafe extern "C" fn(
            current: *mut ibv_wq,
            recv_wr: *mut ibv_recv_wr,
            bad_recv_wr: *mut *mut ibv_recv_wr,
        ) -> c_int,
    >,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub events_completed: u32,
    pub comp_mask: u32,
}

/// `struct ibv_qp`: queue pair.
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub handle: u32,
    pub qp_num: u32,
    pub state: ibv_qp_state,
    pub qp_type: ibv_qp_type,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub events_completed: u32,
}

/// `struct ibv_qp_ex`: a QP with the "new post-send" work-request builders.
#[repr(C)]
pub struct ibv_qp_ex {
    pub qp_base: ibv_qp,
    pub comp_mask: u64,
    pub wr_id: u64,
    /// Bits of `ibv_send_flags`.
    pub wr_flags: c_uint,
    pub wr_atomic_cmp_swp:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64, compare: u64, swap: u64)>,
    pub wr_atomic_fetch_add: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64, add: u64)>,
    pub wr_bind_mw: Option<
        unsafe extern "C" fn(qp: *mut ibv_qp_ex, mw: *mut ibv_mw, rkey: u32, bind_info: *const ibv_mw_bind_info),
    >,
    pub wr_local_inv: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, invalidate_rkey: u32)>,
    pub wr_rdma_read: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64)>,
    pub wr_rdma_write: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64)>,
    pub wr_rdma_write_imm: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64, imm_data: u32)>,
    pub wr_send: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex)>,
    pub wr_send_imm: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, imm_data: u32)>,
    pub wr_send_inv: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, invalidate_rkey: u32)>,
    pub wr_send_tso: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, hdr: *mut c_void, hdr_sz: u16, mss: u16)>,
    pub wr_set_ud_addr:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, ah: *mut ibv_ah, remote_qpn: u32, remote_qkey: u32)>,
    pub wr_set_xrc_srqn: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, remote_srqn: u32)>,
    pub wr_set_inline_data: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, addr: *mut c_void, length: size_t)>,
    pub wr_set_inline_data_list:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, num_buf: size_t, buf_list: *const ibv_data_buf)>,
    pub wr_set_sge: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, lkey: u32, addr: u64, length: u32)>,
    pub wr_set_sge_list: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, num_sge: size_t, sg_list: *const ibv_sge)>,
    pub wr_start: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex)>,
    pub wr_complete: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex) -> c_int>,
    pub wr_abort: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex)>,
    pub wr_atomic_write:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64, atomic_wr: *const c_void)>,
}

/// `struct ibv_ece`: enhanced connection establishment options.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_ece {
    /// IEEE OUI of the provider's vendor.
    pub vendor_id: u32,
    pub options: u32,
    pub comp_mask: u32,
}

// ---------------------------------------------------------------------------
// Completion channels and CQs
// ---------------------------------------------------------------------------

/// `struct ibv_comp_channel`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_comp_channel {
    pub context: *mut ibv_context,
    pub fd: c_int,
    pub refcnt: c_int,
}

/// `struct ibv_cq`: completion queue.
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
}

/// `struct ibv_poll_cq_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_poll_cq_attr {
    pub comp_mask: u32,
}

/// `struct ibv_wc_tm_info`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_wc_tm_info {
    /// Tag from the tag-matching header.
    pub tag: u64,
    /// Opaque user data from the tag-matching header.
    pub r#priv: u32,
}

/// `struct ibv_cq_ex`: a CQ polled through the `start_poll`/`read_*` hooks.
/// Starts with the same fields as `ibv_cq`.
#[repr(C)]
pub struct ibv_cq_ex {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
    pub comp_mask: u32,
    pub status: ibv_wc_status,
    pub wr_id: u64,
    pub start_poll: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex, attr: *mut ibv_poll_cq_attr) -> c_int>,
    pub next_poll: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> c_int>,
    pub end_poll: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex)>,
    pub read_opcode: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> ibv_wc_opcode>,
    pub read_vendor_err: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_byte_len: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    /// Returns network byte order.
    pub read_imm_data: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_qp_num: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_src_qp: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_wc_flags: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> c_uint>,
    pub read_slid: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_sl: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u8>,
    pub read_dlid_path_bits: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u8>,
    pub read_completion_ts: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u64>,
    pub read_cvlan: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u16>,
    pub read_flow_tag: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_tm_info: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex, tm_info: *mut ibv_wc_tm_info)>,
    pub read_completion_wallclock_ns: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u64>,
}

/// `enum ibv_cq_attr_mask`
pub type ibv_cq_attr_mask = u32;
pub const IBV_CQ_ATTR_MODERATE: ibv_cq_attr_mask = 1 << 0;
pub const IBV_CQ_ATTR_RESERVED: ibv_cq_attr_mask = 1 << 1;

/// `struct ibv_moderate_cq`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_moderate_cq {
    pub cq_count: u16,
    /// Microseconds.
    pub cq_period: u16,
}

/// `struct ibv_modify_cq_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_modify_cq_attr {
    /// Bits of `ibv_cq_attr_mask`.
    pub attr_mask: u32,
    pub moderate: ibv_moderate_cq,
}

/// `struct ibv_ah`: address handle.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_ah {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub handle: u32,
}

// ---------------------------------------------------------------------------
// Flow steering
// ---------------------------------------------------------------------------

/// `enum ibv_flow_flags` (bit 0 is obsolete).
pub type ibv_flow_flags = u32;
pub const IBV_FLOW_ATTR_FLAGS_DONT_TRAP: ibv_flow_flags = 1 << 1;
pub const IBV_FLOW_ATTR_FLAGS_EGRESS: ibv_flow_flags = 1 << 2;

/// `enum ibv_flow_attr_type`
pub type ibv_flow_attr_type = u32;
pub const IBV_FLOW_ATTR_NORMAL: ibv_flow_attr_type = 0x0;
pub const IBV_FLOW_ATTR_ALL_DEFAULT: ibv_flow_attr_type = 0x1;
pub const IBV_FLOW_ATTR_MC_DEFAULT: ibv_flow_attr_type = 0x2;
pub const IBV_FLOW_ATTR_SNIFFER: ibv_flow_attr_type = 0x3;

/// `enum ibv_flow_spec_type`
pub type ibv_flow_spec_type = u32;
pub const IBV_FLOW_SPEC_ETH: ibv_flow_spec_type = 0x20;
pub const IBV_FLOW_SPEC_IPV4: ibv_flow_spec_type = 0x30;
pub const IBV_FLOW_SPEC_IPV6: ibv_flow_spec_type = 0x31;
pub const IBV_FLOW_SPEC_IPV4_EXT: ibv_flow_spec_type = 0x32;
pub const IBV_FLOW_SPEC_ESP: ibv_flow_spec_type = 0x34;
pub const IBV_FLOW_SPEC_TCP: ibv_flow_spec_type = 0x40;
pub const IBV_FLOW_SPEC_UDP: ibv_flow_spec_type = 0x41;
pub const IBV_FLOW_SPEC_VXLAN_TUNNEL: ibv_flow_spec_type = 0x50;
pub const IBV_FLOW_SPEC_GRE: ibv_flow_spec_type = 0x51;
pub const IBV_FLOW_SPEC_MPLS: ibv_flow_spec_type = 0x60;
pub const IBV_FLOW_SPEC_INNER: ibv_flow_spec_type = 0x100;
pub const IBV_FLOW_SPEC_ACTION_TAG: ibv_flow_spec_type = 0x1000;
pub const IBV_FLOW_SPEC_ACTION_DROP: ibv_flow_spec_type = 0x1001;
pub const IBV_FLOW_SPEC_ACTION_HANDLE: ibv_flow_spec_type = 0x1002;
pub const IBV_FLOW_SPEC_ACTION_COUNT: ibv_flow_spec_type = 0x1003;

/// `struct ibv_flow_eth_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_eth_filter {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub ether_type: u16,
    /// 802.1Q TCI: priority (3 bits), CFI (1), VLAN id (12).
    pub vlan_tag: u16,
}

/// `struct ibv_flow_spec_eth`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_eth {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_eth_filter,
    pub mask: ibv_flow_eth_filter,
}

/// `struct ibv_flow_ipv4_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_ipv4_filter {
    pub src_ip: u32,
    pub dst_ip: u32,
}

/// `struct ibv_flow_spec_ipv4`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_ipv4 {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_ipv4_filter,
    pub mask: ibv_flow_ipv4_filter,
}

/// `struct ibv_flow_ipv4_ext_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_ipv4_ext_filter {
    pub src_ip: u32,
    pub dst_ip: u32,
    pub proto: u8,
    pub tos: u8,
    pub ttl: u8,
    pub flags: u8,
}

/// `struct ibv_flow_spec_ipv4_ext`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_ipv4_ext {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_ipv4_ext_filter,
    pub mask: ibv_flow_ipv4_ext_filter,
}

/// `struct ibv_flow_ipv6_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_ipv6_filter {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub flow_label: u32,
    pub next_hdr: u8,
    pub traffic_class: u8,
    pub hop_limit: u8,
}

/// `struct ibv_flow_spec_ipv6`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_ipv6 {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_ipv6_filter,
    pub mask: ibv_flow_ipv6_filter,
}

/// `struct ibv_flow_esp_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_esp_filter {
    pub spi: u32,
    pub seq: u32,
}

/// `struct ibv_flow_spec_esp`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_esp {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_esp_filter,
    pub mask: ibv_flow_esp_filter,
}

/// `struct ibv_flow_tcp_udp_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_tcp_udp_filter {
    pub dst_port: u16,
    pub src_port: u16,
}

/// `struct ibv_flow_spec_tcp_udp`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_tcp_udp {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_tcp_udp_filter,
    pub mask: ibv_flow_tcp_udp_filter,
}

/// `struct ibv_flow_gre_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_gre_filter {
    /// First 16 bits of the GRE header: C, K, S bits and the version.
    pub c_ks_res0_ver: u16,
    pub protocol: u16,
    pub key: u32,
}

/// `struct ibv_flow_spec_gre`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_gre {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_gre_filter,
    pub mask: ibv_flow_gre_filter,
}

/// `struct ibv_flow_mpls_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_mpls_filter {
    /// Whole label entry: label (20 bits), TC (3), S (1), TTL (8).
    pub label: u32,
}

/// `struct ibv_flow_spec_mpls`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_mpls {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_mpls_filter,
    pub mask: ibv_flow_mpls_filter,
}

/// `struct ibv_flow_tunnel_filter`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_tunnel_filter {
    pub tunnel_id: u32,
}

/// `struct ibv_flow_spec_tunnel`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_tunnel {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub val: ibv_flow_tunnel_filter,
    pub mask: ibv_flow_tunnel_filter,
}

/// `struct ibv_flow_spec_action_tag`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_action_tag {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub tag_id: u32,
}

/// `struct ibv_flow_spec_action_drop`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_action_drop {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
}

/// `struct ibv_flow_spec_action_handle`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_action_handle {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub action: *const ibv_flow_action,
}

/// `struct ibv_flow_spec_counter_action`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_counter_action {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
    pub counters: *mut ibv_counters,
}

/// `struct ibv_flow_spec`: any one flow specification.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec {
    /// C's anonymous union (its members are reached directly in C).
    pub u: ibv_flow_spec_u,
}

/// The anonymous union that makes up `ibv_flow_spec`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_flow_spec_u {
    pub hdr: ibv_flow_spec_hdr,
    pub eth: ibv_flow_spec_eth,
    pub ipv4: ibv_flow_spec_ipv4,
    pub tcp_udp: ibv_flow_spec_tcp_udp,
    pub ipv4_ext: ibv_flow_spec_ipv4_ext,
    pub ipv6: ibv_flow_spec_ipv6,
    pub esp: ibv_flow_spec_esp,
    pub tunnel: ibv_flow_spec_tunnel,
    pub gre: ibv_flow_spec_gre,
    pub mpls: ibv_flow_spec_mpls,
    pub flow_tag: ibv_flow_spec_action_tag,
    pub drop: ibv_flow_spec_action_drop,
    pub handle: ibv_flow_spec_action_handle,
    pub flow_count: ibv_flow_spec_counter_action,
}

/// The tag-less struct behind (C) `ibv_flow_spec.hdr`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_spec_hdr {
    pub r#type: ibv_flow_spec_type,
    pub size: u16,
}

/// `struct ibv_flow_attr`; `num_of_specs` specs follow it in memory.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_attr {
    pub comp_mask: u32,
    pub r#type: ibv_flow_attr_type,
    pub size: u16,
    pub priority: u16,
    pub num_of_specs: u8,
    pub port: u8,
    /// Bits of `ibv_flow_flags`.
    pub flags: u32,
}

/// `struct ibv_flow`: a steering rule.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow {
    pub comp_mask: u32,
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `struct ibv_flow_action`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_action {
    pub context: *mut ibv_context,
}

/// `enum ibv_flow_action_esp_mask`
pub type ibv_flow_action_esp_mask = u32;
pub const IBV_FLOW_ACTION_ESP_MASK_ESN: ibv_flow_action_esp_mask = 1 << 0;

/// `struct ibv_flow_action_esp_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_flow_action_esp_attr {
    pub esp_attr: *mut ibv_flow_action_esp,
    pub keymat_proto: ibv_flow_action_esp_keymat,
    pub keymat_len: u16,
    pub keymat_ptr: *mut c_void,
    pub replay_proto: ibv_flow_action_esp_replay,
    pub replay_len: u16,
    pub replay_ptr: *mut c_void,
    pub esp_encap: *mut ibv_flow_action_esp_encap,
    /// Bits of `ibv_flow_action_esp_mask`.
    pub comp_mask: u32,
    pub esn: u32,
}

// ---------------------------------------------------------------------------
// Device, context and the context op tables
// ---------------------------------------------------------------------------

/// `struct _ibv_device_ops`: obsolete, kept only for its size.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct _ibv_device_ops {
    pub _dummy1: Option<unsafe extern "C" fn(device: *mut ibv_device, cmd_fd: c_int) -> *mut ibv_context>,
    pub _dummy2: Option<unsafe extern "C" fn(context: *mut ibv_context)>,
}

// Tag-less enum: sysfs string sizes.
pub const IBV_SYSFS_NAME_MAX: u32 = 64;
pub const IBV_SYSFS_PATH_MAX: u32 = 256;

/// `struct ibv_device`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_device {
    pub _ops: _ibv_device_ops,
    pub node_type: ibv_node_type,
    pub transport_type: ibv_transport_type,
    /// Kernel IB device name, e.g. `mlx5_0`.
    pub name: [c_char; IBV_SYSFS_NAME_MAX as usize],
    /// uverbs char-device name, e.g. `uverbs0`.
    pub dev_name: [c_char; IBV_SYSFS_NAME_MAX as usize],
    /// sysfs path of the `infiniband_verbs` class device.
    pub dev_path: [c_char; IBV_SYSFS_PATH_MAX as usize],
    /// sysfs path of the `infiniband` class device.
    pub ibdev_path: [c_char; IBV_SYSFS_PATH_MAX as usize],
}

/// `struct _compat_ibv_port_attr`: declared but never defined by `verbs.h`
/// (only pointers to it exist).
#[repr(C)]
pub struct _compat_ibv_port_attr {
    _opaque: [u8; 0],
}

/// A `void *(*)(void)` placeholder slot of `ibv_context_ops`.
pub type ibv_compat_op_fn = Option<unsafe extern "C" fn() -> *mut c_void>;

/// `struct ibv_context_ops`: the legacy op table inside `ibv_context`.
/// The `_compat_*` slots are unused placeholders.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_context_ops {
    pub _compat_query_device:
        Option<unsafe extern "C" fn(context: *mut ibv_context, device_attr: *mut ibv_device_attr) -> c_int>,
    pub _compat_query_port: Option<
        unsafe extern "C" fn(context: *mut ibv_context, port_num: u8, port_attr: *mut _compat_ibv_port_attr) -> c_int,
    >,
    pub _compat_alloc_pd: ibv_compat_op_fn,
    pub _compat_dealloc_pd: ibv_compat_op_fn,
    pub _compat_reg_mr: ibv_compat_op_fn,
    pub _compat_rereg_mr: ibv_compat_op_fn,
    pub _compat_dereg_mr: ibv_compat_op_fn,
    pub alloc_mw: Option<unsafe extern "C" fn(pd: *mut ibv_pd, r#type: ibv_mw_type) -> *mut ibv_mw>,
    pub bind_mw: Option<unsafe extern "C" fn(qp: *mut ibv_qp, mw: *mut ibv_mw, mw_bind: *mut ibv_mw_bind) -> c_int>,
    pub dealloc_mw: Option<unsafe extern "C" fn(mw: *mut ibv_mw) -> c_int>,
    pub _compat_create_cq: ibv_compat_op_fn,
    pub poll_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq, num_entries: c_int, wc: *mut ibv_wc) -> c_int>,
    pub req_notify_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq, solicited_only: c_int) -> c_int>,
    pub _compat_cq_event: ibv_compat_op_fn,
    pub _compat_resize_cq: ibv_compat_op_fn,
    pub _compat_destroy_cq: ibv_compat_op_fn,
    pub _compat_create_srq: ibv_compat_op_fn,
    pub _compat_modify_srq: ibv_compat_op_fn,
    pub _compat_query_srq: ibv_compat_op_fn,
    pub _compat_destroy_srq: ibv_compat_op_fn,
    pub post_srq_recv: Option<
        unsafe extern "C" fn(srq: *mut ibv_srq, recv_wr: *mut ibv_recv_wr, bad_recv_wr: *mut *mut ibv_recv_wr) -> c_int,
    >,
    pub _compat_create_qp: ibv_compat_op_fn,
    pub _compat_query_qp: ibv_compat_op_fn,
    pub _compat_modify_qp: ibv_compat_op_fn,
    pub _compat_destroy_qp: ibv_compat_op_fn,
    pub post_send:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int>,
    pub post_recv:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int>,
    pub _compat_create_ah: ibv_compat_op_fn,
    pub _compat_destroy_ah: ibv_compat_op_fn,
    pub _compat_attach_mcast: ibv_compat_op_fn,
    pub _compat_detach_mcast: ibv_compat_op_fn,
    pub _compat_async_event: ibv_compat_op_fn,
}

/// `struct ibv_context`: an open device.
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
    pub mutex: pthread_mutex_t,
    /// `__VERBS_ABI_IS_EXTENDED` when this context lives in a `verbs_context`.
    pub abi_compat: *mut c_void,
}

/// `enum ibv_cq_init_attr_mask`
pub type ibv_cq_init_attr_mask = u32;
pub const IBV_CQ_INIT_ATTR_MASK_FLAGS: ibv_cq_init_attr_mask = 1 << 0;
pub const IBV_CQ_INIT_ATTR_MASK_PD: ibv_cq_init_attr_mask = 1 << 1;

/// `enum ibv_create_cq_attr_flags`
pub type ibv_create_cq_attr_flags = u32;
pub const IBV_CREATE_CQ_ATTR_SINGLE_THREADED: ibv_create_cq_attr_flags = 1 << 0;
pub const IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: ibv_create_cq_attr_flags = 1 << 1;

/// `struct ibv_cq_init_attr_ex`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_cq_init_attr_ex {
    /// Minimum number of entries.
    pub cqe: u32,
    pub cq_context: *mut c_void,
    /// May be NULL.
    pub channel: *mut ibv_comp_channel,
    /// Below `ibv_context.num_comp_vectors`.
    pub comp_vector: u32,
    /// Bits of `ibv_create_cq_wc_flags`.
    pub wc_flags: u64,
    /// Bits of `ibv_cq_init_attr_mask`.
    pub comp_mask: u32,
    /// Bits of `ibv_create_cq_attr_flags`.
    pub flags: u32,
    pub parent_domain: *mut ibv_pd,
}

/// `enum ibv_parent_domain_init_attr_mask`
pub type ibv_parent_domain_init_attr_mask = u32;
pub const IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS: ibv_parent_domain_init_attr_mask = 1 << 0;
pub const IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT: ibv_parent_domain_init_attr_mask = 1 << 1;

/// `IBV_ALLOCATOR_USE_DEFAULT`: what a custom parent-domain allocator returns
/// to ask for the provider's default allocation.
pub const IBV_ALLOCATOR_USE_DEFAULT: *mut c_void = usize::MAX as *mut c_void;

/// `struct ibv_parent_domain_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_parent_domain_init_attr {
    /// Must not be NULL.
    pub pd: *mut ibv_pd,
    /// May be NULL.
    pub td: *mut ibv_td,
    pub comp_mask: u32,
    pub alloc: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            pd_context: *mut c_void,
            size: size_t,
            alignment: size_t,
            resource_type: u64,
        ) -> *mut c_void,
    >,
    pub free:
        Option<unsafe extern "C" fn(pd: *mut ibv_pd, pd_context: *mut c_void, ptr: *mut c_void, resource_type: u64)>,
    pub pd_context: *mut c_void,
}

/// `struct ibv_counters_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_counters_init_attr {
    pub comp_mask: u32,
}

/// `struct ibv_counters`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_counters {
    pub context: *mut ibv_context,
}

/// `enum ibv_counter_description`
pub type ibv_counter_description = u32;
pub const IBV_COUNTER_PACKETS: ibv_counter_description = 0;
pub const IBV_COUNTER_BYTES: ibv_counter_description = 1;

/// `struct ibv_counter_attach_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_counter_attach_attr {
    pub counter_desc: ibv_counter_description,
    /// Slot of the counter inside the counters object.
    pub index: u32,
    pub comp_mask: u32,
}

/// `enum ibv_read_counters_flags`
pub type ibv_read_counters_flags = u32;
pub const IBV_READ_COUNTERS_ATTR_PREFER_CACHED: ibv_read_counters_flags = 1 << 0;

/// `enum ibv_values_mask`
pub type ibv_values_mask = u32;
pub const IBV_VALUES_MASK_RAW_CLOCK: ibv_values_mask = 1 << 0;
pub const IBV_VALUES_MASK_RESERVED: ibv_values_mask = 1 << 1;

/// `struct ibv_values_ex`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_values_ex {
    /// Bits of `ibv_values_mask`.
    pub comp_mask: u32,
    pub raw_clock: timespec,
}

/// `struct verbs_ex_private`: library-private, only pointed to.
#[repr(C)]
pub struct verbs_ex_private {
    _opaque: [u8; 0],
}

/// `struct verbs_context`: the extended op table that precedes an
/// `ibv_context` in memory.  New ops are added at the top, so `sz` (the size
/// from a given field to the end) tells which ops a provider knows.
#[repr(C)]
pub struct verbs_context {
    pub query_port: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            port_num: u8,
            port_attr: *mut ibv_port_attr,
            port_attr_len: size_t,
        ) -> c_int,
    >,
    pub advise_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            advice: ibv_advise_mr_advice,
            flags: u32,
            sg_list: *mut ibv_sge,
            num_sges: u32,
        ) -> c_int,
    >,
    pub alloc_null_mr: Option<unsafe extern "C" fn(pd: *mut ibv_pd) -> *mut ibv_mr>,
    pub read_counters: Option<
        unsafe extern "C" fn(
            counters: *mut ibv_counters,
            counters_value: *mut u64,
            ncounters: u32,
            flags: u32,
        ) -> c_int,
    >,
    pub attach_counters_point_flow: Option<
        unsafe extern "C" fn(
            counters: *mut ibv_counters,
            attr: *mut ibv_counter_attach_attr,
            flow: *mut ibv_flow,
        ) -> c_int,
    >,
    pub create_counters: Option<
        unsafe extern "C" fn(context: *mut ibv_context, init_attr: *mut ibv_counters_init_attr) -> *mut ibv_counters,
    >,
    pub destroy_counters: Option<unsafe extern "C" fn(counters: *mut ibv_counters) -> c_int>,
    pub reg_dm_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            dm: *mut ibv_dm,
            dm_offset: u64,
            length: size_t,
            access: c_uint,
        ) -> *mut ibv_mr,
    >,
    pub alloc_dm: Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_alloc_dm_attr) -> *mut ibv_dm>,
    pub free_dm: Option<unsafe extern "C" fn(dm: *mut ibv_dm) -> c_int>,
    pub modify_flow_action_esp:
        Option<unsafe extern "C" fn(action: *mut ibv_flow_action, attr: *mut ibv_flow_action_esp_attr) -> c_int>,
    pub destroy_flow_action: Option<unsafe extern "C" fn(action: *mut ibv_flow_action) -> c_int>,
    pub create_flow_action_esp: Option<
        unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_flow_action_esp_attr) -> *mut ibv_flow_action,
    >,
    pub modify_qp_rate_limit: Option<unsafe extern "C" fn(qp: *mut ibv_qp, attr: *mut ibv_qp_rate_limit_attr) -> c_int>,
    pub alloc_parent_domain:
        Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_parent_domain_init_attr) -> *mut ibv_pd>,
    pub dealloc_td: Option<unsafe extern "C" fn(td: *mut ibv_td) -> c_int>,
    pub alloc_td:
        Option<unsafe extern "C" fn(context: *mut ibv_context, init_attr: *mut ibv_td_init_attr) -> *mut ibv_td>,
    pub modify_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq, attr: *mut ibv_modify_cq_attr) -> c_int>,
    pub post_srq_ops:
        Option<unsafe extern "C" fn(srq: *mut ibv_srq, op: *mut ibv_ops_wr, bad_op: *mut *mut ibv_ops_wr) -> c_int>,
    pub destroy_rwq_ind_table: Option<unsafe extern "C" fn(rwq_ind_table: *mut ibv_rwq_ind_table) -> c_int>,
    pub create_rwq_ind_table: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            init_attr: *mut ibv_rwq_ind_table_init_attr,
        ) -> *mut ibv_rwq_ind_table,
    >,
    pub destroy_wq: Option<unsafe extern "C" fn(wq: *mut ibv_wq) -> c_int>,
    pub modify_wq: Option<unsafe extern "C" fn(wq: *mut ibv_wq, wq_attr: *mut ibv_wq_attr) -> c_int>,
    pub create_wq:
        Option<unsafe extern "C" fn(context: *mut ibv_context, wq_init_attr: *mut ibv_wq_init_attr) -> *mut ibv_wq>,
    pub query_rt_values: Option<unsafe extern "C" fn(context: *mut ibv_context, values: *mut ibv_values_ex) -> c_int>,
    pub create_cq_ex:
        Option<unsafe extern "C" fn(context: *mut ibv_context, init_attr: *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex>,
    pub r#priv: *mut verbs_ex_private,
    pub query_device_ex: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            input: *const ibv_query_device_ex_input,
            attr: *mut ibv_device_attr_ex,
            attr_size: size_t,
        ) -> c_int,
    >,
    pub ibv_destroy_flow: Option<unsafe extern "C" fn(flow: *mut ibv_flow) -> c_int>,
    /// Unused slot.
    pub ABI_placeholder2: Option<unsafe extern "C" fn()>,
    pub ibv_create_flow: Option<unsafe extern "C" fn(qp: *mut ibv_qp, flow_attr: *mut ibv_flow_attr) -> *mut ibv_flow>,
    /// Unused slot.
    pub ABI_placeholder1: Option<unsafe extern "C" fn()>,
    pub open_qp: Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_qp_open_attr) -> *mut ibv_qp>,
    pub create_qp_ex: Option<
        unsafe extern "C" fn(context: *mut ibv_context, qp_init_attr_ex: *mut ibv_qp_init_attr_ex) -> *mut ibv_qp,
    >,
    pub get_srq_num: Option<unsafe extern "C" fn(srq: *mut ibv_srq, srq_num: *mut u32) -> c_int>,
    pub create_srq_ex: Option<
        unsafe extern "C" fn(context: *mut ibv_context, srq_init_attr_ex: *mut ibv_srq_init_attr_ex) -> *mut ibv_srq,
    >,
    pub open_xrcd: Option<
        unsafe extern "C" fn(context: *mut ibv_context, xrcd_init_attr: *mut ibv_xrcd_init_attr) -> *mut ibv_xrcd,
    >,
    pub close_xrcd: Option<unsafe extern "C" fn(xrcd: *mut ibv_xrcd) -> c_int>,
    /// Unused slot.
    pub _ABI_placeholder3: u64,
    /// Bytes from the start of the part the provider knows up to the end of
    /// `context`; must sit right before `context`.
    pub sz: size_t,
    /// Must be the last field.
    pub context: ibv_context,
}

// ---------------------------------------------------------------------------
// Results and helpers declared after the op tables
// ---------------------------------------------------------------------------

/// `enum ibv_rereg_mr_err_code` (all negative, hence `i32`).
pub type ibv_rereg_mr_err_code = i32;
pub const IBV_REREG_MR_ERR_INPUT: ibv_rereg_mr_err_code = -1;
pub const IBV_REREG_MR_ERR_DONT_FORK_NEW: ibv_rereg_mr_err_code = -2;
pub const IBV_REREG_MR_ERR_DO_FORK_OLD: ibv_rereg_mr_err_code = -3;
pub const IBV_REREG_MR_ERR_CMD: ibv_rereg_mr_err_code = -4;
pub const IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW: ibv_rereg_mr_err_code = -5;

/// `ETHERNET_LL_SIZE`: bytes of a MAC address (`ibv_resolve_eth_l2_from_gid`).
pub const ETHERNET_LL_SIZE: usize = 6;

/// Lowest UDP source port RoCEv2 uses (`ibv_flow_label_to_udp_sport`).
pub const IB_ROCE_UDP_ENCAP_VALID_PORT_MIN: u16 = 0xC000;
/// Highest UDP source port RoCEv2 uses.
pub const IB_ROCE_UDP_ENCAP_VALID_PORT_MAX: u16 = 0xFFFF;
/// The 20 bits of a GRH flow label.
pub const IB_GRH_FLOWLABEL_MASK: u32 = 0x000F_FFFF;

// ---------------------------------------------------------------------------
// From <rdma/ib_user_ioctl_verbs.h>, and the ibv_* names verbs_api.h gives
// them.
// ---------------------------------------------------------------------------

/// `IB_UVERBS_ACCESS_OPTIONAL_FIRST`: lowest "optional" access bit.
pub const IB_UVERBS_ACCESS_OPTIONAL_FIRST: u32 = 1 << 20;
/// `IB_UVERBS_ACCESS_OPTIONAL_LAST`: highest "optional" access bit.
pub const IB_UVERBS_ACCESS_OPTIONAL_LAST: u32 = 1 << 29;

/// `enum ib_uverbs_core_support`
pub type ib_uverbs_core_support = u32;
pub const IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS: ib_uverbs_core_support = 1 << 0;

/// `enum ib_uverbs_access_flags`
pub type ib_uverbs_access_flags = u32;
pub const IB_UVERBS_ACCESS_LOCAL_WRITE: ib_uverbs_access_flags = 1 << 0;
pub const IB_UVERBS_ACCESS_REMOTE_WRITE: ib_uverbs_access_flags = 1 << 1;
pub const IB_UVERBS_ACCESS_REMOTE_READ: ib_uverbs_access_flags = 1 << 2;
pub const IB_UVERBS_ACCESS_REMOTE_ATOMIC: ib_uverbs_access_flags = 1 << 3;
pub const IB_UVERBS_ACCESS_MW_BIND: ib_uverbs_access_flags = 1 << 4;
pub const IB_UVERBS_ACCESS_ZERO_BASED: ib_uverbs_access_flags = 1 << 5;
pub const IB_UVERBS_ACCESS_ON_DEMAND: ib_uverbs_access_flags = 1 << 6;
pub const IB_UVERBS_ACCESS_HUGETLB: ib_uverbs_access_flags = 1 << 7;
pub const IB_UVERBS_ACCESS_RELAXED_ORDERING: ib_uverbs_access_flags = IB_UVERBS_ACCESS_OPTIONAL_FIRST;
/// Every bit from `..._OPTIONAL_FIRST` through `..._OPTIONAL_LAST`.
pub const IB_UVERBS_ACCESS_OPTIONAL_RANGE: ib_uverbs_access_flags =
    ((IB_UVERBS_ACCESS_OPTIONAL_LAST << 1) - 1) & !(IB_UVERBS_ACCESS_OPTIONAL_FIRST - 1);

/// `enum ib_uverbs_srq_type`
pub type ib_uverbs_srq_type = u32;
pub const IB_UVERBS_SRQT_BASIC: ib_uverbs_srq_type = 0;
pub const IB_UVERBS_SRQT_XRC: ib_uverbs_srq_type = 1;
pub const IB_UVERBS_SRQT_TM: ib_uverbs_srq_type = 2;

/// `enum ib_uverbs_wq_type`
pub type ib_uverbs_wq_type = u32;
pub const IB_UVERBS_WQT_RQ: ib_uverbs_wq_type = 0;

/// `enum ib_uverbs_wq_flags`
pub type ib_uverbs_wq_flags = u32;
pub const IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING: ib_uverbs_wq_flags = 1 << 0;
pub const IB_UVERBS_WQ_FLAGS_SCATTER_FCS: ib_uverbs_wq_flags = 1 << 1;
pub const IB_UVERBS_WQ_FLAGS_DELAY_DROP: ib_uverbs_wq_flags = 1 << 2;
pub const IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING: ib_uverbs_wq_flags = 1 << 3;

/// `enum ib_uverbs_qp_type`
pub type ib_uverbs_qp_type = u32;
pub const IB_UVERBS_QPT_RC: ib_uverbs_qp_type = 2;
pub const IB_UVERBS_QPT_UC: ib_uverbs_qp_type = 3;
pub const IB_UVERBS_QPT_UD: ib_uverbs_qp_type = 4;
pub const IB_UVERBS_QPT_RAW_PACKET: ib_uverbs_qp_type = 8;
pub const IB_UVERBS_QPT_XRC_INI: ib_uverbs_qp_type = 9;
pub const IB_UVERBS_QPT_XRC_TGT: ib_uverbs_qp_type = 10;
pub const IB_UVERBS_QPT_DRIVER: ib_uverbs_qp_type = 0xFF;

/// `enum ib_uverbs_qp_create_flags`
pub type ib_uverbs_qp_create_flags = u32;
pub const IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK: ib_uverbs_qp_create_flags = 1 << 1;
pub const IB_UVERBS_QP_CREATE_SCATTER_FCS: ib_uverbs_qp_create_flags = 1 << 8;
pub const IB_UVERBS_QP_CREATE_CVLAN_STRIPPING: ib_uverbs_qp_create_flags = 1 << 9;
pub const IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING: ib_uverbs_qp_create_flags = 1 << 11;
pub const IB_UVERBS_QP_CREATE_SQ_SIG_ALL: ib_uverbs_qp_create_flags = 1 << 12;

/// `enum ib_uverbs_query_port_cap_flags`
pub type ib_uverbs_query_port_cap_flags = u32;
pub const IB_UVERBS_PCF_SM: ib_uverbs_query_port_cap_flags = 1 << 1;
pub const IB_UVERBS_PCF_NOTICE_SUP: ib_uverbs_query_port_cap_flags = 1 << 2;
pub const IB_UVERBS_PCF_TRAP_SUP: ib_uverbs_query_port_cap_flags = 1 << 3;
pub const IB_UVERBS_PCF_OPT_IPD_SUP: ib_uverbs_query_port_cap_flags = 1 << 4;
pub const IB_UVERBS_PCF_AUTO_MIGR_SUP: ib_uverbs_query_port_cap_flags = 1 << 5;
pub const IB_UVERBS_PCF_SL_MAP_SUP: ib_uverbs_query_port_cap_flags = 1 << 6;
pub const IB_UVERBS_PCF_MKEY_NVRAM: ib_uverbs_query_port_cap_flags = 1 << 7;
pub const IB_UVERBS_PCF_PKEY_NVRAM: ib_uverbs_query_port_cap_flags = 1 << 8;
pub const IB_UVERBS_PCF_LED_INFO_SUP: ib_uverbs_query_port_cap_flags = 1 << 9;
pub const IB_UVERBS_PCF_SM_DISABLED: ib_uverbs_query_port_cap_flags = 1 << 10;
pub const IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP: ib_uverbs_query_port_cap_flags = 1 << 11;
pub const IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP: ib_uverbs_query_port_cap_flags = 1 << 12;
pub const IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP: ib_uverbs_query_port_cap_flags = 1 << 14;
pub const IB_UVERBS_PCF_CM_SUP: ib_uverbs_query_port_cap_flags = 1 << 16;
pub const IB_UVERBS_PCF_SNMP_TUNNEL_SUP: ib_uverbs_query_port_cap_flags = 1 << 17;
pub const IB_UVERBS_PCF_REINIT_SUP: ib_uverbs_query_port_cap_flags = 1 << 18;
pub const IB_UVERBS_PCF_DEVICE_MGMT_SUP: ib_uverbs_query_port_cap_flags = 1 << 19;
pub const IB_UVERBS_PCF_VENDOR_CLASS_SUP: ib_uverbs_query_port_cap_flags = 1 << 20;
pub const IB_UVERBS_PCF_DR_NOTICE_SUP: ib_uverbs_query_port_cap_flags = 1 << 21;
pub const IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP: ib_uverbs_query_port_cap_flags = 1 << 22;
pub const IB_UVERBS_PCF_BOOT_MGMT_SUP: ib_uverbs_query_port_cap_flags = 1 << 23;
pub const IB_UVERBS_PCF_LINK_LATENCY_SUP: ib_uverbs_query_port_cap_flags = 1 << 24;
pub const IB_UVERBS_PCF_CLIENT_REG_SUP: ib_uverbs_query_port_cap_flags = 1 << 25;
pub const IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP: ib_uverbs_query_port_cap_flags = 1 << 27;
pub const IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP: ib_uverbs_query_port_cap_flags = 1 << 28;
pub const IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP: ib_uverbs_query_port_cap_flags = 1 << 29;
pub const IB_UVERBS_PCF_MCAST_FDB_TOP_SUP: ib_uverbs_query_port_cap_flags = 1 << 30;
pub const IB_UVERBS_PCF_HIERARCHY_INFO_SUP: ib_uverbs_query_port_cap_flags = 1 << 31;
/// Not an IBA bit: the port's GIDs come from IP addresses.
pub const IB_UVERBS_PCF_IP_BASED_GIDS: ib_uverbs_query_port_cap_flags = 1 << 26;

/// `enum ib_uverbs_query_port_flags`
pub type ib_uverbs_query_port_flags = u32;
pub const IB_UVERBS_QPF_GRH_REQUIRED: ib_uverbs_query_port_flags = 1 << 0;

/// `enum ib_uverbs_flow_action_esp_keymat`
pub type ib_uverbs_flow_action_esp_keymat = u32;
pub const IB_UVERBS_FLOW_ACTION_ESP_KEYMAT_AES_GCM: ib_uverbs_flow_action_esp_keymat = 0;

/// `enum ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo`
pub type ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo = u32;
pub const IB_UVERBS_FLOW_ACTION_IV_ALGO_SEQ: ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo = 0;

/// `struct ib_uverbs_flow_action_esp_keymat_aes_gcm`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ib_uverbs_flow_action_esp_keymat_aes_gcm {
    pub iv: u64,
    /// An `ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo` value.
    pub iv_algo: u32,
    pub salt: u32,
    pub icv_len: u32,
    pub key_len: u32,
    pub aes_key: [u32; 256 / 32],
}

/// `enum ib_uverbs_flow_action_esp_replay`
pub type ib_uverbs_flow_action_esp_replay = u32;
pub const IB_UVERBS_FLOW_ACTION_ESP_REPLAY_NONE: ib_uverbs_flow_action_esp_replay = 0;
pub const IB_UVERBS_FLOW_ACTION_ESP_REPLAY_BMP: ib_uverbs_flow_action_esp_replay = 1;

/// `struct ib_uverbs_flow_action_esp_replay_bmp`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ib_uverbs_flow_action_esp_replay_bmp {
    pub size: u32,
}

/// `enum ib_uverbs_flow_action_esp_flags` (the zero values name defaults).
pub type ib_uverbs_flow_action_esp_flags = u32;
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO: ib_uverbs_flow_action_esp_flags = 0;
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD: ib_uverbs_flow_action_esp_flags = 1 << 0;
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TUNNEL: ib_uverbs_flow_action_esp_flags = 0;
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TRANSPORT: ib_uverbs_flow_action_esp_flags = 1 << 1;
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_DECRYPT: ib_uverbs_flow_action_esp_flags = 0;
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ENCRYPT: ib_uverbs_flow_action_esp_flags = 1 << 2;
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW: ib_uverbs_flow_action_esp_flags = 1 << 3;

/// `struct ib_uverbs_flow_action_esp_encap`: one link of a list of headers
/// to encapsulate with (pointers widened to 64 bits by `RDMA_UAPI_PTR`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ib_uverbs_flow_action_esp_encap {
    /// `RDMA_UAPI_PTR(void *, val_ptr)`: points to a flow filter struct.
    pub val_ptr: ib_uverbs_flow_action_esp_encap_val_ptr,
    /// `RDMA_UAPI_PTR(struct ib_uverbs_flow_action_esp_encap *, next_ptr)`.
    pub next_ptr: ib_uverbs_flow_action_esp_encap_next_ptr,
    /// Length of the filter `val_ptr` points to.
    pub len: u16,
    /// An `ibv_flow_spec_type` value.
    pub r#type: u16,
}

/// The anonymous union `RDMA_UAPI_PTR(void *, val_ptr)` expands to.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ib_uverbs_flow_action_esp_encap_val_ptr {
    pub val_ptr: *mut c_void,
    pub val_ptr_data_u64: u64,
}

/// The anonymous union `RDMA_UAPI_PTR(.. *, next_ptr)` expands to.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ib_uverbs_flow_action_esp_encap_next_ptr {
    pub next_ptr: *mut ib_uverbs_flow_action_esp_encap,
    pub next_ptr_data_u64: u64,
}

/// `struct ib_uverbs_flow_action_esp`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ib_uverbs_flow_action_esp {
    pub spi: u32,
    pub seq: u32,
    pub tfc_pad: u32,
    /// Bits of `ib_uverbs_flow_action_esp_flags`.
    pub flags: u32,
    pub hard_limit_pkts: u64,
}

/// `enum ib_uverbs_read_counters_flags`
pub type ib_uverbs_read_counters_flags = u32;
pub const IB_UVERBS_READ_COUNTERS_PREFER_CACHED: ib_uverbs_read_counters_flags = 1 << 0;

/// `enum ib_uverbs_advise_mr_advice`
pub type ib_uverbs_advise_mr_advice = u32;
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH: ib_uverbs_advise_mr_advice = 0;
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE: ib_uverbs_advise_mr_advice = 1;
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT: ib_uverbs_advise_mr_advice = 2;

/// `enum ib_uverbs_advise_mr_flag`
pub type ib_uverbs_advise_mr_flag = u32;
pub const IB_UVERBS_ADVISE_MR_FLAG_FLUSH: ib_uverbs_advise_mr_flag = 1 << 0;

/// `struct ib_uverbs_qp_cap`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ib_uverbs_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `enum rdma_driver_id`: kernel driver identifiers.
pub type rdma_driver_id = u32;
pub const RDMA_DRIVER_UNKNOWN: rdma_driver_id = 0;
pub const RDMA_DRIVER_MLX5: rdma_driver_id = 1;
pub const RDMA_DRIVER_MLX4: rdma_driver_id = 2;
pub const RDMA_DRIVER_CXGB3: rdma_driver_id = 3;
pub const RDMA_DRIVER_CXGB4: rdma_driver_id = 4;
pub const RDMA_DRIVER_MTHCA: rdma_driver_id = 5;
pub const RDMA_DRIVER_BNXT_RE: rdma_driver_id = 6;
pub const RDMA_DRIVER_OCRDMA: rdma_driver_id = 7;
pub const RDMA_DRIVER_NES: rdma_driver_id = 8;
pub const RDMA_DRIVER_I40IW: rdma_driver_id = 9;
pub const RDMA_DRIVER_IRDMA: rdma_driver_id = RDMA_DRIVER_I40IW;
pub const RDMA_DRIVER_VMW_PVRDMA: rdma_driver_id = 10;
pub const RDMA_DRIVER_QEDR: rdma_driver_id = 11;
pub const RDMA_DRIVER_HNS: rdma_driver_id = 12;
pub const RDMA_DRIVER_USNIC: rdma_driver_id = 13;
pub const RDMA_DRIVER_RXE: rdma_driver_id = 14;
pub const RDMA_DRIVER_HFI1: rdma_driver_id = 15;
pub const RDMA_DRIVER_QIB: rdma_driver_id = 16;
pub const RDMA_DRIVER_EFA: rdma_driver_id = 17;
pub const RDMA_DRIVER_SIW: rdma_driver_id = 18;
pub const RDMA_DRIVER_ERDMA: rdma_driver_id = 19;

/// `enum ib_uverbs_gid_type`
pub type ib_uverbs_gid_type = u32;
pub const IB_UVERBS_GID_TYPE_IB: ib_uverbs_gid_type = 0;
pub const IB_UVERBS_GID_TYPE_ROCE_V1: ib_uverbs_gid_type = 1;
pub const IB_UVERBS_GID_TYPE_ROCE_V2: ib_uverbs_gid_type = 2;

/// `struct ib_uverbs_gid_entry`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ib_uverbs_gid_entry {
    pub gid: [u64; 2],
    pub gid_index: u32,
    pub port_num: u32,
    pub gid_type: u32,
    /// 0 when no netdev is associated.
    pub netdev_ifindex: u32,
}

// The ibv_* spellings verbs_api.h `#define`s onto the ib_uverbs_* names.

/// `enum ibv_flow_action_esp_keymat` (= `ib_uverbs_flow_action_esp_keymat`).
pub type ibv_flow_action_esp_keymat = ib_uverbs_flow_action_esp_keymat;
pub const IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM: ibv_flow_action_esp_keymat = IB_UVERBS_FLOW_ACTION_ESP_KEYMAT_AES_GCM;
/// `enum ibv_flow_action_esp_keymat_aes_gcm_iv_algo`.
pub type ibv_flow_action_esp_keymat_aes_gcm_iv_algo = ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo;
pub const IBV_FLOW_ACTION_IV_ALGO_SEQ: ibv_flow_action_esp_keymat_aes_gcm_iv_algo = IB_UVERBS_FLOW_ACTION_IV_ALGO_SEQ;
/// `struct ibv_flow_action_esp_keymat_aes_gcm`.
pub type ibv_flow_action_esp_keymat_aes_gcm = ib_uverbs_flow_action_esp_keymat_aes_gcm;
/// `enum ibv_flow_action_esp_replay`.
pub type ibv_flow_action_esp_replay = ib_uverbs_flow_action_esp_replay;
pub const IBV_FLOW_ACTION_ESP_REPLAY_NONE: ibv_flow_action_esp_replay = IB_UVERBS_FLOW_ACTION_ESP_REPLAY_NONE;
pub const IBV_FLOW_ACTION_ESP_REPLAY_BMP: ibv_flow_action_esp_replay = IB_UVERBS_FLOW_ACTION_ESP_REPLAY_BMP;
/// `struct ibv_flow_action_esp_replay_bmp`.
pub type ibv_flow_action_esp_replay_bmp = ib_uverbs_flow_action_esp_replay_bmp;
/// `enum ibv_flow_action_esp_flags`.
pub type ibv_flow_action_esp_flags = ib_uverbs_flow_action_esp_flags;
pub const IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO: ibv_flow_action_esp_flags =
    IB_UVERBS_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO;
pub const IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD: ibv_flow_action_esp_flags =
    IB_UVERBS_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD;
pub const IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL: ibv_flow_action_esp_flags = IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TUNNEL;
pub const IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT: ibv_flow_action_esp_flags = IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TRANSPORT;
pub const IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT: ibv_flow_action_esp_flags = IB_UVERBS_FLOW_ACTION_ESP_FLAGS_DECRYPT;
pub const IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT: ibv_flow_action_esp_flags = IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ENCRYPT;
pub const IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW: ibv_flow_action_esp_flags =
    IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW;
/// `struct ibv_flow_action_esp_encap`.
pub type ibv_flow_action_esp_encap = ib_uverbs_flow_action_esp_encap;
/// `struct ibv_flow_action_esp`.
pub type ibv_flow_action_esp = ib_uverbs_flow_action_esp;

/// `enum ibv_advise_mr_advice`.
pub type ibv_advise_mr_advice = ib_uverbs_advise_mr_advice;
pub const IBV_ADVISE_MR_ADVICE_PREFETCH: ibv_advise_mr_advice = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH;
pub const IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE: ibv_advise_mr_advice = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
pub const IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT: ibv_advise_mr_advice = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
pub const IBV_ADVISE_MR_FLAG_FLUSH: u32 = IB_UVERBS_ADVISE_MR_FLAG_FLUSH;

pub const IBV_QPF_GRH_REQUIRED: u32 = IB_UVERBS_QPF_GRH_REQUIRED;

pub const IBV_ACCESS_OPTIONAL_RANGE: u32 = IB_UVERBS_ACCESS_OPTIONAL_RANGE;
pub const IBV_ACCESS_OPTIONAL_FIRST: u32 = IB_UVERBS_ACCESS_OPTIONAL_FIRST;

// ---------------------------------------------------------------------------
// Layout and value checks against Debian's real headers
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    //! Everything above is compared with what a C compiler says about
    //! `/usr/include/infiniband/verbs.h` (libibverbs-dev 44).
    //!
    //! The lists below are the single source of what is checked: from them the
    //! test computes the Rust values *and* writes a C program that prints the
    //! same quantities for the C types, compiles it with `cc` (or `$CC`) and
    //! compares the two outputs key by key.  A second test reads this file's
    //! own source and fails if any struct/union (or any of its fields), enum
    //! alias or constant defined above is missing from the lists.

    use super::*;
    use core::marker::PhantomData;
    use core::mem::{align_of, offset_of, size_of, MaybeUninit};
    use std::collections::{BTreeMap, BTreeSet};
    use std::fmt::Write as _;

    /// One quantity known on both sides: `key` names it, `rust` is the value
    /// computed from the Rust mirror, `c_expr` the C expression for it.
    struct Check {
        key: String,
        rust: i64,
        c_expr: String,
    }

    fn check(out: &mut Vec<Check>, key: String, rust: i64, c_expr: String) {
        out.push(Check { key, rust, c_expr });
    }

    /// `stringify!` output of a field path, without spaces and raw-ident
    /// prefixes (`r#type` is `type` in C).
    fn clean(path: &str) -> String {
        path.replace(' ', "").replace("r#", "")
    }

    fn pointee_size<T>(_: *const T) -> usize {
        size_of::<T>()
    }

    fn pointee_align<T>(_: *const T) -> usize {
        align_of::<T>()
    }

    // Integer "kind" of a field type, matching the `KIND()` _Generic in the
    // C probe: catches signed/unsigned and width mix-ups that leave offsets
    // intact.  Non-integer types (pointers, arrays, aggregates) are 0.
    // Uses autoref specialisation: `IntKind` is implemented for `Probe<int>`,
    // `OtherKind` for every `&Probe<T>`.
    struct Probe<T>(PhantomData<T>);
    fn probe_of<T>(_: *const T) -> Probe<T> {
        Probe(PhantomData)
    }
    trait IntKind {
        fn kind(&self) -> i64;
    }
    trait OtherKind {
        fn kind(&self) -> i64;
    }
    impl<T> OtherKind for &Probe<T> {
        fn kind(&self) -> i64 {
            0
        }
    }
    macro_rules! int_kind {
        ($($t:ty => $k:expr),* $(,)?) => {
            $(impl IntKind for Probe<$t> { fn kind(&self) -> i64 { $k } })*
        };
    }
    int_kind!(i8 => 2, u8 => 3, i16 => 4, u16 => 5, i32 => 6, u32 => 7, i64 => 8, u64 => 9, isize => 8, usize => 9);

    const C_KIND_MACRO: &str = "#define KIND(x) _Generic((x), \
        signed char: 2, unsigned char: 3, short: 4, unsigned short: 5, \
        int: 6, unsigned int: 7, long: 8, long long: 8, \
        unsigned long: 9, unsigned long long: 9, default: 0)";

    /// `kind T { field, a.b.c, rust.path = c.path, ... }` where kind is
    /// `struct` or `union`: checks size and alignment of `kind T`, and the
    /// offset, size, alignment and integer kind of each listed field.  A
    /// field path that differs in C (because the Rust side names a C11
    /// anonymous member) is given as `rust.path = c.path`.
    macro_rules! layouts {
        ($out:ident; $( $kind:ident $t:ident { $( $($f:ident).+ $(= $($cf:ident).+)? ),* $(,)? } )*) => {
            $(
                {
                    let c_ty = concat!(stringify!($kind), " ", stringify!($t));
                    let name = stringify!($t);
                    check(&mut $out, format!("sizeof {name}"), size_of::<$t>() as i64, format!("sizeof({c_ty})"));
                    check(&mut $out, format!("alignof {name}"), align_of::<$t>() as i64, format!("_Alignof({c_ty})"));
                    $( layouts!(@field $out, $t, c_ty, [$($f).+] [$($($cf).+)?]); )*
                }
            )*
        };
        (@field $out:ident, $t:ident, $c_ty:ident, [$($f:ident).+] []) => {
            layouts!(@field $out, $t, $c_ty, [$($f).+] [$($f).+])
        };
        (@field $out:ident, $t:ident, $c_ty:ident, [$($f:ident).+] [$($cf:ident).+]) => {{
            let rpath = clean(stringify!($($f).+));
            let cpath = clean(stringify!($($cf).+));
            let name = stringify!($t);
            let u = MaybeUninit::<$t>::uninit();
            let base = u.as_ptr();
            // SAFETY: only a field address is computed; nothing is read.
            let fp = unsafe { core::ptr::addr_of!((*base).$($f).+) };
            let member = format!("(({} *)0)->{}", $c_ty, cpath);
            check(&mut $out, format!("offsetof {name}.{rpath}"), offset_of!($t, $($f).+) as i64,
                  format!("offsetof({}, {})", $c_ty, cpath));
            check(&mut $out, format!("sizeof {name}.{rpath}"), pointee_size(fp) as i64, format!("sizeof({member})"));
            check(&mut $out, format!("alignof {name}.{rpath}"), pointee_align(fp) as i64, format!("__alignof__({member})"));
            check(&mut $out, format!("kind {name}.{rpath}"), (&probe_of(fp)).kind(), format!("KIND({member})"));
        }};
    }

    /// `enum E { A, B, ... }`: checks `sizeof(enum E)`, its signedness and the
    /// value of each listed constant.  `consts { X, Y }`: values only (for
    /// tag-less enums and `#define`s).
    macro_rules! values {
        ($out:ident; $( $what:ident $($e:ident)? { $($c:ident),* $(,)? } )*) => {
            $( values!(@one $out, $what $($e)? { $($c),* }); )*
        };
        (@one $out:ident, enum $e:ident { $($c:ident),* }) => {{
            let name = stringify!($e);
            check(&mut $out, format!("sizeof enum {name}"), size_of::<$e>() as i64, format!("sizeof(enum {name})"));
            check(&mut $out, format!("signed enum {name}"), ((0 as $e).wrapping_sub(1) < (0 as $e)) as i64,
                  format!("((enum {name})-1 < 0)"));
            $( values!(@val $out, $e, $c); )*
        }};
        (@one $out:ident, consts { $($c:ident),* }) => {{
            $( values!(@val $out, consts, $c); )*
        }};
        (@val $out:ident, $group:ident, $c:ident) => {
            check(&mut $out, format!("value {}", stringify!($c)), $c as i64,
                  format!("(long long)(uintptr_t)({})", stringify!($c)))
        };
    }

    /// Types that are only ever pointed to (incomplete in C).
    const OPAQUE: &[&str] = &["_compat_ibv_port_attr", "verbs_ex_private"];

    /// Rust-only helper aliases with no C counterpart.
    const RUST_ONLY_ALIASES: &[&str] = &["ibv_compat_op_fn"];

    /// Rust types standing for C aggregates without a tag: (Rust type,
    /// checked C type containing it, Rust path of it in there).  Their fields
    /// are checked through that path.
    const ANON: &[(&str, &str, &str)] = &[
        ("ibv_gid_global", "ibv_gid", "global"),
        ("ibv_odp_caps_per_transport_caps", "ibv_odp_caps", "per_transport_caps"),
        ("ibv_async_event_element", "ibv_async_event", "element"),
        ("ibv_wc_imm", "ibv_wc", "imm"),
        ("ibv_send_wr_imm", "ibv_send_wr", "imm"),
        ("ibv_send_wr_wr", "ibv_send_wr", "wr"),
        ("ibv_send_wr_wr_rdma", "ibv_send_wr", "wr.rdma"),
        ("ibv_send_wr_wr_atomic", "ibv_send_wr", "wr.atomic"),
        ("ibv_send_wr_wr_ud", "ibv_send_wr", "wr.ud"),
        ("ibv_send_wr_qp_type", "ibv_send_wr", "qp_type"),
        ("ibv_send_wr_qp_type_xrc", "ibv_send_wr", "qp_type.xrc"),
        ("ibv_send_wr_bind_mw_tso", "ibv_send_wr", "bind_mw_tso"),
        ("ibv_send_wr_bind_mw", "ibv_send_wr", "bind_mw_tso.bind_mw"),
        ("ibv_send_wr_tso", "ibv_send_wr", "bind_mw_tso.tso"),
        ("ibv_ops_wr_tm", "ibv_ops_wr", "tm"),
        ("ibv_ops_wr_tm_add", "ibv_ops_wr", "tm.add"),
        ("ibv_flow_spec_u", "ibv_flow_spec", "u"),
        ("ibv_flow_spec_hdr", "ibv_flow_spec", "u.hdr"),
        (
            "ib_uverbs_flow_action_esp_encap_val_ptr",
            "ib_uverbs_flow_action_esp_encap",
            "val_ptr",
        ),
        (
            "ib_uverbs_flow_action_esp_encap_next_ptr",
            "ib_uverbs_flow_action_esp_encap",
            "next_ptr",
        ),
    ];

    fn all_checks() -> Vec<Check> {
        let mut out = Vec::new();
        // Named integer types: size and integer kind.
        check(
            &mut out,
            "sizeof __be64".into(),
            size_of::<__be64>() as i64,
            "sizeof(__be64)".into(),
        );
        // The integer-kind probe dispatches on the explicit borrow (as in `layouts!`).
        #[allow(clippy::needless_borrow)]
        let kind = (&probe_of(std::ptr::null::<__be64>())).kind();
        check(&mut out, "kind __be64".into(), kind, "KIND((__be64)0)".into());
        layouts! { out;
            union ibv_gid { raw, global, global.subnet_prefix, global.interface_id, }
            struct ibv_gid_entry { gid, gid_index, port_num, gid_type, ndev_ifindex, }
            struct ibv_alloc_dm_attr { length, log_align_req, comp_mask, }
            struct ibv_dm { context, memcpy_to_dm, memcpy_from_dm, comp_mask, handle, }
            struct ibv_device_attr { fw_ver, node_guid, sys_image_guid, max_mr_size, page_size_cap,
                vendor_id, vendor_part_id, hw_ver, max_qp, max_qp_wr, device_cap_flags, max_sge,
                max_sge_rd, max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom,
                max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom, atomic_cap, max_ee,
                max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp,
                max_mcast_qp_attach, max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr,
                max_srq, max_srq_wr, max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt, }
            struct ibv_query_device_ex_input { comp_mask, }
            struct ibv_odp_caps { general_caps, per_transport_caps, per_transport_caps.rc_odp_caps,
                per_transport_caps.uc_odp_caps, per_transport_caps.ud_odp_caps, }
            struct ibv_tso_caps { max_tso, supported_qpts, }
            struct ibv_rss_caps { supported_qpts, max_rwq_indirection_tables,
                max_rwq_indirection_table_size, rx_hash_fields_mask, rx_hash_function, }
            struct ibv_packet_pacing_caps { qp_rate_limit_min, qp_rate_limit_max, supported_qpts, }
            struct ibv_tm_caps { max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, }
            struct ibv_cq_moderation_caps { max_cq_count, max_cq_period, }
            struct ibv_pci_atomic_caps { fetch_add, swap, compare_swap, }
            struct ibv_device_attr_ex { orig_attr, comp_mask, odp_caps, completion_timestamp_mask,
                hca_core_clock, device_cap_flags_ex, tso_caps, rss_caps, max_wq_type_rq,
                packet_pacing_caps, raw_packet_caps, tm_caps, cq_mod_caps, max_dm_size,
                pci_atomic_caps, xrc_odp_caps, phys_port_cnt_ex, }
            struct ibv_port_attr { state, max_mtu, active_mtu, gid_tbl_len, port_cap_flags,
                max_msg_sz, bad_pkey_cntr, qkey_viol_cntr, pkey_tbl_len, lid, sm_lid, lmc,
                max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width, active_speed,
                phys_state, link_layer, flags, port_cap_flags2, }
            struct ibv_async_event { element, element.cq, element.qp, element.srq, element.wq,
                element.port_num, event_type, }
            struct ibv_wc { wr_id, status, opcode, vendor_err, byte_len, imm.imm_data = imm_data,
                imm.invalidated_rkey = invalidated_rkey, qp_num, src_qp, wc_flags, pkey_index, slid,
                sl, dlid_path_bits, }
            struct ibv_mw_bind_info { mr, addr, length, mw_access_flags, }
            struct ibv_pd { context, handle, }
            struct ibv_td_init_attr { comp_mask, }
            struct ibv_td { context, }
            struct ibv_xrcd_init_attr { comp_mask, fd, oflags, }
            struct ibv_xrcd { context, }
            struct ibv_mr { context, pd, addr, length, handle, lkey, rkey, }
            struct ibv_mw { context, pd, rkey, handle, r#type, }
            struct ibv_global_route { dgid, flow_label, sgid_index, hop_limit, traffic_class, }
            struct ibv_grh { version_tclass_flow, paylen, next_hdr, hop_limit, sgid, dgid, }
            struct ibv_ah_attr { grh, dlid, sl, src_path_bits, static_rate, is_global, port_num, }
            struct ibv_srq_attr { max_wr, max_sge, srq_limit, }
            struct ibv_srq_init_attr { srq_context, attr, }
            struct ibv_tm_cap { max_num_tags, max_ops, }
            struct ibv_srq_init_attr_ex { srq_context, attr, comp_mask, srq_type, pd, xrcd, cq,
                tm_cap, }
            struct ibv_wq_init_attr { wq_context, wq_type, max_wr, max_sge, pd, cq, comp_mask,
                create_flags, }
            struct ibv_wq_attr { attr_mask, wq_state, curr_wq_state, flags, flags_mask, }
            struct ibv_rwq_ind_table { context, ind_tbl_handle, ind_tbl_num, comp_mask, }
            struct ibv_rwq_ind_table_init_attr { log_ind_tbl_size, ind_tbl, comp_mask, }
            struct ibv_qp_cap { max_send_wr, max_recv_wr, max_send_sge, max_recv_sge,
                max_inline_data, }
            struct ibv_qp_init_attr { qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all, }
            struct ibv_rx_hash_conf { rx_hash_function, rx_hash_key_len, rx_hash_key,
                rx_hash_fields_mask, }
            struct ibv_qp_init_attr_ex { qp_context, send_cq, recv_cq, srq, cap, qp_type,
                sq_sig_all, comp_mask, pd, xrcd, create_flags, max_tso_header, rwq_ind_tbl,
                rx_hash_conf, source_qpn, send_ops_flags, }
            struct ibv_qp_open_attr { comp_mask, qp_num, xrcd, qp_context, qp_type, }
            struct ibv_qp_attr { qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn,
                sq_psn, dest_qp_num, qp_access_flags, cap, ah_attr, alt_ah_attr, pkey_index,
                alt_pkey_index, en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic,
                min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout,
                rate_limit, }
            struct ibv_qp_rate_limit_attr { rate_limit, max_burst_sz, typical_pkt_sz, comp_mask, }
            struct ibv_data_buf { addr, length, }
            struct ibv_sge { addr, length, lkey, }
            struct ibv_send_wr { wr_id, next, sg_list, num_sge, opcode, send_flags,
                imm.imm_data = imm_data, imm.invalidate_rkey = invalidate_rkey, wr, wr.rdma,
                wr.rdma.remote_addr, wr.rdma.rkey, wr.atomic, wr.atomic.remote_addr,
                wr.atomic.compare_add, wr.atomic.swap, wr.atomic.rkey, wr.ud, wr.ud.ah,
                wr.ud.remote_qpn, wr.ud.remote_qkey, qp_type, qp_type.xrc, qp_type.xrc.remote_srqn,
                bind_mw_tso.bind_mw = bind_mw, bind_mw_tso.bind_mw.mw = bind_mw.mw,
                bind_mw_tso.bind_mw.rkey = bind_mw.rkey,
                bind_mw_tso.bind_mw.bind_info = bind_mw.bind_info, bind_mw_tso.tso = tso,
                bind_mw_tso.tso.hdr = tso.hdr, bind_mw_tso.tso.hdr_sz = tso.hdr_sz,
                bind_mw_tso.tso.mss = tso.mss, }
            struct ibv_recv_wr { wr_id, next, sg_list, num_sge, }
            struct ibv_ops_wr { wr_id, next, opcode, flags, tm, tm.unexpected_cnt, tm.handle,
                tm.add, tm.add.recv_wr_id, tm.add.sg_list, tm.add.num_sge, tm.add.tag, tm.add.mask, }
            struct ibv_mw_bind { wr_id, send_flags, bind_info, }
            struct ibv_srq { context, srq_context, pd, handle, mutex, cond, events_completed, }
            struct ibv_wq { context, wq_context, pd, cq, wq_num, handle, state, wq_type, post_recv,
                mutex, cond, events_completed, comp_mask, }
            struct ibv_qp { context, qp_context, pd, send_cq, recv_cq, srq, handle, qp_num, state,
                qp_type, mutex, cond, events_completed, }
            struct ibv_qp_ex { qp_base, comp_mask, wr_id, wr_flags, wr_atomic_cmp_swp,
                wr_atomic_fetch_add, wr_bind_mw, wr_local_inv, wr_rdma_read, wr_rdma_write,
                wr_rdma_write_imm, wr_send, wr_send_imm, wr_send_inv, wr_send_tso, wr_set_ud_addr,
                wr_set_xrc_srqn, wr_set_inline_data, wr_set_inline_data_list, wr_set_sge,
                wr_set_sge_list, wr_start, wr_complete, wr_abort, wr_atomic_write, }
            struct ibv_ece { vendor_id, options, comp_mask, }
            struct ibv_comp_channel { context, fd, refcnt, }
            struct ibv_cq { context, channel, cq_context, handle, cqe, mutex, cond,
                comp_events_completed, async_events_completed, }
            struct ibv_poll_cq_attr { comp_mask, }
            struct ibv_wc_tm_info { tag, r#priv, }
            struct ibv_cq_ex { context, channel, cq_context, handle, cqe, mutex, cond,
                comp_events_completed, async_events_completed, comp_mask, status, wr_id, start_poll,
                next_poll, end_poll, read_opcode, read_vendor_err, read_byte_len, read_imm_data,
                read_qp_num, read_src_qp, read_wc_flags, read_slid, read_sl, read_dlid_path_bits,
                read_completion_ts, read_cvlan, read_flow_tag, read_tm_info,
                read_completion_wallclock_ns, }
            struct ibv_moderate_cq { cq_count, cq_period, }
            struct ibv_modify_cq_attr { attr_mask, moderate, }
            struct ibv_ah { context, pd, handle, }
            struct ibv_flow_eth_filter { dst_mac, src_mac, ether_type, vlan_tag, }
            struct ibv_flow_spec_eth { r#type, size, val, mask, }
            struct ibv_flow_ipv4_filter { src_ip, dst_ip, }
            struct ibv_flow_spec_ipv4 { r#type, size, val, mask, }
            struct ibv_flow_ipv4_ext_filter { src_ip, dst_ip, proto, tos, ttl, flags, }
            struct ibv_flow_spec_ipv4_ext { r#type, size, val, mask, }
            struct ibv_flow_ipv6_filter { src_ip, dst_ip, flow_label, next_hdr, traffic_class,
                hop_limit, }
            struct ibv_flow_spec_ipv6 { r#type, size, val, mask, }
            struct ibv_flow_esp_filter { spi, seq, }
            struct ibv_flow_spec_esp { r#type, size, val, mask, }
            struct ibv_flow_tcp_udp_filter { dst_port, src_port, }
            struct ibv_flow_spec_tcp_udp { r#type, size, val, mask, }
            struct ibv_flow_gre_filter { c_ks_res0_ver, protocol, key, }
            struct ibv_flow_spec_gre { r#type, size, val, mask, }
            struct ibv_flow_mpls_filter { label, }
            struct ibv_flow_spec_mpls { r#type, size, val, mask, }
            struct ibv_flow_tunnel_filter { tunnel_id, }
            struct ibv_flow_spec_tunnel { r#type, size, val, mask, }
            struct ibv_flow_spec_action_tag { r#type, size, tag_id, }
            struct ibv_flow_spec_action_drop { r#type, size, }
            struct ibv_flow_spec_action_handle { r#type, size, action, }
            struct ibv_flow_spec_counter_action { r#type, size, counters, }
            struct ibv_flow_spec { u.hdr = hdr, u.hdr.r#type = hdr.type, u.hdr.size = hdr.size,
                u.eth = eth, u.ipv4 = ipv4, u.tcp_udp = tcp_udp, u.ipv4_ext = ipv4_ext,
                u.ipv6 = ipv6, u.esp = esp, u.tunnel = tunnel, u.gre = gre, u.mpls = mpls,
                u.flow_tag = flow_tag, u.drop = drop, u.handle = handle, u.flow_count = flow_count, }
            struct ibv_flow_attr { comp_mask, r#type, size, priority, num_of_specs, port, flags, }
            struct ibv_flow { comp_mask, context, handle, }
            struct ibv_flow_action { context, }
            struct ibv_flow_action_esp_attr { esp_attr, keymat_proto, keymat_len, keymat_ptr,
                replay_proto, replay_len, replay_ptr, esp_encap, comp_mask, esn, }
            struct _ibv_device_ops { _dummy1, _dummy2, }
            struct ibv_device { _ops, node_type, transport_type, name, dev_name, dev_path,
                ibdev_path, }
            struct ibv_context_ops { _compat_query_device, _compat_query_port, _compat_alloc_pd,
                _compat_dealloc_pd, _compat_reg_mr, _compat_rereg_mr, _compat_dereg_mr, alloc_mw,
                bind_mw, dealloc_mw, _compat_create_cq, poll_cq, req_notify_cq, _compat_cq_event,
                _compat_resize_cq, _compat_destroy_cq, _compat_create_srq, _compat_modify_srq,
                _compat_query_srq, _compat_destroy_srq, post_srq_recv, _compat_create_qp,
                _compat_query_qp, _compat_modify_qp, _compat_destroy_qp, post_send, post_recv,
                _compat_create_ah, _compat_destroy_ah, _compat_attach_mcast, _compat_detach_mcast,
                _compat_async_event, }
            struct ibv_context { device, ops, cmd_fd, async_fd, num_comp_vectors, mutex, abi_compat, }
            struct ibv_cq_init_attr_ex { cqe, cq_context, channel, comp_vector, wc_flags, comp_mask,
                flags, parent_domain, }
            struct ibv_parent_domain_init_attr { pd, td, comp_mask, alloc, free, pd_context, }
            struct ibv_counters_init_attr { comp_mask, }
            struct ibv_counters { context, }
            struct ibv_counter_attach_attr { counter_desc, index, comp_mask, }
            struct ibv_values_ex { comp_mask, raw_clock, }
            struct verbs_context { query_port, advise_mr, alloc_null_mr, read_counters,
                attach_counters_point_flow, create_counters, destroy_counters, reg_dm_mr, alloc_dm,
                free_dm, modify_flow_action_esp, destroy_flow_action, create_flow_action_esp,
                modify_qp_rate_limit, alloc_parent_domain, dealloc_td, alloc_td, modify_cq,
                post_srq_ops, destroy_rwq_ind_table, create_rwq_ind_table, destroy_wq, modify_wq,
                create_wq, query_rt_values, create_cq_ex, r#priv, query_device_ex, ibv_destroy_flow,
                ABI_placeholder2, ibv_create_flow, ABI_placeholder1, open_qp, create_qp_ex,
                get_srq_num, create_srq_ex, open_xrcd, close_xrcd, _ABI_placeholder3, sz, context, }
            struct ib_uverbs_flow_action_esp_keymat_aes_gcm { iv, iv_algo, salt, icv_len, key_len,
                aes_key, }
            struct ib_uverbs_flow_action_esp_replay_bmp { size, }
            struct ib_uverbs_flow_action_esp_encap { val_ptr.val_ptr = val_ptr,
                val_ptr.val_ptr_data_u64 = val_ptr_data_u64, next_ptr.next_ptr = next_ptr,
                next_ptr.next_ptr_data_u64 = next_ptr_data_u64, len, r#type, }
            struct ib_uverbs_flow_action_esp { spi, seq, tfc_pad, flags, hard_limit_pkts, }
            struct ib_uverbs_qp_cap { max_send_wr, max_recv_wr, max_send_sge, max_recv_sge,
                max_inline_data, }
            struct ib_uverbs_gid_entry { gid, gid_index, port_num, gid_type, netdev_ifindex, }
            // ibv_* spellings that verbs_api.h #defines onto ib_uverbs_* types
            struct ibv_flow_action_esp_keymat_aes_gcm { iv, iv_algo, salt, icv_len, key_len,
                aes_key, }
            struct ibv_flow_action_esp_replay_bmp { size, }
            struct ibv_flow_action_esp_encap { val_ptr.val_ptr = val_ptr,
                val_ptr.val_ptr_data_u64 = val_ptr_data_u64, next_ptr.next_ptr = next_ptr,
                next_ptr.next_ptr_data_u64 = next_ptr_data_u64, len, r#type, }
            struct ibv_flow_action_esp { spi, seq, tfc_pad, flags, hard_limit_pkts, }
        }
        values! { out;
            enum ibv_gid_type { IBV_GID_TYPE_IB, IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2, }
            enum ibv_node_type { IBV_NODE_UNKNOWN, IBV_NODE_CA, IBV_NODE_SWITCH, IBV_NODE_ROUTER,
                IBV_NODE_RNIC, IBV_NODE_USNIC, IBV_NODE_USNIC_UDP, IBV_NODE_UNSPECIFIED, }
            enum ibv_transport_type { IBV_TRANSPORT_UNKNOWN, IBV_TRANSPORT_IB, IBV_TRANSPORT_IWARP,
                IBV_TRANSPORT_USNIC, IBV_TRANSPORT_USNIC_UDP, IBV_TRANSPORT_UNSPECIFIED, }
            enum ibv_device_cap_flags { IBV_DEVICE_RESIZE_MAX_WR, IBV_DEVICE_BAD_PKEY_CNTR,
                IBV_DEVICE_BAD_QKEY_CNTR, IBV_DEVICE_RAW_MULTI, IBV_DEVICE_AUTO_PATH_MIG,
                IBV_DEVICE_CHANGE_PHY_PORT, IBV_DEVICE_UD_AV_PORT_ENFORCE,
                IBV_DEVICE_CURR_QP_STATE_MOD, IBV_DEVICE_SHUTDOWN_PORT, IBV_DEVICE_INIT_TYPE,
                IBV_DEVICE_PORT_ACTIVE_EVENT, IBV_DEVICE_SYS_IMAGE_GUID, IBV_DEVICE_RC_RNR_NAK_GEN,
                IBV_DEVICE_SRQ_RESIZE, IBV_DEVICE_N_NOTIFY_CQ, IBV_DEVICE_MEM_WINDOW,
                IBV_DEVICE_UD_IP_CSUM, IBV_DEVICE_XRC, IBV_DEVICE_MEM_MGT_EXTENSIONS,
                IBV_DEVICE_MEM_WINDOW_TYPE_2A, IBV_DEVICE_MEM_WINDOW_TYPE_2B, IBV_DEVICE_RC_IP_CSUM,
                IBV_DEVICE_RAW_IP_CSUM, IBV_DEVICE_MANAGED_FLOW_STEERING, }
            enum ibv_fork_status { IBV_FORK_DISABLED, IBV_FORK_ENABLED, IBV_FORK_UNNEEDED, }
            consts { IBV_DEVICE_RAW_SCATTER_FCS, IBV_DEVICE_PCI_WRITE_END_PADDING, }
            enum ibv_atomic_cap { IBV_ATOMIC_NONE, IBV_ATOMIC_HCA, IBV_ATOMIC_GLOB, }
            enum ibv_dm_mask { IBV_DM_MASK_HANDLE, }
            enum ibv_odp_transport_cap_bits { IBV_ODP_SUPPORT_SEND, IBV_ODP_SUPPORT_RECV,
                IBV_ODP_SUPPORT_WRITE, IBV_ODP_SUPPORT_READ, IBV_ODP_SUPPORT_ATOMIC,
                IBV_ODP_SUPPORT_SRQ_RECV, }
            enum ibv_odp_general_caps { IBV_ODP_SUPPORT, IBV_ODP_SUPPORT_IMPLICIT, }
            enum ibv_rx_hash_function_flags { IBV_RX_HASH_FUNC_TOEPLITZ, }
            enum ibv_rx_hash_fields { IBV_RX_HASH_SRC_IPV4, IBV_RX_HASH_DST_IPV4,
                IBV_RX_HASH_SRC_IPV6, IBV_RX_HASH_DST_IPV6, IBV_RX_HASH_SRC_PORT_TCP,
                IBV_RX_HASH_DST_PORT_TCP, IBV_RX_HASH_SRC_PORT_UDP, IBV_RX_HASH_DST_PORT_UDP,
                IBV_RX_HASH_IPSEC_SPI, IBV_RX_HASH_INNER, }
            enum ibv_raw_packet_caps { IBV_RAW_PACKET_CAP_CVLAN_STRIPPING,
                IBV_RAW_PACKET_CAP_SCATTER_FCS, IBV_RAW_PACKET_CAP_IP_CSUM,
                IBV_RAW_PACKET_CAP_DELAY_DROP, }
            enum ibv_tm_cap_flags { IBV_TM_CAP_RC, }
            enum ibv_pci_atomic_op_size { IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP,
                IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP, IBV_PCI_ATOMIC_OPERATION_16_BYTE_SIZE_SUP, }
            enum ibv_mtu { IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096, }
            enum ibv_port_state { IBV_PORT_NOP, IBV_PORT_DOWN, IBV_PORT_INIT, IBV_PORT_ARMED,
                IBV_PORT_ACTIVE, IBV_PORT_ACTIVE_DEFER, }
            consts { IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND, IBV_LINK_LAYER_ETHERNET, }
            enum ibv_port_cap_flags { IBV_PORT_SM, IBV_PORT_NOTICE_SUP, IBV_PORT_TRAP_SUP,
                IBV_PORT_OPT_IPD_SUP, IBV_PORT_AUTO_MIGR_SUP, IBV_PORT_SL_MAP_SUP,
                IBV_PORT_MKEY_NVRAM, IBV_PORT_PKEY_NVRAM, IBV_PORT_LED_INFO_SUP,
                IBV_PORT_SYS_IMAGE_GUID_SUP, IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP,
                IBV_PORT_EXTENDED_SPEEDS_SUP, IBV_PORT_CAP_MASK2_SUP, IBV_PORT_CM_SUP,
                IBV_PORT_SNMP_TUNNEL_SUP, IBV_PORT_REINIT_SUP, IBV_PORT_DEVICE_MGMT_SUP,
                IBV_PORT_VENDOR_CLASS_SUP, IBV_PORT_DR_NOTICE_SUP, IBV_PORT_CAP_MASK_NOTICE_SUP,
                IBV_PORT_BOOT_MGMT_SUP, IBV_PORT_LINK_LATENCY_SUP, IBV_PORT_CLIENT_REG_SUP,
                IBV_PORT_IP_BASED_GIDS, }
            enum ibv_port_cap_flags2 { IBV_PORT_SET_NODE_DESC_SUP, IBV_PORT_INFO_EXT_SUP,
                IBV_PORT_VIRT_SUP, IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP, IBV_PORT_LINK_WIDTH_2X_SUP,
                IBV_PORT_LINK_SPEED_HDR_SUP, IBV_PORT_LINK_SPEED_NDR_SUP, }
            enum ibv_event_type { IBV_EVENT_CQ_ERR, IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR,
                IBV_EVENT_QP_ACCESS_ERR, IBV_EVENT_COMM_EST, IBV_EVENT_SQ_DRAINED,
                IBV_EVENT_PATH_MIG, IBV_EVENT_PATH_MIG_ERR, IBV_EVENT_DEVICE_FATAL,
                IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR, IBV_EVENT_LID_CHANGE,
                IBV_EVENT_PKEY_CHANGE, IBV_EVENT_SM_CHANGE, IBV_EVENT_SRQ_ERR,
                IBV_EVENT_SRQ_LIMIT_REACHED, IBV_EVENT_QP_LAST_WQE_REACHED,
                IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_GID_CHANGE, IBV_EVENT_WQ_FATAL, }
            enum ibv_wc_status { IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR,
                IBV_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_MW_BIND_ERR,
                IBV_WC_BAD_RESP_ERR, IBV_WC_LOC_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR,
                IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_OP_ERR, IBV_WC_RETRY_EXC_ERR,
                IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_LOC_RDD_VIOL_ERR, IBV_WC_REM_INV_RD_REQ_ERR,
                IBV_WC_REM_ABORT_ERR, IBV_WC_INV_EECN_ERR, IBV_WC_INV_EEC_STATE_ERR,
                IBV_WC_FATAL_ERR, IBV_WC_RESP_TIMEOUT_ERR, IBV_WC_GENERAL_ERR, IBV_WC_TM_ERR,
                IBV_WC_TM_RNDV_INCOMPLETE, }
            enum ibv_wc_opcode { IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP,
                IBV_WC_FETCH_ADD, IBV_WC_BIND_MW, IBV_WC_LOCAL_INV, IBV_WC_TSO, IBV_WC_ATOMIC_WRITE,
                IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_TM_ADD, IBV_WC_TM_DEL,
                IBV_WC_TM_SYNC, IBV_WC_TM_RECV, IBV_WC_TM_NO_TAG, IBV_WC_DRIVER1, IBV_WC_DRIVER2,
                IBV_WC_DRIVER3, }
            consts { IBV_WC_IP_CSUM_OK_SHIFT, }
            enum ibv_create_cq_wc_flags { IBV_WC_EX_WITH_BYTE_LEN, IBV_WC_EX_WITH_IMM,
                IBV_WC_EX_WITH_QP_NUM, IBV_WC_EX_WITH_SRC_QP, IBV_WC_EX_WITH_SLID,
                IBV_WC_EX_WITH_SL, IBV_WC_EX_WITH_DLID_PATH_BITS,
                IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, IBV_WC_EX_WITH_CVLAN, IBV_WC_EX_WITH_FLOW_TAG,
                IBV_WC_EX_WITH_TM_INFO, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, }
            consts { IBV_WC_STANDARD_FLAGS, IBV_CREATE_CQ_SUP_WC_FLAGS, }
            enum ibv_wc_flags { IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_IP_CSUM_OK, IBV_WC_WITH_INV,
                IBV_WC_TM_SYNC_REQ, IBV_WC_TM_MATCH, IBV_WC_TM_DATA_VALID, }
            enum ibv_access_flags { IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE,
                IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_MW_BIND,
                IBV_ACCESS_ZERO_BASED, IBV_ACCESS_ON_DEMAND, IBV_ACCESS_HUGETLB,
                IBV_ACCESS_RELAXED_ORDERING, }
            enum ibv_xrcd_init_attr_mask { IBV_XRCD_INIT_ATTR_FD, IBV_XRCD_INIT_ATTR_OFLAGS,
                IBV_XRCD_INIT_ATTR_RESERVED, }
            enum ibv_rereg_mr_flags { IBV_REREG_MR_CHANGE_TRANSLATION, IBV_REREG_MR_CHANGE_PD,
                IBV_REREG_MR_CHANGE_ACCESS, IBV_REREG_MR_FLAGS_SUPPORTED, }
            enum ibv_mw_type { IBV_MW_TYPE_1, IBV_MW_TYPE_2, }
            enum ibv_rate { IBV_RATE_MAX, IBV_RATE_2_5_GBPS, IBV_RATE_5_GBPS, IBV_RATE_10_GBPS,
                IBV_RATE_20_GBPS, IBV_RATE_30_GBPS, IBV_RATE_40_GBPS, IBV_RATE_60_GBPS,
                IBV_RATE_80_GBPS, IBV_RATE_120_GBPS, IBV_RATE_14_GBPS, IBV_RATE_56_GBPS,
                IBV_RATE_112_GBPS, IBV_RATE_168_GBPS, IBV_RATE_25_GBPS, IBV_RATE_100_GBPS,
                IBV_RATE_200_GBPS, IBV_RATE_300_GBPS, IBV_RATE_28_GBPS, IBV_RATE_50_GBPS,
                IBV_RATE_400_GBPS, IBV_RATE_600_GBPS, IBV_RATE_800_GBPS, IBV_RATE_1200_GBPS, }
            enum ibv_srq_attr_mask { IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT, }
            enum ibv_srq_type { IBV_SRQT_BASIC, IBV_SRQT_XRC, IBV_SRQT_TM, }
            enum ibv_srq_init_attr_mask { IBV_SRQ_INIT_ATTR_TYPE, IBV_SRQ_INIT_ATTR_PD,
                IBV_SRQ_INIT_ATTR_XRCD, IBV_SRQ_INIT_ATTR_CQ, IBV_SRQ_INIT_ATTR_TM,
                IBV_SRQ_INIT_ATTR_RESERVED, }
            enum ibv_wq_type { IBV_WQT_RQ, }
            enum ibv_wq_init_attr_mask { IBV_WQ_INIT_ATTR_FLAGS, IBV_WQ_INIT_ATTR_RESERVED, }
            enum ibv_wq_flags { IBV_WQ_FLAGS_CVLAN_STRIPPING, IBV_WQ_FLAGS_SCATTER_FCS,
                IBV_WQ_FLAGS_DELAY_DROP, IBV_WQ_FLAGS_PCI_WRITE_END_PADDING, IBV_WQ_FLAGS_RESERVED, }
            enum ibv_wq_state { IBV_WQS_RESET, IBV_WQS_RDY, IBV_WQS_ERR, IBV_WQS_UNKNOWN, }
            enum ibv_wq_attr_mask { IBV_WQ_ATTR_STATE, IBV_WQ_ATTR_CURR_STATE, IBV_WQ_ATTR_FLAGS,
                IBV_WQ_ATTR_RESERVED, }
            enum ibv_ind_table_init_attr_mask { IBV_CREATE_IND_TABLE_RESERVED, }
            enum ibv_qp_type { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
                IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, IBV_QPT_DRIVER, }
            enum ibv_qp_init_attr_mask { IBV_QP_INIT_ATTR_PD, IBV_QP_INIT_ATTR_XRCD,
                IBV_QP_INIT_ATTR_CREATE_FLAGS, IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
                IBV_QP_INIT_ATTR_IND_TABLE, IBV_QP_INIT_ATTR_RX_HASH,
                IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, }
            enum ibv_qp_create_flags { IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, IBV_QP_CREATE_SCATTER_FCS,
                IBV_QP_CREATE_CVLAN_STRIPPING, IBV_QP_CREATE_SOURCE_QPN,
                IBV_QP_CREATE_PCI_WRITE_END_PADDING, }
            enum ibv_qp_create_send_ops_flags { IBV_QP_EX_WITH_RDMA_WRITE,
                IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_SEND,
                IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_QP_EX_WITH_RDMA_READ,
                IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
                IBV_QP_EX_WITH_LOCAL_INV, IBV_QP_EX_WITH_BIND_MW, IBV_QP_EX_WITH_SEND_WITH_INV,
                IBV_QP_EX_WITH_TSO, IBV_QP_EX_WITH_ATOMIC_WRITE, }
            enum ibv_qp_open_attr_mask { IBV_QP_OPEN_ATTR_NUM, IBV_QP_OPEN_ATTR_XRCD,
                IBV_QP_OPEN_ATTR_CONTEXT, IBV_QP_OPEN_ATTR_TYPE, IBV_QP_OPEN_ATTR_RESERVED, }
            enum ibv_qp_attr_mask { IBV_QP_STATE, IBV_QP_CUR_STATE, IBV_QP_EN_SQD_ASYNC_NOTIFY,
                IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_QKEY, IBV_QP_AV,
                IBV_QP_PATH_MTU, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, IBV_QP_RQ_PSN,
                IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_ALT_PATH, IBV_QP_MIN_RNR_TIMER, IBV_QP_SQ_PSN,
                IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_PATH_MIG_STATE, IBV_QP_CAP, IBV_QP_DEST_QPN,
                IBV_QP_RATE_LIMIT, }
            enum ibv_qp_state { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD,
                IBV_QPS_SQE, IBV_QPS_ERR, IBV_QPS_UNKNOWN, }
            enum ibv_mig_state { IBV_MIG_MIGRATED, IBV_MIG_REARM, IBV_MIG_ARMED, }
            enum ibv_wr_opcode { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
                IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
                IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV,
                IBV_WR_TSO, IBV_WR_DRIVER1, IBV_WR_ATOMIC_WRITE, }
            enum ibv_send_flags { IBV_SEND_FENCE, IBV_SEND_SIGNALED, IBV_SEND_SOLICITED,
                IBV_SEND_INLINE, IBV_SEND_IP_CSUM, }
            enum ibv_ops_wr_opcode { IBV_WR_TAG_ADD, IBV_WR_TAG_DEL, IBV_WR_TAG_SYNC, }
            enum ibv_ops_flags { IBV_OPS_SIGNALED, IBV_OPS_TM_SYNC, }
            enum ibv_cq_attr_mask { IBV_CQ_ATTR_MODERATE, IBV_CQ_ATTR_RESERVED, }
            enum ibv_flow_flags { IBV_FLOW_ATTR_FLAGS_DONT_TRAP, IBV_FLOW_ATTR_FLAGS_EGRESS, }
            enum ibv_flow_attr_type { IBV_FLOW_ATTR_NORMAL, IBV_FLOW_ATTR_ALL_DEFAULT,
                IBV_FLOW_ATTR_MC_DEFAULT, IBV_FLOW_ATTR_SNIFFER, }
            enum ibv_flow_spec_type { IBV_FLOW_SPEC_ETH, IBV_FLOW_SPEC_IPV4, IBV_FLOW_SPEC_IPV6,
                IBV_FLOW_SPEC_IPV4_EXT, IBV_FLOW_SPEC_ESP, IBV_FLOW_SPEC_TCP, IBV_FLOW_SPEC_UDP,
                IBV_FLOW_SPEC_VXLAN_TUNNEL, IBV_FLOW_SPEC_GRE, IBV_FLOW_SPEC_MPLS,
                IBV_FLOW_SPEC_INNER, IBV_FLOW_SPEC_ACTION_TAG, IBV_FLOW_SPEC_ACTION_DROP,
                IBV_FLOW_SPEC_ACTION_HANDLE, IBV_FLOW_SPEC_ACTION_COUNT, }
            enum ibv_flow_action_esp_mask { IBV_FLOW_ACTION_ESP_MASK_ESN, }
            consts { IBV_SYSFS_NAME_MAX, IBV_SYSFS_PATH_MAX, }
            enum ibv_cq_init_attr_mask { IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CQ_INIT_ATTR_MASK_PD, }
            enum ibv_create_cq_attr_flags { IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
                IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, }
            enum ibv_parent_domain_init_attr_mask { IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS,
                IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT, }
            enum ibv_counter_description { IBV_COUNTER_PACKETS, IBV_COUNTER_BYTES, }
            enum ibv_read_counters_flags { IBV_READ_COUNTERS_ATTR_PREFER_CACHED, }
            enum ibv_values_mask { IBV_VALUES_MASK_RAW_CLOCK, IBV_VALUES_MASK_RESERVED, }
            enum ibv_rereg_mr_err_code { IBV_REREG_MR_ERR_INPUT, IBV_REREG_MR_ERR_DONT_FORK_NEW,
                IBV_REREG_MR_ERR_DO_FORK_OLD, IBV_REREG_MR_ERR_CMD,
                IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW, }
            consts { ETHERNET_LL_SIZE, IB_ROCE_UDP_ENCAP_VALID_PORT_MIN,
                IB_ROCE_UDP_ENCAP_VALID_PORT_MAX, IB_GRH_FLOWLABEL_MASK,
                IB_UVERBS_ACCESS_OPTIONAL_FIRST, IB_UVERBS_ACCESS_OPTIONAL_LAST, }
            enum ib_uverbs_core_support { IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS, }
            enum ib_uverbs_access_flags { IB_UVERBS_ACCESS_LOCAL_WRITE,
                IB_UVERBS_ACCESS_REMOTE_WRITE, IB_UVERBS_ACCESS_REMOTE_READ,
                IB_UVERBS_ACCESS_REMOTE_ATOMIC, IB_UVERBS_ACCESS_MW_BIND,
                IB_UVERBS_ACCESS_ZERO_BASED, IB_UVERBS_ACCESS_ON_DEMAND, IB_UVERBS_ACCESS_HUGETLB,
                IB_UVERBS_ACCESS_RELAXED_ORDERING, IB_UVERBS_ACCESS_OPTIONAL_RANGE, }
            enum ib_uverbs_srq_type { IB_UVERBS_SRQT_BASIC, IB_UVERBS_SRQT_XRC, IB_UVERBS_SRQT_TM, }
            enum ib_uverbs_wq_type { IB_UVERBS_WQT_RQ, }
            enum ib_uverbs_wq_flags { IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING,
                IB_UVERBS_WQ_FLAGS_SCATTER_FCS, IB_UVERBS_WQ_FLAGS_DELAY_DROP,
                IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING, }
            enum ib_uverbs_qp_type { IB_UVERBS_QPT_RC, IB_UVERBS_QPT_UC, IB_UVERBS_QPT_UD,
                IB_UVERBS_QPT_RAW_PACKET, IB_UVERBS_QPT_XRC_INI, IB_UVERBS_QPT_XRC_TGT,
                IB_UVERBS_QPT_DRIVER, }
            enum ib_uverbs_qp_create_flags { IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK,
                IB_UVERBS_QP_CREATE_SCATTER_FCS, IB_UVERBS_QP_CREATE_CVLAN_STRIPPING,
                IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING, IB_UVERBS_QP_CREATE_SQ_SIG_ALL, }
            enum ib_uverbs_query_port_cap_flags { IB_UVERBS_PCF_SM, IB_UVERBS_PCF_NOTICE_SUP,
                IB_UVERBS_PCF_TRAP_SUP, IB_UVERBS_PCF_OPT_IPD_SUP, IB_UVERBS_PCF_AUTO_MIGR_SUP,
                IB_UVERBS_PCF_SL_MAP_SUP, IB_UVERBS_PCF_MKEY_NVRAM, IB_UVERBS_PCF_PKEY_NVRAM,
                IB_UVERBS_PCF_LED_INFO_SUP, IB_UVERBS_PCF_SM_DISABLED,
                IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP, IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP,
                IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP, IB_UVERBS_PCF_CM_SUP,
                IB_UVERBS_PCF_SNMP_TUNNEL_SUP, IB_UVERBS_PCF_REINIT_SUP,
                IB_UVERBS_PCF_DEVICE_MGMT_SUP, IB_UVERBS_PCF_VENDOR_CLASS_SUP,
                IB_UVERBS_PCF_DR_NOTICE_SUP, IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP,
                IB_UVERBS_PCF_BOOT_MGMT_SUP, IB_UVERBS_PCF_LINK_LATENCY_SUP,
                IB_UVERBS_PCF_CLIENT_REG_SUP, IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP,
                IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP,
                IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP, IB_UVERBS_PCF_MCAST_FDB_TOP_SUP,
                IB_UVERBS_PCF_HIERARCHY_INFO_SUP, IB_UVERBS_PCF_IP_BASED_GIDS, }
            enum ib_uverbs_query_port_flags { IB_UVERBS_QPF_GRH_REQUIRED, }
            enum ib_uverbs_flow_action_esp_keymat { IB_UVERBS_FLOW_ACTION_ESP_KEYMAT_AES_GCM, }
            enum ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo {
                IB_UVERBS_FLOW_ACTION_IV_ALGO_SEQ, }
            enum ib_uverbs_flow_action_esp_replay { IB_UVERBS_FLOW_ACTION_ESP_REPLAY_NONE,
                IB_UVERBS_FLOW_ACTION_ESP_REPLAY_BMP, }
            enum ib_uverbs_flow_action_esp_flags { IB_UVERBS_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO,
                IB_UVERBS_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD,
                IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TUNNEL, IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TRANSPORT,
                IB_UVERBS_FLOW_ACTION_ESP_FLAGS_DECRYPT, IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ENCRYPT,
                IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW, }
            enum ib_uverbs_read_counters_flags { IB_UVERBS_READ_COUNTERS_PREFER_CACHED, }
            enum ib_uverbs_advise_mr_advice { IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
                IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, }
            enum ib_uverbs_advise_mr_flag { IB_UVERBS_ADVISE_MR_FLAG_FLUSH, }
            enum rdma_driver_id { RDMA_DRIVER_UNKNOWN, RDMA_DRIVER_MLX5, RDMA_DRIVER_MLX4,
                RDMA_DRIVER_CXGB3, RDMA_DRIVER_CXGB4, RDMA_DRIVER_MTHCA, RDMA_DRIVER_BNXT_RE,
                RDMA_DRIVER_OCRDMA, RDMA_DRIVER_NES, RDMA_DRIVER_I40IW, RDMA_DRIVER_IRDMA,
                RDMA_DRIVER_VMW_PVRDMA, RDMA_DRIVER_QEDR, RDMA_DRIVER_HNS, RDMA_DRIVER_USNIC,
                RDMA_DRIVER_RXE, RDMA_DRIVER_HFI1, RDMA_DRIVER_QIB, RDMA_DRIVER_EFA,
                RDMA_DRIVER_SIW, RDMA_DRIVER_ERDMA, }
            enum ib_uverbs_gid_type { IB_UVERBS_GID_TYPE_IB, IB_UVERBS_GID_TYPE_ROCE_V1,
                IB_UVERBS_GID_TYPE_ROCE_V2, }
            enum ibv_flow_action_esp_keymat { IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM, }
            enum ibv_flow_action_esp_keymat_aes_gcm_iv_algo { IBV_FLOW_ACTION_IV_ALGO_SEQ, }
            enum ibv_flow_action_esp_replay { IBV_FLOW_ACTION_ESP_REPLAY_NONE,
                IBV_FLOW_ACTION_ESP_REPLAY_BMP, }
            enum ibv_flow_action_esp_flags { IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO,
                IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD, IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL,
                IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT, IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT,
                IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT, IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW, }
            enum ibv_advise_mr_advice { IBV_ADVISE_MR_ADVICE_PREFETCH,
                IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, }
            consts { IBV_ADVISE_MR_FLAG_FLUSH, IBV_QPF_GRH_REQUIRED, IBV_ACCESS_OPTIONAL_RANGE,
                IBV_ACCESS_OPTIONAL_FIRST, }
            consts { __VERBS_ABI_IS_EXTENDED, IBV_ALLOCATOR_USE_DEFAULT, }
        }
        out
    }

    const VERBS_H: &str = "/usr/include/infiniband/verbs.h";

    /// Writes the C probe for `checks`, builds it against Debian's headers,
    /// runs it and returns its `key value` lines.
    fn run_c_probe(checks: &[Check]) -> BTreeMap<String, i64> {
        assert!(
            std::path::Path::new(VERBS_H).exists(),
            "{VERBS_H} is missing: install Debian's libibverbs-dev (44.0) so the \
             layout of the Rust mirrors can be compared with the real header"
        );
        let mut src = String::new();
        src.push_str("/* Generated by the ibverbs_rs abi::verbs layout test. */\n");
        src.push_str("#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n");
        src.push_str("#include <infiniband/verbs.h>\n\n");
        src.push_str(C_KIND_MACRO);
        src.push_str("\n#define P(k, v) printf(\"%s %lld\\n\", k, (long long)(v))\n\n");
        src.push_str("int main(void)\n{\n");
        for c in checks {
            writeln!(src, "\tP(\"{}\", {});", c.key, c.c_expr).unwrap();
        }
        src.push_str("\treturn 0;\n}\n");

        // Tests run in parallel threads: give every probe its own directory.
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ibverbs_rs_verbs_probe_{}_{seq}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c_file = dir.join("probe.c");
        let exe = dir.join("probe");
        std::fs::write(&c_file, &src).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let build = std::process::Command::new(&cc)
            .args(["-std=gnu11", "-w", "-I/usr/include", "-o"])
            .arg(&exe)
            .arg(&c_file)
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
        assert!(
            build.status.success(),
            "the C layout probe {} does not compile (a name in the check lists \
             does not exist in C?):\n{}",
            c_file.display(),
            String::from_utf8_lossy(&build.stderr)
        );
        let run = std::process::Command::new(&exe)
            .output()
            .expect("cannot run the C layout probe");
        assert!(run.status.success(), "the C layout probe failed");
        let mut map = BTreeMap::new();
        for line in String::from_utf8(run.stdout).unwrap().lines() {
            let (k, v) = line.rsplit_once(' ').expect("malformed probe output");
            map.insert(k.to_string(), v.parse::<i64>().expect("malformed probe value"));
        }
        let _ = std::fs::remove_dir_all(&dir);
        map
    }

    #[test]
    fn layouts_and_values_match_debian_headers() {
        let checks = all_checks();
        let c = run_c_probe(&checks);
        let mut keys = BTreeSet::new();
        let mut bad = Vec::new();
        for chk in &checks {
            assert!(keys.insert(chk.key.clone()), "checked twice: {}", chk.key);
            match c.get(&chk.key) {
                Some(&v) if v == chk.rust => {}
                Some(&v) => bad.push(format!(
                    "{}: Rust {} / C {}   [C: {}]",
                    chk.key, chk.rust, v, chk.c_expr
                )),
                None => bad.push(format!("{}: missing from the C probe output", chk.key)),
            }
        }
        assert!(
            bad.is_empty(),
            "{} mismatches with <infiniband/verbs.h>:\n  {}",
            bad.len(),
            bad.join("\n  ")
        );
        eprintln!("abi::verbs: {} layout/value checks agree with {VERBS_H}", checks.len());
    }

    /// `pub` fields of an aggregate: (name without `r#`, Rust type text).
    type Fields = Vec<(String, String)>;

    /// Names defined in this file (above the test module), read from the
    /// source text.
    struct Defined {
        /// struct/union name -> (`struct`/`union`, its fields).
        aggregates: BTreeMap<String, (&'static str, Fields)>,
        /// `pub type` name -> right-hand side.
        aliases: BTreeMap<String, String>,
        consts: BTreeSet<String>,
    }

    fn ident(s: &str) -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '#')
            .collect()
    }

    fn scan_source() -> Defined {
        let text = include_str!("verbs.rs");
        let text = &text[..text.find("#[cfg(test)]\nmod tests").expect("test module marker")];
        let mut d = Defined {
            aggregates: BTreeMap::new(),
            aliases: BTreeMap::new(),
            consts: BTreeSet::new(),
        };
        // The aggregate being read, and the field whose type is being read.
        let mut current: Option<String> = None;
        let mut field: Option<(String, String)> = None;
        let lines: Vec<&str> = text.lines().collect();
        for (i, &line) in lines.iter().enumerate() {
            if let Some(name) = &current {
                let fields = &mut d.aggregates.get_mut(name).unwrap().1;
                let starts_field = line.starts_with("    pub ");
                if line == "}"
                    || starts_field
                    || line.trim_start().starts_with("//")
                    || line.trim_start().starts_with('#')
                {
                    if let Some((f, ty)) = field.take() {
                        let ty = ty.split_whitespace().collect::<Vec<_>>().join(" ");
                        let ty = ty.trim_end_matches(',');
                        let ty = [
                            ("< ", "<"),
                            ("( ", "("),
                            (" )", ")"),
                            (" >", ">"),
                            (",)", ")"),
                            (",>", ">"),
                        ]
                        .iter()
                        .fold(ty.to_string(), |t, (a, b)| t.replace(a, b));
                        fields.push((f, ty));
                    }
                }
                if line == "}" {
                    current = None;
                } else if let Some(rest) = line.strip_prefix("    pub ") {
                    let f = ident(rest);
                    let ty = rest[f.len()..].trim_start_matches(':').to_string();
                    field = Some((f.replace("r#", ""), ty));
                } else if let Some((_, ty)) = &mut field {
                    ty.push(' ');
                    ty.push_str(line.trim());
                }
                continue;
            }
            let (kind, rest) = if let Some(r) = line.strip_prefix("pub struct ") {
                ("struct", Some(r))
            } else if let Some(r) = line.strip_prefix("pub union ") {
                ("union", Some(r))
            } else {
                ("", None)
            };
            if let Some(rest) = rest {
                let name = ident(rest);
                d.aggregates.insert(name.clone(), (kind, Vec::new()));
                if line.ends_with('{') {
                    current = Some(name);
                }
            } else if let Some(rest) = line.strip_prefix("pub type ") {
                // The alias may continue on the following lines, up to `;`.
                let mut stmt = rest.to_string();
                let mut j = i;
                while !stmt.trim_end().ends_with(';') {
                    j += 1;
                    stmt.push(' ');
                    stmt.push_str(lines[j].trim());
                }
                let name = ident(&stmt);
                let rhs = stmt[name.len()..]
                    .trim()
                    .trim_start_matches('=')
                    .trim()
                    .trim_end_matches(';');
                d.aliases.insert(name, rhs.to_string());
            } else if let Some(rest) = line.strip_prefix("pub const ") {
                d.consts.insert(ident(rest));
            }
        }
        d
    }

    #[test]
    fn every_definition_is_checked() {
        let d = scan_source();
        let checks = all_checks();
        let mut types = BTreeSet::new();
        let mut enums = BTreeSet::new();
        let mut values = BTreeSet::new();
        let mut paths: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in &checks {
            if let Some(rest) = c.key.strip_prefix("sizeof enum ") {
                enums.insert(rest.to_string());
            } else if let Some(rest) = c.key.strip_prefix("value ") {
                values.insert(rest.to_string());
            } else if let Some(rest) = c.key.strip_prefix("offsetof ") {
                let (t, p) = rest.split_once('.').unwrap();
                paths.entry(t.to_string()).or_default().push(p.to_string());
            } else if let Some(rest) = c.key.strip_prefix("sizeof ") {
                if !rest.contains('.') {
                    types.insert(rest.to_string());
                }
            }
        }
        let covered = |t: &str, path: &str| {
            paths
                .get(t)
                .is_some_and(|ps| ps.iter().any(|p| p == path || p.starts_with(&format!("{path}."))))
        };
        let mut missing = Vec::new();
        let anon: BTreeMap<&str, (&str, &str)> = ANON.iter().map(|&(a, t, p)| (a, (t, p))).collect();
        for (name, (_, fields)) in &d.aggregates {
            let fields: Vec<&String> = fields.iter().map(|(f, _)| f).collect();
            if OPAQUE.contains(&name.as_str()) {
                continue;
            }
            if let Some(&(top, prefix)) = anon.get(name.as_str()) {
                for f in fields {
                    if !covered(top, &format!("{prefix}.{f}")) {
                        missing.push(format!("field {name}.{f} (as {top}.{prefix}.{f})"));
                    }
                }
                continue;
            }
            if !types.contains(name) {
                missing.push(format!("type {name}"));
            }
            for f in fields {
                if !covered(name, f) {
                    missing.push(format!("field {name}.{f}"));
                }
            }
        }
        for a in anon.keys() {
            assert!(d.aggregates.contains_key(*a), "ANON lists unknown type {a}");
        }
        for a in d.aliases.keys() {
            if !enums.contains(a) && !types.contains(a) && !RUST_ONLY_ALIASES.contains(&a.as_str()) {
                missing.push(format!("alias {a}"));
            }
        }
        for c in &d.consts {
            if !values.contains(c) {
                missing.push(format!("constant {c}"));
            }
        }
        assert!(
            missing.is_empty(),
            "not covered by the layout checks:\n  {}",
            missing.join("\n  ")
        );
        eprintln!(
            "abi::verbs: {} structs/unions, {} type aliases, {} constants, all checked",
            d.aggregates.len(),
            d.aliases.len(),
            d.consts.len()
        );
    }

    /// Spells the Rust type `ty` (as written in this file) as a C type name,
    /// e.g. `*const ibv_sge` -> `const struct ibv_sge *`.
    fn c_type(ty: &str, d: &Defined, enums: &BTreeSet<String>) -> String {
        let ty = ty.trim();
        if let Some(f) = c_fn_ptr(ty, d, enums) {
            return f;
        }
        if let Some(rest) = ty.strip_prefix("*mut ") {
            return format!("{} *", c_type(rest, d, enums));
        }
        if let Some(rest) = ty.strip_prefix("*const ") {
            assert!(!rest.starts_with('*'), "cannot spell {ty} in C here");
            return format!("const {} *", c_type(rest, d, enums));
        }
        let prim = match ty {
            "u8" => "uint8_t",
            "u16" => "uint16_t",
            "u32" => "uint32_t",
            "u64" => "uint64_t",
            "i32" | "c_int" => "int",
            "c_uint" => "unsigned int",
            "size_t" | "usize" => "size_t",
            "c_void" => "void",
            "c_char" => "char",
            _ => "",
        };
        if !prim.is_empty() {
            return prim.to_string();
        }
        if enums.contains(ty) {
            return format!("enum {ty}");
        }
        if let Some((kind, _)) = d.aggregates.get(ty) {
            return format!("{kind} {ty}");
        }
        if let Some(rhs) = d.aliases.get(ty) {
            // An ibv_* alias of an ib_uverbs_* struct keeps its own C name.
            return match d.aggregates.get(rhs.as_str()) {
                Some((kind, _)) => format!("{kind} {ty}"),
                None => c_type(rhs, d, enums),
            };
        }
        panic!("no C spelling for Rust type `{ty}`");
    }

    /// `Option<unsafe extern "C" fn(a: A, ..) -> R>` -> `R (*)(A, ..)`.
    fn c_fn_ptr(ty: &str, d: &Defined, enums: &BTreeSet<String>) -> Option<String> {
        let inner = ty.strip_prefix("Option<unsafe extern \"C\" fn(")?.strip_suffix('>')?;
        let mut depth = 0;
        let mut close = None;
        for (i, ch) in inner.char_indices() {
            match ch {
                '(' | '<' => depth += 1,
                ')' if depth == 0 => {
                    close = Some(i);
                    break;
                }
                ')' | '>' => depth -= 1,
                _ => {}
            }
        }
        let close = close.expect("unbalanced fn pointer type");
        let params: Vec<String> = inner[..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (_, t) = p.split_once(':').expect("fn pointer parameters are named");
                c_type(t, d, enums)
            })
            .collect();
        let ret = inner[close + 1..].trim();
        let ret = match ret.strip_prefix("->") {
            Some(r) => c_type(r, d, enums),
            None => {
                assert!(ret.is_empty(), "unexpected text after fn pointer parameters: {ret}");
                "void".to_string()
            }
        };
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        Some(format!("{ret} (*)({params})"))
    }

    /// Every function-pointer field, read from the definitions above, must
    /// have exactly the C function type (return type, parameter types and
    /// pointer constness): C's `_Generic` only selects the branch if the
    /// types are compatible.
    #[test]
    fn function_pointer_signatures_match_debian_headers() {
        let d = scan_source();
        let enums: BTreeSet<String> = all_checks()
            .iter()
            .filter_map(|c| c.key.strip_prefix("sizeof enum ").map(str::to_string))
            .collect();
        let mut checks = Vec::new();
        for (name, (kind, fields)) in &d.aggregates {
            for (f, ty) in fields {
                let ty = match d.aliases.get(ty.as_str()) {
                    Some(rhs) if rhs.starts_with("Option<") => rhs.clone(),
                    _ => ty.clone(),
                };
                if let Some(cty) = c_fn_ptr(&ty, &d, &enums) {
                    assert!(!ANON.iter().any(|a| a.0 == name), "fn pointer in anonymous type {name}");
                    checks.push(Check {
                        key: format!("fnptr {name}.{f}"),
                        rust: 1,
                        c_expr: format!("_Generic(((({kind} {name} *)0)->{f}), {cty}: 1, default: 0)"),
                    });
                } else {
                    assert!(!ty.contains("fn("), "unrecognised fn pointer type in {name}.{f}: {ty}");
                }
            }
        }
        let c = run_c_probe(&checks);
        let bad: Vec<String> = checks
            .iter()
            .filter(|k| c.get(&k.key) != Some(&1))
            .map(|k| format!("{}: C type is not `{}`", k.key, k.c_expr))
            .collect();
        assert!(
            bad.is_empty(),
            "function pointer types differ from <infiniband/verbs.h>:\n  {}",
            bad.join("\n  ")
        );
        eprintln!(
            "abi::verbs: {} function pointer types agree with {VERBS_H}",
            checks.len()
        );
    }
}
