//! A forked child is the client: it holds the memory (an arena mapped
//! before the fork, so both know its address) and the access page, and
//! obeys commands on a pipe (unmap or protect a page, take lock words,
//! increment a counter under its lock as the provider's responders do).
//! The parent builds the key table the client would have registered and
//! places through `ClientMem`.

use super::*;
use ibverbs_abi::*;
use std::sync::atomic::AtomicU64;

const PAGE: usize = 4096;
const PAGES: usize = 64;
/// The IOVA of MR `FULL` (its process address is the arena's).
const IOVA: u64 = 0x1000_0000;
/// Full rights, PD 1, pages 0..16, at `IOVA`.
const FULL: u32 = 0x101;
/// Remote read only (no local write), PD 1, pages 16..20, IOVA = address.
const RO: u32 = 0x201;
/// Full rights, PD 2, pages 20..24.
const PD2: u32 = 0x301;
/// Full rights, PD 1, pages 24..64, IOVA = address (the batches' MR).
const BIG: u32 = 0x401;
const ALL: u32 = IBV_ACCESS_LOCAL_WRITE
    | IBV_ACCESS_REMOTE_WRITE
    | IBV_ACCESS_REMOTE_READ
    | IBV_ACCESS_REMOTE_ATOMIC
    | IBV_ACCESS_MW_BIND;

/// A client: its pid, the command pipe, the answer pipe; killed and
/// reaped when dropped.
struct Kid {
    pid: libc::pid_t,
    cmd: OwnedFd,
    ack: OwnedFd,
    reaped: bool,
}

/// What both processes share: the arena (private: the child's copy is
/// the client's memory) and the access page (shared).
struct World {
    /// The access page's memfd name (one per test: `ours` counts them).
    name: String,
    arena: u64,
    access_fd: OwnedFd,
    access: *const AtomicU64,
}

// SAFETY: the raw pointers name mappings that live until the test ends;
// the access page is reached through atomics only.
unsafe impl Sync for World {}

impl World {
    fn new() -> World {
        use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags, SealFlags};
        // SAFETY: a fresh private anonymous mapping.
        let a = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGES * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(a, libc::MAP_FAILED);
        // SAFETY: the mapping just made, ours alone.
        let s = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, PAGES * PAGE) };
        for (i, b) in s.iter_mut().enumerate() {
            *b = (i * 7 % 251) as u8;
        }
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!("place-test-access-{}", N.fetch_add(1, Ordering::Relaxed));
        let fd = memfd_create(name.as_str(), MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
        ftruncate(&fd, crate::proto::ACCESS_BYTES as u64).unwrap();
        fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL).unwrap();
        // SAFETY: a shared mapping of the sealed file of that size.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                crate::proto::ACCESS_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let access = p as *const AtomicU64;
        // SAFETY: the first word of the mapping.
        unsafe { (*access).store(crate::proto::ACCESS_MAGIC, Ordering::Release) };
        World {
            name,
            arena: a as u64,
            access_fd: fd,
            access,
        }
    }

    fn page(&self, i: usize) -> u64 {
        self.arena + (i * PAGE) as u64
    }

    /// Lock word `i` of the access page.
    fn word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: `i` < ACCESS_BYTES / 8 (the callers' indices), a live
        // mapping.
        unsafe { &*self.access.add(i) }
    }

    /// The key table the client registered.
    fn keys(&self) -> Keys {
        let mut k = Keys::default();
        let mr = |pd, va, addr, pages: usize, access| swrdma_rc::keys::MrEnt {
            pd,
            va,
            addr,
            len: (pages * PAGE) as u64,
            access,
            mw: 0,
            parent: 0,
            qpn: 0,
        };
        k.insert(FULL, mr(1, self.page(0), IOVA, 16, ALL));
        k.insert(RO, mr(1, self.page(16), self.page(16), 4, IBV_ACCESS_REMOTE_READ));
        k.insert(PD2, mr(2, self.page(20), self.page(20), 4, ALL));
        k.insert(BIG, mr(1, self.page(24), self.page(24), 40, ALL));
        k
    }

    fn mem(&self, kid: &Kid, pidfd: bool) -> ClientMem {
        let pfd = pidfd.then(|| {
            rustix::process::pidfd_open(
                rustix::process::Pid::from_raw(kid.pid).unwrap(),
                rustix::process::PidfdFlags::empty(),
            )
            .unwrap()
        });
        ClientMem::new(kid.pid, pfd, false, AccessPage::map(self.access_fd.as_fd()).unwrap())
    }

    /// Forks the client.
    fn fork(&self) -> Kid {
        let (cr, cw) = rustix::pipe::pipe().unwrap();
        let (ar, aw) = rustix::pipe::pipe().unwrap();
        // SAFETY: the child runs `serve` (system calls and atomics only, no
        // allocation, no lock) and ends with `_exit`, never returning into
        // the test harness.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            serve(self, cr.as_raw_fd(), aw.as_raw_fd());
            // SAFETY: ends the child without running the test harness.
            unsafe { libc::_exit(0) };
        }
        let k = Kid {
            pid,
            cmd: cw,
            ack: ar,
            reaped: false,
        };
        k.ask(b'0', 0);
        k
    }
}

/// The child's loop: a command byte and an 8-byte argument, one answer
/// byte each.
fn serve(w: &World, cmd: i32, ack: i32) {
    let mut b = [0u8; 9];
    loop {
        let mut got = 0;
        while got < 9 {
            // SAFETY: reads into our stack buffer.
            let n = unsafe { libc::read(cmd, b[got..].as_mut_ptr().cast(), 9 - got) };
            if n <= 0 {
                return;
            }
            got += n as usize;
        }
        let arg = u64::from_ne_bytes(b[1..9].try_into().unwrap_or([0; 8]));
        let me = std::process::id() as u64;
        match b[0] {
            // SAFETY: unmaps a page of our arena (our own copy).
            b'u' => unsafe {
                libc::munmap(arg as *mut libc::c_void, PAGE);
            },
            // SAFETY: makes a page of our arena read-only.
            b'p' => unsafe {
                libc::mprotect(arg as *mut libc::c_void, PAGE, libc::PROT_READ);
            },
            // Takes the lock word of address `arg` and keeps it.
            b'h' => w.word(lock_word(arg)).store(me, Ordering::SeqCst),
            b'n' => {
                // `arg` increments of the arena's word at page 1 under its
                // lock, as the provider's own atomics (`locks.rs`,
                // `mem.rs`): compare-and-swap 0 -> pid, the plain
                // read-modify-write, release.
                let addr = w.page(1);
                let lw = w.word(lock_word(addr));
                for _ in 0..arg {
                    while lw
                        .compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed)
                        .is_err()
                    {
                        std::thread::yield_now();
                    }
                    // SAFETY: our own arena's word, 8-aligned.
                    unsafe {
                        let p = addr as *mut u64;
                        p.write_volatile(p.read_volatile() + 1);
                    }
                    lw.store(0, Ordering::Release);
                }
            }
            // SAFETY: makes this process non-dumpable.
            b'd' => unsafe {
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            },
            _ => {}
        }
        // SAFETY: writes one byte from our stack.
        if unsafe { libc::write(ack, b.as_ptr().cast(), 1) } != 1 {
            return;
        }
    }
}

impl Kid {
    fn ask(&self, c: u8, arg: u64) {
        let mut b = [c; 9];
        b[1..].copy_from_slice(&arg.to_ne_bytes());
        assert_eq!(rustix::io::write(&self.cmd, &b), Ok(9));
        let mut a = [0u8; 1];
        assert_eq!(rustix::io::read(&self.ack, &mut a), Ok(1), "the client answers");
    }

    /// Kills it (not reaped: a zombie).
    fn kill(&self) {
        // SAFETY: signals our own child.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let mut si: libc::siginfo_t = unsafe_zeroed();
        // SAFETY: waits, leaving it a zombie, for our own child to exit.
        unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut si,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
    }

    fn reap(&mut self) {
        if !self.reaped {
            // SAFETY: signals and reaps our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
            self.reaped = true;
        }
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        self.reap();
    }
}

fn unsafe_zeroed() -> libc::siginfo_t {
    // SAFETY: siginfo_t is plain integers: all-zero is valid.
    unsafe { std::mem::zeroed() }
}

/// `len` bytes at the client's `addr`, read directly.
fn peek(pid: libc::pid_t, addr: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    let l = libc::iovec {
        iov_base: v.as_mut_ptr().cast(),
        iov_len: len,
    };
    let r = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: reads into our own vector.
    let n = unsafe { libc::process_vm_readv(pid, &l, 1, &r, 1, 0) };
    assert_eq!(n, len as isize, "peek {addr:#x}");
    v
}

fn target(keys: &Keys) -> Target<'_> {
    Target {
        qpn: 7,
        pd: 1,
        qp_access: IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
        keys,
    }
}

fn sge(addr: u64, length: u32, lkey: u32) -> ibv_sge {
    ibv_sge { addr, length, lkey }
}

/// Our descriptors and mappings that name the test's objects: pidfds of
/// `pid`, and mappings of the access page of `w`.
fn ours(w: &World, pid: libc::pid_t) -> (usize, usize) {
    let mut pidfds = 0;
    for e in std::fs::read_dir("/proc/self/fdinfo").unwrap().flatten() {
        let info = std::fs::read_to_string(e.path()).unwrap_or_default();
        let is_pidfd = std::fs::read_link(format!("/proc/self/fd/{}", e.file_name().to_string_lossy()))
            .is_ok_and(|l| l.to_string_lossy().contains("pidfd"));
        if is_pidfd
            && info
                .lines()
                .any(|l| l.split_whitespace().eq(["Pid:", &pid.to_string()]))
        {
            pidfds += 1;
        }
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let me = format!("/memfd:{} ", w.name);
    (pidfds, maps.lines().filter(|l| l.contains(&me)).count())
}

#[test]
fn place_writes_reads_and_local_lists() {
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    let t = target(&keys);
    let m = w.mem(&kid, true);
    // A WRITE at an IOVA that is not the address.
    assert_eq!(m.write(&t, FULL, IOVA + 100, b"hello"), Ok(()));
    assert_eq!(peek(kid.pid, w.page(0) + 100, 5), b"hello");
    let mut out = [0u8; 5];
    assert_eq!(m.read(&t, FULL, IOVA + 100, &mut out), Ok(()));
    assert_eq!(&out, b"hello");
    // Zero length: nothing checked, nothing touched (IBTA C9-88).
    let calls = m.calls();
    assert_eq!(m.write(&t, 0xdead, 0, &[]), Ok(()));
    assert_eq!(m.calls(), calls);
    // A local list of two SGEs, from byte 5.
    let list = [sge(IOVA + 1000, 10, FULL), sge(IOVA + 5000, 20, FULL)];
    let data: Vec<u8> = (0..20).map(|i| 0xa0 + i).collect();
    assert_eq!(m.scatter(&keys, 1, &list, 5, &data), Ok(()));
    assert_eq!(peek(kid.pid, w.page(0) + 1005, 5), &data[..5]);
    assert_eq!(peek(kid.pid, w.page(0) + 5000, 15), &data[5..]);
    let mut back = [0u8; 20];
    assert_eq!(m.gather(&keys, 1, &list, 5, &mut back), Ok(()));
    assert_eq!(&back[..], &data[..]);
    // Too short for the data: LOC_LEN_ERR (the receive path's).
    assert_eq!(
        m.scatter(&keys, 1, &list, 11, &data),
        Err(Error::Local(IBV_WC_LOC_LEN_ERR))
    );
    // The 8-byte store of ATOMIC_WRITE, and compare-and-swap both ways.
    let c = IOVA + 2048;
    let before = u64::from_ne_bytes(peek(kid.pid, w.page(0) + 2048, 8).try_into().unwrap());
    assert_eq!(m.atomic(&t, FULL, c, Atomic::Store(5)), Ok(before));
    assert_eq!(m.atomic(&t, FULL, c, Atomic::Cas(1, 9)), Ok(5), "no swap");
    assert_eq!(peek(kid.pid, w.page(0) + 2048, 8), 5u64.to_ne_bytes());
    assert_eq!(m.atomic(&t, FULL, c, Atomic::Cas(5, 9)), Ok(5));
    assert_eq!(m.atomic(&t, FULL, c, Atomic::Add(3)), Ok(9));
    assert_eq!(peek(kid.pid, w.page(0) + 2048, 8), 12u64.to_ne_bytes());
}

#[test]
fn place_refused_rights_touch_nothing() {
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    let t = target(&keys);
    let m = w.mem(&kid, true);
    let before = peek(kid.pid, w.arena, PAGES * PAGE);
    let calls = m.calls();
    let access = Error::Remote(Fault::RemoteAccess);
    let invalid = Error::Remote(Fault::InvalidRequest);
    let prot = Error::Local(IBV_WC_LOC_PROT_ERR);
    let d = [0x55u8; 64];
    // The responder's checks (Target::check): an unknown key, another
    // PD's key, past the end, before the start, no REMOTE_WRITE.
    assert_eq!(m.write(&t, 0x999, IOVA, &d), Err(access));
    assert_eq!(m.write(&t, PD2, w.page(20), &d), Err(access));
    assert_eq!(m.write(&t, FULL, IOVA + (16 * PAGE) as u64 - 63, &d), Err(access));
    assert_eq!(m.write(&t, FULL, IOVA - 1, &d), Err(access));
    assert_eq!(m.write(&t, FULL, u64::MAX - 10, &d), Err(access));
    assert_eq!(m.write(&t, RO, w.page(16), &d), Err(access));
    assert_eq!(m.atomic(&t, RO, w.page(16), Atomic::Add(1)), Err(access));
    // The QP's own rights, an atomic's alignment: invalid request.
    let no_write = Target {
        qp_access: IBV_ACCESS_REMOTE_READ,
        ..target(&keys)
    };
    assert_eq!(m.write(&no_write, FULL, IOVA, &d), Err(invalid));
    assert_eq!(m.atomic(&no_write, FULL, IOVA, Atomic::Add(1)), Err(invalid));
    assert_eq!(m.atomic(&t, FULL, IOVA + 4, Atomic::Add(1)), Err(invalid));
    // A type 2 window through another QP.
    let mut wkeys = w.keys();
    let win = swrdma_rc::keys::WindowBind {
        ty: IBV_MW_TYPE_2,
        old: 0x500,
        pd: 1,
        access: IBV_ACCESS_REMOTE_WRITE,
        rkey: 0x22,
        range: Some((FULL, IOVA, 64)),
    };
    let wkey = wkeys.bind_window(9, 1, &win).unwrap();
    let through = |qpn| Target { qpn, ..target(&wkeys) };
    assert_eq!(m.write(&through(7), wkey, IOVA, &d), Err(access));
    // Local lists (check_local): another PD, no LOCAL_WRITE to scatter,
    // a window's key, past the MR.
    let mut out = [0u8; 64];
    assert_eq!(m.scatter(&keys, 2, &[sge(IOVA, 64, FULL)], 0, &d), Err(prot));
    assert_eq!(m.scatter(&keys, 1, &[sge(w.page(16), 64, RO)], 0, &d), Err(prot));
    assert_eq!(m.scatter(&wkeys, 1, &[sge(IOVA, 64, wkey)], 0, &d), Err(prot));
    assert_eq!(
        m.gather(&keys, 1, &[sge(IOVA + (16 * PAGE) as u64 - 8, 64, FULL)], 0, &mut out),
        Err(prot)
    );
    assert_eq!(m.calls(), calls, "no copy was tried");
    assert_eq!(peek(kid.pid, w.arena, PAGES * PAGE), before, "nothing touched");
    // What the rights allow: reading from a read-only MR, both ways, and
    // the window through its QP.
    assert_eq!(m.read(&t, RO, w.page(16) + 8, &mut out), Ok(()));
    assert_eq!(&out[..], &before[16 * PAGE + 8..][..64]);
    assert_eq!(m.gather(&keys, 1, &[sge(w.page(16), 64, RO)], 0, &mut out), Ok(()));
    assert_eq!(m.write(&through(9), wkey, IOVA, &d), Ok(()));
    assert_eq!(peek(kid.pid, w.arena, 64), d);
}

/// Consecutive placements into contiguous memory from contiguous data:
/// one call; separate ranges: one call per IOV_MAX.
#[test]
fn place_batches_merge_and_split_at_iov_max() {
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    let t = target(&keys);
    let m = w.mem(&kid, true);
    let n = 3000;
    let data: Vec<u8> = (0..n * 16).map(|i| (i % 253) as u8).collect();
    let at = |i: usize, gap: usize| w.page(24) + (i * (16 + gap)) as u64;
    let puts: Vec<Put> = (0..n)
        .map(|i| Put {
            to: Region::Remote {
                target: &t,
                rkey: BIG,
                va: at(i, 0),
            },
            data: &data[i * 16..][..16],
            stream: i as u64 % 5,
        })
        .collect();
    let calls = m.calls();
    assert!(m.put_batch(&puts).iter().all(|r| r.is_ok()));
    assert_eq!(m.calls() - calls, 1, "merged into one call");
    assert_eq!(peek(kid.pid, w.page(24), n * 16), data);
    // 16-byte gaps on the client's side: 3000 ranges, 3 calls.
    let puts: Vec<Put> = (0..n)
        .map(|i| Put {
            to: Region::Remote {
                target: &t,
                rkey: BIG,
                va: at(i, 16),
            },
            data: &data[i * 16..][..16],
            stream: 0,
        })
        .collect();
    let calls = m.calls();
    assert!(m.put_batch(&puts).iter().all(|r| r.is_ok()));
    assert_eq!(m.calls() - calls, n.div_ceil(IOV_MAX) as u64);
    let got = peek(kid.pid, w.page(24), n * 32);
    for i in 0..n {
        assert_eq!(&got[i * 32..][..16], &data[i * 16..][..16], "placement {i}");
    }
    // The same back with one get batch, into separate buffers (a local
    // list this time, from its offsets).
    let list = [sge(w.page(24), (n * 32) as u32, BIG)];
    let mut bufs = vec![[0u8; 16]; n];
    let mut gets: Vec<Get> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| Get {
            from: Region::Local {
                keys: &keys,
                pd: 1,
                sges: &list,
                off: (i * 32) as u64,
            },
            out: b,
            stream: 0,
        })
        .collect();
    let calls = m.calls();
    assert!(m.get_batch(&mut gets).iter().all(|r| r.is_ok()));
    assert_eq!(m.calls() - calls, n.div_ceil(IOV_MAX) as u64);
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(&b[..], &data[i * 16..][..16]);
    }
}

/// A batch across a page the client unmapped: exactly the placements that
/// lie in mapped memory complete; the one the kernel stopped in has its
/// bytes up to the hole; a stream stops at its first failure.
#[test]
fn place_partial_batches_report_each_placement() {
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    let t = target(&keys);
    let m = w.mem(&kid, true);
    // The hole: page 26 of the arena (bytes 8192..12288 from page 24).
    let base = w.page(24);
    kid.ask(b'u', w.page(26));
    let before = peek(kid.pid, w.page(27), PAGE);
    let data: Vec<u8> = (0..20_000).map(|i| (i % 249) as u8 ^ 0x3c).collect();
    let access = Error::Remote(Fault::RemoteAccess);
    // 20 consecutive placements of 1000 bytes, each its own stream.
    let puts = |same: bool| -> Vec<Put> {
        (0..20)
            .map(|i| Put {
                to: Region::Remote {
                    target: &t,
                    rkey: BIG,
                    va: base + (i * 1000) as u64,
                },
                data: &data[i * 1000..][..1000],
                stream: if same { 0 } else { i as u64 },
            })
            .collect()
    };
    let r = m.put_batch(&puts(false));
    // 0..8 end by 8192; 8 crosses into the hole; 9..11 lie in it; 12
    // starts in it; 13.. are past it.
    let want: Vec<Result<(), Error>> = (0..20)
        .map(|i| if (8..=12).contains(&i) { Err(access) } else { Ok(()) })
        .collect();
    assert_eq!(r, want);
    assert_eq!(peek(kid.pid, base, 8192), &data[..8192], "up to the hole");
    assert_eq!(peek(kid.pid, base + 13_000, 7000), &data[13_000..], "after it");
    let p27 = peek(kid.pid, w.page(27), PAGE);
    assert_eq!(
        &p27[..13_000 - 12_288],
        &before[..13_000 - 12_288],
        "12 not written past the hole"
    );
    // One stream: it stops at the first failure.
    let r = m.put_batch(&puts(true));
    let want: Vec<Result<(), Error>> = (0..20)
        .map(|i| match i {
            0..=7 => Ok(()),
            8 => Err(access),
            _ => Err(Error::Skipped),
        })
        .collect();
    assert_eq!(r, want);
    // A check refusal stops its stream too, the others go on.
    let mut ps = puts(false);
    ps[2].to = Region::Remote {
        target: &t,
        rkey: 0x999,
        va: base,
    };
    ps[3].stream = 2;
    ps[15].stream = 2;
    let r = m.put_batch(&ps);
    assert_eq!(
        (r[1], r[2], r[3], r[14], r[15]),
        (Ok(()), Err(access), Err(Error::Skipped), Ok(()), Err(Error::Skipped))
    );
    // Reads across the hole, into a local list (LOC_PROT_ERR), and a
    // scatter whose list crosses it.
    let list = [sge(base, 20_000, BIG)];
    let mut bufs = vec![[0u8; 1000]; 20];
    let mut gets: Vec<Get> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| Get {
            from: Region::Local {
                keys: &keys,
                pd: 1,
                sges: &list,
                off: (i * 1000) as u64,
            },
            out: b,
            stream: i as u64,
        })
        .collect();
    let r = m.get_batch(&mut gets);
    let prot = Error::Local(IBV_WC_LOC_PROT_ERR);
    let want: Vec<Result<(), Error>> = (0..20)
        .map(|i| if (8..=12).contains(&i) { Err(prot) } else { Ok(()) })
        .collect();
    assert_eq!(r, want);
    assert_eq!(&bufs[7][..], &data[7000..8000]);
    assert_eq!(&bufs[8][..192], &data[8000..8192], "its bytes up to the hole");
    assert_eq!(&bufs[19][..], &data[19_000..]);
    assert_eq!(m.scatter(&keys, 1, &list, 8000, &data[..1000]), Err(prot));
}

/// Fetch-and-add from two threads of ours and the client's own locked
/// increments on one word: every one counted once, every value returned
/// once.
#[test]
fn place_atomics_exclude_each_other_and_the_clients() {
    const EACH: u64 = 20_000;
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    let mut m = w.mem(&kid, true);
    // (Two CPUs and other tests: a holder may be preempted for long.)
    m.set_lock_wait(Duration::from_secs(20));
    let counter = IOVA + PAGE as u64;
    let zero = [0u8; 8];
    let t = target(&keys);
    assert_eq!(m.write(&t, FULL, counter, &zero), Ok(()));
    let seen: Vec<Vec<u64>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let t = target(&keys);
                    (0..EACH)
                        .map(|i| match m.atomic(&t, FULL, counter, Atomic::Add(1)) {
                            Ok(v) => v,
                            Err(e) => panic!("atomic {i}: {e:?}"),
                        })
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        kid.ask(b'n', EACH);
        threads.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let end = u64::from_ne_bytes(peek(kid.pid, w.page(1), 8).try_into().unwrap());
    assert_eq!(end, 3 * EACH);
    let mut all: Vec<u64> = seen.concat();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len() as u64, 2 * EACH, "no value returned twice");
    assert_eq!(w.word(lock_word(w.page(1))).load(Ordering::SeqCst), 0, "released");
}

/// A lock word the client holds: Busy after the wait, nothing touched;
/// one whose holder is gone is taken over; a write-back that fails leaves
/// the memory as it was and the lock free.
#[test]
fn place_atomic_locks_busy_dead_holder_and_failures() {
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    let t = target(&keys);
    let mut m = w.mem(&kid, true);
    m.set_lock_wait(Duration::from_millis(20));
    let a = IOVA + 3 * PAGE as u64;
    let addr = w.page(3);
    let old = peek(kid.pid, addr, 8);
    kid.ask(b'h', addr);
    let (calls, t0) = (m.calls(), Instant::now());
    assert_eq!(m.atomic(&t, FULL, a, Atomic::Add(1)), Err(Error::Busy));
    assert!(t0.elapsed() >= Duration::from_millis(20));
    assert_eq!((m.calls(), peek(kid.pid, addr, 8)), (calls, old.clone()));
    // Another address with the same lock word waits the same way.
    let alias = a + (8 * LOCKS) as u64;
    assert_eq!(m.atomic(&t, FULL, alias, Atomic::Add(1)), Err(Error::Busy));
    // A holder that exited: taken over.
    // SAFETY: a child that exits at once.
    let dead = unsafe { libc::fork() };
    if dead == 0 {
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: reaps it.
    unsafe { libc::waitpid(dead, std::ptr::null_mut(), 0) };
    w.word(lock_word(addr)).store(dead as u64, Ordering::SeqCst);
    let v = u64::from_ne_bytes(old.try_into().unwrap());
    assert_eq!(m.atomic(&t, FULL, a, Atomic::Add(1)), Ok(v));
    assert_eq!(w.word(lock_word(addr)).load(Ordering::SeqCst), 0);
    // Junk in the word (no pid): taken over as well.
    w.word(lock_word(addr)).store(u64::MAX, Ordering::SeqCst);
    assert_eq!(m.atomic(&t, FULL, a, Atomic::Add(1)), Ok(v + 1));
    // A read-only page: read, then the write-back refused.
    kid.ask(b'p', addr);
    assert_eq!(
        m.atomic(&t, FULL, a, Atomic::Add(1)),
        Err(Error::Remote(Fault::RemoteAccess))
    );
    assert_eq!(peek(kid.pid, addr, 8), (v + 2).to_ne_bytes());
    assert_eq!(
        w.word(lock_word(addr)).load(Ordering::SeqCst),
        0,
        "released after the failure"
    );
    // A compare that does not match writes nothing: fine on read-only.
    assert_eq!(m.atomic(&t, FULL, a, Atomic::Cas(0, 1)), Ok(v + 2));
    // Unmapped: the read fails.
    kid.ask(b'u', addr);
    assert_eq!(
        m.atomic(&t, FULL, a, Atomic::Cas(0, 1)),
        Err(Error::Remote(Fault::RemoteAccess))
    );
    assert_eq!(w.word(lock_word(addr)).load(Ordering::SeqCst), 0);
}

/// A client that is gone (a zombie, then reaped), one refused CMA by the
/// hello's probe, and nothing of ours left behind.
#[test]
fn place_gone_no_cma_and_no_leaks() {
    let w = World::new();
    let mut kid = w.fork();
    let keys = w.keys();
    let t = target(&keys);
    let start = ours(&w, kid.pid);
    let with = w.mem(&kid, true);
    let without = w.mem(&kid, false);
    assert_eq!(ours(&w, kid.pid), (start.0 + 1, start.1 + 2));
    assert_eq!(with.write(&t, FULL, IOVA, b"x"), Ok(()));
    // The hello's probe said no: checks first, then NoCma; no call.
    let refused = ClientMem::new(kid.pid, None, true, AccessPage::map(w.access_fd.as_fd()).unwrap());
    assert!(refused.no_cma());
    assert_eq!(refused.write(&t, FULL, IOVA, b"x"), Err(Error::NoCma));
    assert_eq!(refused.atomic(&t, FULL, IOVA, Atomic::Add(1)), Err(Error::NoCma));
    assert_eq!(
        refused.write(&t, 0x999, IOVA, b"x"),
        Err(Error::Remote(Fault::RemoteAccess))
    );
    assert_eq!(refused.calls(), 0);
    drop(refused);
    kid.kill();
    // (Past the time a pidfd's "still running" is taken as said.)
    std::thread::sleep(std::time::Duration::from_nanos(crate::place::ALIVE_FOR_NS));
    // A zombie: the pidfd says so (no call); without one, ESRCH.
    let calls = with.calls();
    assert_eq!(with.write(&t, FULL, IOVA, b"x"), Err(Error::Gone));
    assert_eq!(with.calls(), calls);
    assert_eq!(without.write(&t, FULL, IOVA, b"x"), Err(Error::Gone));
    let mut out = [0u8; 8];
    assert_eq!(without.read(&t, FULL, IOVA, &mut out), Err(Error::Gone));
    assert_eq!(without.atomic(&t, FULL, IOVA, Atomic::Add(1)), Err(Error::Gone));
    let two = [
        Put {
            to: Region::Remote {
                target: &t,
                rkey: FULL,
                va: IOVA,
            },
            data: b"ab",
            stream: 0,
        },
        Put {
            to: Region::Remote {
                target: &t,
                rkey: FULL,
                va: IOVA + 100,
            },
            data: b"cd",
            stream: 1,
        },
    ];
    assert_eq!(without.put_batch(&two), vec![Err(Error::Gone); 2]);
    kid.reap();
    assert_eq!(with.write(&t, FULL, IOVA, b"x"), Err(Error::Gone));
    drop((with, without));
    assert_eq!(ours(&w, kid.pid), start, "pidfds and mappings are gone");
}

/// EPERM (cross-memory attach refused: here a process of another user,
/// or a non-dumpable one) is NoCma, and the client is no_cma from then on.
#[test]
fn place_eperm_is_no_cma() {
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (rd, wr) = rustix::pipe::pipe().unwrap();
    // SAFETY: the child makes system calls and allocates (which glibc's
    // fork makes safe; no lock of ours is held) and ends with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // The placer: as root, uid 65534 placing into a root process (the
        // client); otherwise into the client made non-dumpable.
        let ok = (|| {
            if root {
                // SAFETY: drops our privileges (this child only).
                if unsafe { libc::setresgid(65534, 65534, 65534) != 0 || libc::setresuid(65534, 65534, 65534) != 0 } {
                    return false;
                }
            } else {
                kid.ask(b'd', 0);
            }
            let m = ClientMem::new(kid.pid, None, false, AccessPage::map(w.access_fd.as_fd()).unwrap());
            let t = target(&keys);
            let first = m.write(&t, FULL, IOVA, b"x");
            let calls = m.calls();
            let then = m.atomic(&t, FULL, IOVA, Atomic::Add(1));
            first == Err(Error::NoCma) && m.no_cma() && then == Err(Error::NoCma) && m.calls() == calls
        })();
        let _ = rustix::io::write(&wr, &[ok as u8]);
        // SAFETY: ends the child without running the test harness.
        unsafe { libc::_exit(0) };
    }
    drop(wr);
    let mut b = [0u8; 1];
    let n = rustix::io::read(&rd, &mut b);
    // SAFETY: reaps our own child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    assert_eq!((n, b[0]), (Ok(1), 1), "EPERM gives NoCma, and no call after it");
}

/// The engine's way in (`swrdma_rc::memory::Memory`, behind the keys'
/// `Target` and the receive path's lists): raw addresses, whole copies or
/// nothing said done, atomics under the lock words.
#[test]
fn place_as_the_engines_memory() {
    use swrdma_rc::memory::Memory;
    let w = World::new();
    let kid = w.fork();
    let keys = w.keys();
    let t = target(&keys);
    let m = w.mem(&kid, true);
    let mem: &dyn Memory = &m;
    // Through the responder's checks: the IOVA becomes the address.
    assert_eq!(t.write(mem, FULL, IOVA + 300, b"engine"), Ok(()));
    assert_eq!(peek(kid.pid, w.page(0) + 300, 6), b"engine");
    let mut out = [0u8; 6];
    assert_eq!(t.read(mem, FULL, IOVA + 300, &mut out), Ok(()));
    assert_eq!(&out, b"engine");
    assert_eq!(
        t.write(mem, RO, w.page(16), b"x"),
        Err(Fault::RemoteAccess),
        "no remote write right"
    );
    // Raw: a copy across into a page the client no longer maps is not done.
    kid.ask(b'u', w.page(3));
    assert!(mem.write(w.page(2) + 10, b"here"));
    assert!(!mem.write(w.page(3) - 2, b"across"));
    assert!(!mem.read(w.page(3), &mut out));
    assert!(mem.write(0, &[]), "zero bytes: nothing to do");
    assert!(!mem.write(u64::MAX - 1, b"wraps"));
    // Atomics: aligned only, under the lock word, the value before.
    let before = u64::from_ne_bytes(peek(kid.pid, w.page(2) + 64, 8).try_into().unwrap());
    assert_eq!(mem.atomic(w.page(2) + 64, Atomic::Store(7)), Some(before));
    assert_eq!(mem.atomic(w.page(2) + 64, Atomic::Add(5)), Some(7));
    assert_eq!(mem.atomic(w.page(2) + 64, Atomic::Cas(12, 1)), Some(12));
    assert_eq!(peek(kid.pid, w.page(2) + 64, 8), 1u64.to_ne_bytes());
    assert_eq!(mem.atomic(w.page(2) + 65, Atomic::Add(1)), None);
    assert_eq!(mem.atomic(w.page(3), Atomic::Add(1)), None, "unmapped");
    // A held lock word: not executed (Busy), nothing changed.
    let mut m2 = w.mem(&kid, true);
    m2.set_lock_wait(Duration::from_millis(20));
    kid.ask(b'h', w.page(2) + 64);
    assert_eq!(Memory::atomic(&m2, w.page(2) + 64, Atomic::Add(1)), None);
    assert_eq!(peek(kid.pid, w.page(2) + 64, 8), 1u64.to_ne_bytes());
}
