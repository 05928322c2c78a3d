//! Fuzzes the validation of records read from the software device's shared
//! rings (crate swrdma-ring): the peer process writes arbitrary bytes into
//! the ring and its header (head, tail); `Ring::peek` must reject what is
//! corrupt and only ever return records that lie inside the data area with
//! a payload inside the record, and `read_header` must copy their header.
//!
//! The ring is a real link (`Link::new` over a memfd); the fuzzer plays the
//! peer through a second mapping of the same memfd.  The input is
//! [tail: 8 bytes][head - tail: 4 bytes][ring bytes written at the tail...];
//! what an input wrote is zeroed again afterwards (runs are independent).
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use swrdma_ring::{read_header, Link, LINK_BYTES, MSG_HDR, RING_HDR, RING_SIZE};

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
    let tail = u64::from_le_bytes(input[..8].try_into().unwrap());
    let avail = u64::from(u32::from_le_bytes(input[8..12].try_into().unwrap()));
    let bytes = &input[12..];
    let head = tail.wrapping_add(avail);
    // Ring header: head at offset 0, tail at offset 64 (see RingHdr).
    let (h, t) = unsafe { (&*(p.hdr as *const AtomicU64), &*(p.hdr.add(64) as *const AtomicU64)) };
    h.store(head, Ordering::Release);
    t.store(tail, Ordering::Release);
    let pos = tail as usize & (RING_SIZE - 1);
    let n = bytes.len().min(RING_SIZE);
    for (i, &b) in bytes[..n].iter().enumerate() {
        unsafe { *p.data.add((pos + i) & (RING_SIZE - 1)) = b };
    }

    let rx = p.link.rx();
    let mut records = 0usize;
    loop {
        let before = t.load(Ordering::Relaxed);
        match unsafe { rx.peek() } {
            Err(_) | Ok(None) => break,
            Ok(Some((m, new_tail, len))) => {
                let start = new_tail.wrapping_sub(len as u64);
                // peek may skip padding records: the record starts at or after the old tail
                assert!(start.wrapping_sub(before) <= avail && new_tail.wrapping_sub(tail) <= avail);
                assert!(len >= MSG_HDR && len % 64 == 0 && len <= RING_SIZE);
                let spos = start as usize & (RING_SIZE - 1);
                assert!(spos + len <= RING_SIZE, "record runs past the data area");
                let hd = unsafe { read_header(m) };
                assert_eq!(hd.len as usize, len);
                assert!(hd.plen as usize <= len - MSG_HDR);
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
    h.store(0, Ordering::Relaxed);
    t.store(0, Ordering::Relaxed);
});
