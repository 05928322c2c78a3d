//! Rust mirrors of rdma-core 44's provider interface, `<infiniband/driver.h>`
//! (private ABI `IBVERBS_PRIVATE_34`): the structs libibverbs shares with the
//! provider drivers it loads, and the constants that go with them.
//!
//! Conventions are those of [`super::verbs`]:
//!
//! * every C `struct X` is a `#[repr(C)]` Rust type `X` with the same fields in
//!   the same order;
//! * a C enum `E` is `pub type E = u32;` plus one `pub const` per enumerator;
//!   enumerators of tag-less enums are plain `u32` constants;
//! * function pointers are `Option<unsafe extern "C" fn(..)>` (NULL = `None`).
//!
//! Tag-less aggregates get a Rust name and, where the C member has no name,
//! a Rust field name:
//!
//! | C location                                      | Rust field | Rust type              |
//! |-------------------------------------------------|------------|------------------------|
//! | `verbs_qp`: `union { qp; qp_ex; }`              | `u`        | [`verbs_qp_u`]         |
//! | `verbs_cq`: `union { cq; cq_ex; }`              | `u`        | [`verbs_cq_u`]         |
//! | `verbs_match_ent`: `union { modalias; driver_id; } u` | `u`  | [`verbs_match_ent_u`]  |
//!
//! C's `vqp->qp` is therefore `vqp.u.qp` here.  Union members whose type is
//! not `Copy` are wrapped in `ManuallyDrop` (same layout).
//!
//! ccan's `struct list_node`, which upstream embeds in two of these structs,
//! is mirrored as [`list_node`].
//!
//! The `tests` module checks every size, alignment, field offset, field size
//! and constant here against `compat-tests/layout/provider_abi.expected`, the
//! table measured from rdma-core 44's own headers (the C header
//! `include/infiniband/driver.h` is checked against the same table by
//! `compat-tests/layout/provider_abi.sh`).

use core::mem::ManuallyDrop;
use core::sync::atomic::AtomicI32;

use libc::{c_char, c_int, c_uint, c_void, dev_t, size_t, timespec};

use super::verbs::*;
use super::verbs65::*;

const _: () = assert!(
    core::mem::size_of::<usize>() == 8,
    "driver.rs mirrors the 64-bit ABI only"
);

// ---------------------------------------------------------------------------
// Versions
// ---------------------------------------------------------------------------

/// Generation of the private provider ABI (`IBVERBS_PRIVATE_34`,
/// `verbs_register_driver_34`, provider file suffix `-rdmav34.so`).
pub const IBVERBS_PABI_VERSION: u32 = 34;

/// Oldest kernel uverbs ABI version libibverbs accepts (`kern-abi.h`).
pub const IB_USER_VERBS_MIN_ABI_VERSION: u32 = 3;
/// Newest kernel uverbs ABI version libibverbs accepts (`kern-abi.h`).
pub const IB_USER_VERBS_MAX_ABI_VERSION: u32 = 6;

// ---------------------------------------------------------------------------
// ccan list link
// ---------------------------------------------------------------------------

/// ccan's `struct list_node`: the links of a circular doubly linked list.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct list_node {
    pub next: *mut list_node,
    pub prev: *mut list_node,
}

// ---------------------------------------------------------------------------
// Logging
// ---------------------------------------------------------------------------

/// Levels of `__verbs_log()` (tag-less enum).
pub const VERBS_LOG_LEVEL_NONE: u32 = 0;
pub const VERBS_LOG_ERR: u32 = 1;
pub const VERBS_LOG_WARN: u32 = 2;
pub const VERBS_LOG_INFO: u32 = 3;
pub const VERBS_LOG_DEBUG: u32 = 4;

// ---------------------------------------------------------------------------
// Object wrappers: the public object first, provider/core data after it
// ---------------------------------------------------------------------------

/// `enum verbs_xrcd_mask`: bits of `verbs_xrcd::comp_mask`.
pub type verbs_xrcd_mask = u32;
pub const VERBS_XRCD_HANDLE: verbs_xrcd_mask = 1 << 0;
pub const VERBS_XRCD_RESERVED: verbs_xrcd_mask = 1 << 1;

/// `enum create_cq_cmd_flags`: `cmd_flags` of `ibv_cmd_create_cq_ex()`.
pub type create_cq_cmd_flags = u32;
pub const CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX: create_cq_cmd_flags = 1 << 0;

/// `struct verbs_xrcd`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_xrcd {
    pub xrcd: ibv_xrcd,
    pub comp_mask: u32,
    pub handle: u32,
}

/// `struct verbs_srq`.
#[repr(C)]
pub struct verbs_srq {
    pub srq: ibv_srq,
    pub srq_type: ibv_srq_type,
    pub xrcd: *mut verbs_xrcd,
    pub cq: *mut ibv_cq,
    pub srq_num: u32,
}

/// `enum verbs_qp_mask`: bits of `verbs_qp::comp_mask`.
pub type verbs_qp_mask = u32;
pub const VERBS_QP_XRCD: verbs_qp_mask = 1 << 0;
pub const VERBS_QP_EX: verbs_qp_mask = 1 << 1;

/// `enum ibv_gid_type_sysfs`: GID type as named by sysfs `gid_attrs/types`.
pub type ibv_gid_type_sysfs = u32;
pub const IBV_GID_TYPE_SYSFS_IB_ROCE_V1: ibv_gid_type_sysfs = 0;
pub const IBV_GID_TYPE_SYSFS_ROCE_V2: ibv_gid_type_sysfs = 1;

/// `enum verbs_query_gid_attr_mask`.
pub type verbs_query_gid_attr_mask = u32;
pub const VERBS_QUERY_GID_ATTR_GID: verbs_query_gid_attr_mask = 1 << 0;
pub const VERBS_QUERY_GID_ATTR_TYPE: verbs_query_gid_attr_mask = 1 << 1;
pub const VERBS_QUERY_GID_ATTR_NDEV_IFINDEX: verbs_query_gid_attr_mask = 1 << 2;

/// `enum ibv_mr_type`: how a `verbs_mr` was created.
pub type ibv_mr_type = u32;
pub const IBV_MR_TYPE_MR: ibv_mr_type = 0;
pub const IBV_MR_TYPE_NULL_MR: ibv_mr_type = 1;
pub const IBV_MR_TYPE_IMPORTED_MR: ibv_mr_type = 2;
pub const IBV_MR_TYPE_DMABUF_MR: ibv_mr_type = 3;

/// `struct verbs_mr`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_mr {
    pub ibv_mr: ibv_mr,
    pub mr_type: ibv_mr_type,
    pub access: c_int,
}

/// `struct verbs_qp`.
#[repr(C)]
pub struct verbs_qp {
    pub u: verbs_qp_u,
    pub comp_mask: u32,
    pub xrcd: *mut verbs_xrcd,
}

/// The anonymous `union { struct ibv_qp qp; struct ibv_qp_ex qp_ex; }` of
/// `verbs_qp` (`ibv_qp_ex` begins with its `ibv_qp`).
#[repr(C)]
pub union verbs_qp_u {
    pub qp: ManuallyDrop<ibv_qp>,
    pub qp_ex: ManuallyDrop<ibv_qp_ex>,
}

/// `struct verbs_cq`.
#[repr(C)]
pub struct verbs_cq {
    pub u: verbs_cq_u,
}

/// The anonymous `union { struct ibv_cq cq; struct ibv_cq_ex cq_ex; }` of
/// `verbs_cq`.
#[repr(C)]
pub union verbs_cq_u {
    pub cq: ManuallyDrop<ibv_cq>,
    pub cq_ex: ManuallyDrop<ibv_cq_ex>,
}

/// `enum ibv_flow_action_type`.
pub type ibv_flow_action_type = u32;
pub const IBV_FLOW_ACTION_UNSPECIFIED: ibv_flow_action_type = 0;
pub const IBV_FLOW_ACTION_ESP: ibv_flow_action_type = 1;

/// `struct verbs_flow_action`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_flow_action {
    pub action: ibv_flow_action,
    pub handle: u32,
    pub r#type: ibv_flow_action_type,
}

/// `struct verbs_dm`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_dm {
    pub dm: ibv_dm,
    pub handle: u32,
}

/// `struct verbs_counters`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_counters {
    pub counters: ibv_counters,
    pub handle: u32,
}

// ---------------------------------------------------------------------------
// Device matching and discovery
// ---------------------------------------------------------------------------

/// `verbs_match_ent::kind` (tag-less enum).
pub const VERBS_MATCH_SENTINEL: u32 = 0;
pub const VERBS_MATCH_PCI: u32 = 1;
pub const VERBS_MATCH_MODALIAS: u32 = 2;
pub const VERBS_MATCH_DRIVER_ID: u32 = 3;

/// `struct verbs_match_ent`: one entry of a provider's match table, which
/// ends with an entry of kind `VERBS_MATCH_SENTINEL`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_match_ent {
    pub driver_data: *mut c_void,
    pub u: verbs_match_ent_u,
    pub vendor: u16,
    pub device: u16,
    pub kind: u8,
}

/// `verbs_match_ent::u`: modalias pattern (kind MODALIAS) or kernel driver
/// id (kind DRIVER_ID).
#[repr(C)]
#[derive(Copy, Clone)]
pub union verbs_match_ent_u {
    pub modalias: *const c_char,
    pub driver_id: u64,
}

// Match tables are immutable data; allow them in Rust statics.
// SAFETY: the only non-Sync members are raw pointers (`driver_data`, the
// `modalias` string) that this type never dereferences or writes through;
// tables are built once (static or provider-owned) and only read afterwards,
// so sharing a reference between threads cannot race.
unsafe impl Sync for verbs_match_ent {}

/// `verbs_sysfs_dev::flags` (tag-less enum): optional attributes found.
pub const VSYSFS_READ_MODALIAS: u32 = 1 << 0;
pub const VSYSFS_READ_NODE_GUID: u32 = 1 << 1;

/// `struct verbs_sysfs_dev`: an RDMA device found in sysfs.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_sysfs_dev {
    pub entry: list_node,
    pub provider_data: *mut c_void,
    pub r#match: *const verbs_match_ent,
    pub flags: c_uint,
    pub sysfs_name: [c_char; IBV_SYSFS_NAME_MAX as usize],
    pub sysfs_cdev: dev_t,
    pub ibdev_name: [c_char; IBV_SYSFS_NAME_MAX as usize],
    pub ibdev_path: [c_char; IBV_SYSFS_PATH_MAX as usize],
    pub modalias: [c_char; 512],
    pub node_guid: u64,
    pub driver_id: u32,
    pub node_type: ibv_node_type,
    pub ibdev_idx: c_int,
    pub num_ports: u32,
    pub abi_ver: u32,
    pub time_created: timespec,
}

/// `struct verbs_device_ops`: what a provider registers with
/// `verbs_register_driver_34()`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_device_ops {
    pub name: *const c_char,
    pub match_min_abi_version: u32,
    pub match_max_abi_version: u32,
    pub match_table: *const verbs_match_ent,
    pub static_providers: *mut *const verbs_device_ops,
    pub match_device: Option<unsafe extern "C" fn(sysfs_dev: *mut verbs_sysfs_dev) -> bool>,
    pub alloc_context: Option<
        unsafe extern "C" fn(device: *mut ibv_device, cmd_fd: c_int, private_data: *mut c_void) -> *mut verbs_context,
    >,
    pub import_context: Option<unsafe extern "C" fn(device: *mut ibv_device, cmd_fd: c_int) -> *mut verbs_context>,
    pub alloc_device: Option<unsafe extern "C" fn(sysfs_dev: *mut verbs_sysfs_dev) -> *mut verbs_device>,
    pub uninit_device: Option<unsafe extern "C" fn(device: *mut verbs_device)>,
}

// Provider descriptions are immutable data; allow them in Rust statics.
// SAFETY: the members are plain integers, function pointers and raw pointers
// to data that is itself never written after registration (name, match
// table); the type does not dereference them, so shared references across
// threads only ever read immutable words.
unsafe impl Sync for verbs_device_ops {}

/// `struct verbs_device`: a provider's device; `device` must be first (the
/// core converts `ibv_device` pointers back to `verbs_device`).
#[repr(C)]
pub struct verbs_device {
    pub device: ibv_device,
    pub ops: *const verbs_device_ops,
    pub refcount: AtomicI32,
    pub entry: list_node,
    pub sysfs: *mut verbs_sysfs_dev,
    pub core_support: u64,
}

/// `verbs_driver_init_func`: the entry point of pre-PABI providers.
pub type verbs_driver_init_func =
    Option<unsafe extern "C" fn(uverbs_sys_path: *const c_char, abi_version: c_int) -> *mut verbs_device>;

// ---------------------------------------------------------------------------
// Types private ABI 65 (rdma-core 65) added
// ---------------------------------------------------------------------------

/// `struct ibv_buf` (rdma-core 65): memory `ibv_alloc_buf` handed out, or a
/// dmabuf, with the PD it belongs to.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_buf {
    pub addr: *mut c_void,
    pub size: size_t,
    pub pd: *mut ibv_pd,
    pub dmabuf_fd: c_int,
}

/// `struct verbs_dmah` (rdma-core 65): a DMA handle with its kernel handle.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_dmah {
    pub dmah: ibv_dmah,
    pub handle: u32,
}

/// `enum create_cq_cmd_flags` members rdma-core 65 added.
pub const CREATE_CQ_CMD_FLAGS_WITH_MEM_VA: u32 = 1 << 1;
pub const CREATE_CQ_CMD_FLAGS_WITH_MEM_DMABUF: u32 = 1 << 2;

/// The dmabuf half of [`verbs_create_cq_prov_attr_buffer_u`].
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_create_cq_prov_attr_buffer_dmabuf {
    pub offset: u64,
    pub fd: c_int,
}

/// The anonymous union of `verbs_create_cq_prov_attr.buffer`.
#[repr(C)]
#[derive(Copy, Clone)]
pub union verbs_create_cq_prov_attr_buffer_u {
    pub ptr: *mut u8,
    pub dmabuf: verbs_create_cq_prov_attr_buffer_dmabuf,
}

/// `verbs_create_cq_prov_attr.buffer`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_create_cq_prov_attr_buffer {
    pub length: u64,
    pub u: verbs_create_cq_prov_attr_buffer_u,
}

/// `struct verbs_create_cq_prov_attr` (rdma-core 65): CQ memory a provider
/// supplies to `ibv_cmd_create_cq_ex{,2}`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct verbs_create_cq_prov_attr {
    pub buffer: verbs_create_cq_prov_attr_buffer,
}

/// The part of rdma-core 65's `struct verbs_context` in front of what
/// rdma-core 44 to 56 have: the context "grows up", so every older member
/// keeps its offset from `context`, and the new ones come first.
#[repr(C)]
#[derive(Copy, Clone, Default)]
pub struct verbs_context_65_front {
    pub free_buf: Option<unsafe extern "C" fn(buf: *mut ibv_buf)>,
    pub alloc_buf: Option<unsafe extern "C" fn(pd: *mut ibv_pd, size: size_t, buf: *mut *mut ibv_buf) -> *mut c_void>,
    pub dm_export_dmabuf_fd: Option<unsafe extern "C" fn(dm: *mut ibv_dm) -> c_int>,
    pub reg_mr_ex: Option<unsafe extern "C" fn(pd: *mut ibv_pd, mr_init_attr: *mut ibv_mr_init_attr) -> *mut ibv_mr>,
    pub dealloc_dmah: Option<unsafe extern "C" fn(dmah: *mut ibv_dmah) -> c_int>,
    pub alloc_dmah:
        Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_dmah_init_attr) -> *mut ibv_dmah>,
}

/// rdma-core 65's `struct verbs_context`: the new front, then the layout
/// every generation shares ([`verbs_context`]).
#[repr(C)]
pub struct verbs_context_65 {
    pub front: verbs_context_65_front,
    pub common: verbs_context,
}

// ---------------------------------------------------------------------------
// Provider operations
// ---------------------------------------------------------------------------

/// Defines the op tables of every private-ABI generation from one list, in
/// upstream's order: `all NAME: TYPE;` is a member of every generation's
/// table, `new NAME: TYPE;` only of the rdma-core 65 one.  Also generates
/// `verbs_context_ops_65::from_34`, the translation of an older provider's
/// table (member by member, by name) into the library's own layout.
macro_rules! ops_tables {
    ($(#[$m34:meta])* $t34:ident; $(#[$m65:meta])* $t65:ident; $($rest:tt)*) => {
        ops_tables!(@munch [$(#[$m34])* $t34] [$(#[$m65])* $t65] [] [] [] [] $($rest)*);
    };
    (@munch $h34:tt $h65:tt [$($f34:tt)*] [$($f65:tt)*] [$($common:ident)*] [$($every:ident)*]
     all $name:ident : $ty:ty; $($rest:tt)*) => {
        ops_tables!(@munch $h34 $h65 [$($f34)* pub $name: $ty,] [$($f65)* pub $name: $ty,]
                    [$($common)* $name] [$($every)* $name] $($rest)*);
    };
    (@munch $h34:tt $h65:tt [$($f34:tt)*] [$($f65:tt)*] [$($common:ident)*] [$($every:ident)*]
     new $name:ident : $ty:ty; $($rest:tt)*) => {
        ops_tables!(@munch $h34 $h65 [$($f34)*] [$($f65)* pub $name: $ty,] [$($common)*]
                    [$($every)* $name] $($rest)*);
    };
    (@munch [$(#[$m34:meta])* $t34:ident] [$(#[$m65:meta])* $t65:ident]
     [$($f34:tt)*] [$($f65:tt)*] [$($common:ident)*] [$($every:ident)*]) => {
        $(#[$m34])*
        #[repr(C)]
        #[derive(Copy, Clone, Default)]
        pub struct $t34 { $($f34)* }

        $(#[$m65])*
        #[repr(C)]
        #[derive(Copy, Clone, Default)]
        pub struct $t65 { $($f65)* }

        impl $t65 {
            /// An older generation's table in this layout: every op it has,
            /// the newer ones empty.
            pub fn from_34(o: &$t34) -> Self {
                $t65 { $($common: o.$common,)* ..Default::default() }
            }
        }

        /// The names of the ops every generation has, in table order (the
        /// members of the PABI 34 table).
        pub const OPS_COMMON: &[&str] = &[$(stringify!($common)),*];
        /// The members of the PABI 65 table, in order.
        pub const OPS_65: &[&str] = &[$(stringify!($every)),*];
    };
}

ops_tables! {
    /// `struct verbs_context_ops`: every operation a provider of private ABI
    /// 34 (rdma-core 44 to 56) can implement, in the order fixed by the ABI
    /// (upstream keeps it sorted by name).  A provider fills in the ones it
    /// supports and passes the table to `verbs_set_ops()`.
    verbs_context_ops;
    /// The same table as private ABI 65 (rdma-core 65) lays it out: a
    /// superset of [`verbs_context_ops`], still sorted by name, so every
    /// member after the first new one moved.  The library's own dispatch
    /// table has this layout whatever the provider's generation.
    verbs_context_ops_65;
    all advise_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            advice: ibv_advise_mr_advice,
            flags: u32,
            sg_list: *mut ibv_sge,
            num_sges: u32,
        ) -> c_int,
    >;
    new alloc_buf: Option<unsafe extern "C" fn(pd: *mut ibv_pd, size: size_t, buf: *mut *mut ibv_buf) -> *mut c_void>;
    all alloc_dm: Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_alloc_dm_attr) -> *mut ibv_dm>;
    new alloc_dmah: Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_dmah_init_attr) -> *mut ibv_dmah>;
    all alloc_mw: Option<unsafe extern "C" fn(pd: *mut ibv_pd, type_: ibv_mw_type) -> *mut ibv_mw>;
    all alloc_null_mr: Option<unsafe extern "C" fn(pd: *mut ibv_pd) -> *mut ibv_mr>;
    all alloc_parent_domain: Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_parent_domain_init_attr) -> *mut ibv_pd>;
    all alloc_pd: Option<unsafe extern "C" fn(context: *mut ibv_context) -> *mut ibv_pd>;
    all alloc_td: Option<unsafe extern "C" fn(context: *mut ibv_context, init_attr: *mut ibv_td_init_attr) -> *mut ibv_td>;
    all async_event: Option<unsafe extern "C" fn(context: *mut ibv_context, event: *mut ibv_async_event)>;
    all attach_counters_point_flow: Option<
        unsafe extern "C" fn(
            counters: *mut ibv_counters,
            attr: *mut ibv_counter_attach_attr,
            flow: *mut ibv_flow,
        ) -> c_int,
    >;
    all attach_mcast: Option<unsafe extern "C" fn(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int>;
    all bind_mw: Option<unsafe extern "C" fn(qp: *mut ibv_qp, mw: *mut ibv_mw, mw_bind: *mut ibv_mw_bind) -> c_int>;
    all close_xrcd: Option<unsafe extern "C" fn(xrcd: *mut ibv_xrcd) -> c_int>;
    all cq_event: Option<unsafe extern "C" fn(cq: *mut ibv_cq)>;
    all create_ah: Option<unsafe extern "C" fn(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah>;
    new create_comp_cntr: Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_comp_cntr_init_attr) -> *mut ibv_comp_cntr>;
    all create_counters: Option<
        unsafe extern "C" fn(context: *mut ibv_context, init_attr: *mut ibv_counters_init_attr) -> *mut ibv_counters,
    >;
    all create_cq: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            cqe: c_int,
            channel: *mut ibv_comp_channel,
            comp_vector: c_int,
        ) -> *mut ibv_cq,
    >;
    all create_cq_ex: Option<unsafe extern "C" fn(context: *mut ibv_context, init_attr: *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex>;
    all create_flow: Option<unsafe extern "C" fn(qp: *mut ibv_qp, flow_attr: *mut ibv_flow_attr) -> *mut ibv_flow>;
    all create_flow_action_esp: Option<
        unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_flow_action_esp_attr) -> *mut ibv_flow_action,
    >;
    all create_qp: Option<unsafe extern "C" fn(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp>;
    all create_qp_ex: Option<
        unsafe extern "C" fn(context: *mut ibv_context, qp_init_attr_ex: *mut ibv_qp_init_attr_ex) -> *mut ibv_qp,
    >;
    all create_rwq_ind_table: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            init_attr: *mut ibv_rwq_ind_table_init_attr,
        ) -> *mut ibv_rwq_ind_table,
    >;
    all create_srq: Option<unsafe extern "C" fn(pd: *mut ibv_pd, srq_init_attr: *mut ibv_srq_init_attr) -> *mut ibv_srq>;
    all create_srq_ex: Option<
        unsafe extern "C" fn(context: *mut ibv_context, srq_init_attr_ex: *mut ibv_srq_init_attr_ex) -> *mut ibv_srq,
    >;
    all create_wq: Option<unsafe extern "C" fn(context: *mut ibv_context, wq_init_attr: *mut ibv_wq_init_attr) -> *mut ibv_wq>;
    new dealloc_dmah: Option<unsafe extern "C" fn(dmah: *mut ibv_dmah) -> c_int>;
    all dealloc_mw: Option<unsafe extern "C" fn(mw: *mut ibv_mw) -> c_int>;
    all dealloc_pd: Option<unsafe extern "C" fn(pd: *mut ibv_pd) -> c_int>;
    all dealloc_td: Option<unsafe extern "C" fn(td: *mut ibv_td) -> c_int>;
    all dereg_mr: Option<unsafe extern "C" fn(vmr: *mut verbs_mr) -> c_int>;
    all destroy_ah: Option<unsafe extern "C" fn(ah: *mut ibv_ah) -> c_int>;
    new destroy_comp_cntr: Option<unsafe extern "C" fn(comp_cntr: *mut ibv_comp_cntr) -> c_int>;
    all destroy_counters: Option<unsafe extern "C" fn(counters: *mut ibv_counters) -> c_int>;
    all destroy_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq) -> c_int>;
    all destroy_flow: Option<unsafe extern "C" fn(flow: *mut ibv_flow) -> c_int>;
    all destroy_flow_action: Option<unsafe extern "C" fn(action: *mut ibv_flow_action) -> c_int>;
    all destroy_qp: Option<unsafe extern "C" fn(qp: *mut ibv_qp) -> c_int>;
    all destroy_rwq_ind_table: Option<unsafe extern "C" fn(rwq_ind_table: *mut ibv_rwq_ind_table) -> c_int>;
    all destroy_srq: Option<unsafe extern "C" fn(srq: *mut ibv_srq) -> c_int>;
    all destroy_wq: Option<unsafe extern "C" fn(wq: *mut ibv_wq) -> c_int>;
    all detach_mcast: Option<unsafe extern "C" fn(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int>;
    new dm_export_dmabuf_fd: Option<unsafe extern "C" fn(dm: *mut ibv_dm) -> c_int>;
    new free_buf: Option<unsafe extern "C" fn(buf: *mut ibv_buf)>;
    all free_context: Option<unsafe extern "C" fn(context: *mut ibv_context)>;
    all free_dm: Option<unsafe extern "C" fn(dm: *mut ibv_dm) -> c_int>;
    all get_srq_num: Option<unsafe extern "C" fn(srq: *mut ibv_srq, srq_num: *mut u32) -> c_int>;
    all import_dm: Option<unsafe extern "C" fn(context: *mut ibv_context, dm_handle: u32) -> *mut ibv_dm>;
    all import_mr: Option<unsafe extern "C" fn(pd: *mut ibv_pd, mr_handle: u32) -> *mut ibv_mr>;
    all import_pd: Option<unsafe extern "C" fn(context: *mut ibv_context, pd_handle: u32) -> *mut ibv_pd>;
    new inc_comp_cntr: Option<unsafe extern "C" fn(comp_cntr: *mut ibv_comp_cntr, amount: u64) -> c_int>;
    new inc_err_comp_cntr: Option<unsafe extern "C" fn(comp_cntr: *mut ibv_comp_cntr, amount: u64) -> c_int>;
    all modify_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq, attr: *mut ibv_modify_cq_attr) -> c_int>;
    all modify_flow_action_esp: Option<unsafe extern "C" fn(action: *mut ibv_flow_action, attr: *mut ibv_flow_action_esp_attr) -> c_int>;
    all modify_qp: Option<unsafe extern "C" fn(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, attr_mask: c_int) -> c_int>;
    all modify_qp_rate_limit: Option<unsafe extern "C" fn(qp: *mut ibv_qp, attr: *mut ibv_qp_rate_limit_attr) -> c_int>;
    all modify_srq: Option<unsafe extern "C" fn(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr, srq_attr_mask: c_int) -> c_int>;
    all modify_wq: Option<unsafe extern "C" fn(wq: *mut ibv_wq, wq_attr: *mut ibv_wq_attr) -> c_int>;
    all open_qp: Option<unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_qp_open_attr) -> *mut ibv_qp>;
    all open_xrcd: Option<
        unsafe extern "C" fn(context: *mut ibv_context, xrcd_init_attr: *mut ibv_xrcd_init_attr) -> *mut ibv_xrcd,
    >;
    all poll_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq, num_entries: c_int, wc: *mut ibv_wc) -> c_int>;
    all post_recv: Option<unsafe extern "C" fn(qp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int>;
    all post_send: Option<unsafe extern "C" fn(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int>;
    all post_srq_ops: Option<unsafe extern "C" fn(srq: *mut ibv_srq, op: *mut ibv_ops_wr, bad_op: *mut *mut ibv_ops_wr) -> c_int>;
    all post_srq_recv: Option<
        unsafe extern "C" fn(srq: *mut ibv_srq, recv_wr: *mut ibv_recv_wr, bad_recv_wr: *mut *mut ibv_recv_wr) -> c_int,
    >;
    new qp_attach_comp_cntr: Option<unsafe extern "C" fn(qp: *mut ibv_qp, comp_cntr: *mut ibv_comp_cntr, attr: *mut ibv_qp_attach_comp_cntr_attr) -> c_int>;
    new query_comp_cntr_caps: Option<unsafe extern "C" fn(context: *mut ibv_context, caps: *mut ibv_comp_cntr_caps, caps_size: size_t) -> c_int>;
    all query_device_ex: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            input: *const ibv_query_device_ex_input,
            attr: *mut ibv_device_attr_ex,
            attr_size: size_t,
        ) -> c_int,
    >;
    all query_ece: Option<unsafe extern "C" fn(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int>;
    all query_port: Option<unsafe extern "C" fn(context: *mut ibv_context, port_num: u8, port_attr: *mut ibv_port_attr) -> c_int>;
    new query_port_speed: Option<unsafe extern "C" fn(context: *mut ibv_context, port_num: u32, speed: *mut u64) -> c_int>;
    all query_qp: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp,
            attr: *mut ibv_qp_attr,
            attr_mask: c_int,
            init_attr: *mut ibv_qp_init_attr,
        ) -> c_int,
    >;
    all query_qp_data_in_order: Option<unsafe extern "C" fn(qp: *mut ibv_qp, op: ibv_wr_opcode, flags: u32) -> c_int>;
    all query_rt_values: Option<unsafe extern "C" fn(context: *mut ibv_context, values: *mut ibv_values_ex) -> c_int>;
    all query_srq: Option<unsafe extern "C" fn(srq: *mut ibv_srq, srq_attr: *mut ibv_srq_attr) -> c_int>;
    new read_comp_cntr: Option<unsafe extern "C" fn(comp_cntr: *mut ibv_comp_cntr, value: *mut u64) -> c_int>;
    all read_counters: Option<
        unsafe extern "C" fn(
            counters: *mut ibv_counters,
            counters_value: *mut u64,
            ncounters: u32,
            flags: u32,
        ) -> c_int,
    >;
    new read_err_comp_cntr: Option<unsafe extern "C" fn(comp_cntr: *mut ibv_comp_cntr, value: *mut u64) -> c_int>;
    all reg_dm_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            dm: *mut ibv_dm,
            dm_offset: u64,
            length: size_t,
            access: c_uint,
        ) -> *mut ibv_mr,
    >;
    all reg_dmabuf_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            offset: u64,
            length: size_t,
            iova: u64,
            fd: c_int,
            access: c_int,
        ) -> *mut ibv_mr,
    >;
    all reg_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            addr: *mut c_void,
            length: size_t,
            hca_va: u64,
            access: c_int,
        ) -> *mut ibv_mr,
    >;
    new reg_mr_ex: Option<unsafe extern "C" fn(pd: *mut ibv_pd, mr_init_attr: *mut ibv_mr_init_attr) -> *mut ibv_mr>;
    all req_notify_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq, solicited_only: c_int) -> c_int>;
    all rereg_mr: Option<
        unsafe extern "C" fn(
            vmr: *mut verbs_mr,
            flags: c_int,
            pd: *mut ibv_pd,
            addr: *mut c_void,
            length: size_t,
            access: c_int,
        ) -> c_int,
    >;
    all resize_cq: Option<unsafe extern "C" fn(cq: *mut ibv_cq, cqe: c_int) -> c_int>;
    new set_comp_cntr: Option<unsafe extern "C" fn(comp_cntr: *mut ibv_comp_cntr, value: u64) -> c_int>;
    all set_ece: Option<unsafe extern "C" fn(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int>;
    new set_err_comp_cntr: Option<unsafe extern "C" fn(comp_cntr: *mut ibv_comp_cntr, value: u64) -> c_int>;
    all unimport_dm: Option<unsafe extern "C" fn(dm: *mut ibv_dm)>;
    all unimport_mr: Option<unsafe extern "C" fn(mr: *mut ibv_mr)>;
    all unimport_pd: Option<unsafe extern "C" fn(pd: *mut ibv_pd)>;
}

#[cfg(test)]
mod tests {
    use super::super::ioctl::ibv_command_buffer;
    use super::*;
    use core::mem::{align_of, offset_of, size_of};
    use std::collections::BTreeSet;

    use crate::testutil::pinned_table as table;

    /// The member lists of both generations' op tables equal upstream's
    /// (pinned in compat-tests/generations/ops{34,65}.expected), and every
    /// member is one pointer, in list order.
    #[test]
    fn op_tables_match_upstream_order() {
        let pinned = |f: &str| -> Vec<String> {
            let path = format!("{}/../compat-tests/generations/{f}", env!("CARGO_MANIFEST_DIR"));
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{path}: {e}"))
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from)
                .collect()
        };
        assert_eq!(OPS_65, pinned("ops65.expected"));
        assert_eq!(OPS_COMMON, pinned("ops34.expected"));
        assert_eq!(size_of::<verbs_context_ops_65>(), OPS_65.len() * size_of::<usize>());
        assert_eq!(size_of::<verbs_context_ops>(), OPS_COMMON.len() * size_of::<usize>());
    }

    /// Size of the field a projection closure points at.
    fn size_of_field<T, F>(_: impl Fn(&T) -> &F) -> usize {
        size_of::<F>()
    }

    /// Records (key, Rust value); the C name of a member is given as a string
    /// because a few differ from the Rust path (keywords, anonymous unions).
    macro_rules! record {
        ($m:ident, $t:ident { $($c:literal => $($f:ident).+),* $(,)? }) => {{
            $m.push((format!("sizeof struct {}", stringify!($t)), size_of::<$t>() as i64));
            $m.push((format!("alignof struct {}", stringify!($t)), align_of::<$t>() as i64));
            $(
                $m.push((format!("offsetof struct {} {}", stringify!($t), $c),
                         offset_of!($t, $($f).+) as i64));
                #[allow(unused_unsafe)]
                $m.push((format!("membersize struct {} {}", stringify!($t), $c),
                         size_of_field(|s: &$t| {
                             // SAFETY: the closure is only used for its type
                             // (never called); a union member's reference is
                             // merely named, never read.
                             unsafe { &s.$($f).+ }
                         }) as i64));
            )*
        }};
    }

    fn measured() -> Vec<(String, i64)> {
        let mut m: Vec<(String, i64)> = Vec::new();

        record!(m, list_node {
            "next" => next,
            "prev" => prev,
        });
        record!(m, verbs_xrcd {
            "xrcd" => xrcd,
            "comp_mask" => comp_mask,
            "handle" => handle,
        });
        record!(m, verbs_srq {
            "srq" => srq,
            "srq_type" => srq_type,
            "xrcd" => xrcd,
            "cq" => cq,
            "srq_num" => srq_num,
        });
        record!(m, verbs_mr {
            "ibv_mr" => ibv_mr,
            "mr_type" => mr_type,
            "access" => access,
        });
        record!(m, verbs_flow_action {
            "action" => action,
            "handle" => handle,
            "type" => r#type,
        });
        record!(m, verbs_dm {
            "dm" => dm,
            "handle" => handle,
        });
        record!(m, verbs_counters {
            "counters" => counters,
            "handle" => handle,
        });
        record!(m, verbs_match_ent {
            "driver_data" => driver_data,
            "u" => u,
            "u.modalias" => u.modalias,
            "u.driver_id" => u.driver_id,
            "vendor" => vendor,
            "device" => device,
            "kind" => kind,
        });
        record!(m, verbs_sysfs_dev {
            "entry" => entry,
            "provider_data" => provider_data,
            "match" => r#match,
            "flags" => flags,
            "sysfs_name" => sysfs_name,
            "sysfs_cdev" => sysfs_cdev,
            "ibdev_name" => ibdev_name,
            "ibdev_path" => ibdev_path,
            "modalias" => modalias,
            "node_guid" => node_guid,
            "driver_id" => driver_id,
            "node_type" => node_type,
            "ibdev_idx" => ibdev_idx,
            "num_ports" => num_ports,
            "abi_ver" => abi_ver,
            "time_created" => time_created,
        });
        record!(m, verbs_device_ops {
            "name" => name,
            "match_min_abi_version" => match_min_abi_version,
            "match_max_abi_version" => match_max_abi_version,
            "match_table" => match_table,
            "static_providers" => static_providers,
            "match_device" => match_device,
            "alloc_context" => alloc_context,
            "import_context" => import_context,
            "alloc_device" => alloc_device,
            "uninit_device" => uninit_device,
        });
        record!(m, verbs_device {
            "device" => device,
            "ops" => ops,
            "refcount" => refcount,
            "entry" => entry,
            "sysfs" => sysfs,
            "core_support" => core_support,
        });
        record!(m, verbs_qp {
            "qp" => u.qp,
            "qp_ex" => u.qp_ex,
            "comp_mask" => comp_mask,
            "xrcd" => xrcd,
        });
        record!(m, verbs_cq {
            "cq" => u.cq,
            "cq_ex" => u.cq_ex,
        });
        record!(m, verbs_context_ops {
            "advise_mr" => advise_mr,
            "alloc_dm" => alloc_dm,
            "alloc_mw" => alloc_mw,
            "alloc_null_mr" => alloc_null_mr,
            "alloc_parent_domain" => alloc_parent_domain,
            "alloc_pd" => alloc_pd,
            "alloc_td" => alloc_td,
            "async_event" => async_event,
            "attach_counters_point_flow" => attach_counters_point_flow,
            "attach_mcast" => attach_mcast,
            "bind_mw" => bind_mw,
            "close_xrcd" => close_xrcd,
            "cq_event" => cq_event,
            "create_ah" => create_ah,
            "create_counters" => create_counters,
            "create_cq" => create_cq,
            "create_cq_ex" => create_cq_ex,
            "create_flow" => create_flow,
            "create_flow_action_esp" => create_flow_action_esp,
            "create_qp" => create_qp,
            "create_qp_ex" => create_qp_ex,
            "create_rwq_ind_table" => create_rwq_ind_table,
            "create_srq" => create_srq,
            "create_srq_ex" => create_srq_ex,
            "create_wq" => create_wq,
            "dealloc_mw" => dealloc_mw,
            "dealloc_pd" => dealloc_pd,
            "dealloc_td" => dealloc_td,
            "dereg_mr" => dereg_mr,
            "destroy_ah" => destroy_ah,
            "destroy_counters" => destroy_counters,
            "destroy_cq" => destroy_cq,
            "destroy_flow" => destroy_flow,
            "destroy_flow_action" => destroy_flow_action,
            "destroy_qp" => destroy_qp,
            "destroy_rwq_ind_table" => destroy_rwq_ind_table,
            "destroy_srq" => destroy_srq,
            "destroy_wq" => destroy_wq,
            "detach_mcast" => detach_mcast,
            "free_context" => free_context,
            "free_dm" => free_dm,
            "get_srq_num" => get_srq_num,
            "import_dm" => import_dm,
            "import_mr" => import_mr,
            "import_pd" => import_pd,
            "modify_cq" => modify_cq,
            "modify_flow_action_esp" => modify_flow_action_esp,
            "modify_qp" => modify_qp,
            "modify_qp_rate_limit" => modify_qp_rate_limit,
            "modify_srq" => modify_srq,
            "modify_wq" => modify_wq,
            "open_qp" => open_qp,
            "open_xrcd" => open_xrcd,
            "poll_cq" => poll_cq,
            "post_recv" => post_recv,
            "post_send" => post_send,
            "post_srq_ops" => post_srq_ops,
            "post_srq_recv" => post_srq_recv,
            "query_device_ex" => query_device_ex,
            "query_ece" => query_ece,
            "query_port" => query_port,
            "query_qp" => query_qp,
            "query_qp_data_in_order" => query_qp_data_in_order,
            "query_rt_values" => query_rt_values,
            "query_srq" => query_srq,
            "read_counters" => read_counters,
            "reg_dm_mr" => reg_dm_mr,
            "reg_dmabuf_mr" => reg_dmabuf_mr,
            "reg_mr" => reg_mr,
            "req_notify_cq" => req_notify_cq,
            "rereg_mr" => rereg_mr,
            "resize_cq" => resize_cq,
            "set_ece" => set_ece,
            "unimport_dm" => unimport_dm,
            "unimport_mr" => unimport_mr,
            "unimport_pd" => unimport_pd,
        });
        // cmd_ioctl.h's command buffer is mirrored in super::ioctl; its three
        // one-bit flags are a single byte `flags` there and are not listed.
        record!(m, ibv_command_buffer {
            "next" => next,
            "next_attr" => next_attr,
            "last_attr" => last_attr,
            "uhw_in_idx" => uhw_in_idx,
            "uhw_out_idx" => uhw_out_idx,
            "uhw_in_headroom_dwords" => uhw_in_headroom_dwords,
            "uhw_out_headroom_dwords" => uhw_out_headroom_dwords,
            "hdr" => hdr,
        });
        for (name, size) in [
            ("verbs_xrcd_mask", size_of::<verbs_xrcd_mask>()),
            ("create_cq_cmd_flags", size_of::<create_cq_cmd_flags>()),
            ("verbs_qp_mask", size_of::<verbs_qp_mask>()),
            ("ibv_gid_type_sysfs", size_of::<ibv_gid_type_sysfs>()),
            ("verbs_query_gid_attr_mask", size_of::<verbs_query_gid_attr_mask>()),
            ("ibv_mr_type", size_of::<ibv_mr_type>()),
            ("ibv_flow_action_type", size_of::<ibv_flow_action_type>()),
        ] {
            m.push((format!("sizeof enum {name}"), size as i64));
        }
        m.push((
            "sizeof typedef verbs_driver_init_func".into(),
            size_of::<verbs_driver_init_func>() as i64,
        ));
        m
    }

    macro_rules! consts {
        ($kind:literal: $($name:ident),* $(,)?) => {
            vec![$((format!("{} {}", $kind, stringify!($name)), $name as i64)),*]
        };
    }

    fn constants() -> Vec<(String, i64)> {
        let mut v = consts!("enum":
            VERBS_LOG_LEVEL_NONE, VERBS_LOG_ERR, VERBS_LOG_WARN, VERBS_LOG_INFO, VERBS_LOG_DEBUG,
            VERBS_XRCD_HANDLE, VERBS_XRCD_RESERVED,
            CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX,
            VERBS_QP_XRCD, VERBS_QP_EX,
            IBV_GID_TYPE_SYSFS_IB_ROCE_V1, IBV_GID_TYPE_SYSFS_ROCE_V2,
            VERBS_QUERY_GID_ATTR_GID, VERBS_QUERY_GID_ATTR_TYPE, VERBS_QUERY_GID_ATTR_NDEV_IFINDEX,
            IBV_MR_TYPE_MR, IBV_MR_TYPE_NULL_MR, IBV_MR_TYPE_IMPORTED_MR, IBV_MR_TYPE_DMABUF_MR,
            IBV_FLOW_ACTION_UNSPECIFIED, IBV_FLOW_ACTION_ESP,
            VERBS_MATCH_SENTINEL, VERBS_MATCH_PCI, VERBS_MATCH_MODALIAS, VERBS_MATCH_DRIVER_ID,
            VSYSFS_READ_MODALIAS, VSYSFS_READ_NODE_GUID,
        );
        v.extend(consts!("macro":
            IBVERBS_PABI_VERSION, IB_USER_VERBS_MIN_ABI_VERSION, IB_USER_VERBS_MAX_ABI_VERSION,
        ));
        v
    }

    /// Every measured value equals the pinned upstream value.
    #[test]
    fn matches_pinned_table() {
        let table = table();
        let mut bad = Vec::new();
        for (key, got) in measured().into_iter().chain(constants()) {
            match table.get(&key) {
                None => bad.push(format!("{key}: not in provider_abi.expected")),
                Some(&want) if want != got => bad.push(format!("{key}: expected {want}, got {got}")),
                Some(_) => {}
            }
        }
        assert!(bad.is_empty(), "{} mismatches:\n{}", bad.len(), bad.join("\n"));
    }

    /// Every member the table lists for a mirrored struct is mirrored here
    /// (catches a field missing on both the Rust and the test side), and every
    /// driver.h enumerator has a constant.
    #[test]
    fn covers_every_member_and_enumerator() {
        let measured: BTreeSet<String> = measured().into_iter().chain(constants()).map(|(k, _)| k).collect();
        let structs: BTreeSet<String> = measured
            .iter()
            .filter_map(|k| k.strip_prefix("sizeof struct "))
            .map(str::to_string)
            .collect();
        // enumerators that belong to kern-abi.h / cmd_ioctl.h rather than driver.h
        let foreign = |name: &str| {
            name.starts_with("_ABI_ALIGN_") || name.starts_with("IB_USER_VERBS_CMD_") || name == "_UHW_NO_INDEX"
        };
        let mut missing = Vec::new();
        for key in table().keys() {
            let key = key.as_str();
            let words: Vec<&str> = key.split(' ').collect();
            let wanted = match words.as_slice() {
                ["offsetof" | "membersize", "struct", s, ..] => structs.contains(*s),
                ["enum", name] => !foreign(name),
                _ => false,
            };
            if wanted && !measured.contains(key) {
                missing.push(key.to_string());
            }
        }
        missing.sort();
        assert!(
            missing.is_empty(),
            "not covered by the Rust mirrors:\n{}",
            missing.join("\n")
        );
    }
}
