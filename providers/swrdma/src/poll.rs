//! Polling a CQ: ibv_poll_cq (in `OPS`, ops.rs) and the extended CQ's
//! cursor (qpex.rs) both take completions here.

use crate::handles::cq_of;
use ibverbs_abi::*;
use std::os::raw::c_int;
use std::sync::atomic::Ordering;

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
    c.note_poll();
    if n <= 0 {
        return 0;
    }
    // SAFETY: `wc` has room for `n` > 0 completions (the verb's contract),
    // not aliased during the call.
    let out = unsafe { std::slice::from_raw_parts_mut(wc, n as usize) };
    let mut k = cqr.poll(out);
    if k < out.len() {
        c.progress();
        k += cqr.poll(&mut out[k..]);
    }
    if k == 0 && cqr.overrun.load(Ordering::Relaxed) {
        // An overrun CQ is in the error state: once what it held is polled,
        // polling fails (completions were lost).
        return -1;
    }
    k as c_int
}
