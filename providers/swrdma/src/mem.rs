//! The owner's memory as a device sees it: checked when it is registered
//! (as `ib_umem_get` does for a kernel provider) and accessed for peers
//! without ever faulting.
//!
//! A kernel provider pins registered pages; this device does not (nothing
//! is pinned, the owner's CPU copies at the time of the access).  The
//! application may therefore unmap or write-protect registered memory
//! after `ibv_reg_mr`.  Every access a *peer* causes (RDMA WRITE, READ and
//! atomics into our MRs, SEND data into posted receive buffers, READ
//! responses into local buffers) goes through [`copy_in`], [`copy_out`]
//! and [`atomic`], which report a missing or protected page as a failure,
//! never as a signal; the device answers such an access with a
//! remote-access (or local) error completion, as a device answers an access
//! to memory it cannot reach.
//!
//! How, on x86-64: the copy (`rep movsb`) and the atomic instructions live
//! in a few lines of assembly whose faulting instruction addresses are
//! known; a SIGSEGV/SIGBUS handler, installed when the first context opens,
//! resumes a fault at one of those addresses at a recovery label (as the
//! kernel's exception tables do for `copy_from_user`).  Any other fault is
//! passed on to the handler that was installed before ours (or the default
//! action).  No system call on the fast path.  An application that later
//! replaces our handler loses the protection (a fault then kills it, as
//! before), and so does one that blocks SIGSEGV in a thread that drives
//! progress.  Elsewhere (other architectures), copies go through
//! `process_vm_writev`/`process_vm_readv` on our own process (EFAULT
//! instead of a fault; about 2 us per call), and atomics are preceded by an
//! 8-byte probe through the kernel (memory unmapped or write-protected
//! concurrently with the atomic is the window left there).

use ibverbs_abi::ibv_sge;
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

#[cfg(target_arch = "x86_64")]
mod fixup {
    //! The fault-recovering copy and atomics (x86-64) and their handler.
    use std::os::raw::{c_int, c_void};
    use std::sync::OnceLock;

    // Each routine returns 0 in eax, or 1 from `swrdma_fc_fixup` when the
    // instruction at its `_ip` label faulted (the handler moved rip there).
    // System V ABI: rdi, rsi, rdx, rcx are the arguments; rcx, rsi, rdi,
    // rax are clobbered; nothing else is touched.
    std::arch::global_asm!(
        ".pushsection .text.swrdma_fc,\"ax\",@progbits",
        ".p2align 4",
        ".globl swrdma_fc_copy",
        ".hidden swrdma_fc_copy",
        "swrdma_fc_copy:",
        "    mov rcx, rdx",
        ".globl swrdma_fc_copy_ip",
        ".hidden swrdma_fc_copy_ip",
        "swrdma_fc_copy_ip:",
        "    rep movsb",
        "    xor eax, eax",
        "    ret",
        ".globl swrdma_fc_cas",
        ".hidden swrdma_fc_cas",
        "swrdma_fc_cas:",
        "    mov rax, rsi",
        ".globl swrdma_fc_cas_ip",
        ".hidden swrdma_fc_cas_ip",
        "swrdma_fc_cas_ip:",
        "    lock cmpxchg qword ptr [rdi], rdx",
        "    mov qword ptr [rcx], rax",
        "    xor eax, eax",
        "    ret",
        ".globl swrdma_fc_faa",
        ".hidden swrdma_fc_faa",
        "swrdma_fc_faa:",
        ".globl swrdma_fc_faa_ip",
        ".hidden swrdma_fc_faa_ip",
        "swrdma_fc_faa_ip:",
        "    lock xadd qword ptr [rdi], rsi",
        "    mov qword ptr [rdx], rsi",
        "    xor eax, eax",
        "    ret",
        ".globl swrdma_fc_store",
        ".hidden swrdma_fc_store",
        "swrdma_fc_store:",
        ".globl swrdma_fc_store_ip",
        ".hidden swrdma_fc_store_ip",
        "swrdma_fc_store_ip:",
        "    xchg qword ptr [rdi], rsi",
        "    xor eax, eax",
        "    ret",
        ".globl swrdma_fc_fixup",
        ".hidden swrdma_fc_fixup",
        "swrdma_fc_fixup:",
        "    mov eax, 1",
        "    ret",
        ".popsection",
    );

    extern "C" {
        fn swrdma_fc_copy(dst: *mut u8, src: *const u8, n: usize) -> u32;
        fn swrdma_fc_cas(p: *mut u64, cmp: u64, swap: u64, old: *mut u64) -> u32;
        fn swrdma_fc_faa(p: *mut u64, add: u64, old: *mut u64) -> u32;
        fn swrdma_fc_store(p: *mut u64, v: u64) -> u32;
        static swrdma_fc_copy_ip: u8;
        static swrdma_fc_cas_ip: u8;
        static swrdma_fc_faa_ip: u8;
        static swrdma_fc_store_ip: u8;
        static swrdma_fc_fixup: u8;
    }

    /// The handlers of SIGSEGV and SIGBUS before ours (to pass other
    /// faults on to).
    struct Old([libc::sigaction; 2]);
    // SAFETY: plain data (handler addresses, flags, a signal mask), read
    // only after it is set once.
    unsafe impl Sync for Old {}
    // SAFETY: as above.
    unsafe impl Send for Old {}
    static OLD: OnceLock<Old> = OnceLock::new();

    /// The addresses of the instructions that may fault (only the labels'
    /// addresses are taken, never their bytes).
    fn faulting_ips() -> [usize; 4] {
        [
            std::ptr::addr_of!(swrdma_fc_copy_ip) as usize,
            std::ptr::addr_of!(swrdma_fc_cas_ip) as usize,
            std::ptr::addr_of!(swrdma_fc_faa_ip) as usize,
            std::ptr::addr_of!(swrdma_fc_store_ip) as usize,
        ]
    }

    extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let uc = ctx as *mut libc::ucontext_t;
        // SAFETY: the kernel passes the interrupted context of this thread
        // (SA_SIGINFO); rip is read and, for our own instructions, moved to
        // the recovery label, which is what resuming there means.
        unsafe {
            let rip = &mut (*uc).uc_mcontext.gregs[libc::REG_RIP as usize];
            if faulting_ips().contains(&(*rip as usize)) {
                *rip = std::ptr::addr_of!(swrdma_fc_fixup) as i64;
                return;
            }
        }
        // Not ours: the previous handler's business.
        let i = if sig == libc::SIGBUS { 1 } else { 0 };
        let Some(old) = OLD.get() else { return };
        let o = &old.0[i];
        let h = o.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            // Back to the default action; returning re-runs the faulting
            // instruction, which then ends the process as it would have.
            // SAFETY: a valid sigaction (the default) for this signal.
            unsafe {
                let mut d: libc::sigaction = std::mem::zeroed();
                d.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &d, std::ptr::null_mut());
            }
        } else if o.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the application's handler, with the arguments the
            // kernel gave us, as it would have received them.
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        } else {
            // SAFETY: as above, a plain handler.
            let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }

    /// Installs the handler once (first context).  False when it could not
    /// be (then the caller copies through the kernel).
    pub fn install() -> bool {
        static DONE: OnceLock<bool> = OnceLock::new();
        *DONE.get_or_init(|| {
            // SAFETY: sigaction with valid structures: the old actions are
            // read first, then ours installed (SA_SIGINFO handler, the
            // faulting signal not blocked inside it so a chained default
            // action can happen; SA_ONSTACK: an alternate stack is used if
            // the thread has one).
            unsafe {
                let mut old: [libc::sigaction; 2] = std::mem::zeroed();
                for (i, sig) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
                    if libc::sigaction(sig, std::ptr::null(), &mut old[i]) != 0 {
                        return false;
                    }
                }
                if OLD.set(Old(old)).is_err() {
                    return false;
                }
                let mut a: libc::sigaction = std::mem::zeroed();
                a.sa_sigaction = on_fault as *const () as usize;
                a.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                libc::sigemptyset(&mut a.sa_mask);
                [libc::SIGSEGV, libc::SIGBUS]
                    .into_iter()
                    .all(|sig| libc::sigaction(sig, &a, std::ptr::null_mut()) == 0)
            }
        })
    }

    /// # Safety
    /// `src` has `n` readable bytes or `dst` `n` writable bytes (one of the
    /// two is ours and certainly valid); the other may be anything: a fault
    /// there returns false.  Not overlapping.
    pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) -> bool {
        // SAFETY: the routine copies `n` bytes; a fault in it is recovered
        // by `on_fault` (installed: see the callers).
        unsafe { swrdma_fc_copy(dst, src, n) == 0 }
    }

    /// The atomic `op` on the 8 bytes at `p` (8-aligned); None on a fault.
    pub fn atomic(p: u64, op: crate::mem::Atomic) -> Option<u64> {
        let mut old = 0u64;
        let p = p as *mut u64;
        // SAFETY: `p` is 8-aligned (the callers check); the instructions
        // fault at their `_ip` labels only, recovered by `on_fault`.
        let r = unsafe {
            match op {
                crate::mem::Atomic::Cas(c, s) => swrdma_fc_cas(p, c, s, &mut old),
                crate::mem::Atomic::Add(a) => swrdma_fc_faa(p, a, &mut old),
                crate::mem::Atomic::Store(v) => swrdma_fc_store(p, v),
            }
        };
        (r == 0).then_some(old)
    }
}

/// An atomic operation a peer asks for (the engine's).
pub use swrdma_rc::memory::Atomic;

/// This process's memory as the engine reaches it: every copy fault-safe
/// (memory the owner no longer maps fails the copy; it never faults).
pub struct ProcessMemory;

impl swrdma_rc::memory::Memory for ProcessMemory {
    fn write(&self, dst: u64, src: &[u8]) -> bool {
        // SAFETY: `src` is a live slice of `src.len()` readable bytes; the
        // destination is written fault-safe (see `copy_in`).
        unsafe { copy_in(dst, src.as_ptr(), src.len()) }
    }

    fn read(&self, src: u64, dst: &mut [u8]) -> bool {
        // SAFETY: `dst` is a live slice with room for `dst.len()` bytes; the
        // source is read fault-safe (see `copy_out`).
        unsafe { copy_out(dst.as_mut_ptr(), src, dst.len()) }
    }

    fn atomic(&self, addr: u64, op: Atomic) -> Option<u64> {
        atomic(addr, op)
    }
}

/// Fault-safe accesses need their handler: installed when a context opens
/// (before any peer can reach our memory).  False: copies go through the
/// kernel.
pub fn init() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        fixup::install()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
fn fast() -> bool {
    init()
}

/// The atomic `op` on the 8 bytes at `addr` (8-aligned) of this process:
/// its original value, or None when that memory is not mapped (writable).
/// Runs with this process's atomic lock of `addr` held (locks.rs): peers
/// executing atomics on our memory take the same lock.
pub fn atomic(addr: u64, op: Atomic) -> Option<u64> {
    match crate::locks::Access::own() {
        Some(a) => a.locked(addr, || atomic_unlocked(addr, op)),
        None => atomic_unlocked(addr, op),
    }
}

pub fn atomic_unlocked(addr: u64, op: Atomic) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    if fast() {
        return fixup::atomic(addr, op);
    }
    if !probe(addr, 8) {
        return None;
    }
    // SAFETY: 8-aligned (the callers check) and mapped a moment ago (the
    // probe; the window left is documented above).
    let a = unsafe { &*(addr as *const std::sync::atomic::AtomicU64) };
    use std::sync::atomic::Ordering::SeqCst;
    Some(match op {
        Atomic::Cas(c, s) => match a.compare_exchange(c, s, SeqCst, SeqCst) {
            Ok(v) | Err(v) => v,
        },
        Atomic::Add(v) => a.fetch_add(v, SeqCst),
        Atomic::Store(v) => a.swap(v, SeqCst),
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
    #[cfg(target_arch = "x86_64")]
    if fast() {
        // SAFETY: `src` has `len` readable bytes (the contract); a fault at
        // `dst` is recovered.
        return unsafe { fixup::copy(dst as *mut u8, src, len) };
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
    #[cfg(target_arch = "x86_64")]
    if fast() {
        // SAFETY: `dst` has room for `len` bytes (the contract); a fault at
        // `src` is recovered.
        return unsafe { fixup::copy(dst, src as *const u8, len) };
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
    if let Some(r) = query_mapped(addr & !4095, end, write) {
        return r;
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

/// `struct procmap_query` of linux/fs.h (Linux 6.11): one mapping of the
/// process, asked of /proc/self/maps by address with `PROCMAP_QUERY`.
#[repr(C)]
#[derive(Default)]
pub(crate) struct ProcmapQuery {
    pub size: u64,
    pub query_flags: u64,
    pub query_addr: u64,
    pub vma_start: u64,
    pub vma_end: u64,
    pub vma_flags: u64,
    pub vma_page_size: u64,
    pub vma_offset: u64,
    pub inode: u64,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub vma_name_size: u32,
    pub build_id_size: u32,
    pub vma_name_addr: u64,
    pub build_id_addr: u64,
}
/// _IOWR('f', 17, struct procmap_query)
pub(crate) const PROCMAP_QUERY: u64 =
    0xc000_0000 | ((std::mem::size_of::<ProcmapQuery>() as u64) << 16) | (0x66 << 8) | 17;
const PROCMAP_QUERY_VMA_READABLE: u64 = 1;
const PROCMAP_QUERY_VMA_WRITABLE: u64 = 2;

/// `check_mapped` by `PROCMAP_QUERY`, one mapping at a time, from page
/// `need` to `end` (reading the whole of /proc/self/maps costs tens of
/// microseconds per registration); None: the kernel has no such query.
fn query_mapped(mut need: u64, end: u64, write: bool) -> Option<Result<(), i32>> {
    // (Opened each time: a descriptor kept open would go on naming the
    // parent's mappings in a forked child.)
    let f = std::fs::File::open("/proc/self/maps").ok()?;
    while need < end {
        let mut q = ProcmapQuery {
            size: std::mem::size_of::<ProcmapQuery>() as u64,
            query_addr: need,
            ..Default::default()
        };
        // SAFETY: `q` is a `struct procmap_query` with its size set; the
        // kernel writes only into it (no name or build-id buffers asked).
        let r = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&f), PROCMAP_QUERY as _, &mut q) };
        if r < 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOENT) => Some(Err(libc::EFAULT)), // a hole
                _ => None,
            };
        }
        let want = PROCMAP_QUERY_VMA_READABLE | if write { PROCMAP_QUERY_VMA_WRITABLE } else { 0 };
        if q.vma_flags & want != want || q.vma_end <= need {
            return Some(Err(libc::EFAULT));
        }
        need = q.vma_end;
    }
    Some(Ok(()))
}

// ---------------------------------------------------------------------------
// Scatter / gather lists
// ---------------------------------------------------------------------------

/// Copies `len` bytes into the scatter list starting at byte `off`; false
/// when the list is too short or a destination is no longer mapped
/// writable (fault-safe: the kernel copies, see mem.rs).
///
/// # Safety
/// Every SGE range is writable memory of this process (the list passed
/// `check_local` for writing: it lies in registered MRs, and addresses are
/// process addresses); `src` has `len` readable bytes, not overlapping.
pub unsafe fn scatter(sges: &[ibv_sge], mut off: u64, src: *const u8, len: usize) -> bool {
    let mut done = 0usize;
    for s in sges {
        if done == len {
            break;
        }
        let sl = s.length as u64;
        if off >= sl {
            off -= sl;
            continue;
        }
        let n = ((sl - off) as usize).min(len - done);
        // SAFETY: `n` bytes from `done` < `len` of `src` (the contract); the
        // destination is written by the kernel: memory the owner no longer
        // maps writable fails the copy, it does not fault.
        if !unsafe { copy_in(s.addr + off, src.add(done), n) } {
            return false;
        }
        done += n;
        off = 0;
    }
    done == len
}

/// Like [`gather`], reading fault-safe (see mem.rs): false when a source
/// is no longer mapped readable.
///
/// # Safety
/// `dst` has room for `len` bytes; the SGE ranges are process addresses
/// (they may have been unmapped since they were checked).
pub unsafe fn gather_safe(sges: &[ibv_sge], mut off: u64, dst: *mut u8, len: usize) -> bool {
    let mut done = 0usize;
    for s in sges {
        if done == len {
            break;
        }
        let sl = s.length as u64;
        if off >= sl {
            off -= sl;
            continue;
        }
        let n = ((sl - off) as usize).min(len - done);
        // SAFETY: `dst` + `done` has room for `n` bytes (done + n <= len, the
        // contract); the source is read by the kernel / with fault recovery.
        if !unsafe { copy_out(dst.add(done), s.addr + off, n) } {
            return false;
        }
        done += n;
        off = 0;
    }
    done == len
}

/// Copies `len` bytes out of the gather list starting at byte `off`.
///
/// # Safety
/// Every SGE range is readable memory of this process (the list passed
/// `check_local`, or is the inline data of the request being posted);
/// `dst` has room for `len` bytes, not overlapping.
pub unsafe fn gather(sges: &[ibv_sge], mut off: u64, dst: *mut u8, len: usize) {
    let mut done = 0usize;
    for s in sges {
        if done == len {
            break;
        }
        let sl = s.length as u64;
        if off >= sl {
            off -= sl;
            continue;
        }
        let n = ((sl - off) as usize).min(len - done);
        // SAFETY: `n` bytes of the SGE's range from `off` < its length, to
        // `dst` + `done` with `done + n` <= `len` (the contract covers both).
        unsafe { std::ptr::copy_nonoverlapping((s.addr + off) as *const u8, dst.add(done), n) };
        done += n;
        off = 0;
    }
}
