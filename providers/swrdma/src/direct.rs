//! One-sided operations without the target's CPU.
//!
//! Each context publishes a *directory*: a sealed memory file with one
//! entry per remotely accessible MR (key, PD, rights, range, and where its
//! shared pages are: share.rs) and one per QP (state, access flags, PD,
//! destination QPN).  The file goes to each peer with the link's
//! handshake; peers map it read-only (F_SEAL_FUTURE_WRITE).  Entries are
//! seqlocks written by the owner alone.  The memory file of an MR's pages
//! is passed to a peer on its request (`MAP_REQ` over the link's socket,
//! answered with the descriptor), on the first access; until it arrives
//! accesses take the ring path.
//!
//! An RDMA WRITE or READ (and an atomic) on an RC QP is then executed by
//! the *initiator*: it checks the access exactly as the responder would
//! (the responder QP's state, access flags and PD, the MR's key, PD,
//! rights and bounds), copies straight between its local SGEs and its
//! mapping of the target's pages (one copy, as one DMA), and completes the
//! request.  Anything the check does not clearly allow (an error to
//! report, a memory window, a range outside the shared pages, a QP with
//! requests in flight) takes the ring path, where the target's process
//! answers as before, errors included.
//!
//! Deregistration: the initiator announces the key it accesses in its ring
//! header (`Link::direct_mine`), then checks the entry; the owner
//! withdraws the entry, then waits until no peer announces that key
//! (`Link::direct_peer`).  Both sides fence between the store and the load
//! (Dekker), so after `ibv_dereg_mr` returns no peer touches the memory.

use crate::share::Share;
use ibverbs_abi::*;
use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use swrdma_ring::Link;

const HDR: usize = 4096;
const N_MR: usize = 4096;
const MR_WORDS: usize = 16;
const N_QP: usize = 4096;
const QP_WORDS: usize = 8;
pub const DIR_BYTES: usize = HDR + N_MR * MR_WORDS * 8 + N_QP * QP_WORDS * 8;
const WITHDRAW_WAIT_NS: u64 = 2_000_000_000;

/// An MR no peer can reach directly any more (`Dir::retract_mr`), whose
/// pages are not yet private again (`Dir::release_mr`).
pub struct Withdrawn {
    key: u32,
    share: Share,
    /// A peer was still in a copy when the wait ended.
    late: bool,
}
const DIR_MAGIC: u64 = 0x5357_5244_4449_5231; // "SWRDDIR1"

/// The context's own directory (read-write), with the shares behind it.
pub struct Dir {
    fd: OwnedFd,
    map: *mut AtomicU64,
    /// Serialises the owner's writers; the shares of published MRs.
    shares: Mutex<HashMap<u32, Share>>,
    /// The peer contexts that mapped each MR (told `CTL_DROP` at dereg).
    askers: Mutex<HashMap<u32, Vec<u32>>>,
}
// SAFETY: `map` points to a shared mapping owned by the `Dir` (unmapped in
// Drop) that is only accessed through atomics.
unsafe impl Send for Dir {}
// SAFETY: as above; the shares are behind a mutex.
unsafe impl Sync for Dir {}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, used by no one after the `Dir`.
        unsafe { libc::munmap(self.map as *mut _, DIR_BYTES) };
    }
}

/// Seqlock writer over the words of one entry.
fn write_entry(e: &[AtomicU64], vals: &[u64]) {
    let s = e[0].load(Ordering::Relaxed);
    e[0].store(s | 1, Ordering::Relaxed);
    fence(Ordering::Release);
    for (w, v) in e[1..].iter().zip(vals) {
        w.store(*v, Ordering::Relaxed);
    }
    e[0].store((s | 1) + 1, Ordering::Release);
}

/// Seqlock reader: the entry's words (after the sequence), or None when it
/// was being changed.
fn read_entry<const N: usize>(e: &[AtomicU64]) -> Option<[u64; N]> {
    let s1 = e[0].load(Ordering::Acquire);
    if s1 & 1 != 0 {
        return None;
    }
    let mut v = [0u64; N];
    for (o, w) in v.iter_mut().zip(&e[1..]) {
        *o = w.load(Ordering::Relaxed);
    }
    fence(Ordering::Acquire);
    (e[0].load(Ordering::Relaxed) == s1).then_some(v)
}

fn mr_slot(key: u32) -> usize {
    (key >> 8) as usize % N_MR
}

fn qp_slot(qpn: u32) -> usize {
    qpn as usize % N_QP
}

/// # Safety
/// `map` is a `DIR_BYTES` mapping.
unsafe fn mr_entry<'a>(map: *const AtomicU64, key: u32) -> &'a [AtomicU64] {
    // SAFETY: the slot lies inside the directory (the contract).
    unsafe { std::slice::from_raw_parts(map.add(HDR / 8 + mr_slot(key) * MR_WORDS), MR_WORDS) }
}

/// # Safety
/// `map` is a `DIR_BYTES` mapping.
unsafe fn qp_entry<'a>(map: *const AtomicU64, qpn: u32) -> &'a [AtomicU64] {
    // SAFETY: the slot lies inside the directory (the contract).
    unsafe {
        std::slice::from_raw_parts(
            map.add((HDR + N_MR * MR_WORDS * 8) / 8 + qp_slot(qpn) * QP_WORDS),
            QP_WORDS,
        )
    }
}

impl Dir {
    pub fn new() -> Option<Dir> {
        use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags, SealFlags};
        let fd = memfd_create(c"swrdma-dir", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).ok()?;
        ftruncate(&fd, DIR_BYTES as u64).ok()?;
        // SAFETY: a fresh shared mapping of our new file.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                DIR_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let map = map as *mut AtomicU64;
        // SAFETY: the first word of the fresh mapping.
        unsafe { (*map).store(DIR_MAGIC, Ordering::Relaxed) };
        // Peers can map it read-only only, and never resize it.
        let _ = fcntl_add_seals(&fd, SealFlags::FUTURE_WRITE);
        fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL).ok()?;
        Some(Dir {
            fd,
            map,
            shares: Mutex::new(HashMap::new()),
            askers: Mutex::new(HashMap::new()),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// MR `key` (not a window) is registered: shares its pages if it grants
    /// a remote right and publishes it.
    pub fn publish_mr(&self, key: u32, pd: u32, access: u32, iova: u64, len: u64, va: u64) {
        const REMOTE: u32 = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        if access & REMOTE == 0 || !crate::share::enabled() {
            return;
        }
        let mut g = crate::sys::lock(&self.shares);
        // SAFETY: `map` is our `DIR_BYTES` mapping.
        let e = unsafe { mr_entry(self.map, key) };
        if e[1].load(Ordering::Relaxed) != 0 {
            return; // the slot is taken (ring path for this MR)
        }
        let Some(s) = crate::share::share(va, len) else { return };
        write_entry(
            e,
            &[
                key as u64,
                pd as u64,
                access as u64,
                iova,
                len,
                va,
                s.base,
                s.len,
                s.id,
                s.off,
            ],
        );
        g.insert(key, s);
    }

    /// MR `key` goes away (or changes), first step: peers can no longer
    /// start a direct access to it, and none is running once this returns
    /// (a peer stopped in the middle of one — a debugger, SIGSTOP — is
    /// waited for at most `WITHDRAW_WAIT_NS`).  Holds no lock while it
    /// waits: the caller must not hold the MR table either.
    pub fn retract_mr(&self, key: u32, links: &[Arc<Link>]) -> Option<Withdrawn> {
        let s = crate::sys::lock(&self.shares).remove(&key)?;
        // SAFETY: `map` is our `DIR_BYTES` mapping.
        let e = unsafe { mr_entry(self.map, key) };
        write_entry(e, &[0; 10]);
        fence(Ordering::SeqCst);
        // A copy takes microseconds to milliseconds.
        let end = crate::sys::now_ns() + WITHDRAW_WAIT_NS;
        let mut late = false;
        for l in links {
            while l.direct_peer().load(Ordering::SeqCst) == key as u64 && !l.dead.load(Ordering::Relaxed) {
                if crate::sys::now_ns() >= end {
                    late = true;
                    break;
                }
                std::thread::yield_now();
            }
        }
        Some(Withdrawn { key, share: s, late })
    }

    /// Second step: the withdrawn MR's pages are private again (the caller
    /// holds the MR table: no copy of ours into them runs meanwhile) and
    /// the peers that mapped them are told to unmap them.
    pub fn release_mr(&self, w: Withdrawn, links: &[Arc<Link>]) {
        // (A late peer's stores land in the memory file once the pages are
        // private again, no longer in our memory; the pages stay in the
        // memory file: see share.rs.)
        if w.late {
            crate::share::unshare(&w.share);
        } else {
            crate::share::release(&w.share);
        }
        // Peers that mapped the pages unmap them (the application may give
        // the memory back; their mapping would keep it).
        let askers = crate::sys::lock(&self.askers).remove(&w.key).unwrap_or_default();
        for l in links {
            if askers.contains(&l.peer) && !l.dead.load(Ordering::Relaxed) {
                crate::ipc::send_ctl(l.sock(), crate::ipc::CTL_DROP, w.key, w.share.id, None);
            }
        }
    }

    /// The memory file of MR `key`'s shared pages and its id, for peer
    /// context `peer` (told to unmap it when the MR goes).
    pub fn share_fd(&self, key: u32, peer: u32) -> Option<(OwnedFd, u64)> {
        let g = crate::sys::lock(&self.shares);
        let s = g.get(&key)?;
        let fd = crate::share::file_of(s)?;
        let mut a = crate::sys::lock(&self.askers);
        let v = a.entry(key).or_default();
        if !v.contains(&peer) && v.len() < 4096 {
            v.push(peer);
        }
        Some((fd, s.id))
    }

    /// QP `qpn`'s state as a responder sees it (None: destroyed).
    pub fn publish_qp(&self, qpn: u32, v: Option<(u32, u32, u32, u32, u32)>) {
        let _g = crate::sys::lock(&self.shares);
        // SAFETY: `map` is our `DIR_BYTES` mapping.
        let e = unsafe { qp_entry(self.map, qpn) };
        let cur = e[1].load(Ordering::Relaxed) as u32;
        if cur != 0 && cur != qpn {
            return; // slot taken by another QP
        }
        match v {
            Some((qpt, state, access, pd, dqpn)) => write_entry(
                e,
                &[
                    qpn as u64,
                    qpt as u64,
                    state as u64,
                    access as u64,
                    pd as u64,
                    dqpn as u64,
                ],
            ),
            None if cur == qpn => write_entry(e, &[0; 6]),
            None => {}
        }
    }
}

/// A peer's mapped MR pages.
struct Mapped {
    ptr: *mut u8,
    len: u64,
}
// SAFETY: a shared mapping owned by the `Mapped` (unmapped in Drop).
unsafe impl Send for Mapped {}
// SAFETY: as above; accessed through fault-safe copies and atomics only.
unsafe impl Sync for Mapped {}
impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `Peer::install`, unused after Drop
        // (its users hold an `Arc`).
        unsafe { libc::munmap(self.ptr as *mut _, self.len as usize) };
    }
}

enum Cached {
    /// Asked for (share id) at this time.
    Asked(u64, u64),
    Have(u64, Arc<Mapped>),
}

/// A peer context as seen from here: its directory and our mappings of
/// its MRs.
pub struct Peer {
    map: *const AtomicU64,
    cache: Mutex<HashMap<u32, Cached>>,
}
// SAFETY: `map` is a read-only shared mapping owned by the `Peer`.
unsafe impl Send for Peer {}
// SAFETY: as above, read through atomics only.
unsafe impl Sync for Peer {}
impl Drop for Peer {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `Peer::new`.
        unsafe { libc::munmap(self.map as *mut _, DIR_BYTES) };
    }
}

const MAX_CACHED: usize = 1024;

/// What a peer MR entry says.
#[derive(Clone, Copy)]
pub struct PeerMr {
    pub pd: u32,
    pub access: u32,
    pub iova: u64,
    pub len: u64,
    pub va: u64,
    pub base: u64,
    pub slen: u64,
    pub id: u64,
    /// Where the pages are in the memory file.
    pub foff: u64,
}

impl Peer {
    /// Maps a peer's directory (a sealed file of `DIR_BYTES`).
    pub fn new(fd: BorrowedFd<'_>) -> Option<Peer> {
        use rustix::fs::{fcntl_get_seals, fstat, SealFlags};
        let st = fstat(fd).ok()?;
        let seals = fcntl_get_seals(fd).ok()?;
        if st.st_size as usize != DIR_BYTES || !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
            return None;
        }
        // SAFETY: a read-only shared mapping of a file of exactly this size
        // that cannot shrink (sealed): every page stays backed.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                DIR_BYTES,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let p = Peer {
            map: map as *const AtomicU64,
            cache: Mutex::new(HashMap::new()),
        };
        // SAFETY: the first word of the mapping.
        (unsafe { (*p.map).load(Ordering::Relaxed) } == DIR_MAGIC).then_some(p)
    }

    pub fn mr(&self, key: u32) -> Option<PeerMr> {
        // SAFETY: `map` is a `DIR_BYTES` mapping.
        let v = read_entry::<10>(unsafe { mr_entry(self.map, key) })?;
        if v[0] != key as u64 || key == 0 {
            return None;
        }
        Some(PeerMr {
            pd: v[1] as u32,
            access: v[2] as u32,
            iova: v[3],
            len: v[4],
            va: v[5],
            base: v[6],
            slen: v[7],
            id: v[8],
            foff: v[9],
        })
    }

    /// (qpt, state, access flags, pd, dest QPN) of the peer's QP `qpn`.
    pub fn qp(&self, qpn: u32) -> Option<(u32, u32, u32, u32, u32)> {
        // SAFETY: `map` is a `DIR_BYTES` mapping.
        let v = read_entry::<6>(unsafe { qp_entry(self.map, qpn) })?;
        if v[0] != qpn as u64 || qpn == 0 {
            return None;
        }
        Some((v[1] as u32, v[2] as u32, v[3] as u32, v[4] as u32, v[5] as u32))
    }

    /// Our mapping of the pages of MR `key` as share `id`; when there is
    /// none yet, asks the peer for it over `l`'s socket (at most every
    /// 100 ms) and returns None.
    fn mapping(&self, l: &Link, key: u32, id: u64) -> Option<Arc<Mapped>> {
        let mut g = crate::sys::lock(&self.cache);
        let now = crate::sys::now_ns();
        match g.get(&key) {
            Some(Cached::Have(i, m)) if *i == id => return Some(m.clone()),
            Some(Cached::Asked(i, t)) if *i == id && now.saturating_sub(*t) < 100_000_000 => return None,
            _ => {}
        }
        if g.len() >= MAX_CACHED {
            g.clear();
        }
        g.insert(key, Cached::Asked(id, now));
        drop(g);
        crate::ipc::send_ctl(l.sock(), crate::ipc::CTL_MAP_REQ, key, id, None);
        None
    }

    /// The peer sent the memory file of MR `key`, share `id`.
    pub fn install(&self, key: u32, id: u64, fd: OwnedFd) {
        use rustix::fs::{fcntl_get_seals, fstat, SealFlags};
        let Some(e) = self.mr(key) else { return };
        if e.id != id {
            return;
        }
        let end = e.foff.checked_add(e.slen);
        let ok = end.is_some_and(|end| fstat(&fd).is_ok_and(|st| st.st_size as u64 >= end))
            && fcntl_get_seals(&fd).is_ok_and(|s| s.contains(SealFlags::SHRINK | SealFlags::GROW));
        if !ok || e.slen == 0 || e.foff % 4096 != 0 {
            return;
        }
        // SAFETY: a shared mapping of [foff, foff+slen) of a file at least
        // that long that cannot shrink (sealed), chosen by the kernel.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                e.slen as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                e.foff as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return;
        }
        let m = Arc::new(Mapped {
            ptr: p as *mut u8,
            len: e.slen,
        });
        crate::sys::lock(&self.cache).insert(key, Cached::Have(id, m));
    }

    /// The peer deregistered MR `key` (share `id`): our mapping goes.
    pub fn forget(&self, key: u32, id: u64) {
        let mut g = crate::sys::lock(&self.cache);
        if matches!(g.get(&key), Some(Cached::Have(i, _)) | Some(Cached::Asked(i, _)) if *i == id) {
            g.remove(&key);
        }
    }
}

/// A one-sided request the initiator may execute itself.
pub enum Op<'a> {
    Write(&'a [ibv_sge]),
    Read(&'a [ibv_sge]),
    Cas(u64, u64, &'a [ibv_sge]),
    Faa(u64, &'a [ibv_sge]),
}

/// Executes `op` on [raddr, raddr+len) of the peer's MR `rkey`, for our RC
/// QP `my_qpn` (PD irrelevant here: the local SGEs were checked) talking to
/// the peer's QP `dqpn`.  Some(status): done (IBV_WC_SUCCESS, or a local
/// error); None: not for the direct path (the caller uses the ring).
/// `at`: (rkey, remote address, length).
pub fn execute(peer: &Peer, l: &Link, my_qpn: u32, dqpn: u32, at: (u32, u64, u64), op: Op<'_>) -> Option<u32> {
    let (rkey, raddr, len) = at;
    let need = match op {
        Op::Write(_) => IBV_ACCESS_REMOTE_WRITE,
        Op::Read(_) => IBV_ACCESS_REMOTE_READ,
        Op::Cas(..) | Op::Faa(..) => IBV_ACCESS_REMOTE_ATOMIC,
    };
    let check = || -> Option<(PeerMr, u64)> {
        let (qpt, state, qacc, qpd, qdest) = peer.qp(dqpn)?;
        if qpt != IBV_QPT_RC
            || !matches!(state, IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_SQE)
            || qacc & need == 0
            || qdest != my_qpn
        {
            return None;
        }
        let e = peer.mr(rkey)?;
        if e.pd != qpd
            || e.access & need == 0
            || raddr < e.iova
            || raddr.checked_add(len)? > e.iova.checked_add(e.len)?
        {
            return None;
        }
        let host = e.va.checked_add(raddr - e.iova)?;
        if host < e.base || host.checked_add(len)? > e.base.checked_add(e.slen)? {
            return None;
        }
        Some((e, host - e.base))
    };
    if matches!(op, Op::Cas(..) | Op::Faa(..)) && (len != 8 || !raddr.is_multiple_of(8)) {
        return None;
    }
    // Announce the access, then check (see the module's comment).
    let slot = l.direct_mine();
    slot.store(rkey as u64, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    let r = (|| {
        let (e, off) = check()?;
        let m = peer.mapping(l, rkey, e.id)?;
        let p = m.ptr as u64 + off;
        if matches!(op, Op::Cas(..) | Op::Faa(..)) && !p.is_multiple_of(8) {
            // (An aligned IOVA at a misaligned address: the ring's responder
            // refuses it.)
            return None;
        }
        Some(match op {
            Op::Write(sges) => {
                // SAFETY: [p, p+len) lies in our mapping of the peer's pages
                // (checked against the share's length); the local SGEs
                // passed `check_local`, read fault-safe.
                if unsafe { crate::mem::gather_safe(sges, 0, p as *mut u8, len as usize) } {
                    IBV_WC_SUCCESS
                } else {
                    IBV_WC_LOC_PROT_ERR
                }
            }
            Op::Read(sges) => {
                // SAFETY: as above, the local SGEs written fault-safe.
                if unsafe { crate::mem::scatter(sges, 0, p as *const u8, len as usize) } {
                    IBV_WC_SUCCESS
                } else {
                    IBV_WC_LOC_PROT_ERR
                }
            }
            Op::Cas(cmp, swap, sges) => atomic_into(p, crate::mem::Atomic::Cas(cmp, swap), sges),
            Op::Faa(add, sges) => atomic_into(p, crate::mem::Atomic::Add(add), sges),
        })
    })();
    slot.store(0, Ordering::Release);
    r
}

fn atomic_into(p: u64, a: crate::mem::Atomic, sges: &[ibv_sge]) -> u32 {
    let Some(old) = crate::mem::atomic(p, a) else {
        return IBV_WC_REM_ACCESS_ERR;
    };
    let v = old.to_ne_bytes();
    // SAFETY: 8 bytes from `v`; the local SGEs passed `check_local`,
    // written fault-safe.
    if unsafe { crate::mem::scatter(sges, 0, v.as_ptr(), 8) } {
        IBV_WC_SUCCESS
    } else {
        IBV_WC_LOC_PROT_ERR
    }
}
