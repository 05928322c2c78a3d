//! Fuzzes the validation of records read from the software device's shared
//! rings (crate swrdma-ring): the peer process writes arbitrary bytes into
//! the ring and its header (tail) and publishes records by their stamps;
//! `Ring::peek` must reject what is corrupt and only ever return records
//! that lie inside the data area, and `read_record` must copy their header
//! and find a payload inside the record (or refuse it).
//!
//! The ring is a real link (`Link::new` over a memfd whose salt is 0, so a
//! record at position p is published by the stamp p + 1); the fuzzer plays
//! the peer through a second mapping of the same memfd.  The input is
//! [tail: 8 bytes][stamps: 4 bytes, bit k: stamp the k-th 64-byte line
//! after the tail][ring bytes written at the tail...]; what an input wrote
//! is zeroed again afterwards (runs are independent).
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use swrdma_ring::{read_record, Link, LINK_BYTES, RING_HDR, RING_SIZE};

struct Peer {
    link: Link,
    /// The peer's view of our rx ring: its header and its data area.
    hdr: *mut u8,
    data: *mut u8,
}
unsafe impl Send for Peer {}
unsafe impl Sync for Peer {}

fn peer() -> &'static Peer {
    static P: OnceLock<Peer> = OnceLock::new();
    P.get_or_init(|| unsafe {
        let fd = libc::memfd_create(c"ring_record".as_ptr(), 0);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, LINK_BYTES as libc::off_t), 0);
        // outgoing = true: tx is the first ring, rx (what we fuzz) the second.
        // The link's socket and the peer's eventfd are never used here:
        // /dev/null stands for both.
        let null = || std::os::fd::OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null"));
        let memfd = std::os::fd::BorrowedFd::borrow_raw(fd);
        let link = Link::new(0, true, null(), memfd, null()).expect("map the link");
        let map = libc::mmap(
            std::ptr::null_mut(),
            LINK_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        assert_ne!(map, libc::MAP_FAILED);
        let rx = (map as *mut u8).add(RING_HDR + RING_SIZE);
        Peer {
            link,
            hdr: rx,
            data: rx.add(RING_HDR),
        }
    })
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 12 {
        return;
    }
    let p = peer();
    let tail = u64::from_le_bytes(input[..8].try_into().unwrap()) & !63;
    let stamps = u32::from_le_bytes(input[8..12].try_into().unwrap());
    let bytes = &input[12..];
    // Ring header: tail at offset 64 (see RingHdr).
    let t = unsafe { &*(p.hdr.add(64) as *const AtomicU64) };
    t.store(tail, Ordering::Release);
    let pos = tail as usize & (RING_SIZE - 1);
    let n = bytes.len().min(RING_SIZE);
    for (i, &b) in bytes[..n].iter().enumerate() {
        unsafe { *p.data.add((pos + i) & (RING_SIZE - 1)) = b };
    }
    let lines = n.div_ceil(64).min(32);
    for k in 0..lines {
        if stamps & (1 << k) != 0 {
            let at = tail.wrapping_add(64 * k as u64);
            let w = unsafe { &*(p.data.add(at as usize & (RING_SIZE - 1)) as *const AtomicU64) };
            w.store(at.wrapping_add(1), Ordering::Release);
        }
    }

    let rx = p.link.rx();
    let mut records = 0usize;
    loop {
        let before = t.load(Ordering::Relaxed);
        match unsafe { rx.peek() } {
            Err(_) | Ok(None) => break,
            Ok(Some((rec, new_tail, len))) => {
                let start = new_tail.wrapping_sub(len as u64);
                // peek may skip padding records: the record starts at or
                // after the old tail, at a line this input stamped
                assert!(start.wrapping_sub(before) < RING_SIZE as u64);
                assert!(len >= 64 && len % 64 == 0 && len <= RING_SIZE);
                let spos = start as usize & (RING_SIZE - 1);
                assert_eq!(rec as usize, p.data as usize + spos, "the record is where its stamp is");
                assert!(spos + len <= RING_SIZE, "record runs past the data area");
                if let Ok((hd, payload)) = unsafe { read_record(rec, len) } {
                    assert_eq!(hd.len as usize, len);
                    let from = payload as usize - rec as usize;
                    assert!(from + hd.plen as usize <= len, "payload outside the record");
                }
                rx.consume(new_tail);
                records += 1;
                assert!(records <= RING_SIZE / 64);
            }
        }
    }

    // Zero what this input wrote (runs must not see each other's bytes).
    for i in 0..n {
        unsafe { *p.data.add((pos + i) & (RING_SIZE - 1)) = 0 };
    }
    t.store(0, Ordering::Relaxed);
});
