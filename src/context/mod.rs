//! Device contexts: allocation on behalf of providers
//! (`_verbs_init_and_alloc_context`), the library-private part of every
//! context (the op table the library dispatches through), `verbs_set_ops`,
//! opening and closing devices.

pub mod dummy_ops;
pub mod ops;

use std::os::raw::{c_int, c_void};

use crate::abi::*;
use crate::ffi::set_errno;
use crate::generation::{Pabi, Registration};

pub use crate::kernel::state::vctx_of;
use crate::kernel::state::CmdState;

/// The library-private state of a context (`verbs_context.priv`).  Never
/// seen by providers or applications; only its address is stored.
#[repr(C)]
pub struct ContextPrivate {
    /// The command layer's state.  First member: `kernel::state::of` finds
    /// it at the start of the private data.
    cmd: CmdState,
    /// The ops the library dispatches through: every slot filled, with the
    /// dummy "not supported" defaults overwritten by the provider's
    /// `verbs_set_ops` (only ever with a present op).
    ops: verbs_context_ops_65,
    /// The private-ABI generation of the provider that owns the context.
    pabi: Pabi,
}

/// The private part of a context.
///
/// # Safety
/// `ctx` must be a context created through `_verbs_init_and_alloc_context`
/// and not yet uninitialised.
pub unsafe fn priv_of(ctx: *mut ibv_context) -> *mut ContextPrivate {
    // SAFETY: such a context is the `context` member of a verbs_context
    // whose `priv` init_context set.
    unsafe { (*vctx_of(ctx)).r#priv.cast() }
}

/// The op table the library dispatches through (upstream's `get_ops`).
///
/// # Safety
/// As for [`priv_of`]; the table lives as long as the context.
pub unsafe fn ops_of<'a>(ctx: *mut ibv_context) -> &'a verbs_context_ops_65 {
    // SAFETY: the private data of a live context (caller's contract).
    unsafe { &(*priv_of(ctx)).ops }
}

/// An op of a context's table.  Every slot is filled (see
/// [`ContextPrivate::ops`]), so call sites never handle a missing op: the
/// dummy default gives upstream's "not supported" answer.
pub fn filled<F>(slot: Option<F>) -> F {
    match slot {
        Some(f) => f,
        None => unreachable!("empty op slot: set_ops only stores present ops over the dummy table"),
    }
}

/// `op!(ctx, name)`: the op `name` of context `ctx`, ready to call (an
/// unsafe operation: `ctx` must be an open context).
#[macro_export]
macro_rules! op {
    ($ctx:expr, $name:ident) => {
        $crate::context::filled($crate::context::ops_of($ctx).$name)
    };
}

/// What is known of the provider whose device ops are at `ops` (an
/// address kept as a number), worked out when a context first needs it.
fn registration_at(ops: usize) -> Registration {
    crate::provider::registration_of(ops as *const crate::abi::verbs_device_ops)
}

/// Upstream's `verbs_init_context`: takes ownership of `cmd_fd` (closed on
/// failure).  Returns 0 or -1 with errno.
///
/// # Safety
/// `vctx` is the common part (the view, see [`crate::generation`]) of zeroed
/// memory large enough for a `verbs_context` of generation `pabi`;
/// `device` is a listed device.
pub unsafe fn init_context(
    vctx: *mut verbs_context,
    device: *mut ibv_device,
    cmd_fd: c_int,
    driver_id: u32,
    pabi: Pabi,
) -> c_int {
    // A reference on the device, released in uninit_context.
    crate::device::hold(device);
    // SAFETY: `vctx` is zeroed memory for a verbs_context that nobody else
    // uses yet (contract); its mutex is initialised in place.
    let ctx = unsafe {
        let ctx = std::ptr::addr_of_mut!((*vctx).context);
        (*ctx).device = device;
        (*ctx).cmd_fd = cmd_fd;
        (*ctx).async_fd = -1;
        libc::pthread_mutex_init(std::ptr::addr_of_mut!((*ctx).mutex), std::ptr::null());
        (*ctx).abi_compat = usize::MAX as *mut c_void; // __VERBS_ABI_IS_EXTENDED
        (*vctx).sz = pabi.info().vctx_size;
        ctx
    };
    // SAFETY: a listed device is the first member of its verbs_device.
    let ops = unsafe { (*device.cast::<verbs_device>()).ops };
    let p = Box::new(ContextPrivate {
        cmd: CmdState::new_deferred(driver_id, pabi, registration_at, ops as usize),
        ops: dummy_ops::DUMMY_OPS,
        pabi,
    });
    let cmd = std::ptr::addr_of!(p.cmd);
    // SAFETY: as above; `priv` owns the box until uninit_context, so the
    // context's ops and command state stay valid as long as the context.
    unsafe {
        (*vctx).r#priv = Box::into_raw(p).cast();
        set_ops(vctx, &dummy_ops::DUMMY_OPS);
    }
    if cmd_fd < 0 {
        // No kernel command interface (a device without a character device,
        // i.e. the software device): no ioctl method exists, so every verb
        // that has a legacy path (GID queries: sysfs) takes it at once.
        // SAFETY: `cmd` points into the private data just installed.
        unsafe { (*cmd).mark_all_unsupported() };
    } else {
        // SAFETY: the context is initialised and `cmd_fd` is its command
        // fd; `cmd` points into the private data just installed.
        unsafe { (*cmd).set_use_ioctl_write(crate::kernel::ioctl::has_ioctl_write(ctx)) };
    }
    0
}

/// `verbs_uninit_context`: releases what `init_context` took.
///
/// # Safety
/// `vctx` was initialised by `init_context` and is not used afterwards
/// (the provider frees the memory).
pub unsafe fn uninit_context(vctx: *mut verbs_context) {
    // SAFETY: a context init_context set up (contract): `priv` is null or
    // the box it installed, dropped exactly once here; the context owns its
    // command and async fds.
    let device = unsafe {
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
        (*ctx).device
    };
    // The reference init_context took on this device.
    crate::device::put(device);
}

/// `_verbs_init_and_alloc_context`: allocates the provider's context
/// wrapper (`alloc_size` bytes, zeroed, C allocator — the provider frees it
/// with free()) with the generation's `verbs_context` at `context_offset`.
///
/// # Safety
/// Called by providers with their own layout facts.
pub unsafe fn init_and_alloc(
    device: *mut ibv_device,
    cmd_fd: c_int,
    alloc_size: usize,
    context_offset: usize,
    driver_id: u32,
    pabi: Pabi,
) -> *mut c_void {
    let size = alloc_size.max(context_offset.saturating_add(pabi.info().vctx_size));
    // SAFETY: plain allocation; the provider frees it with free().
    let drv = unsafe { libc::calloc(1, size) };
    if drv.is_null() {
        set_errno(libc::ENOMEM);
        if cmd_fd >= 0 {
            // SAFETY: the provider handed us ownership of cmd_fd.
            unsafe { libc::close(cmd_fd) };
        }
        return std::ptr::null_mut();
    }
    // SAFETY: `size` covers `context_offset` plus a whole verbs_context of
    // the generation, whose common part is its view.
    let vctx = pabi.view(unsafe { drv.cast::<u8>().add(context_offset) }.cast());
    // SAFETY: zeroed memory for a verbs_context; the provider passes a
    // listed device.
    if unsafe { init_context(vctx, device, cmd_fd, driver_id, pabi) } != 0 {
        // SAFETY: the allocation above, not handed out.
        unsafe { libc::free(drv) };
        return std::ptr::null_mut();
    }
    drv
}

macro_rules! set_ops_impl {
    ($vctx:ident, $priv:ident, $ops:ident;
     priv_compat: [$($pc:ident => $compat:ident),*];
     priv_only: [$($po:ident),*];
     ctx: [$($c:ident),*];
     vctx: [$($v:ident),*];
     renamed: [$($vn:ident = $on:ident),*]) => {{
        let ctxops = &mut (*$vctx).context.ops;
        // Ops kept only in the private table, with the legacy
        // `_compat_<name>` slot of ibv_context_ops set (type-erased) for
        // old binaries.
        $( if let Some(f) = $ops.$pc {
            $priv.ops.$pc = Some(f);
            ctxops.$compat = compat_fn(f as *const ());
        } )*
        $( if let Some(f) = $ops.$po { $priv.ops.$po = Some(f); } )*
        // Ops also published in ibv_context_ops (used by inline functions).
        $( if let Some(f) = $ops.$c { $priv.ops.$c = Some(f); ctxops.$c = Some(f); } )*
        // Ops also published in verbs_context (inline functions).
        $( if let Some(f) = $ops.$v { $priv.ops.$v = Some(f); (*$vctx).$v = Some(f); } )*
        $( if let Some(f) = $ops.$on { $priv.ops.$on = Some(f); (*$vctx).$vn = Some(f); } )*
    }};
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
pub unsafe fn set_ops(vctx: *mut verbs_context, ops: *const verbs_context_ops_65) {
    // SAFETY: an initialised context (contract): `priv` is its private
    // data, exclusively ours here, and `ops` a valid table; only op slots
    // are written, each with a present op.
    unsafe {
        let ops = &*ops;
        let p = &mut *(*vctx).r#priv.cast::<ContextPrivate>();
        set_ops_impl!(vctx, p, ops;
            priv_compat: [alloc_pd => _compat_alloc_pd,
                      async_event => _compat_async_event,
                      attach_mcast => _compat_attach_mcast,
                      cq_event => _compat_cq_event,
                      create_ah => _compat_create_ah,
                      create_cq => _compat_create_cq,
                      create_qp => _compat_create_qp,
                      create_srq => _compat_create_srq,
                      dealloc_pd => _compat_dealloc_pd,
                      dereg_mr => _compat_dereg_mr,
                      destroy_ah => _compat_destroy_ah,
                      destroy_cq => _compat_destroy_cq,
                      destroy_qp => _compat_destroy_qp,
                      destroy_srq => _compat_destroy_srq,
                      detach_mcast => _compat_detach_mcast,
                      modify_qp => _compat_modify_qp,
                      modify_srq => _compat_modify_srq,
                      query_qp => _compat_query_qp,
                      query_srq => _compat_query_srq,
                      reg_mr => _compat_reg_mr,
                      rereg_mr => _compat_rereg_mr,
                      resize_cq => _compat_resize_cq];
            priv_only: [alloc_buf, alloc_dmah, create_comp_cntr, dealloc_dmah, destroy_comp_cntr,
                        dm_export_dmabuf_fd, free_buf, inc_comp_cntr, inc_err_comp_cntr,
                        qp_attach_comp_cntr, query_comp_cntr_caps, query_port_speed, read_comp_cntr,
                        read_err_comp_cntr, reg_mr_ex, set_comp_cntr, set_err_comp_cntr,
                        create_cq_ex, free_context, import_dm, import_mr, import_pd, query_ece,
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
        // A rdma-core 65 context publishes its newest ops in front.
        if let Some(front) = p.pabi.front_of(vctx) {
            let o = &p.ops;
            *front = verbs_context_65_front {
                free_buf: o.free_buf,
                alloc_buf: o.alloc_buf,
                dm_export_dmabuf_fd: o.dm_export_dmabuf_fd,
                reg_mr_ex: o.reg_mr_ex,
                dealloc_dmah: o.dealloc_dmah,
                alloc_dmah: o.alloc_dmah,
            };
        }
    }
}

/// `verbs_set_ops@IBVERBS_PRIVATE_34`: an older provider's table, translated.
///
/// # Safety
/// As for [`set_ops`], with a PABI 34 table.
pub unsafe fn set_ops_34(vctx: *mut verbs_context, ops: *const verbs_context_ops) {
    // SAFETY: a valid table (contract).
    let ops = verbs_context_ops_65::from_34(unsafe { &*ops });
    // SAFETY: as the contract says.
    unsafe { set_ops(vctx, &ops) }
}

pub mod cdev;

/// `verbs_open_device`: opens the command fd, lets the provider allocate
/// its context, installs the library's ops and the async event fd.
///
/// # Safety
/// `device` is a listed device (first member of a `verbs_device`).
pub unsafe fn open_device(device: *mut ibv_device, private_data: *mut c_void) -> *mut ibv_context {
    let vdev = device.cast::<verbs_device>();
    // SAFETY: a listed device is the first member of a live verbs_device
    // (contract), whose sysfs record lives as long as the device.
    let (sysfs, ops) = unsafe { ((*vdev).sysfs, (*vdev).ops) };
    let mut cmd_fd = -1;
    // SAFETY: `sysfs` is checked for null before it is read.
    unsafe {
        // A software device (crate::soft) has no character device.
        let kernel = !sysfs.is_null() && !crate::soft::is_soft(&*sysfs);
        if kernel {
            let name = std::ffi::CStr::from_ptr((*sysfs).sysfs_name.as_ptr()).to_string_lossy();
            cmd_fd = cdev::open_cdev(&name, (*sysfs).sysfs_cdev);
            if cmd_fd < 0 {
                return std::ptr::null_mut();
            }
        }
    }
    let kernel = cmd_fd >= 0;
    // SAFETY: `ops` is null or the provider's static device ops.
    let Some(alloc) = (unsafe { ops.as_ref() }).and_then(|o| o.alloc_context) else {
        if kernel {
            // SAFETY: the descriptor opened above, not handed out.
            unsafe { libc::close(cmd_fd) };
        }
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    };
    // The provider owns cmd_fd from here on (closes it on failure).
    // SAFETY: the provider's alloc_context with its own device.
    let real = unsafe { alloc(device, cmd_fd, private_data) };
    if real.is_null() {
        return std::ptr::null_mut();
    }
    let vctx = crate::provider::pabi_of(ops).view(real.cast());
    // SAFETY: a context the provider just allocated through init_context.
    unsafe { finish_open(vctx, if kernel { AsyncFd::IfMissing } else { AsyncFd::None }) }
}

/// When the library allocates a context's async event fd.
enum AsyncFd {
    /// Never (a device without a kernel).
    None,
    /// Unless the provider opened one (upstream's `verbs_open_device`).
    IfMissing,
    /// Always, and the context is marked imported (`ibv_import_device`).
    Imported,
}

/// The end of opening or importing, once the provider has its context:
/// the library's ops, the import mark, and the async event fd as `async_fd`
/// says.  NULL with errno on failure (the context is closed then).
///
/// # Safety
/// `vctx` is a context the provider just allocated or imported (through
/// init_context, which installed the command state).
unsafe fn finish_open(vctx: *mut verbs_context, async_fd: AsyncFd) -> *mut ibv_context {
    // SAFETY: a fresh, initialised context (contract).
    let ctx = unsafe {
        ops::set_lib_ops(vctx);
        std::ptr::addr_of_mut!((*vctx).context)
    };
    let alloc = match async_fd {
        AsyncFd::None => false,
        // SAFETY: as above; `async_fd` is -1 unless the provider opened one.
        AsyncFd::IfMissing => (unsafe { (*ctx).async_fd }) == -1,
        AsyncFd::Imported => {
            // SAFETY: as above.
            if let Some(st) = unsafe { crate::kernel::state::of(ctx) } {
                st.mark_imported();
            }
            true
        }
    };
    if alloc {
        // SAFETY: an open context with its command fd.
        let rc = unsafe { crate::kernel::verbs::device::alloc_async_fd(ctx) };
        if rc != 0 {
            // SAFETY: the context is open and nobody else has it.
            unsafe { close_device(ctx) };
            set_errno(rc);
            return std::ptr::null_mut();
        }
    }
    ctx
}

/// The part of `ibv_import_device` after the device was looked up: the
/// provider imports the context, the library installs its ops, marks it
/// imported and allocates its async event fd.  NULL with errno on failure.
///
/// # Safety
/// `vdev` is NULL or a listed device; `cmd_fd` is the caller's descriptor.
pub unsafe fn import_device(vdev: *mut verbs_device, cmd_fd: c_int) -> *mut ibv_context {
    if vdev.is_null() {
        set_errno(libc::ENODEV);
        return std::ptr::null_mut();
    }
    // SAFETY: a listed device (contract) and its static device ops.
    let ops = unsafe { (*vdev).ops };
    // SAFETY: `ops` is null or the provider's static device ops.
    let Some(import) = (unsafe { ops.as_ref() }).and_then(|o| o.import_context) else {
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    };
    // A cdev number reused by another device after a disassociation makes
    // the provider's first command fail with EIO, so a wrong match cannot
    // go unnoticed.
    // SAFETY: the provider's import_context with its own device.
    let real = unsafe { import(std::ptr::addr_of_mut!((*vdev).device), cmd_fd) };
    if real.is_null() {
        return std::ptr::null_mut();
    }
    let vctx = crate::provider::pabi_of(ops).view(real.cast());
    // SAFETY: a context the provider just imported through init_context.
    unsafe { finish_open(vctx, AsyncFd::Imported) }
}

/// `ibv_close_device`: the provider frees its context (and calls
/// `verbs_uninit_context`).
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn close_device(ctx: *mut ibv_context) -> c_int {
    // SAFETY: an open context (contract); the provider frees it.
    unsafe { op!(ctx, free_context)(ctx) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots of an op table as raw words (0 = empty).
    fn words(ops: &verbs_context_ops_65) -> Vec<usize> {
        let n = std::mem::size_of::<verbs_context_ops_65>() / std::mem::size_of::<usize>();
        // SAFETY: verbs_context_ops is a repr(C) array of nullable function
        // pointers, each one word.
        unsafe { std::slice::from_raw_parts((ops as *const verbs_context_ops_65).cast::<usize>(), n) }.to_vec()
    }

    #[test]
    fn dummy_table_fills_every_slot() {
        let w = words(&dummy_ops::DUMMY_OPS);
        assert_eq!(w.len(), crate::kernel::state::VERBS_OPS_NUM);
        assert!(
            w.iter().all(|&p| p != 0),
            "empty dummy slots: {:?}",
            (0..w.len()).filter(|&i| w[i] == 0).collect::<Vec<_>>()
        );
    }

    #[test]
    fn private_data_starts_with_command_state() {
        assert_eq!(std::mem::offset_of!(ContextPrivate, cmd), 0);
    }

    unsafe extern "C" fn provider_alloc_pd(_c: *mut ibv_context) -> *mut ibv_pd {
        std::ptr::null_mut()
    }

    #[test]
    fn set_ops_keeps_defaults_for_absent_ops() {
        // SAFETY: a zeroed verbs_context whose private data is ours; only
        // op slots are read and written.
        unsafe {
            let mut v: verbs_context = std::mem::zeroed();
            let p = Box::into_raw(Box::new(ContextPrivate {
                cmd: CmdState::new(0, Registration::default()),
                ops: dummy_ops::DUMMY_OPS,
                pabi: Pabi::P34,
            }));
            v.r#priv = p.cast();
            let mut provider: verbs_context_ops = std::mem::zeroed();
            provider.alloc_pd = Some(provider_alloc_pd);
            set_ops_34(&mut v, &provider);
            let ctx = std::ptr::addr_of_mut!(v.context);
            // The provider's op replaced the default, everywhere it is published...
            assert_eq!(
                op!(ctx, alloc_pd) as *const () as usize,
                provider_alloc_pd as *const () as usize
            );
            assert!(v.context.ops._compat_alloc_pd.is_some());
            // ...and every other slot still holds the dummy default.
            let (got, dummy) = (words(&(*p).ops), words(&dummy_ops::DUMMY_OPS));
            let changed: Vec<usize> = (0..got.len()).filter(|&i| got[i] != dummy[i]).collect();
            assert_eq!(changed, vec![crate::op_bit!(alloc_pd)]);
            assert!(got.iter().all(|&w| w != 0));
            drop(Box::from_raw(p));
        }
    }

    unsafe extern "C" fn provider_reg_mr_ex(_pd: *mut ibv_pd, _a: *mut ibv_mr_init_attr) -> *mut ibv_mr {
        std::ptr::null_mut()
    }

    /// A PABI 65 context: the op table is taken as it is (no translation),
    /// the front slots get the merged ops; a PABI 34 context's memory in
    /// front of its `verbs_context` is left alone.
    #[test]
    fn set_ops_per_generation() {
        // SAFETY: zeroed repr(C) contexts whose private data is ours; only
        // op slots are read and written.
        unsafe {
            for pabi in [Pabi::P65, Pabi::P34] {
                let mut real: verbs_context_65 = std::mem::zeroed();
                let marker = 0x5a5a_5a5a_usize;
                // Poison the front: a PABI 34 context must keep it.
                let front = std::ptr::addr_of_mut!(real.front).cast::<usize>();
                for i in 0..6 {
                    *front.add(i) = marker;
                }
                // Either way the common part is at the same place: for PABI
                // 65 the front is the context's own, for PABI 34 it is
                // whatever the provider keeps before its verbs_context.
                let view = std::ptr::addr_of_mut!(real.common);
                let provider_ptr = if pabi == Pabi::P65 {
                    std::ptr::addr_of_mut!(real).cast()
                } else {
                    view.cast()
                };
                assert_eq!(pabi.view(provider_ptr), view);
                let p = Box::into_raw(Box::new(ContextPrivate {
                    cmd: CmdState::new(0, Registration::default()),
                    ops: dummy_ops::DUMMY_OPS,
                    pabi,
                }));
                (*view).r#priv = p.cast();
                let mut provider: verbs_context_ops_65 = std::mem::zeroed();
                provider.alloc_pd = Some(provider_alloc_pd);
                provider.reg_mr_ex = Some(provider_reg_mr_ex);
                set_ops(view, &provider);
                let ctx = std::ptr::addr_of_mut!((*view).context);
                assert_eq!(
                    op!(ctx, reg_mr_ex) as *const () as usize,
                    provider_reg_mr_ex as *const () as usize
                );
                assert_eq!(
                    op!(ctx, alloc_pd) as *const () as usize,
                    provider_alloc_pd as *const () as usize
                );
                let f = std::ptr::read(front.cast::<[usize; 6]>());
                if pabi == Pabi::P65 {
                    assert_eq!(f[3], provider_reg_mr_ex as *const () as usize, "reg_mr_ex front slot");
                    assert!(
                        f.iter().all(|&w| w != 0 && w != marker),
                        "every front slot filled: {f:x?}"
                    );
                } else {
                    assert_eq!(f, [marker; 6], "a PABI 34 context's front memory is not the library's");
                }
                drop(Box::from_raw(p));
            }
        }
    }

    /// A PABI 34 table lands by member name in the library's 65 layout.
    #[test]
    fn pabi34_table_is_translated_by_name() {
        // SAFETY: zeroed op tables (all slots None).
        let mut old: verbs_context_ops = unsafe { std::mem::zeroed() };
        old.alloc_pd = Some(provider_alloc_pd);
        let new = verbs_context_ops_65::from_34(&old);
        assert_eq!(
            new.alloc_pd.map(|f| f as *const () as usize),
            Some(provider_alloc_pd as *const () as usize)
        );
        assert!(new.reg_mr_ex.is_none() && new.alloc_dm.is_none());
    }
}
