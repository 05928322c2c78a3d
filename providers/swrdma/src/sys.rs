//! The process's clock and the lock helper every layer uses (no device
//! state here: the bottom layer, with mem.rs).

use std::sync::{Mutex, MutexGuard};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// CLOCK_MONOTONIC in nanoseconds (one clock with the wire's sockets and
/// flight recorder, which live in the agent's crate).
pub use swrdma_wired::now_ns;
