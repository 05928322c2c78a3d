//! Polling a CQ: ibv_poll_cq (in `OPS`, ops.rs) and the extended CQ's
//! cursor (qpex.rs) both take completions here.

use crate::handles::cq_of;
use ibverbs_abi::*;
use std::cell::Cell;
use std::os::raw::c_int;
use std::sync::atomic::Ordering;

/// How long (ns) a thread polls empty CQs before it yields its CPU at each
/// further empty poll (see [`note_empty`]).
const YIELD_AFTER_NS: u64 = 1_000;

/// How many empty polls in a row pass between two looks at the clock: a
/// clock read (`clock_gettime`, 25 ns in a VM) costs a third of an empty
/// poll, which is what a busy-polling application's thread does between
/// two messages; the yield starts at most this many polls late.
const CLOCK_EVERY: u32 = 16;

/// A thread's run of empty polls (any CQ).
#[derive(Clone, Copy, PartialEq)]
struct EmptyRun {
    /// When the run was first seen at a clock look (0: not yet).
    since: u64,
    /// Empty polls in the run.
    polls: u32,
    /// The run is past `YIELD_AFTER_NS`: every further empty poll yields.
    yielding: bool,
}

impl EmptyRun {
    /// No run: the thread's last poll found a completion.
    const NONE: EmptyRun = EmptyRun {
        since: 0,
        polls: 0,
        yielding: false,
    };
}

thread_local! {
    static EMPTY_RUN: Cell<EmptyRun> = const { Cell::new(EmptyRun::NONE) };
}

/// Notes whether this thread's poll found nothing and, once its polls have
/// found nothing for `YIELD_AFTER_NS` (looked at every `CLOCK_EVERY`
/// polls), gives its CPU at each further empty poll to whatever else is
/// runnable there.
///
/// A device that is software has no engine of its own: every completion the
/// application waits for needs *some* process of the machine on a CPU — the
/// peer's application or its context thread (the same-machine device), the
/// process that owns the socket a datagram arrived on (the wire device).  A
/// NIC's CQ fills while the application spins; ours fills only when those
/// get the CPU, and an application spinning on an empty CQ takes it from
/// them until the scheduler preempts it (milliseconds).  With more polling
/// processes than CPUs that is one time slice per message: two
/// `ibv_rc_pingpong` pairs over `rw0` on two CPUs ran at 8,700 us per
/// iteration; yielding at each empty poll, 175-240 us.  `sched_yield` with
/// nothing else runnable returns at once, and a completion that arrives
/// within `YIELD_AFTER_NS` (a round trip of `ib_send_lat`) never waits for
/// one.  What the application's memory does is untouched: this is
/// scheduling only.
pub(crate) fn note_empty(empty: bool) {
    EMPTY_RUN.with(|c| {
        let run = c.get();
        if !empty {
            if run != EmptyRun::NONE {
                c.set(EmptyRun::NONE);
            }
            return;
        }
        if run.yielding {
            // SAFETY: sched_yield takes no arguments and cannot fail here.
            unsafe { libc::sched_yield() };
            return;
        }
        let polls = run.polls.wrapping_add(1);
        let mut next = EmptyRun { polls, ..run };
        if polls.is_multiple_of(CLOCK_EVERY) {
            let now = crate::sys::now_ns();
            if run.since == 0 {
                next.since = now;
            } else if now - run.since >= YIELD_AFTER_NS {
                next.yielding = true;
            }
        }
        c.set(next);
    })
}

/// ibv_poll_cq: up to `n` completions into `wc`.
///
/// # Safety
/// Called by libibverbs through `OPS` (or by the extended CQ's cursor,
/// qpex.rs), only with objects this provider created and the application
/// has not destroyed, and with argument pointers valid as the verb's
/// contract says.
pub unsafe extern "C" fn poll_cq(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
    // SAFETY: `cq` is one of our CQs (the contract); its `ctx` is the live
    // context that created it (contexts outlive their CQs) and its `cq` the
    // `Arc<Cq>` it owns until destroy_cq.
    let (c, cqr) = unsafe {
        let s = cq_of(cq);
        (&*s.ctx, &*s.cq)
    };
    if n <= 0 {
        c.note_poll(true);
        return 0;
    }
    // SAFETY: `wc` has room for `n` > 0 completions (the verb's contract),
    // not aliased during the call.
    let out = unsafe { std::slice::from_raw_parts_mut(wc, n as usize) };
    let mut k = cqr.poll(out);
    if k < out.len() {
        crate::send::execute_deferred(c, None, false);
        c.progress();
        k += cqr.poll(&mut out[k..]);
    }
    c.note_poll(k == 0);
    note_empty(k == 0);
    if k == 0 && cqr.overrun.load(Ordering::Relaxed) {
        // An overrun CQ is in the error state: once what it held is polled,
        // polling fails (completions were lost).
        return -1;
    }
    k as c_int
}
