//! Registered memory that is already shared (issue 34): SysV shared
//! memory (`SHM_HUGETLB` too), memfds, hugetlbfs and other files mapped
//! `MAP_SHARED`.  The owner finds the backing object of an MR from its
//! mapping at registration (`/proc/self/maps`: shared, device:inode,
//! offset; never assumed) and publishes its identity in the directory
//! (direct.rs); a peer maps the same object itself and copies with
//! `memcpy` (fault-safe) instead of cross-memory attach.  Nothing happens
//! to the application's memory or mapping: the peer's mapping is its own.
//!
//! How a peer reaches the object, without privileges:
//! * SysV: `shmat` of the id (the inode the kernel shows for
//!   `/SYSV<key> (deleted)`), allowed by the segment's mode; the attached
//!   mapping's device:inode is checked.  A segment already removed
//!   (`IPC_RMID` while attached, as perftest does) takes no attachment
//!   (EIDRM): its file is opened by the owner through
//!   `/proc/self/map_files/` where the kernel allows that
//!   (`CAP_CHECKPOINT_RESTORE`, root) and reached as a file; else private.
//! * a file (memfd, hugetlbfs, tmpfs, any file, deleted or not): the owner
//!   opens it again at registration — through a descriptor it already holds
//!   for it (`/proc/self/fd/<n>` whose device:inode match) or its path
//!   (checked after the open) — and keeps that descriptor for the MR's
//!   life; the peer takes it with `pidfd_getfd` (what cross-memory attach
//!   needs, it needs too) and checks device:inode and size before mapping.
//!
//! Only where copies recover from faults (x86-64): a file can be
//! truncated under the mapping (SIGBUS), which then fails the copy and the
//! request takes the ring, whose responder answers as for memory gone.
//!
//! Anything else (private memory, an MR over several mappings, a shared
//! anonymous mapping nobody holds a descriptor of): not published, the
//! private path (cross-memory attach) as before.

use crate::mem::{ProcmapQuery, PROCMAP_QUERY};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Kinds of backing objects (the directory's word).
pub const SYSV: u64 = 1;
pub const FILE: u64 = 2;

/// A SysV segment marked for removal (linux/shm.h).
const SHM_DEST: i32 = 0o1000;

/// `SWRDMA_SHARED=0` keeps every MR on the private path.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SWRDMA_SHARED").is_none_or(|v| v != "0"))
}

/// Copies into a peer's mapping survive its truncation (SIGBUS) and our own
/// buffers going away (SIGSEGV): x86-64's recovering copies.
fn fault_safe() -> bool {
    cfg!(target_arch = "x86_64") && crate::mem::init()
}

/// The identity a peer needs: (kind, id, offset of the MR's start in the
/// object, device, inode).  `id`: the SysV id, or the number of the
/// descriptor the owner keeps.
pub type Ident = [u64; 5];

/// What the owner keeps while the MR is published.
pub struct Backing {
    pub ident: Ident,
    pub fd: Option<OwnedFd>,
}

/// One mapping of this process, as /proc/self/maps shows it.
struct Vma {
    start: u64,
    end: u64,
    shared: bool,
    offset: u64,
    dev: u64,
    ino: u64,
    name: String,
}

fn dev_of(major: u64, minor: u64) -> u64 {
    (major << 32) | minor
}

/// `PROCMAP_QUERY`'s flag of a `MAP_SHARED` mapping.
const VMA_SHARED: u64 = 8;

/// The mapping holding `addr`: by `PROCMAP_QUERY`, else from the text.
fn vma_of(addr: u64) -> Option<Vma> {
    let f = std::fs::File::open("/proc/self/maps").ok()?;
    let mut name = [0u8; 4096];
    let mut q = ProcmapQuery {
        size: std::mem::size_of::<ProcmapQuery>() as u64,
        query_addr: addr,
        vma_name_size: name.len() as u32,
        vma_name_addr: name.as_mut_ptr() as u64,
        ..Default::default()
    };
    // SAFETY: `q` is a `struct procmap_query` with its size set; the kernel
    // writes into it and at most `vma_name_size` bytes into `name`.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), PROCMAP_QUERY as _, &mut q) };
    if r == 0 {
        let n = (q.vma_name_size as usize).min(name.len()).saturating_sub(1);
        return Some(Vma {
            start: q.vma_start,
            end: q.vma_end,
            shared: q.vma_flags & VMA_SHARED != 0,
            offset: q.vma_offset,
            dev: dev_of(q.dev_major as u64, q.dev_minor as u64),
            ino: q.inode,
            name: String::from_utf8_lossy(&name[..n]).into_owned(),
        });
    }
    if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .find_map(|l| parse_line(l).filter(|v| v.start <= addr && addr < v.end))
}

fn parse_line(l: &str) -> Option<Vma> {
    let mut it = l.splitn(6, ' ');
    let (range, perms, off, dev, ino) = (it.next()?, it.next()?, it.next()?, it.next()?, it.next()?);
    let (a, b) = range.split_once('-')?;
    let (ma, mi) = dev.split_once(':')?;
    Some(Vma {
        start: u64::from_str_radix(a, 16).ok()?,
        end: u64::from_str_radix(b, 16).ok()?,
        shared: perms.as_bytes().get(3) == Some(&b's'),
        offset: u64::from_str_radix(off, 16).ok()?,
        dev: dev_of(u64::from_str_radix(ma, 16).ok()?, u64::from_str_radix(mi, 16).ok()?),
        ino: ino.parse().ok()?,
        name: it.next().unwrap_or("").trim_start().to_string(),
    })
}

fn stat_dev_ino(st: &libc::stat) -> (u64, u64) {
    (
        dev_of(libc::major(st.st_dev) as u64, libc::minor(st.st_dev) as u64),
        st.st_ino,
    )
}

/// Opens `path` for us and keeps it only if it is the object (dev, ino).
fn open_checked(path: &std::ffi::CStr, dev: u64, ino: u64, write: bool) -> Option<OwnedFd> {
    let mode = if write { libc::O_RDWR } else { libc::O_RDONLY };
    // SAFETY: a NUL-terminated path; the descriptor is ours (owned below).
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            mode | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor we just opened.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `st` is written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is a stat buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
        || stat_dev_ino(&st) != (dev, ino)
    {
        return None;
    }
    Some(fd)
}

/// A descriptor of ours for the object (dev, ino): through one the process
/// holds (`/proc/self/fd`), else through its path.
fn find_fd(dev: u64, ino: u64, path: &str, write: bool) -> Option<OwnedFd> {
    if let Ok(rd) = std::fs::read_dir("/proc/self/fd") {
        for e in rd.flatten().take(65536) {
            let p = e.path();
            let Ok(md) = std::fs::metadata(&p) else { continue };
            use std::os::unix::fs::MetadataExt;
            if md.ino() != ino || dev_of(libc::major(md.dev()) as u64, libc::minor(md.dev()) as u64) != dev {
                continue;
            }
            let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
                continue;
            };
            if let Some(fd) = open_checked(&c, dev, ino, write) {
                return Some(fd);
            }
        }
    }
    if !path.starts_with('/') || path.ends_with(" (deleted)") {
        return None;
    }
    open_checked(&std::ffi::CString::new(path).ok()?, dev, ino, write)
}

/// The backing object of [va, va+len) when one shared mapping holds it
/// and a peer can reach the object; None: the private path.
pub fn detect(va: u64, len: u64, write: bool) -> Option<Backing> {
    if !enabled() || !fault_safe() || len == 0 {
        return None;
    }
    let v = vma_of(va)?;
    if !v.shared || v.ino == 0 || va < v.start || va.checked_add(len)? > v.end {
        return None;
    }
    let off = v.offset.checked_add(va - v.start)?;
    if v.name.starts_with("/SYSV") {
        let id = i32::try_from(v.ino).ok()?;
        // SAFETY: `ds` is written by IPC_STAT.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: IPC_STAT into `ds`.
        if unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) } != 0 || (ds.shm_segsz as u64) < off.checked_add(len)? {
            return None;
        }
        if ds.shm_perm.mode as i32 & SHM_DEST != 0 {
            // Removed (IPC_RMID, as perftest does at once): no new
            // attachment (EIDRM).  Its file through map_files, where the
            // kernel lets us (CAP_CHECKPOINT_RESTORE, e.g. root).
            let p = std::ffi::CString::new(format!("/proc/self/map_files/{:x}-{:x}", v.start, v.end)).ok()?;
            let fd = open_checked(&p, v.dev, v.ino, write)?;
            return Some(Backing {
                ident: [FILE, fd.as_raw_fd() as u64, off, v.dev, v.ino],
                fd: Some(fd),
            });
        }
        return Some(Backing {
            ident: [SYSV, v.ino, off, v.dev, v.ino],
            fd: None,
        });
    }
    let fd = find_fd(v.dev, v.ino, &v.name, write)?;
    Some(Backing {
        ident: [FILE, fd.as_raw_fd() as u64, off, v.dev, v.ino],
        fd: Some(fd),
    })
}

/// A peer's object mapped here: [lo, lo+len) of it at `base`.
pub struct Mapping {
    base: *mut u8,
    len: usize,
    lo: u64,
    sysv: bool,
}
// SAFETY: the mapping is owned by the `Mapping` (unmapped in Drop); the
// bytes are only reached through fault-safe copies and atomics.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, used by no one after it.
        unsafe {
            if self.sysv {
                libc::shmdt(self.base as *const _);
            } else {
                libc::munmap(self.base as *mut _, self.len);
            }
        }
    }
}

impl Mapping {
    /// Maps the object `ident` names (its bytes [off, off+len) at least),
    /// writable when `write`; `pidfd`: the owner's process.
    pub fn open(ident: &Ident, len: u64, write: bool, pidfd: BorrowedFd<'_>) -> Option<Mapping> {
        let [kind, id, off, dev, ino] = *ident;
        let hi = off.checked_add(len)?;
        match kind {
            SYSV => {
                let id = i32::try_from(id).ok()?;
                let flags = if write { 0 } else { libc::SHM_RDONLY };
                // SAFETY: a new attachment at an address the kernel picks.
                let base = unsafe { libc::shmat(id, std::ptr::null(), flags) };
                if base as isize == -1 {
                    return None;
                }
                // SAFETY: `ds` is written by IPC_STAT.
                let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
                // SAFETY: IPC_STAT into `ds`.
                let ok = unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) } == 0;
                let m = Mapping {
                    base: base as *mut u8,
                    len: ds.shm_segsz,
                    lo: 0,
                    sysv: true,
                };
                let v = vma_of(base as u64)?;
                (ok && (m.len as u64) >= hi && v.dev == dev && v.ino == ino).then_some(m)
            }
            FILE => Self::open_file(id, (off, hi), (dev, ino), write, pidfd),
            _ => None,
        }
    }

    fn open_file(id: u64, (off, hi): (u64, u64), obj: (u64, u64), write: bool, pidfd: BorrowedFd<'_>) -> Option<Self> {
        use rustix::process::{pidfd_getfd, PidfdGetfdFlags};
        let fd = pidfd_getfd(pidfd, i32::try_from(id).ok()?, PidfdGetfdFlags::empty()).ok()?;
        // SAFETY: `st` is written by fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open; `st` is a stat buffer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0
            || st.st_mode & libc::S_IFMT != libc::S_IFREG
            || stat_dev_ino(&st) != obj
            || (st.st_size as u64) < hi
        {
            return None;
        }
        // hugetlbfs: the huge page size (offsets must be aligned to it).
        let blk = st.st_blksize as u64;
        let align = if blk.is_power_of_two() && (4096..=1 << 30).contains(&blk) {
            blk
        } else {
            4096
        };
        let lo = off & !(align - 1);
        let len = (hi - lo).checked_add(align - 1)? & !(align - 1);
        let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
        // SAFETY: a new shared mapping of the object at an address the
        // kernel picks; accesses to it are fault-safe (truncation).
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                usize::try_from(len).ok()?,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                i64::try_from(lo).ok()?,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        Some(Mapping {
            base: base as *mut u8,
            len: len as usize,
            lo,
            sysv: false,
        })
    }

    /// Our address of the object's bytes [off, off+len), if mapped here.
    pub fn at(&self, off: u64, len: u64) -> Option<u64> {
        let rel = off.checked_sub(self.lo)?;
        (rel.checked_add(len)? <= self.len as u64).then(|| self.base as u64 + rel)
    }
}

/// Copies `len` bytes between our SGEs and our address `at` of a peer's
/// object (into it when `write`): false when a copy faulted (a page gone on
/// either side, a truncated file).
pub fn copy(sges: &[ibverbs_abi::ibv_sge], at: u64, len: usize, write: bool) -> bool {
    let mut done = 0usize;
    for s in sges {
        if done == len {
            break;
        }
        let n = (s.length as usize).min(len - done);
        // SAFETY: our SGEs passed `check_local` (registered memory of ours;
        // a fault there is recovered as well), [at, at+len) lies in the
        // mapping (`Mapping::at`); faults on either side fail the copy.
        let ok = unsafe {
            if write {
                crate::mem::copy_in(at + done as u64, s.addr as *const u8, n)
            } else {
                crate::mem::copy_out(s.addr as *mut u8, at + done as u64, n)
            }
        };
        if !ok {
            return false;
        }
        done += n;
    }
    done == len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let v = parse_line(
            "7f1c2a400000-7f1c2a600000 rw-s 00000000 00:01 32770                      /SYSV00000000 (deleted)",
        )
        .unwrap();
        assert_eq!(
            (v.start, v.end, v.shared, v.offset),
            (0x7f1c_2a40_0000, 0x7f1c_2a60_0000, true, 0)
        );
        assert_eq!((v.dev, v.ino), (dev_of(0, 1), 32770));
        assert_eq!(v.name, "/SYSV00000000 (deleted)");
        let v = parse_line("7f00-8f00 rw-p 00001000 fd:02 12 /tmp/a b").unwrap();
        assert!(!v.shared);
        assert_eq!(
            (v.offset, v.dev, v.name.as_str()),
            (0x1000, dev_of(0xfd, 2), "/tmp/a b")
        );
        let v = parse_line("7f00-8f00 rw-s 00000000 00:00 0").unwrap();
        assert_eq!((v.ino, v.name.as_str()), (0, ""));
    }

    #[test]
    fn private_memory_not_detected() {
        let b = vec![0u8; 1 << 16];
        assert!(detect(b.as_ptr() as u64, b.len() as u64, true).is_none());
    }

    #[test]
    fn memfd_detected_and_kept() {
        let fd = rustix::fs::memfd_create(c"shared-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, 1 << 16).unwrap();
        // SAFETY: a new shared mapping of our new file, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                1 << 16,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        if let Some(b) = detect(p as u64 + 4096, 8192, true) {
            assert_eq!(b.ident[0], FILE);
            assert_eq!(b.ident[2], 4096);
            assert!(b.fd.is_some());
        } else {
            assert!(!fault_safe(), "a memfd mapping not detected");
        }
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(p, 1 << 16) };
    }
}
