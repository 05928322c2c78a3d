//! `swrdma-wired`: the wire device's per-user transport agent (issue 33,
//! HOSTWIRE-DESIGN.md).  Step 1: the agent's life (the program, its name,
//! starting it on demand, its idle exit, the checks of both ends and the
//! hello) and the client side the provider will use.  README.md says what
//! the code does.

pub mod agent;
pub mod client;
pub mod proto;
pub mod spawn;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::os::fd::BorrowedFd;

/// Pidfd `p`'s process has exited (the pidfd is readable).
pub fn pidfd_exited(p: BorrowedFd<'_>) -> bool {
    let mut pfd = [PollFd::new(&p, PollFlags::IN)];
    poll(&mut pfd, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })) == Ok(1)
}
