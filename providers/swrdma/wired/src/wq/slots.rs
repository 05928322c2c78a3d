//! A single-producer/single-consumer queue of fixed-size slots in a sealed
//! shared-memory file: the generic part of the work queues (see the module
//! documentation in `mod.rs` for the layout and the ordering rules).
//!
//! Every access to the shared mapping is an atomic load or store of an
//! aligned `u64` (the mapping is seen as a slice of `AtomicU64`), so no
//! value the other side writes, at any time, can make this code read or
//! write outside the mapping, panic, or loop.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of the header page at the start of the file.
pub const HEADER_BYTES: usize = 4096;
/// The direct-transmit window of a send queue (`wq/mod.rs`, "Direct
/// transmit"): its state word (consumer sets, producer may swap it
/// once from open to taken), on a line of its own.
pub(crate) const W_DTX: usize = 32;
/// When the producer sent through the window (CLOCK_MONOTONIC ns), written
/// before it takes the window: where the request's ACK timeout starts.
pub(crate) const W_DTX_SENT: usize = 33;
/// The window's path (consumer writes, while the window is closed): our
/// address (2 words, IPv6 or IPv4-mapped), the peer's (2), the peer QPN
/// and the path MTU (1), the interface index (1).
pub(crate) const W_DTX_PATH: usize = 40;
/// Bytes at the start of each slot that the queue itself uses: the stamp
/// (8) and the entry's length (4, then 4 unused).  A slot of `slot_size`
/// bytes carries entries of up to `slot_size - SLOT_HEADER` bytes.
pub const SLOT_HEADER: usize = 16;
/// The largest depth (entries) of a queue.
pub const MAX_DEPTH: usize = 65536;
/// The smallest slot.
pub const MIN_SLOT: usize = 64;
/// The largest slot.
pub const MAX_SLOT: usize = 4096;
/// `statfs`'s type of shared memory (tmpfs, where memfds live).
const TMPFS_MAGIC: u64 = 0x0102_1994;

// Word indices (u64) in the header page, one cache line each.
/// The producer's line: its published count (diagnostics only).
pub(crate) const W_PRODUCED: usize = 0;
/// The consumer's line: its consumed count.
pub(crate) const W_CONSUMED: usize = 8;
/// The doorbell line: the consumer's `sleeping` flag.  On a line of its own
/// so that the producer's load after each entry does not contend with the
/// consumer's count, which changes after every entry.
pub(crate) const W_SLEEPING: usize = 16;
/// The notification line of a completion queue: the consumer's `armed`
/// word (0 not armed, [`ARMED_ANY`], [`ARMED_SOLICITED`]), as
/// `ibv_req_notify_cq` arms a CQ.  Its own line, as `sleeping`'s.
pub(crate) const W_ARMED: usize = 24;
/// `armed`: the next completion notifies.
pub const ARMED_ANY: u64 = 1;
/// `armed`: the next solicited (or failed) completion notifies.
pub const ARMED_SOLICITED: u64 = 2;
/// The words of the header page (slot 0 starts here).
pub(crate) const HEADER_WORDS: usize = HEADER_BYTES / 8;

/// The file's size for a queue of `depth` slots of `slot_size` bytes, or
/// None when the geometry is out of range: `depth` a power of two in
/// 1..=[`MAX_DEPTH`], `slot_size` a multiple of 64 in
/// [`MIN_SLOT`]..=[`MAX_SLOT`].
pub fn file_bytes(depth: usize, slot_size: usize) -> Option<usize> {
    let depth_ok = depth.is_power_of_two() && depth <= MAX_DEPTH;
    let slot_ok = slot_size.is_multiple_of(64) && (MIN_SLOT..=MAX_SLOT).contains(&slot_size);
    (depth_ok && slot_ok).then(|| HEADER_BYTES + depth * slot_size)
}

/// Why [`Slots::attach`] refused a file.
#[derive(Debug)]
pub enum AttachError {
    /// The depth or slot size is out of range ([`file_bytes`]).
    Geometry,
    /// The descriptor is not a regular file of shared memory (a memfd).
    NotAFile,
    /// The file's size is not the one the geometry gives.
    Size {
        /// The file's size.
        found: u64,
        /// The size the geometry gives.
        want: u64,
    },
    /// The file is not sealed against shrinking, growing and further
    /// seals (it could be shrunk under the mapping: `SIGBUS`).
    Unsealed,
    /// A system call failed.
    Sys(&'static str, io::Error),
}

impl std::fmt::Display for AttachError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttachError::Geometry => write!(f, "work queue: depth or slot size out of range"),
            AttachError::NotAFile => write!(f, "work queue: not a shared-memory file"),
            AttachError::Size { found, want } => {
                write!(f, "work queue: the file has {found} bytes, not {want}")
            }
            AttachError::Unsealed => write!(f, "work queue: the file is not sealed against resizing"),
            AttachError::Sys(call, e) => write!(f, "work queue: {call}: {e}"),
        }
    }
}

impl std::error::Error for AttachError {}

/// The other side broke the queue's protocol (an entry longer than its
/// slot or than the caller allows, a count that goes backwards or past
/// what was produced).  The queue must be given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// Why [`Producer::try_push`] wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushError {
    /// Every slot holds an entry the consumer has not taken yet.
    Full,
    /// The entry is longer than a slot carries ([`Producer::capacity`]).
    TooLong,
    /// The consumer's published count is impossible ([`Corrupt`]).
    Corrupt,
}

/// What the producer must do after an entry.
#[must_use = "a consumer that went to sleep waits for its doorbell"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Push {
    /// The consumer is awake (or will see the entry before it sleeps).
    Quiet,
    /// The consumer sleeps: write its doorbell ([`ring`]).
    Ring,
}

/// A shared mapping of a queue's file, seen as words.
struct Map {
    ptr: *mut libc::c_void,
    bytes: usize,
}

// SAFETY: the mapping is shared memory that every user touches only
// through `words()` (atomic loads and stores); it has no thread affinity.
unsafe impl Send for Map {}
// SAFETY: as above: all access is atomic, so shared references to `Map`
// from several threads are fine.
unsafe impl Sync for Map {}

impl Map {
    /// Maps `bytes` bytes of `fd` shared, read and write.  The caller has
    /// checked that the file is that long and cannot shrink.
    fn new(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<Map> {
        // SAFETY: a new shared mapping chosen by the kernel; the file is at
        // least `bytes` long and sealed against shrinking (both callers
        // check or made it so), so every page stays backed.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Map { ptr, bytes })
    }

    /// The mapping as `u64` words.
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is a live mapping of `bytes` bytes (a multiple of
        // 64), page-aligned, readable and writable until `drop`, which
        // needs `&mut self`, so it outlives the returned slice.  Other
        // processes may write it at any time: `AtomicU64` allows shared
        // mutation and every bit pattern is a valid value.
        unsafe { std::slice::from_raw_parts(self.ptr as *const AtomicU64, self.bytes / 8) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, used by no one after this.
        unsafe { libc::munmap(self.ptr, self.bytes) };
    }
}

/// One queue's mapping, before it is turned into its producer half, its
/// consumer half, or both ([`Slots::split`]).  Each `Slots` gives at most
/// one producer and one consumer, and each half needs `&mut self`, so the
/// single-producer/single-consumer rule holds by the types within a
/// process; the other process has its own `Slots` from [`Slots::attach`].
pub struct Slots {
    map: Arc<Map>,
    depth: usize,
    slot_size: usize,
}

impl Slots {
    /// Creates a queue of `depth` slots of `slot_size` bytes in a new
    /// memfd, sealed against shrinking, growing and further seals, and
    /// maps it.  The descriptor is for the other side (`SCM_RIGHTS`),
    /// which maps it with [`Slots::attach`].
    pub fn create(depth: usize, slot_size: usize) -> io::Result<(Slots, OwnedFd)> {
        use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags, SealFlags};
        let bytes = file_bytes(depth, slot_size)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "work queue: bad geometry"))?;
        let fd = memfd_create(c"swrdma-wq", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
        ftruncate(&fd, bytes as u64)?;
        fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
        let map = Map::new(fd.as_fd(), bytes)?;
        let s = Slots {
            map: Arc::new(map),
            depth,
            slot_size,
        };
        Ok((s, fd))
    }

    /// Maps a queue the other side created: `fd` must be a regular file
    /// of exactly [`file_bytes`]`(depth, slot_size)` bytes, sealed against
    /// shrinking, growing and further seals.  Its contents are not
    /// trusted (and need not be zero).
    pub fn attach(fd: BorrowedFd<'_>, depth: usize, slot_size: usize) -> Result<Slots, AttachError> {
        use rustix::fs::{fcntl_get_seals, fstat, fstatfs, FileType, SealFlags};
        let bytes = file_bytes(depth, slot_size).ok_or(AttachError::Geometry)?;
        let st = fstat(fd).map_err(|e| AttachError::Sys("fstat", e.into()))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(AttachError::NotAFile);
        }
        // Shared memory (a memfd), not a hugetlbfs file, whose pages can
        // fail to come at a fault (`SIGBUS`).
        let fs = fstatfs(fd).map_err(|e| AttachError::Sys("fstatfs", e.into()))?;
        if u64::try_from(fs.f_type).ok() != Some(TMPFS_MAGIC) {
            return Err(AttachError::NotAFile);
        }
        // Seals before size: once sealed, the size we read is the size.
        let seals = fcntl_get_seals(fd).map_err(|_| AttachError::Unsealed)?;
        if !seals.contains(SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL) {
            return Err(AttachError::Unsealed);
        }
        let st = fstat(fd).map_err(|e| AttachError::Sys("fstat", e.into()))?;
        if st.st_size as u64 != bytes as u64 {
            return Err(AttachError::Size {
                found: st.st_size as u64,
                want: bytes as u64,
            });
        }
        let map = Map::new(fd, bytes).map_err(|e| AttachError::Sys("mmap", e))?;
        Ok(Slots {
            map: Arc::new(map),
            depth,
            slot_size,
        })
    }

    /// The number of slots.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The bytes of a slot.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// The queue's producer half.
    pub fn into_producer(self) -> Producer {
        Producer {
            ring: Ring::new(&self),
            seen: 0,
        }
    }

    /// The queue's consumer half.
    pub fn into_consumer(self) -> Consumer {
        Consumer {
            ring: Ring::new(&self),
            dtx: Dtx::default(),
        }
    }

    /// Both halves, for a process that is both ends (tests, loopback).
    pub fn split(self) -> (Producer, Consumer) {
        let c = Consumer {
            ring: Ring::new(&self),
            dtx: Dtx::default(),
        };
        (self.into_producer(), c)
    }
}

/// Raw access to a queue's words, for the tests that play a hostile or
/// broken other side.
#[cfg(test)]
pub(crate) struct Scribbler(Arc<Map>);

#[cfg(test)]
impl Scribbler {
    /// The number of words in the mapping.
    pub(crate) fn words(&self) -> usize {
        self.0.words().len()
    }

    /// Stores `v` into word `i` (modulo the mapping's size).
    pub(crate) fn store(&self, i: usize, v: u64) {
        let w = self.0.words();
        w[i % w.len()].store(v, Ordering::Relaxed)
    }
}

#[cfg(test)]
impl Slots {
    /// Raw access to this queue's words (tests only).
    pub(crate) fn scribbler(&self) -> Scribbler {
        Scribbler(self.map.clone())
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slots({} x {} bytes)", self.depth, self.slot_size)
    }
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Producer(depth {}, next {}, seen {})",
            self.ring.depth, self.ring.next, self.seen
        )
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Consumer(depth {}, next {})", self.ring.depth, self.ring.next)
    }
}

/// What both halves know: the mapping, the geometry, and the sequence
/// number of the next entry this half writes or takes.
struct Ring {
    map: Arc<Map>,
    mask: u64,
    depth: u64,
    slot_words: usize,
    capacity: usize,
    next: u64,
}

impl Ring {
    fn new(s: &Slots) -> Ring {
        Ring {
            map: s.map.clone(),
            mask: s.depth as u64 - 1,
            depth: s.depth as u64,
            slot_words: s.slot_size / 8,
            capacity: s.slot_size - SLOT_HEADER,
            next: 0,
        }
    }

    /// The word index of the slot of entry `seq` (in bounds: the slot
    /// number is below `depth`).
    fn slot(&self, seq: u64) -> usize {
        HEADER_WORDS + (seq & self.mask) as usize * self.slot_words
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        &self.map.words()[i]
    }
}

/// The producer half of a queue.  `Send`, not `Clone`.
pub struct Producer {
    ring: Ring,
    /// The consumer's count as last read (validated).
    seen: u64,
}

impl Producer {
    /// The largest entry a slot carries.
    pub fn capacity(&self) -> usize {
        self.ring.capacity
    }

    /// The number of slots.
    pub fn depth(&self) -> usize {
        self.ring.depth as usize
    }

    /// Entries written and not yet known to be taken (from the consumer's
    /// count as last read; up to `depth`).
    pub fn len(&self) -> usize {
        (self.ring.next - self.seen) as usize
    }

    /// No entry written that is not known to be taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries written and not taken yet, by the consumer's count as
    /// published now (read, not kept); [`Producer::len`] when that count
    /// is impossible.
    pub fn unconsumed(&self) -> usize {
        let next = self.ring.next;
        let c = self.ring.word(W_CONSUMED).load(Ordering::Acquire);
        if c.wrapping_sub(self.seen) > next - self.seen {
            return self.len();
        }
        (next - c) as usize
    }

    /// Writes one entry and checks the doorbell: [`Push::Ring`] says that
    /// the consumer sleeps and the caller must write its doorbell.
    pub fn try_push(&mut self, body: &[u8]) -> Result<Push, PushError> {
        self.try_push_quiet(body)?;
        Ok(self.doorbell())
    }

    /// Writes one entry without checking the doorbell.  After a batch of
    /// these, the caller must call [`Producer::doorbell`] once (otherwise
    /// a sleeping consumer may never see them).
    pub fn try_push_quiet(&mut self, body: &[u8]) -> Result<(), PushError> {
        if body.len() > self.ring.capacity {
            return Err(PushError::TooLong);
        }
        let next = self.ring.next;
        if next - self.seen >= self.ring.depth {
            // Our view says full: read the consumer's count.  It may only
            // have moved forward, and not past what we produced.
            let c = self.ring.word(W_CONSUMED).load(Ordering::Acquire);
            if c.wrapping_sub(self.seen) > next - self.seen {
                return Err(PushError::Corrupt);
            }
            self.seen = c;
            if next - self.seen >= self.ring.depth {
                return Err(PushError::Full);
            }
        }
        let base = self.ring.slot(next);
        self.ring.word(base + 1).store(body.len() as u64, Ordering::Relaxed);
        for (k, chunk) in body.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.ring
                .word(base + 2 + k)
                .store(u64::from_le_bytes(w), Ordering::Relaxed);
        }
        // The stamp publishes the body (Release): a consumer that sees it
        // sees the body.
        self.ring.word(base).store(next + 1, Ordering::Release);
        self.ring.next = next + 1;
        self.ring.word(W_PRODUCED).store(next + 1, Ordering::Relaxed);
        Ok(())
    }

    /// After entries were written: whether the consumer armed the queue for
    /// a notification that they call for (`solicited`: one of them is
    /// solicited or failed), taking the arm (one notification per arm, as
    /// `ibv_req_notify_cq`'s).  Fenced as [`Producer::doorbell`], pairing
    /// with [`Consumer::arm`]: either the consumer's poll after arming sees
    /// our entries, or we see its arm.
    pub fn take_arm(&mut self, solicited: bool) -> bool {
        fence(Ordering::SeqCst);
        let a = self.ring.word(W_ARMED);
        let cur = a.load(Ordering::Relaxed);
        let due = cur == ARMED_ANY || (cur == ARMED_SOLICITED && solicited);
        due && a.compare_exchange(cur, 0, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// The arm the consumer left on a queue that another replaces
    /// (`ibv_resize_cq`), taken (0: none): the new queue's producer
    /// [`Producer::carry_arm`]s it, so that an arm made before the resize
    /// still notifies.  The consumer does not arm meanwhile (its resize
    /// holds the queue).
    pub fn take_any_arm(&mut self) -> u64 {
        fence(Ordering::SeqCst);
        self.ring.word(W_ARMED).swap(0, Ordering::Relaxed)
    }

    /// Puts an arm taken from the queue this one replaces
    /// ([`Producer::take_any_arm`]) on this queue, before any entry is
    /// written to it.
    pub fn carry_arm(&mut self, armed: u64) {
        if armed == ARMED_ANY || armed == ARMED_SOLICITED {
            self.ring.word(W_ARMED).store(armed, Ordering::Relaxed);
            fence(Ordering::SeqCst);
        }
    }

    /// After entries were written: whether the consumer sleeps and must be
    /// woken ([`Push::Ring`]).  The flag is cleared, so one doorbell is
    /// asked for per sleep.
    pub fn doorbell(&mut self) -> Push {
        // Pairs with the fence in `Consumer::prepare_sleep`: either the
        // consumer sees our stamp, or we see its flag.
        fence(Ordering::SeqCst);
        let s = self.ring.word(W_SLEEPING);
        if s.load(Ordering::Relaxed) != 0 && s.swap(0, Ordering::Relaxed) != 0 {
            Push::Ring
        } else {
            Push::Quiet
        }
    }
}

/// The consumer half of a queue.  `Send`, not `Clone`.
///
/// It reads nothing of the producer's but the stamps (and, for
/// diagnostics, its count), and publishes its own count after every entry
/// it takes, so that the producer never sees the queue full longer than it
/// is.
pub struct Consumer {
    ring: Ring,
    dtx: Dtx,
}

impl Consumer {
    /// The largest entry a slot carries.
    pub fn capacity(&self) -> usize {
        self.ring.capacity
    }

    /// The number of slots.
    pub fn depth(&self) -> usize {
        self.ring.depth as usize
    }

    /// The sequence number of the next entry to take (the count taken).
    pub fn taken(&self) -> u64 {
        self.ring.next
    }

    /// The next entry is there.
    pub fn ready(&self) -> bool {
        let base = self.ring.slot(self.ring.next);
        self.ring.word(base).load(Ordering::Acquire) == self.ring.next + 1
    }

    /// Entries waiting, by the producer's count (diagnostics: the producer
    /// may write anything there; None when it is out of range).
    pub fn pending_hint(&self) -> Option<usize> {
        let p = self.ring.word(W_PRODUCED).load(Ordering::Relaxed);
        let d = p.wrapping_sub(self.ring.next);
        (d <= self.ring.depth).then_some(d as usize)
    }

    /// Takes the next entry, if there is one, copying it into `out`: its
    /// length, or None when the queue is empty.  An entry longer than a
    /// slot carries or than `out` is [`Corrupt`] (so `out` also bounds
    /// what the caller accepts; [`Consumer::capacity`] bytes take any
    /// valid entry).  The work is bounded by `out`'s length.
    pub fn try_pop(&mut self, out: &mut [u8]) -> Result<Option<usize>, Corrupt> {
        if self.dtx.corrupt {
            return Err(Corrupt);
        }
        let next = self.ring.next;
        let base = self.ring.slot(next);
        // Acquire: the body's loads below see what was written before the
        // stamp.
        if self.ring.word(base).load(Ordering::Acquire) != next + 1 {
            return Ok(None);
        }
        let len = (self.ring.word(base + 1).load(Ordering::Relaxed) & 0xffff_ffff) as usize;
        if len > self.ring.capacity || len > out.len() {
            return Err(Corrupt);
        }
        for (k, chunk) in out[..len].chunks_mut(8).enumerate() {
            let w = self.ring.word(base + 2 + k).load(Ordering::Relaxed).to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
        self.ring.next = next + 1;
        // Release: our loads of the slot happen before the producer, having
        // read this count, writes the slot again.
        self.ring.word(W_CONSUMED).store(next + 1, Ordering::Release);
        Ok(Some(len))
    }

    /// Before sleeping on the doorbell: sets the `sleeping` flag and looks
    /// once more for the next entry.  False: an entry is there (the flag is
    /// cleared again), so take it instead of sleeping.  True: sleep; the
    /// producer rings the doorbell after its next entry.  Call
    /// [`Consumer::wake_up`] after the sleep.
    pub fn prepare_sleep(&mut self) -> bool {
        let s = self.ring.word(W_SLEEPING);
        s.store(1, Ordering::Relaxed);
        // Pairs with the fence in `Producer::doorbell`.
        fence(Ordering::SeqCst);
        if self.ready() {
            s.store(0, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Arms the queue for one notification (`ibv_req_notify_cq`): of the
    /// next entry, or (`solicited_only`) of the next solicited or failed
    /// one; an arm for any entry stays one for any.  The caller polls the
    /// queue once more afterwards (entries written before the arm notify
    /// nothing, as on a NIC).
    pub fn arm(&mut self, solicited_only: bool) {
        let a = self.ring.word(W_ARMED);
        if solicited_only {
            let _ = a.compare_exchange(0, ARMED_SOLICITED, Ordering::Relaxed, Ordering::Relaxed);
        } else {
            a.store(ARMED_ANY, Ordering::Relaxed);
        }
        // Pairs with the fence in `Producer::take_arm`.
        fence(Ordering::SeqCst);
    }

    /// After a sleep (woken or not): clears the `sleeping` flag.
    pub fn wake_up(&mut self) {
        self.ring.word(W_SLEEPING).store(0, Ordering::Relaxed);
    }
}

/// Writes the doorbell: adds 1 to the eventfd `doorbell`.  A full counter
/// (`EAGAIN` on a non-blocking eventfd) already wakes its reader, so it
/// counts as done.
pub fn ring(doorbell: BorrowedFd<'_>) -> io::Result<()> {
    match rustix::io::write(doorbell, &1u64.to_ne_bytes()) {
        Ok(_) | Err(rustix::io::Errno::AGAIN) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Empties the doorbell (a non-blocking eventfd) after a wake-up.
pub fn drain(doorbell: BorrowedFd<'_>) -> io::Result<()> {
    let mut b = [0u8; 8];
    match rustix::io::read(doorbell, &mut b) {
        Ok(_) | Err(rustix::io::Errno::AGAIN) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        assert_eq!(file_bytes(1, 64), Some(4096 + 64));
        assert_eq!(file_bytes(65536, 4096), Some(4096 + (256 << 20)));
        for (d, s) in [(0, 64), (3, 64), (131072, 64), (1, 32), (1, 100), (1, 8192), (1, 0)] {
            assert_eq!(file_bytes(d, s), None, "{d} {s}");
            assert!(Slots::create(d, s).is_err());
        }
    }

    #[test]
    fn push_pop_and_wrap() {
        let (s, _fd) = Slots::create(4, 64).unwrap();
        let (mut p, mut c) = s.split();
        assert_eq!(p.capacity(), 48);
        let mut out = [0u8; 48];
        assert_eq!(c.try_pop(&mut out), Ok(None));
        for lap in 0..10u8 {
            for i in 0..4u8 {
                let body = vec![lap ^ i; (lap as usize * 5 + i as usize) % 49];
                assert_eq!(p.try_push(&body), Ok(Push::Quiet));
            }
            assert_eq!(p.try_push(&[1]), Err(PushError::Full));
            assert_eq!(c.pending_hint(), Some(4));
            for i in 0..4u8 {
                let n = (lap as usize * 5 + i as usize) % 49;
                assert_eq!(c.try_pop(&mut out), Ok(Some(n)));
                assert!(out[..n].iter().all(|&b| b == lap ^ i));
            }
            assert_eq!(c.try_pop(&mut out), Ok(None));
        }
        assert_eq!(p.try_push(&[0; 49]), Err(PushError::TooLong));
        // An entry longer than the caller's buffer is refused, and stays.
        assert_eq!(p.try_push(&[7; 20]), Ok(Push::Quiet));
        assert_eq!(c.try_pop(&mut out[..10]), Err(Corrupt));
        assert_eq!(c.try_pop(&mut out), Ok(Some(20)));
    }

    #[test]
    fn consumer_counts_are_checked() {
        let (s, _fd) = Slots::create(2, 64).unwrap();
        let raw = s.scribbler();
        let set = |i, v| raw.store(i, v);
        let (mut p, mut c) = s.split();
        let mut out = [0u8; 48];
        assert_eq!(p.try_push(&[1]), Ok(Push::Quiet));
        assert_eq!(p.try_push(&[2]), Ok(Push::Quiet));
        // Ahead of what was produced.
        set(W_CONSUMED, 3);
        assert_eq!(p.try_push(&[3]), Err(PushError::Corrupt));
        set(W_CONSUMED, 1);
        assert_eq!(p.try_push(&[3]), Ok(Push::Quiet));
        // Behind what the producer already knew.
        set(W_CONSUMED, 0);
        assert_eq!(p.try_push(&[4]), Err(PushError::Corrupt));
        set(W_CONSUMED, u64::MAX);
        assert_eq!(p.try_push(&[4]), Err(PushError::Corrupt));
        set(W_CONSUMED, 1);
        assert_eq!(p.try_push(&[4]), Err(PushError::Full));
        assert_eq!(p.len(), 2);
        // The producer count is only a hint: out of range, none.
        assert_eq!(c.pending_hint(), None);
        set(W_PRODUCED, 1);
        assert_eq!(c.pending_hint(), Some(1));
        set(W_PRODUCED, u64::MAX);
        assert_eq!(c.pending_hint(), None);
        // The consumer said it took entry 0, and the producer reused its
        // slot: the consumer finds no entry 0 (its stamp is 3's).
        assert_eq!(c.try_pop(&mut out), Ok(None));
    }

    #[test]
    fn lengths_are_checked() {
        let (s, _fd) = Slots::create(2, 64).unwrap();
        let raw = s.scribbler();
        let (mut p, mut c) = s.split();
        let mut out = [0u8; 48];
        assert_eq!(p.try_push(&[1; 48]), Ok(Push::Quiet));
        assert_eq!(p.try_push(&[2; 48]), Ok(Push::Quiet));
        assert_eq!(c.try_pop(&mut out), Ok(Some(48)));
        // A length past the slot is corrupt, whatever the buffer.
        for bad in [49, 1 << 31, u32::MAX as u64] {
            raw.store(HEADER_WORDS + 8 + 1, bad);
            assert_eq!(c.try_pop(&mut [0u8; 4096]), Err(Corrupt));
        }
        // The high half of the length word is not looked at.
        raw.store(HEADER_WORDS + 8 + 1, 0xffff_ffff_0000_0030);
        assert_eq!(c.try_pop(&mut out), Ok(Some(48)));
        assert_eq!(out, [2; 48]);
    }

    #[test]
    fn doorbell_flag() {
        let (s, _fd) = Slots::create(8, 64).unwrap();
        let (mut p, mut c) = s.split();
        assert!(c.prepare_sleep());
        assert_eq!(p.try_push(&[1]), Ok(Push::Ring));
        // Asked once per sleep.
        assert_eq!(p.try_push(&[2]), Ok(Push::Quiet));
        c.wake_up();
        // Something there: no sleep.
        assert!(!c.prepare_sleep());
        assert_eq!(p.try_push(&[3]), Ok(Push::Quiet));
        let mut out = [0u8; 48];
        while c.try_pop(&mut out).unwrap().is_some() {}
        assert!(c.prepare_sleep());
        p.try_push_quiet(&[4]).unwrap();
        p.try_push_quiet(&[5]).unwrap();
        assert_eq!(p.doorbell(), Push::Ring);
        assert_eq!(p.doorbell(), Push::Quiet);
    }

    /// A sealed (or not) memfd of `bytes` bytes.
    fn memfd(bytes: u64, seals: rustix::fs::SealFlags) -> OwnedFd {
        use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags};
        let fd = memfd_create(c"t", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
        ftruncate(&fd, bytes).unwrap();
        if !seals.is_empty() {
            fcntl_add_seals(&fd, seals).unwrap();
        }
        fd
    }

    #[test]
    fn attach_refuses() {
        use rustix::fs::SealFlags;
        let all = SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL;
        let good = 4096 + 16 * 128;
        assert!(Slots::attach(memfd(good, all).as_fd(), 16, 128).is_ok());
        let e = Slots::attach(memfd(good, SealFlags::empty()).as_fd(), 16, 128);
        assert!(matches!(e, Err(AttachError::Unsealed)), "{e:?}");
        let e = Slots::attach(memfd(good, SealFlags::SHRINK | SealFlags::GROW).as_fd(), 16, 128);
        assert!(matches!(e, Err(AttachError::Unsealed)), "{e:?}");
        let e = Slots::attach(memfd(good, SealFlags::GROW | SealFlags::SEAL).as_fd(), 16, 128);
        assert!(matches!(e, Err(AttachError::Unsealed)), "{e:?}");
        // A memfd made without ALLOW_SEALING can never be sealed.
        let plain = rustix::fs::memfd_create(c"t", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&plain, good).unwrap();
        assert!(matches!(
            Slots::attach(plain.as_fd(), 16, 128),
            Err(AttachError::Unsealed)
        ));
        for bytes in [good - 64, good + 64, 0] {
            let e = Slots::attach(memfd(bytes, all).as_fd(), 16, 128);
            assert!(matches!(e, Err(AttachError::Size { .. })), "{e:?}");
        }
        let f = memfd(good, all);
        for (d, s) in [(0, 128), (3, 128), (131072, 128), (16, 32), (16, 100), (16, 8192)] {
            assert!(matches!(Slots::attach(f.as_fd(), d, s), Err(AttachError::Geometry)));
        }
        // The right size for another geometry is still the wrong size.
        assert!(matches!(
            Slots::attach(f.as_fd(), 32, 128),
            Err(AttachError::Size { .. })
        ));
        // Not shared memory: a pipe, a regular file elsewhere (procfs).
        let other = std::fs::File::open("/proc/self/status").unwrap();
        assert!(matches!(
            Slots::attach(other.as_fd(), 16, 128),
            Err(AttachError::NotAFile)
        ));
        let (r, _w) = rustix::pipe::pipe().unwrap();
        assert!(matches!(Slots::attach(r.as_fd(), 16, 128), Err(AttachError::NotAFile)));
        let e = Slots::attach(r.as_fd(), 16, 128).unwrap_err().to_string();
        assert!(e.starts_with("work queue:"), "{e}");
    }

    #[test]
    fn attached_sides_share_the_queue() {
        let (s, fd) = Slots::create(16, 128).unwrap();
        let mut p = s.into_producer();
        let mut c = Slots::attach(fd.as_fd(), 16, 128).unwrap().into_consumer();
        for i in 0..100u32 {
            assert_eq!(p.try_push(&i.to_le_bytes()), Ok(Push::Quiet));
            let mut out = [0u8; 112];
            assert_eq!(c.try_pop(&mut out), Ok(Some(4)));
            assert_eq!(out[..4], i.to_le_bytes());
        }
    }
}

// ----- the direct-transmit window of a send queue ---------------------------

/// The window's states (bits 24..32 of its word; bits 0..24 are the next
/// PSN, bits 32..64 the consumer's generation of the window).
const DTX_CLOSED: u64 = 0;
const DTX_OPEN: u64 = 1;
const DTX_TAKEN: u64 = 2;

fn dtx_word(state: u64, psn: u32, gen: u32) -> u64 {
    (gen as u64) << 32 | state << 24 | (psn & 0xff_ffff) as u64
}

fn dtx_state(w: u64) -> u64 {
    (w >> 24) & 0xff
}

/// Where a send queue's QP sends (RC, connected): what a client needs to
/// transmit a request's only packet itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DtxPath {
    /// Our address and the peer's.
    pub src: std::net::IpAddr,
    pub dst: std::net::IpAddr,
    /// The peer QP.
    pub dqpn: u32,
    /// The path MTU (bytes).
    pub pmtu: u32,
    /// The interface (an IPv6 link-local address's scope).
    pub ifindex: u32,
}

fn ip_words(a: &std::net::IpAddr) -> [u64; 2] {
    let b = match a {
        std::net::IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
        std::net::IpAddr::V6(v) => v.octets(),
    };
    let (x, y) = b.split_at(8);
    [
        u64::from_le_bytes(x.try_into().unwrap_or_default()),
        u64::from_le_bytes(y.try_into().unwrap_or_default()),
    ]
}

fn words_ip(w: [u64; 2]) -> std::net::IpAddr {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&w[0].to_le_bytes());
    b[8..].copy_from_slice(&w[1].to_le_bytes());
    std::net::IpAddr::V6(std::net::Ipv6Addr::from(b)).to_canonical()
}

/// The consumer's side of the window.
#[derive(Default)]
struct Dtx {
    /// The word it opened the window with (None: closed).
    open: Option<u64>,
    /// The PSN the producer took at the last close (its request's only
    /// packet is on the wire) and when it sent it, until the next entry is
    /// taken.
    taken: Option<(u32, u64)>,
    /// When the window was opened (CLOCK_MONOTONIC ns).
    opened_at: u64,
    /// The window's generation (ours, not read from the mapping).
    gen: u32,
    /// The producer wrote the word in a way the protocol does not allow.
    corrupt: bool,
}

/// The window as the producer found it open: its word and path.
#[derive(Debug, Clone, Copy)]
pub struct DtxOffer {
    word: u64,
    /// The PSN the request would take.
    pub psn: u32,
    pub path: DtxPath,
}

impl Producer {
    /// The direct-transmit window, if the consumer opened it and every
    /// entry written was taken (an entry still in the queue has no PSN
    /// yet; the request would pass it): what [`Producer::dtx_claim`]
    /// takes.
    pub fn dtx_offer(&self) -> Option<DtxOffer> {
        if self.unconsumed() != 0 {
            return None;
        }
        // Acquire: the path written before the consumer opened it.
        let w = self.ring.word(W_DTX).load(Ordering::Acquire);
        if dtx_state(w) != DTX_OPEN {
            return None;
        }
        let p = |i| self.ring.word(W_DTX_PATH + i).load(Ordering::Relaxed);
        let path = DtxPath {
            src: words_ip([p(0), p(1)]),
            dst: words_ip([p(2), p(3)]),
            dqpn: (p(4) & 0xff_ffff) as u32,
            pmtu: (p(4) >> 32) as u32,
            ifindex: p(5) as u32,
        };
        Some(DtxOffer {
            word: w,
            psn: (w & 0xff_ffff) as u32,
            path,
        })
    }

    /// Takes the window `o` (its PSN is the caller's, for one packet): false
    /// when it changed since it was offered (closed, or opened again with
    /// another path).  The caller then writes the request's entry
    /// ([`Producer::try_push_quiet`], marked direct) before it sends the
    /// packet, and rings no doorbell for it.
    pub fn dtx_claim(&mut self, o: &DtxOffer) -> bool {
        // (Published by the swap below, read only once it took.)
        self.ring.word(W_DTX_SENT).store(crate::now_ns(), Ordering::Relaxed);
        let psn = (o.psn + 1) & 0xff_ffff;
        let taken = dtx_word(DTX_TAKEN, psn, (o.word >> 32) as u32);
        (self.ring.word(W_DTX))
            .compare_exchange(o.word, taken, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
}

impl Consumer {
    /// Opens the direct-transmit window while the consumer sleeps: the
    /// next request may take PSN `psn` and send itself along `path`.  Only
    /// when the queue is empty and no taken window waits for its entry (a
    /// closed window stays closed otherwise).
    pub fn dtx_open(&mut self, psn: u32, path: &DtxPath) {
        if self.dtx.open.is_some() || self.dtx.taken.is_some() || self.ready() {
            return;
        }
        self.dtx.gen = self.dtx.gen.wrapping_add(1);
        let [s0, s1] = ip_words(&path.src);
        let [d0, d1] = ip_words(&path.dst);
        let words = [
            s0,
            s1,
            d0,
            d1,
            (path.dqpn & 0xff_ffff) as u64 | (path.pmtu as u64) << 32,
            path.ifindex as u64,
        ];
        for (i, v) in words.into_iter().enumerate() {
            self.ring.word(W_DTX_PATH + i).store(v, Ordering::Relaxed);
        }
        let w = dtx_word(DTX_OPEN, psn, self.dtx.gen);
        self.dtx.opened_at = crate::now_ns();
        // Release: the path before the word that offers it.
        self.ring.word(W_DTX).store(w, Ordering::Release);
        self.dtx.open = Some(w);
    }

    /// Closes the window (after the sleep, before anything else of the
    /// queue's QP is done): whether the producer took it
    /// ([`Consumer::dtx_taken`] then gives its PSN).  A word the protocol
    /// does not allow makes the queue [`Corrupt`] for its next
    /// [`Consumer::try_pop`].
    pub fn dtx_close(&mut self) -> bool {
        let Some(w) = self.dtx.open.take() else {
            return false;
        };
        let closed = dtx_word(DTX_CLOSED, 0, self.dtx.gen);
        let old = self.ring.word(W_DTX).swap(closed, Ordering::AcqRel);
        let psn = (w & 0xff_ffff) as u32;
        if old == w {
            false
        } else if old == dtx_word(DTX_TAKEN, (psn + 1) & 0xff_ffff, self.dtx.gen) {
            // (Its time as the producer wrote it, within the window's.)
            let sent = self.ring.word(W_DTX_SENT).load(Ordering::Relaxed);
            let now = crate::now_ns();
            self.dtx.taken = Some((psn, sent.clamp(self.dtx.opened_at, now.max(self.dtx.opened_at))));
            true
        } else {
            self.dtx.corrupt = true;
            false
        }
    }

    /// The PSN the producer took with the window and when it sent the
    /// packet (CLOCK_MONOTONIC ns, between the window's opening and its
    /// closing), once: for the next entry taken, when that entry is marked
    /// direct.  (Any other entry takes its PSN as usual: nothing was sent
    /// with it.)
    pub fn dtx_taken(&mut self) -> Option<(u32, u64)> {
        self.dtx.taken.take()
    }

    /// A taken window waits for its entry.
    pub fn dtx_pending(&self) -> bool {
        self.dtx.taken.is_some()
    }
}
