//! sysfs access: the sysfs root (`SYSFS_PATH`) and upstream's small-file
//! reader semantics (`ibv_read_sysfs_file`).

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

/// Upstream truncates SYSFS_PATH to this many bytes (IBV_SYSFS_PATH_MAX).
pub const SYSFS_PATH_MAX: usize = 256;

static SYSFS_PATH: OnceLock<CString> = OnceLock::new();

/// The sysfs mount point: `$SYSFS_PATH` without trailing slashes (ignored
/// when setuid), else `/sys`.  Decided once per process, like upstream.
pub fn path() -> &'static CStr {
    SYSFS_PATH.get_or_init(|| {
        if !crate::env::is_setuid() {
            if let Some(v) = crate::env::get("SYSFS_PATH") {
                let mut b = v.into_bytes();
                b.truncate(SYSFS_PATH_MAX);
                while b.last() == Some(&b'/') {
                    b.pop();
                }
                return CString::new(b).unwrap_or_default();
            }
        }
        c"/sys".to_owned()
    })
}

/// The sysfs root as a `Path`.
pub fn root() -> &'static Path {
    Path::new(std::ffi::OsStr::from_bytes(path().to_bytes()))
}

/// Outcome of reading a sysfs attribute into a caller's buffer of `size`
/// bytes, following upstream: a trailing newline is replaced by NUL; when the
/// content fills the buffer exactly without a newline it cannot be
/// terminated, which is an error.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Number of bytes kept (excluding the terminator).
    Len(usize),
    /// Error with errno (or -1 without a specific errno: `None`).
    Err(Option<i32>),
}

/// Reads `path` into `buf` with upstream's rules.
pub fn read_into(path: &Path, buf: &mut [u8]) -> ReadOutcome {
    use std::io::Read;
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return ReadOutcome::Err(e.raw_os_error()),
    };
    // One read() call, like upstream (sysfs attributes come in one piece).
    let n = match f.read(buf) {
        Ok(n) => n,
        Err(e) => return ReadOutcome::Err(e.raw_os_error()),
    };
    terminate(buf, n)
}

/// Applies upstream's termination rule to `n` bytes read into `buf`.
pub fn terminate(buf: &mut [u8], n: usize) -> ReadOutcome {
    if n == 0 {
        return ReadOutcome::Len(0);
    }
    if buf[n - 1] == b'\n' {
        buf[n - 1] = 0;
        ReadOutcome::Len(n - 1)
    } else if n < buf.len() {
        buf[n] = 0;
        ReadOutcome::Len(n)
    } else {
        ReadOutcome::Err(None)
    }
}

/// Shared by `ibv_read_sysfs_file` and the variadic
/// `ibv_read_ibdev_sysfs_file` (whose C shim formats the file name).
///
/// # Safety
/// `buf` is NULL or holds `size` writable bytes.
pub unsafe fn read_sysfs_into(dir: &[u8], file: &[u8], buf: *mut c_char, size: usize) -> c_int {
    let mut p = dir.to_vec();
    p.push(b'/');
    p.extend_from_slice(file);
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&p));
    if buf.is_null() && size != 0 {
        // read(2) into NULL fails with EFAULT once the file is open.
        return match std::fs::File::open(path) {
            Ok(_) => {
                crate::ffi::set_errno(libc::EFAULT);
                -1
            }
            Err(e) => {
                crate::ffi::set_errno(e.raw_os_error().unwrap_or(libc::EIO));
                -1
            }
        };
    }
    let out: &mut [u8] = if size == 0 {
        &mut []
    } else {
        // SAFETY: the caller promises `buf` holds `size` writable bytes.
        unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), size) }
    };
    match read_into(path, out) {
        ReadOutcome::Len(n) => n as c_int,
        ReadOutcome::Err(e) => {
            if let Some(e) = e {
                crate::ffi::set_errno(e);
            }
            -1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn termination_rules() {
        let mut b = *b"abc\n";
        assert_eq!(terminate(&mut b, 4), ReadOutcome::Len(3));
        assert_eq!(&b, b"abc\0");
        let mut b = *b"abcd";
        assert_eq!(terminate(&mut b, 4), ReadOutcome::Err(None));
        let mut b = *b"ab\0\0";
        assert_eq!(terminate(&mut b, 2), ReadOutcome::Len(2));
        let mut b = [0u8; 4];
        assert_eq!(terminate(&mut b, 0), ReadOutcome::Len(0));
    }
}
