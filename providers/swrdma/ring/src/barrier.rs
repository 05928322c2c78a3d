//! The two sides of the rings' wake-up handshakes, made unequal.
//!
//! Two handshakes between the processes of a link are Dekker pairs: each
//! side stores its flag, then loads the other's, and one of the two must
//! see the other:
//!
//! * a producer publishes a record, then looks whether the consumer sleeps
//!   (to kick it); the consumer's thread says it sleeps, then looks once
//!   more for a record before it sleeps;
//! * a consumer makes room, then looks whether the producer wants room
//!   (to kick it); the producer says it wants room, then tries once more.
//!
//! A store followed by a load needs a full fence between them (x86 lets a
//! load pass an older store to another line), and a fence waits until the
//! stores before it reach the other CPU — here the record and its
//! position, lines the peer read last: a cache-line transfer on every
//! message, on the path of every send and every ACK.  The first side of
//! each pair runs at every message, the second only when a thread is about
//! to sleep.  So the frequent side takes no fence ([`light`]: the compiler
//! keeps the order, the CPU may not) and the rare side makes every CPU that
//! runs a thread of such a process execute a full barrier for it
//! ([`heavy`]: `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)`, an
//! inter-processor interrupt to those CPUs; threads that do not run passed
//! one when they were switched out).  After it, either the frequent side's
//! load comes after the barrier on its CPU (and sees the flag stored before
//! it), or its store came before (and is visible to the rare side's load).
//!
//! The barrier is asked for only where `SWRDMA_RING_MEMBARRIER=1` says so
//! (the process then registers for it): measured on two vCPUs of a
//! virtual machine, it takes `ib_send_lat` 2 B from 0.30 to 0.28 µs
//! typical with the CPUs idle, but with one spinning process per CPU it
//! doubles the typical (0.31 to 0.62 µs) and the average (297 to 439 µs):
//! each barrier is an inter-processor interrupt to the CPU of the peer,
//! which a virtual machine delivers through its host, while the thread
//! about to sleep sleeps often when the CPUs are shared.  By default both
//! sides fence ([`heavy`] still asks for the barrier, for a peer process
//! that registered; with none registered, the call interrupts no CPU).
//!
//! The frequent side leaves out its fence only in a process that
//! registered for the expedited barrier (the kernel sends it only to such
//! processes' CPUs); elsewhere (not asked for, a kernel without it, a
//! filter that refuses the call) it keeps the fence.  The rare side always
//! fences and then asks for the barrier; when
//! the call fails it cannot know that the other side saw it, and says so
//! ([`heavy`] false: the sleeping thread then sleeps for at most a
//! millisecond at a time).

use std::sync::atomic::{compiler_fence, fence, AtomicBool, Ordering};
use std::sync::OnceLock;

// (linux/membarrier.h)
const MEMBARRIER_CMD_QUERY: libc::c_long = 0;
const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_long = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_long = 1 << 2;

/// Whether this process registered for the expedited barrier: its
/// frequent sides take no fence.
static REGISTERED: OnceLock<bool> = OnceLock::new();
/// A `heavy` barrier failed in this process since it started.
static HEAVY_FAILED: AtomicBool = AtomicBool::new(false);

fn membarrier(cmd: libc::c_long) -> libc::c_long {
    // SAFETY: membarrier(2) takes a command and two integer arguments and
    // touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_long, 0 as libc::c_long) }
}

/// Registers this process (once) when `SWRDMA_RING_MEMBARRIER=1` asks for
/// it and the kernel offers the expedited global barrier; true when it did.
pub fn registered() -> bool {
    *REGISTERED.get_or_init(|| {
        if std::env::var_os("SWRDMA_RING_MEMBARRIER").is_none_or(|v| v != "1") {
            // (Not asked for: both sides fence.)
            return false;
        }
        let offered = membarrier(MEMBARRIER_CMD_QUERY);
        let want = MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
        offered >= 0 && offered & want == want && membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0
    })
}

/// The frequent side, between its store and its load: nothing for the CPU
/// in a registered process, a full fence elsewhere.
#[inline]
pub fn light() {
    if registered() {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The rare side, between its store and its load: a full fence here and
/// on every CPU running a thread of a registered process.  False: the
/// barrier could not be had; a frequent side that left out its fence may
/// not have seen our store, nor we its.
pub fn heavy() -> bool {
    fence(Ordering::SeqCst);
    // (Asked for even where this process did not register: a peer process
    // started with `SWRDMA_RING_MEMBARRIER=1` leaves its fences out.  With
    // no registered process the call interrupts no CPU.)
    if membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0 {
        return true;
    }
    HEAVY_FAILED.store(true, Ordering::Relaxed);
    false
}

/// Whether a `heavy` barrier of this process has failed: its sleeping
/// threads must not count on being kicked.
pub fn heavy_failed() -> bool {
    HEAVY_FAILED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_works_where_registered() {
        // A kernel that offers registration offers the barrier: a
        // registered process's heavy side never fails.
        if registered() {
            assert!(heavy());
            assert!(!heavy_failed());
        } else {
            // (Not offered here: both sides keep their fences.)
            light();
        }
    }
}
