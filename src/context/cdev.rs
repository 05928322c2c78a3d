//! Opening the uverbs character device (`/dev/infiniband/<name>`, or
//! `/dev/char/<major>:<minor>` when that name is not there, waiting up to
//! 5 s for udev to create it, as upstream does).

use std::ffi::CString;
use std::os::raw::c_int;
use std::time::{Duration, Instant};

fn open_checked(path: &str, cdev: u64) -> c_int {
    let Ok(p) = CString::new(path) else { return -1 };
    // SAFETY: p is a valid C string; st is a valid out-parameter.
    unsafe {
        let fd = libc::open(p.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if fd == -1 {
            return -1;
        }
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0
            || (st.st_mode & libc::S_IFMT) != libc::S_IFCHR
            || (cdev != 0 && st.st_rdev != cdev)
        {
            libc::close(fd);
            // (Not the device: no stale errno of an earlier call is taken
            // for the cause.)
            crate::ffi::set_errno(libc::ENODEV);
            return -1;
        }
        fd
    }
}

/// Opens the command fd of a device: the fd, or -1 with errno.
pub fn open_cdev(name_hint: &str, cdev: u64) -> c_int {
    let fd = open_checked(&format!("/dev/infiniband/{name_hint}"), cdev);
    if fd != -1 || cdev == 0 {
        return fd;
    }
    // No descriptor left (the open itself failed): the fallback needs one
    // too, and where /dev/char has no node it would end in ENOENT, hiding
    // the cause.  Upstream's fallback answers EMFILE there as well
    // (compat-tests/vm-sweep emfile_open_close_cycle).
    if matches!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE)
    ) {
        return -1;
    }
    let path = format!("/dev/char/{}:{}", libc::major(cdev), libc::minor(cdev));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let fd = open_checked(&path, cdev);
        if fd != -1 {
            return fd;
        }
        // Only wait when /dev/char exists at all (udev is running).
        if !std::path::Path::new("/dev/char").is_dir() || Instant::now() >= deadline {
            return -1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
