//! Shared registration: the memory of an MR that peers may access
//! remotely is moved, in place, into a memory file that peers can map, so
//! that their RDMA WRITE, READ and atomics reach it without our CPU (see
//! direct.rs).
//!
//! Only whole pages inside the MR are moved, and only when every page of
//! them is private anonymous read-write memory (malloc, `mmap(MAP_ANONYMOUS
//! | MAP_PRIVATE)`): the contents are copied into a memfd (pages that read
//! as zero are left as holes: untouched memory stays unallocated), and the
//! memfd's mapping is moved over the range with `mremap`, so the addresses,
//! contents and protection the application sees do not change.  A write by
//! another thread of the application into those pages while `ibv_reg_mr`
//! runs may be lost (the README says so); the pages belong to the MR alone,
//! so no neighbouring data is at risk.  Anything else (file mappings,
//! SysV/POSIX shared memory, huge-page mappings, read-only memory, the
//! stack, partial pages at the ends) is not moved: accesses there take the
//! ring path (executed by our process).
//!
//! The pages stay in the memory file after deregistration (copying them
//! back would lose what other threads write meanwhile): a later
//! registration of the same pages shares the same file (at an offset) with
//! no copy.  A child forked while pages are in such a file gets private
//! copies (a `pthread_atfork` child handler: the child has one thread, so
//! nothing is lost there), as a forked process gets its own memory.
//!
//! `SWRDMA_DIRECT=0` in the environment turns all this off.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::raw::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

const PAGE: u64 = 4096;

/// Shared registration and direct accesses are enabled (not
/// `SWRDMA_DIRECT=0`).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SWRDMA_DIRECT").is_none_or(|v| v != "0"))
}

/// The pages of an MR in a memory file (a reference to its region: see
/// `release`).
pub struct Share {
    /// Process address and length of the MR's pages ...
    pub base: u64,
    pub len: u64,
    /// ... and where they are in the file.
    pub off: u64,
    /// Unique in the process: tells a peer's cached mapping from a newer one.
    pub id: u64,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A range of the application's memory moved into a memory file.  The
/// file's descriptor is kept only while MRs use the region (`refs`): no
/// descriptor outlives the registrations (at most `MAX_LIVE` regions have
/// one, so a program with many MRs does not run out of descriptors; MRs
/// beyond that take the ring path).  A region without one stays listed for
/// the fork handler; its pages cannot be shared again (no descriptor to
/// give peers: the ring path serves later registrations of them).
struct Region {
    base: u64,
    len: u64,
    fd: Option<OwnedFd>,
    refs: usize,
}

/// At most this many regions keep a descriptor at a time.
const MAX_LIVE: usize = 256;

/// The ranges moved so far (newest last), for reuse and for the fork
/// handler.  Guarded by `FORK_LOCK` too, taken around `fork` by the prepare
/// handler, so that the child never sees it half-changed.
static SHARED: Mutex<Vec<Region>> = Mutex::new(Vec::new());

/// Beyond this many regions, those the application no longer maps are
/// forgotten (at the next registration).
const PRUNE_AT: usize = 1024;
static FORK_LOCK: AtomicBool = AtomicBool::new(false);

fn fork_lock() {
    while FORK_LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
}

fn fork_unlock() {
    FORK_LOCK.store(false, Ordering::Release);
}

extern "C" fn atfork_prepare() {
    fork_lock();
}

extern "C" fn atfork_parent() {
    fork_unlock();
}

/// In the child (one thread): every shared range still mapped from its
/// memfd becomes a private copy, as the memory of a forked process is.
extern "C" fn atfork_child() {
    let ranges: Vec<(u64, u64)> = match SHARED.try_lock() {
        Ok(g) => g.iter().rev().map(|r| (r.base, r.len)).collect(),
        Err(_) => Vec::new(),
    };
    for (base, len) in ranges {
        if still_shared(base, len) {
            privatize(base, len);
        }
    }
    fork_unlock();
}

fn install_atfork() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        // SAFETY: three `extern "C" fn()` handlers that stay valid while we
        // are loaded (the provider is never unloaded by libibverbs).
        unsafe { libc::pthread_atfork(Some(atfork_prepare), Some(atfork_parent), Some(atfork_child)) };
    });
}

/// Each line of /proc/self/maps covering [a, b): start, end, perms, path.
fn maps_over(a: u64, b: u64) -> Option<Vec<(u64, u64, String, String)>> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms), Some(_off), Some(_dev), Some(_ino)) =
            (it.next(), it.next(), it.next(), it.next(), it.next())
        else {
            continue;
        };
        let path: String = it.collect::<Vec<_>>().join(" ");
        let (s, e) = range.split_once('-')?;
        let (s, e) = (u64::from_str_radix(s, 16).ok()?, u64::from_str_radix(e, 16).ok()?);
        if e <= a || s >= b {
            continue;
        }
        out.push((s, e, perms.to_string(), path));
    }
    Some(out)
}

/// [a, b) is covered without holes by private anonymous read-write memory.
fn private_anon(a: u64, b: u64) -> bool {
    let Some(v) = maps_over(a, b) else { return false };
    let mut need = a;
    for (s, e, perms, path) in v {
        if s > need {
            return false;
        }
        let anon = path.is_empty() || path == "[heap]" || path.starts_with("[anon:");
        if perms != "rw-p" || !anon {
            return false;
        }
        need = e;
        if need >= b {
            return true;
        }
    }
    false
}

/// [a, a+len) is still one of our shared MR files (the application did not
/// unmap it and map something else there).
fn still_shared(a: u64, len: u64) -> bool {
    let Some(v) = maps_over(a, a + len) else { return false };
    let mut need = a;
    for (s, e, perms, path) in v {
        if s > need || !perms.starts_with("rw") || !path.starts_with("/memfd:swrdma-mr") {
            return false;
        }
        need = e;
        if need >= a + len {
            return true;
        }
    }
    false
}

/// Makes [base, base+len) private anonymous memory again, same contents.
fn privatize(base: u64, len: u64) {
    // SAFETY: a fresh private anonymous mapping chosen by the kernel.
    let tmp = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if tmp == libc::MAP_FAILED {
        return;
    }
    if !copy_nonzero(tmp as u64, base, len) {
        // SAFETY: `tmp` is the mapping just made, used by no one else.
        unsafe { libc::munmap(tmp, len as usize) };
        return;
    }
    // SAFETY: moves our private mapping `tmp` (len bytes) over [base,
    // base+len), which the caller checked is one of our shared MR files;
    // the contents are the same, so the application sees no change.
    if !unsafe { move_over(tmp, len, base) } {
        // SAFETY: the move failed: `tmp` is still ours alone.
        unsafe { libc::munmap(tmp, len as usize) };
    }
}

/// Moves the mapping at `from` (`len` bytes) to `to`, replacing what is
/// there, with the `mremap` system call itself, not libc's function: memory
/// hooks of the application (UCX's UCM patches libc's `mremap`) must not see
/// this move, which changes neither addresses nor contents for it (they
/// would take it for an unmap of registered memory and deregister it).
///
/// # Safety
/// `from` is a mapping of ours of `len` bytes; [to, to+len) is memory the
/// caller may replace (the same contents are in `from`).
unsafe fn move_over(from: *mut c_void, len: u64, to: u64) -> bool {
    // SAFETY: the caller's contract; mremap(2) with MREMAP_FIXED replaces
    // [to, to+len) atomically or fails leaving both ranges as they were.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mremap,
            from,
            len as usize,
            len as usize,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            to as *mut c_void,
        )
    };
    r != -1 && r as u64 == to
}

/// Copies the pages of [src, src+len) that are not all zero to dst (whose
/// pages read as zero: a fresh mapping), page by page, fault-safe.
fn copy_nonzero(dst: u64, src: u64, len: u64) -> bool {
    let mut page = [0u64; (PAGE / 8) as usize];
    let mut off = 0;
    while off < len {
        // SAFETY: `page` has room for PAGE bytes; the source is read
        // fault-safe (mem.rs).
        if !unsafe { crate::mem::copy_out(page.as_mut_ptr() as *mut u8, src + off, PAGE as usize) } {
            return false;
        }
        if page.iter().any(|w| *w != 0) {
            // SAFETY: [dst+off, +PAGE) lies in the caller's fresh mapping.
            unsafe { std::ptr::copy_nonoverlapping(page.as_ptr() as *const u8, (dst + off) as *mut u8, PAGE as usize) };
        }
        off += PAGE;
    }
    true
}

/// A registration of pages already in one of our memory files: the same
/// file, at their offset.
/// (Some(None): the pages are in one of our files that can no longer be
/// shared: nothing to do.)
fn reuse(a0: u64, n: u64) -> Option<Option<Share>> {
    let mut g = crate::sys::lock(&SHARED);
    if g.len() > PRUNE_AT {
        // Forget the regions the application no longer maps (one read of
        // the maps for all of them).
        let live = maps_over(0, u64::MAX).unwrap_or_default();
        g.retain(|r| {
            r.refs > 0
                || live
                    .iter()
                    .any(|(s, e, _, p)| *s < r.base + r.len && *e > r.base && p.starts_with("/memfd:swrdma-mr"))
        });
        // (Still too many: the oldest unused ones go; a child forked later
        // shares those pages with its parent instead of copying them.)
        while g.len() > PRUNE_AT {
            let Some(i) = g.iter().position(|r| r.refs == 0) else {
                break;
            };
            g.remove(i);
        }
    }
    let r = g.iter_mut().rev().find(|r| r.base <= a0 && a0 + n <= r.base + r.len)?;
    if !still_shared(a0, n) {
        return None;
    }
    if r.fd.is_none() {
        return Some(None);
    }
    r.refs += 1;
    Some(Some(Share {
        base: a0,
        len: n,
        off: a0 - r.base,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
    }))
}

/// The region of a share.
fn region_of<'a>(g: &'a mut [Region], s: &Share) -> Option<&'a mut Region> {
    g.iter_mut()
        .rev()
        .find(|r| r.fd.is_some() && r.base + s.off == s.base && s.base + s.len <= r.base + r.len)
}

/// A descriptor of the memory file behind `s` (for a peer).
pub fn file_of(s: &Share) -> Option<OwnedFd> {
    let mut g = crate::sys::lock(&SHARED);
    region_of(&mut g, s)?.fd.as_ref()?.try_clone().ok()
}

/// The MR of `s` is gone: its region's descriptor is closed once no MR
/// uses it.  The pages stay in the file (see the module's comment).
pub fn release(s: &Share) {
    let mut g = crate::sys::lock(&SHARED);
    if let Some(r) = region_of(&mut g, s) {
        r.refs = r.refs.saturating_sub(1);
        if r.refs == 0 {
            r.fd = None;
        }
    }
}

/// Moves the whole pages inside [va, va+len) into a memory file, if they
/// are private anonymous read-write memory, or finds them in one already
/// (see the module's comment).
pub fn share(va: u64, len: u64) -> Option<Share> {
    if !enabled() {
        return None;
    }
    let a0 = va.checked_add(PAGE - 1)? & !(PAGE - 1);
    let a1 = va.checked_add(len)? & !(PAGE - 1);
    if a1 <= a0 {
        return None;
    }
    if let Some(s) = reuse(a0, a1 - a0) {
        return s;
    }
    if crate::sys::lock(&SHARED).iter().filter(|r| r.fd.is_some()).count() >= MAX_LIVE || !private_anon(a0, a1) {
        return None;
    }
    let n = a1 - a0;
    use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags, SealFlags};
    let fd = memfd_create(c"swrdma-mr", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).ok()?;
    ftruncate(&fd, n).ok()?;
    fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL).ok()?;
    // SAFETY: a fresh shared mapping of our new file, chosen by the kernel.
    let tmp = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if tmp == libc::MAP_FAILED {
        return None;
    }
    install_atfork();
    fork_lock();
    let ok = copy_nonzero(tmp as u64, a0, n) && {
        // SAFETY: moves our mapping of the file over [a0, a1), which is
        // private anonymous read-write memory of the application (checked
        // above) holding what was just copied: the application sees the
        // same contents, addresses and protection.
        unsafe { move_over(tmp, n, a0) }
    };
    if ok {
        crate::sys::lock(&SHARED).push(Region {
            base: a0,
            len: n,
            fd: Some(fd),
            refs: 1,
        });
    }
    fork_unlock();
    if !ok {
        // SAFETY: the move did not happen: `tmp` is ours alone.
        unsafe { libc::munmap(tmp, n as usize) };
        return None;
    }
    Some(Share {
        base: a0,
        len: n,
        off: 0,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
    })
}

/// The last resort when a peer may still be writing into an MR's pages at
/// deregistration (it did not finish within the wait): the pages become
/// private memory again, so that its late stores land in the memory file,
/// not in memory the application may reuse.
pub fn unshare(s: &Share) {
    fork_lock();
    {
        let mut g = crate::sys::lock(&SHARED);
        // (Other MRs on the same region lose the direct path: their pages
        // are private now; their registrations still work, by the ring.)
        g.retain(|r| r.base + r.len <= s.base || r.base >= s.base + s.len);
    }
    if still_shared(s.base, s.len) {
        privatize(s.base, s.len);
    }
    fork_unlock();
}
