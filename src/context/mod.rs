//! Device contexts: allocation on behalf of providers
//! (`_verbs_init_and_alloc_context`), the library-private part of every
//! context (the op table the library dispatches through), `verbs_set_ops`,
//! opening and closing devices.

pub mod dummy_ops;
pub mod ops;

use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::abi::*;
use crate::ffi::set_errno;

/// Number of ioctl-capable ops tracked in `unsupported_ioctls`.
pub const VERBS_OPS_NUM: usize = 128;

/// The library-private state of a context (`verbs_context.priv`).  Never
/// seen by providers or applications; only its address is stored.
pub struct ContextPrivate {
    /// Ops the kernel answered "not supported" for (one bit per op), so the
    /// command layer falls back to write() without asking again.
    pub unsupported_ioctls: [AtomicU64; VERBS_OPS_NUM / 64],
    pub driver_id: u32,
    /// The kernel accepts write() commands through the ioctl interface.
    pub use_ioctl_write: bool,
    /// The ops the library dispatches through: dummy defaults overwritten by
    /// the provider's `verbs_set_ops`.
    pub ops: verbs_context_ops,
    /// The context came from `ibv_import_device`.
    pub imported: bool,
}

impl ContextPrivate {
    pub fn is_unsupported(&self, op: usize) -> bool {
        op < VERBS_OPS_NUM && self.unsupported_ioctls[op / 64].load(Ordering::Relaxed) & (1 << (op % 64)) != 0
    }
    pub fn set_unsupported(&self, op: usize) {
        if op < VERBS_OPS_NUM {
            self.unsupported_ioctls[op / 64].fetch_or(1 << (op % 64), Ordering::Relaxed);
        }
    }
}

/// The `verbs_context` that contains `ctx` (providers always allocate the
/// extended form; `abi_compat == __VERBS_ABI_IS_EXTENDED` marks it).
///
/// # Safety
/// `ctx` must be a context created through `_verbs_init_and_alloc_context`.
pub unsafe fn vctx_of(ctx: *mut ibv_context) -> *mut verbs_context {
    ctx.cast::<u8>()
        .sub(std::mem::offset_of!(verbs_context, context))
        .cast()
}

/// The private part of a context.
///
/// # Safety
/// As for [`vctx_of`]; the context must not have been uninitialised.
pub unsafe fn priv_of(ctx: *mut ibv_context) -> *mut ContextPrivate {
    (*vctx_of(ctx)).r#priv.cast()
}

/// The op table the library dispatches through (upstream's `get_ops`).
///
/// # Safety
/// As for [`priv_of`].
pub unsafe fn ops_of<'a>(ctx: *mut ibv_context) -> &'a verbs_context_ops {
    &(*priv_of(ctx)).ops
}

/// Upstream's `verbs_init_context`: takes ownership of `cmd_fd` (closed on
/// failure).  Returns 0 or -1 with errno.
///
/// # Safety
/// `vctx` points to zeroed memory large enough for a `verbs_context`;
/// `device` is a listed device.
pub unsafe fn init_context(vctx: *mut verbs_context, device: *mut ibv_device, cmd_fd: c_int, driver_id: u32) -> c_int {
    crate::device::hold(device);
    let ctx = std::ptr::addr_of_mut!((*vctx).context);
    (*ctx).device = device;
    (*ctx).cmd_fd = cmd_fd;
    (*ctx).async_fd = -1;
    libc::pthread_mutex_init(std::ptr::addr_of_mut!((*ctx).mutex), std::ptr::null());
    (*ctx).abi_compat = usize::MAX as *mut c_void; // __VERBS_ABI_IS_EXTENDED
    (*vctx).sz = std::mem::size_of::<verbs_context>();
    let p = Box::new(ContextPrivate {
        unsupported_ioctls: Default::default(),
        driver_id,
        use_ioctl_write: false,
        ops: dummy_ops::DUMMY_OPS,
        imported: false,
    });
    (*vctx).r#priv = Box::into_raw(p).cast();
    set_ops(vctx, &dummy_ops::DUMMY_OPS);
    (*priv_of(ctx)).use_ioctl_write = crate::kernel::state::has_ioctl_write(ctx);
    0
}

/// `verbs_uninit_context`: releases what `init_context` took.
///
/// # Safety
/// `vctx` was initialised by `init_context` and is not used afterwards
/// (the provider frees the memory).
pub unsafe fn uninit_context(vctx: *mut verbs_context) {
    let p = (*vctx).r#priv.cast::<ContextPrivate>();
    if !p.is_null() {
        drop(Box::from_raw(p));
        (*vctx).r#priv = std::ptr::null_mut();
    }
    let ctx = std::ptr::addr_of_mut!((*vctx).context);
    if (*ctx).cmd_fd != -1 {
        libc::close((*ctx).cmd_fd);
    }
    if (*ctx).async_fd != -1 {
        libc::close((*ctx).async_fd);
    }
    crate::device::put((*ctx).device);
}

/// `_verbs_init_and_alloc_context`: allocates the provider's context
/// wrapper (`alloc_size` bytes, zeroed, C allocator — the provider frees it
/// with free()) with the `verbs_context` at `context_offset`.
///
/// # Safety
/// Called by providers with their own layout facts.
pub unsafe fn init_and_alloc(
    device: *mut ibv_device,
    cmd_fd: c_int,
    alloc_size: usize,
    context_offset: usize,
    driver_id: u32,
) -> *mut c_void {
    let size = alloc_size.max(context_offset + std::mem::size_of::<verbs_context>());
    let drv = libc::calloc(1, size);
    if drv.is_null() {
        set_errno(libc::ENOMEM);
        if cmd_fd >= 0 {
            libc::close(cmd_fd);
        }
        return std::ptr::null_mut();
    }
    let vctx = drv.cast::<u8>().add(context_offset).cast::<verbs_context>();
    if init_context(vctx, device, cmd_fd, driver_id) != 0 {
        libc::free(drv);
        return std::ptr::null_mut();
    }
    drv
}

macro_rules! set_ops_impl {
    ($vctx:ident, $priv:ident, $ops:ident;
     priv_compat: [$($pc:ident),*];
     priv_only: [$($po:ident),*];
     ctx: [$($c:ident),*];
     vctx: [$($v:ident),*];
     renamed: [$($vn:ident = $on:ident),*]) => {{
        let ctxops = &mut (*$vctx).context.ops;
        // Ops kept only in the private table, with the legacy
        // `_compat_<name>` slot of ibv_context_ops set for old binaries.
        $( if let Some(f) = $ops.$pc {
            $priv.ops.$pc = Some(f);
            paste_compat!(ctxops, $pc, f);
        } )*
        $( if let Some(f) = $ops.$po { $priv.ops.$po = Some(f); } )*
        // Ops also published in ibv_context_ops (used by inline functions).
        $( if let Some(f) = $ops.$c { $priv.ops.$c = Some(f); ctxops.$c = Some(f); } )*
        // Ops also published in verbs_context (inline functions).
        $( if let Some(f) = $ops.$v { $priv.ops.$v = Some(f); (*$vctx).$v = Some(f); } )*
        $( if let Some(f) = $ops.$on { $priv.ops.$on = Some(f); (*$vctx).$vn = Some(f); } )*
    }};
}

/// Sets `ctxops._compat_<name>` to the op's address (type-erased).
macro_rules! paste_compat {
    ($ctxops:ident, alloc_pd, $f:ident) => {
        $ctxops._compat_alloc_pd = compat_fn($f as *const ())
    };
    ($ctxops:ident, async_event, $f:ident) => {
        $ctxops._compat_async_event = compat_fn($f as *const ())
    };
    ($ctxops:ident, attach_mcast, $f:ident) => {
        $ctxops._compat_attach_mcast = compat_fn($f as *const ())
    };
    ($ctxops:ident, cq_event, $f:ident) => {
        $ctxops._compat_cq_event = compat_fn($f as *const ())
    };
    ($ctxops:ident, create_ah, $f:ident) => {
        $ctxops._compat_create_ah = compat_fn($f as *const ())
    };
    ($ctxops:ident, create_cq, $f:ident) => {
        $ctxops._compat_create_cq = compat_fn($f as *const ())
    };
    ($ctxops:ident, create_qp, $f:ident) => {
        $ctxops._compat_create_qp = compat_fn($f as *const ())
    };
    ($ctxops:ident, create_srq, $f:ident) => {
        $ctxops._compat_create_srq = compat_fn($f as *const ())
    };
    ($ctxops:ident, dealloc_pd, $f:ident) => {
        $ctxops._compat_dealloc_pd = compat_fn($f as *const ())
    };
    ($ctxops:ident, dereg_mr, $f:ident) => {
        $ctxops._compat_dereg_mr = compat_fn($f as *const ())
    };
    ($ctxops:ident, destroy_ah, $f:ident) => {
        $ctxops._compat_destroy_ah = compat_fn($f as *const ())
    };
    ($ctxops:ident, destroy_cq, $f:ident) => {
        $ctxops._compat_destroy_cq = compat_fn($f as *const ())
    };
    ($ctxops:ident, destroy_qp, $f:ident) => {
        $ctxops._compat_destroy_qp = compat_fn($f as *const ())
    };
    ($ctxops:ident, destroy_srq, $f:ident) => {
        $ctxops._compat_destroy_srq = compat_fn($f as *const ())
    };
    ($ctxops:ident, detach_mcast, $f:ident) => {
        $ctxops._compat_detach_mcast = compat_fn($f as *const ())
    };
    ($ctxops:ident, modify_qp, $f:ident) => {
        $ctxops._compat_modify_qp = compat_fn($f as *const ())
    };
    ($ctxops:ident, modify_srq, $f:ident) => {
        $ctxops._compat_modify_srq = compat_fn($f as *const ())
    };
    ($ctxops:ident, query_qp, $f:ident) => {
        $ctxops._compat_query_qp = compat_fn($f as *const ())
    };
    ($ctxops:ident, query_srq, $f:ident) => {
        $ctxops._compat_query_srq = compat_fn($f as *const ())
    };
    ($ctxops:ident, reg_mr, $f:ident) => {
        $ctxops._compat_reg_mr = compat_fn($f as *const ())
    };
    ($ctxops:ident, rereg_mr, $f:ident) => {
        $ctxops._compat_rereg_mr = compat_fn($f as *const ())
    };
    ($ctxops:ident, resize_cq, $f:ident) => {
        $ctxops._compat_resize_cq = compat_fn($f as *const ())
    };
}

fn compat_fn(p: *const ()) -> ibv_compat_op_fn {
    // SAFETY: only stored for old binaries that call through the slot with
    // the op's real prototype; a non-null function address is a valid
    // function pointer value.
    unsafe { std::mem::transmute::<*const (), ibv_compat_op_fn>(p) }
}

/// `verbs_set_ops`: every op the provider implements replaces the default.
///
/// # Safety
/// `vctx` was initialised by `init_context`; `ops` is a valid table.
pub unsafe fn set_ops(vctx: *mut verbs_context, ops: *const verbs_context_ops) {
    let ops = &*ops;
    let p = &mut *(*vctx).r#priv.cast::<ContextPrivate>();
    set_ops_impl!(vctx, p, ops;
        priv_compat: [alloc_pd, async_event, attach_mcast, cq_event, create_ah, create_cq,
                      create_qp, create_srq, dealloc_pd, dereg_mr, destroy_ah, destroy_cq,
                      destroy_qp, destroy_srq, detach_mcast, modify_qp, modify_srq, query_qp,
                      query_srq, reg_mr, rereg_mr, resize_cq];
        priv_only: [create_cq_ex, free_context, import_dm, import_mr, import_pd, query_ece,
                    query_port, query_qp_data_in_order, reg_dmabuf_mr, set_ece, unimport_dm,
                    unimport_mr, unimport_pd];
        ctx: [alloc_mw, bind_mw, dealloc_mw, poll_cq, post_recv, post_send, post_srq_recv,
              req_notify_cq];
        vctx: [advise_mr, alloc_dm, alloc_null_mr, alloc_parent_domain, alloc_td,
               attach_counters_point_flow, create_counters, close_xrcd, create_flow_action_esp,
               create_qp_ex, create_rwq_ind_table, create_srq_ex, create_wq, dealloc_td,
               destroy_counters, destroy_flow_action, destroy_rwq_ind_table, destroy_wq,
               free_dm, get_srq_num, modify_cq, modify_flow_action_esp, modify_qp_rate_limit,
               modify_wq, open_qp, open_xrcd, post_srq_ops, query_device_ex, query_rt_values,
               read_counters, reg_dm_mr];
        renamed: [ibv_create_flow = create_flow, ibv_destroy_flow = destroy_flow]);
}

pub mod cdev;

/// `verbs_open_device`: opens the command fd, lets the provider allocate
/// its context, installs the library's ops and the async event fd.
///
/// # Safety
/// `device` is a listed device (first member of a `verbs_device`).
pub unsafe fn open_device(device: *mut ibv_device, private_data: *mut c_void) -> *mut ibv_context {
    let vdev = device.cast::<verbs_device>();
    let sysfs = (*vdev).sysfs;
    let mut cmd_fd = -1;
    // A software device (crate::soft) has no character device.
    let kernel = !sysfs.is_null() && !crate::soft::is_soft(&*sysfs);
    if kernel {
        let name = std::ffi::CStr::from_ptr((*sysfs).sysfs_name.as_ptr()).to_string_lossy();
        cmd_fd = cdev::open_cdev(&name, (*sysfs).sysfs_cdev);
        if cmd_fd < 0 {
            return std::ptr::null_mut();
        }
    }
    let ops = (*vdev).ops;
    let Some(alloc) = (if ops.is_null() { None } else { (*ops).alloc_context }) else {
        if cmd_fd >= 0 {
            libc::close(cmd_fd);
        }
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    };
    // The provider owns cmd_fd from here on (closes it on failure).
    let vctx = alloc(device, cmd_fd, private_data);
    if vctx.is_null() {
        return std::ptr::null_mut();
    }
    ops::set_lib_ops(vctx);
    let ctx = std::ptr::addr_of_mut!((*vctx).context);
    if kernel && (*ctx).async_fd == -1 {
        let rc = crate::kernel::verbs::device::alloc_async_fd(ctx);
        if rc != 0 {
            close_device(ctx);
            set_errno(rc);
            return std::ptr::null_mut();
        }
    }
    ctx
}

/// `ibv_close_device`: the provider frees its context (and calls
/// `verbs_uninit_context`).
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn close_device(ctx: *mut ibv_context) -> c_int {
    if let Some(free) = ops_of(ctx).free_context {
        free(ctx);
    }
    0
}
