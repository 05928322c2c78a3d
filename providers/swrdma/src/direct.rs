//! One-sided operations without the target's CPU.
//!
//! Each context publishes a *directory*: a sealed memory file with one
//! entry per remotely accessible MR (key, PD, rights, IOVA range and the
//! process address it starts at) and one per QP (state, access flags, PD,
//! destination QPN).  The file goes to each peer with the link's
//! handshake; peers map it read-only (F_SEAL_FUTURE_WRITE).  Entries are
//! seqlocks written by the owner alone.  Nothing of the application's
//! memory is shared, moved or remapped: registration leaves the memory
//! exactly as it was.
//!
//! An RDMA WRITE or READ (and an atomic) on an RC QP is then executed by
//! the *initiator*: it checks the access exactly as the responder would
//! (the responder QP's state, access flags and PD, the MR's key, PD,
//! rights and bounds) and copies between its local SGEs and the target's
//! memory with cross-memory attach (`process_vm_writev`/`readv` on the
//! target's pid: one copy, by the kernel, as one DMA; the target's pages
//! are faulted in and copy-on-write broken as for any write to them, so a
//! forked child, `madvise`, `mremap` and `munmap` keep their Linux
//! meaning).  Atomics read, compute and write the 8 bytes with the
//! target's atomic lock held (locks.rs).  The kernel allows this between
//! processes of one user that may `ptrace` each other (Yama
//! `ptrace_scope` 0, or 1 with the peer a descendant; the target's dumpable
//! flag set); anything it refuses, and anything the check does not clearly
//! allow (an error to report, a memory window, a QP with requests in
//! flight), takes the ring path, where the target's process answers as
//! before, errors included.
//!
//! The bounds of every copy come from this process: the length of the
//! request and the local SGEs (checked against our own MR table).  What a
//! peer's directory says decides only where in *the peer's* memory the
//! copy goes.
//!
//! Deregistration: the initiator announces the MR it accesses in the
//! target's access page (locks.rs), then checks the entry; the owner
//! withdraws the entry, then waits until no live process announces that
//! MR.  Both sides fence between the store and the load (Dekker), so after
//! `ibv_dereg_mr` returns no peer touches the memory.

use crate::locks::Access;
use crate::shared::Backing;
use ibverbs_abi::*;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const HDR: usize = 4096;
const N_MR: usize = 4096;
const MR_WORDS: usize = 16;
const N_QP: usize = 4096;
const QP_WORDS: usize = 8;
pub const DIR_BYTES: usize = HDR + N_MR * MR_WORDS * 8 + N_QP * QP_WORDS * 8;
/// The rights that publish an MR.
const REMOTE: u32 = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
const DIR_MAGIC: u64 = 0x5357_5244_4449_5233; // "SWRDDIR3"
/// Header word counting withdrawn MR entries (peers drop their mappings of
/// shared objects that are no longer published when it moves).
const RETRACTS: usize = 1;

/// Direct accesses are enabled (not `SWRDMA_DIRECT=0`).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SWRDMA_DIRECT").is_none_or(|v| v != "0"))
}

/// A shared object's descriptor the owner keeps: ((device, inode,
/// writable), the descriptor).
type KeptObject = ((u64, u64, bool), Arc<OwnedFd>);

/// The context's own directory (read-write).
pub struct Dir {
    fd: OwnedFd,
    map: *mut AtomicU64,
    /// Our context's id (announcements name it).
    ctx: u32,
    /// Serialises the owner's writers.
    writer: Mutex<()>,
    /// The descriptors of published shared objects (shared.rs), by key,
    /// with (device, inode, writable).
    objects: Mutex<std::collections::HashMap<u32, KeptObject>>,
}
// SAFETY: `map` points to a shared mapping owned by the `Dir` (unmapped in
// Drop) that is only accessed through atomics.
unsafe impl Send for Dir {}
// SAFETY: as above.
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
    pub fn new(ctx: u32) -> Option<Dir> {
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
            ctx,
            writer: Mutex::new(()),
            objects: Mutex::new(std::collections::HashMap::new()),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// MR `key` (not a window) is registered: published if it grants a
    /// remote right (nothing happens to its memory), with the identity of
    /// its backing object when it is already shared (shared.rs).
    /// `obj`: what `backing` found for it.
    pub fn publish_mr(
        &self,
        key: u32,
        (pd, access): (u32, u32),
        (iova, len, va): (u64, u64, u64),
        obj: Option<Backing>,
    ) {
        if access & REMOTE == 0 || len == 0 {
            return;
        }
        let _g = crate::sys::lock(&self.writer);
        // SAFETY: `map` is our `DIR_BYTES` mapping.
        let e = unsafe { mr_entry(self.map, key) };
        if e[1].load(Ordering::Relaxed) != 0 {
            return; // the slot is taken (ring path for this MR)
        }
        let write = access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0;
        let mut ident = [0; 5];
        if let Some(b) = obj {
            ident = b.ident;
            if let Some(fd) = b.fd {
                ident[1] = self.keep_object(key, fd, (ident[3], ident[4], write)) as u64;
            }
        }
        let [kind, id, off, dev, ino] = ident;
        write_entry(
            e,
            &[
                key as u64,
                pd as u64,
                access as u64,
                iova,
                len,
                va,
                kind,
                id,
                off,
                dev,
                ino,
            ],
        );
    }

    /// The shared object behind [va, va+len) when an MR with `access`
    /// there would be published (shared.rs; looked up before the caller
    /// takes its MR table).
    pub fn backing(access: u32, va: u64, len: u64) -> Option<Backing> {
        if access & REMOTE == 0 || len == 0 {
            return None;
        }
        crate::shared::detect(
            va,
            len,
            access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0,
        )
    }

    /// Keeps `fd` (a descriptor of a shared object: (device, inode,
    /// writable)) for MR `key` while it is published; MRs over one object
    /// share one descriptor (each costs the application's RLIMIT_NOFILE).
    /// The number peers take.
    fn keep_object(&self, key: u32, fd: OwnedFd, obj: (u64, u64, bool)) -> i32 {
        let mut g = crate::sys::lock(&self.objects);
        let same = g
            .values()
            .find(|(o, _)| o.0 == obj.0 && o.1 == obj.1 && (o.2 || !obj.2))
            .map(|(_, f)| f.clone());
        let f = same.unwrap_or_else(|| Arc::new(fd));
        let n = f.as_raw_fd();
        g.insert(key, (obj, f));
        n
    }

    /// MR `key` goes away (or changes): peers can no longer start a direct
    /// access to it, and none is running once this returns (a peer stopped
    /// in the middle of one — a debugger, SIGSTOP — is waited for, as a
    /// device finishes its DMA first).  The caller must not hold the MR
    /// table (the wait holds no lock).
    pub fn retract_mr(&self, key: u32) {
        {
            let _g = crate::sys::lock(&self.writer);
            // SAFETY: `map` is our `DIR_BYTES` mapping.
            let e = unsafe { mr_entry(self.map, key) };
            if e[1].load(Ordering::Relaxed) != key as u64 {
                return; // never published
            }
            write_entry(e, &[0; 11]);
            // SAFETY: `map` is our `DIR_BYTES` mapping (header word).
            unsafe { (*self.map.add(RETRACTS)).fetch_add(1, Ordering::Release) };
        }
        fence(Ordering::SeqCst);
        if let Some(a) = Access::own() {
            a.wait_unannounced(self.ctx, key);
        }
        // No peer takes the object's descriptor any more.
        crate::sys::lock(&self.objects).remove(&key);
    }

    /// QP `qpn`'s state as a responder sees it (None: destroyed): its
    /// type, state, access flags, PD, destination QPN and path MTU in
    /// bytes.
    pub fn publish_qp(&self, qpn: u32, v: Option<(u32, u32, u32, u32, u32, u32)>) {
        let _g = crate::sys::lock(&self.writer);
        // SAFETY: `map` is our `DIR_BYTES` mapping.
        let e = unsafe { qp_entry(self.map, qpn) };
        let cur = e[1].load(Ordering::Relaxed) as u32;
        if cur != 0 && cur != qpn {
            return; // slot taken by another QP
        }
        match v {
            Some((qpt, state, access, pd, dqpn, pmtu)) => write_entry(
                e,
                &[
                    qpn as u64,
                    qpt as u64,
                    state as u64,
                    access as u64,
                    pd as u64,
                    dqpn as u64,
                    pmtu as u64,
                ],
            ),
            None if cur == qpn => write_entry(e, &[0; 7]),
            None => {}
        }
    }
}

/// A peer context as seen from here: its directory, its process's access
/// page and its pid.
pub struct Peer {
    map: *const AtomicU64,
    access: Access,
    pid: libc::pid_t,
    ctx: u32,
    /// The kernel refused cross-memory attach to it (EPERM): ring path.
    refused: AtomicBool,
    /// Its process (`pidfd_getfd` of shared objects' descriptors).
    pidfd: Option<OwnedFd>,
    /// Its shared objects mapped here, by rkey: (identity and length they
    /// were published with, the mapping or None when it cannot be mapped).
    objects: Mutex<Vec<Cached>>,
    /// The directory's `RETRACTS` when `objects` was last swept.
    swept: AtomicU64,
    /// A shared object of the peer could not be mapped here (`maps`).
    unmapped: AtomicBool,
}

/// A published shared object as a peer caches it: identity, length, rights.
type SharedKey = (crate::shared::Ident, u64, u32);
/// (rkey, what its entry published, our mapping or None: not mappable).
type Cached = (u32, SharedKey, Option<Arc<crate::shared::Mapping>>);
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

/// What a peer MR entry says.
#[derive(Clone, Copy)]
pub struct PeerMr {
    pub pd: u32,
    pub access: u32,
    pub iova: u64,
    pub len: u64,
    /// The process address of `iova`.
    pub va: u64,
    /// The backing object when it is already shared (shared.rs; kind 0:
    /// private memory).
    pub obj: crate::shared::Ident,
}

impl Peer {
    /// Maps context `ctx`'s directory (a sealed file of `DIR_BYTES`) and
    /// its process's access page; `pid` is that process as the kernel
    /// names it (the link socket's `SO_PEERCRED`).
    pub fn new(dir: BorrowedFd<'_>, access: OwnedFd, who: (libc::pid_t, Option<OwnedFd>), ctx: u32) -> Option<Peer> {
        let (pid, pidfd) = who;
        use rustix::fs::{fcntl_get_seals, fstat, SealFlags};
        let st = fstat(dir).ok()?;
        let seals = fcntl_get_seals(dir).ok()?;
        if st.st_size as usize != DIR_BYTES || !seals.contains(SealFlags::SHRINK | SealFlags::GROW) || pid <= 0 {
            return None;
        }
        let access = Access::peer(access)?;
        // SAFETY: a read-only shared mapping of a file of exactly this size
        // that cannot shrink (sealed): every page stays backed.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                DIR_BYTES,
                libc::PROT_READ,
                libc::MAP_SHARED,
                dir.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let p = Peer {
            map: map as *const AtomicU64,
            access,
            pid,
            ctx,
            refused: AtomicBool::new(false),
            pidfd,
            objects: Mutex::new(Vec::new()),
            swept: AtomicU64::new(0),
            unmapped: AtomicBool::new(false),
        };
        // SAFETY: the first word of the mapping.
        (unsafe { (*p.map).load(Ordering::Relaxed) } == DIR_MAGIC).then_some(p)
    }

    pub fn mr(&self, key: u32) -> Option<PeerMr> {
        // SAFETY: `map` is a `DIR_BYTES` mapping.
        let v = read_entry::<11>(unsafe { mr_entry(self.map, key) })?;
        if v[0] != key as u64 || key == 0 {
            return None;
        }
        Some(PeerMr {
            pd: v[1] as u32,
            access: v[2] as u32,
            iova: v[3],
            len: v[4],
            va: v[5],
            obj: [v[6], v[7], v[8], v[9], v[10]],
        })
    }

    fn retracts(&self) -> u64 {
        // SAFETY: `map` is a `DIR_BYTES` mapping (header word).
        unsafe { (*self.map.add(RETRACTS)).load(Ordering::Acquire) }
    }

    /// MRs were withdrawn since the last look (`retracts` moved): our
    /// mappings of the objects no longer published go.
    fn sweep_locked(&self, g: &mut Vec<Cached>, retracts: u64) {
        if self.swept.swap(retracts, Ordering::Relaxed) != retracts {
            g.retain(|(k, id, _)| self.mr(*k).is_some_and(|m| (m.obj, m.len, m.access) == *id));
        }
    }

    /// Drops our mappings of the peer's shared objects it no longer
    /// publishes (the context's thread, when idle).
    pub fn sweep(&self) {
        let r = self.retracts();
        if self.swept.load(Ordering::Relaxed) != r {
            self.sweep_locked(&mut crate::sys::lock(&self.objects), r);
        }
    }

    /// Our mapping of the shared object behind the peer's MR `rkey`, as
    /// its entry `e` (read after the access was announced) publishes it;
    /// None: private memory, or an object we cannot map (private path).
    fn object(&self, rkey: u32, e: &PeerMr) -> Option<Arc<crate::shared::Mapping>> {
        if e.obj[0] == 0 {
            return None;
        }
        let retracts = self.retracts();
        let key = (e.obj, e.len, e.access);
        let mut g = crate::sys::lock(&self.objects);
        self.sweep_locked(&mut g, retracts);
        if let Some((_, _, m)) = g.iter().find(|(k, id, _)| *k == rkey && *id == key) {
            return m.clone();
        }
        g.retain(|(k, _, _)| *k != rkey);
        let write = e.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0;
        let m = self
            .pidfd
            .as_ref()
            .and_then(|p| crate::shared::Mapping::open(&e.obj, e.len, write, p.as_fd()))
            .map(Arc::new);
        if m.is_none() {
            self.unmapped.store(true, Ordering::Relaxed);
        }
        g.push((rkey, key, m.clone()));
        m
    }

    /// Whether the peer's MR `rkey` is, as its entry says now, a shared
    /// object we map or may map (a request to it is a memcpy: deferring it
    /// to share a system call gains nothing, send/defer.rs): false once
    /// one of the peer's objects could not be mapped here.  A hint only,
    /// without a lock: execution announces the access and checks again.
    pub fn maps(&self, rkey: u32) -> bool {
        !self.unmapped.load(Ordering::Relaxed) && self.mr(rkey).is_some_and(|e| e.obj[0] != 0)
    }

    /// (qpt, state, access flags, pd, dest QPN, path MTU bytes) of the
    /// peer's QP `qpn`.
    pub fn qp(&self, qpn: u32) -> Option<(u32, u32, u32, u32, u32, u32)> {
        // SAFETY: `map` is a `DIR_BYTES` mapping.
        let v = read_entry::<7>(unsafe { qp_entry(self.map, qpn) })?;
        if v[0] != qpn as u64 || qpn == 0 {
            return None;
        }
        Some((
            v[1] as u32,
            v[2] as u32,
            v[3] as u32,
            v[4] as u32,
            v[5] as u32,
            v[6] as u32,
        ))
    }
}

/// A one-sided request the initiator may execute itself.
pub enum Op<'a> {
    Write(&'a [ibv_sge]),
    Read(&'a [ibv_sge]),
    Cas(u64, u64, &'a [ibv_sge]),
    Faa(u64, &'a [ibv_sge]),
}

impl Op<'_> {
    fn right(&self) -> u32 {
        match self {
            Op::Write(_) => IBV_ACCESS_REMOTE_WRITE,
            Op::Read(_) => IBV_ACCESS_REMOTE_READ,
            Op::Cas(..) | Op::Faa(..) => IBV_ACCESS_REMOTE_ATOMIC,
        }
    }
}

/// The process address of [raddr, raddr+len) of the peer's MR `rkey`, when
/// the peer's QP `dqpn` (connected to our `my_qpn`) and the MR allow `need`
/// there (the responder's checks, responder::Target's order).
fn allowed(
    peer: &Peer,
    my_qpn: u32,
    dqpn: u32,
    at: (u32, u64, u64),
    need: u32,
    first_pkt: u64,
) -> Option<(u64, PeerMr)> {
    let (rkey, raddr, len) = at;
    let (qpt, state, qacc, qpd, qdest, pmtu) = peer.qp(dqpn)?;
    if qpt != IBV_QPT_RC
        || !matches!(state, IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_SQE)
        || qacc & need == 0
        || qdest != my_qpn
        || first_pkt > pmtu as u64
    {
        return None;
    }
    let e = peer.mr(rkey)?;
    if e.pd != qpd || e.access & need == 0 || raddr < e.iova || raddr.checked_add(len)? > e.iova.checked_add(e.len)? {
        return None;
    }
    let host = e.va.checked_add(raddr - e.iova)?;
    host.checked_add(len)?;
    Some((host, e))
}

/// Our address of [raddr, raddr+len) of the peer's MR `rkey` (entry `e`)
/// in our mapping of its shared object, if it has one.
fn shared_at(peer: &Peer, rkey: u32, e: &PeerMr, raddr: u64, len: u64) -> Option<(Arc<crate::shared::Mapping>, u64)> {
    let m = peer.object(rkey, e)?;
    let at = m.at(e.obj[2].checked_add(raddr - e.iova)?, len)?;
    Some((m, at))
}

/// Executes `op` on [raddr, raddr+len) of the peer's MR `rkey`, for our RC
/// QP `my_qpn` (PD irrelevant here: the local SGEs were checked) talking to
/// the peer's QP `dqpn`.  Some(status): done (IBV_WC_SUCCESS, or a local
/// error); None: not for the direct path (the caller uses the ring).
/// `at`: (rkey, remote address, length).
/// `pmtu`: our QP's path MTU in bytes (a WRITE whose first packet would
/// not fit the peer QP's path MTU is for the ring, which refuses it).
pub fn execute(peer: &Peer, my_qpn: u32, dqpn: u32, at: (u32, u64, u64), op: Op<'_>, pmtu: u64) -> Option<u32> {
    let (rkey, raddr, len) = at;
    peer.sweep();
    let is_atomic = matches!(op, Op::Cas(..) | Op::Faa(..));
    if peer.refused.load(Ordering::Relaxed) || (is_atomic && (len != 8 || !raddr.is_multiple_of(8))) {
        return None;
    }
    // Announce the access, then check (see the module's comment).
    let _announced = peer.access.announce(peer.ctx, rkey)?;
    let first_pkt = if matches!(op, Op::Write(_)) { len.min(pmtu) } else { 0 };
    let (host, e) = allowed(peer, my_qpn, dqpn, at, op.right(), first_pkt)?;
    if let Some((_m, p)) = shared_at(peer, rkey, &e, raddr, len) {
        // The same object, mapped here: memcpy (a fault — a truncated
        // file — fails it: the ring answers as for memory gone).
        let ok = match op {
            Op::Write(sges) => crate::shared::copy(sges, p, len as usize, true),
            Op::Read(sges) => crate::shared::copy(sges, p, len as usize, false),
            _ if !host.is_multiple_of(8) || !p.is_multiple_of(8) => false,
            Op::Cas(cmp, swap, sges) => {
                return shared_atomic(peer, (host, p), crate::mem::Atomic::Cas(cmp, swap), sges)
            }
            Op::Faa(add, sges) => return shared_atomic(peer, (host, p), crate::mem::Atomic::Add(add), sges),
        };
        return ok.then_some(IBV_WC_SUCCESS);
    }
    let r = match op {
        Op::Write(sges) => cma(peer.pid, sges, host, len as usize, true).map(|_| IBV_WC_SUCCESS),
        Op::Read(sges) => cma(peer.pid, sges, host, len as usize, false).map(|_| IBV_WC_SUCCESS),
        Op::Cas(..) | Op::Faa(..) if !host.is_multiple_of(8) => {
            // (An aligned IOVA at a misaligned address: the ring's
            // responder refuses it.)
            return None;
        }
        Op::Cas(cmp, swap, sges) => atomic(peer, host, crate::mem::Atomic::Cas(cmp, swap), sges),
        Op::Faa(add, sges) => atomic(peer, host, crate::mem::Atomic::Add(add), sges),
    };
    match r {
        Ok(status) => Some(status),
        Err(e) => {
            if e == libc::EPERM {
                // Not allowed to reach that process (Yama, a privileged or
                // undumpable peer): the ring from now on.
                peer.refused.store(true, Ordering::Relaxed);
            }
            // Anything else (a page not there, on either side): the ring
            // path classifies it (the owner answers for its memory, our
            // side for ours); a WRITE or READ done in part is simply done
            // again there.
            None
        }
    }
}

/// The most iovecs `process_vm_writev`/`readv` take on each side
/// (`IOV_MAX`, `UIO_MAXIOV` in the kernel).
pub const MAX_IOV: usize = 1024;

/// Appends the first `len` bytes of our SGEs `sges` (in order) to `local`
/// as iovecs (empty ones left out); false when they hold fewer.
fn local_iovs(local: &mut Vec<libc::iovec>, sges: &[ibv_sge], len: usize) -> bool {
    let mut left = len;
    for s in sges {
        if left == 0 {
            break;
        }
        let n = (s.length as usize).min(left);
        if n > 0 {
            local.push(libc::iovec {
                iov_base: s.addr as *mut libc::c_void,
                iov_len: n,
            });
        }
        left -= n;
    }
    left == 0
}

/// One `process_vm_writev` (`write`) or `process_vm_readv` between our
/// iovecs `local` and process `pid`'s `remote`: the bytes copied, or
/// Err(errno).
fn cma_call(pid: libc::pid_t, local: &[libc::iovec], remote: &[libc::iovec], write: bool) -> Result<usize, i32> {
    let call = if write {
        libc::process_vm_writev
    } else {
        libc::process_vm_readv
    };
    // SAFETY: the kernel copies between our memory through `local` and the
    // other process's through `remote` (writev: ours is read; readv: ours is
    // written); it reports a missing page as EFAULT, never as a signal; no
    // Rust object is involved.
    let n = unsafe {
        call(
            pid,
            local.as_ptr(),
            local.len() as _,
            remote.as_ptr(),
            remote.len() as _,
            0,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    Ok(n as usize)
}

/// Copies `len` bytes between our SGEs `sges` (in order) and [host,
/// host+len) of process `pid`: into it when `write`, out of it otherwise.
/// Err(errno) when the kernel copied less.
fn cma(pid: libc::pid_t, sges: &[ibv_sge], host: u64, len: usize, write: bool) -> Result<(), i32> {
    let mut local: Vec<libc::iovec> = Vec::with_capacity(sges.len());
    if !local_iovs(&mut local, sges, len) {
        return Err(libc::EINVAL);
    }
    if len == 0 {
        return Ok(());
    }
    let remote = [libc::iovec {
        iov_base: host as *mut libc::c_void,
        iov_len: len,
    }];
    match cma_call(pid, &local, &remote, write)? {
        n if n == len => Ok(()),
        _ => Err(libc::EFAULT),
    }
}

/// The distinct rkeys one batch announces at most (a request with another
/// one ends the batch: it is posted alone).
const BATCH_KEYS: usize = 8;

/// Consecutive RDMA WRITEs (`write`) or READs of our RC QP `my_qpn` to
/// the peer's QP `dqpn`, posted together, executed with one
/// `process_vm_writev`/`readv`: each request's SGEs on our side, one range
/// per request on the peer's (at most `MAX_IOV` of each: the caller's
/// bound).  Request `i` of the `n` is `req(i)`: ((rkey, remote address,
/// length), our SGEs, checked against our MR table, holding the length).
/// Each request is announced (once per rkey) and checked exactly as
/// `execute` does.  Returns how many requests, from the first, were
/// executed entirely; the rest were not for the batch (a check that does
/// not clearly allow a request ends the batch before it; a copy the kernel
/// ended early, EFAULT, ends it at the request it stopped in, done again
/// later) and go their own way, one by one, as a request posted alone.
pub fn execute_batch<'s>(
    peer: &Peer,
    (my_qpn, dqpn): (u32, u32),
    n: usize,
    req: impl Fn(usize) -> ((u32, u64, u64), &'s [ibv_sge]),
    write: bool,
    pmtu: u64,
) -> usize {
    if peer.refused.load(Ordering::Relaxed) {
        return 0;
    }
    peer.sweep();
    let need = if write {
        IBV_ACCESS_REMOTE_WRITE
    } else {
        IBV_ACCESS_REMOTE_READ
    };
    // (The announcements stay until the copy is over.)
    let mut announced: [Option<(u32, crate::locks::Announced<'_>)>; BATCH_KEYS] = Default::default();
    // (Allocated at the first request for the kernel: none when every
    // request lands in a shared object's mapping.)
    let mut local: Vec<libc::iovec> = Vec::new();
    let mut remote: Vec<libc::iovec> = Vec::new();
    // Requests executed in a shared object's mapping (shared.rs).
    let mut inline = 0;
    'reqs: for i in 0..n {
        let (at, sges) = req(i);
        let (rkey, _, len) = at;
        if !announced.iter().flatten().any(|(k, _)| *k == rkey) {
            // Announce, then check (see the module's comment).
            let Some(free) = announced.iter_mut().find(|a| a.is_none()) else {
                break 'reqs;
            };
            match peer.access.announce(peer.ctx, rkey) {
                Some(a) => *free = Some((rkey, a)),
                None => break 'reqs,
            }
        }
        let first_pkt = if write { len.min(pmtu) } else { 0 };
        let Some((host, e)) = allowed(peer, my_qpn, dqpn, at, need, first_pkt) else {
            break;
        };
        if let Some((_m, p)) = shared_at(peer, at.0, &e, at.1, len) {
            // The same object mapped here: copied at once while nothing of
            // the batch waits for the kernel (in order), else alone later.
            if !remote.is_empty() || len == 0 || !crate::shared::copy(sges, p, len as usize, write) {
                break;
            }
            inline += 1;
            continue;
        }
        if remote.capacity() == 0 {
            local.reserve(n);
            remote.reserve(n);
        }
        let mark = local.len();
        if len == 0 || !local_iovs(&mut local, sges, len as usize) {
            local.truncate(mark);
            break;
        }
        remote.push(libc::iovec {
            iov_base: host as *mut libc::c_void,
            iov_len: len as usize,
        });
    }
    if remote.is_empty() {
        return inline;
    }
    inline
        + match cma_call(peer.pid, &local, &remote, write) {
            Ok(mut copied) => remote
                .iter()
                .take_while(|r| {
                    let whole = r.iov_len <= copied;
                    copied = copied.saturating_sub(r.iov_len);
                    whole
                })
                .count(),
            Err(e) => {
                if e == libc::EPERM {
                    peer.refused.store(true, Ordering::Relaxed);
                }
                0
            }
        }
}

/// The atomic `a` on the 8 bytes at `host` of the peer's process, with its
/// atomic lock held; the original value goes to our SGEs.  Ok(status) once
/// it was executed; Err(errno) when it was not.
fn atomic(peer: &Peer, host: u64, a: crate::mem::Atomic, sges: &[ibv_sge]) -> Result<u32, i32> {
    let old = peer.access.locked(host, || -> Result<u64, i32> {
        let mut b = [0u8; 8];
        let me = [ibv_sge {
            addr: b.as_mut_ptr() as u64,
            length: 8,
            lkey: 0,
        }];
        cma(peer.pid, &me, host, 8, false)?;
        let old = u64::from_ne_bytes(b);
        let new = match a {
            crate::mem::Atomic::Cas(c, s) => (old == c).then_some(s),
            crate::mem::Atomic::Add(v) => Some(old.wrapping_add(v)),
            crate::mem::Atomic::Store(v) => Some(v),
        };
        if let Some(v) = new {
            let nb = v.to_ne_bytes();
            let me = [ibv_sge {
                addr: nb.as_ptr() as u64,
                length: 8,
                lkey: 0,
            }];
            cma(peer.pid, &me, host, 8, true)?;
        }
        Ok(old)
    })?;
    let v = old.to_ne_bytes();
    // SAFETY: 8 bytes from `v`; the local SGEs passed `check_local`,
    // written fault-safe.
    if unsafe { crate::mem::scatter(sges, 0, v.as_ptr(), 8) } {
        Ok(IBV_WC_SUCCESS)
    } else {
        // Our own buffer went away.  The atomic was executed (the ring
        // would execute it twice): the local error is reported here.
        Ok(IBV_WC_LOC_PROT_ERR)
    }
}

/// The atomic `a` on the 8 bytes of the peer's memory at process address
/// `host`, reached at our address `p` of its shared object, with the
/// peer's atomic lock of `host` held (its own atomics take it too); the
/// original value goes to our SGEs.  None: not executed (a fault).
fn shared_atomic(peer: &Peer, (host, p): (u64, u64), a: crate::mem::Atomic, sges: &[ibv_sge]) -> Option<u32> {
    let old = peer.access.locked(host, || crate::mem::atomic_unlocked(p, a))?;
    let v = old.to_ne_bytes();
    // SAFETY: 8 bytes from `v`; the local SGEs passed `check_local`,
    // written fault-safe.
    if unsafe { crate::mem::scatter(sges, 0, v.as_ptr(), 8) } {
        Some(IBV_WC_SUCCESS)
    } else {
        Some(IBV_WC_LOC_PROT_ERR)
    }
}
