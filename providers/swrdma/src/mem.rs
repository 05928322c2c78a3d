//! The owner's memory as a device sees it: checked when it is registered
//! (as `ib_umem_get` does for a kernel provider) and accessed for peers
//! without ever faulting.
//!
//! A kernel provider pins registered pages; this device does not (nothing
//! is pinned, the owner's CPU copies at the time of the access).  The
//! application may therefore unmap or write-protect registered memory
//! after `ibv_reg_mr`.  Every access a *peer* causes (RDMA WRITE, READ and
//! atomics into our MRs, SEND data into posted receive buffers, READ
//! responses into local buffers) goes through [`copy_in`]/[`copy_out`]:
//! `process_vm_writev`/`process_vm_readv` on our own process, which the
//! kernel carries out with the access rights of the mapping and reports a
//! missing or protected page as EFAULT, never as a signal.  The device
//! answers such an access with a remote-access (or local-protection) error
//! completion, as a device answers an access to memory it cannot reach.
//!
//! Atomics must be single 8-byte operations on the owner's memory, so they
//! are done with the CPU's atomics after [`probe`] has read the 8 bytes
//! through the kernel: an address the owner unmapped before the request
//! came in gives an error completion.  (Remaining window, documented in the
//! README: memory unmapped or write-protected *concurrently* with an atomic
//! on it, with the MR still registered.)

use std::os::raw::c_void;
use std::sync::OnceLock;

/// The kernel copies for us (`process_vm_readv` on our own process works:
/// a seccomp filter may forbid it).  When it does not, copies are made by
/// the CPU, trusting the MR checks alone (the device's behaviour before the
/// fault-safe copies; the README says so).
fn kernel_copies() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        let src = 0x5a5a_5a5a_u64;
        let mut dst = 0u64;
        let local = iov(&mut dst as *mut u64 as u64, 8);
        let remote = iov(&src as *const u64 as u64, 8);
        // SAFETY: both iovecs cover 8 bytes of live locals of ours.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        n == 8 && dst == src
    })
}

fn iov(p: u64, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: p as *mut c_void,
        iov_len: len,
    }
}

/// Copies `len` bytes from `src` (memory of ours that is certainly
/// readable, e.g. a ring record or a local buffer) to address `dst` of this
/// process, through the kernel: false when any page of the destination is
/// not mapped writable.
///
/// # Safety
/// `src` has `len` readable bytes.  `dst` may be anything the kernel checks
/// it; only where the kernel refuses to copy for us (`kernel_copies`) it
/// must lie in a registered MR the caller checked.
pub unsafe fn copy_in(dst: u64, src: *const u8, len: usize) -> bool {
    if len == 0 {
        return true;
    }
    if !kernel_copies() {
        // SAFETY: the fallback (see `kernel_copies`): `dst` lies in an MR
        // the caller checked, memory the application keeps mapped while it
        // is registered; `src` has `len` readable bytes.
        unsafe { std::ptr::copy_nonoverlapping(src, dst as *mut u8, len) };
        return true;
    }
    let local = iov(src as u64, len);
    let remote = iov(dst, len);
    // SAFETY: one local iovec over `len` readable bytes (the contract); the
    // remote address range is checked by the kernel, which writes it with
    // the page tables' rights (EFAULT for a hole, no signal).
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == len as isize
}

/// Copies `len` bytes from address `src` of this process to `dst` (memory
/// of ours that is certainly writable), through the kernel: false when any
/// page of the source is not mapped readable.
///
/// # Safety
/// `dst` has room for `len` bytes.  `src` may be anything the kernel checks;
/// only where the kernel refuses to copy for us (`kernel_copies`) it must
/// lie in a registered MR the caller checked.
pub unsafe fn copy_out(dst: *mut u8, src: u64, len: usize) -> bool {
    if len == 0 {
        return true;
    }
    if !kernel_copies() {
        // SAFETY: the fallback (see `kernel_copies`): `src` lies in an MR
        // the caller checked; `dst` has room for `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst, len) };
        return true;
    }
    let local = iov(dst as u64, len);
    let remote = iov(src, len);
    // SAFETY: one local iovec over `len` writable bytes (the contract); the
    // remote range is read by the kernel, EFAULT for a hole.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == len as isize
}

/// The `len` bytes at `addr` are mapped readable now.
pub fn probe(addr: u64, len: usize) -> bool {
    let mut b = [0u8; 64];
    let mut off = 0usize;
    while off < len {
        let n = (len - off).min(b.len());
        // SAFETY: `b` has room for `n` <= 64 bytes.
        if !unsafe { copy_out(b.as_mut_ptr(), addr + off as u64, n) } {
            return false;
        }
        off += n;
    }
    true
}

/// What `ibv_reg_mr` of [addr, addr+len) gives on a kernel provider, which
/// pins the pages (`ib_umem_get`): EINVAL when the range wraps around, EFAULT
/// when part of it is not mapped, or not mapped writable while `write`
/// (the access flags let anyone write it).  Read from /proc/self/maps.
pub fn check_mapped(addr: u64, len: u64, write: bool) -> Result<(), i32> {
    if len == 0 {
        return Ok(()); // nothing to pin
    }
    let Some(end) = addr.checked_add(len) else {
        return Err(libc::EINVAL);
    };
    // (Page-aligning the end must not wrap either.)
    if end.checked_add(4095).is_none() {
        return Err(libc::EINVAL);
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        // No procfs: the accesses stay fault-safe anyway.
        return Ok(());
    };
    let mut need = addr & !4095;
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms)) = (it.next(), it.next()) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        if b <= need {
            continue;
        }
        if a > need {
            return Err(libc::EFAULT); // a hole
        }
        let p = perms.as_bytes();
        // Pinning needs readable (or, for write, writable) user memory; the
        // kernel refuses VM_IO/PFNMAP areas too, which we cannot see here.
        if p.first() != Some(&b'r') || (write && p.get(1) != Some(&b'w')) {
            return Err(libc::EFAULT);
        }
        need = b;
        if need >= end {
            return Ok(());
        }
    }
    Err(libc::EFAULT)
}
