//! The public verbs of `IBVERBS_1.15` to `1.18` (rdma-core 57 to 65) and
//! the private entry points rdma-core 65's providers import
//! (`IBVERBS_PRIVATE_65` only): DMA handles, the extended memory
//! registration, dma-buf export, port speed, provider-allocated buffers,
//! completion counters, and the dma-buf heap helpers.
//!
//! Every public verb dispatches to the context's op, as upstream's
//! `verbs.c` does; a provider without the op (every PABI 34 provider, and
//! a PABI 65 one that leaves it out) gets the library's default, which
//! answers upstream's errno (EOPNOTSUPP), except `alloc_buf`/`free_buf`
//! (page-aligned heap memory) and `reg_mr_ex` (translated to `reg_mr` /
//! `reg_dmabuf_mr` when the request allows).  Where upstream would crash on
//! a NULL object pointer these functions fail with EINVAL in their error
//! convention.

use std::os::raw::{c_int, c_void};
use std::ptr::null_mut;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::uapi::{
    dma_heap_allocation_data, DMA_HEAP_IOCTL_ALLOC, IB_UVERBS_COMP_CNTR_ENTRY_COMP, IB_UVERBS_COMP_CNTR_ENTRY_ERR,
    IB_UVERBS_COMP_CNTR_MODIFY_OP_INC, IB_UVERBS_COMP_CNTR_MODIFY_OP_SET,
};
use crate::kernel::verbs::v65 as k;
use crate::verbs::{mr::effective_access, null_errno, vdev_of};

// --- public: DMA handles, dma-buf export, port speed --------------------------

crate::export! {
    fn ibv_alloc_dmah(context: *mut ibv_context, attr: *mut ibv_dmah_init_attr) -> *mut ibv_dmah [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: an open context; the provider gets the caller's attribute.
        unsafe { crate::op!(context, alloc_dmah)(context, attr) }
    }

    /// 0 or an errno value.
    fn ibv_dealloc_dmah(dmah: *mut ibv_dmah) -> c_int [on_panic: libc::EIO] {
        if dmah.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a DMA handle of an open context.
        unsafe { crate::op!((*dmah).context, dealloc_dmah)(dmah) }
    }

    /// A dma-buf fd for the device memory, or -1 with errno.
    fn ibv_dm_export_dmabuf_fd(dm: *mut ibv_dm) -> c_int [on_panic: -1] {
        if dm.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: device memory of an open context.
        unsafe { crate::op!((*dm).context, dm_export_dmabuf_fd)(dm) }
    }

    /// The port's effective speed in 100 Mb/s units; 0 or an errno value.
    fn ibv_query_port_speed(context: *mut ibv_context, port_num: u32, port_speed: *mut u64) -> c_int [on_panic: libc::EIO] {
        if context.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: an open context; the provider gets the caller's pointer.
        unsafe { crate::op!(context, query_port_speed)(context, port_num, port_speed) }
    }
}

// --- public: memory ---------------------------------------------------------

crate::export! {
    /// Memory for `size` bytes the provider chooses how to back (at least
    /// page aligned), with its handle in `*buf`; NULL with errno.
    fn ibv_alloc_buf(pd: *mut ibv_pd, size: usize, buf: *mut *mut ibv_buf) -> *mut c_void [on_panic: null_mut()] {
        if pd.is_null() || buf.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context; `buf` is the caller's out pointer.
        unsafe { crate::op!((*pd).context, alloc_buf)(pd, size, buf) }
    }

    fn ibv_free_buf(buf: *mut ibv_buf) -> () [on_panic: ()] {
        // SAFETY: `buf` is NULL or a handle from ibv_alloc_buf, whose PD
        // belongs to an open context.
        unsafe {
            if buf.is_null() || (*buf).pd.is_null() {
                return;
            }
            crate::op!((*(*buf).pd).context, free_buf)(buf);
        }
    }

    /// A new (close-on-exec) fd for the dma-buf behind the buffer, or -1
    /// with errno: ENODATA when it is not dma-buf backed.
    fn ibv_export_buf_dmabuf_fd(buf: *mut ibv_buf) -> c_int [on_panic: -1] {
        if buf.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: a handle from ibv_alloc_buf.
        let fd = unsafe { (*buf).dmabuf_fd };
        if fd < 0 {
            set_errno(libc::ENODATA);
            return -1;
        }
        // SAFETY: duplicating a descriptor the handle owns.
        unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) }
    }

    /// `ibv_reg_mr_ex` over (part of) a buffer from ibv_alloc_buf.
    fn ibv_reg_buf_mr(pd: *mut ibv_pd, buf: *mut ibv_buf, addr: *mut c_void, length: usize, access: c_int) -> *mut ibv_mr [on_panic: null_mut()] {
        // SAFETY: ibv_mr_init_attr is a C struct of integers and pointers.
        let mut a: ibv_mr_init_attr = unsafe { core::mem::zeroed() };
        a.length = length;
        a.access = access;
        a.comp_mask = (IBV_REG_MR_MASK_BUF | IBV_REG_MR_MASK_ADDR) as u64;
        a.addr = addr;
        a.buf = buf;
        // SAFETY: ibv_reg_mr_ex checks `pd` and the buffer handle itself.
        unsafe { ibv_reg_mr_ex(pd, &mut a) }
    }

    /// Registration with the attributes `mr_init_attr->comp_mask` selects
    /// (address or dma-buf, iova, DMA handle, ibv_alloc_buf buffer).  The
    /// caller's attribute is only read.
    fn ibv_reg_mr_ex(pd: *mut ibv_pd, mr_init_attr: *mut ibv_mr_init_attr) -> *mut ibv_mr [on_panic: null_mut()] {
        if pd.is_null() || mr_init_attr.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a PD of an open context and a readable attribute.
        unsafe { reg_mr_ex(pd, &*mr_init_attr) }
    }
}

/// The copy of the caller's attribute `ibv_reg_mr_ex` works on: the base
/// members and only the ones the mask selects.
pub fn masked_copy(a: &ibv_mr_init_attr) -> ibv_mr_init_attr {
    let m = a.comp_mask;
    let has = |b: u32| m & b as u64 != 0;
    // SAFETY: a C struct of integers and pointers; zero is valid.
    let mut c: ibv_mr_init_attr = unsafe { core::mem::zeroed() };
    c.length = a.length;
    c.access = a.access;
    c.comp_mask = m;
    if has(IBV_REG_MR_MASK_IOVA) {
        c.iova = a.iova;
    }
    if has(IBV_REG_MR_MASK_ADDR) {
        c.addr = a.addr;
    }
    if has(IBV_REG_MR_MASK_FD) {
        c.fd = a.fd;
    }
    if has(IBV_REG_MR_MASK_FD_OFFSET) {
        c.fd_offset = a.fd_offset;
    }
    if has(IBV_REG_MR_MASK_DMAH) {
        c.dmah = a.dmah;
    }
    if has(IBV_REG_MR_MASK_BUF) {
        c.buf = a.buf;
    }
    c
}

/// Upstream's translation of an `ibv_buf` request into the members the
/// lower layers understand: the range must lie inside the buffer of the
/// same PD; a dma-buf backed buffer becomes an fd-based request (offset
/// into the dma-buf, iova = the address).  EINVAL otherwise.
///
/// # Safety
/// `a.buf` is NULL or a live handle from `ibv_alloc_buf`.
pub unsafe fn fill_from_buf(pd: *mut ibv_pd, a: &mut ibv_mr_init_attr) -> Result<(), c_int> {
    if a.buf.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: a live handle (contract).
    let b = unsafe { *a.buf };
    let has = |m: u64, bit: u32| m & bit as u64 != 0;
    if pd != b.pd || !has(a.comp_mask, IBV_REG_MR_MASK_ADDR) {
        return Err(libc::EINVAL);
    }
    let (base, addr) = (b.addr as usize, a.addr as usize);
    if addr < base {
        return Err(libc::EINVAL);
    }
    let off = addr - base;
    if off > b.size || a.length > b.size - off {
        return Err(libc::EINVAL);
    }
    if has(a.comp_mask, IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET) {
        return Err(libc::EINVAL);
    }
    a.comp_mask &= !(IBV_REG_MR_MASK_BUF as u64);
    if b.dmabuf_fd != -1 {
        if has(a.comp_mask, IBV_REG_MR_MASK_IOVA) {
            return Err(libc::EINVAL);
        }
        a.comp_mask &= !(IBV_REG_MR_MASK_ADDR as u64);
        a.comp_mask |= (IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET | IBV_REG_MR_MASK_IOVA) as u64;
        a.fd = b.dmabuf_fd;
        a.fd_offset = off as u64;
        a.iova = addr as u64;
    }
    Ok(())
}

/// `ibv_reg_mr_ex`.
///
/// # Safety
/// `pd` is a PD of an open context; `attr`'s pointers are the caller's
/// (a buffer handle from ibv_alloc_buf, a DMA handle of the context).
unsafe fn reg_mr_ex(pd: *mut ibv_pd, attr: &ibv_mr_init_attr) -> *mut ibv_mr {
    let mut a = masked_copy(attr);
    if a.comp_mask & IBV_REG_MR_MASK_BUF as u64 != 0 {
        // SAFETY: the caller's buffer handle (contract).
        if let Err(e) = unsafe { fill_from_buf(pd, &mut a) } {
            return null_errno(e);
        }
    }
    let need_fork = a.access as u32 & IBV_ACCESS_ON_DEMAND == 0 && a.comp_mask & IBV_REG_MR_MASK_FD as u64 == 0;
    if need_fork && crate::fork::range(a.addr as usize, a.length, true) != 0 {
        return null_mut();
    }
    // SAFETY: `pd` is live (contract).
    let context = unsafe { (*pd).context };
    // SAFETY: `context` is the PD's open context.
    let dev = unsafe { vdev_of(context) };
    let core_support = if dev.is_null() {
        0
    } else {
        // SAFETY: a non-NULL device of an open context is a live verbs_device.
        unsafe { (*dev).core_support }
    };
    a.access = effective_access(a.access as u32, core_support) as c_int;
    // SAFETY: an open context; the provider gets the library's copy.
    let mr = unsafe { crate::op!(context, reg_mr_ex)(pd, &mut a) };
    if !mr.is_null() {
        // SAFETY: a live MR the provider just returned.
        unsafe {
            (*mr).context = context;
            (*mr).length = a.length;
            (*mr).pd = pd;
            (*mr).addr = if a.comp_mask & IBV_REG_MR_MASK_ADDR as u64 != 0 {
                a.addr
            } else {
                a.fd_offset as usize as *mut c_void
            };
        }
    } else if need_fork {
        crate::fork::range(a.addr as usize, a.length, false);
    }
    mr
}

// --- public: completion counters ----------------------------------------------

crate::export! {
    /// Zeroes `caps_size` bytes of `caps`, then asks the provider.
    fn _ibv_query_comp_cntr_caps(context: *mut ibv_context, caps: *mut ibv_comp_cntr_caps, caps_size: usize) -> c_int [on_panic: libc::EIO] {
        if context.is_null() || caps.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `caps` has `caps_size` writable bytes (the caller's
        // contract, as upstream's memset); an open context.
        unsafe {
            core::ptr::write_bytes(caps.cast::<u8>(), 0, caps_size);
            crate::op!(context, query_comp_cntr_caps)(context, caps, caps_size)
        }
    }

    fn ibv_create_comp_cntr(context: *mut ibv_context, cc_attr: *mut ibv_comp_cntr_init_attr) -> *mut ibv_comp_cntr [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: an open context; the provider gets the caller's attribute.
        unsafe { crate::op!(context, create_comp_cntr)(context, cc_attr) }
    }

    fn ibv_destroy_comp_cntr(comp_cntr: *mut ibv_comp_cntr) -> c_int [on_panic: libc::EIO] {
        if comp_cntr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a counter of an open context.
        unsafe { crate::op!((*comp_cntr).context, destroy_comp_cntr)(comp_cntr) }
    }

    fn ibv_set_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: u64) -> c_int [on_panic: libc::EIO] {
        if comp_cntr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a counter of an open context.
        unsafe { crate::op!((*comp_cntr).context, set_comp_cntr)(comp_cntr, value) }
    }

    fn ibv_set_err_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: u64) -> c_int [on_panic: libc::EIO] {
        if comp_cntr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a counter of an open context.
        unsafe { crate::op!((*comp_cntr).context, set_err_comp_cntr)(comp_cntr, value) }
    }

    fn ibv_inc_comp_cntr(comp_cntr: *mut ibv_comp_cntr, amount: u64) -> c_int [on_panic: libc::EIO] {
        if comp_cntr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a counter of an open context.
        unsafe { crate::op!((*comp_cntr).context, inc_comp_cntr)(comp_cntr, amount) }
    }

    fn ibv_inc_err_comp_cntr(comp_cntr: *mut ibv_comp_cntr, amount: u64) -> c_int [on_panic: libc::EIO] {
        if comp_cntr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a counter of an open context.
        unsafe { crate::op!((*comp_cntr).context, inc_err_comp_cntr)(comp_cntr, amount) }
    }

    fn ibv_read_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: *mut u64) -> c_int [on_panic: libc::EIO] {
        if comp_cntr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a counter of an open context; the caller's out pointer.
        unsafe { crate::op!((*comp_cntr).context, read_comp_cntr)(comp_cntr, value) }
    }

    fn ibv_read_err_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: *mut u64) -> c_int [on_panic: libc::EIO] {
        if comp_cntr.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a counter of an open context; the caller's out pointer.
        unsafe { crate::op!((*comp_cntr).context, read_err_comp_cntr)(comp_cntr, value) }
    }

    fn ibv_qp_attach_comp_cntr(qp: *mut ibv_qp, comp_cntr: *mut ibv_comp_cntr, attr: *mut ibv_qp_attach_comp_cntr_attr) -> c_int [on_panic: libc::EIO] {
        if qp.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a QP of an open context; the provider gets the caller's
        // counter and attribute.
        unsafe { crate::op!((*qp).context, qp_attach_comp_cntr)(qp, comp_cntr, attr) }
    }
}

// --- private (IBVERBS_PRIVATE_65): commands -------------------------------------

crate::export! {
    fn ibv_cmd_query_port_speed(context: *mut ibv_context, port_num: u32, speed: *mut u64) -> c_int [on_panic: libc::EIO] {
        // SAFETY: an open context and a writable `speed` (the provider's C contract).
        unsafe { k::query_port_speed(context, port_num, speed) }
    }
    fn ibv_cmd_query_comp_cntr_caps(context: *mut ibv_context, caps: *mut ibv_comp_cntr_caps, caps_size: usize) -> c_int [on_panic: libc::EIO] {
        // SAFETY: an open context and `caps` writable for `caps_size` bytes (C contract).
        unsafe { k::query_comp_cntr_caps(context, caps, caps_size) }
    }
    fn ibv_cmd_alloc_dmah(ctx: *mut ibv_context, st: *mut verbs_dmah, attr: *mut ibv_dmah_init_attr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: an open context, the provider's writable handle, a readable attribute (C contract).
        unsafe { k::alloc_dmah(ctx, st, attr) }
    }
    fn ibv_cmd_free_dmah(dmah: *mut verbs_dmah) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live handle from ibv_cmd_alloc_dmah (C contract).
        unsafe { k::free_dmah(dmah) }
    }
    fn ibv_cmd_export_dmabuf_fd(ctx: *mut ibv_context, pg_off: libc::off_t) -> c_int [on_panic: -1] {
        // SAFETY: an open context (C contract).
        unsafe { k::export_dmabuf_fd(ctx, pg_off) }
    }
    fn ibv_cmd_reg_mr_ex(pd: *mut ibv_pd, vmr: *mut verbs_mr, mr_init_attr: *mut ibv_mr_init_attr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live PD, the provider's writable verbs_mr, a readable attribute (C contract).
        unsafe { k::reg_mr_ex(pd, vmr, mr_init_attr) }
    }
    fn ibv_cmd_create_comp_cntr(context: *mut ibv_context, comp_cntr: *mut ibv_comp_cntr, link: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        // SAFETY: an open context, the provider's writable counter, its attribute chain or NULL (C contract).
        unsafe { k::create_comp_cntr(context, comp_cntr, link) }
    }
    fn ibv_cmd_destroy_comp_cntr(comp_cntr: *mut ibv_comp_cntr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live counter (C contract).
        unsafe { k::destroy_comp_cntr(comp_cntr) }
    }
    fn ibv_cmd_set_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: u64) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live counter (C contract).
        unsafe { k::modify_comp_cntr(comp_cntr, IB_UVERBS_COMP_CNTR_ENTRY_COMP, IB_UVERBS_COMP_CNTR_MODIFY_OP_SET, value) }
    }
    fn ibv_cmd_set_err_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: u64) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live counter (C contract).
        unsafe { k::modify_comp_cntr(comp_cntr, IB_UVERBS_COMP_CNTR_ENTRY_ERR, IB_UVERBS_COMP_CNTR_MODIFY_OP_SET, value) }
    }
    fn ibv_cmd_inc_comp_cntr(comp_cntr: *mut ibv_comp_cntr, amount: u64) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live counter (C contract).
        unsafe { k::modify_comp_cntr(comp_cntr, IB_UVERBS_COMP_CNTR_ENTRY_COMP, IB_UVERBS_COMP_CNTR_MODIFY_OP_INC, amount) }
    }
    fn ibv_cmd_inc_err_comp_cntr(comp_cntr: *mut ibv_comp_cntr, amount: u64) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live counter (C contract).
        unsafe { k::modify_comp_cntr(comp_cntr, IB_UVERBS_COMP_CNTR_ENTRY_ERR, IB_UVERBS_COMP_CNTR_MODIFY_OP_INC, amount) }
    }
    fn ibv_cmd_read_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: *mut u64) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live counter and a writable `value` (C contract).
        unsafe { k::read_comp_cntr(comp_cntr, IB_UVERBS_COMP_CNTR_ENTRY_COMP, value) }
    }
    fn ibv_cmd_read_err_comp_cntr(comp_cntr: *mut ibv_comp_cntr, value: *mut u64) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live counter and a writable `value` (C contract).
        unsafe { k::read_comp_cntr(comp_cntr, IB_UVERBS_COMP_CNTR_ENTRY_ERR, value) }
    }
    fn ibv_cmd_qp_attach_comp_cntr(qp: *mut ibv_qp, comp_cntr: *mut ibv_comp_cntr, attr: *mut ibv_qp_attach_comp_cntr_attr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: a live QP and counter of one context, a readable attribute (C contract).
        unsafe { k::qp_attach_comp_cntr(qp, comp_cntr, attr) }
    }
}

// --- private (IBVERBS_PRIVATE_65): dma-buf heaps --------------------------------

/// `struct ibv_dmabuf_heap`: an open `/dev/dma_heap/<name>`.
#[repr(C)]
pub struct ibv_dmabuf_heap {
    heap_fd: c_int,
}

/// Opens `/dev/dma_heap/<name>`; NULL with errno (open's, or EINVAL).
fn heap_init(name: &str) -> *mut ibv_dmabuf_heap {
    let Ok(path) = std::ffi::CString::new(format!("/dev/dma_heap/{name}")) else {
        return null_errno(libc::EINVAL);
    };
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return null_mut();
    }
    Box::into_raw(Box::new(ibv_dmabuf_heap { heap_fd: fd }))
}

crate::export! {
    /// The confidential-computing shared heap (`system_cc_shared`), or
    /// NULL with open's errno (ENOENT where the kernel has none).
    fn ibv_dmabuf_heap_cc_shared_init() -> *mut ibv_dmabuf_heap [on_panic: null_mut()] {
        heap_init("system_cc_shared")
    }

    fn ibv_dmabuf_heap_destroy(heap: *mut ibv_dmabuf_heap) -> () [on_panic: ()] {
        if heap.is_null() {
            return;
        }
        // SAFETY: a heap from ibv_dmabuf_heap_cc_shared_init, destroyed once.
        unsafe {
            let h = Box::from_raw(heap);
            libc::close(h.heap_fd);
        }
    }

    /// `size` bytes of the heap, mapped shared read/write, with the
    /// dma-buf fd in `*dmabuf_fd`; NULL with errno.
    fn ibv_dmabuf_heap_alloc(heap: *mut ibv_dmabuf_heap, size: usize, dmabuf_fd: *mut c_int) -> *mut c_void [on_panic: null_mut()] {
        if heap.is_null() || dmabuf_fd.is_null() {
            return null_errno(libc::EINVAL);
        }
        let mut d = dma_heap_allocation_data {
            len: size as u64,
            fd_flags: (libc::O_RDWR | libc::O_CLOEXEC) as u32,
            ..Default::default()
        };
        // SAFETY: a live heap; the kernel fills `d`.
        if unsafe { libc::ioctl((*heap).heap_fd, DMA_HEAP_IOCTL_ALLOC as _, &mut d) } < 0 {
            return null_mut();
        }
        let fd = d.fd as c_int;
        // SAFETY: mapping the dma-buf just allocated.
        let p = unsafe {
            libc::mmap(null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if p == libc::MAP_FAILED {
            let e = crate::ffi::errno();
            // SAFETY: the descriptor the kernel just gave us.
            unsafe { libc::close(fd) };
            set_errno(e);
            return null_mut();
        }
        // SAFETY: the caller's out pointer (checked non-NULL).
        unsafe { *dmabuf_fd = fd };
        p
    }

    fn ibv_dmabuf_heap_free(buf: *mut c_void, size: usize, dmabuf_fd: c_int) -> () [on_panic: ()] {
        // SAFETY: a mapping and descriptor from ibv_dmabuf_heap_alloc.
        unsafe {
            libc::munmap(buf, size);
            libc::close(dmabuf_fd);
        }
    }
}

#[cfg(test)]
mod tests;
