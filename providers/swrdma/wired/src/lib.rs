//! `swrdma-wired`: the wire device's per-user transport agent (issue 33,
//! HOSTWIRE-DESIGN.md).  Step 1: the agent's life (the program, its name,
//! starting it on demand, its idle exit, the checks of both ends and the
//! hello) and the client side the provider will use.  README.md says what
//! the code does.

pub mod agent;
pub mod client;
pub mod ctl;
pub mod data;
pub mod ends;
pub mod fdtable;
pub mod gids;
pub mod place;
pub mod proto;
pub mod qp1;
pub mod route;
pub mod session;
pub mod spawn;
pub mod steer;
pub mod transport;
pub mod userdir;
pub mod wire;
pub mod wq;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::os::fd::{AsRawFd, BorrowedFd};

/// One `SOL_SOCKET` option of `sock` whose value is a `T` (a C integer or
/// structure): the value, or None when the call fails or writes another size.
pub fn sockopt<T: Copy>(sock: BorrowedFd<'_>, opt: libc::c_int, init: T) -> Option<T> {
    let mut v = init;
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes (one `T`) into `v`; every
    // option asked for here is a plain C type valid for any bit pattern.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut T).cast(),
            &mut len,
        )
    };
    (r == 0 && len as usize == std::mem::size_of::<T>()).then_some(v)
}

/// `SO_PEERCRED` of a connected Unix socket: (pid, euid).  The pid is 0
/// when the peer's process has no number in our PID namespace.
pub fn peercred(sock: BorrowedFd<'_>) -> Option<(i32, u32)> {
    let c = sockopt(sock, libc::SO_PEERCRED, libc::ucred { pid: 0, uid: 0, gid: 0 })?;
    Some((c.pid, c.uid))
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of the wire's timers, the
/// flight recorder and the provider's (`sys::now_ns`).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid `timespec` to fill; CLOCK_MONOTONIC exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Pidfd `p`'s process has exited (the pidfd is readable).
pub fn pidfd_exited(p: BorrowedFd<'_>) -> bool {
    let mut pfd = [PollFd::new(&p, PollFlags::IN)];
    poll(&mut pfd, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })) == Ok(1)
}

/// `fd` is an eventfd (what a peer passes as its doorbell): a pipe or a
/// socket there would block us when full or kill us with SIGPIPE.  Checked
/// by what the kernel names the descriptor's file (anon inodes carry no
/// type in `st_mode`).  On success the descriptor is made non-blocking (a
/// write to an eventfd whose counter a peer drove to its maximum then
/// fails instead of blocking).
pub fn is_eventfd(fd: BorrowedFd<'_>) -> bool {
    use rustix::fs::{fstat, FileType};
    use std::os::fd::AsRawFd;
    match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
        Ok(l) if l.as_os_str() == "anon_inode:[eventfd]" => {}
        Ok(_) => return false,
        Err(_) => {
            // No procfs: at least no pipe, socket, device or directory.
            let ty = fstat(fd).map(|st| FileType::from_raw_mode(st.st_mode));
            if ty.is_err()
                || ty.is_ok_and(|t| {
                    matches!(
                        t,
                        FileType::Fifo
                            | FileType::Socket
                            | FileType::CharacterDevice
                            | FileType::BlockDevice
                            | FileType::Directory
                    )
                })
            {
                return false;
            }
        }
    }
    rustix::io::ioctl_fionbio(fd, true).is_ok()
}

/// The write end of a pipe a client gave for the agent to write into (its
/// async events, a completion channel): a FIFO opened write-only, made
/// non-blocking (a full pipe never blocks the agent).  Err: why not.
pub fn fifo_writer(fd: BorrowedFd<'_>, what: &str) -> Result<(), String> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, fstat, FileType, OFlags};
    let st = fstat(fd).map_err(|e| format!("{what}: fstat: {e}"))?;
    let fl = fcntl_getfl(fd).map_err(|e| format!("{what}: flags: {e}"))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Fifo || fl & OFlags::ACCMODE != OFlags::WRONLY {
        return Err(format!("{what}: not the write end of a pipe"));
    }
    fcntl_setfl(fd, fl | OFlags::NONBLOCK).map_err(|e| format!("{what}: {e}"))
}
