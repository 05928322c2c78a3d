//! The process's descriptor table, grown once ahead of need.
//!
//! A wire context opens up to two UDP sockets per connected QP (its source
//! port's sender and the flow socket for its peer, `src/wire/sock.rs` of this crate), so
//! a process making a few hundred connections opens a few hundred
//! descriptors.  The kernel grows a process's descriptor table when a
//! descriptor past its end is asked for (to 256, 512, 1024, ...); in a
//! process of more than one thread each growth waits for an RCU grace
//! period (`expand_fdtable`'s `synchronize_rcu`): 15 ms on the 2-CPU VM
//! this was measured on, during which the thread that opens the
//! descriptor, and every other thread of the process that opens one, waits.
//! `cmtime -c 200` on `rw0` met that twice per process, in the middle of
//! its connections (as `ibv_modify_qp` to RTR taking 15 ms).
//!
//! [`reserve`] grows the table once, to hold `room` more descriptors than
//! the lowest free one, while the process has one thread (then it costs
//! nothing: no grace period) or from a thread that may wait.  The table
//! only takes memory (8 bytes a descriptor; 1024 of them: 8 KiB plus its
//! bitmaps); the descriptors the application gets are unchanged (the
//! kernel always hands out the lowest free one), and `RLIMIT_NOFILE` is
//! respected.

use std::io::Read;
use std::os::fd::AsRawFd;

/// The descriptors a wire context's sockets may come to hold, with as many
/// again for the application's: the room a process is given when it opens
/// one (the provider checks that its limits fit: `src/wire/sock.rs` of this crate).
pub const CONTEXT_ROOM: usize = 640;

/// What [`reserve`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// The table held the room already.
    Enough,
    /// It was grown to hold this many descriptors.
    Grown(usize),
    /// Not now: the process has more than one thread and the caller may
    /// not wait.
    Later,
    /// It could not be read or grown (no `/proc`, the limit, ...).
    Failed,
}

/// The `Threads:` and `FDSize:` of a `/proc/<pid>/status` text.
pub fn parse_status(s: &str) -> Option<(usize, usize)> {
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<usize>().ok())
    };
    Some((field("Threads:")?, field("FDSize:")?))
}

/// The table size that holds `room` descriptors from `lowest_free` on:
/// the power of two at or above `lowest_free + room`, at most `limit`
/// (the soft `RLIMIT_NOFILE`); None when that is no more than `size`.
pub fn wanted(lowest_free: usize, room: usize, size: usize, limit: usize) -> Option<usize> {
    let want = lowest_free.saturating_add(room).checked_next_power_of_two()?.min(limit);
    (want > size).then_some(want)
}

/// Grows the table to hold `room` descriptors more than the lowest free
/// one (see the module's text); with `may_wait` false only while the
/// process has one thread.
pub fn reserve(room: usize, may_wait: bool) -> Reserved {
    let Ok(mut f) = std::fs::File::open("/proc/self/status") else {
        return Reserved::Failed;
    };
    let mut s = String::new();
    if f.read_to_string(&mut s).is_err() {
        return Reserved::Failed;
    }
    let Some((threads, size)) = parse_status(&s) else {
        return Reserved::Failed;
    };
    // (The kernel gave the status file the lowest free descriptor.)
    let lowest = f.as_raw_fd() as usize;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `lim`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Reserved::Failed;
    }
    let limit = usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX);
    let Some(want) = wanted(lowest, room, size, limit) else {
        return Reserved::Enough;
    };
    if threads > 1 && !may_wait {
        return Reserved::Later;
    }
    // A duplicate at the table's last slot (or the lowest free one above
    // it) makes the kernel grow the table to cover it; closed at once.
    // SAFETY: F_DUPFD_CLOEXEC of a descriptor we own, at `want - 1`
    // (< the soft limit, as `wanted` caps it); the duplicate is ours to
    // close.
    let d = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_DUPFD_CLOEXEC, (want - 1) as libc::c_int) };
    if d < 0 {
        return Reserved::Failed;
    }
    // SAFETY: `d` is the duplicate just made, used nowhere else.
    unsafe { libc::close(d) };
    Reserved::Grown(want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields() {
        let s = "Name:\tx\nThreads:\t3\nSigQ:\t0/1\nFDSize:\t256\n";
        assert_eq!(parse_status(s), Some((3, 256)));
        assert_eq!(parse_status("Threads:\t1\n"), None);
        assert_eq!(parse_status("Threads:\tx\nFDSize:\t64\n"), None);
    }

    #[test]
    fn wanted_sizes() {
        assert_eq!(wanted(10, 512, 64, 20000), Some(1024));
        assert_eq!(wanted(10, 512, 1024, 20000), None);
        assert_eq!(wanted(600, 512, 1024, 20000), Some(2048));
        // capped by the limit, and nothing when the table is there already
        assert_eq!(wanted(10, 512, 64, 1000), Some(1000));
        assert_eq!(wanted(10, 512, 1024, 1000), None);
        assert_eq!(wanted(usize::MAX, 1, 64, 1000), None);
    }

    /// The real thing, in a child process (the test binary has several
    /// threads, and the table only grows): one thread, a table grown to
    /// the size asked for, and descriptors still handed out from the
    /// lowest.
    #[test]
    fn grows_the_table_in_a_single_threaded_child() {
        // SAFETY: the child makes only the calls below and ends with
        // _exit; it allocates after fork, which glibc's malloc allows
        // (fork takes its locks); the verdict is its exit code.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let r = reserve(1000, false);
            let mut s = String::new();
            let ok = std::fs::File::open("/proc/self/status")
                .and_then(|mut f| f.read_to_string(&mut s))
                .is_ok();
            let size = parse_status(&s).map(|x| x.1).unwrap_or(0);
            // SAFETY: a plain duplicate of stderr (the lowest free
            // descriptor); the child ends right after.
            let low = unsafe { libc::fcntl(2, libc::F_DUPFD, 0) };
            let code = match r {
                Reserved::Grown(n) if ok && size >= n && n >= 1024 && (0..100).contains(&low) => 0,
                Reserved::Enough if ok && size >= 1024 => 0,
                _ => 1,
            };
            // SAFETY: ends the child without running the test harness.
            unsafe { libc::_exit(code) };
        }
        let mut st = 0;
        // SAFETY: waits for our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
        assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "status {st:#x}");
    }
}
