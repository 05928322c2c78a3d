//! How the agent reaches a client's registered memory (issue 33, plan
//! step 2/3; not yet called by the agent): cross-memory attach
//! (`process_vm_writev`/`process_vm_readv` on the client's pid), after the
//! same key checks the provider's engine makes, and the client's atomic
//! lock words for atomics.
//!
//! * **Checks first.** Every placement is checked against the client's
//!   key table before any memory is touched: a remote access with
//!   [`swrdma_rc::responder::Target::check`] (the QP's rights, an atomic's
//!   alignment, the R_Key's PD, window, rights and range: its
//!   [`Fault`]s), a local scatter/gather list with
//!   [`Keys::check_local`] (`LOCAL_WRITE` to write into it; its
//!   `LOC_PROT_ERR`).  The caller holds the table (its lock, read) across
//!   the call, so a `dereg_mr`, which takes it to write, waits for the copy
//!   and none starts after it (HOSTWIRE-DESIGN.md, section 4).
//! * **Batches.** [`ClientMem::put_batch`] and [`ClientMem::get_batch`]
//!   copy a list of placements with as few system calls as they can: each
//!   side's ranges are concatenated, contiguous ones merged, at most
//!   [`IOV_MAX`] iovecs of each side and [`CALL_BYTES`] bytes per call.
//!   The kernel copies a prefix of that byte stream and stops at the first
//!   page it cannot reach, so a short count names the placement it stopped
//!   in: that one fails (what it got of its bytes stays, as after a
//!   device's DMA fault), and the copy goes on after it.  Placements carry
//!   a *stream* (a QP, say): after a stream's first failure its later
//!   placements are not done ([`Error::Skipped`]), so nothing lands after
//!   the error a responder would have stopped at.
//! * **Atomics** take the client's lock word of the address in its access
//!   page (the provider's `locks.rs`: the same words, hashing and holder
//!   protocol), read the 8 bytes, compute, write them back and release,
//!   so they are atomic with the same-machine device's direct atomics and
//!   the client's own responders' on that memory.  A lock that stays taken
//!   longer than [`LOCK_WAIT`] gives [`Error::Busy`] (not executed: the
//!   requester's retry comes again), so a stopped client cannot hold a
//!   worker by its lock words.
//! * **Errors.**  Memory the client no longer maps (`EFAULT`, a short
//!   count) is the placement's own error: `RemoteAccess` for a remote
//!   range (NAK remote access, `REM_ACCESS_ERR`, as `Target::write` says
//!   when its copy fails), `LOC_PROT_ERR` for a local list (as the
//!   completer and the receive path say).  `ESRCH` (or the client's pidfd
//!   readable) is [`Error::Gone`]; `EPERM` is [`Error::NoCma`], and the
//!   client is `no_cma` from then on (the caller falls back to the
//!   client's own placement, HOSTWIRE-DESIGN.md 10.5).
//!
//! Nothing read from the client's memory or access page can cause a panic
//! or an access outside our own buffers: the kernel checks every client
//! address, and our side of every copy is a slice we hold.

use ibverbs_abi::{ibv_sge, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_PROT_ERR};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use swrdma_rc::fault::Fault;
use swrdma_rc::keys::Keys;
use swrdma_rc::memory::Atomic;
use swrdma_rc::op::Op;
use swrdma_rc::responder::Target;

#[cfg(test)]
mod tests;

/// The most iovecs `process_vm_writev`/`readv` take on each side
/// (`IOV_MAX`, the kernel's `UIO_MAXIOV`).
pub const IOV_MAX: usize = 1024;
/// The most bytes one call copies here (the kernel stops a call at
/// `MAX_RW_COUNT`, just under 2 GiB, without a fault: a count cut there
/// would read as one).
pub const CALL_BYTES: usize = 1 << 30;
/// How long an atomic waits for its lock word before [`Error::Busy`].
pub const LOCK_WAIT: Duration = Duration::from_millis(100);

/// How long a pidfd's "still running" answer is taken as said before a
/// copy asks again (a `ppoll` per copy was a third of the agent's system
/// calls in a stream; at 100 us it still was one `ppoll` in every two
/// round trips of `ib_write_lat` through the agent).  A pid is reused only
/// after the kernel has handed out every other pid up to `pid_max` (32,768
/// at the least; threads take pids too), which takes far longer than this
/// (a `clone` costs microseconds: 32,768 of them over 100 ms); an exited
/// process's pid that is not reused answers the copy itself with `ESRCH`
/// (`Error::Gone`).
pub const ALIVE_FOR_NS: u64 = 10_000_000;

/// The access page's layout (the provider's `locks.rs`): the lock words
/// start at word 8, 256 of them, chosen by the 8-byte address.
const LOCK0: usize = 8;
const LOCKS: usize = 256;

/// Why a placement was not done (or not entirely).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The responder's checks refused the remote access, or its memory is
    /// no longer mapped (`RemoteAccess`): the NAK code, the requester's
    /// status and the async event come from the [`Fault`].
    Remote(Fault),
    /// A local scatter/gather list refused by `check_local`, holding fewer
    /// bytes than the data (`LOC_LEN_ERR`), or its memory no longer mapped
    /// (`LOC_PROT_ERR`): the work request's completion status.
    Local(u32),
    /// Not attempted: an earlier placement of the same stream failed.
    Skipped,
    /// The atomic lock of the address stayed taken for the lock wait: the
    /// atomic was not executed and nothing was touched.
    Busy,
    /// The client's process is gone (`ESRCH`, or its pidfd is readable).
    Gone,
    /// The kernel refuses cross-memory attach to the client (`EPERM`, or
    /// the hello's probe found so): the caller places through the client.
    NoCma,
    /// Another errno of the kernel (`ENOMEM`): nothing is known of the
    /// placement.
    Sys(i32),
}

/// A mapping of a client's access page (the 16 KiB memory file of the
/// provider's `locks.rs` it passed with its hello).
pub struct AccessPage {
    map: *const AtomicU64,
}

// SAFETY: `map` is a shared mapping of `ACCESS_BYTES` owned by the
// `AccessPage` (unmapped in Drop) and only accessed through atomics.
unsafe impl Send for AccessPage {}
// SAFETY: as above.
unsafe impl Sync for AccessPage {}

impl Drop for AccessPage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, used by no one after this.
        unsafe { libc::munmap(self.map as *mut libc::c_void, crate::proto::ACCESS_BYTES) };
    }
}

/// Our pid, cached (the lock words hold their holder's pid, and `getpid`
/// is a system call); a forked child forgets its parent's.
static SELF_PID: AtomicU64 = AtomicU64::new(0);

extern "C" fn forked() {
    SELF_PID.store(0, Ordering::Relaxed);
}

fn self_pid() -> u64 {
    let p = SELF_PID.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    static AT_FORK: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a handler that only stores to an atomic.
    AT_FORK.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(forked));
    });
    let p = std::process::id() as u64;
    SELF_PID.store(p, Ordering::Relaxed);
    p
}

/// The holder `h` of a lock word has exited.  A value that cannot be a
/// pid (only a client writing its own page makes one) counts as gone.
fn holder_gone(h: u64) -> bool {
    let Ok(p) = libc::pid_t::try_from(h) else {
        return true;
    };
    if p <= 0 {
        return true;
    }
    // SAFETY: signal 0 checks existence only.
    unsafe { libc::kill(p, 0) != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) }
}

/// The wait between two tries of a taken lock word (`locks.rs`'s: spin,
/// then yield, then short sleeps).
fn backoff(spins: &mut u32) {
    *spins = spins.saturating_add(1);
    if *spins < 64 {
        std::hint::spin_loop();
    } else if *spins < 4096 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// The index of the lock word of the client's 8-byte address `addr` in
/// its access page (`locks.rs`'s `Access::locked`).
fn lock_word(addr: u64) -> usize {
    LOCK0 + ((addr >> 3) as usize % LOCKS)
}

/// A lock word held by us (released when dropped).
struct Held<'a>(&'a AtomicU64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

impl AccessPage {
    /// Maps the access page `fd` after the checks the agent makes at the
    /// hello (and `locks.rs` for a peer's): a regular file of exactly
    /// `ACCESS_BYTES`, sealed against shrinking and growing (no `SIGBUS`
    /// later), whose first word is the access-page magic.  The descriptor
    /// is not kept.
    pub fn map(fd: BorrowedFd<'_>) -> Result<AccessPage, String> {
        use rustix::fs::{fcntl_get_seals, fstat, FileType, SealFlags};
        let bytes = crate::proto::ACCESS_BYTES;
        let st = fstat(fd).map_err(|e| format!("access page: fstat: {e}"))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_size as usize != bytes {
            return Err(format!("access page: not a file of {bytes} bytes"));
        }
        let seals = fcntl_get_seals(fd).map_err(|e| format!("access page: seals: {e}"))?;
        if !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
            return Err("access page: not sealed against shrinking and growing".into());
        }
        // SAFETY: a shared mapping, placed by the kernel, of a file that is
        // `bytes` long and can no longer shrink (checked above).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("access page: mmap: {}", std::io::Error::last_os_error()));
        }
        let page = AccessPage {
            map: p as *const AtomicU64,
        };
        if page.words()[0].load(Ordering::Acquire) != crate::proto::ACCESS_MAGIC {
            return Err("access page: no access-page magic in its first word".into());
        }
        Ok(page)
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is `ACCESS_BYTES` long (a multiple of 8,
        // page-aligned) and lives as long as `self`; other processes write
        // it only through atomics.
        unsafe { std::slice::from_raw_parts(self.map, crate::proto::ACCESS_BYTES / 8) }
    }

    /// Takes the lock word of the client's address `addr` as `locks.rs`
    /// does (compare-and-swap 0 -> our pid; a holder found gone is
    /// replaced), waiting at most `wait`: None when it stayed taken.
    fn lock(&self, addr: u64, wait: Duration) -> Option<Held<'_>> {
        let w = &self.words()[lock_word(addr)];
        let me = self_pid();
        let mut spins = 0u32;
        let mut since: Option<Instant> = None;
        loop {
            match w.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some(Held(w)),
                // (Looked at once the spinning is over, then as
                // `locks.rs` does, and before giving up.)
                Err(h) if (spins == 64 || (spins > 0 && spins.is_multiple_of(1024))) && holder_gone(h) => {
                    // Its holder died in the middle of an atomic.
                    let _ = w.compare_exchange(h, 0, Ordering::Relaxed, Ordering::Relaxed);
                    continue;
                }
                Err(_) => {}
            }
            if spins >= 64 && spins.is_multiple_of(16) {
                let t = *since.get_or_insert_with(Instant::now);
                if t.elapsed() >= wait {
                    let h = w.load(Ordering::Relaxed);
                    if h == 0
                        || (holder_gone(h) && w.compare_exchange(h, 0, Ordering::Relaxed, Ordering::Relaxed).is_ok())
                    {
                        continue;
                    }
                    return None;
                }
            }
            backoff(&mut spins);
        }
    }
}

/// Where a placement goes to (a put) or comes from (a get).
#[derive(Clone, Copy)]
pub enum Region<'a> {
    /// Bytes at `va` of the R_Key `rkey` of the responder QP `target`:
    /// `Target::check` with `Op::Write` for a put, `Op::Read` for a get.
    Remote {
        /// The responder QP: its number, PD, rights and its client's keys.
        target: &'a Target<'a>,
        /// The request's R_Key.
        rkey: u32,
        /// The request's virtual address (in the key's I/O virtual space).
        va: u64,
    },
    /// Bytes from byte `off` of a local scatter/gather list of PD `pd`
    /// (as posted: addresses in the MRs' I/O virtual space), checked with
    /// `keys.check_local` (for writing in a put): a receive WQE's, a READ's
    /// or an atomic's list, or a send's gather list.
    Local {
        /// The client's keys.
        keys: &'a Keys,
        /// The PD of the QP (or SRQ) the list was posted to.
        pd: u32,
        /// The list as posted.
        sges: &'a [ibv_sge],
        /// Where in the list the bytes start.
        off: u64,
    },
}

/// One placement of a [`ClientMem::put_batch`]: `data` into `to`.
#[derive(Clone, Copy)]
pub struct Put<'a> {
    /// Where the bytes go.
    pub to: Region<'a>,
    /// The bytes (ours).
    pub data: &'a [u8],
    /// Placements with the same stream are done in order, and none after
    /// the first one of it that fails.
    pub stream: u64,
}

/// One placement of a [`ClientMem::get_batch`]: `from` into `out`.
pub struct Get<'a> {
    /// Where the bytes come from.
    pub from: Region<'a>,
    /// Where they go (ours); its length is the placement's.
    pub out: &'a mut [u8],
    /// As [`Put::stream`].
    pub stream: u64,
}

/// One client process as the agent reaches its memory.
pub struct ClientMem {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    no_cma: AtomicBool,
    access: AccessPage,
    lock_wait: Duration,
    calls: AtomicU64,
    /// When (`now_ns`) the pidfd last said the process lives: within
    /// [`ALIVE_FOR_NS`] of it a copy does not ask again.
    alive_at: AtomicU64,
}

/// One placement being copied: our bytes, its client ranges, progress.
struct Job {
    /// Our side: address and length.
    local: usize,
    len: usize,
    /// Its client ranges: `ranges[first..end]`.
    first: usize,
    end: usize,
    /// Its index in the batch.
    slot: usize,
    /// What a fault in it is.
    fail: Error,
    /// Bytes copied so far.
    done: usize,
}

/// Appends `[base, base + len)` to `iovs`, merged with the last iovec when
/// it continues it; false when `iovs` is full.
fn push_iov(iovs: &mut Vec<libc::iovec>, base: usize, len: usize) -> bool {
    if let Some(last) = iovs.last_mut() {
        if (last.iov_base as usize).wrapping_add(last.iov_len) == base {
            last.iov_len += len;
            return true;
        }
    }
    if iovs.len() >= IOV_MAX {
        return false;
    }
    iovs.push(libc::iovec {
        iov_base: base as *mut libc::c_void,
        iov_len: len,
    });
    true
}

/// Appends bytes `[skip, skip + take)` of the client ranges `pieces` to
/// `iovs` (merging, at most `IOV_MAX`): the bytes appended.
fn push_pieces(iovs: &mut Vec<libc::iovec>, pieces: &[(u64, usize)], mut skip: usize, take: usize) -> usize {
    let mut added = 0;
    for &(a, l) in pieces {
        if added == take {
            break;
        }
        if skip >= l {
            skip -= l;
            continue;
        }
        let n = (l - skip).min(take - added);
        if !push_iov(iovs, a as usize + skip, n) {
            break;
        }
        added += n;
        skip = 0;
    }
    added
}

impl ClientMem {
    /// The client process `pid` (as our PID namespace names it), its pidfd
    /// when there is one (a copy of the agent's: a copy first checks that
    /// the process still lives, or did within [`ALIVE_FOR_NS`], so a pid
    /// reused after its exit is never written), whether the hello's probe found cross-memory
    /// attach refused, and its access page.
    pub fn new(pid: libc::pid_t, pidfd: Option<OwnedFd>, no_cma: bool, access: AccessPage) -> ClientMem {
        ClientMem {
            pid,
            pidfd,
            no_cma: AtomicBool::new(no_cma),
            access,
            lock_wait: LOCK_WAIT,
            calls: AtomicU64::new(0),
            alive_at: AtomicU64::new(0),
        }
    }

    /// The client's pid.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Cross-memory attach is refused for this client (by the hello's
    /// probe or by an `EPERM` since).
    pub fn no_cma(&self) -> bool {
        self.no_cma.load(Ordering::Relaxed)
    }

    /// How long an atomic waits for its lock word ([`LOCK_WAIT`] unless
    /// set).
    pub fn set_lock_wait(&mut self, wait: Duration) {
        self.lock_wait = wait;
    }

    /// The `process_vm_writev`/`readv` calls made so far (diagnostics).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// The client can be reached now: Err(Gone) when its process has
    /// exited, Err(NoCma) when cross-memory attach is refused.
    fn reachable(&self) -> Result<(), Error> {
        if self.pid <= 0 {
            return Err(Error::Gone);
        }
        if let Some(p) = &self.pidfd {
            let now = crate::now_ns();
            if now.wrapping_sub(self.alive_at.load(Ordering::Relaxed)) >= ALIVE_FOR_NS {
                if crate::pidfd_exited(p.as_fd()) {
                    return Err(Error::Gone);
                }
                self.alive_at.store(now, Ordering::Relaxed);
            }
        }
        if self.no_cma() {
            return Err(Error::NoCma);
        }
        Ok(())
    }

    /// One call between our iovecs `local` and the client's `remote`: the
    /// bytes copied (0 for `EFAULT`: nothing could be), or the error.
    fn call(&self, local: &[libc::iovec], remote: &[libc::iovec], write: bool) -> Result<usize, Error> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let f = if write {
            libc::process_vm_writev
        } else {
            libc::process_vm_readv
        };
        // SAFETY: every local iovec lies in a slice the caller holds for
        // the call (read by writev; written by readv, and then exclusively
        // borrowed); the remote ones are only reached by the kernel, in the
        // client, with its checks (a missing page is EFAULT or a short
        // count, never a signal here).  At most IOV_MAX of each.
        let n = unsafe {
            f(
                self.pid,
                local.as_ptr(),
                local.len() as _,
                remote.as_ptr(),
                remote.len() as _,
                0,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        match std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) {
            libc::EFAULT => Ok(0),
            libc::ESRCH => Err(Error::Gone),
            libc::EPERM => {
                self.no_cma.store(true, Ordering::Relaxed);
                Err(Error::NoCma)
            }
            e => Err(Error::Sys(e)),
        }
    }

    /// The client ranges of `len` bytes at `r`, after its checks (`write`:
    /// into them), appended to `ranges`; Err: refused.  Also what a fault
    /// in them is.
    fn check(r: &Region<'_>, len: usize, write: bool, ranges: &mut Vec<(u64, usize)>) -> Result<Error, Error> {
        match *r {
            Region::Remote { target, rkey, va } => {
                let op = if write { Op::Write } else { Op::Read };
                let fail = Error::Remote(Fault::RemoteAccess);
                match target.check(op, rkey, va, len as u64).map_err(Error::Remote)? {
                    None => {}
                    Some(a) if a.checked_add(len as u64).is_none() => return Err(fail),
                    Some(a) => ranges.push((a, len)),
                }
                Ok(fail)
            }
            Region::Local { keys, pd, sges, off } => {
                let fail = Error::Local(IBV_WC_LOC_PROT_ERR);
                let translated = keys.check_local(pd, sges, write).map_err(Error::Local)?;
                let list = translated.as_deref().unwrap_or(sges);
                let (mut skip, mut left) = (off, len);
                for s in list {
                    if left == 0 {
                        break;
                    }
                    let sl = s.length as u64;
                    if skip >= sl {
                        skip -= sl;
                        continue;
                    }
                    let n = ((sl - skip) as usize).min(left);
                    let a = s.addr.checked_add(skip).ok_or(fail)?;
                    a.checked_add(n as u64).ok_or(fail)?;
                    ranges.push((a, n));
                    left -= n;
                    skip = 0;
                }
                // (As the receive path: a list too short for the data.)
                if left > 0 {
                    return Err(Error::Local(IBV_WC_LOC_LEN_ERR));
                }
                Ok(fail)
            }
        }
    }

    /// The batch's checks, then its copies: `items` gives each placement's
    /// region, our bytes (address, length) and stream.
    fn batch(&self, items: &[(Region<'_>, usize, usize, u64)], write: bool) -> Vec<Result<(), Error>> {
        let mut res: Vec<Option<Result<(), Error>>> = vec![None; items.len()];
        let mut ranges: Vec<(u64, usize)> = Vec::with_capacity(items.len());
        let mut jobs: Vec<Job> = Vec::with_capacity(items.len());
        let mut failed: Vec<u64> = Vec::new();
        for (slot, &(region, local, len, stream)) in items.iter().enumerate() {
            if failed.contains(&stream) {
                res[slot] = Some(Err(Error::Skipped));
                continue;
            }
            let first = ranges.len();
            match Self::check(&region, len, write, &mut ranges) {
                Err(e) => {
                    ranges.truncate(first);
                    res[slot] = Some(Err(e));
                    failed.push(stream);
                }
                Ok(_) if ranges.len() == first => res[slot] = Some(Ok(())),
                Ok(fail) => jobs.push(Job {
                    local,
                    len,
                    first,
                    end: ranges.len(),
                    slot,
                    fail,
                    done: 0,
                }),
            }
        }
        if !jobs.is_empty() {
            self.copy(&mut jobs, &ranges, items, write, &mut res);
        }
        res.into_iter().map(|r| r.unwrap_or(Err(Error::Skipped))).collect()
    }

    /// Copies the checked `jobs` in order, as few calls as the limits
    /// allow; a fault fails its job (and the later ones of its stream) and
    /// the copy goes on after it.
    fn copy(
        &self,
        jobs: &mut [Job],
        ranges: &[(u64, usize)],
        items: &[(Region<'_>, usize, usize, u64)],
        write: bool,
        res: &mut [Option<Result<(), Error>>],
    ) {
        let mut local: Vec<libc::iovec> = Vec::new();
        let mut remote: Vec<libc::iovec> = Vec::new();
        let mut inc: Vec<(usize, usize)> = Vec::new();
        let mut next = 0;
        loop {
            while next < jobs.len() && res[jobs[next].slot].is_some() {
                next += 1;
            }
            if next == jobs.len() {
                return;
            }
            if let Err(e) = self.reachable() {
                for j in &jobs[next..] {
                    res[j.slot].get_or_insert(Err(e));
                }
                return;
            }
            // One call: pending jobs from `next`, while both sides have room.
            local.clear();
            remote.clear();
            inc.clear();
            let mut total = 0usize;
            for (j, job) in jobs.iter().enumerate().skip(next) {
                if res[job.slot].is_some() {
                    continue;
                }
                let want = job.len - job.done;
                let room = want.min(CALL_BYTES - total);
                let base = job.local + job.done;
                // (Our side must take what the client's side does: room
                // for one more iovec, or one that continues the last.)
                let merges = local
                    .last()
                    .is_some_and(|l| (l.iov_base as usize).wrapping_add(l.iov_len) == base);
                if room == 0 || (!merges && local.len() >= IOV_MAX) {
                    break;
                }
                let took = push_pieces(&mut remote, &ranges[job.first..job.end], job.done, room);
                if took == 0 {
                    break;
                }
                push_iov(&mut local, base, took);
                inc.push((j, took));
                total += took;
                if took < want {
                    break;
                }
            }
            match self.call(&local, &remote, write) {
                Ok(mut n) => {
                    for &(j, took) in &inc {
                        let job = &mut jobs[j];
                        let got = took.min(n);
                        n -= got;
                        job.done += got;
                        if got < took {
                            // The kernel stopped in this one.
                            res[job.slot] = Some(Err(job.fail));
                            let stream = items[job.slot].3;
                            for (s, it) in items.iter().enumerate().skip(job.slot + 1) {
                                if it.3 == stream {
                                    res[s] = Some(Err(Error::Skipped));
                                }
                            }
                            break;
                        }
                        if job.done == job.len {
                            res[job.slot] = Some(Ok(()));
                        }
                    }
                }
                Err(e) => {
                    for j in &jobs[next..] {
                        res[j.slot].get_or_insert(Err(e));
                    }
                    return;
                }
            }
        }
    }

    /// Copies each placement's `data` into its region (the responder's
    /// WRITE data, a receive's SEND data, a READ response, an atomic's
    /// original value), checked first: a result per placement, in order.
    /// `Ok` only for a placement whose bytes all landed.
    pub fn put_batch(&self, puts: &[Put<'_>]) -> Vec<Result<(), Error>> {
        let items: Vec<_> = puts
            .iter()
            .map(|p| (p.to, p.data.as_ptr() as usize, p.data.len(), p.stream))
            .collect();
        self.batch(&items, true)
    }

    /// Copies each placement's region into its `out` (a READ's data, a
    /// send's payload), checked first: a result per placement, in order.
    /// A placement that failed may have part of its `out` written.
    pub fn get_batch(&self, gets: &mut [Get<'_>]) -> Vec<Result<(), Error>> {
        let items: Vec<_> = gets
            .iter_mut()
            .map(|g| (g.from, g.out.as_mut_ptr() as usize, g.out.len(), g.stream))
            .collect();
        self.batch(&items, false)
    }

    /// An RDMA WRITE's data (one piece) at `va` of `rkey`, for the
    /// responder QP `t` (`Target::write`'s checks and faults).
    pub fn write(&self, t: &Target<'_>, rkey: u32, va: u64, data: &[u8]) -> Result<(), Error> {
        let to = Region::Remote { target: t, rkey, va };
        self.one_put(to, data)
    }

    /// An RDMA READ's data (one piece) from `va` of `rkey`, for the
    /// responder QP `t` (`Target::read`'s checks and faults).
    pub fn read(&self, t: &Target<'_>, rkey: u32, va: u64, out: &mut [u8]) -> Result<(), Error> {
        let from = Region::Remote { target: t, rkey, va };
        self.one_get(from, out)
    }

    /// `data` into the local list `sges` of PD `pd` from its byte `off`
    /// (`check_local` for writing: `LOC_PROT_ERR`; too short:
    /// `LOC_LEN_ERR`; memory gone: `LOC_PROT_ERR`).
    pub fn scatter(&self, keys: &Keys, pd: u32, sges: &[ibv_sge], off: u64, data: &[u8]) -> Result<(), Error> {
        self.one_put(Region::Local { keys, pd, sges, off }, data)
    }

    /// The local list `sges` of PD `pd` from its byte `off` into `out`
    /// (`check_local`: `LOC_PROT_ERR`; too short: `LOC_LEN_ERR`; memory
    /// gone: `LOC_PROT_ERR`, as the wire requester completes a send whose
    /// payload cannot be read).
    pub fn gather(&self, keys: &Keys, pd: u32, sges: &[ibv_sge], off: u64, out: &mut [u8]) -> Result<(), Error> {
        self.one_get(Region::Local { keys, pd, sges, off }, out)
    }

    fn one_put(&self, to: Region<'_>, data: &[u8]) -> Result<(), Error> {
        let r = self.put_batch(&[Put { to, data, stream: 0 }]);
        r.into_iter().next().unwrap_or(Err(Error::Skipped))
    }

    fn one_get(&self, from: Region<'_>, out: &mut [u8]) -> Result<(), Error> {
        let r = self.get_batch(&mut [Get { from, out, stream: 0 }]);
        r.into_iter().next().unwrap_or(Err(Error::Skipped))
    }

    /// The atomic `a` (compare-and-swap, fetch-and-add, or an 8-byte
    /// store) at `va` of `rkey` for the responder QP `t`, checked as
    /// `Target::atomic` checks it, executed with the client's lock word of
    /// the address held: the value before it.  Not executed when a check
    /// refuses it, the lock stays taken ([`Error::Busy`]) or the 8 bytes
    /// cannot be read; when they cannot be written back the memory is
    /// unchanged (`RemoteAccess`).
    pub fn atomic(&self, t: &Target<'_>, rkey: u32, va: u64, a: Atomic) -> Result<u64, Error> {
        let op = match a {
            Atomic::Cas(..) => Op::CmpSwap,
            Atomic::Add(_) => Op::FetchAdd,
            Atomic::Store(_) => Op::AtomicWrite,
        };
        let addr = match t.check(op, rkey, va, 8) {
            Ok(Some(addr)) => addr,
            Ok(None) => return Err(Error::Remote(Fault::InvalidRequest)),
            Err(f) => return Err(Error::Remote(f)),
        };
        self.atomic_at(addr, a)
    }

    /// The atomic `a` on the client's 8 aligned bytes at process address
    /// `addr` (checked already), under its lock word: the value before.
    fn atomic_at(&self, addr: u64, a: Atomic) -> Result<u64, Error> {
        self.reachable()?;
        let _held = self.access.lock(addr, self.lock_wait).ok_or(Error::Busy)?;
        let remote = [libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: 8,
        }];
        let mut b = [0u8; 8];
        let mine = [libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: 8,
        }];
        if self.call(&mine, &remote, false)? != 8 {
            return Err(Error::Remote(Fault::RemoteAccess));
        }
        let old = u64::from_ne_bytes(b);
        let new = match a {
            Atomic::Cas(cmp, swap) => (old == cmp).then_some(swap),
            Atomic::Add(v) => Some(old.wrapping_add(v)),
            Atomic::Store(v) => Some(v),
        };
        if let Some(v) = new {
            let nb = v.to_ne_bytes();
            let mine = [libc::iovec {
                iov_base: nb.as_ptr() as *mut libc::c_void,
                iov_len: 8,
            }];
            // (8 aligned bytes lie in one page: all of them or none.)
            if self.call(&mine, &remote, true)? != 8 {
                return Err(Error::Remote(Fault::RemoteAccess));
            }
        }
        Ok(old)
    }
}

/// The client's memory at raw process addresses, as the wire engine reaches
/// it (`swrdma_rc::memory::Memory`: `Target` and the receive and completer
/// paths check the keys and translate to these addresses first): one call
/// per copy (cut at [`CALL_BYTES`]), atomics under the lock words.  A copy
/// that does not reach every byte (a page the client does not map, the
/// client gone, cross-memory attach refused) is `false`, as the provider's
/// fault-safe copies say for a page it does not map.
impl swrdma_rc::memory::Memory for ClientMem {
    fn write(&self, dst: u64, src: &[u8]) -> bool {
        self.raw(dst, src.as_ptr() as *mut u8, src.len(), true)
    }

    fn read(&self, src: u64, dst: &mut [u8]) -> bool {
        self.raw(src, dst.as_mut_ptr(), dst.len(), false)
    }

    fn atomic(&self, addr: u64, op: Atomic) -> Option<u64> {
        if !addr.is_multiple_of(8) {
            return None;
        }
        self.atomic_at(addr, op).ok()
    }
}

impl ClientMem {
    /// Copies `len` bytes between our `ours` and the client's `at`
    /// (`write`: to the client): true when every byte was copied.
    fn raw(&self, at: u64, ours: *mut u8, len: usize, write: bool) -> bool {
        if len == 0 {
            return true;
        }
        if at.checked_add(len as u64).is_none() || self.reachable().is_err() {
            return false;
        }
        let mut done = 0usize;
        while done < len {
            let n = (len - done).min(CALL_BYTES);
            let mine = [libc::iovec {
                // (within the caller's slice: `done + n <= len`)
                iov_base: ours.wrapping_add(done).cast(),
                iov_len: n,
            }];
            let remote = [libc::iovec {
                iov_base: (at + done as u64) as *mut libc::c_void,
                iov_len: n,
            }];
            match self.call(&mine, &remote, write) {
                Ok(k) if k == n => done += n,
                _ => return false,
            }
        }
        true
    }
}
