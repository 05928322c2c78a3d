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
use std::os::raw::c_int;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

pub const RING_SIZE: usize = 4 << 20; // data bytes per ring (power of two)
pub const RING_HDR: usize = 4096;
pub const LINK_BYTES: usize = 2 * (RING_HDR + RING_SIZE);
pub const MAX_CHUNK: usize = 64 * 1024; // payload bytes per message
pub const MSG_HDR: usize = std::mem::size_of::<Msg>();

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
}
const _: () = assert!(std::mem::size_of::<Msg>() == 128);

/// A private copy of the header of a record in a ring (the peer can still
/// write the shared one after it was validated).  The second cache line is
/// read only when the message uses it: most messages (RC SEND/WRITE/READ,
/// ACKs) fit in the first, and a line written by the other CPU costs a
/// transfer.  Unread fields are 0.
pub unsafe fn read_header(m: *const Msg) -> Msg {
    let mut h = Msg::default();
    let src = m as *const [u64; 8];
    let dst = &mut h as *mut Msg as *mut [u64; 8];
    *dst = std::ptr::read_volatile(src);
    if h.flags & F_EXT != 0 || matches!(h.kind, K_CAS | K_FAA | K_AWRITE | K_ATOMIC_RESP) {
        *dst.add(1) = std::ptr::read_volatile(src.add(1));
    }
    h
}
const _: () = assert!(std::mem::offset_of!(Msg, cmp) == 64 && std::mem::align_of::<Msg>() == 8);

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
}

#[derive(Clone, Copy)]
pub struct Ring {
    hdr: *const RingHdr,
    data: *mut u8,
}
unsafe impl Send for Ring {}
unsafe impl Sync for Ring {}

pub fn align64(n: usize) -> usize {
    (n + 63) & !63
}

impl Ring {
    unsafe fn at(base: *mut u8) -> Ring {
        Ring {
            hdr: base as *const RingHdr,
            data: base.add(RING_HDR),
        }
    }
    fn h(&self) -> &RingHdr {
        unsafe { &*self.hdr }
    }

    /// Producer: room for one record of `need` bytes (64-aligned, at most
    /// RING_SIZE/4), or None when the ring is too full.  Returns the write
    /// pointer and the head to commit.
    pub unsafe fn try_reserve(&self, need: usize) -> Option<(*mut u8, u64)> {
        let head = self.h().head.load(Ordering::Relaxed);
        let pos = head as usize & (RING_SIZE - 1);
        let contig = RING_SIZE - pos;
        let total = if contig < need { contig + need } else { need };
        let tail = self.h().tail.load(Ordering::Acquire);
        // The header is shared: a peer that scribbles on it gets a link
        // that looks full (as if it stopped consuming), never a write
        // outside the data area (records are 64-aligned, and the padding
        // record needs 8 bytes).
        if head % 64 != 0
            || head.wrapping_sub(tail) > RING_SIZE as u64
            || RING_SIZE as u64 - head.wrapping_sub(tail) < total as u64
        {
            return None;
        }
        let mut h = head;
        if contig < need {
            // The padding record fills the rest of the ring, which may be
            // as little as 64 bytes: less than a `Msg`.  Only `len` and
            // `kind` (the first 8 bytes) are written, never a whole header:
            // that would run past the end of the data area (into the other
            // ring's header, or past the end of the mapping).
            let pad = self.data.add(pos) as *mut Msg;
            std::ptr::write(std::ptr::addr_of_mut!((*pad).len), contig as u32);
            std::ptr::write(std::ptr::addr_of_mut!((*pad).kind), K_PAD);
            h += contig as u64;
        }
        Some((self.data.add(h as usize & (RING_SIZE - 1)), h + need as u64))
    }

    /// Producer: like `try_reserve`, calling `wait` while the ring is full;
    /// `wait` returns false to give up.
    pub unsafe fn reserve(&self, need: usize, wait: &mut dyn FnMut() -> bool) -> Option<(*mut u8, u64)> {
        loop {
            if let Some(r) = self.try_reserve(need) {
                return Some(r);
            }
            if !wait() {
                return None;
            }
        }
    }

    /// Producer: publishes everything up to `new_head`; true when the
    /// consumer sleeps and must be woken.
    pub fn commit(&self, new_head: u64) -> bool {
        self.h().head.store(new_head, Ordering::Release);
        fence(Ordering::SeqCst);
        self.h().sleeping.load(Ordering::Relaxed) != 0
    }

    pub fn has_data(&self) -> bool {
        self.h().head.load(Ordering::Acquire) != self.h().tail.load(Ordering::Relaxed)
    }

    /// Consumer: the next record (skipping padding), validated: its
    /// address, the tail to consume it and its length (at least `MSG_HDR`).
    /// Err(()) on a corrupt ring.
    pub unsafe fn peek(&self) -> Result<Option<(*const Msg, u64, usize)>, ()> {
        loop {
            let tail = self.h().tail.load(Ordering::Relaxed);
            let head = self.h().head.load(Ordering::Acquire);
            if tail == head {
                return Ok(None);
            }
            let avail = head.wrapping_sub(tail);
            if tail % 64 != 0 {
                return Err(()); // (records are 64-aligned; see try_reserve)
            }
            let pos = tail as usize & (RING_SIZE - 1);
            let m = self.data.add(pos) as *const Msg;
            let len = std::ptr::read_volatile(std::ptr::addr_of!((*m).len)) as usize;
            if len < 64 || len % 64 != 0 || len as u64 > avail || len > RING_SIZE - pos {
                return Err(());
            }
            if (*m).kind == K_PAD {
                self.h().tail.store(tail + len as u64, Ordering::Release);
                continue;
            }
            if len < MSG_HDR || (*m).plen as usize > len - MSG_HDR {
                return Err(());
            }
            return Ok(Some((m, tail + len as u64, len)));
        }
    }

    pub fn consume(&self, new_tail: u64) {
        self.h().tail.store(new_tail, Ordering::Release);
    }

    /// Consumer, before it sleeps (then it must look at `has_data` once
    /// more: with the producer's `commit` this is a Dekker pair, one of the
    /// two sees the other).
    pub fn set_sleeping(&self, s: bool) {
        self.h().sleeping.store(s as u32, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Producer that could not place a record: asks the consumer for a kick
    /// when it has made room (then it must try once more: Dekker pair with
    /// `room_made`).
    pub fn want_space(&self) {
        self.h().space_wanted.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Consumer, after `consume`: true when the producer waits for room and
    /// must be woken.
    pub fn room_made(&self) -> bool {
        // A sequentially consistent read-modify-write of our own tail (a
        // locked instruction, cheaper than a fence on x86) orders the tail
        // before the load of the flag: with the producer's store, fence,
        // load in `want_space` + `try_reserve` one of the two sees the other.
        self.h().tail.fetch_add(0, Ordering::SeqCst);
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
    pub sock: c_int,
    map: *mut u8,
    pub tx: Ring,
    pub rx: Ring,
    /// Held by the (only) producer of `tx`; guards the response backlog.
    pub tx_lock: Mutex<VecDeque<Resp>>,
    /// The backlog is not empty.
    pub backlogged: AtomicBool,
    pub rx_lock: Mutex<()>,
    pub peer_efd: c_int,
    pub dead: AtomicBool,
}
unsafe impl Send for Link {}
unsafe impl Sync for Link {}

impl Link {
    /// Maps the link's memfd.  `outgoing`: this side initiated it.
    pub unsafe fn new(peer: u32, outgoing: bool, sock: c_int, memfd: c_int, peer_efd: c_int) -> Option<Link> {
        let map = libc::mmap(
            std::ptr::null_mut(),
            LINK_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            // Populated now: no page faults (4 KiB zeroed each) while the
            // first 8 MiB of traffic go through.
            libc::MAP_SHARED | libc::MAP_POPULATE,
            memfd,
            0,
        );
        if map == libc::MAP_FAILED {
            return None;
        }
        let map = map as *mut u8;
        let r0 = Ring::at(map);
        let r1 = Ring::at(map.add(RING_HDR + RING_SIZE));
        let (tx, rx) = if outgoing { (r0, r1) } else { (r1, r0) };
        Some(Link {
            peer,
            outgoing,
            sock,
            map,
            tx,
            rx,
            tx_lock: Mutex::new(VecDeque::new()),
            backlogged: AtomicBool::new(false),
            rx_lock: Mutex::new(()),
            peer_efd,
            dead: AtomicBool::new(false),
        })
    }

    pub fn wake_peer(&self) {
        let one: u64 = 1;
        unsafe { libc::write(self.peer_efd, &one as *const u64 as *const _, 8) };
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        unsafe {
            libc::munmap(self.map as *mut _, LINK_BYTES);
            libc::close(self.sock);
            libc::close(self.peer_efd);
        }
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
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A link-sized shared mapping followed by an inaccessible guard page
    /// (a write past the second ring faults).
    struct Map(*mut u8);
    unsafe impl Send for Map {}
    unsafe impl Sync for Map {}
    impl Map {
        fn new() -> Map {
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    LINK_BYTES + 4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                let p = p as *mut u8;
                assert_eq!(libc::mprotect(p.add(LINK_BYTES) as *mut _, 4096, libc::PROT_NONE), 0);
                Map(p)
            }
        }
        fn rings(&self) -> (Ring, Ring) {
            unsafe { (Ring::at(self.0), Ring::at(self.0.add(RING_HDR + RING_SIZE))) }
        }
    }
    impl Drop for Map {
        fn drop(&mut self) {
            unsafe { libc::munmap(self.0 as *mut _, LINK_BYTES + 4096) };
        }
    }

    fn set_pos(r: &Ring, v: u64) {
        r.h().head.store(v, Ordering::Relaxed);
        r.h().tail.store(v, Ordering::Relaxed);
    }

    unsafe fn put(r: &Ring, need: usize, seq: u64) -> bool {
        let Some((p, nh)) = r.try_reserve(need) else {
            return false;
        };
        let m = Msg {
            len: need as u32,
            kind: K_SEND,
            seq,
            plen: (need - MSG_HDR) as u32,
            ..Default::default()
        };
        std::ptr::write(p as *mut Msg, m);
        for i in 0..need - MSG_HDR {
            *p.add(MSG_HDR + i) = (seq as usize + i) as u8;
        }
        r.commit(nh);
        true
    }

    unsafe fn get(r: &Ring) -> Option<(u64, usize)> {
        let (m, nt, len) = r.peek().expect("corrupt ring")?;
        assert_eq!(len, (*m).len as usize);
        let m = &*m;
        let pl = (m as *const Msg as *const u8).add(MSG_HDR);
        for i in 0..m.plen as usize {
            assert_eq!(*pl.add(i), (m.seq as usize + i) as u8, "payload of {}", m.seq);
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

    #[test]
    fn header_copy() {
        let full = Msg {
            kind: K_SEND,
            seq: 7,
            plen: 3,
            qkey: 9,
            srqn: 5,
            sgid: [1; 16],
            cmp: 4,
            ..Default::default()
        };
        let h = unsafe { read_header(&full) };
        assert_eq!((h.kind, h.seq, h.plen, h.qkey, h.srqn, h.cmp), (K_SEND, 7, 3, 0, 0, 0));
        let ext = Msg { flags: F_EXT, ..full };
        let h = unsafe { read_header(&ext) };
        assert_eq!((h.qkey, h.srqn, h.sgid, h.cmp), (9, 5, [1; 16], 4));
        let cas = Msg {
            kind: K_CAS,
            swap: 11,
            ..full
        };
        assert_eq!(unsafe { read_header(&cas) }.swap, 11);
    }

    fn efd() -> c_int {
        unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) }
    }
    fn kick(fd: c_int) {
        let one = 1u64;
        unsafe { libc::write(fd, &one as *const u64 as *const _, 8) };
    }
    /// Sleeps on `fd` for at most `ms`; true when kicked.
    fn nap(fd: c_int, ms: c_int) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        if unsafe { libc::poll(&mut p, 1, ms) } == 1 {
            let mut v = 0u64;
            unsafe { libc::read(fd, &mut v as *mut u64 as *mut _, 8) };
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
        let (_, ring) = map.rings();
        let tx_lock = Arc::new(Mutex::new(0u64)); // next seq to send
        let rx_lock = Arc::new(Mutex::new(0u64)); // next seq expected
        let (cons_efd, prod_efd) = (efd(), efd());
        let lost = Arc::new(AtomicUsize::new(0));
        let t0 = Instant::now();
        let mut th = Vec::new();
        for id in 0..2u64 {
            // producers
            let (tx_lock, lost, _map) = (tx_lock.clone(), lost.clone(), map.clone());
            th.push(std::thread::spawn(move || loop {
                let mut g = tx_lock.lock().unwrap();
                if *g >= N {
                    kick(cons_efd);
                    kick(prod_efd);
                    return;
                }
                // sizes from 128 bytes to 64 KiB, mostly small
                let s = *g;
                let need = if s % 97 == 0 {
                    MSG_HDR + MAX_CHUNK
                } else {
                    align64(MSG_HDR + ((s * 2654435761) % 300) as usize)
                };
                if unsafe { put(&ring, need, s) } {
                    *g += 1;
                    // (put commits; a sleeping consumer must be kicked)
                    if ring.h().sleeping.load(Ordering::Relaxed) != 0 {
                        kick(cons_efd);
                    }
                    continue;
                }
                // Full: ask for room, try once more, then sleep.
                ring.want_space();
                if unsafe { put(&ring, need, s) } {
                    *g += 1;
                    kick(cons_efd);
                    continue;
                }
                drop(g);
                if id == 1 {
                    std::thread::yield_now();
                } else if !nap(prod_efd, 2000)
                    && ring.h().head.load(Ordering::Relaxed) == ring.h().tail.load(Ordering::Relaxed)
                {
                    lost.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for id in 0..2 {
            // consumers
            let (rx_lock, lost, _map) = (rx_lock.clone(), lost.clone(), map.clone());
            th.push(std::thread::spawn(move || loop {
                let Ok(mut g) = rx_lock.try_lock() else {
                    std::thread::yield_now();
                    if *rx_lock.lock().unwrap() >= N {
                        return;
                    }
                    continue;
                };
                if *g >= N {
                    kick(cons_efd);
                    return;
                }
                let mut n = 0;
                while let Some((seq, _)) = unsafe { get(&ring) } {
                    assert_eq!(seq, *g, "out of order / lost / duplicated record");
                    *g += 1;
                    n += 1;
                }
                if n > 0 && ring.room_made() {
                    kick(prod_efd);
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
                    if !ring.has_data() {
                        let kicked = nap(cons_efd, 2000);
                        if !kicked && ring.has_data() {
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
        unsafe {
            libc::close(cons_efd);
            libc::close(prod_efd);
        }
    }
}
