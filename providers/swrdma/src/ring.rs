//! Shared-memory message rings between two contexts (a "link").
//!
//! One link = one memfd holding two single-producer/single-consumer byte
//! rings: the request ring (initiator -> target) and the response ring
//! (target -> initiator).  Requests never wait for requests and responses
//! never generate messages, so a full ring cannot deadlock the pair.
//! Everything read from a ring comes from another process and is validated
//! before use (lengths, offsets); memory is only ever touched by the
//! process that owns it.

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
const _: () = assert!(std::mem::size_of::<Msg>() == 128);

#[repr(C)]
struct RingHdr {
    head: AtomicU64,
    _p1: [u8; 56],
    tail: AtomicU64,
    _p2: [u8; 56],
    sleeping: AtomicU32,
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
        Ring { hdr: base as *const RingHdr, data: base.add(RING_HDR) }
    }
    fn h(&self) -> &RingHdr {
        unsafe { &*self.hdr }
    }

    /// Producer: room for one record of `need` bytes (64-aligned, at most
    /// RING_SIZE/4).  `wait` is called while the ring is full; it returns
    /// false to give up.  Returns the write pointer and the head to commit.
    pub unsafe fn reserve(&self, need: usize, wait: &mut dyn FnMut() -> bool) -> Option<(*mut u8, u64)> {
        let head = self.h().head.load(Ordering::Relaxed);
        let pos = head as usize & (RING_SIZE - 1);
        let contig = RING_SIZE - pos;
        let total = if contig < need { contig + need } else { need };
        loop {
            let tail = self.h().tail.load(Ordering::Acquire);
            if RING_SIZE as u64 - head.wrapping_sub(tail) >= total as u64 {
                break;
            }
            if !wait() {
                return None;
            }
        }
        let mut h = head;
        if contig < need {
            let pad = self.data.add(pos) as *mut Msg;
            std::ptr::write(pad, Msg { len: contig as u32, kind: K_PAD, ..Default::default() });
            h += contig as u64;
        }
        Some((self.data.add(h as usize & (RING_SIZE - 1)), h + need as u64))
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

    /// Consumer: the next record (skipping padding), validated.  Err(()) on
    /// a corrupt ring.
    pub unsafe fn peek(&self) -> Result<Option<(*const Msg, u64)>, ()> {
        loop {
            let tail = self.h().tail.load(Ordering::Relaxed);
            let head = self.h().head.load(Ordering::Acquire);
            if tail == head {
                return Ok(None);
            }
            let avail = head.wrapping_sub(tail);
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
            return Ok(Some((m, tail + len as u64)));
        }
    }

    pub fn consume(&self, new_tail: u64) {
        self.h().tail.store(new_tail, Ordering::Release);
    }

    pub fn set_sleeping(&self, s: bool) {
        self.h().sleeping.store(s as u32, Ordering::SeqCst);
    }
}

/// One connection between two contexts.
pub struct Link {
    pub peer: u32,
    pub outgoing: bool,
    pub sock: c_int,
    map: *mut u8,
    pub tx: Ring,
    pub rx: Ring,
    pub tx_lock: Mutex<()>,
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
            libc::MAP_SHARED,
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
            tx_lock: Mutex::new(()),
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
