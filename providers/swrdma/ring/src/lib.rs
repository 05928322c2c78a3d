//! Shared-memory message rings between two contexts (a "link").
//!
//! One link = one memfd holding two single-producer/single-consumer byte
//! rings: the request ring (initiator -> target) and the response ring
//! (target -> initiator).  In a process, the link's `tx_lock` makes one
//! thread at a time the producer of its outgoing ring, `rx_lock` one the
//! consumer of its incoming ring.  Responses never generate messages and
//! never wait for room (they queue in the link's backlog, see `Resp`), so
//! a full ring cannot deadlock the pair.  Everything read from a ring comes
//! from another process and is validated before use (lengths, offsets, a
//! private copy of the header); memory is only ever touched by the process
//! that owns it.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

pub mod barrier;
mod turn;
pub use turn::{TurnGuard, TurnLock};

pub const RING_SIZE: usize = 4 << 20; // data bytes per ring (power of two)
pub const RING_HDR: usize = 4096;
pub const LINK_BYTES: usize = 2 * (RING_HDR + RING_SIZE);
pub const MAX_CHUNK: usize = 64 * 1024; // payload bytes per message
pub const MSG_HDR: usize = std::mem::size_of::<Msg>();

/// A producer that finds its ring empty at or past this position starts
/// again at the beginning (a padding record fills the rest): traffic that
/// never has much in flight keeps touching the same first pages, so a
/// link's memory (mapped without prefaulting) grows only with what is
/// actually in flight.  Larger than the largest record plus its header,
/// so that an empty ring always has room for padding and the record.
pub const REWIND_AT: usize = 128 * 1024;
const _: () = assert!(REWIND_AT > MSG_HDR + MAX_CHUNK && REWIND_AT < RING_SIZE / 4);

/// The front of a ring's data area that records placed from before
/// `REWIND_AT` can reach (page-aligned): the working set of traffic with
/// little in flight.  [`Ring::trim`] gives back what lies beyond.
pub const RING_KEEP: usize = (REWIND_AT + MSG_HDR + MAX_CHUNK + 4095) & !4095;
const _: () = assert!(RING_KEEP < RING_SIZE);

/// At most this many links exist in a process at once (both directions,
/// every context): a further one is refused (`Link::new` gives None; the
/// connecting side sees its handshake refused).  With `LINK_BYTES` each,
/// the rings of a process never hold more than `MAX_LINKS_PER_PROCESS *
/// LINK_BYTES` bytes of shared memory.
pub const MAX_LINKS_PER_PROCESS: usize = 1024;
static LIVE_LINKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The links of this process that exist now.
pub fn live_links() -> usize {
    LIVE_LINKS.load(Ordering::Relaxed)
}

// Message kinds.
pub const K_PAD: u16 = 0;
pub const K_SEND: u16 = 1;
pub const K_WRITE: u16 = 2;
pub const K_READ: u16 = 3;
pub const K_CAS: u16 = 4;
pub const K_FAA: u16 = 5;
pub const K_AWRITE: u16 = 6; // 8-byte atomic write (value in `swap`)
pub const K_ACK: u16 = 16;
pub const K_READ_RESP: u16 = 17;
pub const K_ATOMIC_RESP: u16 = 18;

// Message flags.
pub const F_FIRST: u16 = 1;
pub const F_LAST: u16 = 2;
pub const F_IMM: u16 = 4;
pub const F_SOLICITED: u16 = 8;
pub const F_INV: u16 = 16; // SEND_WITH_INV: `imm` is the rkey to invalidate
/// The second half of the header (`cmp` .. `dgid`) is meaningful: UD and
/// XRC messages (`qkey`, GIDs, `srqn`); atomics carry their values there
/// whatever the flag says.
pub const F_EXT: u16 = 32;
/// The request comes from a UD QP (a datagram) or from a UC QP; neither
/// flag: from an RC (or XRC) QP.  A QP takes only requests of its own
/// transport, as the opcode's transport bits decide on the wire (rxe drops
/// a UD SEND at an RC QP's number).
pub const F_UD: u16 = 64;
pub const F_UC: u16 = 128;
/// The transport bits of `flags`.
pub const F_TRANSPORT: u16 = F_UD | F_UC;
/// A request record (SEND or WRITE) whose payload the requester could not
/// read (its registered source unmapped since): it carries none and ends
/// the message, which the responder drops whole, answering nothing (the
/// requester completed the request with `LOC_PROT_ERR`).  Fragments before
/// it were delivered as usual.
pub const F_ABORT: u16 = 256;
/// (Requests of a reliable QP, on the message's records.)  The requester
/// waits for this message's acknowledgment — a signaled request, or its
/// send queue is filling — so the responder writes it at once, before the
/// receive completes.  Without it a successful SEND or WRITE is not
/// answered at all: the answer to a later request of the QP covers it, as
/// an ACK's PSN covers the packets before it.  Failures are always
/// answered at once.
pub const F_ACKREQ: u16 = 512;
/// (Ring records only: never in a `Msg` handed to or taken from the ring
/// functions.)  The record is short: one cache line (see [`Form`]).
pub const F_SHORT: u16 = 1024;

/// The header of every message (128 bytes, 64-byte multiple).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Msg {
    pub len: u32, // bytes of this record (header + payload, 64-aligned)
    pub kind: u16,
    pub flags: u16,
    pub dst_qpn: u32,
    pub src_qpn: u32,
    pub seq: u64,
    pub raddr: u64,
    pub rkey: u32,
    pub imm: u32,
    pub total: u64,
    pub off: u64,
    pub plen: u32,
    pub status: u32,
    pub cmp: u64,
    pub swap: u64,
    pub qkey: u32,
    pub srqn: u32,
    pub sgid: [u8; 16],
    pub dgid: [u8; 16],
    pub _r: u64,
}

impl Msg {
    /// The initiator's context id is not carried; pending requests are
    /// answered on the link they came from, recorded in `_r`.
    pub fn src_ctx(&self) -> u32 {
        self._r as u32
    }

    /// A UD send carries its address handle's traffic class and hop limit
    /// for the receiver's GRH in `rkey`, which a UD send has no use for.
    pub fn set_ud_grh(&mut self, tclass: u8, hop: u8) {
        self.rkey = UD_GRH_FIELDS | (tclass as u32) << 8 | hop as u32;
    }

    /// The traffic class and hop limit of a UD send (`set_ud_grh`); none
    /// set (an AH without a GRH): class 0, hop limit 64.
    pub fn ud_grh(&self) -> (u8, u8) {
        if self.rkey & UD_GRH_FIELDS != 0 {
            ((self.rkey >> 8) as u8, self.rkey as u8)
        } else {
            (0, 64)
        }
    }
}

/// Marks a UD send's `rkey` as carrying the GRH fields.
const UD_GRH_FIELDS: u32 = 1 << 31;
const _: () = assert!(std::mem::size_of::<Msg>() == 128);

/// How a message is laid out in a ring record.  Every record starts with
/// its **stamp**, a word the producer writes last (`Ring::publish`): the
/// consumer waits on the stamp of the record at its `tail` and reads
/// nothing else of the producer's, so a message that fits one cache line
/// is one line moved from the producer's CPU to the consumer's.
///
/// * `Short` (64 bytes, flag [`F_SHORT`]): a SEND of at most [`SHORT_MAX`]
///   bytes in one record, or an ACK/NAK, of an RC/UC QP (no `F_EXT`):
///
///   | bytes | field |
///   |---|---|
///   | 0..8 | stamp |
///   | 8..12 | `len` (64) |
///   | 12..14, 14..16 | `kind`, `flags` |
///   | 16..20, 20..24 | `dst_qpn`, `src_qpn` |
///   | 24..32 | `seq` |
///   | 32..36, 36..40 | `imm`, `status` |
///   | 40..44 | `plen` (`total` = `plen`, `off` = 0) |
///   | 44..64 | the payload |
///
/// * `Long` (a 128-byte header, then the payload from byte 128): every
///   other message.  Its first line:
///
///   | bytes | field |
///   |---|---|
///   | 0..8 | stamp |
///   | 8..16 | `len`, `kind`, `flags` |
///   | 16..24 | `dst_qpn`, `src_qpn` |
///   | 24..32, 32..40 | `seq`, `raddr` |
///   | 40..48 | `rkey`, `imm` |
///   | 48..56 | `total`, `off` (32 bits each: a message is at most 2 GiB) |
///   | 56..64 | `plen`, `status` |
///
///   and its second: `cmp`, `swap`, `qkey` + `srqn`, `sgid`, `dgid`, `_r`
///   (read only for `F_EXT` messages and atomics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Short,
    Long,
}

/// The most payload a short record carries.
pub const SHORT_MAX: usize = 20;
const SHORT_PAYLOAD: usize = 44;

impl Form {
    /// The form of message `m` with `plen` payload bytes.
    pub fn of(m: &Msg, plen: usize) -> Form {
        let single = m.off == 0 && m.total == plen as u64;
        let kind = m.kind == K_ACK || (m.kind == K_SEND && single);
        if plen <= SHORT_MAX && kind && m.flags & (F_EXT | F_SHORT) == 0 {
            Form::Short
        } else {
            Form::Long
        }
    }

    /// The record's length for `plen` payload bytes (64-aligned).
    pub fn record_len(self, plen: usize) -> usize {
        match self {
            Form::Short => 64,
            Form::Long => align64(MSG_HDR + plen),
        }
    }

    /// Where the payload starts in the record.
    pub fn payload_at(self) -> usize {
        match self {
            Form::Short => SHORT_PAYLOAD,
            Form::Long => MSG_HDR,
        }
    }
}

fn w_lkf(m: &Msg, flags: u16) -> u64 {
    m.len as u64 | (m.kind as u64) << 32 | (flags as u64) << 48
}

fn w_pair(a: u32, b: u32) -> u64 {
    a as u64 | (b as u64) << 32
}

/// Writes header `m` as a record of form `f` at `p`: everything but the
/// stamp (written by [`Ring::publish`]) and the payload.
///
/// # Safety
/// `p` is 64-aligned writable space of `f.record_len(m.plen)` bytes
/// reserved in a ring by its only producer, which no one reads before it
/// is published.
pub unsafe fn write_header(p: *mut u8, m: &Msg, f: Form) {
    let w = p as *mut u64;
    // SAFETY: the words written lie in the record's first line (Short) or
    // its 128-byte header (Long), inside the reserved space (the contract).
    unsafe {
        match f {
            Form::Short => {
                w.add(1).write(w_lkf(m, m.flags | F_SHORT));
                w.add(2).write(w_pair(m.dst_qpn, m.src_qpn));
                w.add(3).write(m.seq);
                w.add(4).write(w_pair(m.imm, m.status));
                (p.add(40) as *mut u32).write(m.plen);
            }
            Form::Long => {
                debug_assert!(m.total <= u32::MAX as u64 && m.off <= u32::MAX as u64);
                let line = [
                    0,
                    w_lkf(m, m.flags & !F_SHORT),
                    w_pair(m.dst_qpn, m.src_qpn),
                    m.seq,
                    m.raddr,
                    w_pair(m.rkey, m.imm),
                    w_pair(m.total as u32, m.off as u32),
                    w_pair(m.plen, m.status),
                ];
                // (The stamp's word is left as it is: the consumer may be
                // waiting on it.)
                for (i, v) in line.iter().enumerate().skip(1) {
                    w.add(i).write(*v);
                }
                let mut ext = [0u64; 8];
                ext[0] = m.cmp;
                ext[1] = m.swap;
                ext[2] = w_pair(m.qkey, m.srqn);
                ext[3] = u64::from_ne_bytes(m.sgid[..8].try_into().unwrap_or_default());
                ext[4] = u64::from_ne_bytes(m.sgid[8..].try_into().unwrap_or_default());
                ext[5] = u64::from_ne_bytes(m.dgid[..8].try_into().unwrap_or_default());
                ext[6] = u64::from_ne_bytes(m.dgid[8..].try_into().unwrap_or_default());
                ext[7] = m._r;
                (w.add(8) as *mut [u64; 8]).write(ext);
            }
        }
    }
}

/// A private copy of the header of record `p` of `len` bytes (the peer can
/// still write the shared one after it was validated) and where its
/// payload is: `m.plen` bytes there, inside the record.  The second line
/// of a long header is read only when the message uses it (`F_EXT`,
/// atomics): a line written by the other CPU costs a transfer.  Unread
/// fields are 0.  Err: the record is malformed (the link must be given up).
///
/// # Safety
/// `p` is a record returned by [`Ring::peek`] with its `len`, in a ring
/// that stays mapped during the call.  The bytes may be changed
/// concurrently by the peer: they are read with volatile loads and every
/// value is checked or acceptable (`Msg` is plain integers).
pub unsafe fn read_record(p: *const u8, len: usize) -> Result<(Msg, *const u8), Corrupt> {
    // SAFETY: `peek` checked that the record's `len` >= 64 bytes lie inside
    // the data area, 64-aligned (the contract).
    let line = unsafe { std::ptr::read_volatile(p as *const [u64; 8]) };
    let lo = |v: u64| v as u32;
    let hi = |v: u64| (v >> 32) as u32;
    let flags = (line[1] >> 48) as u16;
    let mut m = Msg {
        len: lo(line[1]),
        kind: (line[1] >> 32) as u16,
        flags: flags & !F_SHORT,
        dst_qpn: lo(line[2]),
        src_qpn: hi(line[2]),
        seq: line[3],
        ..Default::default()
    };
    if flags & F_SHORT != 0 {
        let plen = lo(line[5]);
        if len != 64 || plen as usize > SHORT_MAX {
            return Err(Corrupt);
        }
        m.imm = lo(line[4]);
        m.status = hi(line[4]);
        m.plen = plen;
        m.total = plen as u64;
        return Ok((m, p.wrapping_add(SHORT_PAYLOAD)));
    }
    m.raddr = line[4];
    m.rkey = lo(line[5]);
    m.imm = hi(line[5]);
    m.total = lo(line[6]) as u64;
    m.off = hi(line[6]) as u64;
    m.plen = lo(line[7]);
    m.status = hi(line[7]);
    if len < MSG_HDR || m.plen as usize > len - MSG_HDR {
        return Err(Corrupt);
    }
    if m.flags & F_EXT != 0 || matches!(m.kind, K_CAS | K_FAA | K_AWRITE | K_ATOMIC_RESP) {
        // SAFETY: the record's second 64 bytes (`len` >= MSG_HDR = 128).
        let ext = unsafe { std::ptr::read_volatile((p as *const [u64; 8]).add(1)) };
        m.cmp = ext[0];
        m.swap = ext[1];
        m.qkey = lo(ext[2]);
        m.srqn = hi(ext[2]);
        m.sgid[..8].copy_from_slice(&ext[3].to_ne_bytes());
        m.sgid[8..].copy_from_slice(&ext[4].to_ne_bytes());
        m.dgid[..8].copy_from_slice(&ext[5].to_ne_bytes());
        m.dgid[8..].copy_from_slice(&ext[6].to_ne_bytes());
    }
    Ok((m, p.wrapping_add(MSG_HDR)))
}

/// Fills the stamp words of a new link's file (its two rings' salts,
/// read by each side when it maps the link): random, so that no stale
/// bytes in a ring (an old payload an application chose) can look like
/// the next record's stamp.  Called once by the side that creates the
/// file, before it is handed to the peer.
pub fn seed_link(memfd: BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    let mut salt = [0u64; 2];
    // SAFETY: getrandom writes at most the 16 bytes of `salt`.
    let got = unsafe { libc::getrandom(salt.as_mut_ptr() as *mut libc::c_void, 16, 0) };
    if got != 16 {
        return false;
    }
    for (i, s) in salt.iter().enumerate() {
        let at = (i * (RING_HDR + RING_SIZE) + std::mem::offset_of!(RingHdr, salt)) as libc::off_t;
        let b = (s | 1 << 63).to_ne_bytes();
        // SAFETY: writes the 8 bytes of `b` into the file at `at`.
        if unsafe { libc::pwrite(memfd.as_raw_fd(), b.as_ptr() as *const libc::c_void, 8, at) } != 8 {
            return false;
        }
    }
    true
}

/// The peer wrote something into a ring that breaks the protocol (the
/// link must be given up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

#[repr(C)]
struct RingHdr {
    head: AtomicU64,
    _p1: [u8; 56],
    tail: AtomicU64,
    _p2: [u8; 56],
    /// Set by the consumer's thread before it sleeps: producers kick it.
    sleeping: AtomicU32,
    /// Set by a producer with responses it could not place: the consumer
    /// kicks it once it has made room.
    space_wanted: AtomicU32,
    /// Set by the producer's side while it accesses the consumer's memory
    /// directly (the MR key; 0: none): the consumer's deregistration waits
    /// for it to clear.
    direct: AtomicU64,
    _p3: [u8; 48],
    /// Set by the producer of a response ring while its backlog (process
    /// memory, lost if the process dies) holds an answer that is not a
    /// plain ACK (a NAK, an error, a READ or atomic response): the
    /// requester must then not take the requests the responder consumed
    /// as acknowledged (`Ring::answers_kept`, read when the link died).
    answers_kept: AtomicU32,
    /// Set (for good) by the producer of a response ring once its side
    /// consumed a reliable request that it neither delivered nor answered
    /// (one of another transport than the QP's, dropped as rxe drops it):
    /// consumption then no longer means delivery (`Ring::dropped`, read by
    /// the requester of a dead link).
    dropped: AtomicU32,
    /// The ring's stamps are positions mixed with this (`seed_link`; read
    /// once by each side when it maps the link).
    salt: AtomicU64,
}

/// One ring of a mapped link: a `RingHdr` followed by `RING_SIZE` data
/// bytes.  Invariant (from [`Ring::at`]): both pointers stay valid while
/// the `Ring` exists — a link's rings live inside the `Link` that owns the
/// mapping and are only lent out by reference.
pub struct Ring {
    hdr: *const RingHdr,
    data: *mut u8,
    /// (Producer side, this process only.)  A record or padding was
    /// placed beyond `RING_KEEP` since the last `trim`.
    far: AtomicBool,
    /// (Producer side, this process only.)  The consumer's `tail` as the
    /// producer last read it (see `try_reserve`).
    tail_seen: AtomicU64,
    /// The header's `salt` as mapped (the peer cannot change it later).
    salt: u64,
}
// SAFETY: the pointers refer to a shared mapping that outlives the `Ring`
// (see the type's invariant), not to thread-local state.  Through `&Ring`
// the header is only touched with atomics; the data area only through the
// `unsafe` producer/consumer functions, whose contracts require one
// producer and one consumer at a time (the link's `tx_lock`/`rx_lock`),
// which is what makes concurrent use from several threads sound.
unsafe impl Send for Ring {}
// SAFETY: as for `Send`: shared access is atomics on the header plus the
// single-producer/single-consumer discipline on the data the `unsafe`
// methods require of their callers.
unsafe impl Sync for Ring {}

/// How much of the next record the consumer asks the cache for at once
/// (`peek`): the header and a payload of up to two cache lines.
const PREFETCH_BYTES: usize = MSG_HDR + 128;

/// Asks for the cache line at `p` (a hint: no fault, no effect on what
/// the program reads).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint to the cache: it never faults and
    // reads nothing the program sees, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above (PRFM is a hint).
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

pub fn align64(n: usize) -> usize {
    (n + 63) & !63
}

impl Ring {
    /// # Safety
    /// `base` is the start of `RING_HDR + RING_SIZE` bytes of readable and
    /// writable memory, page-aligned (a shared mapping), that stay mapped
    /// for as long as the returned `Ring` is used.
    unsafe fn at(base: *mut u8) -> Ring {
        let hdr = base as *const RingHdr;
        Ring {
            hdr,
            // SAFETY: `RING_HDR` is inside the region the caller vouches for.
            data: unsafe { base.add(RING_HDR) },
            far: AtomicBool::new(false),
            tail_seen: AtomicU64::new(0),
            // SAFETY: the header is valid (the contract); atomics.
            salt: unsafe { (*hdr).salt.load(Ordering::Relaxed) },
        }
    }

    /// The stamp of the record at position `pos`.
    fn stamp(&self, pos: u64) -> u64 {
        pos.wrapping_add(1) ^ self.salt
    }

    /// The stamp word of the record at position `pos`.
    fn stamp_word(&self, pos: u64) -> &AtomicU64 {
        // SAFETY: the offset is masked into the data area and 8-aligned
        // (64 for any valid position); the ring is mapped for `self`'s
        // life; the word is only ever accessed atomically.
        unsafe { &*(self.data.add(pos as usize & (RING_SIZE - 1) & !7) as *const AtomicU64) }
    }
    fn h(&self) -> &RingHdr {
        // SAFETY: `hdr` is page-aligned and valid for the `Ring`'s life (the
        // type's invariant); `RingHdr` is atomics and padding, so a shared
        // reference is sound even while the peer process writes it.
        unsafe { &*self.hdr }
    }

    /// Producer: room for one record of `need` bytes (64-aligned, at most
    /// RING_SIZE/4), or None when the ring is too full.  Returns the write
    /// pointer and the head to commit.
    ///
    /// # Safety
    /// The caller is the ring's only producer until it commits (it holds
    /// the link's `tx_lock`): the padding record and the returned space are
    /// written without synchronisation.  `need` is a multiple of 64, at
    /// least `MSG_HDR` and at most `RING_SIZE / 4`.
    pub unsafe fn try_reserve(&self, need: usize) -> Option<(*mut u8, u64)> {
        let head = self.h().head.load(Ordering::Relaxed);
        let pos = head as usize & (RING_SIZE - 1);
        let contig = RING_SIZE - pos;
        // Wrap now when the record does not fit before the end, or when the
        // ring is empty and we are past `REWIND_AT` (see there).  The header
        // is shared: a peer that scribbles on it gets a link that looks full
        // (as if it stopped consuming), never a write outside the data area
        // (records are 64-aligned, and the padding record needs 8 bytes).
        let place = |tail: u64| {
            let wrap = contig < need || (head == tail && pos >= REWIND_AT);
            let total = if wrap { contig + need } else { need };
            let fits = head.is_multiple_of(64)
                && head.wrapping_sub(tail) <= RING_SIZE as u64
                && RING_SIZE as u64 - head.wrapping_sub(tail) >= total as u64;
            (wrap, fits)
        };
        // The consumer's tail as last read: it only ever grows, so room
        // found with it is there.  The shared one is read when that is not
        // enough, and past `REWIND_AT` (whether the ring is empty decides
        // the rewind): the consumer keeps its tail's cache line to itself
        // while little is in flight, so neither side waits for the other's
        // cache at each record (a producer that reads it at every record
        // makes the consumer's next store to it, and the fence after it in
        // `room_made`, wait for the line to come back: a cache-line
        // transfer each way per message, on the message's path).
        let mut tail = self.tail_seen.load(Ordering::Relaxed);
        let (mut wrap, mut fits) = place(tail);
        if !fits || pos >= REWIND_AT {
            tail = self.h().tail.load(Ordering::Acquire);
            self.tail_seen.store(tail, Ordering::Relaxed);
            (wrap, fits) = place(tail);
        }
        if !fits {
            return None;
        }
        let mut h = head;
        if wrap {
            // The padding record fills the rest of the ring, which may be
            // as little as 64 bytes: less than a `Msg`.  Only its stamp,
            // `len` and `kind` (the first 16 bytes) are written, never a
            // whole header:
            // that would run past the end of the data area (into the other
            // ring's header, or past the end of the mapping).
            // SAFETY: `pos` < RING_SIZE and is 64-aligned (head % 64 == 0),
            // so at least 64 bytes of the data area start there; only the
            // first 16 (stamp, `len`, `kind`) are written, and the free-space check
            // above means the consumer is not reading them; we are the only
            // producer (the caller's contract).
            unsafe {
                let pad = self.data.add(pos) as *mut u64;
                pad.add(1).write(contig as u64 | (K_PAD as u64) << 32);
            }
            self.stamp_word(head).store(self.stamp(head), Ordering::Release);
            h = h.wrapping_add(contig as u64);
            if pos >= RING_KEEP {
                self.far.store(true, Ordering::Relaxed);
            }
        }
        if (h as usize & (RING_SIZE - 1)) + need > RING_KEEP {
            self.far.store(true, Ordering::Relaxed);
        }
        // SAFETY: the offset is masked into the data area.
        Some((
            unsafe { self.data.add(h as usize & (RING_SIZE - 1)) },
            h.wrapping_add(need as u64),
        ))
    }

    /// Producer: like `try_reserve`, calling `wait` while the ring is full;
    /// `wait` returns false to give up.
    ///
    /// # Safety
    /// As for [`Ring::try_reserve`].
    pub unsafe fn reserve(&self, need: usize, wait: &mut dyn FnMut() -> bool) -> Option<(*mut u8, u64)> {
        loop {
            // SAFETY: our caller's contract is `try_reserve`'s.
            if let Some(r) = unsafe { self.try_reserve(need) } {
                return Some(r);
            }
            if !wait() {
                return None;
            }
        }
    }

    /// Producer: when the ring is empty (the consumer has taken every
    /// record) and records went beyond `RING_KEEP` since the last time,
    /// gives the pages beyond `RING_KEEP` back (MADV_REMOVE: the shared
    /// file's pages are freed, for both processes; they read as zeros and
    /// cost memory again once written).  True when it did.
    ///
    /// # Safety
    /// The caller is the ring's only producer (it holds the link's
    /// `tx_lock`): no record is being written meanwhile.
    pub unsafe fn trim(&self) -> bool {
        if !self.far.load(Ordering::Relaxed) {
            return false;
        }
        let head = self.h().head.load(Ordering::Relaxed);
        // Acquire: the consumer's reads of every record (it advances `tail`
        // only after them) happen before the pages go.
        if self.h().tail.load(Ordering::Acquire) != head {
            return false;
        }
        // SAFETY: [RING_KEEP, RING_SIZE) of the data area, page-aligned
        // (the data area is, and RING_KEEP is a page multiple), in our
        // shared writable mapping; it holds no record the consumer has not
        // taken (the ring is empty) and we write none meanwhile (the
        // contract), so dropping its contents loses nothing.
        let r = unsafe {
            libc::madvise(
                self.data.add(RING_KEEP) as *mut libc::c_void,
                RING_SIZE - RING_KEEP,
                libc::MADV_REMOVE,
            )
        };
        self.far.store(false, Ordering::Relaxed);
        r == 0
    }

    /// Producer: publishes the record of `len` bytes that ends at
    /// `new_head` (from `try_reserve`; header and payload written): its
    /// stamp, then `head`.  True when the consumer sleeps and must be
    /// woken.
    pub fn publish(&self, new_head: u64, len: usize) -> bool {
        let at = new_head.wrapping_sub(len as u64);
        self.stamp_word(at).store(self.stamp(at), Ordering::Release);
        self.h().head.store(new_head, Ordering::Release);
        // (The frequent side of the sleeping handshake: barrier.rs.)
        barrier::light();
        self.h().sleeping.load(Ordering::Relaxed) != 0
    }

    /// Producer: the position the next record goes to (its own `head`).
    pub fn produced(&self) -> u64 {
        self.h().head.load(Ordering::Relaxed)
    }

    /// What the consumer has taken (its `tail`): every record before it has
    /// been read and answered or dropped.
    pub fn consumed(&self) -> u64 {
        self.h().tail.load(Ordering::Acquire)
    }

    /// Producer of a response ring: whether its backlog holds answers that
    /// are not plain ACKs (see `RingHdr::answers_kept`).  Set before the
    /// request it answers is consumed (`Release` of `tail` after it).
    pub fn set_answers_kept(&self, kept: bool) {
        self.h().answers_kept.store(kept as u32, Ordering::SeqCst);
    }

    /// Consumer of a response ring (the requester): see `set_answers_kept`.
    pub fn answers_kept(&self) -> bool {
        self.h().answers_kept.load(Ordering::Acquire) != 0
    }

    /// Producer of a response ring: its side consumed a reliable request
    /// it did not answer (see `RingHdr::dropped`).  Before it is consumed.
    pub fn set_dropped(&self) {
        self.h().dropped.store(1, Ordering::SeqCst);
    }

    /// Consumer of a response ring: see `set_dropped`.
    pub fn dropped(&self) -> bool {
        self.h().dropped.load(Ordering::Acquire) != 0
    }

    /// Consumer: a record (or padding) was published at `tail`: its stamp
    /// is there (see [`Form`]).  The producer's `head` is not read.
    pub fn has_data(&self) -> bool {
        let tail = self.h().tail.load(Ordering::Relaxed);
        self.stamp_word(tail).load(Ordering::Acquire) == self.stamp(tail)
    }

    /// Consumer: the next record (skipping padding): its address, the tail
    /// to consume it and its length (64-aligned, at least 64, inside the
    /// data area; [`read_record`] checks the rest).  Err(Corrupt) on a
    /// corrupt ring.
    ///
    /// # Safety
    /// The caller is the ring's only consumer (it holds the link's
    /// `rx_lock`) until it has consumed the record or given up on it.
    pub unsafe fn peek(&self) -> Result<Option<(*const u8, u64, usize)>, Corrupt> {
        loop {
            let tail = self.h().tail.load(Ordering::Relaxed);
            if !tail.is_multiple_of(64) {
                return Err(Corrupt); // (records are 64-aligned; see try_reserve)
            }
            // The record's stamp, written last (Acquire: what the producer
            // wrote before it is visible).
            if self.stamp_word(tail).load(Ordering::Acquire) != self.stamp(tail) {
                return Ok(None);
            }
            let pos = tail as usize & (RING_SIZE - 1);
            // SAFETY: `pos` is masked into the data area and 64-aligned, so
            // the record's first line is inside it.  Volatile: the peer
            // process may still write it (any value is checked).
            let (rec, len, kind) = unsafe {
                let rec = self.data.add(pos) as *const u8;
                let w = std::ptr::read_volatile((rec as *const u64).add(1));
                (rec, w as u32 as usize, (w >> 32) as u16)
            };
            if len < 64 || len % 64 != 0 || len > RING_SIZE - pos {
                return Err(Corrupt);
            }
            if kind == K_PAD {
                self.h().tail.store(tail.wrapping_add(len as u64), Ordering::Release);
                continue;
            }
            // The rest of a long record's header and its first payload
            // lines are asked for at once (read one after the other, after
            // checks, they were transfers in a row from the producer's CPU).
            let mut at = 64;
            while at < len.min(PREFETCH_BYTES) {
                // SAFETY: `pos + at` < `pos + len` <= RING_SIZE: inside the
                // data area.
                prefetch(unsafe { self.data.add(pos + at) });
                at += 64;
            }
            return Ok(Some((rec, tail.wrapping_add(len as u64), len)));
        }
    }

    pub fn consume(&self, new_tail: u64) {
        self.h().tail.store(new_tail, Ordering::Release);
    }

    /// Consumer, before it sleeps: producers kick it at each `publish`
    /// meanwhile.  Then, before it sleeps, `barrier::heavy()` (once for
    /// all the rings it set) and one more look at `has_data`: with
    /// `publish` this is a Dekker pair, one of the two sees the other
    /// (barrier.rs).
    pub fn set_sleeping(&self, s: bool) {
        self.h().sleeping.store(s as u32, Ordering::SeqCst);
    }

    /// Whether the consumer said it sleeps (producers kick it at each
    /// commit meanwhile).
    pub fn is_sleeping(&self) -> bool {
        self.h().sleeping.load(Ordering::Relaxed) != 0
    }

    /// Producer that could not place a record: asks the consumer for a kick
    /// when it has made room (then it must try once more: Dekker pair with
    /// `room_made`, this the rare side, barrier.rs).  False: the barrier
    /// could not be had, the kick may not come (`barrier::heavy`).
    pub fn want_space(&self) -> bool {
        self.h().space_wanted.store(1, Ordering::SeqCst);
        barrier::heavy()
    }

    /// Consumer, after `consume`: true when the producer waits for room and
    /// must be woken.
    pub fn room_made(&self) -> bool {
        // The frequent side of the handshake with `want_space` (barrier.rs).
        // Where it needs a fence, a sequentially consistent
        // read-modify-write of our own tail (a locked instruction, cheaper
        // than a fence on x86) orders the tail before the load of the flag.
        if barrier::registered() {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            self.h().tail.fetch_add(0, Ordering::SeqCst);
        }
        self.h().space_wanted.load(Ordering::SeqCst) != 0 && self.h().space_wanted.swap(0, Ordering::SeqCst) != 0
    }
}

/// A response (target -> initiator) that did not fit into the ring yet.
/// Responders never wait for ring space: what does not fit is kept, in
/// order, in the link's backlog and sent by whoever next makes progress
/// (the peer kicks us when it has made room, see `want_space`).  A waiting
/// responder would hold its QP's lock, and the peer's progress may need
/// ours: that was a deadlock.
pub enum Resp {
    /// A header-only message (ACK/NAK, atomic response).
    Hdr(Msg),
    /// The rest of an RDMA READ response: `hdr` is the response header
    /// (`raddr`/`rkey`/`total` of the request), `off` the next byte to send,
    /// checked again against the MR table (`qpn`, `pd`) before every chunk.
    Read { hdr: Msg, qpn: u32, pd: u32, off: u64 },
}

/// One connection between two contexts.
pub struct Link {
    pub peer: u32,
    pub outgoing: bool,
    sock: OwnedFd,
    /// The `LINK_BYTES` shared mapping `tx` and `rx` point into; unmapped
    /// by `Drop`, after which no `Ring` of this link is reachable.
    map: *mut u8,
    tx: Ring,
    rx: Ring,
    /// Held by the (only) producer of `tx`; guards the response backlog.
    pub tx_lock: TurnLock<VecDeque<Resp>>,
    /// The backlog is not empty.
    pub backlogged: AtomicBool,
    pub rx_lock: TurnLock<()>,
    peer_efd: OwnedFd,
    pub dead: AtomicBool,
}
// SAFETY: the only fields that are not `Send` are the raw pointers: `map`
// (used by `Drop` alone, to unmap) and the two `Ring`s, which are `Send`
// and `Sync` for the reasons given there; the mapping is a shared one the
// `Link` owns, not tied to the creating thread.
unsafe impl Send for Link {}
// SAFETY: shared use goes through the `Ring`s (see their `Sync`), the
// mutexes, atomics and the file descriptors, all of which are thread-safe.
unsafe impl Sync for Link {}

impl Link {
    /// Maps the link's memfd.  `outgoing`: this side initiated it.  The
    /// link owns `sock` (its connection to the peer) and `peer_efd` (the
    /// peer's eventfd) and closes them when dropped; `memfd` may be closed
    /// once this returns (the mapping keeps the memory).
    ///
    /// # Safety
    /// `memfd` is a shared-memory file of exactly `LINK_BYTES` bytes that
    /// is used only as this link's ring pair (by us and the peer): every
    /// later access to the rings assumes the mapping is fully backed.
    pub unsafe fn new(
        peer: u32,
        outgoing: bool,
        sock: OwnedFd,
        memfd: BorrowedFd<'_>,
        peer_efd: OwnedFd,
    ) -> Option<Link> {
        use std::os::fd::AsRawFd;
        if LIVE_LINKS.fetch_add(1, Ordering::SeqCst) >= MAX_LINKS_PER_PROCESS {
            LIVE_LINKS.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        // SAFETY: a fresh mapping chosen by the kernel (no address hint),
        // of a descriptor that is open for the duration of the call.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LINK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                // Not prefaulted: a page costs memory once a record (or a
                // ring header) is written there.  With `REWIND_AT` an idle or
                // lightly used link touches a few pages; at most the whole
                // `LINK_BYTES` (a ring kept full).
                libc::MAP_SHARED,
                memfd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            LIVE_LINKS.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        let map = map as *mut u8;
        // SAFETY: the mapping is `LINK_BYTES` = 2 * (RING_HDR + RING_SIZE)
        // bytes, page-aligned, read-write and backed (the caller's contract
        // on the file's size); it lives until `Drop` of the `Link` that
        // owns both rings.  The second ring starts half-way, page-aligned.
        let (r0, r1) = unsafe { (Ring::at(map), Ring::at(map.add(RING_HDR + RING_SIZE))) };
        let (tx, rx) = if outgoing { (r0, r1) } else { (r1, r0) };
        Some(Link {
            peer,
            outgoing,
            sock,
            map,
            tx,
            rx,
            tx_lock: TurnLock::new(VecDeque::new()),
            backlogged: AtomicBool::new(false),
            rx_lock: TurnLock::new(()),
            peer_efd,
            dead: AtomicBool::new(false),
        })
    }

    /// The outgoing ring (this side produces).
    pub fn tx(&self) -> &Ring {
        &self.tx
    }

    /// The incoming ring (this side consumes).
    pub fn rx(&self) -> &Ring {
        &self.rx
    }

    /// The connection to the peer (its hang-up tells that the peer is gone).
    pub fn sock(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// Where this side announces the key of the peer's MR it accesses
    /// directly (its outgoing ring's header).
    pub fn direct_mine(&self) -> &AtomicU64 {
        &self.tx.h().direct
    }

    /// Where the peer announces the key of our MR it accesses directly.
    pub fn direct_peer(&self) -> &AtomicU64 {
        &self.rx.h().direct
    }

    pub fn wake_peer(&self) {
        // An eventfd write of 1 (it can only fail when the counter would
        // overflow, and then the peer has wake-ups pending anyway).
        let _ = rustix::io::write(&self.peer_efd, &1u64.to_ne_bytes());
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // SAFETY: `map` is the `LINK_BYTES` mapping made in `new`; the rings
        // pointing into it are fields of `self` and die with it, and they
        // are only lent out by reference, so nothing uses it afterwards.
        // (The descriptors are closed by their `OwnedFd`s.)
        unsafe { libc::munmap(self.map as *mut _, LINK_BYTES) };
        LIVE_LINKS.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    //! The ring protocol under concurrent use: records of every size across
    //! the wrap-around, one producer and one consumer thread (each possibly
    //! several threads taking turns under the link's locks, as the
    //! application and the context's thread do), the sleeping / room
    //! wake-ups.  `cargo test --release -p swrdma-ring`.
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};

    #[test]
    fn ud_grh_fields() {
        let mut m = Msg::default();
        assert_eq!(m.ud_grh(), (0, 64));
        m.set_ud_grh(0x68, 7);
        assert_eq!(m.ud_grh(), (0x68, 7));
        m.set_ud_grh(0, 0);
        assert_eq!(m.ud_grh(), (0, 0));
    }
    use std::time::{Duration, Instant};

    /// A link-sized shared mapping followed by an inaccessible guard page
    /// (a write past the second ring faults).
    struct Map(*mut u8);
    // SAFETY: the pointer is an anonymous shared mapping owned by the `Map`
    // (unmapped by its `Drop` only), usable from any thread; the tests reach
    // its contents only through `Ring`, under the ring protocol.
    unsafe impl Send for Map {}
    // SAFETY: `Map` itself never reads or writes the memory (see `Send`).
    unsafe impl Sync for Map {}
    impl Map {
        fn new() -> Map {
            // SAFETY: a fresh anonymous mapping (no hint, no descriptor).
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    LINK_BYTES + 4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            let p = p as *mut u8;
            // SAFETY: the last page of the mapping just made is turned into a
            // guard page; nothing refers to it yet.
            let r = unsafe { libc::mprotect(p.add(LINK_BYTES) as *mut _, 4096, libc::PROT_NONE) };
            assert_eq!(r, 0);
            Map(p)
        }
        /// The two rings; the caller keeps the `Map` alive while it uses them.
        fn rings(&self) -> (Ring, Ring) {
            // SAFETY: `LINK_BYTES` read-write bytes from `self.0`, both halves
            // page-aligned; every test holds the `Map` (or an `Arc` of it)
            // for as long as it uses the rings.
            unsafe { (Ring::at(self.0), Ring::at(self.0.add(RING_HDR + RING_SIZE))) }
        }
    }
    impl Drop for Map {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, no longer used (see `rings`).
            unsafe { libc::munmap(self.0 as *mut _, LINK_BYTES + 4096) };
        }
    }

    fn set_pos(r: &Ring, v: u64) {
        r.h().head.store(v, Ordering::Relaxed);
        r.h().tail.store(v, Ordering::Relaxed);
    }

    /// Produces one record of `need` bytes (a long one; a short one when
    /// `need` is 64) with a payload derived from `seq`.
    ///
    /// # Safety
    /// As for [`Ring::try_reserve`]: the caller is the ring's only producer.
    unsafe fn put(r: &Ring, need: usize, seq: u64) -> bool {
        let plen = if need == 64 {
            (seq % 21) as usize
        } else {
            need - MSG_HDR
        };
        let m = Msg {
            len: need as u32,
            kind: if need == 64 { K_SEND } else { K_WRITE },
            seq,
            plen: plen as u32,
            total: plen as u64,
            ..Default::default()
        };
        let f = Form::of(&m, plen);
        assert_eq!(f.record_len(plen), need);
        // SAFETY: forwarded to our caller.
        let Some((p, nh)) = (unsafe { r.try_reserve(need) }) else {
            return false;
        };
        // SAFETY: `try_reserve` gave `need` writable bytes at `p`, 64-aligned,
        // that no one else touches until `publish`.
        unsafe {
            write_header(p, &m, f);
            for i in 0..plen {
                *p.add(f.payload_at() + i) = (seq as usize + i) as u8;
            }
        }
        r.publish(nh, need);
        true
    }

    /// Consumes one record and checks its payload.
    ///
    /// # Safety
    /// As for [`Ring::peek`]: the caller is the ring's only consumer.
    unsafe fn get(r: &Ring) -> Option<(u64, usize)> {
        // SAFETY: forwarded to our caller.
        let (p, nt, len) = unsafe { r.peek() }.expect("corrupt ring")?;
        // SAFETY: `peek` gave a record of `len` bytes at `p` that the
        // producer (a thread of this test, done writing) no longer changes
        // until we consume it.
        let (m, pl) = unsafe { read_record(p, len) }.expect("malformed record");
        assert_eq!(len, m.len as usize);
        assert_eq!(m.total, m.plen as u64);
        for i in 0..m.plen as usize {
            // SAFETY: `plen` bytes at `pl` lie inside the record (checked by
            // `read_record`).
            let b = unsafe { *pl.add(i) };
            assert_eq!(b, (m.seq as usize + i) as u8, "payload of {}", m.seq);
        }
        let r2 = (m.seq, m.len as usize);
        r.consume(nt);
        Some(r2)
    }

    /// The bug behind the ib_read_bw segfault and the ib_write_bw hangs: a
    /// record that does not fit into the last 64 bytes of the ring left a
    /// 128-byte padding header there, past the end of the data area.
    #[test]
    fn padding_in_the_last_64_bytes() {
        let map = Map::new();
        let (r0, r1) = map.rings();
        for need in [128, 192, 256, 4096] {
            for r in [&r0, &r1] {
                set_pos(r, (RING_SIZE - 64) as u64 + 7 * RING_SIZE as u64);
            }
            let before = r1.h().head.load(Ordering::Relaxed);
            // SAFETY: this thread is the only producer and consumer.
            unsafe {
                // r0's padding must not touch r1's header ...
                assert!(put(&r0, need, 1));
                assert_eq!(r1.h().head.load(Ordering::Relaxed), before);
                assert_eq!(get(&r0), Some((1, need)));
                assert_eq!(get(&r0), None);
                // ... and r1's must not run past the mapping (the guard page).
                assert!(put(&r1, need, 2));
                assert_eq!(get(&r1), Some((2, need)));
                assert_eq!(get(&r1), None);
            }
        }
    }

    /// Every record size from 64 bytes to a full chunk, every position
    /// modulo 64 near the end: never a fault, never a corrupt record.
    #[test]
    fn all_sizes_across_the_wrap() {
        let map = Map::new();
        let (_, r) = map.rings();
        let mut seq = 0;
        for need in (MSG_HDR..=MSG_HDR + MAX_CHUNK)
            .step_by(64 * 37)
            .chain([MSG_HDR, MSG_HDR + 64])
        {
            for back in (64..=need + 128).step_by(64) {
                set_pos(&r, (RING_SIZE - back) as u64);
                seq += 1;
                // SAFETY: this thread is the only producer and consumer.
                unsafe {
                    assert!(put(&r, need, seq));
                    assert!(put(&r, need, seq + 1));
                    assert_eq!(get(&r), Some((seq, need)));
                    assert_eq!(get(&r), Some((seq + 1, need)));
                    assert_eq!(get(&r), None);
                }
                seq += 1;
            }
        }
    }

    /// `trim` gives back the pages beyond `RING_KEEP` of an empty ring, and
    /// only then; records still go through afterwards.
    #[test]
    fn trim_gives_pages_back() {
        let map = Map::new();
        let (_, r) = map.rings();
        let need = MSG_HDR + MAX_CHUNK;
        let mut n = 0u64;
        // SAFETY: this thread is the only producer and consumer.
        unsafe {
            assert!(!r.trim(), "nothing went beyond RING_KEEP yet");
            while put(&r, need, n) {
                n += 1;
            }
            let far = r.data.add(RING_KEEP);
            let page_used = || (0..4096).any(|i| std::ptr::read_volatile(far.add(i)) != 0);
            assert!(page_used(), "the first page beyond RING_KEEP was written");
            assert!(!r.trim(), "not empty");
            while get(&r).is_some() {}
            assert!(r.trim());
            assert!(!page_used(), "the page was given back");
            assert!(!r.trim(), "nothing beyond RING_KEEP since");
            for s in 0..100 {
                assert!(put(&r, need, s));
                assert_eq!(get(&r), Some((s, need)));
            }
        }
    }

    /// A producer that finds its ring empty past `REWIND_AT` starts again
    /// at the beginning: ping-pong traffic touches only the first pages.
    #[test]
    fn empty_ring_rewinds() {
        let map = Map::new();
        let (_, r) = map.rings();
        let need = MSG_HDR + 4096;
        let mut far = 0;
        for seq in 0..10_000u64 {
            // SAFETY: this thread is the only producer and consumer.
            unsafe {
                assert!(put(&r, need, seq));
                far = far.max(r.h().head.load(Ordering::Relaxed) as usize & (RING_SIZE - 1));
                assert_eq!(get(&r), Some((seq, need)));
            }
        }
        assert!(far <= REWIND_AT + need, "the producer went up to {far}");
        // Not empty: no rewind, the ring fills up to the end.
        set_pos(&r, 0);
        let mut n = 0u64;
        // SAFETY: as above.
        while unsafe { put(&r, need, n) } {
            n += 1;
        }
        assert!(n as usize * need > RING_SIZE - need);
    }

    /// Both forms carry every field they are chosen for; the second line of
    /// a long header is read only when used; a malformed record is refused.
    #[test]
    fn header_forms() {
        let mut buf = [0u64; 32];
        let p = buf.as_mut_ptr() as *mut u8;
        let full = Msg {
            len: 192,
            kind: K_SEND,
            flags: F_FIRST | F_LAST | F_IMM | F_ACKREQ,
            dst_qpn: 0x11_2233,
            src_qpn: 0x44_5566,
            seq: 1 << 40 | 7,
            raddr: 0xdead_beef_0000,
            rkey: 0x1234,
            imm: 0x5678,
            total: 1 << 31,
            off: 4096,
            plen: 3,
            status: 4096,
            qkey: 9,
            srqn: 5,
            sgid: [1; 16],
            dgid: [2; 16],
            cmp: 4,
            swap: 6,
            _r: 0,
        };
        assert_eq!(Form::of(&full, 3), Form::Long);
        let check = |m: &Msg, len: usize, ext: bool| {
            // SAFETY: `buf` has room for either form (256 bytes, aligned).
            let (h, pl) = unsafe {
                write_header(p, m, Form::of(m, m.plen as usize));
                read_record(p, len)
            }
            .expect("valid record");
            assert_eq!(
                (h.len, h.kind, h.flags, h.dst_qpn, h.src_qpn),
                (m.len, m.kind, m.flags, m.dst_qpn, m.src_qpn)
            );
            assert_eq!(
                (h.seq, h.imm, h.status, h.plen, h.total, h.off),
                (m.seq, m.imm, m.status, m.plen, m.total, m.off)
            );
            if Form::of(m, m.plen as usize) == Form::Long {
                assert_eq!((h.raddr, h.rkey, pl as usize - p as usize), (m.raddr, m.rkey, MSG_HDR));
            } else {
                assert_eq!(pl as usize - p as usize, 44);
            }
            if ext {
                assert_eq!(
                    (h.qkey, h.srqn, h.sgid, h.dgid, h.cmp, h.swap),
                    (m.qkey, m.srqn, m.sgid, m.dgid, m.cmp, m.swap)
                );
            } else {
                assert_eq!((h.qkey, h.sgid, h.cmp), (0, [0; 16], 0));
            }
        };
        check(&full, 192, false);
        check(&Msg { flags: F_EXT, ..full }, 192, true);
        check(&Msg { kind: K_CAS, ..full }, 192, true);
        let short = Msg {
            len: 64,
            raddr: 0,
            rkey: 0,
            total: 3,
            off: 0,
            ..full
        };
        assert_eq!(Form::of(&short, 3), Form::Short);
        check(&short, 64, false);
        let ack = Msg {
            kind: K_ACK,
            plen: 0,
            total: 0,
            ..short
        };
        check(&ack, 64, false);
        // Not short: too long, a fragment, extended, a WRITE.
        assert_eq!(
            Form::of(
                &Msg {
                    plen: 21,
                    total: 21,
                    ..short
                },
                21
            ),
            Form::Long
        );
        assert_eq!(Form::of(&Msg { total: 100, ..short }, 3), Form::Long);
        assert_eq!(Form::of(&Msg { flags: F_EXT, ..short }, 3), Form::Long);
        assert_eq!(Form::of(&Msg { kind: K_WRITE, ..short }, 3), Form::Long);
        // Malformed: a short record of another length or payload, a long
        // one whose payload runs past its end.
        // SAFETY: as above.
        unsafe {
            write_header(p, &short, Form::Short);
            assert!(read_record(p, 128).is_err());
            (p.add(40) as *mut u32).write(21);
            assert!(read_record(p, 64).is_err());
            write_header(p, &full, Form::Long);
            assert!(read_record(p, 128).is_err());
            assert!(read_record(p, 192).is_ok());
        }
    }

    /// A record is seen only once its stamp is there, and stale bytes at
    /// the next position (an old record, zeros) are not taken for one.
    #[test]
    fn stamps() {
        let map = Map::new();
        let (_, r) = map.rings();
        // SAFETY: this thread is the only producer and consumer.
        unsafe {
            assert!(!r.has_data());
            let (p, nh) = r.try_reserve(64).expect("room");
            let m = Msg {
                len: 64,
                kind: K_SEND,
                seq: 1,
                ..Default::default()
            };
            write_header(p, &m, Form::Short);
            assert!(!r.has_data(), "no stamp yet");
            assert!(r.peek().expect("ring").is_none());
            r.publish(nh, 64);
            assert!(r.has_data());
            assert_eq!(get(&r), Some((1, 64)));
            assert!(!r.has_data());
            // A lap later the same place holds the old record: not new.
            set_pos(&r, RING_SIZE as u64);
            assert!(!r.has_data());
            assert!(put(&r, 64, 2));
            assert_eq!(get(&r), Some((2, 64)));
        }
    }

    fn efd() -> Arc<OwnedFd> {
        Arc::new(rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).expect("eventfd"))
    }
    fn kick(fd: &OwnedFd) {
        let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
    }
    /// Sleeps on `fd` for at most `ms`; true when kicked.
    fn nap(fd: &OwnedFd, ms: i64) -> bool {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut p = [PollFd::new(fd, PollFlags::IN)];
        let t = Timespec {
            tv_sec: ms / 1000,
            tv_nsec: (ms % 1000) * 1_000_000,
        };
        if poll(&mut p, Some(&t)) == Ok(1) {
            let mut v = [0u8; 8];
            let _ = rustix::io::read(fd, &mut v);
            return true;
        }
        false
    }

    /// Producers and consumers, each side two threads taking turns under
    /// the link's locks (as post_send/respond and poll_cq/the context's
    /// thread do).  On each side one thread (the "context's thread") sleeps
    /// on an eventfd when it cannot go on: the consumer with `sleeping`, the
    /// producer with `want_space`; the other (the "application") spins.  A
    /// lost wake-up shows as a nap that times out while there is work; a
    /// second producer or consumer inside a ring as a corrupt record.
    #[test]
    fn concurrent_spsc_with_sleep_and_wakeups() {
        const N: u64 = 300_000;
        let map = Arc::new(Map::new());
        let ring = Arc::new(map.rings().1);
        let tx_lock = Arc::new(Mutex::new(0u64)); // next seq to send
        let rx_lock = Arc::new(Mutex::new(0u64)); // next seq expected
        let (cons_efd, prod_efd) = (efd(), efd());
        let lost = Arc::new(AtomicUsize::new(0));
        let t0 = Instant::now();
        let mut th = Vec::new();
        for id in 0..2u64 {
            // producers
            let (tx_lock, lost, _map, ring) = (tx_lock.clone(), lost.clone(), map.clone(), ring.clone());
            let (cons_efd, prod_efd) = (cons_efd.clone(), prod_efd.clone());
            th.push(std::thread::spawn(move || loop {
                let mut g = tx_lock.lock().unwrap();
                if *g >= N {
                    kick(&cons_efd);
                    kick(&prod_efd);
                    return;
                }
                // sizes from 64 bytes to 64 KiB, mostly small
                let s = *g;
                let need = if s % 97 == 0 {
                    MSG_HDR + MAX_CHUNK
                } else if s % 3 == 0 {
                    64 // a short record
                } else {
                    align64(MSG_HDR + ((s * 2654435761) % 300) as usize)
                };
                // SAFETY: producers take turns under `tx_lock` (held in `g`).
                if unsafe { put(&ring, need, s) } {
                    *g += 1;
                    // (put commits; a sleeping consumer must be kicked)
                    if ring.h().sleeping.load(Ordering::Relaxed) != 0 {
                        kick(&cons_efd);
                    }
                    continue;
                }
                // Full: ask for room, try once more, then sleep.
                let sure = ring.want_space();
                // SAFETY: as above, `g` still holds `tx_lock`.
                if unsafe { put(&ring, need, s) } {
                    *g += 1;
                    kick(&cons_efd);
                    continue;
                }
                drop(g);
                if id == 1 {
                    std::thread::yield_now();
                } else if !nap(&prod_efd, 2000)
                    && sure
                    && ring.h().head.load(Ordering::Relaxed) == ring.h().tail.load(Ordering::Relaxed)
                {
                    lost.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for id in 0..2 {
            // consumers
            let (rx_lock, lost, _map, ring) = (rx_lock.clone(), lost.clone(), map.clone(), ring.clone());
            let (cons_efd, prod_efd) = (cons_efd.clone(), prod_efd.clone());
            th.push(std::thread::spawn(move || loop {
                let Ok(mut g) = rx_lock.try_lock() else {
                    std::thread::yield_now();
                    if *rx_lock.lock().unwrap() >= N {
                        return;
                    }
                    continue;
                };
                if *g >= N {
                    kick(&cons_efd);
                    return;
                }
                let mut n = 0;
                // SAFETY: consumers take turns under `rx_lock` (held in `g`).
                while let Some((seq, _)) = unsafe { get(&ring) } {
                    assert_eq!(seq, *g, "out of order / lost / duplicated record");
                    *g += 1;
                    n += 1;
                }
                if n > 0 && ring.room_made() {
                    kick(&prod_efd);
                }
                if *g >= N {
                    return;
                }
                if n == 0 && id == 1 {
                    drop(g);
                    std::thread::yield_now();
                } else if n == 0 {
                    // (the context's thread sleeps without the lock)
                    drop(g);
                    ring.set_sleeping(true);
                    let sure = barrier::heavy();
                    if !ring.has_data() {
                        let kicked = nap(&cons_efd, 2000);
                        if !kicked && sure && ring.has_data() {
                            lost.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    ring.set_sleeping(false);
                }
            }));
        }
        for t in th {
            t.join().unwrap();
        }
        assert_eq!(*rx_lock.lock().unwrap(), N);
        assert_eq!(lost.load(Ordering::Relaxed), 0, "lost wake-ups");
        assert!(t0.elapsed() < Duration::from_secs(120));
    }
}
