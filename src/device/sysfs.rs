//! sysfs discovery, as upstream's fallback when RDMA netlink is unusable:
//! `$SYSFS_PATH/class/infiniband_verbs/<uverbsN>/{ibdev,dev,abi_version}`,
//! the IB device's `node_type`, the global `abi_version` check, and the
//! `/dev/infiniband/<uverbsN>` access check that drops devices whose char
//! device this process cannot see (containers).

use std::collections::VecDeque;
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use super::record::{self, set_cstr, SysfsDev};
use crate::abi;

/// Where the uverbs char devices live (`RDMA_CDEV_DIR`).
pub const RDMA_CDEV_DIR: &str = "/dev/infiniband";

/// Size of upstream's path buffers (`IBV_SYSFS_PATH_MAX`).
const PATH_MAX: usize = abi::IBV_SYSFS_PATH_MAX as usize;

fn cpath(b: &[u8]) -> Option<CString> {
    CString::new(b).ok()
}

/// `"a/b"` built like `check_snprintf` into a buffer of `cap` bytes.
pub fn join_checked(parts: &[&[u8]], cap: usize) -> Option<Vec<u8>> {
    let v: Vec<u8> = parts.concat();
    (v.len() < cap).then_some(v)
}

/// Opens a directory (`O_RDONLY | O_DIRECTORY | O_CLOEXEC`), relative to
/// `dirfd` when given.
fn open_dir(dirfd: Option<&OwnedFd>, name: &[u8]) -> Option<OwnedFd> {
    let c = cpath(name)?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: `c` is a NUL-terminated path that outlives the call, and
    // `dirfd`, when given, is an open descriptor borrowed for the call.
    let fd = unsafe {
        match dirfd {
            Some(d) => libc::openat(d.as_raw_fd(), c.as_ptr(), flags),
            None => libc::open(c.as_ptr(), flags),
        }
    };
    // SAFETY: fd >= 0 is the descriptor open(at) just returned: open, and
    // owned by nobody else, so OwnedFd may close it.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Upstream's `ibv_read_sysfs_file_at`: one read into a buffer of `size`
/// bytes; a trailing newline is dropped; content that fills the buffer
/// without a newline is an error.  Returns the bytes kept (possibly none),
/// or `None` for upstream's -1.
pub fn read_at(dirfd: Option<&OwnedFd>, file: &[u8], size: usize) -> Option<Vec<u8>> {
    let c = cpath(file)?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call, and
    // `dirfd`, when given, is an open descriptor borrowed for the call.
    let fd = unsafe {
        match dirfd {
            Some(d) => libc::openat(d.as_raw_fd(), c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC),
            None => libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC),
        }
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd >= 0 (checked above) is the descriptor open(at) just
    // returned: open, and owned by nobody else, so OwnedFd may close it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut buf = vec![0u8; size];
    // SAFETY: read writes at most `size` bytes, and `buf` is a live,
    // exclusively borrowed buffer of exactly `size` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), size) };
    if n < 0 {
        return None;
    }
    match crate::sysfs::terminate(&mut buf, n as usize) {
        crate::sysfs::ReadOutcome::Len(k) => {
            buf.truncate(k);
            Some(buf)
        }
        crate::sysfs::ReadOutcome::Err(_) => None,
    }
}

/// `ibv_read_ibdev_sysfs_file(buf, size, dev, file)`: `<ibdev_path>/<file>`.
pub fn read_ibdev(dev: &SysfsDev, file: &[u8], size: usize) -> Option<Vec<u8>> {
    let p = [record::cbytes(&dev.get().ibdev_path), b"/", file].concat();
    read_at(None, &p, size)
}

/// `stat()` of a path: the modification time, or the errno.
pub fn stat_mtime(path: &[u8]) -> Result<libc::timespec, i32> {
    let c = cpath(path).ok_or(libc::EINVAL)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `c` is a NUL-terminated path that outlives the call; stat
    // writes one `struct stat` into `st`, which is writable storage for it.
    if unsafe { libc::stat(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(crate::ffi::errno());
    }
    // SAFETY: stat succeeded, so it filled the whole struct.
    let st = unsafe { st.assume_init() };
    Ok(libc::timespec {
        tv_sec: st.st_mtime,
        tv_nsec: st.st_mtime_nsec,
    })
}

/// Upstream's `try_access_device`: `stat("/dev/infiniband/<uverbsN>")`.
/// `Ok` when the char device is visible, else the errno.
pub fn try_access_device(dev: &SysfsDev) -> Result<(), i32> {
    let p = [RDMA_CDEV_DIR.as_bytes(), b"/", record::cbytes(&dev.get().sysfs_name)].concat();
    let r = stat_mtime(&p).map(|_| ());
    if let Err(e) = r {
        crate::log::log(
            crate::log::LEVEL_INFO,
            format_args!(
                "{}dropping device {}: {}: {}\n",
                crate::log::PFX,
                dev.ibdev_name(),
                String::from_utf8_lossy(&p),
                std::io::Error::from_raw_os_error(e)
            ),
        );
    }
    r
}

/// Upstream's `setup_sysfs_uverbs`: fills the uverbs side of `dev` from the
/// class directory `uv` named `uverbs`.  `false` drops the device.
pub fn setup_uverbs(uv: &OwnedFd, uverbs: &[u8], dev: &mut SysfsDev) -> bool {
    let d = dev.get_mut();
    if !set_cstr(&mut d.sysfs_name, uverbs) {
        return false;
    }
    match stat_mtime(record::cbytes(&d.ibdev_path)) {
        Ok(t) => d.time_created = t,
        Err(_) => return false,
    }
    let Some(v) = read_at(Some(uv), b"dev", 32) else {
        return false;
    };
    let Some((major, minor)) = record::parse_dev(&v) else {
        return false;
    };
    d.sysfs_cdev = libc::makedev(major, minor);
    if let Some(v) = read_at(Some(uv), b"abi_version", 32) {
        if !v.is_empty() {
            d.abi_ver = record::strtoul(&v) as u32;
        }
    }
    true
}

/// Upstream's `setup_sysfs_dev` for one `class/infiniband_verbs` entry:
/// `None` when the entry does not describe a usable device.
fn setup_dev(class: &OwnedFd, uverbs: &[u8]) -> Option<SysfsDev> {
    let mut dev = SysfsDev::new()?;
    dev.get_mut().ibdev_idx = -1;
    let uv = open_dir(Some(class), uverbs)?;
    let ibdev = read_at(Some(&uv), b"ibdev", abi::IBV_SYSFS_NAME_MAX as usize)?;
    {
        let d = dev.get_mut();
        set_cstr(&mut d.ibdev_name, &ibdev);
        let p = join_checked(
            &[
                record::sysfs_root(),
                b"/class/infiniband/",
                record::cbytes(&d.ibdev_name),
            ],
            PATH_MAX,
        )?;
        set_cstr(&mut d.ibdev_path, &p);
    }
    if !setup_uverbs(&uv, uverbs, &mut dev) {
        return None;
    }
    let nt = match read_ibdev(&dev, b"node_type", 32) {
        Some(v) if !v.is_empty() => record::decode_knode_type(record::strtoul(&v) as u32),
        _ => abi::IBV_NODE_UNKNOWN,
    };
    dev.get_mut().node_type = nt;
    try_access_device(&dev).ok()?;
    Some(dev)
}

/// Upstream's `find_sysfs_devs`: every device of
/// `$SYSFS_PATH/class/infiniband_verbs`, newest-first like upstream's list
/// (each found device is put at the front).  `ENOSYS` when the class
/// directory cannot be opened (no RDMA support).
pub fn find() -> Result<VecDeque<SysfsDev>, i32> {
    let class_path = join_checked(&[record::sysfs_root(), b"/class/infiniband_verbs"], PATH_MAX).ok_or(libc::ENOMEM)?;
    let class = open_dir(None, &class_path).ok_or(libc::ENOSYS)?;
    let rd = std::fs::read_dir(OsStr::from_bytes(&class_path)).map_err(|_| libc::ENOSYS)?;
    let mut out = VecDeque::new();
    for ent in rd.flatten() {
        let name = ent.file_name();
        let name = name.as_bytes();
        if name.first() == Some(&b'.') {
            continue;
        }
        if let Some(d) = setup_dev(&class, name) {
            out.push_front(d);
        }
    }
    Ok(out)
}

/// What upstream's `check_abi_version` decided.
#[derive(Debug, PartialEq, Eq)]
pub enum AbiCheck {
    Ok,
    /// The file could not be read: ENOSYS without a message.
    Unreadable,
    /// Out of range: ENOSYS with the fatal message.
    Mismatch(i32),
}

/// Reads `class/infiniband_verbs/abi_version` and judges it.  The value read
/// is returned for the caller to remember (upstream keeps it even when it is
/// out of range, so a later call passes).
pub fn read_abi_version() -> (AbiCheck, i32) {
    let p = [record::sysfs_root(), b"/class/infiniband_verbs/abi_version"].concat();
    let Some(v) = read_at(None, &p, 8) else {
        return (AbiCheck::Unreadable, 0);
    };
    let abi = record::strtol(&v) as i32;
    let min = abi::IB_USER_VERBS_MIN_ABI_VERSION as i32;
    let max = abi::IB_USER_VERBS_MAX_ABI_VERSION as i32;
    if abi < min || abi > max {
        (AbiCheck::Mismatch(abi), abi)
    } else {
        (AbiCheck::Ok, abi)
    }
}

/// The directory of uverbs class devices under an IB device
/// (`<ibdev_path>/device/infiniband_verbs`), used by netlink discovery when
/// the kernel does not report the char device.
pub fn find_uverbs_under_ibdev(dev: &mut SysfsDev) -> Result<(), i32> {
    let dir = join_checked(
        &[record::cbytes(&dev.get().ibdev_path), b"/device/infiniband_verbs"],
        PATH_MAX,
    )
    .ok_or(libc::ENOMEM)?;
    let dfd = open_dir(None, &dir).ok_or(libc::ENOSYS)?;
    let rd = std::fs::read_dir(OsStr::from_bytes(&dir)).map_err(|_| libc::ENOSYS)?;
    for ent in rd.flatten() {
        let name = ent.file_name();
        let name = name.as_bytes();
        if name.first() == Some(&b'.') {
            continue;
        }
        let Some(uv) = open_dir(Some(&dfd), name) else { break };
        return if setup_uverbs(&uv, name, dev) {
            Ok(())
        } else {
            Err(libc::ENOENT)
        };
    }
    Err(libc::ENOENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_join() {
        assert_eq!(join_checked(&[b"ab", b"c"], 4), Some(b"abc".to_vec()));
        assert_eq!(join_checked(&[b"ab", b"cd"], 4), None);
    }

    #[test]
    fn read_rules() {
        let dir = std::env::temp_dir().join(format!("ibvrs-sysfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a");
        std::fs::write(&f, b"6\n").unwrap();
        let p = f.as_os_str().as_bytes();
        assert_eq!(read_at(None, p, 8), Some(b"6".to_vec()));
        std::fs::write(&f, b"12345678").unwrap();
        assert_eq!(read_at(None, p, 8), None);
        assert_eq!(read_at(None, p, 9), Some(b"12345678".to_vec()));
        std::fs::write(&f, b"").unwrap();
        assert_eq!(read_at(None, p, 8), Some(Vec::new()));
        assert_eq!(read_at(None, dir.join("missing").as_os_str().as_bytes(), 8), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
