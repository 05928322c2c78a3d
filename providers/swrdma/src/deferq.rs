//! What RDMA WRITEs and READs kept back for one system call are (the
//! policy and the execution: send/defer.rs): a QP's deferred requests
//! (`Qp::deferred`) and the context's table of the QPs that have some
//! (`Ctx::defers`).  Data only: nothing here executes a request.

use crate::sys::{lock, now_ns};
use ibverbs_abi::*;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// At most this many requests of a QP wait (then they execute together).
pub const DEFER_MAX: usize = 16;

/// A request deferred this long (ns) when the context's thread finds it
/// was left waiting by an application that made no call since.
pub const STALE_NS: u64 = 200_000;

/// After the first stale request, deferral is off for this long (ns),
/// doubled at each further one, at most `OFF_MAX_NS`.
const OFF_FIRST_NS: u64 = 10_000_000;
const OFF_MAX_NS: u64 = 60_000_000_000;

/// One deferred request: the application's request as posted (its `next`
/// cleared) and its gather list (the request's `sg_list` points into the
/// application's memory, which it may reuse once `ibv_post_send` returns).
pub struct Kept {
    pub wr: ibv_send_wr,
    pub sges: Vec<ibv_sge>,
}

/// A QP's deferred requests (`Qp::deferred`; its lock is held while they
/// execute).
#[derive(Default)]
pub struct Deferred {
    pub kept: Vec<Kept>,
    /// `Ctx::poll_epoch` at this QP's last post.
    pub epoch: u64,
    /// The process that posted `kept` (a forked child that calls the
    /// library on its copy of the context drops them: they are its
    /// parent's, which executes them).
    pub pid: u64,
}

// SAFETY: `Kept` holds the application's request: its pointers (`sg_list`,
// `next`, the union's `ah`/`mw`, unused for WRITE and READ) are addresses
// handed to the kernel or rebuilt before use, only under the QP's
// `deferred` lock.
unsafe impl Send for Deferred {}

/// The context's side: which QPs have requests deferred, and the switch.
#[derive(Default)]
pub struct DeferTable {
    /// QPNs of the QPs with deferred requests, each with when its first
    /// was deferred.
    qps: Mutex<Vec<(u32, u64)>>,
    /// `qps.len()`, read without the lock.
    count: AtomicUsize,
    /// Deferral is off until this time (ns; 0: on).
    off_until: AtomicU64,
    /// Stale requests the thread found (doubles the off time).
    stale: AtomicU32,
    /// The QP of the context's last `ibv_post_send`.
    last_qpn: AtomicU32,
}

/// Whether `SWRDMA_DEFER` leaves deferral on (the default).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SWRDMA_DEFER").is_none_or(|v| v != "0"))
}

impl DeferTable {
    /// Deferral is on for the context now.
    pub fn on(&self) -> bool {
        let until = self.off_until.load(Ordering::Relaxed);
        if until == 0 {
            return true;
        }
        if now_ns() < until {
            return false;
        }
        self.off_until.store(0, Ordering::Relaxed);
        true
    }

    /// How many QPs have requests deferred.
    pub fn waiting(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// QP `qpn` has its first request deferred now.
    pub fn add(&self, qpn: u32) {
        let mut q = lock(&self.qps);
        q.push((qpn, now_ns()));
        self.count.store(q.len(), Ordering::Release);
    }

    /// QP `qpn` has no request deferred any more.
    pub fn remove(&self, qpn: u32) {
        let mut q = lock(&self.qps);
        q.retain(|(x, _)| *x != qpn);
        self.count.store(q.len(), Ordering::Release);
    }

    /// The QPs with requests deferred but `except`; `stale_only`: only
    /// those deferred for `STALE_NS` or more.
    pub fn qpns(&self, except: Option<u32>, stale_only: bool) -> Vec<u32> {
        let now = if stale_only { now_ns() } else { 0 };
        lock(&self.qps)
            .iter()
            .filter(|(q, at)| except != Some(*q) && (!stale_only || now.saturating_sub(*at) >= STALE_NS))
            .map(|(q, _)| *q)
            .collect()
    }

    /// A request was left deferred for `STALE_NS` by an application that
    /// made no call since: deferral goes off for a while, longer each time.
    pub fn stale_found(&self) {
        let n = self.stale.fetch_add(1, Ordering::Relaxed).min(12);
        let off = (OFF_FIRST_NS << n).min(OFF_MAX_NS);
        self.off_until.store(now_ns() + off, Ordering::Relaxed);
    }

    /// Notes a post on QP `qpn`; whether the context's post before it was
    /// on the same QP.
    pub fn note_post(&self, qpn: u32) -> bool {
        let same = self.last_qpn.load(Ordering::Relaxed) == qpn;
        if !same {
            self.last_qpn.store(qpn, Ordering::Relaxed);
        }
        same
    }
}
