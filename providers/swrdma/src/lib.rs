//! swrdma: a kernel-free software RDMA device for libibverbs (provider ABI
//! 34).  See README.md for the design.

mod agentconn;
mod agentops;
mod context;
mod deferq;
mod device;
mod direct;
mod handles;
mod ipc;
mod linklist;
mod links;
mod locks;
mod mem;
mod objects;
mod ops;
mod poll;
mod qpex;
mod registry;
mod send;
mod shared;
mod sys;
mod wire;

use ibverbs_abi::*;
use std::os::raw::c_char;

extern "C" {
    fn verbs_register_driver_34(ops: *const verbs_device_ops);
}

static MATCH_TABLE: [verbs_match_ent; 2] = [
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u: verbs_match_ent_u {
            modalias: c"swrdma:*".as_ptr() as *const c_char,
        },
        vendor: 0,
        device: 0,
        kind: VERBS_MATCH_MODALIAS as u8,
    },
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u: verbs_match_ent_u { driver_id: 0 },
        vendor: 0,
        device: 0,
        kind: VERBS_MATCH_SENTINEL as u8,
    },
];

static DEVICE_OPS: verbs_device_ops = verbs_device_ops {
    name: c"swrdma".as_ptr(),
    match_min_abi_version: 0,
    match_max_abi_version: i32::MAX as u32,
    match_table: &MATCH_TABLE as *const _ as *const verbs_match_ent,
    static_providers: std::ptr::null_mut(),
    match_device: None,
    alloc_context: Some(agentops::alloc_context),
    import_context: None,
    alloc_device: Some(device::alloc_device),
    uninit_device: Some(device::uninit_device),
};

/// Registers the driver when the library loads us (an ELF constructor, as
/// upstream's drivers do).  `unsafe` for `ctor`: it runs before `main` /
/// during `dlopen`, where only the plain call below happens (no std
/// runtime services are used).
#[ctor::ctor(unsafe)]
fn swrdma_init() {
    // SAFETY: `DEVICE_OPS` is a `'static` table in the provider-ABI 34
    // layout (`ibverbs-abi`), with a sentinel-terminated match table and
    // `extern "C"` callbacks; the library keeps the pointer, which stays
    // valid for as long as we are loaded.
    unsafe { verbs_register_driver_34(&DEVICE_OPS) };
}
