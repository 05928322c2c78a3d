//! The process's *access page*: a small shared memory file through which
//! other processes of the user execute one-sided operations on our memory
//! without our CPU (direct.rs), and we on theirs.
//!
//! It holds two tables, both written by any process that maps it:
//!
//! * **Atomic locks** (`LOCKS` words, by 8-byte address): every atomic on
//!   this process's memory — executed by a peer through cross-memory
//!   attach (read, compute, write) or by this process itself (ring and
//!   wire responders, mem.rs) — runs with the lock of its address held, so
//!   the device's atomics are atomic with respect to one another
//!   (`IBV_ATOMIC_HCA`, what the device advertises; as on hardware, not
//!   with respect to the CPU's own accesses).  A lock word holds the pid of
//!   its holder; a waiter takes over a lock whose holder has exited.
//! * **Announcements** (`SLOTS` pairs of words): a peer announces the MR
//!   (owner context id and key) it is about to access before it checks the
//!   owner's directory entry, and withdraws the announcement after the
//!   copy; the owner, deregistering, withdraws the entry first, then waits
//!   until no live process announces that MR.  Each side fences between
//!   its store and its load (Dekker): after `ibv_dereg_mr` returns, no
//!   peer writes into the memory.
//!
//! The file is created when the process's first context opens and closed
//! with its last one (`Access::hold`: a process whose contexts are all
//! closed keeps no descriptor of the device; a creation that failed, e.g.
//! `EMFILE`, is tried again by the next context), sealed so that its size
//! never changes, and passed to peers with each link's handshake (or taken
//! with `pidfd_getfd`, ipc.rs).  A forked child shares its parent's (locks
//! that are wider than needed are still locks).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

const MAGIC: u64 = 0x5357_5244_4143_4331; // "SWRDACC1"
const LOCKS: usize = 256;
const SLOTS: usize = 512;
const LOCK0: usize = 8;
const SLOT0: usize = LOCK0 + LOCKS;
/// The file's size.
pub const BYTES: usize = 16384;
const _: () = assert!((SLOT0 + 2 * SLOTS) * 8 <= BYTES);

/// The process's own access page and the number of contexts holding it.
struct Own {
    holds: usize,
    page: Option<Arc<Access>>,
}

static OWN: RwLock<Own> = RwLock::new(Own { holds: 0, page: None });

/// One context's hold on the process's access page (`Access::hold`).
pub struct Hold(Option<Arc<Access>>);

impl Hold {
    /// The page (None: it could not be made when the context opened).
    pub fn page(&self) -> Option<&Access> {
        self.0.as_deref()
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let last = {
            let mut g = OWN.write().unwrap_or_else(|e| e.into_inner());
            g.holds -= 1;
            if g.holds == 0 {
                g.page.take()
            } else {
                None
            }
        };
        // (Unmapped and closed here, outside the lock, once no one else
        // has the `Arc`.)
        drop(last);
    }
}

/// A mapping of some process's access page.
pub struct Access {
    fd: OwnedFd,
    map: *const AtomicU64,
}
// SAFETY: `map` is a shared mapping of `BYTES` owned by the `Access`
// (unmapped in Drop), accessed through atomics only.
unsafe impl Send for Access {}
// SAFETY: as above.
unsafe impl Sync for Access {}

impl Drop for Access {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map_fd`, unused after Drop.
        unsafe { libc::munmap(self.map as *mut _, BYTES) };
    }
}

/// This process's pid, cached: `getpid` is a system call (glibc caches it
/// no longer), and two of them per one-sided request cost as much as a
/// third of a 4 KiB `process_vm_writev` (issue 34).  A forked child
/// forgets the parent's (`pthread_atfork`).
static PID: AtomicU64 = AtomicU64::new(0);

extern "C" fn forked() {
    PID.store(0, Ordering::Relaxed);
}

pub(crate) fn pid() -> u64 {
    let p = PID.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    static AT_FORK: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a handler that only stores to an atomic.
    AT_FORK.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(forked));
    });
    let p = std::process::id() as u64;
    PID.store(p, Ordering::Relaxed);
    p
}

/// Process `p` has exited (or never was ours to see).
fn gone(p: u64) -> bool {
    // SAFETY: signal 0 checks existence only.
    p != 0
        && unsafe { libc::kill(p as libc::pid_t, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else if *spins < 4096 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// One announced access (withdrawn when dropped).
pub struct Announced<'a> {
    slot: &'a [AtomicU64],
}

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        self.slot[0].store(0, Ordering::Release);
        self.slot[1].store(0, Ordering::Release);
    }
}

impl Access {
    /// This process's own access page while a context holds it (`hold`).
    pub fn own() -> Option<Arc<Access>> {
        OWN.read().unwrap_or_else(|e| e.into_inner()).page.clone()
    }

    /// A context's hold on the process's access page, made now when no
    /// context holds one (the hold has none when no memory file can be
    /// made).  The page goes when the last hold is dropped.
    pub fn hold() -> Hold {
        let mut g = OWN.write().unwrap_or_else(|e| e.into_inner());
        g.holds += 1;
        if g.page.is_none() {
            g.page = Access::create().map(Arc::new);
        }
        Hold(g.page.clone())
    }

    fn create() -> Option<Access> {
        use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags, SealFlags};
        let fd = memfd_create(c"swrdma-access", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).ok()?;
        ftruncate(&fd, BYTES as u64).ok()?;
        fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL).ok()?;
        let a = Access::map_fd(fd)?;
        a.words()[0].store(MAGIC, Ordering::Release);
        Some(a)
    }

    /// Maps a peer's access page: a memory file of exactly `BYTES` that
    /// can neither shrink nor grow (checked first: no SIGBUS later).
    pub fn peer(fd: OwnedFd) -> Option<Access> {
        use rustix::fs::{fcntl_get_seals, fstat, FileType, SealFlags};
        let st = fstat(&fd).ok()?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
            || st.st_size as usize != BYTES
            || !fcntl_get_seals(&fd).ok()?.contains(SealFlags::SHRINK | SealFlags::GROW)
        {
            return None;
        }
        let a = Access::map_fd(fd)?;
        (a.words()[0].load(Ordering::Acquire) == MAGIC).then_some(a)
    }

    fn map_fd(fd: OwnedFd) -> Option<Access> {
        // SAFETY: a shared mapping, chosen by the kernel, of a file of at
        // least `BYTES` that cannot shrink (the callers check or seal).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        Some(Access {
            fd,
            map: p as *const AtomicU64,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is `BYTES` long and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.map, BYTES / 8) }
    }

    /// Runs `f` with the atomic lock of address `addr` (of the page's
    /// process) held.
    pub fn locked<T>(&self, addr: u64, f: impl FnOnce() -> T) -> T {
        let w = &self.words()[LOCK0 + ((addr >> 3) as usize % LOCKS)];
        let me = pid();
        let mut spins = 0u32;
        loop {
            match w.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(h) if spins > 0 && spins.is_multiple_of(1024) && gone(h) => {
                    // Its holder died in the middle of an atomic.
                    let _ = w.compare_exchange(h, 0, Ordering::Relaxed, Ordering::Relaxed);
                }
                Err(_) => {}
            }
            backoff(&mut spins);
        }
        let r = f();
        w.store(0, Ordering::Release);
        r
    }

    /// Announces an access to MR `key` of context `ctx` (of the page's
    /// process); None when every slot is taken (the caller then leaves the
    /// access to the owner).  The caller checks the owner's directory after
    /// this returns.
    pub fn announce(&self, ctx: u32, key: u32) -> Option<Announced<'_>> {
        let tag = (ctx as u64) << 32 | key as u64;
        let w = self.words();
        let start = (key as usize >> 8).wrapping_add(pid() as usize) % SLOTS;
        for i in 0..SLOTS {
            let s = &w[SLOT0 + 2 * ((start + i) % SLOTS)..][..2];
            // The slot is taken with the pid word, then tagged: an owner
            // that sees the tag also sees whose it is.
            if s[1]
                .compare_exchange(0, pid(), Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                // (Release: an owner that sees the tag sees the pid; the
                // fence orders the tag before the caller's directory
                // loads, as the owner's fence orders its withdrawal before
                // its loads of the slots: Dekker with SeqCst fences.  A
                // SeqCst store here too was a second full barrier.)
                s[0].store(tag, Ordering::Release);
                fence(Ordering::SeqCst);
                return Some(Announced { slot: s });
            }
        }
        None
    }

    /// The owner side: waits until no live process announces an access to
    /// MR `key` of our context `ctx`.  Call after withdrawing the entry.
    /// A peer that is stopped (a debugger, SIGSTOP) in the middle of an
    /// access is waited for: its copy would land after we return.
    pub fn wait_unannounced(&self, ctx: u32, key: u32) {
        let tag = (ctx as u64) << 32 | key as u64;
        fence(Ordering::SeqCst);
        let w = self.words();
        for i in 0..SLOTS {
            let s = &w[SLOT0 + 2 * i..][..2];
            let mut spins = 0u32;
            while s[0].load(Ordering::SeqCst) == tag {
                let p = s[1].load(Ordering::SeqCst);
                if spins > 0 && spins.is_multiple_of(1024) && gone(p) {
                    // Its process died in the middle of the access.
                    // (The tag first: no one can take the slot until its
                    // pid word is cleared.)
                    if s[0]
                        .compare_exchange(tag, 0, Ordering::SeqCst, Ordering::Relaxed)
                        .is_ok()
                    {
                        let _ = s[1].compare_exchange(p, 0, Ordering::SeqCst, Ordering::Relaxed);
                        break;
                    }
                }
                backoff(&mut spins);
            }
        }
    }
}
