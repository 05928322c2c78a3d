//! Who waits on a channel, for closing it as the kernel's timing lets a
//! program close it.
//!
//! A common pattern (rping, and every program with an event thread): one
//! thread loops on `rdma_get_cm_event`, another ends the program by
//! destroying the ids and the channel.  With the kernel's rdma_cm the event
//! thread is back in its blocking `read` long before the channel is closed
//! (destroying an id waits for the CM's work to finish), and a `read` that
//! started keeps its file: it waits for ever (`ucma.rs`, `wait_on_closed`),
//! the program ends normally.  Here destroying is quick, and with both
//! threads on one CPU the closing thread ran on, closed the channel, and
//! the event thread's next `rdma_get_cm_event` failed with `EBADF` (rping
//! then exits 255, "rdma_get_cm_event: Bad file descriptor").
//!
//! So the close of a channel from which another thread took an event a
//! moment ago ([`RECENT`]), and that no thread waits on now, gives that
//! thread a little time ([`GRACE`] at most) to come back to its wait
//! first.  No I/O: a table under its own lock (never the model's).

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// An event taken this recently makes its thread expected back.
pub const RECENT: Duration = Duration::from_millis(200);
/// The longest a close waits for it.
pub const GRACE: Duration = Duration::from_millis(20);

#[derive(Clone, Copy, Debug, Default)]
struct Chan {
    /// Threads inside a blocking `GET_EVENT` of the channel now.
    inside: u32,
    /// The last event a blocking `GET_EVENT` returned: when, which thread.
    last: Option<(Instant, i32)>,
}

static TABLE: Mutex<Option<HashMap<RawFd, Chan>>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut HashMap<RawFd, Chan>) -> R) -> R {
    let mut g = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

fn tid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// A thread starts waiting (a blocking `GET_EVENT`) on channel `fd`.
pub fn enter(fd: RawFd) {
    with(|t| t.entry(fd).or_default().inside += 1);
}

/// It stops waiting; `event`: it returned an event.
pub fn leave(fd: RawFd, event: bool) {
    with(|t| {
        let c = t.entry(fd).or_default();
        c.inside = c.inside.saturating_sub(1);
        if event {
            c.last = Some((Instant::now(), tid()));
        }
    });
}

/// Should the close of `fd` by this thread wait for another thread to come
/// back to `GET_EVENT`?
fn expected_back(fd: RawFd, now: Instant) -> bool {
    let me = tid();
    with(|t| {
        t.get(&fd).is_some_and(|c| {
            c.inside == 0
                && c.last
                    .is_some_and(|(at, who)| who != me && now.saturating_duration_since(at) < RECENT)
        })
    })
}

/// Before channel `fd` is closed: waits up to [`GRACE`] while another
/// thread that took an event from it a moment ago is not back in its wait;
/// then forgets the channel.
pub fn before_close(fd: RawFd) {
    let start = Instant::now();
    while expected_back(fd, start) && start.elapsed() < GRACE {
        std::thread::sleep(Duration::from_micros(200));
    }
    with(|t| t.remove(&fd));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_waits_only_for_another_thread_that_just_took_an_event() {
        // (fds far from any real one)
        let fd = 60_001;
        // nothing known: no wait
        let t0 = Instant::now();
        before_close(fd);
        assert!(t0.elapsed() < GRACE);
        // this thread took the event: it will not come back, no wait
        enter(fd);
        leave(fd, true);
        let t0 = Instant::now();
        before_close(fd);
        assert!(t0.elapsed() < GRACE);
        // another thread took it and comes back 5 ms later: the close
        // returns once it is in, before the grace is over
        let fd = 60_002;
        std::thread::spawn(move || {
            enter(fd);
            leave(fd, true);
            std::thread::sleep(Duration::from_millis(5));
            enter(fd);
        })
        .join()
        .unwrap();
        assert!(!expected_back(fd, Instant::now()));
        // another thread took one and never comes back: at most the grace
        let fd = 60_003;
        std::thread::spawn(move || {
            enter(fd);
            leave(fd, true);
        })
        .join()
        .unwrap();
        assert!(expected_back(fd, Instant::now()));
        let t0 = Instant::now();
        before_close(fd);
        let took = t0.elapsed();
        assert!(took >= GRACE && took < GRACE * 10, "{took:?}");
        assert!(!expected_back(fd, Instant::now()), "forgotten once closed");
    }
}
