//! The work queues under load: two threads, two processes, the doorbell,
//! and a hostile other side.

use super::format::{decode_cqe, decode_recv, decode_send, QpKind, SendShape};
use super::slots::{Scribbler, HEADER_WORDS, W_CONSUMED, W_DTX, W_PRODUCED, W_SLEEPING};
use super::*;
use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags, Timespec};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A small xorshift generator (xorshift64*), so the tests need no crate.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (> 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Entry `i` of the load tests (into `buf`, at most `buf.len()` bytes):
/// its length varies from 0 to the whole buffer, and its bytes depend on
/// `i`, the first 8 (when there is room) being `i` itself.
fn entry(i: u64, buf: &mut [u8]) -> usize {
    let n = ((i.wrapping_mul(7) ^ (i >> 3)) % (buf.len() as u64 + 1)) as usize;
    for (j, b) in buf[..n].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(j as u8);
    }
    if n >= 8 {
        buf[..8].copy_from_slice(&i.to_le_bytes());
    }
    n
}

/// Spins a little, then yields the CPU (the tests run on 2 CPUs).
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// A million entries of varying sizes through a queue of 16 slots between
/// two threads: each arrives once, in order, intact; the queue wraps
/// around 62,500 times and is often full.
#[test]
fn two_threads_a_million_entries() {
    const N: u64 = 1_000_000;
    let (s, _fd) = Slots::create(16, 128).unwrap();
    let (mut p, mut c) = s.split();
    let producer = std::thread::spawn(move || {
        let mut buf = [0u8; 112];
        let mut full = 0u64;
        for i in 0..N {
            let n = entry(i, &mut buf);
            let mut spins = 0;
            loop {
                match p.try_push(&buf[..n]) {
                    Ok(Push::Quiet) => break,
                    Ok(Push::Ring) => panic!("nobody sleeps"),
                    Err(PushError::Full) => {
                        full += 1;
                        backoff(&mut spins);
                    }
                    Err(e) => panic!("{e:?} at {i}"),
                }
            }
        }
        full
    });
    let (mut want, mut got) = ([0u8; 112], [0u8; 112]);
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..N {
        let n = entry(i, &mut want);
        let mut spins = 0;
        loop {
            match c.try_pop(&mut got) {
                Ok(Some(m)) => {
                    assert_eq!(m, n, "length of entry {i}");
                    assert_eq!(got[..n], want[..n], "entry {i}");
                    break;
                }
                Ok(None) => {
                    assert!(Instant::now() < deadline, "stuck at entry {i}");
                    backoff(&mut spins);
                }
                Err(Corrupt) => panic!("corrupt at {i}"),
            }
        }
        // Now and then the consumer falls behind.
        if i % 4096 == 0 {
            std::thread::yield_now();
        }
    }
    assert_eq!(c.try_pop(&mut got), Ok(None));
    let full = producer.join().unwrap();
    assert!(full > 100, "the queue was full {full} times");
}

/// Kills and reaps a child unless it was reaped.
struct Child(libc::pid_t);

impl Child {
    /// Waits for the child: its exit status.
    fn wait(mut self) -> i32 {
        let mut st = 0;
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(self.0, &mut st, 0) };
        assert_eq!(r, self.0);
        self.0 = 0;
        st
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.0 > 0 {
            // SAFETY: our own child, not yet reaped (so the pid is still
            // ours): killed, then reaped.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// The child of `two_processes`: attaches both queues by their
/// descriptors and sends every entry back with its bytes flipped.  Gives
/// up (a nonzero code) after 20 s without progress.
fn echo(down: BorrowedFd<'_>, up: BorrowedFd<'_>, n: u64) -> i32 {
    let (Ok(a), Ok(b)) = (Slots::attach(down, 64, 256), Slots::attach(up, 64, 256)) else {
        return 2;
    };
    let (mut c, mut p) = (a.into_consumer(), b.into_producer());
    let mut buf = [0u8; 240];
    let mut last = Instant::now();
    let mut k = 0;
    while k < n {
        let len = match c.try_pop(&mut buf) {
            Ok(Some(len)) => len,
            Ok(None) if last.elapsed() < Duration::from_secs(20) => {
                std::thread::yield_now();
                continue;
            }
            Ok(None) => return 3,
            Err(Corrupt) => return 4,
        };
        buf[..len].iter_mut().for_each(|b| *b ^= 0x5a);
        loop {
            match p.try_push(&buf[..len]) {
                Ok(_) => break,
                Err(PushError::Full) if last.elapsed() < Duration::from_secs(20) => std::thread::yield_now(),
                Err(_) => return 5,
            }
        }
        k += 1;
        last = Instant::now();
    }
    0
}

/// Two processes: the parent produces into one queue, a forked child
/// (which maps both queues from their descriptors) echoes each entry into
/// the other; the parent checks order and contents.
#[test]
fn two_processes() {
    const N: u64 = 200_000;
    let (down, down_fd) = Slots::create(64, 256).unwrap();
    let (up, up_fd) = Slots::create(64, 256).unwrap();
    let (mut p, mut c) = (down.into_producer(), up.into_consumer());
    // SAFETY: the child runs `echo` (system calls, allocation, which
    // glibc's fork makes safe, no locks of ours) and ends with `_exit`,
    // never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = echo(down_fd.as_fd(), up_fd.as_fd(), N);
        // SAFETY: ends the child without running the test harness.
        unsafe { libc::_exit(code) };
    }
    let child = Child(pid);
    let (mut out, mut want, mut got) = ([0u8; 240], [0u8; 240], [0u8; 240]);
    let (mut sent, mut back) = (0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs(60);
    while back < N {
        assert!(Instant::now() < deadline, "{sent} sent, {back} back");
        let mut idle = true;
        if sent < N {
            let n = entry(sent, &mut out);
            match p.try_push(&out[..n]) {
                Ok(_) => {
                    sent += 1;
                    idle = false;
                }
                Err(PushError::Full) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
        if let Some(m) = c.try_pop(&mut got).unwrap() {
            let n = entry(back, &mut want);
            want[..n].iter_mut().for_each(|b| *b ^= 0x5a);
            assert_eq!(got[..m], want[..n], "entry {back}");
            back += 1;
            idle = false;
        }
        if idle {
            std::thread::yield_now();
        }
    }
    let st = child.wait();
    assert!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "child status {st:#x}"
    );
}

/// Spins for about `n` short pauses.
fn spin(n: usize) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// A consumer that sleeps on an eventfd whenever `prepare_sleep` says so,
/// against a producer with random pauses and batches: every entry wakes
/// it (an entry found waiting after a 1 s sleep is a lost wake-up).  Both
/// sides spin for random short times at the points where a wake-up can be
/// lost (between finding the queue empty and preparing to sleep, between
/// an entry and the doorbell check), so that the races happen.
#[test]
fn doorbell_never_loses_a_wakeup() {
    const N: u64 = 20_000;
    let (s, _fd) = Slots::create(8, 64).unwrap();
    let (mut p, mut c) = s.split();
    let bell = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).unwrap());
    let bell2 = bell.clone();
    let failed = Arc::new(AtomicBool::new(false));
    let failed2 = failed.clone();
    let consumer = std::thread::spawn(move || {
        let (mut i, mut sleeps) = (0u64, 0u32);
        let mut buf = [0u8; 48];
        let mut rng = Rng::new(11);
        while i < N {
            if let Some(n) = c.try_pop(&mut buf).unwrap() {
                assert_eq!(buf[..n], i.to_le_bytes());
                i += 1;
                continue;
            }
            spin(rng.below(400));
            if !c.prepare_sleep() {
                continue;
            }
            let mut fds = [PollFd::new(&*bell2, PollFlags::IN)];
            let r = poll(&mut fds, Some(&Timespec { tv_sec: 1, tv_nsec: 0 })).unwrap();
            if r == 0 && c.ready() {
                failed2.store(true, Ordering::Relaxed);
                return Err(format!("lost wake-up before entry {i} ({sleeps} sleeps)"));
            }
            drain(bell2.as_fd()).unwrap();
            c.wake_up();
            sleeps += 1;
        }
        Ok(sleeps)
    });
    let mut rng = Rng::new(7);
    let mut i = 0u64;
    while i < N && !failed.load(Ordering::Relaxed) {
        match rng.below(16) {
            0 => std::thread::sleep(Duration::from_micros(rng.below(300) as u64)),
            1..=4 => spin(rng.below(2000)),
            5 => std::thread::yield_now(),
            _ => {}
        }
        // Sometimes a batch, with one doorbell check at its end.
        let batch = if rng.below(4) == 0 { 1 + rng.below(4) as u64 } else { 1 };
        let mut pushed = 0;
        while pushed < batch && i < N && !failed.load(Ordering::Relaxed) {
            match p.try_push_quiet(&i.to_le_bytes()) {
                Ok(()) => {
                    i += 1;
                    pushed += 1;
                }
                Err(PushError::Full) => std::thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
        }
        spin(rng.below(100));
        if p.doorbell() == Push::Ring {
            ring(bell.as_fd()).unwrap();
        }
    }
    let sleeps = consumer.join().unwrap().unwrap();
    assert!(sleeps > 100, "only {sleeps} sleeps");
}

/// Runs `other` (playing the other side through `raw`) in a thread while
/// `ours` is called in a loop, for at least 300 ms and until `ours` says
/// it has seen enough (true), at most 20 s.  Whether it has is the answer.
fn against(
    raw: Scribbler,
    mut other: impl FnMut(&Scribbler, &mut Rng) + Send + 'static,
    mut ours: impl FnMut(&mut Rng) -> bool,
) -> bool {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let t = std::thread::spawn(move || {
        let mut rng = Rng::new(99);
        while !stop2.load(Ordering::Relaxed) {
            for _ in 0..64 {
                other(&raw, &mut rng);
            }
        }
    });
    let start = Instant::now();
    let mut rng = Rng::new(5);
    let mut enough = false;
    while !(enough && start.elapsed() > Duration::from_millis(300)) && start.elapsed() < Duration::from_secs(20) {
        for _ in 0..64 {
            enough = ours(&mut rng);
        }
    }
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
    enough
}

/// A producer writing anything anywhere at any time (random words in the
/// header and the slots, and stamps and lengths a consumer would take):
/// the consumer gives entries or `Corrupt`, never panics nor hangs, and
/// what it gives decodes or is refused.
#[test]
fn hostile_producer() {
    let (s, _fd) = Slots::create(16, 128).unwrap();
    let raw = s.scribbler();
    let mut c = s.into_consumer();
    let (mut some, mut none, mut corrupt) = (0u64, 0u64, 0u64);
    let mut buf = [0u8; 112];
    let shape = SendShape {
        kind: QpKind::Ud,
        max_sge: 4,
        max_inline: 64,
    };
    // The consumer's position (its count in the header is scribbled too).
    let taken = Arc::new(AtomicU64::new(0));
    let pos = taken.clone();
    let scribble = move |raw: &Scribbler, rng: &mut Rng| {
        let k = pos.load(Ordering::Relaxed) + rng.below(2) as u64;
        let base = HEADER_WORDS + (k & 15) as usize * 16;
        match rng.below(8) {
            0 => raw.store(rng.below(raw.words()), rng.next()),
            1 => raw.store(rng.below(24), rng.next()),
            2 => raw.store(base, k + 1),
            3 => raw.store(base + 1, rng.next()),
            _ => {
                // An entry a consumer would take (usually).
                raw.store(base + 2 + rng.below(14), rng.next());
                raw.store(base + 1, rng.below(120) as u64);
                raw.store(base, k + 1);
            }
        }
    };
    let enough = against(raw, scribble, |rng| {
        let room = if rng.below(4) == 0 { rng.below(113) } else { 112 };
        match c.try_pop(&mut buf[..room]) {
            Ok(Some(n)) => {
                assert!(n <= room);
                some += 1;
                let _ = decode_send(&buf[..n], &shape);
                let _ = decode_recv(&buf[..n], 6);
                let _ = decode_cqe(&buf[..n]);
            }
            Ok(None) => none += 1,
            Err(Corrupt) => corrupt += 1,
        }
        taken.store(c.taken(), Ordering::Relaxed);
        if rng.below(8) == 0 && c.prepare_sleep() {
            c.wake_up();
        }
        let _ = c.pending_hint();
        some > 500 && corrupt > 50
    });
    assert!(enough, "{some} entries, {none} empty, {corrupt} corrupt");
}

/// A consumer writing anything into its count, the `sleeping` flag and
/// the slots: the producer pushes, finds the queue full or the count
/// `Corrupt`, never panics nor hangs, and never holds more than `depth`.
#[test]
fn hostile_consumer() {
    let (s, _fd) = Slots::create(16, 128).unwrap();
    let raw = s.scribbler();
    let mut p = s.into_producer();
    let (mut ok, mut rings, mut full, mut corrupt, mut long) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let body = [0xa5u8; 120];
    // The producer's position (its count in the header is scribbled too).
    let pushed = Arc::new(AtomicU64::new(0));
    let pos = pushed.clone();
    let scribble = move |raw: &Scribbler, rng: &mut Rng| {
        let produced = pos.load(Ordering::Relaxed);
        match rng.below(7) {
            0 => raw.store(rng.below(raw.words()), rng.next()),
            6 => raw.store(W_PRODUCED, rng.next()),
            1 => raw.store(W_CONSUMED, produced.wrapping_sub(rng.below(20) as u64)),
            2 => raw.store(W_CONSUMED, produced),
            3 => raw.store(W_CONSUMED, rng.next()),
            4 => raw.store(W_SLEEPING, rng.next() & 1),
            _ => raw.store(W_SLEEPING, rng.next()),
        }
    };
    let enough = against(raw, scribble, |rng| {
        let n = rng.below(body.len() + 1);
        let r = if rng.below(2) == 0 {
            p.try_push(&body[..n])
        } else {
            p.try_push_quiet(&body[..n]).map(|()| p.doorbell())
        };
        match r {
            Ok(Push::Quiet) => ok += 1,
            Ok(Push::Ring) => rings += 1,
            Err(PushError::Full) => full += 1,
            Err(PushError::Corrupt) => corrupt += 1,
            Err(PushError::TooLong) => {
                assert!(n > 112);
                long += 1;
            }
        }
        assert!(p.len() <= p.depth());
        pushed.store(ok + rings, Ordering::Relaxed);
        ok > 500 && rings > 50 && full > 50 && corrupt > 50 && long > 0
    });
    let counts = format!("{ok} quiet, {rings} rings, {full} full, {corrupt} corrupt, {long} too long");
    assert!(enough, "{counts}");
}

#[test]
fn an_arm_notifies_once_for_what_it_asked() {
    let (q, _fd) = Slots::create(8, 64).unwrap();
    let (mut p, mut c) = q.split();
    assert!(!p.take_arm(true), "not armed");
    c.arm(false);
    assert!(p.take_arm(false), "any completion");
    assert!(!p.take_arm(true), "one notification per arm");
    c.arm(true);
    assert!(!p.take_arm(false), "solicited only: not for an unsolicited one");
    assert!(p.take_arm(true), "a solicited one");
    assert!(!p.take_arm(true));
    // An arm for any completion stays one for any.
    c.arm(false);
    c.arm(true);
    assert!(p.take_arm(false));
}

#[test]
fn an_arm_goes_on_with_the_queue_that_replaces_it() {
    let (q, _fd) = Slots::create(8, 64).unwrap();
    let (mut old, mut c) = q.split();
    let (nq, _nfd) = Slots::create(16, 64).unwrap();
    let (mut new, _nc) = nq.split();
    c.arm(true);
    new.carry_arm(old.take_any_arm());
    assert!(!old.take_arm(false), "taken from the old queue");
    assert!(!new.take_arm(false), "still solicited only");
    assert!(new.take_arm(true), "the new queue notifies for it");
    // No arm: none carried.
    let (nq2, _fd2) = Slots::create(8, 64).unwrap();
    let (mut new2, _c2) = nq2.split();
    new2.carry_arm(new.take_any_arm());
    assert!(!new2.take_arm(false));
}

/// A path for the direct-transmit window tests.
fn dtx_path(v6: bool) -> DtxPath {
    let (src, dst): (std::net::IpAddr, std::net::IpAddr) = if v6 {
        ("fe80::1".parse().unwrap(), "fe80::2".parse().unwrap())
    } else {
        ("169.254.9.1".parse().unwrap(), "169.254.9.2".parse().unwrap())
    };
    DtxPath {
        src,
        dst,
        dqpn: 0x12_3456,
        pmtu: 1024,
        ifindex: 7,
    }
}

#[test]
fn dtx_window_taken_once_and_its_psn_goes_with_the_direct_entry() {
    for v6 in [false, true] {
        let (s, _fd) = Slots::create(16, 128).unwrap();
        let (mut p, mut c) = s.split();
        // Closed: nothing offered.
        assert!(p.dtx_offer().is_none());
        assert!(c.prepare_sleep());
        // (PSN 0xffffff: the taken word wraps to 0.)
        c.dtx_open(0xff_ffff, &dtx_path(v6));
        let o = p.dtx_offer().expect("an open window");
        assert_eq!((o.psn, o.path), (0xff_ffff, dtx_path(v6)));
        assert!(p.dtx_claim(&o));
        assert!(!p.dtx_claim(&o), "a window is taken once");
        assert!(p.dtx_offer().is_none());
        p.try_push_quiet(b"direct").unwrap();
        c.wake_up();
        assert!(c.dtx_close());
        assert!(c.dtx_pending());
        let mut b = [0u8; 112];
        assert_eq!(c.try_pop(&mut b), Ok(Some(6)));
        let (psn, sent) = c.dtx_taken().expect("taken");
        assert_eq!(psn, 0xff_ffff);
        assert!(sent > 0 && sent <= crate::now_ns());
        assert_eq!(c.dtx_taken(), None, "for one entry only");
        assert!(!c.dtx_pending());
        // Not taken: closing says so, and no PSN goes with the next entry.
        c.dtx_open(0, &dtx_path(v6));
        assert!(p.dtx_offer().is_some());
        assert!(!c.dtx_close());
        assert!(p.dtx_offer().is_none(), "closed");
        assert_eq!(c.dtx_taken(), None);
    }
}

#[test]
fn dtx_window_not_offered_past_an_entry_or_after_a_reopen() {
    let (s, _fd) = Slots::create(16, 128).unwrap();
    let (mut p, mut c) = s.split();
    // An entry not taken yet: the window is not opened, nor offered.
    p.try_push_quiet(b"normal").unwrap();
    c.dtx_open(5, &dtx_path(false));
    assert!(p.dtx_offer().is_none());
    let mut b = [0u8; 112];
    assert_eq!(c.try_pop(&mut b), Ok(Some(6)));
    // An offer made before the window was closed and opened again (another
    // generation) cannot be claimed.
    c.dtx_open(5, &dtx_path(false));
    let old = p.dtx_offer().unwrap();
    assert!(!c.dtx_close());
    c.dtx_open(5, &dtx_path(true));
    assert!(!p.dtx_claim(&old), "a stale offer");
    let o = p.dtx_offer().unwrap();
    assert_eq!(o.path, dtx_path(true));
    // Taken while the queue is open again: a window waiting for its entry
    // is not opened anew.
    assert!(p.dtx_claim(&o));
    assert!(c.dtx_close());
    c.dtx_open(6, &dtx_path(true));
    assert!(p.dtx_offer().is_none());
}

#[test]
fn dtx_word_scribbled_makes_the_queue_corrupt() {
    let (s, _fd) = Slots::create(16, 128).unwrap();
    let w = s.scribbler();
    let (mut p, mut c) = s.split();
    // Scribbled while closed: ignored (only an open window is looked at).
    w.store(W_DTX, u64::MAX);
    assert!(!c.dtx_close());
    let mut b = [0u8; 112];
    assert_eq!(c.try_pop(&mut b), Ok(None));
    // Scribbled while open (not the taken word): corrupt.
    c.dtx_open(9, &dtx_path(false));
    w.store(W_DTX, 0x0200_000a); // taken, but of generation 0
    assert!(!c.dtx_close());
    p.try_push_quiet(b"x").unwrap();
    assert_eq!(c.try_pop(&mut b), Err(Corrupt));
}
