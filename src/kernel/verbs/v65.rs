//! The commands rdma-core 65's provider ABI added (`IBVERBS_PRIVATE_65`
//! only): port speed, completion counters, DMA handles, dma-buf export and
//! the extended memory registration.  All are ioctl methods the kernel
//! gained in 6.17 and later; an older kernel answers with its errno
//! (EPROTONOSUPPORT / EOPNOTSUPP / ENOTTY), which is returned unchanged.
//! `ibv_cmd_reg_mr_ex` alone falls back, for an address-based request, to
//! the legacy REG_MR `write()`.

use std::os::raw::{c_int, c_void};

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::builder::Cmd;
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::uapi::*;

/// The verbs bits of `ibv_qp_attach_comp_cntr_op` and the kernel's
/// `ib_uverbs_qp_attach_comp_cntr_op`, pairwise.
const ATTACH_OPS: [(u32, u32); 6] = [
    (IBV_QP_ATTACH_COMP_CNTR_OP_SEND, IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_SEND),
    (IBV_QP_ATTACH_COMP_CNTR_OP_RECV, IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RECV),
    (
        IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ,
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_READ,
    ),
    (
        IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ,
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ,
    ),
    (
        IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE,
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE,
    ),
    (
        IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE,
        IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE,
    ),
];

/// Verbs attach-op bits to the kernel's (unknown bits are dropped, as
/// upstream does).
pub fn attach_ops_to_kernel(v: u32) -> u32 {
    ATTACH_OPS.iter().filter(|(b, _)| v & b != 0).fold(0, |a, (_, k)| a | k)
}

/// The kernel's attach-op bits to the verbs ones.
pub fn attach_ops_from_kernel(k: u32) -> u32 {
    ATTACH_OPS
        .iter()
        .filter(|(_, kb)| k & kb != 0)
        .fold(0, |a, (b, _)| a | b)
}

fn result(r: Result<crate::kernel::builder::Path, c_int>) -> c_int {
    super::ok(r)
}

// --- device -----------------------------------------------------------------

/// `ibv_cmd_query_port_speed`: the port's effective speed (100 Mb/s units).
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `speed` a writable u64.
pub unsafe fn query_port_speed(ctx: *mut ibv_context, port_num: u32, speed: *mut u64) -> c_int {
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::QUERY_PORT_SPEED, 2, core::ptr::null_mut()) };
    c.in_u64(attr::QUERY_PORT_SPEED_PORT_NUM, port_num as u64);
    c.out(attr::QUERY_PORT_SPEED_RESP, speed);
    // SAFETY: `speed` is writable until the command ran (contract).
    result(unsafe { c.exec() })
}

/// `ibv_cmd_query_comp_cntr_caps`: EINVAL for a `caps` smaller than the
/// library's struct; the kernel's attach-op bits translated.
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `caps` writable for
/// `caps_size` bytes.
pub unsafe fn query_comp_cntr_caps(ctx: *mut ibv_context, caps: *mut ibv_comp_cntr_caps, caps_size: usize) -> c_int {
    if caps_size < core::mem::size_of::<ibv_comp_cntr_caps>() {
        return libc::EINVAL;
    }
    let mut ops = 0u32;
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::QUERY_COMP_CNTR_CAPS, 3, core::ptr::null_mut()) };
    // SAFETY: `caps` is a writable ibv_comp_cntr_caps (checked size, contract).
    unsafe {
        c.out(
            attr::QUERY_COMP_CNTR_CAPS_MAX_COUNTERS,
            core::ptr::addr_of_mut!((*caps).max_counters),
        );
        c.out(
            attr::QUERY_COMP_CNTR_CAPS_MAX_VALUE,
            core::ptr::addr_of_mut!((*caps).max_value),
        );
    }
    c.out(attr::QUERY_COMP_CNTR_CAPS_SUPPORTED_QP_ATTACH_OPS, &mut ops);
    // SAFETY: `caps` and the local `ops` are writable until the command ran.
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    // SAFETY: as above.
    unsafe { (*caps).supported_qp_attach_ops = attach_ops_from_kernel(ops) };
    0
}

// --- DMA handles, dma-buf -----------------------------------------------------

/// `ibv_cmd_alloc_dmah`: the attributes the mask selects; the handle and
/// context on success.
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `dmah` a writable
/// `verbs_dmah`; `attr` a valid `ibv_dmah_init_attr`.
pub unsafe fn alloc_dmah(ctx: *mut ibv_context, dmah: *mut verbs_dmah, attr: *const ibv_dmah_init_attr) -> c_int {
    // SAFETY: `attr` is readable (contract).
    let a = unsafe { *attr };
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::ALLOC_DMAH, 4, core::ptr::null_mut()) };
    let h = c.out_obj(attr::ALLOC_DMAH_HANDLE).idx();
    if a.comp_mask & IBV_DMAH_INIT_ATTR_MASK_CPU_ID != 0 {
        c.in_u32(attr::ALLOC_DMAH_CPU_ID, a.cpu_id);
    }
    if a.comp_mask & IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE != 0 {
        // SAFETY: an enum attribute without data.
        unsafe { c.in_enum(attr::ALLOC_DMAH_TPH_MEM_TYPE, a.tph_mem_type, core::ptr::null(), 0) };
    }
    if a.comp_mask & IBV_DMAH_INIT_ATTR_MASK_PH != 0 {
        // SAFETY: one byte, copied inline now.
        unsafe { c.in_bytes(attr::ALLOC_DMAH_PH, &a.ph, 1) };
    }
    // SAFETY: only inline values.
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: `dmah` is writable (contract).
    unsafe {
        (*dmah).handle = handle;
        (*dmah).dmah.context = ctx;
    }
    0
}

/// `ibv_cmd_free_dmah`.
///
/// # Safety
/// Provider arguments: `dmah` is a live DMA handle of an open context.
pub unsafe fn free_dmah(dmah: *mut verbs_dmah) -> c_int {
    // SAFETY: `dmah` is live (contract).
    let (ctx, handle) = unsafe { ((*dmah).dmah.context, (*dmah).handle) };
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::FREE_DMAH, 1, core::ptr::null_mut()) };
    c.in_obj(attr::FREE_DMA_HANDLE, handle);
    // SAFETY: the command carries no pointers.
    let mut ret = result(unsafe { c.exec() });
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

/// `ibv_cmd_export_dmabuf_fd`: a dma-buf fd for the mmap page offset
/// `pg_off` of the context, or -1 with errno.
///
/// # Safety
/// Provider arguments: `ctx` is an open context.
pub unsafe fn export_dmabuf_fd(ctx: *mut ibv_context, pg_off: i64) -> c_int {
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::ALLOC_DMABUF, 2, core::ptr::null_mut()) };
    let h = c.out_fd(attr::ALLOC_DMABUF_HANDLE).idx();
    c.in_u64(attr::ALLOC_DMABUF_PGOFF, pg_off as u64);
    // SAFETY: only inline values.
    if let Err(e) = unsafe { c.exec() } {
        set_errno(e);
        return -1;
    }
    c.fd(h)
}

// --- completion counters ------------------------------------------------------

/// `ibv_cmd_create_comp_cntr`: sets `context` first, the handle on success.
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `cc` a writable
/// `ibv_comp_cntr`; `link` null or a valid chain of the provider's blocks.
pub unsafe fn create_comp_cntr(ctx: *mut ibv_context, cc: *mut ibv_comp_cntr, link: *mut ibv_command_buffer) -> c_int {
    // SAFETY: `cc` is writable (contract).
    unsafe { (*cc).context = ctx };
    // SAFETY: `ctx` is open and `link` null or a valid chain (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::CREATE_COMP_CNTR, 1, link) };
    let h = c.out_obj(attr::CREATE_COMP_CNTR_HANDLE).idx();
    // SAFETY: the only pointers are in the provider's chain, live for the
    // call (contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: as above.
    unsafe { (*cc).handle = handle };
    0
}

/// `ibv_cmd_destroy_comp_cntr`.
///
/// # Safety
/// Provider arguments: `cc` is a live counter of an open context.
pub unsafe fn destroy_comp_cntr(cc: *mut ibv_comp_cntr) -> c_int {
    // SAFETY: `cc` is live (contract).
    let (ctx, handle) = unsafe { ((*cc).context, (*cc).handle) };
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::DESTROY_COMP_CNTR, 1, core::ptr::null_mut()) };
    c.in_obj(attr::DESTROY_COMP_CNTR_HANDLE, handle);
    // SAFETY: the command carries no pointers.
    let mut ret = result(unsafe { c.exec() });
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

/// The MODIFY method behind set/inc of either count.
///
/// # Safety
/// `cc` is a live counter of an open context.
pub unsafe fn modify_comp_cntr(cc: *mut ibv_comp_cntr, entry: u8, op: u8, value: u64) -> c_int {
    // SAFETY: `cc` is live (contract).
    let (ctx, handle) = unsafe { ((*cc).context, (*cc).handle) };
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::MODIFY_COMP_CNTR, 4, core::ptr::null_mut()) };
    c.in_obj(attr::MODIFY_COMP_CNTR_HANDLE, handle);
    c.in_u64(attr::MODIFY_COMP_CNTR_ENTRY, entry as u64);
    c.in_u64(attr::MODIFY_COMP_CNTR_OP, op as u64);
    c.in_u64(attr::MODIFY_COMP_CNTR_VALUE, value);
    // SAFETY: only inline values.
    result(unsafe { c.exec() })
}

/// The READ method behind both reads.
///
/// # Safety
/// `cc` is a live counter of an open context; `value` a writable u64.
pub unsafe fn read_comp_cntr(cc: *mut ibv_comp_cntr, entry: u8, value: *mut u64) -> c_int {
    // SAFETY: `cc` is live (contract).
    let (ctx, handle) = unsafe { ((*cc).context, (*cc).handle) };
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::READ_COMP_CNTR, 3, core::ptr::null_mut()) };
    c.in_obj(attr::READ_COMP_CNTR_HANDLE, handle);
    c.in_u64(attr::READ_COMP_CNTR_ENTRY, entry as u64);
    c.out(attr::READ_COMP_CNTR_RESP_VALUE, value);
    // SAFETY: `value` is writable until the command ran (contract).
    result(unsafe { c.exec() })
}

/// `ibv_cmd_qp_attach_comp_cntr`: the verbs op bits translated to the
/// kernel's.
///
/// # Safety
/// Provider arguments: `qp` a live QP and `cc` a live counter of one open
/// context; `a` a valid attribute.
pub unsafe fn qp_attach_comp_cntr(
    qp: *mut ibv_qp,
    cc: *mut ibv_comp_cntr,
    a: *const ibv_qp_attach_comp_cntr_attr,
) -> c_int {
    // SAFETY: live objects and a readable attribute (contract).
    let (ctx, qp_handle, cc_handle, op_mask) = unsafe { ((*qp).context, (*qp).handle, (*cc).handle, (*a).op_mask) };
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::QP_ATTACH_COMP_CNTR, 3, core::ptr::null_mut()) };
    c.in_obj(attr::QP_ATTACH_COMP_CNTR_HANDLE, qp_handle);
    c.in_obj(attr::QP_ATTACH_COMP_CNTR_CNTR_HANDLE, cc_handle);
    c.in_u32(attr::QP_ATTACH_COMP_CNTR_OP_MASK, attach_ops_to_kernel(op_mask));
    // SAFETY: only inline values.
    result(unsafe { c.exec() })
}

// --- memory registration ------------------------------------------------------

/// Upstream's input checks of `ibv_cmd_reg_mr_ex`: whether the request is
/// fd-based and the length the kernel gets, or EINVAL.
pub fn reg_mr_ex_shape(a: &ibv_mr_init_attr) -> Result<(bool, u64), c_int> {
    let mask = a.comp_mask;
    let has = |b: u32| mask & b as u64 != 0;
    let fd_based = has(IBV_REG_MR_MASK_FD);
    let mut length = a.length as u64;
    if fd_based {
        if !has(IBV_REG_MR_MASK_FD_OFFSET) || has(IBV_REG_MR_MASK_ADDR) {
            return Err(libc::EINVAL);
        }
        // The kernel needs an iova for a dma-buf region.
        if !has(IBV_REG_MR_MASK_IOVA) {
            return Err(libc::EINVAL);
        }
    } else {
        if has(IBV_REG_MR_MASK_FD_OFFSET) || !has(IBV_REG_MR_MASK_ADDR) {
            return Err(libc::EINVAL);
        }
        if a.access as u32 & IBV_ACCESS_ON_DEMAND != 0 && a.length == usize::MAX {
            if !a.addr.is_null() {
                return Err(libc::EINVAL);
            }
            length = u64::MAX;
        }
    }
    Ok((fd_based, length))
}

/// `ibv_cmd_reg_mr_ex`: the REG_MR ioctl with the attributes the mask
/// selects; on a kernel without it, an address-based request without a
/// DMA handle goes through the legacy REG_MR `write()`, anything else is
/// EOPNOTSUPP.
///
/// # Safety
/// Provider arguments: `pd` is a live PD of an open context; `vmr` a
/// writable `verbs_mr`; `a` a valid `ibv_mr_init_attr` whose `dmah` (with
/// IBV_REG_MR_MASK_DMAH) is the first member of a live `verbs_dmah`.
pub unsafe fn reg_mr_ex(pd: *mut ibv_pd, vmr: *mut verbs_mr, a: *const ibv_mr_init_attr) -> c_int {
    // SAFETY: `a` is readable (contract).
    let a = unsafe { *a };
    let (fd_based, length) = match reg_mr_ex_shape(&a) {
        Ok(s) => s,
        Err(e) => {
            set_errno(e);
            return e;
        }
    };
    let has = |b: u32| a.comp_mask & b as u64 != 0;
    // SAFETY: `pd` is live (contract).
    let (ctx, pd_handle) = unsafe { ((*pd).context, (*pd).handle) };
    let (mut lkey, mut rkey) = (0u32, 0u32);
    // SAFETY: `ctx` is open; no provider chain.
    let mut c = unsafe { Cmd::new(ctx, &m::REG_MR_EX, 11, core::ptr::null_mut()) };
    if fd_based {
        c.in_u64(attr::REG_MR_FD_OFFSET, a.fd_offset);
        let _ = c.in_fd(attr::REG_MR_FD, a.fd);
    } else {
        c.in_u64(attr::REG_MR_ADDR, a.addr as usize as u64);
    }
    let iova = if has(IBV_REG_MR_MASK_IOVA) {
        a.iova
    } else {
        a.addr as usize as u64
    };
    c.in_u64(attr::REG_MR_IOVA, iova);
    let h = c.out_obj(attr::REG_MR_HANDLE).idx();
    c.out(attr::REG_MR_RESP_LKEY, &mut lkey);
    c.out(attr::REG_MR_RESP_RKEY, &mut rkey);
    c.in_obj(attr::REG_MR_PD_HANDLE, pd_handle);
    c.in_u64(attr::REG_MR_LENGTH, length);
    c.in_u32(attr::REG_MR_ACCESS_FLAGS, a.access as u32);
    if has(IBV_REG_MR_MASK_DMAH) {
        // SAFETY: `dmah` is the first member of a live verbs_dmah (contract).
        let handle = unsafe { (*a.dmah.cast::<verbs_dmah>()).handle };
        c.in_obj(attr::REG_MR_DMA_HANDLE, handle);
    }
    // SAFETY: the outputs are the locals `lkey` and `rkey`.
    match unsafe { c.try_ioctl() } {
        Ok(None) => {}
        Ok(Some(_)) => {
            // No REG_MR ioctl in this kernel: only an address-based request
            // has a write() equivalent.
            if fd_based || has(IBV_REG_MR_MASK_DMAH) {
                set_errno(libc::EOPNOTSUPP);
                return libc::EOPNOTSUPP;
            }
            // SAFETY: plain-old-data kernel structs, zero is valid.
            let mut req: ibv_reg_mr = unsafe { core::mem::zeroed() };
            // SAFETY: as above.
            let mut resp: ib_uverbs_reg_mr_resp = unsafe { core::mem::zeroed() };
            // SAFETY: `pd` and `vmr` as this function's contract; the
            // buffers are locals of their own sizes.
            return unsafe {
                super::misc::reg_mr(
                    pd,
                    a.addr as *mut c_void,
                    length as usize,
                    iova,
                    a.access,
                    vmr,
                    &mut req,
                    core::mem::size_of::<ibv_reg_mr>(),
                    &mut resp,
                    core::mem::size_of::<ib_uverbs_reg_mr_resp>(),
                )
            };
        }
        Err(e) => return e,
    }
    let mr_type = if fd_based {
        IBV_MR_TYPE_DMABUF_MR
    } else {
        IBV_MR_TYPE_MR
    };
    // SAFETY: `vmr` is a writable `verbs_mr` (contract).
    unsafe {
        super::misc::set_mr(vmr, c.obj(h), ctx, lkey, rkey, mr_type);
        (*vmr).access = a.access;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(mask: u32) -> ibv_mr_init_attr {
        // SAFETY: a C struct of integers and pointers; zero is valid.
        let mut a: ibv_mr_init_attr = unsafe { core::mem::zeroed() };
        a.comp_mask = mask as u64;
        a.length = 4096;
        a
    }

    #[test]
    fn reg_mr_ex_input_checks_are_upstreams() {
        use libc::EINVAL;
        // Address-based: ADDR required, FD_OFFSET refused.
        assert_eq!(reg_mr_ex_shape(&attr(IBV_REG_MR_MASK_ADDR)), Ok((false, 4096)));
        assert_eq!(reg_mr_ex_shape(&attr(0)), Err(EINVAL));
        assert_eq!(
            reg_mr_ex_shape(&attr(IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD_OFFSET)),
            Err(EINVAL)
        );
        // fd-based: FD_OFFSET and IOVA required, ADDR refused.
        let fd = IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET;
        assert_eq!(reg_mr_ex_shape(&attr(fd)), Err(EINVAL));
        assert_eq!(reg_mr_ex_shape(&attr(fd | IBV_REG_MR_MASK_IOVA)), Ok((true, 4096)));
        assert_eq!(
            reg_mr_ex_shape(&attr(fd | IBV_REG_MR_MASK_IOVA | IBV_REG_MR_MASK_ADDR)),
            Err(EINVAL)
        );
        assert_eq!(
            reg_mr_ex_shape(&attr(IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_IOVA)),
            Err(EINVAL)
        );
        // Implicit ODP: SIZE_MAX without an address becomes the whole space.
        let mut a = attr(IBV_REG_MR_MASK_ADDR);
        a.access = IBV_ACCESS_ON_DEMAND as c_int;
        a.length = usize::MAX;
        assert_eq!(reg_mr_ex_shape(&a), Ok((false, u64::MAX)));
        a.addr = 0x1000 as *mut c_void;
        assert_eq!(reg_mr_ex_shape(&a), Err(EINVAL));
    }

    #[test]
    fn attach_ops_translate_both_ways() {
        assert_eq!(attach_ops_to_kernel(0), 0);
        let all = (1u32 << 6) - 1;
        assert_eq!(attach_ops_to_kernel(all), all);
        assert_eq!(attach_ops_to_kernel(1 << 7), 0, "unknown bits are dropped");
        assert_eq!(
            attach_ops_from_kernel(1 << 9 | IB_UVERBS_QP_ATTACH_COMP_CNTR_OP_RECV),
            IBV_QP_ATTACH_COMP_CNTR_OP_RECV
        );
        for (v, k) in ATTACH_OPS {
            assert_eq!(attach_ops_to_kernel(v), k);
            assert_eq!(attach_ops_from_kernel(k), v);
        }
    }

    #[test]
    fn query_comp_cntr_caps_refuses_a_short_struct_first() {
        // Refused before the context is touched.
        // SAFETY: the size check precedes any use of the pointers.
        let r = unsafe { query_comp_cntr_caps(core::ptr::null_mut(), core::ptr::null_mut(), 8) };
        assert_eq!(r, libc::EINVAL);
    }

    /// A context of ours whose command fd is the write end of a pipe: the
    /// ioctl fails there with ENOTTY, so a command with a `write()` form
    /// takes upstream's fallback and the pipe receives what the kernel
    /// would (as `super::super::tests` does).
    fn pipe_ctx() -> (*mut ibv_context, c_int, c_int) {
        let mut fds = [0; 2];
        // SAFETY: a local array for pipe2; zeroed leaked C structs for the
        // context and its device; the command state is all the command
        // layer reads of the private data.
        unsafe {
            assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK), 0);
            let v: *mut verbs_context = Box::into_raw(Box::new(core::mem::zeroed::<verbs_context>()));
            let st = Box::new(crate::kernel::state::CmdState::new(0, Default::default()));
            (*v).r#priv = Box::into_raw(st).cast();
            (*v).sz = core::mem::size_of::<verbs_context>();
            let dev: *mut verbs_device = Box::into_raw(Box::new(core::mem::zeroed::<verbs_device>()));
            let ctx = core::ptr::addr_of_mut!((*v).context);
            (*ctx).cmd_fd = fds[1];
            (*ctx).async_fd = -1;
            (*ctx).abi_compat = usize::MAX as *mut c_void;
            (*ctx).device = dev.cast();
            (ctx, fds[0], fds[1])
        }
    }

    fn drain(r: c_int) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: a local buffer of its length; `r` is a non-blocking
            // pipe read end.
            let n = unsafe { libc::read(r, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        out
    }

    fn close(fds: (c_int, c_int)) {
        // SAFETY: the test's own pipe, closed once.
        unsafe {
            libc::close(fds.0);
            libc::close(fds.1);
        }
    }

    #[test]
    fn reg_mr_ex_falls_back_to_the_legacy_reg_mr_write() {
        for (mask, iova, access) in [
            (IBV_REG_MR_MASK_ADDR, 0u64, 7),
            (IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_IOVA, 0x9000, 1),
        ] {
            let (c1, r1, w1) = pipe_ctx();
            let (c2, r2, w2) = pipe_ctx();
            let mut pd1: ibv_pd = unsafe_zeroed();
            pd1.context = c1;
            pd1.handle = 3;
            let mut pd2 = pd1;
            pd2.context = c2;
            let mut a = attr(mask);
            a.addr = 0x5000 as *mut c_void;
            a.length = 0x3000;
            a.iova = iova;
            a.access = access;
            let (mut m1, mut m2): (verbs_mr, verbs_mr) = (unsafe_zeroed(), unsafe_zeroed());
            // SAFETY: live local PDs of pipe contexts, writable local MRs and
            // command/response buffers of the sizes passed.
            let (ret1, ret2) = unsafe {
                let e = reg_mr_ex(&mut pd1, &mut m1, &a);
                let mut req: ibv_reg_mr = core::mem::zeroed();
                let mut resp: ib_uverbs_reg_mr_resp = core::mem::zeroed();
                let hca = if iova != 0 { iova } else { 0x5000 };
                let l = super::super::misc::reg_mr(
                    &mut pd2,
                    a.addr,
                    a.length,
                    hca,
                    access,
                    &mut m2,
                    &mut req,
                    core::mem::size_of::<ibv_reg_mr>(),
                    &mut resp,
                    core::mem::size_of::<ib_uverbs_reg_mr_resp>(),
                );
                (e, l)
            };
            let (mut b1, mut b2) = (drain(r1), drain(r2));
            assert!(!b1.is_empty(), "the fallback wrote the REG_MR command");
            // the response member: the address of a stack buffer
            for b in [&mut b1, &mut b2] {
                for x in b.iter_mut().take(16).skip(8) {
                    *x = 0;
                }
            }
            assert_eq!(b1, b2, "bytes written");
            assert_eq!(ret1, ret2);
            assert_eq!((m1.mr_type, m1.access), (m2.mr_type, m2.access));
            close((r1, w1));
            close((r2, w2));
        }
    }

    #[test]
    fn reg_mr_ex_without_a_write_form_is_eopnotsupp_on_an_old_kernel() {
        let fd = IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET | IBV_REG_MR_MASK_IOVA;
        for mask in [fd, IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_DMAH] {
            let (c, r, w) = pipe_ctx();
            let mut pd: ibv_pd = unsafe_zeroed();
            pd.context = c;
            let mut dmah = verbs_dmah {
                dmah: ibv_dmah { context: c },
                handle: 4,
            };
            let mut a = attr(mask);
            a.addr = 0x5000 as *mut c_void;
            a.fd = 0;
            a.dmah = &mut dmah.dmah;
            let mut m: verbs_mr = unsafe_zeroed();
            // SAFETY: as above; `dmah` is a live verbs_dmah.
            assert_eq!(unsafe { reg_mr_ex(&mut pd, &mut m, &a) }, libc::EOPNOTSUPP);
            assert!(drain(r).is_empty(), "nothing written");
            close((r, w));
        }
    }

    #[test]
    fn ioctl_only_commands_return_the_kernels_errno() {
        let (c, r, w) = pipe_ctx();
        let mut cc = ibv_comp_cntr { context: c, handle: 1 };
        let mut v = 0u64;
        // SAFETY: a pipe context and live local objects; the ioctl fails.
        unsafe {
            assert_eq!(modify_comp_cntr(&mut cc, 0, 1, 5), libc::ENOTTY);
            assert_eq!(read_comp_cntr(&mut cc, 1, &mut v), libc::ENOTTY);
            assert_eq!(query_port_speed(c, 1, &mut v), libc::ENOTTY);
            assert_eq!(create_comp_cntr(c, &mut cc, core::ptr::null_mut()), libc::ENOTTY);
            assert_eq!(cc.context, c, "the context is set before the command");
            assert_eq!(export_dmabuf_fd(c, 0), -1);
            assert_eq!(crate::ffi::errno(), libc::ENOTTY);
            let mut d: verbs_dmah = unsafe_zeroed();
            let a: ibv_dmah_init_attr = unsafe_zeroed();
            assert_eq!(alloc_dmah(c, &mut d, &a), libc::ENOTTY);
        }
        assert!(drain(r).is_empty(), "no write() fallback");
        close((r, w));
    }

    fn unsafe_zeroed<T>() -> T {
        // SAFETY: only the C structs of this module's tests (integers and
        // raw pointers), for which all-zero is valid.
        unsafe { core::mem::zeroed() }
    }
}
