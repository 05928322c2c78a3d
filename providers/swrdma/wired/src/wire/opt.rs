//! Socket options the wire's sockets set that rustix has no helper for.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Sets an integer socket option rustix has no helper for.
pub fn set_int(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int, val: libc::c_int) -> io::Result<()> {
    // SAFETY: `fd` is an open socket borrowed for the call; the option value
    // is a c_int on our stack and its exact size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&val as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
