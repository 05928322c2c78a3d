//! Workers and steering (issue 33, plan step 4; nothing uses it yet): the
//! agent's worker sockets on one address, the classic-BPF reuseport program
//! that hands each datagram to the worker owning its destination QP, and the
//! QPN layout that says which worker owns a QP.
//!
//! * **The group.** [`open_workers`] opens N UDP sockets with
//!   `SO_REUSEPORT` and binds them to the same address and port, one after
//!   the other.  The kernel keeps a group's members in an array in the order
//!   they joined, and a reuseport program's return value is an index in that
//!   array: socket `i` of the returned vector is index `i`, worker `i`.  A
//!   member's close moves the *last* member into its hole, so the agent
//!   never closes a worker while it runs (HOSTWIRE-DESIGN.md, 3.1).  A socket
//!   that joins later (a same-user process, an older provider's per-process
//!   wire) gets an index >= N, which the program never returns.
//! * **The program** ([`program`], attached with [`attach`] by
//!   `SO_ATTACH_REUSEPORT_CBPF`, which needs no privilege) runs with the
//!   packet positioned at the UDP payload, the BTH.  `ld [4]` takes bytes
//!   4..8 big endian, `and #0xffffff` keeps the destination QPN (bytes 5..7),
//!   and the program returns [`worker_of`] that QPN.
//! * **Short datagrams.** With fewer than 8 bytes of payload the load fails,
//!   and classic BPF then ends the program with 0: worker 0, which drops the
//!   datagram as malformed.
//! * **No worker?** An index >= N would make the kernel choose a member by
//!   the flow hash (as with no program).  This program returns none: every
//!   QPN names a worker, so a datagram for a QP that no longer exists reaches
//!   the worker its number names, which drops it as it drops a datagram for
//!   any unknown QP.
//!
//! **The layout.**  `worker_of(qpn, n)` is 0 for QPN 1 (QP1, the CM's, lives
//! on worker 0; the program tests for it), else `qpn % n`.  The remainder
//! fits every worker count 1..=64 (CPU counts like 3 or 6 are common; the
//! low bits alone would fit only powers of two) in one ALU instruction
//! (`BPF_MOD`, classic BPF since Linux 3.7), and gives each worker about
//! 2^24 / N numbers.  [`QpnAlloc`] hands them out.  QPN 0 goes to worker 0
//! and the multicast QPN 0xffffff to worker `0xffffff % n`; the allocator
//! gives out neither, nor 1.

use rustix::net::{bind, socket_with, sockopt, AddressFamily, SocketFlags, SocketType};
use std::collections::HashSet;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// The most workers (socket indices 0..64).
pub const MAX_WORKERS: u32 = 64;
/// The number of 24-bit QPNs.
pub const QPN_SPACE: u32 = 1 << 24;
/// The QPNs never handed out: QP0, QP1 and the multicast QPN.
pub const RESERVED: [u32; 3] = [0, 1, 0xff_ffff];

/// The worker of QPN `qpn` (its low 24 bits) among `n` workers: 0 for QPN 1,
/// else `qpn % n`.  `n` is 1..=[`MAX_WORKERS`]; 0 counts as 1.
pub fn worker_of(qpn: u32, n: u32) -> u32 {
    let q = qpn & 0xff_ffff;
    if q == 1 {
        0
    } else {
        q % n.max(1)
    }
}

/// One classic BPF statement.
const fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// The reuseport program for `n` workers (1..=[`MAX_WORKERS`]; 0 counts as
/// 1): it returns the socket index that [`worker_of`] gives the destination
/// QPN.
///
/// ```text
/// 0: ld  [4]                    ; payload bytes 4..8; fewer: return 0
/// 1: and #0xffffff              ; the destination QPN
/// 2: jeq #1, 5, 3               ; QP1: worker 0
/// 3: mod #n
/// 4: ret a
/// 5: ret #0
/// ```
pub fn program(n: u32) -> Vec<libc::sock_filter> {
    use libc::{BPF_A, BPF_ABS, BPF_ALU, BPF_AND, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_MOD, BPF_RET, BPF_W};
    vec![
        stmt(BPF_LD | BPF_W | BPF_ABS, 4),
        stmt(BPF_ALU | BPF_AND | BPF_K, 0xff_ffff),
        libc::sock_filter {
            code: (BPF_JMP | BPF_JEQ | BPF_K) as u16,
            jt: 2,
            jf: 0,
            k: 1,
        },
        stmt(BPF_ALU | BPF_MOD | BPF_K, n.max(1)),
        stmt(BPF_RET | BPF_A, 0),
        stmt(BPF_RET | BPF_K, 0),
    ]
}

/// Attaches the classic BPF program `prog` to the reuseport group of `sock`
/// (`SO_ATTACH_REUSEPORT_CBPF`).  It replaces any program the group had and
/// stays with the group when `sock` closes.  `EINVAL` for an empty program,
/// one of more than `BPF_MAXINSNS` (4096) instructions, one the kernel's
/// checker refuses, or a socket bound without `SO_REUSEPORT`.
pub fn attach(sock: BorrowedFd<'_>, prog: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(prog.len())
        .ok()
        .filter(|&l| l > 0 && l <= 4096)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel reads the `sock_fprog` and copies `len`
    // instructions from `prog`, which outlives the call; it writes nothing.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Opens the `n` (1..=[`MAX_WORKERS`], else `EINVAL`) worker sockets on
/// `addr` and attaches [`program`]`(n)` to their group; the vector's index
/// is the worker's.  Port 0 binds the first to an ephemeral port and the
/// others to that port.
///
/// The sockets are UDP, `SO_REUSEPORT`, non-blocking and close-on-exec, and
/// IPv6 ones `IPV6_V6ONLY`; options for sending or ancillary data are the
/// caller's.  **Indices are positions in the kernel's array**: a close
/// moves the last member into the hole, so the caller keeps every worker
/// open as long as it runs.
///
/// Errors: what `socket`/`bind` give, notably `EADDRINUSE` when another
/// user's socket, or one without `SO_REUSEPORT`, holds the address.  The
/// group must also be ours alone: when `/proc/self/net/udp` (or `udp6`)
/// shows more sockets on the address than ours (a same-user group that was
/// there first, whose members would hold indices 0.., or one that joined
/// meanwhile), the workers are closed before any program is attached (the
/// other group's program stays as it was) and the answer is `EADDRINUSE`.
/// With port 0 (the kernel may choose a port where a same-user group sits)
/// that is tried again on another port, 16 times at most.  Without procfs
/// the check is skipped.
pub fn open_workers(addr: SocketAddr, n: u32) -> io::Result<Vec<UdpSocket>> {
    if !(1..=MAX_WORKERS).contains(&n) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let tries = if addr.port() == 0 { 16 } else { 1 };
    for _ in 0..tries {
        let mut at = addr;
        let mut workers = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let s = worker_socket(at)?;
            if at.port() == 0 {
                at.set_port(s.local_addr()?.port());
            }
            workers.push(s);
        }
        if bound_count(at).is_some_and(|c| c > workers.len()) {
            continue;
        }
        attach(workers[0].as_fd(), &program(n))?;
        return Ok(workers);
    }
    Err(io::Error::from_raw_os_error(libc::EADDRINUSE))
}

/// One worker socket bound to `at` (see [`open_workers`]).
fn worker_socket(at: SocketAddr) -> io::Result<UdpSocket> {
    let fam = if at.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = socket_with(
        fam,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    if at.is_ipv6() {
        sockopt::set_ipv6_v6only(&fd, true)?;
    }
    sockopt::set_socket_reuseport(&fd, true)?;
    bind(&fd, &at)?;
    Ok(UdpSocket::from(fd))
}

/// How many UDP sockets of our network namespace are bound to exactly
/// `addr` (address and port; the scope id is not shown), from
/// `/proc/self/net/udp` or `udp6`, where an address is printed as its
/// 32-bit words in host order; None when that cannot be read.
fn bound_count(addr: SocketAddr) -> Option<usize> {
    let (path, words) = match addr {
        SocketAddr::V4(a) => ("/proc/self/net/udp", a.ip().octets().to_vec()),
        SocketAddr::V6(a) => ("/proc/self/net/udp6", a.ip().octets().to_vec()),
    };
    let mut key: String = words
        .chunks_exact(4)
        .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    key.push_str(&format!(":{:04X}", addr.port()));
    let table = std::fs::read_to_string(path).ok()?;
    Some(
        table
            .lines()
            .skip(1)
            .filter(|l| l.split_whitespace().nth(1) == Some(key.as_str()))
            .count(),
    )
}

/// The QPNs of `n` workers: for each worker `w`, the numbers `w`, `w + n`,
/// `w + 2n`, ... below the space (2^24), without [`RESERVED`], so that
/// [`worker_of`] of each is `w`.  Each worker hands its numbers out in a
/// cycle from where the last one was taken, as rxe does: a freed number
/// comes back only after the rest of the worker's space, so a late datagram
/// of an old QP does not land on a new one.
pub struct QpnAlloc {
    n: u32,
    space: u32,
    /// Per worker: the next number to try.
    next: Vec<u32>,
    /// Per worker: how many of its numbers are free.
    free: Vec<u32>,
    used: HashSet<u32>,
}

impl QpnAlloc {
    /// The allocator of `n` workers (1..=[`MAX_WORKERS`]), each starting
    /// its cycle at its first number >= `first` (from the agent's pid, say,
    /// so a restarted agent does not start where the last one did).
    pub fn new(n: u32, first: u32) -> QpnAlloc {
        QpnAlloc::with_space(n, QPN_SPACE, first)
    }

    /// The same for the numbers below `space` (2..=2^24; the tests' small
    /// spaces).  Panics when `n` or `space` is out of range.
    pub fn with_space(n: u32, space: u32, first: u32) -> QpnAlloc {
        assert!((1..=MAX_WORKERS).contains(&n) && (2..=QPN_SPACE).contains(&space));
        let first = first % space;
        let next = (0..n)
            .map(|w| {
                let q = first + (w + n - first % n) % n;
                if q < space {
                    q
                } else {
                    w
                }
            })
            .collect();
        let free = (0..n)
            .map(|w| {
                let all = if w < space { (space - 1 - w) / n + 1 } else { 0 };
                all - RESERVED.iter().filter(|&&r| r < space && r % n == w).count() as u32
            })
            .collect();
        QpnAlloc {
            n,
            space,
            next,
            free,
            used: HashSet::new(),
        }
    }

    /// The number of workers.
    pub fn workers(&self) -> u32 {
        self.n
    }

    /// A QPN of worker `worker`, in use until [`QpnAlloc::free`]; None when
    /// every number of the worker is in use, or there is no such worker.
    pub fn alloc(&mut self, worker: u32) -> Option<u32> {
        let w = worker as usize;
        if *self.free.get(w)? == 0 {
            return None;
        }
        loop {
            let q = self.next[w];
            self.next[w] = match q.checked_add(self.n) {
                Some(nq) if nq < self.space => nq,
                _ => worker,
            };
            if q < self.space && !RESERVED.contains(&q) && self.used.insert(q) {
                self.free[w] -= 1;
                return Some(q);
            }
        }
    }

    /// Gives `qpn` back; false when it was not in use.
    pub fn free(&mut self, qpn: u32) -> bool {
        if !self.used.remove(&qpn) {
            return false;
        }
        self.free[(qpn % self.n) as usize] += 1;
        true
    }

    /// `qpn` is in use.
    pub fn in_use(&self, qpn: u32) -> bool {
        self.used.contains(&qpn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    use std::time::{Duration, Instant};

    /// Runs `prog` as the kernel does, on `payload`, for the instructions
    /// [`program`] emits; a load past the end returns 0.
    fn run(prog: &[libc::sock_filter], payload: &[u8]) -> u32 {
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = prog[pc];
            pc += 1;
            match i.code as u32 {
                0x20 => match payload.get(i.k as usize..i.k as usize + 4) {
                    Some(b) => a = u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                    None => return 0,
                },
                0x54 => a &= i.k,
                0x94 => a %= i.k,
                0x15 => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                0x16 => return a,
                0x06 => return i.k,
                c => panic!("opcode {c:#x}"),
            }
        }
    }

    /// A 12-byte BTH-like payload for `qpn`, with `byte4` (FECN/BECN) above it.
    fn bth(qpn: u32, byte4: u8) -> [u8; 12] {
        let mut p = [0u8; 12];
        p[0] = 0x04; // RC SEND_ONLY
        p[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
        p[4..8].copy_from_slice(&(u32::from(byte4) << 24 | qpn).to_be_bytes());
        p[8..12].copy_from_slice(&0x42u32.to_be_bytes());
        p
    }

    /// The datagrams received by the workers until `want` of them came or 5 s
    /// passed: (worker, payload).
    fn collect(workers: &[UdpSocket], want: usize) -> Vec<(usize, Vec<u8>)> {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut got = Vec::new();
        while got.len() < want && Instant::now() < deadline {
            let mut fds: Vec<PollFd<'_>> = workers.iter().map(|w| PollFd::new(w, PollFlags::IN)).collect();
            let _ = poll(
                &mut fds,
                Some(&Timespec {
                    tv_sec: 0,
                    tv_nsec: 20_000_000,
                }),
            );
            for (i, w) in workers.iter().enumerate() {
                let mut buf = [0u8; 64];
                while let Ok(len) = w.recv(&mut buf) {
                    got.push((i, buf[..len].to_vec()));
                }
            }
        }
        got
    }

    const LOOPBACKS: [IpAddr; 2] = [IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)];

    #[test]
    fn program_matches_layout() {
        for n in 1..=MAX_WORKERS {
            let prog = program(n);
            let mut x = 0x1234_5678u32;
            let mut qpns = vec![0, 1, 2, 3, n, n + 1, 0xff_fffe, 0xff_ffff];
            for _ in 0..200 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                qpns.push(x >> 8);
            }
            for q in qpns {
                for b4 in [0, 0xc0, 0xff] {
                    assert_eq!(run(&prog, &bth(q, b4)), worker_of(q, n), "n {n} qpn {q:#x}");
                }
            }
            for len in 0..8 {
                assert_eq!(run(&prog, &bth(5, 0)[..len]), 0);
            }
        }
        assert_eq!(worker_of(1, 8), 0);
        assert_eq!(worker_of(0x100_0009, 8), 1);
    }

    #[test]
    fn steers_by_qpn() {
        for ip in LOOPBACKS {
            for n in [1, 2, 3, 4, 8] {
                let workers = open_workers(SocketAddr::new(ip, 0), n).expect("open_workers");
                assert_eq!(workers.len(), n as usize);
                let to = workers[0].local_addr().expect("local_addr");
                for w in &workers {
                    assert_eq!(w.local_addr().expect("local_addr"), to);
                }
                let mut alloc = QpnAlloc::new(n, 0x1000);
                let mut qpns = vec![1, 0, 0xff_ffff];
                for w in 0..n {
                    for _ in 0..3 {
                        qpns.push(alloc.alloc(w).expect("a QPN"));
                    }
                }
                // One sender, so one flow: the flow hash alone would give one worker all.
                let tx = UdpSocket::bind(SocketAddr::new(ip, 0)).expect("sender");
                for (i, &q) in qpns.iter().enumerate() {
                    tx.send_to(&bth(q, if i % 2 == 1 { 0xc0 } else { 0 }), to)
                        .expect("send");
                }
                let got = collect(&workers, qpns.len());
                assert_eq!(got.len(), qpns.len(), "{ip} n {n}: {got:?}");
                let mut seen: Vec<u32> = got
                    .iter()
                    .map(|(w, p)| {
                        let q = u32::from_be_bytes([0, p[5], p[6], p[7]]);
                        assert_eq!(*w as u32, worker_of(q, n), "{ip} n {n} qpn {q:#x}");
                        q
                    })
                    .collect();
                seen.sort_unstable();
                qpns.sort_unstable();
                assert_eq!(seen, qpns);
            }
        }
    }

    #[test]
    fn short_datagrams_go_to_worker_0() {
        for ip in LOOPBACKS {
            let workers = open_workers(SocketAddr::new(ip, 0), 4).expect("open_workers");
            let to = workers[0].local_addr().expect("local_addr");
            let tx = UdpSocket::bind(SocketAddr::new(ip, 0)).expect("sender");
            let q = (0..).find(|&q| worker_of(q, 4) == 3).expect("a QPN of worker 3");
            let payload = bth(q, 0);
            for len in [3, 0, 7, 12] {
                tx.send_to(&payload[..len], to).expect("send");
            }
            let got = collect(&workers, 4);
            let mut lens: Vec<(usize, usize)> = got.iter().map(|(w, p)| (*w, p.len())).collect();
            lens.sort_by_key(|&(w, _)| w);
            assert_eq!(lens, [(0, 3), (0, 0), (0, 7), (3, 12)], "{ip}");
        }
    }

    #[test]
    fn refuses_what_is_not_ours() {
        for n in [0, MAX_WORKERS + 1] {
            let e = open_workers(SocketAddr::new(LOOPBACKS[0], 0), n).expect_err("n out of range");
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        }
        assert!(attach(UdpSocket::bind("127.0.0.1:0").expect("udp").as_fd(), &[]).is_err());
        for ip in LOOPBACKS {
            // A socket without SO_REUSEPORT: the kernel refuses the bind.
            let plain = UdpSocket::bind(SocketAddr::new(ip, 0)).expect("udp");
            let e = open_workers(plain.local_addr().expect("local_addr"), 2).expect_err("taken");
            assert_eq!(e.raw_os_error(), Some(libc::EADDRINUSE), "{ip}");
            // A same-user group there first: ours would not be indices 0..n.
            let first = open_workers(SocketAddr::new(ip, 0), 1).expect("open_workers");
            let e = open_workers(first[0].local_addr().expect("local_addr"), 2).expect_err("a group");
            assert_eq!(e.raw_os_error(), Some(libc::EADDRINUSE), "{ip}");
        }
    }

    #[test]
    fn alloc_unique_and_in_layout() {
        for n in [1, 3, 8] {
            let mut a = QpnAlloc::new(n, 0xff_ff00);
            let mut all = HashSet::new();
            for i in 0..60_000u32 {
                let w = i % n;
                let q = a.alloc(w).expect("a QPN");
                assert!(q < QPN_SPACE && !RESERVED.contains(&q), "{q:#x}");
                assert_eq!(worker_of(q, n), w);
                assert!(all.insert(q), "{q:#x} twice");
                assert!(a.in_use(q));
            }
        }
        // The cycle wraps past the multicast QPN, 0 and 1.
        assert_eq!(QpnAlloc::new(1, 0xff_fffe).alloc(0), Some(0xff_fffe));
        let mut a = QpnAlloc::new(1, 0xff_ffff);
        assert_eq!(a.alloc(0), Some(2));
        // 0xffffff % 3 == 0: worker 0 skips it and 0.
        assert_eq!(QpnAlloc::new(3, 0xff_fffd).alloc(0), Some(3));
        assert_eq!(a.alloc(1), None);
    }

    #[test]
    fn alloc_exhaustion_and_cycle() {
        let mut a = QpnAlloc::with_space(4, 16, 0);
        let mut per: Vec<Vec<u32>> = Vec::new();
        for w in 0..4 {
            per.push(std::iter::from_fn(|| a.alloc(w)).collect());
        }
        assert_eq!(
            per,
            [vec![4, 8, 12], vec![5, 9, 13], vec![2, 6, 10, 14], vec![3, 7, 11, 15]]
        );
        assert!(a.free(8));
        assert!(!a.free(8));
        assert!(!a.free(1));
        assert_eq!(a.alloc(0), Some(8));
        assert_eq!(a.alloc(0), None);
        assert_eq!(a.alloc(4), None);

        // A freed number comes back only after the rest of the worker's space.
        let mut a = QpnAlloc::with_space(2, 64, 0);
        assert_eq!(a.alloc(1), Some(3));
        assert!(a.free(3));
        let order: Vec<u32> = std::iter::from_fn(|| a.alloc(1)).collect();
        let want: Vec<u32> = (5..64).step_by(2).chain([3]).collect();
        assert_eq!(order, want);
        assert!(a.free(33));
        assert_eq!(a.alloc(1), Some(33));
        assert_eq!(a.workers(), 2);
    }
}
