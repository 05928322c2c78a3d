//! One thread per process that receives CM messages and runs the timers,
//! so a peer's REQ, DREQ or retransmission is answered while the
//! application sleeps in `poll()` on its channel or makes no call at all.
//! Started by the first channel; it sleeps in `poll` on the process's
//! sockets and an eventfd that commands kick when they change the sockets
//! or the timers.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Once;

static KICK: AtomicI32 = AtomicI32::new(-1);
static START: Once = Once::new();
/// The time (`ucma::now`) the thread sleeps until when nothing wakes it;
/// 0 until it first sleeps, so that commands kick it.
static SLEEPS_UNTIL: AtomicU64 = AtomicU64::new(0);

/// The longest sleep without a timer.
pub const MAX_SLEEP_NS: u64 = 1_000_000_000;

/// The time the thread sleeps until (see [`SLEEPS_UNTIL`]); read and
/// written under the model's lock.
pub fn sleeps_until() -> u64 {
    SLEEPS_UNTIL.load(Ordering::Acquire)
}

pub fn set_sleeps_until(t: u64) {
    SLEEPS_UNTIL.store(t, Ordering::Release);
}

/// Starts the thread (once per process).
pub fn start() {
    START.call_once(|| {
        // The thread makes the process multi-threaded, after which growing
        // the descriptor table waits for an RCU grace period: a process
        // that may open a wire device (whose context opens sockets per
        // connection) grows it now, while that is free
        // (`swrdma_wired::fdtable`).
        if crate::host::wire_configured() {
            let _ = swrdma_wired::fdtable::reserve(swrdma_wired::fdtable::CONTEXT_ROOM, false);
        }
        // SAFETY: eventfd with constant flags.
        let k = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        KICK.store(k, Ordering::Release);
        let _ = std::thread::Builder::new().name("swrdma-cm".into()).spawn(run);
    });
}

/// Wakes the thread to look at its sockets and timers again.
pub fn kick() {
    let k = KICK.load(Ordering::Acquire);
    if k >= 0 {
        // SAFETY: our eventfd (not through the interposed write).
        unsafe { libc::eventfd_write(k, 1) };
    }
}

fn run() {
    let kick_fd = KICK.load(Ordering::Acquire);
    loop {
        let (fds, deadline) = crate::ucma::watch();
        let mut pfds: Vec<libc::pollfd> = fds
            .iter()
            .map(|&(fd, events)| libc::pollfd { fd, events, revents: 0 })
            .collect();
        pfds.push(libc::pollfd {
            fd: kick_fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let timeout = match deadline {
            None => (MAX_SLEEP_NS / 1_000_000) as i32,
            Some(d) => {
                let now = crate::ucma::now();
                if d <= now {
                    0
                } else {
                    ((d - now) / 1_000_000 + 1).min(1000) as i32
                }
            }
        };
        // SAFETY: an array of pollfds of its length.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            continue;
        }
        if pfds.last().is_some_and(|p| p.revents != 0) {
            let mut v: libc::eventfd_t = 0;
            // SAFETY: our non-blocking eventfd.
            unsafe { libc::eventfd_read(kick_fd, &mut v) };
        }
        let ready: Vec<(RawFd, i16)> = pfds[..pfds.len() - 1]
            .iter()
            .filter(|p| p.revents != 0)
            .map(|p| (p.fd, p.revents))
            .collect();
        crate::ucma::pump(&ready);
    }
}
